//! Systems and schedules: parameters, parallel execution, conflicts, change
//! visibility, deferred commands.

use ecs_core::Component;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ecs_core::{
    Added, Changed, Commands, Entity, EventReader, EventWriter, IntoSystemConfigs, Local, Or, Query, Res, ResMut,
    Schedule, ScheduleError, With, Without, World,
};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Tag;

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap()
}

/// Both callers must be inside at once; gives up after a few seconds.
#[derive(Default)]
struct Rendezvous {
    arrived: AtomicUsize,
    met: AtomicBool,
}

impl Rendezvous {
    fn meet(&self) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if self.arrived.load(Ordering::SeqCst) >= 2 {
                self.met.store(true, Ordering::SeqCst);
                return;
            }
            std::hint::spin_loop();
        }
    }
}

#[test]
fn non_conflicting_systems_run_at_the_same_time() {
    let mut world = World::new();
    world.spawn((Pos(0.0), Vel(1.0)));
    let meeting = Arc::new(Rendezvous::default());
    world.insert_resource(meeting.clone());
    fn writes_pos(mut q: Query<&mut Pos>, r: Res<Arc<Rendezvous>>) {
        q.for_each_mut(|mut p| p.0 += 1.0);
        r.meet();
    }
    fn writes_vel(mut q: Query<&mut Vel>, r: Res<Arc<Rendezvous>>) {
        q.for_each_mut(|mut v| v.0 += 1.0);
        r.meet();
    }
    let mut schedule = Schedule::new();
    schedule.add_systems((writes_pos, writes_vel));
    pool().install(|| schedule.run(&mut world)).unwrap();
    assert_eq!(schedule.stage_names().len(), 1, "{:?}", schedule.stage_names());
    assert!(meeting.met.load(Ordering::SeqCst), "both systems were inside at once");
}

#[derive(Default)]
struct Overlap {
    inside: AtomicUsize,
    overlapped: AtomicBool,
    runs: AtomicUsize,
}

