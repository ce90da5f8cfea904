//! The transform system against bevy_transform on hierarchies the
//! `transform` scenario does not have: one root with 100k children, one
//! root whose one child holds 100k, families of nine, binary trees, random trees, long chains and trees of
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
//!
//! Then the hierarchy itself: each forest built with one spawn per node
//! carrying its parent link (parents first), then despawned root by root
//! with each root's subtree, on both sides, in turns, five times each.

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
        "one root, one child, 100k under it" => {
            // A scene root with a level holding everything.
            parents.extend([None, Some(0)]);
            parents.extend(std::iter::repeat_n(Some(1), 99_998));
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
        "one root, one child, 100k under it",
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
        let roots: Vec<usize> = roots(&parents).collect();
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
    println!(
        "\nbuilding the forest, one spawn per node with its link | despawning it, root by root with subtrees | (ms, ours vs bevy_ecs, median of 5)"
    );
    for name in names {
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        let parents = parents(name);
        let (mut ours, mut peer) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
        for _ in 0..5 {
            let [b, d] = build_and_despawn_ours(&parents)?;
            ours[0].push(b);
            ours[1].push(d);
            let [b, d] = build_and_despawn_bevy(&parents)?;
            peer[0].push(b);
            peer[1].push(d);
        }
        let [ob, od] = ours.map(|t| median(&t));
        let [pb, pd] = peer.map(|t| median(&t));
        println!("{name} | build {ob:.1} vs {pb:.1} ({:.2}x) | despawn {od:.1} vs {pd:.1} ({:.2}x)", ob / pb, od / pd);
    }
    Ok(())
}

/// The roots of the forest of `parents`.
fn roots(parents: &[Option<usize>]) -> impl Iterator<Item = usize> + '_ {
    parents.iter().enumerate().filter(|(_, p)| p.is_none()).map(|(i, _)| i)
}

/// Ours: milliseconds to spawn the forest (checked: every node's list holds
/// its children in spawn order) and to despawn it (checked: nothing left).
fn build_and_despawn_ours(parents: &[Option<usize>]) -> Result<[f64; 2], String> {
    use ecs_core::World;
    use ecs_transform::{ChildOf, DespawnMode, LocalTransform, WorldHierarchyExt, init_hierarchy, transform_bundle};
    let mut world = World::new();
    init_hierarchy(&mut world);
    let t = Instant::now();
    let mut entities = Vec::with_capacity(parents.len());
    for (i, parent) in parents.iter().enumerate() {
        let (translation, rotation, scale) = ecs_bench::scenes::transform::node_local(i);
        let bundle = transform_bundle(LocalTransform { translation, rotation, scale });
        entities.push(match *parent {
            Some(p) => world.spawn((bundle.0, bundle.1, ChildOf(entities[p]))),
            None => world.spawn(bundle),
        });
    }
    let build = t.elapsed().as_secs_f64() * 1e3;
    let mut lists = vec![Vec::new(); parents.len()];
    for (i, p) in parents.iter().enumerate() {
        if let Some(p) = *p {
            lists[p].push(entities[i]);
        }
    }
    if lists.iter().enumerate().any(|(i, list)| world.children_of(entities[i]) != &list[..]) {
        return Err("ours: a children list differs from the forest".into());
    }
    let t = Instant::now();
    for r in roots(parents) {
        world.despawn_with(entities[r], DespawnMode::Subtree).map_err(|e| e.to_string())?;
    }
    let despawn = t.elapsed().as_secs_f64() * 1e3;
    if !world.is_empty() {
        return Err("ours: entities left after despawning every root".into());
    }
    Ok([build, despawn])
}

/// bevy_ecs: the same, with bevy's `ChildOf` and its recursive despawn.
fn build_and_despawn_bevy(parents: &[Option<usize>]) -> Result<[f64; 2], String> {
    use bevy_ecs::hierarchy::{ChildOf, Children};
    use bevy_transform::components::{GlobalTransform, Transform};
    let mut world = bevy_ecs::world::World::new();
    // The world's own entities (bevy keeps some), not the forest's.
    let own = world.entities().count_spawned();
    let t = Instant::now();
    let mut entities = Vec::with_capacity(parents.len());
    for (i, parent) in parents.iter().enumerate() {
        let (translation, rotation, scale) = ecs_bench::scenes::transform::node_local(i);
        let transform = Transform {
            translation: bevy_math::Vec3::from_array(translation.to_array()),
            rotation: bevy_math::Quat::from_array(rotation.to_array()),
            scale: bevy_math::Vec3::from_array(scale.to_array()),
        };
        let bundle = (transform, GlobalTransform::default());
        entities.push(match *parent {
            Some(p) => world.spawn((bundle, ChildOf(entities[p]))).id(),
            None => world.spawn(bundle).id(),
        });
    }
    let build = t.elapsed().as_secs_f64() * 1e3;
    let children = parents.iter().filter(|p| p.is_some()).count();
    let listed: usize = entities.iter().map(|&e| world.get::<Children>(e).map_or(0, |c| c.len())).sum();
    if listed != children {
        return Err(format!("bevy: {listed} children listed, {children} in the forest"));
    }
    let t = Instant::now();
    for r in roots(parents) {
        world.despawn(entities[r]);
    }
    let despawn = t.elapsed().as_secs_f64() * 1e3;
    if world.entities().count_spawned() != own {
        return Err("bevy: entities left after despawning every root".into());
    }
    Ok([build, despawn])
}

/// The median and the slowest frame, ours and bevy_transform's, of the
/// forest of `parents` (parents before children) with all roots moving,
/// and `change` made before each frame: a leaf spawned under a node picked
/// across the forest, or a leaf despawned (the same nodes on both sides).
fn structural_frames(parents: &[Option<usize>], change: &str) -> [(f64, f64); 2] {
    let movers: Vec<usize> = roots(parents).collect();
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
