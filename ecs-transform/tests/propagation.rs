//! Propagation behaviour: static frames, deep chains, reparenting and
//! despawning, checked through values, `Changed<GlobalTransform>` and the
//! system's chunk counts.

use ecs_core::{Changed, ChunkStats, Entity, QueryState, Schedule, World};
use ecs_transform::HierarchyError;
use ecs_transform::prelude::*;
use glam::{Quat, Vec3};

fn schedule() -> Schedule {
    let mut schedule = Schedule::new();
    add_transform_systems(&mut schedule);
    schedule
}

fn chunk_stats(schedule: &Schedule) -> ChunkStats {
    schedule.system_stats().next().expect("one system").chunks()
}

/// A direct write between schedule runs; the next run must see it.
fn local_mut(world: &mut World, e: Entity) -> ecs_core::Mut<'_, LocalTransform> {
    world.get_mut::<LocalTransform>(e).unwrap()
}

fn translation(world: &World, e: Entity) -> Vec3 {
    world.get::<GlobalTransform>(e).unwrap().translation()
}

/// 300 roots with 3 children each, and 300 children of children.
fn forest(world: &mut World) -> (Vec<Entity>, Vec<Entity>) {
    let roots =
        world.spawn_batch((0..300).map(|i| transform_bundle(LocalTransform::from_xyz(i as f32, 0.0, 0.0)))).unwrap();
    let mut nodes = Vec::new();
    for &root in &roots {
        for k in 0..3 {
            let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, k as f32, 0.0))).unwrap();
            world.set_parent(child, root).unwrap();
            nodes.push(child);
        }
        let grandchild = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 0.0, 1.0))).unwrap();
        world.set_parent(grandchild, *nodes.last().unwrap()).unwrap();
        nodes.push(grandchild);
    }
    (roots, nodes)
}

#[test]
fn a_frame_where_nothing_moved_writes_nothing_and_skips_every_chunk() {
    let mut world = World::new();
    let (roots, nodes) = forest(&mut world);
    let mut schedule = schedule();
    let mut changed: QueryState<Entity, Changed<GlobalTransform>> = world.query_filtered();
    schedule.run(&mut world).unwrap();
    assert_eq!(changed.iter(&world).count(), roots.len() + nodes.len());
    assert_eq!(translation(&world, nodes[3]), Vec3::new(0.0, 2.0, 1.0));

    for _ in 0..3 {
        schedule.run(&mut world).unwrap();
        assert_eq!(changed.iter(&world).count(), 0, "a static frame wrote a GlobalTransform");
        let stats = chunk_stats(&schedule);
        assert!(stats.chunks_total > 2, "{stats:?}");
        assert_eq!(stats.chunks_skipped, stats.chunks_total, "a static frame visited a chunk: {stats:?}");
    }

    // One root moves: it and its four descendants change, nothing else.
    local_mut(&mut world, roots[7]).translation.y = 5.0;
    schedule.run(&mut world).unwrap();
    let mut moved: Vec<Entity> = changed.iter(&world).collect();
    moved.sort();
    let mut expected = vec![roots[7], nodes[28], nodes[29], nodes[30], nodes[31]];
    expected.sort();
    assert_eq!(moved, expected);
    assert_eq!(translation(&world, nodes[31]), Vec3::new(7.0, 7.0, 1.0));
    let stats = chunk_stats(&schedule);
    assert!(stats.chunks_skipped > 0 && stats.chunks_visited() >= 1, "{stats:?}");

    // Writing the same value is not a change anywhere downstream.
    local_mut(&mut world, roots[7]).translation.y = 5.0;
    schedule.run(&mut world).unwrap();
    assert_eq!(changed.iter(&world).count(), 0);
}

#[test]
fn a_chain_ten_thousand_deep_propagates() {
    let mut world = World::new();
    let root = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0))).unwrap();
    let mut last = root;
    for _ in 0..10_000 {
        let e = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0))).unwrap();
        world.set_parent(e, last).unwrap();
        last = e;
    }
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, last), Vec3::new(10_001.0, 0.0, 0.0));
    local_mut(&mut world, root).translation.x = 2.0;
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, last), Vec3::new(10_002.0, 0.0, 0.0));
    // A cycle through the chain is refused; the chain is unchanged.
    assert_eq!(world.set_parent(root, last), Err(HierarchyError::Cycle { child: root, parent: last }));
    assert_eq!(world.despawn_with(root, DespawnMode::Subtree), Ok(10_001));
    assert!(world.is_empty());
}

