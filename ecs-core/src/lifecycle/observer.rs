//! Events and observers: systems that run when an event is triggered.
//!
//! An observer is a system whose first parameter is [`On<E>`]: it runs once
//! per triggered `E`, with exclusive access to the world (its commands are
//! applied right after it). Observers are global (they see every `E`,
//! targeted or not) or watch one entity ([`World::observe`]); an event
//! triggered at an entity runs the global observers and that entity's.
//! Lifecycle events ([`OnAdd<T>`], [`OnInsert<T>`], [`OnReplace<T>`],
//! [`OnRemove<T>`]) are triggered at the entity by structural operations
//! and run once the operation has completed, so an `OnRemove<T>` observer
//! finds the entity without `T` (use an `on_remove` hook to see the value).
//!
//! Propagation is off by default: an event that implements
//! [`Event::traverse`] (e.g. to a parent) goes on to the next entity when an
//! observer calls [`On::propagate`] (or always, with
//! [`Event::AUTO_PROPAGATE`]).
//!
//! ```
//! use ecs_core::{Commands, Component, Entity, Event, On, World};
//!
//! struct Explode {
//!     radius: f32,
//! }
//! impl Event for Explode {}
//! #[derive(Component)]
//! struct Hp(i32);
//!
//! let mut world = World::new();
//! world.add_observer(|trigger: On<Explode>, mut commands: Commands| {
//!     if let Some(target) = trigger.target() {
//!         if trigger.radius > 1.0 {
//!             commands.despawn(target);
//!         }
//!     }
//! });
//! let barrel = world.spawn((Hp(10),));
//! world.trigger_targets(Explode { radius: 3.0 }, barrel);
//! assert!(!world.contains(barrel));
//! ```

use std::any::TypeId;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};

use smallvec::SmallVec;

use super::LifecycleKind;
use crate::StoreError;
use crate::storage::component::{Component, ComponentId, Components};
use crate::storage::entity::Entity;
use crate::storage::tick::TickWindow;
use crate::system::{IntoSystem, System, SystemMeta, SystemParam, SystemParamFunction};
use crate::world::World;

/// Something observers can react to.
pub trait Event: Send + Sync + 'static {
    /// Whether a targeted event goes on to [`Event::traverse`]'s entity
    /// unless an observer stops it (default: only when an observer asks).
    const AUTO_PROPAGATE: bool = false;

    /// The entity a targeted event propagates to from `entity` (default:
    /// none, so the event never propagates).
    fn traverse(_world: &World, _entity: Entity) -> Option<Entity> {
        None
    }

    /// The key observers of this event are filed under (`None` if it needs a
    /// component that was never registered).
    #[doc(hidden)]
    fn event_key(_components: &Components) -> Option<EventKey> {
        Some(EventKey::Type(TypeId::of::<Self>()))
    }

    /// The key, registering what it needs.
    #[doc(hidden)]
    fn register_key(_world: &mut World) -> EventKey {
        EventKey::Type(TypeId::of::<Self>())
    }
}

/// Where observers are filed: a user event type, or a lifecycle event of a
/// component.
#[doc(hidden)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventKey {
    Type(TypeId),
    Lifecycle(LifecycleKind, ComponentId),
}

macro_rules! lifecycle_event {
    ($name:ident, $kind:ident, $doc:literal) => {
        #[doc = $doc]
        pub struct $name<T>(PhantomData<fn() -> T>);

        impl<T: Component> Event for $name<T> {
            fn event_key(components: &Components) -> Option<EventKey> {
                components.id::<T>().map(|id| EventKey::Lifecycle(LifecycleKind::$kind, id))
            }
            fn register_key(world: &mut World) -> EventKey {
                EventKey::Lifecycle(LifecycleKind::$kind, world.register::<T>())
            }
        }
    };
}

