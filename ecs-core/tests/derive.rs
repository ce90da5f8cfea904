//! The derive macros: `#[derive(SystemParam)]` (delegation to the tuple of
//! the fields: access, conflicts, validation, commands, stats, nesting) and
//! `#[derive(Bundle)]` (nesting, spawn/spawn_batch/insert/remove, duplicates
//! across nesting, more than 12 components), and tuples nested in bundles.

use ecs_core::Component;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ecs_core::{
    Bundle, Changed, Commands, Entity, IntoSystem, Local, Query, Res, ResMut, Schedule, ScheduleError, StoreError,
    System, SystemParam, With, World,
};

#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Pos(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Vel(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Mass(f32);
#[derive(Component, Debug, Clone, Copy, PartialEq)]
struct Tag;
#[derive(Debug, Clone, Copy, PartialEq)]
struct Time(f32);
#[derive(Component, Debug, Default, Clone, Copy, PartialEq)]
struct Frames(u32);

// ----- #[derive(SystemParam)] -------------------------------------------------

#[derive(SystemParam)]
struct Movers<'w, 's> {
    query: Query<'w, 's, (&'static mut Pos, &'static Vel)>,
    time: Res<'w, Time>,
}

/// Nests a derived parameter beside commands and a local.
#[derive(SystemParam)]
struct Motion<'w, 's> {
    movers: Movers<'w, 's>,
    commands: Commands<'w, 's>,
    runs: Local<'s, u32>,
}

/// A tuple struct, and one that needs only the world lifetime.
#[derive(SystemParam)]
struct Clock<'w>(Res<'w, Time>, ResMut<'w, Frames>);

/// No fields at all.
#[derive(SystemParam)]
struct Nothing;

/// Generic over the component read.
#[derive(SystemParam)]
struct CountOf<'w, 's, T: Component> {
    query: Query<'w, 's, &'static T>,
}

fn run(world: &mut World, system: &mut impl System) -> Result<Vec<StoreError>, String> {
    system.run(world)
}

#[test]
fn a_derived_param_fetches_its_fields() {
    let mut world = World::new();
    world.insert_resource(Time(0.5));
    let a = world.spawn((Pos(0.0), Vel(2.0)));
    let b = world.spawn((Pos(1.0), Vel(4.0)));
    fn integrate(mut movers: Movers) {
        let dt = movers.time.0;
        movers.query.for_each_mut(|(mut p, v)| p.0 += v.0 * dt);
    }
    let mut schedule = Schedule::new();
    schedule.add_systems(integrate);
    schedule.run(&mut world).unwrap();
    assert_eq!(world.get::<Pos>(a), Ok(&Pos(1.0)));
    assert_eq!(world.get::<Pos>(b), Ok(&Pos(3.0)));
}

#[test]
fn a_derived_param_records_its_fields_access() {
    let mut world = World::new();
    world.insert_resource(Time(1.0));
    world.insert_resource(Frames(0));
    fn movers(_: Movers) {}
    fn clock(_: Clock) {}
    let mut a = movers.into_system();
    let mut b = clock.into_system();
    a.initialize(&mut world);
    b.initialize(&mut world);
    let access = &a.meta().access;
    assert_eq!(access.queries.len(), 1);
    assert_eq!(access.resource_reads.len(), 1);
    assert!(access.resource_writes.is_empty());
    let access = &b.meta().access;
    assert!(access.queries.is_empty());
    assert_eq!(access.resource_reads.len(), 1);
    assert_eq!(access.resource_writes.len(), 1);
    assert!(access.resource_writes[0].1.contains("Frames"));
}

#[test]
fn fields_that_conflict_refuse_the_system() {
    #[derive(SystemParam)]
    #[allow(dead_code, reason = "the value is never read: it gives the type its size or its destructor")]
    struct Twice<'w, 's> {
        read: Query<'w, 's, &'static Pos>,
        write: Query<'w, 's, &'static mut Pos>,
    }
    fn twice(_: Twice) {}
    let mut world = World::new();
    let err = run(&mut world, &mut twice.into_system()).unwrap_err();
    assert!(err.contains("conflict") && err.contains("Pos"), "{err}");

    #[derive(SystemParam)]
    #[allow(dead_code, reason = "the value is never read: it gives the type its size or its destructor")]
    struct TwoWriters<'w> {
        a: ResMut<'w, Time>,
        b: ResMut<'w, Time>,
    }
    fn two_writers(_: TwoWriters) {}
    world.insert_resource(Time(0.0));
    let err = run(&mut world, &mut two_writers.into_system()).unwrap_err();
    assert!(err.contains("Time"), "{err}");
}

