//! Lifecycle hooks, observers and removal detection, through the public API.

use std::panic::{AssertUnwindSafe, catch_unwind};

use ecs_core::prelude::*;
use ecs_core::{
    CommandQueue, DeferredWorld, Event, ObserverId, On, OnAdd, OnInsert, OnRemove, OnReplace, RemovedComponents,
    StoreError,
};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(i32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(i32);

/// What the hooks saw: (event, entity, whether the entity had `Pos` then).
#[derive(Default, Debug)]
struct Log(Vec<(&'static str, Entity, bool)>);

fn record(name: &'static str) -> impl Fn(DeferredWorld<'_>, Entity) {
    move |mut world: DeferredWorld<'_>, entity: Entity| {
        let has = world.get::<Pos>(entity).is_ok();
        world.resource_mut::<Log>().unwrap().0.push((name, entity, has));
    }
}

fn hooked_world() -> World {
    let mut world = World::new();
    world.insert_resource(Log::default());
    world
        .register_component_hooks::<Pos>()
        .on_add(|w, e| record("add")(w, e))
        .on_insert(|w, e| record("insert")(w, e))
        .on_replace(|w, e| record("replace")(w, e))
        .on_remove(|w, e| record("remove")(w, e));
    world
}

fn take_log(world: &mut World) -> Vec<(&'static str, Entity, bool)> {
    std::mem::take(&mut world.resource_mut::<Log>().unwrap().0)
}

#[test]
fn hooks_run_on_every_path_in_the_documented_order() {
    let mut world = hooked_world();
    let e = world.spawn((Pos(1), Vel(0)));
    assert_eq!(take_log(&mut world), vec![("add", e, true), ("insert", e, true)]);

    world.insert(e, (Pos(2),)).unwrap();
    // replace sees the old value, insert the new one; no add
    assert_eq!(take_log(&mut world), vec![("replace", e, true), ("insert", e, true)]);

    world.remove_one::<Pos>(e).unwrap();
    assert_eq!(take_log(&mut world), vec![("replace", e, true), ("remove", e, true)]);

    world.insert(e, (Pos(3), Vel(1))).unwrap();
    assert_eq!(take_log(&mut world), vec![("add", e, true), ("insert", e, true)]);

    world.despawn(e).unwrap();
    assert_eq!(take_log(&mut world), vec![("replace", e, true), ("remove", e, true)]);

    let batch = world.spawn_batch((0..3).map(|i| (Pos(i),)));
    let log = take_log(&mut world);
    assert_eq!(log.len(), 6);
    for (k, &b) in batch.iter().enumerate() {
        assert_eq!(log[2 * k], ("add", b, true));
        assert_eq!(log[2 * k + 1], ("insert", b, true));
    }

    // Commands take the same paths.
    let mut queue = CommandQueue::default();
    let mut commands = queue.commands(&world);
    let c = commands.spawn((Pos(9),));
    commands.remove::<(Pos,)>(batch[0]);
    commands.despawn(batch[1]);
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(
        take_log(&mut world),
        vec![
            ("add", c, true),
            ("insert", c, true),
            ("replace", batch[0], true),
            ("remove", batch[0], true),
            ("replace", batch[1], true),
            ("remove", batch[1], true),
        ]
    );

    // Components without hooks: nothing.
    let plain = world.spawn((Vel(1),));
    world.despawn(plain).unwrap();
    assert!(take_log(&mut world).is_empty());

    // clear_entities: every entity with Pos goes through replace + remove.
    world.clear_entities();
    let log = take_log(&mut world);
    assert_eq!(log.len(), 2 * 2, "{log:?}");
    assert!(log.iter().all(|&(_, _, had)| had));
    world.check_consistency().unwrap();
}

#[test]
fn hooks_registered_after_spawning_apply_to_existing_archetypes() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let e = world.spawn((Pos(1),));
    world.register_component_hooks::<Pos>().on_remove(|w, e| record("remove")(w, e));
    world.despawn(e).unwrap();
    assert_eq!(take_log(&mut world), vec![("remove", e, true)]);
}

#[test]
#[should_panic(expected = "already registered")]
fn a_hook_is_registered_once_per_type() {
    let mut world = World::new();
    world.register_component_hooks::<Pos>().on_add(|_, _| {});
    world.register_component_hooks::<Pos>().on_add(|_, _| {});
}

#[test]
fn hook_commands_run_after_the_operation() {
    let mut world = World::new();
    // Every Pos gets a Vel, through a deferred command.
    world.register_component_hooks::<Pos>().on_add(|mut world, entity| {
        assert!(world.get::<Vel>(entity).is_err(), "the command is not applied yet");
        world.commands().insert(entity, (Vel(7),));
    });
    let e = world.spawn((Pos(1),));
    assert_eq!(world.get::<Vel>(e), Ok(&Vel(7)));
    let batch = world.spawn_batch((0..100).map(|i| (Pos(i),)));
    assert!(batch.iter().all(|&b| world.get::<Vel>(b) == Ok(&Vel(7))));
    world.check_consistency().unwrap();
}

#[test]
fn a_panicking_hook_leaves_the_world_consistent() {
    let mut world = World::new();
    world.register_component_hooks::<Vel>().on_remove(|world, entity| {
        if world.get::<Vel>(entity).is_ok_and(|v| v.0 < 0) {
            panic!("hook bug");
        }
    });
    let e = world.spawn((Pos(1), Vel(-1)));
    // The remove hook runs before the removal: the entity keeps everything.
    assert!(catch_unwind(AssertUnwindSafe(|| world.despawn(e))).is_err());
    assert!(world.contains(e));
    assert_eq!(world.get::<Vel>(e), Ok(&Vel(-1)));
    world.check_consistency().unwrap();
    world.get_mut::<Vel>(e).unwrap().0 = 1;
    world.despawn(e).unwrap();
    world.check_consistency().unwrap();

    // A spawn iterator that panics: the entities spawned before the panic
    // still ran their add hooks.
    world.insert_resource(Log::default());
    world.register_component_hooks::<Pos>().on_add(|w, e| record("add")(w, e));
    let panicked = catch_unwind(AssertUnwindSafe(|| {
        world.spawn_batch((0..10).map(|i| {
            assert!(i < 4, "iterator bug");
            (Pos(i),)
        }));
    }));
    assert!(panicked.is_err());
    assert_eq!(take_log(&mut world).len(), 4);
    assert_eq!(world.len(), 4);
    world.check_consistency().unwrap();
}

struct Explode(i32);
impl Event for Explode {}

#[derive(Default)]
struct Seen(Vec<(i32, Option<Entity>)>);

#[test]
fn observers_see_global_and_targeted_events() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>| {
        seen.0.push((trigger.0, trigger.target()));
    });
    let barrel = world.spawn((Pos(0),));
    let other = world.spawn((Pos(1),));
    world
        .observe(barrel, |trigger: On<Explode>, mut commands: Commands| {
            commands.despawn(trigger.target().unwrap());
        })
        .unwrap();
    world.trigger(Explode(1));
    world.trigger_targets(Explode(2), other);
    assert!(world.contains(barrel));
    world.trigger_targets(Explode(3), barrel);
    assert!(!world.contains(barrel), "the barrel's own observer despawned it");
    assert_eq!(world.resource::<Seen>().unwrap().0, vec![(1, None), (2, Some(other)), (3, Some(barrel))]);
    world.check_consistency().unwrap();

    // The despawned barrel's observer is gone with it; commands trigger too.
    let mut queue = CommandQueue::default();
    queue.commands(&world).trigger_targets(Explode(4), other);
    assert!(queue.apply(&mut world).is_empty());
    assert_eq!(world.resource::<Seen>().unwrap().0.last(), Some(&(4, Some(other))));
    assert!(world.take_lifecycle_errors().is_empty());
}