lifecycle_event!(OnAdd, Add, "Triggered at an entity that gained `T` (after the operation).");
lifecycle_event!(
    OnInsert,
    Insert,
    "Triggered at an entity whose `T` was written by spawn or insert (after the operation)."
);
lifecycle_event!(
    OnReplace,
    Replace,
    "Triggered at an entity whose `T` was overwritten or removed (after the operation)."
);
lifecycle_event!(OnRemove, Remove, "Triggered at an entity that lost `T` by remove or despawn (after the operation).");

/// Where a targeted event propagates next ([`Event::traverse`]), and
/// whether it does by default ([`Event::AUTO_PROPAGATE`]).
pub(crate) type Traversal = (fn(&World, Entity) -> Option<Entity>, bool);

/// An observer's handle, for [`World::remove_observer`]. The slot of a
/// removed observer is used again by a later one, under a new generation,
/// so an old handle never names the new observer.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObserverId {
    index: u32,
    generation: u32,
}

/// The event an observer runs for, while it runs.
pub(crate) struct TriggerSlot {
    key: EventKey,
    /// The event value, on the stack of the `trigger` call (a dangling,
    /// aligned pointer for the zero-sized lifecycle events).
    event: *const u8,
    target: Option<Entity>,
    propagate: AtomicBool,
}

// SAFETY: the slot is set only while an observer runs with exclusive access
// to the world, on the thread that triggered it; `event` points to a
// `Send + Sync` event that outlives that run.
unsafe impl Send for TriggerSlot {}
// SAFETY: as above; shared access only reads the pointer and the atomic.
unsafe impl Sync for TriggerSlot {}

/// The trigger an observer runs for: the event (also through `Deref`) and
/// its target. Only observers can take it (see [`World::add_observer`]).
pub struct On<'w, E: Event> {
    event: &'w E,
    target: Option<Entity>,
    propagate: &'w AtomicBool,
}

impl<E: Event> On<'_, E> {
    /// The event.
    pub fn event(&self) -> &E {
        self.event
    }

    /// The entity the event was triggered at (`None` for a global event).
    pub fn target(&self) -> Option<Entity> {
        self.target
    }

    /// Whether the event goes on to [`Event::traverse`]'s entity after the
    /// observers of this one (off unless [`Event::AUTO_PROPAGATE`]).
    pub fn propagate(&self, on: bool) {
        self.propagate.store(on, Ordering::Relaxed);
    }
}

impl<E: Event> Deref for On<'_, E> {
    type Target = E;
    fn deref(&self) -> &E {
        self.event
    }
}

fn not_in_observer<E>() -> String {
    format!(
        "On<{}> is only available to observers of that event (add the system with World::add_observer)",
        std::any::type_name::<E>()
    )
}

// SAFETY: reads only the world's trigger slot, which is set while the
// observer runs with exclusive world access; no component or resource.
unsafe impl<E: Event> SystemParam for On<'_, E> {
    type State = ();
    type Item<'w, 's> = On<'w, E>;

    /// Observers are initialized while their first trigger runs; anywhere
    /// else (a schedule) the system is refused when it is built.
    fn init_state(world: &mut World, meta: &mut SystemMeta) {
        let observing =
            matches!(&world.lifecycle.trigger, Some(slot) if E::event_key(world.components()) == Some(slot.key));
        if !observing {
            meta.refuse(format!("system {} is refused: {}", meta.name, not_in_observer::<E>()));
        }
    }

    fn validate(_: &(), world: &World) -> Result<(), String> {
        match &world.lifecycle.trigger {
            Some(slot) if E::event_key(world.components()) == Some(slot.key) => Ok(()),
            _ => Err(not_in_observer::<E>()),
        }
    }

    unsafe fn get_param<'w>(_: &mut (), world: &'w World, _: TickWindow) -> On<'w, E> {
        let slot = world.lifecycle.trigger.as_ref().unwrap_or_else(|| panic!("{}", not_in_observer::<E>()));
        assert_eq!(E::event_key(world.components()), Some(slot.key), "{}", not_in_observer::<E>());
        // SAFETY: the slot's key is `E`'s, so `event` points to an `E` (or is
        // a dangling, aligned pointer for a zero-sized lifecycle event),
        // alive until the observer run ends, which outlives `'w`.
        let event = unsafe { &*slot.event.cast::<E>() };
        On { event, target: slot.target, propagate: &slot.propagate }
    }
}

