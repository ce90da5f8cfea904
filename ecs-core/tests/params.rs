//! System parameters and query data of issue 12 part 5: `Option<Res<T>>`,
//! `Option<ResMut<T>>`, skipping systems whose resources are missing,
//! `Has<T>`, `Ref<T>`, `Option<&mut T>`, the `DetectChanges` traits,
//! `Query::single`/`single_mut`, `get_many`/`get_many_mut`, and row
//! combinations.

use std::collections::HashSet;

use ecs_core::prelude::*;
use ecs_core::{GetManyError, QuerySingleError, ScheduleError, Tick};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Tag;
/// Large enough that a few hundred rows span several chunks.
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Big(u32, [u8; 124]);

#[derive(Debug, Default, PartialEq)]
struct Gate;
#[derive(Debug, Default, PartialEq)]
struct Counter(u32);
#[derive(Debug, Default)]
struct Log(Vec<String>);

fn one_system<M>(system: impl IntoSystemConfigs<M>) -> Schedule {
    let mut schedule = Schedule::new();
    schedule.add_systems(system);
    schedule
}

// ----- Option<Res<T>>, Option<ResMut<T>> -----------------------------------

#[test]
fn option_res_is_none_while_missing_and_sees_changes_once_present() {
    fn watch(counter: Option<Res<Counter>>, mut log: ResMut<Log>) {
        let entry = match counter {
            None => "none".to_string(),
            Some(c) => format!("{} changed={} added={}", c.0, c.is_changed(), c.is_added()),
        };
        log.0.push(entry);
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = one_system(watch);
    schedule.run(&mut world).unwrap();
    world.insert_resource(Counter(1));
    schedule.run(&mut world).unwrap();
    schedule.run(&mut world).unwrap();
    world.resource_mut::<Counter>().unwrap().0 = 2;
    schedule.run(&mut world).unwrap();
    assert!(schedule.skipped_systems().is_empty());
    assert_eq!(
        world.resource::<Log>().unwrap().0,
        ["none", "1 changed=true added=true", "1 changed=false added=false", "2 changed=true added=false"]
    );
}

#[test]
fn option_res_mut_writes_when_present_and_marks_only_on_write() {
    fn bump(counter: Option<ResMut<Counter>>) {
        if let Some(mut c) = counter
            && c.0 < 2
        {
            c.0 += 1;
        }
    }
    fn seen(counter: Res<Counter>, mut log: ResMut<Log>) {
        log.0.push(format!("{} {}", counter.0, counter.is_changed()));
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = one_system((bump, seen).chain());
    schedule.run(&mut world).unwrap();
    // `seen` lacked `Counter` and was skipped; `bump` ran with `None`.
    assert_eq!(schedule.skipped_systems().len(), 1);
    assert!(schedule.skipped_systems()[0].system.ends_with("seen"));
    world.insert_resource(Counter(0));
    for _ in 0..3 {
        schedule.run(&mut world).unwrap();
    }
    assert!(schedule.skipped_systems().is_empty());
    assert_eq!(world.resource::<Counter>().unwrap().0, 2);
    // First run: inserted and bumped; second: bumped; third: no write, so
    // `seen` sees no change.
    assert_eq!(world.resource::<Log>().unwrap().0, ["1 true", "2 true", "2 false"]);
}

#[test]
fn option_resource_params_record_their_access() {
    // Inside one system: a read beside a write of the same resource.
    fn both(_a: Option<Res<Counter>>, _b: ResMut<Counter>) {}
    let mut world = World::new();
    let err = one_system(both).build(&mut world).unwrap_err();
    assert!(matches!(&err, ScheduleError::Conflict(m) if m.contains("Counter")), "{err:?}");
    fn twice(_a: Option<ResMut<Counter>>, _b: Option<ResMut<Counter>>) {}
    assert!(matches!(one_system(twice).build(&mut world), Err(ScheduleError::Conflict(_))));

    // Between systems: a missing resource is still a conflict, so the
    // writer and the reader never share a stage (and never overlap).
    fn writer(_c: Option<ResMut<Counter>>) {}
    fn reader(_c: Option<Res<Counter>>) {}
    fn other_reader(_c: Option<Res<Counter>>) {}
    let mut schedule = one_system((writer, reader, other_reader));
    schedule.run(&mut world).unwrap();
    let stages = schedule.stage_names();
    let stage_of = |name: &str| stages.iter().position(|s| s.iter().any(|n| n.ends_with(name))).unwrap();
    assert_ne!(stage_of("::writer"), stage_of("::reader"));
    assert_ne!(stage_of("::writer"), stage_of("::other_reader"));
    assert_eq!(stage_of("::reader"), stage_of("::other_reader"), "{stages:?}");
}

// ----- skipping systems whose resources are missing ------------------------

fn needs_gate(_gate: Res<Gate>, mut log: ResMut<Log>) {
    log.0.push("needs_gate".into());
}
fn free(mut log: ResMut<Log>) {
    log.0.push("free".into());
}
fn after_gate(mut log: ResMut<Log>) {
    log.0.push("after_gate".into());
}

#[test]
fn a_missing_resource_skips_only_the_systems_that_need_it() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = one_system((free, needs_gate, after_gate.after(needs_gate)));
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Log>().unwrap().0, ["free", "after_gate"]);
    let skipped = schedule.skipped_systems();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].system.ends_with("needs_gate"));
    let message = skipped[0].to_string();
    assert!(message.contains("needs_gate") && message.contains("Gate") && message.contains("not in the world"));
    assert!(schedule.system_stats().any(|s| s.name.ends_with("needs_gate") && s.runs == 0));

    world.insert_resource(Gate);
    world.resource_mut::<Log>().unwrap().0.clear();
    schedule.run(&mut world).unwrap();
    assert!(schedule.skipped_systems().is_empty(), "the report is per run");
    assert_eq!(world.resource::<Log>().unwrap().0, ["free", "needs_gate", "after_gate"]);
}

