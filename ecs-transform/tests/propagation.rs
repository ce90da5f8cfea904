//! Propagation behaviour: static frames, deep chains, reparenting and
//! despawning, checked through values, `Changed<GlobalTransform>` and the
//! system's chunk counts.

use ecs_core::{Changed, ChunkStats, Disabled, Entity, QueryState, Schedule, World};
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

/// The product of the locals up `e`'s `ChildOf` chain (every ancestor
/// must have a local transform).
fn reference(world: &World, e: Entity) -> glam::Affine3A {
    let mut affine = world.get::<LocalTransform>(e).unwrap().to_affine();
    let mut current = e;
    while let Some(parent) = world.parent_of(current) {
        affine = world.get::<LocalTransform>(parent).unwrap().to_affine() * affine;
        current = parent;
    }
    affine
}

/// Spawns an entity with transforms at `(x, y, z)`, under `parent` if any.
fn spawn_at(world: &mut World, (x, y, z): (f32, f32, f32), parent: Option<Entity>) -> Entity {
    let e = world.spawn(transform_bundle(LocalTransform::from_xyz(x, y, z)));
    if let Some(parent) = parent {
        world.set_parent(e, parent).unwrap();
    }
    e
}

fn translation(world: &World, e: Entity) -> Vec3 {
    world.get::<GlobalTransform>(e).unwrap().translation()
}

/// 300 roots with 3 children each, and 300 children of children.
fn forest(world: &mut World) -> (Vec<Entity>, Vec<Entity>) {
    let roots = world.spawn_batch((0..300).map(|i| transform_bundle(LocalTransform::from_xyz(i as f32, 0.0, 0.0))));
    let mut nodes = Vec::new();
    for &root in &roots {
        for k in 0..3 {
            let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, k as f32, 0.0)));
            world.set_parent(child, root).unwrap();
            nodes.push(child);
        }
        let grandchild = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 0.0, 1.0)));
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
    let root = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0)));
    let mut last = root;
    for _ in 0..10_000 {
        let e = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0)));
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
    let a = world.spawn(transform_bundle(LocalTransform::from_xyz(10.0, 0.0, 0.0)));
    let b = world.spawn(transform_bundle(
        LocalTransform::from_xyz(0.0, 10.0, 0.0).with_rotation(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2)),
    ));
    let c = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0)));
    let d = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 0.0, 1.0)));
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
    let parent = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0)));
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    local_mut(&mut world, parent).translation.x = 3.0;
    let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 1.0, 0.0)));
    world.set_parent(child, parent).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, child), Vec3::new(3.0, 1.0, 0.0));
}

#[test]
fn many_moving_roots_walk_the_plan_and_match_the_reference() {
    // 20 roots x 200 children (each with one grandchild), every root moving
    // each frame with no structural change: the trees are walked through
    // the cached plan, in parallel.
    let mut world = World::new();
    let roots = world.spawn_batch((0..20).map(|i| transform_bundle(LocalTransform::from_xyz(i as f32, 0.0, 0.0))));
    let mut children = Vec::new();
    let mut grandchildren = Vec::new();
    for (r, &root) in roots.iter().enumerate() {
        for k in 0..200 {
            let rotation = Quat::from_rotation_z(0.01 * k as f32);
            let child =
                world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, k as f32, 0.0).with_rotation(rotation)));
            world.set_parent(child, root).unwrap();
            let grandchild = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, r as f32)));
            world.set_parent(grandchild, child).unwrap();
            children.push(child);
            grandchildren.push(grandchild);
        }
    }
    let mut schedule = schedule();
    let mut changed: QueryState<Entity, Changed<GlobalTransform>> = world.query_filtered();
    schedule.run(&mut world).unwrap();
    changed.iter(&world).count();
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

/// The errors propagation recorded so far.
fn recorded_errors(world: &World) -> Vec<HierarchyError> {
    world.resource::<ecs_transform::HierarchyErrors>().map(|e| e.iter().cloned().collect()).unwrap_or_default()
}

#[test]
fn despawning_a_parent_with_world_despawn_makes_its_children_roots() {
    let mut world = World::new();
    let parent = world.spawn(transform_bundle(LocalTransform::from_xyz(100.0, 0.0, 0.0)));
    let child = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 0.0, 0.0)));
    let grandchild = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 1.0, 0.0)));
    world.set_parent(child, parent).unwrap();
    world.set_parent(grandchild, child).unwrap();
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, grandchild), Vec3::new(101.0, 1.0, 0.0));
    // Despawned without the hierarchy functions: the hooks re-root the
    // child, so no link dangles.
    world.despawn(parent).unwrap();
    assert_eq!(world.parent_of(child), None);
    assert_eq!(world.parent_of(grandchild), Some(child));
    for frame in 1..6 {
        local_mut(&mut world, child).translation.x = frame as f32;
        schedule.run(&mut world).unwrap();
        assert_eq!(translation(&world, child), Vec3::new(frame as f32, 0.0, 0.0), "frame {frame}");
        assert_eq!(translation(&world, grandchild), Vec3::new(frame as f32, 1.0, 0.0), "frame {frame}");
    }
    assert_eq!(recorded_errors(&world), vec![]);
}

