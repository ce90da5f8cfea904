//! Entity handles and the allocator that hands them out.

use crate::error::StoreError;
use crate::storage::archetype::ArchetypeId;

/// A handle to an entity: a 32-bit slot index and a 32-bit generation.
///
/// When an entity is despawned its slot's generation advances, so an old
/// handle to the slot is recognised as stale and every operation on it returns
/// [`StoreError::NoSuchEntity`] instead of touching the slot's new owner.
#[derive(Copy, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(C, align(8))]
pub struct Entity {
    index: u32,
    generation: u32,
}

impl Entity {
    /// A handle from its parts. Mostly useful for tests and for decoding
    /// handles that were sent elsewhere as bits.
    pub const fn from_parts(index: u32, generation: u32) -> Self {
        Entity { index, generation }
    }

    /// The slot index.
    pub const fn index(self) -> u32 {
        self.index
    }

    /// The generation of the slot this handle was issued for.
    pub const fn generation(self) -> u32 {
        self.generation
    }

    /// Both parts packed as `generation << 32 | index`.
    pub const fn to_bits(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// The inverse of [`Entity::to_bits`].
    pub const fn from_bits(bits: u64) -> Self {
        Entity { index: bits as u32, generation: (bits >> 32) as u32 }
    }
}

impl std::fmt::Debug for Entity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}v{}", self.index, self.generation)
    }
}

impl std::fmt::Display for Entity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}v{}", self.index, self.generation)
    }
}

/// Where an entity's row lives.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EntityLocation {
    /// The archetype holding the row.
    pub archetype: ArchetypeId,
    /// The chunk inside the archetype.
    pub chunk: u32,
    /// The row inside the chunk.
    pub row: u32,
}

/// One entity slot: 16 bytes, fields written one by one (no `Option`
/// wrapper, so an update is three plain stores).
#[derive(Clone, Copy, Debug)]
struct Slot {
    generation: u32,
    /// `FREE` while the slot is free.
    archetype: u32,
    chunk: u32,
    row: u32,
}

const FREE: u32 = u32::MAX;
/// Marks a slot handed out by [`Entities::reserve`] and not yet spawned.
const RESERVED: u32 = u32::MAX - 1;

impl Slot {
    #[inline]
    fn set(&mut self, location: EntityLocation) {
        self.archetype = location.archetype.0;
        self.chunk = location.chunk;
        self.row = location.row;
    }

    #[inline]
    fn location(&self) -> Option<EntityLocation> {
        (self.archetype < RESERVED).then_some(EntityLocation {
            archetype: ArchetypeId(self.archetype),
            chunk: self.chunk,
            row: self.row,
        })
    }
}

/// The entity allocator: slots with generations and a free list.
#[derive(Default, Debug)]
pub(crate) struct Entities {
    slots: Vec<Slot>,
    free: Vec<u32>,
    len: u32,
    /// Handles handed out through `&self` since the last flush take the free
    /// list from its end, then fresh indices after `slots.len()`: the
    /// cursor starts at `free.len()` and each reservation takes one off.
    /// `free[cursor..]` are reserved; a negative cursor `-k` means the whole
    /// list and `k` fresh indices are. Equal to `free.len()` after a flush.
    free_cursor: std::sync::atomic::AtomicI64,
}

impl Entities {
    /// Hands out a handle for an entity to be spawned later (by a deferred
    /// command), through a shared borrow: a freed slot under its next
    /// generation while the free list lasts, then a fresh index. The slot
    /// becomes reserved at the next [`Entities::flush`].
    pub(crate) fn reserve(&self) -> Entity {
        let n = self.free_cursor.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        if n > 0 {
            // `free` does not change while `&self` is borrowed, and each
            // cursor value is taken once.
            let index = self.free[n as usize - 1];
            return Entity::from_parts(index, self.slots[index as usize].generation);
        }
        let index = u32::try_from(self.slots.len() as u64 + n.unsigned_abs()).expect("more than 2^32 entity slots");
        Entity::from_parts(index, 0)
    }

    /// Turns reserved handles into reserved slots. Runs before anything
    /// that changes the free list or adds a slot.
    #[inline(always)]
    pub(crate) fn flush(&mut self) {
        if *self.free_cursor.get_mut() != self.free.len() as i64 {
            self.flush_reserved();
        }
    }

    /// [`Entities::flush`] when handles were reserved.
    #[cold]
    #[inline(never)]
    fn flush_reserved(&mut self) {
        let cursor = *self.free_cursor.get_mut();
        let kept = cursor.max(0) as usize;
        for &index in &self.free[kept..] {
            // Freed slots keep the generation their next entity gets.
            self.slots[index as usize].archetype = RESERVED;
        }
        self.free.truncate(kept);
        for _ in 0..(-cursor).max(0) {
            self.slots.push(Slot { generation: 0, archetype: RESERVED, chunk: 0, row: 0 });
        }
        *self.free_cursor.get_mut() = self.free.len() as i64;
    }