#[test]
fn lifecycle_observers_run_after_the_operation() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    world.add_observer(|trigger: On<OnAdd<Pos>>, q: Query<&Pos>, mut seen: ResMut<Seen>| {
        let e = trigger.target().unwrap();
        seen.0.push((q.get(e).map_or(-1, |p| p.0), Some(e)));
    });
    world.add_observer(|trigger: On<OnRemove<Pos>>, q: Query<&Pos>, mut seen: ResMut<Seen>| {
        let e = trigger.target().unwrap();
        // After the removal: the entity no longer has Pos.
        assert!(q.get(e).is_err());
        seen.0.push((100, Some(e)));
    });
    world.add_observer(|_: On<OnInsert<Pos>>, mut seen: ResMut<Seen>| seen.0.push((200, None)));
    world.add_observer(|_: On<OnReplace<Pos>>, mut seen: ResMut<Seen>| seen.0.push((300, None)));
    let e = world.spawn((Pos(5),));
    world.insert_one(e, Pos(6)).unwrap();
    world.remove_one::<Pos>(e).unwrap();
    assert_eq!(
        world.resource::<Seen>().unwrap().0,
        vec![(5, Some(e)), (200, None), (300, None), (200, None), (300, None), (100, Some(e))]
    );
}

/// A parent link, for propagation.
#[derive(Component)]
struct Parent(Entity);
struct Click;
impl Event for Click {
    fn traverse(world: &World, entity: Entity) -> Option<Entity> {
        world.get::<Parent>(entity).ok().map(|p| p.0)
    }
}

