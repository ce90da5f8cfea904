//! Queries: what they fetch ([`fetch`]: `&T`, `&mut T` as [`Mut`],
//! `Option<&T>`, `Entity`), how they filter ([`filter`]: `With`, `Without`,
//! `Changed`, `Added`, `Or`), the cached [`QueryState`], and its iteration
//! forms: per row ([`QueryIter`], `for_each_mut`), per chunk ([`ChunkView`]),
//! in parallel over chunks, and over disjoint entity groups ([`groups`]).
//! Every form counts the chunks it visits and skips ([`ChunkStats`]).
//! [`change`] holds `Mut<T>` and the write-mark rule; [`access`] the
//! conflict checks that let systems run in parallel.

pub mod access;
pub mod change;
pub mod fetch;
pub mod filter;
pub mod groups;
mod iter;
mod par;
mod state;
mod view;

pub use access::{Access, ConflictKind};
pub use change::Mut;
pub use change::{DetectChanges, DetectChangesMut, Ref};
pub use fetch::Has;
pub use fetch::{QueryData, ReadOnlyQueryData};
pub use filter::{Added, Allow, Changed, Disabled, Or, QueryFilter, With, Without};
pub use groups::{EntityGroups, GroupRows};
pub use iter::QueryIter;
pub use state::{ChunkStats, QueryError, QueryState};
pub use view::ChunkView;
