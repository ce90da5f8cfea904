//! What a query fetches per row: `&T`, `&mut T` (as [`Mut<T>`]),
//! [`Ref<T>`] (`&T` with change information), `Option<&T>`,
//! `Option<&mut T>` (as `Option<Mut<T>>`), [`Has<T>`], `Entity`, and tuples
//! of those.
//!
//! Fetching is three-staged so the hot loop is plain pointer arithmetic:
//! a [`QueryData::Cache`] per matched archetype (column indices), a
//! [`QueryData::Fetch`] per chunk (column base pointers), then one
//! [`QueryData::item`] per row.

use crate::query::access::{Access, ConflictKind};
use std::marker::PhantomData;

use crate::query::change::{Mut, Ref};
use crate::query::iter::PREFETCH_ROWS;
use crate::storage::archetype::{Archetype, BLOCK_SHIFT};
use crate::storage::component::{Component, ComponentId, Components};
use crate::storage::entity::Entity;
use crate::storage::tick::{AtomicTick, TickWindow};

/// A query's data part.
///
/// # Safety
/// `update_access` must record every component that `fetch`, `item` and
/// `slices` read (as reads) or write (as writes); `matches` must be true only
/// for archetypes that hold every column `cache` looks up.
pub unsafe trait QueryData {
    /// What one row yields.
    type Item<'w>;
    /// What one chunk yields as column slices.
    type Slices<'w>;
    /// Component ids, resolved once.
    type State: Copy + Send + Sync + 'static;
    /// Per matched archetype: column indices.
    type Cache: Copy + Send + Sync + 'static;
    /// Per chunk: column pointers.
    type Fetch<'w>: Copy;

