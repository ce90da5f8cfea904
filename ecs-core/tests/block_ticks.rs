//! The block level of change detection: one changed tick per 16 rows, which
//! lets a `Changed` filter skip the row ticks of blocks nobody wrote. These
//! tests write scattered rows through every write path (including moves,
//! swap-removes and panicking loops) and check that `Changed` finds exactly
//! the written rows and that `World::check_consistency` (which checks every
//! block tick against its rows) holds.

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};

use ecs_core::{Changed, Component, Entity, EntityGroups, Query, QueryState, Schedule, World};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(u32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(u32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Tag;
/// Big enough that a chunk holds a few dozen rows (several blocks, one
/// partly filled group of 64 at the end).
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Wide([u64; 40]);

/// The entities whose `Pos` changed since the query's last run, after a
/// tick, sorted; checks the store's invariants first.
fn changed(world: &mut World, q: &mut QueryState<Entity, Changed<Pos>>) -> BTreeSet<Entity> {
    world.check_consistency().unwrap();
    world.increment_change_tick();
    q.iter(world).collect()
}

/// Row patterns that hit blocks and groups in different ways: every row,
/// one per block, one per two blocks, block edges, one per group, sparse.
const PATTERNS: [(usize, usize); 8] = [(0, 1), (3, 16), (15, 17), (16, 32), (0, 63), (5, 64), (63, 65), (7, 250)];

#[test]
fn scattered_writes_are_found_exactly_in_small_and_large_chunks() {
    let mut world = World::new();
    let plain = world.spawn_batch((0..3000).map(|i| (Pos(i),)));
    let wide = world.spawn_batch((0..700).map(|i| (Pos(i), Wide([0; 40]))));
    let mut q = world.query_filtered::<Entity, Changed<Pos>>();
    let all: BTreeSet<Entity> = plain.iter().chain(&wide).copied().collect();
    assert_eq!(changed(&mut world, &mut q), all, "the first run sees every spawn");
    for (offset, stride) in PATTERNS {
        let want: BTreeSet<Entity> = plain
            .iter()
            .skip(offset)
            .step_by(stride)
            .chain(wide.iter().skip(offset).step_by(stride))
            .copied()
            .collect();
        for &e in &want {
            world.get_mut::<Pos>(e).unwrap().0 += 1;
        }
        assert_eq!(changed(&mut world, &mut q), want, "offset {offset}, stride {stride}");
        assert_eq!(changed(&mut world, &mut q), BTreeSet::new(), "nothing since");
    }
}

#[test]
fn loops_that_write_some_visited_rows_mark_only_those() {
    let mut world = World::new();
    let es = world.spawn_batch((0..2500).map(|i| (Pos(i), Vel(0))));
    let mut moved = world.query_filtered::<(&Pos, &mut Vel), Changed<Pos>>();
    let mut all = world.query::<(Entity, &Pos, &mut Vel)>();
    let mut vel_changed = world.query_filtered::<Entity, Changed<Vel>>();
    let mut pos_changed = world.query_filtered::<Entity, Changed<Pos>>();
    vel_changed.iter(&world).count();
    moved.for_each_mut(&mut world, |_| {});
    changed(&mut world, &mut pos_changed);
    for (round, (offset, stride)) in PATTERNS.into_iter().enumerate() {
        let written: Vec<Entity> = es.iter().skip(offset).step_by(stride).copied().collect();
        for &e in &written {
            world.get_mut::<Pos>(e).unwrap().0 += 1;
        }
        world.increment_change_tick();
        // Rows whose `Pos` is odd get a new `Vel`; the others are visited
        // and left alone.
        let write = |pos: &Pos, vel: &mut ecs_core::Mut<'_, Vel>| {
            if pos.0 % 2 == 1 {
                vel.0 += 1;
            }
        };
        match round % 3 {
            0 => moved.for_each_mut(&mut world, |(pos, mut vel)| write(pos, &mut vel)),
            1 => moved.par_for_each_mut(&mut world, |(pos, mut vel)| write(pos, &mut vel)),
            _ => all.for_each_mut(&mut world, |(e, pos, mut vel)| {
                if written.binary_search(&e).is_ok() {
                    write(pos, &mut vel);
                }
            }),
        }
        world.check_consistency().unwrap();
        world.increment_change_tick();
        let want: BTreeSet<Entity> =
            written.iter().copied().filter(|&e| world.get::<Pos>(e).unwrap().0 % 2 == 1).collect();
        let got: BTreeSet<Entity> = vel_changed.iter(&world).collect();
        assert_eq!(got, want, "offset {offset}, stride {stride}");
        changed(&mut world, &mut pos_changed);
        // The next round's window of `moved` starts here.
        moved.for_each_mut(&mut world, |_| {});
    }
}

#[test]
fn moved_and_swap_removed_rows_keep_their_changed_ticks() {
    let mut world = World::new();
    let es = world.spawn_batch((0..3000).map(|i| (Pos(i),)));
    let mut q = world.query_filtered::<Entity, Changed<Pos>>();
    changed(&mut world, &mut q);
    // Rows near the ends of the chunks: swap-removes move them into the
    // first blocks, whose block ticks are old.
    let written: Vec<Entity> = es.iter().copied().filter(|e| e.index() % 1365 > 1300).step_by(7).collect();
    for &e in &written {
        world.get_mut::<Pos>(e).unwrap().0 += 1;
    }
    // Move rows from the start of each chunk to another archetype (their
    // places are filled by the chunk's last rows), move some back, and
    // despawn a few.
    let front: Vec<Entity> = es.iter().copied().filter(|e| e.index() % 1365 < 40).collect();
    for &e in &front {
        world.insert(e, Tag).unwrap();
    }
    for &e in front.iter().step_by(3) {
        world.remove::<Tag>(e).unwrap();
    }
    let gone: Vec<Entity> = es.iter().copied().filter(|e| e.index() % 1365 == 50).collect();
    for &e in &gone {
        world.despawn(e).unwrap();
    }
    let want: BTreeSet<Entity> = written.iter().copied().filter(|e| !gone.contains(e)).collect();
    assert!(want.len() > 10);
    assert_eq!(changed(&mut world, &mut q), want);
    // The moves themselves changed no `Pos`.
    for &e in front.iter().step_by(2) {
        world.insert(e, Vel(0)).unwrap();
    }
    assert_eq!(changed(&mut world, &mut q), BTreeSet::new());
}

#[test]
fn a_panicking_loop_leaves_the_rows_it_wrote_visible() {
    let mut world = World::new();
    let es = world.spawn_batch((0..2000).map(|i| (Pos(i),)));
    let mut q = world.query_filtered::<Entity, Changed<Pos>>();
    let mut plain = world.query::<&mut Pos>();
    let mut filtered = world.query_filtered::<&mut Pos, Changed<Pos>>();
    changed(&mut world, &mut q);
    filtered.for_each_mut(&mut world, |_| {});
    // A loop over every row, stopped by a panic in its 1000th row.
    let mut seen = 0;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        plain.for_each_mut(&mut world, |mut p| {
            seen += 1;
            if seen == 1000 {
                panic!("stop");
            }
            if p.0 % 5 == 0 {
                p.0 += 1;
            }
        });
    }));
    assert!(outcome.is_err());
    let want: BTreeSet<Entity> = es[..999].iter().copied().filter(|e| e.index() % 5 == 0).collect();
    assert_eq!(changed(&mut world, &mut q), want, "unfiltered loop");
    // A filtered loop (rows in groups of 64), stopped the same way.
    filtered.for_each_mut(&mut world, |_| {});
    let written: Vec<Entity> = es.iter().copied().step_by(3).collect();
    for &e in &written {
        world.get_mut::<Pos>(e).unwrap().0 += 1;
    }
    world.increment_change_tick();
    changed(&mut world, &mut q);
    let mut seen = 0;
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        filtered.for_each_mut(&mut world, |mut p| {
            seen += 1;
            p.0 += 1;
            if seen == 300 {
                panic!("stop");
            }
        });
    }));
    assert!(outcome.is_err());
    assert_eq!(changed(&mut world, &mut q), written[..300].iter().copied().collect());
}

