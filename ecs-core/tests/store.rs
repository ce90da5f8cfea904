//! Cross-module behaviour of the store: handles, structure changes, ticks
//! carried by moving rows, drops, filters, conflicts, chunk views.

use ecs_core::Component;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ecs_core::{
    Added, CHUNK_SIZE, Changed, ConflictKind, Entity, Or, QueryError, QueryState, StoreError, With, Without, World,
};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Tag;
#[derive(Component)]
struct Huge(
    #[allow(dead_code, reason = "the value is never read: it gives the type its size or its destructor")]
    [u8; CHUNK_SIZE],
);

fn changed_pos(world: &mut World, q: &mut QueryState<Entity, Changed<Pos>>) -> Vec<Entity> {
    world.increment_change_tick();
    let mut v: Vec<Entity> = q.iter(world).collect();
    v.sort();
    v
}

#[test]
fn stale_handles_fail_and_touch_nothing() {
    let mut world = World::new();
    let a = world.spawn((Pos(1.0),));
    world.despawn(a).unwrap();
    let b = world.spawn((Pos(2.0),));
    assert_eq!(a.index(), b.index(), "slot is reused");
    assert_eq!(world.despawn(a), Err(StoreError::NoSuchEntity(a)));
    assert_eq!(world.get::<Pos>(a), Err(StoreError::NoSuchEntity(a)));
    assert!(world.get_mut::<Pos>(a).is_err());
    assert_eq!(world.insert(a, (Vel(1.0),)), Err(StoreError::NoSuchEntity(a)));
    assert_eq!(world.remove_one::<Pos>(a).err(), Some(StoreError::NoSuchEntity(a)));
    assert_eq!(world.get::<Pos>(b), Ok(&Pos(2.0)));
    assert_eq!(world.has::<Vel>(b), Ok(false));
    assert_eq!(world.len(), 1);
}

#[test]
fn oversized_components_are_a_clear_error() {
    let mut world = World::new();
    let e = world.spawn((Pos(1.0),));
    let err = world.try_spawn((Huge([0; CHUNK_SIZE]),)).unwrap_err();
    assert!(matches!(err, StoreError::ComponentTooLarge { .. }));
    assert!(err.to_string().contains("Huge"), "{err}");
    assert!(matches!(world.insert(e, (Huge([0; CHUNK_SIZE]),)), Err(StoreError::ComponentTooLarge { .. })));
    // Each fits alone but not together.
    #[derive(Component)]
    struct Half(
        #[allow(dead_code, reason = "the value is never read: it gives the type its size or its destructor")]
        [u8; CHUNK_SIZE / 2],
    );
    assert!(world.try_spawn((Half([0; CHUNK_SIZE / 2]),)).is_ok());
    assert!(matches!(
        world.try_spawn((Half([0; CHUNK_SIZE / 2]), Huge([0; CHUNK_SIZE]))),
        Err(StoreError::ComponentTooLarge { .. })
    ));
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(1.0)));
    assert_eq!(world.has::<Huge>(e), Ok(false));
    assert_eq!(world.len(), 2);
}

#[test]
fn duplicate_components_in_a_bundle_are_refused() {
    let mut world = World::new();
    assert!(matches!(world.try_spawn((Pos(1.0), Pos(2.0))), Err(StoreError::DuplicateComponent(_))));
    assert!(world.is_empty());
}

#[test]
fn tags_take_no_chunk_space() {
    let mut world = World::new();
    let plain = world.spawn((Pos(0.0),));
    let tagged = world.spawn((Pos(0.0), Tag));
    let cap = |e: Entity| world.archetypes()[world.location(e).unwrap().archetype.index()].chunk_capacity();
    assert_eq!(cap(plain), cap(tagged));
    let mut q = world.query_filtered::<Entity, With<Tag>>();
    assert_eq!(q.iter(&world).collect::<Vec<_>>(), vec![tagged]);
}

