//! Fallible systems and the app's error reports: a system may return
//! `Result`; its error, failed commands, skipped systems and lifecycle
//! errors reach the app's error handler, from nested schedules too.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ecs_core::app::{ErrorReport, Schedules, panic_on_error};
use ecs_core::prelude::*;
use ecs_core::schedule::{ExecutorKind, RunSystemError};
use ecs_core::{Event, On, QuerySingleError, StoreError};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(f32);

#[derive(Debug, PartialEq, Eq)]
struct OutOfAmmo(u32);
impl std::fmt::Display for OutOfAmmo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "out of ammo after {} shots", self.0)
    }
}
impl std::error::Error for OutOfAmmo {}

/// Moves every `Pos`, spawns one entity, then fails on its second run.
fn move_then_fail(mut q: Query<&mut Pos>, mut commands: Commands, mut runs: Local<u32>) -> Result {
    *runs += 1;
    q.for_each_mut(|mut p| p.0 += 1.0);
    commands.spawn((Vel(1.0),));
    if *runs == 2 {
        return Err(OutOfAmmo(*runs).into());
    }
    Ok(())
}

fn exclusive_fails(world: &mut World) -> Result<(), OutOfAmmo> {
    world.spawn((Pos(100.0),));
    Err(OutOfAmmo(7))
}

fn reads(q: Query<&Pos>) -> Result {
    q.single()?;
    Ok(())
}

#[test]
fn a_failing_system_keeps_its_writes_and_commands_and_is_listed_once_per_run() {
    for executor in [ExecutorKind::SingleThreaded, ExecutorKind::MultiThreaded] {
        let mut world = World::new();
        let e = world.spawn((Pos(0.0),));
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        // `reads` runs after the failing system; the third system can run
        // beside them on the multi-threaded executor.
        schedule.add_systems(((move_then_fail, reads).chain(), |_: Query<&Vel>| {}));
        schedule.run(&mut world).unwrap();
        assert!(schedule.failed_systems().is_empty(), "{executor:?}");

        schedule.run(&mut world).unwrap();
        let failed = schedule.failed_systems();
        assert_eq!(failed.len(), 1, "{executor:?}: {failed:?}");
        assert!(failed[0].system.ends_with("move_then_fail"));
        assert_eq!(failed[0].error.downcast_ref::<OutOfAmmo>(), Some(&OutOfAmmo(2)));
        assert!(failed[0].to_string().contains("out of ammo after 2 shots"));
        // What it wrote before returning stays; its commands applied.
        assert_eq!(world.get::<Pos>(e).ok(), Some(&Pos(2.0)));
        assert_eq!(world.query::<&Vel>().iter(&world).count(), 2);
        assert!(schedule.has_errors() && schedule.command_errors().is_empty() && schedule.skipped_systems().is_empty());

        // The next run clears the list.
        schedule.run(&mut world).unwrap();
        assert!(schedule.failed_systems().is_empty(), "{executor:?}");
        assert!(!schedule.has_errors());
    }
}

#[test]
fn exclusive_and_one_shot_systems_can_fail() {
    let mut world = World::new();
    let mut schedule = Schedule::new();
    schedule.add_systems((exclusive_fails, reads).chain());
    schedule.run(&mut world).unwrap();
    let failed: Vec<String> = schedule.failed_systems().iter().map(|f| f.to_string()).collect();
    // The exclusive system fails, then `reads` finds exactly one Pos (the
    // one it spawned), so only the first is listed.
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("exclusive_fails") && failed[0].contains("after 7 shots"));

    schedule.run(&mut world).unwrap();
    let failed = schedule.failed_systems();
    assert_eq!(failed.len(), 2, "two Pos now: `reads` fails too");
    assert!(matches!(failed[1].error.downcast_ref::<QuerySingleError>(), Some(QuerySingleError::MultipleEntities(_))));

    // A registered one-shot system hands its error back, with its
    // commands' failures.
    let stale = world.spawn((Vel(0.0),));
    world.despawn(stale).unwrap();
    let id = world.register_system(move |mut commands: Commands| -> Result {
        commands.despawn(stale);
        Err("gave up".into())
    });
    match world.run_system(id) {
        Err(RunSystemError::Returned { error, commands }) => {
            assert_eq!(error.to_string(), "gave up");
            assert_eq!(commands.len(), 1);
            assert!(matches!(commands[0], StoreError::NoSuchEntity(_)), "{commands:?}");
        }
        other => panic!("expected a returned error, got {other:?}"),
    }
    // Through commands, the error goes to the lifecycle errors.
    let mut schedule = Schedule::new();
    schedule.add_systems(move |mut commands: Commands| commands.run_system(id));
    schedule.run(&mut world).unwrap();
    let errors = world.take_lifecycle_errors();
    assert!(errors.len() == 1 && errors[0].contains("gave up"), "{errors:?}");

    // A fallible observer's error goes there too.
    world.add_observer(|_: On<Ping>| -> Result { Err("observer gave up".into()) });
    world.trigger(Ping);
    let errors = world.take_lifecycle_errors();
    assert!(errors.len() == 1 && errors[0].contains("observer gave up"), "{errors:?}");
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
enum Mode {
    #[default]
    Menu,
    Playing,
}
impl States for Mode {}

