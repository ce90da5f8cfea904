//! One-shot systems: registered once, run on demand by id.
//!
//! [`World::register_system`] stores a system (a function of system
//! parameters, or an exclusive `fn(&mut World)`) and returns its
//! [`SystemId`]; [`World::run_system`] runs it now, with exclusive access:
//! its commands apply right after it. [`Commands::run_system`] queues a
//! run for when the commands apply. A registered system keeps its state
//! (`Local`s, query caches, last-run tick) between runs, so its `Changed`
//! queries see what changed since its previous run.
//!
//! ```
//! use ecs_core::prelude::*;
//!
//! #[derive(Default)]
//! struct Score(u32);
//! fn add_point(mut score: ResMut<Score>) {
//!     score.0 += 1;
//! }
//! let mut world = World::new();
//! world.insert_resource(Score::default());
//! let id = world.register_system(add_point);
//! world.run_system(id).unwrap();
//! world.run_system(id).unwrap();
//! assert_eq!(world.resource::<Score>().unwrap().0, 2);
//! ```

use crate::StoreError;
use crate::system::{Commands, IntoSystem, System, SystemError};
use crate::world::World;

/// A registered one-shot system's handle (see the [module docs](self)).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SystemId {
    index: u32,
    generation: u32,
}

impl std::fmt::Display for SystemId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "system #{}v{}", self.index, self.generation)
    }
}

/// Why [`World::run_system`] could not run a system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunSystemError {
    /// The id was never registered in this world, or was unregistered.
    NotFound(SystemId),
    /// The system is running (it ran itself, directly or through another
    /// one-shot system).
    Recursive(SystemId),
    /// The system cannot run: its parameters conflict or cannot be fetched
    /// (the message names the system and why).
    Failed(String),
    /// The system ran, but some of its commands failed (nothing was applied
    /// for them).
    Commands(Vec<StoreError>),
    /// The system ran and returned an error (a fallible system, see
    /// [`crate::system::output`]); its commands were applied, and `commands`
    /// lists those that failed.
    Returned {
        /// What the system returned.
        error: SystemError,
        /// Its commands that failed (nothing was applied for them).
        commands: Vec<StoreError>,
    },
}

impl std::fmt::Display for RunSystemError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunSystemError::NotFound(id) => write!(f, "{id} is not registered in this world"),
            RunSystemError::Recursive(id) => write!(f, "{id} is already running"),
            RunSystemError::Failed(message) => f.write_str(message),
            RunSystemError::Commands(errors) => {
                write!(f, "commands failed: ")?;
                write_list(f, errors)
            }
            RunSystemError::Returned { error, commands } => {
                write!(f, "the system returned an error: {error}")?;
                if !commands.is_empty() {
                    write!(f, "; and commands failed: ")?;
                    write_list(f, commands)?;
                }
                Ok(())
            }
        }
    }
}

