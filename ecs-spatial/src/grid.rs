//! The compact sparse grid: points sorted by cell key, a cell table of
//! `(key, start, count)`, and an O(1) lookup from a cell to its points.
//!
//! Build from plain slices with [`SparseGrid::rebuild`] (or
//! [`SparseGrid::par_rebuild`]). All buffers belong to the grid and are
//! reused, so a steady-state rebuild over the same number of points allocates
//! nothing. Queries live in [`query`](crate::query).

use std::marker::PhantomData;
use std::sync::{Mutex, OnceLock, PoisonError};

use glam::{Vec3, Vec3A, Vec4};
use rayon::prelude::*;

use crate::cell::{AXIS_BITS, AXIS_MASK, BIAS, CELL_MAX, CELL_MIN, CellKey, cell_axis, pack_unchecked};
use crate::error::{BatchError, EncodeError, GridError};
use crate::hash::CellHash;
use crate::kernel::{LANES, Soa};
use crate::point::{EntityId, GridPoint};
use crate::positions::GridPositions;

/// One occupied cell: its key and its points' range in the grid's sorted
/// arrays (`start..start + count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cell {
    /// The cell's key.
    pub key: CellKey,
    /// Index of the cell's first point in [`SparseGrid::positions`].
    pub start: u32,
    /// Number of points in the cell (at least 1).
    pub count: u32,
}

/// How queries should find the points of a row of cells (the request; see
/// [`LookupKind`] for what a build chose).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CellLookup {
    /// Chosen per build: a dense offset table over the occupied cells'
    /// bounding box while it has at most `16 * points + 65536` cells (4
    /// bytes each, one load per row of cells) and at most 32 per occupied
    /// cell (or 65536), otherwise the sparse lookup ([`CellLookup::Hashed`]).
    /// Both find a row in O(1) (expected, for the hash). A box whose rows
    /// are too many for the sparse lookup's block table (clumps far apart
    /// along y or z, far outliers) gets the dense table over only the
    /// coordinates its occupied cells have on each axis, when that fits
    /// the same budget ([`GridStats::dense_compacted`]), or else the block
    /// table over those coordinates when their rows fit it (clumps apart
    /// on every axis, [`GridStats::blocks_compacted`]).
    #[default]
    Auto,
    /// Always the sparse lookup, whose memory is proportional to the
    /// occupied cells whatever their bounding box: a block table of at most
    /// `4 * cells + 65536` entries (4 bytes each; a row's cells are one load
    /// and a compare of four keys) when the box's rows fit it, else a hash
    /// table over the occupied rows of cells.
    Hashed,
    /// Always a binary search of the sorted cell table (no extra memory;
    /// O(log cells) per lookup).
    BinarySearch,
}

/// The lookup the latest build or edit chose (see [`GridStats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LookupKind {
    /// The grid is empty.
    #[default]
    None,
    /// A dense offset table over the occupied cells' bounding box.
    Dense,
    /// The sparse lookup: a block table over the occupied box's rows, or,
    /// when they do not fit one, an open-addressing hash table over the
    /// occupied rows (see [`GridStats`] for which).
    Hashed,
    /// Binary search of the sorted cell table.
    BinarySearch,
}

/// How the latest build put the points in key order (see [`GridStats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BuildKind {
    /// Nothing built yet, or the grid is empty.
    #[default]
    None,
    /// One counting pass over the cells of the bounding box (at most
    /// `4 * points + 65536` of them).
    Counting,
    /// An LSD radix sort of the keys relabelled into `key_bits` bits (only
    /// the bits that vary inside the bounding box), in `passes` passes.
    Radix {
        /// Bits of the relabelled keys.
        key_bits: u32,
        /// Radix passes run.
        passes: u32,
    },
    /// An incremental edit ([`SparseGrid::apply_edits`]) after a build.
    Edit,
}

/// What the latest build or edit of a [`SparseGrid`] chose, and its sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GridStats {
    /// Points in the grid.
    pub points: usize,
    /// Occupied cells.
    pub cells: usize,
    /// Cells in the occupied cells' bounding box (saturating). After an
    /// edit that pushed it out, the box with the room to grow into that
    /// the edit gave it (see [`SparseGrid::apply_edits`]); a build makes it
    /// tight.
    pub bounding_box_cells: u64,
    /// The cell lookup queries use.
    pub lookup: LookupKind,
    /// Entries of the dense table (0 unless [`LookupKind::Dense`]).
    pub dense_entries: usize,
    /// Whether the dense table keeps, per axis, only the coordinates that
    /// occupied cells have (clumps far apart, far outliers: the empty
    /// stretches between them take no entries), rather than the whole
    /// bounding box.
    pub dense_compacted: bool,
    /// Whether the block table's rows and columns are those occupied cells
    /// have, per axis (clumps apart on every axis, whose ranked dense
    /// table would be mostly empty), rather than the whole bounding box's.
    pub blocks_compacted: bool,
    /// Slots of the hash table (0 unless [`LookupKind::Hashed`] without a
    /// block table).
    pub hash_slots: usize,
    /// Entries of the block table (0 unless [`LookupKind::Hashed`] and the
    /// occupied box's rows fit a table of at most `4 * cells + 65536`).
    pub block_entries: usize,
    /// Entries of the block table's pages: per occupied block, the first
    /// point of each of its cells. 0 until a batch query (all radius
    /// queries, all pairs) after the latest build or edit built them, and
    /// 0 without a block table or where they are not worth it (occupied
    /// blocks holding fewer than 2 cells on average, or more entries than
    /// `16 * points + 65536`). With pages, a row of cells is two loads, as
    /// in the dense table.
    pub page_entries: usize,
    /// How the points were put in key order.
    pub build: BuildKind,
}

/// The dense table is used while the bounding box has at most
/// `DENSE_CELLS_PER_POINT * points + DENSE_CELLS_MIN` cells (4 bytes each)
/// and at most `DENSE_CELLS_PER_CELL` per occupied cell: building it costs a
/// pass over those cells, and a table that is mostly empty costs cache
/// misses that the hash table's smaller footprint avoids.
const DENSE_CELLS_PER_POINT: u64 = 16;
const DENSE_CELLS_PER_CELL: u64 = 32;
const DENSE_CELLS_MIN: u64 = 1 << 16;
/// The build sorts by counting over the dense table while the bounding box
/// has at most `COUNTING_CELLS_PER_POINT * points + DENSE_CELLS_MIN` cells
/// (the pass over the table then costs about what the points' passes do).
const COUNTING_CELLS_PER_POINT: u64 = 4;

/// The bits each axis of a box of `span` cells takes in a relabelled key.
fn radix_bits(span: [usize; 3]) -> [u32; 3] {
    span.map(|s| usize::BITS - (s - 1).leading_zeros())
}

/// Whether a box of `volume` cells is sorted by counting over it, with `n`
/// points: while the pass over the box costs about what the points' passes
/// do (and dense indices fit the `u32`s they are stored as).
fn counting_fits(volume: u64, n: usize) -> bool {
    volume <= COUNTING_CELLS_PER_POINT * n as u64 + DENSE_CELLS_MIN && volume < u64::from(u32::MAX)
}

/// Whether a box of `volume` cells gets the dense table, with `points`
/// points in `cells` occupied cells.
fn dense_fits(volume: Option<u64>, points: usize, cells: usize) -> bool {
    volume.is_some_and(|v| {
        v <= DENSE_CELLS_PER_POINT * points as u64 + DENSE_CELLS_MIN
            && v <= (DENSE_CELLS_PER_CELL * cells as u64).max(DENSE_CELLS_MIN)
    })
}

/// An edit keeps the lookup table a grid has (the dense table, the block
/// table's geometry, the ranks, the hash without blocks) while it fits
/// budgets this many times the ones a build chooses by: a grid whose point
/// or cell count hovers at a threshold would otherwise switch tables, and
/// build the new one, on every edit (the cells of a clumped world at a
/// 32nd of its box, one point moved in and out of an occupied cell: 98 us
/// an edit, 11-19 us with the slack). A rebuild chooses by the plain
/// budgets again.
const KEEP_SLACK: usize = 2;

/// An edit that grows the bounding box widens it by at least this many
/// cells past the new points on each side it grew (see
/// [`SparseGrid::with_room`]).
const GROWTH_ROOM_MIN: i32 = 4;

/// The block table of a hashed grid has at most this many entries per
/// occupied cell (plus [`DENSE_CELLS_MIN`]): a block then holds a quarter of
/// a cell on average, so a row's cells are almost always among the
/// [`BLOCK_WINDOW`] keys from its block's first cell.
const BLOCKS_PER_CELL: u64 = 4;
/// For each cell key of `keys` (sorted, each an occupied cell's), its row
/// `y + span_y * z` and column `x` in ranked coordinates (`ranks` and `min`
/// as [`SparseGrid::compact`] leaves them, `span_y` the ranked `y`
/// extent). Keys sort by z, y, x, so each row's ranks are read once.
fn ranked_cells<'a>(
    ranks: &'a [Vec<u32>; 3],
    min: [i32; 3],
    span_y: usize,
    keys: impl Iterator<Item = u64> + 'a,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let [rx, ry, rz] = ranks;
    let x_base = (min[0] + BIAS) as u64;
    let (mut last, mut row) = (u64::MAX, 0usize);
    keys.map(move |key| {
        if key >> AXIS_BITS != last {
            last = key >> AXIS_BITS;
            let [_, y, z] = unpack(key);
            row = ry[(y - min[1]) as usize] as usize + span_y * rz[(z - min[2]) as usize] as usize;
        }
        (row, rx[((key & AXIS_MASK) - x_base) as usize] as usize)
    })
}

/// Cells of a table of `span` (`None` past `u64`).
fn table_volume(span: [usize; 3]) -> Option<u64> {
    span.iter().try_fold(1u64, |v, &s| v.checked_mul(s as u64))
}

/// The most entries a block table of a grid of `cells` occupied cells may
/// have, over ranked coordinates or plain ones (see
/// [`SparseGrid::fill_blocks`]).
fn block_limit(cells: usize, ranked: bool) -> u64 {
    let per_cell = if ranked { RANKED_BLOCKS_PER_CELL } else { BLOCKS_PER_CELL };
    per_cell * cells as u64 + DENSE_CELLS_MIN
}

/// Whether a table of `span` (the box's cells, or its ranked coordinates)
/// has few enough rows for the block table of a grid of `cells` occupied
/// cells.
fn blocks_fit(span: [usize; 3], cells: usize, ranked: bool) -> bool {
    span[1] as u64 * span[2] as u64 <= block_limit(cells, ranked)
}
/// A block table over ranked coordinates (see [`SparseGrid::compact`])
/// has at most this many entries per occupied cell (plus
/// [`DENSE_CELLS_MIN`]): its rows are a product of ranked coordinates,
/// mostly empty where clumps lie apart on every axis, and filling
/// [`BLOCKS_PER_CELL`] per cell cost four clumps on the diagonal
/// (100k points) 25-30 % of their build for no faster queries.
const RANKED_BLOCKS_PER_CELL: u64 = 1;
/// A compacted dense table's ranks take at most this many entries per
/// point (plus [`DENSE_CELLS_MIN`]): one per coordinate of the occupied
/// box's extent along each axis (see [`SparseGrid::compact`]).
const RANKS_PER_POINT: u64 = 2;
/// Keys compared at once from a block's first cell.
const BLOCK_WINDOW: usize = 4;
/// The block table gets pages only while its occupied blocks hold at least
/// this many cells on average: where most hold one (sparse worlds), the
/// block's first cell is the row's, the key compare finds it, and pages
/// would only add memory to fill and miss in.
const PAGE_CELLS_MIN: usize = 2;
/// A page directory entry with this bit holds a sorted slot (the first
/// point at or after its empty block) instead of a page's offset.
const PAGE_TAG: u32 = 1 << 31;

/// The block table's pages (see [`SparseGrid::fill_pages`]): per block,
/// `dir[b]` is the offset in `slots` of its page (`1 << block_shift` sorted
/// slots, the first point of each cell of the block or later) or, tagged
/// with [`PAGE_TAG`], the first point after an empty block. Empty when the
/// grid has no pages.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pages {
    dir: Vec<u32>,
    slots: Vec<u32>,
}

impl Pages {
    /// The first sorted slot of cell `i` of block `b` or later (`len`, the
    /// grid's point count, past the end).
    #[inline(always)]
    fn slot(&self, b: usize, i: usize, len: usize) -> usize {
        match self.dir.get(b) {
            Some(&d) if d & PAGE_TAG != 0 => (d & !PAGE_TAG) as usize,
            Some(&d) => self.slots.get(d as usize + i).map_or(len, |&s| s as usize),
            None => len,
        }
    }

    fn capacity(&self) -> usize {
        self.dir.capacity() + self.slots.capacity()
    }
}

/// The pages the first batch query after a build or edit builds (queries
/// take `&self`), and the buffers of the last ones, kept for the next.
#[derive(Debug, Default)]
struct PageCache {
    built: OnceLock<Pages>,
    spare: Mutex<Pages>,
}

impl PageCache {
    fn capacity_bytes(&self) -> usize {
        let spare = self.spare.lock().map_or(0, |s| s.capacity());
        (self.built.get().map_or(0, Pages::capacity) + spare) * 4
    }
}

impl Clone for PageCache {
    /// The built pages; not the spare buffers.
    fn clone(&self) -> Self {
        PageCache { built: self.built.clone(), spare: Mutex::default() }
    }
}

/// A hashed row lookup scans a row of at most this many occupied cells for
/// its run of cells; a longer row is searched.
const HASH_SCAN_MAX: usize = 8;

/// Radix digits are at most this many bits (4096 counters, 16 KiB, in L1)
/// when the counters are at most a quarter of the items, so a pass costs
/// about its items; with fewer items, one bit less.
const RADIX_DIGIT_MAX: u32 = 12;

/// The widest digit for sorting `n` items (see [`RADIX_DIGIT_MAX`]).
fn radix_digit_max(n: usize) -> u32 {
    if n >= 4 << RADIX_DIGIT_MAX { RADIX_DIGIT_MAX } else { RADIX_DIGIT_MAX - 1 }
}

/// Parallel work is split into blocks of this many points.
pub(crate) const PAR_BLOCK: usize = 4096;

/// A compact sparse grid over 2D ([`glam::Vec2`]) or 3D ([`Vec3`]) points,
/// each carrying an id of type `I` (`u32` by default).
///
/// ```
/// use ecs_spatial::SparseGrid;
/// use glam::Vec3;
///
/// let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, 5.0).unwrap();
/// let positions = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(3.0, 0.0, 0.0), Vec3::new(-9.0, 0.0, 0.0)];
/// grid.rebuild(&[10, 11, 12], &positions).unwrap();
///
/// let mut hits = Vec::new();
/// grid.query_radius(Vec3::ZERO, 4.0, &mut hits);
/// hits.sort();
/// assert_eq!(hits, vec![10, 11]);
///
/// let mut pairs = Vec::new();
/// grid.for_each_pair_within(4.0, |a, b| pairs.push((a.min(b), a.max(b))));
/// assert_eq!(pairs, vec![(10, 11)]);
/// ```
#[derive(Clone, Debug)]
pub struct SparseGrid<P: GridPoint, I: EntityId = u32> {
    pub(crate) origin: Vec3,
    pub(crate) cell_size: f32,
    lookup: CellLookup,
    // Sorted by cell key: the ids, and the positions as coordinate arrays
    // (the distance kernel's layout; [`GridPositions`] reads points back).
    pub(crate) ids: Vec<I>,
    pub(crate) soa: Soa,
    point: PhantomData<fn() -> P>,
    order: Vec<u32>,
    cells: Vec<Cell>,
    cell_keys: Vec<u64>,
    // Bounding box of the occupied cells (valid when not empty).
    pub(crate) min: [i32; 3],
    pub(crate) max: [i32; 3],
    span: [usize; 3],
    kind: LookupKind,
    build: BuildKind,
    // Dense lookup: `dense[i]..dense[i + 1]` are the points of dense cell `i`,
    // `i = x + dense_span[0] * (y + dense_span[1] * z)` in the table's
    // coordinates: offsets from `min` (`dense_span == span`), or, with
    // `compacted`, each axis's ranks among its occupied coordinates
    // (`ranks[a][c - min[a]]` counts those below `c`; see `compact`).
    dense: Vec<u32>,
    dense_span: [usize; 3],
    compacted: bool,
    ranks: [Vec<u32>; 3],
    // Hashed lookup without a block table: row key -> the row's range of
    // the cell table (`first..end`).
    hash: CellHash,
    // Hashed lookup: the block table instead of the hash, when it fits (see `fill_blocks`):
    // `blocks[b]` is the first cell of block `b` or later, a block being
    // `1 << block_shift` cells of one row along x, `block_cols` per row.
    blocks: Vec<u32>,
    block_shift: u32,
    block_cols: usize,
    // The block table's pages, built by the first batch query after a
    // build or edit (see `ensure_pages`). Boxed: a `&SparseGrid` then points
    // at no interior mutability, so the compiler may keep the grid's fields
    // in registers across the stores of a query's loops (inline, the cache
    // cost all radius queries 4-5 % on sparse worlds, which never page).
    pages: Box<PageCache>,
    // Scratch, reused across rebuilds.
    point_keys: Vec<u64>,
    dense_index: Vec<u32>,
    narrow: Vec<u64>,
    narrow_scratch: Vec<u64>,
    wide: Vec<(u64, u32)>,
    wide_scratch: Vec<(u64, u32)>,
    counts: Vec<u32>,
    // Scratch of incremental edits ([`SparseGrid::apply_edits`]), which
    // work in place: the point operations, then the moves they make of the
    // cell table and the points, all O(edits).
    edit_ops: Vec<EditOp>,
    edit_cell_runs: Vec<CellRun>,
    edit_cell_writes: Vec<(u32, Cell)>,
    edit_point_runs: Vec<(u32, u32, u32)>,
    edit_point_writes: Vec<(u32, u32)>,
    /// The rows an edit of a grid on the hash updates.
    edit_rows: Vec<u64>,
    /// An edit's coordinates (axis, coordinate) that no rank had, each to
    /// get ranks around it when the edit ranks the axes again (see
    /// [`compact`](Self::compact)); empty outside an edit.
    edit_rank_room: Vec<(usize, i32)>,
    /// An edit ranks the axes again over the box the ranks were made for:
    /// the coordinates they ranked near occupied ones may keep ranks.
    edit_same_box: bool,
    edit_removed_cells: Vec<u32>,
    edit_inserted_cells: Vec<u32>,
    edit_changes: Vec<(u64, i64)>,
    /// The cells an edit added (`+1`) or emptied (`-1`), by key in order:
    /// what the block table's entries shift by.
    edit_cell_changes: Vec<(u64, i32)>,
}

