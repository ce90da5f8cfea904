//! The game layer through the public API: App and its frame order, time
//! and the fixed step, states, sets, run conditions, exclusive and one-shot
//! systems, plugins.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ecs_core::app::{AppError, InternedScheduleLabel, StateTransitionEvent};
use ecs_core::prelude::*;
use ecs_core::schedule::ExecutorKind;
use ecs_core::{RemovedComponents, ScheduleError};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A log shared by the systems of a test.
#[derive(Default)]
struct Log(Vec<String>);

fn log(world: &World) -> Vec<String> {
    world.resource::<Log>().unwrap().0.clone()
}

/// A system pushing `name` to the log.
fn say(name: &'static str) -> impl FnMut(ResMut<Log>) {
    move |mut l: ResMut<Log>| l.0.push(name.to_string())
}

fn manual_app(frame: Duration) -> App {
    let mut app = App::new();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(frame)).init_resource::<Log>();
    app
}

fn set_frame(app: &mut App, frame: Duration) {
    app.insert_resource(TimeUpdateStrategy::ManualDuration(frame));
}

// ----- frame order -------------------------------------------------------

#[test]
fn schedules_run_in_frame_order_and_startup_once() {
    let mut app = manual_app(ms(10));
    // Added in reverse to show the order comes from the labels.
    app.add_systems(Last, say("Last"))
        .add_systems(PostUpdate, say("PostUpdate"))
        .add_systems(Update, say("Update"))
        .add_systems(FixedUpdate, say("FixedUpdate"))
        .add_systems(StateTransition, say("StateTransition"))
        .add_systems(PreUpdate, say("PreUpdate"))
        .add_systems(First, say("First"))
        .add_systems(PostStartup, say("PostStartup"))
        .add_systems(Startup, say("Startup"))
        .add_systems(PreStartup, say("PreStartup"))
        .insert_resource(Time::<Fixed>::from_duration(ms(10)));
    app.update();
    let frame = ["First", "PreUpdate", "StateTransition", "FixedUpdate", "Update", "PostUpdate", "Last"];
    let mut want: Vec<&str> = vec!["PreStartup", "Startup", "PostStartup"];
    want.extend(frame);
    assert_eq!(log(app.world()), want);
    app.world_mut().resource_mut::<Log>().unwrap().0.clear();
    app.update();
    assert_eq!(log(app.world()), frame);
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum MyLabel {
    AfterUpdate,
    BeforeFirst,
    InFixed,
    OnDemand,
}
impl ScheduleLabel for MyLabel {}

#[test]
fn custom_schedules_run_where_they_are_ordered() {
    let mut app = manual_app(ms(10));
    app.insert_resource(Time::<Fixed>::from_duration(ms(10)))
        .add_schedule_after(Update, MyLabel::AfterUpdate)
        .add_schedule_before(First, MyLabel::BeforeFirst)
        .add_schedule_after(FixedUpdate, MyLabel::InFixed)
        .add_systems(MyLabel::AfterUpdate, say("after update"))
        .add_systems(MyLabel::BeforeFirst, say("before first"))
        .add_systems(MyLabel::InFixed, say("in fixed"))
        .add_systems(MyLabel::OnDemand, say("on demand"))
        .add_systems(Update, say("update"))
        .add_systems(FixedUpdate, say("fixed"))
        .add_systems(PostUpdate, say("post update"));
    app.update();
    assert_eq!(log(app.world()), ["before first", "fixed", "in fixed", "update", "after update", "post update"]);
    app.world_mut().run_schedule(MyLabel::OnDemand).unwrap();
    assert_eq!(log(app.world()).last().map(String::as_str), Some("on demand"));
    let missing = app.world_mut().run_schedule(MyLabel::BeforeFirst.intern());
    assert!(missing.is_ok());
    #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    struct Nowhere;
    impl ScheduleLabel for Nowhere {}
    assert!(matches!(app.world_mut().run_schedule(Nowhere), Err(ScheduleError::NotFound(_))));
}

#[test]
#[should_panic(expected = "is not in the app's order")]
fn ordering_against_an_unknown_label_panics() {
    let mut app = App::new();
    app.add_schedule_after(MyLabel::OnDemand, MyLabel::AfterUpdate);
}

#[test]
fn events_live_for_the_frame_they_are_sent_in_and_the_next() {
    struct Ping(u32);
    #[derive(Default)]
    struct Seen(Vec<(u32, u32)>);
    let mut app = manual_app(ms(10));
    app.add_event::<Ping>().init_resource::<Seen>();
    // Sent in Update of frame 1, read in PreUpdate of frame 2 (a reader
    // running earlier in the frame than the writer).
    app.add_systems(Update, |mut w: EventWriter<Ping>, mut n: Local<u32>| {
        *n += 1;
        if *n == 1 {
            w.send(Ping(7));
        }
    });
    app.add_systems(PreUpdate, |mut r: EventReader<Ping>, mut seen: ResMut<Seen>, time: Res<Time>| {
        let frame = time.frame_count() as u32;
        for p in r.read() {
            seen.0.push((frame, p.0));
        }
    });
    app.run_frames(4);
    assert_eq!(app.world().resource::<Seen>().unwrap().0, [(2, 7)]);
}

// ----- time and the fixed step -----------------------------------------

#[derive(Default)]
struct Steps(Vec<Duration>);

fn count_steps(mut steps: ResMut<Steps>, time: Res<Time>) {
    steps.0.push(time.delta());
}

#[test]
fn fixed_steps_follow_the_accumulator_under_irregular_frames() {
    let mut app = manual_app(ms(0));
    app.insert_resource(Time::<Fixed>::from_duration(ms(10)))
        .init_resource::<Steps>()
        .add_systems(FixedUpdate, count_steps);
    // (frame, steps expected this frame, overstep after)
    let frames = [(3, 0, 3), (7, 1, 0), (25, 2, 5), (4, 0, 9), (1, 1, 0), (0, 0, 0), (39, 3, 9), (12, 2, 1)];
    let mut total = 0;
    for (k, &(frame, steps, overstep)) in frames.iter().enumerate() {
        set_frame(&mut app, ms(frame));
        app.update();
        total += steps as usize;
        let fixed = *app.world().resource::<Time<Fixed>>().unwrap();
        assert_eq!(fixed.steps_this_frame(), steps, "frame {k}");
        assert_eq!(fixed.overstep(), ms(overstep), "frame {k}");
        assert_eq!(app.world().resource::<Steps>().unwrap().0.len(), total, "frame {k}");
        let fraction = fixed.overstep_fraction_f64();
        assert!((fraction - overstep as f64 / 10.0).abs() < 1e-9, "frame {k}: {fraction}");
    }
    // Inside FixedUpdate, Time reports the fixed step; outside, the frame.
    assert!(app.world().resource::<Steps>().unwrap().0.iter().all(|&d| d == ms(10)));
    assert_eq!(app.world().resource::<Time>().unwrap().delta(), ms(12));
    let fixed = app.world().resource::<Time<Fixed>>().unwrap();
    assert_eq!(fixed.elapsed(), ms(10) * total as u32);
    assert_eq!(fixed.frame_count(), total as u64);
}

#[test]
fn time_in_fixed_update_counts_steps_and_update_sees_the_frame() {
    #[derive(Default)]
    struct Seen(Vec<(&'static str, Duration, u64)>);
    let mut app = manual_app(ms(25));
    app.insert_resource(Time::<Fixed>::from_duration(ms(10)))
        .init_resource::<Seen>()
        .add_systems(FixedUpdate, |time: Res<Time>, mut s: ResMut<Seen>| {
            s.0.push(("fixed", time.elapsed(), time.frame_count()))
        })
        .add_systems(Update, |time: Res<Time>, mut s: ResMut<Seen>| {
            s.0.push(("update", time.elapsed(), time.frame_count()))
        });
    app.run_frames(2);
    let seen = &app.world().resource::<Seen>().unwrap().0;
    assert_eq!(
        seen,
        &[
            ("fixed", ms(10), 1),
            ("fixed", ms(20), 2),
            ("update", ms(25), 1),
            ("fixed", ms(30), 3),
            ("fixed", ms(40), 4),
            ("fixed", ms(50), 5),
            ("update", ms(50), 2),
        ]
    );
}

#[test]
fn a_stall_is_clamped_to_the_maximum_delta() {
    let mut app = manual_app(ms(16));
    app.insert_resource(Time::<Fixed>::from_duration(ms(10)))
        .init_resource::<Steps>()
        .add_systems(FixedUpdate, count_steps);
    app.update();
    set_frame(&mut app, Duration::from_secs(3)); // a breakpoint
    app.update();
    let world = app.world();
    assert_eq!(world.resource::<Time<Real>>().unwrap().delta(), Duration::from_secs(3));
    assert_eq!(world.resource::<Time<Virtual>>().unwrap().delta(), Time::<Virtual>::DEFAULT_MAX_DELTA);
    assert_eq!(world.resource::<Time>().unwrap().delta(), ms(50));
    assert_eq!(world.resource::<Time<Fixed>>().unwrap().steps_this_frame(), 5); // 6 + 50 ms
    assert_eq!(world.resource::<Steps>().unwrap().0.len(), 6);
    // A larger maximum lets more through.
    app.world_mut().resource_mut::<Time<Virtual>>().unwrap().set_max_delta(ms(100));
    app.update();
    assert_eq!(app.world().resource::<Time>().unwrap().delta(), ms(100));
}

#[test]
fn the_cap_on_steps_drops_whole_steps_and_keeps_the_fraction() {
    let mut app = manual_app(ms(100));
    let mut fixed = Time::<Fixed>::from_duration(ms(10));
    fixed.set_max_steps_per_frame(4);
    app.insert_resource(fixed).init_resource::<Steps>().add_systems(FixedUpdate, count_steps);
    app.world_mut().resource_mut::<Time<Virtual>>().unwrap().set_max_delta(Duration::from_secs(1));
    set_frame(&mut app, ms(73));
    app.update();
    let fixed = *app.world().resource::<Time<Fixed>>().unwrap();
    assert_eq!(fixed.steps_this_frame(), 4);
    assert_eq!(fixed.overstep(), ms(3));
    assert_eq!(fixed.discarded(), ms(30));
    assert_eq!(app.world().resource::<Steps>().unwrap().0.len(), 4);
}

#[test]
fn paused_and_scaled_virtual_time() {
    let mut app = manual_app(ms(20));
    app.insert_resource(Time::<Fixed>::from_duration(ms(10)))
        .init_resource::<Steps>()
        .add_systems(FixedUpdate, count_steps);
    app.update();
    assert_eq!(app.world().resource::<Steps>().unwrap().0.len(), 2);
    app.world_mut().resource_mut::<Time<Virtual>>().unwrap().pause();
    app.run_frames(3);
    {
        let world = app.world();
        assert_eq!(world.resource::<Steps>().unwrap().0.len(), 2, "no fixed steps while paused");
        assert_eq!(world.resource::<Time>().unwrap().delta(), Duration::ZERO);
        assert_eq!(world.resource::<Time>().unwrap().elapsed(), ms(20));
        assert_eq!(world.resource::<Time<Real>>().unwrap().elapsed(), ms(80), "real time goes on");
        assert_eq!(world.resource::<Time<Virtual>>().unwrap().effective_speed(), 0.0);
    }
    let virt = app.world_mut().resource_mut::<Time<Virtual>>().unwrap();
    virt.unpause();
    virt.set_relative_speed(2.0);
    app.update();
    assert_eq!(app.world().resource::<Time>().unwrap().delta(), ms(40));
    assert_eq!(app.world().resource::<Steps>().unwrap().0.len(), 6);
    // Clamped first, then scaled: a 1 s stall at speed 0.5 counts 25 ms.
    app.world_mut().resource_mut::<Time<Virtual>>().unwrap().set_relative_speed(0.5);
    set_frame(&mut app, Duration::from_secs(1));
    app.update();
    assert_eq!(app.world().resource::<Time>().unwrap().delta(), ms(25));
}

#[test]
fn on_timer_fires_once_per_period_in_fixed_time_too() {
    #[derive(Default)]
    struct Fired(Vec<u64>);
    let mut app = manual_app(ms(20));
    app.insert_resource(Time::<Fixed>::from_duration(ms(10))).init_resource::<Fired>().add_systems(
        FixedUpdate,
        (|time: Res<Time>, mut f: ResMut<Fired>| f.0.push(time.frame_count())).run_if(on_timer(ms(30))),
    );
    app.run_frames(6); // 12 fixed steps
    assert_eq!(app.world().resource::<Fired>().unwrap().0, [3, 6, 9, 12]);
}

// ----- states ------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
enum Game {
    #[default]
    Menu,
    Playing,
    Paused,
}
impl States for Game {}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
enum Music {
    #[default]
    Quiet,
    Loud,
}
impl States for Music {}

#[derive(Component)]
struct Enemy;

#[test]
fn transitions_run_exit_transition_enter_once_per_frame() {
    let mut app = manual_app(ms(10));
    app.init_state::<Game>()
        .add_systems(OnEnter(Game::Menu), say("enter Menu"))
        .add_systems(OnExit(Game::Menu), say("exit Menu"))
        .add_systems(OnTransition { from: Game::Menu, to: Game::Playing }, say("Menu -> Playing"))
        .add_systems(OnEnter(Game::Playing), say("enter Playing"))
        .add_systems(OnExit(Game::Playing), say("exit Playing"))
        .add_systems(OnEnter(Game::Paused), say("enter Paused"))
        .add_systems(PreUpdate, say("PreUpdate"))
        .add_systems(Update, say("Update"))
        .add_systems(
            Update,
            (|state: Res<State<Game>>, mut l: ResMut<Log>| l.0.push(format!("in {:?}", state.get()))).after(say_update),
        );
    fn say_update() {}
    app.add_systems(Update, say_update);
    app.update();
    assert_eq!(log(app.world()), ["PreUpdate", "enter Menu", "Update", "in Menu"]);
    app.world_mut().resource_mut::<Log>().unwrap().0.clear();

    // Two requests in one frame: the latest wins, applied once.
    let next = app.world_mut().resource_mut::<NextState<Game>>().unwrap();
    next.set(Game::Paused);
    next.set(Game::Playing);
    app.update();
    assert_eq!(
        log(app.world()),
        ["PreUpdate", "exit Menu", "Menu -> Playing", "enter Playing", "Update", "in Playing"]
    );
    assert_eq!(*app.world().resource::<NextState<Game>>().unwrap(), NextState::Unchanged);

    // A request for the current state does nothing.
    app.world_mut().resource_mut::<Log>().unwrap().0.clear();
    app.world_mut().resource_mut::<NextState<Game>>().unwrap().set(Game::Playing);
    app.update();
    assert_eq!(log(app.world()), ["PreUpdate", "Update", "in Playing"]);

    // Transitions requested during a frame apply at the next frame's point.
    app.world_mut().resource_mut::<Log>().unwrap().0.clear();
    app.add_systems(Update, |mut next: ResMut<NextState<Game>>| next.set(Game::Paused));
    app.update();
    assert_eq!(app.world().resource::<State<Game>>().unwrap().get(), &Game::Playing);
    app.update();
    assert_eq!(app.world().resource::<State<Game>>().unwrap().get(), &Game::Paused);
    let events = app.world().resource::<ecs_core::Events<StateTransitionEvent<Game>>>().unwrap();
    let last = events.read_from(0).last().unwrap();
    assert_eq!((last.exited.clone(), last.entered.clone()), (Some(Game::Playing), Game::Paused));
}

#[test]
fn state_scoped_entities_are_despawned_after_on_exit() {
    #[derive(Default)]
    struct CountedOnExit(usize);
    let mut app = manual_app(ms(10));
    app.init_state::<Game>().init_resource::<CountedOnExit>();
    app.add_systems(OnEnter(Game::Playing), |mut commands: Commands| {
        for _ in 0..3 {
            commands.spawn((Enemy, StateScoped(Game::Playing)));
        }
        commands.spawn((Enemy, StateScoped(Game::Menu))); // another state's scope
        commands.spawn((Enemy,)); // unscoped
        // Pooled (disabled): scoped all the same.
        commands.spawn((Enemy, StateScoped(Game::Playing), ecs_core::Disabled));
    });
    app.add_systems(OnExit(Game::Playing), |mut q: Query<&Enemy>, mut c: ResMut<CountedOnExit>| {
        c.0 = q.iter().count();
    });
    app.insert_resource(NextState::Pending(Game::Playing));
    app.update();
    assert_eq!(app.world().len(), 6);
    app.world_mut().resource_mut::<NextState<Game>>().unwrap().set(Game::Paused);
    app.update();
    assert_eq!(app.world().resource::<CountedOnExit>().unwrap().0, 5, "OnExit still sees them");
    assert_eq!(app.world().len(), 2, "the disabled one went with its state");
    let mut q = app.world_mut().query::<&StateScoped<Game>>();
    assert_eq!(q.iter(app.world()).map(|s| s.0.clone()).collect::<Vec<_>>(), [Game::Menu]);
}

#[test]
fn in_state_gates_systems_and_state_types_are_independent() {
    #[derive(Default)]
    struct Ticks {
        playing: u32,
        loud: u32,
        both: u32,
    }
    let mut app = manual_app(ms(10));
    app.init_state::<Game>()
        .insert_state(Music::Loud)
        .init_resource::<Ticks>()
        .add_systems(Update, (|mut t: ResMut<Ticks>| t.playing += 1).run_if(in_state(Game::Playing)))
        .add_systems(Update, (|mut t: ResMut<Ticks>| t.loud += 1).run_if(in_state(Music::Loud)))
        .add_systems(
            Update,
            (|mut t: ResMut<Ticks>| t.both += 1).run_if(in_state(Game::Playing).and(in_state(Music::Loud))),
        );
    app.run_frames(2);
    app.world_mut().resource_mut::<NextState<Game>>().unwrap().set(Game::Playing);
    app.run_frames(3);
    app.world_mut().resource_mut::<NextState<Music>>().unwrap().set(Music::Quiet);
    app.run_frames(4);
    let t = app.world().resource::<Ticks>().unwrap();
    assert_eq!((t.playing, t.loud, t.both), (7, 5, 3));
}

// ----- run conditions and the tick window -----------------------------

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
struct Gate(bool);

#[derive(Default)]
struct Watched {
    changed: Vec<Vec<Entity>>,
    removed: Vec<Vec<Entity>>,
}

fn watch(mut changed: Query<Entity, Changed<Pos>>, mut removed: RemovedComponents<Pos>, mut w: ResMut<Watched>) {
    let mut c: Vec<Entity> = changed.iter().collect();
    c.sort();
    w.changed.push(c);
    w.removed.push(removed.iter().collect());
}

fn gate_open(gate: Res<Gate>) -> bool {
    gate.0
}

#[test]
fn a_skipped_system_sees_every_change_and_removal_since_its_previous_run() {
    let mut world = World::new();
    world.insert_resource(Gate(true));
    world.insert_resource(Watched::default());
    // Enough entities for several chunks, so untouched chunks are skipped.
    let entities = world.spawn_batch((0..3000).map(|i| (Pos(i as f32),)));
    let mut schedule = Schedule::new();
    schedule.add_systems(watch.run_if(gate_open));
    schedule.run(&mut world).unwrap(); // first run: everything is new
    assert_eq!(world.resource::<Watched>().unwrap().changed[0].len(), 3000);

    world.resource_mut::<Gate>().unwrap().0 = false;
    // Changes and removals while the system is skipped, over several runs.
    world.get_mut::<Pos>(entities[5]).unwrap().0 = -1.0;
    schedule.run(&mut world).unwrap();
    world.get_mut::<Pos>(entities[2900]).unwrap().0 = -1.0;
    world.remove_one::<Pos>(entities[7]).unwrap();
    schedule.run(&mut world).unwrap();
    world.despawn(entities[11]).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Watched>().unwrap().changed.len(), 1, "skipped three times");
    assert_eq!(schedule.system_stats().next().unwrap().runs, 1);
    assert!(schedule.skipped_systems().is_empty(), "a condition's no is not a skip report");

    world.resource_mut::<Gate>().unwrap().0 = true;
    schedule.run(&mut world).unwrap();
    let w = world.resource::<Watched>().unwrap();
    assert_eq!(w.changed[1], [entities[5], entities[2900]]);
    assert_eq!(w.removed[1], [entities[7], entities[11]]);
    let stats = schedule.system_stats().next().unwrap().chunks();
    assert!(stats.chunks_skipped > 0, "unchanged chunks still skipped: {stats:?}");

    // And the window closes: nothing new, nothing seen.
    schedule.run(&mut world).unwrap();
    let w = world.resource::<Watched>().unwrap();
    assert!(w.changed[2].is_empty() && w.removed[2].is_empty());
}

#[test]
fn a_skipped_system_inside_an_app_keeps_its_window_across_frames() {
    let mut app = manual_app(ms(10));
    app.insert_state(Game::Playing)
        .init_resource::<Watched>()
        .add_systems(Update, watch.run_if(in_state(Game::Playing)));
    let a = app.world_mut().spawn((Pos(0.0),));
    let b = app.world_mut().spawn((Pos(0.0),));
    let c = app.world_mut().spawn((Pos(0.0),));
    app.update();
    assert_eq!(app.world().resource::<Watched>().unwrap().changed, [vec![a, b, c]]);
    app.world_mut().resource_mut::<NextState<Game>>().unwrap().set(Game::Paused);
    app.run_frames(2);
    app.world_mut().get_mut::<Pos>(a).unwrap().0 = 1.0;
    app.run_frames(2);
    app.world_mut().remove_one::<Pos>(b).unwrap();
    app.update();
    assert_eq!(app.world().resource::<Watched>().unwrap().changed.len(), 1, "not run while paused");
    app.world_mut().resource_mut::<NextState<Game>>().unwrap().set(Game::Playing);
    app.update();
    let w = app.world().resource::<Watched>().unwrap();
    assert_eq!(w.changed[1], [a]);
    assert_eq!(w.removed[1], [b]);
}

#[test]
fn combinators_and_short_circuits() {
    struct A;
    struct B;
    #[derive(Default)]
    struct Evaluated(Vec<&'static str>);
    #[derive(Default)]
    struct Ran(Vec<&'static str>);
    fn probe_a(a: Option<Res<A>>, e: Res<Arc<Mutex<Evaluated>>>) -> bool {
        e.lock().unwrap().0.push("a");
        a.is_some()
    }
    fn probe_b(b: Option<Res<B>>, e: Res<Arc<Mutex<Evaluated>>>) -> bool {
        e.lock().unwrap().0.push("b");
        b.is_some()
    }
    let evaluated = Arc::new(Mutex::new(Evaluated::default()));
    let run = |a: bool, b: bool| -> (Vec<&'static str>, Vec<&'static str>) {
        let mut world = World::new();
        world.insert_resource(evaluated.clone());
        world.insert_resource(Ran::default());
        if a {
            world.insert_resource(A);
        }
        if b {
            world.insert_resource(B);
        }
        evaluated.lock().unwrap().0.clear();
        let mut schedule = Schedule::new();
        schedule.add_systems(
            (
                (|mut r: ResMut<Ran>| r.0.push("and")).run_if(probe_a.and(probe_b)),
                (|mut r: ResMut<Ran>| r.0.push("or")).run_if(probe_a.or(probe_b)),
                (|mut r: ResMut<Ran>| r.0.push("not")).run_if(not(probe_a)),
                (|mut r: ResMut<Ran>| r.0.push("nand")).run_if(not(resource_exists::<A>.and(resource_exists::<B>))),
                (|mut r: ResMut<Ran>| r.0.push("two")).run_if(resource_exists::<A>).run_if(resource_exists::<B>),
            )
                .chain(),
        );
        schedule.run(&mut world).unwrap();
        let ran = world.resource::<Ran>().unwrap().0.clone();
        (ran, evaluated.lock().unwrap().0.clone())
    };
    assert_eq!(run(false, false), (vec!["not", "nand"], vec!["a", "a", "b", "a"]));
    assert_eq!(run(true, false), (vec!["or", "nand"], vec!["a", "b", "a", "a"]));
    assert_eq!(run(false, true), (vec!["or", "not", "nand"], vec!["a", "a", "b", "a"]));
    assert_eq!(run(true, true), (vec!["and", "or", "two"], vec!["a", "b", "a", "a"]));
}

#[test]
fn common_conditions() {
    #[derive(Component)]
    struct Marker;
    #[derive(Default)]
    struct Ran(Vec<&'static str>);
    let mut world = World::new();
    world.insert_resource(Ran::default());
    world.insert_resource(5u32);
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (
            (|mut r: ResMut<Ran>| r.0.push("once")).run_if(run_once()),
            (|mut r: ResMut<Ran>| r.0.push("marker")).run_if(any_with_component::<Marker>),
            (|mut r: ResMut<Ran>| r.0.push("five")).run_if(resource_equals(5u32)),
            (|mut r: ResMut<Ran>| r.0.push("added")).run_if(resource_added::<u32>),
            (|mut r: ResMut<Ran>| r.0.push("changed")).run_if(resource_changed::<u32>),
        )
            .chain(),
    );
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Ran>().unwrap().0, ["once", "five", "added", "changed"]);
    world.resource_mut::<Ran>().unwrap().0.clear();
    let e = world.spawn((Marker,));
    *world.resource_mut::<u32>().unwrap() = 6;
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Ran>().unwrap().0, ["marker", "changed"]);
    world.resource_mut::<Ran>().unwrap().0.clear();
    world.insert_one(e, ecs_core::Disabled).unwrap();
    schedule.run(&mut world).unwrap();
    assert!(world.resource::<Ran>().unwrap().0.is_empty());
}

#[test]
fn a_condition_that_writes_is_refused_at_build() {
    fn sneaky(mut n: ResMut<u32>) -> bool {
        *n += 1;
        true
    }
    fn sneaky_query(mut q: Query<&mut Pos>) -> bool {
        q.iter_mut().next().is_some()
    }
    let mut world = World::new();
    world.insert_resource(0u32);
    for condition in [sneaky.into_run_condition(), sneaky_query.into_run_condition()] {
        let mut schedule = Schedule::new();
        schedule.add_systems((|| {}).run_if(condition));
        let error = schedule.build(&mut world).unwrap_err();
        let ScheduleError::Conflict(message) = &error else { panic!("{error:?}") };
        assert!(message.contains("read-only") && message.contains("sneaky"), "{message}");
    }
}

#[test]
fn a_condition_on_a_group_is_evaluated_once_per_run() {
    let evaluations = Arc::new(Mutex::new(0u32));
    let counter = evaluations.clone();
    let counted = move || {
        *counter.lock().unwrap() += 1;
        true
    };
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((say("a"), say("b"), say("c")).chain().run_if(counted));
    schedule.run(&mut world).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(*evaluations.lock().unwrap(), 2);
    assert_eq!(log(&world), ["a", "b", "c", "a", "b", "c"]);
}

// ----- sets, ordering, cycles, ambiguities ----------------------------

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Phase {
    Input,
    Physics,
    Render,
}
impl SystemSet for Phase {}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Inner;
impl SystemSet for Inner {}

#[test]
fn sets_order_their_systems_and_nest() {
    let mut app = manual_app(ms(10));
    app.configure_sets(Update, (Phase::Input, Phase::Physics, Phase::Render).chain())
        .configure_sets(Update, Inner.in_set(Phase::Physics))
        .add_systems(
            Update,
            (
                say("render").in_set(Phase::Render),
                say("inner").in_set(Inner),
                say("physics").in_set(Phase::Physics).before(Inner),
                say("input").in_set(Phase::Input),
                say("free"),
            ),
        );
    app.update();
    let l = log(app.world());
    let at = |s: &str| l.iter().position(|x| x == s).unwrap();
    assert!(at("input") < at("physics") && at("physics") < at("inner") && at("inner") < at("render"), "{l:?}");
    assert_eq!(l.len(), 5);
}

#[test]
fn an_empty_set_still_orders_the_sets_around_it() {
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.configure_sets((Phase::Input, Phase::Physics, Phase::Render).chain());
    schedule.add_systems((say("render").in_set(Phase::Render), say("input").in_set(Phase::Input)));
    schedule.run(&mut world).unwrap();
    assert_eq!(log(&world), ["input", "render"]);
}

#[test]
fn set_conditions_gate_every_member() {
    let mut app = manual_app(ms(10));
    app.init_state::<Game>()
        .configure_sets(Update, Phase::Physics.run_if(in_state(Game::Playing)))
        .configure_sets(Update, Inner.in_set(Phase::Physics))
        .add_systems(Update, (say("a").in_set(Phase::Physics), say("b").in_set(Inner), say("c")));
    app.run_frames(2);
    assert_eq!(log(app.world()), ["c", "c"]);
    app.world_mut().resource_mut::<NextState<Game>>().unwrap().set(Game::Playing);
    app.update();
    let l = log(app.world());
    assert_eq!(l.len(), 5);
    assert!(l[2..].contains(&"a".to_string()) && l[2..].contains(&"b".to_string()));
}

#[test]
fn a_cycle_names_the_systems_and_sets_on_it() {
    fn steer() {}
    fn integrate() {}
    fn collide() {}
    fn unrelated() {}
    let mut app = App::new();
    app.configure_sets(FixedUpdate, (Phase::Input, Phase::Physics).chain()).add_systems(
        FixedUpdate,
        (
            steer.in_set(Phase::Input).after(collide),
            integrate.in_set(Phase::Physics),
            collide.after(integrate),
            unrelated.after(collide),
        ),
    );
    let error: AppError = app.try_update().unwrap_err();
    assert_eq!(error.schedule, "FixedUpdate");
    let ScheduleError::Cycle(names) = &error.error else { panic!("{error}") };
    let short: Vec<&str> = names.iter().map(|n| n.rsplit("::").next().unwrap()).collect();
    // Rotated to start at a system; the set boundaries are named.
    assert_eq!(short.len(), 5, "{names:?}");
    let start = short.iter().position(|n| *n == "steer").unwrap();
    let rotated: Vec<&str> = (0..5).map(|k| short[(start + k) % 5]).collect();
    assert_eq!(rotated, ["steer", "set Input", "set Physics", "integrate", "collide"], "{names:?}");
    let message = error.to_string();
    assert!(message.starts_with("schedule FixedUpdate: ordering constraints form a cycle: "), "{message}");
    assert!(!message.contains("unrelated"), "only the cycle is named: {message}");
    assert!(message.contains("set Input") && message.contains("set Physics"), "{message}");
    // Nothing ran.
    assert!(app.world().resource::<Time<Real>>().unwrap().frame_count() == 0);
}

#[test]
fn a_set_inside_itself_is_a_cycle() {
    let mut schedule = Schedule::new();
    schedule.configure_sets((Phase::Input.in_set(Phase::Render), Phase::Render.in_set(Phase::Input)));
    schedule.add_systems((|| {}).in_set(Phase::Input));
    let error = schedule.build(&mut World::new()).unwrap_err();
    assert!(matches!(&error, ScheduleError::Cycle(names) if names.len() == 2), "{error}");
}

#[test]
fn ambiguities_list_conflicting_unordered_pairs() {
    struct Score(u32);
    fn add(mut s: ResMut<Score>) {
        s.0 += 1;
    }
    fn double(mut s: ResMut<Score>) {
        s.0 *= 2;
    }
    fn read(_s: Res<Score>) {}
    fn move_pos(_q: Query<&mut Pos>) {}
    fn read_pos(_q: Query<&Pos>) {}
    fn read_pos_too(_q: Query<&Pos>) {}
    fn tagged(_q: Query<&mut Pos, With<Enemy>>) {}
    fn untagged(_q: Query<&mut Pos, Without<Enemy>>) {}
    fn exclusive(_w: &mut World) {}
    fn harmless(_q: Query<&Enemy>) {}
    let mut app = App::new();
    app.insert_resource(Score(0)).add_systems(
        Update,
        (
            (add, double).chain(),
            read,
            move_pos,
            read_pos.after(move_pos),
            read_pos_too,
            (tagged, untagged),
            exclusive.after(harmless),
            harmless,
        ),
    );
    let found = app.ambiguities(Update).unwrap();
    let ordered =
        |a: &str, b: &str| if a < b { (a.to_string(), b.to_string()) } else { (b.to_string(), a.to_string()) };
    let mut pairs: Vec<(String, String)> = found
        .iter()
        .map(|a| {
            let short = |s: &str| s.rsplit("::").next().unwrap().to_string();
            ordered(&short(&a.first), &short(&a.second))
        })
        .collect();
    pairs.sort();
    let want = [
        ("add", "exclusive"),
        ("add", "read"),
        ("double", "exclusive"),
        ("double", "read"),
        ("exclusive", "read"),
        ("exclusive", "read_pos_too"),
        ("exclusive", "tagged"),
        ("exclusive", "untagged"),
        ("move_pos", "exclusive"),
        ("move_pos", "read_pos_too"),
        ("move_pos", "tagged"),
        ("move_pos", "untagged"),
        ("read_pos", "exclusive"),
        ("read_pos", "tagged"),
        ("read_pos", "untagged"),
        ("read_pos_too", "tagged"),
        ("read_pos_too", "untagged"),
    ];
    let mut want: Vec<(String, String)> = want.iter().map(|(a, b)| ordered(a, b)).collect();
    want.sort();
    assert_eq!(pairs, want);
    let text = found.iter().find(|a| a.first.ends_with("add") && a.second.ends_with("read")).unwrap().to_string();
    assert!(text.contains("Score") && text.contains("no order"), "{text}");

    // Ordering a pair, or accepting it, takes it off the list.
    let mut app = App::new();
    app.insert_resource(Score(0))
        .add_systems(Update, (add, double.ambiguous_with(add), read.after(double).ambiguous_with(add)));
    assert!(app.ambiguities(Update).unwrap().is_empty());
}

// ----- exclusive systems ---------------------------------------------

#[test]
fn exclusive_systems_run_alone_in_order_and_see_earlier_commands() {
    fn spawner(mut commands: Commands) {
        commands.spawn((Pos(1.0),));
    }
    fn count_then_spawn(world: &mut World) {
        let n = world.query::<&Pos>().iter(world).count();
        world.resource_mut::<Log>().unwrap().0.push(format!("exclusive saw {n}"));
        world.spawn((Pos(2.0),));
    }
    fn after_exclusive(mut q: Query<&Pos, Added<Pos>>, mut l: ResMut<Log>) {
        l.0.push(format!("after saw {} new", q.iter().count()));
    }
    fn other(mut l: ResMut<Log>) {
        l.0.push("other".into());
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((
        after_exclusive.after(count_then_spawn),
        spawner.before(count_then_spawn),
        count_then_spawn,
        other,
    ));
    schedule.set_executor(ExecutorKind::MultiThreaded);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| schedule.run(&mut world)).unwrap();
    assert_eq!(log(&world), ["exclusive saw 1", "after saw 2 new", "other"]);
    let stages = schedule.stage_names();
    let alone = stages.iter().find(|s| s.iter().any(|n| n.ends_with("count_then_spawn"))).unwrap();
    assert_eq!(alone.len(), 1, "{stages:?}");
    // Second run: the exclusive system's own spawn is seen by the reader
    // once, on this run (stamped after its previous run).
    world.resource_mut::<Log>().unwrap().0.clear();
    pool.install(|| schedule.run(&mut world)).unwrap();
    assert_eq!(log(&world), ["exclusive saw 3", "after saw 2 new", "other"]);
}

#[test]
fn exclusive_systems_take_conditions_and_sets() {
    let mut app = manual_app(ms(10));
    app.init_state::<Game>().configure_sets(Update, (Phase::Input, Phase::Render).chain()).add_systems(
        Update,
        (
            (|w: &mut World| w.resource_mut::<Log>().unwrap().0.push("exclusive".into()))
                .in_set(Phase::Render)
                .run_if(in_state(Game::Menu)),
            say("input").in_set(Phase::Input),
        ),
    );
    app.update();
    app.world_mut().resource_mut::<NextState<Game>>().unwrap().set(Game::Paused);
    app.update();
    assert_eq!(log(app.world()), ["input", "exclusive", "input"]);
}

// ----- one-shot systems ----------------------------------------------

#[test]
fn one_shot_systems_run_on_demand_and_keep_their_window() {
    #[derive(Default)]
    struct Seen(Vec<usize>);
    fn changed(mut q: Query<&Pos, Changed<Pos>>, mut seen: ResMut<Seen>) {
        seen.0.push(q.iter().count());
    }
    let mut world = World::new();
    world.insert_resource(Seen::default());
    let id = world.register_system(changed);
    let e = world.spawn((Pos(0.0),));
    world.spawn((Pos(0.0),));
    world.run_system(id).unwrap();
    world.run_system(id).unwrap();
    world.get_mut::<Pos>(e).unwrap().0 = 3.0;
    world.run_system(id).unwrap();
    assert_eq!(world.resource::<Seen>().unwrap().0, [2, 0, 1]);

    // Exclusive one-shot systems, commands.run_system, and unregistering.
    let exclusive = world.register_system(|w: &mut World| {
        w.resource_mut::<Seen>().unwrap().0.push(99);
    });
    let mut schedule = Schedule::new();
    schedule.add_systems(move |mut commands: Commands| commands.run_system(exclusive));
    schedule.run(&mut world).unwrap();
    assert_eq!(world.resource::<Seen>().unwrap().0.last(), Some(&99));
    assert!(world.unregister_system(exclusive));
    assert!(!world.unregister_system(exclusive));
    assert_eq!(world.run_system(exclusive), Err(ecs_core::schedule::RunSystemError::NotFound(exclusive)));
    schedule.run(&mut world).unwrap();
    let errors = world.take_lifecycle_errors();
    assert!(errors.len() == 1 && errors[0].contains("not registered"), "{errors:?}");
    // A reused slot does not answer to the old id.
    let reused = world.register_system(|| {});
    assert_ne!(reused, exclusive);
    assert!(world.run_system(exclusive).is_err());
    world.run_system(reused).unwrap();
}

#[test]
fn a_one_shot_system_that_runs_itself_is_refused() {
    #[derive(Default)]
    struct Result(Option<String>);
    let mut world = World::new();
    world.insert_resource(Result::default());
    struct Me(SystemId);
    let id = world.register_system(|w: &mut World| {
        let me = w.resource::<Me>().unwrap().0;
        let outcome = w.run_system(me).unwrap_err().to_string();
        w.resource_mut::<Result>().unwrap().0 = Some(outcome);
    });
    world.insert_resource(Me(id));
    world.run_system(id).unwrap();
    assert!(world.resource::<Result>().unwrap().0.as_deref().unwrap().contains("already running"));
    world.run_system(id).unwrap(); // still registered
}

#[test]
fn a_one_shot_system_missing_a_resource_fails_with_its_name() {
    fn needs(_n: Res<u64>) {}
    let mut world = World::new();
    let id = world.register_system(needs);
    let error = world.run_system(id).unwrap_err().to_string();
    assert!(error.contains("needs") && error.contains("u64"), "{error}");
}

// ----- plugins ----------------------------------------------------------

#[allow(dead_code, reason = "the value is never read: it gives the type its size or its destructor")]
struct Gravity(f32);

struct CorePlugin;
impl Plugin for CorePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Gravity(-9.8)).init_resource::<Log>().add_systems(Update, say("core"));
    }
}

