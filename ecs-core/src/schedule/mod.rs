//! Schedules: systems with ordering constraints, run in parallel on rayon
//! wherever their accesses allow.
//!
//! ## Build
//! [`Schedule::build`] (run on first use) initializes every system and run
//! condition, refuses a system whose own parameters conflict (naming the
//! system and component) or a condition that writes, and orders systems by
//! their `before`/`after`/`chain` constraints and the ordering of the
//! [sets](set) they are in (a cycle is an error naming the systems and sets
//! on it). Two systems that conflict (component reads/writes, with
//! `With`/`Without` disjointness; resource reads/writes; an exclusive
//! system conflicts with every system) and are not ordered run in the
//! order they were added, so conflicting systems never overlap and always
//! run in the same order; [`Schedule::ambiguities`] lists those pairs. Such
//! a pair gets an edge of its own only when no path of edges orders it
//! already, so many systems that all conflict form a chain
//! ([`Schedule::dependency_edges`]). A run condition's reads count as its
//! system's (a set's as each of its systems').
//!
//! ## Run
//! Each run ages events (a schedule inside an [`App`](crate::App) leaves
//! that to the app, once per frame), checks every system can run (resources
//! present), then starts every system with no unfinished predecessor; a
//! finishing system starts the successors it was the last one holding back.
//! Right before a system would start, its [run conditions](condition) are
//! evaluated; if one says no, it is passed over. The world tick advances
//! before every system run. At the end of the run (the sync point) the tick
//! advances once more and the deferred commands of all systems are applied
//! in the order the systems were added, so the result does not depend on
//! which thread finished first, and every system sees the commands' effects
//! and any direct world writes made before the next run.
//!
//! Systems between two sync points whose latest runs added up to less than
//! [`ExecutorKind::AUTO_PARALLEL_MIN`] run in order on the calling thread
//! instead (waking other threads would cost more than they do); see
//! [`Schedule::set_executor`].
//!
//! An [exclusive system](crate::system::exclusive) (`fn(&mut World)`) is a
//! sync point of its own: the systems before it finish, their commands are
//! applied, it runs alone, then the systems after it start.
//!
//! ## Skipped systems
//! A system that cannot run (a `Res<T>`, `ResMut<T>` or event type it
//! requires is missing) is skipped; the others run as usual, systems ordered
//! after it included, and [`Schedule::run`] returns `Ok`. Each skip is
//! listed in [`Schedule::skipped_systems`] until the next run, with an error
//! naming the system and what it lacks. A skipped system keeps its last-run
//! tick, so when it runs again its `Changed`/`Added` windows cover
//! everything since its previous run, exactly as if it had not been
//! scheduled in between. Take `Option<Res<T>>` / `Option<ResMut<T>>` for a
//! system that should run without the resource. The same holds for a system
//! passed over by its run conditions (not listed as skipped).

pub mod condition;
mod config;
mod graph;
pub mod one_shot;
pub mod set;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use condition::{
    Condition, ConditionFunction, IsConditionFunction, RunCondition, any_component_removed, any_with_component, not,
    on_event, resource_added, resource_changed, resource_equals, resource_exists, resource_removed, run_once,
};
pub use config::{
    ConfigMarker, ConfigsMarker, IntoSystemConfig, IntoSystemConfigs, IntoSystemSetConfigs, SingleMarker, SystemConfig,
    SystemConfigs, SystemSetConfigs, TupleMarker,
};
pub use one_shot::{RunSystemError, SystemId};
pub use set::{InternedSystemSet, IntoSystemSet, IsSystemFunction, IsSystemSet, SystemSet};

use crate::error::StoreError;
use crate::system::{FailedSystem, SystemStats};
use crate::world::World;
use config::SetConfig;
use graph::Built;
use set::SetKey;

