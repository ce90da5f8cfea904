//! The scenes on `bevy_ecs` 0.20 (feature `peers`).
//!
//! Queries use cached [`QueryState`]s, as ecs_bench_suite does. Parallel
//! iteration and the multi-threaded schedule executor run on bevy's
//! `ComputeTaskPool`, initialised on first use with one thread per core.

use bevy_ecs::prelude::{Entity, Query, World};
use bevy_ecs::query::{Changed, QueryState};
use bevy_ecs::schedule::{MultiThreadedExecutor, Schedule};
use glam::Vec3;

use super::{
    ADD_REMOVE_ENTITIES, AbcdeValues, FRAG_PER_ARCHETYPE, Frame, HEAVY_ENTITIES, SCHEDULE_GROUPS,
    SCHEDULE_PER_ARCHETYPE, SIMPLE_ENTITIES, SKIP_ENTITIES, ScheduleGroup, ScheduleScene, SkipCase, SkipScene,
    define_components, for_each_frag_tag, heavy_transform, heavy_work, simple_transform, skip_matrix, skip_position,
};

define_components!(#[derive(bevy_ecs::component::Component)]);

fn init_task_pool() {
    bevy_tasks::ComputeTaskPool::get_or_init(bevy_tasks::TaskPool::default);
}

fn simple_bundle() -> (Transform, Pos, Rot, Vel) {
    (Transform(simple_transform()), Pos(Vec3::X), Rot(Vec3::X), Vel(Vec3::X))
}

/// `simple_insert`: a new world, 10k entities spawned in a batch, then dropped.
pub fn simple_insert() {
    let mut world = World::new();
    world.spawn_batch((0..SIMPLE_ENTITIES).map(|_| simple_bundle()));
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
        // Internal iteration (`for_each`), bevy's fastest walk, as ours
        // uses `for_each_mut`.
        self.query.iter_mut(&mut self.world).for_each(|(vel, mut pos)| pos.0 += vel.0);
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
        self.query.iter_mut(&mut self.world).for_each(|mut data| data.0 *= 2.0);
    }
}

/// `heavy_compute`: 1k entities, parallel, invert a matrix 100 times each.
pub struct HeavyCompute {
    world: World,
    query: QueryState<(&'static mut Pos, &'static mut Transform)>,
}

impl HeavyCompute {
    /// Builds the world, the cached query and bevy's compute task pool.
    pub fn new() -> Self {
        init_task_pool();
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
        self.query.par_iter_mut(&mut self.world).for_each(|(mut pos, mut mat)| {
            heavy_work(&mut pos.0, &mut mat.0);
        });
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
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| A(0.0))).collect();
        Self { world, entities }
    }

    /// `add_remove_wide`: the entities also carry the `simple_insert` bundle.
    pub fn wide() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (simple_bundle(), A(0.0)))).collect();
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
            self.world.entity_mut(e).insert(B(0.0));
        }
        for &e in &self.entities {
            self.world.entity_mut(e).remove::<B>();
        }
    }
}

/// `spawn_despawn`: each of 10k `(Pos, Vel)` entities despawned and
/// replaced by a new one, one call at a time.
pub struct SpawnDespawn {
    world: World,
    entities: Vec<Entity>,
}

impl SpawnDespawn {
    /// Builds the world.
    pub fn new() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_ENTITIES).map(|_| (Pos(Vec3::X), Vel(Vec3::X)))).collect();
        Self { world, entities }
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
            self.world.despawn(*e);
            *e = self.world.spawn((Pos(Vec3::X), Vel(Vec3::Y))).id();
        }
    }
}

/// The chunk-skip scene: 100k `(Pos, Matrix)`, consumer over `Changed<Pos>`.
///
/// Ticks: [`SkipScene::write`] first calls `World::clear_trackers`, which makes
/// the world's `last_change_tick` the current tick and advances the tick; the
/// writer's `get_mut` then stamps the new tick, and the consumer's
/// `QueryState::iter_mut` sees exactly the changes in `(last_change_tick,
/// change_tick]`, i.e. this frame's writes. This is the same window a system
/// run once per frame would use.
pub struct Skip {
    world: World,
    movers: Vec<Entity>,
    query: QueryState<(&'static Pos, &'static mut Matrix), Changed<Pos>>,
    read: QueryState<&'static Pos, Changed<Pos>>,
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
        let entities: Vec<Entity> = world
            .spawn_batch((0..SKIP_ENTITIES).map(|i| (Pos(skip_position(i)), Matrix(skip_matrix(skip_position(i))))))
            .collect();
        let movers = movers.iter().map(|&i| entities[i]).collect();
        let query = world.query_filtered::<(&Pos, &mut Matrix), Changed<Pos>>();
        let read = world.query_filtered::<&Pos, Changed<Pos>>();
        Self { world, movers, query, read }
    }

    /// The consumer's reads alone (`probe_skip`): the rows whose `Pos`
    /// changed and the sum of their `Pos.x`, nothing written.
    pub fn read_changed(&mut self) -> (usize, f64) {
        let (mut rows, mut sum) = (0, 0.0);
        // Internal iteration, bevy's fastest walk of a query.
        self.read.iter(&self.world).for_each(|pos| {
            sum += f64::from(pos.0.x);
            rows += 1;
        });
        (rows, sum)
    }
}

