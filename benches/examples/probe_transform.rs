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
//! Last, both again, each forest with all roots moving and, in every frame,
//! one leaf spawned under a node picked across the forest, or one leaf
//! despawned (a structural change: our system updates its cached plan in
//! place, rebuilding the trees it touched), 60 frames per side; each side
//! is also compared with its own frames without the change.

use std::time::Instant;

use ecs_bench::scenes::replication::median;
use ecs_bench::scenes::spatial::SplitMix64;
use ecs_bench::scenes::transform::{Forest, TransformScene, bevy, ours};

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
    println!(
        "\nall roots moving, one change per frame | median frame, ours vs bevy_transform (µs) | ratio | \
         each against its frames without the change | slowest frame, ours vs bevy (µs)"
    );
    for name in names {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let parents = parents(name);
        let mut plain = [0.0; 2];
        for change in ["none", "one leaf spawned", "one leaf despawned"] {
            let [(ours, ours_max), (peer, peer_max)] = structural_frames(&parents, change);
            if change == "none" {
                plain = [ours, peer];
            }
            println!(
                "{name} | {change} | {ours:.0} vs {peer:.0} | {:.2}x | {:.2}x vs {:.2}x | {ours_max:.0} vs {peer_max:.0}",
                ours / peer,
                ours / plain[0],
                peer / plain[1]
            );
        }
    }
    Ok(())
}

/// The median and the slowest frame, ours and bevy_transform's, of the
/// forest of `parents` (parents before children) with all roots moving,
/// and `change` made before each frame: a leaf spawned under a node picked
/// across the forest, or a leaf despawned (the same nodes on both sides).
fn structural_frames(parents: &[Option<usize>], change: &str) -> [(f64, f64); 2] {
    let movers: Vec<usize> = parents.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| i).collect();
    let forest = Forest { parents: parents.to_vec(), movers };
    let scenes: [Box<dyn TransformScene>; 2] =
        [Box::new(ours::Propagation::from_forest(forest.clone())), Box::new(bevy::Propagation::from_forest(forest))];
    let mut has_children = vec![false; parents.len()];
    for &p in parents.iter().flatten() {
        has_children[p] = true;
    }
    scenes.map(|mut scene| {
        let mut leaves: Vec<usize> = (0..parents.len()).filter(|&i| !has_children[i]).collect();
        let mut rng = SplitMix64::new(0x5EED);
        let mut times = Vec::new();
        for frame in 0..62 {
            scene.move_roots();
            match change {
                "one leaf spawned" => scene.spawn_leaf(rng.below(parents.len() as u32) as usize),
                "one leaf despawned" if !leaves.is_empty() => {
                    scene.despawn_node(leaves.swap_remove(rng.below(leaves.len() as u32) as usize));
                }
                _ => {}
            }
            let t = Instant::now();
            scene.propagate();
            if frame >= 2 {
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        (median(&times), times.iter().copied().fold(0.0, f64::max))
    })
}
