//! `Mut<T>`: a mutable borrow that stamps its row on write; `Ref<T>`: a
//! shared borrow that knows when its row changed; the [`DetectChanges`] and
//! [`DetectChangesMut`] traits they share with `Res` and `ResMut`.
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
//! other thread sees it), and the chunk tick is stamped atomically once
//! when the loop leaves the chunk, also when the closure panics. A loop
//! that visits every row also leaves the block ticks (one per 16 rows, see
//! [`crate::storage::archetype`]) to that moment: if the mark was set, it
//! stamps every block of the rows it visited, so a written row costs one
//! store instead of three (a block whose rows were all left alone is
//! stamped as well, a false positive that costs a later reader one look at
//! its 16 row ticks; row ticks stay exact). In a loop that tests rows, a
//! written row stamps its own block.
//! Elsewhere (`iter_mut`, `get_mut`, chunk views, entity groups) a write
//! stamps the row's block tick itself too (a relaxed atomic store). The row
//! tick is written plainly: only a holder of write access to the column
//! reads or writes it.
//!
//! ## Asking what changed
//! [`DetectChanges`] answers, for one row (or one resource), relative to
//! the tick window of the query run or system run that fetched it, the
//! same questions the filters answer for a whole query:
//! - `is_changed()`: the row's changed stamp, or its chunk's whole-column
//!   stamp, is inside the window: exactly the rows `Changed<T>` lets pass.
//!   A write through the same `Mut` in this run counts (it is stamped
//!   `this_run`, which is inside the window).
//! - `is_added()`: the row's added stamp is inside the window: exactly the
//!   rows `Added<T>` lets pass.
//! - `last_changed()`: the newer of the row stamp and the chunk's
//!   whole-column stamp.
//!
//! To answer, a `Mut` also carries the run's window (its `this_run` half
//! was there already) and where the row's added stamp and the chunk's
//! whole-column stamp live. Those are only read by the `DetectChanges`
//! methods: [`Mut::set_changed`] and `DerefMut` store exactly what they
//! stored before, and in a loop that never asks the extra fields are dead
//! and compiled away (they are plain pointers: no atomic load is made until
//! a method asks).

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::storage::tick::{AtomicTick, Tick, TickWindow};

/// Change information of one row or resource, relative to the tick window
/// of the run that fetched it (see the [module docs](self)).
///
/// Implemented by [`Mut`], [`Ref`], [`crate::Res`] and [`crate::ResMut`].
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Component)]
/// struct Hp(u32);
/// let mut world = World::new();
/// let a = world.spawn((Hp(10),));
/// let b = world.spawn((Hp(10),));
/// let mut q = world.query::<(Entity, Ref<Hp>)>();
/// // The first run sees every row as added and changed.
/// assert!(q.iter(&world).all(|(_, hp)| hp.is_added() && hp.is_changed()));
///
/// world.increment_change_tick();
/// world.get_mut::<Hp>(b).unwrap().0 = 9;
/// world.increment_change_tick();
/// for (e, hp) in q.iter(&world) {
///     assert!(!hp.is_added());
///     assert_eq!(hp.is_changed(), e == b);
/// }
/// # let _ = a;
/// ```
pub trait DetectChanges {
    /// Whether the value was written since the previous run of the system
    /// or query that fetched it (or in this run, through this borrow).
    fn is_changed(&self) -> bool;
    /// Whether the value was added (the component inserted, the resource
    /// first inserted) since that previous run.
    fn is_added(&self) -> bool;
    /// The tick of the latest write.
    fn last_changed(&self) -> Tick;
}

/// Writing with control over change marks. Implemented by [`Mut`] and
/// [`crate::ResMut`].
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Component, PartialEq)]
/// struct Hp(u32);
/// let mut world = World::new();
/// let e = world.spawn((Hp(10),));
/// let mut q = world.query::<&mut Hp>();
/// let mut changed = world.query_filtered::<Entity, Changed<Hp>>();
/// changed.iter(&world).count();
///
/// world.increment_change_tick();
/// q.for_each_mut(&mut world, |mut hp| {
///     DetectChangesMut::set_if_neq(&mut hp, Hp(10)); // equal: no mark
///     hp.bypass_change_detection().0 = 10; // a write that marks nothing
/// });
/// world.increment_change_tick();
/// assert_eq!(changed.iter(&world).count(), 0);
/// # let _ = e;
/// ```
pub trait DetectChangesMut: DetectChanges {
    /// The borrowed type.
    type Inner: ?Sized;
    /// Marks the value changed without writing.
    fn set_changed(&mut self);
    /// The value, mutably, without marking it changed. Writes made through
    /// it are invisible to `Changed` filters and to `is_changed`.
    fn bypass_change_detection(&mut self) -> &mut Self::Inner;
    /// Replaces the value only if it differs, marking it changed only then.
    /// Returns whether it wrote.
    fn set_if_neq(&mut self, value: Self::Inner) -> bool
    where
        Self::Inner: Sized + PartialEq,
    {
        let slot = self.bypass_change_detection();
        if *slot != value {
            *slot = value;
            self.set_changed();
            true
        } else {
            false
        }
    }
}

