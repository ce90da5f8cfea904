//! The transform system against bevy_transform on hierarchies the
//! `transform` scenario does not have: one root with 100k children,
//! families of nine, binary trees, random trees, long chains and trees of
//! mixed size, with all roots or every 20th root moving.
//!
//! `cargo run --release -p ecs-bench --features peers --example probe_transform [filter]`
//!
//! Frames are timed in blocks of 15 per implementation, four blocks each in
//! turns (frame-by-frame turns would time each side while the other's
//! worker threads are still spinning down). Every scene is checked against
//! the reference product before its figures are printed.
//!
//! Last, ours alone: each forest with all roots moving and, in every
//! frame, one leaf spawned under a node picked across the forest, or one
//! leaf despawned (a structural change: the system updates its cached plan
//! in place, rebuilding the trees it touched), against the same frames
//! without it.

use std::time::Instant;

use ecs_bench::scenes::replication::median;
use ecs_bench::scenes::spatial::SplitMix64;
use ecs_bench::scenes::transform::{Forest, TransformScene, bevy, ours};
use ecs_transform::{LocalTransform, WorldHierarchyExt, transform_bundle};

/// The parents of the forest called `name` (parents before children).
fn parents(name: &str) -> Vec<Option<usize>> {
    let mut rng = SplitMix64::new(0x1234_5678_9ABC_DEF1);
    let mut below = |n: usize| rng.below(n as u32) as usize;
    let mut parents: Vec<Option<usize>> = Vec::new();
    match name {
        "one root, 100k children" => {
            parents.push(None);
            parents.extend(std::iter::repeat_n(Some(0), 99_999));
        }
        "10000 families of 9" => {
            for _ in 0..10_000 {
                let root = parents.len();
                parents.push(None);
                parents.extend(std::iter::repeat_n(Some(root), 9));
            }
        }
        "8 binary trees of depth 13" => {
            for _ in 0..8 {
                let base = parents.len();
                parents.push(None);
                parents.extend((1..(1 << 14) - 1).map(|k| Some(base + (k - 1) / 2)));
            }
        }
        "1000 random trees of 100" => {
            for _ in 0..1000 {
                let base = parents.len();
                parents.push(None);
                for k in 1..100 {
                    parents.push(Some(base + below(k)));
                }
            }
        }
        "10 chains of 10000" => {
            for _ in 0..10 {
                parents.push(None);
                for _ in 1..10_000 {
                    parents.push(Some(parents.len() - 1));
                }
            }
        }
        _ => {
            // 2000 random trees of 1 to 97 nodes.
            for t in 0..2000 {
                let base = parents.len();
                parents.push(None);
                for k in 1..1 + t % 97 {
                    parents.push(Some(base + below(k)));
                }
            }
        }
    }
    parents
}

fn main() -> Result<(), String> {
    let filter = std::env::args().nth(1);
    let names = [
        "one root, 100k children",
        "10000 families of 9",
        "8 binary trees of depth 13",
        "1000 random trees of 100",
        "10 chains of 10000",
        "2000 random trees of 1 to 97",
    ];
    println!("forest | movers | ours vs bevy_transform (µs) | ratio");
    for name in names {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let parents = parents(name);
        let roots: Vec<usize> = parents.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| i).collect();
        for (motion, movers) in [("all roots", roots.clone()), ("5 %", roots.iter().copied().step_by(20).collect())] {
            let forest = Forest { parents: parents.clone(), movers };
            let mut scenes: [Box<dyn TransformScene>; 2] = [
                Box::new(ours::Propagation::from_forest(forest.clone())),
                Box::new(bevy::Propagation::from_forest(forest)),
            ];
            let mut times = [Vec::new(), Vec::new()];
            for scene in &mut scenes {
                scene.check_frames()?;
            }
            for _ in 0..4 {
                for (scene, times) in scenes.iter_mut().zip(&mut times) {
                    for _ in 0..15 {
                        scene.move_roots();
                        let t = Instant::now();
                        scene.propagate();
                        times.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                }
            }
            for scene in &scenes {
                scene.check()?;
            }
            let [ours, peer] = times.map(|t| median(&t));
            println!("{name} | {motion} | {ours:.0} vs {peer:.0} | {:.2}x", ours / peer);
        }
    }
    println!("\nours, all roots moving | median frame (µs) | against no structural change | slowest frame (µs)");
    for name in names {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let parents = parents(name);
        let mut plain = 0.0;
        for change in ["none", "one leaf spawned", "one leaf despawned"] {
            let (t, slowest) = structural_frames(&parents, change).map_err(|e| format!("{change}: {e}"))?;
            if change == "none" {
                plain = t;
            }
            println!("{name} | {change} | {t:.0} | {:.2}x | {slowest:.0}", t / plain);
        }
    }
    Ok(())
}

/// The median and the slowest frame of the forest of `parents` (parents
/// before children), built as the `transform` scenario builds ours, with
/// all roots moving, and `change` made before each frame: a leaf spawned
/// under a node picked across the forest, or a leaf despawned.
fn structural_frames(parents: &[Option<usize>], change: &str) -> Result<(f64, f64), String> {
    let movers = parents.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| i).collect();
    let mut scene = ours::Propagation::from_forest(Forest { parents: parents.to_vec(), movers });
    let entities = scene.entities().to_vec();
    let mut has_children = vec![false; parents.len()];
    for p in parents.iter().flatten() {
        has_children[*p] = true;
    }
    let mut leaves: Vec<_> = entities.iter().zip(&has_children).filter(|(_, has)| !**has).map(|(&e, _)| e).collect();
    let mut rng = SplitMix64::new(0x5EED);
    let mut times = Vec::new();
    for frame in 0..62 {
        scene.move_roots();
        let world = scene.world_mut();
        match change {
            "one leaf spawned" => {
                let parent = entities[rng.below(entities.len() as u32) as usize];
                let child = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.25, 0.0)));
                world.set_parent(child, parent).map_err(|e| e.to_string())?;
            }
            "one leaf despawned" if !leaves.is_empty() => {
                let leaf = leaves.swap_remove(rng.below(leaves.len() as u32) as usize);
                world.despawn(leaf).map_err(|e| e.to_string())?;
            }
            _ => {}
        }
        let t = Instant::now();
        scene.propagate();
        if frame >= 2 {
            times.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok((median(&times), times.iter().copied().fold(0.0, f64::max)))
}