#[test]
fn a_derived_param_conflicting_with_another_parameter_refuses_the_system() {
    let mut world = World::new();
    world.insert_resource(Time(0.0));
    // The derived param writes Pos; the plain query reads it.
    fn beside(_: Movers, _: Query<&Pos>) {}
    let err = run(&mut world, &mut beside.into_system()).unwrap_err();
    assert!(err.contains("conflict") && err.contains("Pos"), "{err}");
    // Disjoint through a filter the derived param does not have: still a
    // conflict (Movers matches every Pos), also when nested one level down.
    fn nested(_: Motion, _: Query<&mut Vel, With<Tag>>) {}
    let err = run(&mut world, &mut nested.into_system()).unwrap_err();
    assert!(err.contains("Vel"), "{err}");
    // The same through a schedule.
    let mut schedule = Schedule::new();
    schedule.add_systems(beside);
    assert!(matches!(schedule.build(&mut world), Err(ScheduleError::Conflict(m)) if m.contains("Pos")));
}

#[test]
fn systems_whose_derived_params_conflict_do_not_share_a_stage() {
    let mut world = World::new();
    world.insert_resource(Time(0.0));
    world.insert_resource(Frames(0));
    fn reads_pos(_: Query<&Pos>) {}
    fn moves(_: Movers) {}
    fn ticks(_: Clock) {}
    fn reads_frames(_: Res<Frames>) {}
    let mut a = moves.into_system();
    let mut b = reads_pos.into_system();
    let mut c = ticks.into_system();
    let mut d = reads_frames.into_system();
    for s in [&mut a as &mut dyn System, &mut b, &mut c, &mut d] {
        s.initialize(&mut world);
    }
    let components = world.components();
    assert!(a.meta().access.conflict_with(&b.meta().access, components).is_some());
    assert!(c.meta().access.conflict_with(&d.meta().access, components).is_some());
    assert!(a.meta().access.conflict_with(&d.meta().access, components).is_none());

    let mut schedule = Schedule::new();
    schedule.add_systems((moves, reads_pos, ticks, reads_frames));
    schedule.build(&mut world).unwrap();
    for stage in schedule.stage_names() {
        let has = |name: &str| stage.iter().any(|s| s.ends_with(name));
        assert!(!(has("moves") && has("reads_pos")), "{stage:?}");
        assert!(!(has("ticks") && has("reads_frames")), "{stage:?}");
    }
}

#[test]
fn a_missing_resource_of_a_derived_param_is_reported() {
    let mut world = World::new();
    fn movers(_: Movers) {}
    let err = run(&mut world, &mut movers.into_system()).unwrap_err();
    assert!(err.contains("Time") && err.contains("not in the world"), "{err}");
    // Nested one level down, and through a schedule.
    fn motion(_: Motion) {}
    let err = run(&mut world, &mut motion.into_system()).unwrap_err();
    assert!(err.contains("Time"), "{err}");
    // A schedule skips the system and names what it lacks.
    let mut schedule = Schedule::new();
    schedule.add_systems(motion);
    schedule.run(&mut world).unwrap();
    let skipped = schedule.skipped_systems();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].system.ends_with("motion") && skipped[0].error.to_string().contains("Time"));
    world.insert_resource(Time(1.0));
    schedule.run(&mut world).unwrap();
    assert!(schedule.skipped_systems().is_empty());
    // An optional resource inside a derived param is not required.
    #[derive(SystemParam)]
    struct Maybe<'w> {
        frames: Option<Res<'w, Frames>>,
    }
    fn maybe(m: Maybe) {
        assert!(m.frames.is_none());
    }
    run(&mut world, &mut maybe.into_system()).unwrap();
}

#[test]
fn nested_params_apply_commands_keep_locals_and_report_stats() {
    let mut world = World::new();
    world.insert_resource(Time(1.0));
    let e = world.spawn((Pos(0.0), Vel(1.0)));
    fn motion(mut m: Motion) {
        *m.runs += 1;
        let runs = *m.runs;
        m.movers.query.for_each_mut(|(mut p, v)| p.0 += v.0);
        m.commands.spawn((Mass(runs as f32),));
    }
    let mut schedule = Schedule::new();
    schedule.add_systems(motion);
    for _ in 0..3 {
        schedule.run(&mut world).unwrap();
    }
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(3.0)));
    let mut masses: Vec<f32> = world.query::<&Mass>().iter(&world).map(|m| m.0).collect();
    masses.sort_by(f32::total_cmp);
    assert_eq!(masses, [1.0, 2.0, 3.0], "commands applied and the local kept between runs");
    let stats = schedule.system_stats().next().unwrap();
    assert_eq!(stats.queries.len(), 1, "the nested query reports its chunk counts");
    assert_eq!(stats.runs, 3);
}

