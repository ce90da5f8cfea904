//! The scenes on this workspace's `ecs-core`.
//!
//! Queries use cached [`QueryState`]s and the store's internal iteration
//! (`for_each_mut`, `par_for_each_mut`). The chunk-skip consumer reports the
//! store's chunk counters ([`QueryState::stats`]). The `schedule` scene uses
//! the store's function systems and [`Schedule`], which reports per-system
//! timings and chunk counters.

use ecs_core::{Changed, Entity, Query, QueryState, Schedule, ScheduleError, World};
use glam::Vec3;

use super::{
    ADD_REMOVE_ENTITIES, AbcdeValues, ChunkCounts, FRAG_PER_ARCHETYPE, Frame, HEAVY_ENTITIES, SCHEDULE_GROUPS,
    SCHEDULE_PER_ARCHETYPE, SIMPLE_ENTITIES, SKIP_ENTITIES, ScheduleGroup, ScheduleScene, SkipCase, SkipScene,
    SystemReport, define_components, for_each_frag_tag, heavy_transform, heavy_work, simple_transform, skip_matrix,
    skip_position,
};

define_components!(#[derive(ecs_core::Component)]);

fn counts(stats: ecs_core::ChunkStats) -> ChunkCounts {
    ChunkCounts { total: stats.chunks_total, skipped: stats.chunks_skipped }
}

fn simple_bundle() -> (Transform, Pos, Rot, Vel) {
    (Transform(simple_transform()), Pos(Vec3::X), Rot(Vec3::X), Vel(Vec3::X))
}

/// `simple_insert`: a new world, 10k entities spawned in a batch, then dropped.
pub fn simple_insert() {
    let mut world = World::new();
    let entities = world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
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

/// Registers an `on_add` and an `on_remove` hook (each a counter bump) on
/// every component of the suite's insert and add/remove scenes: the cost of
/// lifecycle hooks on the structural hot path.
fn hook_every_suite_component(world: &mut World) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    fn count(_: ecs_core::DeferredWorld<'_>, _: Entity) {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }
    world.register_component_hooks::<Transform>().on_add(count).on_remove(count);
    world.register_component_hooks::<Pos>().on_add(count).on_remove(count);
    world.register_component_hooks::<Rot>().on_add(count).on_remove(count);
    world.register_component_hooks::<Vel>().on_add(count).on_remove(count);
    world.register_component_hooks::<A>().on_add(count).on_remove(count);
    world.register_component_hooks::<B>().on_add(count).on_remove(count);
}

/// `simple_insert_hooks`: [`simple_insert`] with an `on_add` and an
/// `on_remove` hook on every component.
#[derive(Debug, Default)]
pub struct SimpleInsertHooked;

impl Frame for SimpleInsertHooked {
    fn frame(&mut self) {
        let mut world = World::new();
        hook_every_suite_component(&mut world);
        let entities = world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
        drop(entities);
        drop(world);
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
        world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
        let query = world.query::<(&Vel, &mut Pos)>();
        Self { world, query }
    }
}

impl SimpleIter {
    /// The frame's work with a `for` loop over the query (`probe_iter`),
    /// the form a user writes first.
    pub fn for_loop(&mut self) {
        for (vel, mut pos) in self.query.iter_mut(&mut self.world) {
            pos.0 += vel.0;
        }
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
                world.spawn_batch((0..FRAG_PER_ARCHETYPE).map(|_| (frag::$tag(0.0), Data(1.0))));
            };
        }
        for_each_frag_tag!(spawn_tag);
        let query = world.query::<&mut Data>();
        Self { world, query }
    }
}

impl FragIter {
    /// The frame's work with a `for` loop over the query (`probe_iter`),
    /// the form a user writes first.
    pub fn for_loop(&mut self) {
        for mut data in self.query.iter_mut(&mut self.world) {
            data.0 *= 2.0;
        }
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
        world.spawn_batch(
            (0..HEAVY_ENTITIES).map(|_| (Transform(heavy_transform()), Pos(Vec3::X), Rot(Vec3::X), Vel(Vec3::X))),
        );
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
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (A(0.0),)));
        Self { world, entities }
    }
}

impl AddRemove {
    /// `add_remove_wide`: the entities also carry the `simple_insert`
    /// bundle (a `Mat4` and three `Vec3`s), so every move copies five
    /// columns, as a game's entities with a transform and physics state do.
    pub fn wide() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (simple_bundle(), A(0.0))));
        Self { world, entities }
    }

    /// The same world with an `on_add` and an `on_remove` hook on every
    /// component (`add_remove_hooks`).
    pub fn hooked() -> Self {
        let mut world = World::new();
        hook_every_suite_component(&mut world);
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (A(0.0),)));
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