impl Overlap {
    fn enter(&self) {
        if self.inside.fetch_add(1, Ordering::SeqCst) != 0 {
            self.overlapped.store(true, Ordering::SeqCst);
        }
        std::thread::sleep(Duration::from_millis(2));
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn conflicting_systems_never_overlap() {
    let mut world = World::new();
    world.spawn((Pos(0.0), Vel(1.0)));
    let probe = Arc::new(Overlap::default());
    world.insert_resource(probe.clone());
    fn a(mut q: Query<(&mut Pos, &Vel)>, o: Res<Arc<Overlap>>) {
        q.for_each_mut(|(mut p, v)| p.0 += v.0);
        o.enter();
    }
    fn b(mut q: Query<&Pos>, o: Res<Arc<Overlap>>) {
        q.for_each(|_| {});
        o.enter();
    }
    fn c(mut q: Query<&mut Pos>, o: Res<Arc<Overlap>>) {
        q.for_each_mut(|mut p| p.0 -= 1.0);
        o.enter();
    }
    let mut schedule = Schedule::new();
    schedule.add_systems((a, b, c));
    let pool = pool();
    for _ in 0..30 {
        pool.install(|| schedule.run(&mut world)).unwrap();
    }
    assert_eq!(schedule.stage_names().len(), 3);
    assert_eq!(probe.runs.load(Ordering::SeqCst), 90);
    assert!(!probe.overlapped.load(Ordering::SeqCst));
}

#[test]
fn a_system_whose_own_parameters_conflict_is_refused_by_name() {
    let mut world = World::new();
    fn bad(_a: Query<&mut Pos>, _b: Query<&Pos>) {}
    let mut schedule = Schedule::new();
    schedule.add_systems(bad);
    let err = schedule.build(&mut world).unwrap_err();
    let ScheduleError::Conflict(message) = &err else { panic!("{err:?}") };
    assert!(message.contains("bad") && message.contains("Pos"), "{message}");
    assert!(schedule.run(&mut world).is_err(), "and it never runs");

    fn also_bad(_a: ResMut<u32>, _b: Res<u32>) {}
    let mut schedule = Schedule::new();
    schedule.add_systems(also_bad);
    assert!(matches!(schedule.build(&mut world), Err(ScheduleError::Conflict(m)) if m.contains("u32")));

    // Disjoint by With/Without: fine.
    fn split(_a: Query<&mut Pos, With<Tag>>, _b: Query<&mut Pos, Without<Tag>>) {}
    let mut schedule = Schedule::new();
    schedule.add_systems(split);
    assert!(schedule.build(&mut world).is_ok());
}

#[test]
fn disjoint_queries_share_a_stage_and_ordering_is_respected() {
    let mut world = World::new();
    fn tagged(_q: Query<&mut Pos, With<Tag>>) {}
    fn untagged(_q: Query<&mut Pos, Without<Tag>>) {}
    fn first(_q: Query<&mut Vel>) {}
    fn last(_q: Query<&Vel>) {}
    let mut schedule = Schedule::new();
    schedule.add_systems((last.after(first), tagged, untagged, first));
    schedule.build(&mut world).unwrap();
    let stages = schedule.stage_names();
    let stage_of = |name: &str| stages.iter().position(|s| s.iter().any(|n| n.ends_with(name))).unwrap();
    assert_eq!(stage_of("::tagged"), stage_of("::untagged"));
    assert!(stage_of("::first") < stage_of("::last"));

    let mut cyclic = Schedule::new();
    cyclic.add_systems((first.after(last), last.after(first)));
    assert!(matches!(cyclic.build(&mut world), Err(ScheduleError::Cycle(_))));
    let mut unknown = Schedule::new();
    unknown.add_systems(first.before(last));
    assert!(matches!(unknown.build(&mut world), Err(ScheduleError::UnknownSystem { .. })));
}

/// What each observer saw, per run.
#[derive(Default)]
struct Seen(Mutex<Vec<(&'static str, Vec<u32>)>>);

#[derive(Component, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Id(u32);

#[test]
fn each_system_sees_exactly_the_changes_since_its_previous_run() {
    let mut world = World::new();
    let all: Vec<Entity> = (0..1000).map(|i| world.spawn((Id(i), Pos(0.0)))).collect();
    world.insert_resource(all);
    world.insert_resource(Seen::default());
    world.insert_resource(0u32); // frame counter

    // Writes one entity per frame (id = frame), and reports which changes
    // it saw itself (never its own). One query: reading `Changed<Pos>` in a
    // second query beside a `&mut Pos` one would be refused as a conflict.
    fn writer(mut q: Query<(&Id, &mut Pos), Changed<Pos>>, frame: Res<u32>, all: Res<Vec<Entity>>, seen: Res<Seen>) {
        let mut ids: Vec<u32> = q.iter_mut().map(|(id, _)| id.0).collect();
        ids.sort();
        seen.0.lock().unwrap().push(("writer", ids));
        if let Ok((_, mut p)) = q.get_mut(all[*frame as usize]) {
            p.0 += 1.0;
        }
    }
    // Writes entity 500 + frame.
    fn other(mut q: Query<(&Id, &mut Pos)>, frame: Res<u32>) {
        let target = 500 + *frame;
        q.for_each_mut(|(id, mut p)| {
            if id.0 == target {
                p.0 += 1.0;
            }
        });
    }
    fn observer(mut q: Query<&Id, Changed<Pos>>, seen: Res<Seen>) {
        let mut ids: Vec<u32> = q.iter().map(|id| id.0).collect();
        ids.sort();
        seen.0.lock().unwrap().push(("observer", ids));
    }
    fn sometimes(mut q: Query<&Id, Changed<Pos>>, seen: Res<Seen>) {
        let mut ids: Vec<u32> = q.iter().map(|id| id.0).collect();
        ids.sort();
        seen.0.lock().unwrap().push(("sometimes", ids));
    }
    let mut frame_schedule = Schedule::new();
    frame_schedule.add_systems((writer, other, observer).chain());
    let mut rare = Schedule::new();
    rare.add_systems(sometimes);

    for frame in 0..7u32 {
        *world.resource_mut::<u32>().unwrap() = frame;
        frame_schedule.run(&mut world).unwrap();
        if frame % 3 == 2 {
            rare.run(&mut world).unwrap();
        }
    }
    let log = std::mem::take(&mut *world.resource::<Seen>().unwrap().0.lock().unwrap());
    let of =
        |who: &str| -> Vec<Vec<u32>> { log.iter().filter(|(w, _)| *w == who).map(|(_, ids)| ids.clone()).collect() };
    let observer_log = of("observer");
    let writer_log = of("writer");
    let rare_log = of("sometimes");
    // First runs see every spawn; afterwards exactly the new writes.
    assert_eq!(observer_log[0].len(), 1000);
    assert_eq!(writer_log[0].len(), 1000);
    for f in 1..7u32 {
        assert_eq!(observer_log[f as usize], vec![f, 500 + f], "observer, frame {f}");
        // The writer sees `other`'s write of the previous frame and the
        // spawn-free world otherwise, never its own write.
        assert_eq!(writer_log[f as usize], vec![500 + f - 1], "writer, frame {f}");
    }
    assert_eq!(rare_log.len(), 2);
    assert_eq!(rare_log[0].len(), 1000);
    assert_eq!(rare_log[1], vec![3, 4, 5, 503, 504, 505], "everything since its last run, frames 3..=5");
}

#[derive(Default)]
struct Log(Mutex<Vec<String>>);

#[test]
fn commands_from_parallel_systems_apply_in_a_fixed_order() {
    fn left(mut commands: Commands<'_, '_>, mut q: Query<&mut Pos>) {
        q.for_each_mut(|_| {});
        for i in 0..50 {
            let e = commands.spawn((Id(i),));
            commands.add(move |world: &mut World| {
                world.resource::<Log>().unwrap().0.lock().unwrap().push(format!("left {i} {}", world.contains(e)));
                Ok(())
            });
        }
    }
    fn right(mut commands: Commands<'_, '_>, mut q: Query<&mut Vel>) {
        q.for_each_mut(|_| {});
        for i in 0..50 {
            commands.spawn((Id(1000 + i),));
            commands.add(move |world: &mut World| {
                world.resource::<Log>().unwrap().0.lock().unwrap().push(format!("right {i}"));
                Ok(())
            });
        }
    }
    let pool = pool();
    let mut first: Option<Vec<String>> = None;
    for _ in 0..10 {
        let mut world = World::new();
        world.insert_resource(Log::default());
        let mut schedule = Schedule::new();
        schedule.add_systems((left, right));
        pool.install(|| schedule.run(&mut world)).unwrap();
        assert_eq!(schedule.stage_names().len(), 1);
        assert_eq!(world.len(), 100);
        let log = std::mem::take(&mut *world.resource::<Log>().unwrap().0.lock().unwrap());
        assert_eq!(log[0], "left 0 true");
        assert_eq!(log[50], "right 0");
        let mut ids = world.query::<&Id>();
        assert_eq!(ids.iter(&world).count(), 100);
        match &first {
            None => first = Some(log),
            Some(f) => assert_eq!(f, &log),
        }
    }
}

#[test]
fn stale_commands_are_reported_and_resources_events_locals_work() {
    #[derive(Debug, PartialEq)]
    struct Hit(u32);
    fn shooter(mut hits: EventWriter<'_, Hit>, mut n: Local<u32>, mut score: ResMut<u64>) {
        *n += 1;
        hits.send(Hit(*n));
        *score += 1;
    }
    fn counter(mut hits: EventReader<'_, '_, Hit>, mut total: Local<u32>, seen: Res<Seen>) {
        let got: Vec<u32> = hits.read().map(|h| h.0).collect();
        *total += got.len() as u32;
        seen.0.lock().unwrap().push(("counter", got));
    }
    fn killer(mut commands: Commands<'_, '_>, q: Query<Entity, With<Tag>>) {
        let _ = q;
        commands.despawn(Entity::from_parts(0, 0));
    }
    let mut world = World::new();
    world.add_event::<Hit>();
    world.insert_resource(0u64);
    world.insert_resource(Seen::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((shooter, counter.after(shooter), killer));
    // `u64` missing would refuse to run; it is present here.
    schedule.run(&mut world).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(*world.resource::<u64>().unwrap(), 2);
    let log = std::mem::take(&mut *world.resource::<Seen>().unwrap().0.lock().unwrap());
    assert_eq!(log, vec![("counter", vec![1]), ("counter", vec![2])]);
    // Entity 0v0 never existed: the despawn is reported, not applied.
    assert_eq!(schedule.command_errors().len(), 1);
    assert!(schedule.command_errors()[0].system.ends_with("killer"));

    let mut needs = Schedule::new();
    fn needs_f32(_r: Res<f32>) {}
    needs.add_systems(needs_f32);
    // A missing resource skips the system (reported), not the run.
    needs.run(&mut world).unwrap();
    let skipped = needs.skipped_systems();
    assert!(matches!(skipped, [s] if matches!(&s.error, ScheduleError::Unavailable(m) if m.contains("f32"))));
}

#[test]
fn per_system_stats_report_time_and_chunk_skips() {
    let mut world = World::new();
    world.spawn_batch((0..5000).map(|i| (Pos(i as f32), Vel(0.0))));
    fn moved(mut q: Query<&Pos, Changed<Pos>>) {
        q.for_each(|_| {});
    }
    let mut schedule = Schedule::new();
    schedule.add_systems(moved);
    schedule.run(&mut world).unwrap();
    schedule.run(&mut world).unwrap();
    let stats: Vec<_> = schedule.system_stats().cloned().collect();
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0].runs, 2);
    let chunks = stats[0].chunks();
    assert!(chunks.chunks_total >= 5);
    assert_eq!(chunks.chunks_skipped, chunks.chunks_total, "nothing changed since the first run");
}

#[test]
fn a_system_runs_on_its_own_and_refuses_what_it_cannot_do() {
    use ecs_core::{IntoSystem, System};
    fn count(mut q: Query<&Pos>, mut n: ResMut<u32>) {
        *n += q.iter().count() as u32;
    }
    let mut world = World::new();
    world.spawn((Pos(1.0),));
    let mut system = count.into_system();
    let err = system.run(&mut world).unwrap_err();
    assert!(err.contains("u32"), "{err}");
    world.insert_resource(0u32);
    assert_eq!(system.run(&mut world), Ok(vec![]));
    assert_eq!(*world.resource::<u32>().unwrap(), 1);
    fn conflicted(_a: Query<&mut Pos>, _b: Query<&Pos>) {}
    assert!(conflicted.into_system().run(&mut world).is_err());
}

#[test]
fn writes_between_runs_and_commands_are_seen_by_every_system() {
    #[derive(Default)]
    struct SeenLast(Mutex<Vec<Vec<u32>>>);
    fn tagger(mut commands: Commands, mut q: Query<(Entity, &Id), Without<Tag>>, mut done: Local<bool>) {
        if !*done {
            q.for_each(|(e, id)| {
                if id.0 == 7 {
                    commands.insert(e, (Tag,));
                }
            });
            *done = true;
        }
    }
    type MovedOrTagged = Or<(Changed<Pos>, Added<Tag>)>;
    fn last(mut changed: Query<&Id, MovedOrTagged>, seen: Res<SeenLast>) {
        let mut ids: Vec<u32> = changed.iter().map(|i| i.0).collect();
        ids.sort();
        seen.0.lock().unwrap().push(ids);
    }
    let mut world = World::new();
    let es: Vec<Entity> = (0..20).map(|i| world.spawn((Id(i), Pos(0.0)))).collect();
    world.insert_resource(SeenLast::default());
    let mut schedule = Schedule::new();
    schedule.add_systems((tagger, last).chain());
    schedule.run(&mut world).unwrap(); // first run: everything; tagger's command applies after
    // A direct write between runs.
    world.get_mut::<Pos>(es[3]).unwrap().0 = 1.0;
    schedule.run(&mut world).unwrap();
    schedule.run(&mut world).unwrap();
    let log = std::mem::take(&mut *world.resource::<SeenLast>().unwrap().0.lock().unwrap());
    assert_eq!(log[0].len(), 20);
    assert_eq!(log[1], vec![3, 7], "the direct write and the command's insert");
    assert_eq!(log[2], Vec::<u32>::new());
}

/// Which threads ran the systems after the first.
#[derive(Default)]
struct Threads(Mutex<Vec<(&'static str, Option<usize>)>>);

#[test]
fn after_the_first_system_the_calling_thread_hands_everything_to_the_pool() {
    // A system on the thread that called `run` (outside the pool) whose own
    // parallel loop finds the pool busy would block that thread; so the
    // caller runs one ready system and the pool runs the rest.
    let threads = Arc::new(Threads::default());
    let (t1, t2, t3) = (threads.clone(), threads.clone(), threads.clone());
    let mut world = World::new();
    world.spawn_batch((0..100).map(|i| (Pos(i as f32), Vel(1.0))));
    let mut schedule = Schedule::new();
    let first = move |_q: Query<&Pos>| t1.0.lock().unwrap().push(("first", rayon::current_thread_index()));
    let after = move |mut q: Query<&mut Pos>| {
        q.par_for_each_mut(|mut p| p.0 += 1.0);
        t2.0.lock().unwrap().push(("after", rayon::current_thread_index()));
    };
    let other = move |_q: Query<&Vel>| t3.0.lock().unwrap().push(("other", rayon::current_thread_index()));
    schedule.add_systems((first, after).chain());
    schedule.add_systems(other);
    // Tiny systems: by default later runs would stay on the calling thread.
    schedule.set_executor(ecs_core::schedule::ExecutorKind::MultiThreaded);
    for _ in 0..20 {
        schedule.run(&mut world).unwrap();
    }
    let log = threads.0.lock().unwrap();
    assert_eq!(log.len(), 60);
    assert!(log.iter().filter(|(name, _)| *name == "after").all(|(_, thread)| thread.is_some()));
    // The first ready system ran on the calling thread, without a wake-up.
    assert!(log.iter().any(|(_, thread)| thread.is_none()));
    let mut q = world.query::<&Pos>();
    assert_eq!(q.iter(&world).map(|p| p.0).sum::<f32>(), (0..100).map(|i| i as f32 + 20.0).sum::<f32>());
}

#[test]
fn sequential_system_times_hold_their_own_run_and_conditions_only() {
    fn slow() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    fn quick(mut n: ResMut<u32>) {
        *n += 1;
    }
    fn slow_condition() -> bool {
        std::thread::sleep(std::time::Duration::from_millis(20));
        true
    }
    let mut world = World::new();
    world.insert_resource(0u32);
    let mut schedule = Schedule::new();
    schedule.set_executor(ecs_core::schedule::ExecutorKind::SingleThreaded);
    // `slow`, then `quick` (its time starts where `slow` ended), then
    // `quick` again behind a slow condition (charged to it).
    schedule.add_systems((slow, quick, quick.run_if(slow_condition)).chain());
    schedule.run(&mut world).unwrap();
    let times: Vec<_> = schedule.system_stats().map(|s| s.time).collect();
    let ms20 = std::time::Duration::from_millis(20);
    assert!(times[0] >= ms20, "{times:?}");
    assert!(times[1] < ms20, "{times:?}");
    assert!(times[2] >= ms20, "{times:?}");
    assert_eq!(*world.resource::<u32>().unwrap(), 2);
}

/// Resources for the conflict-order test: each system of it writes or reads
/// some of them and records, per resource, when it started and ended.
#[derive(Default)]
struct RunLog(std::sync::Mutex<Vec<(usize, u64, u64)>>);
struct R0;
struct R1;
struct R2;

#[test]
fn conflicting_systems_never_overlap_and_run_in_the_order_added_on_fewer_edges() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CLOCK: AtomicU64 = AtomicU64::new(0);
    // System `i` touches the resources of `i % 5`: 0 writes R0; 1 writes R1;
    // 2 writes R0 and R1; 3 reads R0; 4 writes R2.
    fn record(i: usize, log: &RunLog) {
        let start = CLOCK.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_micros(200));
        let end = CLOCK.fetch_add(1, Ordering::SeqCst);
        log.0.lock().unwrap().push((i, start, end));
    }
    fn make(i: usize) -> ecs_core::schedule::SystemConfigs {
        match i % 5 {
            0 => (move |_: ResMut<R0>, log: Res<RunLog>| record(i, &log)).into_configs(),
            1 => (move |_: ResMut<R1>, log: Res<RunLog>| record(i, &log)).into_configs(),
            2 => (move |_: ResMut<R0>, _: ResMut<R1>, log: Res<RunLog>| record(i, &log)).into_configs(),
            3 => (move |_: Res<R0>, log: Res<RunLog>| record(i, &log)).into_configs(),
            _ => (move |_: ResMut<R2>, log: Res<RunLog>| record(i, &log)).into_configs(),
        }
    }
    let conflict = |a: usize, b: usize| {
        let (a, b) = (a % 5, b % 5);
        let writes = |k: usize| match k {
            0 => vec![0],
            1 => vec![1],
            2 => vec![0, 1],
            3 => vec![],
            _ => vec![2],
        };
        let uses = |k: usize| if k == 3 { vec![0] } else { writes(k) };
        writes(a).iter().any(|r| uses(b).contains(r)) || writes(b).iter().any(|r| uses(a).contains(r))
    };
    let n = 40;
    let mut world = World::new();
    world.insert_resource(RunLog::default());
    world.insert_resource(R0);
    world.insert_resource(R1);
    world.insert_resource(R2);
    let mut schedule = Schedule::new();
    schedule.set_executor(ecs_core::schedule::ExecutorKind::MultiThreaded);
    for i in 0..n {
        schedule.add_systems(make(i));
    }
    schedule.run(&mut world).unwrap();
    let log = std::mem::take(&mut *world.resource::<RunLog>().unwrap().0.lock().unwrap());
    assert_eq!(log.len(), n);
    let mut at = vec![(0, 0); n];
    for &(i, start, end) in &log {
        at[i] = (start, end);
    }
    let mut pairs = 0;
    for a in 0..n {
        for b in a + 1..n {
            if conflict(a, b) {
                pairs += 1;
                // `a` was added first: it ended before `b` started.
                assert!(at[a].1 < at[b].0, "{a} and {b} conflict: {:?} {:?}", at[a], at[b]);
            }
        }
    }
    // Every conflicting pair is ordered, on far fewer edges than pairs.
    assert!(schedule.dependency_edges() < pairs / 4, "{} edges for {pairs} pairs", schedule.dependency_edges());
    assert_eq!(schedule.ambiguities().len(), pairs);
}

#[test]
fn systems_that_all_conflict_form_a_chain_of_edges() {
    let mut world = World::new();
    world.insert_resource(0u64);
    let mut schedule = Schedule::new();
    for i in 0..300u64 {
        schedule.add_systems(move |mut n: ResMut<u64>| *n = n.wrapping_mul(3).wrapping_add(i));
    }
    schedule.run(&mut world).unwrap();
    assert_eq!(schedule.dependency_edges(), 299);
    let expected = (0..300u64).fold(0u64, |n, i| n.wrapping_mul(3).wrapping_add(i));
    assert_eq!(*world.resource::<u64>().unwrap(), expected);
}

#[test]
fn event_and_removal_conditions_see_each_change_once() {
    use ecs_core::Events;
    use ecs_core::schedule::{any_component_removed, on_event};
    #[derive(Component)]
    struct Shield;
    struct Hit;
    #[derive(Default)]
    struct Counts {
        hits: u32,
        broken: u32,
    }
    let mut world = World::new();
    world.insert_resource(Events::<Hit>::default());
    world.insert_resource(Counts::default());
    let shielded = world.spawn((Shield,));
    let mut schedule = Schedule::new();
    schedule.add_systems(
        (
            // Sends a hit on the runs where `SendHit` is present.
            |send: Option<Res<SendHit>>, mut hits: EventWriter<Hit>| {
                if send.is_some() {
                    hits.send(Hit);
                }
            },
            (|mut c: ResMut<Counts>| c.hits += 1).run_if(on_event::<Hit>),
            (|mut c: ResMut<Counts>| c.broken += 1).run_if(any_component_removed::<Shield>),
        )
            .chain(),
    );
    struct SendHit;
    let counts = |world: &World| {
        let c = world.resource::<Counts>().unwrap();
        (c.hits, c.broken)
    };
    schedule.run(&mut world).unwrap();
    assert_eq!(counts(&world), (0, 0));
    // A hit sent earlier in the same run is seen by the later condition.
    world.insert_resource(SendHit);
    schedule.run(&mut world).unwrap();
    assert_eq!(counts(&world), (1, 0));
    world.remove_resource::<SendHit>();
    world.remove::<(Shield,)>(shielded).unwrap();
    schedule.run(&mut world).unwrap();
    assert_eq!(counts(&world), (1, 1));
    schedule.run(&mut world).unwrap();
    assert_eq!(counts(&world), (1, 1));
}
