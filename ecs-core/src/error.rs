//! The store's error type, and the bounded log errors wait in until read.

use crate::storage::entity::Entity;

/// What can go wrong in a store operation. Every failing operation leaves the
/// world exactly as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The handle refers to a despawned entity (or never referred to one).
    NoSuchEntity(Entity),
    /// The entity exists but lacks the component.
    MissingComponent {
        /// The entity asked about.
        entity: Entity,
        /// The component's type name.
        component: &'static str,
    },
    /// Not even one row of this component set fits in a chunk.
    ComponentTooLarge {
        /// The type names of the component set.
        components: Vec<&'static str>,
        /// Bytes one row needs, the entity column included.
        row_bytes: usize,
        /// Bytes a chunk holds.
        chunk_bytes: usize,
    },
    /// A bundle names the same component type twice.
    DuplicateComponent(&'static str),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NoSuchEntity(e) => {
                write!(f, "entity {e} does not exist (despawned or never spawned)")
            }
            StoreError::MissingComponent { entity, component } => {
                write!(f, "entity {entity} has no component {component}")
            }
            StoreError::ComponentTooLarge { components, row_bytes, chunk_bytes } => write!(
                f,
                "one row of [{}] needs {row_bytes} bytes with padding, more than a {chunk_bytes}-byte chunk holds",
                components.join(", ")
            ),
            StoreError::DuplicateComponent(name) => {
                write!(f, "bundle names component {name} more than once")
            }
        }
    }
}

impl std::error::Error for StoreError {}

/// The newest `limit` of a stream of errors (or any records), oldest first,
/// and a count of the older ones dropped to stay within it: where errors
/// wait for a reader that may never come (a game that never checks), they
/// cost bounded memory.
///
/// ```
/// use ecs_core::BoundedLog;
///
/// let mut log = BoundedLog::new(2);
/// log.extend(["a", "b", "c"]);
/// assert_eq!((log.len(), log.dropped()), (2, 1));
/// assert_eq!(log.take(), vec!["b", "c"]);
/// assert!(log.is_empty());
/// ```
#[derive(Clone, Debug)]
pub struct BoundedLog<T> {
    entries: std::collections::VecDeque<T>,
    limit: usize,
    dropped: u64,
}

impl<T> BoundedLog<T> {
    /// An empty log keeping at most `limit` entries (at least one).
    pub fn new(limit: usize) -> Self {
        BoundedLog { entries: std::collections::VecDeque::new(), limit: limit.max(1), dropped: 0 }
    }

    /// Adds an entry, dropping the oldest one if the log is full.
    pub fn push(&mut self, entry: T) {
        if self.entries.len() >= self.limit {
            self.entries.pop_front();
            self.dropped += 1;
        }
        self.entries.push_back(entry);
    }

    /// Adds entries in order, as [`BoundedLog::push`] does.
    pub fn extend(&mut self, entries: impl IntoIterator<Item = T>) {
        for entry in entries {
            self.push(entry);
        }
    }

    /// The entries kept, oldest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &T> + '_ {
        self.entries.iter()
    }

    /// Entries kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Takes the entries kept, oldest first, leaving none.
    pub fn take(&mut self) -> Vec<T> {
        std::mem::take(&mut self.entries).into()
    }

    /// The most entries kept.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Changes the most entries kept (at least one); lowering it drops the
    /// oldest kept entries now.
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
        let over = self.entries.len().saturating_sub(self.limit);
        self.entries.drain(..over);
        self.dropped += over as u64;
    }

    /// Entries dropped to stay within the limit, over the log's life.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}