#[test]
fn a_link_left_to_a_dead_parent_is_reported_once_when_its_child_is_computed() {
    let mut world = World::new();
    let root = spawn_at(&mut world, (100.0, 0.0, 0.0), None);
    let child = spawn_at(&mut world, (1.0, 0.0, 0.0), Some(root));
    let grandchild = spawn_at(&mut world, (0.0, 1.0, 0.0), Some(child));
    let parent = spawn_at(&mut world, (0.0, 0.0, 50.0), None);
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    // The child's link rewritten by hand: `parent` never lists it, so
    // despawning `parent` leaves the link dangling.
    world.get_mut::<ChildOf>(child).unwrap().0 = parent;
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, child), Vec3::new(1.0, 0.0, 50.0));
    world.despawn(parent).unwrap();
    for frame in 1..5 {
        local_mut(&mut world, child).translation.x = frame as f32;
        schedule.run(&mut world).unwrap();
        // Computed from the identity, its subtree with it.
        assert_eq!(translation(&world, child), Vec3::new(frame as f32, 0.0, 0.0), "frame {frame}");
        assert_eq!(translation(&world, grandchild), Vec3::new(frame as f32, 1.0, 0.0), "frame {frame}");
        assert_eq!(recorded_errors(&world), vec![HierarchyError::DanglingParent { child, parent }], "frame {frame}");
    }
}

/// A loop closed through an entity without transforms is no loop: that
/// entity cuts the chain, and the child below it is computed from the
/// identity whichever way the frame is walked.
#[test]
fn an_entity_without_transforms_cuts_a_loop_of_links() {
    let mut world = World::new();
    let root = spawn_at(&mut world, (100.0, 0.0, 0.0), None);
    let a = spawn_at(&mut world, (1.0, 0.0, 0.0), Some(root));
    let b = spawn_at(&mut world, (0.0, 1.0, 0.0), Some(a));
    let c = spawn_at(&mut world, (0.0, 0.0, 1.0), Some(b));
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    world.remove_one::<GlobalTransform>(b).unwrap();
    schedule.run(&mut world).unwrap();
    // a -> c -> b -> a: a loop of links, cut at b.
    world.get_mut::<ChildOf>(a).unwrap().0 = c;
    for frame in 1..5 {
        // Both computed (a's link is not in c's list, so a is computed
        // when it changes), c first.
        local_mut(&mut world, c).translation.x = frame as f32;
        local_mut(&mut world, a).translation.y = frame as f32;
        schedule.run(&mut world).unwrap();
        assert_eq!(translation(&world, c), Vec3::new(frame as f32, 0.0, 1.0), "frame {frame}");
        assert_eq!(translation(&world, a), Vec3::new(frame as f32 + 1.0, frame as f32, 1.0), "frame {frame}");
    }
    assert_eq!(recorded_errors(&world), vec![]);
    // With b's transforms back, the loop is whole: reported once, and
    // nothing on it moves.
    world.insert_one(b, GlobalTransform::IDENTITY).unwrap();
    for frame in 5..8 {
        local_mut(&mut world, c).translation.x = frame as f32;
        schedule.run(&mut world).unwrap();
        assert_eq!(translation(&world, c), Vec3::new(4.0, 0.0, 1.0), "frame {frame}");
    }
    let errors = recorded_errors(&world);
    assert_eq!(errors.len(), 1);
    assert!(matches!(errors[0], HierarchyError::CycleFound { .. }));
}