/// Untouched cells of an incremental edit: the old cells `from..end` go to
/// index `to` of the new table, their starts moved by `shift` points.
#[derive(Clone, Copy, Debug)]
struct CellRun {
    from: u32,
    end: u32,
    to: u32,
    shift: i64,
}

/// One step of an incremental edit, in old sorted-slot order.
#[derive(Clone, Copy, Debug)]
enum EditOp {
    /// Drop the point at this old slot.
    Remove(u32),
    /// Insert the edit's inserted point `index` before this old slot.
    Insert { before: u32, index: u32 },
}

impl<P: GridPoint, I: EntityId> SparseGrid<P, I> {
    /// An empty grid with cells of edge `cell_size` whose cell `(0, 0, 0)`
    /// starts at `origin`.
    ///
    /// For radius queries and pairs, a cell size equal to the usual query
    /// radius is a good start; [`suggest_cell_size`](crate::suggest_cell_size)
    /// picks one from a sample of your positions (see the crate's README for
    /// the measurements behind it).
    ///
    /// # Errors
    /// [`GridError::InvalidConfig`] if `cell_size` is not finite and positive
    /// (with a finite inverse) or `origin` is not finite.
    pub fn new(origin: P, cell_size: f32) -> Result<Self, GridError> {
        if !(cell_size.is_finite() && cell_size > 0.0 && (1.0 / cell_size).is_finite() && origin.is_finite()) {
            return Err(GridError::InvalidConfig);
        }
        Ok(SparseGrid {
            origin: origin.to_vec3(),
            cell_size,
            lookup: CellLookup::Auto,
            point: PhantomData,
            ids: Vec::new(),
            soa: Soa::default(),
            order: Vec::new(),
            cells: Vec::new(),
            cell_keys: Vec::new(),
            min: [0; 3],
            max: [0; 3],
            span: [0; 3],
            kind: LookupKind::None,
            build: BuildKind::None,
            dense: Vec::new(),
            dense_span: [0; 3],
            compacted: false,
            ranks: [Vec::new(), Vec::new(), Vec::new()],
            hash: CellHash::default(),
            blocks: Vec::new(),
            block_shift: 0,
            block_cols: 0,
            pages: Box::default(),
            point_keys: Vec::new(),
            dense_index: Vec::new(),
            narrow: Vec::new(),
            narrow_scratch: Vec::new(),
            wide: Vec::new(),
            wide_scratch: Vec::new(),
            counts: Vec::new(),
            edit_ops: Vec::new(),
            edit_cell_runs: Vec::new(),
            edit_cell_writes: Vec::new(),
            edit_point_runs: Vec::new(),
            edit_point_writes: Vec::new(),
            edit_rows: Vec::new(),
            edit_rank_room: Vec::new(),
            edit_same_box: false,
            edit_removed_cells: Vec::new(),
            edit_inserted_cells: Vec::new(),
            edit_changes: Vec::new(),
            edit_cell_changes: Vec::new(),
        })
    }

    /// The same grid with another cell lookup strategy (applies from the next
    /// rebuild).
    pub fn with_lookup(mut self, lookup: CellLookup) -> Self {
        self.lookup = lookup;
        self
    }

    /// The cell edge length.
    pub fn cell_size(&self) -> f32 {
        self.cell_size
    }

    /// The corner of cell `(0, 0, 0)`, as a 3D vector.
    pub fn origin(&self) -> Vec3 {
        self.origin
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the grid holds no points.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Positions in cell-key order (read from the coordinate arrays the
    /// queries use: see [`GridPositions`]).
    pub fn positions(&self) -> GridPositions<'_, P> {
        GridPositions::new(&self.soa.x, &self.soa.y, &self.soa.z, 0..self.len())
    }

    /// Ids in cell-key order (parallel to [`positions`](Self::positions)).
    pub fn ids(&self) -> &[I] {
        &self.ids
    }

    /// For each sorted point, its index in the slices given to the last
    /// rebuild (empty after an incremental edit, which has no input slices).
    pub fn input_indices(&self) -> &[u32] {
        &self.order
    }

    /// The cell table, sorted by key.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// The points of one cell, if it is occupied.
    pub fn cell_points(&self, key: CellKey) -> Option<(&[I], GridPositions<'_, P>)> {
        let c = self.cells[self.cell_index(key.raw())?];
        let range = c.start as usize..(c.start + c.count) as usize;
        Some((&self.ids[range.clone()], GridPositions::new(&self.soa.x, &self.soa.y, &self.soa.z, range)))
    }

    /// The occupied cells' keys, sorted (the keys of [`cells`](Self::cells)).
    #[inline(always)]
    pub(crate) fn cell_keys(&self) -> &[u64] {
        &self.cell_keys
    }

    /// The dense table (`table[i]..table[i + 1]` are the sorted slots of
    /// dense cell `i`, `x + span_x * (y + span_y * z)` in the table's
    /// coordinates, see [`dense_box`](Self::dense_box)) and
    /// `[span_x, span_y]`; empty unless [`LookupKind::Dense`].
    #[inline(always)]
    pub(crate) fn dense_table(&self) -> (&[u32], [usize; 2]) {
        (&self.dense, [self.dense_span[0], self.dense_span[1]])
    }

    /// Whether the last build or edit chose the dense lookup table.
    pub fn uses_dense_lookup(&self) -> bool {
        self.kind == LookupKind::Dense
    }

    /// The cell lookup the last build or edit chose.
    pub fn lookup_kind(&self) -> LookupKind {
        self.kind
    }

    /// What the last build or edit chose, and the sizes behind the choice.
    pub fn stats(&self) -> GridStats {
        let volume = if self.is_empty() { 0 } else { self.span.iter().fold(1u64, |v, &s| v.saturating_mul(s as u64)) };
        GridStats {
            points: self.len(),
            cells: self.cells.len(),
            bounding_box_cells: volume,
            lookup: self.kind,
            dense_entries: if self.kind == LookupKind::Dense { self.dense.len() } else { 0 },
            dense_compacted: self.kind == LookupKind::Dense && self.compacted,
            blocks_compacted: self.kind == LookupKind::Hashed && self.compacted && self.has_blocks(),
            hash_slots: if self.kind == LookupKind::Hashed { self.hash.slots() } else { 0 },
            block_entries: if self.kind == LookupKind::Hashed { self.blocks.len() } else { 0 },
            page_entries: self.pages.built.get().map_or(0, |p| p.slots.len()),
            build: self.build,
        }
    }

    /// Rebuilds the grid from parallel id and position slices.
    ///
    /// Cell keys are `floor((p - origin) / cell_size)` per axis. When the
    /// occupied cells' bounding box is small enough for the dense lookup
    /// table, one counting pass over that table puts the points in key
    /// order; otherwise keys are relabelled to the smallest bit width that
    /// covers the bounding box (order preserved) and radix sorted, with the
    /// digit counts taken in the keying pass. Either way the positions are
    /// gathered once, in key order, as coordinate arrays (see
    /// [`positions`](Self::positions)).
    ///
    /// # Errors
    /// [`GridError::LengthMismatch`], [`GridError::TooManyPoints`], or
    /// [`GridError::InvalidPoint`] for the first position that is NaN,
    /// infinite or out of key range. On error the grid is left empty.
    pub fn rebuild(&mut self, ids: &[I], positions: &[P]) -> Result<(), GridError> {
        self.rebuild_impl(ids, positions, false)
    }

    /// [`rebuild`](Self::rebuild) with key computation and the final gather
    /// run in parallel on rayon (the sort itself is sequential).
    /// The result is identical to `rebuild`.
    ///
    /// # Errors
    /// As [`rebuild`](Self::rebuild).
    pub fn par_rebuild(&mut self, ids: &[I], positions: &[P]) -> Result<(), GridError> {
        self.rebuild_impl(ids, positions, true)
    }

    /// Empties the grid, keeping its buffers.
    pub fn clear(&mut self) {
        self.ids.clear();
        self.soa.clear();
        self.order.clear();
        self.cells.clear();
        self.cell_keys.clear();
        self.dense.clear();
        self.compacted = false;
        self.hash.clear();
        self.blocks.clear();
        self.drop_pages();
        self.kind = LookupKind::None;
        self.build = BuildKind::None;
    }

    /// Total bytes reserved by the grid's buffers (a steady-state rebuild
    /// keeps this constant).
    pub fn reserved_bytes(&self) -> usize {
        use std::mem::size_of;
        self.ids.capacity() * size_of::<I>()
            + self.soa.capacity_bytes()
            + self.order.capacity() * 4
            + self.cells.capacity() * size_of::<Cell>()
            + self.cell_keys.capacity() * 8
            + self.dense.capacity() * 4
            + self.ranks.iter().map(Vec::capacity).sum::<usize>() * 4
            + self.hash.capacity_bytes()
            + self.edit_rows.capacity() * 8
            + self.blocks.capacity() * 4
            + self.pages.capacity_bytes()
            + self.point_keys.capacity() * 8
            + self.dense_index.capacity() * 4
            + (self.narrow.capacity() + self.narrow_scratch.capacity()) * 8
            + (self.wide.capacity() + self.wide_scratch.capacity()) * size_of::<(u64, u32)>()
            + self.counts.capacity() * 4
            + self.edit_ops.capacity() * size_of::<EditOp>()
            + self.edit_cell_runs.capacity() * size_of::<CellRun>()
            + self.edit_cell_writes.capacity() * size_of::<(u32, Cell)>()
            + (self.edit_point_runs.capacity() * 12 + self.edit_point_writes.capacity() * 8)
            + (self.edit_removed_cells.capacity() + self.edit_inserted_cells.capacity()) * 4
            + self.edit_changes.capacity() * 16
            + self.edit_cell_changes.capacity() * 16
    }

    fn rebuild_impl(&mut self, ids: &[I], positions: &[P], parallel: bool) -> Result<(), GridError> {
        // Every slot changes: the pages go (the next batch query rebuilds them).
        self.drop_pages();
        if ids.len() != positions.len() {
            self.clear();
            return Err(GridError::LengthMismatch { ids: ids.len(), positions: positions.len() });
        }
        let n = positions.len();
        if n > u32::MAX as usize {
            self.clear();
            return Err(GridError::TooManyPoints);
        }
        if n == 0 {
            self.clear();
            return Ok(());
        }

        // 1. The cells' bounding box from the coordinates' (the cell of a
        //    coordinate is monotonic in it). With a NaN, infinite or
        //    out-of-range coordinate, every point is keyed instead, which
        //    names the first bad one.
        let (origin, cell_size) = (self.origin, self.cell_size);
        let fused = fused_bounds(origin, cell_size, positions);
        let (min, max) = match fused {
            Some(bounds) => bounds,
            None => {
                self.point_keys.resize(n, 0);
                let bounds = if parallel {
                    self.point_keys
                        .par_chunks_mut(PAR_BLOCK)
                        .zip(positions.par_chunks(PAR_BLOCK))
                        .enumerate()
                        .map(|(block, (keys, points))| encode_block(origin, cell_size, block * PAR_BLOCK, points, keys))
                        .try_reduce(|| EMPTY_BOUNDS, |a, b| Ok(merge_bounds(a, b)))
                        // Any block may fail first in parallel; report the lowest index, as `rebuild` does.
                        .or_else(|_| encode_block(origin, cell_size, 0, positions, &mut self.point_keys))
                } else {
                    encode_block(origin, cell_size, 0, positions, &mut self.point_keys)
                };
                match bounds {
                    Ok(b) => b,
                    Err(e) => {
                        self.clear();
                        return Err(GridError::InvalidPoint(e));
                    }
                }
            }
        };
        self.min = min;
        self.max = max;
        let span = [0, 1, 2].map(|a| (max[a] - min[a]) as usize + 1);
        self.span = span;
        self.order.resize(n, 0);
        self.ids.resize(n, ids[0]);
        self.soa.resize(n);

        // 2. Key order, by counting over the dense table when its pass over
        //    the box costs about what the points' passes do, or by radix sort.
        let volume = table_volume(span);
        if let Some(v) = volume.filter(|&v| counting_fits(v, n)) {
            if fused.is_some() {
                // Keyed and counted in one pass.
                self.dense.clear();
                self.dense.resize(v as usize + 1, 0);
                self.dense_index.resize(n, 0);
                count_cells(origin, cell_size, min, span, positions, &mut self.dense_index, &mut self.dense);
            } else {
                self.count_keys(v as usize);
            }
            self.counting_build(ids, positions, v as usize, parallel);
            self.build = BuildKind::Counting;
        } else {
            if fused.is_some() {
                // Keys straight in the box's relabelled bits.
                self.point_keys.resize(n, 0);
                compact_keys(origin, cell_size, min, radix_bits(span), positions, &mut self.point_keys);
            }
            self.radix_build(ids, positions, parallel, fused.is_some());
        }

        // 3. The lookup.
        self.kind = self.choose_lookup(volume, true);
        match self.kind {
            LookupKind::Dense => {
                // The counting build filled the table (never a compacted one).
                if self.build != BuildKind::Counting || self.compacted {
                    self.fill_dense();
                }
                self.clear_hash();
            }
            LookupKind::Hashed => {
                self.dense.clear();
                self.build_hash();
            }
            _ => {
                self.dense.clear();
                self.clear_hash();
            }
        }
        Ok(())
    }

    /// The lookup for the current cells and bounding box (`volume` cells,
    /// if that fits a `u64`), as [`CellLookup`] says, with `compacted`,
    /// `dense_span` (and, compacted, `ranks`) set for it; the caller fills
    /// the tables. With `try_compact`, a box whose rows do not fit the block
    /// table may get a compacted dense table (see [`compact`](Self::compact)).
    fn choose_lookup(&mut self, volume: Option<u64>, try_compact: bool) -> LookupKind {
        self.compacted = false;
        self.dense_span = self.span;
        let (n, cells) = (self.len(), self.cells.len());
        match self.lookup {
            CellLookup::Auto if dense_fits(volume, n, cells) => LookupKind::Dense,
            CellLookup::Auto if try_compact => {
                if self.compact() && dense_fits(table_volume(self.dense_span), n, cells) {
                    LookupKind::Dense
                } else {
                    // Ranked rows for the block table, or none (the hash).
                    LookupKind::Hashed
                }
            }
            CellLookup::Auto | CellLookup::Hashed => LookupKind::Hashed,
            CellLookup::BinarySearch => LookupKind::BinarySearch,
        }
    }

    /// Ranks each axis's coordinates, when the occupied box's rows do not
    /// fit the block table (clumps of points far apart along y or z, a few
    /// far outliers) and a table over the ranks fits: each axis keeps only
    /// the coordinates some occupied cell has, so the empty stretches
    /// between clumps take no entries and no rows. The dense table over
    /// the ranks when it fits its budget, else the block table over them
    /// when their rows fit [`RANKED_BLOCKS_PER_CELL`] (clumps apart on
    /// every axis, whose ranks' product is mostly empty). Sets `ranks`,
    /// `dense_span` and `compacted` and returns true, or returns false
    /// (`ranks` may then hold anything).
    ///
    /// Without it such worlds took the hash and row cursors, whose lookups
    /// cost all radius queries 1.3-1.7x the dense table's time (two clumps
    /// apart along z against along x, the README's twenty-first run). The
    /// ranks cost a pass over the cells and one over the box's extent per
    /// axis (at most [`RANKS_PER_POINT`] entries per point, plus
    /// [`DENSE_CELLS_MIN`]), and only grids that would have no block table
    /// pay it.
    fn compact(&mut self) -> bool {
        let (n, cells) = (self.len() as u64, self.cells.len() as u64);
        let entries: u64 = self.span.iter().map(|&s| s as u64 + 1).sum();
        if blocks_fit(self.span, self.cells.len(), false) || entries > RANKS_PER_POINT * n + DENSE_CELLS_MIN {
            return false;
        }
        let (min, span) = (self.min, self.span);
        for (r, &s) in self.ranks.iter_mut().zip(&span) {
            if self.edit_same_box && r.len() == s + 1 {
                // The coordinates ranked so far, marked 3 (from the end, so
                // each rank is compared with the one before it unchanged).
                for o in (0..s).rev() {
                    r[o + 1] = if r[o + 1] > r[o] { 3 } else { 0 };
                }
                r[0] = 0;
            } else {
                r.clear();
                r.resize(s + 1, 0);
            }
        }
        // Keys sort by z, y, x: `y` and `z` are marked once per row. An
        // occupied coordinate is marked 1.
        let [rx, ry, rz] = &mut self.ranks;
        let x_base = (min[0] + BIAS) as u64;
        let mut row = u64::MAX;
        for &key in &self.cell_keys {
            rx[((key & AXIS_MASK) - x_base) as usize + 1] = 1;
            if key >> AXIS_BITS != row {
                row = key >> AXIS_BITS;
                let [_, y, z] = unpack(key);
                ry[(y - min[1]) as usize + 1] = 1;
                rz[(z - min[2]) as usize + 1] = 1;
            }
        }
        // A build marks occupied coordinates alone; an edit that ranks
        // again may also keep earlier ranks and make room (see below).
        let build = self.edit_rank_room.is_empty() && !self.edit_same_box;
        let room = if build {
            false
        } else {
            let occupied = self.ranks.each_ref().map(|r| r.iter().filter(|&&v| v == 1).count());
            let rooms = occupied.map(|o| (o / 16).max(GROWTH_ROOM_MIN as usize));
            // Room: an edit's new coordinates (a point flying through the empty
            // stretch between clumps) get ranks for the coordinates around
            // them too, marked 2, so the next steps find ranks and keep the
            // table (see `KEEP_SLACK`) instead of ranking again each step: at
            // least `GROWTH_ROOM_MIN` on each side, a 16th of the axis's
            // occupied coordinates in larger tables, and on each axis at most
            // twice that in all (an edit with many new coordinates, a crowd
            // arriving, gets ranks for them alone).
            let mut added = [0usize; 3];
            for &(a, c) in &self.edit_rank_room {
                let room = rooms[a];
                let r = &mut self.ranks[a];
                let lo = (c - room as i32).max(min[a]) - min[a];
                let hi = (c + room as i32).min(min[a] + span[a] as i32 - 1) - min[a];
                for o in lo..=hi {
                    let v = &mut r[o as usize + 1];
                    if *v == 3 {
                        *v = 2;
                    } else if *v == 0 && added[a] < 2 * room {
                        *v = 2;
                        added[a] += 1;
                    }
                }
            }
            // Coordinates ranked before (room an earlier edit made, a cell
            // emptied since) keep their ranks within the same room of an
            // occupied one, so an edit that ranks again for one point does not
            // take the room another point is moving through.
            for (r, &room) in self.ranks.iter_mut().zip(&rooms) {
                for pass in 0..2 {
                    let mut since = usize::MAX;
                    for i in 1..r.len() {
                        let i = if pass == 0 { i } else { r.len() - i };
                        match r[i] {
                            1 => since = 0,
                            v => {
                                since = since.saturating_add(1);
                                if v == 3 && since <= room {
                                    r[i] = 2;
                                }
                            }
                        }
                    }
                }
                for v in r.iter_mut() {
                    if *v == 3 {
                        *v = 0;
                    }
                }
            }
            // The marks of occupied coordinates are as counted above; the
            // room adds the 2s.
            let without = occupied;
            let with_room = self.ranks.each_ref().map(|r| r.iter().filter(|&&v| v != 0).count());
            let fits_dense = |s: [usize; 3]| dense_fits(table_volume(s), n as usize, cells as usize);
            // The dense table over the ranks, or else the block table over them
            // (clumps apart on every axis: the ranks' product is mostly empty,
            // but their rows fit blocks); the room only where it leaves that
            // choice as it is.
            if fits_dense(with_room) || !fits_dense(without) && blocks_fit(with_room, cells as usize, true) {
                true
            } else if fits_dense(without) || blocks_fit(without, cells as usize, true) {
                false
            } else {
                return false;
            }
        };
        let mut dense_span = [0usize; 3];
        for (r, kept) in self.ranks.iter_mut().zip(&mut dense_span) {
            let mut sum = 0u32;
            for v in r.iter_mut() {
                sum += u32::from(*v == 1 || (room && *v == 2));
                *v = sum;
            }
            *kept = sum as usize;
        }
        // The dense table over the ranks, or else the block table over them
        // (clumps apart on every axis: the ranks' product is mostly empty,
        // but their rows fit blocks); an edit's choice was made above.
        if build
            && !dense_fits(table_volume(dense_span), n as usize, cells as usize)
            && !blocks_fit(dense_span, cells as usize, true)
        {
            return false;
        }
        self.dense_span = dense_span;
        self.compacted = true;
        true
    }

    /// The dense index of every point from its packed key
    /// (`dense_index`), and the counts (`dense[d + 1]` counts dense cell
    /// `d`, of `volume`).
    fn count_keys(&mut self, volume: usize) {
        let (min, span) = (self.min, self.span);
        let dense = &mut self.dense;
        dense.clear();
        dense.resize(volume + 1, 0);
        self.dense_index.clear();
        self.dense_index.extend(self.point_keys.iter().map(|&key| {
            let [x, y, z] = unpack(key);
            let d = (x - min[0]) as usize + span[0] * ((y - min[1]) as usize + span[1] * (z - min[2]) as usize);
            dense[d + 1] += 1;
            d as u32
        }));
    }

    /// Counting sort over the dense table (`volume` cells of the bounding
    /// box), from each point's dense index and the counts (`dense[d + 1]`
    /// counts dense cell `d`): the counts become the dense table, and each
    /// point is written straight to its slot, in input order within a cell
    /// (as the stable radix sort does).
    fn counting_build(&mut self, ids: &[I], positions: &[P], volume: usize, parallel: bool) {
        let (min, span) = (self.min, self.span);
        // One pass over the box: the exclusive prefix sums (`dense[d + 1]`
        // becomes the first slot of cell `d`) and the cell table, from the
        // occupied dense cells in order: every dense cell is written at the
        // next position, which advances only past occupied ones (no branch
        // to mispredict on sparse rows).
        let cells_max = positions.len().min(volume);
        let (cells, keys) = (&mut self.cells, &mut self.cell_keys);
        cells.resize(cells_max + 1, Cell { key: CellKey::from_raw_unchecked(0), start: 0, count: 0 });
        keys.resize(cells_max + 1, 0);
        // Slices of a length the compiler sees, so `at` needs no check.
        let (table, table_keys) = (&mut cells[..=cells_max], &mut keys[..=cells_max]);
        let dense = &mut self.dense;
        let (mut sum, mut next, mut d) = (0u32, 0usize, 1usize);
        for z in 0..span[2] {
            for y in 0..span[1] {
                let row_key = pack_unchecked(min[0], min[1] + y as i32, min[2] + z as i32);
                for (x, c) in dense[d..d + span[0]].iter_mut().enumerate() {
                    let (here, key) = (*c, row_key + x as u64);
                    *c = sum;
                    let at = next.min(cells_max);
                    table[at] = Cell { key: CellKey::from_raw_unchecked(key), start: sum, count: here };
                    table_keys[at] = key;
                    next += usize::from(here > 0);
                    sum += here;
                }
                d += span[0];
            }
        }
        cells.truncate(next);
        keys.truncate(next);
        // Each point's slot; afterwards `dense[d + 1]` = end of cell `d` =
        // start of cell `d + 1`, so `dense[d]..dense[d + 1]` are cell `d`'s.
        // Only the input index is scattered (4 bytes, into a table that
        // stays in cache); the points follow in one gather, read at random
        // but written in order.
        for (i, &d) in self.dense_index.iter().enumerate() {
            let cursor = &mut dense[d as usize + 1];
            self.order[*cursor as usize] = i as u32;
            *cursor += 1;
        }
        self.gather_sorted(ids, positions, parallel);
    }

    /// Radix sort of the relabelled keys (the digit counts taken in the
    /// relabelling pass; with `compacted`, `point_keys` hold the relabelled
    /// keys already), then one gather of the points in key order.
    fn radix_build(&mut self, ids: &[I], positions: &[P], parallel: bool, compacted: bool) {
        self.cells.clear();
        self.cell_keys.clear();
        let n = positions.len();
        let (min, span) = (self.min, self.span);
        let bits = radix_bits(span);
        let total_bits = bits[0] + bits[1] + bits[2];
        let passes = total_bits.div_ceil(radix_digit_max(n)).max(1);
        let width = total_bits.div_ceil(passes).max(1);
        let buckets = 1usize << width;
        let digit_mask = (buckets - 1) as u64;
        let compact = |key: u64| -> u64 {
            if compacted {
                return key;
            }
            let [x, y, z] = unpack(key);
            let (x, y, z) = ((x - min[0]) as u64, (y - min[1]) as u64, (z - min[2]) as u64);
            x | (y << bits[0]) | (z << (bits[0] + bits[1]))
        };
        let expand = |c: u64| -> u64 {
            let x = (c & ((1 << bits[0]) - 1)) as i32 + min[0];
            let y = ((c >> bits[0]) & ((1 << bits[1]) - 1)) as i32 + min[1];
            let z = (c >> (bits[0] + bits[1])) as i32 + min[2];
            pack_unchecked(x, y, z)
        };
        self.counts.clear();
        self.counts.resize(passes as usize * buckets, 0);
        let counts = &mut self.counts;
        let mut count_digits = |c: u64| {
            for p in 0..passes as usize {
                counts[p * buckets + ((c >> (p as u32 * width)) & digit_mask) as usize] += 1;
            }
        };
        // The input index takes the low `index_bits` of a 64-bit item when
        // the key fits above it (8-byte items: half the traffic of a pass).
        let index_bits = usize::BITS - (n - 1).leading_zeros();
        let index_mask = (1u64 << index_bits) - 1;
        let narrow = total_bits + index_bits <= 64;
        if narrow {
            self.narrow.clear();
            self.narrow.extend(self.point_keys.iter().enumerate().map(|(i, &k)| {
                let c = compact(k);
                count_digits(c);
                (c << index_bits) | i as u64
            }));
            self.narrow_scratch.resize(n, 0);
            radix_passes(&mut self.narrow, &mut self.narrow_scratch, &mut self.counts, buckets, |&v, shift| {
                ((v >> (index_bits + shift)) & digit_mask) as usize
            });
            for (slot, &v) in self.narrow.iter().enumerate() {
                self.order[slot] = (v & index_mask) as u32;
            }
        } else {
            self.wide.clear();
            self.wide.extend(self.point_keys.iter().enumerate().map(|(i, &k)| {
                let c = compact(k);
                count_digits(c);
                (c, i as u32)
            }));
            self.wide_scratch.resize(n, (0, 0));
            radix_passes(&mut self.wide, &mut self.wide_scratch, &mut self.counts, buckets, |&(c, _), shift| {
                ((c >> shift) & digit_mask) as usize
            });
            for (slot, &(_, i)) in self.wide.iter().enumerate() {
                self.order[slot] = i;
            }
        }
        self.build = BuildKind::Radix { key_bits: total_bits, passes };

        // The cell table from runs of equal keys, read in sorted order.
        let (cells, cell_keys) = (&mut self.cells, &mut self.cell_keys);
        let mut push = |slot: usize, c: u64| {
            let key = expand(c);
            cells.push(Cell { key: CellKey::from_raw_unchecked(key), start: slot as u32, count: 0 });
            cell_keys.push(key);
        };
        if narrow {
            for_each_run_start(&self.narrow, |&v| v >> index_bits, &mut push);
        } else {
            for_each_run_start(&self.wide, |&(c, _)| c, &mut push);
        }
        let cell_count = self.cells.len();
        for c in 0..cell_count {
            let end = if c + 1 < cell_count { self.cells[c + 1].start } else { n as u32 };
            self.cells[c].count = end - self.cells[c].start;
        }

        self.gather_sorted(ids, positions, parallel);
    }

    /// Points, ids and coordinates in key order, from `order`.
    fn gather_sorted(&mut self, ids: &[I], positions: &[P], parallel: bool) {
        let n = positions.len();
        let order = &self.order;
        let Soa { x, y, z } = &mut self.soa;
        if parallel {
            self.ids
                .par_chunks_mut(PAR_BLOCK)
                .zip(x.par_chunks_mut(PAR_BLOCK).zip(y.par_chunks_mut(PAR_BLOCK)).zip(z.par_chunks_mut(PAR_BLOCK)))
                .zip(order.par_chunks(PAR_BLOCK))
                .for_each(|((is, ((xs, ys), zs)), os)| gather(is, [xs, ys, zs], os, positions, ids));
        } else {
            gather(&mut self.ids, [x, y, z], order, positions, ids);
        }
        self.soa.pad(n);
    }

    /// Fills the dense table from the cell table and the bounding box
    /// (`min`, `max`, `span` must be current and small enough).
    ///
    /// Each occupied cell's count goes to the entry after its own, then one
    /// running sum gives every entry the points in the cells before it: an
    /// empty cell's entry is then the next occupied cell's start. No branch
    /// depends on where the occupied cells are: a loop that filled each gap
    /// between them mispredicted its exit about once per cell, which cost
    /// more than the sort before it in sparse boxes (about one point per
    /// ten cells).
    fn fill_dense(&mut self) {
        let volume = self.dense_span.iter().product::<usize>();
        self.dense.clear();
        self.dense.resize(volume + 1, 0);
        if self.compacted {
            let [sx, sy, _] = self.dense_span;
            let keys = self.cells.iter().map(|c| c.key.raw());
            for (cell, (row, x)) in self.cells.iter().zip(ranked_cells(&self.ranks, self.min, sy, keys)) {
                self.dense[sx * row + x + 1] = cell.count;
            }
        } else {
            for c in 0..self.cells.len() {
                let cell = self.cells[c];
                let d = self.dense_index(cell.key.raw());
                self.dense[d + 1] = cell.count;
            }
        }
        let mut sum = 0u32;
        for v in &mut self.dense {
            sum += *v;
            *v = sum;
        }
    }

    /// The sparse lookup: the block table when the occupied box's rows fit
    /// it (see [`fill_blocks`](Self::fill_blocks)), which then answers every
    /// lookup, else the hash of the rows: each occupied row `(y, z)` (the
    /// cells' keys without their `x` bits) and its range of the cell table.
    /// Building it costs its random stores: a third of a sparse world's
    /// build, which an edit that touches few rows avoids
    /// ([`update_hash_rows`](Self::update_hash_rows)).
    fn build_hash(&mut self) {
        self.fill_blocks();
        if self.has_blocks() {
            self.hash.clear();
            return;
        }
        let keys = &self.cell_keys;
        let rows = 1 + keys.windows(2).filter(|w| w[0] >> AXIS_BITS != w[1] >> AXIS_BITS).count();
        let mut i = 0;
        let entries = std::iter::from_fn(|| {
            let row = *keys.get(i)? >> AXIS_BITS;
            let first = i;
            i += 1;
            while i < keys.len() && keys[i] >> AXIS_BITS == row {
                i += 1;
            }
            Some((row, (first as u32, i as u32)))
        });
        self.hash.build(rows, entries);
    }

    /// After an edit of a grid on the hash (no block table, no ranks, and
    /// still none that fit): updates the rows whose range of the cell table
    /// the edit changed, in place. Those are the rows of the cells it
    /// wrote or emptied and of the cells whose index it moved: with the
    /// cell table edited in place, a point moving to a nearby cell moves the
    /// indices of the cells between its two cells only. Returns false,
    /// having changed nothing that matters, when so many rows changed that
    /// building the table again is cheaper (or the table must grow): the
    /// caller then builds it.
    fn update_hash_rows(&mut self, cell_changes: &[(u64, i32)]) -> bool {
        let mut rows = std::mem::take(&mut self.edit_rows);
        rows.clear();
        let keys = &self.cell_keys;
        let limit = keys.len() / 32 + 64;
        'runs: for run in self.edit_cell_runs.iter().filter(|r| r.to != r.from) {
            let moved = run.to as usize..(run.to + run.end - run.from) as usize;
            for &key in &keys[moved] {
                if rows.last() != Some(&(key >> AXIS_BITS)) {
                    if rows.len() > limit {
                        break 'runs;
                    }
                    rows.push(key >> AXIS_BITS);
                }
            }
        }
        rows.extend(self.edit_cell_writes.iter().map(|&(at, _)| keys[at as usize] >> AXIS_BITS));
        rows.extend(cell_changes.iter().filter(|c| c.1 < 0).map(|c| c.0 >> AXIS_BITS));
        let fits = rows.len() <= limit && {
            rows.sort_unstable();
            rows.dedup();
            rows.iter().all(|&row| {
                let first = keys.partition_point(|&k| k >> AXIS_BITS < row);
                let end = first + keys[first..].partition_point(|&k| k >> AXIS_BITS == row);
                if first == end {
                    self.hash.remove(row);
                    true
                } else {
                    self.hash.upsert(row, (first as u32, end as u32))
                }
            })
        };
        self.edit_rows = rows;
        fits
    }

