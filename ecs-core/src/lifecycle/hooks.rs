//! Component hooks and the [`DeferredWorld`] they receive.

use crate::StoreError;
use crate::query::change::Mut;
use crate::storage::component::Component;
use crate::storage::entity::Entity;
use crate::system::{CommandQueue, Commands};
use crate::world::World;

/// A hook: a plain function run inside a structural operation (see the
/// [module docs](super) for when).
pub type ComponentHook = fn(DeferredWorld<'_>, Entity);

/// The hooks of one component type; each can be set once.
///
/// ```
/// use ecs_core::{Component, DeferredWorld, Entity, World};
/// #[derive(Component)]
/// struct Health(u32);
/// #[derive(Default)]
/// struct Deaths(u32);
///
/// let mut world = World::new();
/// world.insert_resource(Deaths::default());
/// world.register_component_hooks::<Health>().on_remove(|mut world: DeferredWorld, _: Entity| {
///     world.resource_mut::<Deaths>().unwrap().0 += 1;
/// });
/// let e = world.spawn((Health(3),));
/// world.despawn(e).unwrap();
/// assert_eq!(world.resource::<Deaths>().unwrap().0, 1);
/// ```
#[derive(Copy, Clone, Debug, Default)]
pub struct ComponentHooks {
    pub(crate) on_add: Option<ComponentHook>,
    pub(crate) on_insert: Option<ComponentHook>,
    pub(crate) on_replace: Option<ComponentHook>,
    pub(crate) on_remove: Option<ComponentHook>,
}

fn set(slot: &mut Option<ComponentHook>, hook: ComponentHook, which: &str, component: &str) {
    assert!(slot.is_none(), "the {which} hook of {component} is already registered (one per component type)");
    *slot = Some(hook);
}

/// Sets the hooks of one component type: what
/// [`World::register_component_hooks`] returns.
pub struct HooksBuilder<'w> {
    pub(crate) world: &'w mut World,
    pub(crate) component: crate::ComponentId,
}

impl HooksBuilder<'_> {
    fn with(&mut self, f: impl FnOnce(&mut ComponentHooks, &str)) -> &mut Self {
        let name = self.world.components().info(self.component).name();
        f(&mut self.world.lifecycle.component_mut(self.component).hooks, name);
        self.world.refresh_lifecycle_flags(self.component);
        self
    }

    /// Runs after the component is added to an entity that did not have it
    /// (spawn, spawn_batch, insert).
    ///
    /// # Panics
    /// If an `on_add` hook is already registered for this type.
    pub fn on_add(&mut self, hook: ComponentHook) -> &mut Self {
        self.with(|h, name| set(&mut h.on_add, hook, "on_add", name))
    }

    /// Runs after a value of the component is written by spawn or insert,
    /// whether it was added or replaced one (after `on_add`).
    ///
    /// # Panics
    /// If an `on_insert` hook is already registered for this type.
    pub fn on_insert(&mut self, hook: ComponentHook) -> &mut Self {
        self.with(|h, name| set(&mut h.on_insert, hook, "on_insert", name))
    }

    /// Runs before a value of the component is overwritten by insert or
    /// removed by remove or despawn (the old value is still readable).
    ///
    /// # Panics
    /// If an `on_replace` hook is already registered for this type.
    pub fn on_replace(&mut self, hook: ComponentHook) -> &mut Self {
        self.with(|h, name| set(&mut h.on_replace, hook, "on_replace", name))
    }

    /// Runs before the component is removed from an entity (remove,
    /// despawn, clear; not when the world is dropped), after `on_replace`;
    /// the value is still readable.
    ///
    /// # Panics
    /// If an `on_remove` hook is already registered for this type.
    pub fn on_remove(&mut self, hook: ComponentHook) -> &mut Self {
        self.with(|h, name| set(&mut h.on_remove, hook, "on_remove", name))
    }
}

impl World {
    /// The hooks of component type `T`, to set (each once).
    pub fn register_component_hooks<T: Component>(&mut self) -> HooksBuilder<'_> {
        let component = self.register::<T>();
        HooksBuilder { world: self, component }
    }
}

/// The world as a hook sees it: components and resources can be read and
/// written, structural changes are queued as commands and run when the
/// operation that ran the hook has completed.
pub struct DeferredWorld<'w> {
    world: &'w mut World,
    queue: CommandQueue,
}

impl Drop for DeferredWorld<'_> {
    fn drop(&mut self) {
        let mut queue = std::mem::take(&mut self.queue);
        self.world.lifecycle.deferred.append(&mut queue);
    }
}

impl<'w> DeferredWorld<'w> {
    pub(crate) fn new(world: &'w mut World) -> Self {
        DeferredWorld { world, queue: CommandQueue::default() }
    }

    /// The world, read-only.
    pub fn world(&self) -> &World {
        self.world
    }

    /// The world itself, for the store's own hooks (which change no
    /// structure).
    pub(crate) fn world_mut(&mut self) -> &mut World {
        self.world
    }

    /// One component of a live entity.
    pub fn get<T: Component>(&self, entity: Entity) -> Result<&T, StoreError> {
        self.world.get(entity)
    }

    /// One component of a live entity, mutably (marks the row on write).
    pub fn get_mut<T: Component>(&mut self, entity: Entity) -> Result<Mut<'_, T>, StoreError> {
        self.world.get_mut(entity)
    }

    /// Whether `entity` is alive.
    pub fn contains(&self, entity: Entity) -> bool {
        self.world.contains(entity)
    }

    /// A resource, if present.
    pub fn resource<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.world.resource()
    }

    /// A resource, mutably.
    pub fn resource_mut<R: Send + Sync + 'static>(&mut self) -> Option<&mut R> {
        self.world.resource_mut()
    }

    /// Records structural changes, applied once the current operation has
    /// completed.
    pub fn commands(&mut self) -> Commands<'_, '_> {
        self.queue.commands(self.world)
    }
}