#[test]
fn views_iterators_and_groups_stamp_blocks_themselves() {
    let mut world = World::new();
    let es = world.spawn_batch((0..1500).map(|i| (Pos(i), Wide([0; 40]))));
    let mut q = world.query_filtered::<Entity, Changed<Pos>>();
    changed(&mut world, &mut q);
    let mut pos = world.query::<(Entity, &mut Pos)>();
    let pick = |e: Entity| e.index() % 37 == 3;
    let want: BTreeSet<Entity> = es.iter().copied().filter(|&e| pick(e)).collect();

    for (e, mut p) in pos.iter_mut(&mut world) {
        if pick(e) {
            p.0 += 1;
        }
    }
    assert_eq!(changed(&mut world, &mut q), want, "iter_mut");

    pos.for_each_chunk_mut(&mut world, |mut view| {
        for row in 0..view.len() {
            let (e, mut p) = view.get(row).unwrap();
            if pick(e) {
                p.0 += 1;
            }
        }
    });
    assert_eq!(changed(&mut world, &mut q), want, "chunk views");

    let mut groups = EntityGroups::new();
    for part in es.chunks(100) {
        groups.push_group(part).unwrap();
    }
    world.insert_resource(groups);
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut q: Query<&mut Pos>, groups: ecs_core::Res<EntityGroups>| {
        let all: Vec<u32> = (0..groups.len() as u32).collect();
        q.par_for_each_group_mut(
            &groups,
            &all,
            || (),
            |_, rows| {
                for k in 0..rows.len() {
                    let e = rows.entities()[k];
                    if e.index() % 37 == 3 {
                        rows.get_mut(k).unwrap().0 += 1;
                    }
                }
            },
        );
    });
    schedule.run(&mut world).unwrap();
    assert_eq!(changed(&mut world, &mut q), want, "entity groups");
}

