//! [`TransformPlugin`]: transform propagation in an [`App`] in one line.
//!
//! The plugin installs the hierarchy hooks ([`init_hierarchy`]) when it is
//! added, so `ChildOf` links spawned by `Startup` systems already keep their
//! parents' [`Children`](crate::Children) lists, and adds
//! [`propagate_transforms`] to [`PostUpdate`] in the set
//! [`TransformSystems::Propagate`]: game code that writes
//! [`LocalTransform`](crate::LocalTransform)s in `FixedUpdate` or `Update`
//! runs before it, and code that reads
//! [`GlobalTransform`](crate::GlobalTransform)s in the same frame orders
//! itself `.after(TransformSystems::Propagate)` in `PostUpdate` (or reads
//! them in `Last`).
//!
//! ```
//! use std::time::Duration;
//! use ecs_core::prelude::*;
//! use ecs_transform::prelude::*;
//! use glam::Vec3;
//!
//! #[derive(Component)]
//! struct Ship;
//! fn spawn(mut commands: Commands) {
//!     let hull = LocalTransform::from_xyz(1.0, 0.0, 0.0);
//!     let ship = commands.spawn((Ship, hull, GlobalTransform::from(hull)));
//!     let turret = LocalTransform::from_xyz(0.0, 2.0, 0.0);
//!     commands.spawn((turret, GlobalTransform::from(turret), ChildOf(ship)));
//! }
//! fn sail(mut ships: Query<&mut LocalTransform, With<Ship>>, time: Res<Time>) {
//!     ships.for_each_mut(|mut local| local.translation.x += 20.0 * time.delta_secs());
//! }
//!
//! let mut app = App::new();
//! app.add_plugins(TransformPlugin)
//!     .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(50)))
//!     .insert_resource(Time::<Fixed>::from_hz(20.0))
//!     .add_systems(Startup, spawn)
//!     .add_systems(FixedUpdate, sail)
//!     .run_frames(3); // 3 fixed steps of 0.05 s at 20 units/s: 3 units
//! let world = app.world_mut();
//! let (turret, parent) = world.query::<(Entity, &ChildOf)>().iter(world).next().map(|(e, c)| (e, c.0)).unwrap();
//! assert_eq!(world.children_of(parent), [turret]); // the hooks keep Children in step
//! let at = world.get::<GlobalTransform>(turret).unwrap().translation();
//! assert!((at - Vec3::new(4.0, 2.0, 0.0)).length() < 1e-4, "{at}");
//! ```

use ecs_core::app::{App, Plugin, PostUpdate};
use ecs_core::schedule::IntoSystemConfigs;
use ecs_core::schedule::SystemSet;

use crate::hierarchy::init_hierarchy;
use crate::propagate::propagate_transforms;

/// The transform crate's systems, to order game systems against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransformSystems {
    /// [`propagate_transforms`]: `GlobalTransform`s are up to date after
    /// it.
    Propagate,
}

impl SystemSet for TransformSystems {}

/// Adds transform propagation to an [`App`]: the hierarchy hooks, and
/// [`propagate_transforms`] in [`PostUpdate`] in
/// [`TransformSystems::Propagate`] (see the [module docs](self)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransformPlugin;

impl Plugin for TransformPlugin {
    fn build(&self, app: &mut App) {
        init_hierarchy(app.world_mut());
        app.add_systems(PostUpdate, propagate_transforms.in_set(TransformSystems::Propagate));
    }
}