#[test]
fn chunks_hold_what_fits_and_spill_over() {
    let mut world = World::new();
    let entities = world.spawn_batch((0..1000).map(|i| (Pos(i as f32), Vel(0.0))));
    let arch = &world.archetypes()[world.location(entities[0]).unwrap().archetype.index()];
    let cap = arch.chunk_capacity();
    assert!(cap * (8 + 8) <= CHUNK_SIZE && cap > 900, "cap {cap}");
    assert_eq!(arch.chunk_count(), 1000usize.div_ceil(cap));
    for (i, &e) in entities.iter().enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32)));
    }
}

#[test]
fn despawn_swap_removes_within_the_chunk_and_moved_rows_keep_ticks() {
    let mut world = World::new();
    let es = world.spawn_batch((0..10).map(|i| (Pos(i as f32),)));
    let mut q = world.query_filtered::<Entity, Changed<Pos>>();
    changed_pos(&mut world, &mut q);
    // Change the last row, then despawn row 2: the last row moves into it.
    world.get_mut::<Pos>(es[9]).unwrap().0 = 90.0;
    world.despawn(es[2]).unwrap();
    assert_eq!(world.location(es[9]).unwrap().row, 2);
    assert_eq!(world.get::<Pos>(es[9]), Ok(&Pos(90.0)));
    assert_eq!(changed_pos(&mut world, &mut q), vec![es[9]]);
    assert_eq!(changed_pos(&mut world, &mut q), vec![]);
    // The freed row is refilled by the next spawn.
    let n = world.spawn((Pos(5.0),));
    assert_eq!(world.location(n).unwrap().chunk, 0);
    assert_eq!(world.location(n).unwrap().row, 9);
}

#[test]
fn insert_and_remove_carry_ticks_and_stamp_added() {
    let mut world = World::new();
    let es = world.spawn_batch((0..300).map(|i| (Pos(i as f32),)));
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let mut added_vel = world.query_filtered::<Entity, Added<Vel>>();
    changed_pos(&mut world, &mut changed);
    added_vel.iter(&world).count();

    world.get_mut::<Pos>(es[5]).unwrap().0 = -1.0;
    world.insert(es[5], (Vel(1.0),)).unwrap();
    world.insert(es[6], (Vel(1.0),)).unwrap();
    assert_eq!(changed_pos(&mut world, &mut changed), vec![es[5]], "moved row keeps its change, es[6] has none");
    let mut added: Vec<_> = added_vel.iter(&world).collect();
    added.sort();
    assert_eq!(added, vec![es[5], es[6]]);

    // Replacing an existing component counts as changed, not added.
    world.insert(es[6], (Vel(2.0), Pos(7.0))).unwrap();
    world.increment_change_tick();
    assert_eq!(added_vel.iter(&world).count(), 0);
    assert_eq!(changed_pos(&mut world, &mut changed), vec![es[6]]);

    assert_eq!(world.remove_one::<Vel>(es[6]), Ok(Vel(2.0)));
    assert_eq!(world.has::<Vel>(es[6]), Ok(false));
    assert_eq!(world.get::<Pos>(es[6]), Ok(&Pos(7.0)));
    assert_eq!(changed_pos(&mut world, &mut changed), vec![], "remove writes nothing");
    assert!(matches!(world.remove_one::<Vel>(es[6]), Err(StoreError::MissingComponent { .. })));
    assert_eq!(world.remove::<(Pos, Vel)>(es[5]), Ok((Pos(-1.0), Vel(1.0))));
    assert_eq!(world.has::<Pos>(es[5]), Ok(false));
    assert!(world.contains(es[5]));
}

