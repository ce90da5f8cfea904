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
//! bad input. It is a library, not a framework: no app loop, no rendering.
//!
//! ```
//! use ecs_core::{Changed, World};
//!
//! #[derive(Debug, PartialEq)]
//! struct Pos(f32);
//! struct Vel(f32);
//!
//! let mut world = World::new();
//! for i in 0..10_000 {
//!     world.spawn((Pos(i as f32), Vel(if i < 10 { 1.0 } else { 0.0 }))).unwrap();
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
//! Modules: [`tick`] (clock and wrap-safe comparison), [`mod@entity`],
//! [`component`], [`chunk`] (16 KiB layout), [`archetype`] (chunks and ticks),
//! [`bundle`], [`world`], [`fetch`] and [`filter`] (what queries take),
//! [`query`] (states, iterators, chunk views, skip counts), [`change`]
//! (`Mut<T>` and the write-mark rule), [`access`] (conflict checks).

pub mod access;
pub mod archetype;
pub mod bundle;
pub mod change;
pub mod chunk;
pub mod component;
mod edges;
pub mod entity;
pub mod error;
pub mod fetch;
pub mod filter;
pub mod query;
pub mod resource;
pub mod tick;
pub mod world;

pub use access::{Access, ConflictKind};
pub use archetype::{Archetype, ArchetypeId};
pub use bundle::Bundle;
pub use change::Mut;
pub use chunk::{CHUNK_ALIGN, CHUNK_SIZE, chunk_pool_len, set_chunk_pool_limit};
pub use component::{Component, ComponentId, ComponentInfo, Components};
pub use entity::{Entity, EntityLocation};
pub use error::StoreError;
pub use fetch::{QueryData, ReadOnlyQueryData};
pub use filter::{Added, Changed, Or, QueryFilter, With, Without};
pub use query::{ChunkStats, ChunkView, QueryError, QueryIter, QueryState};
pub use resource::Resources;
pub use tick::{Tick, TickWindow};
pub use world::World;

/// The README's code blocks, run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
