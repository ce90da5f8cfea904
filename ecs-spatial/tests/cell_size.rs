//! `suggest_cell_size` over several point distributions and radii: the
//! size it picks costs at most 1.2x the cheapest of `r * [0.5, 1, 2]`, by
//! the work a radius query around every point does there
//! ([`SparseGrid::radius_all_work`], priced by [`BatchWork::price`]:
//! deterministic, no timing), counted over every point of the set while
//! the helper walks only part of it. And the counted work is the work the
//! queries do: its rows are the probes `query_radius_all` makes.

use ecs_spatial::{BatchWork, NeighborLists, SparseGrid, cell_probes, suggest_cell_size};
use glam::{Vec2, Vec3};

mod common;
use common::Rng;

/// More than the helper walks (16 384), so its partial walk is what is tested.
const N: usize = 24_000;

/// Uniform in a box holding `N` points at `density` points per unit volume.
fn uniform(rng: &mut Rng, density: f32) -> Vec<Vec3> {
    let side = (N as f32 / density).cbrt();
    (0..N).map(|_| rng.in_box(side)).collect()
}

/// `k` balls of radius 6 in a box of side `side`.
fn balls(rng: &mut Rng, k: usize, side: f32) -> Vec<Vec3> {
    let centres: Vec<Vec3> = (0..k).map(|_| rng.in_box(side)).collect();
    (0..N)
        .map(|i| {
            loop {
                let d = rng.in_box(12.0) - 6.0;
                if d.length_squared() <= 36.0 {
                    break centres[i % k] + d;
                }
            }
        })
        .collect()
}

/// `k` Gaussian clusters of sigma `sigma` in a box of side `side` (sparse
/// fringes around dense cores).
fn gaussian(rng: &mut Rng, k: usize, sigma: f32, side: f32) -> Vec<Vec3> {
    let centres: Vec<Vec3> = (0..k).map(|_| rng.in_box(side)).collect();
    (0..N).map(|i| centres[i % k] + rng.gauss3() * sigma).collect()
}

/// Uniform points plus 16 far outliers stretching the box.
fn outliers(rng: &mut Rng, density: f32) -> Vec<Vec3> {
    let mut ps = uniform(rng, density);
    for i in 0..16 {
        let s = |b: usize| if i >> b & 1 == 1 { 50_000.0 } else { -50_000.0 };
        ps[i * 997] = Vec3::new(s(0), s(1), s(2));
    }
    ps
}

fn grid_of<P: ecs_spatial::GridPoint>(points: &[P], cell: f32) -> SparseGrid<P, u32> {
    let ids: Vec<u32> = (0..points.len() as u32).collect();
    // The origin among the points, nearest zero (a far origin widens every
    // scan box by its margin for rounding, whatever the cell size).
    let origin = points.iter().copied().min_by(|a, b| a.to_vec3().length().total_cmp(&b.to_vec3().length())).unwrap();
    let mut grid = SparseGrid::<P, u32>::new(origin, cell).unwrap();
    grid.rebuild(&ids, points).unwrap();
    grid
}

/// Per factor of the radius, the priced work of all radius queries.
fn prices<P: ecs_spatial::GridPoint>(points: &[P], r: f32) -> [f64; 3] {
    [0.5, 1.0, 2.0].map(|f| {
        let grid = grid_of(points, r * f);
        grid.radius_all_work(r).price(grid.lookup_kind())
    })
}

fn check<P: ecs_spatial::GridPoint>(name: &str, points: &[P], r: f32) {
    let priced = prices(points, r);
    let best = priced.iter().copied().fold(f64::INFINITY, f64::min);
    let pick = suggest_cell_size(points, r);
    let at = [0.5, 1.0, 2.0].iter().position(|&f| f * r == pick).expect("one of r * [0.5, 1, 2]");
    assert!(
        priced[at] <= 1.2 * best,
        "{name}, r {r}: picked {}r at {:.2}, the best costs {best:.2} (all: {priced:?})",
        pick / r,
        priced[at]
    );
}

#[test]
fn the_pick_costs_within_1_2x_of_the_best_size() {
    let mut rng = Rng(7);
    for density in [0.0125, 0.1, 1.5] {
        let points = uniform(&mut rng, density);
        for r in [1.0, 2.5, 5.0] {
            check(&format!("uniform, {density} per unit volume"), &points, r);
        }
    }
    let points = balls(&mut rng, 40, 120.0);
    for r in [1.0, 2.5] {
        check("40 balls", &points, r);
    }
    for (k, sigma, side) in [(60, 3.0, 300.0), (20, 1.0, 200.0)] {
        let points = gaussian(&mut rng, k, sigma, side);
        for r in [1.0, 2.0, 4.0] {
            check(&format!("{k} gaussians, sigma {sigma}"), &points, r);
        }
    }
    let points = outliers(&mut rng, 0.0125);
    for r in [2.5, 5.0, 10.0] {
        check("far outliers", &points, r);
    }
    let flat: Vec<Vec2> = uniform(&mut rng, 0.1).iter().map(|p| p.truncate() * 0.2).collect();
    for r in [0.5, 2.0] {
        check("2D uniform", &flat, r);
    }
}

#[test]
fn the_counted_work_is_the_queries_work() {
    let mut rng = Rng(11);
    let points = gaussian(&mut rng, 30, 2.0, 150.0);
    for cell in [0.5, 1.0, 2.0, 4.0] {
        let grid = grid_of(&points, cell);
        let r = 2.0;
        let work = grid.radius_all_work(r);
        let mut lists = NeighborLists::new();
        let before = cell_probes();
        grid.query_radius_all(r, &mut lists);
        assert_eq!(work.rows, cell_probes() - before, "cell {cell}: rows are the probes");
        assert_eq!(work.points, points.len() as u64);
        assert!(work.units >= grid.cells().len() as u64 / 8 && work.units <= grid.cells().len() as u64);
        assert!(lists.total_hits() as u64 <= 8 * work.chunks, "each hit is a lane of a tested chunk");
        assert!(work.runs <= work.rows, "cell {cell}: {work:?}");
    }
    let mut sum = BatchWork::default();
    sum += BatchWork { points: 1, units: 2, rows: 3, runs: 4, candidates: 5, chunks: 6 };
    sum += BatchWork { points: 1, units: 1, rows: 1, runs: 1, candidates: 1, chunks: 1 };
    assert_eq!(sum, BatchWork { points: 2, units: 3, rows: 4, runs: 5, candidates: 6, chunks: 7 });
}