    /// Places a reserved entity at `location`. Fails if the handle is not a
    /// reserved, never-spawned slot.
    pub(crate) fn alloc_reserved(&mut self, entity: Entity, location: EntityLocation) -> Result<(), StoreError> {
        self.flush();
        match self.slots.get_mut(entity.index as usize) {
            Some(slot) if slot.archetype == RESERVED && slot.generation == entity.generation => {
                slot.set(location);
                self.len += 1;
                Ok(())
            }
            _ => Err(StoreError::NoSuchEntity(entity)),
        }
    }

    /// Whether `entity` is a reserved handle waiting to be spawned.
    pub(crate) fn is_reserved(&mut self, entity: Entity) -> bool {
        self.flush();
        self.slots
            .get(entity.index as usize)
            .is_some_and(|slot| slot.archetype == RESERVED && slot.generation == entity.generation)
    }

    /// Allocates a handle for an entity that will live at `location`.
    #[inline]
    pub(crate) fn alloc(&mut self, location: EntityLocation) -> Entity {
        debug_assert!(location.archetype.0 < RESERVED);
        self.flush();
        self.len += 1;
        if let Some(index) = self.free.pop() {
            *self.free_cursor.get_mut() -= 1;
            let slot = &mut self.slots[index as usize];
            slot.set(location);
            Entity::from_parts(index, slot.generation)
        } else {
            let index = u32::try_from(self.slots.len()).expect("more than 2^32 entity slots");
            let mut slot = Slot { generation: 0, archetype: FREE, chunk: 0, row: 0 };
            slot.set(location);
            self.slots.push(slot);
            Entity::from_parts(index, 0)
        }
    }

    /// Reserves room for `additional` more slots.
    pub(crate) fn reserve_capacity(&mut self, additional: usize) {
        self.flush();
        self.slots.reserve(additional.saturating_sub(self.free.len()));
    }

    /// Frees a live entity's slot and returns where its row was.
    #[inline]
    pub(crate) fn free(&mut self, entity: Entity) -> Result<EntityLocation, StoreError> {
        self.flush();
        let slot = self
            .slots
            .get_mut(entity.index as usize)
            .filter(|s| s.generation == entity.generation)
            .ok_or(StoreError::NoSuchEntity(entity))?;
        let location = slot.location().ok_or(StoreError::NoSuchEntity(entity))?;
        slot.archetype = FREE;
        self.len -= 1;
        // A slot whose generation would wrap is retired for good, so no
        // handle can ever alias an entity of a later generation.
        if let Some(next) = slot.generation.checked_add(1) {
            slot.generation = next;
            self.free.push(entity.index);
            *self.free_cursor.get_mut() += 1;
        }
        Ok(location)
    }

    /// Where a live entity's row is, `None` for a stale or never-issued
    /// handle. Lookups in loops use this form: a small `Option` stays in
    /// registers once inlined, where the `Result` of
    /// [`Entities::location`] (with its large error) was copied through
    /// the stack in pieces, and the loads that read those pieces back
    /// waited for the stores (no store forwarding across pieces), which
    /// serialised the cache misses of consecutive lookups.
    #[inline]
    pub(crate) fn get_location(&self, entity: Entity) -> Option<EntityLocation> {
        let slot = self.slots.get(entity.index as usize)?;
        if slot.generation == entity.generation { slot.location() } else { None }
    }

    /// Where a live entity's row is.
    #[inline]
    pub(crate) fn location(&self, entity: Entity) -> Result<EntityLocation, StoreError> {
        match self.slots.get(entity.index as usize) {
            Some(slot) if slot.generation == entity.generation => {
                slot.location().ok_or(StoreError::NoSuchEntity(entity))
            }
            _ => Err(StoreError::NoSuchEntity(entity)),
        }
    }

    /// [`Entities::set_location`] without the bounds check.
    ///
    /// # Safety
    /// `entity` is live (so its slot exists).
    #[inline(always)]
    pub(crate) unsafe fn set_location_unchecked(&mut self, entity: Entity, location: EntityLocation) {
        debug_assert!((entity.index as usize) < self.slots.len());
        // SAFETY: a live entity's slot exists (the caller's contract).
        let slot = unsafe { self.slots.get_unchecked_mut(entity.index as usize) };
        debug_assert_eq!(slot.generation, entity.generation);
        slot.set(location);
    }