struct Missing;

struct Ping;
impl Event for Ping {}

/// Makes `app`'s error handler keep every report in the returned list.
fn collect_reports(app: &mut App) -> Arc<Mutex<Vec<ErrorReport>>> {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    app.set_error_handler(move |report: &ErrorReport| sink.lock().unwrap().push(report.clone()));
    reports
}

fn app_with_reports() -> (App, Arc<Mutex<Vec<ErrorReport>>>) {
    let mut app = App::new();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(20)))
        .insert_resource(Time::<Fixed>::from_hz(50.0))
        .init_state::<Mode>()
        .add_systems(Update, |mut next: ResMut<NextState<Mode>>| next.set(Mode::Playing))
        // A nested schedule (run by the state transition) that fails.
        .add_systems(OnEnter(Mode::Playing), || -> Result { Err("level file missing".into()) })
        // A fixed step whose system is skipped every step.
        .add_systems(FixedUpdate, |_: Res<Missing>| {})
        // A failed command in the frame's own schedule.
        .add_systems(PostUpdate, |mut commands: Commands| commands.despawn(Entity::from_parts(40, 9)))
        // An observer that cannot run.
        .add_observer(|_: On<Ping>, _: Res<Missing>| {})
        .add_systems(Last, |mut commands: Commands| commands.trigger(Ping));
    let reports = collect_reports(&mut app);
    (app, reports)
}

#[test]
fn every_kind_of_error_reaches_the_app_handler_from_nested_and_fixed_schedules() {
    let (mut app, reports) = app_with_reports();
    app.update();
    let seen = std::mem::take(&mut *reports.lock().unwrap());
    let count = |f: &dyn Fn(&ErrorReport) -> bool| seen.iter().filter(|r| f(r)).count();
    // Frame 1: Update asks for Playing; the transition runs next frame.
    assert_eq!(count(&|r| matches!(r, ErrorReport::System { .. })), 0, "{seen:?}");
    // One fixed step of 20 ms at 50 Hz: its system skipped once.
    assert_eq!(count(&|r| matches!(r, ErrorReport::Skipped { schedule, .. } if schedule == "FixedUpdate")), 1);
    assert_eq!(count(&|r| matches!(r, ErrorReport::Command { schedule, .. } if schedule == "PostUpdate")), 1);
    assert_eq!(count(&|r| matches!(r, ErrorReport::Lifecycle(m) if m.contains("Missing"))), 1, "{seen:?}");
    assert_eq!(seen.len(), 3);

    app.update();
    let seen = std::mem::take(&mut *reports.lock().unwrap());
    let entered: Vec<&ErrorReport> = seen.iter().filter(|r| matches!(r, ErrorReport::System { .. })).collect();
    assert_eq!(entered.len(), 1, "{seen:?}");
    assert!(entered[0].schedule().unwrap().contains("OnEnter"), "{:?}", entered[0]);
    assert!(entered[0].to_string().contains("level file missing"));
    assert!(entered[0].system().is_some());
    assert_eq!(seen.len(), 4);
    assert_eq!(app.errors_reported(), 7);
    // Nothing waits in the world afterwards.
    assert!(app.world_mut().take_error_reports().is_empty());
    assert!(app.world_mut().take_lifecycle_errors().is_empty());
}

#[test]
fn a_panicking_handler_leaves_the_app_able_to_run_on() {
    let mut app = App::new();
    app.insert_resource(0u32)
        .add_systems(Update, |mut n: ResMut<u32>| -> Result {
            *n += 1;
            if *n == 2 { Err("second frame".into()) } else { Ok(()) }
        })
        .set_error_handler(panic_on_error);
    app.update();
    let panicked = catch_unwind(AssertUnwindSafe(|| app.update()));
    let message = panicked.unwrap_err();
    let message = message.downcast_ref::<String>().unwrap();
    assert!(message.contains("second frame"), "{message}");
    // The schedule is back in place and runs again.
    app.update();
    assert_eq!(app.world().resource::<u32>(), Some(&3));
    assert_eq!(app.errors_reported(), 1);
}

#[test]
fn reports_nobody_takes_stay_within_the_limit() {
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Tools;
    impl ScheduleLabel for Tools {}

    let mut world = World::new();
    let mut schedules = Schedules::new();
    schedules.entry(Tools).unwrap().add_systems(|mut n: Local<u32>| -> Result {
        *n += 1;
        Err(format!("run {}", *n).into())
    });
    world.insert_resource(schedules);
    let runs = ecs_core::app::DEFAULT_REPORT_LIMIT + 5;
    for _ in 0..runs {
        world.run_schedule(Tools).unwrap();
    }
    assert_eq!(world.error_reports_dropped(), 5);
    let kept = world.take_error_reports();
    assert_eq!(kept.len(), ecs_core::app::DEFAULT_REPORT_LIMIT);
    assert!(kept[0].to_string().ends_with("run 6"), "{}", kept[0]);
    assert!(kept.last().unwrap().to_string().ends_with(&format!("run {runs}")));
}

