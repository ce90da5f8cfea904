//! Systems: the `System` trait, and plain functions turned into systems.

use std::marker::PhantomData;
use std::time::Instant;

use crate::storage::tick::TickWindow;
use crate::world::World;

use crate::system::{SystemError, SystemMeta, SystemOutput, SystemParam, SystemParamItem, SystemStats};

/// A runnable system.
pub trait System: Send + Sync + 'static {
    /// Builds parameter state and checks the parameters against each other.
    fn initialize(&mut self, world: &mut World);
    /// Name, access, and any problem found by `initialize`.
    fn meta(&self) -> &SystemMeta;
    /// Whether the system can run on `world` now (resources present). The
    /// error names the system and what it lacks; a schedule skips the
    /// system then (see [`crate::Schedule::skipped_systems`]).
    fn validate(&self, world: &World) -> Result<(), String>;
    /// Runs once at tick `this_run` (which the caller took from the world).
    ///
    /// # Safety
    /// The system was initialized on this world, and for the call nothing
    /// else uses what its access records.
    unsafe fn run_unsafe(&mut self, world: &World, this_run: u64);
    /// Runs as [`System::run_unsafe`] does, but takes the start of its
    /// timing from the caller and returns the instant the run ended: a
    /// schedule running systems one after another on one thread passes the
    /// end of the previous system's run, so each system costs one clock
    /// read instead of two (a clock read is some 20-40 ns, as much as a
    /// small system's work). The latest run time ([`SystemStats::time`])
    /// then spans from `start` to the returned instant. The default runs
    /// [`System::run_unsafe`] (which times itself) and reads the clock once
    /// more.
    ///
    /// # Safety
    /// As for [`System::run_unsafe`].
    unsafe fn run_unsafe_timed(&mut self, world: &World, this_run: u64, start: Instant) -> Instant {
        let _ = start;
        // SAFETY: forwarded contract.
        unsafe { self.run_unsafe(world, this_run) };
        Instant::now()
    }
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
    /// Whether the system needs the whole world (an exclusive
    /// `fn(&mut World)` system): a schedule runs it alone, through
    /// [`System::run_exclusive`], never through [`System::run_unsafe`].
    fn is_exclusive(&self) -> bool {
        false
    }
    /// Runs once at tick `this_run` with exclusive world access (what a
    /// schedule calls for an exclusive system; for any other system the same
    /// as [`System::run_unsafe`], which exclusive access makes safe).
    fn run_exclusive(&mut self, world: &mut World, this_run: u64) {
        // SAFETY: `&mut World` is exclusive, so nothing else uses what the
        // system's access records.
        unsafe { self.run_unsafe(world, this_run) }
    }
    /// Takes the error the latest run returned, if it returned one (a
    /// fallible system, see [`crate::system::output`]); `None` for systems
    /// that cannot fail.
    fn take_error(&mut self) -> Option<SystemError> {
        None
    }
    /// Figures of the latest run.
    fn stats(&self) -> &SystemStats;
    /// The world tick of the latest run. Only a run moves it: a system that
    /// was skipped or not scheduled keeps it, so its next run's window
    /// covers everything since the run before.
    fn last_run(&self) -> u64;
}

/// A function usable as a system: implemented for functions of up to 12
/// [`SystemParam`]s returning `()` or a [`Result`](crate::Result) (see
/// [`SystemOutput`]).
pub trait SystemParamFunction<Marker>: Send + Sync + 'static {
    /// The parameters, as a tuple.
    type Param: SystemParam;
    /// Calls the function; its outcome as a result.
    fn call(&mut self, param: SystemParamItem<'_, '_, Self::Param>) -> Result<(), SystemError>;
}

macro_rules! impl_function {
    ($($param:ident),*) => {
        #[allow(non_snake_case, clippy::too_many_arguments, reason = "the macro binds parameters to their type names and covers functions of up to 12 parameters")]
        impl<Func, Out: SystemOutput, $($param: SystemParam),*> SystemParamFunction<fn($($param,)*) -> Out> for Func
        where
            Func: Send + Sync + 'static,
            for<'a> &'a mut Func: FnMut($($param),*) -> Out + FnMut($(SystemParamItem<'_, '_, $param>),*) -> Out,
        {
            type Param = ($($param,)*);
            #[inline]
            fn call(&mut self, param: SystemParamItem<'_, '_, ($($param,)*)>) -> Result<(), SystemError> {
                fn call_inner<Out, $($param,)*>(mut f: impl FnMut($($param,)*) -> Out, $($param: $param,)*) -> Out {
                    f($($param,)*)
                }
                let ($($param,)*) = param;
                call_inner(self, $($param),*).into_result()
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
    /// What the latest run returned, until taken.
    error: Option<SystemError>,
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
        // SAFETY: forwarded contract.
        unsafe { self.run_unsafe_timed(world, this_run, Instant::now()) };
    }

    unsafe fn run_unsafe_timed(&mut self, world: &World, this_run: u64, start: Instant) -> Instant {
        assert_eq!(
            self.world_id,
            Some(world.id()),
            "system {} run on a world it was not initialized on",
            self.meta.name
        );
        let state = self.state.as_mut().expect("system initialized before it runs");
        let window = TickWindow::new(self.last_run, this_run);
        // SAFETY: forwarded contract.
        let params = unsafe { F::Param::get_param(state, world, window) };
        self.error = self.func.call(params).err();
        let end = Instant::now();
        self.stats.time = end.saturating_duration_since(start);
        self.stats.runs += 1;
        self.stats.queries.clear();
        F::Param::report(state, &mut self.stats.queries);
        self.last_run = this_run;
        end
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

    fn take_error(&mut self) -> Option<SystemError> {
        self.error.take()
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

/// Marker of [`IntoSystem`] for functions of system parameters (kept apart
/// from the marker of exclusive `fn(&mut World)` systems).
pub struct IsFunctionSystem;

impl<Marker: 'static, F: SystemParamFunction<Marker>> IntoSystem<(IsFunctionSystem, Marker)> for F {
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
            error: None,
            _marker: PhantomData,
        }
    }
}