/// Why a schedule cannot be built or run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// A system's own parameters conflict (the message names the system
    /// and the component or resource).
    Conflict(String),
    /// Ordering constraints (or set memberships) form a cycle: the systems
    /// and sets on it, in order (the last is ordered before the first).
    Cycle(Vec<String>),
    /// A `before`/`after` names a system that is not in the schedule.
    UnknownSystem {
        /// The constrained system.
        system: String,
        /// The missing one.
        target: &'static str,
    },
    /// A system cannot run now (a resource or event type is missing; the
    /// message names the system and what it lacks). [`Schedule::run`] skips
    /// such a system and reports this in [`Schedule::skipped_systems`].
    Unavailable(String),
    /// The schedule was built for another world.
    WrongWorld,
    /// No schedule has this label (it was never added, or it is running:
    /// a schedule cannot run itself).
    NotFound(String),
}

impl std::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScheduleError::Conflict(m) | ScheduleError::Unavailable(m) => f.write_str(m),
            ScheduleError::Cycle(names) => {
                let first = names.first().map_or("", String::as_str);
                write!(f, "ordering constraints form a cycle: {} -> {first}", names.join(" -> "))
            }
            ScheduleError::UnknownSystem { system, target } => {
                write!(f, "system {system} is ordered against {target}, which is not in the schedule")
            }
            ScheduleError::WrongWorld => f.write_str("the schedule was built for another world"),
            ScheduleError::NotFound(label) => {
                write!(f, "no schedule {label} (never added, or running: a schedule cannot run itself)")
            }
        }
    }
}

impl std::error::Error for ScheduleError {}

/// A command that failed when applied, with the system that recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandError {
    /// The recording system.
    pub system: String,
    /// What went wrong (nothing was changed).
    pub error: StoreError,
}

/// A system that [`Schedule::run`] skipped because it could not run.
///
/// ```
/// use ecs_core::prelude::*;
///
/// struct Gravity(f32);
/// #[derive(Component)]
/// struct Pos(f32);
/// fn fall(mut q: Query<&mut Pos>, g: Res<Gravity>) {
///     q.for_each_mut(|mut p| p.0 -= g.0);
/// }
/// fn count(mut q: Query<&Pos>, mut n: Local<usize>) {
///     *n = q.iter().count();
/// }
/// let mut world = World::new();
/// world.spawn((Pos(0.0),));
/// let mut schedule = Schedule::new();
/// schedule.add_systems((fall, count));
/// schedule.run(&mut world).unwrap(); // `count` ran; `fall` was skipped
/// let skipped = schedule.skipped_systems();
/// assert_eq!(skipped.len(), 1);
/// assert!(skipped[0].system.ends_with("fall"));
/// assert!(skipped[0].error.to_string().contains("Gravity"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedSystem {
    /// The system's name.
    pub system: String,
    /// Why: a [`ScheduleError::Unavailable`] naming the system and the
    /// missing resource or event type.
    pub error: ScheduleError,
}

impl std::fmt::Display for SkippedSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped: {}", self.error)
    }
}

/// An exclusive system that does nothing: a sync point. The commands of the
/// systems ordered before it are applied when it runs, so the systems after
/// it see them in the same run.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Component)]
/// struct Pos(f32);
/// fn spawn(mut commands: Commands) {
///     commands.spawn((Pos(0.0),));
/// }
/// fn count(mut q: Query<&Pos>, mut n: ResMut<usize>) {
///     *n = q.iter().count();
/// }
/// let mut world = World::new();
/// world.insert_resource(0usize);
/// let mut schedule = Schedule::new();
/// schedule.add_systems((spawn, apply_deferred, count).chain());
/// schedule.run(&mut world).unwrap();
/// assert_eq!(world.resource::<usize>(), Some(&1)); // seen in the same run
/// ```
pub fn apply_deferred(_world: &mut World) {}

