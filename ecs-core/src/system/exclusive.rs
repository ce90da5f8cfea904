//! Exclusive systems: functions of `&mut World`, run alone.
//!
//! A function `fn(&mut World)` (or a closure of that shape) is a system like
//! any other: it goes into a schedule with `add_systems`, takes part in
//! `before`/`after`/`chain`, sets and run conditions. Because it may touch
//! anything, a schedule runs it with no other system running, after every
//! system ordered (or added) before it has finished, and applies those
//! systems' deferred commands first, so it sees them.
//!
//! ```
//! use ecs_core::prelude::*;
//!
//! #[derive(Component)]
//! struct Pos(f32);
//! fn spawn_one(mut commands: Commands) {
//!     commands.spawn((Pos(0.0),));
//! }
//! fn count(world: &mut World) {
//!     let n = world.query::<&Pos>().iter(world).count();
//!     world.insert_resource(n);
//! }
//! let mut world = World::new();
//! let mut schedule = Schedule::new();
//! schedule.add_systems((spawn_one, count).chain());
//! schedule.run(&mut world).unwrap();
//! // The exclusive system saw the spawn queued before it.
//! assert_eq!(world.resource::<usize>(), Some(&1));
//! ```

use std::marker::PhantomData;
use std::time::Instant;

use crate::system::{IntoSystem, System, SystemError, SystemMeta, SystemOutput, SystemStats};
use crate::world::World;

/// Marker of [`IntoSystem`] for exclusive `fn(&mut World)` systems.
pub struct IsExclusiveFunctionSystem;

/// A function of `&mut World` turned into a [`System`] (see the
/// [module docs](self)). It returns `()` or a [`Result`](crate::Result)
/// (`Out`, see [`SystemOutput`]).
pub struct ExclusiveFunctionSystem<F, Out = ()> {
    func: F,
    meta: SystemMeta,
    stats: SystemStats,
    last_run: u64,
    world_id: Option<u64>,
    /// What the latest run returned, until taken.
    error: Option<SystemError>,
    _out: PhantomData<fn() -> Out>,
}

impl<F, Out> System for ExclusiveFunctionSystem<F, Out>
where
    F: FnMut(&mut World) -> Out + Send + Sync + 'static,
    Out: SystemOutput,
{
    fn initialize(&mut self, world: &mut World) {
        self.world_id.get_or_insert(world.id());
    }

    fn meta(&self) -> &SystemMeta {
        &self.meta
    }

    fn validate(&self, world: &World) -> Result<(), String> {
        match self.world_id {
            Some(id) if id != world.id() => Err(format!(
                "system {} was initialized on world {id} and cannot run on world {}",
                self.meta.name,
                world.id()
            )),
            _ => Ok(()),
        }
    }

    /// Always panics: an exclusive system needs `&mut World` and runs
    /// through [`System::run_exclusive`].
    unsafe fn run_unsafe(&mut self, _world: &World, _this_run: u64) {
        panic!("exclusive system {} needs the whole world: run it through System::run_exclusive", self.meta.name)
    }

    fn run_exclusive(&mut self, world: &mut World, this_run: u64) {
        assert!(
            self.world_id.is_none_or(|id| id == world.id()),
            "system {} run on a world it was not initialized on",
            self.meta.name
        );
        self.world_id = Some(world.id());
        let start = Instant::now();
        self.error = (self.func)(world).into_result().err();
        self.stats.time = start.elapsed();
        self.stats.runs += 1;
        self.last_run = this_run;
    }

    fn run(&mut self, world: &mut World) -> Result<Vec<crate::StoreError>, String> {
        self.initialize(world);
        self.validate(world)?;
        let this_run = world.increment_change_tick();
        self.run_exclusive(world, this_run);
        // Later direct writes are stamped after this run.
        world.increment_change_tick();
        Ok(Vec::new())
    }

    fn apply_deferred(&mut self, _world: &mut World, _errors: &mut Vec<crate::StoreError>) {}

    fn take_error(&mut self) -> Option<SystemError> {
        self.error.take()
    }

    fn stats(&self) -> &SystemStats {
        &self.stats
    }

    fn last_run(&self) -> u64 {
        self.last_run
    }

    fn is_exclusive(&self) -> bool {
        true
    }
}

impl<F, Out> IntoSystem<(IsExclusiveFunctionSystem, Out)> for F
where
    F: FnMut(&mut World) -> Out + Send + Sync + 'static,
    Out: SystemOutput,
{
    type System = ExclusiveFunctionSystem<F, Out>;

    fn into_system(self) -> Self::System {
        let name = std::any::type_name::<F>().to_string();
        ExclusiveFunctionSystem {
            func: self,
            meta: SystemMeta { name: name.clone(), ..SystemMeta::default() },
            stats: SystemStats { name, ..SystemStats::default() },
            last_run: 0,
            world_id: None,
            error: None,
            _out: PhantomData,
        }
    }
}