    /// Registers the components involved.
    fn init_state(components: &mut Components) -> Self::State;
    /// Records reads and writes, failing on an internal conflict.
    fn update_access(state: Self::State, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)>;
    /// Whether rows of `archetype` can be fetched.
    fn matches(state: Self::State, archetype: &Archetype) -> bool;
    /// Column lookups for a matched archetype.
    fn cache(state: Self::State, archetype: &Archetype) -> Self::Cache;
    /// Column pointers of one chunk, for a run that sees `window` (writes
    /// are stamped `window.this_run()`; [`Ref`] and [`Mut`] answer
    /// `is_changed`/`is_added` against it).
    ///
    /// # Safety
    /// `archetype` matched, `cache` was made from it, `chunk` is in range,
    /// and the caller holds the access `update_access` records for the
    /// lifetime `'w` on this chunk's rows it will fetch.
    unsafe fn fetch<'w>(
        cache: Self::Cache,
        archetype: &'w Archetype,
        chunk: usize,
        window: TickWindow,
    ) -> Self::Fetch<'w>;
    /// One row.
    ///
    /// # Safety
    /// `row` is below the chunk's length, and for mutable data no other item
    /// for the same row is alive.
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, row: usize) -> Self::Item<'w>;
    /// The first `len` rows as slices. Mutable columns are stamped changed
    /// for the whole chunk.
    ///
    /// # Safety
    /// `len` is the chunk's length, and no item or slice of this chunk's
    /// mutable columns is alive.
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, len: usize) -> Self::Slices<'w>;
    /// Shortens an item's lifetime.
    fn shrink<'long: 'short, 'short>(item: Self::Item<'long>) -> Self::Item<'short>;
    /// Loop-local chunk marks of the mutable columns (see [`crate::query::change`]).
    #[doc(hidden)]
    type Marks: Copy;
    /// Unset marks for one chunk.
    #[doc(hidden)]
    fn new_marks(fetch: &Self::Fetch<'_>) -> Self::Marks;
    /// Makes items fetched afterwards record chunk marks in `marks` instead
    /// of the chunk ticks.
    ///
    /// # Safety
    /// `marks` outlives every item fetched afterwards, and those items do not
    /// outlive the loop that flushes the marks.
    #[doc(hidden)]
    unsafe fn redirect_marks(fetch: &mut Self::Fetch<'_>, marks: *mut Self::Marks);
    /// [`QueryData::redirect_marks`] that also leaves the block ticks to the
    /// loop: items record a write in `marks` only (no store to a shared
    /// tick but the row's own), and the loop calls
    /// [`QueryData::flush_block_marks`] with the blocks of the rows it
    /// visited, so a written row costs one store fewer. Meant for loops that
    /// visit every row of a range.
    ///
    /// # Safety
    /// As [`QueryData::redirect_marks`], and the loop flushes the blocks
    /// of every row it fetched items of before [`QueryData::flush_marks`],
    /// also when it unwinds.
    #[doc(hidden)]
    unsafe fn redirect_marks_by_block(fetch: &mut Self::Fetch<'_>, marks: *mut Self::Marks) {
        // SAFETY: forwarded contract; data without block marks has nothing
        // more to redirect.
        unsafe { Self::redirect_marks(fetch, marks) }
    }
    /// Stamps the ticks of the `run` blocks from block `first` on (a chunk
    /// has at most 128) in every column written since the last call (see
    /// [`QueryData::redirect_marks_by_block`]), and notes the chunk as
    /// written for [`QueryData::flush_marks`].
    ///
    /// # Safety
    /// `marks` is the pointer given to `redirect_marks_by_block` or
    /// `redirect_marks`, no item fetched since is alive, and every row whose
    /// items, fetched since the last call, leave their block to the loop is
    /// in those blocks of the chunk.
    #[doc(hidden)]
    #[inline]
    unsafe fn flush_block_marks(_fetch: &Self::Fetch<'_>, _marks: *mut Self::Marks, _first: usize, _run: usize) {}
    /// Stamps the chunk tick of every column whose mark was set.
    #[doc(hidden)]
    fn flush_marks(fetch: &Self::Fetch<'_>, marks: &Self::Marks);
    /// Asks the cache for the values of rows `start..start +
    /// PREFETCH_ROWS` (a hint: no value is read or written, and any `start`
    /// is allowed). The row loop calls it on the next chunk's fetch while
    /// it visits the same rows of the current one.
    #[doc(hidden)]
    #[inline]
    fn prefetch(_fetch: &Self::Fetch<'_>, _start: usize) {}
    /// Shortens a slices value's lifetime.
    fn shrink_slices<'long: 'short, 'short>(slices: Self::Slices<'long>) -> Self::Slices<'short>;
}

/// Query data that never writes, so it may be fetched through `&World`.
///
/// # Safety
/// `update_access` records no writes.
pub unsafe trait ReadOnlyQueryData: QueryData {}

fn conflict(id: ComponentId) -> impl Fn(ConflictKind) -> (ComponentId, ConflictKind) {
    move |kind| (id, kind)
}

/// Asks the cache for the 64-byte lines that hold
/// `values[start..start + PREFETCH_ROWS]`: a fixed number of prefetches per
/// value type (the lines those rows span at most), nothing for zero-sized
/// values. A hint only: the addresses are computed without dereferencing
/// and a prefetch never faults, so any `start` is allowed, also past the
/// chunk's rows.
///
/// The row loop needs it because a chunk's column is short: a column of
/// 64-byte values fills about 190 lines of a 16 KiB chunk, and the
/// hardware prefetcher, which follows a stream within a 4 KiB page,
/// restarts at every chunk (the measurements are in the README's issue 16
/// sixth-run section).
#[inline(always)]
pub(crate) fn prefetch_rows<T>(values: *const T, start: usize) {
    let size = size_of::<T>();
    // Rows of a size that divides 64 (or is a multiple of it) never
    // straddle a line, since columns start on one; others may need one
    // line more than their bytes fill.
    let lines = (PREFETCH_ROWS * size).div_ceil(64)
        + usize::from(!64usize.is_multiple_of(size.max(1)) && !size.is_multiple_of(64));
    let first = values.cast::<u8>().wrapping_add(start.wrapping_mul(size));
    for line in 0..lines {
        prefetch_line(first.wrapping_add(line * 64));
    }
}

#[inline(always)]
fn prefetch_line(line: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is part of SSE, which every x86_64 target has;
    // it is a hint that never faults and changes no memory, whatever the
    // address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = line;
}

// SAFETY: reads exactly the `T` column, recorded as a read.
unsafe impl<T: Component> QueryData for &T {
    type Item<'w> = &'w T;
    type Slices<'w> = &'w [T];
    type State = ComponentId;
    /// The column's byte offset in each chunk: a fetch adds it to the
    /// chunk's base without reading the column's record (a `get` of one
    /// entity reads nothing else of the archetype).
    type Cache = usize;
    type Fetch<'w> = *const T;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        access.add_read(state).map_err(conflict(state))
    }
    fn matches(state: ComponentId, archetype: &Archetype) -> bool {
        archetype.contains(state)
    }
    fn cache(state: ComponentId, archetype: &Archetype) -> usize {
        archetype.column_offset(archetype.column_of(state).expect("matched archetype holds the column"))
    }
    #[inline]
    unsafe fn fetch<'w>(cache: usize, archetype: &'w Archetype, chunk: usize, _: TickWindow) -> Self::Fetch<'w> {
        if size_of::<T>() == 0 {
            // Any aligned non-null pointer reads a zero-sized value.
            return std::ptr::NonNull::<T>::dangling().as_ptr();
        }
        // SAFETY: `chunk` is in range (the caller's contract) and `cache` is
        // the offset of `T`'s column in the matched archetype's chunks,
        // where `offset + size * capacity <= CHUNK_SIZE` (`ChunkLayout`).
        unsafe { archetype.chunk_base_unchecked(chunk).add(cache).cast::<T>() }
    }
    #[inline]
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: `row` is live (caller) and the column holds `T`; shared
        // access to it is recorded.
        unsafe { &*fetch.add(row) }
    }
    #[inline]
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, len: usize) -> Self::Slices<'w> {
        // SAFETY: rows `0..len` are live and contiguous in the column.
        unsafe { std::slice::from_raw_parts(*fetch, len) }
    }
    fn shrink<'long: 'short, 'short>(item: &'long T) -> &'short T {
        item
    }
    fn shrink_slices<'long: 'short, 'short>(slices: &'long [T]) -> &'short [T] {
        slices
    }
    type Marks = ();
    fn new_marks(_: &Self::Fetch<'_>) {}
    unsafe fn redirect_marks(_: &mut Self::Fetch<'_>, _: *mut ()) {}
    fn flush_marks(_: &Self::Fetch<'_>, _: &()) {}
    #[inline]
    fn prefetch(fetch: &Self::Fetch<'_>, start: usize) {
        prefetch_rows(*fetch, start);
    }
}

// SAFETY: records no writes.
unsafe impl<T: Component> ReadOnlyQueryData for &T {}

/// Per-chunk state of a mutable fetch.
#[doc(hidden)]
pub struct MutFetch<'w, T> {
    values: *mut T,
    row_changed: *mut u32,
    /// The chunk's first block tick.
    block_changed: *const AtomicTick,
    /// Whether items stamp their block tick themselves (false when the
    /// loop does it, see [`QueryData::redirect_marks_by_block`]).
    block_direct: bool,
    row_added: *const u32,
    chunk_changed: &'w AtomicTick,
    chunk_all_changed: &'w AtomicTick,
    /// The column's "some chunk was stamped whole" flag.
    any_all_changed: &'w std::sync::atomic::AtomicBool,
    chunk_mark: *mut u32,
    /// Whether `chunk_mark` was redirected to a loop-local mark.
    local_mark: bool,
    window: TickWindow,
}

impl<T> Clone for MutFetch<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for MutFetch<'_, T> {}

impl<'w, T> MutFetch<'w, T> {
    /// Column `col` of `chunk`.
    ///
    /// # Safety
    /// `col` is a column and `chunk` an allocated chunk of `archetype`.
    #[inline]
    unsafe fn new(archetype: &'w Archetype, col: usize, chunk: usize, window: TickWindow) -> Self {
        // SAFETY: the caller's contract.
        let (rows, [chunk_changed, _, chunk_all_changed], values) = unsafe {
            (
                archetype.row_ticks_unchecked(col, chunk),
                archetype.chunk_ticks_unchecked(col, chunk),
                archetype.column_ptr_unchecked(col, chunk),
            )
        };
        MutFetch {
            values: values.cast::<T>(),
            row_changed: AtomicTick::slice_ptr(rows.changed, 0),
            block_changed: rows.blocks.as_ptr(),
            block_direct: true,
            row_added: AtomicTick::slice_ptr(rows.added, 0).cast_const(),
            chunk_changed,
            chunk_all_changed,
            // SAFETY: as above.
            any_all_changed: unsafe { archetype.any_all_changed_unchecked(col) },
            chunk_mark: chunk_changed.as_ptr(),
            local_mark: false,
            window,
        }
    }

    /// # Safety
    /// As [`QueryData::item`]: `row` is live, and no other item for it is
    /// alive; the fetch's maker holds write access to the column for `'w`.
    #[inline]
    unsafe fn item(&self, row: usize) -> Mut<'w, T> {
        // SAFETY: `row` is live and below capacity, so the value, both its
        // ticks and its block's tick are in bounds (the block pointer comes
        // from the tail of the block ticks starting at this chunk); the
        // caller guarantees this is the only live item for the row, and the
        // write access is recorded, so the row's ticks and the chunk's
        // stamps are ours to read and write (block ticks atomically).
        unsafe {
            Mut::for_row(
                &mut *self.values.add(row),
                self.row_changed.add(row),
                self.block_changed.add(row >> BLOCK_SHIFT),
                self.block_direct,
                self.chunk_mark,
                self.local_mark,
                self.window,
                self.row_added.add(row),
                self.chunk_all_changed,
            )
        }
    }

    /// # Safety
    /// As [`QueryData::slices`].
    #[inline]
    unsafe fn slices(&self, len: usize) -> &'w mut [T] {
        self.chunk_changed.store(self.window.this_run());
        self.any_all_changed.store(true, std::sync::atomic::Ordering::Relaxed);
        self.chunk_all_changed.store(self.window.this_run());
        // SAFETY: rows `0..len` are live and contiguous; the caller
        // guarantees no other borrow of this column is alive.
        unsafe { std::slice::from_raw_parts_mut(self.values, len) }
    }

    #[inline]
    fn new_marks(&self) -> MutMarks {
        let unset = self.window.this_run().get() ^ 1;
        MutMarks { mark: unset, chunk: unset }
    }

    #[inline]
    fn redirect_marks(&mut self, marks: *mut MutMarks, by_block: bool) {
        // The field's address, without a reference to the marks.
        self.chunk_mark = marks.cast::<u32>();
        self.local_mark = true;
        self.block_direct = !by_block;
    }

    /// # Safety
    /// As [`QueryData::flush_block_marks`].
    #[inline]
    unsafe fn flush_block_marks(&self, marks: *mut MutMarks, first: usize, run: usize) {
        let now = self.window.this_run();
        // SAFETY: the caller's contract: `marks` is live and no item that
        // writes it is; the blocks are the chunk's (their rows were
        // fetched), and block ticks are only accessed atomically.
        unsafe {
            if (*marks).mark == now.get() {
                for i in 0..run {
                    (*self.block_changed.add(first + i)).store(now);
                }
                (*marks).chunk = now.get();
                (*marks).mark = now.get() ^ 1;
            }
        }
    }

    #[inline]
    fn flush_marks(&self, marks: MutMarks) {
        let now = self.window.this_run();
        if marks.mark == now.get() || marks.chunk == now.get() {
            self.chunk_changed.store(now);
        }
    }
}