#[test]
fn tuple_unit_and_generic_params() {
    let mut world = World::new();
    world.insert_resource(Time(2.0));
    world.insert_resource(Frames(0));
    world.spawn((Tag,));
    world.spawn((Tag, Pos(0.0)));
    fn tick(mut clock: Clock, _: Nothing, mut tags: CountOf<Tag>, mut pos: CountOf<Pos>) {
        clock.1.0 += clock.0.0 as u32;
        assert_eq!(tags.query.iter().count(), 2);
        assert_eq!(pos.query.iter().count(), 1);
    }
    let mut system = tick.into_system();
    run(&mut world, &mut system).unwrap();
    run(&mut world, &mut system).unwrap();
    assert_eq!(world.resource::<Frames>(), Some(&Frames(4)));
}

#[test]
fn a_derived_param_with_more_fields_than_a_tuple_holds() {
    #[derive(SystemParam)]
    struct Many<'w, 's> {
        l0: Local<'s, u8>,
        l1: Local<'s, u16>,
        l2: Local<'s, u32>,
        l3: Local<'s, u64>,
        l4: Local<'s, i8>,
        l5: Local<'s, i16>,
        l6: Local<'s, i32>,
        l7: Local<'s, i64>,
        l8: Local<'s, usize>,
        l9: Local<'s, isize>,
        l10: Local<'s, bool>,
        pos: Query<'w, 's, &'static mut Pos>,
        vel: Query<'w, 's, &'static Vel>,
        time: Res<'w, Time>,
        frames: ResMut<'w, Frames>,
    }
    fn many(mut m: Many) {
        *m.l0 += 1;
        *m.l10 = !*m.l10;
        let dt = m.time.0;
        m.pos.for_each_mut(|mut p| p.0 += dt);
        m.frames.0 += u32::from(*m.l0) + m.vel.iter().count() as u32;
        let _ = (&m.l1, &m.l2, &m.l3, &m.l4, &m.l5, &m.l6, &m.l7, &m.l8, &m.l9);
    }
    let mut world = World::new();
    world.insert_resource(Time(1.0));
    world.insert_resource(Frames(0));
    let e = world.spawn((Pos(0.0), Vel(0.0)));
    let mut system = many.into_system();
    run(&mut world, &mut system).unwrap();
    run(&mut world, &mut system).unwrap();
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(2.0)));
    assert_eq!(world.resource::<Frames>(), Some(&Frames(1 + 1 + 2 + 1)));
    assert_eq!(system.meta().access.queries.len(), 2);
}

#[test]
fn a_derived_param_sees_changes_since_its_last_run() {
    #[derive(SystemParam)]
    struct Moved<'w, 's> {
        query: Query<'w, 's, Entity, Changed<Pos>>,
    }
    let mut world = World::new();
    let e = world.spawn((Pos(0.0),));
    world.spawn((Pos(0.0),));
    let seen = Arc::new(AtomicUsize::new(0));
    world.insert_resource(seen.clone());
    fn count(mut moved: Moved, seen: Res<Arc<AtomicUsize>>) {
        seen.store(moved.query.iter().count(), Ordering::SeqCst);
    }
    let mut system = count.into_system();
    run(&mut world, &mut system).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    world.get_mut::<Pos>(e).unwrap().0 = 1.0;
    run(&mut world, &mut system).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    run(&mut world, &mut system).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}

// ----- #[derive(Bundle)] ------------------------------------------------------

#[derive(Debug, PartialEq, Bundle)]
struct Body {
    pos: Pos,
    vel: Vel,
}

#[derive(Debug, PartialEq, Bundle)]
struct Ship {
    tag: Tag,
    #[bundle]
    body: Body,
    mass: Mass,
}

fn ship(x: f32) -> Ship {
    Ship { tag: Tag, body: Body { pos: Pos(x), vel: Vel(2.0 * x) }, mass: Mass(3.0 * x) }
}

