//! The store's error type.

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
