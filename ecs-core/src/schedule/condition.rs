//! Run conditions: read-only systems returning `bool` that decide whether a
//! system (or every system of a set) runs this time.
//!
//! A condition is a function of system parameters returning `bool`
//! (`Res`, `Option<Res>`, `Query` of shared data, `Local`, events read);
//! one that writes (a `ResMut`, a `&mut T` query) is refused when the
//! schedule is built. Attach conditions with `.run_if(condition)` on a
//! system, a group of systems (evaluated once for the group) or a set
//! (through [`Schedule::configure_sets`](crate::Schedule::configure_sets);
//! evaluated at most once per schedule run, when the first system of the
//! set is about to run). Combine them with [`Condition::and`],
//! [`Condition::or`] (both short-circuit) and [`not`].
//!
//! ## When they are evaluated
//! Right before the system would start, so they see what the systems
//! ordered before it wrote. Every condition of a system is evaluated, even
//! after one said no (so each keeps a regular change window). A condition
//! whose parameters cannot be fetched (a missing `Res<T>`) says no.
//!
//! ## Fallible conditions
//! A condition may return `Result<bool>` and use `?`. One that returns an
//! error says no to what it guards, whatever `not`, `and` or `or` around
//! it would make of the error, and the error is recorded as a failed
//! system's is: [`Schedule::failed_systems`](crate::Schedule::failed_systems)
//! lists it (named `run condition NAME`) until the next run, and an
//! [`App`](crate::App) hands it to its error handler.
//!
//! ```
//! use ecs_core::QuerySingleError;
//! use ecs_core::prelude::*;
//!
//! #[derive(Component)]
//! struct Player {
//!     alive: bool,
//! }
//! fn player_alive(players: Query<&Player>) -> Result<bool> {
//!     Ok(players.single()?.alive)
//! }
//! let mut world = World::new();
//! world.insert_resource(0u32);
//! let mut schedule = Schedule::new();
//! schedule.add_systems((|mut n: ResMut<u32>| *n += 1).run_if(not(player_alive)));
//! schedule.run(&mut world).unwrap(); // no player: an error, and a no
//! assert_eq!(world.resource::<u32>(), Some(&0));
//! let failed = &schedule.failed_systems()[0];
//! assert!(failed.system.starts_with("run condition ") && failed.system.ends_with("player_alive"));
//! assert!(failed.error.downcast_ref::<QuerySingleError>().is_some());
//!
//! world.spawn(Player { alive: false });
//! schedule.run(&mut world).unwrap();
//! assert_eq!(world.resource::<u32>(), Some(&1));
//! assert!(schedule.failed_systems().is_empty());
//! ```
//!
//! ## A skipped system keeps its window
//! A system whose condition says no does not run, and its last-run tick
//! stays where it was: the next time it runs, its `Changed`/`Added`
//! queries and [`RemovedComponents`] see
//! everything since its previous run, not since the skip.
//!
//! ```
//! use ecs_core::prelude::*;
//!
//! struct Paused;
//! #[derive(Default)]
//! struct Steps(u32);
//! fn step(mut steps: ResMut<Steps>) {
//!     steps.0 += 1;
//! }
//! let mut world = World::new();
//! world.insert_resource(Steps::default());
//! let mut schedule = Schedule::new();
//! schedule.add_systems(step.run_if(not(resource_exists::<Paused>)));
//! schedule.run(&mut world).unwrap();
//! world.insert_resource(Paused);
//! schedule.run(&mut world).unwrap();
//! assert_eq!(world.resource::<Steps>().unwrap().0, 1);
//! ```

use std::marker::PhantomData;

use crate::lifecycle::RemovedComponents;
use crate::query::filter::With;
use crate::storage::component::Component;
use crate::storage::tick::TickWindow;
use crate::system::{
    ConditionOutput, EventReader, Local, Query, Res, SystemAccess, SystemError, SystemMeta, SystemParam,
    SystemParamItem,
};
use crate::world::World;

/// A function usable as a run condition: implemented for functions of up
/// to 12 [`SystemParam`]s returning `bool` or `Result<bool, E>` (see
/// [`ConditionOutput`]).
pub trait ConditionFunction<Marker>: Send + Sync + 'static {
    /// The parameters, as a tuple.
    type Param: SystemParam;
    /// Calls the function.
    fn call(&mut self, param: SystemParamItem<'_, '_, Self::Param>) -> crate::Result<bool>;
}