/// Long loops, with long chains below them, each reported once, whether
/// a whole rebuild or the general walk meets them first; the rest of the
/// hierarchy moves on.
#[test]
fn long_loops_are_reported_once_and_skipped() {
    let mut world = World::new();
    let mut schedule = schedule();
    let mut chains = Vec::new();
    for c in 0..2 {
        let root = spawn_at(&mut world, (c as f32, 0.0, 0.0), None);
        let mut chain = vec![root];
        for _ in 0..300 {
            let parent = *chain.last().unwrap();
            chain.push(spawn_at(&mut world, (1.0, 0.0, 0.0), Some(parent)));
        }
        chains.push(chain);
    }
    schedule.run(&mut world).unwrap();
    let move_all = |world: &mut World, frame: usize| {
        for chain in &chains {
            for &e in &chain[1..] {
                local_mut(world, e).translation.y = frame as f32;
            }
        }
    };
    // Node 50 linked by hand under node 200: nodes 50 to 200 loop, and 201
    // to 300 hang below the loop. The first chain's loop is closed first
    // (a whole rebuild finds it), the second's once the plan is irregular
    // (the general walk finds it).
    for (frame, closing) in [(1, Some(0)), (2, None), (3, Some(1)), (4, None), (5, None)] {
        if let Some(c) = closing {
            let chain: &Vec<Entity> = &chains[c];
            world.get_mut::<ChildOf>(chain[50]).unwrap().0 = chain[200];
        }
        move_all(&mut world, frame);
        schedule.run(&mut world).unwrap();
        for (c, chain) in chains.iter().enumerate() {
            let looped = closing.map_or(c == 0 || frame > 3, |closed| c <= closed);
            for (i, &e) in chain.iter().enumerate().skip(1) {
                let want = Vec3::new(c as f32 + i as f32, i as f32 * frame as f32, 0.0);
                if !looped || i < 50 {
                    assert_eq!(translation(&world, e), want, "frame {frame}, chain {c}, node {i}");
                } else {
                    assert_ne!(translation(&world, e), want, "frame {frame}, chain {c}, node {i}");
                }
            }
        }
        let loops = recorded_errors(&world).iter().filter(|e| matches!(e, HierarchyError::CycleFound { .. })).count();
        assert_eq!(loops, if frame < 3 { 1 } else { 2 }, "frame {frame}");
    }
}

#[test]
fn a_loop_made_by_copying_a_link_is_refused_and_reported() {
    let mut world = World::new();
    let root = spawn_at(&mut world, (1.0, 0.0, 0.0), None);
    let child = spawn_at(&mut world, (0.0, 1.0, 0.0), Some(root));
    let other = spawn_at(&mut world, (0.0, 0.0, 5.0), None);
    let other_child = spawn_at(&mut world, (0.0, 0.0, 1.0), Some(other));
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    // `ChildOf` is `Copy`: a copy of the child's link put on the root would
    // make the root its own parent; inserting `ChildOf(child)` on the root
    // would close a two-entity loop. The hooks undo both.
    let link = *world.get::<ChildOf>(child).unwrap();
    world.insert_one(root, link).unwrap();
    world.insert_one(root, ChildOf(child)).unwrap();
    assert_eq!(world.parent_of(root), None);
    assert_eq!(world.children_of(root), &[child]);
    for frame in 1..5 {
        local_mut(&mut world, root).translation.x = 10.0 + frame as f32;
        local_mut(&mut world, child).translation.y = frame as f32;
        local_mut(&mut world, other).translation.x = frame as f32;
        schedule.run(&mut world).unwrap();
        assert_eq!(translation(&world, child), Vec3::new(10.0 + frame as f32, frame as f32, 0.0), "frame {frame}");
        assert_eq!(translation(&world, other_child), Vec3::new(frame as f32, 0.0, 6.0), "frame {frame}");
    }
    assert_eq!(
        recorded_errors(&world),
        vec![HierarchyError::Cycle { child: root, parent: root }, HierarchyError::Cycle { child: root, parent: child }]
    );
}