/// `spawn_despawn`: 10k live `(Pos, Vel)` entities (bullets); a frame
/// despawns each one and spawns a new one in its place, one call at a time
/// (not a batch), as a game's short-lived entities come and go.
pub struct SpawnDespawn {
    world: World,
    entities: Vec<Entity>,
}

impl SpawnDespawn {
    /// Builds the world.
    pub fn new() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (Pos(Vec3::X), Vel(Vec3::X))));
        Self { world, entities }
    }

    /// The live entities.
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }
}

impl Default for SpawnDespawn {
    fn default() -> Self {
        Self::new()
    }
}

impl Frame for SpawnDespawn {
    fn frame(&mut self) {
        for e in &mut self.entities {
            // Every handle is live: each frame replaces the ones it despawns.
            let _ = self.world.despawn(*e);
            *e = self.world.spawn((Pos(Vec3::X), Vel(Vec3::Y)));
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
    read: QueryState<(&'static Pos,), (Changed<Pos>,)>,
}

impl Skip {
    /// Builds the world for `case`.
    pub fn new(case: &SkipCase) -> Self {
        Self::with_movers(&case.mover_indices(SKIP_ENTITIES))
    }

    /// Builds the world with the movers at these spawn-order indices
    /// (below [`SKIP_ENTITIES`]).
    pub fn with_movers(movers: &[usize]) -> Self {
        let mut world = World::new();
        let entities = world
            .spawn_batch((0..SKIP_ENTITIES).map(|i| (Pos(skip_position(i)), Matrix(skip_matrix(skip_position(i))))));
        let movers = movers.iter().map(|&i| entities[i]).collect();
        let query = world.query_filtered::<(&Pos, &mut Matrix), (Changed<Pos>,)>();
        let read = world.query_filtered::<(&Pos,), (Changed<Pos>,)>();
        Self { world, movers, query, read }
    }

    /// The consumer's reads alone (`probe_skip`): the rows whose `Pos`
    /// changed and the sum of their `Pos.x`, nothing written.
    pub fn read_changed(&mut self) -> (usize, f64) {
        let (mut rows, mut sum) = (0, 0.0);
        self.read.for_each(&self.world, |(pos,)| {
            sum += f64::from(pos.0.x);
            rows += 1;
        });
        (rows, sum)
    }

    /// The consumer's filter alone (`probe_skip`): the rows whose `Pos`
    /// changed, counted.
    pub fn count_changed(&mut self) -> usize {
        let mut rows = 0;
        self.read.for_each(&self.world, |_| rows += 1);
        rows
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

/// Spawns the four `schedule` groups in order; returns the entities in spawn order.
fn spawn_schedule_world(world: &mut World) -> Vec<Entity> {
    let mut entities = Vec::with_capacity(super::SCHEDULE_ENTITIES);
    for (g, group) in SCHEDULE_GROUPS.into_iter().enumerate() {
        let values = (g * SCHEDULE_PER_ARCHETYPE..(g + 1) * SCHEDULE_PER_ARCHETYPE).map(|i| group.initial(i));
        let spawned = match group {
            ScheduleGroup::Ab => world.spawn_batch(values.map(|v| (A(v.a), B(v.b)))),
            ScheduleGroup::Abc => world.spawn_batch(values.map(|v| (A(v.a), B(v.b), C(v.c.unwrap_or_default())))),
            ScheduleGroup::Abcd => world
                .spawn_batch(values.map(|v| (A(v.a), B(v.b), C(v.c.unwrap_or_default()), D(v.d.unwrap_or_default())))),
            ScheduleGroup::Abce => world
                .spawn_batch(values.map(|v| (A(v.a), B(v.b), C(v.c.unwrap_or_default()), E(v.e.unwrap_or_default())))),
        };
        entities.extend(spawned);
    }
    entities
}

/// `schedule` system: swaps `A` and `B`.
fn ab(mut q: Query<'_, '_, (&mut A, &mut B)>) {
    q.for_each_mut(|(mut a, mut b)| std::mem::swap(&mut a.0, &mut b.0));
}

/// `schedule` system: swaps `C` and `D`.
fn cd(mut q: Query<'_, '_, (&mut C, &mut D)>) {
    q.for_each_mut(|(mut c, mut d)| std::mem::swap(&mut c.0, &mut d.0));
}

/// `schedule` system: swaps `C` and `E`.
fn ce(mut q: Query<'_, '_, (&mut C, &mut E)>) {
    q.for_each_mut(|(mut c, mut e)| std::mem::swap(&mut c.0, &mut e.0));
}

/// `schedule`: systems `ab`, `cd` and `ce` in one [`Schedule`] on 4 x 10k
/// entities. The schedule packs `ab` and `cd` into one stage (run in
/// parallel on rayon) and `ce`, which also writes `C`, into the next.
///
/// The schedule is built in [`ScheduleBench::new`]; a build or run error is
/// kept and reported by [`ScheduleScene::check`] (the first one wins).
pub struct ScheduleBench {
    world: World,
    schedule: Schedule,
    entities: Vec<Entity>,
    runs: u64,
    error: Option<ScheduleError>,
}

impl ScheduleBench {
    /// Builds the world and the schedule.
    pub fn new() -> Self {
        let mut world = World::new();
        let entities = spawn_schedule_world(&mut world);
        let mut schedule = Schedule::new();
        schedule.add_systems((ab, cd, ce));
        let error = schedule.build(&mut world).err();
        Self { world, schedule, entities, runs: 0, error }
    }

    /// The schedule's stages, as system names.
    pub fn stages(&self) -> Vec<Vec<String>> {
        self.schedule.stage_names()
    }
}

impl Default for ScheduleBench {
    fn default() -> Self {
        Self::new()
    }
}

impl ScheduleScene for ScheduleBench {
    fn run(&mut self) {
        match self.schedule.run(&mut self.world) {
            Ok(()) => self.runs += 1,
            Err(e) => {
                self.error.get_or_insert(e);
            }
        }
    }

    fn runs(&self) -> u64 {
        self.runs
    }

    fn failure(&self) -> Option<String> {
        self.error.as_ref().map(|e| format!("schedule error: {e}"))
    }

    fn values(&self, index: usize) -> Option<AbcdeValues> {
        let e = *self.entities.get(index)?;
        Some(AbcdeValues {
            a: self.world.get::<A>(e).ok()?.0,
            b: self.world.get::<B>(e).ok()?.0,
            c: self.world.get::<C>(e).ok().map(|c| c.0),
            d: self.world.get::<D>(e).ok().map(|d| d.0),
            e: self.world.get::<E>(e).ok().map(|x| x.0),
        })
    }

    fn systems(&self) -> Vec<SystemReport> {
        self.schedule
            .system_stats()
            .map(|s| SystemReport {
                name: short_name(&s.name).to_owned(),
                last_run_us: s.time.as_secs_f64() * 1e6,
                chunks: counts(s.chunks()),
            })
            .collect()
    }
}

/// The last path segment of a system's name (`ecs_bench::scenes::ours::ab` -> `ab`).
fn short_name(name: &str) -> &str {
    name.rsplit("::").next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_remove_wide_moves_five_columns_and_keeps_them() {
        let mut scene = AddRemove::wide();
        let e = scene.entities[17];
        assert_eq!(scene.world.get::<Transform>(e).map(|t| t.0), Ok(simple_transform()));
        scene.frame();
        scene.frame();
        assert_eq!(scene.world.get::<Transform>(e).map(|t| t.0), Ok(simple_transform()));
        assert_eq!(scene.world.get::<Vel>(e).map(|v| v.0), Ok(Vec3::X));
        assert!(scene.world.get::<B>(e).is_err());
        assert_eq!(scene.world.len() as usize, ADD_REMOVE_ENTITIES);
    }

    #[test]
    fn spawn_despawn_replaces_every_entity_each_frame() {
        let mut scene = SpawnDespawn::new();
        let before = scene.entities().to_vec();
        scene.frame();
        let after = scene.entities().to_vec();
        assert_eq!(scene.world.len() as usize, ADD_REMOVE_ENTITIES);
        assert!(before.iter().all(|&e| !scene.world.contains(e)));
        assert!(after.iter().all(|&e| scene.world.get::<Vel>(e).map(|v| v.0) == Ok(Vec3::Y)));
        scene.frame();
        assert!(after.iter().all(|&e| !scene.world.contains(e)));
        assert_eq!(scene.world.len() as usize, ADD_REMOVE_ENTITIES);
    }
}
