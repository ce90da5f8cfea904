//! Archetypes: one per distinct component set, each a list of 16 KiB chunks
//! plus the change ticks of every column, kept outside the chunks.
//!
//! ## Tick layout
//! For every column the archetype keeps, per chunk, `chunk_changed`,
//! `chunk_added` and `chunk_all_changed`; per block of `BLOCK_ROWS` (16) rows,
//! `block_changed` (indexed `chunk * blocks_per_chunk + row / BLOCK_ROWS`);
//! and per row `row_changed` and `row_added` (indexed
//! `chunk * capacity + row`). A query decides whether to look inside a chunk
//! from `chunk_changed` alone (one load from a dense array, chunk memory
//! untouched), then which blocks of the chunk to look inside from
//! `block_changed` (16 rows of ticks are one cache line), and only then reads
//! row ticks. A row counts as changed when its `row_changed` or its chunk's
//! `chunk_all_changed` is inside the query's window; the latter is how a
//! whole-column write stamps a chunk in O(1).
//!
//! Invariants: `chunk_changed` is never older than the effective changed
//! tick of any live row of the chunk (and likewise for `chunk_added`), and
//! `block_changed` is never older than the `row_changed` of any live row of
//! its block. Everything that writes a row tick raises the block and chunk
//! ticks too. Block and chunk ticks may be newer than every row they cover
//! (a row that moved away leaves its stamp behind): that costs a look, never
//! a wrong answer.

use std::alloc::Layout;
use std::ptr::NonNull;

use crate::error::StoreError;
use crate::storage::chunk::{CHUNK_SIZE, Chunk, ChunkLayout};
use crate::storage::component::{ComponentId, Components};
use crate::storage::edges::{EdgeMap, MovePlan};
use crate::storage::entity::Entity;
use crate::storage::tick::{AtomicTick, MAX_CHANGE_AGE, Tick};

/// The dense id of an archetype in its world.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArchetypeId(pub(crate) u32);

impl ArchetypeId {
    /// The archetype with no components.
    pub const EMPTY: ArchetypeId = ArchetypeId(0);

    /// The id as an index.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Rows covered by one block tick: 16 rows of 4-byte ticks are one 64-byte
/// cache line, so a block that must be looked inside costs one line of row
/// ticks, and a chunk with one changed row among 200 reads 13 block ticks and
/// 16 row ticks instead of 200 row ticks.
pub(crate) const BLOCK_ROWS: usize = 16;

/// `log2(BLOCK_ROWS)`.
pub(crate) const BLOCK_SHIFT: u32 = BLOCK_ROWS.trailing_zeros();

/// Blocks of one 64-row group, the unit filters test rows in: a group
/// that starts at a multiple of 64 rows reads its four block ticks with one
/// vector compare, and a chunk's block ticks come in whole groups.
pub(crate) const GROUP_BLOCKS: usize = 64 / BLOCK_ROWS;

/// Change ticks of one column, all outside chunk memory.
#[derive(Default, Debug)]
pub(crate) struct ColumnTicks {
    pub(crate) chunk_changed: Vec<AtomicTick>,
    pub(crate) chunk_added: Vec<AtomicTick>,
    pub(crate) chunk_all_changed: Vec<AtomicTick>,
    /// Whether a whole-column write ever stamped a `chunk_all_changed` of
    /// this column; until one does, a moving row's own changed tick is its
    /// effective one (no stamp to fold in).
    pub(crate) any_all_changed: std::sync::atomic::AtomicBool,
    pub(crate) block_changed: Vec<AtomicTick>,
    pub(crate) row_changed: Vec<AtomicTick>,
    pub(crate) row_added: Vec<AtomicTick>,
}

/// The row-level ticks of one column in one chunk.
#[derive(Clone, Copy)]
pub(crate) struct RowTicks<'a> {
    /// One changed tick per row (`capacity` of them).
    pub(crate) changed: &'a [AtomicTick],
    /// One added tick per row (`capacity` of them).
    pub(crate) added: &'a [AtomicTick],
    /// One changed tick per block of [`BLOCK_ROWS`] rows.
    pub(crate) blocks: &'a [AtomicTick],
}

/// The tick cells of one row of one column (see
/// [`Archetype::row_tick_cells_unchecked`]).
pub(crate) struct RowTickCells<'a> {
    pub(crate) changed: &'a AtomicTick,
    pub(crate) added: &'a AtomicTick,
    pub(crate) block: &'a AtomicTick,
    pub(crate) chunk_changed: &'a AtomicTick,
    pub(crate) chunk_all_changed: &'a AtomicTick,
}

/// Of two stored stamps, the one written later, seen from `now`. Stored
/// stamps are never older than 2^32 ticks (the world clamps them well
/// before), so comparing their wrapping ages is exact; two stamps past
/// [`MAX_CHANGE_AGE`] both count as "never changed", whichever is kept.
#[inline(always)]
pub(crate) fn newer(a: u32, b: u32, now: u32) -> u32 {
    if now.wrapping_sub(a) <= now.wrapping_sub(b) { a } else { b }
}