#[test]
fn a_plugins_own_errors_reach_the_handler_through_report_error() {
    let mut app = App::new();
    app.add_systems(PostUpdate, |world: &mut World| world.report_error("save", "disk full"));
    let reports = collect_reports(&mut app);
    app.update();
    app.update();
    let seen = reports.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|r| *r == ErrorReport::Other { source: "save".into(), message: "disk full".into() }));
    assert!(seen[0].system().is_none() && seen[0].schedule().is_none());
}

#[test]
fn reports_a_panicking_handler_did_not_see_wait_for_the_next_frame() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut app = App::new();
    app.insert_resource(0u32)
        .add_systems(Update, ((|| -> Result { Err("first".into()) }), (|| -> Result { Err("second".into()) })).chain())
        .set_error_handler(move |report: &ErrorReport| {
            let count = {
                let mut seen = sink.lock().unwrap();
                seen.push(report.to_string());
                seen.len()
            };
            assert!(count != 1, "the handler gives up on its first report");
        });
    assert!(catch_unwind(AssertUnwindSafe(|| app.update())).is_err());
    assert_eq!(seen.lock().unwrap().len(), 1);
    // The second report of that frame comes first in the next one.
    app.update();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen[0].contains("first") && seen[1].contains("second"));
    assert!(seen[2].contains("first") && seen[3].contains("second"));
    assert_eq!(app.errors_reported(), 4);
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Guarded;
impl SystemSet for Guarded {}

/// A condition that fails while there is no `Pos`, and otherwise says
/// whether the one `Pos` is positive.
fn positive(q: Query<&Pos>) -> Result<bool> {
    Ok(q.single()?.0 > 0.0)
}

#[test]
fn a_failing_run_condition_says_no_through_not_and_or_and_is_listed() {
    for executor in [ExecutorKind::SingleThreaded, ExecutorKind::MultiThreaded] {
        let mut world = World::new();
        world.insert_resource(0u32);
        let mut schedule = Schedule::new();
        schedule.set_executor(executor);
        // Each system adds its bit when it runs.
        schedule.add_systems((
            (|mut n: ResMut<u32>| *n |= 1).run_if(positive),
            (|mut n: ResMut<u32>| *n |= 2).run_if(not(positive)),
            (|mut n: ResMut<u32>| *n |= 4).run_if(positive.or(|| true)),
            (|mut n: ResMut<u32>| *n |= 8).run_if((|| false).and(positive)),
            (|mut n: ResMut<u32>| *n |= 16).in_set(Guarded),
        ));
        schedule.configure_sets(Guarded.run_if(not(positive)));
        schedule.run(&mut world).unwrap();
        // No `Pos`: every condition built on `positive` fails and says no,
        // except `false.and(positive)`, which never evaluates it.
        assert_eq!(*world.resource::<u32>().unwrap(), 0, "{executor:?}");
        let failed = schedule.failed_systems();
        assert_eq!(failed.len(), 4, "{executor:?}: {failed:?}");
        for f in failed {
            assert!(f.system.starts_with("run condition ") && f.system.ends_with("positive"), "{f:?}");
            assert!(f.error.downcast_ref::<QuerySingleError>().is_some());
            assert!(f.to_string().starts_with("run condition "), "{f}");
        }

        let e = world.spawn((Pos(-1.0),));
        *world.resource_mut::<u32>().unwrap() = 0;
        schedule.run(&mut world).unwrap();
        assert_eq!(*world.resource::<u32>().unwrap(), 2 | 4 | 16, "{executor:?}");
        assert!(schedule.failed_systems().is_empty());

        world.get_mut::<Pos>(e).unwrap().0 = 1.0;
        *world.resource_mut::<u32>().unwrap() = 0;
        schedule.run(&mut world).unwrap();
        assert_eq!(*world.resource::<u32>().unwrap(), 1 | 4, "{executor:?}");
    }
}

#[test]
fn a_failing_run_condition_reaches_the_app_handler() {
    let mut app = App::new();
    app.insert_resource(0u32).add_systems(Update, (|mut n: ResMut<u32>| *n += 1).run_if(positive));
    let reports = collect_reports(&mut app);
    app.update();
    let seen = std::mem::take(&mut *reports.lock().unwrap());
    assert_eq!(seen.len(), 1, "{seen:?}");
    let ErrorReport::System { schedule, system, error } = &seen[0] else { panic!("{seen:?}") };
    assert_eq!(schedule, "Update");
    assert!(system.ends_with("positive"));
    assert!(error.downcast_ref::<QuerySingleError>().is_some());
    assert!(seen[0].to_string().contains(": run condition "), "{}", seen[0]);
    assert_eq!(*app.world().resource::<u32>().unwrap(), 0);
    app.world_mut().spawn((Pos(2.0),));
    app.update();
    assert!(reports.lock().unwrap().is_empty());
    assert_eq!(*app.world().resource::<u32>().unwrap(), 1);
}