/// A forest built in one pass with `ChildOf` in the spawn bundles matches
/// the same forest built with `set_parent`, and keeps no dangling link when
/// parts of it are despawned, re-parented or unlinked at random.
#[test]
fn child_of_in_bundles_builds_the_same_hierarchy_as_set_parent() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: usize| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % n as u64) as usize
    };
    let mut bundled = World::new();
    ecs_transform::init_hierarchy(&mut bundled);
    let mut by_call = World::new();
    let mut a: Vec<Entity> = Vec::new();
    let mut b: Vec<Entity> = Vec::new();
    for i in 0..2000 {
        let local = LocalTransform::from_xyz(i as f32, 0.0, 0.0);
        if i < 20 {
            a.push(bundled.spawn(transform_bundle(local)));
            b.push(by_call.spawn(transform_bundle(local)));
        } else {
            let p = next(i);
            a.push(bundled.spawn((local, GlobalTransform::IDENTITY, ChildOf(a[p]))));
            let e = by_call.spawn(transform_bundle(local));
            by_call.set_parent(e, b[p]).unwrap();
            b.push(e);
        }
    }
    let index = |v: &[Entity]| -> std::collections::HashMap<Entity, usize> {
        v.iter().enumerate().map(|(k, &e)| (e, k)).collect()
    };
    let (ia, ib) = (index(&a), index(&b));
    let same = |wa: &World, wb: &World, a: &[Entity], b: &[Entity]| {
        for (k, (&ea, &eb)) in a.iter().zip(b).enumerate() {
            assert_eq!(wa.contains(ea), wb.contains(eb), "node {k}");
            if !wa.contains(ea) {
                continue;
            }
            assert_eq!(wa.parent_of(ea).map(|p| ia[&p]), wb.parent_of(eb).map(|p| ib[&p]), "parent of node {k}");
            let ca: Vec<usize> = wa.children_of(ea).iter().map(|c| ia[c]).collect();
            let cb: Vec<usize> = wb.children_of(eb).iter().map(|c| ib[c]).collect();
            assert_eq!(ca, cb, "children of node {k}");
            if let Some(p) = wa.parent_of(ea) {
                assert!(wa.contains(p), "node {k} names a dead parent");
                assert!(wa.children_of(p).contains(&ea));
            }
        }
    };
    same(&bundled, &by_call, &a, &b);
    for step in 0..600 {
        let k = next(a.len());
        match step % 3 {
            0 => {
                let _ = bundled.despawn(a[k]);
                let _ = by_call.despawn_with(b[k], DespawnMode::DetachChildren);
            }
            1 => {
                let p = next(a.len());
                let ra = bundled.set_parent(a[k], a[p]);
                let rb = by_call.set_parent(b[k], b[p]);
                assert_eq!(ra.is_ok(), rb.is_ok(), "step {step}");
            }
            _ => {
                let _ = bundled.remove_one::<ChildOf>(a[k]);
                let _ = by_call.remove_parent(b[k]);
            }
        }
        same(&bundled, &by_call, &a, &b);
    }
    // Propagation agrees on both.
    let (mut sa, mut sb) = (schedule(), schedule());
    sa.run(&mut bundled).unwrap();
    sb.run(&mut by_call).unwrap();
    for (&ea, &eb) in a.iter().zip(&b) {
        if bundled.contains(ea) {
            assert_eq!(translation(&bundled, ea), translation(&by_call, eb));
        }
    }
}

#[test]
fn transforms_added_later_are_propagated() {
    let mut world = World::new();
    let mut schedule = schedule();
    let parent = world.spawn(transform_bundle(LocalTransform::from_xyz(5.0, 0.0, 0.0)));
    // A child with only a local transform, and a root with only a global.
    let child = world.spawn((LocalTransform::from_xyz(0.0, 1.0, 0.0),));
    let late_root = world.spawn((GlobalTransform::IDENTITY,));
    let late_child = world.spawn((GlobalTransform::IDENTITY,));
    world.set_parent(child, parent).unwrap();
    world.set_parent(late_child, parent).unwrap();
    schedule.run(&mut world).unwrap();
    // Moves in between exercise the cached plan, too.
    local_mut(&mut world, parent).translation.x = 6.0;
    schedule.run(&mut world).unwrap();
    assert!(!world.has::<GlobalTransform>(child).unwrap());
    assert_eq!(translation(&world, late_child), Vec3::ZERO);

    world.insert_one(child, GlobalTransform::IDENTITY).unwrap();
    world.insert_one(late_root, LocalTransform::from_xyz(0.0, 0.0, 3.0)).unwrap();
    world.insert_one(late_child, LocalTransform::from_xyz(0.0, 0.0, 2.0)).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, child), Vec3::new(6.0, 1.0, 0.0));
    assert_eq!(translation(&world, late_root), Vec3::new(0.0, 0.0, 3.0));
    assert_eq!(translation(&world, late_child), Vec3::new(6.0, 0.0, 2.0));
    // And they follow their parent from then on.
    local_mut(&mut world, parent).translation.x = 7.0;
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, child), Vec3::new(7.0, 1.0, 0.0));
    assert_eq!(translation(&world, late_child), Vec3::new(7.0, 0.0, 2.0));
    // A root whose global is added after its local.
    let root = world.spawn((LocalTransform::from_xyz(0.0, 4.0, 0.0),));
    schedule.run(&mut world).unwrap();
    world.insert_one(root, GlobalTransform::IDENTITY).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, root), Vec3::new(0.0, 4.0, 0.0));
}