/// Raises a tick cell to `tick` if that is newer (seen from `now`).
#[inline(always)]
fn raise(cell: &mut AtomicTick, tick: u32, now: u32) {
    let c = cell.get_mut();
    *c = newer(*c, tick, now);
}

/// One component column of an archetype.
#[derive(Debug)]
pub(crate) struct Column {
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) align: usize,
    pub(crate) drop: Option<unsafe fn(*mut u8)>,
    pub(crate) ticks: ColumnTicks,
}

const NO_COLUMN: u32 = u32::MAX;

/// All entities with exactly one component set, stored in chunks.
pub struct Archetype {
    id: ArchetypeId,
    components: Box<[ComponentId]>,
    pub(crate) columns: Box<[Column]>,
    /// Column index by component index, `NO_COLUMN` where absent.
    column_index: Box<[u32]>,
    capacity: usize,
    /// Block ticks per chunk: `capacity.div_ceil(BLOCK_ROWS)`, rounded up
    /// to whole groups of [`GROUP_BLOCKS`] (the blocks past the last row
    /// stay "never changed").
    blocks_per_chunk: usize,
    block: Layout,
    pub(crate) chunks: Vec<Chunk>,
    /// Chunks with free rows; spawns fill the last one.
    open: Vec<u32>,
    len: usize,
    /// Cached structural edges, keyed by the bundle type inserted /
    /// removed: indices into the world's move plans.
    pub(crate) insert_edges: EdgeMap,
    pub(crate) remove_edges: EdgeMap,
    /// Lifecycle flags ([`crate::lifecycle::LifecycleKind::bit`]): which
    /// events some component here has a listener for. Zero means a
    /// structural operation has nothing to call.
    pub(crate) lifecycle: u8,
    /// Whether some column's type has a destructor: without one, dropping
    /// a row reads no column (a despawn of plain data skips the loop).
    needs_drop: bool,
}

impl std::fmt::Debug for Archetype {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Archetype")
            .field("id", &self.id)
            .field("components", &self.components)
            .field("capacity", &self.capacity)
            .field("chunks", &self.chunks.len())
            .field("len", &self.len)
            .finish()
    }
}

impl Archetype {
    /// An archetype for the sorted, deduplicated component set `components`.
    pub(crate) fn new(
        id: ArchetypeId,
        components: &[ComponentId],
        registry: &Components,
    ) -> Result<Archetype, StoreError> {
        debug_assert!(components.windows(2).all(|w| w[0] < w[1]));
        let layouts: Vec<Layout> = components.iter().map(|&c| registry.info(c).layout()).collect();
        let Some(layout) = ChunkLayout::new(&layouts) else {
            return Err(StoreError::ComponentTooLarge {
                components: components.iter().map(|&c| registry.info(c).name()).collect(),
                row_bytes: ChunkLayout::single_row_bytes(&layouts),
                chunk_bytes: CHUNK_SIZE,
            });
        };
        let columns: Box<[Column]> = components
            .iter()
            .zip(&layout.offsets)
            .map(|(&c, &offset)| {
                let info = registry.info(c);
                Column {
                    offset,
                    size: info.layout().size(),
                    align: info.layout().align(),
                    drop: info.drop_fn(),
                    ticks: ColumnTicks::default(),
                }
            })
            .collect();
        let needs_drop = columns.iter().any(|c| c.drop.is_some());
        let max_index = components.iter().map(|c| c.index() + 1).max().unwrap_or(0);
        let mut column_index = vec![NO_COLUMN; max_index].into_boxed_slice();
        for (i, c) in components.iter().enumerate() {
            column_index[c.index()] = i as u32;
        }
        Ok(Archetype {
            id,
            components: components.into(),
            columns,
            column_index,
            capacity: layout.capacity,
            blocks_per_chunk: layout.capacity.div_ceil(BLOCK_ROWS).next_multiple_of(GROUP_BLOCKS),
            block: layout.block,
            chunks: Vec::new(),
            open: Vec::new(),
            len: 0,
            insert_edges: EdgeMap::default(),
            remove_edges: EdgeMap::default(),
            lifecycle: 0,
            needs_drop,
        })
    }

    /// This archetype's id.
    pub fn id(&self) -> ArchetypeId {
        self.id
    }

    /// The sorted component set.
    pub fn components(&self) -> &[ComponentId] {
        &self.components
    }

    /// Whether the archetype stores `component`.
    #[inline]
    pub fn contains(&self, component: ComponentId) -> bool {
        self.column_of(component).is_some()
    }

    /// Live entities.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entity lives here.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Rows per chunk.
    pub fn chunk_capacity(&self) -> usize {
        self.capacity
    }

    /// Allocated chunks (some may be partly full or empty).
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Live rows of one chunk.
    ///
    /// # Panics
    /// If `chunk >= self.chunk_count()`.
    pub fn chunk_len(&self, chunk: usize) -> usize {
        self.chunks[chunk].len as usize
    }

    /// The live entities of one chunk, in row order.
    ///
    /// # Panics
    /// If `chunk >= self.chunk_count()`.
    pub fn chunk_entities(&self, chunk: usize) -> &[Entity] {
        self.chunks[chunk].entities()
    }