impl SkipScene for Skip {
    fn movers(&self) -> usize {
        self.movers.len()
    }

    fn write(&mut self) {
        self.world.clear_trackers();
        for &e in &self.movers {
            if let Some(mut pos) = self.world.get_mut::<Pos>(e) {
                pos.0.x += 1.0;
            }
        }
    }

    fn consume(&mut self) -> usize {
        let mut rows = 0;
        // Internal iteration, as in `read_changed` and in ours: bevy's
        // `for` loop over the same query took up to twice as long when few
        // rows pass.
        self.query.iter_mut(&mut self.world).for_each(|(pos, mut matrix)| {
            matrix.0 = skip_matrix(pos.0);
            rows += 1;
        });
        rows
    }
}

/// `schedule` system: swaps `A` and `B`.
fn ab(mut query: Query<'_, '_, (&mut A, &mut B)>) {
    query.iter_mut().for_each(|(mut a, mut b)| std::mem::swap(&mut a.0, &mut b.0));
}

/// `schedule` system: swaps `C` and `D`.
fn cd(mut query: Query<'_, '_, (&mut C, &mut D)>) {
    query.iter_mut().for_each(|(mut c, mut d)| std::mem::swap(&mut c.0, &mut d.0));
}

/// `schedule` system: swaps `C` and `E`.
fn ce(mut query: Query<'_, '_, (&mut C, &mut E)>) {
    query.iter_mut().for_each(|(mut c, mut e)| std::mem::swap(&mut c.0, &mut e.0));
}

/// `schedule`: systems `ab`, `cd` and `ce` in one [`Schedule`] with bevy's
/// [`MultiThreadedExecutor`] (`ab` may run alongside `cd` or `ce`; `cd` and
/// `ce` both write `C` and run one after the other), on 4 x 10k entities.
pub struct ScheduleBench {
    world: World,
    schedule: Schedule,
    entities: Vec<Entity>,
    runs: u64,
}

impl ScheduleBench {
    /// Builds the world, the schedule and bevy's compute task pool.
    pub fn new() -> Self {
        init_task_pool();
        let mut world = World::new();
        let mut entities = Vec::with_capacity(super::SCHEDULE_ENTITIES);
        for (g, group) in SCHEDULE_GROUPS.into_iter().enumerate() {
            let values = (g * SCHEDULE_PER_ARCHETYPE..(g + 1) * SCHEDULE_PER_ARCHETYPE).map(|i| group.initial(i));
            match group {
                ScheduleGroup::Ab => entities.extend(world.spawn_batch(values.map(|v| (A(v.a), B(v.b))))),
                ScheduleGroup::Abc => {
                    entities.extend(world.spawn_batch(values.map(|v| (A(v.a), B(v.b), C(v.c.unwrap_or_default())))));
                }
                ScheduleGroup::Abcd => entities.extend(world.spawn_batch(
                    values.map(|v| (A(v.a), B(v.b), C(v.c.unwrap_or_default()), D(v.d.unwrap_or_default()))),
                )),
                ScheduleGroup::Abce => entities.extend(world.spawn_batch(
                    values.map(|v| (A(v.a), B(v.b), C(v.c.unwrap_or_default()), E(v.e.unwrap_or_default()))),
                )),
            }
        }
        let mut schedule = Schedule::default();
        schedule.set_executor(MultiThreadedExecutor::new());
        schedule.add_systems((ab, cd, ce));
        Self { world, schedule, entities, runs: 0 }
    }
}

impl Default for ScheduleBench {
    fn default() -> Self {
        Self::new()
    }
}

impl ScheduleScene for ScheduleBench {
    fn run(&mut self) {
        self.schedule.run(&mut self.world);
        self.runs += 1;
    }

    fn runs(&self) -> u64 {
        self.runs
    }

    fn values(&self, index: usize) -> Option<AbcdeValues> {
        let e = *self.entities.get(index)?;
        Some(AbcdeValues {
            a: self.world.get::<A>(e)?.0,
            b: self.world.get::<B>(e)?.0,
            c: self.world.get::<C>(e).map(|c| c.0),
            d: self.world.get::<D>(e).map(|d| d.0),
            e: self.world.get::<E>(e).map(|x| x.0),
        })
    }
}