#[test]
fn propagation_is_off_by_default_and_follows_traverse_when_asked() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let root = world.spawn((Pos(0),));
    let mid = world.spawn((Pos(1), Parent(root)));
    let leaf = world.spawn((Pos(2), Parent(mid)));
    for (e, n) in [(root, 0), (mid, 1), (leaf, 2)] {
        world
            .observe(e, move |trigger: On<Click>, mut seen: ResMut<Seen>| {
                seen.0.push((n, trigger.target()));
                if n == 2 {
                    trigger.propagate(true);
                }
            })
            .unwrap();
    }
    world.trigger_targets(Click, mid);
    assert_eq!(world.resource::<Seen>().unwrap().0, vec![(1, Some(mid))], "no propagation by default");
    world.resource_mut::<Seen>().unwrap().0.clear();
    world.trigger_targets(Click, leaf);
    // The leaf asks to propagate, the mid node does not: it stops there.
    assert_eq!(world.resource::<Seen>().unwrap().0, vec![(2, Some(leaf)), (1, Some(mid))]);
}

#[test]
fn observer_parameters_are_refused_outside_observers_and_observers_can_be_removed() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let mut schedule = Schedule::new();
    schedule.add_systems(|_: On<Explode>| {});
    assert!(schedule.run(&mut world).is_err());

    let id = world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>| seen.0.push((trigger.0, None)));
    world.trigger(Explode(1));
    assert!(world.remove_observer(id));
    assert!(!world.remove_observer(id));
    world.trigger(Explode(2));
    assert_eq!(world.resource::<Seen>().unwrap().0, vec![(1, None)]);
    assert_eq!(
        world.observe(Entity::from_parts(999, 0), |_: On<Explode>| {}),
        Err(StoreError::NoSuchEntity(Entity::from_parts(999, 0)))
    );
}

/// Observer handles a test keeps, by name.
#[derive(Default)]
struct Handles(Vec<ObserverId>);

#[test]
fn despawning_observed_entities_removes_their_observers_and_no_other() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>| seen.0.push((trigger.0, None)));
    let es: Vec<Entity> = (0..6).map(|i| world.spawn((Pos(i),))).collect();
    let ids: Vec<ObserverId> = es
        .iter()
        .map(|&e| {
            world
                .observe(e, |trigger: On<Explode>, mut seen: ResMut<Seen>| seen.0.push((trigger.0, trigger.target())))
                .unwrap()
        })
        .collect();
    world.despawn(es[1]).unwrap();
    world.despawn(es[4]).unwrap();
    assert!(!world.remove_observer(ids[1]), "gone with its entity");
    for (i, &e) in es.iter().enumerate() {
        if world.contains(e) {
            world.trigger_targets(Explode(i as i32), e);
        }
    }
    world.trigger(Explode(9));
    let seen = &world.resource::<Seen>().unwrap().0;
    let targeted: Vec<(i32, Option<Entity>)> = seen.iter().copied().filter(|(_, t)| t.is_some()).collect();
    assert_eq!(targeted, [0, 2, 3, 5].map(|i| (i, Some(es[i as usize]))));
    assert_eq!(seen.iter().filter(|(_, t)| t.is_none()).count(), 5, "the global observer saw every trigger");
    // The slots of the removed observers serve new ones; the old handles
    // name nothing.
    let new = world.observe(es[0], |_: On<Explode>| {}).unwrap();
    assert!(!ids.contains(&new));
    assert!(!world.remove_observer(ids[4]));
    assert!(world.remove_observer(new));
    assert!(world.remove_observer(ids[0]));
}

