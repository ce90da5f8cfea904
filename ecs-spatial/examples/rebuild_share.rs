//! The broad phase's crossover between its incremental edit and a rebuild
//! (README, "Incremental edit or rebuild"): per point set, world size and
//! share of entities moved, the median time of one `update_broad_phase`
//! frame in a world whose broad phase always edits
//! (`with_rebuild_share(1.0)`) and in one that always rebuilds
//! (`with_rebuild_share(0.0)`), the same moves written untimed before each
//! frame in both, frames alternating between the two worlds. The last
//! column is the default broad phase's frame, which picks one of the two.
//!
//! Moves are as `ecs-bench spatial`'s: each moved entity toggles between
//! its home point and a point at most 1.0 away per axis (cells of 5.0),
//! a different set of entities each frame. The point sets: uniform, balls,
//! and uniform in cubes 3.5 and 10 times as wide (sparse worlds, about one
//! point per occupied cell). Each line also gives the grid's points per
//! occupied cell and the share of the moved rows that stayed in their cell.
//!
//! `cargo run --release -p ecs-spatial --example rebuild_share [frames] [points] [share] [step]`
//! (`points` and `share` pick one world size and one share, e.g. to
//! profile it, `-` for all; `step` is the largest move per axis, 1.0 by
//! default: 0.2 keeps most moved rows in their cell, 5.0 moves most out)

use std::time::Instant;

use ecs_core::{Entity, Schedule, World};
use ecs_spatial::{BroadPhase, Position, update_broad_phase};
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
}

const CELL: f32 = 5.0;

/// `n` points uniform in a cube holding 100k per 200^3.
fn uniform(rng: &mut Rng, n: usize) -> Vec<Vec3> {
    let side = 200.0 * (n as f32 / 100_000.0).cbrt();
    (0..n).map(|_| rng.in_box(side)).collect()
}

/// `n` points uniform in a cube `stretch` times as wide as [`uniform`]'s
/// (a sparse world: at 3.5 most cells of 5.0 hold one point, at 10 the
/// grid's lookup is a hash).
fn sparse(rng: &mut Rng, n: usize, stretch: f32) -> Vec<Vec3> {
    let side = stretch * 200.0 * (n as f32 / 100_000.0).cbrt();
    (0..n).map(|_| rng.in_box(side)).collect()
}