#[test]
fn skipping_works_when_systems_run_in_parallel() {
    #[derive(Default)]
    struct RanA(bool);
    #[derive(Default)]
    struct RanB(bool);
    fn a(mut q: Query<&mut Pos>, mut ran: ResMut<RanA>) {
        q.for_each_mut(|mut p| p.0 += 1.0);
        ran.0 = true;
    }
    fn b(mut q: Query<&mut Vel>, mut ran: ResMut<RanB>) {
        q.for_each_mut(|mut v| v.0 += 1.0);
        ran.0 = true;
    }
    fn c(_gate: Res<Gate>, mut q: Query<&mut Tag>) {
        q.for_each_mut(|_| {});
    }
    fn d(q: Query<&Pos>, _gate: Res<Gate>) {
        let _ = q;
    }
    let mut world = World::new();
    world.spawn_batch((0..100).map(|i| (Pos(i as f32), Vel(0.0), Tag)));
    world.insert_resource(RanA::default());
    world.insert_resource(RanB::default());
    let mut schedule = one_system((a, b, c, d.after(c)));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| schedule.run(&mut world)).unwrap();
    assert!(schedule.stage_names().iter().any(|s| s.len() > 1), "{:?}", schedule.stage_names());
    assert!(world.resource::<RanA>().unwrap().0 && world.resource::<RanB>().unwrap().0);
    let mut names: Vec<&str> = schedule.skipped_systems().iter().map(|s| s.system.as_str()).collect();
    names.sort();
    assert_eq!(names.len(), 2);
    assert!(names[0].ends_with("::c") && names[1].ends_with("::d"), "{names:?}");
}