/// Writes `errors` separated by semicolons.
fn write_list(f: &mut std::fmt::Formatter<'_>, errors: &[StoreError]) -> std::fmt::Result {
    for (k, e) in errors.iter().enumerate() {
        if k > 0 {
            f.write_str("; ")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

impl std::error::Error for RunSystemError {}

enum Slot {
    Idle(Box<dyn System>),
    Running,
    Free,
}

/// The world's registered one-shot systems (a resource).
#[derive(Default)]
struct RegisteredSystems {
    slots: Vec<(u32, Slot)>,
    free: Vec<u32>,
}

impl World {
    /// Registers a one-shot system; run it with [`World::run_system`] or
    /// [`Commands::run_system`].
    pub fn register_system<M>(&mut self, system: impl IntoSystem<M>) -> SystemId {
        let system: Box<dyn System> = Box::new(system.into_system());
        if !self.contains_resource::<RegisteredSystems>() {
            self.insert_resource(RegisteredSystems::default());
        }
        let registry = self.resource_mut::<RegisteredSystems>().expect("inserted above");
        match registry.free.pop() {
            Some(index) => {
                let (generation, slot) = &mut registry.slots[index as usize];
                *slot = Slot::Idle(system);
                SystemId { index, generation: *generation }
            }
            None => {
                registry.slots.push((0, Slot::Idle(system)));
                SystemId { index: registry.slots.len() as u32 - 1, generation: 0 }
            }
        }
    }

    /// Removes a one-shot system; false if `id` was not registered. A
    /// system that is running is removed when it finishes.
    pub fn unregister_system(&mut self, id: SystemId) -> bool {
        let Some(registry) = self.resource_mut::<RegisteredSystems>() else { return false };
        let Some((generation, slot)) = registry.slots.get_mut(id.index as usize) else { return false };
        if *generation != id.generation || matches!(slot, Slot::Free) {
            return false;
        }
        *slot = Slot::Free;
        *generation = generation.wrapping_add(1);
        registry.free.push(id.index);
        true
    }

    /// Runs a registered system now, with exclusive access: it is
    /// initialized on its first run, runs at a fresh tick, and its commands
    /// apply right after it.
    ///
    /// # Errors
    /// See [`RunSystemError`]; on [`RunSystemError::Commands`] the system
    /// did run.
    pub fn run_system(&mut self, id: SystemId) -> Result<(), RunSystemError> {
        let taken = self.resource_mut::<RegisteredSystems>().and_then(|registry| {
            let (generation, slot) = registry.slots.get_mut(id.index as usize)?;
            if *generation != id.generation {
                return None;
            }
            Some(std::mem::replace(slot, Slot::Running))
        });
        let system = match taken {
            Some(Slot::Idle(system)) => system,
            Some(Slot::Running) => return Err(RunSystemError::Recursive(id)),
            Some(Slot::Free) => {
                self.put_back(id, Slot::Free);
                return Err(RunSystemError::NotFound(id));
            }
            None => return Err(RunSystemError::NotFound(id)),
        };
        /// Puts the system back when its run ends, also by a panic.
        struct PutBack<'a> {
            world: &'a mut World,
            id: SystemId,
            system: Option<Box<dyn System>>,
        }
        impl Drop for PutBack<'_> {
            fn drop(&mut self) {
                if let Some(system) = self.system.take() {
                    self.world.put_back(self.id, Slot::Idle(system));
                }
            }
        }
        let mut guard = PutBack { world: self, id, system: Some(system) };
        let PutBack { world, system, .. } = &mut guard;
        let system = system.as_mut().expect("put back only on drop");
        let result = system.run(world);
        let returned = system.take_error();
        drop(guard);
        match (result, returned) {
            (Err(message), _) => Err(RunSystemError::Failed(message)),
            (Ok(commands), Some(error)) => Err(RunSystemError::Returned { error, commands }),
            (Ok(commands), None) if commands.is_empty() => Ok(()),
            (Ok(commands), None) => Err(RunSystemError::Commands(commands)),
        }
    }

    /// Returns a taken system to its slot, unless it was unregistered
    /// meanwhile.
    fn put_back(&mut self, id: SystemId, value: Slot) {
        if let Some(registry) = self.resource_mut::<RegisteredSystems>()
            && let Some((generation, slot)) = registry.slots.get_mut(id.index as usize)
            && *generation == id.generation
            && matches!(slot, Slot::Running)
        {
            *slot = value;
        }
    }
}

impl Commands<'_, '_> {
    /// Runs a registered one-shot system when the commands apply (see
    /// [`World::run_system`]). Its failures are reported through
    /// [`World::take_lifecycle_errors`], as those of observers are.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// struct Reset(SystemId);
    /// fn clear(mut n: ResMut<u32>) {
    ///     *n = 0;
    /// }
    /// fn check(n: Res<u32>, reset: Res<Reset>, mut commands: Commands) {
    ///     if *n > 2 {
    ///         commands.run_system(reset.0);
    ///     }
    /// }
    /// let mut world = World::new();
    /// world.insert_resource(5u32);
    /// let id = world.register_system(clear);
    /// world.insert_resource(Reset(id));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(check);
    /// schedule.run(&mut world).unwrap();
    /// assert_eq!(world.resource::<u32>(), Some(&0));
    /// ```
    pub fn run_system(&mut self, id: SystemId) {
        self.add(move |world: &mut World| {
            if let Err(error) = world.run_system(id) {
                world.lifecycle.errors.push(format!("one-shot {id}: {error}"));
            }
            Ok(())
        });
    }
}