struct PhysicsPlugin {
    hz: f64,
}
impl Plugin for PhysicsPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(CorePlugin)
            .insert_resource(Time::<Fixed>::from_hz(self.hz))
            .add_systems(FixedUpdate, say("physics"));
    }
}

struct AudioPlugin;
impl Plugin for AudioPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(CorePlugin).add_systems(Update, say("audio").after(say_core_marker));
        app.add_systems(Update, say_core_marker);
    }
}
fn say_core_marker() {}

struct Counter;
impl Plugin for Counter {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, say("counter"));
    }
    fn is_unique(&self) -> bool {
        false
    }
}

#[test]
fn plugins_compose_and_a_unique_plugin_builds_once() {
    let mut app = App::new();
    app.insert_resource(TimeUpdateStrategy::ManualDuration(ms(10)))
        .add_plugins((PhysicsPlugin { hz: 100.0 }, (AudioPlugin, CorePlugin)))
        .add_plugins(PhysicsPlugin { hz: 5.0 }) // ignored: the first one wins
        .add_plugins((Counter, Counter))
        .add_plugins(|app: &mut App| {
            app.add_systems(Last, say("closure"));
        });
    assert!(app.is_plugin_added::<CorePlugin>() && app.is_plugin_added::<AudioPlugin>());
    let names: Vec<&str> = app.plugin_names().iter().map(|n| n.rsplit("::").next().unwrap()).collect();
    assert_eq!(names[..5], ["PhysicsPlugin", "CorePlugin", "AudioPlugin", "Counter", "Counter"]);
    assert_eq!(names.len(), 6);
    assert_eq!(app.world().resource::<Time<Fixed>>().unwrap().timestep(), ms(10));
    app.update();
    let l = log(app.world());
    assert_eq!(l.iter().filter(|s| *s == "core").count(), 1);
    assert_eq!(l.iter().filter(|s| *s == "counter").count(), 2);
    assert_eq!(l.first().map(String::as_str), Some("physics"));
    assert_eq!(l.last().map(String::as_str), Some("closure"));
    assert!(l.contains(&"audio".to_string()));
}