#[test]
fn a_skipped_system_keeps_its_window() {
    fn moved(q: Query<Entity, Changed<Pos>>, _gate: Res<Gate>, mut log: ResMut<Log>) {
        let mut q = q;
        let mut seen: Vec<Entity> = q.iter().collect();
        seen.sort();
        log.0.push(format!("{seen:?}"));
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    world.insert_resource(Gate);
    let e: Vec<Entity> = (0..4).map(|i| world.spawn((Pos(i as f32),))).collect();
    let mut schedule = one_system(moved);
    schedule.run(&mut world).unwrap(); // sees every spawn
    world.remove_resource::<Gate>();
    world.get_mut::<Pos>(e[1]).unwrap().0 = 10.0;
    schedule.run(&mut world).unwrap(); // skipped
    world.get_mut::<Pos>(e[2]).unwrap().0 = 20.0;
    schedule.run(&mut world).unwrap(); // skipped
    assert_eq!(schedule.skipped_systems().len(), 1);
    world.insert_resource(Gate);
    schedule.run(&mut world).unwrap(); // both writes made while it was skipped
    schedule.run(&mut world).unwrap(); // nothing new
    let log = &world.resource::<Log>().unwrap().0;
    assert_eq!(log.len(), 3);
    assert_eq!(log[0], format!("{e:?}"));
    assert_eq!(log[1], format!("{:?}", [e[1], e[2]]));
    assert_eq!(log[2], "[]");
}

// ----- Has<T> ---------------------------------------------------------------

#[test]
fn has_reports_presence_and_matches_every_archetype() {
    let mut world = World::new();
    let tagged = world.spawn((Pos(0.0), Tag));
    let plain = world.spawn((Pos(1.0),));
    let bare = world.spawn((Vel(1.0),));
    let mut q = world.query::<(Entity, Has<Tag>)>();
    let mut got: Vec<(Entity, bool)> = q.iter(&world).collect();
    got.sort();
    let mut want = vec![(tagged, true), (plain, false), (bare, false)];
    want.sort();
    assert_eq!(got, want);
    assert!(q.access().reads().is_empty() && q.access().writes().is_empty());
    // Chunk slices: one flag per chunk.
    let mut views = world.query::<(&Pos, Has<Tag>)>();
    let mut flags = Vec::new();
    views.for_each_chunk(&world, |mut view| flags.push((view.len(), view.slices().1)));
    flags.sort();
    assert_eq!(flags, [(1, false), (1, true)]);
    assert_eq!(q.get(&world, tagged), Ok((tagged, true)));
}

#[test]
fn has_conflicts_with_no_writer() {
    fn looks(mut q: Query<(Entity, Has<Tag>)>) {
        q.for_each(|_| {});
    }
    fn writes(mut q: Query<&mut Tag>) {
        q.for_each_mut(|_| {});
    }
    fn both(mut a: Query<Has<Pos>>, mut b: Query<&mut Pos>) {
        a.for_each(|_| {});
        b.for_each_mut(|_| {});
    }
    let mut world = World::new();
    world.spawn((Pos(0.0), Tag));
    let mut schedule = one_system((looks, writes, both));
    schedule.run(&mut world).unwrap();
    let stages = schedule.stage_names();
    assert!(
        stages.iter().any(|s| s.iter().any(|n| n.ends_with("::looks")) && s.iter().any(|n| n.ends_with("::writes"))),
        "{stages:?}"
    );
}

// ----- Ref<T> and DetectChanges ----------------------------------------------

#[test]
fn ref_answers_for_the_query_run_window() {
    let mut world = World::new();
    let e: Vec<Entity> = (0..3).map(|i| world.spawn((Pos(i as f32),))).collect();
    let mut q = world.query::<(Entity, Ref<Pos>)>();
    for (_, pos) in q.iter(&world) {
        assert!(pos.is_added() && pos.is_changed());
    }
    world.increment_change_tick();
    world.get_mut::<Pos>(e[1]).unwrap().0 = 5.0;
    let written = world.changed_tick::<Pos>(e[1]).unwrap();
    world.insert_one(e[2], Tag).unwrap(); // moves the row, keeping its ticks
    let late = world.spawn((Pos(9.0),));
    world.increment_change_tick();
    let mut seen: Vec<(Entity, bool, bool)> = q.iter(&world).map(|(e, p)| (e, p.is_changed(), p.is_added())).collect();
    seen.sort();
    let mut want = vec![(e[0], false, false), (e[1], true, false), (e[2], false, false), (late, true, true)];
    want.sort();
    assert_eq!(seen, want);
    let pos = q.get(&world, e[1]).unwrap().1;
    assert_eq!(pos.last_changed(), written);
    assert_eq!(*pos, Pos(5.0));
    assert_eq!(pos.into_inner(), &Pos(5.0));
    // Nothing new since the last run.
    world.increment_change_tick();
    assert!(q.iter(&world).all(|(_, p)| !p.is_changed() && !p.is_added()));
}

#[test]
fn ref_sees_whole_chunk_writes_like_changed_does() {
    let mut world = World::new();
    world.spawn_batch((0..300).map(|i| (Big(i, [0; 124]),)));
    let mut refs = world.query::<Ref<Big>>();
    let mut changed = world.query_filtered::<Entity, Changed<Big>>();
    refs.iter(&world).count();
    changed.iter(&world).count();
    let mut writer = world.query::<&mut Big>();
    world.increment_change_tick();
    // Take the first chunk's column as a slice: the chunk is stamped whole.
    let mut first = true;
    writer.for_each_chunk_mut(&mut world, |mut view| {
        if std::mem::take(&mut first) {
            view.slices()[0].0 += 1;
        }
    });
    world.increment_change_tick();
    let by_ref = refs.iter(&world).filter(|r| r.is_changed()).count();
    let by_filter = changed.iter(&world).count();
    assert!(by_filter > 1 && by_filter < 300, "{by_filter}");
    assert_eq!(by_ref, by_filter);
}

#[test]
fn ref_in_a_system_uses_the_system_window() {
    fn watch(q: Query<(Entity, Ref<Pos>)>, mut log: ResMut<Log>) {
        let mut q = q;
        let mut changed: Vec<Entity> = q.iter().filter(|(_, p)| p.is_changed()).map(|(e, _)| e).collect();
        changed.sort();
        let added = q.iter().filter(|(_, p)| p.is_added()).count();
        log.0.push(format!("{changed:?} {added}"));
    }
    fn mover(mut q: Query<(Entity, &mut Pos)>, mut frame: Local<u32>) {
        *frame += 1;
        let target = *frame;
        q.for_each_mut(|(e, mut p)| {
            if e.index() == target {
                p.0 += 1.0;
            }
        });
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let e: Vec<Entity> = (0..4).map(|i| world.spawn((Pos(i as f32),))).collect();
    // `watch` runs before `mover`: it sees mover's write of the previous run.
    let mut schedule = one_system((watch, mover).chain());
    for _ in 0..3 {
        schedule.run(&mut world).unwrap();
    }
    let log = &world.resource::<Log>().unwrap().0;
    assert_eq!(log[0], format!("{e:?} 4"));
    assert_eq!(log[1], format!("{:?} 0", [e[1]]));
    assert_eq!(log[2], format!("{:?} 0", [e[2]]));
}

#[test]
fn ref_conflicts_like_a_read() {
    let mut world = World::new();
    assert!(QueryState::<(Ref<Pos>, &mut Pos)>::try_new(&mut world).is_err());
    assert!(QueryState::<(Ref<Pos>, &Pos)>::try_new(&mut world).is_ok());
    fn both(_a: Query<Ref<Pos>>, _b: Query<&mut Pos>) {}
    assert!(matches!(one_system(both).build(&mut world), Err(ScheduleError::Conflict(m)) if m.contains("Pos")));
}

#[test]
fn mut_answers_detect_changes() {
    let mut world = World::new();
    let old = world.spawn((Pos(0.0),));
    let mut q = world.query::<(Entity, &mut Pos)>();
    q.for_each_mut(&mut world, |_| {});
    world.increment_change_tick();
    let new = world.spawn((Pos(1.0),));
    world.increment_change_tick();
    let mut seen = Vec::new();
    q.for_each_mut(&mut world, |(e, mut p)| {
        let before = (p.is_changed(), p.is_added());
        if e == old {
            p.0 += 1.0;
        }
        seen.push((e, before, p.is_changed(), p.last_changed()));
    });
    seen.sort_by_key(|s| s.0);
    let this_run = Tick::new(world.changed_tick::<Pos>(old).unwrap().get());
    assert_eq!(seen[0], (old, (false, false), true, this_run));
    assert_eq!(seen[1].0, new);
    assert_eq!(seen[1].1, (true, true));
    // Through `iter_mut` too.
    world.increment_change_tick();
    for (_, p) in q.iter_mut(&mut world) {
        assert!(!p.is_changed() && !p.is_added());
    }
}

#[test]
fn detect_changes_mut_controls_marks() {
    let mut world = World::new();
    let e = world.spawn_batch((0..10).map(|i| (Pos(i as f32),)));
    let mut q = world.query::<(Entity, &mut Pos)>();
    q.for_each_mut(&mut world, |_| {}); // its first run sees every spawn
    let mut changed = world.query_filtered::<Entity, Changed<Pos>>();
    changed.iter(&world).count();
    world.increment_change_tick();
    q.for_each_mut(&mut world, |(entity, mut p)| {
        if entity == e[0] {
            // Through the trait: differs, so it writes and marks.
            assert!(DetectChangesMut::set_if_neq(&mut p, Pos(100.0)));
        } else if entity == e[1] {
            assert!(!DetectChangesMut::set_if_neq(&mut p, Pos(1.0)));
        } else if entity == e[2] {
            p.bypass_change_detection().0 = 50.0;
            assert!(!p.is_changed());
        } else if entity == e[3] {
            DetectChangesMut::set_changed(&mut p);
        }
    });
    world.increment_change_tick();
    let mut got: Vec<Entity> = changed.iter(&world).collect();
    got.sort();
    assert_eq!(got, [e[0], e[3]]);
    assert_eq!(world.get::<Pos>(e[2]).unwrap(), &Pos(50.0));
}

#[test]
fn res_and_res_mut_detect_changes() {
    fn touch(mut c: ResMut<Counter>, mut log: ResMut<Log>, mut frame: Local<u32>) {
        *frame += 1;
        log.0.push(format!("{} {} {}", *frame, c.is_added(), c.is_changed()));
        match *frame {
            1 => {}
            2 => c.bypass_change_detection().0 = 7, // not marked
            3 => c.set_changed(),
            _ => {
                c.set_if_neq(Counter(7)); // equal: not marked
            }
        }
    }
    fn read(c: Res<Counter>, mut log: ResMut<Log>) {
        log.0.push(format!("read {} {} {}", c.0, c.is_changed(), c.is_added()));
        let _: Tick = c.last_changed();
    }
    let mut world = World::new();
    world.insert_resource(Counter(0));
    world.insert_resource(Log::default());
    let mut schedule = one_system((touch, read).chain());
    for _ in 0..4 {
        schedule.run(&mut world).unwrap();
    }
    assert_eq!(
        world.resource::<Log>().unwrap().0,
        [
            "1 true true",
            "read 0 true true",
            "2 false false",
            "read 7 false false",
            "3 false false",
            "read 7 true false",
            "4 false false",
            "read 7 false false",
        ]
    );
}

// ----- Option<&mut T> --------------------------------------------------------

#[test]
fn option_mut_writes_where_present_and_marks_only_writes() {
    let mut world = World::new();
    let with: Vec<Entity> = (0..3).map(|i| world.spawn((Pos(i as f32), Vel(1.0)))).collect();
    let without = world.spawn((Pos(9.0),));
    let mut q = world.query::<(Entity, &Pos, Option<&mut Vel>)>();
    let mut changed = world.query_filtered::<Entity, Changed<Vel>>();
    changed.iter(&world).count();
    world.increment_change_tick();
    let mut nones = 0;
    q.for_each_mut(&mut world, |(e, pos, vel)| match vel {
        None => {
            assert_eq!(e, without);
            nones += 1;
        }
        Some(mut v) if pos.0 >= 1.0 => v.0 = pos.0 * 10.0,
        Some(_) => {}
    });
    assert_eq!(nones, 1);
    world.increment_change_tick();
    let mut got: Vec<Entity> = changed.iter(&world).collect();
    got.sort();
    assert_eq!(got, [with[1], with[2]]);
    assert_eq!(world.get::<Vel>(with[2]).unwrap(), &Vel(20.0));
    // Per entity, and through `iter_mut`.
    if let (_, _, Some(mut v)) = q.get_mut(&mut world, with[0]).unwrap() {
        v.0 = -1.0;
    }
    assert!(q.get_mut(&mut world, without).unwrap().2.is_none());
    assert_eq!(q.iter_mut(&mut world).filter(|(_, _, v)| v.is_some()).count(), 3);
    assert_eq!(world.get::<Vel>(with[0]).unwrap(), &Vel(-1.0));
}

#[test]
fn option_mut_records_a_write() {
    let mut world = World::new();
    let err = QueryState::<(Option<&mut Vel>, &Vel)>::try_new(&mut world).unwrap_err();
    assert!(err.to_string().contains("Vel"), "{err}");
    assert!(QueryState::<(Option<&mut Vel>, Option<&mut Vel>)>::try_new(&mut world).is_err());

    fn both(_a: Query<&mut Vel>, _b: Query<Option<&mut Vel>>) {}
    let err = one_system(both).build(&mut world).unwrap_err();
    assert!(matches!(&err, ScheduleError::Conflict(m) if m.contains("Vel")), "{err:?}");
    fn with_reader(_a: Query<&Vel>, _b: Query<Option<&mut Vel>>) {}
    assert!(matches!(one_system(with_reader).build(&mut world), Err(ScheduleError::Conflict(_))));
    // Provably disjoint through filters: allowed.
    fn disjoint(_a: Query<&mut Vel, With<Tag>>, _b: Query<Option<&mut Vel>, Without<Tag>>) {}
    one_system(disjoint).build(&mut world).unwrap();

    // Between systems: never in one stage.
    fn writer(mut q: Query<Option<&mut Vel>>) {
        q.for_each_mut(|_| {});
    }
    fn reader(mut q: Query<&Vel>) {
        q.for_each(|_| {});
    }
    let mut schedule = one_system((writer, reader));
    schedule.run(&mut world).unwrap();
    assert_eq!(schedule.stage_names().len(), 2);
}

// ----- single / single_mut ---------------------------------------------------

#[test]
fn single_needs_exactly_one_match() {
    fn one(q: Query<&Pos, With<Tag>>, mut log: ResMut<Log>) {
        log.0.push(match q.single() {
            Ok(p) => format!("ok {}", p.0),
            Err(e) => format!("{e:?}"),
        });
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    world.spawn((Pos(0.0),));
    let mut schedule = one_system(one);
    schedule.run(&mut world).unwrap();
    let a = world.spawn((Pos(1.0), Tag));
    schedule.run(&mut world).unwrap();
    world.spawn((Pos(2.0), Tag));
    schedule.run(&mut world).unwrap();
    world.despawn(a).unwrap();
    schedule.run(&mut world).unwrap();
    let log = &world.resource::<Log>().unwrap().0;
    assert!(log[0].starts_with("NoEntities(") && log[0].contains("Pos") && log[0].contains("Tag"), "{log:?}");
    assert_eq!(log[1], "ok 1");
    assert!(log[2].starts_with("MultipleEntities(") && log[2].contains("Pos"), "{log:?}");
    assert_eq!(log[3], "ok 2");
}

#[test]
fn single_applies_tick_filters_and_single_mut_writes() {
    fn bump(mut q: Query<&mut Pos, Changed<Vel>>, mut log: ResMut<Log>) {
        match q.single_mut() {
            Ok(mut p) => {
                p.0 += 1.0;
                log.0.push("bumped".into());
            }
            Err(e) => log.0.push(e.to_string()),
        }
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let a = world.spawn((Pos(0.0), Vel(0.0)));
    let b = world.spawn((Pos(0.0), Vel(0.0)));
    let mut schedule = one_system(bump);
    schedule.run(&mut world).unwrap(); // both are new
    world.get_mut::<Vel>(b).unwrap().0 = 1.0;
    schedule.run(&mut world).unwrap(); // only b changed
    schedule.run(&mut world).unwrap(); // none
    let log = &world.resource::<Log>().unwrap().0;
    assert!(log[0].contains("more than one") && log[0].contains("single()"), "{log:?}");
    assert_eq!(log[1], "bumped");
    assert!(log[2].contains("matched no entity"), "{log:?}");
    assert_eq!((world.get::<Pos>(a).unwrap().0, world.get::<Pos>(b).unwrap().0), (0.0, 1.0));
}

#[test]
fn single_errors_name_the_query() {
    let no = QuerySingleError::NoEntities(std::any::type_name::<(&Pos, ())>());
    assert!(no.to_string().contains("Pos"));
    let many = QuerySingleError::MultipleEntities("q");
    assert!(many.to_string().contains("query q"));
}

// ----- get_many / get_many_mut -----------------------------------------------

#[derive(Default)]
struct Asked(Vec<Entity>, Option<Result<Vec<f32>, GetManyError>>);

/// Runs `get_many_mut` on `entities` in a system, adding 1 to each `Pos`.
fn get_many_errors(world: &mut World, entities: [Entity; 3]) -> Result<[f32; 3], GetManyError> {
    fn ask(mut q: Query<&mut Pos>, mut asked: ResMut<Asked>) {
        let e: [Entity; 3] = asked.0.clone().try_into().unwrap();
        let result = q.get_many_mut(e).map(|items| {
            items.map(|mut p| {
                p.0 += 1.0;
                p.0
            })
        });
        asked.1 = Some(result.map(|a| a.to_vec()));
    }
    world.insert_resource(Asked(entities.to_vec(), None));
    one_system(ask).run(world).unwrap();
    let result = world.remove_resource::<Asked>().unwrap().1.unwrap();
    result.map(|v| [v[0], v[1], v[2]])
}

#[test]
fn get_many_mut_refuses_duplicates_dead_and_unmatched_entities() {
    let mut world = World::new();
    let e: Vec<Entity> = (0..4).map(|i| world.spawn((Pos(i as f32),))).collect();
    let other = world.spawn((Vel(0.0),));
    let dead = world.spawn((Pos(0.0),));
    world.despawn(dead).unwrap();

    assert_eq!(get_many_errors(&mut world, [e[0], e[1], e[0]]), Err(GetManyError::Duplicate(e[0])));
    assert_eq!(get_many_errors(&mut world, [e[0], dead, e[1]]), Err(GetManyError::NoSuchEntity(dead)));
    assert_eq!(get_many_errors(&mut world, [other, e[0], e[1]]), Err(GetManyError::NoMatch(other)));
    // Nothing was written by the refused calls.
    assert_eq!(world.get::<Pos>(e[0]).unwrap(), &Pos(0.0));
    assert_eq!(get_many_errors(&mut world, [e[3], e[1], e[2]]), Ok([4.0, 2.0, 3.0]));
    assert!(GetManyError::Duplicate(e[0]).to_string().contains("twice"));
}

#[test]
fn get_many_reads_and_allows_repeats() {
    let mut world = World::new();
    let a = world.spawn((Pos(1.0),));
    let b = world.spawn((Pos(2.0),));
    world.insert_resource(Counter(0));
    let mut schedule = Schedule::new();
    schedule.add_systems(move |q: Query<&Pos>, mut out: ResMut<Counter>| {
        let [x, y, z] = q.get_many([a, b, a]).unwrap();
        out.0 = (x.0 + y.0 + z.0) as u32;
        let never = Entity::from_parts(999, 0);
        assert_eq!(q.get_many([a, never]).map(|_| ()), Err(GetManyError::NoSuchEntity(never)));
    });
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Counter>().unwrap().0, 4);
}

// ----- combinations ----------------------------------------------------------

fn spawn_mixed(world: &mut World, n: usize) -> Vec<Entity> {
    // Several archetypes and several chunks per archetype.
    (0..n)
        .map(|i| match i % 3 {
            0 => world.spawn((Big(i as u32, [0; 124]),)),
            1 => world.spawn((Big(i as u32, [0; 124]), Tag)),
            _ => world.spawn((Big(i as u32, [0; 124]), Vel(0.0))),
        })
        .collect()
}

#[test]
fn iter_combinations_visits_each_unordered_pair_once() {
    for n in [0usize, 1, 2, 3, 7, 400] {
        let mut world = World::new();
        let entities = spawn_mixed(&mut world, n);
        let mut schedule = Schedule::new();
        schedule.add_systems(move |q: Query<(Entity, &Big)>, mut out: ResMut<Log>| {
            let mut pairs = HashSet::new();
            let mut count = 0usize;
            for [(a, big_a), (b, big_b)] in q.iter_combinations() {
                assert_ne!(a, b);
                assert_ne!(big_a.0, big_b.0);
                assert!(pairs.insert((a.min(b), a.max(b))), "pair {a} {b} twice");
                count += 1;
            }
            out.0.push(format!("{count}"));
            let triples = q.iter_combinations::<3>().count();
            out.0.push(format!("{triples}"));
        });
        world.insert_resource(Log::default());
        schedule.run(&mut world).unwrap();
        let log = &world.resource::<Log>().unwrap().0;
        assert_eq!(log[0], format!("{}", n * n.saturating_sub(1) / 2), "n = {n}");
        let c3 = if n < 3 { 0 } else { n * (n - 1) * (n - 2) / 6 };
        assert_eq!(log[1], format!("{c3}"), "n = {n}");
        assert!(entities.len() == n);
    }
}

#[test]
fn iter_combinations_applies_the_filter() {
    fn pairs(q: Query<Entity, Changed<Pos>>, mut out: ResMut<Counter>) {
        out.0 = q.iter_combinations::<2>().count() as u32;
    }
    let mut world = World::new();
    world.insert_resource(Counter(0));
    let e: Vec<Entity> = (0..10).map(|i| world.spawn((Pos(i as f32),))).collect();
    let mut schedule = one_system(pairs);
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Counter>().unwrap().0, 45);
    for &x in &e[..4] {
        world.get_mut::<Pos>(x).unwrap().0 = -1.0;
    }
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Counter>().unwrap().0, 6);
}

#[test]
fn mutable_combinations_never_alias_and_mark_writes() {
    fn tally(mut q: Query<(Entity, &mut Big)>) {
        let mut combinations = q.iter_combinations_mut();
        while let Some([(a, mut big_a), (b, mut big_b)]) = combinations.fetch_next() {
            assert_ne!(a, b, "one row twice in a set");
            // Two live `Mut`s to distinct rows: the writes must not land on
            // the same value.
            big_a.1[0] = big_a.1[0].wrapping_add(1);
            big_b.1[0] = big_b.1[0].wrapping_add(1);
        }
    }
    fn tally_closure(mut q: Query<(Entity, &mut Big)>) {
        q.for_each_combination_mut(|[(a, mut big_a), (b, mut big_b)]| {
            assert_ne!(a, b);
            big_a.1[1] += 1;
            big_b.1[1] += 1;
        });
    }
    let n = 150;
    let mut world = World::new();
    let entities = spawn_mixed(&mut world, n);
    let mut changed = world.query_filtered::<Entity, Changed<Big>>();
    changed.iter(&world).count();
    let mut schedule = one_system((tally, tally_closure).chain());
    schedule.run(&mut world).unwrap();
    // Every entity is in n - 1 pairs.
    for &e in &entities {
        let big = world.get::<Big>(e).unwrap();
        assert_eq!(big.1[0] as usize, (n - 1) % 256);
        assert_eq!(big.1[1] as usize, (n - 1) % 256);
    }
    assert_eq!(changed.iter(&world).count(), n);
}

#[test]
fn mutable_combinations_of_three_are_distinct_rows() {
    let mut world = World::new();
    let entities = spawn_mixed(&mut world, 9);
    world.insert_resource(Counter(0));
    let mut schedule = Schedule::new();
    schedule.add_systems(|mut q: Query<(Entity, &mut Big)>, mut out: ResMut<Counter>| {
        q.for_each_combination_mut(|[(a, _), (b, _), (c, _)]| {
            assert!(a != b && b != c && a != c);
            out.0 += 1;
        });
    });
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Counter>().unwrap().0, 84); // C(9, 3)
    assert_eq!(entities.len(), 9);
}