/// Loop-local marks of one mutable column (see [`crate::query::change`]).
#[doc(hidden)]
#[derive(Copy, Clone, Debug)]
#[repr(C)]
pub struct MutMarks {
    /// What items write on a write (the first field, so a pointer to the
    /// marks is a pointer to it): `this_run` once a row was written since
    /// the last flush.
    mark: u32,
    /// `this_run` once a flushed block held a written row.
    chunk: u32,
}

// SAFETY: reads and writes exactly the `T` column and its ticks, recorded as
// a write.
unsafe impl<T: Component> QueryData for &mut T {
    type Item<'w> = Mut<'w, T>;
    type Slices<'w> = &'w mut [T];
    type State = ComponentId;
    type Cache = usize;
    type Fetch<'w> = MutFetch<'w, T>;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        access.add_write(state).map_err(conflict(state))
    }
    fn matches(state: ComponentId, archetype: &Archetype) -> bool {
        archetype.contains(state)
    }
    fn cache(state: ComponentId, archetype: &Archetype) -> usize {
        archetype.column_of(state).expect("matched archetype holds the column")
    }
    #[inline]
    unsafe fn fetch<'w>(cache: usize, archetype: &'w Archetype, chunk: usize, window: TickWindow) -> MutFetch<'w, T> {
        // SAFETY: `cache` is a column of the matched archetype and `chunk`
        // is in range (the caller's contract).
        unsafe { MutFetch::new(archetype, cache, chunk, window) }
    }
    #[inline]
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: forwarded contract.
        unsafe { fetch.item(row) }
    }
    #[inline]
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, len: usize) -> Self::Slices<'w> {
        // SAFETY: forwarded contract.
        unsafe { fetch.slices(len) }
    }
    fn shrink<'long: 'short, 'short>(item: Mut<'long, T>) -> Mut<'short, T> {
        item
    }
    fn shrink_slices<'long: 'short, 'short>(slices: &'long mut [T]) -> &'short mut [T] {
        slices
    }
    type Marks = MutMarks;
    #[inline]
    fn new_marks(fetch: &Self::Fetch<'_>) -> MutMarks {
        fetch.new_marks()
    }
    #[inline]
    unsafe fn redirect_marks(fetch: &mut Self::Fetch<'_>, marks: *mut MutMarks) {
        fetch.redirect_marks(marks, false);
    }
    #[inline]
    unsafe fn redirect_marks_by_block(fetch: &mut Self::Fetch<'_>, marks: *mut MutMarks) {
        fetch.redirect_marks(marks, true);
    }
    #[inline]
    unsafe fn flush_block_marks(fetch: &Self::Fetch<'_>, marks: *mut MutMarks, first: usize, run: usize) {
        // SAFETY: forwarded contract.
        unsafe { fetch.flush_block_marks(marks, first, run) }
    }
    #[inline]
    fn flush_marks(fetch: &Self::Fetch<'_>, marks: &MutMarks) {
        fetch.flush_marks(*marks);
    }
    #[inline]
    fn prefetch(fetch: &Self::Fetch<'_>, start: usize) {
        prefetch_rows(fetch.values.cast_const(), start);
    }
}