/// The same bundle inserted into and removed from entities of different
/// archetypes, in turns and in runs: each move follows its own archetype's
/// plan (the world remembers the latest plan per kind of move, keyed by
/// source archetype and bundle), the values land where they belong, and a
/// refused remove is not remembered as a plan.
#[test]
fn the_same_bundle_moves_each_archetype_along_its_own_plan() {
    let mut world = World::new();
    let plain: Vec<Entity> = (0..40).map(|i| world.spawn((Pos(i as f32),))).collect();
    let tagged: Vec<Entity> = (0..40).map(|i| world.spawn((Pos(i as f32), Tag))).collect();
    // In turns (a different source each time), then in runs of one source.
    let order: Vec<Entity> = plain[..20]
        .iter()
        .zip(&tagged[..20])
        .flat_map(|(&a, &b)| [a, b])
        .chain(plain[20..].iter().copied())
        .chain(tagged[20..].iter().copied())
        .collect();
    for (n, &e) in order.iter().enumerate() {
        world.insert(e, (Vel(n as f32),)).unwrap();
    }
    for (n, &e) in order.iter().enumerate() {
        assert_eq!(world.get::<Vel>(e), Ok(&Vel(n as f32)));
        assert_eq!(world.has::<Tag>(e), Ok(tagged.contains(&e)));
    }
    assert_eq!(world.query_filtered::<Entity, (With<Vel>, With<Tag>)>().iter(&world).count(), 40);
    assert_eq!(world.query_filtered::<Entity, (With<Vel>, Without<Tag>)>().iter(&world).count(), 40);
    // A remove the entity cannot do fails and changes nothing, also right
    // after the same remove succeeded on another archetype.
    assert_eq!(world.remove::<(Vel, Tag)>(tagged[0]), Ok((Vel(1.0), Tag)));
    assert!(matches!(world.remove::<(Vel, Tag)>(plain[0]), Err(StoreError::MissingComponent { .. })));
    assert_eq!(world.get::<Vel>(plain[0]), Ok(&Vel(0.0)));
    assert_eq!(world.remove::<(Vel, Tag)>(tagged[1]), Ok((Vel(3.0), Tag)));
    for (n, &e) in order.iter().enumerate().rev() {
        if e == tagged[0] || e == tagged[1] {
            assert!(matches!(world.remove::<(Vel,)>(e), Err(StoreError::MissingComponent { .. })));
            continue;
        }
        assert_eq!(world.remove::<(Vel,)>(e), Ok((Vel(n as f32),)));
        assert_eq!(world.has::<Tag>(e), Ok(tagged.contains(&e)));
    }
    assert_eq!(world.query_filtered::<Entity, With<Vel>>().iter(&world).count(), 0);
    assert_eq!(world.query_filtered::<Entity, With<Tag>>().iter(&world).count(), 38);
    for (i, &e) in plain.iter().chain(&tagged).enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos((i % 40) as f32)));
    }
}

#[derive(Component, Clone)]
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn every_value_is_dropped_exactly_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let c = || Counted(drops.clone());
    let n = |d: &Arc<AtomicUsize>| d.load(Ordering::SeqCst);
    {
        let mut world = World::new();
        let es = world.spawn_batch((0..500).map(|_| (c(), Pos(0.0))));
        assert_eq!(n(&drops), 0);
        world.despawn(es[0]).unwrap();
        assert_eq!(n(&drops), 1);
        let removed = world.remove_one::<Counted>(es[1]).unwrap();
        assert_eq!(n(&drops), 1, "removed value is handed back, not dropped");
        drop(removed);
        assert_eq!(n(&drops), 2);
        world.insert(es[2], (c(),)).unwrap();
        assert_eq!(n(&drops), 3, "replaced value dropped once");
        world.insert(es[3], (Vel(0.0),)).unwrap();
        assert_eq!(n(&drops), 3, "moving a row drops nothing");
        // A failed insert drops the rejected bundle but nothing in the world.
        assert!(world.insert(es[4], (Huge([0; CHUNK_SIZE]), c())).is_err());
        assert_eq!(n(&drops), 4);
        let tagged = world.spawn((c(), Tag));
        world.despawn(tagged).unwrap();
        assert_eq!(n(&drops), 5);
    }
    // 500 spawned + 1 replacement + 1 tagged, 5 already dropped above
    // (including the rejected one), 1 removed from the world.
    assert_eq!(n(&drops), 500 + 1 + 1 + 1 - 1 + 1);
}