/// A conflicting pair of systems with no order between them (see
/// [`Schedule::ambiguities`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ambiguity {
    /// The system that runs first (the one added first, unless other
    /// constraints put it later).
    pub first: String,
    /// The other system.
    pub second: String,
    /// What they both touch.
    pub conflict: String,
}

impl std::fmt::Display for Ambiguity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} and {} conflict ({}) with no order between them; they run in the order they were added",
            self.first, self.second, self.conflict
        )
    }
}

/// How a [`Schedule`] runs its systems (see [`Schedule::set_executor`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExecutorKind {
    /// In parallel where accesses allow, unless the systems' latest runs
    /// added up to less than [`ExecutorKind::AUTO_PARALLEL_MIN`]: then in
    /// order on the calling thread, since starting systems on other threads
    /// costs more than they do. The first run, with no timings yet, is
    /// parallel.
    #[default]
    Auto,
    /// Always in order on the calling thread.
    SingleThreaded,
    /// Always in parallel where accesses allow.
    MultiThreaded,
}

impl ExecutorKind {
    /// Below this much work (the latest run times of the systems between
    /// two sync points, added up) [`ExecutorKind::Auto`] runs them on the
    /// calling thread.
    pub const AUTO_PARALLEL_MIN: Duration = Duration::from_micros(10);
}

/// A set's configuration, merged over every `configure_sets` call and the
/// unnamed groups `run_if` made.
pub(crate) struct SetEntry {
    pub(crate) key: SetKey,
    pub(crate) parents: Vec<SetKey>,
    pub(crate) before: Vec<SetKey>,
    pub(crate) after: Vec<SetKey>,
    /// Evaluated once per run, by the first member about to run.
    pub(crate) conditions: Mutex<Vec<RunCondition>>,
    /// This run's verdict: [`UNKNOWN`], [`PASS`] or [`FAIL`].
    result: AtomicU8,
}

const UNKNOWN: u8 = 0;
const PASS: u8 = 1;
const FAIL: u8 = 2;

impl SetEntry {
    /// Whether the set's conditions pass this run: evaluated by the first
    /// caller, remembered for the others.
    ///
    /// # Safety
    /// The caller holds the access of a member of the set (which includes
    /// the conditions' reads), so nothing writes what they read.
    unsafe fn passes(&self, world: &World) -> bool {
        match self.result.load(Ordering::Acquire) {
            PASS => return true,
            FAIL => return false,
            _ => {}
        }
        let mut conditions = self.conditions.lock().unwrap_or_else(|e| e.into_inner());
        match self.result.load(Ordering::Acquire) {
            PASS => return true,
            FAIL => return false,
            _ => {}
        }
        let mut pass = true;
        for condition in conditions.iter_mut() {
            // SAFETY: forwarded contract.
            pass &= unsafe { condition.evaluate(world) };
        }
        self.result.store(if pass { PASS } else { FAIL }, Ordering::Release);
        pass
    }
}

/// Systems, their order, and the stages they run in.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Component)]
/// struct Pos(f32);
/// #[derive(Component)]
/// struct Vel(f32);
/// fn integrate(mut q: Query<(&mut Pos, &Vel)>) {
///     q.for_each_mut(|(mut p, v)| p.0 += v.0);
/// }
/// fn clamp(mut q: Query<&mut Pos>) {
///     q.for_each_mut(|mut p| p.0 = p.0.min(10.0));
/// }
/// let mut world = World::new();
/// world.spawn((Pos(9.0), Vel(2.0)));
/// let mut schedule = Schedule::new();
/// schedule.add_systems((integrate, clamp).chain());
/// schedule.run(&mut world).unwrap();
/// assert!(schedule.ambiguities().is_empty());
/// ```
#[derive(Default)]
pub struct Schedule {
    configs: Vec<SystemConfig>,
    sets: Vec<SetEntry>,
    set_index: HashMap<SetKey, usize>,
    built: Built,
    built_for: Option<u64>,
    /// Whether each run ages the world's events (off inside an `App`, which
    /// ages them once per frame).
    no_event_updates: bool,
    executor: ExecutorKind,
    /// [`ExecutorKind::Auto`]'s threshold for this schedule, if not the
    /// default.
    auto_parallel_min: Option<Duration>,
    /// Per-system scratch of one run: whether it can run.
    runnable: Vec<bool>,
    command_errors: Vec<CommandError>,
    /// Systems that returned an error in the latest run.
    failed: Vec<FailedSystem>,
    /// Systems the latest run skipped.
    skipped: Vec<SkippedSystem>,
    /// Scratch of one sync point: the systems whose commands it applies.
    to_apply: Vec<usize>,
}

