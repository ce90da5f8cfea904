//! Lifecycle: reacting to components appearing and disappearing.
//!
//! - [`hooks`]: one function per component type and lifecycle event
//!   (add, insert, replace, remove), run inside the structural operation at
//!   a documented point, with a [`DeferredWorld`] that can read and write
//!   components and resources and queue commands, but not change structure.
//! - [`observer`]: systems that run when an [`Event`] is triggered, globally
//!   or at an entity, including the lifecycle events [`OnAdd`],
//!   [`OnInsert`], [`OnReplace`] and [`OnRemove`] (queued as deferred
//!   commands and run when the structural operation has completed).
//! - [`removed`]: [`RemovedComponents<T>`], the entities that lost `T`
//!   since a system last ran, with the same window rule as `Changed`.
//!
//! ## Cost when nobody listens
//! Each archetype keeps one byte of flags: whether any of its components
//! has a hook, an observer or a removal reader for each lifecycle event.
//! A structural operation tests that byte once; when it is zero (nothing
//! listens) nothing else is looked at.
//!
//! ## Order inside an operation
//! For a component that an operation adds, replaces or removes:
//! 1. `on_replace` hooks (the old value is still there; insert over an
//!    existing value, remove, despawn), then `on_remove` hooks (remove,
//!    despawn), for each affected component in the archetype's component
//!    order; the removal is logged for [`RemovedComponents`] readers;
//! 2. the structural change itself;
//! 3. `on_add` hooks (components the entity did not have), then `on_insert`
//!    hooks (every inserted component, new or replacing), in the bundle's
//!    order (spawn: the archetype's component order);
//! 4. the commands the hooks queued and the observers of the lifecycle
//!    events run, in the order they were queued, once the outermost
//!    operation has completed (with exclusive world access).
//!
//! A hook that panics leaves the world consistent: hooks of step 1 run
//! before anything changed (the operation does not happen), hooks of step 3
//! after it completed.

pub mod hooks;
pub mod observer;
pub mod removed;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

pub use hooks::{ComponentHook, ComponentHooks, DeferredWorld};
pub use observer::{Event, ObserverId, On, OnAdd, OnInsert, OnRemove, OnReplace};
pub use removed::{DEFAULT_REMOVAL_LOG_LIMIT, RemovedComponents, RemovedReader};

use crate::error::BoundedLog;
use crate::storage::component::ComponentId;
use crate::storage::entity::Entity;
use crate::system::CommandQueue;
use crate::world::World;
use observer::{EventKey, TriggerSlot};
use removed::RemovedLog;

/// A lifecycle event kind, also the flag bit archetypes keep for it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LifecycleKind {
    /// The entity gains the component.
    Add,
    /// A value is written: added or replacing one.
    Insert,
    /// An existing value is about to be overwritten or removed.
    Replace,
    /// The component is about to be removed (remove or despawn).
    Remove,
}

impl LifecycleKind {
    #[inline]
    pub(crate) const fn bit(self) -> u8 {
        match self {
            LifecycleKind::Add => 1,
            LifecycleKind::Insert => 2,
            LifecycleKind::Replace => 4,
            LifecycleKind::Remove => 8,
        }
    }
}

/// What listens to one component type.
#[derive(Clone, Debug, Default)]
pub(crate) struct ComponentLifecycle {
    pub(crate) hooks: ComponentHooks,
    /// Bits of the lifecycle kinds some observer watches.
    pub(crate) observed: u8,
    /// Whether a `RemovedComponents` reader exists (removals are logged).
    pub(crate) removal_tracked: bool,
}

impl ComponentLifecycle {
    /// The archetype flag bits this component contributes.
    pub(crate) fn flags(&self) -> u8 {
        let mut flags = self.observed;
        for (hook, kind) in [
            (self.hooks.on_add.is_some(), LifecycleKind::Add),
            (self.hooks.on_insert.is_some(), LifecycleKind::Insert),
            (self.hooks.on_replace.is_some(), LifecycleKind::Replace),
            (self.hooks.on_remove.is_some(), LifecycleKind::Remove),
        ] {
            if hook {
                flags |= kind.bit();
            }
        }
        if self.removal_tracked {
            flags |= LifecycleKind::Remove.bit();
        }
        flags
    }
}