#[test]
fn zero_sized_values_with_drop_glue_are_dropped() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    #[derive(Component)]
    struct Zst;
    impl Drop for Zst {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::SeqCst);
        }
    }
    let mut world = World::new();
    let es = world.spawn_batch((0..10).map(|_| (Zst,)));
    world.despawn(es[0]).unwrap();
    assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    drop(world);
    assert_eq!(DROPS.load(Ordering::SeqCst), 10);
}

#[test]
fn option_entity_with_without_or() {
    let mut world = World::new();
    let a = world.spawn((Pos(1.0), Vel(1.0)));
    let b = world.spawn((Pos(2.0),));
    let c = world.spawn((Vel(3.0), Tag));
    assert!(world.contains(c));
    let mut q = world.query::<(Entity, &Pos, Option<&Vel>)>();
    let mut all: Vec<_> = q.iter(&world).map(|(e, p, v)| (e, p.0, v.map(|v| v.0))).collect();
    all.sort_by_key(|x| x.0);
    assert_eq!(all, vec![(a, 1.0, Some(1.0)), (b, 2.0, None)]);

    let mut without = world.query_filtered::<Entity, (With<Vel>, Without<Tag>)>();
    assert_eq!(without.iter(&world).collect::<Vec<_>>(), vec![a]);

    let mut or = world.query_filtered::<Entity, Or<(Changed<Pos>, Added<Tag>)>>();
    assert_eq!(or.iter(&world).count(), 3);
    world.increment_change_tick();
    world.get_mut::<Pos>(b).unwrap().0 = 5.0;
    world.insert(a, (Tag,)).unwrap();
    world.increment_change_tick();
    let mut got: Vec<_> = or.iter(&world).collect();
    got.sort();
    assert_eq!(got, vec![a, b]);
}

#[test]
fn conflicting_borrows_are_refused_before_iteration() {
    let mut world = World::new();
    world.spawn((Pos(1.0),));
    let e = QueryState::<(&mut Pos, &Pos)>::try_new(&mut world).unwrap_err();
    assert!(matches!(e, QueryError::Conflict { kind: ConflictKind::ReadWrite, .. }));
    assert!(e.to_string().contains("Pos"), "{e}");
    let e = QueryState::<(&mut Pos, &mut Pos)>::try_new(&mut world).unwrap_err();
    assert!(matches!(e, QueryError::Conflict { kind: ConflictKind::WriteWrite, .. }));
    // A filter on the component a query writes is fine.
    assert!(QueryState::<&mut Pos, Changed<Pos>>::try_new(&mut world).is_ok());
    assert!(QueryState::<(&Pos, &Pos)>::try_new(&mut world).is_ok());
}

#[test]
#[should_panic(expected = "borrowed both mutably and shared")]
fn world_query_panics_with_the_component_named() {
    let mut world = World::new();
    let _ = world.query::<(&Pos, &mut Pos)>();
}

#[test]
fn reading_or_unwritten_mut_marks_nothing_and_set_if_neq_avoids_false_positives() {
    let mut world = World::new();
    world.spawn_batch((0..2000).map(|i| (Pos(i as f32), Vel(0.0))));
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    let mut movers = world.query::<(&mut Pos, &Vel)>();
    changed_pos(&mut world, &mut changed);
    world.increment_change_tick();
    movers.for_each_mut(&mut world, |(mut p, v)| {
        let _read = p.0 + v.0;
        let target = Pos(p.0);
        p.set_if_neq(target);
    });
    assert!(changed_pos(&mut world, &mut changed).is_empty());
    let s = changed.stats();
    assert_eq!(s.chunks_skipped, s.chunks_total);
    assert!(s.chunks_total >= 2);
    // Every row of the matched chunks is counted, skipped or not, by the
    // iterator (changed) and the internal loop (movers) alike.
    assert_eq!(s.entities, 2000);
    assert_eq!(movers.stats().entities, 2000);
}

