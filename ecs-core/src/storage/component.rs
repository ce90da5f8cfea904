//! Component types and their registry.

use std::alloc::Layout;
use std::any::TypeId;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A type whose values can be stored in the world, one column per type.
/// Implement it with `#[derive(Component)]`. Zero-sized types are tags and
/// take no chunk space.
///
/// Only `Component` types are stored as one value: a tuple or a derived
/// [`Bundle`](crate::Bundle) in a bundle position is flattened into its
/// components (see [`bundle`](crate::storage::bundle)). Wrap a foreign type
/// in a newtype to store it.
pub trait Component: 'static + Send + Sync {}

/// The dense id of a registered component type, in registration order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ComponentId(pub(crate) u32);

impl ComponentId {
    /// The id as an index into dense per-component tables.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What the store knows about one component type.
#[derive(Clone, Debug)]
pub struct ComponentInfo {
    id: ComponentId,
    type_id: TypeId,
    name: &'static str,
    layout: Layout,
    drop: Option<unsafe fn(*mut u8)>,
}

impl ComponentInfo {
    /// The component's id.
    pub fn id(&self) -> ComponentId {
        self.id
    }

    /// The Rust type id.
    pub fn type_id(&self) -> TypeId {
        self.type_id
    }

    /// The type name, for messages.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Size and alignment of one value.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Whether values need their destructor run.
    pub fn needs_drop(&self) -> bool {
        self.drop.is_some()
    }

    pub(crate) fn drop_fn(&self) -> Option<unsafe fn(*mut u8)> {
        self.drop
    }
}

/// # Safety
/// `ptr` must point to a valid, initialised `T` that is not used afterwards.
unsafe fn drop_ptr<T>(ptr: *mut u8) {
    // SAFETY: the caller guarantees `ptr` holds a live `T` that is dropped once.
    unsafe { std::ptr::drop_in_place(ptr.cast::<T>()) }
}

/// A hasher for `TypeId` keys: they are already well-distributed hashes.
#[derive(Default)]
pub(crate) struct TypeIdHasher(u64);

impl Hasher for TypeIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(buf));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
}

/// A map keyed by `TypeId`.
pub(crate) type TypeIdMap<V> = HashMap<TypeId, V, BuildHasherDefault<TypeIdHasher>>;

/// The registry of component types known to a world.
#[derive(Default, Debug)]
pub struct Components {
    infos: Vec<ComponentInfo>,
    by_type: TypeIdMap<ComponentId>,
}

impl Components {
    /// Registers `T` (once) and returns its id.
    pub fn register<T: Component>(&mut self) -> ComponentId {
        let type_id = TypeId::of::<T>();
        if let Some(&id) = self.by_type.get(&type_id) {
            return id;
        }
        let id = ComponentId(self.infos.len() as u32);
        let drop: Option<unsafe fn(*mut u8)> = if std::mem::needs_drop::<T>() { Some(drop_ptr::<T>) } else { None };
        self.infos.push(ComponentInfo {
            id,
            type_id,
            name: std::any::type_name::<T>(),
            layout: Layout::new::<T>(),
            drop,
        });
        self.by_type.insert(type_id, id);
        id
    }

    /// The id of `T`, if registered.
    pub fn id<T: Component>(&self) -> Option<ComponentId> {
        self.by_type.get(&TypeId::of::<T>()).copied()
    }

    /// What is known about a registered component.
    ///
    /// # Panics
    /// If `id` does not come from this registry.
    pub fn info(&self, id: ComponentId) -> &ComponentInfo {
        &self.infos[id.index()]
    }

    /// How many component types are registered.
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Whether no component type is registered.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(crate::Component)]
    struct Plain(#[expect(dead_code, reason = "only the layout matters")] u32);
    #[derive(crate::Component)]
    struct Owning(#[expect(dead_code, reason = "only the drop glue matters")] String);
    #[derive(crate::Component)]
    struct Never;

    #[test]
    fn register_is_idempotent_and_dense() {
        let mut c = Components::default();
        let a = c.register::<Plain>();
        let b = c.register::<Owning>();
        assert_eq!(c.register::<Plain>(), a);
        assert_eq!((a.index(), b.index()), (0, 1));
        assert!(!c.info(a).needs_drop());
        assert!(c.info(b).needs_drop());
        assert_eq!(c.id::<Owning>(), Some(b));
        assert_eq!(c.id::<Never>(), None);
    }
}
