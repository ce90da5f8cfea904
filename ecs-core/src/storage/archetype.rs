//! Archetypes: one per distinct component set, each a list of 16 KiB chunks
//! plus the change ticks of every column, kept outside the chunks.
//!
//! ## Tick layout
//! For every column the archetype keeps, per chunk, `chunk_changed`,
//! `chunk_added` and `chunk_all_changed`, and per row `row_changed` and
//! `row_added` (indexed `chunk * capacity + row`). A query decides whether to
//! look inside a chunk from `chunk_changed` alone (one load from a dense
//! array, chunk memory untouched). A row counts as changed when its
//! `row_changed` or its chunk's `chunk_all_changed` is inside the query's
//! window; the latter is how a whole-column write stamps a chunk in O(1).
//!
//! Invariant: `chunk_changed` is never older than the effective changed tick
//! of any live row of the chunk (and likewise for `chunk_added`). Everything
//! that writes a row tick raises the chunk tick too.

use std::alloc::Layout;
use std::ptr::NonNull;

use crate::error::StoreError;
use crate::storage::chunk::{CHUNK_SIZE, Chunk, ChunkLayout};
use crate::storage::component::{ComponentId, Components};
use crate::storage::edges::EdgeMap;
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

/// Change ticks of one column, all outside chunk memory.
#[derive(Default, Debug)]
pub(crate) struct ColumnTicks {
    pub(crate) chunk_changed: Vec<AtomicTick>,
    pub(crate) chunk_added: Vec<AtomicTick>,
    pub(crate) chunk_all_changed: Vec<AtomicTick>,
    pub(crate) row_changed: Vec<AtomicTick>,
    pub(crate) row_added: Vec<AtomicTick>,
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
            block: layout.block,
            chunks: Vec::new(),
            open: Vec::new(),
            len: 0,
            insert_edges: EdgeMap::default(),
            remove_edges: EdgeMap::default(),
            lifecycle: 0,
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

    /// Index of a row in the per-row tick arrays.
    #[inline]
    pub(crate) fn tick_index(&self, chunk: usize, row: usize) -> usize {
        chunk * self.capacity + row
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
        let c = self.chunks.len();
        self.chunks.push(Chunk::new(self.block));
        let capacity = self.capacity;
        // A new chunk starts "never changed"; rows raise its ticks.
        let never = Tick::new(now.get().wrapping_sub(MAX_CHANGE_AGE));
        for column in self.columns.iter_mut() {
            let t = &mut column.ticks;
            t.chunk_changed.push(AtomicTick::new(never));
            t.chunk_added.push(AtomicTick::new(never));
            t.chunk_all_changed.push(AtomicTick::new(never));
            t.row_changed.resize_with(t.row_changed.len() + capacity, AtomicTick::default);
            t.row_added.resize_with(t.row_added.len() + capacity, AtomicTick::default);
        }
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

    /// Stamps rows `start..start + count` of `chunk` added and changed at
    /// `now` in every column, and raises the chunk ticks to `now`.
    #[inline]
    pub(crate) fn stamp_new_rows(&mut self, chunk: usize, start: usize, count: usize, now: Tick) {
        let first = self.tick_index(chunk, start);
        for column in self.columns.iter_mut() {
            let t = &mut column.ticks;
            for tick in &mut t.row_changed[first..first + count] {
                *tick.get_mut() = now.get();
            }
            for tick in &mut t.row_added[first..first + count] {
                *tick.get_mut() = now.get();
            }
            *t.chunk_changed[chunk].get_mut() = now.get();
            *t.chunk_added[chunk].get_mut() = now.get();
        }
    }

    /// Sets one row's ticks in one column, raising the chunk ticks so they
    /// stay at least as new as every row (seen from `now`).
    #[inline]
    pub(crate) fn set_row_ticks(
        &mut self,
        col: usize,
        chunk: usize,
        row: usize,
        changed: Tick,
        added: Tick,
        now: Tick,
    ) {
        let i = self.tick_index(chunk, row);
        let t = &mut self.columns[col].ticks;
        *t.row_changed[i].get_mut() = changed.get();
        *t.row_added[i].get_mut() = added.get();
        let c = t.chunk_changed[chunk].get_mut();
        *c = Tick::new(*c).newest(changed, now).get();
        let a = t.chunk_added[chunk].get_mut();
        *a = Tick::new(*a).newest(added, now).get();
    }

    /// Stamps one row of one column added and changed at `now` (a value
    /// that is new to the row), raising the chunk ticks to `now`.
    #[inline]
    pub(crate) fn stamp_row(&mut self, col: usize, chunk: usize, row: usize, now: Tick) {
        let i = self.tick_index(chunk, row);
        let t = &mut self.columns[col].ticks;
        *t.row_changed[i].get_mut() = now.get();
        *t.row_added[i].get_mut() = now.get();
        *t.chunk_changed[chunk].get_mut() = now.get();
        *t.chunk_added[chunk].get_mut() = now.get();
    }

    /// Stamps one row of one column changed at `now` (a replaced value).
    #[inline]
    pub(crate) fn mark_row_changed(&mut self, col: usize, chunk: usize, row: usize, now: Tick) {
        let i = self.tick_index(chunk, row);
        let t = &mut self.columns[col].ticks;
        *t.row_changed[i].get_mut() = now.get();
        *t.chunk_changed[chunk].get_mut() = now.get();
    }

    /// Runs the destructor of every value in one row. The row stays in
    /// place; the caller removes it next with [`Archetype::swap_remove`],
    /// also when a destructor panics (every value of the row has been
    /// dropped by then: a panicking destructor does not stop the others).
    ///
    /// # Safety
    /// The row is live and its values are not used again.
    pub(crate) unsafe fn drop_row(&self, chunk: usize, row: usize) {
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
    /// moving the chunk's last row into it (values, entity and row ticks).
    /// Returns the entity that moved, if any.
    ///
    /// # Safety
    /// The row is live and its values are dead (dropped or moved out).
    #[inline]
    pub(crate) unsafe fn swap_remove(&mut self, chunk: usize, row: usize) -> Option<Entity> {
        let last = self.chunks[chunk].len as usize - 1;
        let was_full = last + 1 == self.capacity;
        let moved = if row != last {
            for col in 0..self.columns.len() {
                let size = self.columns[col].size;
                if size > 0 {
                    let src = self.value_ptr(col, chunk, last);
                    let dst = self.value_ptr(col, chunk, row);
                    // SAFETY: both rows are inside the chunk and distinct, so
                    // the `size`-byte ranges do not overlap; the value at
                    // `last` is live and is moved, not duplicated, since the
                    // row count drops by one below.
                    unsafe { crate::storage::edges::copy_value(src, dst, size) };
                }
                let (from, to) = (self.tick_index(chunk, last), self.tick_index(chunk, row));
                let t = &mut self.columns[col].ticks;
                let changed = *t.row_changed[from].get_mut();
                *t.row_changed[to].get_mut() = changed;
                let added = *t.row_added[from].get_mut();
                *t.row_added[to].get_mut() = added;
            }
            let entities = self.chunks[chunk].entities_ptr();
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
        self.chunks[chunk].len -= 1;
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
        if self.columns.iter().all(|c| c.drop.is_none()) {
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
    /// rows, the tick arrays cover every chunk, and no live row's changed or
    /// added tick is newer than its chunk's (seen from `now`).
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