#[test]
fn nested_bundles_spawn_flattened() {
    let mut world = World::new();
    let e = world.spawn(ship(1.0));
    assert_eq!(world.get::<Tag>(e), Ok(&Tag));
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(1.0)));
    assert_eq!(world.get::<Vel>(e), Ok(&Vel(2.0)));
    assert_eq!(world.get::<Mass>(e), Ok(&Mass(3.0)));
    // The same archetype as the flat tuple, whatever the order.
    let f = world.spawn((Mass(0.0), Vel(0.0), Pos(0.0), Tag));
    assert_eq!(world.location(e).unwrap().archetype, world.location(f).unwrap().archetype);
    world.check_consistency().unwrap();
}

#[test]
fn derived_bundles_spawn_in_batches_and_through_commands() {
    let mut world = World::new();
    let es = world.spawn_batch((0..1000).map(|i| ship(i as f32)));
    assert_eq!(es.len(), 1000);
    for (i, &e) in es.iter().enumerate() {
        assert_eq!(world.get::<Vel>(e), Ok(&Vel(2.0 * i as f32)));
        assert_eq!(world.get::<Mass>(e), Ok(&Mass(3.0 * i as f32)));
    }
    fn spawner(mut commands: Commands) {
        commands.spawn(ship(-1.0));
    }
    run(&mut world, &mut spawner.into_system()).unwrap();
    assert_eq!(world.query::<(&Tag, &Pos, &Vel, &Mass)>().iter(&world).count(), 1001);
    world.check_consistency().unwrap();
}

#[test]
fn derived_bundles_insert_and_remove() {
    let mut world = World::new();
    let e = world.spawn((Tag,));
    world.insert(e, Body { pos: Pos(1.0), vel: Vel(2.0) }).unwrap();
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(1.0)));
    // Inserting again replaces the values.
    world.insert(e, Body { pos: Pos(5.0), vel: Vel(6.0) }).unwrap();
    assert_eq!(world.get::<Vel>(e), Ok(&Vel(6.0)));
    let body: Body = world.remove(e).unwrap();
    assert_eq!(body, Body { pos: Pos(5.0), vel: Vel(6.0) });
    assert!(world.get::<Pos>(e).is_err() && world.get::<Vel>(e).is_err());
    assert_eq!(world.get::<Tag>(e), Ok(&Tag));
    // Removing what the entity lacks fails and changes nothing.
    assert!(matches!(world.remove::<Body>(e), Err(StoreError::MissingComponent { .. })));
    // A nested bundle comes back whole.
    world.insert(e, (Pos(7.0), Vel(8.0), Mass(9.0))).unwrap();
    let ship: Ship = world.remove(e).unwrap();
    assert_eq!(ship, Ship { tag: Tag, body: Body { pos: Pos(7.0), vel: Vel(8.0) }, mass: Mass(9.0) });
    assert!(world.get::<Tag>(e).is_err());
    world.check_consistency().unwrap();
}

#[test]
fn duplicates_across_nesting_are_refused() {
    #[derive(Bundle)]
    struct PosTwice {
        pos: Pos,
        #[bundle]
        body: Body,
    }
    #[derive(Bundle)]
    struct DeepTwice {
        #[bundle]
        ship: Ship,
        inner: (Mass,),
    }
    let mut world = World::new();
    let e = world.spawn((Tag,));
    let twice = || PosTwice { pos: Pos(0.0), body: Body { pos: Pos(1.0), vel: Vel(1.0) } };
    assert!(matches!(world.try_spawn(twice()), Err(StoreError::DuplicateComponent(n)) if n.contains("Pos")));
    assert!(matches!(world.try_spawn_batch([twice(), twice()]), Err(StoreError::DuplicateComponent(_))));
    assert!(matches!(world.insert(e, twice()), Err(StoreError::DuplicateComponent(_))));
    let deep = DeepTwice { ship: ship(1.0), inner: (Mass(2.0),) };
    assert!(matches!(world.try_spawn(deep), Err(StoreError::DuplicateComponent(n)) if n.contains("Mass")));
    world.insert(e, Body { pos: Pos(1.0), vel: Vel(1.0) }).unwrap();
    assert!(world.remove::<PosTwice>(e).is_err());
    assert_eq!(world.len(), 1);
    assert_eq!(world.get::<Pos>(e), Ok(&Pos(1.0)));
    world.check_consistency().unwrap();
}

macro_rules! wide {
    ($($name:ident),*) => {
        $(
            #[derive(Component, Debug, Clone, Copy, PartialEq)]
            struct $name(u32);
        )*
    };
}
wide!(C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17, C18, C19, C20, C21, C22, C23);

