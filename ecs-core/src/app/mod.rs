//! The game layer: an [`App`] owns a [`World`] and labelled schedules and
//! runs them in a fixed order each frame; [`Plugin`]s add a crate's systems
//! and resources in one line; [`Time`] and a fixed step, [`States`] and run
//! conditions decide what runs when.
//!
//! ```
//! use std::time::Duration;
//! use ecs_core::prelude::*;
//!
//! #[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
//! enum GameState {
//!     #[default]
//!     Playing,
//!     Paused,
//! }
//! impl States for GameState {}
//!
//! #[derive(Component)]
//! struct Pos(f32);
//! #[derive(Component)]
//! struct Vel(f32);
//!
//! fn spawn_level(mut commands: Commands) {
//!     commands.spawn((Pos(0.0), Vel(1.0)));
//! }
//! fn integrate(mut q: Query<(&mut Pos, &Vel)>, time: Res<Time>) {
//!     q.for_each_mut(|(mut p, v)| p.0 += v.0 * time.delta_secs());
//! }
//!
//! struct PhysicsPlugin;
//! impl Plugin for PhysicsPlugin {
//!     fn build(&self, app: &mut App) {
//!         app.insert_resource(Time::<Fixed>::from_hz(50.0))
//!             .add_systems(FixedUpdate, integrate.run_if(in_state(GameState::Playing)));
//!     }
//! }
//!
//! let mut app = App::new();
//! app.add_plugins(PhysicsPlugin)
//!     .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(20)))
//!     .init_state::<GameState>()
//!     .add_systems(Startup, spawn_level)
//!     .run_frames(50); // one second at 50 Hz
//! let x = app.world_mut().query::<&Pos>().iter(app.world()).next().unwrap().0;
//! assert!((x - 1.0).abs() < 1e-4, "{x}"); // Startup's spawn applied before the first step
//! ```
//!
//! ## A frame
//! [`App::update`] runs one frame:
//! 1. the first time only: [`PreStartup`], [`Startup`], [`PostStartup`];
//! 2. events age (once per frame, so an event lives for this frame and the
//!    next), and the clocks advance ([`time`]);
//! 3. [`First`], [`PreUpdate`], [`StateTransition`] (state changes, see
//!    [`state`]), [`RunFixedMainLoop`] followed by the fixed steps
//!    ([`FixedFirst`], [`FixedPreUpdate`], [`FixedUpdate`],
//!    [`FixedPostUpdate`], [`FixedLast`], as many times as whole steps
//!    fit), [`Update`], [`PostUpdate`], [`Last`].
//!
//! Labels with no systems cost a lookup. Add your own with
//! [`App::add_schedule_after`]/[`App::add_schedule_before`] (relative to
//! any label of the three lists: startup, frame, fixed step), or run one on
//! demand with [`World::run_schedule`]. Each schedule ends with its own
//! sync point (commands applied), so a schedule sees the commands of the
//! ones before it. After each schedule, what went wrong in it (a system's
//! returned error, a failed command, a skipped system, a failed observer)
//! goes to the app's error handler: see [`errors`].

pub mod errors;
mod schedules;
pub mod state;
pub mod time;

use std::any::TypeId;
use std::collections::HashSet;
use std::time::Duration;

pub use errors::{DEFAULT_REPORT_LIMIT, ERROR_LOG_SOURCES, ErrorLog, ErrorReport, ignore_error, panic_on_error};
pub use schedules::{
    First, FixedFirst, FixedLast, FixedPostUpdate, FixedPreUpdate, FixedUpdate, InternedScheduleLabel, Last,
    PostStartup, PostUpdate, PreStartup, PreUpdate, RunFixedMainLoop, ScheduleLabel, Schedules, Startup,
    StateTransition, Update,
};
pub use state::{
    NextState, OnEnter, OnExit, OnTransition, State, StateScoped, StateTransitionEvent, States, in_state, state_changed,
};
pub use time::{Fixed, FixedTime, Real, Time, TimeUpdateStrategy, Timer, TimerMode, Virtual, on_timer};