    /// Empties the hash table and the block table.
    fn clear_hash(&mut self) {
        self.hash.clear();
        self.blocks.clear();
    }

    /// The block table of a hashed grid, when the occupied box's rows fit
    /// it: each row `(y, z)` of the box split along x into blocks of
    /// `1 << block_shift` cells, the narrowest blocks that keep the table
    /// at most [`BLOCKS_PER_CELL`] entries per occupied cell (plus
    /// [`DENSE_CELLS_MIN`]), and per block the index of its first occupied
    /// cell (or the next block's). A row of cells `x0..=x1` is then one
    /// load and a compare of the few keys from there (see
    /// [`block_cells`](Self::block_cells)) instead of a hash probe and a
    /// search of the row. A box of more rows than that (a thin sheet of
    /// points across a huge y-z face) gets no table; the hash serves.
    fn fill_blocks(&mut self) {
        self.blocks.clear();
        let Some((shift, cols)) = self.block_geometry() else { return };
        let span = self.dense_span;
        let rows = span[1] * span[2];
        self.block_shift = shift;
        self.block_cols = cols;
        self.blocks.resize(self.block_cols * rows + 1, 0);
        if self.compacted {
            let cols = self.block_cols;
            for (row, x) in ranked_cells(&self.ranks, self.min, span[1], self.cell_keys.iter().copied()) {
                self.blocks[cols * row + (x >> shift) + 1] += 1;
            }
        } else {
            for &key in &self.cell_keys {
                let b = self.block_index(key);
                self.blocks[b + 1] += 1;
            }
        }
        let mut sum = 0u32;
        for v in &mut self.blocks {
            sum += *v;
            *v = sum;
        }
    }

    /// The block table's `block_shift` and `block_cols` for this grid's
    /// occupied box and cells, or `None` when its rows do not fit one (see
    /// [`fill_blocks`](Self::fill_blocks)).
    fn block_geometry(&self) -> Option<(u32, usize)> {
        self.block_geometry_for(self.cells.len())
    }

    /// [`block_geometry`](Self::block_geometry) as if the grid had `cells`
    /// occupied cells.
    fn block_geometry_for(&self, cells: usize) -> Option<(u32, usize)> {
        // In the table's coordinates: offsets from the box's minimum, or
        // ranks when compacted (see `compact`).
        let span = self.dense_span;
        if self.cells.is_empty() || !blocks_fit(span, cells, self.compacted) {
            return None;
        }
        let limit = block_limit(cells, self.compacted);
        let rows = span[1] as u64 * span[2] as u64;
        let mut shift = 0;
        while (span[0] as u64).div_ceil(1 << shift) * rows > limit {
            shift += 1;
        }
        Some((shift, span[0].div_ceil(1 << shift)))
    }

    /// Whether an edit keeps the block table's geometry (see
    /// [`KEEP_SLACK`]): the table is at most twice the size the budget of
    /// twice the cells allows, and its blocks at most four times as wide as
    /// that budget's (about twice a build's, either way).
    fn keeps_block_geometry(&self) -> bool {
        let Some((finest, _)) = self.block_geometry_for(KEEP_SLACK * self.cells.len()) else { return false };
        let shift = self.block_shift;
        shift >= finest && shift <= finest + 2 && self.block_cols == self.dense_span[0].div_ceil(1 << shift)
    }

    /// After an edit that added or emptied the cells `changes` (by key, in
    /// order; `+1` added, `-1` emptied) in a grid whose block table keeps
    /// its geometry (and, over ranks, the ranks): each entry counts the
    /// occupied cells before its block, so it moves by the changes of the
    /// cells before the block. One pass
    /// over the table instead of [`fill_blocks`](Self::fill_blocks)'
    /// clearing, counting and summing (which a sparse world, whose edits
    /// add and empty cells every time, paid every edit).
    fn shift_blocks(&mut self, changes: &[(u64, i32)]) {
        debug_assert!(self.has_blocks());
        // The block holding the cell starts at or before it: only later
        // blocks count it.
        let mut blocks = std::mem::take(&mut self.blocks);
        shift_prefix_counts(&mut blocks, changes.iter().map(|&(key, d)| (self.block_index(key), i64::from(d))));
        self.blocks = blocks;
    }

