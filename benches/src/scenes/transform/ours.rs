//! The `transform` scenes on `ecs-transform`: [`propagate_transforms`](ecs_transform::propagate_transforms) in a
//! one-system [`Schedule`], which reports the system's chunk counters.

use ecs_core::{Entity, Schedule, World};
use ecs_transform::{GlobalTransform, LocalTransform, WorldHierarchyExt, add_transform_systems, transform_bundle};
use glam::Affine3A;

use super::{Forest, TransformCase, TransformScene, mover_local, node_local};
use crate::scenes::ChunkCounts;

fn local((translation, rotation, scale): (glam::Vec3, glam::Quat, glam::Vec3)) -> LocalTransform {
    LocalTransform { translation, rotation, scale }
}

/// One `transform` case on our ECS.
pub struct Propagation {
    world: World,
    schedule: Schedule,
    entities: Vec<Entity>,
    forest: Forest,
    frames: u64,
}

impl Propagation {
    /// Spawns the forest of `case` (roots in one batch, children linked with
    /// `set_parent`) and builds the schedule.
    pub fn new(case: &TransformCase) -> Self {
        Self::from_forest(Forest::new(case))
    }

    /// The same for any forest (parents before children).
    pub fn from_forest(forest: Forest) -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..forest.len()).map(|i| transform_bundle(local(node_local(i)))));
        for (i, parent) in forest.parents.iter().enumerate() {
            if let Some(p) = *parent {
                world.set_parent(entities[i], entities[p]).expect("the forest has no cycles");
            }
        }
        let mut schedule = Schedule::new();
        add_transform_systems(&mut schedule);
        Self { world, schedule, entities, forest, frames: 0 }
    }
}

impl TransformScene for Propagation {
    fn move_roots(&mut self) {
        self.frames += 1;
        for &i in &self.forest.movers {
            if let Ok(mut l) = self.world.get_mut::<LocalTransform>(self.entities[i]) {
                *l = local(mover_local(i, self.frames));
            }
        }
    }

    fn propagate(&mut self) {
        if let Err(e) = self.schedule.run(&mut self.world) {
            panic!("transform schedule failed: {e}");
        }
    }

    fn spawn_leaf(&mut self, parent: usize) {
        let leaf = self.world.spawn(transform_bundle(local(node_local(self.forest.len()))));
        if let Err(e) = self.world.set_parent(leaf, self.entities[parent]) {
            panic!("a leaf under node {parent}: {e}");
        }
    }

    fn despawn_node(&mut self, i: usize) {
        // Already gone is fine: the probe picks each node once.
        let _ = self.world.despawn(self.entities[i]);
    }

    fn frames(&self) -> u64 {
        self.frames
    }

    fn forest(&self) -> &Forest {
        &self.forest
    }

    fn global(&self, i: usize) -> Option<Affine3A> {
        self.world.get::<GlobalTransform>(self.entities[i]).ok().map(|g| g.0)
    }

    fn chunk_counts(&self) -> Option<ChunkCounts> {
        let stats = self.schedule.system_stats().next()?.chunks();
        Some(ChunkCounts { total: stats.chunks_total, skipped: stats.chunks_skipped })
    }
}