impl std::fmt::Debug for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Schedule").field("systems", &self.configs).field("stages", &self.built.stages).finish()
    }
}

impl Schedule {
    /// An empty schedule.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds systems (a function, a config, a tuple, or a chain; see
    /// [`IntoSystemConfigs`]).
    pub fn add_systems<M>(&mut self, systems: impl IntoSystemConfigs<M>) -> &mut Self {
        let configs = systems.into_configs();
        self.configs.extend(configs.configs);
        for set in configs.sets {
            self.merge_set(set);
        }
        self.built_for = None;
        self
    }

    /// Configures sets: their order against other sets and systems, their
    /// nesting and their run conditions (see [`IntoSystemSetConfigs`]).
    /// Calls add up.
    pub fn configure_sets(&mut self, sets: impl IntoSystemSetConfigs) -> &mut Self {
        let configs = sets.into_set_configs();
        for set in configs.sets.into_iter().chain(configs.extra) {
            self.merge_set(set);
        }
        self.built_for = None;
        self
    }

    fn merge_set(&mut self, set: SetConfig) {
        let k = *self.set_index.entry(set.key.clone()).or_insert_with(|| {
            self.sets.push(SetEntry {
                key: set.key.clone(),
                parents: Vec::new(),
                before: Vec::new(),
                after: Vec::new(),
                conditions: Mutex::new(Vec::new()),
                result: AtomicU8::new(UNKNOWN),
            });
            self.sets.len() - 1
        });
        let entry = &mut self.sets[k];
        entry.parents.extend(set.parents);
        entry.before.extend(set.before);
        entry.after.extend(set.after);
        entry.conditions.get_mut().unwrap_or_else(|e| e.into_inner()).extend(set.conditions);
    }

    /// Whether each run ages the world's events (on by default; an `App`
    /// turns it off and ages them once per frame).
    pub(crate) fn set_event_updates(&mut self, on: bool) {
        self.no_event_updates = !on;
    }

    /// Chooses how the systems run (default [`ExecutorKind::Auto`]). The
    /// results do not depend on it: conflicting systems run in the same
    /// order and commands apply in the same order either way.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    /// use ecs_core::schedule::ExecutorKind;
    ///
    /// let mut schedule = Schedule::new();
    /// schedule.set_executor(ExecutorKind::SingleThreaded);
    /// assert_eq!(schedule.executor(), ExecutorKind::SingleThreaded);
    /// ```
    pub fn set_executor(&mut self, executor: ExecutorKind) -> &mut Self {
        self.executor = executor;
        self
    }

    /// How the systems run.
    pub fn executor(&self) -> ExecutorKind {
        self.executor
    }

    /// Sets the amount of work (the latest run times of the systems between
    /// two sync points, added up) below which [`ExecutorKind::Auto`] keeps
    /// them on the calling thread (default
    /// [`ExecutorKind::AUTO_PARALLEL_MIN`]). `Duration::ZERO` makes `Auto`
    /// always parallel, `Duration::MAX` always sequential after the first
    /// run.
    pub fn set_auto_parallel_min(&mut self, min: Duration) -> &mut Self {
        self.auto_parallel_min = Some(min);
        self
    }