    /// The tick at which `component` was last written anywhere in `chunk`.
    pub fn chunk_changed_tick(&self, component: ComponentId, chunk: usize) -> Option<Tick> {
        let col = self.column_of(component)?;
        Some(self.columns[col].ticks.chunk_changed.get(chunk)?.load())
    }

    /// The tick at which `component` was last added to a row of `chunk`.
    pub fn chunk_added_tick(&self, component: ComponentId, chunk: usize) -> Option<Tick> {
        let col = self.column_of(component)?;
        Some(self.columns[col].ticks.chunk_added.get(chunk)?.load())
    }

    /// The column index of `component`.
    #[inline]
    pub(crate) fn column_of(&self, component: ComponentId) -> Option<usize> {
        match self.column_index.get(component.index()) {
            Some(&i) if i != NO_COLUMN => Some(i as usize),
            _ => None,
        }
    }

    /// [`Archetype::column_ptr`] without bounds checks.
    ///
    /// # Safety
    /// `col` is a column and `chunk` an allocated chunk of this archetype.
    #[inline(always)]
    pub(crate) unsafe fn column_ptr_unchecked(&self, col: usize, chunk: usize) -> *mut u8 {
        debug_assert!(col < self.columns.len() && chunk < self.chunks.len());
        // SAFETY: the caller's contract.
        let column = unsafe { self.columns.get_unchecked(col) };
        if column.size == 0 {
            return NonNull::<u8>::dangling().as_ptr().wrapping_add(column.align - 1);
        }
        // SAFETY: the caller's contract, and `offset + size * capacity <=
        // CHUNK_SIZE` by `ChunkLayout`, so the offset stays inside the
        // chunk's allocation.
        unsafe { self.chunks.get_unchecked(chunk).base().add(column.offset) }
    }

    /// The byte offset of column `col` inside each chunk (the column of
    /// chunk `c` starts at [`Archetype::chunk_base_unchecked`]`(c)` plus
    /// it; meaningless for a zero-sized component).
    #[inline]
    pub(crate) fn column_offset(&self, col: usize) -> usize {
        self.columns[col].offset
    }

    /// The first byte of `chunk`'s allocation.
    ///
    /// # Safety
    /// `chunk` is an allocated chunk of this archetype.
    #[inline(always)]
    pub(crate) unsafe fn chunk_base_unchecked(&self, chunk: usize) -> *mut u8 {
        debug_assert!(chunk < self.chunks.len());
        // SAFETY: the caller's contract.
        unsafe { self.chunks.get_unchecked(chunk).base() }
    }

    /// Start of column `col` in `chunk`. For zero-sized components a dangling,
    /// well-aligned pointer.
    #[inline]
    pub(crate) fn column_ptr(&self, col: usize, chunk: usize) -> *mut u8 {
        let column = &self.columns[col];
        if column.size == 0 {
            return NonNull::<u8>::dangling().as_ptr().wrapping_add(column.align - 1);
        }
        // SAFETY: `offset + size * capacity <= CHUNK_SIZE` by `ChunkLayout`,
        // so the offset stays inside the chunk's allocation.
        unsafe { self.chunks[chunk].base().add(column.offset) }
    }

    /// Address of one value. The row must be below the chunk's capacity.
    #[inline]
    pub(crate) fn value_ptr(&self, col: usize, chunk: usize, row: usize) -> *mut u8 {
        debug_assert!(row < self.capacity);
        let column = &self.columns[col];
        // `wrapping_add` keeps this safe; for sized columns the result stays
        // inside the chunk because `row < capacity`.
        self.column_ptr(col, chunk).wrapping_add(column.size * row)
    }

    /// The value of `row` in column `col` of `chunk`, which holds `T`: the
    /// column's offset plus `row` values of `T` (a zero-sized `T` decided
    /// at compile time, without reading the column's record).
    ///
    /// # Safety
    /// `col` is a column of `T` values, `chunk` an allocated chunk and
    /// `row < capacity`.
    #[inline(always)]
    pub(crate) unsafe fn typed_value_ptr<T>(&self, col: usize, chunk: usize, row: usize) -> *mut T {
        if size_of::<T>() == 0 {
            return NonNull::<T>::dangling().as_ptr();
        }
        debug_assert!(col < self.columns.len() && row < self.capacity);
        // SAFETY: the caller's contract; `offset + size * capacity <=
        // CHUNK_SIZE` by `ChunkLayout`, so the value lies in the chunk.
        unsafe { self.chunk_base_unchecked(chunk).add(self.columns.get_unchecked(col).offset).cast::<T>().add(row) }
    }

    /// Index of a row in the per-row tick arrays.
    #[inline]
    fn tick_index(&self, chunk: usize, row: usize) -> usize {
        chunk * self.capacity + row
    }

    /// Index of a row's block in the per-block tick arrays.
    #[inline]
    fn block_index(&self, chunk: usize, row: usize) -> usize {
        chunk * self.blocks_per_chunk + (row >> BLOCK_SHIFT)
    }