/// 24 components: two tuples of 12 as nested fields.
#[derive(Debug, PartialEq, Bundle)]
struct Wide {
    low: (C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11),
    high: (C12, C13, C14, C15, C16, C17, C18, C19, C20, C21, C22, C23),
}

fn wide(n: u32) -> Wide {
    Wide {
        low: (
            C0(n),
            C1(n + 1),
            C2(n + 2),
            C3(n + 3),
            C4(n + 4),
            C5(n + 5),
            C6(n + 6),
            C7(n + 7),
            C8(n + 8),
            C9(n + 9),
            C10(n + 10),
            C11(n + 11),
        ),
        high: (
            C12(n + 12),
            C13(n + 13),
            C14(n + 14),
            C15(n + 15),
            C16(n + 16),
            C17(n + 17),
            C18(n + 18),
            C19(n + 19),
            C20(n + 20),
            C21(n + 21),
            C22(n + 22),
            C23(n + 23),
        ),
    }
}

/// 25 components: a derived bundle nested in another beside a component.
#[derive(Bundle)]
struct Wider {
    #[bundle]
    wide: Wide,
    tag: Tag,
}

#[test]
fn more_than_twelve_components_through_nesting() {
    assert_eq!(<Wide as Bundle>::COMPONENT_COUNT, 24);
    assert_eq!(<Wider as Bundle>::COMPONENT_COUNT, 25);
    let mut world = World::new();
    let e = world.spawn(wide(100));
    assert_eq!(world.get::<C0>(e), Ok(&C0(100)));
    assert_eq!(world.get::<C11>(e), Ok(&C11(111)));
    assert_eq!(world.get::<C12>(e), Ok(&C12(112)));
    assert_eq!(world.get::<C23>(e), Ok(&C23(123)));
    let es = world.spawn_batch((0..500).map(|i| Wider { wide: wide(i), tag: Tag }));
    assert_eq!(world.get::<C17>(es[499]), Ok(&C17(499 + 17)));
    assert_eq!(world.query::<(&C5, &C19)>().iter(&world).count(), 501);
    // Remove all 24 from a 25-component entity, then put them back.
    let taken: Wide = world.remove(es[10]).unwrap();
    assert_eq!(taken, wide(10));
    assert_eq!(world.get::<Tag>(es[10]), Ok(&Tag));
    assert!(world.get::<C23>(es[10]).is_err());
    world.insert(es[10], taken).unwrap();
    assert_eq!(world.get::<C23>(es[10]), Ok(&C23(33)));
    // Insert onto an entity that has none of them.
    let f = world.spawn((Pos(0.0),));
    world.insert(f, wide(7)).unwrap();
    assert_eq!(world.get::<C21>(f), Ok(&C21(28)));
    world.check_consistency().unwrap();
}

/// Counts drops, to check each value is dropped once.
#[derive(Component)]
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[derive(Component)]
struct Counted2(
    #[allow(dead_code, reason = "the value is never read: it gives the type its size or its destructor")] Counted,
);

#[derive(Bundle)]
struct Owning {
    a: Counted,
    #[bundle]
    rest: (Counted2, Pos),
}

#[test]
fn nested_bundle_values_are_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let owning = || Owning { a: Counted(drops.clone()), rest: (Counted2(Counted(drops.clone())), Pos(0.0)) };
    let mut world = World::new();
    let e = world.spawn(owning());
    world.despawn(e).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    let e = world.spawn(owning());
    world.insert(e, owning()).unwrap(); // replaces both values
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    let taken: Owning = world.remove(e).unwrap();
    assert_eq!(drops.load(Ordering::SeqCst), 4);
    drop(taken);
    assert_eq!(drops.load(Ordering::SeqCst), 6);
    world.spawn_batch((0..10).map(|_| owning()));
    drop(world);
    assert_eq!(drops.load(Ordering::SeqCst), 26);
}