#[test]
fn an_observer_removed_during_a_trigger_does_not_run_and_its_slot_does_not_run_either() {
    // A removes B and adds C, which takes B's slot: that trigger runs
    // neither B nor C; the next runs A and C.
    let mut world = World::new();
    world.insert_resource(Seen::default());
    world.insert_resource(Handles::default());
    let a = world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>, mut commands: Commands| {
        seen.0.push((trigger.0 * 10 + 1, None));
        if trigger.0 == 1 {
            commands.add(|world: &mut World| -> Result<(), StoreError> {
                let b = world.resource::<Handles>().unwrap().0[1];
                assert!(world.remove_observer(b));
                let c = world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>| {
                    seen.0.push((trigger.0 * 10 + 3, None))
                });
                world.resource_mut::<Handles>().unwrap().0.push(c);
                Ok(())
            });
        }
    });
    let b = world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>| seen.0.push((trigger.0 * 10 + 2, None)));
    world.resource_mut::<Handles>().unwrap().0.extend([a, b]);
    world.trigger(Explode(1));
    world.trigger(Explode(2));
    let seen: Vec<i32> = world.resource::<Seen>().unwrap().0.iter().map(|&(v, _)| v).collect();
    assert_eq!(seen, [11, 21, 23]);
}

#[test]
fn an_observer_that_removes_itself_while_it_runs_frees_its_slot_after() {
    let mut world = World::new();
    world.insert_resource(Seen::default());
    world.insert_resource(Handles::default());
    let once = world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>, mut commands: Commands| {
        seen.0.push((trigger.0, None));
        commands.add(|world: &mut World| -> Result<(), StoreError> {
            let me = world.resource::<Handles>().unwrap().0[0];
            world.remove_observer(me);
            Ok(())
        });
    });
    world.resource_mut::<Handles>().unwrap().0.push(once);
    world.trigger(Explode(1));
    world.trigger(Explode(2));
    assert_eq!(world.resource::<Seen>().unwrap().0, vec![(1, None)]);
    assert!(!world.remove_observer(once));
    let next = world.add_observer(|trigger: On<Explode>, mut seen: ResMut<Seen>| seen.0.push((trigger.0 * 100, None)));
    assert_ne!(next, once);
    world.trigger(Explode(3));
    assert_eq!(world.resource::<Seen>().unwrap().0, vec![(1, None), (300, None)]);
}

#[derive(Default)]
struct Lost(Vec<Entity>);

#[test]
fn removed_components_follow_the_window_rule() {
    let mut world = World::new();
    world.insert_resource(Lost::default());
    let mut reader = Schedule::new();
    reader.add_systems(|mut removed: RemovedComponents<Pos>, mut lost: ResMut<Lost>| {
        lost.0.extend(removed.iter());
    });
    reader.run(&mut world).unwrap();
    let es = world.spawn_batch((0..10).map(|i| (Pos(i), Vel(i))));
    world.remove_one::<Pos>(es[0]).unwrap();
    world.despawn(es[1]).unwrap();
    // Not Pos: not logged.
    world.remove_one::<Vel>(es[2]).unwrap();
    reader.run(&mut world).unwrap();
    assert_eq!(world.resource::<Lost>().unwrap().0, vec![es[0], es[1]]);
    // Seen once.
    reader.run(&mut world).unwrap();
    assert_eq!(world.resource::<Lost>().unwrap().0.len(), 2);
    // A reader that skipped runs sees everything since its previous run.
    for &e in &es[3..6] {
        world.despawn(e).unwrap();
    }
    world.insert_one(es[0], Pos(0)).unwrap();
    world.remove_one::<Pos>(es[0]).unwrap();
    reader.run(&mut world).unwrap();
    assert_eq!(world.resource::<Lost>().unwrap().0[2..], [es[3], es[4], es[5], es[0]]);
}