    /// Whether the systems of `order` are too little work to be worth other
    /// threads, judging by their latest runs (unknown before any ran).
    fn too_small_for_threads(&self, order: &[usize]) -> bool {
        let mut known = false;
        let mut total = Duration::ZERO;
        for &i in order {
            let stats = self.configs[i].system.stats();
            if stats.runs > 0 {
                known = true;
                total += stats.time;
            }
        }
        known && total < self.auto_parallel_min.unwrap_or(ExecutorKind::AUTO_PARALLEL_MIN)
    }

    /// How many systems the schedule holds.
    pub fn len(&self) -> usize {
        self.configs.len()
    }

    /// Whether the schedule holds no system.
    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    /// Whether the schedule is built for `world` (no system added since).
    pub fn is_built_for(&self, world: &World) -> bool {
        self.built_for == Some(world.id())
    }

    /// Initializes the systems and run conditions, checks their accesses
    /// and ordering, and packs them into stages.
    ///
    /// # Errors
    /// [`ScheduleError::Conflict`] for a system whose own parameters
    /// conflict or a run condition that writes, [`ScheduleError::Cycle`]
    /// naming the systems and sets on an ordering cycle,
    /// [`ScheduleError::UnknownSystem`] for an order against a system
    /// function that is not in the schedule.
    ///
    /// ```
    /// use ecs_core::ScheduleError;
    /// use ecs_core::prelude::*;
    ///
    /// fn a() {}
    /// fn b() {}
    /// let mut world = World::new();
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((a.after(b), b.after(a)));
    /// let error = schedule.build(&mut world).unwrap_err();
    /// assert!(matches!(error, ScheduleError::Cycle(_)));
    /// assert!(error.to_string().contains("::a -> ") && error.to_string().contains("::b -> "));
    /// ```
    pub fn build(&mut self, world: &mut World) -> Result<(), ScheduleError> {
        self.built_for = None;
        self.built = graph::build(&mut self.configs, &mut self.sets, world)?;
        self.runnable = vec![false; self.configs.len()];
        self.built_for = Some(world.id());
        Ok(())
    }

    /// Runs every system once (building first if needed). A system that
    /// cannot run (a missing resource) is skipped and listed in
    /// [`Schedule::skipped_systems`]; one whose run condition says no is
    /// passed over; the others run (see the [module docs](self)).
    ///
    /// # Errors
    /// When the schedule cannot be built ([`ScheduleError::Conflict`],
    /// [`ScheduleError::Cycle`], [`ScheduleError::UnknownSystem`]) or was
    /// built for another world; nothing runs then.
    pub fn run(&mut self, world: &mut World) -> Result<(), ScheduleError> {
        match self.built_for {
            None => self.build(world)?,
            Some(id) if id != world.id() => return Err(ScheduleError::WrongWorld),
            Some(_) => {}
        }
        if !self.no_event_updates {
            world.update_events();
        }
        self.skipped.clear();
        self.command_errors.clear();
        self.failed.clear();
        for &k in &self.built.conditioned_sets {
            *self.sets[k].result.get_mut() = UNKNOWN;
        }
        // The first segment whose systems' commands are not applied yet.
        let mut since = 0;
        for s in 0..self.built.segments.len() {
            self.run_segment(world, s);
            if let Some(e) = self.built.segments[s].exclusive {
                // A sync point: the commands so far apply first, so the
                // exclusive system sees them.
                world.increment_change_tick();
                self.apply_deferred(world, since..s + 1);
                since = s + 1;
                // SAFETY: `&mut World` is exclusive and nothing else runs.
                if self.validate(world, e) && unsafe { self.should_run(world, e) } {
                    let this_run = world.increment_change_tick();
                    self.configs[e].system.run_exclusive(world, this_run);
                    self.take_error(e);
                }
            }
        }
        // Everything from here on (the commands, and direct writes before the
        // next run) is stamped newer than every system's run, so each system
        // sees it next time.
        world.increment_change_tick();
        self.apply_deferred(world, since..self.built.segments.len());
        world.check_change_ticks();
        Ok(())
    }