    /// Builds the block table's pages, if this grid has a block table and
    /// they are worth it (see [`fill_pages`](Self::fill_pages)) and no batch
    /// query has built them since the last build or edit. Batch queries
    /// call it once each; single queries use the pages when they exist.
    /// Building them cost 0.3-0.5 ms on 100k points in two clumps (a sixth
    /// to a quarter of a build), so grids that are
    /// rebuilt or edited without batch queries (a broad phase kept for a
    /// few lookups) never pay it.
    #[inline]
    pub(crate) fn ensure_pages(&self) {
        if self.kind == LookupKind::Hashed && self.has_blocks() && self.pages.built.get().is_none() {
            self.build_pages();
        }
    }

    /// [`ensure_pages`](Self::ensure_pages)'s work, out of the queries' way.
    #[cold]
    #[inline(never)]
    fn build_pages(&self) {
        self.pages.built.get_or_init(|| {
            let mut pages = std::mem::take(&mut *self.pages.spare.lock().unwrap_or_else(PoisonError::into_inner));
            self.fill_pages(&mut pages);
            pages
        });
    }

    /// Drops the pages (their slots are stale), keeping their buffers for
    /// the next [`ensure_pages`](Self::ensure_pages). Called where slots
    /// change: a rebuild, an edit, [`clear`](Self::clear).
    fn drop_pages(&mut self) {
        if let Some(built) = self.pages.built.take() {
            let spare = self.pages.spare.get_mut().unwrap_or_else(PoisonError::into_inner);
            if built.capacity() >= spare.capacity() {
                *spare = built;
            }
        }
    }

    /// Fills `pages` with the block table's pages, or leaves them empty
    /// where they are not worth it. Per occupied block, a page holds the
    /// first sorted slot of each of its `1 << block_shift` cells (or of the
    /// first occupied cell after it); per empty block, the directory holds
    /// the first slot after it. The slots of a row's cells `x0..=x1` are
    /// then a directory load and a page load at each end (see
    /// [`block_slots`](Self::block_slots)), the dense table's work, where
    /// the block table alone loads its first cell's index, compares keys,
    /// searches past [`BLOCK_WINDOW`] cells and reads two cells' starts.
    /// Clumps of points far apart (towns in a large world) have a bounding
    /// box too large for the dense table but blocks of many cells: there,
    /// all radius queries took 1.5-1.7x the dense table's time without
    /// pages (the README's twenty-first run). They are built while the occupied blocks hold at least
    /// [`PAGE_CELLS_MIN`] cells on average and the pages fit the dense
    /// table's budget (`16 * points + 65536` entries).
    fn fill_pages(&self, pages: &mut Pages) {
        pages.dir.clear();
        pages.slots.clear();
        let Some(blocks) = self.blocks.len().checked_sub(1) else { return };
        let width = 1usize << self.block_shift;
        let occupied = self.blocks.windows(2).filter(|w| w[1] > w[0]).count();
        let limit = DENSE_CELLS_PER_POINT * self.len() as u64 + DENSE_CELLS_MIN;
        let entries = occupied as u64 * width as u64;
        if self.cells.len() < PAGE_CELLS_MIN * occupied
            || entries > limit
            || entries >= u64::from(PAGE_TAG)
            || self.len() >= PAGE_TAG as usize
        {
            return;
        }
        let n = self.len() as u32;
        pages.dir.resize(blocks + 1, PAGE_TAG | n);
        pages.slots.reserve(entries as usize);
        let (cells, keys, table, min_x) = (&self.cells, &self.cell_keys, &self.blocks, self.min[0]);
        let start = |c: usize| cells.get(c).map_or(n, |c| c.start);
        let Pages { dir, slots } = pages;
        let mut b = 0;
        while b < blocks {
            let (first, end) = (table[b], table[b + 1]);
            if first == end {
                // A run of empty blocks: all share the first slot after them.
                let mut e = b + 1;
                while e < blocks && table[e + 1] == first {
                    e += 1;
                }
                dir[b..e].fill(PAGE_TAG | start(first as usize));
                b = e;
                continue;
            }
            dir[b] = slots.len() as u32;
            // The block's first column, as an offset from the box's; each
            // cell's slot stands for it and the empty cells before it in
            // the block.
            let (first, end) = (first as usize, end as usize);
            let column = |key: u64| {
                let x = unpack(key)[0];
                if self.compacted { self.dense_from(0, x) } else { (x - min_x) as usize }
            };
            let x_base = (column(keys[first]) >> self.block_shift) << self.block_shift;
            let mut filled = 0;
            for (&key, c) in keys[first..end].iter().zip(first..) {
                let x = column(key) - x_base;
                slots.extend(std::iter::repeat_n(start(c), x + 1 - filled));
                filled = x + 1;
            }
            slots.extend(std::iter::repeat_n(start(end), width - filled));
            b += 1;
        }
    }

    /// The block of cell `key` (inside the occupied box).
    #[inline(always)]
    fn block_index(&self, key: u64) -> usize {
        let [x, y, z] = unpack(key);
        if self.compacted { self.ranked_block_of(x, y, z) } else { self.block_of(x, y, z) }
    }

    /// The block of cell `(x, y, z)` (inside the occupied box) in a table
    /// over plain coordinates ([`ranked_block_of`](Self::ranked_block_of)
    /// otherwise).
    #[inline(always)]
    fn block_of(&self, x: i32, y: i32, z: i32) -> usize {
        debug_assert!(!self.compacted);
        let xb = ((x - self.min[0]) as usize) >> self.block_shift;
        let row = (y - self.min[1]) as usize + self.span[1] * (z - self.min[2]) as usize;
        xb + self.block_cols * row
    }

    /// [`block_of`](Self::block_of) over ranked coordinates (`y` and `z`
    /// some occupied cell's; `x` rounded up to the next that is).
    #[inline(never)]
    fn ranked_block_of(&self, x: i32, y: i32, z: i32) -> usize {
        let xb = self.dense_from(0, x) >> self.block_shift;
        let row = self.dense_from(1, y) + self.dense_span[1] * self.dense_from(2, z);
        xb + self.block_cols * row
    }

    /// Whether row `(y, z)` of the occupied box is one of the table's: any
    /// row without compaction, a row whose `y` and `z` some occupied cells
    /// have with it (the others hold no points).
    #[inline(always)]
    fn table_has_row(&self, y: i32, z: i32) -> bool {
        !self.compacted || (self.dense_at(1, y).is_some() && self.dense_at(2, z).is_some())
    }

    /// Whether this grid has a block table (see [`fill_blocks`](Self::fill_blocks)).
    #[inline(always)]
    pub(crate) fn has_blocks(&self) -> bool {
        !self.blocks.is_empty()
    }

    /// The range of the cell table holding the cells `x0..=x1` of row
    /// `(y, z)` (inside the occupied box), through the block table (which
    /// must exist): the block of `x0` gives the first occupied cell at or
    /// after the block's start, and the next [`BLOCK_WINDOW`] keys from
    /// there are compared with the row's first and last keys at once
    /// (keys past the row are larger than both, so no row end is needed).
    /// Only when all of them are at most the last key (a long run of
    /// occupied cells) does a search go on.
    #[inline(always)]
    pub(crate) fn block_cells(&self, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        if self.compacted {
            self.block_cells_in::<true>(y, z, x0, x1)
        } else {
            self.block_cells_in::<false>(y, z, x0, x1)
        }
    }

    /// [`block_cells`](Self::block_cells) for a table over ranked
    /// coordinates (`RANKED`, which must be `compacted`) or plain ones:
    /// the batch queries' row loops take the branch once per unit, not
    /// once per row.
    #[inline(always)]
    fn block_cells_in<const RANKED: bool>(&self, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        debug_assert!(self.has_blocks() && RANKED == self.compacted);
        let block = if RANKED {
            // A row no occupied cell has is not one of the table's.
            if !self.table_has_row(y, z) {
                return (0, 0);
            }
            self.ranked_block_of(x0, y, z)
        } else {
            self.block_of(x0, y, z)
        };
        let first = self.blocks.get(block).map_or(self.cells.len(), |&a| a as usize);
        let (lo, hi) = (pack_unchecked(x0, y, z), pack_unchecked(x1, y, z));
        let keys = &self.cell_keys;
        if let Some(window) = keys.get(first..first + BLOCK_WINDOW) {
            let (mut before, mut upto) = (0, 0);
            for &k in window {
                before += usize::from(k < lo);
                upto += usize::from(k <= hi);
            }
            if upto < BLOCK_WINDOW {
                return (first + before, first + upto);
            }
        }
        let a = gallop(keys, first, keys.len(), lo);
        (a, gallop(keys, a, keys.len(), hi + 1))
    }

    /// [`block_cells`](Self::block_cells) as a range of sorted slots,
    /// through the pages when a batch query built them.
    #[inline(always)]
    pub(crate) fn block_slots(&self, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        let pages = self.paged();
        if self.compacted {
            self.block_row_slots::<true>(pages, y, z, x0, x1)
        } else {
            self.block_row_slots::<false>(pages, y, z, x0, x1)
        }
    }

    /// [`block_slots`](Self::block_slots) with this grid's
    /// [`paged`](Self::paged) and its `compacted` flag as `RANKED`, taken
    /// once by the caller.
    #[inline(always)]
    pub(crate) fn block_row_slots<const RANKED: bool>(
        &self,
        pages: Option<&Pages>,
        y: i32,
        z: i32,
        x0: i32,
        x1: i32,
    ) -> (usize, usize) {
        match pages {
            Some(pages) if RANKED => self.ranked_paged_slots(pages, y, z, x0, x1),
            Some(pages) => self.paged_slots(pages, y, z, x0, x1),
            None => {
                let (a, b) = self.block_cells_in::<RANKED>(y, z, x0, x1);
                if a == b {
                    return (0, 0);
                }
                (self.cell_start(a), self.cell_start(b))
            }
        }
    }

    /// Whether the table is over ranked coordinates (see
    /// [`compact`](Self::compact)).
    #[inline(always)]
    pub(crate) fn ranked(&self) -> bool {
        self.compacted
    }

    /// The block table's pages, if a batch query built them and they are
    /// not empty (see [`ensure_pages`](Self::ensure_pages)).
    #[inline(always)]
    pub(crate) fn paged(&self) -> Option<&Pages> {
        self.pages.built.get().filter(|p| !p.dir.is_empty())
    }

    /// [`block_slots`](Self::block_slots) through `pages` (this grid's
    /// [`paged`](Self::paged)): a directory load and a page load at each
    /// end.
    #[inline(always)]
    fn paged_slots(&self, pages: &Pages, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        debug_assert!(!self.compacted);
        // Cell `x1 + 1` may be past the row's last block: its index is then
        // the next row's first block (or the directory's last entry), whose
        // first slot is the end wanted.
        let row = self.block_cols * ((y - self.min[1]) as usize + self.span[1] * (z - self.min[2]) as usize);
        let (c0, c1) = ((x0 - self.min[0]) as usize, (x1 - self.min[0]) as usize + 1);
        let mask = (1usize << self.block_shift) - 1;
        let n = self.len();
        let s = pages.slot(row + (c0 >> self.block_shift), c0 & mask, n);
        let e = pages.slot(row + (c1 >> self.block_shift), c1 & mask, n);
        (s, e)
    }

    /// [`paged_slots`](Self::paged_slots) over ranked coordinates: empty
    /// for a row the table does not have, else as there with the row's
    /// ranks and the columns' (`x0` and `x1 + 1` rounded up to kept ones).
    #[inline(never)]
    fn ranked_paged_slots(&self, pages: &Pages, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        let (Some(ry), Some(rz)) = (self.dense_at(1, y), self.dense_at(2, z)) else { return (0, 0) };
        let row = self.block_cols * (ry + self.dense_span[1] * rz);
        let (c0, c1) = (self.dense_from(0, x0), self.dense_from(0, x1 + 1));
        let mask = (1usize << self.block_shift) - 1;
        let n = self.len();
        let s = pages.slot(row + (c0 >> self.block_shift), c0 & mask, n);
        let e = pages.slot(row + (c1 >> self.block_shift), c1 & mask, n);
        (s, e)
    }

    /// The range of the cell table holding the row of `key` (any `x`), if
    /// the row is occupied (hashed lookup without a block table only).
    #[inline(always)]
    fn hashed_row(&self, key: u64) -> Option<(usize, usize)> {
        let (a, b) = self.hash.find(key >> AXIS_BITS)?;
        Some((a as usize, b as usize))
    }

    /// Whether cell `c` lies in the occupied cells' bounding box.
    #[inline(always)]
    fn box_holds(&self, c: [i32; 3]) -> bool {
        (0..3).all(|a| c[a] >= self.min[a] && c[a] <= self.max[a])
    }

    /// The index in the cell table of the occupied cell `key`.
    #[inline]
    fn cell_index(&self, key: u64) -> Option<usize> {
        if self.kind == LookupKind::Hashed && self.has_blocks() {
            let c = unpack(key);
            if !self.box_holds(c) {
                return None;
            }
            let (a, b) = self.block_cells(c[1], c[2], c[0], c[0]);
            // The key's own bits decide (a key is any `u64` to `unpack`).
            (a < b && self.cell_keys[a] == key).then_some(a)
        } else if self.kind == LookupKind::Hashed {
            let (a, b) = self.hashed_row(key)?;
            self.cell_keys[a..b].binary_search(&key).ok().map(|i| a + i)
        } else {
            self.cell_keys.binary_search(&key).ok()
        }
    }

    /// The cell key of `point` under this grid's origin and cell size.
    ///
    /// # Errors
    /// As [`cell_axis`]: non-finite or out-of-range coordinates.
    pub fn cell_key_of(&self, point: P) -> Result<CellKey, EncodeError> {
        let p = point.to_vec3();
        let (o, s) = (self.origin, self.cell_size);
        let (x, y, z) = (cell_axis(p.x, o.x, s)?, cell_axis(p.y, o.y, s)?, cell_axis(p.z, o.z, s)?);
        Ok(CellKey::from_raw_unchecked(pack_unchecked(x, y, z)))
    }

    /// The sorted slots `start..end` of the points in cell `key` (empty when
    /// the cell is not occupied).
    pub fn cell_slots(&self, key: CellKey) -> std::ops::Range<usize> {
        if self.kind == LookupKind::Dense {
            return match self.dense_cell(unpack(key.raw())) {
                Some(d) => self.dense[d] as usize..self.dense[d + 1] as usize,
                None => 0..0,
            };
        }
        match self.cell_index(key.raw()) {
            Some(i) => {
                let c = self.cells[i];
                c.start as usize..(c.start + c.count) as usize
            }
            None => 0..0,
        }
    }

    /// The sorted slot of the point with id `id` in cell `key`, if there is
    /// one (a scan of that cell's points).
    pub fn find_slot(&self, key: CellKey, id: I) -> Option<usize> {
        self.find_slot_counted(key, id).0
    }

    /// [`find_slot`](Self::find_slot), with the number of ids it compared.
    pub(crate) fn find_slot_counted(&self, key: CellKey, id: I) -> (Option<usize>, usize) {
        self.find_in_slots(self.cell_slots(key), id)
    }

    /// The slot in `range` holding id `id`, if one does (a scan), with the
    /// number of ids compared. `range` must lie within the points.
    pub(crate) fn find_in_slots(&self, range: std::ops::Range<usize>, id: I) -> (Option<usize>, usize) {
        let start = range.start;
        match self.ids[range.clone()].iter().position(|&i| i == id) {
            Some(at) => (Some(start + at), at + 1),
            None => (None, range.len()),
        }
    }

    /// Moves the point at sorted slot `slot` to `position`, which must lie in
    /// the same cell (the grid's order stays valid without any re-sort).
    ///
    /// # Errors
    /// [`GridError::SlotOutOfRange`] for a slot past the end,
    /// [`GridError::InvalidPoint`] if `position` cannot be keyed, and
    /// [`GridError::CellMismatch`] if it lies in another cell; the grid is
    /// unchanged on error.
    pub fn set_position_in_cell(&mut self, slot: usize, position: P) -> Result<(), GridError> {
        let Some(old) = self.positions().get(slot) else {
            return Err(GridError::SlotOutOfRange { slot, len: self.len() });
        };
        let new_key =
            self.cell_key_of(position).map_err(|error| GridError::InvalidPoint(BatchError { index: slot, error }))?;
        // `old` was keyed when it was stored, so this cannot fail.
        let old_key =
            self.cell_key_of(old).map_err(|error| GridError::InvalidPoint(BatchError { index: slot, error }))?;
        if new_key != old_key {
            return Err(GridError::CellMismatch { slot });
        }
        self.soa.set(slot, position.to_vec3());
        Ok(())
    }

    /// [`set_position_in_cell`](Self::set_position_in_cell) for a caller
    /// that already knows `position` lies in the slot's cell (the broad
    /// phase, feature `ecs`).
    #[cfg(feature = "ecs")]
    #[inline]
    pub(crate) fn set_position_unchecked(&mut self, slot: usize, position: P) {
        debug_assert_eq!(
            self.cell_key_of(position).ok(),
            self.positions().get(slot).and_then(|p| self.cell_key_of(p).ok())
        );
        self.soa.set(slot, position.to_vec3());
    }

    /// The box `min..=max` an edit grew past the grid's box, widened on
    /// each side it grew by room to grow into (a quarter of its extent on
    /// that axis, at least [`GROWTH_ROOM_MIN`] cells), when the lookup
    /// tables that fit over the wider box are those that fit over the
    /// exact one. Points that wander out of the box (a flock drifting, an
    /// entity flying off) then refill the lookup once in a while, rarer as
    /// the box widens, not on every edit that takes a point one cell past
    /// its edge.
    fn with_room(&self, min: [i32; 3], max: [i32; 3], points: usize) -> ([i32; 3], [i32; 3]) {
        let (mut wide_min, mut wide_max) = (min, max);
        for a in 0..3 {
            let room = ((max[a] - min[a]) / 4).max(GROWTH_ROOM_MIN);
            if min[a] < self.min[a] {
                wide_min[a] = min[a].saturating_sub(room).max(CELL_MIN);
            }
            if max[a] > self.max[a] {
                wide_max[a] = max[a].saturating_add(room).min(CELL_MAX);
            }
        }
        let span = |lo: [i32; 3], hi: [i32; 3]| [0, 1, 2].map(|a| (hi[a] - lo[a]) as usize + 1);
        let cells = self.cells.len();
        let fits = |s: [usize; 3]| (dense_fits(table_volume(s), points, cells), blocks_fit(s, cells, false));
        if fits(span(min, max)) == fits(span(wide_min, wide_max)) { (wide_min, wide_max) } else { (min, max) }
    }

