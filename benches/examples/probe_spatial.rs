//! Our grid against kiddo on point sets the `spatial` scenario does not
//! have: other world sizes for the same 100k points (sparser cells), other
//! radii, fewer points, planes (one tilted), a line along an axis and one
//! along the diagonal, a sphere's shell, one dense blob, stacked
//! duplicates, coordinates far from the origin (10 000 and 100 000 cells
//! out), two cubes 100 000 apart (along x, along z, along y) and cubes on
//! the diagonal (two, and four). The grid's cells are as wide as the
//! radius, as in the scenario. Each set's line names the lookup the build
//! chose.
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_spatial [filter]`
//!
//! Per set: hits per point, then the build and all radius queries (ours vs
//! kiddo in µs, medians of runs taken in turns, and the ratio), and all
//! pairs as a share of all queries. Hit counts are checked equal.
//!
//! Then the broad-phase system (ours alone: no peer keeps a grid in an ECS)
//! on the uniform sets of 100k points, from the scenario's cube to sparse
//! worlds, on the two cubes (along x and along z) and on the cubes on the
//! diagonal (two, and four), as the scenario's `EcsBroadPhase`
//! runs it (cells of 5, each moved entity by up to one unit per axis): a frame with 5 % of the
//! entities moved against a frame with all of them moved (the system then
//! rebuilds), and frames with 1 %, 0.1 % and 10 entities moved (most of a
//! game's entities at rest), medians of blocks of frames taken in turns. The grid is
//! checked against the world and a fresh build afterwards.
//!
//! Last, one entity flying off from the first clump (along x, and along
//! the diagonal, one unit a frame) in the one-cube world and the worlds of
//! cubes on the diagonal, its 99 999 neighbours at rest: the frame's median
//! and mean over 1000 frames, and the frames over 3 us (those where its
//! cell change cost more than a shift of the grid's table).

use std::time::Instant;

use ecs_bench::scenes::replication::median;
use ecs_bench::scenes::spatial::ecs::{EcsBroadPhase, MOVED_ONE_IN};
use ecs_bench::scenes::spatial::{SpatialScene, SplitMix64, kiddo::KdTree, ours::Grid};
use ecs_core::{Schedule, World};
use ecs_spatial::{BroadPhase, LookupKind, Position, update_broad_phase};
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
    let farther = (0..100_000).map(|_| {
        Vec3::new(lattice(500_000.0 + unit() * 200.0), lattice(-300_000.0 + unit() * 200.0), lattice(unit() * 200.0))
    });
    sets.push(("uniform in 200^3 at (500000, -300000, 0), r 5".into(), farther.collect(), 5.0));
    let diagonal = (0..100_000).map(|_| Vec3::splat(lattice(unit() * 12_000.0)));
    sets.push(("diagonal line x = y = z of 12000, r 5".into(), diagonal.collect(), 5.0));
    let tilted = (0..100_000).map(|_| {
        let (u, v) = (unit() * 600.0, unit() * 600.0);
        Vec3::new(lattice(u), lattice(v), lattice((u + v) * 0.5))
    });
    sets.push(("tilted plane 600 x 600, z = (x + y) / 2, r 5".into(), tilted.collect(), 5.0));
    let shell = (0..100_000).map(|_| {
        let d = Vec3::from_array([0; 3].map(|_| gauss.gaussian() as f32)).normalize_or(Vec3::X) * 170.0;
        Vec3::new(lattice(d.x as f64), lattice(d.y as f64), lattice(d.z as f64))
    });
    sets.push(("sphere shell of radius 170, r 5".into(), shell.collect(), 5.0));
    sets.push(("two cubes of 160^3, 100000 apart, r 5".into(), two_cubes(&mut unit, 0), 5.0));
    sets.push(("two cubes of 160^3, 100000 apart along z, r 5".into(), two_cubes(&mut unit, 2), 5.0));
    sets.push(("two cubes of 160^3, 100000 apart along y, r 5".into(), two_cubes(&mut unit, 1), 5.0));
    sets.push((
        "two cubes of 160^3 on the diagonal, 60000 apart per axis, r 5".into(),
        diagonal_cubes(&mut unit, 2, 60_000.0),
        5.0,
    ));
    sets.push((
        "four cubes of 160^3 on the diagonal, 30000 apart per axis, r 5".into(),
        diagonal_cubes(&mut unit, 4, 30_000.0),
        5.0,
    ));
    sets
}

/// 100k points in `count` cubes of side 160 along the diagonal, `step`
/// apart on every axis, in turn.
fn diagonal_cubes(unit: &mut impl FnMut() -> f64, count: usize, step: f64) -> Vec<Vec3> {
    (0..100_000)
        .map(|i| {
            let offset = (i % count) as f64 * step;
            Vec3::from_array([0; 3].map(|_| lattice(unit() * 160.0 + offset)))
        })
        .collect()
}

/// 100k points in two cubes of side 160, the second 100 000 further along
/// `axis`, alternating.
fn two_cubes(unit: &mut impl FnMut() -> f64, axis: usize) -> Vec<Vec3> {
    (0..100_000)
        .map(|i| {
            let mut p = [0; 3].map(|_| unit() * 160.0);
            p[axis] += if i % 2 == 0 { 0.0 } else { 100_000.0 };
            Vec3::from_array(p.map(lattice))
        })
        .collect()
}

fn broad_phase(filter: Option<&str>) -> Result<(), String> {
    println!();
    println!(
        "broad-phase system, 100k entities | lookup | 5 % moved | 1 % | 0.1 % | 10 entities | all moved (rebuild) | 5 % / all | 10 / all"
    );
    // The sets, each with the side of the cube (from the origin) its moves
    // stay in.
    let mut sets = Vec::new();
    for side in [200.0, 700.0, 2000.0] {
        let mut rng = SplitMix64::new(23);
        let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let points: Vec<Vec3> = (0..100_000)
            .map(|_| Vec3::new(lattice(unit() * side), lattice(unit() * side), lattice(unit() * side)))
            .collect();
        sets.push((format!("uniform in {side}^3"), points, side as f32));
    }
    let mut rng = SplitMix64::new(29);
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    sets.push(("two cubes of 160^3, 100000 apart".into(), two_cubes(&mut unit, 0), 100_160.0));
    sets.push(("two cubes of 160^3, 100000 apart along z".into(), two_cubes(&mut unit, 2), 100_160.0));
    sets.push((
        "two cubes of 160^3 on the diagonal, 60000 apart per axis".into(),
        diagonal_cubes(&mut unit, 2, 60_000.0),
        60_160.0,
    ));
    sets.push((
        "four cubes of 160^3 on the diagonal, 30000 apart per axis".into(),
        diagonal_cubes(&mut unit, 4, 30_000.0),
        90_160.0,
    ));
    for (name, points, side) in sets {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let mut w = EcsBroadPhase::in_cube(&points, side)?;
        let timed = |one_in: usize, w: &mut EcsBroadPhase| {
            w.move_some(one_in);
            let t = Instant::now();
            w.frame();
            t.elapsed().as_secs_f64() * 1e6
        };
        // 5 %, 1 %, 0.1 % and 10 of the 100k entities moved a frame.
        let shares = [MOVED_ONE_IN, 100, 1000, 10_000];
        let (mut some, mut all) = (vec![Vec::new(); shares.len()], Vec::new());
        // Blocks of frames in turns; the first frame of a block is not
        // timed (the first incremental run after a rebuild fills the
        // system's entity table).
        for _ in 0..6 {
            timed(1, &mut w);
            for _ in 0..4 {
                all.push(timed(1, &mut w));
            }
            for (times, &one_in) in some.iter_mut().zip(&shares) {
                timed(one_in, &mut w);
                for _ in 0..4 {
                    times.push(timed(one_in, &mut w));
                }
            }
        }
        w.grid_len()?;
        w.check(5.0)?;
        let lookup = w.lookup_kind().map_or("-".into(), |k| format!("{k:?}"));
        let some: Vec<f64> = some.iter().map(|t| median(t)).collect();
        let all = median(&all);
        println!(
            "{name} | {lookup} | {:.0} us | {:.0} us | {:.0} us | {:.1} us | {all:.0} us | {:.0} % | {:.2} %",
            some[0],
            some[1],
            some[2],
            some[3],
            100.0 * some[0] / all,
            100.0 * some[3] / all
        );
    }
    Ok(())
}

/// The lookup a build chose, as the README's tables name it.
fn lookup_name(stats: ecs_spatial::GridStats) -> &'static str {
    match stats.lookup {
        LookupKind::Dense if stats.dense_compacted => "dense, compacted",
        LookupKind::Dense => "dense",
        LookupKind::Hashed if stats.blocks_compacted => "blocks, compacted",
        LookupKind::Hashed if stats.block_entries > 0 => "blocks",
        LookupKind::Hashed => "hash",
        _ => "other",
    }
}

fn main() -> Result<(), String> {
    let filter = std::env::args().nth(1);
    println!("set | lookup | hits/point | build ours vs kiddo | all queries ours vs kiddo | pairs / queries");
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
            "{name} | {} | {:.1} | {b_ours:.0} vs {b_kiddo:.0} ({:.2}x) | {q_ours:.0} vs {q_kiddo:.0} ({:.2}x) | {:.2}",
            lookup_name(ours.stats()),
            h_ours as f64 / points.len() as f64,
            b_ours / b_kiddo,
            q_ours / q_kiddo,
            pairs / q_ours
        );
    }
    broad_phase(filter.as_deref())?;
    flier(filter.as_deref())
}

/// One entity flying off from its world's first clump, one unit a frame
/// (a cell every five frames), in a world of 100k points at rest: the
/// broad-phase frame's median and mean over 1000 frames, and how many
/// frames took more than 3 us (those where the flier changed cell and the
/// grid's table needed more than a shift).
fn flier(filter: Option<&str>) -> Result<(), String> {
    println!();
    println!("one entity flying, 100k at rest | lookup | direction | median | mean | frames over 3 us");
    let mut rng = SplitMix64::new(29);
    let mut unit = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let cube: Vec<Vec3> = (0..100_000).map(|_| Vec3::from_array([0; 3].map(|_| lattice(unit() * 160.0)))).collect();
    let sets = [
        ("one cube of 160^3", cube),
        ("two cubes of 160^3 on the diagonal, 60000 apart per axis", diagonal_cubes(&mut unit, 2, 60_000.0)),
        ("four cubes of 160^3 on the diagonal, 30000 apart per axis", diagonal_cubes(&mut unit, 4, 30_000.0)),
    ];
    for (name, points) in sets {
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        for (direction, step) in [("x", Vec3::X), ("diagonal", Vec3::ONE)] {
            let mut world = World::new();
            let grid = BroadPhase::<Position>::new(Vec3::ZERO, 5.0).map_err(|e| e.to_string())?;
            world.insert_resource(grid);
            world.spawn_batch(points.iter().map(|&p| (Position(p),)));
            let start = Vec3::splat(80.0);
            let flier = world.spawn((Position(start),));
            let mut schedule = Schedule::new();
            schedule.add_systems(update_broad_phase::<Position>);
            schedule.run(&mut world).map_err(|e| e.to_string())?;
            let mut times = Vec::with_capacity(1000);
            for frame in 1..=1000 {
                world.get_mut::<Position>(flier).map_err(|e| e.to_string())?.0 = start + step * frame as f32;
                let t = Instant::now();
                schedule.run(&mut world).map_err(|e| e.to_string())?;
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let grid = world.resource::<BroadPhase<Position>>().ok_or("the broad phase is gone")?.grid();
            let p = world.get::<Position>(flier).map_err(|e| e.to_string())?.0;
            let mut near = Vec::new();
            grid.query_radius(p, 0.5, &mut near);
            if grid.len() != points.len() + 1 || !near.contains(&flier) {
                return Err(format!("{name}: the flier is not where it flew"));
            }
            let mean = times.iter().sum::<f64>() / times.len() as f64;
            let slow = times.iter().filter(|&&t| t > 3.0).count();
            println!(
                "{name} | {} | {direction} | {:.1} us | {mean:.1} us | {slow}",
                lookup_name(grid.stats()),
                median(&times)
            );
        }
    }
    Ok(())
}
