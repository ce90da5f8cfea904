//! Function systems: plain functions whose parameters (`Query`, `Res`,
//! `ResMut`, `Commands`, `Local`, `EventReader`, `EventWriter`, and tuples of
//! these) are fetched from the world before each run.
//!
//! ## The change rule
//! Before every run the world tick advances and the system runs at that
//! tick (`this_run`); its queries see stamps in `(last_run, this_run]`, where
//! `last_run` is the tick of its previous run. So a system sees exactly the
//! changes made since its previous run (by any system, in any order), and
//! never its own, which are stamped `this_run`.

use std::any::TypeId;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant};

use crate::access::Access;
use crate::command::{CommandQueue, Commands};
use crate::component::Components;
use crate::entity::Entity;
use crate::event::{EventReader, EventWriter, Events};
use crate::fetch::{QueryData, ReadOnlyQueryData};
use crate::filter::QueryFilter;
use crate::query::{ChunkStats, ChunkView, QueryError, QueryIter, QueryState};
use crate::tick::{AtomicTick, Tick, TickWindow};
use crate::world::World;

/// What one system touches: one access per query parameter (kept apart so
/// `With`/`Without` disjointness counts) and the resources it reads and
/// writes.
#[derive(Clone, Debug, Default)]
pub struct SystemAccess {
    /// One entry per query parameter.
    pub queries: Vec<Access>,
    /// Resources read, with their type names.
    pub resource_reads: Vec<(TypeId, &'static str)>,
    /// Resources written, with their type names.
    pub resource_writes: Vec<(TypeId, &'static str)>,
}

impl SystemAccess {
    /// The first conflict between two systems' accesses, described.
    pub fn conflict_with(&self, other: &SystemAccess, components: &Components) -> Option<String> {
        for a in &self.queries {
            for b in &other.queries {
                if let Some((id, kind)) = a.conflict_with(b) {
                    return Some(format!("component {} {}", components.info(id).name(), kind.describe()));
                }
            }
        }
        for (id, name) in &self.resource_writes {
            if other.resource_writes.iter().chain(&other.resource_reads).any(|(o, _)| o == id) {
                return Some(format!("resource {name} written by one and used by the other"));
            }
        }
        for (id, name) in &other.resource_writes {
            if self.resource_reads.iter().any(|(o, _)| o == id) {
                return Some(format!("resource {name} written by one and used by the other"));
            }
        }
        None
    }
}

/// A system's name, access and the first problem found while building it.
#[derive(Clone, Debug, Default)]
pub struct SystemMeta {
    /// The system's name (its function's path).
    pub name: String,
    /// What it touches.
    pub access: SystemAccess,
    /// A conflict among its own parameters, found when it was built.
    pub error: Option<String>,
}

impl SystemMeta {
    fn refuse(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
    }

    fn add_query(&mut self, access: Access, components: &Components, query: &str) {
        let clash = self.access.queries.iter().find_map(|earlier| earlier.conflict_with(&access));
        if let Some((id, kind)) = clash {
            let component = components.info(id).name();
            let message = format!(
                "system {} is refused: its parameter {query} and an earlier query parameter conflict: component {component} {}",
                self.name,
                kind.describe()
            );
            self.refuse(message);
        }
        self.access.queries.push(access);
    }

    fn add_resource(&mut self, id: TypeId, name: &'static str, write: bool) {
        let a = &self.access;
        let clash = a.resource_writes.iter().any(|(o, _)| *o == id)
            || (write && a.resource_reads.iter().any(|(o, _)| *o == id));
        if clash {
            let message = format!("system {} is refused: resource {name} is borrowed mutably and again", self.name);
            self.refuse(message);
        }
        if write {
            self.access.resource_writes.push((id, name));
        } else {
            self.access.resource_reads.push((id, name));
        }
    }
}

/// Per-system figures of the latest run.
#[derive(Clone, Debug, Default)]
pub struct SystemStats {
    /// The system's name.
    pub name: String,
    /// Wall time of the latest run.
    pub time: Duration,
    /// Chunk counts of each query parameter in the latest run.
    pub queries: Vec<ChunkStats>,
    /// Runs so far.
    pub runs: u64,
}

impl SystemStats {
    /// All query parameters' chunk counts added up.
    pub fn chunks(&self) -> ChunkStats {
        let mut total = ChunkStats::default();
        for q in &self.queries {
            total.add(*q);
        }
        total
    }
}

/// Something a system function can take as a parameter.
///
/// # Safety
/// `init_state` must record in `meta` every component and resource that
/// `get_param` reads or writes.
pub unsafe trait SystemParam: Sized {
    /// Kept between runs.
    type State: Send + Sync + 'static;
    /// What the function receives.
    type Item<'w, 's>: SystemParam<State = Self::State>;
    /// Builds the state and records access (conflicts go to `meta.error`).
    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State;
    /// Whether the parameter can be fetched from `world` now.
    fn validate(_state: &Self::State, _world: &World) -> Result<(), String> {
        Ok(())
    }
    /// Fetches the parameter for one run.
    ///
    /// # Safety
    /// For `'w` the caller holds the access `init_state` recorded.
    unsafe fn get_param<'w, 's>(state: &'s mut Self::State, world: &'w World, window: TickWindow)
    -> Self::Item<'w, 's>;
    /// Applies deferred work (commands) at a sync point; returns errors.
    fn apply(_state: &mut Self::State, _world: &mut World, _errors: &mut Vec<crate::StoreError>) {}
    /// Appends chunk counts of the latest run (queries only).
    fn report(_state: &Self::State, _stats: &mut Vec<ChunkStats>) {}
}

/// The item type of parameter `P`.
pub type SystemParamItem<'w, 's, P> = <P as SystemParam>::Item<'w, 's>;

// ----- Query ---------------------------------------------------------------

/// A query parameter: iterates the matching rows with the system's tick
/// window.
pub struct Query<'w, 's, Q: QueryData + 'static, F: QueryFilter + 'static = ()> {
    pub(crate) world: &'w World,
    pub(crate) state: &'s mut QueryState<Q, F>,
    pub(crate) window: TickWindow,
}

impl<'w, 's, Q: QueryData + 'static, F: QueryFilter + 'static> Query<'w, 's, Q, F> {
    /// The matching rows, read-only.
    pub fn iter(&mut self) -> QueryIter<'_, '_, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: the system holds the query's access for 'w.
        unsafe { self.state.iter_in(self.world, self.window) }
    }

    /// The matching rows; `&mut T` items mark their row on write.
    pub fn iter_mut(&mut self) -> QueryIter<'_, '_, Q, F> {
        // SAFETY: as above; `&mut self` keeps the items unique.
        unsafe { self.state.iter_in(self.world, self.window) }
    }

    /// Runs `f` on every matching row (read-only data).
    pub fn for_each(&mut self, f: impl FnMut(Q::Item<'_>))
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: as above.
        unsafe { self.state.for_each_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching row (the fast per-row path).
    pub fn for_each_mut(&mut self, f: impl FnMut(Q::Item<'_>)) {
        // SAFETY: as above.
        unsafe { self.state.for_each_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching row, chunks spread over rayon's threads.
    pub fn par_for_each_mut(&mut self, f: impl Fn(Q::Item<'_>) + Send + Sync) {
        // SAFETY: as above.
        unsafe { self.state.par_for_each_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching chunk.
    pub fn for_each_chunk_mut(&mut self, f: impl FnMut(ChunkView<'_, Q, F>)) {
        // SAFETY: as above.
        unsafe { self.state.for_each_chunk_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching chunk in parallel.
    pub fn par_for_each_chunk_mut(&mut self, f: impl Fn(ChunkView<'_, Q, F>) + Send + Sync) {
        // SAFETY: as above.
        unsafe { self.state.par_for_each_chunk_in(self.world, self.window, f) }
    }

    /// One entity's data (archetype-level filters only).
    pub fn get(&self, entity: Entity) -> Result<Q::Item<'_>, QueryError>
    where
        Q: ReadOnlyQueryData,
    {
        self.state.get(self.world, entity)
    }

    /// One entity's data, mutably.
    pub fn get_mut(&mut self, entity: Entity) -> Result<Q::Item<'_>, QueryError> {
        // SAFETY: the system holds the query's access; `&mut self` keeps the
        // item unique.
        unsafe { self.state.get_unchecked(self.world, entity, self.window.this_run()) }
    }

    /// Chunk counts of this run so far.
    pub fn stats(&self) -> ChunkStats {
        self.state.stats()
    }

    /// The system's tick window.
    pub fn window(&self) -> TickWindow {
        self.window
    }
}

// SAFETY: records the query's component access; fetches only through it.
unsafe impl<Q: QueryData + 'static, F: QueryFilter + 'static> SystemParam for Query<'_, '_, Q, F> {
    /// `None` when the query itself is refused; the system then never runs.
    type State = Option<QueryState<Q, F>>;
    type Item<'w, 's> = Query<'w, 's, Q, F>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
        let name = std::any::type_name::<Self>();
        match QueryState::<Q, F>::try_new(world) {
            Ok(state) => {
                meta.add_query(state.access().clone(), world.components(), name);
                Some(state)
            }
            Err(e) => {
                meta.refuse(format!("system {} is refused: {e}", meta.name));
                None
            }
        }
    }

    fn validate(state: &Self::State, _: &World) -> Result<(), String> {
        state.as_ref().map(drop).ok_or_else(|| "a query parameter was refused".to_string())
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut Self::State,
        world: &'w World,
        window: TickWindow,
    ) -> Query<'w, 's, Q, F> {
        let state = state.as_mut().expect("a system with a refused query never runs");
        state.update_archetypes(world);
        state.reset_stats();
        Query { world, state, window }
    }

    fn report(state: &Self::State, stats: &mut Vec<ChunkStats>) {
        if let Some(state) = state {
            stats.push(state.stats());
        }
    }
}

// ----- Resources -----------------------------------------------------------

/// Shared access to resource `T`.
pub struct Res<'w, T: Send + Sync + 'static> {
    value: &'w T,
    changed: Tick,
    window: TickWindow,
}

impl<T: Send + Sync + 'static> Res<'_, T> {
    /// Whether the resource was written since the system last ran.
    pub fn is_changed(&self) -> bool {
        self.window.contains(self.changed)
    }
}

impl<T: Send + Sync + 'static> Deref for Res<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

fn missing_resource<T>() -> String {
    format!("resource {} is not in the world", std::any::type_name::<T>())
}

// SAFETY: records a read of `T` and only reads it.
unsafe impl<T: Send + Sync + 'static> SystemParam for Res<'_, T> {
    type State = ();
    type Item<'w, 's> = Res<'w, T>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<T>(), std::any::type_name::<T>(), false);
    }
    fn validate(_: &(), world: &World) -> Result<(), String> {
        world.contains_resource::<T>().then_some(()).ok_or_else(missing_resource::<T>)
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, window: TickWindow) -> Self::Item<'w, 's> {
        let value = world.resource::<T>().unwrap_or_else(|| panic!("{}", missing_resource::<T>()));
        let changed = world.resource_ticks::<T>().map_or(Tick::default(), |(_, c)| c);
        Res { value, changed, window }
    }
}

/// Exclusive access to resource `T`; stamped changed when written through.
pub struct ResMut<'w, T: Send + Sync + 'static> {
    value: &'w mut T,
    changed: &'w AtomicTick,
    window: TickWindow,
}

impl<T: Send + Sync + 'static> Deref for ResMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T: Send + Sync + 'static> DerefMut for ResMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.changed.store(self.window.this_run());
        self.value
    }
}

// SAFETY: records a write of `T`; the scheduler never runs another user of
// `T` at the same time.
unsafe impl<T: Send + Sync + 'static> SystemParam for ResMut<'_, T> {
    type State = ();
    type Item<'w, 's> = ResMut<'w, T>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<T>(), std::any::type_name::<T>(), true);
    }
    fn validate(_: &(), world: &World) -> Result<(), String> {
        world.contains_resource::<T>().then_some(()).ok_or_else(missing_resource::<T>)
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, window: TickWindow) -> Self::Item<'w, 's> {
        // SAFETY: the recorded write access makes this the only user of `T`.
        let (value, changed) =
            unsafe { world.resource_unchecked_parts::<T>() }.unwrap_or_else(|| panic!("{}", missing_resource::<T>()));
        ResMut { value, changed, window }
    }
}

// ----- Commands, Local, events ----------------------------------------------

// SAFETY: touches no component or resource while the system runs; the
// queue is applied with exclusive access at a sync point.
unsafe impl SystemParam for Commands<'_, '_> {
    type State = CommandQueue;
    type Item<'w, 's> = Commands<'w, 's>;

    fn init_state(_: &mut World, _: &mut SystemMeta) -> CommandQueue {
        CommandQueue::default()
    }
    unsafe fn get_param<'w, 's>(state: &'s mut CommandQueue, world: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        state.commands(world)
    }
    fn apply(state: &mut CommandQueue, world: &mut World, errors: &mut Vec<crate::StoreError>) {
        errors.extend(state.apply(world));
    }
}

/// State private to one system, kept between its runs.
pub struct Local<'s, T: Default + Send + Sync + 'static>(&'s mut T);

impl<T: Default + Send + Sync + 'static> Deref for Local<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0
    }
}

impl<T: Default + Send + Sync + 'static> DerefMut for Local<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0
    }
}

// SAFETY: touches nothing in the world.
unsafe impl<T: Default + Send + Sync + 'static> SystemParam for Local<'_, T> {
    type State = T;
    type Item<'w, 's> = Local<'s, T>;

    fn init_state(_: &mut World, _: &mut SystemMeta) -> T {
        T::default()
    }
    unsafe fn get_param<'w, 's>(state: &'s mut T, _: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        Local(state)
    }
}

fn missing_events<E>() -> String {
    format!("events {} are not registered (call World::add_event)", std::any::type_name::<E>())
}

// SAFETY: records a read of the `Events<E>` resource and only reads it.
unsafe impl<E: Send + Sync + 'static> SystemParam for EventReader<'_, '_, E> {
    type State = u64;
    type Item<'w, 's> = EventReader<'w, 's, E>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) -> u64 {
        meta.add_resource(TypeId::of::<Events<E>>(), std::any::type_name::<Events<E>>(), false);
        0
    }
    fn validate(_: &u64, world: &World) -> Result<(), String> {
        world.contains_resource::<Events<E>>().then_some(()).ok_or_else(missing_events::<E>)
    }
    unsafe fn get_param<'w, 's>(state: &'s mut u64, world: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        let events = world.resource::<Events<E>>().unwrap_or_else(|| panic!("{}", missing_events::<E>()));
        EventReader { events, cursor: state }
    }
}

// SAFETY: records a write of the `Events<E>` resource.
unsafe impl<E: Send + Sync + 'static> SystemParam for EventWriter<'_, E> {
    type State = ();
    type Item<'w, 's> = EventWriter<'w, E>;

    fn init_state(_: &mut World, meta: &mut SystemMeta) {
        meta.add_resource(TypeId::of::<Events<E>>(), std::any::type_name::<Events<E>>(), true);
    }
    fn validate(_: &(), world: &World) -> Result<(), String> {
        world.contains_resource::<Events<E>>().then_some(()).ok_or_else(missing_events::<E>)
    }
    unsafe fn get_param<'w, 's>(_: &'s mut (), world: &'w World, _: TickWindow) -> Self::Item<'w, 's> {
        // SAFETY: the recorded write access makes this the only user.
        let events = unsafe { world.resource_unchecked_mut::<Events<E>>() }
            .unwrap_or_else(|| panic!("{}", missing_events::<E>()));
        EventWriter { events }
    }
}

macro_rules! tuple_param {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: each element records its own access.
        #[allow(clippy::unused_unit, non_snake_case)]
        unsafe impl<$($name: SystemParam),*> SystemParam for ($($name,)*) {
            type State = ($($name::State,)*);
            type Item<'w, 's> = ($($name::Item<'w, 's>,)*);

            fn init_state(_world: &mut World, _meta: &mut SystemMeta) -> Self::State {
                ($($name::init_state(_world, _meta),)*)
            }
            fn validate(_state: &Self::State, _world: &World) -> Result<(), String> {
                $( $name::validate(&_state.$idx, _world)?; )*
                Ok(())
            }
            unsafe fn get_param<'w, 's>(state: &'s mut Self::State, _world: &'w World, _window: TickWindow) -> Self::Item<'w, 's> {
                let ($($name,)*) = state;
                // SAFETY: forwarded contract; elements were checked against
                // each other when the system was built.
                ($( unsafe { $name::get_param($name, _world, _window) },)*)
            }
            fn apply(_state: &mut Self::State, _world: &mut World, _errors: &mut Vec<crate::StoreError>) {
                $( $name::apply(&mut _state.$idx, _world, _errors); )*
            }
            fn report(_state: &Self::State, _stats: &mut Vec<ChunkStats>) {
                $( $name::report(&_state.$idx, _stats); )*
            }
        }
    };
}

tuple_param!();
tuple_param!(A 0);
tuple_param!(A 0, B 1);
tuple_param!(A 0, B 1, C 2);
tuple_param!(A 0, B 1, C 2, D 3);
tuple_param!(A 0, B 1, C 2, D 3, E 4);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_param!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

// ----- Systems -------------------------------------------------------------

/// A runnable system.
pub trait System: Send + Sync + 'static {
    /// Builds parameter state and checks the parameters against each other.
    fn initialize(&mut self, world: &mut World);
    /// Name, access, and any problem found by `initialize`.
    fn meta(&self) -> &SystemMeta;
    /// Whether the system can run on `world` now (resources present).
    fn validate(&self, world: &World) -> Result<(), String>;
    /// Runs once at tick `this_run` (which the caller took from the world).
    ///
    /// # Safety
    /// The system was initialized on this world, and for the call nothing
    /// else uses what its access records.
    unsafe fn run_unsafe(&mut self, world: &World, this_run: u64);
    /// Runs once on its own with exclusive access: initializes if needed,
    /// refuses a system whose parameters conflict or cannot be fetched (the
    /// message says why), advances the world tick, runs, and applies its
    /// commands. Returns the commands that failed.
    fn run(&mut self, world: &mut World) -> Result<Vec<crate::StoreError>, String> {
        self.initialize(world);
        if let Some(error) = &self.meta().error {
            return Err(error.clone());
        }
        self.validate(world)?;
        let this_run = world.increment_change_tick();
        // SAFETY: `&mut World` is exclusive.
        unsafe { self.run_unsafe(world, this_run) };
        // Commands and later direct writes are stamped after this run.
        world.increment_change_tick();
        let mut errors = Vec::new();
        self.apply_deferred(world, &mut errors);
        Ok(errors)
    }
    /// Applies deferred commands; appends their errors.
    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<crate::StoreError>);
    /// Figures of the latest run.
    fn stats(&self) -> &SystemStats;
    /// The world tick of the latest run.
    fn last_run(&self) -> u64;
}