#[test]
fn tuple_unit_and_generic_bundles() {
    #[derive(Bundle)]
    struct Pair(Pos, #[bundle] (Vel, Mass));
    #[derive(Bundle)]
    struct Empty;
    #[derive(Bundle)]
    struct Tagged<T: Send + Sync + 'static> {
        value: T,
        tag: Tag,
        nothing: (),
    }
    assert_eq!(<Pair as Bundle>::COMPONENT_COUNT, 3);
    assert_eq!(<Empty as Bundle>::COMPONENT_COUNT, 0);
    #[derive(Component, Debug, PartialEq)]
    struct Num(u64);
    assert_eq!(<Tagged<Num> as Bundle>::COMPONENT_COUNT, 2);
    let mut world = World::new();
    let e = world.spawn(Pair(Pos(1.0), (Vel(2.0), Mass(3.0))));
    assert_eq!(world.get::<Mass>(e), Ok(&Mass(3.0)));
    let none = world.spawn(Empty);
    let unit = world.spawn(());
    assert_eq!(world.location(none).unwrap().archetype, world.location(unit).unwrap().archetype);
    let t = world.spawn(Tagged { value: Num(9), tag: Tag, nothing: () });
    assert_eq!(world.get::<Num>(t), Ok(&Num(9)));
    world.remove::<Empty>(t).unwrap();
    let back: Tagged<Num> = world.remove(t).unwrap();
    assert_eq!(back.value, Num(9));
    world.check_consistency().unwrap();
}

// ----- tuples nested in bundles ---------------------------------------------

#[test]
fn tuples_inside_bundle_tuples_are_flattened() {
    let mut world = World::new();
    let nested = world.spawn((Pos(0.0), (Vel(1.0), (Mass(2.0), ()))));
    let flat = world.spawn((Pos(0.0), Vel(1.0), Mass(2.0)));
    assert_eq!(world.location(nested).unwrap().archetype, world.location(flat).unwrap().archetype);
    assert_eq!(world.get::<Mass>(nested), Ok(&Mass(2.0)));

    let batch = world.spawn_batch([(Tag, (Frames(1),)), (Tag, (Frames(2),))]);
    assert_eq!(world.get::<Frames>(batch[1]), Ok(&Frames(2)));

    // Insert and remove flatten too, and removing gives the nested shape back.
    world.insert(nested, ((Tag,), (Frames(7),))).unwrap();
    assert_eq!(world.get::<Frames>(nested), Ok(&Frames(7)));
    let (tag, (frames,)): (Tag, (Frames,)) = world.remove(nested).unwrap();
    assert_eq!((tag, frames), (Tag, Frames(7)));
    assert_eq!(world.location(nested).unwrap().archetype, world.location(flat).unwrap().archetype);

    // A duplicate across nesting is refused as in a flat tuple.
    assert!(matches!(world.try_spawn((Pos(0.0), (Pos(1.0),))), Err(StoreError::DuplicateComponent(_))));
    assert_eq!(world.len(), 4);
    world.check_consistency().unwrap();
}

#[test]
fn a_derived_bundle_inside_a_tuple_is_flattened() {
    #[derive(Bundle)]
    struct Body2 {
        tag: Tag,
        frames: (Frames,),
    }
    let mut world = World::new();
    let e = world.spawn((Pos(1.0), Body2 { tag: Tag, frames: (Frames(4),) }));
    assert_eq!(world.get::<Frames>(e), Ok(&Frames(4)));
    let f = world.spawn((Pos(0.0), Tag, Frames(0)));
    assert_eq!(world.location(e).unwrap().archetype, world.location(f).unwrap().archetype);
    world.check_consistency().unwrap();
}

#[test]
fn a_tuple_field_of_a_derived_bundle_is_flattened() {
    #[derive(Bundle)]
    struct Outer {
        pos: Pos,
        rest: (Vel, (Mass, Tag)),
    }
    let mut world = World::new();
    let deep = world.spawn(Outer { pos: Pos(0.0), rest: (Vel(1.0), (Mass(2.0), Tag)) });
    assert_eq!(world.get::<Mass>(deep), Ok(&Mass(2.0)));

    #[derive(Bundle)]
    struct Layered {
        pos: Pos,
        rest: (Vel, Mass),
        #[bundle]
        more: Body2,
    }
    #[derive(Bundle)]
    struct Body2 {
        tag: Tag,
        frames: (Frames,),
    }
    let e = world.spawn(Layered {
        pos: Pos(1.0),
        rest: (Vel(2.0), Mass(3.0)),
        more: Body2 { tag: Tag, frames: (Frames(4),) },
    });
    assert_eq!(world.get::<Vel>(e), Ok(&Vel(2.0)));
    assert_eq!(world.get::<Mass>(e), Ok(&Mass(3.0)));
    assert_eq!(world.get::<Frames>(e), Ok(&Frames(4)));
    let f = world.spawn((Pos(0.0), Vel(0.0), Mass(0.0), Tag, Frames(0)));
    assert_eq!(world.location(e).unwrap().archetype, world.location(f).unwrap().archetype);
    world.check_consistency().unwrap();
}