#[test]
fn interned_labels_compare_as_their_values() {
    let a: InternedScheduleLabel = OnEnter(Game::Menu).intern();
    assert_eq!(a, OnEnter(Game::Menu).intern());
    assert_ne!(a, OnEnter(Game::Playing).intern());
    assert_ne!(a, OnExit(Game::Menu).intern());
    assert_eq!(a.intern(), a);
    assert_eq!(format!("{a:?}"), "OnEnter(Menu)");
    assert_eq!(Phase::Input.intern(), Phase::Input.intern().intern());
}

#[test]
fn systems_with_conditions_run_in_parallel_without_conflicts() {
    // A condition reading a resource another system writes is ordered
    // against that writer (its access joins the gated system's), so the
    // two-thread pool never lets them overlap.
    struct Flag(bool);
    #[derive(Default)]
    struct Counts(u32);
    fn flip(mut f: ResMut<Flag>) {
        f.0 = !f.0;
    }
    fn flag_set(f: Res<Flag>) -> bool {
        f.0
    }
    let mut world = World::new();
    world.insert_resource(Flag(false));
    world.insert_resource(Counts::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((
        (|mut c: ResMut<Counts>| c.0 += 1).run_if(flag_set),
        flip,
        (|mut q: Query<&mut Pos>| q.for_each_mut(|mut p| p.0 += 1.0)).run_if(flag_set),
    ));
    schedule.set_executor(ExecutorKind::MultiThreaded).build(&mut world).unwrap();
    assert!(schedule.ambiguities().iter().any(|a| a.conflict.contains("Flag")));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for _ in 0..10 {
        pool.install(|| schedule.run(&mut world)).unwrap();
    }
    // First system runs before flip in each run: flag false on even runs.
    assert_eq!(world.resource::<Counts>().unwrap().0, 5);
}

#[test]
fn a_build_error_names_the_schedule_and_nothing_runs() {
    fn a(_q: Query<&mut Pos>, _r: Query<&Pos>) {}
    let mut app = manual_app(ms(10));
    app.add_systems(Startup, say("startup")).add_systems(PostUpdate, a);
    let error = app.try_update().unwrap_err();
    assert_eq!(error.schedule, "PostUpdate");
    assert!(matches!(error.error, ScheduleError::Conflict(_)));
    assert!(log(app.world()).is_empty());
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| app.update())).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.starts_with("schedule PostUpdate: "), "{message}");
}

