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
//! A `Mut<T>` holds pointers to its row's tick and to a "chunk mark".
//! Handed out by `iter_mut`, `get_mut` or a chunk view, the chunk mark is the
//! chunk's column tick itself, written with a relaxed atomic store (a plain
//! `mov` on x86-64): another thread may read that cell at the same time (a
//! system's [`crate::ChunkView::changed_tick`] of a component outside its own
//! access), so every access to a chunk tick is atomic and never a data race.
//! Inside `for_each_mut` and the parallel loops, whose closures cannot keep
//! items, the chunk mark is a mark local to the loop, written plainly (no
//! other thread sees it), and the chunk tick is stamped atomically once when
//! the loop leaves the chunk, also when the closure panics: one store per
//! written row instead of two. The row tick is written plainly: only a
//! holder of write access to the column reads or writes it.

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::storage::tick::{AtomicTick, Tick};

/// A mutable component borrow that marks its row changed on write.
pub struct Mut<'w, T> {
    value: &'w mut T,
    row_changed: *mut u32,
    chunk_mark: *mut u32,
    /// Whether `chunk_mark` is a loop-local mark (plain store) rather than
    /// the chunk's shared tick cell (atomic store).
    local_mark: bool,
    this_run: Tick,
    _ticks: PhantomData<&'w AtomicTick>,
}

impl<'w, T> Mut<'w, T> {
    /// # Safety
    /// For `'w`: `row_changed` points to a live, aligned row tick that only
    /// this `Mut` reads or writes; `chunk_mark` points either to the chunk's
    /// tick cell (an [`AtomicTick`], only ever accessed atomically;
    /// `local_mark` false) or to a mark local to one loop on this thread
    /// that outlives the item (`local_mark` true).
    #[inline]
    pub(crate) unsafe fn new(
        value: &'w mut T,
        row_changed: *mut u32,
        chunk_mark: *mut u32,
        local_mark: bool,
        this_run: Tick,
    ) -> Self {
        Mut { value, row_changed, chunk_mark, local_mark, this_run, _ticks: PhantomData }
    }

    /// Marks the row changed without writing.
    #[inline]
    pub fn set_changed(&mut self) {
        let tick = self.this_run.get();
        // SAFETY: `Mut::new`'s contract: the row tick is ours alone; the
        // chunk mark is loop-local (ours alone on this thread) or a shared
        // tick cell that is only ever accessed atomically.
        unsafe {
            *self.row_changed = tick;
            if self.local_mark {
                *self.chunk_mark = tick;
            } else {
                AtomicU32::from_ptr(self.chunk_mark).store(tick, Ordering::Relaxed);
            }
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
        // SAFETY: the row tick is live for `'w` and only this `Mut` writes it.
        Tick::new(unsafe { *self.row_changed })
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
