//! # ecs-transform: hierarchy propagation that skips unchanged chunks
//!
//! [`LocalTransform`] (translation, rotation, scale) is what game code
//! writes; [`GlobalTransform`] (an affine matrix) is what
//! [`propagate_transforms`] computes from it through the hierarchy of
//! [`ChildOf`] and [`Children`], parents before children. The system skips
//! every 16 KiB chunk of `ecs-core` whose locals did not change and whose
//! rows' parents did not move since it last ran, and writes a global only
//! when its value changes: a static scene costs a scan of chunk ticks, and
//! `Changed<GlobalTransform>` downstream lists exactly what moved. Below the
//! roots it walks a cached plan of every tree (rebuilt after the hierarchy
//! changed), only the trees in which something moved, in parallel.
//!
//! The hierarchy is edited only through [`WorldHierarchyExt`] and
//! [`CommandsHierarchyExt`], which keep both directions of every link in
//! step, refuse cycles and leave no `ChildOf` pointing at a despawned
//! entity.
//!
//! It is for games that keep scene graphs in the ECS. It is not a physics
//! engine, not a renderer, and has no notion of visibility or animation.
//!
//! ```
//! use ecs_core::{Changed, Entity, Schedule, World};
//! use ecs_transform::prelude::*;
//! use glam::Vec3;
//!
//! let mut world = World::new();
//! let ship = world.spawn(transform_bundle(LocalTransform::from_xyz(10.0, 0.0, 0.0)));
//! let turret = world.spawn(transform_bundle(LocalTransform::from_xyz(0.0, 1.0, 0.0)));
//! world.set_parent(turret, ship).unwrap();
//!
//! let mut schedule = Schedule::new();
//! add_transform_systems(&mut schedule);
//! schedule.run(&mut world).unwrap();
//! assert_eq!(world.get::<GlobalTransform>(turret).unwrap().translation(), Vec3::new(10.0, 1.0, 0.0));
//!
//! // Move the ship: the turret follows, and only these two globals change.
//! let mut moved = world.query_filtered::<Entity, Changed<GlobalTransform>>();
//! moved.iter(&world).count();
//! world.get_mut::<LocalTransform>(ship).unwrap().translation.x = 20.0;
//! schedule.run(&mut world).unwrap();
//! assert_eq!(world.get::<GlobalTransform>(turret).unwrap().translation(), Vec3::new(20.0, 1.0, 0.0));
//! assert_eq!(moved.iter(&world).count(), 2);
//! ```
//!
//! In an [`ecs_core::App`], add [`TransformPlugin`]: it installs the
//! hierarchy hooks and runs propagation in `PostUpdate` (see [`plugin`]).
//!
//! Modules: [`components`] (the four components), [`hierarchy`] (editing
//! the hierarchy), [`propagate`] (the system and how it skips), [`plugin`]
//! (the App plugin).
#![forbid(unsafe_code)]

pub mod components;
pub mod hierarchy;
pub mod plugin;
pub mod propagate;

pub use components::{ChildOf, Children, GlobalTransform, LocalTransform, transform_bundle};
pub use hierarchy::{
    CommandsHierarchyExt, DespawnMode, HIERARCHY_ERROR_SOURCE, HierarchyError, HierarchyErrors,
    HierarchyHooksInstalled, WorldHierarchyExt, init_hierarchy,
};
pub use plugin::{TransformPlugin, TransformSystems};
pub use propagate::{PropagationScratch, add_transform_systems, propagate_transforms};

/// The items most game code needs.
pub mod prelude {
    pub use crate::{
        ChildOf, Children, CommandsHierarchyExt, DespawnMode, GlobalTransform, LocalTransform, TransformPlugin,
        TransformSystems, WorldHierarchyExt, add_transform_systems, propagate_transforms, transform_bundle,
    };
}