// SAFETY: writes the `T` column and its ticks where present, recorded as a
// write (without a `With<T>` constraint: the query also matches rows
// without `T`).
unsafe impl<T: Component> QueryData for Option<&mut T> {
    type Item<'w> = Option<Mut<'w, T>>;
    type Slices<'w> = Option<&'w mut [T]>;
    type State = ComponentId;
    type Cache = Option<usize>;
    type Fetch<'w> = Option<MutFetch<'w, T>>;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        access.add_write(state).map_err(conflict(state))
    }
    fn matches(_: ComponentId, _: &Archetype) -> bool {
        true
    }
    fn cache(state: ComponentId, archetype: &Archetype) -> Option<usize> {
        archetype.column_of(state)
    }
    #[inline]
    unsafe fn fetch<'w>(
        cache: Option<usize>,
        archetype: &'w Archetype,
        chunk: usize,
        window: TickWindow,
    ) -> Self::Fetch<'w> {
        // SAFETY: `col` is a column of the matched archetype and `chunk` is
        // in range (the caller's contract).
        cache.map(|col| unsafe { MutFetch::new(archetype, col, chunk, window) })
    }
    #[inline]
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: forwarded contract, as for `&mut T`.
        fetch.as_ref().map(|f| unsafe { f.item(row) })
    }
    #[inline]
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, len: usize) -> Self::Slices<'w> {
        // SAFETY: forwarded contract, as for `&mut T`.
        fetch.as_ref().map(|f| unsafe { f.slices(len) })
    }
    fn shrink<'long: 'short, 'short>(item: Option<Mut<'long, T>>) -> Option<Mut<'short, T>> {
        item
    }
    fn shrink_slices<'long: 'short, 'short>(slices: Option<&'long mut [T]>) -> Option<&'short mut [T]> {
        slices
    }
    type Marks = MutMarks;
    #[inline]
    fn new_marks(fetch: &Self::Fetch<'_>) -> MutMarks {
        fetch.as_ref().map_or(MutMarks { mark: 0, chunk: 0 }, MutFetch::new_marks)
    }
    #[inline]
    unsafe fn redirect_marks(fetch: &mut Self::Fetch<'_>, marks: *mut MutMarks) {
        if let Some(f) = fetch {
            f.redirect_marks(marks, false);
        }
    }
    #[inline]
    unsafe fn redirect_marks_by_block(fetch: &mut Self::Fetch<'_>, marks: *mut MutMarks) {
        if let Some(f) = fetch {
            f.redirect_marks(marks, true);
        }
    }
    #[inline]
    unsafe fn flush_block_marks(fetch: &Self::Fetch<'_>, marks: *mut MutMarks, first: usize, run: usize) {
        if let Some(f) = fetch {
            // SAFETY: forwarded contract.
            unsafe { f.flush_block_marks(marks, first, run) }
        }
    }
    #[inline]
    fn flush_marks(fetch: &Self::Fetch<'_>, marks: &MutMarks) {
        if let Some(f) = fetch {
            f.flush_marks(*marks);
        }
    }
    #[inline]
    fn prefetch(fetch: &Self::Fetch<'_>, start: usize) {
        if let Some(f) = fetch {
            prefetch_rows(f.values.cast_const(), start);
        }
    }
}

