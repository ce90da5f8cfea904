//! Resources: typed singletons stored in the world, with a change tick each.

use std::any::{Any, TypeId};
use std::cell::UnsafeCell;

use crate::storage::component::TypeIdMap;
use crate::storage::tick::{AtomicTick, Tick};

struct Slot {
    value: UnsafeCell<Box<dyn Any + Send + Sync>>,
    name: &'static str,
    added: Tick,
    changed: AtomicTick,
}

// SAFETY: the value is `Send + Sync`; mutable access through a shared borrow
// only happens in `get_unchecked_mut`, whose callers guarantee exclusive
// access (schedulers check resource access sets before running systems in
// parallel).
unsafe impl Sync for Slot {}

/// The world's resources, one value per type.
#[derive(Default)]
pub struct Resources {
    slots: TypeIdMap<Slot>,
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.slots.values().map(|s| s.name)).finish()
    }
}

impl Resources {
    /// Stores `value`, returning the previous one of its type.
    pub(crate) fn insert<R: Send + Sync + 'static>(&mut self, value: R, now: Tick) -> Option<R> {
        let slot = Slot {
            value: UnsafeCell::new(Box::new(value)),
            name: std::any::type_name::<R>(),
            added: now,
            changed: AtomicTick::new(now),
        };
        match self.slots.insert(TypeId::of::<R>(), slot) {
            Some(old) => {
                // Replacing keeps the added tick of the first insert.
                if let Some(s) = self.slots.get_mut(&TypeId::of::<R>()) {
                    s.added = old.added;
                }
                old.value.into_inner().downcast::<R>().ok().map(|b| *b)
            }
            None => None,
        }
    }

    pub(crate) fn remove<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        self.slots.remove(&TypeId::of::<R>()).and_then(|s| s.value.into_inner().downcast::<R>().ok()).map(|b| *b)
    }

    pub(crate) fn get<R: Send + Sync + 'static>(&self) -> Option<&R> {
        let slot = self.slots.get(&TypeId::of::<R>())?;
        // SAFETY: shared access; writers through a shared borrow
        // (`get_unchecked_mut`) guarantee nobody else reads meanwhile.
        unsafe { &*slot.value.get() }.downcast_ref()
    }

    /// `R`, its added tick and its changed tick, in one lookup (what a
    /// system's `Res<R>` fetches every run).
    pub(crate) fn get_with_ticks<R: Send + Sync + 'static>(&self) -> Option<(&R, Tick, Tick)> {
        let slot = self.slots.get(&TypeId::of::<R>())?;
        // SAFETY: shared access, as in `get`.
        let any: &(dyn Any + Send + Sync) = unsafe { &**slot.value.get() };
        debug_assert!(any.is::<R>());
        // SAFETY: the slot under `TypeId::of::<R>()` holds an `R` (only
        // `insert::<R>` fills it), so the box's data pointer points to one;
        // this skips `downcast_ref`'s second, virtual type check.
        let value = unsafe { &*(any as *const (dyn Any + Send + Sync)).cast::<R>() };
        Some((value, slot.added, slot.changed.load()))
    }

    pub(crate) fn get_mut<R: Send + Sync + 'static>(&mut self, now: Tick) -> Option<&mut R> {
        let slot = self.slots.get_mut(&TypeId::of::<R>())?;
        *slot.changed.get_mut() = now.get();
        slot.value.get_mut().downcast_mut()
    }

    /// # Safety
    /// For the borrow's lifetime nothing else reads or writes `R`.
    // Interior mutability through `UnsafeCell`; exclusivity is the caller's contract.
    #[allow(
        clippy::mut_from_ref,
        reason = "interior mutability through an UnsafeCell; exclusive access is the caller's contract (see # Safety)"
    )]
    pub(crate) unsafe fn get_unchecked_mut<R: Send + Sync + 'static>(&self, now: Tick) -> Option<&mut R> {
        let slot = self.slots.get(&TypeId::of::<R>())?;
        slot.changed.store(now);
        // SAFETY: the caller guarantees exclusive access to `R`.
        unsafe { &mut *slot.value.get() }.downcast_mut()
    }

    /// # Safety
    /// For the borrow's lifetime nothing else reads or writes `R`.
    // Interior mutability through `UnsafeCell`; exclusivity is the caller's contract.
    #[allow(
        clippy::mut_from_ref,
        reason = "interior mutability through an UnsafeCell; exclusive access is the caller's contract (see # Safety)"
    )]
    pub(crate) unsafe fn get_unchecked_parts<R: Send + Sync + 'static>(&self) -> Option<(&mut R, Tick, &AtomicTick)> {
        let slot = self.slots.get(&TypeId::of::<R>())?;
        // SAFETY: the caller guarantees exclusive access to `R`.
        let any: &mut (dyn Any + Send + Sync) = unsafe { &mut **slot.value.get() };
        debug_assert!(any.is::<R>());
        // SAFETY: the slot under `TypeId::of::<R>()` holds an `R` (only
        // `insert::<R>` fills it); exclusive as above.
        let value = unsafe { &mut *(any as *mut (dyn Any + Send + Sync)).cast::<R>() };
        Some((value, slot.added, &slot.changed))
    }

    pub(crate) fn ticks<R: Send + Sync + 'static>(&self) -> Option<(Tick, Tick)> {
        self.slots.get(&TypeId::of::<R>()).map(|s| (s.added, s.changed.load()))
    }

    pub(crate) fn contains<R: Send + Sync + 'static>(&self) -> bool {
        self.slots.contains_key(&TypeId::of::<R>())
    }

    pub(crate) fn check_change_ticks(&mut self, now: Tick) {
        for slot in self.slots.values_mut() {
            slot.added.clamp_age(now);
            let mut changed = slot.changed.load();
            changed.clamp_age(now);
            *slot.changed.get_mut() = changed.get();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::World;

    #[derive(Debug, PartialEq)]
    struct Score(u32);

    #[test]
    fn insert_replace_remove_and_ticks() {
        let mut world = World::new();
        assert!(world.resource::<Score>().is_none());
        assert_eq!(world.insert_resource(Score(1)), None);
        let (added, _) = world.resource_ticks::<Score>().unwrap();
        world.increment_change_tick();
        assert_eq!(world.insert_resource(Score(2)), Some(Score(1)));
        let (added2, changed2) = world.resource_ticks::<Score>().unwrap();
        assert_eq!(added, added2, "replacing keeps the added tick");
        assert_ne!(added2, changed2);
        world.increment_change_tick();
        world.resource_mut::<Score>().unwrap().0 += 1;
        assert_eq!(world.resource_ticks::<Score>().unwrap().1.get() as u64, world.change_tick());
        assert_eq!(world.remove_resource::<Score>(), Some(Score(3)));
        assert!(!world.contains_resource::<Score>());
    }
}