#[test]
fn a_run_sees_changes_since_its_last_run_but_not_its_own() {
    let mut world = World::new();
    let es = world.spawn_batch((0..10).map(|i| (Pos(i as f32),)));
    let mut writer = world.query_filtered::<&mut Pos, Changed<Pos>>();
    world.increment_change_tick();
    // First run: everything is new; it rewrites every row.
    writer.for_each_mut(&mut world, |mut p| p.0 += 1.0);
    world.increment_change_tick();
    // Its own writes are not seen again.
    let mut n = 0;
    writer.for_each_mut(&mut world, |_| n += 1);
    assert_eq!(n, 0);
    world.get_mut::<Pos>(es[3]).unwrap().0 = 0.0;
    world.increment_change_tick();
    let mut seen = vec![];
    writer.for_each_mut(&mut world, |p| seen.push(p.0));
    assert_eq!(seen, vec![0.0]);
}

#[test]
fn chunk_views_expose_slices_and_stamp_whole_chunks() {
    let mut world = World::new();
    let es = world.spawn_batch((0..3000).map(|i| (Pos(i as f32), Vel(1.0))));
    let cap = world.archetypes()[world.location(es[0]).unwrap().archetype.index()].chunk_capacity();
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed_pos(&mut world, &mut changed);

    let mut probe = world.query::<&Pos>();
    probe.for_each_chunk(&world, |_| {});
    world.increment_change_tick();
    let mut q = world.query::<(&mut Pos, &Vel)>();
    q.for_each_chunk_mut(&mut world, |mut view| {
        if view.chunk_index() == 1 {
            assert_eq!(view.entities().len(), view.len());
            let (pos, vel) = view.slices();
            for (p, v) in pos.iter_mut().zip(vel) {
                p.0 += v.0;
            }
        }
    });
    let got = changed_pos(&mut world, &mut changed);
    assert_eq!(got.len(), cap, "whole chunk 1 and nothing else");
    assert!(got.iter().all(|e| world.location(*e).unwrap().chunk == 1));
    assert_eq!(changed.stats().chunks_visited(), 1);
    assert_eq!(world.get::<Pos>(es[cap]), Ok(&Pos(cap as f32 + 1.0)));

    // The view exposes the chunk ticks: since `probe` last ran (before the
    // column write), only chunk 1 was written.
    let pos_id = world.components().id::<Pos>().unwrap();
    let mut written = vec![];
    probe.for_each_chunk(&world, |view| {
        if view.changed_since_last_run(pos_id) {
            written.push(view.chunk_index());
        }
        assert!(view.changed_tick(pos_id).is_some() && view.added_tick(pos_id).is_some());
    });
    assert_eq!(written, vec![1]);

    // Row-precise writes through a view.
    world.increment_change_tick();
    q.for_each_chunk_mut(&mut world, |mut view| {
        if view.chunk_index() == 0 {
            view.get(3).unwrap().0.0 = -3.0;
        }
    });
    assert_eq!(changed_pos(&mut world, &mut changed), vec![es[3]]);

    // A filtered view reports the passing rows.
    world.get_mut::<Pos>(es[7]).unwrap().0 = 7.5;
    world.increment_change_tick();
    let mut fq = world.query_filtered::<&Pos, Changed<Pos>>();
    fq.iter(&world).count();
    world.get_mut::<Pos>(es[8]).unwrap().0 = 8.5;
    world.increment_change_tick();
    let mut rows = vec![];
    fq.for_each_chunk(&world, |view| rows.extend(view.matching_rows()));
    assert_eq!(rows, vec![8]);
}