/// Per-chunk state of a [`Ref`] fetch.
#[doc(hidden)]
pub struct RefFetch<'w, T> {
    values: *const T,
    row_changed: *const AtomicTick,
    row_added: *const AtomicTick,
    chunk_all_changed: &'w AtomicTick,
    window: TickWindow,
}

impl<T> Clone for RefFetch<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RefFetch<'_, T> {}

// SAFETY: reads exactly the `T` column and its ticks, recorded as a read.
unsafe impl<T: Component> QueryData for Ref<'_, T> {
    type Item<'w> = Ref<'w, T>;
    type Slices<'w> = &'w [T];
    type State = ComponentId;
    type Cache = usize;
    type Fetch<'w> = RefFetch<'w, T>;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        access.add_read(state).map_err(conflict(state))
    }
    fn matches(state: ComponentId, archetype: &Archetype) -> bool {
        archetype.contains(state)
    }
    fn cache(state: ComponentId, archetype: &Archetype) -> usize {
        archetype.column_of(state).expect("matched archetype holds the column")
    }
    #[inline]
    unsafe fn fetch<'w>(cache: usize, archetype: &'w Archetype, chunk: usize, window: TickWindow) -> RefFetch<'w, T> {
        let rows = archetype.row_ticks(cache, chunk);
        RefFetch {
            values: archetype.column_ptr(cache, chunk).cast::<T>().cast_const(),
            row_changed: rows.changed.as_ptr(),
            row_added: rows.added.as_ptr(),
            chunk_all_changed: &archetype.columns[cache].ticks.chunk_all_changed[chunk],
            window,
        }
    }
    #[inline]
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: `row` is live and below capacity, so the value and its
        // ticks are in bounds (the tick pointers come from the tails of the
        // column's tick arrays starting at this chunk); the column holds
        // `T` and shared access to it is recorded.
        unsafe {
            Ref::new(
                &*fetch.values.add(row),
                &*fetch.row_changed.add(row),
                &*fetch.row_added.add(row),
                fetch.chunk_all_changed,
                fetch.window,
            )
        }
    }
    #[inline]
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, len: usize) -> Self::Slices<'w> {
        // SAFETY: rows `0..len` are live and contiguous in the column.
        unsafe { std::slice::from_raw_parts(fetch.values, len) }
    }
    fn shrink<'long: 'short, 'short>(item: Ref<'long, T>) -> Ref<'short, T> {
        item
    }
    fn shrink_slices<'long: 'short, 'short>(slices: &'long [T]) -> &'short [T] {
        slices
    }
    type Marks = ();
    fn new_marks(_: &Self::Fetch<'_>) {}
    unsafe fn redirect_marks(_: &mut Self::Fetch<'_>, _: *mut ()) {}
    fn flush_marks(_: &Self::Fetch<'_>, _: &()) {}
    #[inline]
    fn prefetch(fetch: &Self::Fetch<'_>, start: usize) {
        prefetch_rows(fetch.values, start);
    }
}

// SAFETY: records no writes.
unsafe impl<T: Component> ReadOnlyQueryData for Ref<'_, T> {}

/// Query data that says whether the entity has component `T`, without
/// borrowing it: it records no access to `T` (so it conflicts with
/// nothing) and matches every archetype (unlike [`crate::With`], which
/// filters). As chunk slices it is whether the chunk's rows have `T`.
///
/// ```
/// use ecs_core::prelude::*;
///
/// #[derive(Component)]
/// struct Pos(f32);
/// #[derive(Component)]
/// struct Frozen;
/// let mut world = World::new();
/// world.spawn((Pos(0.0),));
/// world.spawn((Pos(1.0), Frozen));
/// let mut q = world.query::<(&Pos, Has<Frozen>)>();
/// let frozen: Vec<bool> = q.iter(&world).map(|(_, frozen)| frozen).collect();
/// assert_eq!(frozen.len(), 2);
/// assert_eq!(frozen.iter().filter(|&&f| f).count(), 1);
/// ```
pub struct Has<T>(PhantomData<fn() -> T>);

// SAFETY: reads no column (only whether the archetype has one), so it
// records nothing; it matches every archetype and its cache looks no
// column up.
unsafe impl<T: Component> QueryData for Has<T> {
    type Item<'w> = bool;
    type Slices<'w> = bool;
    type State = ComponentId;
    type Cache = bool;
    type Fetch<'w> = bool;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(_: ComponentId, _: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        Ok(())
    }
    fn matches(_: ComponentId, _: &Archetype) -> bool {
        true
    }
    fn cache(state: ComponentId, archetype: &Archetype) -> bool {
        archetype.contains(state)
    }
    #[inline]
    unsafe fn fetch<'w>(cache: bool, _: &'w Archetype, _: usize, _: TickWindow) -> Self::Fetch<'w> {
        cache
    }
    #[inline]
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, _: usize) -> Self::Item<'w> {
        *fetch
    }
    #[inline]
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, _: usize) -> Self::Slices<'w> {
        *fetch
    }
    fn shrink<'long: 'short, 'short>(item: bool) -> bool {
        item
    }
    fn shrink_slices<'long: 'short, 'short>(slices: bool) -> bool {
        slices
    }
    type Marks = ();
    fn new_marks(_: &bool) {}
    unsafe fn redirect_marks(_: &mut bool, _: *mut ()) {}
    fn flush_marks(_: &bool, _: &()) {}
}