macro_rules! impl_condition_function {
    ($($param:ident),*) => {
        #[allow(non_snake_case, clippy::too_many_arguments, reason = "the macro binds parameters to their type names and covers functions of up to 12 parameters")]
        impl<Out: ConditionOutput, Func, $($param: SystemParam),*> ConditionFunction<fn($($param,)*) -> Out> for Func
        where
            Func: Send + Sync + 'static,
            for<'a> &'a mut Func: FnMut($($param),*) -> Out + FnMut($(SystemParamItem<'_, '_, $param>),*) -> Out,
        {
            type Param = ($($param,)*);
            #[inline]
            fn call(&mut self, param: SystemParamItem<'_, '_, ($($param,)*)>) -> crate::Result<bool> {
                fn call_inner<Out, $($param,)*>(mut f: impl FnMut($($param,)*) -> Out, $($param: $param,)*) -> Out {
                    f($($param,)*)
                }
                let ($($param,)*) = param;
                call_inner(self, $($param),*).into_condition_result()
            }
        }
    };
}

impl_condition_function!();
impl_condition_function!(A);
impl_condition_function!(A, B);
impl_condition_function!(A, B, C);
impl_condition_function!(A, B, C, D);
impl_condition_function!(A, B, C, D, E);
impl_condition_function!(A, B, C, D, E, F);
impl_condition_function!(A, B, C, D, E, F, G);
impl_condition_function!(A, B, C, D, E, F, G, H);
impl_condition_function!(A, B, C, D, E, F, G, H, I);
impl_condition_function!(A, B, C, D, E, F, G, H, I, J);
impl_condition_function!(A, B, C, D, E, F, G, H, I, J, K);
impl_condition_function!(A, B, C, D, E, F, G, H, I, J, K, L);

/// A condition as the schedule holds it.
trait ConditionSystem: Send + Sync + 'static {
    fn initialize(&mut self, world: &mut World);
    fn name(&self) -> String;
    /// A problem found by `initialize` (a write, conflicting parameters).
    fn error(&self) -> Option<String>;
    /// Appends what the condition reads.
    fn access(&self, out: &mut SystemAccess);
    /// The answer, or `None` when a condition function returned an error
    /// (kept for [`ConditionSystem::take_errors`]).
    ///
    /// # Safety
    /// Initialized on this world; nothing writes what `access` records
    /// during the call.
    unsafe fn evaluate(&mut self, world: &World) -> Option<bool>;
    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<crate::StoreError>);
    /// Moves the errors returned since the last call (with the names of
    /// the conditions that returned them) into `out`.
    fn take_errors(&mut self, out: &mut Vec<(String, SystemError)>);
}

struct FunctionCondition<Marker, F: ConditionFunction<Marker>> {
    func: F,
    state: Option<<F::Param as SystemParam>::State>,
    world_id: Option<u64>,
    meta: SystemMeta,
    last_run: u64,
    /// The error of the latest evaluation, until taken.
    error: Option<SystemError>,
    _marker: PhantomData<fn() -> Marker>,
}

