//! Our grid against kiddo on point sets the `spatial` scenario does not
//! have: other world sizes for the same 100k points (sparser cells), other
//! radii, fewer points, planes, a line, one dense blob, stacked duplicates
//! and coordinates far from the origin. The grid's cells are as wide as the
//! radius, as in the scenario.
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_spatial [filter]`
//!
//! Per set: hits per point, then the build and all radius queries (ours vs
//! kiddo in µs, medians of runs taken in turns, and the ratio), and all
//! pairs as a share of all queries. Hit counts are checked equal.
//!
//! Then the broad-phase system (ours alone: no peer keeps a grid in an ECS)
//! on the uniform sets of 100k points, from the scenario's cube to sparse
//! worlds: a frame with 5 % of the entities moved (each by up to one unit
//! per axis, cells of 5) against a frame with all of them moved (the
//! system then rebuilds), medians of blocks of frames taken in turns. The
//! grid is checked against the world and a fresh build afterwards.

use std::time::Instant;

use ecs_bench::scenes::replication::median;
use ecs_bench::scenes::spatial::{SpatialScene, SplitMix64, kiddo::KdTree, ours::Grid};
use ecs_core::{Entity, Schedule, World};
use ecs_spatial::{BroadPhase, Position, SparseGrid, update_broad_phase};
use glam::Vec3;

/// Medians of `reps` timings of `ours` and `peer`, taken in turns.
fn in_turns(reps: usize, mut ours: impl FnMut(), mut peer: impl FnMut()) -> (f64, f64) {
    let (mut a, mut b) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let t = Instant::now();
        ours();
        a.push(t.elapsed().as_secs_f64() * 1e6);
        let t = Instant::now();
        peer();
        b.push(t.elapsed().as_secs_f64() * 1e6);
    }
    (median(&a), median(&b))
}

/// A coordinate on the scenario's 1/256 lattice.
fn lattice(v: f64) -> f32 {
    ((v * 256.0).round() / 256.0) as f32
}

fn sets() -> Vec<(String, Vec<Vec3>, f32)> {
    let mut rng = SplitMix64::new(7);
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let mut gauss = SplitMix64::new(11);
    let mut sets = Vec::new();
    let mut uniform = |n: usize, side: f64, r: f32, sets: &mut Vec<(String, Vec<Vec3>, f32)>| {
        let points = (0..n).map(|_| Vec3::new(lattice(unit() * side), lattice(unit() * side), lattice(unit() * side)));
        sets.push((format!("uniform {n} in {side}^3, r {r}"), points.collect(), r));
    };
    uniform(10_000, 93.0, 5.0, &mut sets);
    for side in [200.0, 300.0, 400.0, 500.0, 700.0, 1000.0, 2000.0] {
        uniform(100_000, side, 5.0, &mut sets);
    }
    uniform(100_000, 200.0, 2.0, &mut sets);
    uniform(100_000, 200.0, 10.0, &mut sets);
    uniform(100_000, 50.0, 2.0, &mut sets);
    let mut rng = SplitMix64::new(13);
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let blob = (0..100_000).map(|_| Vec3::from_array([0; 3].map(|_| lattice(gauss.gaussian() * 20.0))));
    sets.push(("one gaussian blob, sigma 20, r 2".into(), blob.collect(), 2.0));
    let plane = (0..100_000).map(|_| Vec3::new(lattice(unit() * 600.0), lattice(unit() * 600.0), 0.0));
    sets.push(("plane 600 x 600, r 5".into(), plane.collect(), 5.0));
    let line = (0..100_000).map(|_| Vec3::new(lattice(unit() * 20_000.0), 0.0, 0.0));
    sets.push(("line of 20000, r 5".into(), line.collect(), 5.0));
    let base: Vec<Vec3> = (0..1000)
        .map(|_| Vec3::new(lattice(unit() * 1000.0), lattice(unit() * 1000.0), lattice(unit() * 1000.0)))
        .collect();
    sets.push(("1000 points x 100 copies, r 5".into(), (0..100_000).map(|i| base[i % 1000]).collect(), 5.0));
    let far = (0..100_000).map(|_| {
        Vec3::new(lattice(50_000.0 + unit() * 200.0), lattice(-30_000.0 + unit() * 200.0), lattice(unit() * 200.0))
    });
    sets.push(("uniform in 200^3 at (50000, -30000, 0), r 5".into(), far.collect(), 5.0));
    sets
}

/// A world of `points` as entities with [`Position`], kept in a
/// [`BroadPhase`] with cells of 5, and moves of up to one unit per axis.
struct BroadPhaseWorld {
    world: World,
    schedule: Schedule,
    entities: Vec<Entity>,
    homes: Vec<Vec3>,
    offsets: Vec<Vec3>,
    away: Vec<bool>,
    frame: usize,
}

impl BroadPhaseWorld {
    fn new(points: &[Vec3]) -> Result<Self, String> {
        let mut world = World::new();
        world.insert_resource(BroadPhase::<Position>::new(Vec3::ZERO, 5.0).map_err(|e| e.to_string())?);
        let entities = world.spawn_batch(points.iter().map(|&p| (Position(p),)));
        let mut schedule = Schedule::new();
        schedule.add_systems(update_broad_phase::<Position>);
        schedule.run(&mut world).map_err(|e| e.to_string())?;
        let mut rng = SplitMix64::new(17);
        let mut step = move || lattice((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0);
        let offsets = points.iter().map(|_| Vec3::new(step(), step(), step())).collect();
        let away = vec![false; points.len()];
        Ok(Self { world, schedule, entities, homes: points.to_vec(), offsets, away, frame: 0 })
    }

    /// Moves every `one_in`-th entity (another set each frame) between its
    /// home and its offset point, then times one run of the system (µs).
    fn frame(&mut self, one_in: usize) -> Result<f64, String> {
        self.frame += 1;
        for i in (self.frame % one_in..self.entities.len()).step_by(one_in) {
            self.away[i] = !self.away[i];
            let p = if self.away[i] { self.homes[i] + self.offsets[i] } else { self.homes[i] };
            self.world.get_mut::<Position>(self.entities[i]).map_err(|e| e.to_string())?.0 = p;
        }
        let t = Instant::now();
        self.schedule.run(&mut self.world).map_err(|e| e.to_string())?;
        Ok(t.elapsed().as_secs_f64() * 1e6)
    }

    /// The grid holds every entity where the world has it, and finds the
    /// same hits as a grid built afresh from those positions.
    fn check(&self) -> Result<(), String> {
        let bp = self.world.resource::<BroadPhase<Position>>().ok_or("the broad phase is gone")?;
        let grid = bp.grid();
        let mut positions = Vec::with_capacity(self.entities.len());
        for &e in &self.entities {
            positions.push(self.world.get::<Position>(e).map_err(|e| e.to_string())?.0);
        }
        let mut fresh = SparseGrid::<Vec3, Entity>::new(Vec3::ZERO, 5.0).map_err(|e| e.to_string())?;
        fresh.rebuild(&self.entities, &positions).map_err(|e| e.to_string())?;
        let mut ours: Vec<(Entity, Vec3)> = grid.ids().iter().copied().zip(grid.positions().iter().copied()).collect();
        let mut want: Vec<(Entity, Vec3)> = self.entities.iter().copied().zip(positions).collect();
        ours.sort_by_key(|e| e.0);
        want.sort_by_key(|e| e.0);
        if ours != want {
            return Err("the grid's entities or positions differ from the world's".into());
        }
        let (mut a, mut b) = (0, 0);
        grid.for_each_pair_within(5.0, |_, _| a += 1);
        fresh.for_each_pair_within(5.0, |_, _| b += 1);
        if a != b {
            return Err(format!("{a} pairs in the system's grid, {b} in a fresh one"));
        }
        Ok(())
    }
}

fn broad_phase(filter: Option<&str>) -> Result<(), String> {
    println!();
    println!("broad-phase system, 100k entities | lookup | 5 % moved | all moved (rebuild) | 5 % / all");
    for side in [200.0, 700.0, 2000.0] {
        let mut rng = SplitMix64::new(23);
        let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let points: Vec<Vec3> = (0..100_000)
            .map(|_| Vec3::new(lattice(unit() * side), lattice(unit() * side), lattice(unit() * side)))
            .collect();
        let name = format!("uniform in {side}^3");
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let mut w = BroadPhaseWorld::new(&points)?;
        let (mut some, mut all) = (Vec::new(), Vec::new());
        // Blocks of frames in turns; the first frame of a block is not
        // timed (the first incremental run after a rebuild fills the
        // system's entity table).
        for _ in 0..6 {
            w.frame(1)?;
            for _ in 0..4 {
                all.push(w.frame(1)?);
            }
            w.frame(20)?;
            for _ in 0..4 {
                some.push(w.frame(20)?);
            }
        }
        w.check()?;
        let lookup =
            w.world.resource::<BroadPhase<Position>>().map_or("-".into(), |b| format!("{:?}", b.grid().lookup_kind()));
        let (some, all) = (median(&some), median(&all));
        println!("{name} | {lookup} | {some:.0} us | {all:.0} us | {:.0} %", 100.0 * some / all);
    }
    Ok(())
}

fn main() -> Result<(), String> {
    let filter = std::env::args().nth(1);
    println!("set | hits/point | build ours vs kiddo | all queries ours vs kiddo | pairs / queries");
    for (name, points, r) in sets() {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let mut ours = Grid::new(&points, r)?;
        let mut kiddo = KdTree::new(&points, r);
        let (b_ours, b_kiddo) = in_turns(9, || ours.build(), || kiddo.build());
        let (mut h_ours, mut h_kiddo) = (0, 0);
        let (q_ours, q_kiddo) = in_turns(5, || h_ours = ours.all_queries(), || h_kiddo = kiddo.all_queries());
        if h_ours != h_kiddo {
            return Err(format!("{name}: {h_ours} hits against kiddo's {h_kiddo}"));
        }
        let pairs: Vec<f64> = (0..5)
            .map(|_| {
                let t = Instant::now();
                ours.all_pairs();
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        let pairs = median(&pairs);
        println!(
            "{name} | {:.1} | {b_ours:.0} vs {b_kiddo:.0} ({:.2}x) | {q_ours:.0} vs {q_kiddo:.0} ({:.2}x) | {:.2}",
            h_ours as f64 / points.len() as f64,
            b_ours / b_kiddo,
            q_ours / q_kiddo,
            pairs / q_ours
        );
    }
    broad_phase(filter.as_deref())
}