#[test]
fn despawning_parents_leaves_no_dangling_link() {
    let mut world = World::new();
    let (roots, nodes) = forest(&mut world);
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    // nodes[4k..4k + 4] are root k's three children and one grandchild
    // (under the third child).
    world.despawn_with(nodes[2], DespawnMode::Subtree).unwrap();
    world.despawn_with(nodes[6], DespawnMode::DetachChildren).unwrap();
    world.despawn_with(roots[3], DespawnMode::Subtree).unwrap();
    world.despawn_with(roots[4], DespawnMode::DetachChildren).unwrap();
    let mut links = world.query::<(Entity, &ChildOf)>();
    let pairs: Vec<(Entity, Entity)> = links.iter(&world).map(|(e, link)| (e, link.parent())).collect();
    assert!(!pairs.is_empty());
    for (e, parent) in pairs {
        assert!(world.contains(parent), "{e} names despawned {parent}");
        assert!(world.children_of(parent).contains(&e));
    }
    assert!(!world.contains(nodes[3]) && !world.contains(nodes[12]));
    assert_eq!(world.parent_of(nodes[7]), None);
    assert_eq!(world.parent_of(nodes[16]), None);
    for &root in &roots {
        if world.contains(root) {
            local_mut(&mut world, root).translation.z = 9.0;
        }
    }
    schedule.run(&mut world).unwrap();
    schedule.run(&mut world).unwrap();
    assert!(recorded_errors(&world).is_empty());
    assert_eq!(translation(&world, nodes[1]), Vec3::new(0.0, 1.0, 9.0));
    // Detached to roots, they keep their locals.
    assert_eq!(translation(&world, nodes[7]), Vec3::new(0.0, 0.0, 1.0));
    assert_eq!(translation(&world, nodes[16]), Vec3::new(0.0, 0.0, 0.0));
}

/// `ChildOf` bundles spawned before anything installed the hooks: the
/// propagation system installs them on its first run and repairs the lists.
#[test]
fn child_of_bundles_work_without_calling_anything_first() {
    let mut world = World::new();
    let root = world.spawn(transform_bundle(LocalTransform::from_xyz(5.0, 0.0, 0.0)));
    let early = world.spawn((LocalTransform::from_xyz(0.0, 1.0, 0.0), GlobalTransform::IDENTITY, ChildOf(root)));
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    assert_eq!(world.children_of(root), &[early]);
    assert_eq!(translation(&world, early), Vec3::new(5.0, 1.0, 0.0));
    let late = world.spawn((LocalTransform::from_xyz(0.0, 0.0, 2.0), GlobalTransform::IDENTITY, ChildOf(early)));
    schedule.run(&mut world).unwrap();
    assert_eq!(world.children_of(early), &[late]);
    assert_eq!(translation(&world, late), Vec3::new(5.0, 1.0, 2.0));
}

/// Chunks the system's `ParentQuery` (its fifth query parameter, which
/// only a whole rebuild of the plan iterates) visited in its latest run.
/// The first entity of `list` from index `i` on (wrapping around) that
/// `keep` accepts.
fn pick_from(list: &[Entity], i: usize, keep: impl Fn(Entity) -> bool) -> Option<Entity> {
    (0..list.len()).map(|k| list[(i + k) % list.len()]).find(|&e| keep(e))
}

fn parent_chunks_visited(schedule: &Schedule) -> u64 {
    let stats = schedule.system_stats().next().expect("one system");
    stats.queries[4].chunks_visited()
}

/// Every entity with a global transform against the product of the locals
/// up its `ChildOf` chain (every ancestor here has transforms).
fn check_all(world: &mut World, frame: usize) {
    let mut all = world.query::<(Entity, &GlobalTransform)>();
    let globals: Vec<(Entity, GlobalTransform)> = all.iter(world).map(|(e, g)| (e, *g)).collect();
    for (e, global) in globals {
        let want = reference(world, e);
        assert!(global.0.abs_diff_eq(want, 1e-3), "frame {frame}: {e} is {:?}, want {want:?}", global.0);
    }
}