/// A function usable as a system: implemented for functions of up to 12
/// [`SystemParam`]s.
pub trait SystemParamFunction<Marker>: Send + Sync + 'static {
    /// The parameters, as a tuple.
    type Param: SystemParam;
    /// Calls the function.
    fn call(&mut self, param: SystemParamItem<'_, '_, Self::Param>);
}

macro_rules! impl_function {
    ($($param:ident),*) => {
        #[allow(non_snake_case, clippy::too_many_arguments)]
        impl<Func, $($param: SystemParam),*> SystemParamFunction<fn($($param,)*)> for Func
        where
            Func: Send + Sync + 'static,
            for<'a> &'a mut Func: FnMut($($param),*) + FnMut($(SystemParamItem<'_, '_, $param>),*),
        {
            type Param = ($($param,)*);
            #[inline]
            fn call(&mut self, param: SystemParamItem<'_, '_, ($($param,)*)>) {
                fn call_inner<$($param,)*>(mut f: impl FnMut($($param,)*), $($param: $param,)*) {
                    f($($param,)*)
                }
                let ($($param,)*) = param;
                call_inner(self, $($param),*)
            }
        }
    };
}

impl_function!();
impl_function!(A);
impl_function!(A, B);
impl_function!(A, B, C);
impl_function!(A, B, C, D);
impl_function!(A, B, C, D, E);
impl_function!(A, B, C, D, E, F);
impl_function!(A, B, C, D, E, F, G);
impl_function!(A, B, C, D, E, F, G, H);
impl_function!(A, B, C, D, E, F, G, H, I);
impl_function!(A, B, C, D, E, F, G, H, I, J);
impl_function!(A, B, C, D, E, F, G, H, I, J, K);
impl_function!(A, B, C, D, E, F, G, H, I, J, K, L);