/// System parameter tuples that start with [`On<E>`]: what makes a
/// function an observer of `E`.
pub trait ObserverParams {
    /// The observed event.
    type Event: Event;
}

macro_rules! observer_params {
    ($($p:ident),*) => {
        impl<'a, E: Event, $($p),*> ObserverParams for (On<'a, E>, $($p,)*) {
            type Event = E;
        }
    };
}

observer_params!();
observer_params!(A);
observer_params!(A, B);
observer_params!(A, B, C);
observer_params!(A, B, C, D);
observer_params!(A, B, C, D, F);
observer_params!(A, B, C, D, F, G);
observer_params!(A, B, C, D, F, G, H);
observer_params!(A, B, C, D, F, G, H, I);
observer_params!(A, B, C, D, F, G, H, I, J);
observer_params!(A, B, C, D, F, G, H, I, J, K);
observer_params!(A, B, C, D, F, G, H, I, J, K, L);

/// One observer system and its state.
pub(crate) enum ObserverSlot {
    Idle(Box<dyn System>),
    /// Taken out while it runs.
    Running,
    Removed,
}

/// An observer slot: the system, the generation of the observer in it, and
/// the list it is filed in (so removing it touches that list only).
pub(crate) struct ObserverEntry {
    slot: ObserverSlot,
    generation: u32,
    key: EventKey,
    target: Option<Entity>,
}

/// Marks an entity that has observers of its own; removing it (despawn)
/// removes them.
#[derive(crate::Component)]
struct ObservedBy(Vec<ObserverId>);

fn forget_entity_observers(mut world: super::DeferredWorld<'_>, entity: Entity) {
    let ids = world.get::<ObservedBy>(entity).map(|o| o.0.clone()).unwrap_or_default();
    let world = world.world_mut();
    // Each removal takes the observer out of its own list and drops the
    // list once empty: the cost is the entity's observers, not the world's.
    for id in ids {
        world.remove_observer(id);
    }
}

impl World {
    /// Adds an observer: a system whose first parameter is [`On<E>`]. It runs
    /// each time an `E` is triggered, at any target or none.
    pub fn add_observer<M: 'static, F>(&mut self, observer: F) -> ObserverId
    where
        F: SystemParamFunction<M>,
        F::Param: ObserverParams,
    {
        let key = <<F::Param as ObserverParams>::Event as Event>::register_key(self);
        self.add_observer_at(key, None, Box::new(observer.into_system()))
    }

    /// Adds an observer that runs only for events triggered at `entity`;
    /// it is removed when the entity is despawned.
    pub fn observe<M: 'static, F>(&mut self, entity: Entity, observer: F) -> Result<ObserverId, StoreError>
    where
        F: SystemParamFunction<M>,
        F::Param: ObserverParams,
    {
        if !self.contains(entity) {
            return Err(StoreError::NoSuchEntity(entity));
        }
        let key = <<F::Param as ObserverParams>::Event as Event>::register_key(self);
        let id = self.add_observer_at(key, Some(entity), Box::new(observer.into_system()));
        if !self.lifecycle.observers_hook_set {
            self.register_component_hooks::<ObservedBy>().on_remove(forget_entity_observers);
            self.lifecycle.observers_hook_set = true;
        }
        match self.get_mut::<ObservedBy>(entity) {
            Ok(mut by) => by.0.push(id),
            Err(_) => self.insert(entity, (ObservedBy(vec![id]),))?,
        }
        Ok(id)
    }