// ----- ParamSet -------------------------------------------------------------

#[test]
fn a_param_set_holds_conflicting_parameters_and_hands_them_out_one_at_a_time() {
    #[derive(Debug, Default, PartialEq)]
    struct Seen(Vec<f32>);
    #[expect(clippy::type_complexity, reason = "the test spells out the set's four members")]
    fn normalise(mut set: ParamSet<(Query<&Pos>, Query<&mut Pos>, ResMut<Seen>, Res<Seen>)>) {
        let mut max = 0.0f32;
        set.p0().for_each(|p| max = max.max(p.0));
        set.p1().for_each_mut(|mut p| p.0 /= max);
        set.p2().0.push(max);
        let seen = set.p3().0.len();
        set.p2().0.push(seen as f32);
    }
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let a = world.spawn(Pos(2.0));
    let b = world.spawn(Pos(8.0));
    let mut schedule = one_system(normalise);
    schedule.run(&mut world).unwrap();
    assert_eq!((world.get::<Pos>(a).unwrap().0, world.get::<Pos>(b).unwrap().0), (0.25, 1.0));
    assert_eq!(world.resource::<Seen>().unwrap().0, [8.0, 1.0]);
}

#[test]
fn a_param_set_member_that_conflicts_with_another_parameter_refuses_the_system() {
    fn outside_first(_outside: Query<&Pos>, _set: ParamSet<(Query<&Vel>, Query<&mut Pos>)>) {}
    fn outside_last(_set: ParamSet<(Query<&mut Pos>, Query<&Vel>)>, _outside: Query<&Pos>) {}
    fn disjoint(_set: ParamSet<(Query<&mut Pos>, Query<&Pos>)>, _outside: Query<&mut Vel>) {}
    let mut world = World::new();
    for (name, mut schedule) in
        [("outside_first", one_system(outside_first)), ("outside_last", one_system(outside_last))]
    {
        let err = schedule.build(&mut world).unwrap_err();
        let ScheduleError::Conflict(message) = &err else { panic!("{name}: {err:?}") };
        assert!(message.contains(name) && message.contains("Pos"), "{message}");
    }
    assert!(one_system(disjoint).build(&mut world).is_ok());
}