/// A function turned into a [`System`].
pub struct FunctionSystem<Marker, F: SystemParamFunction<Marker>> {
    func: F,
    state: Option<<F::Param as SystemParam>::State>,
    /// The world the state was built for.
    world_id: Option<u64>,
    meta: SystemMeta,
    last_run: u64,
    stats: SystemStats,
    _marker: PhantomData<fn() -> Marker>,
}

impl<Marker: 'static, F: SystemParamFunction<Marker>> System for FunctionSystem<Marker, F> {
    fn initialize(&mut self, world: &mut World) {
        if self.state.is_none() {
            self.state = Some(F::Param::init_state(world, &mut self.meta));
            self.world_id = Some(world.id());
        }
    }

    fn meta(&self) -> &SystemMeta {
        &self.meta
    }

    fn validate(&self, world: &World) -> Result<(), String> {
        if let Some(id) = self.world_id
            && id != world.id()
        {
            return Err(format!(
                "system {} was initialized on world {id} and cannot run on world {}",
                self.meta.name,
                world.id()
            ));
        }
        match &self.state {
            Some(state) => F::Param::validate(state, world).map_err(|e| format!("system {}: {e}", self.meta.name)),
            None => Err(format!("system {} was not initialized", self.meta.name)),
        }
    }

    unsafe fn run_unsafe(&mut self, world: &World, this_run: u64) {
        assert_eq!(
            self.world_id,
            Some(world.id()),
            "system {} run on a world it was not initialized on",
            self.meta.name
        );
        let state = self.state.as_mut().expect("system initialized before it runs");
        let window = TickWindow::new(self.last_run, this_run);
        let start = Instant::now();
        // SAFETY: forwarded contract.
        let params = unsafe { F::Param::get_param(state, world, window) };
        self.func.call(params);
        self.stats.time = start.elapsed();
        self.stats.runs += 1;
        self.stats.queries.clear();
        F::Param::report(state, &mut self.stats.queries);
        self.last_run = this_run;
    }

    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<crate::StoreError>) {
        assert!(
            self.world_id.is_none_or(|id| id == world.id()),
            "system {}: commands recorded for one world applied to another",
            self.meta.name
        );
        if let Some(state) = self.state.as_mut() {
            F::Param::apply(state, world, errors);
        }
    }

    fn stats(&self) -> &SystemStats {
        &self.stats
    }

    fn last_run(&self) -> u64 {
        self.last_run
    }
}

/// Conversion into a [`System`]: implemented for system functions.
pub trait IntoSystem<Marker>: Sized {
    /// The system type.
    type System: System;
    /// Makes the system.
    fn into_system(self) -> Self::System;
}

impl<Marker: 'static, F: SystemParamFunction<Marker>> IntoSystem<Marker> for F {
    type System = FunctionSystem<Marker, F>;

    fn into_system(self) -> Self::System {
        let name = std::any::type_name::<F>().to_string();
        FunctionSystem {
            func: self,
            state: None,
            world_id: None,
            meta: SystemMeta { name: name.clone(), ..SystemMeta::default() },
            last_run: 0,
            stats: SystemStats { name, ..SystemStats::default() },
            _marker: PhantomData,
        }
    }
}