use crate::lifecycle::ObserverId;
use crate::lifecycle::observer::ObserverParams;
use crate::schedule::{Ambiguity, IntoSystemConfigs, IntoSystemSetConfigs, Schedule, ScheduleError, SystemId};
use crate::system::{Events, FromWorld, IntoSystem, SystemParamFunction};
use crate::world::World;

/// Asks the app to stop: send it as an event (`EventWriter<AppExit>`, or
/// `Events<AppExit>` from an exclusive system) and [`App::run`] returns it
/// once the frame that sent it has finished. A host with a loop of its own
/// asks [`App::should_exit`] after each [`App::update`].
///
/// ```
/// use ecs_core::prelude::*;
///
/// fn quit_after_three(mut frames: Local<u32>, mut exit: EventWriter<AppExit>) {
///     *frames += 1;
///     if *frames == 3 {
///         exit.send(AppExit::Success);
///     }
/// }
/// let mut app = App::new();
/// app.insert_resource(0u32).add_systems(Update, (quit_after_three, |mut n: ResMut<u32>| *n += 1));
/// assert_eq!(app.run(), AppExit::Success);
/// assert_eq!(app.world().resource::<u32>(), Some(&3)); // the third frame ran to its end
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AppExit {
    /// The game ended normally.
    #[default]
    Success,
    /// The game ended on an error, with a process exit code (not 0).
    Error(std::num::NonZeroU8),
}

impl AppExit {
    /// An error exit with code 1.
    pub const fn error() -> AppExit {
        AppExit::Error(std::num::NonZeroU8::MIN)
    }

    /// Whether this is [`AppExit::Success`].
    pub const fn is_success(self) -> bool {
        matches!(self, AppExit::Success)
    }

    /// The process exit code: 0 for success.
    pub const fn code(self) -> u8 {
        match self {
            AppExit::Success => 0,
            AppExit::Error(code) => code.get(),
        }
    }
}

impl From<AppExit> for std::process::ExitCode {
    fn from(exit: AppExit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

/// An app's error handler and its count, borrowed apart from the world.
struct Reporter<'a> {
    handler: &'a mut Box<dyn FnMut(&ErrorReport) + Send>,
    count: &'a mut u64,
}

impl Reporter<'_> {
    /// Hands the reports waiting in `world` (those of the schedules run,
    /// then the lifecycle errors) to the handler; nothing to do (the usual
    /// case) costs two loads.
    /// If the handler panics, the reports it has not seen yet go back to
    /// the world, for the next frame's call.
    fn report(&mut self, world: &mut World) {
        if world.error_reports.is_empty() && world.lifecycle.errors.is_empty() {
            return;
        }
        /// Returns the reports not handed out to the world when dropped
        /// (while a panicking handler unwinds).
        struct Rest<'a> {
            world: &'a mut World,
            reports: std::vec::IntoIter<ErrorReport>,
        }
        impl Drop for Rest<'_> {
            fn drop(&mut self) {
                self.world.error_reports.extend(self.reports.by_ref());
            }
        }
        let mut reports = world.error_reports.take();
        reports.extend(world.take_lifecycle_errors().into_iter().map(ErrorReport::Lifecycle));
        let mut rest = Rest { world, reports: reports.into_iter() };
        for report in rest.reports.by_ref() {
            *self.count += 1;
            (self.handler)(&report);
        }
    }
}

/// The handler a new [`App`] starts with: an [`ErrorLog`] printing to
/// standard error.
fn default_error_handler() -> Box<dyn FnMut(&ErrorReport) + Send> {
    let mut log = ErrorLog::default();
    Box::new(move |report: &ErrorReport| log.report(report))
}