impl<Marker: 'static, F: ConditionFunction<Marker>> ConditionSystem for FunctionCondition<Marker, F> {
    fn initialize(&mut self, world: &mut World) {
        if self.state.is_some() {
            return;
        }
        self.state = Some(F::Param::init_state(world, &mut self.meta));
        self.world_id = Some(world.id());
        let access = &self.meta.access;
        let write = access.resource_writes.first().map(|(_, name)| format!("resource {name}")).or_else(|| {
            let id = access.queries.iter().find_map(|q| q.writes().first().copied())?;
            Some(format!("component {}", world.components().info(id).name()))
        });
        if let Some(what) = write {
            let message =
                format!("run condition {} is refused: conditions are read-only, it writes {what}", self.meta.name);
            self.meta.refuse(message);
        }
    }

    fn name(&self) -> String {
        self.meta.name.clone()
    }

    fn error(&self) -> Option<String> {
        self.meta.error.clone()
    }

    fn access(&self, out: &mut SystemAccess) {
        out.queries.extend(self.meta.access.queries.iter().cloned());
        out.resource_reads.extend(self.meta.access.resource_reads.iter().copied());
        out.resource_writes.extend(self.meta.access.resource_writes.iter().copied());
    }

    unsafe fn evaluate(&mut self, world: &World) -> Option<bool> {
        assert_eq!(
            self.world_id,
            Some(world.id()),
            "run condition {} evaluated on a world it was not initialized on",
            self.meta.name
        );
        let state = self.state.as_mut().expect("condition initialized before it is evaluated");
        if F::Param::validate(state, world).is_err() {
            return Some(false);
        }
        let this_run = world.increment_change_tick_shared();
        let window = TickWindow::new(self.last_run, this_run);
        // SAFETY: forwarded contract (the condition only reads, and nothing
        // writes what it reads meanwhile).
        let params = unsafe { F::Param::get_param(state, world, window) };
        let result = self.func.call(params);
        self.last_run = this_run;
        match result {
            Ok(pass) => Some(pass),
            Err(error) => {
                self.error = Some(error);
                None
            }
        }
    }

    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<crate::StoreError>) {
        if let Some(state) = self.state.as_mut() {
            F::Param::apply(state, world, errors);
        }
    }

    fn take_errors(&mut self, out: &mut Vec<(String, SystemError)>) {
        if let Some(error) = self.error.take() {
            out.push((self.meta.name.clone(), error));
        }
    }
}

/// How two conditions are combined.
#[derive(Clone, Copy)]
enum Combine {
    And,
    Or,
}

struct Combined {
    op: Combine,
    a: RunCondition,
    b: RunCondition,
}

impl ConditionSystem for Combined {
    fn initialize(&mut self, world: &mut World) {
        self.a.0.initialize(world);
        self.b.0.initialize(world);
    }
    fn name(&self) -> String {
        let op = match self.op {
            Combine::And => "and",
            Combine::Or => "or",
        };
        format!("({} {op} {})", self.a.0.name(), self.b.0.name())
    }
    fn error(&self) -> Option<String> {
        self.a.0.error().or_else(|| self.b.0.error())
    }
    fn access(&self, out: &mut SystemAccess) {
        self.a.0.access(out);
        self.b.0.access(out);
    }
    unsafe fn evaluate(&mut self, world: &World) -> Option<bool> {
        // SAFETY: forwarded contract; the parts' accesses are in ours.
        let a = unsafe { self.a.0.evaluate(world) }?;
        match (self.op, a) {
            (Combine::And, false) => Some(false),
            (Combine::Or, true) => Some(true),
            // SAFETY: as above.
            _ => unsafe { self.b.0.evaluate(world) },
        }
    }
    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<crate::StoreError>) {
        self.a.0.apply_deferred(world, errors);
        self.b.0.apply_deferred(world, errors);
    }
    fn take_errors(&mut self, out: &mut Vec<(String, SystemError)>) {
        self.a.0.take_errors(out);
        self.b.0.take_errors(out);
    }
}

struct Not(RunCondition);

impl ConditionSystem for Not {
    fn initialize(&mut self, world: &mut World) {
        self.0.0.initialize(world);
    }
    fn name(&self) -> String {
        format!("not({})", self.0.0.name())
    }
    fn error(&self) -> Option<String> {
        self.0.0.error()
    }
    fn access(&self, out: &mut SystemAccess) {
        self.0.0.access(out);
    }
    unsafe fn evaluate(&mut self, world: &World) -> Option<bool> {
        // SAFETY: forwarded contract.
        unsafe { self.0.0.evaluate(world) }.map(|pass| !pass)
    }
    fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<crate::StoreError>) {
        self.0.0.apply_deferred(world, errors);
    }
    fn take_errors(&mut self, out: &mut Vec<(String, SystemError)>) {
        self.0.0.take_errors(out);
    }
}

/// A run condition, ready to attach (what every [`Condition`] becomes).
pub struct RunCondition(Box<dyn ConditionSystem>);

impl std::fmt::Debug for RunCondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunCondition({})", self.0.name())
    }
}