#[test]
fn structural_frames_update_the_plan_in_place_and_match_the_reference() {
    // 400 trees (three children, one grandchild), every root moving in
    // every frame, and in every frame one structural change of each kind
    // in turn, then a frame with moves only. The plan is updated in place:
    // no frame after the first rebuild iterates the parent links again.
    let mut world = World::new();
    let (mut roots, mut nodes) = forest(&mut world);
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    assert!(parent_chunks_visited(&schedule) > 0, "the first frame builds the plan");
    for frame in 0..44 {
        let pick = frame * 37 + 5;
        let root = pick_from(&roots, pick, |e| world.contains(e)).unwrap();
        let node = pick_from(&nodes, pick * 3, |e| world.contains(e)).unwrap();
        match frame % 11 {
            0 => {
                let child = world.spawn(transform_bundle(LocalTransform::from_xyz(1.0, 2.0, 3.0)));
                world.set_parent(child, root).unwrap();
                nodes.push(child);
            }
            1 => {
                let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 0.0, 4.0)));
                world.set_parent(child, node).unwrap();
                nodes.push(child);
            }
            2 => {
                world.despawn_with(node, DespawnMode::Subtree).unwrap();
            }
            3 => {
                world.despawn_with(node, DespawnMode::DetachChildren).unwrap();
            }
            4 => {
                // A node moves to another tree, with its subtree.
                world.set_parent(node, root).unwrap();
            }
            5 => {
                // A node becomes a root, with its subtree.
                world.remove_parent(node).unwrap();
                roots.push(node);
            }
            6 => {
                world.despawn_with(root, DespawnMode::Subtree).unwrap();
            }
            7 => {
                // A new tree.
                let new_root = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 7.0, 0.0)));
                let child = world.spawn(transform_bundle(LocalTransform::from_xyz(7.0, 0.0, 0.0)));
                world.set_parent(child, new_root).unwrap();
                roots.push(new_root);
                nodes.push(child);
            }
            8 => {
                // A child that gets its transforms later, and a leaf that
                // loses its global.
                let child = world.spawn((LocalTransform::from_xyz(0.5, 0.5, 0.5),));
                world.set_parent(child, root).unwrap();
                world.insert_one(child, GlobalTransform::IDENTITY).unwrap();
                nodes.push(child);
                let leaf =
                    pick_from(&nodes, pick, |e| world.contains(e) && world.children_of(e).is_empty() && e != child)
                        .unwrap();
                world.remove_one::<GlobalTransform>(leaf).unwrap();
            }
            9 => {
                // A root loses its last child.
                let lone =
                    pick_from(&roots, pick, |r| world.contains(r) && world.children_of(r).len() == 1).unwrap_or(root);
                let child = world.children_of(lone)[0];
                world.despawn_with(child, DespawnMode::Subtree).unwrap();
            }
            _ => {
                // A root despawned behind the hierarchy's back: its
                // children become roots.
                let children = world.children_of(root).to_vec();
                world.despawn(root).unwrap();
                roots.extend(children);
            }
        }
        for &r in &roots {
            if world.contains(r) && world.parent_of(r).is_none() {
                local_mut(&mut world, r).translation.y = frame as f32;
            }
        }
        schedule.run(&mut world).unwrap();
        check_all(&mut world, frame);
        // A frame with moves only walks the plan as it was left: without
        // the update in place it would be rebuilt whole here.
        for &r in &roots {
            if world.contains(r) && world.parent_of(r).is_none() {
                local_mut(&mut world, r).translation.z = frame as f32 + 1.0;
            }
        }
        schedule.run(&mut world).unwrap();
        check_all(&mut world, frame);
        assert_eq!(parent_chunks_visited(&schedule), 0, "frame {frame}: the plan was rebuilt whole");
    }
    assert!(recorded_errors(&world).is_empty());
}

#[test]
fn one_root_with_every_entity_under_it_keeps_its_plan_through_structural_frames() {
    // One root, 8000 children (every tenth with two children of its own):
    // the plan splits the tree into packs, so a structural change under
    // the root rebuilds one pack, not the tree, and the frames after it
    // still walk the plan (without packs, each of these frames touched the
    // tree holding every node and took the general walk).
    structural_frames_under_one_node(false);
}

#[test]
fn a_level_under_the_root_holding_every_entity_keeps_its_plan_through_structural_frames() {
    // The same 8000 children under a level node, the root's only child:
    // the packs are anchored at the level, their input computed from the
    // root's and the level's transforms, which move in turns.
    structural_frames_under_one_node(true);
}

/// 8000 children of one node (the root, or with `level` the root's only
/// child) through six kinds of structural change, each frame checked
/// against the reference and required not to rebuild the plan whole.
fn structural_frames_under_one_node(level: bool) {
    let mut world = World::new();
    let top = spawn_at(&mut world, (0.0, 0.0, 0.0), None);
    let root = if level { spawn_at(&mut world, (0.0, 0.0, 5.0), Some(top)) } else { top };
    let mut children = Vec::new();
    let mut grandchildren = Vec::new();
    for i in 0..8000 {
        let child = spawn_at(&mut world, (i as f32, 1.0, 0.0), Some(root));
        children.push(child);
        if i % 10 == 0 {
            for k in 0..2 {
                grandchildren.push(spawn_at(&mut world, (0.0, k as f32, 1.0), Some(child)));
            }
        }
    }
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    for frame in 0..36 {
        let pick = frame * 997 + 7;
        let child = pick_from(&children, pick, |e| world.contains(e)).unwrap();
        match frame % 6 {
            0 => grandchildren.push(spawn_at(&mut world, (0.0, 0.0, 2.0), Some(child))),
            1 => world.despawn(child).unwrap(),
            2 => children.push(spawn_at(&mut world, (0.0, 3.0, 0.0), Some(root))),
            3 => {
                let grandchild = pick_from(&grandchildren, pick, |e| world.contains(e)).unwrap();
                world.despawn_with(grandchild, DespawnMode::Subtree).unwrap();
            }
            4 => {
                // A child moves under another child, into another pack.
                let other = pick_from(&children, pick + 4000, |e| world.contains(e)).unwrap();
                world.set_parent(child, other).unwrap();
            }
            _ => {
                // A child with children becomes a root of its own.
                let inner = pick_from(&children, pick, |e| {
                    world.contains(e) && world.parent_of(e) == Some(root) && !world.children_of(e).is_empty()
                })
                .unwrap();
                world.remove_parent(inner).unwrap();
            }
        }
        // The top moves; with a level, every third frame the level moves
        // instead (a changed local on the path to the anchor).
        let mover = if level && frame % 3 == 2 { root } else { top };
        local_mut(&mut world, mover).translation.y = frame as f32;
        schedule.run(&mut world).unwrap();
        check_all(&mut world, frame);
        assert_eq!(parent_chunks_visited(&schedule), 0, "frame {frame}: the change rebuilt the plan whole");
        local_mut(&mut world, mover).translation.z = frame as f32 + 1.0;
        schedule.run(&mut world).unwrap();
        check_all(&mut world, frame);
        assert_eq!(parent_chunks_visited(&schedule), 0, "frame {frame}: the plan was rebuilt whole");
    }
    assert!(recorded_errors(&world).is_empty());
}