    /// Whether system `i` can run now; records a skip if not.
    fn validate(&mut self, world: &World, i: usize) -> bool {
        match self.configs[i].system.validate(world) {
            Ok(()) => true,
            Err(message) => {
                let system = self.configs[i].system.meta().name.clone();
                self.skipped.push(SkippedSystem { system, error: ScheduleError::Unavailable(message) });
                false
            }
        }
    }

    /// Records the error system `i` returned in its latest run, if any.
    fn take_error(&mut self, i: usize) {
        let system = &mut self.configs[i].system;
        if let Some(error) = system.take_error() {
            self.failed.push(FailedSystem { system: system.meta().name.clone(), error });
        }
    }

    /// Evaluates the run conditions of system `i` (its sets' first, every
    /// one of them) on this thread.
    ///
    /// # Safety
    /// Nothing writes what system `i` or its conditions read meanwhile.
    unsafe fn should_run(&mut self, world: &World, i: usize) -> bool {
        let mut pass = true;
        for &k in &self.built.set_conditions_of[i] {
            // SAFETY: forwarded contract.
            pass &= unsafe { self.sets[k].passes(world) };
        }
        for condition in &mut self.configs[i].conditions {
            // SAFETY: forwarded contract.
            pass &= unsafe { condition.evaluate(world) };
        }
        pass
    }

    /// Runs the systems of segment `s` (not its exclusive system).
    fn run_segment(&mut self, world: &mut World, s: usize) {
        let segment = std::mem::take(&mut self.built.segments[s]);
        for &i in &segment.order {
            self.runnable[i] = self.validate(world, i);
        }
        let sequential = segment.sequential
            || match self.executor {
                ExecutorKind::Auto => self.too_small_for_threads(&segment.order),
                ExecutorKind::SingleThreaded => true,
                ExecutorKind::MultiThreaded => false,
            };
        if sequential {
            // Nothing can overlap (or nothing is worth another thread): run
            // in order on this thread. A system's time runs from the end of
            // the run of the system before it (of the segment's start for
            // the first): its run conditions, those of systems skipped in
            // between and this loop's steps are in it, and each system
            // costs one clock read.
            let mut clock = None;
            for &i in &segment.order {
                let start = *clock.get_or_insert_with(Instant::now);
                // SAFETY: `&mut World` is exclusive and one system runs.
                if self.runnable[i] && unsafe { self.should_run(world, i) } {
                    let this_run = world.increment_change_tick();
                    // SAFETY: as above.
                    clock = Some(unsafe { self.configs[i].system.run_unsafe_timed(world, this_run, start) });
                    self.take_error(i);
                }
            }
        } else {
            self.run_parallel(world, &segment.roots);
            for &i in &segment.order {
                self.take_error(i);
            }
        }
        self.built.segments[s] = segment;
    }

    /// Applies the deferred commands of the systems (and conditions) that
    /// ran since the previous sync point, in the order they were added,
    /// recording the failures: the systems of `segments` and the exclusive
    /// system that ran just before them. Only those can hold commands, so
    /// a sync point costs the systems run since the last one, not every
    /// system of the schedule.
    fn apply_deferred(&mut self, world: &mut World, segments: std::ops::Range<usize>) {
        let mut to_apply = std::mem::take(&mut self.to_apply);
        to_apply.clear();
        if let Some(e) = segments.start.checked_sub(1).and_then(|s| self.built.segments[s].exclusive) {
            to_apply.push(e);
        }
        for segment in &self.built.segments[segments] {
            to_apply.extend_from_slice(&segment.order);
        }
        to_apply.sort_unstable();
        let mut errors = Vec::new();
        for &i in &to_apply {
            let config = &mut self.configs[i];
            config.system.apply_deferred(world, &mut errors);
            for condition in &mut config.conditions {
                condition.apply_deferred(world, &mut errors);
                condition.take_errors(&mut self.failed);
            }
            if !errors.is_empty() {
                let name = &config.system.meta().name;
                self.command_errors.extend(errors.drain(..).map(|error| CommandError { system: name.clone(), error }));
            }
        }
        self.to_apply = to_apply;
        for &k in &self.built.conditioned_sets {
            for condition in self.sets[k].conditions.get_mut().unwrap_or_else(|e| e.into_inner()) {
                condition.apply_deferred(world, &mut errors);
                condition.take_errors(&mut self.failed);
                let name = condition.name();
                self.command_errors.extend(errors.drain(..).map(|error| CommandError { system: name.clone(), error }));
            }
        }
    }