    /// Calls `f` with each cell whose points' slots the latest edit
    /// ([`apply_edits`](Self::apply_edits), called right before) may have
    /// changed: the cells it added or whose points it changed, and those
    /// whose start it shifted. The cells it left alone keep their slots.
    #[cfg(feature = "ecs")]
    pub(crate) fn for_each_moved_cell(&self, mut f: impl FnMut(Cell)) {
        let shifted = self.edit_cell_runs.iter().filter(|r| r.shift != 0).flat_map(|r| r.to..r.to + (r.end - r.from));
        for at in shifted.chain(self.edit_cell_writes.iter().map(|&(at, _)| at)) {
            if let Some(&cell) = self.cells.get(at as usize) {
                f(cell);
            }
        }
    }

    /// Edits the grid in place of a rebuild: removes the points at the sorted
    /// slots `removed` and inserts `inserted` as `(cell key, id, position)`.
    /// Nothing is re-keyed or re-sorted except the inserted points, and the
    /// arrays are edited in place: only the points and cells whose slot or
    /// start changes are moved, in long runs. A removal and an insertion
    /// cancel out past both, so points moving to a nearby cell (the common
    /// edit of a broad phase) move only the points between the two cells,
    /// and a few such moves in a large grid cost a few runs, not a pass
    /// over it. The cost is `O(k log k)` for `k` edits plus the points and
    /// cells that shift (at most all of them), plus a refill of the cell
    /// lookup when the occupied box grows (or, for the hashed lookup
    /// without a block table, when cells are added or emptied). A box that
    /// grows gets room to grow into on the sides it grew (a quarter of its
    /// extent, at least 4 cells, where the same lookup tables still fit),
    /// so points drifting out of it one cell at a time refill the lookup
    /// once in a while, not on every edit. Both lists are sorted in place
    /// (slots, keys).
    ///
    /// The result equals a rebuild over the kept and the inserted points,
    /// except for the order of points inside a cell (kept points first, then
    /// inserted ones), which no query depends on.
    ///
    /// # Errors
    /// [`GridError::SlotOutOfRange`] for a slot past the end or listed
    /// twice, [`GridError::CellMismatch`] for an inserted key that is not
    /// the key of its position, [`GridError::InvalidPoint`] for an inserted
    /// position that cannot be keyed, [`GridError::TooManyPoints`]; the grid
    /// is unchanged on error.
    pub fn apply_edits(&mut self, removed: &mut [u32], inserted: &mut [(CellKey, I, P)]) -> Result<(), GridError> {
        let n_old = self.len();
        removed.sort_unstable();
        for (i, &slot) in removed.iter().enumerate() {
            if slot as usize >= n_old || (i > 0 && removed[i - 1] == slot) {
                return Err(GridError::SlotOutOfRange { slot: slot as usize, len: n_old });
            }
        }
        for (i, &(key, _, p)) in inserted.iter().enumerate() {
            let actual =
                self.cell_key_of(p).map_err(|error| GridError::InvalidPoint(BatchError { index: i, error }))?;
            if actual != key {
                return Err(GridError::CellMismatch { slot: i });
            }
        }
        let n_new = n_old - removed.len() + inserted.len();
        if n_new > u32::MAX as usize {
            return Err(GridError::TooManyPoints);
        }
        self.apply_edits_unchecked(removed, inserted);
        Ok(())
    }

    /// [`apply_edits`](Self::apply_edits) for a caller that guarantees the
    /// slots are in range and distinct, the keys are the positions' keys,
    /// and the result holds at most `u32::MAX` points. Returns the largest
    /// point count among the cells the edit changed or added (0 if none).
    pub(crate) fn apply_edits_unchecked(&mut self, removed: &mut [u32], inserted: &mut [(CellKey, I, P)]) -> u32 {
        let n_old = self.len();
        let n_new = n_old - removed.len() + inserted.len();
        removed.sort_unstable();
        inserted.sort_unstable_by_key(|e| e.0.raw());
        if removed.is_empty() && inserted.is_empty() {
            return 0;
        }
        // Points move between slots: the pages' slots go stale.
        self.drop_pages();
        let mut largest = 0u32;

        // 1. The plan, in old slot order, before anything moves: runs of
        //    untouched cells (each moved as one block below, its starts
        //    shifted), the edited and new cells (written one by one), and
        //    the point operations. Only edited cells are looked at one by one.
        let old_cells = &self.cells;
        let c_old = old_cells.len();
        let mut removed_cell = std::mem::take(&mut self.edit_removed_cells);
        removed_cell.clear();
        // Both lists are sorted: each search gallops on from the previous one.
        let mut at = 0usize;
        removed_cell.extend(removed.iter().map(|&slot| {
            at = gallop_by(at, c_old, |t| old_cells[t].start + old_cells[t].count > slot);
            at as u32
        }));
        let mut inserted_cell = std::mem::take(&mut self.edit_inserted_cells);
        inserted_cell.clear();
        let mut rank_room = std::mem::take(&mut self.edit_rank_room);
        rank_room.clear();
        let cell_keys = &self.cell_keys;
        let mut at = 0usize;
        inserted_cell.extend(inserted.iter().map(|e| {
            at = gallop_by(at, c_old, |t| cell_keys[t] >= e.0.raw());
            at as u32
        }));
        let mut cell_runs = std::mem::take(&mut self.edit_cell_runs);
        let mut cell_writes = std::mem::take(&mut self.edit_cell_writes);
        let mut ops = std::mem::take(&mut self.edit_ops);
        let mut changes = std::mem::take(&mut self.edit_changes);
        let mut cell_changes = std::mem::take(&mut self.edit_cell_changes);
        cell_changes.clear();
        cell_runs.clear();
        cell_writes.clear();
        ops.clear();
        changes.clear();
        let mut grew = self.is_empty();
        let (mut min, mut max) = if grew { EMPTY_BOUNDS } else { (self.min, self.max) };
        let mut delta: i64 = 0;
        let mut cells_changed = false;
        let mut new_coordinate = false;
        let (mut c, mut r, mut ins) = (0usize, 0usize, 0usize);
        // The next index of the new cell table.
        let mut to = 0usize;
        let old_start = |t: usize| if t < c_old { old_cells[t].start as usize } else { n_old };
        loop {
            let next_r = removed_cell.get(r).map_or(usize::MAX, |&t| t as usize);
            let next_i = inserted_cell.get(ins).map_or(usize::MAX, |&t| t as usize);
            let t = next_r.min(next_i).min(c_old);
            // Untouched cells: one run.
            if t > c {
                cell_runs.push(CellRun { from: c as u32, end: t as u32, to: to as u32, shift: delta });
                to += t - c;
            }
            c = t;
            if t == c_old && next_r == usize::MAX && next_i == usize::MAX {
                break;
            }
            // New cells that sort before old cell `t` (or after the last).
            let before_key = if t < c_old { old_cells[t].key.raw() } else { u64::MAX };
            while ins < inserted.len() && inserted_cell[ins] as usize == t && inserted[ins].0.raw() != before_key {
                let k = inserted[ins].0.raw();
                let start = (old_start(t) as i64 + delta) as usize;
                let first = ins;
                while ins < inserted.len() && inserted[ins].0.raw() == k {
                    ops.push(EditOp::Insert { before: old_start(t) as u32, index: ins as u32 });
                    ins += 1;
                }
                let count = ins - first;
                largest = largest.max(count as u32);
                cell_writes.push((
                    to as u32,
                    Cell { key: CellKey::from_raw_unchecked(k), start: start as u32, count: count as u32 },
                ));
                to += 1;
                cells_changed = true;
                changes.push((k, count as i64));
                cell_changes.push((k, 1));
                let coords = unpack(k);
                // A compacted table has a row and column for every
                // coordinate some old cell had (and the room around the
                // new ones of earlier edits); a new one needs new ranks.
                if self.compacted && (0..3).any(|a| self.dense_at(a, coords[a]).is_none()) {
                    // Room around all three: a point moving on changes
                    // each of them sooner or later.
                    new_coordinate = true;
                    rank_room.extend(coords.iter().enumerate().map(|(a, &c)| (a, c)));
                }
                for a in 0..3 {
                    if coords[a] < min[a] || coords[a] > max[a] {
                        grew = true;
                        min[a] = min[a].min(coords[a]);
                        max[a] = max[a].max(coords[a]);
                    }
                }
                delta += count as i64;
            }
            if t == c_old {
                continue;
            }
            // Old cell `t`: removals, then insertions at its end.
            let cell = old_cells[t];
            let end = (cell.start + cell.count) as usize;
            let mut count = cell.count as i64;
            while r < removed.len() && removed_cell[r] as usize == t {
                ops.push(EditOp::Remove(removed[r]));
                count -= 1;
                r += 1;
            }
            while ins < inserted.len() && inserted_cell[ins] as usize == t && inserted[ins].0.raw() == cell.key.raw() {
                ops.push(EditOp::Insert { before: end as u32, index: ins as u32 });
                count += 1;
                ins += 1;
            }
            if count > 0 {
                largest = largest.max(count as u32);
                cell_writes.push((
                    to as u32,
                    Cell { key: cell.key, start: (cell.start as i64 + delta) as u32, count: count as u32 },
                ));
                to += 1;
            } else {
                cells_changed = true;
                cell_changes.push((cell.key.raw(), -1));
            }
            let net = count - cell.count as i64;
            if net != 0 {
                changes.push((cell.key.raw(), net));
            }
            delta += net;
            c = t + 1;
        }
        let c_new = to;
        self.edit_removed_cells = removed_cell;
        self.edit_inserted_cells = inserted_cell;

        // 2. The cell table, in place: the runs move (only those whose
        //    index changed), then their starts shift (only where points
        //    before them were removed or inserted in a different number),
        //    then the edited and new cells are written. An edit whose
        //    removals and insertions are close in key order (entities
        //    moving to a nearby cell) touches the cells between them only.
        if c_new > c_old {
            let filler = Cell { key: CellKey::from_raw_unchecked(0), start: 0, count: 0 };
            self.cells.resize(c_new, filler);
            self.cell_keys.resize(c_new, 0);
        }
        let runs = || cell_runs.iter().map(|r| (r.from as usize, r.end as usize, r.to as usize));
        move_runs(&mut self.cells, runs());
        move_runs(&mut self.cell_keys, runs());
        for run in cell_runs.iter().filter(|r| r.shift != 0) {
            let at = run.to as usize..(run.to + run.end - run.from) as usize;
            for cell in &mut self.cells[at] {
                cell.start = (i64::from(cell.start) + run.shift) as u32;
            }
        }
        for &(at, cell) in &cell_writes {
            self.cells[at as usize] = cell;
            self.cell_keys[at as usize] = cell.key.raw();
        }
        self.cells.truncate(c_new);
        self.cell_keys.truncate(c_new);
        debug_assert_eq!(self.cells.last().map_or(0, |c| (c.start + c.count) as usize), n_new);
        self.edit_cell_runs = cell_runs;
        self.edit_cell_writes = cell_writes;

        // 3. The points, in place the same way: the kept runs that moved,
        //    then the inserted points, in the ids and each coordinate array.
        let mut point_runs = std::mem::take(&mut self.edit_point_runs);
        let mut point_writes = std::mem::take(&mut self.edit_point_writes);
        point_runs.clear();
        point_writes.clear();
        let (mut from, mut to) = (0usize, 0usize);
        let steps = ops
            .iter()
            .map(|&e| match e {
                EditOp::Remove(slot) => (slot as usize, slot as usize + 1, None),
                EditOp::Insert { before, index } => (before as usize, before as usize, Some(index)),
            })
            .chain(std::iter::once((n_old, n_old, None)));
        for (end, next, insert) in steps {
            if end > from {
                point_runs.push((from as u32, end as u32, to as u32));
                to += end - from;
            }
            from = next;
            if let Some(index) = insert {
                point_writes.push((to as u32, index));
                to += 1;
            }
        }
        debug_assert_eq!(to, n_new);
        if n_new > n_old {
            // Filler for growth only: the runs and inserted points write every slot.
            self.ids.resize(n_new, inserted[0].1);
            self.soa.resize(n_new);
        }
        let runs = || point_runs.iter().map(|&(from, end, to)| (from as usize, end as usize, to as usize));
        move_runs(&mut self.ids, runs());
        move_runs(&mut self.soa.x, runs());
        move_runs(&mut self.soa.y, runs());
        move_runs(&mut self.soa.z, runs());
        for &(slot, index) in &point_writes {
            let (_, id, p) = inserted[index as usize];
            self.ids[slot as usize] = id;
            self.soa.set(slot as usize, p.to_vec3());
        }
        self.ids.truncate(n_new);
        self.soa.resize(n_new);
        self.soa.pad(n_new);
        self.edit_point_runs = point_runs;
        self.edit_point_writes = point_writes;
        self.edit_ops = ops;
        self.order.clear();
        if n_new == 0 {
            self.edit_changes = changes;
            self.edit_cell_changes = cell_changes;
            self.clear();
            return 0;
        }
        // The bounding box only grows here (a box larger than the occupied
        // cells is still correct for every query); a rebuild makes it tight.
        let (was, was_compacted) = (self.kind, self.compacted);
        self.edit_rank_room = rank_room;
        self.edit_same_box = was_compacted && !grew;
        if grew && n_old > 0 && !was_compacted {
            (min, max) = self.with_room(min, max, n_new);
        }
        let span = [0, 1, 2].map(|a| (max[a] - min[a]) as usize + 1);
        let volume = table_volume(span);
        self.min = min;
        self.max = max;
        self.span = span;
        self.build = BuildKind::Edit;
        let keep_ranks = was_compacted
            && !grew
            && !new_coordinate
            && match was {
                LookupKind::Dense => {
                    dense_fits(table_volume(self.dense_span), KEEP_SLACK * n_new, KEEP_SLACK * self.cells.len())
                }
                LookupKind::Hashed => blocks_fit(self.dense_span, KEEP_SLACK * self.cells.len(), true),
                _ => false,
            };
        // A plain dense table over the same box stays while it fits its
        // kept budget.
        let keep_dense = was == LookupKind::Dense
            && !was_compacted
            && !grew
            && dense_fits(volume, KEEP_SLACK * n_new, KEEP_SLACK * self.cells.len());
        self.kind = if keep_ranks || keep_dense {
            // The table stays: every cell's coordinates have ranks (an
            // emptied cell's may stay: the table then has a row or column
            // without points), or the plain dense table still fits.
            was
        } else {
            // A hashed grid without ranks whose box did not grow found no
            // ranks that fit at this box before: they are not tried again.
            self.choose_lookup(volume, grew || was != LookupKind::Hashed || was_compacted)
        };
        self.edit_rank_room.clear();
        self.edit_same_box = false;
        match self.kind {
            LookupKind::Dense
                if grew
                    || was != LookupKind::Dense
                    || self.compacted != was_compacted
                    || (self.compacted && !keep_ranks) =>
            {
                self.clear_hash();
                self.fill_dense();
            }
            LookupKind::Dense => {
                // `dense[i]` counts the points in cells before dense cell `i`:
                // shift each stretch by the net change of the cells before it.
                let mut dense = std::mem::take(&mut self.dense);
                shift_prefix_counts(&mut dense, changes.iter().map(|&(key, net)| (self.dense_index(key), net)));
                self.dense = dense;
            }
            LookupKind::Hashed => {
                self.dense.clear();
                // The table maps keys to cell indices: unchanged while no
                // cell was added or emptied (and its coordinates stay).
                let rebuild = cells_changed
                    || was != LookupKind::Hashed
                    || grew
                    || self.compacted != was_compacted
                    || (self.compacted && !keep_ranks);
                // A block table over the same box (plain) or the same ranks
                // (compacted: every cell's coordinates kept theirs) whose
                // geometry the new cell count keeps only shifts its entries.
                let same_table = if was_compacted { self.compacted && keep_ranks } else { !self.compacted };
                let shift_only = rebuild
                    && was == LookupKind::Hashed
                    && !grew
                    && same_table
                    && self.has_blocks()
                    && self.keeps_block_geometry();
                // The hash over the same kind of grid updates the rows the
                // edit touched.
                let rows_only = rebuild
                    && was == LookupKind::Hashed
                    && !was_compacted
                    && !self.compacted
                    && !self.has_blocks()
                    && self.hash.slots() > 0
                    && self.block_geometry_for(self.cells.len() / KEEP_SLACK).is_none();
                if shift_only {
                    self.shift_blocks(&cell_changes);
                } else if !(rows_only && self.update_hash_rows(&cell_changes)) && rebuild {
                    self.build_hash();
                }
            }
            _ => {
                self.dense.clear();
                self.clear_hash();
            }
        }
        self.edit_changes = changes;
        self.edit_cell_changes = cell_changes;
        largest
    }

    /// The dense-table index of occupied cell `key`.
    #[inline]
    fn dense_index(&self, key: u64) -> usize {
        if self.compacted {
            let c = unpack(key);
            let [x, y, z] = [0, 1, 2].map(|a| self.ranks[a][(c[a] - self.min[a]) as usize] as usize);
            return x + self.dense_span[0] * (y + self.dense_span[1] * z);
        }
        let x = (key & AXIS_MASK) as usize - (self.min[0] + BIAS) as usize;
        let y = ((key >> AXIS_BITS) & AXIS_MASK) as usize - (self.min[1] + BIAS) as usize;
        let z = (key >> (2 * AXIS_BITS)) as usize - (self.min[2] + BIAS) as usize;
        x + self.span[0] * (y + self.span[1] * z)
    }

    /// The first sorted slot of occupied cell `cell` (the point count for
    /// one past the last cell).
    #[inline]
    pub(crate) fn cell_start(&self, cell: usize) -> usize {
        match self.cells.get(cell) {
            Some(c) => c.start as usize,
            None => self.len(),
        }
    }

    /// The sorted-point range of the cells `x0..=x1` in row `(y, z)`. All
    /// coordinates must lie inside the occupied bounding box.
    #[inline(always)]
    pub(crate) fn row_slots(&self, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        debug_assert!(x0 <= x1 && x0 >= self.min[0] && x1 <= self.max[0]);
        debug_assert!(y >= self.min[1] && y <= self.max[1] && z >= self.min[2] && z <= self.max[2]);
        match self.kind {
            LookupKind::Dense if !self.compacted => {
                let m = self.min;
                let x = ((x0 - m[0]) as usize, (x1 - m[0]) as usize + 1);
                self.dense_run((y - m[1]) as usize, (z - m[2]) as usize, x)
            }
            LookupKind::Dense => match (self.dense_at(1, y), self.dense_at(2, z)) {
                (Some(y), Some(z)) => self.dense_run(y, z, (self.dense_from(0, x0), self.dense_from(0, x1 + 1))),
                _ => (0, 0),
            },
            LookupKind::Hashed if self.has_blocks() => self.block_slots(y, z, x0, x1),
            LookupKind::Hashed => self.row_slots_hashed(y, z, x0, x1),
            _ => self.row_slots_search(y, z, x0, x1),
        }
    }