/// `n` points in balls of radius 15, one ball per 1000 points, in a cube
/// holding 100 balls per 200^3.
fn balls(rng: &mut Rng, n: usize) -> Vec<Vec3> {
    let side = 200.0 * (n as f32 / 100_000.0).cbrt();
    let centres: Vec<Vec3> = (0..n.div_ceil(1000)).map(|_| rng.in_box(side - 30.0) + 15.0).collect();
    (0..n)
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

/// One world of the points and its broad-phase schedule.
struct Scene {
    world: World,
    schedule: Schedule,
    entities: Vec<Entity>,
}

impl Scene {
    fn new(points: &[Vec3], share: Option<f32>) -> Scene {
        let mut world = World::new();
        let mut bp = BroadPhase::<Position>::new(Vec3::ZERO, CELL).unwrap();
        if let Some(s) = share {
            bp = bp.with_rebuild_share(s);
        }
        world.insert_resource(bp);
        let entities = world.spawn_batch(points.iter().map(|&p| (Position(p),)));
        let mut schedule = Schedule::new();
        schedule.add_systems(update_broad_phase::<Position>);
        schedule.run(&mut world).unwrap();
        Scene { world, schedule, entities }
    }

    fn set(&mut self, moved: &[(usize, Vec3)]) {
        for &(i, p) in moved {
            self.world.get_mut::<Position>(self.entities[i]).unwrap().0 = p;
        }
    }

    /// One frame, in milliseconds.
    fn frame(&mut self) -> f64 {
        let t = Instant::now();
        self.schedule.run(&mut self.world).unwrap();
        t.elapsed().as_secs_f64() * 1e3
    }

    /// Points per occupied cell of the grid.
    fn points_per_cell(&self) -> f64 {
        let grid = self.world.resource::<BroadPhase<Position>>().unwrap().grid();
        grid.len() as f64 / grid.cells().len().max(1) as f64
    }

    fn stats(&self) -> ecs_spatial::BroadPhaseStats {
        self.world.resource::<BroadPhase<Position>>().unwrap().stats()
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let frames: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(15);
    // Optional: one world size and one share (e.g. to profile one case).
    let only_n: Option<usize> = std::env::args().nth(2).and_then(|a| a.parse().ok());
    let only_share: Option<f32> = std::env::args().nth(3).and_then(|a| a.parse().ok());
    // Optional: the largest move per axis (default 1.0, a fifth of a cell).
    let step: f32 = std::env::args().nth(4).and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let shares = match only_share {
        Some(s) => vec![s],
        None => vec![0.01, 0.02, 0.05, 0.08, 0.10, 0.12, 0.15, 0.20, 0.30],
    };
    println!(
        "| points | n | points / cell | moved | of them in their cell | edit ms | rebuild ms | edit / rebuild | default ms (path) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for n in only_n.map_or(vec![100_000usize, 1_000_000], |n| vec![n]) {
        let mut rng = Rng(0x5EED ^ n as u64);
        let sets = [
            ("uniform", uniform(&mut rng, n)),
            ("balls r 15", balls(&mut rng, n)),
            ("uniform, 3.5x wider", sparse(&mut rng, n, 3.5)),
            ("uniform, 10x wider", sparse(&mut rng, n, 10.0)),
        ];
        for (name, homes) in &sets {
            let offsets: Vec<Vec3> = (0..n).map(|_| (rng.in_box(2.0) - 1.0) * step).collect();
            let mut edit = Scene::new(homes, Some(1.0));
            let mut rebuild = Scene::new(homes, Some(0.0));
            let mut default = Scene::new(homes, None);
            let mut away = vec![false; n];
            for &share in &shares {
                let one_in = (1.0 / share as f64).round() as usize;
                let (mut te, mut tr, mut td) = (Vec::new(), Vec::new(), Vec::new());
                let mut path = String::new();
                let mut in_cell = 0.0;
                for f in 0..frames + 2 {
                    let moved: Vec<(usize, Vec3)> = (f % one_in..n)
                        .step_by(one_in)
                        .map(|i| {
                            away[i] = !away[i];
                            (i, if away[i] { homes[i] + offsets[i] } else { homes[i] })
                        })
                        .collect();
                    edit.set(&moved);
                    rebuild.set(&moved);
                    default.set(&moved);
                    let (a, b, c) = if f % 2 == 0 {
                        (edit.frame(), rebuild.frame(), default.frame())
                    } else {
                        let c = default.frame();
                        let b = rebuild.frame();
                        (edit.frame(), b, c)
                    };
                    assert!(!edit.stats().full_rebuild && rebuild.stats().full_rebuild);
                    if f >= 2 {
                        // The first frames fill the edit's entity table and scratch lists.
                        te.push(a);
                        tr.push(b);
                        td.push(c);
                    }
                    let s = edit.stats();
                    in_cell = s.moved_in_cell as f64 / s.rows_rekeyed.max(1) as f64;
                    path = if default.stats().full_rebuild { "rebuild".into() } else { "edit".into() };
                }
                let (e, r, d) = (median(&mut te), median(&mut tr), median(&mut td));
                println!(
                    "| {name} | {n} | {:.2} | {:.1} % | {:.0} % | {e:.3} | {r:.3} | {:.2} | {d:.3} ({path}) |",
                    rebuild.points_per_cell(),
                    100.0 / one_in as f64,
                    100.0 * in_cell,
                    e / r
                );
            }
        }
    }
}