/// A part of an app: one crate's systems, resources, events and states.
/// `build` runs once, when the plugin is added.
///
/// A plugin type is added once: adding it again is ignored (so plugins can
/// add the plugins they depend on without checking), unless
/// [`Plugin::is_unique`] says otherwise. The first instance wins.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Default)]
/// struct Gravity(f32);
/// struct CorePhysics;
/// impl Plugin for CorePhysics {
///     fn build(&self, app: &mut App) {
///         app.init_resource::<Gravity>();
///     }
/// }
/// struct Ragdolls;
/// impl Plugin for Ragdolls {
///     fn build(&self, app: &mut App) {
///         app.add_plugins(CorePhysics); // a dependency
///     }
/// }
/// let mut app = App::new();
/// app.add_plugins((CorePhysics, Ragdolls));
/// assert!(app.is_plugin_added::<CorePhysics>());
/// assert_eq!(app.plugin_names().len(), 2);
/// ```
pub trait Plugin: Send + Sync + 'static {
    /// Adds what the plugin brings to `app`.
    fn build(&self, app: &mut App);

    /// The plugin's name (its type's path).
    fn name(&self) -> &str {
        std::any::type_name::<Self>()
    }

    /// Whether a second plugin of this type is ignored (true) or built too
    /// (false).
    fn is_unique(&self) -> bool {
        true
    }
}

/// A function of `&mut App` is a plugin.
impl<F: Fn(&mut App) + Send + Sync + 'static> Plugin for F {
    fn build(&self, app: &mut App) {
        self(app)
    }
}

/// Marker of [`Plugins`] for one plugin.
pub struct PluginMarker;
/// Marker of [`Plugins`] for tuples.
pub struct PluginsTupleMarker;

/// What [`App::add_plugins`] takes: one plugin, or a tuple of plugins and
/// tuples.
pub trait Plugins<Marker> {
    /// Adds them, in order.
    fn add_to_app(self, app: &mut App);
}

impl<P: Plugin> Plugins<PluginMarker> for P {
    fn add_to_app(self, app: &mut App) {
        app.add_plugin(self);
    }
}

macro_rules! tuple_plugins {
    ($($p:ident $m:ident),*) => {
        #[allow(non_snake_case, reason = "the macro binds tuple elements to their type parameter names")]
        impl<$($p: Plugins<$m>, $m),*> Plugins<(PluginsTupleMarker, $($m,)*)> for ($($p,)*) {
            fn add_to_app(self, app: &mut App) {
                let ($($p,)*) = self;
                $( $p.add_to_app(app); )*
            }
        }
    };
}

tuple_plugins!(P0 M0);
tuple_plugins!(P0 M0, P1 M1);
tuple_plugins!(P0 M0, P1 M1, P2 M2);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4, P5 M5);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4, P5 M5, P6 M6);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4, P5 M5, P6 M6, P7 M7);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4, P5 M5, P6 M6, P7 M7, P8 M8);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4, P5 M5, P6 M6, P7 M7, P8 M8, P9 M9);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4, P5 M5, P6 M6, P7 M7, P8 M8, P9 M9, P10 M10);
tuple_plugins!(P0 M0, P1 M1, P2 M2, P3 M3, P4 M4, P5 M5, P6 M6, P7 M7, P8 M8, P9 M9, P10 M10, P11 M11);

/// A schedule that failed to build or run, by label.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppError {
    /// The schedule's label.
    pub schedule: String,
    /// What went wrong.
    pub error: ScheduleError,
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "schedule {}: {}", self.schedule, self.error)
    }
}

impl std::error::Error for AppError {}

/// The order labelled schedules run in: once at startup, every frame, and
/// in every fixed step (see [`App::add_schedule_after`]).
#[derive(Clone, Debug)]
pub struct ScheduleOrder {
    /// Run once, in the first frame.
    pub startup: Vec<InternedScheduleLabel>,
    /// Run every frame; the fixed steps run right after
    /// [`RunFixedMainLoop`].
    pub frame: Vec<InternedScheduleLabel>,
    /// Run in every fixed step.
    pub fixed: Vec<InternedScheduleLabel>,
}

impl Default for ScheduleOrder {
    fn default() -> Self {
        ScheduleOrder {
            startup: vec![PreStartup.intern(), Startup.intern(), PostStartup.intern()],
            frame: vec![
                First.intern(),
                PreUpdate.intern(),
                StateTransition.intern(),
                RunFixedMainLoop.intern(),
                Update.intern(),
                PostUpdate.intern(),
                Last.intern(),
            ],
            fixed: vec![
                FixedFirst.intern(),
                FixedPreUpdate.intern(),
                FixedUpdate.intern(),
                FixedPostUpdate.intern(),
                FixedLast.intern(),
            ],
        }
    }
}

