//! Function systems: plain functions whose parameters (`Query`, `Res`,
//! `ResMut`, `Commands`, `Local`, `EventReader`, `EventWriter`, tuples of
//! these, and [`ParamSet`]s of parameters that conflict with each other) are
//! fetched from the world before each run.
//!
//! ## The change rule
//! Before every run the world tick advances and the system runs at that
//! tick (`this_run`); its queries see stamps in `(last_run, this_run]`, where
//! `last_run` is the tick of its previous run. So a system sees exactly the
//! changes made since its previous run (by any system, in any order), and
//! never its own, which are stamped `this_run`.

use std::any::TypeId;
use std::time::Duration;

use crate::query::ChunkStats;
use crate::query::access::Access;
use crate::storage::component::Components;
use crate::storage::tick::TickWindow;
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

/// The first conflict between two systems' accesses (see
/// [`SystemAccess::first_conflict`]); [`SystemAccess::conflict_with`]
/// describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessConflict {
    /// A component both use, at least one of them mutably.
    Component(crate::storage::component::ComponentId, crate::query::access::ConflictKind),
    /// A resource one writes and the other reads or writes (its type name).
    Resource(&'static str),
}

impl AccessConflict {
    /// The conflict in words.
    pub fn describe(self, components: &Components) -> String {
        self.describe_with(|id| components.info(id).name())
    }

    /// The conflict in words, with the component's name from `name`.
    pub(crate) fn describe_with(
        self,
        name: impl FnOnce(crate::storage::component::ComponentId) -> &'static str,
    ) -> String {
        match self {
            AccessConflict::Component(id, kind) => format!("component {} {}", name(id), kind.describe()),
            AccessConflict::Resource(resource) => format!("resource {resource} written by one and used by the other"),
        }
    }
}

impl SystemAccess {
    /// The first conflict between two systems' accesses, described.
    pub fn conflict_with(&self, other: &SystemAccess, components: &Components) -> Option<String> {
        self.first_conflict(other).map(|c| c.describe(components))
    }

    /// The first conflict between two systems' accesses, without
    /// allocating (a schedule's build tests every pair of its systems).
    pub fn first_conflict(&self, other: &SystemAccess) -> Option<AccessConflict> {
        for a in &self.queries {
            for b in &other.queries {
                if let Some((id, kind)) = a.conflict_with(b) {
                    return Some(AccessConflict::Component(id, kind));
                }
            }
        }
        for (id, name) in &self.resource_writes {
            if other.resource_writes.iter().chain(&other.resource_reads).any(|(o, _)| o == id) {
                return Some(AccessConflict::Resource(name));
            }
        }
        for (id, name) in &other.resource_writes {
            if self.resource_reads.iter().any(|(o, _)| o == id) {
                return Some(AccessConflict::Resource(name));
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
    pub(crate) fn refuse(&mut self, message: String) {
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
    /// Wall time of the latest run. On a schedule's sequential executor it
    /// runs from the end of the previous system's run (see
    /// [`System::run_unsafe_timed`]),
    /// so the system's run conditions are in it.
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

pub mod command;
pub mod event;
pub mod exclusive;
mod function;
pub mod output;
mod param_set;
mod params;
mod query;
pub mod resource;

pub use command::{CommandQueue, Commands};
pub use event::{EventReader, EventWriter, Events};
pub use exclusive::{ExclusiveFunctionSystem, IsExclusiveFunctionSystem};
pub use function::{FunctionSystem, IntoSystem, IsFunctionSystem, System, SystemParamFunction};
pub use output::{ConditionOutput, FailedSystem, SystemError, SystemOutput};

pub use param_set::ParamSet;
pub use params::{FromWorld, Local, Res, ResMut};
pub use query::Query;
pub use query::{GetManyError, QueryCombinations, QueryCombinationsMut, QuerySingleError};
pub use resource::Resources;