    #[inline(never)]
    fn row_slots_search(&self, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        let lo = pack_unchecked(x0, y, z);
        let hi = pack_unchecked(x1, y, z);
        let a = self.cell_keys.partition_point(|&k| k < lo);
        // At most `x1 - x0 + 1` cells lie in the range.
        let end = (a + (x1 - x0) as usize + 1).min(self.cell_keys.len());
        let b = a + self.cell_keys[a..end].partition_point(|&k| k <= hi);
        (self.cell_start(a), self.cell_start(b))
    }

    /// [`row_slots`](Self::row_slots) through the hash table: the row's
    /// range of the cell table, then its cells `x0..=x1` by a scan (short
    /// rows) or a search of that range.
    #[inline]
    fn row_slots_hashed(&self, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        let lo = pack_unchecked(x0, y, z);
        let Some((a, b)) = self.hashed_row(lo) else { return (0, 0) };
        let hi = pack_unchecked(x1, y, z);
        let keys = &self.cell_keys[a..b];
        let (i, j) = if keys.len() <= HASH_SCAN_MAX {
            let i = keys.iter().take_while(|&&k| k < lo).count();
            (i, i + keys[i..].iter().take_while(|&&k| k <= hi).count())
        } else {
            let i = keys.partition_point(|&k| k < lo);
            (i, i + keys[i..].partition_point(|&k| k <= hi))
        };
        (self.cell_start(a + i), self.cell_start(a + j))
    }

    /// Calls `f(start, end)` with the sorted-slot range of the cells
    /// `lo[0]..=hi[0]` of every row `(y, z)` of the box `lo..=hi` that holds
    /// points, in key order. The box must lie inside the occupied bounding
    /// box. Returns the number of probes made (also added to
    /// [`cell_probes`](crate::query::cell_probes)).
    ///
    /// The cost is bounded by the occupied cells, never by the empty cells
    /// of the box. With `K` the occupied cells whose keys lie between the
    /// box's first and last key, each call takes the cheaper of two walks:
    /// - row by row when the box has at most [`ROWS_FREE`] rows (one probe
    ///   per row: a dense-table lookup, O(1); a hashed lookup, O(1)
    ///   expected; or a binary search), or in a grid with the dense or hash
    ///   table when it has at most `2 * K + ROWS_FREE` rows (2 more probes
    ///   to find `K`);
    /// - otherwise a skip-scan of the sorted cell table over those `K` cells
    ///   (2 probes to find them, then one per step): each step lands on an
    ///   occupied cell and either takes the run of cells of its row in the
    ///   box or gallops to the next row of the box. Every step lands on a
    ///   distinct one of the `K` cells and at most two land per row, so this
    ///   is at most `2 + min(K, 2 * rows + 1)` probes, each a search of
    ///   O(log distance).
    ///
    /// So a call makes at most `2 * K + ROWS_FREE + 2` probes.
    #[inline(always)]
    pub(crate) fn for_each_row(&self, lo: [i32; 3], hi: [i32; 3], f: impl FnMut(usize, usize)) -> u64 {
        let probes = self.walk_rows(lo, hi, f);
        crate::query::count_probes(probes);
        probes
    }

    /// [`for_each_row`](Self::for_each_row) without adding to
    /// [`cell_probes`](crate::query::cell_probes): the caller adds the
    /// returned probes.
    #[inline(always)]
    pub(crate) fn walk_rows(&self, lo: [i32; 3], hi: [i32; 3], mut f: impl FnMut(usize, usize)) -> u64 {
        debug_assert!((0..3).all(|a| lo[a] <= hi[a] && lo[a] >= self.min[a] && hi[a] <= self.max[a]));
        if self.kind == LookupKind::Dense {
            // Rows of the table (fewer than the box's when compacted).
            let (b0, b1) = self.dense_box(lo, hi);
            let rows = (b1[1] - b0[1]) as u64 * (b1[2] - b0[2]) as u64;
            if rows <= ROWS_FREE {
                self.dense_rows(b0, b1, &mut f);
                return rows;
            }
            return self.walk_rows_wide(lo, hi, rows, &mut f);
        }
        let rows = (hi[1] - lo[1] + 1) as u64 * (hi[2] - lo[2] + 1) as u64;
        self.walk_rows_wide(lo, hi, rows, &mut f)
    }

    /// [`walk_rows`](Self::walk_rows) over the rows of the box after row
    /// `own = [y, z]` in key order (the later rows of its layer, then the
    /// layers above); `own` must lie in the box. At most [`ROWS_FREE`] such
    /// rows are looked up one by one, more are two walks (the two boxes).
    #[inline(always)]
    pub(crate) fn walk_rows_after(
        &self,
        lo: [i32; 3],
        hi: [i32; 3],
        [y0, z0]: [i32; 2],
        mut f: impl FnMut(usize, usize),
    ) -> u64 {
        if self.kind == LookupKind::Dense {
            // The same rows in the table's coordinates: the rest of row
            // `own`'s layer (when some cell has its `z`), then the layers
            // above.
            let (b0, b1) = self.dense_box(lo, hi);
            let (y_after, z_after) = (self.dense_from(1, y0 + 1), self.dense_from(2, z0 + 1));
            let own_layer = self.dense_at(2, z0);
            let rows =
                own_layer.map_or(0, |_| (b1[1] - y_after) as u64) + (b1[2] - z_after) as u64 * (b1[1] - b0[1]) as u64;
            if rows <= ROWS_FREE {
                let mut row = |y: usize, z: usize| {
                    let (s, e) = self.dense_run(y, z, (b0[0], b1[0]));
                    if s < e {
                        f(s, e);
                    }
                };
                if let Some(z) = own_layer {
                    (y_after..b1[1]).for_each(|y| row(y, z));
                }
                for z in z_after..b1[2] {
                    (b0[1]..b1[1]).for_each(|y| row(y, z));
                }
                return rows;
            }
        } else {
            let rows = (hi[1] - y0) as u64 + (hi[2] - z0) as u64 * (hi[1] - lo[1] + 1) as u64;
            if rows <= ROWS_FREE {
                // As `lookup_rows`, from the row after `own`.
                let mut row = |y: i32, z: i32| {
                    let (s, e) = self.row_slots(y, z, lo[0], hi[0]);
                    if s < e {
                        f(s, e);
                    }
                };
                for y in y0 + 1..=hi[1] {
                    row(y, z0);
                }
                for z in z0 + 1..=hi[2] {
                    for y in lo[1]..=hi[1] {
                        row(y, z);
                    }
                }
                return rows;
            }
        }
        let mut probes = 0;
        if y0 < hi[1] {
            probes += self.walk_rows([lo[0], y0 + 1, z0], [hi[0], hi[1], z0], &mut f);
        }
        if z0 < hi[2] {
            probes += self.walk_rows([lo[0], lo[1], z0 + 1], hi, &mut f);
        }
        probes
    }

    /// [`for_each_row`](Self::for_each_row) without the dense table or for a
    /// box of many rows.
    #[inline(never)]
    fn walk_rows_wide(&self, lo: [i32; 3], hi: [i32; 3], rows: u64, f: &mut impl FnMut(usize, usize)) -> u64 {
        if rows <= ROWS_FREE {
            self.lookup_rows(lo, hi, f);
            rows
        } else {
            let keys = &self.cell_keys;
            let from = keys.partition_point(|&k| k < pack_unchecked(lo[0], lo[1], lo[2]));
            let end = from + keys[from..].partition_point(|&k| k <= pack_unchecked(hi[0], hi[1], hi[2]));
            let direct = matches!(self.kind, LookupKind::Dense | LookupKind::Hashed);
            if direct && rows <= 2 * (end - from) as u64 + ROWS_FREE {
                if self.kind == LookupKind::Dense {
                    let (b0, b1) = self.dense_box(lo, hi);
                    self.dense_rows(b0, b1, f);
                } else {
                    self.lookup_rows(lo, hi, f);
                }
                2 + rows
            } else {
                2 + self.skip_scan(lo, hi, from, end, f)
            }
        }
    }

    /// [`for_each_row`](Self::for_each_row) by one dense-table lookup per
    /// row of the table's box `b0..b1` ([`dense_box`](Self::dense_box)).
    #[inline(always)]
    fn dense_rows(&self, b0: [usize; 3], b1: [usize; 3], f: &mut impl FnMut(usize, usize)) {
        for z in b0[2]..b1[2] {
            for y in b0[1]..b1[1] {
                let (s, e) = self.dense_run(y, z, (b0[0], b1[0]));
                if s < e {
                    f(s, e);
                }
            }
        }
    }

    /// The dense table's coordinate along axis `a` of the first coordinate
    /// at or after `c` that it keeps (`min[a] <= c <= max[a] + 1`): the
    /// offset from `min[a]`, or, compacted, the rank among the occupied
    /// coordinates.
    #[inline(always)]
    pub(crate) fn dense_from(&self, a: usize, c: i32) -> usize {
        let o = (c - self.min[a]) as usize;
        if self.compacted { self.ranks[a].get(o).map_or(self.dense_span[a], |&r| r as usize) } else { o }
    }

    /// The dense table's coordinate along axis `a` of `c`, if the table has
    /// a row or column for it (inside the occupied box and, compacted,
    /// some occupied cell's coordinate).
    #[inline]
    fn dense_at(&self, a: usize, c: i32) -> Option<usize> {
        if c < self.min[a] || c > self.max[a] {
            return None;
        }
        let o = (c - self.min[a]) as usize;
        if !self.compacted {
            return Some(o);
        }
        let ranks = &self.ranks[a];
        match (ranks.get(o), ranks.get(o + 1)) {
            (Some(&r), Some(&next)) if next > r => Some(r as usize),
            _ => None,
        }
    }

    /// The dense-table index of cell `c`, if the table has it.
    #[inline]
    fn dense_cell(&self, c: [i32; 3]) -> Option<usize> {
        let (x, y, z) = (self.dense_at(0, c[0])?, self.dense_at(1, c[1])?, self.dense_at(2, c[2])?);
        Some(x + self.dense_span[0] * (y + self.dense_span[1] * z))
    }

    /// The dense table's box of the cell box `lo..=hi` (inside the occupied
    /// box): per axis, the half-open range of the table's coordinates that
    /// lie in it (empty when, compacted, no occupied cell's coordinate
    /// does).
    #[inline(always)]
    pub(crate) fn dense_box(&self, lo: [i32; 3], hi: [i32; 3]) -> ([usize; 3], [usize; 3]) {
        if self.compacted {
            self.compacted_box(lo, hi)
        } else {
            let m = self.min;
            ([0, 1, 2].map(|a| (lo[a] - m[a]) as usize), [0, 1, 2].map(|a| (hi[a] - m[a]) as usize + 1))
        }
    }

    /// [`dense_box`](Self::dense_box) of a compacted table, out of line so
    /// the batch queries' loops, which inline the box, stay as small as
    /// without compaction.
    #[inline(never)]
    fn compacted_box(&self, lo: [i32; 3], hi: [i32; 3]) -> ([usize; 3], [usize; 3]) {
        ([0, 1, 2].map(|a| self.dense_from(a, lo[a])), [0, 1, 2].map(|a| self.dense_from(a, hi[a] + 1)))
    }

    /// [`dense_after`](Self::dense_after) of a compacted table, out of line
    /// as [`compacted_box`](Self::compacted_box) is.
    #[inline(never)]
    fn ranked_after(&self, own: [i32; 3]) -> (usize, usize) {
        (self.dense_from(2, own[2]), self.dense_from(1, own[1] + 1))
    }

    /// The dense table's first layer and, in it, first row of the rows
    /// after occupied cell `own`'s (its `z` and the `y` after its own).
    #[inline(always)]
    pub(crate) fn dense_after(&self, own: [i32; 3]) -> (usize, usize) {
        if self.compacted {
            self.ranked_after(own)
        } else {
            ((own[2] - self.min[2]) as usize, (own[1] - self.min[1]) as usize + 1)
        }
    }

    /// The sorted-slot range of the table's cells `x0..x1` of its row
    /// `(y, z)` (table coordinates, see [`dense_box`](Self::dense_box)).
    #[inline(always)]
    fn dense_run(&self, y: usize, z: usize, (x0, x1): (usize, usize)) -> (usize, usize) {
        let row = self.dense_span[0] * (y + self.dense_span[1] * z);
        (self.dense[row + x0] as usize, self.dense[row + x1] as usize)
    }

    /// [`for_each_row`](Self::for_each_row) for a box of few rows in a grid
    /// without the dense table: one hashed lookup or search per row.
    #[inline]
    fn lookup_rows(&self, lo: [i32; 3], hi: [i32; 3], f: &mut impl FnMut(usize, usize)) {
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                let (s, e) = self.row_slots(y, z, lo[0], hi[0]);
                if s < e {
                    f(s, e);
                }
            }
        }
    }

    /// [`for_each_row`](Self::for_each_row) by a skip-scan of the cell table
    /// indices `i..end` (the box's key range); returns the steps taken.
    fn skip_scan(&self, lo: [i32; 3], hi: [i32; 3], mut i: usize, end: usize, f: &mut impl FnMut(usize, usize)) -> u64 {
        let keys = &self.cell_keys;
        let mut steps = 0;
        while i < end {
            let key = keys[i];
            let [kx, ky, kz] = unpack(key);
            // The first row of the box whose run of cells ends at or after `key`.
            let (mut y, mut z) = if kx > hi[0] { (ky + 1, kz) } else { (ky, kz) };
            if y > hi[1] {
                (y, z) = (lo[1], z + 1);
            } else if y < lo[1] {
                y = lo[1];
            }
            if z > hi[2] {
                break; // not reached: `key` is at most the box's last key
            }
            steps += 1;
            let row_lo = pack_unchecked(lo[0], y, z);
            if key < row_lo {
                i = gallop(keys, i + 1, end, row_lo);
            } else {
                let j = gallop(keys, i + 1, end, pack_unchecked(hi[0], y, z) + 1);
                f(self.cell_start(i), self.cell_start(j));
                i = j;
            }
        }
        steps
    }
}

/// Rows a box may have for [`SparseGrid::for_each_row`] to look them up one by
/// one without first counting the occupied cells of its key range.
const ROWS_FREE: u64 = 64;

/// The first index in `from..end` whose key is `>= target` (`end` if none),
/// by exponential then binary search: O(log(distance from `from`)).
#[inline]
pub(crate) fn gallop(keys: &[u64], from: usize, end: usize, target: u64) -> usize {
    gallop_by(from, end, |i| keys[i] >= target)
}

/// Shifts a table of prefix counts (each entry counts what lies before it,
/// in key order) by `changes`: pairs of the entry holding a changed key
/// and its change, in order. Entries up to and including that one keep
/// it out, every later entry moves by it; stretches where the changes so
/// far add up to zero are not touched. The dense table (points before each
/// cell) and the block table (cells before each block) after an edit.
fn shift_prefix_counts(table: &mut [u32], changes: impl IntoIterator<Item = (usize, i64)>) {
    let mut running: i64 = 0;
    let mut from = 0usize;
    for (at, change) in changes {
        // Stretches where the changes so far cancel out stay as they are.
        if running != 0 {
            for v in &mut table[from..=at] {
                *v = (i64::from(*v) + running) as u32;
            }
        }
        from = at + 1;
        running += change;
    }
    if running != 0 {
        for v in &mut table[from..] {
            *v = (i64::from(*v) + running) as u32;
        }
    }
}

/// The first index `t` in `from..end` with `past(t)` (`end` if none), for a
/// `past` that is false and then true: exponential then binary search,
/// O(log(t - from)).
#[inline]
fn gallop_by(mut from: usize, end: usize, past: impl Fn(usize) -> bool) -> usize {
    let mut step = 1;
    while from < end {
        let probe = (from + step - 1).min(end - 1);
        if past(probe) {
            // Binary search in from..probe (`probe` itself is past).
            let (mut lo, mut hi) = (from, probe);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if past(mid) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            return lo;
        }
        from = probe + 1;
        step *= 2;
    }
    end
}

/// The cell coordinates of a packed key.
#[inline(always)]
pub(crate) fn unpack(key: u64) -> [i32; 3] {
    [
        (key & AXIS_MASK) as i32 - BIAS,
        ((key >> AXIS_BITS) & AXIS_MASK) as i32 - BIAS,
        (key >> (2 * AXIS_BITS)) as i32 - BIAS,
    ]
}

type Bounds = ([i32; 3], [i32; 3]);
const EMPTY_BOUNDS: Bounds = ([i32::MAX; 3], [i32::MIN; 3]);

fn merge_bounds(a: Bounds, b: Bounds) -> Bounds {
    ([0, 1, 2].map(|i| a.0[i].min(b.0[i])), [0, 1, 2].map(|i| a.1[i].max(b.1[i])))
}