#[test]
fn the_removal_log_stays_bounded_while_readers_keep_up() {
    let mut world = World::new();
    world.insert_resource(Lost::default());
    let mut reader = Schedule::new();
    reader.add_systems(|removed: RemovedComponents<Pos>, mut lost: ResMut<Lost>| {
        lost.0.push(Entity::from_parts(removed.len() as u32, 0));
    });
    // The log starts with its first reader.
    reader.run(&mut world).unwrap();
    let mut total = 0;
    for round in 0..200 {
        let es = world.spawn_batch((0..50).map(|i| (Pos(i),)));
        for e in es {
            world.despawn(e).unwrap();
        }
        reader.run(&mut world).unwrap();
        total += world.resource::<Lost>().unwrap().0.last().unwrap().index();
        assert_eq!(world.resource::<Lost>().unwrap().0.last().unwrap().index(), 50, "round {round}");
    }
    assert_eq!(total, 200 * 50);
    assert!(world.removed_log_len::<Pos>() <= 256, "log holds {} entries", world.removed_log_len::<Pos>());
}

#[test]
fn a_reader_that_stops_running_does_not_make_the_log_grow_without_bound() {
    #[derive(Default)]
    struct Counts(Vec<usize>);
    let mut world = World::new();
    world.set_removal_log_limit(1000);
    world.insert_resource(Counts::default());
    let mut active = Schedule::new();
    active.add_systems(|removed: RemovedComponents<Pos>, mut counts: ResMut<Counts>| counts.0.push(removed.len()));
    // A reader behind a run condition that stays false after its first run.
    let mut paused = Schedule::new();
    paused.add_systems(
        (|removed: RemovedComponents<Pos>, mut counts: ResMut<Counts>| counts.0.push(removed.len() + 1_000_000))
            .run_if(|mut first: Local<bool>| !std::mem::replace(&mut *first, true)),
    );
    active.run(&mut world).unwrap();
    paused.run(&mut world).unwrap();
    world.resource_mut::<Counts>().unwrap().0.clear();
    for _ in 0..100 {
        let es = world.spawn_batch((0..300).map(|i| (Pos(i),)));
        for e in es {
            world.despawn(e).unwrap();
        }
        active.run(&mut world).unwrap();
        paused.run(&mut world).unwrap();
        assert!(world.removed_log_len::<Pos>() <= 1250, "log holds {}", world.removed_log_len::<Pos>());
    }
    // The reader that keeps up lost nothing; the paused one never ran.
    assert_eq!(world.resource::<Counts>().unwrap().0, vec![300; 100]);
    assert!(world.removals_dropped::<Pos>() >= 100 * 300 - 1250);
}

#[test]
fn lifecycle_errors_nobody_takes_stay_within_the_limit() {
    struct Hit;
    impl Event for Hit {}
    struct Score;
    let mut world = World::new();
    // An observer that can never run (its resource is missing), fired far
    // more often than the default limit.
    world.add_observer(|_: On<Hit>, _: Res<Score>| {});
    for _ in 0..ecs_core::DEFAULT_LIFECYCLE_ERROR_LIMIT * 3 {
        world.trigger(Hit);
    }
    let limit = ecs_core::DEFAULT_LIFECYCLE_ERROR_LIMIT;
    assert_eq!(world.lifecycle_errors_dropped(), 2 * limit as u64);
    let errors = world.take_lifecycle_errors();
    assert_eq!(errors.len(), limit);
    assert!(world.take_lifecycle_errors().is_empty());

    // Hook commands that fail: the newest are kept, oldest first.
    world.set_lifecycle_error_limit(3);
    world.register_component_hooks::<Pos>().on_add(|mut world, entity| {
        let mut commands = world.commands();
        commands.despawn(entity);
        commands.despawn(entity);
    });
    let spawned: Vec<Entity> = (0..5).map(|i| world.spawn((Pos(i),))).collect();
    let errors = world.take_lifecycle_errors();
    assert_eq!(errors.len(), 3, "{errors:?}");
    // Each spawn's second despawn fails; the last three spawns' are kept.
    for (error, e) in errors.iter().zip(&spawned[2..]) {
        assert!(error.contains(&format!("{e:?}")), "{error} names {e:?}");
    }
    assert_eq!(world.lifecycle_errors_dropped(), 2 * limit as u64 + 2);
    assert!(spawned.iter().all(|&e| !world.contains(e)));
    // Lowering the limit drops the oldest kept errors now.
    world.trigger(Hit);
    world.trigger(Hit);
    world.set_lifecycle_error_limit(1);
    assert_eq!(world.lifecycle_errors_dropped(), 2 * limit as u64 + 3);
    assert_eq!(world.take_lifecycle_errors().len(), 1);
}