#[test]
fn reparenting_and_detaching_recompute_the_subtree() {
    let mut world = World::new();
    let a = world.spawn(transform_bundle(LocalTransform::from_xyz(10.0, 0.0, 0.0))).unwrap();
    let b = world
        .spawn(transform_bundle(
            LocalTransform::from_xyz(0.0, 10.0, 0.0).with_rotation(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2)),
        ))
        .unwrap();
    let c = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0))).unwrap();
    let d = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 0.0, 1.0))).unwrap();
    world.set_parent(c, a).unwrap();
    world.set_parent(d, c).unwrap();
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, d), Vec3::new(11.0, 0.0, 1.0));

    // Move c (and with it d) under the rotated b.
    world.set_parent(c, b).unwrap();
    schedule.run(&mut world).unwrap();
    assert!(translation(&world, d).abs_diff_eq(Vec3::new(0.0, 11.0, 1.0), 1e-5));

    // Detach c: it becomes a root at its local transform.
    world.remove_parent(c).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, d), Vec3::new(1.0, 0.0, 1.0));

    // Despawning c but keeping its children makes d a root.
    world.despawn_with(c, DespawnMode::DetachChildren).unwrap();
    assert!(!world.has::<ChildOf>(d).unwrap());
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, d), Vec3::new(0.0, 0.0, 1.0));
}

#[test]
fn a_child_spawned_under_a_moving_parent_gets_the_new_value() {
    let mut world = World::new();
    let parent = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0))).unwrap();
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    local_mut(&mut world, parent).translation.x = 3.0;
    let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 1.0, 0.0))).unwrap();
    world.set_parent(child, parent).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, child), Vec3::new(3.0, 1.0, 0.0));
}

#[test]
fn many_moving_roots_take_the_dense_pass_and_match_the_reference() {
    // 20 roots x 200 children (each with one grandchild): moving every root
    // hands far more than 32 children per child chunk to the walk, so the
    // children are computed by the parallel pass over all child chunks.
    let mut world = World::new();
    let roots =
        world.spawn_batch((0..20).map(|i| transform_bundle(LocalTransform::from_xyz(i as f32, 0.0, 0.0)))).unwrap();
    let mut children = Vec::new();
    let mut grandchildren = Vec::new();
    for (r, &root) in roots.iter().enumerate() {
        for k in 0..200 {
            let rotation = Quat::from_rotation_z(0.01 * k as f32);
            let child = world
                .spawn(transform_bundle(LocalTransform::from_xyz(0.0, k as f32, 0.0).with_rotation(rotation)))
                .unwrap();
            world.set_parent(child, root).unwrap();
            let grandchild = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, r as f32))).unwrap();
            world.set_parent(grandchild, child).unwrap();
            children.push(child);
            grandchildren.push(grandchild);
        }
    }
    let mut schedule = schedule();
    let mut changed: QueryState<Entity, Changed<GlobalTransform>> = world.query_filtered();
    schedule.run(&mut world).unwrap();
    changed.iter(&world).count();
    let reference = |world: &World, e: Entity| {
        let mut affine = world.get::<LocalTransform>(e).unwrap().to_affine();
        let mut current = e;
        while let Some(parent) = world.parent_of(current) {
            affine = world.get::<LocalTransform>(parent).unwrap().to_affine() * affine;
            current = parent;
        }
        affine
    };
    for frame in 1..4 {
        for &root in &roots {
            local_mut(&mut world, root).translation.y = frame as f32;
        }
        // One child also moves on its own in the same frame.
        local_mut(&mut world, children[frame * 7]).translation.x = frame as f32;
        schedule.run(&mut world).unwrap();
        for &e in roots.iter().chain(&children).chain(&grandchildren) {
            let got = world.get::<GlobalTransform>(e).unwrap().0;
            assert!(got.abs_diff_eq(reference(&world, e), 1e-3), "frame {frame}, entity {e}");
        }
        assert_eq!(changed.iter(&world).count(), roots.len() + children.len() + grandchildren.len());
    }
    // A frame without edits writes nothing.
    schedule.run(&mut world).unwrap();
    assert_eq!(changed.iter(&world).count(), 0);
}
