//! The scenes on this workspace's `ecs-core`.
//!
//! Queries use cached [`QueryState`]s and the store's internal iteration
//! (`for_each_mut`, `par_for_each_mut`). The chunk-skip consumer reports the
//! store's chunk counters ([`QueryState::stats`]).

use ecs_core::{Changed, Entity, QueryState, World};
use glam::Vec3;

use super::{
    ADD_REMOVE_ENTITIES, ChunkCounts, FRAG_PER_ARCHETYPE, Frame, HEAVY_ENTITIES, SIMPLE_ENTITIES, SKIP_ENTITIES,
    SkipCase, SkipScene, define_components, for_each_frag_tag, heavy_transform, heavy_work, simple_transform,
    skip_matrix, skip_position,
};

define_components!();

const SPAWN_FAILED: &str = "ecs-core failed to spawn a benchmark bundle";

fn counts(stats: ecs_core::ChunkStats) -> ChunkCounts {
    ChunkCounts { total: stats.chunks_total, skipped: stats.chunks_skipped }
}

fn simple_bundle() -> (Transform, Pos, Rot, Vel) {
    (Transform(simple_transform()), Pos(Vec3::X), Rot(Vec3::X), Vel(Vec3::X))
}

/// `simple_insert`: a new world, 10k entities spawned in a batch, then dropped.
pub fn simple_insert() {
    let mut world = World::new();
    let entities = world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle())).expect(SPAWN_FAILED);
    drop(entities);
    drop(world);
}

/// [`simple_insert`] as a [`Frame`].
#[derive(Debug, Default)]
pub struct SimpleInsert;

impl Frame for SimpleInsert {
    fn frame(&mut self) {
        simple_insert();
    }
}

/// `simple_iter`: 10k entities, `pos += vel`.
pub struct SimpleIter {
    world: World,
    query: QueryState<(&'static Vel, &'static mut Pos)>,
}

impl SimpleIter {
    /// Builds the world and the cached query.
    pub fn new() -> Self {
        let mut world = World::new();
        world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle())).expect(SPAWN_FAILED);
        let query = world.query::<(&Vel, &mut Pos)>();
        Self { world, query }
    }
}

impl Default for SimpleIter {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for SimpleIter {
    fn frame(&mut self) {
        self.query.for_each_mut(&mut self.world, |(vel, mut pos)| {
            pos.0 += vel.0;
        });
    }

    fn chunk_counts(&self) -> Option<ChunkCounts> {
        Some(counts(self.query.stats()))
    }
}

/// `frag_iter`: 26 archetypes x 20 entities, `data *= 2`.
pub struct FragIter {
    world: World,
    query: QueryState<&'static mut Data>,
}

impl FragIter {
    /// Builds the world and the cached query.
    pub fn new() -> Self {
        let mut world = World::new();
        macro_rules! spawn_tag {
            ($tag:ident) => {
                world.spawn_batch((0..FRAG_PER_ARCHETYPE).map(|_| (frag::$tag(0.0), Data(1.0)))).expect(SPAWN_FAILED);
            };
        }
        for_each_frag_tag!(spawn_tag);
        let query = world.query::<&mut Data>();
        Self { world, query }
    }
}

impl Default for FragIter {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for FragIter {
    fn frame(&mut self) {
        self.query.for_each_mut(&mut self.world, |mut data| {
            data.0 *= 2.0;
        });
    }

    fn chunk_counts(&self) -> Option<ChunkCounts> {
        Some(counts(self.query.stats()))
    }
}

/// `heavy_compute`: 1k entities, parallel (rayon), invert a matrix 100 times each.
pub struct HeavyCompute {
    world: World,
    query: QueryState<(&'static mut Pos, &'static mut Transform)>,
}

impl HeavyCompute {
    /// Builds the world and the cached query.
    pub fn new() -> Self {
        let mut world = World::new();
        world
            .spawn_batch(
                (0..HEAVY_ENTITIES).map(|_| (Transform(heavy_transform()), Pos(Vec3::X), Rot(Vec3::X), Vel(Vec3::X))),
            )
            .expect(SPAWN_FAILED);
        let query = world.query::<(&mut Pos, &mut Transform)>();
        Self { world, query }
    }
}

impl Default for HeavyCompute {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for HeavyCompute {
    fn frame(&mut self) {
        self.query.par_for_each_mut(&mut self.world, |(mut pos, mut mat)| {
            heavy_work(&mut pos.0, &mut mat.0);
        });
    }

    fn chunk_counts(&self) -> Option<ChunkCounts> {
        Some(counts(self.query.stats()))
    }
}

/// `add_remove`: 10k entities with `A`; insert `B` on all, then remove it from all.
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
}

impl AddRemove {
    /// Builds the world.
    pub fn new() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (A(0.0),))).expect(SPAWN_FAILED);
        Self { world, entities }
    }
}

impl Default for AddRemove {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for AddRemove {
    fn frame(&mut self) {
        for &e in &self.entities {
            // The entities were spawned above and are never despawned.
            let _ = self.world.insert(e, (B(0.0),));
        }
        for &e in &self.entities {
            let _ = self.world.remove::<(B,)>(e);
        }
    }
}

/// The chunk-skip scene: 100k `(Pos, Matrix)`, consumer over `Changed<Pos>`.
///
/// [`SkipScene::write`] writes the movers' `Pos` through `World::get_mut` and
/// then calls `World::increment_change_tick`, so the consumer's query window
/// `(last_run, this_run]` holds exactly this frame's writes.
pub struct Skip {
    world: World,
    movers: Vec<Entity>,
    query: QueryState<(&'static Pos, &'static mut Matrix), (Changed<Pos>,)>,
}

impl Skip {
    /// Builds the world for `case`.
    pub fn new(case: &SkipCase) -> Self {
        let mut world = World::new();
        let entities = world
            .spawn_batch((0..SKIP_ENTITIES).map(|i| (Pos(skip_position(i)), Matrix(skip_matrix(skip_position(i))))))
            .expect(SPAWN_FAILED);
        let movers = case.mover_indices(SKIP_ENTITIES).into_iter().map(|i| entities[i]).collect();
        let query = world.query_filtered::<(&Pos, &mut Matrix), (Changed<Pos>,)>();
        Self { world, movers, query }
    }
}

impl SkipScene for Skip {
    fn movers(&self) -> usize {
        self.movers.len()
    }

    fn write(&mut self) {
        for &e in &self.movers {
            if let Ok(mut pos) = self.world.get_mut::<Pos>(e) {
                pos.0.x += 1.0;
            }
        }
        self.world.increment_change_tick();
    }

    fn consume(&mut self) -> usize {
        let mut rows = 0;
        self.query.for_each_mut(&mut self.world, |(pos, mut matrix)| {
            matrix.0 = skip_matrix(pos.0);
            rows += 1;
        });
        rows
    }

    fn chunk_counts(&self) -> Option<ChunkCounts> {
        Some(counts(self.query.stats()))
    }
}