/// The world's lifecycle state: per-component listeners, observers, the
/// removal logs, and the commands queued by hooks and lifecycle events.
pub(crate) struct Lifecycle {
    /// By component index.
    pub(crate) components: Vec<ComponentLifecycle>,
    /// Observer systems by id index.
    pub(crate) observers: Vec<observer::ObserverEntry>,
    /// Slots of removed observers, for the next ones added.
    pub(crate) free_observers: Vec<u32>,
    /// Whether the hook that forgets an entity's observers is registered.
    pub(crate) observers_hook_set: bool,
    /// Observers of each event, global (watching every target).
    pub(crate) global: std::collections::HashMap<EventKey, Vec<ObserverId>>,
    /// Observers of each event at one entity.
    pub(crate) at_entity: std::collections::HashMap<(EventKey, Entity), Vec<ObserverId>>,
    /// Removal logs by component index.
    pub(crate) removed: Vec<RemovedLog>,
    /// [`World::set_removal_log_limit`], if set.
    pub(crate) removal_log_limit: Option<usize>,
    /// Commands queued by hooks and lifecycle events, run when the
    /// outermost structural operation completes.
    pub(crate) deferred: CommandQueue,
    /// Whether the deferred queue is being run (nested operations leave it
    /// to the outer loop).
    pub(crate) flushing: bool,
    /// The event an observer is running for.
    pub(crate) trigger: Option<TriggerSlot>,
    /// Errors of deferred commands and observers, kept for
    /// [`World::take_lifecycle_errors`] (the newest of them: a failing
    /// observer in a world whose errors nobody reads costs bounded memory).
    pub(crate) errors: BoundedLog<String>,
}

/// The default of [`World::set_lifecycle_error_limit`]: the newest 1024
/// errors are kept until [`World::take_lifecycle_errors`] takes them.
pub const DEFAULT_LIFECYCLE_ERROR_LIMIT: usize = 1024;

impl Default for Lifecycle {
    fn default() -> Self {
        Lifecycle {
            components: Vec::new(),
            observers: Vec::new(),
            free_observers: Vec::new(),
            observers_hook_set: false,
            global: std::collections::HashMap::new(),
            at_entity: std::collections::HashMap::new(),
            removed: Vec::new(),
            removal_log_limit: None,
            deferred: CommandQueue::default(),
            flushing: false,
            trigger: None,
            errors: BoundedLog::new(DEFAULT_LIFECYCLE_ERROR_LIMIT),
        }
    }
}

impl Lifecycle {
    pub(crate) fn component(&self, id: ComponentId) -> Option<&ComponentLifecycle> {
        self.components.get(id.index())
    }

    pub(crate) fn component_mut(&mut self, id: ComponentId) -> &mut ComponentLifecycle {
        if self.components.len() <= id.index() {
            self.components.resize_with(id.index() + 1, ComponentLifecycle::default);
        }
        &mut self.components[id.index()]
    }

    pub(crate) fn removed_log_mut(&mut self, id: ComponentId) -> &mut RemovedLog {
        if self.removed.len() <= id.index() {
            self.removed.resize_with(id.index() + 1, RemovedLog::default);
        }
        &mut self.removed[id.index()]
    }

    /// Registers a removal reader of component `id`; the log keeps entries
    /// until every live reader has passed them.
    pub(crate) fn add_removal_reader(&mut self, id: ComponentId) -> Arc<AtomicU64> {
        self.removed_log_mut(id).add_reader()
    }
}

impl World {
    /// Recomputes the lifecycle flags of every archetype holding `id` after
    /// a listener was added.
    pub(crate) fn refresh_lifecycle_flags(&mut self, id: ComponentId) {
        let flags = self.lifecycle.component(id).map_or(0, ComponentLifecycle::flags);
        for arch in self.archetypes_mut() {
            if arch.contains(id) {
                arch.lifecycle |= flags;
            }
        }
    }

    /// The lifecycle flags an archetype of `components` starts with.
    pub(crate) fn lifecycle_flags_of(&self, components: &[ComponentId]) -> u8 {
        components.iter().filter_map(|&c| self.lifecycle.component(c)).fold(0, |f, c| f | c.flags())
    }

