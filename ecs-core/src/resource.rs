//! Resources: typed singletons stored in the world, with a change tick each.

use std::any::{Any, TypeId};

use crate::component::TypeIdMap;
use crate::tick::Tick;

struct Slot {
    value: Box<dyn Any + Send + Sync>,
    name: &'static str,
    added: Tick,
    changed: Tick,
}

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
        let slot = Slot { value: Box::new(value), name: std::any::type_name::<R>(), added: now, changed: now };
        match self.slots.insert(TypeId::of::<R>(), slot) {
            Some(old) => {
                // Replacing keeps the added tick of the first insert.
                if let Some(s) = self.slots.get_mut(&TypeId::of::<R>()) {
                    s.added = old.added;
                }
                old.value.downcast::<R>().ok().map(|b| *b)
            }
            None => None,
        }
    }

    pub(crate) fn remove<R: Send + Sync + 'static>(&mut self) -> Option<R> {
        self.slots.remove(&TypeId::of::<R>()).and_then(|s| s.value.downcast::<R>().ok()).map(|b| *b)
    }

    pub(crate) fn get<R: Send + Sync + 'static>(&self) -> Option<&R> {
        self.slots.get(&TypeId::of::<R>())?.value.downcast_ref()
    }

    pub(crate) fn get_mut<R: Send + Sync + 'static>(&mut self, now: Tick) -> Option<&mut R> {
        let slot = self.slots.get_mut(&TypeId::of::<R>())?;
        slot.changed = now;
        slot.value.downcast_mut()
    }

    pub(crate) fn ticks<R: Send + Sync + 'static>(&self) -> Option<(Tick, Tick)> {
        self.slots.get(&TypeId::of::<R>()).map(|s| (s.added, s.changed))
    }

    pub(crate) fn contains<R: Send + Sync + 'static>(&self) -> bool {
        self.slots.contains_key(&TypeId::of::<R>())
    }

    pub(crate) fn check_change_ticks(&mut self, now: Tick) {
        for slot in self.slots.values_mut() {
            slot.added.clamp_age(now);
            slot.changed.clamp_age(now);
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
