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

//!
//! ## How marks are stored
//! A `Mut<T>` holds pointers to its row's tick and to a "chunk mark", and
//! writes both with relaxed atomic stores (a plain `mov` on x86-64): a chunk
//! tick may be read at the same time by another thread (a reader's
//! [`crate::ChunkView::changed_tick`] of a component outside its own access,
//! or a parallel task on another row range of the same chunk), and every
//! tick cell is only ever accessed atomically, so that is never a data race.
//! Handed out by `iter_mut`, `get_mut` or a chunk view, the chunk mark is the
//! chunk's column tick itself. Inside `for_each_mut` and the parallel loops,
//! whose closures cannot keep items, it is a mark local to the loop, and the
//! chunk tick is stamped once when the loop leaves the chunk: one store per
//! written row instead of two.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::tick::{AtomicTick, Tick};

/// A mutable component borrow that marks its row changed on write.
pub struct Mut<'w, T> {
    value: &'w mut T,
    row_changed: *mut u32,
    chunk_mark: *mut u32,
    this_run: Tick,
    _ticks: PhantomData<&'w AtomicTick>,
}

impl<'w, T> Mut<'w, T> {
    /// # Safety
    /// For `'w`, `row_changed` and `chunk_mark` point to live, aligned
    /// `u32` tick cells that are only ever accessed atomically (an
    /// [`AtomicTick`] of the archetype, or a loop-local mark that outlives the
    /// item), and this `Mut` is the only writer of `row_changed`.
    #[inline]
    pub(crate) unsafe fn new(value: &'w mut T, row_changed: *mut u32, chunk_mark: *mut u32, this_run: Tick) -> Self {
        Mut { value, row_changed, chunk_mark, this_run, _ticks: PhantomData }
    }

    /// Marks the row changed without writing.
    #[inline]
    pub fn set_changed(&mut self) {
        // SAFETY: `Mut::new`'s contract: both cells are live for `'w`,
        // aligned, and only ever accessed atomically.
        unsafe {
            AtomicU32::from_ptr(self.row_changed).store(self.this_run.get(), Ordering::Relaxed);
            AtomicU32::from_ptr(self.chunk_mark).store(self.this_run.get(), Ordering::Relaxed);
        }
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
        // SAFETY: the row tick is live for `'w`, aligned, and only ever
        // accessed atomically.
        Tick::new(unsafe { AtomicU32::from_ptr(self.row_changed).load(Ordering::Relaxed) })
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