    fn add_observer_at(&mut self, key: EventKey, entity: Option<Entity>, system: Box<dyn System>) -> ObserverId {
        let observers = &mut self.lifecycle.observers;
        let id = match self.lifecycle.free_observers.pop() {
            Some(index) => {
                let entry = &mut observers[index as usize];
                entry.generation = entry.generation.wrapping_add(1);
                *entry = ObserverEntry {
                    slot: ObserverSlot::Idle(system),
                    generation: entry.generation,
                    key,
                    target: entity,
                };
                ObserverId { index, generation: entry.generation }
            }
            None => {
                let index = u32::try_from(observers.len()).expect("more than u32::MAX observers at once");
                observers.push(ObserverEntry { slot: ObserverSlot::Idle(system), generation: 0, key, target: entity });
                ObserverId { index, generation: 0 }
            }
        };
        match entity {
            None => self.lifecycle.global.entry(key).or_default().push(id),
            Some(e) => self.lifecycle.at_entity.entry((key, e)).or_default().push(id),
        }
        if let EventKey::Lifecycle(kind, component) = key {
            self.lifecycle.component_mut(component).observed |= kind.bit();
            self.refresh_lifecycle_flags(component);
        }
        id
    }

    /// Removes an observer; false if it was already removed.
    pub fn remove_observer(&mut self, id: ObserverId) -> bool {
        let lifecycle = &mut self.lifecycle;
        let Some(entry) = lifecycle.observers.get_mut(id.index as usize) else { return false };
        if entry.generation != id.generation || matches!(entry.slot, ObserverSlot::Removed) {
            return false;
        }
        // A running observer's slot is freed when its run ends.
        if matches!(std::mem::replace(&mut entry.slot, ObserverSlot::Removed), ObserverSlot::Idle(_)) {
            lifecycle.free_observers.push(id.index);
        }
        let (key, target) = (entry.key, entry.target);
        match target {
            None => {
                if let Some(list) = lifecycle.global.get_mut(&key) {
                    list.retain(|&o| o != id);
                    if list.is_empty() {
                        lifecycle.global.remove(&key);
                    }
                }
            }
            Some(e) => {
                if let Some(list) = lifecycle.at_entity.get_mut(&(key, e)) {
                    list.retain(|&o| o != id);
                    if list.is_empty() {
                        lifecycle.at_entity.remove(&(key, e));
                    }
                }
            }
        }
        true
    }

    /// Triggers a global event: runs every global observer of `E` now.
    pub fn trigger<E: Event>(&mut self, event: E) {
        self.trigger_event(event, None);
    }

    /// Triggers an event at `target`: runs the global observers of `E` and
    /// the target's own, then propagates if asked (see [`Event::traverse`]).
    pub fn trigger_targets<E: Event>(&mut self, event: E, target: Entity) {
        self.trigger_event(event, Some(target));
    }

    fn trigger_event<E: Event>(&mut self, event: E, target: Option<Entity>) {
        let Some(key) = E::event_key(self.components()) else { return };
        let ptr = (&raw const event).cast::<u8>();
        self.run_observers(key, target, ptr, Some((E::traverse, E::AUTO_PROPAGATE)));
        self.flush_lifecycle();
        drop(event);
    }

    /// Runs the observers of `key` for one trigger; `event` points to the
    /// event value for the whole call.
    pub(crate) fn run_observers(
        &mut self,
        key: EventKey,
        mut target: Option<Entity>,
        event: *const u8,
        traverse: Option<Traversal>,
    ) {
        let mut global = true;
        // A traversal that loops is cut after one step per live entity.
        let mut steps = self.len() as usize + 1;
        loop {
            let mut ids: SmallVec<[ObserverId; 8]> = SmallVec::new();
            if global && let Some(list) = self.lifecycle.global.get(&key) {
                ids.extend_from_slice(list);
            }
            if let Some(t) = target
                && let Some(list) = self.lifecycle.at_entity.get(&(key, t))
            {
                ids.extend_from_slice(list);
            }
            let auto = traverse.is_some_and(|(_, auto)| auto);
            let slot = TriggerSlot { key, event, target, propagate: AtomicBool::new(auto) };
            let previous = self.lifecycle.trigger.replace(slot);
            for id in ids {
                self.run_observer(id);
            }
            let slot = std::mem::replace(&mut self.lifecycle.trigger, previous);
            let propagate = slot.is_some_and(|s| s.propagate.load(Ordering::Relaxed));
            let next = match (traverse, target) {
                (Some((traverse, _)), Some(t)) if propagate && steps > 0 => traverse(self, t),
                _ => None,
            };
            let Some(next) = next else { return };
            steps -= 1;
            target = Some(next);
            global = true;
        }
    }