    /// Records a live entity's new row.
    #[inline]
    pub(crate) fn set_location(&mut self, entity: Entity, location: EntityLocation) {
        let slot = &mut self.slots[entity.index as usize];
        debug_assert_eq!(slot.generation, entity.generation);
        slot.set(location);
    }

    /// Live entity count.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Every live entity with its location, in slot order.
    pub(crate) fn iter_live(&self) -> impl Iterator<Item = (Entity, EntityLocation)> + '_ {
        self.slots.iter().enumerate().filter_map(|(index, slot)| {
            slot.location().map(|loc| (Entity::from_parts(index as u32, slot.generation), loc))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc() -> EntityLocation {
        EntityLocation { archetype: ArchetypeId(0), chunk: 0, row: 0 }
    }

    #[test]
    fn stale_handles_are_refused() {
        let mut e = Entities::default();
        let a = e.alloc(loc());
        e.free(a).unwrap();
        let b = e.alloc(loc());
        assert_eq!(a.index(), b.index());
        assert_ne!(a.generation(), b.generation());
        assert_eq!(e.location(a), Err(StoreError::NoSuchEntity(a)));
        assert_eq!(e.free(a), Err(StoreError::NoSuchEntity(a)));
        assert!(e.location(b).is_ok());
        assert_eq!(e.len(), 1);
    }

    #[test]
    fn exhausted_generation_retires_the_slot() {
        let mut e = Entities::default();
        let a = e.alloc(loc());
        e.slots[0].generation = u32::MAX;
        let a_last = Entity::from_parts(a.index(), u32::MAX);
        e.free(a_last).unwrap();
        let b = e.alloc(loc());
        assert_ne!(b.index(), a.index());
    }

    #[test]
    fn reserved_handles_become_slots_without_aliasing() {
        let mut e = Entities::default();
        let a = e.alloc(loc());
        let r1 = e.reserve();
        let r2 = e.reserve();
        assert!(e.is_reserved(r1) && e.is_reserved(r2));
        assert!(e.location(r1).is_err());
        let b = e.alloc(loc());
        assert!(b != r1 && b != r2 && b != a, "allocation skips reserved indices");
        e.alloc_reserved(r2, loc()).unwrap();
        assert!(e.location(r2).is_ok());
        assert_eq!(e.alloc_reserved(r2, loc()), Err(StoreError::NoSuchEntity(r2)));
        assert_eq!(e.len(), 3);
        assert!(e.is_reserved(r1));
    }

    #[test]
    fn reservations_take_freed_slots_first_then_fresh_ones() {
        let mut e = Entities::default();
        let live: Vec<Entity> = (0..4).map(|_| e.alloc(loc())).collect();
        e.free(live[1]).unwrap();
        e.free(live[3]).unwrap();
        let (r1, r2, r3) = (e.reserve(), e.reserve(), e.reserve());
        // The free list from its end, under the next generation; then fresh.
        assert_eq!((r1.index(), r1.generation()), (3, 1));
        assert_eq!((r2.index(), r2.generation()), (1, 1));
        assert_eq!((r3.index(), r3.generation()), (4, 0));
        assert!(e.location(r1).is_err() && e.location(r2).is_err(), "not alive before they are spawned");
        // Nothing allocated or freed afterwards can take them.
        let b = e.alloc(loc());
        assert!(![r1, r2, r3].iter().any(|r| r.index() == b.index()));
        assert_eq!(e.free(r2), Err(StoreError::NoSuchEntity(r2)));
        e.free(live[0]).unwrap();
        let c = e.alloc(loc());
        assert_eq!(c.index(), 0, "the slot freed after the reservations is free");
        for r in [r1, r2, r3] {
            assert!(e.is_reserved(r));
            e.alloc_reserved(r, loc()).unwrap();
            assert!(e.location(r).is_ok());
        }
        assert!(!e.is_reserved(live[1]), "the old handle stays stale");
        assert_eq!(e.len(), 6);
    }

    #[test]
    fn reserve_spawn_and_free_in_a_loop_keeps_the_slot_count() {
        let mut e = Entities::default();
        for _ in 0..500 {
            let rs: Vec<Entity> = (0..10).map(|_| e.reserve()).collect();
            for &r in &rs {
                e.alloc_reserved(r, loc()).unwrap();
            }
            for &r in &rs {
                e.free(r).unwrap();
            }
        }
        assert_eq!(e.len(), 0);
        assert_eq!(e.slots.len(), 10);
    }

    #[test]
    fn bits_round_trip() {
        let e = Entity::from_parts(7, 9);
        assert_eq!(Entity::from_bits(e.to_bits()), e);
        assert_eq!(format!("{e}"), "7v9");
    }
}