    /// Runs the hooks of `kind` for `components` of `entity`, queues the
    /// observers of the lifecycle event, and logs removals: the slow path of
    /// a structural operation whose archetype has the flag.
    pub(crate) fn run_lifecycle(&mut self, kind: LifecycleKind, entity: Entity, components: &[ComponentId]) {
        let tick = self.change_tick();
        for &id in components {
            let Some(listeners) = self.lifecycle.component(id) else { continue };
            let hook = match kind {
                LifecycleKind::Add => listeners.hooks.on_add,
                LifecycleKind::Insert => listeners.hooks.on_insert,
                LifecycleKind::Replace => listeners.hooks.on_replace,
                LifecycleKind::Remove => listeners.hooks.on_remove,
            };
            let observed = listeners.observed & kind.bit() != 0;
            let logged = kind == LifecycleKind::Remove && listeners.removal_tracked;
            if logged {
                let limit = self.lifecycle.removal_log_limit.unwrap_or(removed::DEFAULT_REMOVAL_LOG_LIMIT);
                self.lifecycle.removed_log_mut(id).push(entity, tick, limit);
            }
            if let Some(hook) = hook {
                // The hook's commands join the deferred queue when its
                // `DeferredWorld` drops (also if the hook panics).
                hook(DeferredWorld::new(self), entity);
            }
            if observed {
                let key = EventKey::Lifecycle(kind, id);
                self.lifecycle.deferred.push(move |world: &mut World| {
                    world.run_observers(key, Some(entity), std::ptr::NonNull::<u8>::dangling().as_ptr(), None);
                    Ok(())
                });
            }
        }
    }

    /// Runs the commands queued by hooks and lifecycle events, unless an
    /// outer call is already doing so. Failed commands are kept for
    /// [`World::take_lifecycle_errors`].
    pub(crate) fn flush_lifecycle(&mut self) {
        if self.lifecycle.flushing || self.lifecycle.deferred.is_empty() {
            return;
        }
        self.lifecycle.flushing = true;
        struct Reset<'a>(&'a mut World);
        impl Drop for Reset<'_> {
            fn drop(&mut self) {
                self.0.lifecycle.flushing = false;
            }
        }
        let reset = Reset(self);
        loop {
            let mut queue = std::mem::take(&mut reset.0.lifecycle.deferred);
            if queue.is_empty() {
                break;
            }
            let errors = queue.apply(reset.0);
            reset.0.lifecycle.errors.extend(errors.into_iter().map(|e| e.to_string()));
            // Commands left by a panic stay queued in front of new ones.
            queue.append(&mut reset.0.lifecycle.deferred);
            reset.0.lifecycle.deferred = queue;
        }
    }

    /// Runs now the commands that hooks queued and the observers of
    /// lifecycle events that are still waiting. Structural operations do
    /// this when they complete; what a panic interrupted waits for the next
    /// one, or for this call.
    pub fn flush(&mut self) {
        self.flush_lifecycle();
    }

    /// Errors of commands queued by hooks, and of observers that could not
    /// run (a missing resource, a refused query), since the last call,
    /// oldest first: the newest [`DEFAULT_LIFECYCLE_ERROR_LIMIT`] of them
    /// unless [`World::set_lifecycle_error_limit`] says otherwise (the
    /// older ones are counted by [`World::lifecycle_errors_dropped`]).
    /// An [`App`](crate::App) takes them after each schedule it runs and
    /// hands them to its error handler
    /// ([`App::set_error_handler`](crate::App::set_error_handler)).
    pub fn take_lifecycle_errors(&mut self) -> Vec<String> {
        self.lifecycle.errors.take()
    }

    /// How many lifecycle errors are kept for
    /// [`World::take_lifecycle_errors`] (at least one): past it, the oldest
    /// is dropped for each new one, so a world whose errors nobody takes
    /// does not grow without bound. Lowering it drops the oldest kept ones
    /// now.
    ///
    /// ```
    /// use ecs_core::{Event, On, Res, World};
    ///
    /// struct Boom;
    /// impl Event for Boom {}
    /// struct Score; // never inserted: the observer cannot run
    ///
    /// let mut world = World::new();
    /// world.add_observer(|_: On<Boom>, _: Res<Score>| {});
    /// world.set_lifecycle_error_limit(2);
    /// for _ in 0..5 {
    ///     world.trigger(Boom);
    /// }
    /// assert_eq!(world.take_lifecycle_errors().len(), 2);
    /// assert_eq!(world.lifecycle_errors_dropped(), 3);
    /// ```
    pub fn set_lifecycle_error_limit(&mut self, limit: usize) {
        self.lifecycle.errors.set_limit(limit);
    }

    /// Lifecycle errors dropped because more than the limit were waiting
    /// (see [`World::set_lifecycle_error_limit`]), over the world's life.
    pub fn lifecycle_errors_dropped(&self) -> u64 {
        self.lifecycle.errors.dropped()
    }
}