impl ScheduleOrder {
    fn contains(&self, label: &InternedScheduleLabel) -> bool {
        self.startup.contains(label) || self.frame.contains(label) || self.fixed.contains(label)
    }

    fn insert(&mut self, anchor: InternedScheduleLabel, label: InternedScheduleLabel, after: bool) {
        assert!(!self.contains(&label), "schedule {label:?} is already in the app's order");
        for list in [&mut self.startup, &mut self.frame, &mut self.fixed] {
            if let Some(k) = list.iter().position(|l| *l == anchor) {
                list.insert(if after { k + 1 } else { k }, label);
                return;
            }
        }
        panic!("schedule {anchor:?} is not in the app's order (startup, frame or fixed step)");
    }
}

/// A world, its labelled schedules, and the frame loop (see the
/// [module docs](self)).
pub struct App {
    world: World,
    order: ScheduleOrder,
    plugins: HashSet<TypeId>,
    plugin_names: Vec<String>,
    started: bool,
    fixed_loop: InternedScheduleLabel,
    /// Receives each [`ErrorReport`] (see [`App::set_error_handler`]).
    error_handler: Box<dyn FnMut(&ErrorReport) + Send>,
    errors_reported: u64,
    /// The id of the first [`AppExit`] event [`App::should_exit`] has not
    /// looked at.
    exit_cursor: u64,
}

impl Default for App {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App").field("order", &self.order).field("plugins", &self.plugin_names).finish()
    }
}

impl App {
    /// An app with an empty world, the built-in schedule order, and the
    /// clocks ([`Time`], [`Time<Real>`], [`Time<Virtual>`], [`Time<Fixed>`]
    /// at 60 Hz, [`TimeUpdateStrategy::Automatic`]).
    pub fn new() -> App {
        let mut world = World::new();
        world.insert_resource(Schedules::new());
        world.insert_resource(Time::<()>::default());
        world.insert_resource(Time::<Real>::default());
        world.insert_resource(Time::<Virtual>::default());
        world.insert_resource(Time::<Fixed>::default());
        world.insert_resource(TimeUpdateStrategy::default());
        world.add_event::<AppExit>();
        App {
            world,
            order: ScheduleOrder::default(),
            plugins: HashSet::new(),
            plugin_names: Vec::new(),
            started: false,
            fixed_loop: RunFixedMainLoop.intern(),
            error_handler: default_error_handler(),
            errors_reported: 0,
            exit_cursor: 0,
        }
    }

    /// Sets what receives the [`ErrorReport`]s of each frame: failed
    /// systems and commands, skipped systems, failed observers and hook
    /// commands (see [`errors`]). The default prints through an
    /// [`ErrorLog`] (the first report of each source, then the 10th, 100th,
    /// ...); [`panic_on_error`] and [`ignore_error`] are ready-made, and
    /// any closure will do (count them, show them in the game's console).
    pub fn set_error_handler(&mut self, handler: impl FnMut(&ErrorReport) + Send + 'static) -> &mut Self {
        self.error_handler = Box::new(handler);
        self
    }

    /// Error reports handed to the error handler so far.
    pub fn errors_reported(&self) -> u64 {
        self.errors_reported
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, mutably.
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// Adds plugins: one, or a tuple (see [`Plugin`] for duplicates).
    pub fn add_plugins<M>(&mut self, plugins: impl Plugins<M>) -> &mut Self {
        plugins.add_to_app(self);
        self
    }

    fn add_plugin<P: Plugin>(&mut self, plugin: P) {
        if plugin.is_unique() && !self.plugins.insert(TypeId::of::<P>()) {
            return;
        }
        self.plugins.insert(TypeId::of::<P>());
        self.plugin_names.push(plugin.name().to_string());
        plugin.build(self);
    }

    /// Whether a plugin of type `P` was added.
    pub fn is_plugin_added<P: Plugin>(&self) -> bool {
        self.plugins.contains(&TypeId::of::<P>())
    }

    /// The names of the plugins built, in the order they were built.
    pub fn plugin_names(&self) -> &[String] {
        &self.plugin_names
    }

    /// Inserts a resource (replacing one of its type).
    pub fn insert_resource<R: Send + Sync + 'static>(&mut self, resource: R) -> &mut Self {
        self.world.insert_resource(resource);
        self
    }