/// A mutable component borrow that marks its row changed on write.
pub struct Mut<'w, T> {
    value: &'w mut T,
    row_changed: *mut u32,
    /// The changed tick of the row's block (an [`AtomicTick`] cell), when
    /// `stamp_block`; the loop that fetched the row stamps it otherwise.
    block_changed: *const AtomicTick,
    /// Whether writes stamp `block_changed`. A flag rather than a null
    /// `block_changed`: where the fetch always stamps (a `for` loop's), the
    /// compiler drops the test, which it could not prove of the pointer.
    stamp_block: bool,
    chunk_mark: *mut u32,
    /// The row's added stamp.
    row_added: *const u32,
    /// The chunk's whole-column changed stamp.
    chunk_all_changed: *const AtomicTick,
    /// The window of the run that fetched the row; its `this_run` is the
    /// tick writes are stamped with.
    window: TickWindow,
    /// Whether `chunk_mark` is a loop-local mark (plain store) rather than
    /// the chunk's shared tick cell (atomic store).
    local_mark: bool,
    _ticks: PhantomData<&'w AtomicTick>,
}

impl<'w, T> Mut<'w, T> {
    /// A `Mut` for one row fetched by a run with `window`; writes are
    /// stamped `window.this_run()`.
    ///
    /// # Safety
    /// For `'w`: `row_changed` points to a live, aligned row tick that only
    /// this `Mut` reads or writes; with `stamp_block`, `block_changed`
    /// points to the tick cell of the row's block (only ever accessed
    /// atomically while the `Mut` lives), and without it the fetching loop
    /// stamps the block of every row whose chunk mark it finds set;
    /// `chunk_mark` points either to the chunk's
    /// tick cell (an [`AtomicTick`], only ever accessed atomically;
    /// `local_mark` false) or to a mark local to one loop on this thread
    /// that outlives the item (`local_mark` true); `row_added` points to the
    /// row's live added stamp and `chunk_all_changed` to its chunk's
    /// whole-column stamp, which no one writes while the `Mut` lives.
    #[inline]
    #[expect(
        clippy::too_many_arguments,
        reason = "the value and each of its tick cells; a struct for them would be built and taken apart per row"
    )]
    pub(crate) unsafe fn for_row(
        value: &'w mut T,
        row_changed: *mut u32,
        block_changed: *const AtomicTick,
        stamp_block: bool,
        chunk_mark: *mut u32,
        local_mark: bool,
        window: TickWindow,
        row_added: *const u32,
        chunk_all_changed: &'w AtomicTick,
    ) -> Self {
        Mut {
            value,
            row_changed,
            block_changed,
            stamp_block,
            chunk_mark,
            row_added,
            chunk_all_changed,
            window,
            local_mark,
            _ticks: PhantomData,
        }
    }

    /// Marks the row changed without writing.
    #[inline]
    pub fn set_changed(&mut self) {
        let tick = self.window.this_run().get();
        // SAFETY: `Mut::for_row`'s contract: the row tick is ours alone; the
        // block tick is a shared tick cell accessed atomically; the chunk
        // mark is loop-local (ours alone on this thread) or a shared tick
        // cell that is only ever accessed atomically.
        //
        // The block and chunk ticks are read before they are stored: every
        // row of a block or chunk stores the same tick, and in a `for`
        // loop, whose items stamp both themselves, the two stores were what
        // bound the loop (5 stores a row against bevy's 3); a load and a
        // well-predicted branch cost less than a store there.
        unsafe {
            *self.row_changed = tick;
            if self.stamp_block {
                let block = &*self.block_changed;
                if block.load().get() != tick {
                    block.store(Tick::new(tick));
                }
            }
            if self.local_mark {
                *self.chunk_mark = tick;
            } else {
                let chunk = AtomicU32::from_ptr(self.chunk_mark);
                if chunk.load(Ordering::Relaxed) != tick {
                    chunk.store(tick, Ordering::Relaxed);
                }
            }
        }
    }

    /// Replaces the value only if it differs, marking the row only then.
    /// Returns whether it wrote.
    ///
    /// ```
    /// # use ecs_core::{Component, World};
    /// # #[derive(Component, PartialEq, Debug)] struct Hp(u32);
    /// let mut world = World::new();
    /// let e = world.spawn((Hp(10),));
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

    /// The row's own changed stamp (without the chunk's whole-column mark;
    /// [`DetectChanges::last_changed`] includes it).
    pub fn row_changed_tick(&self) -> Tick {
        // SAFETY: the row tick is live for `'w` and only this `Mut` writes it.
        Tick::new(unsafe { *self.row_changed })
    }

    /// The value, mutably, without marking the row (see
    /// [`DetectChangesMut::bypass_change_detection`]).
    #[inline]
    pub fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }

    /// Gives up the tracking wrapper, marking the row changed (the caller
    /// may write through the returned borrow).
    #[inline]
    pub fn into_inner(mut self) -> &'w mut T {
        self.set_changed();
        self.value
    }

    /// The chunk's whole-column stamp, if this `Mut` knows where it is.
    fn chunk_all_changed(&self) -> Option<Tick> {
        // SAFETY: `Mut::for_row`'s contract: a non-null pointer is the
        // chunk's live stamp for `'w`; it is only accessed atomically.
        unsafe { self.chunk_all_changed.as_ref() }.map(AtomicTick::load)
    }
}