    /// Runs the systems reachable from `roots` on rayon, each as soon as its
    /// predecessors are done (a system that is not runnable, or whose
    /// conditions say no, is passed over, releasing its successors at once).
    fn run_parallel(&mut self, world: &World, roots: &[usize]) {
        let remaining: Vec<AtomicUsize> = self.built.predecessors.iter().map(|&p| AtomicUsize::new(p)).collect();
        let systems: Vec<Mutex<&mut SystemConfig>> = self.configs.iter_mut().map(Mutex::new).collect();
        let run = Run {
            world,
            systems: &systems,
            successors: &self.built.successors,
            remaining: &remaining,
            runnable: &self.runnable,
            sets: &self.sets,
            set_conditions_of: &self.built.set_conditions_of,
        };
        // The calling thread runs the first ready system itself (no wake-up
        // to wait for); the pool takes the others and everything after it.
        rayon::in_place_scope(|scope| {
            let run = &run;
            for &i in roots.iter().skip(1) {
                scope.spawn(move |scope| run.system(scope, i));
            }
            if let Some(&first) = roots.first() {
                run.system(scope, first);
            }
        });
    }

    /// Figures of each system's latest run, in the order they were added.
    pub fn system_stats(&self) -> impl Iterator<Item = &SystemStats> {
        self.configs.iter().map(|c| c.system.stats())
    }

    /// How many "runs before" edges the multi-threaded executor counts
    /// down each run (for inspection and tests): the explicit orderings,
    /// plus one edge for each pair of conflicting systems that no path of
    /// edges orders yet (so systems that all conflict form a chain).
    pub fn dependency_edges(&self) -> usize {
        self.built.successors.iter().map(Vec::len).sum()
    }

    /// The stages, as system names (for inspection and tests).
    pub fn stage_names(&self) -> Vec<Vec<String>> {
        self.built
            .stages
            .iter()
            .map(|s| s.iter().map(|&i| self.configs[i].system.meta().name.clone()).collect())
            .collect()
    }

    /// Pairs of systems that conflict (one writes what the other reads or
    /// writes, or one is exclusive) with no order between them from
    /// `before`/`after`/`chain`/sets, found by the latest
    /// [`build`](Schedule::build) (empty before the first). Such a pair
    /// never overlaps and runs in the order the systems were added, so a run
    /// is deterministic, but that order is an accident of how the app was
    /// put together (which plugin came first): order the pair, or mark it
    /// with [`ambiguous_with`](IntoSystemConfigs::ambiguous_with) when the
    /// order does not matter.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// struct Score(u32);
    /// fn add_one(mut s: ResMut<Score>) {
    ///     s.0 += 1;
    /// }
    /// fn double(mut s: ResMut<Score>) {
    ///     s.0 *= 2;
    /// }
    /// let mut world = World::new();
    /// world.insert_resource(Score(1));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems((add_one, double));
    /// schedule.build(&mut world).unwrap();
    /// let found = schedule.ambiguities();
    /// assert_eq!(found.len(), 1);
    /// assert!(found[0].first.ends_with("add_one") && found[0].second.ends_with("double"));
    /// assert!(found[0].conflict.contains("Score"));
    /// ```
    pub fn ambiguities(&self) -> &[Ambiguity] {
        self.built
            .ambiguities
            .get_or_init(|| self.built.ambiguous_pairs.iter().map(|p| p.describe(&self.configs)).collect())
    }

