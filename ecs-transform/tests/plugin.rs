//! `TransformPlugin` in an `App` driven by a manual clock: the hooks are
//! there from the start, propagation runs in `PostUpdate`, once per frame,
//! after the fixed steps that moved things, and skips a still scene.

use std::time::Duration;

use ecs_core::app::Schedules;
use ecs_core::prelude::*;
use ecs_transform::prelude::*;
use glam::Vec3;

/// A root that moves 1 unit along x per second of fixed time.
#[derive(Component)]
struct Cart;

fn drive(mut carts: Query<&mut LocalTransform, With<Cart>>, time: Res<Time>) {
    carts.for_each_mut(|mut local| local.translation.x += time.delta_secs());
}

/// What `Update` saw of the child's global, frame by frame.
#[derive(Default)]
struct SeenInUpdate(Vec<f32>);
/// What `PostUpdate` saw after propagation, frame by frame.
#[derive(Default)]
struct SeenAfterPropagation(Vec<f32>);

#[derive(Component, Clone, Copy)]
struct Wheel;

fn app(frame_ms: u64) -> App {
    let mut app = App::new();
    app.add_plugins(TransformPlugin)
        .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(frame_ms)))
        .insert_resource(Time::<Fixed>::from_hz(100.0))
        .init_resource::<SeenInUpdate>()
        .init_resource::<SeenAfterPropagation>()
        .add_systems(Startup, |mut commands: Commands| {
            let cart = LocalTransform::IDENTITY;
            let parent = commands.spawn((Cart, cart, GlobalTransform::from(cart)));
            let wheel = LocalTransform::from_xyz(0.0, -1.0, 0.0);
            commands.spawn((Wheel, wheel, GlobalTransform::from(wheel), ChildOf(parent)));
        })
        .add_systems(FixedUpdate, drive)
        .add_systems(Update, |mut wheels: Query<&GlobalTransform, With<Wheel>>, mut seen: ResMut<SeenInUpdate>| {
            seen.0.extend(wheels.iter().map(|g| g.translation().x));
        })
        .add_systems(
            PostUpdate,
            (|mut wheels: Query<&GlobalTransform, With<Wheel>>, mut seen: ResMut<SeenAfterPropagation>| {
                seen.0.extend(wheels.iter().map(|g| g.translation().x));
            })
            .after(TransformSystems::Propagate),
        );
    app
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-4)
}

#[test]
fn globals_follow_the_fixed_steps_in_post_update() {
    // 20 ms frames at 100 Hz: two fixed steps a frame, 0.02 units a frame.
    let mut app = app(20);
    app.run_frames(3);
    let after = &app.world().resource::<SeenAfterPropagation>().unwrap().0;
    assert!(close(after, &[0.02, 0.04, 0.06]), "{after:?}");
    // Update runs before PostUpdate: it sees the previous frame's globals
    // (the first frame: the value the wheel was spawned with, x = 0).
    let before = &app.world().resource::<SeenInUpdate>().unwrap().0;
    assert!(close(before, &[0.0, 0.02, 0.04]), "{before:?}");
    let world = app.world_mut();
    let (wheel, parent) = world.query::<(Entity, &ChildOf)>().iter(world).map(|(e, c)| (e, c.0)).next().unwrap();
    // The hooks were installed by the plugin: the parent lists its child.
    assert_eq!(world.children_of(parent), [wheel]);
    let at = world.get::<GlobalTransform>(wheel).unwrap().translation();
    assert!((at - Vec3::new(0.06, -1.0, 0.0)).length() < 1e-4, "{at}");
}

#[test]
fn no_fixed_step_no_write_and_every_chunk_skipped() {
    let mut app = app(20);
    app.run_frames(2);
    // Pause game time: no fixed step runs, nothing moves.
    app.world_mut().resource_mut::<Time<Virtual>>().unwrap().pause();
    let mut moved = app.world_mut().query_filtered::<Entity, Changed<GlobalTransform>>();
    moved.iter(app.world()).count();
    app.update();
    assert_eq!(moved.iter(app.world()).count(), 0);
    let schedules = app.world().resource::<Schedules>().unwrap();
    let stats: Vec<_> = schedules.get(PostUpdate).unwrap().system_stats().collect();
    let propagation = stats.iter().find(|s| s.name.ends_with("propagate_transforms")).unwrap();
    let chunks = propagation.chunks();
    assert!(chunks.chunks_total > 0);
    assert_eq!(chunks.chunks_skipped, chunks.chunks_total);
}

#[test]
fn hooks_are_installed_when_the_plugin_is_added_and_it_is_added_once() {
    let mut app = App::new();
    app.add_plugins((TransformPlugin, TransformPlugin));
    // Before any frame ran: a ChildOf spawned straight into the world is
    // listed by its parent.
    let world = app.world_mut();
    let parent = world.spawn(transform_bundle(LocalTransform::IDENTITY));
    let child = world.spawn((LocalTransform::IDENTITY, GlobalTransform::IDENTITY, ChildOf(parent)));
    assert_eq!(world.children_of(parent), [child]);
    let schedules = app.world().resource::<Schedules>().unwrap();
    assert_eq!(schedules.get(PostUpdate).unwrap().len(), 1, "one propagation system");
    assert_eq!(app.plugin_names().len(), 1);
}

#[test]
fn refused_hierarchy_edits_reach_the_app_error_handler() {
    use std::sync::{Arc, Mutex};

    use ecs_core::app::ErrorReport;
    use ecs_transform::{HIERARCHY_ERROR_SOURCE, HierarchyError, HierarchyErrors};

    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mut app = App::new();
    let (a, b) = (app.world_mut().spawn(()), app.world_mut().spawn(()));
    app.add_plugins(TransformPlugin)
        .add_systems(Update, move |mut commands: Commands| {
            commands.set_parent(b, a);
            commands.set_parent(a, b); // a loop: refused
        })
        .set_error_handler(move |report: &ErrorReport| sink.lock().unwrap().push(report.clone()));
    app.update();
    let seen = seen.lock().unwrap();
    let expected = HierarchyError::Cycle { child: a, parent: b };
    assert_eq!(
        *seen,
        vec![ErrorReport::Other { source: HIERARCHY_ERROR_SOURCE.into(), message: expected.to_string() }]
    );
    // The resource keeps it as well.
    assert_eq!(app.world_mut().resource_mut::<HierarchyErrors>().unwrap().take(), vec![expected]);
}