impl<T> DetectChanges for Mut<'_, T> {
    #[inline]
    fn is_changed(&self) -> bool {
        self.window.contains(self.row_changed_tick())
            || self.chunk_all_changed().is_some_and(|t| self.window.contains(t))
    }

    #[inline]
    fn is_added(&self) -> bool {
        // SAFETY: `Mut::for_row`'s contract: a non-null pointer is the row's
        // live added stamp, which no one writes while this `Mut` lives.
        let added = unsafe { self.row_added.as_ref() }.map(|&t| Tick::new(t));
        added.is_some_and(|t| self.window.contains(t))
    }

    fn last_changed(&self) -> Tick {
        let row = self.row_changed_tick();
        match self.chunk_all_changed() {
            Some(all) => row.newest(all, self.window.this_run()),
            None => row,
        }
    }
}

impl<T> DetectChangesMut for Mut<'_, T> {
    type Inner = T;

    #[inline]
    fn set_changed(&mut self) {
        Mut::set_changed(self);
    }

    #[inline]
    fn bypass_change_detection(&mut self) -> &mut T {
        self.value
    }

    #[inline]
    fn set_if_neq(&mut self, value: T) -> bool
    where
        T: PartialEq,
    {
        Mut::set_if_neq(self, value)
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

/// A shared component borrow that knows when its row was changed and
/// added ([`DetectChanges`]), relative to the run that fetched it. As query
/// data, `Ref<T>` reads `T` exactly as `&T` does (a read, so it may run
/// beside other readers).
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Component)]
/// struct Pos(f32);
/// fn report(mut q: Query<(Entity, Ref<Pos>)>, mut moved: Local<Vec<Entity>>) {
///     moved.clear();
///     for (e, pos) in q.iter() {
///         if pos.is_changed() && !pos.is_added() {
///             moved.push(e);
///         }
///     }
/// }
/// # let mut world = World::new();
/// # world.spawn((Pos(0.0),));
/// # let mut schedule = Schedule::new();
/// # schedule.add_systems(report);
/// # schedule.run(&mut world).unwrap();
/// ```
pub struct Ref<'w, T> {
    value: &'w T,
    row_changed: &'w AtomicTick,
    row_added: &'w AtomicTick,
    chunk_all_changed: &'w AtomicTick,
    window: TickWindow,
}

impl<T> Clone for Ref<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Ref<'_, T> {}

impl<'w, T> Ref<'w, T> {
    #[inline]
    pub(crate) fn new(
        value: &'w T,
        row_changed: &'w AtomicTick,
        row_added: &'w AtomicTick,
        chunk_all_changed: &'w AtomicTick,
        window: TickWindow,
    ) -> Self {
        Ref { value, row_changed, row_added, chunk_all_changed, window }
    }

    /// The plain borrow, for the whole of `'w`.
    #[inline]
    pub fn into_inner(self) -> &'w T {
        self.value
    }
}

impl<T> DetectChanges for Ref<'_, T> {
    #[inline]
    fn is_changed(&self) -> bool {
        self.window.contains(self.row_changed.load()) || self.window.contains(self.chunk_all_changed.load())
    }

    #[inline]
    fn is_added(&self) -> bool {
        self.window.contains(self.row_added.load())
    }

    fn last_changed(&self) -> Tick {
        self.row_changed.load().newest(self.chunk_all_changed.load(), self.window.this_run())
    }
}

impl<T> Deref for Ref<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> AsRef<T> for Ref<'_, T> {
    fn as_ref(&self) -> &T {
        self.value
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Ref<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Ref").field(&self.value).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{DetectChanges, DetectChangesMut};
    use crate::World;

    #[derive(crate::Component, Debug, PartialEq)]
    struct Hp(u32);

    #[test]
    fn a_mut_without_a_run_window_answers_for_the_current_tick() {
        let mut world = World::new();
        let e = world.spawn((Hp(1),));
        world.increment_change_tick();
        let mut hp = world.get_mut::<Hp>(e).unwrap();
        assert!(!hp.is_changed() && !hp.is_added());
        hp.0 = 2;
        assert!(hp.is_changed());
        assert!(!hp.is_added(), "no added stamp to consult");
        assert_eq!(hp.last_changed(), hp.row_changed_tick());
        let written = hp.last_changed();
        assert_eq!(world.changed_tick::<Hp>(e).unwrap(), written);
        // `bypass_change_detection` writes without a mark.
        world.increment_change_tick();
        let mut hp = world.get_mut::<Hp>(e).unwrap();
        DetectChangesMut::bypass_change_detection(&mut hp).0 = 3;
        assert!(!hp.is_changed());
        assert_eq!(world.changed_tick::<Hp>(e).unwrap(), written);
    }
}
