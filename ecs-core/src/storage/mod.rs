//! Storage: entity handles and locations, the component registry, 16 KiB
//! chunks, archetypes with their change ticks kept outside the chunks,
//! bundles, and the tick clock.

pub mod archetype;
pub mod bundle;
pub mod chunk;
pub mod component;
pub(crate) mod edges;
pub mod entity;
pub mod tick;
pub(crate) mod unwind;

pub use archetype::{Archetype, ArchetypeId};
pub use bundle::Bundle;
pub use chunk::{CHUNK_ALIGN, CHUNK_SIZE, chunk_pool_len, set_chunk_pool_limit};
pub use component::{Component, ComponentId, ComponentInfo, Components};
pub use entity::{Entity, EntityLocation};
pub use tick::{Tick, TickWindow};