    /// The row-level ticks of column `col` in `chunk`.
    ///
    /// # Panics
    /// If `col` or `chunk` is out of range.
    #[inline]
    pub(crate) fn row_ticks(&self, col: usize, chunk: usize) -> RowTicks<'_> {
        let t = &self.columns[col].ticks;
        let (rows, blocks) = (self.tick_index(chunk, 0), self.block_index(chunk, 0));
        RowTicks {
            changed: &t.row_changed[rows..rows + self.capacity],
            added: &t.row_added[rows..rows + self.capacity],
            blocks: &t.block_changed[blocks..blocks + self.blocks_per_chunk],
        }
    }

    /// [`Archetype::row_ticks`] without bounds checks, for the per-chunk
    /// fetches of query loops.
    ///
    /// # Safety
    /// `col` is a column and `chunk` an allocated chunk of this archetype.
    #[inline(always)]
    pub(crate) unsafe fn row_ticks_unchecked(&self, col: usize, chunk: usize) -> RowTicks<'_> {
        debug_assert!(col < self.columns.len() && chunk < self.chunks.len());
        let (rows, blocks) = (self.tick_index(chunk, 0), self.block_index(chunk, 0));
        // SAFETY: the caller's contract; the tick arrays cover every
        // allocated chunk (`capacity` row ticks and `blocks_per_chunk`
        // block ticks each).
        unsafe {
            let t = &self.columns.get_unchecked(col).ticks;
            RowTicks {
                changed: t.row_changed.get_unchecked(rows..rows + self.capacity),
                added: t.row_added.get_unchecked(rows..rows + self.capacity),
                blocks: t.block_changed.get_unchecked(blocks..blocks + self.blocks_per_chunk),
            }
        }
    }

    /// The tick cells one row's write goes through, for
    /// [`World::get_mut`](crate::World::get_mut): the row's changed and
    /// added ticks, its block's changed tick, and the chunk's changed and
    /// whole-column changed ticks of column `col`, without bounds checks.
    ///
    /// # Safety
    /// `col` is a column, `chunk` an allocated chunk of this archetype and
    /// `row < capacity`.
    #[inline(always)]
    pub(crate) unsafe fn row_tick_cells_unchecked(&self, col: usize, chunk: usize, row: usize) -> RowTickCells<'_> {
        debug_assert!(col < self.columns.len() && chunk < self.chunks.len() && row < self.capacity);
        let (i, b) = (self.tick_index(chunk, row), self.block_index(chunk, row));
        // SAFETY: the caller's contract; the tick arrays cover every
        // allocated chunk (`capacity` row ticks and `blocks_per_chunk`
        // block ticks each, one chunk tick of each kind).
        unsafe {
            let t = &self.columns.get_unchecked(col).ticks;
            RowTickCells {
                changed: t.row_changed.get_unchecked(i),
                added: t.row_added.get_unchecked(i),
                block: t.block_changed.get_unchecked(b),
                chunk_changed: t.chunk_changed.get_unchecked(chunk),
                chunk_all_changed: t.chunk_all_changed.get_unchecked(chunk),
            }
        }
    }

    /// The per-chunk ticks of column `col` in `chunk`: changed, added and
    /// whole-column changed, without bounds checks.
    ///
    /// # Safety
    /// As [`Archetype::row_ticks_unchecked`].
    #[inline(always)]
    pub(crate) unsafe fn chunk_ticks_unchecked(&self, col: usize, chunk: usize) -> [&AtomicTick; 3] {
        debug_assert!(col < self.columns.len() && chunk < self.chunks.len());
        // SAFETY: the caller's contract; the chunk tick arrays cover every
        // allocated chunk.
        unsafe {
            let t = &self.columns.get_unchecked(col).ticks;
            [
                t.chunk_changed.get_unchecked(chunk),
                t.chunk_added.get_unchecked(chunk),
                t.chunk_all_changed.get_unchecked(chunk),
            ]
        }
    }

    /// The "some chunk was stamped whole" flag of column `col`.
    ///
    /// # Safety
    /// `col` is a column of this archetype.
    #[inline(always)]
    pub(crate) unsafe fn any_all_changed_unchecked(&self, col: usize) -> &std::sync::atomic::AtomicBool {
        debug_assert!(col < self.columns.len());
        // SAFETY: the caller's contract.
        unsafe { &self.columns.get_unchecked(col).ticks.any_all_changed }
    }

    /// The effective changed tick of a row (its own, or the chunk's
    /// whole-column mark if newer).
    #[inline]
    pub(crate) fn row_changed_tick(&self, col: usize, chunk: usize, row: usize, now: Tick) -> Tick {
        let t = &self.columns[col].ticks;
        t.row_changed[self.tick_index(chunk, row)].load().newest(t.chunk_all_changed[chunk].load(), now)
    }

    /// The added tick of a row.
    #[inline]
    pub(crate) fn row_added_tick(&self, col: usize, chunk: usize, row: usize) -> Tick {
        self.columns[col].ticks.row_added[self.tick_index(chunk, row)].load()
    }

    /// Reserves room for `rows` more rows without reallocating chunk and
    /// tick storage along the way.
    pub(crate) fn reserve_rows(&mut self, rows: usize) {
        let free: usize = self.open.iter().map(|&c| self.capacity - self.chunks[c as usize].len as usize).sum();
        let chunks = rows.saturating_sub(free).div_ceil(self.capacity);
        if chunks == 0 {
            return;
        }
        self.chunks.reserve(chunks);
        for column in self.columns.iter_mut() {
            let t = &mut column.ticks;
            t.chunk_changed.reserve(chunks);
            t.chunk_added.reserve(chunks);
            t.chunk_all_changed.reserve(chunks);
            t.block_changed.reserve(chunks * self.blocks_per_chunk);
            t.row_changed.reserve(chunks * self.capacity);
            t.row_added.reserve(chunks * self.capacity);
        }
    }

    /// Finds (or makes) a chunk with free rows. Returns the chunk and how
    /// many rows are free; new rows go at index `chunk_len(chunk)`.
    #[inline]
    pub(crate) fn open_chunk(&mut self, now: Tick) -> (usize, usize) {
        if let Some(&c) = self.open.last() {
            let c = c as usize;
            return (c, self.capacity - self.chunks[c].len as usize);
        }
        self.new_chunk(now)
    }

    /// Allocates a chunk and lists it as open.
    #[cold]
    #[inline(never)]
    fn new_chunk(&mut self, now: Tick) -> (usize, usize) {
        let c = self.chunks.len();
        // Tick storage first, so a failure to grow it leaves no chunk
        // without ticks; the truncations drop whatever such a failed
        // attempt had added to the columns before it.
        let capacity = self.capacity;
        let blocks = self.blocks_per_chunk;
        // A new chunk starts "never changed"; rows raise its ticks.
        let never = Tick::new(now.get().wrapping_sub(MAX_CHANGE_AGE));
        for column in self.columns.iter_mut() {
            let t = &mut column.ticks;
            t.chunk_changed.truncate(c);
            t.chunk_added.truncate(c);
            t.chunk_all_changed.truncate(c);
            t.block_changed.truncate(c * blocks);
            t.row_changed.truncate(c * capacity);
            t.row_added.truncate(c * capacity);
            t.chunk_changed.push(AtomicTick::new(never));
            t.chunk_added.push(AtomicTick::new(never));
            t.chunk_all_changed.push(AtomicTick::new(never));
            t.block_changed.resize_with(t.block_changed.len() + blocks, || AtomicTick::new(never));
            t.row_changed.resize_with(t.row_changed.len() + capacity, AtomicTick::default);
            t.row_added.resize_with(t.row_added.len() + capacity, AtomicTick::default);
        }
        self.chunks.reserve(1);
        self.open.reserve(1);
        self.chunks.push(Chunk::new(self.block));
        self.open.push(c as u32);
        (c, capacity)
    }

    /// Makes `count` rows after the chunk's current end live. Their ticks
    /// are set separately ([`Archetype::stamp_new_rows`] or per column).
    ///
    /// # Safety
    /// The caller has written every component value and the entity of each
    /// of those rows, and `chunk` is the chunk `open_chunk` returned with at
    /// least `count` free rows.
    #[inline]
    pub(crate) unsafe fn commit_rows(&mut self, chunk: usize, count: usize) {
        debug_assert!(self.chunks[chunk].len as usize + count <= self.capacity);
        debug_assert_eq!(self.open.last().map(|&c| c as usize), Some(chunk));
        let c = &mut self.chunks[chunk];
        c.len += count as u32;
        self.len += count;
        if c.len as usize == self.capacity {
            self.open.pop();
        }
    }

    /// [`Archetype::commit_rows`] of one row, without the bounds check.
    ///
    /// # Safety
    /// As [`Archetype::commit_rows`] with `count == 1`.
    #[inline(always)]
    unsafe fn commit_row_unchecked(&mut self, chunk: usize) {
        debug_assert!((self.chunks[chunk].len as usize) < self.capacity);
        debug_assert_eq!(self.open.last().map(|&c| c as usize), Some(chunk));
        // SAFETY: `chunk` is the chunk `open_chunk` returned (the caller's
        // contract), so it exists.
        let c = unsafe { self.chunks.get_unchecked_mut(chunk) };
        c.len += 1;
        self.len += 1;
        if c.len as usize == self.capacity {
            self.open.pop();
        }
    }

    /// Stamps rows `start..start + count` of `chunk` added and changed at
    /// `now` in every column, and raises their block and chunk ticks to
    /// `now`.
    #[inline]
    pub(crate) fn stamp_new_rows(&mut self, chunk: usize, start: usize, count: usize, now: Tick) {
        if count == 0 {
            return;
        }
        let first = self.tick_index(chunk, start);
        let blocks = self.block_index(chunk, start)..=self.block_index(chunk, start + count - 1);
        for column in self.columns.iter_mut() {
            let t = &mut column.ticks;
            for tick in &mut t.row_changed[first..first + count] {
                *tick.get_mut() = now.get();
            }
            for tick in &mut t.row_added[first..first + count] {
                *tick.get_mut() = now.get();
            }
            for tick in &mut t.block_changed[blocks.clone()] {
                *tick.get_mut() = now.get();
            }
            *t.chunk_changed[chunk].get_mut() = now.get();
            *t.chunk_added[chunk].get_mut() = now.get();
        }
    }

    /// Stamps one row of one column changed at `now` (a replaced value).
    #[inline]
    pub(crate) fn mark_row_changed(&mut self, col: usize, chunk: usize, row: usize, now: Tick) {
        let (i, b) = (self.tick_index(chunk, row), self.block_index(chunk, row));
        let t = &mut self.columns[col].ticks;
        *t.row_changed[i].get_mut() = now.get();
        *t.block_changed[b].get_mut() = now.get();
        *t.chunk_changed[chunk].get_mut() = now.get();
    }

    /// Moves the live row at (`chunk`, `row`) to a new row of `dst` along
    /// `plan`: the values of the columns both archetypes hold go with their
    /// ticks (a changed stamp survives the move, and the chunk's
    /// whole-column stamp is folded into it), the columns only `dst` has
    /// are stamped added and changed at `now`, and the row left behind is
    /// filled by this chunk's last row. Returns the new row's chunk and
    /// index in `dst`, and the entity that took the old row's place here,
    /// if any.
    ///
    /// One pass per column with the tick cells addressed directly: this is
    /// the whole of a structural insert or remove.
    ///
    /// # Safety
    /// `plan` was made for moves from `self` to `dst`, and `dst` is another
    /// archetype; the row is live; the values of the columns `dst` lacks
    /// are dead (moved out or dropped). The columns only `dst` has are left
    /// unwritten: the caller writes them before anything reads the row.
    #[inline(always)]
    pub(crate) unsafe fn move_row(
        &mut self,
        dst: &mut Archetype,
        plan: &MovePlan,
        chunk: usize,
        row: usize,
        now: Tick,
    ) -> (usize, usize, Option<Entity>) {
        debug_assert!(chunk < self.chunks.len() && row < self.chunks[chunk].len as usize);
        debug_assert_eq!(plan.dst, dst.id);
        let now_raw = now.get();
        let (dc, _) = dst.open_chunk(now);
        debug_assert!(dc < dst.chunks.len());
        // SAFETY: `chunk` is a chunk of this archetype (the row is live) and
        // `dc` one `open_chunk` just returned.
        let (src_chunk, dst_chunk) = unsafe { (self.chunks.get_unchecked(chunk), dst.chunks.get_unchecked(dc)) };
        let dr = dst_chunk.len as usize;
        let (src_base, dst_base) = (src_chunk.base(), dst_chunk.base());
        // SAFETY: `row` is live, so its entity slot is initialised; `dr` is
        // the first free row of `dc`, whose slot is in the entity column.
        // The row becomes live here and every value of it is written below
        // (shared columns) or by the caller (fresh ones) before anything
        // reads it; nothing in between can fail.
        unsafe {
            dst_chunk.entities_ptr().add(dr).write(*src_chunk.entities_ptr().add(row));
            dst.commit_row_unchecked(dc);
        }
        let (si, di, db) = (self.tick_index(chunk, row), dst.tick_index(dc, dr), dst.block_index(dc, dr));
        for shared in plan.shared.iter() {
            let size = shared.size as usize;
            if size > 0 {
                // SAFETY: both rows are below their chunk's capacity and the
                // columns lie inside their chunks (`ChunkLayout`; the plan
                // copied these offsets from the two archetypes); the chunks
                // are distinct allocations; the column holds the same type
                // in both, and the source value is moved (the source row is
                // removed below without dropping it).
                unsafe {
                    crate::storage::edges::copy_value(
                        src_base.add(shared.src_offset as usize + size * row),
                        dst_base.add(shared.dst_offset as usize + size * dr),
                        size,
                    );
                }
            }
            debug_assert!((shared.src as usize) < self.columns.len() && (shared.dst as usize) < dst.columns.len());
            // SAFETY: the plan's column indices were taken from these two
            // archetypes, which never change their columns; `si`/`chunk`
            // address a live row and its chunk, `di`, `db`, `dc` the new
            // row, its block and chunk, and the tick arrays cover every
            // allocated chunk (checked by `check_consistency`).
            unsafe {
                let st = &self.columns.get_unchecked(shared.src as usize).ticks;
                let dt = &mut dst.columns.get_unchecked_mut(shared.dst as usize).ticks;
                let mut changed = st.row_changed.get_unchecked(si).load().get();
                if st.any_all_changed.load(std::sync::atomic::Ordering::Relaxed) {
                    changed = newer(changed, st.chunk_all_changed.get_unchecked(chunk).load().get(), now_raw);
                }
                let added = st.row_added.get_unchecked(si).load().get();
                *dt.row_changed.get_unchecked_mut(di).get_mut() = changed;
                *dt.row_added.get_unchecked_mut(di).get_mut() = added;
                // The chunk ticks are raised exactly, so a move alone never
                // makes a chunk look written. The block tick only has to be
                // at least as new as the row's: `now` is, a plain store
                // (and only read inside a chunk that is looked into anyway).
                *dt.block_changed.get_unchecked_mut(db).get_mut() = now_raw;
                raise(dt.chunk_changed.get_unchecked_mut(dc), changed, now_raw);
                raise(dt.chunk_added.get_unchecked_mut(dc), added, now_raw);
            }
        }
        for &dcol in plan.fresh.iter() {
            debug_assert!((dcol as usize) < dst.columns.len());
            // SAFETY: as above, the plan's index is a column of `dst`, and
            // the new row's tick cells are in range.
            unsafe {
                let dt = &mut dst.columns.get_unchecked_mut(dcol as usize).ticks;
                *dt.row_changed.get_unchecked_mut(di).get_mut() = now_raw;
                *dt.row_added.get_unchecked_mut(di).get_mut() = now_raw;
                *dt.block_changed.get_unchecked_mut(db).get_mut() = now_raw;
                *dt.chunk_changed.get_unchecked_mut(dc).get_mut() = now_raw;
                *dt.chunk_added.get_unchecked_mut(dc).get_mut() = now_raw;
            }
        }
        // SAFETY: every value of the row was moved above or is dead per the
        // caller's contract.
        let moved = unsafe { self.swap_remove(chunk, row, now) };
        (dc, dr, moved)
    }

    /// Runs the destructor of every value in one row. The row stays in
    /// place; the caller removes it next with [`Archetype::swap_remove`],
    /// also when a destructor panics (every value of the row has been
    /// dropped by then: a panicking destructor does not stop the others).
    ///
    /// # Safety
    /// The row is live and its values are not used again.
    pub(crate) unsafe fn drop_row(&self, chunk: usize, row: usize) {
        if !self.needs_drop {
            return;
        }
        crate::storage::unwind::for_each_finishing(0..self.columns.len(), |col| {
            // SAFETY: the row is live, so the value is initialised; the
            // caller guarantees it is not used again, and each column is
            // visited once.
            unsafe { self.drop_value(col, chunk, row) };
        });
    }

    /// Runs the destructor of one value, if its type has one.
    ///
    /// # Safety
    /// The value is initialised and not used again.
    #[inline]
    pub(crate) unsafe fn drop_value(&self, col: usize, chunk: usize, row: usize) {
        if let Some(drop) = self.columns[col].drop {
            // SAFETY: forwarded contract.
            unsafe { drop(self.value_ptr(col, chunk, row)) };
        }
    }

    /// Removes a row whose values were already dropped or moved out, by
    /// moving the chunk's last row into it (values, entity and row ticks;
    /// the row's block tick is raised to the moved row's changed tick, seen
    /// from `now`). Returns the entity that moved, if any.
    ///
    /// # Safety
    /// The row is live and its values are dead (dropped or moved out).
    #[inline(always)]
    pub(crate) unsafe fn swap_remove(&mut self, chunk: usize, row: usize, now: Tick) -> Option<Entity> {
        debug_assert!(chunk < self.chunks.len());
        // SAFETY: the row is live, so its chunk exists.
        let c = unsafe { self.chunks.get_unchecked(chunk) };
        debug_assert!(row < c.len as usize);
        let last = c.len as usize - 1;
        let was_full = last + 1 == self.capacity;
        let moved = if row != last {
            let base = c.base();
            let (from, to) = (self.tick_index(chunk, last), self.tick_index(chunk, row));
            let block = self.block_index(chunk, row);
            let now_raw = now.get();
            for column in self.columns.iter_mut() {
                if column.size > 0 {
                    let at = base.wrapping_add(column.offset);
                    // SAFETY: both rows are inside the chunk and distinct,
                    // so the `size`-byte ranges do not overlap; the value at
                    // `last` is live and is moved, not duplicated, since the
                    // row count drops by one below.
                    unsafe {
                        crate::storage::edges::copy_value(
                            at.add(column.size * last),
                            at.add(column.size * row),
                            column.size,
                        );
                    }
                }
                let t = &mut column.ticks;
                // SAFETY: `from`, `to` and `block` address rows and a block
                // of an allocated chunk, which the tick arrays cover.
                unsafe {
                    let changed = *t.row_changed.get_unchecked_mut(from).get_mut();
                    *t.row_changed.get_unchecked_mut(to).get_mut() = changed;
                    let added = *t.row_added.get_unchecked_mut(from).get_mut();
                    *t.row_added.get_unchecked_mut(to).get_mut() = added;
                    // At least as new as the row's own tick, without a
                    // compare (see `move_row`).
                    *t.block_changed.get_unchecked_mut(block).get_mut() = now_raw;
                }
            }
            let entities = c.entities_ptr();
            // SAFETY: `row` and `last` are below the chunk's length, so both
            // entity slots are initialised and inside the column.
            let moved = unsafe {
                let e = *entities.add(last);
                *entities.add(row) = e;
                e
            };
            Some(moved)
        } else {
            None
        };
        // SAFETY: as above.
        unsafe { self.chunks.get_unchecked_mut(chunk).len -= 1 };
        self.len -= 1;
        if was_full {
            self.open.push(chunk as u32);
        }
        moved
    }

    /// Empties every chunk at once ("set length before dropping"): rows
    /// are no longer live when this returns, their values not yet dropped.
    /// Returns the former length of each chunk for [`Archetype::drop_rows`].
    /// Chunks stay allocated for reuse.
    pub(crate) fn take_rows(&mut self) -> Vec<u32> {
        let lens = self.chunks.iter_mut().map(|c| std::mem::take(&mut c.len)).collect();
        self.len = 0;
        // Spawns fill the last open chunk first: list them so chunk 0 is
        // filled first again.
        self.open = (0..self.chunks.len() as u32).rev().collect();
        lens
    }

    /// Drops the values of rows `0..lens[c]` of every chunk `c`. A
    /// panicking destructor does not stop the others.
    ///
    /// # Safety
    /// `lens` came from [`Archetype::take_rows`] on this archetype and no row
    /// was added since, so those values are initialised and no longer live.
    pub(crate) unsafe fn drop_rows(&self, lens: &[u32]) {
        if !self.needs_drop {
            return;
        }
        crate::storage::unwind::for_each_finishing(0..lens.len(), |chunk| {
            crate::storage::unwind::for_each_finishing(0..lens[chunk] as usize, |row| {
                // SAFETY: the caller's contract; each row is visited once.
                unsafe { self.drop_row(chunk, row) };
            });
        });
    }

    /// Checks the archetype's own invariants: its length is the sum of its
    /// chunks' lengths, the open list names exactly the chunks with free
    /// rows, the tick arrays cover every chunk, no live row's changed or
    /// added tick is newer than its chunk's, and no live row's own changed
    /// tick is newer than its block's (seen from `now`).
    pub(crate) fn check_consistency(&self, now: Tick) -> Result<(), String> {
        let id = self.id.0;
        let sum: usize = self.chunks.iter().map(|c| c.len as usize).sum();
        if sum != self.len {
            return Err(format!("archetype {id}: length {} but its chunks hold {sum} rows", self.len));
        }
        let mut open: Vec<u32> = self.open.clone();
        open.sort_unstable();
        let want: Vec<u32> =
            (0..self.chunks.len() as u32).filter(|&c| (self.chunks[c as usize].len as usize) < self.capacity).collect();
        if open != want {
            return Err(format!("archetype {id}: open chunks {open:?}, chunks with free rows {want:?}"));
        }
        for (col, column) in self.columns.iter().enumerate() {
            let t = &column.ticks;
            let chunks = self.chunks.len();
            if t.chunk_changed.len() != chunks
                || t.chunk_added.len() != chunks
                || t.chunk_all_changed.len() != chunks
                || t.block_changed.len() != chunks * self.blocks_per_chunk
                || t.row_changed.len() != chunks * self.capacity
                || t.row_added.len() != chunks * self.capacity
            {
                return Err(format!("archetype {id}, column {col}: tick arrays do not cover {chunks} chunks"));
            }
            for chunk in 0..chunks {
                let (changed, added) = (t.chunk_changed[chunk].load(), t.chunk_added[chunk].load());
                for row in 0..self.chunks[chunk].len as usize {
                    let row_changed = self.row_changed_tick(col, chunk, row, now);
                    let row_added = self.row_added_tick(col, chunk, row);
                    if row_changed.age(now) < changed.age(now) || row_added.age(now) < added.age(now) {
                        return Err(format!(
                            "archetype {id}, column {col}, chunk {chunk}, row {row}: row ticks (changed {row_changed}, \
                             added {row_added}) newer than the chunk's (changed {changed}, added {added})"
                        ));
                    }
                    let own = t.row_changed[self.tick_index(chunk, row)].load();
                    let block = t.block_changed[self.block_index(chunk, row)].load();
                    if own.age(now) < block.age(now) {
                        return Err(format!(
                            "archetype {id}, column {col}, chunk {chunk}, row {row}: row changed tick {own} newer \
                             than its block's ({block})"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Clamps every stored tick older than the maximum age seen from `now`.
    pub(crate) fn check_change_ticks(&mut self, now: Tick) {
        for column in self.columns.iter_mut() {
            let t = &mut column.ticks;
            for list in [
                &mut t.chunk_changed,
                &mut t.chunk_added,
                &mut t.chunk_all_changed,
                &mut t.block_changed,
                &mut t.row_changed,
                &mut t.row_added,
            ] {
                for tick in list.iter_mut() {
                    let raw = tick.get_mut();
                    let mut as_tick = Tick::new(*raw);
                    as_tick.clamp_age(now);
                    *raw = as_tick.get();
                }
            }
        }
    }
}

impl Drop for Archetype {
    fn drop(&mut self) {
        let lens = self.take_rows();
        // SAFETY: the rows were live until `take_rows`, and the archetype is
        // going away, so no value is used again (the chunks are freed
        // without reading them).
        unsafe { self.drop_rows(&lens) };
    }
}