/// The row loops of `for_each_mut` and `par_for_each_mut` visit whole runs
/// of rows while asking the cache for the next passing chunk's same rows;
/// the iterator (`next` and `fold`) is checked alongside.
/// Chunks skipped in between, a next chunk shorter than the current one and
/// the last chunk (with none after it) must change nothing about which rows
/// are visited or what is written.
#[test]
fn row_loops_visit_each_passing_row_once_across_runs_of_chunks() {
    let mut world = World::new();
    let es = world.spawn_batch((0..4000).map(|i| (Pos(i), Wide([0; 40]))));
    let capacity = world.archetypes().iter().find(|a| a.len() == 4000).unwrap().chunk_capacity();
    // Runs longer than the walks go before they prefetch (32 chunks).
    assert!(capacity < 64, "many chunks: {capacity} rows each");
    // A short chunk in the middle: most rows of the fourth chunk go.
    for &e in &es[3 * capacity + 5..4 * capacity] {
        world.despawn(e).unwrap();
    }
    let live: Vec<Entity> = es.iter().copied().filter(|&e| world.contains(e)).collect();
    let mut q = world.query_filtered::<(Entity, &Pos, &mut Wide), Changed<Pos>>();
    let mut all = world.query::<(Entity, &mut Wide)>();
    q.for_each_mut(&mut world, |_| {});
    // Whole chunks, a run of chunks with unchanged chunks between, the
    // short chunk, single rows and the last rows.
    let runs = [0..2 * capacity, 3 * capacity..3 * capacity + 5, 6 * capacity..50 * capacity, 3000..3001];
    let mut want: Vec<Entity> = runs.iter().flat_map(|r| live[r.clone()].iter().copied()).collect();
    want.extend(&live[live.len() - 3..]);
    for round in 1..=5u64 {
        world.increment_change_tick();
        for &e in &want {
            world.get_mut::<Pos>(e).unwrap().0 += 1;
        }
        let mut seen = Vec::new();
        if round == 2 {
            let found = std::sync::Mutex::new(Vec::new());
            q.par_for_each_mut(&mut world, |(e, pos, mut wide)| {
                wide.0[0] = u64::from(pos.0) + round;
                found.lock().unwrap().push(e);
            });
            seen = found.into_inner().unwrap();
            seen.sort();
        } else if round == 3 {
            for (e, pos, mut wide) in q.iter_mut(&mut world) {
                wide.0[0] = u64::from(pos.0) + round;
                seen.push(e);
            }
        } else if round == 4 {
            q.iter_mut(&mut world).for_each(|(e, pos, mut wide)| {
                wide.0[0] = u64::from(pos.0) + round;
                seen.push(e);
            });
        } else {
            q.for_each_mut(&mut world, |(e, pos, mut wide)| {
                wide.0[0] = u64::from(pos.0) + round;
                seen.push(e);
            });
        }
        let mut expected = want.clone();
        expected.sort();
        if round != 2 {
            seen.sort();
        }
        assert_eq!(seen, expected, "round {round}: each written row once");
        for &e in &live {
            let wide = world.get::<Wide>(e).unwrap().0[0];
            let pos = u64::from(world.get::<Pos>(e).unwrap().0);
            let written = expected.binary_search(&e).is_ok();
            assert_eq!(wide == pos + round, written, "round {round}, {e:?}: wide {wide}, pos {pos}");
        }
        world.check_consistency().unwrap();
        // The unfiltered loop visits every live row once.
        let mut count = 0;
        if round % 2 == 0 {
            for (_, mut wide) in all.iter_mut(&mut world) {
                wide.0[1] += 1;
                count += 1;
            }
        } else {
            all.for_each_mut(&mut world, |(_, mut wide)| {
                wide.0[1] += 1;
                count += 1;
            });
        }
        assert_eq!(count, live.len());
        assert!(live.iter().all(|&e| world.get::<Wide>(e).unwrap().0[1] == round));
    }
    // A panic in the middle of a prefetching run (past the 32 chunks a walk
    // visits first) leaves the rows written before it visible, and only
    // those.
    let mut wide_changed = world.query_filtered::<Entity, Changed<Wide>>();
    world.increment_change_tick();
    wide_changed.iter(&world).count();
    for &e in &live {
        world.get_mut::<Pos>(e).unwrap().0 += 1;
    }
    let stop_at = 40 * capacity + 7;
    let mut seen = Vec::new();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        q.for_each_mut(&mut world, |(e, _, mut wide)| {
            if seen.len() == stop_at {
                panic!("stop");
            }
            wide.0[2] += 1;
            seen.push(e);
        });
    }));
    assert!(outcome.is_err());
    world.check_consistency().unwrap();
    world.increment_change_tick();
    let found: BTreeSet<Entity> = wide_changed.iter(&world).collect();
    assert_eq!(found, seen.iter().copied().collect::<BTreeSet<_>>());
    assert_eq!(found.len(), stop_at);
}