    /// Inserts `R` made from the world, unless one is there.
    pub fn init_resource<R: FromWorld + Send + Sync + 'static>(&mut self) -> &mut Self {
        if !self.world.contains_resource::<R>() {
            let value = R::from_world(&mut self.world);
            self.world.insert_resource(value);
        }
        self
    }

    /// Registers event type `E` (see [`World::add_event`]). The app ages
    /// events once per frame: an event is readable in the frame it was sent
    /// and the next.
    pub fn add_event<E: Send + Sync + 'static>(&mut self) -> &mut Self {
        self.world.add_event::<E>();
        self
    }

    /// Adds a global observer (see [`World::add_observer`]).
    pub fn add_observer<M: 'static, F>(&mut self, observer: F) -> &mut Self
    where
        F: SystemParamFunction<M>,
        F::Param: ObserverParams,
    {
        let _: ObserverId = self.world.add_observer(observer);
        self
    }

    /// Registers a one-shot system (see [`World::register_system`]).
    pub fn register_system<M>(&mut self, system: impl IntoSystem<M>) -> SystemId {
        self.world.register_system(system)
    }

    /// The schedule under `label`, made if missing.
    fn schedule_entry(&mut self, label: impl ScheduleLabel) -> &mut Schedule {
        let label = label.intern();
        self.world
            .resource_mut::<Schedules>()
            .expect("the app's Schedules resource was removed")
            .entry(label.clone())
            .unwrap_or_else(|| panic!("schedule {label:?} is running: it cannot be changed now"))
    }

    /// Adds systems to the schedule under `label` (made if missing; a label
    /// outside the [order](App::schedule_order) runs only on demand, see
    /// [`World::run_schedule`]).
    pub fn add_systems<M>(&mut self, label: impl ScheduleLabel, systems: impl IntoSystemConfigs<M>) -> &mut Self {
        self.schedule_entry(label).add_systems(systems);
        self
    }

    /// Configures sets in the schedule under `label` (see
    /// [`Schedule::configure_sets`]).
    pub fn configure_sets(&mut self, label: impl ScheduleLabel, sets: impl IntoSystemSetConfigs) -> &mut Self {
        self.schedule_entry(label).configure_sets(sets);
        self
    }

    /// Stores a ready schedule under `label` (replacing one there).
    pub fn add_schedule(&mut self, label: impl ScheduleLabel, schedule: Schedule) -> &mut Self {
        self.world
            .resource_mut::<Schedules>()
            .expect("the app's Schedules resource was removed")
            .insert(label, schedule);
        self
    }

    /// Edits the schedule under `label` (made if missing).
    pub fn edit_schedule(&mut self, label: impl ScheduleLabel, edit: impl FnOnce(&mut Schedule)) -> &mut Self {
        edit(self.schedule_entry(label));
        self
    }

    /// Runs the schedule `label` right after `anchor` wherever `anchor`
    /// runs: at startup, every frame, or in every fixed step.
    ///
    /// # Panics
    /// If `anchor` is not in the order, or `label` already is.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    /// struct AfterUpdate;
    /// impl ScheduleLabel for AfterUpdate {}
    /// let mut app = App::new();
    /// app.add_schedule_after(Update, AfterUpdate);
    /// let frame = &app.schedule_order().frame;
    /// let at = frame.iter().position(|l| *l == Update.intern()).unwrap();
    /// assert_eq!(frame[at + 1], AfterUpdate.intern());
    /// ```
    pub fn add_schedule_after(&mut self, anchor: impl ScheduleLabel, label: impl ScheduleLabel) -> &mut Self {
        self.order.insert(anchor.intern(), label.intern(), true);
        self.schedule_entry(label);
        self
    }

    /// Runs the schedule `label` right before `anchor` (see
    /// [`App::add_schedule_after`]).
    ///
    /// # Panics
    /// If `anchor` is not in the order, or `label` already is.
    pub fn add_schedule_before(&mut self, anchor: impl ScheduleLabel, label: impl ScheduleLabel) -> &mut Self {
        self.order.insert(anchor.intern(), label.intern(), false);
        self.schedule_entry(label);
        self
    }

    /// The order schedules run in.
    pub fn schedule_order(&self) -> &ScheduleOrder {
        &self.order
    }

    /// Adds state type `S` starting at `S::from_world` (its `Default`): see
    /// [`state`]. A state type already added is left as it is.
    pub fn init_state<S: States + FromWorld>(&mut self) -> &mut Self {
        if !self.world.contains_resource::<State<S>>() {
            let initial = S::from_world(&mut self.world);
            self.insert_state(initial);
        }
        self
    }

    /// Adds state type `S` starting at `state` (or sets its current value
    /// before the first frame if it was added already).
    pub fn insert_state<S: States>(&mut self, state: S) -> &mut Self {
        let added = self.world.contains_resource::<State<S>>();
        self.world.insert_resource(State(state));
        if !added {
            self.world.insert_resource(NextState::<S>::Unchanged);
            self.world.add_event::<StateTransitionEvent<S>>();
            self.add_systems(StateTransition, state::transition_system::<S>());
        }
        self
    }

    /// Builds every schedule not built yet, so ordering errors show before
    /// anything runs. [`App::update`] does this itself.
    ///
    /// # Errors
    /// The first schedule that cannot be built, by label.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Debug, Clone, PartialEq, Eq, Hash)]
    /// enum Step {
    ///     A,
    ///     B,
    /// }
    /// impl SystemSet for Step {}
    /// fn a() {}
    /// fn b() {}
    /// let mut app = App::new();
    /// app.configure_sets(Update, (Step::A, Step::B).chain())
    ///     .add_systems(Update, (a.in_set(Step::A).after(b), b.in_set(Step::B)));
    /// let error = app.build_schedules().unwrap_err();
    /// assert_eq!(error.schedule, "Update");
    /// let message = error.to_string();
    /// assert!(message.contains("cycle") && message.contains("::a") && message.contains("set B"), "{message}");
    /// ```
    pub fn build_schedules(&mut self) -> Result<(), AppError> {
        Schedules::build_all(&mut self.world)
            .map_err(|(label, error)| AppError { schedule: format!("{label:?}"), error })
    }

    /// The [ambiguity report](Schedule::ambiguities) of the schedule under
    /// `label` (built first; empty if there is no such schedule).
    ///
    /// # Errors
    /// When a schedule cannot be built.
    pub fn ambiguities(&mut self, label: impl ScheduleLabel) -> Result<Vec<Ambiguity>, AppError> {
        self.build_schedules()?;
        let schedules = self.world.resource::<Schedules>().expect("the app's Schedules resource was removed");
        Ok(schedules.get(label).map(|s| s.ambiguities().to_vec()).unwrap_or_default())
    }

    /// Runs one frame (see the [module docs](self)).
    ///
    /// # Panics
    /// When a schedule cannot be built (the message names it and why); use
    /// [`App::try_update`] to get the error instead. Also when the error
    /// handler panics ([`panic_on_error`]); the schedules are back in place
    /// then, and the next call runs the next frame.
    pub fn update(&mut self) {
        if let Err(error) = self.try_update() {
            panic!("{error}");
        }
    }

    /// Runs frames back to back until a system sends [`AppExit`], and
    /// returns it (see [`App::run_with_interval`] to pace them).
    ///
    /// # Panics
    /// As [`App::update`].
    pub fn run(&mut self) -> AppExit {
        self.run_with_interval(Duration::ZERO)
    }

    /// Runs frames until a system sends [`AppExit`], starting them at
    /// least `interval` apart (sleeping between them: a headless server at
    /// 60 Hz passes 1/60 s), and returns the exit.
    ///
    /// # Panics
    /// As [`App::update`].
    pub fn run_with_interval(&mut self, interval: Duration) -> AppExit {
        let mut next = std::time::Instant::now();
        loop {
            self.update();
            if let Some(exit) = self.should_exit() {
                return exit;
            }
            next += interval;
            let now = std::time::Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            } else {
                // Late: the next frame starts now, not in a burst that
                // catches up.
                next = now;
            }
        }
    }

    /// The [`AppExit`] sent since the previous call, if any: the first
    /// error exit when there is one, else the first success. For hosts
    /// that call [`App::update`] from a loop of their own.
    pub fn should_exit(&mut self) -> Option<AppExit> {
        let events = self.world.resource::<Events<AppExit>>()?;
        let sent: Vec<AppExit> = events.read_from(self.exit_cursor).copied().collect();
        self.exit_cursor = events.next_id();
        sent.iter().copied().find(|exit| !exit.is_success()).or(sent.first().copied())
    }

    /// Runs `frames` frames.
    ///
    /// # Panics
    /// As [`App::update`].
    pub fn run_frames(&mut self, frames: u64) -> &mut Self {
        for _ in 0..frames {
            self.update();
        }
        self
    }

    /// Runs one frame, or returns the first schedule that could not be
    /// built (before anything of the frame ran).
    ///
    /// # Errors
    /// See [`App::build_schedules`].
    pub fn try_update(&mut self) -> Result<(), AppError> {
        self.build_schedules()?;
        let result = self.run_frame();
        // Whatever ran before an error is reported too.
        self.report_errors();
        result
    }

    /// The schedules of one frame, reporting errors after each.
    fn run_frame(&mut self) -> Result<(), AppError> {
        let App { world, order, started, fixed_loop, error_handler, errors_reported, .. } = self;
        let mut reporter = Reporter { handler: error_handler, count: errors_reported };
        if !*started {
            *started = true;
            for label in &order.startup {
                let result = world.run_schedule_if_present(label);
                reporter.report(world);
                result.map_err(|error| AppError { schedule: format!("{label:?}"), error })?;
            }
        }
        world.update_events();
        time::update_time(world);
        for label in &order.frame {
            let result = world.run_schedule_if_present(label);
            reporter.report(world);
            result.map_err(|error| AppError { schedule: format!("{label:?}"), error })?;
            if label == fixed_loop {
                let result = Self::run_fixed_steps(world, &order.fixed);
                reporter.report(world);
                result?;
            }
        }
        Ok(())
    }

    /// Hands the error reports waiting in the world to the error handler.
    fn report_errors(&mut self) {
        Reporter { handler: &mut self.error_handler, count: &mut self.errors_reported }.report(&mut self.world);
    }

    /// The fixed-step loop: adds the frame's virtual time to the
    /// accumulator and runs the fixed schedules once per whole step, with
    /// [`Time`] showing the fixed clock meanwhile.
    fn run_fixed_steps(world: &mut World, fixed: &[InternedScheduleLabel]) -> Result<(), AppError> {
        let Some(delta) = world.resource::<Time<Virtual>>().map(Time::delta) else { return Ok(()) };
        let Some(clock) = world.resource_mut::<Time<Fixed>>() else { return Ok(()) };
        clock.accumulate(delta);
        let virtual_time = world.resource::<Time>().copied();
        let mut result = Ok(());
        'steps: while let Some(clock) = world.resource_mut::<Time<Fixed>>() {
            if !clock.expend() {
                break;
            }
            let step = clock.as_generic();
            if let Some(time) = world.resource_mut::<Time>() {
                *time = step;
            }
            for label in fixed {
                if let Err(error) = world.run_schedule_if_present(label) {
                    result = Err(AppError { schedule: format!("{label:?}"), error });
                    break 'steps;
                }
            }
        }
        if let (Some(saved), Some(time)) = (virtual_time, world.resource_mut::<Time>()) {
            *time = saved;
        }
        result
    }
}