impl RunCondition {
    /// The condition's name (its function's path; combinations spelled
    /// out).
    pub fn name(&self) -> String {
        self.0.name()
    }

    pub(crate) fn initialize(&mut self, world: &mut World) -> Result<(), String> {
        self.0.initialize(world);
        self.0.error().map_or(Ok(()), Err)
    }

    pub(crate) fn access(&self, out: &mut SystemAccess) {
        self.0.access(out);
    }

    /// Whether the condition passes; a condition function's error is a
    /// no (and is kept for [`RunCondition::take_errors`]).
    ///
    /// # Safety
    /// Initialized on this world; nothing writes what the condition reads
    /// during the call.
    pub(crate) unsafe fn evaluate(&mut self, world: &World) -> bool {
        // SAFETY: forwarded contract.
        unsafe { self.0.evaluate(world) }.unwrap_or(false)
    }

    pub(crate) fn apply_deferred(&mut self, world: &mut World, errors: &mut Vec<crate::StoreError>) {
        self.0.apply_deferred(world, errors);
    }

    /// Moves the errors its condition functions returned since the last
    /// call into `out`, as failed "systems" named `run condition NAME`.
    pub(crate) fn take_errors(&mut self, out: &mut Vec<crate::system::FailedSystem>) {
        let mut errors = Vec::new();
        self.0.take_errors(&mut errors);
        out.extend(errors.into_iter().map(|(name, error)| crate::system::FailedSystem {
            system: format!("{}{name}", crate::system::output::CONDITION_PREFIX),
            error,
        }));
    }
}

/// Marker of [`Condition`] for condition functions.
pub struct IsConditionFunction;

/// Something usable as a run condition: a function of read-only system
/// parameters returning `bool`, or a combination of conditions.
pub trait Condition<Marker>: Sized {
    /// The condition, ready to attach.
    fn into_run_condition(self) -> RunCondition;

    /// True when both are; `other` is evaluated only when `self` is true.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    /// struct Ready;
    /// struct Armed;
    /// fn fire(mut shots: ResMut<u32>) {
    ///     *shots += 1;
    /// }
    /// let mut world = World::new();
    /// world.insert_resource(0u32);
    /// world.insert_resource(Ready);
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(fire.run_if(resource_exists::<Ready>.and(resource_exists::<Armed>)));
    /// schedule.run(&mut world).unwrap();
    /// assert_eq!(world.resource::<u32>(), Some(&0));
    /// ```
    fn and<M, C: Condition<M>>(self, other: C) -> RunCondition {
        RunCondition(Box::new(Combined {
            op: Combine::And,
            a: self.into_run_condition(),
            b: other.into_run_condition(),
        }))
    }

    /// True when either is; `other` is evaluated only when `self` is false.
    fn or<M, C: Condition<M>>(self, other: C) -> RunCondition {
        RunCondition(Box::new(Combined {
            op: Combine::Or,
            a: self.into_run_condition(),
            b: other.into_run_condition(),
        }))
    }
}

impl Condition<RunCondition> for RunCondition {
    fn into_run_condition(self) -> RunCondition {
        self
    }
}

impl<M: 'static, F: ConditionFunction<M>> Condition<(IsConditionFunction, M)> for F {
    fn into_run_condition(self) -> RunCondition {
        let name = std::any::type_name::<F>().to_string();
        RunCondition(Box::new(FunctionCondition {
            func: self,
            state: None,
            world_id: None,
            meta: SystemMeta { name, ..SystemMeta::default() },
            last_run: 0,
            error: None,
            _marker: PhantomData,
        }))
    }
}

/// The negation of a condition.
///
/// ```
/// use ecs_core::prelude::*;
/// struct Paused;
/// let mut world = World::new();
/// world.insert_resource(0u32);
/// let mut schedule = Schedule::new();
/// schedule.add_systems((|mut n: ResMut<u32>| *n += 1).run_if(not(resource_exists::<Paused>)));
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource::<u32>(), Some(&1));
/// ```
pub fn not<M>(condition: impl Condition<M>) -> RunCondition {
    RunCondition(Box::new(Not(condition.into_run_condition())))
}

// ----- common conditions -----------------------------------------------------