#[test]
fn parallel_iteration_matches_sequential_and_counts_chunks() {
    let mut world = World::new();
    let es = world.spawn_batch((0..20_000).map(|i| (Pos(i as f32), Vel(2.0))));
    let mut q = world.query::<(&mut Pos, &Vel)>();
    q.par_for_each_mut(&mut world, |(mut p, v)| p.0 += v.0);
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32 + 2.0)));
    }
    let total = q.stats().chunks_total;
    assert!(total > 1);
    // Few chunks: rows are split across threads, each row once.
    let mut small = World::new();
    let few = small.spawn_batch((0..100).map(|i| (Pos(i as f32), Vel(1.0))));
    let mut q = small.query::<(&mut Pos, &Vel)>();
    q.par_for_each_mut(&mut small, |(mut p, v)| p.0 += v.0);
    for (i, &e) in few.iter().enumerate() {
        assert_eq!(small.get::<Pos>(e), Ok(&Pos(i as f32 + 1.0)));
    }
    let counter = AtomicUsize::new(0);
    let mut ro = small.query::<&Pos>();
    ro.par_for_each_chunk_mut(&mut small, |view| {
        counter.fetch_add(view.len(), Ordering::Relaxed);
    });
    assert_eq!(counter.load(Ordering::Relaxed), 100);
}

#[test]
fn query_get_respects_archetype_match() {
    let mut world = World::new();
    let a = world.spawn((Pos(1.0), Vel(2.0)));
    let b = world.spawn((Pos(1.0),));
    let q = world.query::<(&Pos, &Vel)>();
    assert_eq!(q.get(&world, a).map(|(p, v)| (p.0, v.0)), Ok((1.0, 2.0)));
    assert_eq!(q.get(&world, b).err(), Some(QueryError::NoMatch(b)));
    world.despawn(a).unwrap();
    assert_eq!(q.get(&world, a).err(), Some(QueryError::NoSuchEntity(a)));
    let qm = world.query::<&mut Pos>();
    qm.get_mut(&mut world, b).unwrap().0 = 4.0;
    assert_eq!(world.get::<Pos>(b), Ok(&Pos(4.0)));
}

#[test]
fn archetypes_created_after_the_query_are_picked_up() {
    let mut world = World::new();
    let mut q = world.query::<&Pos>();
    assert_eq!(q.iter(&world).count(), 0);
    world.spawn((Pos(1.0), Tag));
    world.spawn((Pos(1.0), Vel(1.0)));
    assert_eq!(q.iter(&world).count(), 2);
}

#[test]
#[should_panic(expected = "not made for")]
fn query_state_refuses_another_world() {
    let mut w1 = World::new();
    let w2 = World::new();
    let mut q = w1.query::<&Pos>();
    q.iter(&w2).count();
}

#[test]
fn a_panicking_spawn_iterator_leaves_a_consistent_world() {
    let mut world = World::new();
    let before = world.spawn_batch((0..5).map(|i| (Pos(i as f32),)));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        world.spawn_batch((0..10).map(|i| {
            assert!(i < 7, "iterator fails");
            (Pos(100.0 + i as f32),)
        }));
    }));
    assert!(result.is_err());
    assert_eq!(world.len(), 12, "rows spawned before the panic are live");
    // ...and stamped as added: a new Added query sees all 12 (rows left
    // without stamps would keep tick 0 and be missed).
    let mut added = world.query_filtered::<Entity, Added<Pos>>();
    assert_eq!(added.iter(&world).count(), 12);
    let mut q = world.query::<(Entity, &Pos)>();
    assert_eq!(q.iter(&world).count(), 12);
    for (i, &e) in before.iter().enumerate() {
        assert_eq!(world.get::<Pos>(e), Ok(&Pos(i as f32)));
    }
    let e = world.spawn((Pos(-1.0),));
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(-1.0)));
}

