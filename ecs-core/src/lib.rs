//! # ecs-core: a chunked archetype store that knows what changed
//!
//! Entities live in archetypes (one per component set); each archetype keeps
//! its rows in 16 KiB, 64-byte-aligned chunks, one contiguous column per
//! component. For every chunk and column the store keeps the world tick of
//! the last write and of the last add, outside the chunk, and per row the
//! same two ticks. A query with `Changed<T>` first compares the chunk tick
//! (one integer, chunk memory untouched) and only looks at row ticks inside
//! chunks that may have changed: static parts of a world cost almost nothing.
//!
//! Priorities: skipping unchanged data, fast chunk iteration, clear errors for
//! bad input. No rendering, windows or assets; the [`app`] module adds the
//! game layer (an [`App`] with labelled schedules, time and a fixed step,
//! states, run conditions and plugins) on top of the store and schedules.
//!
//! ```
//! use ecs_core::{Changed, Component, World};
//!
//! #[derive(Component, Debug, PartialEq)]
//! struct Pos(f32);
//! #[derive(Component)]
//! struct Vel(f32);
//!
//! let mut world = World::new();
//! for i in 0..10_000 {
//!     world.spawn((Pos(i as f32), Vel(if i < 10 { 1.0 } else { 0.0 })));
//! }
//! let mut movers = world.query::<(&mut Pos, &Vel)>();
//! let mut changed = world.query_filtered::<&Pos, Changed<Pos>>();
//! changed.iter(&world).count(); // first run sees every spawn
//!
//! world.increment_change_tick();
//! movers.for_each_mut(&mut world, |(mut pos, vel)| {
//!     if vel.0 != 0.0 {
//!         pos.0 += vel.0; // marks this row only
//!     }
//! });
//! world.increment_change_tick();
//! assert_eq!(changed.iter(&world).count(), 10);
//! let stats = changed.stats();
//! assert!(stats.chunks_skipped > 0 && stats.chunks_visited() == 1);
//! ```
//!
//! Game code is usually written as systems: plain functions whose
//! parameters say what they touch. A [`Schedule`] runs systems whose accesses
//! do not conflict in parallel, and each system sees exactly the changes made
//! since its previous run.
//!
//! ```
//! use ecs_core::prelude::*;
//!
//! #[derive(Component)]
//! struct Pos(f32);
//! #[derive(Component)]
//! struct Vel(f32);
//! struct Gravity(f32);
//!
//! fn fall(mut q: Query<(&mut Vel, &mut Pos)>, g: Res<Gravity>) {
//!     q.for_each_mut(|(mut v, mut p)| {
//!         v.0 -= g.0;
//!         p.0 += v.0;
//!     });
//! }
//! fn cull(mut q: Query<(Entity, &Pos), Changed<Pos>>, mut commands: Commands) {
//!     q.for_each(|(e, p)| if p.0 < 0.0 { commands.despawn(e) });
//! }
//!
//! let mut world = World::new();
//! world.insert_resource(Gravity(1.0));
//! world.spawn_batch((0..100).map(|i| (Pos(i as f32), Vel(0.0))));
//! let mut schedule = Schedule::new();
//! schedule.add_systems((fall, cull).chain());
//! for _ in 0..3 {
//!     schedule.run(&mut world).unwrap();
//! }
//! assert_eq!(world.len(), 94); // heights 0..=5 fell below zero (1 + 2 + 3 = 6)
//! ```
//!
//! ## Layout
//! - [`storage`]: where rows live. [`storage::entity`] (handles and their
//!   locations), [`storage::component`] (the registry), [`storage::chunk`]
//!   (the 16 KiB layout), [`storage::archetype`] (chunks and their ticks),
//!   [`storage::bundle`], [`storage::tick`] (the clock and wrap-safe
//!   comparison).
//! - [`world`]: the store itself, its structural operations and resources.
//! - [`query`]: what queries fetch and filter, [`QueryState`] and its
//!   iteration forms (per row, per chunk, parallel, entity groups), `Mut<T>`
//!   and the write-mark rule, and the access checks.
//! - [`system`]: function systems and their parameters (`Query`, `Res`,
//!   `ResMut`, `Commands`, `Local`, events), resources, events and commands.
//! - [`schedule`]: ordering, sync points and parallel runs; system sets,
//!   run conditions, exclusive and one-shot systems, the ambiguity report.
//! - [`lifecycle`]: component hooks, observers of events (user events and
//!   `OnAdd`/`OnInsert`/`OnReplace`/`OnRemove`), and `RemovedComponents`.
//! - [`app`]: [`App`], plugins, labelled schedules and the frame order,
//!   [`app::time`] (clocks and the fixed step), [`app::state`] (states and
//!   their transition schedules).

