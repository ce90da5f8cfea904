//! The `transform` scenes on `bevy_transform` 0.20 (feature `peers`): the
//! systems of its `TransformPlugin` (`mark_dirty_trees`,
//! `propagate_parent_transforms`, `sync_simple_transforms`, chained, static
//! scene optimisations on) in a bevy [`Schedule`], parallel on bevy's
//! `ComputeTaskPool`.
//!
//! bevy uses glam 0.33 (through `bevy_math`), the workspace glam 0.30; values
//! cross over as arrays.

use bevy_ecs::hierarchy::ChildOf;
use bevy_ecs::prelude::{Entity, World};
use bevy_ecs::schedule::{IntoScheduleConfigs, MultiThreadedExecutor, Schedule};
use bevy_transform::StaticTransformOptimizations;
use bevy_transform::components::{GlobalTransform, Transform};
use bevy_transform::systems::{mark_dirty_trees, propagate_parent_transforms, sync_simple_transforms};
use glam::Affine3A;

use super::{Forest, TransformCase, TransformScene, mover_local, node_local};

fn transform((t, r, s): (glam::Vec3, glam::Quat, glam::Vec3)) -> Transform {
    Transform {
        translation: bevy_math::Vec3::from_array(t.to_array()),
        rotation: bevy_math::Quat::from_array(r.to_array()),
        scale: bevy_math::Vec3::from_array(s.to_array()),
    }
}

/// One `transform` case on bevy.
pub struct Propagation {
    world: World,
    schedule: Schedule,
    entities: Vec<Entity>,
    forest: Forest,
    frames: u64,
}

impl Propagation {
    /// Spawns the forest of `case` (children with `ChildOf`, which bevy's
    /// relationship hooks turn into `Children`) and builds the schedule.
    pub fn new(case: &TransformCase) -> Self {
        Self::from_forest(Forest::new(case))
    }

    /// The same for any forest (parents before children).
    pub fn from_forest(forest: Forest) -> Self {
        bevy_tasks::ComputeTaskPool::get_or_init(bevy_tasks::TaskPool::default);
        let mut world = World::new();
        world.insert_resource(StaticTransformOptimizations::default());
        let mut entities: Vec<Entity> = Vec::with_capacity(forest.len());
        for (i, parent) in forest.parents.iter().enumerate() {
            let bundle = (transform(node_local(i)), GlobalTransform::default());
            let e = match *parent {
                Some(p) => world.spawn((bundle, ChildOf(entities[p]))).id(),
                None => world.spawn(bundle).id(),
            };
            entities.push(e);
        }
        let mut schedule = Schedule::default();
        schedule.set_executor(MultiThreadedExecutor::new());
        schedule.add_systems((mark_dirty_trees, propagate_parent_transforms, sync_simple_transforms).chain());
        Self { world, schedule, entities, forest, frames: 0 }
    }
}

impl TransformScene for Propagation {
    fn move_roots(&mut self) {
        self.frames += 1;
        for &i in &self.forest.movers {
            if let Some(mut t) = self.world.get_mut::<Transform>(self.entities[i]) {
                *t = transform(mover_local(i, self.frames));
            }
        }
    }

    fn propagate(&mut self) {
        self.schedule.run(&mut self.world);
    }

    fn spawn_leaf(&mut self, parent: usize) {
        let bundle = (transform(node_local(self.forest.len())), GlobalTransform::default());
        self.world.spawn((bundle, ChildOf(self.entities[parent])));
    }

    fn despawn_node(&mut self, i: usize) {
        self.world.despawn(self.entities[i]);
    }

    fn frames(&self) -> u64 {
        self.frames
    }

    fn forest(&self) -> &Forest {
        &self.forest
    }

    fn global(&self, i: usize) -> Option<Affine3A> {
        let g = self.world.get::<GlobalTransform>(self.entities[i])?;
        Some(Affine3A::from_cols_array(&g.affine().to_cols_array()))
    }
}