#[test]
fn a_set_condition_is_evaluated_once_per_run_while_members_run_in_parallel() {
    use std::sync::atomic::{AtomicU32, Ordering};
    struct Left(u32);
    struct Right(u32);
    let evaluations = Arc::new(AtomicU32::new(0));
    let counter = evaluations.clone();
    let mut world = World::new();
    world.insert_resource(Left(0));
    world.insert_resource(Right(0));
    let mut schedule = Schedule::new();
    schedule.configure_sets(Phase::Physics.run_if(move || counter.fetch_add(1, Ordering::SeqCst).is_multiple_of(2)));
    schedule.add_systems(
        ((|mut l: ResMut<Left>| l.0 += 1), (|mut r: ResMut<Right>| r.0 += 1), (|mut l: ResMut<Left>| l.0 += 10))
            .in_set(Phase::Physics),
    );
    schedule.set_executor(ExecutorKind::MultiThreaded);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    for _ in 0..40 {
        pool.install(|| schedule.run(&mut world)).unwrap();
    }
    assert_eq!(evaluations.load(Ordering::SeqCst), 40);
    assert_eq!(world.resource::<Left>().unwrap().0, 20 * 11);
    assert_eq!(world.resource::<Right>().unwrap().0, 20);
}

#[test]
fn consecutive_exclusive_systems_and_apply_deferred() {
    fn spawn(mut commands: Commands) {
        commands.spawn((Pos(0.0),));
    }
    fn count(mut q: Query<&Pos>, mut l: ResMut<Log>) {
        l.0.push(format!("count {}", q.iter().count()));
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (
            spawn,
            apply_deferred,
            count,
            |w: &mut World| w.resource_mut::<Log>().unwrap().0.push("x1".into()),
            |w: &mut World| w.resource_mut::<Log>().unwrap().0.push("x2".into()),
            count.after(apply_deferred),
        )
            .chain(),
    );
    schedule.set_executor(ExecutorKind::MultiThreaded);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| schedule.run(&mut world)).unwrap();
    pool.install(|| schedule.run(&mut world)).unwrap();
    assert_eq!(log(&world), ["count 1", "x1", "x2", "count 1", "count 2", "x1", "x2", "count 2"]);
}