/// True while resource `R` is in the world.
pub fn resource_exists<R: Send + Sync + 'static>(resource: Option<Res<R>>) -> bool {
    resource.is_some()
}

/// True when resource `R` was inserted or written since the condition last
/// ran (false while it is missing).
///
/// ```
/// use ecs_core::prelude::*;
/// struct Settings(u32);
/// #[derive(Default)]
/// struct Applied(u32);
/// fn apply(mut applied: ResMut<Applied>) {
///     applied.0 += 1;
/// }
/// let mut world = World::new();
/// world.insert_resource(Settings(1));
/// world.insert_resource(Applied::default());
/// let mut schedule = Schedule::new();
/// schedule.add_systems(apply.run_if(resource_changed::<Settings>));
/// schedule.run(&mut world).unwrap(); // inserted: runs
/// schedule.run(&mut world).unwrap(); // unchanged: skipped
/// world.resource_mut::<Settings>().unwrap().0 = 2;
/// schedule.run(&mut world).unwrap(); // written: runs
/// assert_eq!(world.resource::<Applied>().unwrap().0, 2);
/// ```
pub fn resource_changed<R: Send + Sync + 'static>(resource: Option<Res<R>>) -> bool {
    resource.is_some_and(|r| r.is_changed())
}

/// True when resource `R` was inserted since the condition last ran.
pub fn resource_added<R: Send + Sync + 'static>(resource: Option<Res<R>>) -> bool {
    resource.is_some_and(|r| crate::query::change::DetectChanges::is_added(&r))
}

/// True when resource `R` is present and equal to `value`.
pub fn resource_equals<R: PartialEq + Send + Sync + 'static>(value: R) -> impl FnMut(Option<Res<R>>) -> bool {
    move |resource: Option<Res<R>>| resource.is_some_and(|r| *r == value)
}

/// True while at least one entity has component `T` (disabled entities do
/// not count).
pub fn any_with_component<T: Component>(mut query: Query<(), With<T>>) -> bool {
    query.iter().next().is_some()
}

/// True when events of type `E` were sent since the condition last ran
/// (it reads them with a cursor of its own, so each event counts once; no
/// `Events<E>` resource is a no).
///
/// ```
/// use ecs_core::prelude::*;
/// struct Explosion;
/// let mut world = World::new();
/// world.insert_resource(Events::<Explosion>::default());
/// world.insert_resource(0u32);
/// let mut schedule = Schedule::new();
/// schedule.add_systems((|mut shakes: ResMut<u32>| *shakes += 1).run_if(on_event::<Explosion>));
/// schedule.run(&mut world).unwrap();
/// world.resource_mut::<Events<Explosion>>().unwrap().send(Explosion);
/// schedule.run(&mut world).unwrap();
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource::<u32>(), Some(&1));
/// ```
pub fn on_event<E: Send + Sync + 'static>(mut reader: EventReader<E>) -> bool {
    reader.read().next().is_some()
}

/// True when component `T` was removed from an entity (or an entity with
/// it was despawned) since the condition last ran (see
/// [`RemovedComponents`]).
pub fn any_component_removed<T: Component>(removed: RemovedComponents<T>) -> bool {
    !removed.is_empty()
}

/// True when resource `R` was present the last time the condition ran and
/// is not now.
///
/// ```
/// use ecs_core::prelude::*;
/// struct Level;
/// let mut world = World::new();
/// world.insert_resource(Level);
/// world.insert_resource(0u32);
/// let mut schedule = Schedule::new();
/// schedule.add_systems((|mut unloads: ResMut<u32>| *unloads += 1).run_if(resource_removed::<Level>));
/// schedule.run(&mut world).unwrap();
/// world.remove_resource::<Level>();
/// schedule.run(&mut world).unwrap();
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource::<u32>(), Some(&1));
/// ```
pub fn resource_removed<R: Send + Sync + 'static>(mut existed: Local<bool>, resource: Option<Res<R>>) -> bool {
    let exists = resource.is_some();
    std::mem::replace(&mut *existed, exists) && !exists
}

/// True the first time it is evaluated, false after.
pub fn run_once() -> impl FnMut() -> bool {
    let mut done = false;
    move || !std::mem::replace(&mut done, true)
}