#[test]
fn every_write_path_marks_exactly_the_written_rows() {
    let mut world = World::new();
    // Few chunks, so parallel iteration splits chunks into row ranges.
    let es = world.spawn_batch((0..700).map(|i| (Pos(i as f32), Vel(if i % 97 == 0 { 1.0 } else { 0.0 }))));
    let want: Vec<Entity> = es.iter().copied().step_by(97).collect();
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed_pos(&mut world, &mut changed);
    let mut q = world.query::<(&mut Pos, &Vel)>();

    q.par_for_each_mut(&mut world, |(mut p, v)| {
        if v.0 != 0.0 {
            p.0 += v.0;
        }
    });
    assert_eq!(changed_pos(&mut world, &mut changed), want, "par_for_each_mut");

    q.for_each_mut(&mut world, |(mut p, v)| {
        if v.0 != 0.0 {
            p.0 += v.0;
        }
    });
    assert_eq!(changed_pos(&mut world, &mut changed), want, "for_each_mut");

    for (mut p, v) in q.iter_mut(&mut world) {
        if v.0 != 0.0 {
            p.0 += v.0;
        }
    }
    assert_eq!(changed_pos(&mut world, &mut changed), want, "iter_mut");

    q.par_for_each_chunk_mut(&mut world, |mut view| {
        for row in 0..view.len() {
            let (mut p, v) = view.get(row).unwrap();
            if v.0 != 0.0 {
                p.0 += v.0;
            }
        }
    });
    assert_eq!(changed_pos(&mut world, &mut changed), want, "chunk views");
    assert_eq!(world.get::<Pos>(es[97]), Ok(&Pos(97.0 + 4.0)));
    assert_eq!(changed_pos(&mut world, &mut changed), vec![]);
}

#[test]
fn internal_loops_match_row_by_row_iteration() {
    let mut world = World::new();
    let es = world.spawn_batch((0..3000).map(|i| (Pos(i as f32), Vel(0.0))));
    let tagged = world.spawn_batch((0..500).map(|i| (Pos(i as f32), Tag)));
    type Filter = Or<(Changed<Pos>, Added<Tag>)>;
    let mut by_iter = world.query_filtered::<Entity, Changed<Pos>>();
    let mut by_loop = world.query_filtered::<Entity, Changed<Pos>>();
    let mut or_iter = world.query_filtered::<Entity, Filter>();
    let mut or_loop = world.query_filtered::<Entity, Filter>();
    let mut and_iter = world.query_filtered::<Entity, (Changed<Pos>, Without<Tag>)>();
    let mut and_par = world.query_filtered::<Entity, (Changed<Pos>, Without<Tag>)>();
    for (round, step) in [1usize, 7, 63, 64, 65, 200, 3].into_iter().enumerate() {
        let sorted = |mut v: Vec<Entity>| {
            v.sort();
            v
        };
        let mut written: Vec<Entity> = es.iter().skip(round).step_by(step).copied().collect();
        for e in &written {
            world.get_mut::<Pos>(*e).unwrap().0 += 1.0;
        }
        let untagged_written = sorted(written.clone());
        if round == 2 {
            for e in tagged.iter().step_by(5) {
                world.get_mut::<Pos>(*e).unwrap().0 += 1.0;
                written.push(*e);
            }
        }
        // Brute force: the first run sees every spawn; later runs exactly
        // the rows written this round.
        let (want_changed, want_untagged) = if round == 0 {
            (sorted(es.iter().chain(&tagged).copied().collect()), sorted(es.clone()))
        } else {
            (sorted(written.clone()), untagged_written)
        };
        let a = sorted(by_iter.iter(&world).collect());
        assert_eq!(a, want_changed, "Changed vs brute force, step {step}");
        let mut b = Vec::new();
        by_loop.for_each(&world, |e| b.push(e));
        assert_eq!(a, sorted(b), "Changed, step {step}");
        let a = sorted(or_iter.iter(&world).collect());
        assert_eq!(a, want_changed, "Or vs brute force, step {step}");
        let mut b = Vec::new();
        or_loop.for_each(&world, |e| b.push(e));
        assert_eq!(a, sorted(b), "Or, step {step}");
        let a = sorted(and_iter.iter(&world).collect());
        assert_eq!(a, want_untagged, "And vs brute force, step {step}");
        let b = std::sync::Mutex::new(Vec::new());
        and_par.par_for_each(&world, |e| b.lock().unwrap().push(e));
        assert_eq!(a, sorted(b.into_inner().unwrap()), "And, parallel, step {step}");
        assert!(!a.is_empty());
    }
}