#[test]
fn a_plan_updated_in_place_for_many_frames_stays_exact() {
    // 40 small trees and 150 frames of edits: the retired trees' positions
    // outnumber the live ones many times over, so the plan is compacted
    // again and again (never rebuilt whole), and every frame still
    // matches the reference.
    let mut world = World::new();
    let roots = world.spawn_batch((0..40).map(|i| transform_bundle(LocalTransform::from_xyz(i as f32, 0.0, 0.0))));
    let mut children = Vec::new();
    for (i, &root) in roots.iter().enumerate() {
        for k in 0..4 {
            let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, k as f32, i as f32)));
            world.set_parent(child, root).unwrap();
            children.push(child);
        }
    }
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    for frame in 0..150usize {
        let root = roots[frame * 7 % roots.len()];
        match frame % 3 {
            0 => {
                let child = world.spawn(transform_bundle(LocalTransform::from_xyz(0.5, 0.0, frame as f32)));
                world.set_parent(child, root).unwrap();
                children.push(child);
            }
            1 => {
                let child = children.swap_remove(frame * 13 % children.len());
                world.despawn(child).unwrap();
            }
            _ => {
                let child = children[frame * 11 % children.len()];
                world.set_parent(child, root).unwrap();
            }
        }
        for (i, &r) in roots.iter().enumerate() {
            local_mut(&mut world, r).translation.y = (frame + i) as f32;
        }
        local_mut(&mut world, children[frame % children.len()]).translation.x = frame as f32;
        schedule.run(&mut world).unwrap();
        check_all(&mut world, frame);
        assert_eq!(parent_chunks_visited(&schedule), 0, "frame {frame}: the plan was rebuilt whole");
    }
}

#[test]
fn a_local_changed_in_a_frame_the_plan_gave_up_is_used_in_the_next() {
    // Root `a` with child `c`, and root `b`. In one frame `b` gets its
    // first child (one without a global, so not a structural change for
    // propagation) and moves, which the plan cannot walk, and `c`'s local
    // changes: the general walk takes that frame. The plan stays valid,
    // and the next frame, where `a` moves, must use `c`'s new local.
    let mut world = World::new();
    let a = spawn_at(&mut world, (1.0, 0.0, 0.0), None);
    let c = spawn_at(&mut world, (0.0, 1.0, 0.0), Some(a));
    let b = spawn_at(&mut world, (0.0, 0.0, 1.0), None);
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    local_mut(&mut world, a).translation.x = 2.0;
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, c), Vec3::new(2.0, 1.0, 0.0));

    let bare = world.spawn((LocalTransform::IDENTITY,));
    world.set_parent(bare, b).unwrap();
    local_mut(&mut world, b).translation.z = 2.0;
    local_mut(&mut world, c).translation.y = 5.0;
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, c), Vec3::new(2.0, 5.0, 0.0));

    local_mut(&mut world, a).translation.x = 3.0;
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, c), Vec3::new(3.0, 5.0, 0.0));
}

