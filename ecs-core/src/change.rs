//! `Mut<T>`: a mutable borrow that stamps its row on write.
//!
//! ## The write-mark rule
//! - Reading never marks anything (`&T`, `Deref` of `Mut<T>`).
//! - The first `DerefMut` of a `Mut<T>` (and every later one; stamping is
//!   idempotent) sets the row's `changed` tick and the chunk's column tick to
//!   the current run's tick. Taking a `Mut<T>` without writing marks nothing.
//! - [`Mut::set_if_neq`] writes and marks only when the value differs.
//! - Taking a whole column as `&mut [T]` (a chunk view's `slices`) marks the
//!   whole chunk in O(1) through the chunk's "all rows changed" stamp.

use std::ops::{Deref, DerefMut};

use crate::tick::{AtomicTick, Tick};

/// A mutable component borrow that marks its row changed on write.
pub struct Mut<'w, T> {
    value: &'w mut T,
    row_changed: &'w AtomicTick,
    chunk_changed: &'w AtomicTick,
    this_run: Tick,
}

impl<'w, T> Mut<'w, T> {
    #[inline]
    pub(crate) fn new(
        value: &'w mut T,
        row_changed: &'w AtomicTick,
        chunk_changed: &'w AtomicTick,
        this_run: Tick,
    ) -> Self {
        Mut { value, row_changed, chunk_changed, this_run }
    }

    /// Marks the row changed without writing.
    #[inline]
    pub fn set_changed(&mut self) {
        self.row_changed.store(self.this_run);
        self.chunk_changed.store(self.this_run);
    }

    /// Replaces the value only if it differs, marking the row only then.
    /// Returns whether it wrote.
    ///
    /// ```
    /// # use ecs_core::World;
    /// # #[derive(PartialEq, Debug)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn((Hp(10),)).unwrap();
    /// assert!(!world.get_mut::<Hp>(e).unwrap().set_if_neq(Hp(10)));
    /// assert!(world.get_mut::<Hp>(e).unwrap().set_if_neq(Hp(9)));
    /// ```
    #[inline]
    pub fn set_if_neq(&mut self, value: T) -> bool
    where
        T: PartialEq,
    {
        if *self.value != value {
            *self.value = value;
            self.set_changed();
            true
        } else {
            false
        }
    }

    /// The row's own changed stamp (without the chunk's whole-column mark).
    pub fn row_changed_tick(&self) -> Tick {
        self.row_changed.load()
    }

    /// Gives up the tracking wrapper, marking the row changed (the caller
    /// may write through the returned borrow).
    #[inline]
    pub fn into_inner(mut self) -> &'w mut T {
        self.set_changed();
        self.value
    }
}

impl<T> Deref for Mut<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> DerefMut for Mut<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        self.set_changed();
        self.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Mut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Mut").field(&self.value).finish()
    }
}