    fn run_observer(&mut self, id: ObserverId) {
        let entry = &mut self.lifecycle.observers[id.index as usize];
        if entry.generation != id.generation {
            // Removed, and its slot given to another observer since the
            // trigger listed it.
            return;
        }
        let ObserverSlot::Idle(system) = std::mem::replace(&mut entry.slot, ObserverSlot::Running) else {
            // Removed, or already running (an observer that triggers its
            // own event does not run again inside itself).
            return;
        };
        /// Puts the system back after its run, also if it panics.
        struct PutBack<'a> {
            world: &'a mut World,
            id: ObserverId,
            system: Option<Box<dyn System>>,
        }
        impl Drop for PutBack<'_> {
            fn drop(&mut self) {
                let lifecycle = &mut self.world.lifecycle;
                let entry = &mut lifecycle.observers[self.id.index as usize];
                // The slot is this observer's until its run ends: a removal
                // while it ran left it `Removed`, not free.
                match entry.slot {
                    ObserverSlot::Running => {
                        if let Some(system) = self.system.take() {
                            entry.slot = ObserverSlot::Idle(system);
                        }
                    }
                    ObserverSlot::Removed => lifecycle.free_observers.push(self.id.index),
                    ObserverSlot::Idle(_) => {}
                }
            }
        }
        let mut guard = PutBack { world: self, id, system: Some(system) };
        let system = guard.system.as_mut().expect("set above");
        match system.run(guard.world) {
            Ok(errors) => guard.world.lifecycle.errors.extend(errors.into_iter().map(|e| e.to_string())),
            Err(message) => guard.world.lifecycle.errors.push(message),
        }
        // A fallible observer's error.
        if let Some(error) = system.take_error() {
            let message = format!("observer {} returned an error: {error}", system.meta().name);
            guard.world.lifecycle.errors.push(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(crate::Component)]
    struct Unit;
    struct Ping;
    impl Event for Ping {}

    #[test]
    fn observers_of_despawned_entities_leave_no_slot_or_list_behind() {
        let mut world = World::new();
        let keep = world.spawn((Unit,));
        world.observe(keep, |_: On<Ping>| {}).unwrap();
        for _ in 0..50 {
            let es: Vec<Entity> = (0..20).map(|_| world.spawn((Unit,))).collect();
            for &e in &es {
                world.observe(e, |_: On<Ping>| {}).unwrap();
                world.observe(e, |_: On<Ping>| {}).unwrap();
            }
            for &e in &es {
                world.despawn(e).unwrap();
            }
        }
        // 41 slots at most were ever in use at once; the lists hold only
        // the kept entity's.
        assert!(world.lifecycle.observers.len() <= 41, "{}", world.lifecycle.observers.len());
        assert_eq!(world.lifecycle.at_entity.len(), 1);
        // An observer that removes itself while it runs gives its slot
        // back when the run ends.
        let before = world.lifecycle.free_observers.len();
        let id = world.add_observer(|_: On<Ping>, mut commands: crate::Commands| {
            commands.add(|world: &mut World| -> Result<(), crate::StoreError> {
                let ids: Vec<ObserverId> = world.lifecycle.global.values().flatten().copied().collect();
                for id in ids {
                    world.remove_observer(id);
                }
                Ok(())
            });
        });
        world.trigger(Ping);
        assert!(!world.remove_observer(id));
        assert_eq!(world.lifecycle.free_observers.len(), before, "the slot it took is free again");
        assert!(world.lifecycle.global.is_empty());
    }
}