#[test]
fn each_sync_point_applies_the_commands_of_the_systems_run_since_in_the_order_added() {
    fn note(name: &'static str) -> impl FnMut(Commands) {
        move |mut commands: Commands| {
            commands.add(move |w: &mut World| -> Result<(), ecs_core::StoreError> {
                w.resource_mut::<Log>().unwrap().0.push(name.into());
                Ok(())
            });
        }
    }
    let mut world = World::new();
    world.insert_resource(Log::default());
    let mut schedule = Schedule::new();
    let x = |w: &mut World| w.resource_mut::<Log>().unwrap().0.push("x".into());
    // Added: d, a, b, x, c, e. Run: a and b, then x, then d, c and e.
    schedule.add_systems(note("d").after(x));
    schedule.add_systems((note("a"), note("b")).before(x));
    schedule.add_systems(x);
    schedule.add_systems((note("c").after(x), note("e").after(x)));
    for _ in 0..2 {
        schedule.run(&mut world).unwrap();
    }
    assert_eq!(log(&world), ["a", "b", "x", "d", "c", "e", "a", "b", "x", "d", "c", "e"]);
}

#[test]
fn tiny_systems_stay_on_the_calling_thread_after_the_first_run() {
    let threads = Arc::new(Mutex::new(Vec::new()));
    let mut schedule = Schedule::new();
    for k in 0..4 {
        let t = threads.clone();
        // Non-conflicting: each has its own Local.
        schedule.add_systems(move |mut n: Local<u32>| {
            *n += 1;
            t.lock().unwrap().push((k, rayon::current_thread_index()));
        });
    }
    // The decision rests on measured run times; a threshold no run can
    // reach keeps the test independent of the machine's speed (the
    // sanitizer run is many times slower).
    schedule.set_auto_parallel_min(std::time::Duration::MAX);
    let mut world = World::new();
    // Called from outside any pool: the first run (no timings yet) hands
    // systems to the global pool.
    schedule.run(&mut world).unwrap();
    let first: Vec<_> = std::mem::take(&mut *threads.lock().unwrap());
    assert_eq!(first.len(), 4);
    for _ in 0..5 {
        schedule.run(&mut world).unwrap();
    }
    let later = std::mem::take(&mut *threads.lock().unwrap());
    assert_eq!(later.len(), 20);
    assert!(later.iter().all(|(_, thread)| thread.is_none()), "{later:?}");
    assert_eq!(later.iter().take(4).map(|(k, _)| *k).collect::<Vec<_>>(), [0, 1, 2, 3], "in the order added");
    // Forced parallel: the pool takes some.
    schedule.set_executor(ExecutorKind::MultiThreaded);
    schedule.run(&mut world).unwrap();
    assert!(threads.lock().unwrap().iter().any(|(_, thread)| thread.is_some()));
}