#[test]
fn a_link_overwritten_by_hand_into_a_loop_stops_propagation_on_every_path() {
    // A link written through `Mut<ChildOf>` runs no hook: `b` names itself
    // while `root`'s list still names `b`. Whether the frame walks the plan
    // or (here: a link changed) the general walk from the moved root, `b`
    // and its child are on or below a loop and keep their globals.
    let mut world = World::new();
    let root = spawn_at(&mut world, (1.0, 0.0, 0.0), None);
    let a = spawn_at(&mut world, (0.0, 1.0, 0.0), Some(root));
    let b = spawn_at(&mut world, (0.0, 2.0, 0.0), Some(root));
    let c = spawn_at(&mut world, (0.0, 0.0, 3.0), Some(b));
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, c), Vec3::new(1.0, 2.0, 3.0));
    world.get_mut::<ChildOf>(b).unwrap().0 = b;
    for frame in 1..4 {
        local_mut(&mut world, root).translation.x = 10.0 * frame as f32;
        schedule.run(&mut world).unwrap();
        assert_eq!(translation(&world, a), Vec3::new(10.0 * frame as f32, 1.0, 0.0), "frame {frame}");
        assert_eq!(translation(&world, b), Vec3::new(1.0, 2.0, 0.0), "frame {frame}");
        assert_eq!(translation(&world, c), Vec3::new(1.0, 2.0, 3.0), "frame {frame}");
    }
    assert!(matches!(recorded_errors(&world)[..], [HierarchyError::CycleFound { .. }]));
}

/// A root at x = 1, its child at y = 1 and grandchild at z = 1, propagated
/// once.
fn three_levels() -> (World, Schedule, [Entity; 3]) {
    let mut world = World::new();
    let mut schedule = schedule();
    let p = spawn_at(&mut world, (1.0, 0.0, 0.0), None);
    let c = spawn_at(&mut world, (0.0, 1.0, 0.0), Some(p));
    let g = spawn_at(&mut world, (0.0, 0.0, 1.0), Some(c));
    schedule.run(&mut world).unwrap();
    (world, schedule, [p, c, g])
}

/// A disabled entity is still part of the hierarchy: its global, and those
/// below it, follow their parents, so enabling it again finds them right.
#[test]
fn disabled_entities_and_their_subtrees_follow_their_parents() {
    let (mut world, mut schedule, [p, c, g]) = three_levels();
    assert_eq!(translation(&world, g), Vec3::new(1.0, 1.0, 1.0));

    world.insert_one(c, Disabled).unwrap();
    local_mut(&mut world, p).translation = Vec3::new(5.0, 0.0, 0.0);
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, c), Vec3::new(5.0, 1.0, 0.0));
    assert_eq!(translation(&world, g), Vec3::new(5.0, 1.0, 1.0));
    world.remove_one::<Disabled>(c).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, g), Vec3::new(5.0, 1.0, 1.0));

    // A disabled root that moves moves its subtree.
    world.insert_one(p, Disabled).unwrap();
    local_mut(&mut world, p).translation = Vec3::new(9.0, 0.0, 0.0);
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, p), Vec3::new(9.0, 0.0, 0.0));
    assert_eq!(translation(&world, g), Vec3::new(9.0, 1.0, 1.0));
    assert!(recorded_errors(&world).is_empty());
}

/// A child that moves below a disabled entity is computed through it, and
/// the disabled parent is not taken for a dead one.
#[test]
fn a_child_moved_below_a_disabled_entity_is_computed_through_it() {
    let (mut world, mut schedule, [_, c, g]) = three_levels();
    world.insert_one(c, Disabled).unwrap();
    schedule.run(&mut world).unwrap();
    local_mut(&mut world, g).translation = Vec3::new(0.0, 0.0, 2.0);
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, g), Vec3::new(1.0, 1.0, 2.0));
    assert!(recorded_errors(&world).is_empty(), "{:?}", recorded_errors(&world));
    // Re-parented under a disabled entity: the same.
    let other = spawn_at(&mut world, (0.0, 7.0, 0.0), None);
    world.insert_one(other, Disabled).unwrap();
    world.set_parent(g, other).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(translation(&world, g), Vec3::new(0.0, 7.0, 2.0));
    assert!(recorded_errors(&world).is_empty(), "{:?}", recorded_errors(&world));
}

/// The repair of lists when the hooks are installed counts disabled
/// children and parents like the others.
#[test]
fn lists_repaired_on_the_first_run_keep_disabled_children() {
    let mut world = World::new();
    let root = world.spawn(transform_bundle(LocalTransform::from_xyz(5.0, 0.0, 0.0)));
    let asleep =
        world.spawn((LocalTransform::from_xyz(0.0, 1.0, 0.0), GlobalTransform::IDENTITY, ChildOf(root), Disabled));
    let awake = world.spawn((LocalTransform::from_xyz(0.0, 2.0, 0.0), GlobalTransform::IDENTITY, ChildOf(asleep)));
    let mut schedule = schedule();
    schedule.run(&mut world).unwrap();
    assert_eq!(world.children_of(root), &[asleep]);
    assert_eq!(world.children_of(asleep), &[awake]);
    assert_eq!(translation(&world, awake), Vec3::new(5.0, 3.0, 0.0));
    world.despawn_with(root, DespawnMode::Subtree).unwrap();
    assert!(!world.contains(asleep) && !world.contains(awake));
}