/// Bullets spawned and despawned through commands every frame: the handles
/// reuse the freed slots (under new generations), so the slot count stays
/// that of the entities alive at once, and old handles stay stale.
#[test]
fn entities_spawned_by_commands_reuse_freed_slots() {
    use ecs_core::{Commands, Query, Schedule};
    #[derive(Component)]
    struct Bullet;
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut bullets: Query<(Entity, &Bullet)>, mut commands: Commands| {
        for (e, _) in bullets.iter() {
            commands.despawn(e);
        }
        for _ in 0..50 {
            commands.spawn((Bullet, Pos(1.0)));
        }
    });
    let mut first: Vec<Entity> = Vec::new();
    for frame in 0..300 {
        schedule.run(&mut world).unwrap();
        if frame == 0 {
            first = world.query::<(Entity, &Bullet)>().iter(&world).map(|(e, _)| e).collect();
        }
        assert_eq!(world.len(), 50);
    }
    let largest = world.query::<(Entity, &Bullet)>().iter(&world).map(|(e, _)| e.index()).max().unwrap();
    assert!(largest < 150, "slot indices stay near the live count, got {largest}");
    assert!(first.iter().all(|&e| !world.contains(e)), "the first frame's handles are stale");
    assert!(world.reserve_entity().index() < 150);
}

#[test]
fn shared_and_optional_fetches_read_the_right_rows_in_every_chunk_and_archetype() {
    // A zero-sized marker, an over-aligned zero-sized marker and a payload,
    // in two archetypes of several chunks each.
    #[derive(Component, Debug, PartialEq)]
    struct Tag;
    #[derive(Component, Debug, PartialEq)]
    #[repr(align(128))]
    struct Wide;
    #[derive(Component, Debug, PartialEq)]
    struct Val(u64, u32);
    let mut world = World::new();
    let tagged: Vec<Entity> = (0..3000u64).map(|i| world.spawn((Val(i, i as u32 * 3), Tag))).collect();
    let wide: Vec<Entity> = (0..3000u64).map(|i| world.spawn((Val(i + 10_000, 7), Wide))).collect();
    let mut q = world.query::<(&Val, Option<&Tag>, Option<&Wide>)>();
    for (i, &e) in tagged.iter().enumerate() {
        let (v, t, w) = q.get(&world, e).unwrap();
        assert_eq!((v, t, w), (&Val(i as u64, i as u32 * 3), Some(&Tag), None));
    }
    for (i, &e) in wide.iter().enumerate() {
        let (v, t, w) = q.get(&world, e).unwrap();
        assert_eq!((v, t.is_some()), (&Val(i as u64 + 10_000, 7), false));
        let w = w.unwrap();
        assert_eq!(std::ptr::from_ref(w) as usize % 128, 0);
    }
    let mut sum = 0u64;
    q.for_each(&world, |(v, t, w)| {
        assert_eq!(t.is_some(), v.0 < 10_000);
        assert_eq!(w.is_some(), v.0 >= 10_000);
        sum += v.0;
    });
    assert_eq!(sum, (0..3000u64).sum::<u64>() + (10_000..13_000u64).sum::<u64>());
    let mut tags = world.query::<&Tag>();
    assert_eq!(tags.iter(&world).count(), 3000);
    // The world's own accessors take the same typed path.
    assert_eq!(world.get::<Tag>(tagged[2999]), Ok(&Tag));
    assert_eq!(std::ptr::from_ref(world.get::<Wide>(wide[1500]).unwrap()) as usize % 128, 0);
    assert_eq!(world.get::<Val>(wide[2999]), Ok(&Val(12_999, 7)));
    world.get_mut::<Val>(tagged[1234]).unwrap().0 = 7;
    assert_eq!(world.get::<Val>(tagged[1234]), Ok(&Val(7, 1234 * 3)));
    assert!(world.get_mut::<Wide>(wide[0]).is_ok());
}