    /// Commands that failed in the latest run (stale entities and the
    /// like); nothing was applied for them.
    pub fn command_errors(&self) -> &[CommandError] {
        &self.command_errors
    }

    /// Whether the latest run had a failed system or command, or skipped a
    /// system.
    pub fn has_errors(&self) -> bool {
        !(self.failed.is_empty() && self.command_errors.is_empty() && self.skipped.is_empty())
    }

    /// Systems that returned an error in the latest run (fallible
    /// systems, see [`crate::system::output`]), in the order the schedule
    /// runs them; empty when none failed. What such a system wrote before
    /// it returned stays written, and its commands were applied. Run
    /// conditions that returned an error follow them, named
    /// `run condition NAME` (see [`condition`]).
    pub fn failed_systems(&self) -> &[FailedSystem] {
        &self.failed
    }

    /// Systems the latest run skipped because they could not run (a
    /// missing resource or event type), in the order they were added; empty
    /// when every system ran. See [`SkippedSystem`]. Systems passed over by
    /// their run conditions are not listed.
    pub fn skipped_systems(&self) -> &[SkippedSystem] {
        &self.skipped
    }
}

/// Shared state of one parallel run.
struct Run<'a> {
    world: &'a World,
    systems: &'a [Mutex<&'a mut SystemConfig>],
    successors: &'a [Vec<usize>],
    remaining: &'a [AtomicUsize],
    /// Whether each system can run (false: skipped, see `Schedule::run`).
    runnable: &'a [bool],
    sets: &'a [SetEntry],
    set_conditions_of: &'a [Vec<usize>],
}

impl<'a> Run<'a> {
    /// Runs system `i`, then each successor it was the last to hold back:
    /// on a pool thread the first on this same thread and the others on the
    /// pool; on the calling thread all of them on the pool.
    fn system<'s>(&'a self, scope: &rayon::Scope<'s>, first: usize)
    where
        'a: 's,
    {
        let mut i = first;
        loop {
            if self.runnable[i] {
                let mut config = self.systems[i].lock().unwrap_or_else(|e| e.into_inner());
                // SAFETY (for the conditions and the system): every system
                // that conflicts with this one, its run conditions included,
                // is ordered before or after it (conflict edges added in
                // `build`), so none runs meanwhile and this one holds its
                // access alone.
                let mut pass = true;
                for &k in &self.set_conditions_of[i] {
                    // SAFETY: see above.
                    pass &= unsafe { self.sets[k].passes(self.world) };
                }
                for condition in &mut config.conditions {
                    // SAFETY: see above.
                    pass &= unsafe { condition.evaluate(self.world) };
                }
                if pass {
                    let this_run = self.world.increment_change_tick_shared();
                    // SAFETY: see above.
                    unsafe { config.system.run_unsafe(self.world, this_run) };
                }
            }
            // Off the pool (the thread that called `Schedule::run`), every
            // successor goes to the pool: a system run here whose own
            // parallel loop finds both pool threads busy with other systems
            // would block this thread until one is free, while a pool thread
            // in the same place works on other jobs meanwhile.
            let on_pool = rayon::current_thread_index().is_some();
            let mut next = None;
            for &successor in &self.successors[i] {
                if self.remaining[successor].fetch_sub(1, Ordering::AcqRel) == 1 {
                    if next.is_none() && on_pool {
                        next = Some(successor);
                    } else {
                        scope.spawn(move |scope| self.system(scope, successor));
                    }
                }
            }
            match next {
                Some(n) => i = n,
                None => return,
            }
        }
    }
}