#[test]
fn another_system_sees_a_param_set_as_all_its_members() {
    // The set writes Pos only through its second member; a system reading Pos
    // must still be ordered against it (here: reported as ambiguous).
    fn set_writer(mut set: ParamSet<(Query<&Vel>, Query<&mut Pos>)>) {
        set.p1().for_each_mut(|mut p| p.0 += 1.0);
    }
    fn reader(_q: Query<&Pos>) {}
    fn unrelated(_q: Query<&Tag>) {}
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems((set_writer, reader, unrelated));
    schedule.build(&mut world).unwrap();
    let ambiguous: Vec<String> = schedule.ambiguities().iter().map(|a| format!("{a:?}")).collect();
    assert_eq!(ambiguous.len(), 1, "{ambiguous:?}");
    assert!(ambiguous[0].contains("set_writer") && ambiguous[0].contains("reader"), "{ambiguous:?}");
}

#[test]
fn a_param_set_of_commands_applies_every_members_commands() {
    fn spawn_twice(mut set: ParamSet<(Commands, Commands)>) {
        set.p0().spawn(Pos(1.0));
        set.p1().spawn(Pos(2.0));
    }
    let mut world = World::new();
    one_system(spawn_twice).run(&mut world).unwrap();
    let mut all = world.query::<&Pos>();
    let mut seen = Vec::new();
    all.for_each(&world, |p| seen.push(p.0));
    seen.sort_by(f32::total_cmp);
    assert_eq!(seen, [1.0, 2.0]);
}