// SAFETY: records no writes.
unsafe impl<T: Component> ReadOnlyQueryData for Has<T> {}

// SAFETY: reads only the entity column, which no query writes.
unsafe impl QueryData for Entity {
    type Item<'w> = Entity;
    type Slices<'w> = &'w [Entity];
    type State = ();
    type Cache = ();
    type Fetch<'w> = *const Entity;

    fn init_state(_: &mut Components) {}
    fn update_access(_: (), _: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        Ok(())
    }
    fn matches(_: (), _: &Archetype) -> bool {
        true
    }
    fn cache(_: (), _: &Archetype) {}
    #[inline]
    unsafe fn fetch<'w>(_: (), archetype: &'w Archetype, chunk: usize, _: TickWindow) -> Self::Fetch<'w> {
        archetype.chunks[chunk].entities_ptr()
    }
    #[inline]
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: `row` is live, so its entity slot is initialised.
        unsafe { *fetch.add(row) }
    }
    #[inline]
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, len: usize) -> Self::Slices<'w> {
        // SAFETY: rows `0..len` are live.
        unsafe { std::slice::from_raw_parts(*fetch, len) }
    }
    fn shrink<'long: 'short, 'short>(item: Entity) -> Entity {
        item
    }
    fn shrink_slices<'long: 'short, 'short>(slices: &'long [Entity]) -> &'short [Entity] {
        slices
    }
    type Marks = ();
    fn new_marks(_: &Self::Fetch<'_>) {}
    unsafe fn redirect_marks(_: &mut Self::Fetch<'_>, _: *mut ()) {}
    fn flush_marks(_: &Self::Fetch<'_>, _: &()) {}
    #[inline]
    fn prefetch(fetch: &Self::Fetch<'_>, start: usize) {
        prefetch_rows(*fetch, start);
    }
}

// SAFETY: records no writes.
unsafe impl ReadOnlyQueryData for Entity {}

// SAFETY: reads the `T` column where present, recorded as a read.
unsafe impl<T: Component> QueryData for Option<&T> {
    type Item<'w> = Option<&'w T>;
    type Slices<'w> = Option<&'w [T]>;
    type State = ComponentId;
    type Cache = Option<usize>;
    type Fetch<'w> = Option<*const T>;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        access.add_read(state).map_err(conflict(state))
    }
    fn matches(_: ComponentId, _: &Archetype) -> bool {
        true
    }
    /// The column's byte offset, as for `&T`, where the archetype has one.
    fn cache(state: ComponentId, archetype: &Archetype) -> Option<usize> {
        archetype.column_of(state).map(|col| archetype.column_offset(col))
    }
    #[inline]
    unsafe fn fetch<'w>(
        cache: Option<usize>,
        archetype: &'w Archetype,
        chunk: usize,
        window: TickWindow,
    ) -> Self::Fetch<'w> {
        // SAFETY: the caller's contract (`chunk` in range); the offset is
        // `&T`'s cache for this archetype.
        cache.map(|offset| unsafe { <&T as QueryData>::fetch(offset, archetype, chunk, window) })
    }
    #[inline]
    unsafe fn item<'w>(fetch: &Self::Fetch<'w>, row: usize) -> Self::Item<'w> {
        // SAFETY: as for `&T`.
        fetch.map(|p| unsafe { &*p.add(row) })
    }
    #[inline]
    unsafe fn slices<'w>(fetch: &Self::Fetch<'w>, len: usize) -> Self::Slices<'w> {
        // SAFETY: as for `&T`.
        fetch.map(|p| unsafe { std::slice::from_raw_parts(p, len) })
    }
    fn shrink<'long: 'short, 'short>(item: Option<&'long T>) -> Option<&'short T> {
        item
    }
    fn shrink_slices<'long: 'short, 'short>(slices: Option<&'long [T]>) -> Option<&'short [T]> {
        slices
    }
    type Marks = ();
    fn new_marks(_: &Self::Fetch<'_>) {}
    unsafe fn redirect_marks(_: &mut Self::Fetch<'_>, _: *mut ()) {}
    fn flush_marks(_: &Self::Fetch<'_>, _: &()) {}
    #[inline]
    fn prefetch(fetch: &Self::Fetch<'_>, start: usize) {
        if let Some(values) = fetch {
            prefetch_rows(*values, start);
        }
    }
}

// SAFETY: records no writes.
unsafe impl<T: Component> ReadOnlyQueryData for Option<&T> {}

macro_rules! tuple_data {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: each element records its own access; the tuple fetches
        // exactly what its elements fetch.
        #[allow(clippy::unused_unit, reason = "the expansion for the empty tuple returns ()")]
        unsafe impl<$($name: QueryData),*> QueryData for ($($name,)*) {
            type Item<'w> = ($($name::Item<'w>,)*);
            type Slices<'w> = ($($name::Slices<'w>,)*);
            type State = ($($name::State,)*);
            type Cache = ($($name::Cache,)*);
            type Fetch<'w> = ($($name::Fetch<'w>,)*);

            fn init_state(_components: &mut Components) -> Self::State {
                ($($name::init_state(_components),)*)
            }
            fn update_access(_state: Self::State, _access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
                $( $name::update_access(_state.$idx, _access)?; )*
                Ok(())
            }
            fn matches(_state: Self::State, _archetype: &Archetype) -> bool {
                true $( && $name::matches(_state.$idx, _archetype) )*
            }
            fn cache(_state: Self::State, _archetype: &Archetype) -> Self::Cache {
                ($($name::cache(_state.$idx, _archetype),)*)
            }
            #[inline]
            unsafe fn fetch<'w>(_cache: Self::Cache, _archetype: &'w Archetype, _chunk: usize, _window: TickWindow) -> Self::Fetch<'w> {
                // SAFETY: forwarded contract.
                ($( unsafe { $name::fetch(_cache.$idx, _archetype, _chunk, _window) },)*)
            }
            #[inline]
            unsafe fn item<'w>(_fetch: &Self::Fetch<'w>, _row: usize) -> Self::Item<'w> {
                // SAFETY: forwarded contract; elements borrow distinct
                // columns (checked by `update_access`).
                ($( unsafe { $name::item(&_fetch.$idx, _row) },)*)
            }
            #[inline]
            unsafe fn slices<'w>(_fetch: &Self::Fetch<'w>, _len: usize) -> Self::Slices<'w> {
                // SAFETY: forwarded contract; distinct columns.
                ($( unsafe { $name::slices(&_fetch.$idx, _len) },)*)
            }
            fn shrink<'long: 'short, 'short>(item: Self::Item<'long>) -> Self::Item<'short> {
                #[allow(non_snake_case, clippy::unused_unit, reason = "the macro binds tuple elements to their type parameter names, and the empty tuple returns ()")]
                let ($($name,)*) = item;
                ($($name::shrink($name),)*)
            }
            fn shrink_slices<'long: 'short, 'short>(slices: Self::Slices<'long>) -> Self::Slices<'short> {
                #[allow(non_snake_case, clippy::unused_unit, reason = "the macro binds tuple elements to their type parameter names, and the empty tuple returns ()")]
                let ($($name,)*) = slices;
                ($($name::shrink_slices($name),)*)
            }
            type Marks = ($($name::Marks,)*);
            #[inline]
            fn new_marks(_fetch: &Self::Fetch<'_>) -> Self::Marks {
                ($($name::new_marks(&_fetch.$idx),)*)
            }
            #[inline]
            unsafe fn redirect_marks(_fetch: &mut Self::Fetch<'_>, _marks: *mut Self::Marks) {
                // SAFETY: forwarded contract; each element gets its own field.
                $( unsafe { $name::redirect_marks(&mut _fetch.$idx, &raw mut (*_marks).$idx) }; )*
            }
            #[inline]
            unsafe fn redirect_marks_by_block(_fetch: &mut Self::Fetch<'_>, _marks: *mut Self::Marks) {
                // SAFETY: forwarded contract; each element gets its own field.
                $( unsafe { $name::redirect_marks_by_block(&mut _fetch.$idx, &raw mut (*_marks).$idx) }; )*
            }
            #[inline]
            unsafe fn flush_block_marks(_fetch: &Self::Fetch<'_>, _marks: *mut Self::Marks, _first: usize, _run: usize) {
                // SAFETY: forwarded contract; each element gets its own field.
                $( unsafe { $name::flush_block_marks(&_fetch.$idx, &raw mut (*_marks).$idx, _first, _run) }; )*
            }
            #[inline]
            fn flush_marks(_fetch: &Self::Fetch<'_>, _marks: &Self::Marks) {
                $( $name::flush_marks(&_fetch.$idx, &_marks.$idx); )*
            }
            #[inline]
            fn prefetch(_fetch: &Self::Fetch<'_>, _start: usize) {
                $( $name::prefetch(&_fetch.$idx, _start); )*
            }
        }

        // SAFETY: every element is read-only.
        #[allow(clippy::unused_unit, reason = "the expansion for the empty tuple returns ()")]
        unsafe impl<$($name: ReadOnlyQueryData),*> ReadOnlyQueryData for ($($name,)*) {}
    };
}

tuple_data!();
tuple_data!(A 0);
tuple_data!(A 0, B 1);
tuple_data!(A 0, B 1, C 2);
tuple_data!(A 0, B 1, C 2, D 3);
tuple_data!(A 0, B 1, C 2, D 3, E 4);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
tuple_data!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

#[cfg(test)]
mod tests {
    use super::prefetch_rows;

    /// The row loops prefetch the next chunk's rows past its length and
    /// past the end of its allocation: a prefetch must never read, so
    /// addresses nothing owns (null, the top of the address space) are
    /// fine, for every size of value.
    #[test]
    fn prefetch_hints_never_touch_memory() {
        prefetch_rows(std::ptr::null::<[u8; 64]>(), 0);
        prefetch_rows(std::ptr::null::<[u8; 12]>(), usize::MAX);
        prefetch_rows(std::ptr::dangling::<u32>(), 1 << 40);
        prefetch_rows(std::ptr::null::<()>(), 7);
        prefetch_rows(usize::MAX as *const [u64; 9], 3);
        let values = [7u32; 4];
        prefetch_rows(values.as_ptr(), 2);
        assert_eq!(values, [7; 4]);
    }
}