#[test]
fn observers_and_ready_schedules_through_the_app() {
    struct Hit(u32);
    impl ecs_core::Event for Hit {}
    #[derive(Default)]
    struct Damage(u32);
    let mut app = manual_app(ms(10));
    app.init_resource::<Damage>()
        .add_observer(|hit: ecs_core::On<Hit>, mut d: ResMut<Damage>| d.0 += hit.0)
        .add_systems(Update, |mut commands: Commands| commands.trigger(Hit(3)));
    let mut extra = Schedule::new();
    extra.add_systems(say("extra"));
    app.add_schedule(MyLabel::OnDemand, extra).add_schedule_after(Last, MyLabel::AfterUpdate).edit_schedule(
        MyLabel::AfterUpdate,
        |schedule| {
            schedule.add_systems(say("edited"));
        },
    );
    app.run_frames(2);
    assert_eq!(app.world().resource::<Damage>().unwrap().0, 6);
    assert_eq!(log(app.world()), ["edited", "edited"]);
    app.world_mut().run_schedule(MyLabel::OnDemand).unwrap();
    assert_eq!(log(app.world()).last().map(String::as_str), Some("extra"));
}

#[test]
fn run_returns_the_exit_a_system_sent_once_its_frame_ends() {
    use std::num::NonZeroU8;

    // Frame 2 sends a success and an error: the error wins; frame 2 ran to
    // its end (Last included) and no frame 3 started.
    let mut app = App::new();
    app.insert_resource(0u32)
        .add_systems(Update, |n: Res<u32>, mut exit: EventWriter<AppExit>| {
            if *n == 1 {
                exit.send(AppExit::Success);
                exit.send(AppExit::Error(NonZeroU8::new(3).unwrap()));
            }
        })
        .add_systems(Last, |mut n: ResMut<u32>| *n += 1);
    let exit = app.run();
    assert_eq!(exit, AppExit::Error(NonZeroU8::new(3).unwrap()));
    assert_eq!(exit.code(), 3);
    assert_eq!(app.world().resource::<u32>(), Some(&2));
    // Taken: asking again finds nothing until a new exit is sent.
    assert_eq!(app.should_exit(), None);
    app.update();
    assert_eq!(app.should_exit(), None);
    app.world_mut().resource_mut::<Events<AppExit>>().unwrap().send(AppExit::Success);
    assert_eq!(app.should_exit(), Some(AppExit::Success));
    assert!(AppExit::Success.is_success() && !AppExit::error().is_success());
    assert_eq!(AppExit::error().code(), 1);
}

#[test]
fn run_with_interval_starts_frames_no_closer_than_the_interval() {
    let mut app = App::new();
    app.add_systems(Update, |mut frames: Local<u32>, mut exit: EventWriter<AppExit>| {
        *frames += 1;
        if *frames == 4 {
            exit.send(AppExit::Success);
        }
    });
    let start = std::time::Instant::now();
    assert_eq!(app.run_with_interval(Duration::from_millis(10)), AppExit::Success);
    // Four frames: three waits between their starts.
    assert!(start.elapsed() >= Duration::from_millis(30), "{:?}", start.elapsed());
}
