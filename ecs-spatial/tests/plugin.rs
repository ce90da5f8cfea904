//! `BroadPhasePlugin` in an `App` driven by a manual clock: the resource is
//! inserted, the grid is brought up to date before every fixed step (or
//! once per frame in the schedule asked for), and plugins of different
//! position components live side by side.
#![cfg(feature = "ecs")]

use std::time::Duration;

use ecs_core::app::Schedules;
use ecs_core::prelude::*;
use ecs_spatial::{BroadPhase, BroadPhasePlugin, GridError, Position, SpatialPosition, SpatialSystems};
use glam::{Vec2, Vec3};

/// Moves 1 unit along x per fixed step.
#[derive(Component)]
struct Runner;

/// Per fixed step: where the grid had the runner, and how many rows the
/// latest update re-keyed.
#[derive(Default)]
struct Seen(Vec<(f32, u64)>);

fn run(mut runners: Query<&mut Position, With<Runner>>) {
    runners.for_each_mut(|mut p| p.0.x += 1.0);
}

fn look(grid: Res<BroadPhase<Position>>, runners: Query<Entity, With<Runner>>, mut seen: ResMut<Seen>) {
    let mut runners = runners;
    let runner = runners.iter().next().expect("one runner");
    let at =
        grid.grid().ids().iter().position(|&e| e == runner).and_then(|k| grid.grid().positions().get(k)).map(|p| p.x);
    seen.0.push((at.unwrap_or(f32::NAN), grid.stats().rows_rekeyed));
}

fn app(plugin: BroadPhasePlugin<Position>) -> App {
    let mut app = App::new();
    app.add_plugins(plugin)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(20)))
        .insert_resource(Time::<Fixed>::from_hz(100.0)) // two steps a frame
        .init_resource::<Seen>()
        .add_systems(Startup, |mut commands: Commands| {
            commands.spawn((Position(Vec3::ZERO), Runner));
            for i in 1..=1000 {
                commands.spawn((Position(Vec3::new(0.0, i as f32, 0.0)),));
            }
        })
        .add_systems(FixedUpdate, (look, run).chain());
    app
}

#[test]
fn the_grid_is_brought_up_to_date_before_every_fixed_step() {
    let mut app = app(BroadPhasePlugin::new(Vec3::ZERO, 4.0));
    app.run_frames(2);
    let seen = &app.world().resource::<Seen>().unwrap().0;
    // Each step sees the runner where the step before left it: the first
    // update indexes all 1001, each later one re-keys the runner only.
    assert_eq!(seen, &[(0.0, 1001), (1.0, 1), (2.0, 1), (3.0, 1)]);
    let grid = app.world().resource::<BroadPhase<Position>>().unwrap();
    assert_eq!(grid.grid().len(), 1001);
    let stats = grid.stats();
    assert!(stats.chunks_total > 1 && stats.chunks_visited() == 1, "{stats:?}");
}

#[test]
fn no_fixed_step_no_update() {
    let mut app = app(BroadPhasePlugin::new(Vec3::ZERO, 4.0));
    app.update();
    app.world_mut().resource_mut::<Time<Virtual>>().unwrap().pause();
    app.run_frames(3);
    assert_eq!(app.world().resource::<Seen>().unwrap().0.len(), 2);
    let fixed_pre = app.world().resource::<Schedules>().unwrap().get(FixedPreUpdate).unwrap();
    assert_eq!(fixed_pre.len(), 1);
}

#[test]
fn in_schedule_pre_update_runs_once_per_frame() {
    let plugin = BroadPhasePlugin::new(Vec3::ZERO, 4.0).in_schedule(PreUpdate);
    assert_eq!(plugin.schedule(), &PreUpdate.intern());
    let mut app = app(plugin);
    app.run_frames(2);
    // Frame 1: indexed at x = 0, two steps move it to 2 (the second step
    // reads the grid of the frame's start). Frame 2: re-keyed once at 2.
    let seen = &app.world().resource::<Seen>().unwrap().0;
    assert_eq!(seen, &[(0.0, 1001), (0.0, 1001), (2.0, 1), (2.0, 1)]);
}

/// A second, 2D position: its own broad phase beside the first.
#[derive(Component, Clone, Copy)]
struct Pos2(Vec2);

impl SpatialPosition for Pos2 {
    type Point = Vec2;
    fn grid_point(&self) -> Vec2 {
        self.0
    }
}

#[test]
fn plugins_of_two_components_compose_and_a_duplicate_is_ignored() {
    let mut app = App::new();
    app.add_plugins((
        BroadPhasePlugin::<Position>::new(Vec3::ZERO, 4.0),
        BroadPhasePlugin::<Pos2>::new(Vec2::ZERO, 1.0).with_rebuild_share(0.5),
        BroadPhasePlugin::<Position>::new(Vec3::ONE, 8.0), // ignored: the first wins
    ))
    .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(20)))
    .insert_resource(Time::<Fixed>::from_hz(50.0));
    let world = app.world_mut();
    world.spawn((Position(Vec3::ONE),));
    world.spawn((Pos2(Vec2::new(3.0, 4.0)),));
    world.spawn((Pos2(Vec2::new(-3.0, 4.0)),));
    app.update();
    let world = app.world();
    assert_eq!(world.resource::<BroadPhase<Position>>().unwrap().grid().len(), 1);
    assert_eq!(world.resource::<BroadPhase<Position>>().unwrap().grid().cell_size(), 4.0);
    assert_eq!(world.resource::<BroadPhase<Pos2>>().unwrap().grid().len(), 2);
    assert_eq!(world.resource::<BroadPhase<Pos2>>().unwrap().rebuild_share(), 0.5);
    assert_eq!(world.resource::<Schedules>().unwrap().get(FixedPreUpdate).unwrap().len(), 2);
    assert_eq!(app.plugin_names().len(), 2);
}

#[derive(Default)]
struct Order(Vec<&'static str>);

#[test]
fn systems_order_against_the_set_and_a_present_resource_is_kept() {
    let mut app = App::new();
    // A broad phase inserted by hand (another cell size) is kept.
    app.insert_resource(BroadPhase::<Position>::new(Vec3::ZERO, 2.0).unwrap())
        .add_plugins(BroadPhasePlugin::<Position>::new(Vec3::ZERO, 4.0).in_schedule(Update))
        .init_resource::<Order>()
        .add_systems(
            Update,
            (
                (|mut o: ResMut<Order>| o.0.push("after")).after(SpatialSystems::UpdateBroadPhase),
                (|mut o: ResMut<Order>, grid: Res<BroadPhase<Position>>| {
                    o.0.push(if grid.stats().entities == 0 { "before" } else { "late" })
                })
                .before(SpatialSystems::UpdateBroadPhase),
            ),
        );
    app.world_mut().spawn((Position(Vec3::ONE),));
    app.update();
    assert_eq!(app.world().resource::<Order>().unwrap().0, ["before", "after"]);
    assert_eq!(app.world().resource::<BroadPhase<Position>>().unwrap().grid().cell_size(), 2.0);
}

#[test]
fn a_bad_cell_size_is_an_error_or_a_panic_naming_the_component() {
    assert!(matches!(BroadPhasePlugin::<Position>::try_new(Vec3::ZERO, 0.0), Err(GridError::InvalidConfig)));
    assert!(BroadPhasePlugin::<Position>::try_new(Vec3::ZERO, f32::NAN).is_err());
    let panic = std::panic::catch_unwind(|| BroadPhasePlugin::<Position>::new(Vec3::ZERO, -1.0)).unwrap_err();
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("BroadPhasePlugin") && message.contains("Position"), "{message}");
}