pub mod app;
pub mod error;
pub mod lifecycle;
pub mod query;
pub mod schedule;
pub mod storage;
pub mod system;
pub mod world;

pub use app::{App, Plugin, ScheduleLabel, States};
/// Derive macros (`#[derive(SystemParam)]`, `#[derive(Bundle)]`), named like
/// the traits they implement.
pub use ecs_core_macros::{Bundle, Component, SystemParam};
pub use error::{BoundedLog, StoreError};
pub use lifecycle::{
    ComponentHook, ComponentHooks, DEFAULT_LIFECYCLE_ERROR_LIMIT, DEFAULT_REMOVAL_LOG_LIMIT, DeferredWorld, Event,
    LifecycleKind, ObserverId, On, OnAdd, OnInsert, OnRemove, OnReplace, RemovedComponents, RemovedReader,
};
pub use query::{
    Access, Added, Allow, Changed, ChunkStats, ChunkView, ConflictKind, Disabled, EntityGroups, GroupRows, Mut, Or,
    QueryData, QueryError, QueryFilter, QueryIter, QueryState, ReadOnlyQueryData, With, Without,
};
pub use query::{DetectChanges, DetectChangesMut, Has, Ref};
pub use schedule::SkippedSystem;
pub use schedule::{Ambiguity, Condition, IntoSystemSetConfigs, RunCondition, SystemId, SystemSet};
pub use schedule::{CommandError, IntoSystemConfig, IntoSystemConfigs, Schedule, ScheduleError, SystemConfig};
pub use storage::{
    Archetype, ArchetypeId, Bundle, CHUNK_ALIGN, CHUNK_SIZE, Component, ComponentId, ComponentInfo, Components, Entity,
    EntityLocation, Tick, TickWindow, chunk_pool_len, set_chunk_pool_limit,
};
pub use system::output::Result;
pub use system::{AccessConflict, ConditionOutput, FailedSystem, SystemError, SystemOutput};
pub use system::{
    CommandQueue, Commands, EventReader, EventWriter, Events, FromWorld, IntoSystem, Local, ParamSet, Query, Res,
    ResMut, Resources, System, SystemAccess, SystemMeta, SystemParam, SystemParamFunction, SystemStats,
};
pub use system::{GetManyError, QueryCombinations, QueryCombinationsMut, QuerySingleError};
pub use world::World;

// The derives name `::ecs_core`; this lets them work inside this crate too.
extern crate self as ecs_core;

/// The items most game code needs, including the traits whose methods
/// (`chain`, `before`, `after`) configure systems.
pub mod prelude {
    pub use crate::app::{
        App, AppExit, First, Fixed, FixedFirst, FixedLast, FixedPostUpdate, FixedPreUpdate, FixedUpdate, Last,
        NextState, OnEnter, OnExit, OnTransition, Plugin, PostStartup, PostUpdate, PreStartup, PreUpdate, Real,
        RunFixedMainLoop, ScheduleLabel, Startup, State, StateScoped, StateTransition, States, Time,
        TimeUpdateStrategy, Timer, TimerMode, Update, Virtual, in_state, on_timer, state_changed,
    };
    pub use crate::schedule::{
        Condition, IntoSystemSetConfigs, SystemId, SystemSet, any_component_removed, any_with_component,
        apply_deferred, not, on_event, resource_added, resource_changed, resource_equals, resource_exists,
        resource_removed, run_once,
    };
    pub use crate::{
        Added, Bundle, Changed, ChunkStats, Commands, Component, Entity, EventReader, EventWriter, Events,
        IntoSystemConfig, IntoSystemConfigs, Local, Mut, Or, ParamSet, Query, QueryState, Res, ResMut, Result,
        Schedule, SystemError, With, Without, World,
    };
    pub use crate::{DetectChanges, DetectChangesMut, Has, Ref};
}