/// Cell keys of one block of points; returns the cells' bounding box, or
/// the first point that has no key.
///
/// Points go in chunks of [`LANES`]: per axis the same `(v - origin) /
/// cell_size`, range test and floor as [`cell_axis`] (so the keys are
/// identical), written as array code the compiler vectorises (the
/// divisions included).
fn encode_block<P: GridPoint>(
    origin: Vec3,
    cell_size: f32,
    first_index: usize,
    points: &[P],
    keys: &mut [u64],
) -> Result<Bounds, BatchError> {
    // Per lane and axis, the smallest and largest quotient: the floor is
    // monotonic, so their floors bound the cells (one `minps` instead of an
    // integer min, which SSE2 lacks).
    let (mut qmin, mut qmax) = ([[f32::INFINITY; LANES]; 3], [[f32::NEG_INFINITY; LANES]; 3]);
    let mut bad = [false; LANES];
    let (lo, hi) = (CELL_MIN as f32, (CELL_MAX + 1) as f32);
    let mut chunks = points.chunks_exact(LANES);
    let mut key_chunks = keys.chunks_exact_mut(LANES);
    for (ps, ks) in (&mut chunks).zip(&mut key_chunks) {
        let mut v = [[0.0f32; LANES]; 3];
        for (l, p) in ps.iter().enumerate() {
            let p = p.to_vec3();
            (v[0][l], v[1][l], v[2][l]) = (p.x, p.y, p.z);
        }
        let mut c = [[0u64; LANES]; 3];
        for a in 0..3 {
            for l in 0..LANES {
                let q = (v[a][l] - origin[a]) / cell_size;
                bad[l] |= !(q >= lo && q < hi);
                qmin[a][l] = qmin[a][l].min(q);
                qmax[a][l] = qmax[a][l].max(q);
                // Biased cell, masked so a bad lane still packs (its chunk
                // is redone one by one below).
                c[a][l] = (floor_in_range(q) + BIAS) as u32 as u64 & AXIS_MASK;
            }
        }
        for (l, k) in ks.iter_mut().enumerate() {
            *k = c[0][l] | (c[1][l] << AXIS_BITS) | (c[2][l] << (2 * AXIS_BITS));
        }
    }
    let (mut bmin, mut bmax) = EMPTY_BOUNDS;
    let any_bad = bad.iter().any(|&b| b);
    if !any_bad && points.len() >= LANES {
        for a in 0..3 {
            let q0 = qmin[a].iter().copied().fold(f32::INFINITY, f32::min);
            let q1 = qmax[a].iter().copied().fold(f32::NEG_INFINITY, f32::max);
            bmin[a] = floor_in_range(q0);
            bmax[a] = floor_in_range(q1);
        }
    }
    let done = points.len() - chunks.remainder().len();
    let rest = if any_bad { points } else { chunks.remainder() };
    let first = if any_bad { 0 } else { done };
    // The remainder one by one; after a failed chunk, every point, to name the first bad one.
    for (i, p) in rest.iter().enumerate() {
        let p = p.to_vec3();
        let cell = |v: f32, o: f32| cell_axis(v, o, cell_size);
        let coords = (|| -> Result<[i32; 3], EncodeError> {
            Ok([cell(p.x, origin.x)?, cell(p.y, origin.y)?, cell(p.z, origin.z)?])
        })()
        .map_err(|error| BatchError { index: first_index + first + i, error })?;
        for a in 0..3 {
            bmin[a] = bmin[a].min(coords[a]);
            bmax[a] = bmax[a].max(coords[a]);
        }
        keys[first + i] = pack_unchecked(coords[0], coords[1], coords[2]);
    }
    Ok((bmin, bmax))
}

/// The cells' bounding box of `points` from the smallest and largest
/// coordinate per axis (`floor((v - origin) / cell_size)` is monotonic in
/// `v`: the subtraction and the division round monotonically), when every
/// coordinate is finite and the corners are in the key range; `None`
/// otherwise (the caller then keys every point with [`encode_block`],
/// which also names the first bad one).
fn fused_bounds<P: GridPoint>(origin: Vec3, cell_size: f32, points: &[P]) -> Option<Bounds> {
    let first = Vec3A::from(points.first()?.to_vec3());
    let (mut lo, mut hi) = (first, first);
    // `v * 0` is NaN exactly when `v` is NaN or infinite (and the SIMD
    // min and max, which may drop a NaN, are then not used).
    let mut finite = Vec3A::ZERO;
    for p in points {
        let p = Vec3A::from(p.to_vec3());
        lo = lo.min(p);
        hi = hi.max(p);
        finite += p * 0.0;
    }
    if !finite.is_finite() {
        return None;
    }
    let (lo, hi) = (Vec3::from(lo), Vec3::from(hi));
    let cell = |v: Vec3| -> Option<[i32; 3]> {
        let c = |a: usize| cell_axis(v[a], origin[a], cell_size).ok();
        Some([c(0)?, c(1)?, c(2)?])
    };
    Some((cell(lo)?, cell(hi)?))
}

/// Each point's key relabelled into the box `min` + `bits` (`x | y << bx |
/// z << (bx + by)`, offsets from `min`), written to `keys`; every point's
/// cell must lie in the box (see [`fused_bounds`]). The cells are computed
/// as [`cell_axis`] does, four points at a time.
fn compact_keys<P: GridPoint>(
    origin: Vec3,
    cell_size: f32,
    min: [i32; 3],
    bits: [u32; 3],
    points: &[P],
    keys: &mut [u64],
) {
    let scale = Scale4::new(origin, cell_size);
    let compact = |x: f32, y: f32, z: f32| -> u64 {
        let (x, y, z) = (floor_in_range(x) - min[0], floor_in_range(y) - min[1], floor_in_range(z) - min[2]);
        x as u64 | ((y as u64) << bits[0]) | ((z as u64) << (bits[0] + bits[1]))
    };
    let mut chunks = points.chunks_exact(4);
    let mut out = keys.chunks_exact_mut(4);
    for (ps, ks) in (&mut chunks).zip(&mut out) {
        let [qx, qy, qz] = cell_coords4(ps, scale);
        for l in 0..4 {
            ks[l] = compact(qx[l], qy[l], qz[l]);
        }
    }
    let done = points.len() - chunks.remainder().len();
    for (i, p) in chunks.remainder().iter().enumerate() {
        let q = (p.to_vec3() - origin) / cell_size;
        keys[done + i] = compact(q.x, q.y, q.z);
    }
}

/// Each point's dense cell index in the box `min` + `span` (`dense_index`)
/// and the counts (`counts[d + 1] += 1`), in one pass; every point's cell
/// must lie in the box (see [`fused_bounds`]). The cell of each coordinate
/// is computed as [`cell_axis`] does, four points at a time.
fn count_cells<P: GridPoint>(
    origin: Vec3,
    cell_size: f32,
    min: [i32; 3],
    span: [usize; 3],
    points: &[P],
    dense_index: &mut [u32],
    counts: &mut [u32],
) {
    let volume = span[0] * span[1] * span[2];
    let index = |x: f32, y: f32, z: f32| -> usize {
        let (x, y, z) = (floor_in_range(x), floor_in_range(y), floor_in_range(z));
        (x - min[0]) as usize + span[0] * ((y - min[1]) as usize + span[1] * (z - min[2]) as usize)
    };
    let mut chunks = points.chunks_exact(4);
    let mut out = dense_index.chunks_exact_mut(4);
    if volume < 1 << 23 {
        // Everything in floats, four lanes at a time: below 2^23 every
        // value on the way (cells, offsets, products, the index) is an
        // integer that `f32` holds exactly, and adding 2^23 leaves the
        // index in the low mantissa bits.
        let scale = Scale4::new(origin, cell_size);
        let low = [0, 1, 2].map(|a| Vec4::splat(min[a] as f32));
        let (sx, sy) = (Vec4::splat(span[0] as f32), Vec4::splat(span[1] as f32));
        const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
        const LOW_BITS: f32 = 8_388_608.0; // 2^23
        let floor = |q: Vec4| -> Vec4 {
            // Round to nearest (exact below 2^22), one step down where that rounded up.
            let r = (q + Vec4::splat(MAGIC)) - Vec4::splat(MAGIC);
            r - Vec4::select(q.cmplt(r), Vec4::ONE, Vec4::ZERO)
        };
        for (ps, ds) in (&mut chunks).zip(&mut out) {
            let [qx, qy, qz] = cell_coords4(ps, scale);
            let d = (floor(qx) - low[0]) + sx * ((floor(qy) - low[1]) + sy * (floor(qz) - low[2]));
            let bits = (d + Vec4::splat(LOW_BITS)).to_array().map(|v| v.to_bits() - LOW_BITS.to_bits());
            ds.copy_from_slice(&bits);
            for b in bits {
                counts[b as usize + 1] += 1;
            }
        }
    } else {
        let scale = Scale4::new(origin, cell_size);
        for (ps, ds) in (&mut chunks).zip(&mut out) {
            let [qx, qy, qz] = cell_coords4(ps, scale);
            for l in 0..4 {
                let d = index(qx[l], qy[l], qz[l]);
                ds[l] = d as u32;
                counts[d + 1] += 1;
            }
        }
    }
    let done = points.len() - chunks.remainder().len();
    for (i, p) in chunks.remainder().iter().enumerate() {
        let q = (p.to_vec3() - origin) / cell_size;
        let d = index(q.x, q.y, q.z);
        dense_index[done + i] = d as u32;
        counts[d + 1] += 1;
    }
}

/// The origin and cell size of a grid, splatted for [`cell_coords4`].
#[derive(Clone, Copy)]
struct Scale4 {
    origin: [Vec4; 3],
    cell: Vec4,
}

impl Scale4 {
    #[inline(always)]
    fn new(origin: Vec3, cell_size: f32) -> Self {
        Scale4 { origin: [origin.x, origin.y, origin.z].map(Vec4::splat), cell: Vec4::splat(cell_size) }
    }
}

/// The cell coordinates (before flooring) of the first four points of
/// `ps`, one vector per axis: `(p - origin) / cell_size` per lane, as
/// [`cell_axis`] computes them one point at a time.
#[inline(always)]
fn cell_coords4<P: GridPoint>(ps: &[P], scale: Scale4) -> [Vec4; 3] {
    let (a, b, e, f) = (ps[0].to_vec3(), ps[1].to_vec3(), ps[2].to_vec3(), ps[3].to_vec3());
    [
        (Vec4::new(a.x, b.x, e.x, f.x) - scale.origin[0]) / scale.cell,
        (Vec4::new(a.y, b.y, e.y, f.y) - scale.origin[1]) / scale.cell,
        (Vec4::new(a.z, b.z, e.z, f.z) - scale.origin[2]) / scale.cell,
    ]
}

/// `floor(q)` for `q` in the key range (`|q| <= 2^20`), as [`cell_axis`]
/// computes it, without a saturating float-to-int conversion: adding
/// `1.5 * 2^23` rounds `q` to the nearest integer, which sits in the low
/// bits of the sum; one step down when that rounded up. Vectorises with
/// SSE2. Outside the range the result is meaningless (callers check).
#[inline(always)]
pub(crate) fn floor_in_range(q: f32) -> i32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    let n = (q + MAGIC).to_bits() as i32 - MAGIC.to_bits() as i32;
    n - i32::from(n as f32 > q)
}

/// The LSD passes of a radix sort whose digit counts `counts` (one run of
/// `buckets` per pass) were taken beforehand; `digit(item, shift)` is the
/// digit at bit `shift`. A pass whose digits are all equal is skipped.
/// `scratch` must hold as many items as `items`.
fn radix_passes<T: Copy>(
    items: &mut Vec<T>,
    scratch: &mut Vec<T>,
    counts: &mut [u32],
    buckets: usize,
    digit: impl Fn(&T, u32) -> usize,
) {
    let n = items.len();
    let width = buckets.trailing_zeros();
    for (pass, hist) in counts.chunks_exact_mut(buckets).enumerate() {
        if hist.iter().any(|&c| c as usize == n) {
            continue; // every item has the same digit: this pass would not move anything
        }
        let mut sum = 0u32;
        for c in hist.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        let shift = pass as u32 * width;
        for item in items.iter() {
            let slot = &mut hist[digit(item, shift)];
            scratch[*slot as usize] = *item;
            *slot += 1;
        }
        std::mem::swap(items, scratch);
    }
}

/// Calls `on_start(i, key(&items[i]))` for each `i` whose key differs from
/// the previous item's (the first item included), in order. Per 64 items a
/// mask of the run starts is made with compares only, then one call per
/// set bit: no branch per item to mispredict when keys change every item or
/// two, and no work per item beyond the compare when runs are long.
#[inline(always)]
fn for_each_run_start<T>(items: &[T], key: impl Fn(&T) -> u64, mut on_start: impl FnMut(usize, u64)) {
    let mut previous = None;
    for (block, chunk) in items.chunks(64).enumerate() {
        let mut starts = 0u64;
        for (j, item) in chunk.iter().enumerate() {
            let c = Some(key(item));
            starts |= u64::from(c != previous) << j;
            previous = c;
        }
        while starts != 0 {
            let j = starts.trailing_zeros() as usize;
            starts &= starts - 1;
            if let Some(item) = chunk.get(j) {
                on_start(block * 64 + j, key(item));
            }
        }
    }
}

/// Ids and coordinates of the sorted slots `order` (one block).
///
/// Four points a step, written with one 16-byte store per array (a store
/// a point and array took 3-5 % more of a uniform build).
fn gather<P: GridPoint, I: Copy>(
    out_i: &mut [I],
    [xs, ys, zs]: [&mut [f32]; 3],
    order: &[u32],
    positions: &[P],
    ids: &[I],
) {
    let n = order.len();
    let (out_i, xs, ys, zs) = (&mut out_i[..n], &mut xs[..n], &mut ys[..n], &mut zs[..n]);
    let mut steps = order.chunks_exact(4);
    let outputs =
        out_i.chunks_exact_mut(4).zip(xs.chunks_exact_mut(4)).zip(ys.chunks_exact_mut(4).zip(zs.chunks_exact_mut(4)));
    for (o, ((is, x), (y, z))) in (&mut steps).zip(outputs) {
        let ps = [0, 1, 2, 3].map(|l| positions[o[l] as usize].to_vec3());
        is.copy_from_slice(&[0, 1, 2, 3].map(|l| ids[o[l] as usize]));
        x.copy_from_slice(&ps.map(|v| v.x));
        y.copy_from_slice(&ps.map(|v| v.y));
        z.copy_from_slice(&ps.map(|v| v.z));
    }
    for k in n - steps.remainder().len()..n {
        let o = order[k] as usize;
        let v = positions[o].to_vec3();
        out_i[k] = ids[o];
        (xs[k], ys[k], zs[k]) = (v.x, v.y, v.z);
    }
}

