//! The cell-size table of the README: for point sets like `ecs-bench
//! spatial`'s, the time of a radius query around every point (one thread,
//! the fastest of 7 runs) at `cell = r / 2, r, 2 r`, the priced work
//! ([`BatchWork::price`]) of each, and what `suggest_cell_size` picks.
//!
//! `cargo run --release -p ecs-spatial --example cell_sizes`

use std::time::Instant;

use ecs_spatial::{NeighborLists, SparseGrid, suggest_cell_size};
use glam::Vec3;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn in_box(&mut self, side: f32) -> Vec3 {
        Vec3::new(self.unit(), self.unit(), self.unit()) * side
    }
    /// A standard normal vector (Box-Muller).
    fn gauss3(&mut self) -> Vec3 {
        let mut g = || {
            let (u, v) = (self.unit().max(1e-7), self.unit());
            (-2.0 * u.ln()).sqrt() * (std::f32::consts::TAU * v).cos()
        };
        Vec3::new(g(), g(), g())
    }
}

const N: usize = 100_000;

fn uniform(rng: &mut Rng) -> Vec<Vec3> {
    (0..N).map(|_| rng.in_box(200.0)).collect()
}

/// 100 balls of radius 15 in 200^3.
fn balls(rng: &mut Rng) -> Vec<Vec3> {
    let centres: Vec<Vec3> = (0..100).map(|_| rng.in_box(170.0) + 15.0).collect();
    (0..N)
        .map(|i| {
            loop {
                let d = rng.in_box(30.0) - 15.0;
                if d.length_squared() <= 225.0 {
                    break centres[i % centres.len()] + d;
                }
            }
        })
        .collect()
}

/// 200 Gaussian clusters of sigma 3 in 400^3.
fn gaussian(rng: &mut Rng) -> Vec<Vec3> {
    let centres: Vec<Vec3> = (0..200).map(|_| rng.in_box(400.0)).collect();
    (0..N).map(|i| centres[i % centres.len()] + rng.gauss3() * 3.0).collect()
}

/// Uniform in 200^3 plus 16 points at +-90 000.
fn outliers(rng: &mut Rng) -> Vec<Vec3> {
    let mut ps = uniform(rng);
    for i in 0..16 {
        let s = |b: usize| if i >> b & 1 == 1 { 90_000.0 } else { -90_000.0 };
        ps[i * 997] = Vec3::new(s(0), s(1), s(2)) * (1.0 + i as f32 / 64.0);
    }
    ps
}

fn main() {
    let mut rng = Rng(0x5EED);
    let sets: [(&str, Vec<Vec3>, &[f32]); 4] = [
        ("uniform 200^3", uniform(&mut rng), &[5.0, 2.5, 10.0]),
        ("100 balls r 15", balls(&mut rng), &[5.0, 2.5]),
        ("200 gaussians s 3 in 400^3", gaussian(&mut rng), &[2.0, 4.0, 1.0]),
        ("16 far outliers", outliers(&mut rng), &[5.0, 10.0]),
    ];
    let ids: Vec<u32> = (0..N as u32).collect();
    let mut lists = NeighborLists::new();
    println!("| points | r | cell = r / 2 | cell = r | cell = 2 r | suggested |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, points, radii) in &sets {
        for &r in *radii {
            let mut cols = Vec::new();
            let mut times = Vec::new();
            for f in [0.5, 1.0, 2.0] {
                let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, r * f).unwrap();
                grid.rebuild(&ids, points).unwrap();
                let work = grid.radius_all_work(r);
                let price = work.price(grid.lookup_kind());
                let mut best = f64::INFINITY;
                for _ in 0..7 {
                    let t = Instant::now();
                    grid.query_radius_all(r, &mut lists);
                    best = best.min(t.elapsed().as_secs_f64() * 1e3);
                }
                times.push(best);
                if std::env::var_os("CELL_SIZES_CSV").is_some() {
                    let w = work;
                    let dense = grid.lookup_kind() == ecs_spatial::LookupKind::Dense;
                    eprintln!(
                        "csv,{name},{r},{f},{best},{},{},{},{},{},{},{}",
                        w.points,
                        w.units,
                        if dense { w.rows } else { 0 },
                        if dense { 0 } else { w.rows },
                        w.runs,
                        w.candidates,
                        w.chunks
                    );
                }
                cols.push((best, price, grid.lookup_kind()));
            }
            let t = Instant::now();
            let pick = suggest_cell_size(points, r);
            let pick_ms = t.elapsed().as_secs_f64() * 1e3;
            let min = times.iter().copied().fold(f64::INFINITY, f64::min);
            let at = [0.5, 1.0, 2.0].iter().position(|&f| f * r == pick).map_or(f64::NAN, |i| times[i] / min);
            let cells: Vec<String> =
                cols.iter().map(|(t, p, l)| format!("{t:.2} ms, {:.2}x (price {p:.1}, {l:?})", t / min)).collect();
            println!(
                "| {name} | {r} | {} | {} | {} | {} ({at:.2}x the best; {pick_ms:.1} ms to pick) |",
                cells[0],
                cells[1],
                cells[2],
                pick / r
            );
        }
    }
}