/// Moves the runs `(from, end, to)` of `data` (old entries `from..end` to
/// `to..`) in place. The runs come in order and keep it, without
/// overlapping at their destinations (the kept entries of an edit): the
/// runs moving down go first, in order, then those moving up, in reverse
/// order, so no run is overwritten before it has moved. A run already in
/// place costs nothing.
fn move_runs<T: Copy>(data: &mut [T], runs: impl DoubleEndedIterator<Item = (usize, usize, usize)> + Clone) {
    for (from, end, to) in runs.clone() {
        if to < from {
            data.copy_within(from..end, to);
        }
    }
    for (from, end, to) in runs.rev() {
        if to > from {
            data.copy_within(from..end, to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lcg_unit;
    use proptest::prelude::*;

    proptest! {
        /// The vectorised floor is the floor `cell_axis` takes, over the key range.
        #[test]
        fn fast_floor_matches_cell_axis(q in crate::uniform_f32(-1_048_576.0, 1_048_575.9)) {
            prop_assert_eq!(floor_in_range(q), cell_axis(q, 0.0, 1.0).unwrap());
        }
    }

    /// Every row range of the block table (through its pages when it has
    /// them) equals the binary search's, on sparse and clustered points with
    /// blocks of one cell and of many, after a build and after edits that
    /// add, empty and move cells.
    fn check_blocks(grid: &SparseGrid<Vec3>, probes: u64) {
        assert!(grid.has_blocks());
        let mut seed = 7u64;
        let mut next = |n: i32| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) % n as u64) as i32
        };
        for _ in 0..probes {
            let span = [0, 1, 2].map(|a| grid.max[a] - grid.min[a] + 1);
            let y = grid.min[1] + next(span[1]);
            let z = grid.min[2] + next(span[2]);
            let x0 = grid.min[0] + next(span[0]);
            let x1 = x0 + next(grid.max[0] - x0 + 1).min(next(6));
            let empty = |r: (usize, usize)| if r.0 == r.1 { (0, 0) } else { r };
            let want = empty(grid.row_slots_search(y, z, x0, x1));
            assert_eq!(empty(grid.block_slots(y, z, x0, x1)), want, "row ({y}, {z}) cells {x0}..={x1}");
        }
        // Every occupied cell, as a row of one cell.
        for cell in grid.cells() {
            let [x, y, z] = unpack(cell.key.raw());
            let start = cell.start as usize;
            assert_eq!(grid.block_slots(y, z, x, x), (start, start + cell.count as usize));
        }
    }

    /// [`check_blocks`] without pages (as after a build or edit), then with
    /// them where `paged` (as after a batch query), else still without.
    fn check_pages(grid: &SparseGrid<Vec3>, paged: bool) {
        assert_eq!(grid.stats().page_entries, 0, "{:?}", grid.stats());
        check_blocks(grid, 20_000);
        grid.ensure_pages();
        assert_eq!(grid.stats().page_entries > 0, paged, "{:?}", grid.stats());
        check_blocks(grid, 20_000);
    }

    /// An edit where points leave and join cells that stay occupied (every
    /// other cell of two points or more loses its first point, every third
    /// gains a copy of it): the cell table stays, the slots move.
    fn move_within_cells(grid: &mut SparseGrid<Vec3>) {
        let full: Vec<u32> = grid.cells().iter().filter(|c| c.count >= 2).map(|c| c.start).collect();
        let mut removed: Vec<u32> = full.iter().step_by(2).take(500).copied().collect();
        let mut inserted: Vec<(CellKey, u32, Vec3)> = full
            .iter()
            .skip(1)
            .step_by(3)
            .take(400)
            .enumerate()
            .map(|(i, &s)| {
                let p = grid.positions().get(s as usize).unwrap();
                (grid.cell_key_of(p).unwrap(), 2_000_000 + i as u32, p)
            })
            .collect();
        let cells = grid.cells().len();
        grid.apply_edits(&mut removed, &mut inserted).unwrap();
        assert_eq!(grid.cells().len(), cells);
    }

    #[test]
    fn edits_inside_the_box_shift_the_block_table() {
        let mut unit = lcg_unit(7);
        // About one point a cell: every edit adds and empties cells.
        let points: Vec<Vec3> = (0..20_000).map(|_| Vec3::new(unit(), unit(), unit()) * 1000.0).collect();
        let ids: Vec<u32> = (0..points.len() as u32).collect();
        let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 5.0).unwrap();
        grid.rebuild(&ids, &points).unwrap();
        assert!(grid.has_blocks() && !grid.ranked(), "{:?}", grid.stats());
        for round in 0..4u32 {
            let (shift, cols, cells) = (grid.block_shift, grid.block_cols, grid.cells().len());
            let mut removed: Vec<u32> = (round..grid.len() as u32).step_by(7).collect();
            let mut inserted: Vec<(CellKey, u32, Vec3)> = (0..1500u32)
                .map(|i| {
                    let p = Vec3::new(unit(), unit(), unit()) * 980.0 + 10.0;
                    (grid.cell_key_of(p).unwrap(), 1_000_000 + 2000 * round + i, p)
                })
                .collect();
            grid.apply_edits(&mut removed, &mut inserted).unwrap();
            // The box and the geometry stayed, so the entries were shifted:
            // they are what a fresh fill writes, and every row is found.
            assert_ne!(grid.cells().len(), cells);
            assert_eq!((grid.block_shift, grid.block_cols, grid.lookup_kind()), (shift, cols, LookupKind::Hashed));
            let shifted = grid.blocks.clone();
            grid.fill_blocks();
            assert_eq!(grid.blocks, shifted, "round {round}");
            check_pages(&grid, false);
        }
    }

    #[test]
    fn edits_update_the_rows_of_the_hash_in_place() {
        let mut unit = lcg_unit(13);
        // Rows far too many for a block table: every edit adds and empties
        // cells and rows.
        let far = |unit: &mut dyn FnMut() -> f32| Vec3::new(unit() * 50.0, unit() * 1e5, unit() * 1e5);
        let mut points: Vec<Vec3> = (0..20_000).map(|_| far(&mut unit)).collect();
        let mut ids: Vec<u32> = (0..points.len() as u32).collect();
        let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 5.0).unwrap();
        grid.rebuild(&ids, &points).unwrap();
        assert!(grid.lookup_kind() == LookupKind::Hashed && !grid.has_blocks(), "{:?}", grid.stats());
        let mut next = 1_000_000u32;
        for round in 0..30u32 {
            // A few points move by up to a cell along each axis, a few
            // leave and a few join; a tenth of the rounds move many.
            let moves = if round % 10 == 9 { 3000 } else { 1 + round as usize % 7 };
            let mut removed = Vec::new();
            let mut inserted = Vec::new();
            let mut picked = std::collections::HashSet::new();
            for k in 0..moves {
                let i = (unit() * points.len() as f32) as usize % points.len();
                if !picked.insert(i) {
                    continue;
                }
                let slot = grid.ids().iter().position(|&id| id == ids[i]).unwrap() as u32;
                removed.push(slot);
                if k % 5 == 4 {
                    // Leaves; another point joins elsewhere.
                    points[i] = far(&mut unit);
                    ids[i] = next;
                    next += 1;
                } else {
                    points[i] += (Vec3::new(unit(), unit(), unit()) - 0.5) * 10.0;
                }
                inserted.push((grid.cell_key_of(points[i]).unwrap(), ids[i], points[i]));
            }
            grid.apply_edits(&mut removed, &mut inserted).unwrap();
            assert!(grid.lookup_kind() == LookupKind::Hashed && !grid.has_blocks(), "round {round}");
            // Every row of the cell table is in the hash with its exact
            // range, and nothing else is.
            let keys = &grid.cell_keys;
            let mut rows = 0;
            let mut i = 0;
            while i < keys.len() {
                let row = keys[i] >> AXIS_BITS;
                let end = i + keys[i..].partition_point(|&k| k >> AXIS_BITS == row);
                assert_eq!(grid.hash.find(row), Some((i as u32, end as u32)), "round {round}, row {row:#x}");
                rows += 1;
                i = end;
            }
            assert_eq!(grid.hash.len(), rows, "round {round}");
        }
    }

    #[test]
    fn block_table_rows_match_the_search() {
        let mut unit = lcg_unit(1);
        // Sparse uniform (narrow blocks), a dense run along x in a sparse
        // box (long runs past the window), and a huge flat box (wide blocks).
        let mut sets: Vec<Vec<Vec3>> = Vec::new();
        sets.push((0..20_000).map(|_| Vec3::new(unit(), unit(), unit()) * 1000.0).collect());
        let mut run: Vec<Vec3> = (0..3000).map(|i| Vec3::new(i as f32 * 0.5, 7.0, 9.0)).collect();
        run.extend((0..3000).map(|_| Vec3::new(unit(), unit(), unit()) * 1000.0));
        sets.push(run);
        sets.push((0..5000).map(|_| Vec3::new(unit() * 400_000.0, unit() * 300.0, unit() * 300.0)).collect());
        // Two dense clumps far apart along x (pages of wide blocks), and one
        // clump beside a few far points along x (pages of narrow blocks, the
        // rows' last block cut short by the box's end).
        sets.push(
            (0..20_000)
                .map(|i| Vec3::new(unit() * 80.0 + (i % 2) as f32 * 50_000.0, unit() * 80.0, unit() * 80.0))
                .collect(),
        );
        let mut clump: Vec<Vec3> = (0..20_000).map(|_| Vec3::new(unit(), unit(), unit()) * 80.0).collect();
        clump.extend((0..6).map(|i| Vec3::new(3000.0 + i as f32 * 677.0, unit() * 80.0, unit() * 80.0)));
        sets.push(clump);
        // Eight clumps on the diagonal, 4000 apart on every axis: millions
        // of rows, and ranked coordinates whose dense table is too large
        // (128^3) but whose 128^2 rows fit a block table.
        sets.push(
            (0..32_000)
                .map(|i| Vec3::new(unit(), unit(), unit()) * 80.0 + Vec3::splat((i % 8) as f32 * 4000.0))
                .collect(),
        );
        for (n, points) in sets.into_iter().enumerate() {
            let ids: Vec<u32> = (0..points.len() as u32).collect();
            let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 5.0).unwrap();
            grid.rebuild(&ids, &points).unwrap();
            assert_eq!(grid.lookup_kind(), LookupKind::Hashed);
            assert_eq!(grid.stats().blocks_compacted, n == 5, "{:?}", grid.stats());
            check_pages(&grid, n >= 3);
            // Remove every third point, insert new ones (some in new
            // cells, some outside the old box).
            let mut removed: Vec<u32> = (0..grid.len() as u32).step_by(3).collect();
            let mut inserted: Vec<(CellKey, u32, Vec3)> = (0..2000u32)
                .map(|i| {
                    // Clumps get new points beside old ones (some in new
                    // cells, some past the box's edge), keeping their pages.
                    let p = if n >= 3 {
                        let near = grid.positions().get((i as usize * 7919) % grid.len()).unwrap();
                        near + (Vec3::new(unit(), unit(), unit()) - 0.5) * 12.0
                    } else {
                        Vec3::new(unit(), unit(), unit()) * 1040.0 - 20.0
                    };
                    (grid.cell_key_of(p).unwrap(), 1_000_000 + i, p)
                })
                .collect();
            grid.apply_edits(&mut removed, &mut inserted).unwrap();
            check_pages(&grid, n >= 3);
            // Points leave and join cells that stay occupied: the cell table
            // and the blocks stay, the slots move.
            move_within_cells(&mut grid);
            check_pages(&grid, n >= 3);
        }
    }

    /// Every row range, box walk and cell range of a grid with the dense
    /// table equals the binary search's: rows at coordinates no cell has
    /// (compacted tables have no row for them), boxes of few and of many
    /// rows (a compacted box has fewer than its cells' extent), and the
    /// rows after a cell's own.
    fn check_dense(grid: &SparseGrid<Vec3>, probes: u64) {
        assert_eq!(grid.lookup_kind(), LookupKind::Dense);
        let mut seed = 11u64;
        let mut next = |n: i32| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) % n.max(1) as u64) as i32
        };
        let empty = |r: (usize, usize)| if r.0 == r.1 { (0, 0) } else { r };
        let span = [0, 1, 2].map(|a| grid.max[a] - grid.min[a] + 1);
        for _ in 0..probes {
            let y = grid.min[1] + next(span[1]);
            let z = grid.min[2] + next(span[2]);
            let x0 = grid.min[0] + next(span[0]);
            let x1 = x0 + next(grid.max[0] - x0 + 1).min(next(6));
            let want = empty(grid.row_slots_search(y, z, x0, x1));
            assert_eq!(empty(grid.row_slots(y, z, x0, x1)), want, "row ({y}, {z}) cells {x0}..={x1}");
        }
        // Boxes around random occupied cells: a few rows, and the whole
        // extent along y or z (many rows, most of them empty).
        let searched = |lo: [i32; 3], hi: [i32; 3]| {
            let mut rows = Vec::new();
            for z in lo[2]..=hi[2] {
                for y in lo[1]..=hi[1] {
                    let (s, e) = grid.row_slots_search(y, z, lo[0], hi[0]);
                    if s < e {
                        rows.push((s, e));
                    }
                }
            }
            rows
        };
        for i in 0..120 {
            let cell = grid.cells()[next(grid.cells().len() as i32) as usize];
            let own = unpack(cell.key.raw());
            let reach = [1 + next(3), 1 + next(3), 1 + next(3)];
            let mut lo = [0, 1, 2].map(|a| (own[a] - reach[a]).max(grid.min[a]));
            let mut hi = [0, 1, 2].map(|a| (own[a] + reach[a]).min(grid.max[a]));
            if i % 20 == 0 {
                let a = 1 + i / 20 % 2;
                (lo[a], hi[a]) = (grid.min[a], grid.max[a]);
            }
            let mut walked = Vec::new();
            grid.walk_rows(lo, hi, |s, e| walked.push((s, e)));
            assert_eq!(walked, searched(lo, hi), "box {lo:?}..={hi:?}");
            // The rows after `own`'s: the rest of its layer, then above.
            let mut after = Vec::new();
            grid.walk_rows_after(lo, hi, [own[1], own[2]], |s, e| after.push((s, e)));
            let mut want = searched([lo[0], own[1] + 1, own[2]], [hi[0], hi[1], own[2]]);
            if own[2] < hi[2] {
                want.extend(searched([lo[0], lo[1], own[2] + 1], hi));
            }
            assert_eq!(after, want, "box {lo:?}..={hi:?} after {own:?}");
        }
        // Every occupied cell, and cells beside them that may be empty.
        for cell in grid.cells() {
            let start = cell.start as usize;
            assert_eq!(grid.cell_slots(cell.key), start..start + cell.count as usize);
            let [x, y, z] = unpack(cell.key.raw());
            for (dx, dy, dz) in [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, -3, 2)] {
                let key = CellKey::from_raw_unchecked(pack_unchecked(x + dx, y + dy, z + dz));
                let want = match grid.cells().binary_search_by_key(&key.raw(), |c| c.key.raw()) {
                    Ok(i) => grid.cells()[i].start as usize..(grid.cells()[i].start + grid.cells()[i].count) as usize,
                    Err(_) => 0..0,
                };
                let got = grid.cell_slots(key);
                assert_eq!(if got.is_empty() { 0..0 } else { got }, want, "cell {key:?}");
            }
        }
    }

    #[test]
    fn compacted_dense_rows_match_the_search() {
        let mut unit = lcg_unit(3);
        // Clumps far apart along z, along y, along both, and one clump
        // with a few far points along z: too many rows for the block table,
        // few occupied coordinates per axis.
        let mut sets: Vec<Vec<Vec3>> = Vec::new();
        for offset in
            [Vec3::new(0.0, 0.0, 300_000.0), Vec3::new(0.0, 300_000.0, 0.0), Vec3::new(0.0, 150_000.0, -150_000.0)]
        {
            sets.push(
                (0..6000).map(|i| Vec3::new(unit(), unit(), unit()) * 60.0 + offset * (i % 3) as f32 / 2.0).collect(),
            );
        }
        let mut clump: Vec<Vec3> = (0..6000).map(|_| Vec3::new(unit(), unit(), unit()) * 60.0).collect();
        clump.extend((0..5).map(|i| Vec3::new(unit() * 60.0, unit() * 60.0, 5000.0 + i as f32 * 40_000.0)));
        sets.push(clump);
        for points in sets {
            let ids: Vec<u32> = (0..points.len() as u32).collect();
            let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 5.0).unwrap();
            grid.rebuild(&ids, &points).unwrap();
            assert!(grid.stats().dense_compacted, "{:?}", grid.stats());
            check_dense(&grid, 20_000);
            // Remove every third point; insert points beside old ones (new
            // cells, some past the box's edge) and a few in the empty
            // stretches (coordinates no cell had).
            let mut removed: Vec<u32> = (0..grid.len() as u32).step_by(3).collect();
            let (lo, hi) = (Vec3::from_array(grid.min.map(|v| v as f32)), Vec3::from_array(grid.max.map(|v| v as f32)));
            let mut inserted: Vec<(CellKey, u32, Vec3)> = (0..2000u32)
                .map(|i| {
                    let p = if i % 100 == 0 {
                        (lo + (hi - lo) * Vec3::new(unit(), unit(), unit())) * 5.0
                    } else {
                        let near = grid.positions().get((i as usize * 7919) % grid.len()).unwrap();
                        near + (Vec3::new(unit(), unit(), unit()) - 0.5) * 12.0
                    };
                    (grid.cell_key_of(p).unwrap(), 1_000_000 + i, p)
                })
                .collect();
            grid.apply_edits(&mut removed, &mut inserted).unwrap();
            assert_eq!(grid.stats().build, BuildKind::Edit);
            assert!(grid.stats().dense_compacted, "{:?}", grid.stats());
            check_dense(&grid, 20_000);
            // Points leave and join cells that stay occupied: the table is
            // shifted in place, its coordinates kept.
            let compacted = grid.stats().dense_compacted;
            move_within_cells(&mut grid);
            assert!(compacted && grid.stats().dense_compacted);
            check_dense(&grid, 20_000);
            // Points go to empty cells whose coordinates other cells have:
            // the table keeps its rows and columns and is shifted in place.
            let keys: Vec<[i32; 3]> = grid.cells().iter().map(|c| unpack(c.key.raw())).collect();
            let mut inserted: Vec<(CellKey, u32, Vec3)> = (0..200usize)
                .map(|i| {
                    let (a, b, c) = (keys[i * 31 % keys.len()], keys[i * 57 % keys.len()], keys[i * 89 % keys.len()]);
                    let p = Vec3::new(a[0] as f32, b[1] as f32, c[2] as f32) * 5.0 + 2.5;
                    (grid.cell_key_of(p).unwrap(), 4_000_000 + i as u32, p)
                })
                .collect();
            let (cells, entries) = (grid.cells().len(), grid.stats().dense_entries);
            grid.apply_edits(&mut [], &mut inserted).unwrap();
            assert!(grid.cells().len() > cells);
            assert!(grid.stats().dense_compacted && grid.stats().dense_entries == entries, "{:?}", grid.stats());
            check_dense(&grid, 20_000);
            // Points join the empty stretches inside the box (coordinates
            // the table has no row or column for, the box unchanged).
            let (lo, hi) = (grid.min, grid.max);
            let mut inserted: Vec<(CellKey, u32, Vec3)> = (0..20u32)
                .map(|i| {
                    let t = Vec3::new(unit(), unit(), unit());
                    let c = Vec3::from_array([0, 1, 2].map(|a| lo[a] as f32 + (hi[a] - lo[a]) as f32 * t[a]));
                    let p = c * 5.0 + 2.5;
                    (grid.cell_key_of(p).unwrap(), 3_000_000 + i, p)
                })
                .collect();
            let entries = grid.stats().dense_entries;
            grid.apply_edits(&mut [], &mut inserted).unwrap();
            assert_eq!((grid.min, grid.max), (lo, hi));
            assert!(grid.stats().dense_compacted && grid.stats().dense_entries > entries, "{:?}", grid.stats());
            check_dense(&grid, 20_000);
        }
        // A dense box needs no compaction.
        let points: Vec<Vec3> = (0..5000).map(|_| Vec3::new(unit(), unit(), unit()) * 100.0).collect();
        let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 5.0).unwrap();
        grid.rebuild(&(0..5000).collect::<Vec<u32>>(), &points).unwrap();
        assert!(!grid.stats().dense_compacted);
        check_dense(&grid, 5_000);
    }

    #[test]
    fn fast_floor_at_integers_halves_and_edges() {
        for q in [-1_048_576.0f32, -2.5, -1.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 1.5, 2.5, 1_048_575.5, 1_048_575.9] {
            assert_eq!(floor_in_range(q), cell_axis(q, 0.0, 1.0).unwrap(), "{q}");
        }
    }

    /// Two clumps 2000 cells apart on every axis (a dense table over ranks)
    /// and points at `starts` that move, 40 edits of one cell each (`step`
    /// per edit, each at coordinates no other cell has): how many of the
    /// edits ranked the axes again. The grid stays compacted and answers
    /// as the dense table must.
    fn rankings_of_points_crossing(seed: u64, starts: &[Vec3], step: &[Vec3]) -> usize {
        let mut unit = lcg_unit(seed);
        let mut points: Vec<Vec3> = (0..4000)
            .map(|i| Vec3::new(unit(), unit(), unit()) * 60.0 + Vec3::splat((i % 2) as f32 * 10_000.0))
            .collect();
        points.extend(starts);
        let ids: Vec<u32> = (0..points.len() as u32).collect();
        let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 5.0).unwrap();
        grid.rebuild(&ids, &points).unwrap();
        assert!(grid.stats().dense_compacted, "{:?}", grid.stats());
        let mut ranked_again = 0;
        for n in 1..=40 {
            let movers = 4000..4000 + starts.len() as u32;
            let mut removed: Vec<u32> =
                movers.clone().map(|id| grid.ids().iter().position(|&v| v == id).unwrap() as u32).collect();
            let mut inserted: Vec<(CellKey, u32, Vec3)> = movers
                .zip(starts.iter().zip(step))
                .map(|(id, (&from, &by))| {
                    let to = from + by * n as f32;
                    (grid.cell_key_of(to).unwrap(), id, to)
                })
                .collect();
            let ranks = grid.ranks.clone();
            grid.apply_edits(&mut removed, &mut inserted).unwrap();
            assert!(grid.stats().dense_compacted, "edit {n}: {:?}", grid.stats());
            ranked_again += usize::from(grid.ranks != ranks);
        }
        check_dense(&grid, 20_000);
        ranked_again
    }

    #[test]
    fn a_point_crossing_the_stretch_between_clumps_finds_ranks_made_ahead() {
        // One point leaves the first clump along x. Ranks for four
        // coordinates past each new one: ranked again every fifth step, not
        // every step.
        let ranked_again = rankings_of_points_crossing(5, &[Vec3::new(100.0, 30.0, 30.0)], &[Vec3::X * 5.0]);
        assert!(ranked_again <= 8, "{ranked_again}");
    }

    #[test]
    fn points_crossing_the_stretches_apart_keep_each_others_ranks() {
        // Two points at once: one along x from the first clump, one along
        // the diagonal from the second (its axes need new ranks at
        // different steps). Ranking again for one keeps the ranks made
        // ahead of the other: each every fifth step at most (40 without the
        // kept ranks).
        let starts = [Vec3::new(100.0, 30.0, 30.0), Vec3::new(9_900.0, 9_903.0, 9_906.0)];
        let ranked_again = rankings_of_points_crossing(7, &starts, &[Vec3::X * 5.0, -Vec3::ONE * 5.0]);
        assert!(ranked_again <= 16, "{ranked_again}");
    }
}
