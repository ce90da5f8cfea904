//! The compact sparse grid: points sorted by cell key with an LSD radix sort,
//! and a cell table of `(key, start, count)`.
//!
//! Build from plain slices with [`SparseGrid::rebuild`] (or
//! [`SparseGrid::par_rebuild`]). All buffers belong to the grid and are
//! reused, so a steady-state rebuild over the same number of points allocates
//! nothing. Queries live in [`query`](crate::query).

use glam::Vec3;
use rayon::prelude::*;

use crate::cell::{AXIS_BITS, AXIS_MASK, BIAS, CellKey, cell_axis, pack_unchecked};
use crate::error::{BatchError, EncodeError, GridError};
use crate::point::{EntityId, GridPoint};
use crate::radix::radix_sort_by_key;

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

/// How queries find the points of a row of cells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CellLookup {
    /// A dense offset table over the occupied cells' bounding box when it has
    /// at most `16 * points + 65536` cells (O(1) per row of cells), otherwise
    /// binary search over the sorted cell table.
    #[default]
    Auto,
    /// Always binary search over the sorted cell table (least memory; cost
    /// independent of how spread out the points are).
    BinarySearch,
}

/// The dense table is used while the bounding box has at most
/// `DENSE_CELLS_PER_POINT * points + DENSE_CELLS_MIN` cells (4 bytes each).
const DENSE_CELLS_PER_POINT: usize = 16;
const DENSE_CELLS_MIN: usize = 1 << 16;

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
    // Sorted by cell key.
    pub(crate) positions: Vec<P>,
    pub(crate) ids: Vec<I>,
    order: Vec<u32>,
    cells: Vec<Cell>,
    cell_keys: Vec<u64>,
    // Bounding box of the occupied cells (valid when not empty).
    pub(crate) min: [i32; 3],
    pub(crate) max: [i32; 3],
    span: [usize; 3],
    // Dense lookup: `dense[i]..dense[i + 1]` are the points of dense cell `i`.
    dense: Vec<u32>,
    use_dense: bool,
    // Scratch, reused across rebuilds.
    point_keys: Vec<u64>,
    narrow: Vec<u64>,
    narrow_scratch: Vec<u64>,
    wide: Vec<(u64, u32)>,
    wide_scratch: Vec<(u64, u32)>,
    counts: Vec<u32>,
    // Back buffers of incremental edits ([`SparseGrid::apply_edits`]).
    positions_back: Vec<P>,
    ids_back: Vec<I>,
    cells_back: Vec<Cell>,
    cell_keys_back: Vec<u64>,
    edit_ops: Vec<EditOp>,
    edit_removed_cells: Vec<u32>,
    edit_inserted_cells: Vec<u32>,
    edit_changes: Vec<(u64, i64)>,
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
    /// radius is a good start.
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
            positions: Vec::new(),
            ids: Vec::new(),
            order: Vec::new(),
            cells: Vec::new(),
            cell_keys: Vec::new(),
            min: [0; 3],
            max: [0; 3],
            span: [0; 3],
            dense: Vec::new(),
            use_dense: false,
            point_keys: Vec::new(),
            narrow: Vec::new(),
            narrow_scratch: Vec::new(),
            wide: Vec::new(),
            wide_scratch: Vec::new(),
            counts: Vec::new(),
            positions_back: Vec::new(),
            ids_back: Vec::new(),
            cells_back: Vec::new(),
            cell_keys_back: Vec::new(),
            edit_ops: Vec::new(),
            edit_removed_cells: Vec::new(),
            edit_inserted_cells: Vec::new(),
            edit_changes: Vec::new(),
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
        self.positions.len()
    }

    /// Whether the grid holds no points.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Positions in cell-key order.
    pub fn positions(&self) -> &[P] {
        &self.positions
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
    pub fn cell_points(&self, key: CellKey) -> Option<(&[I], &[P])> {
        let i = self.cell_keys.binary_search(&key.raw()).ok()?;
        let c = self.cells[i];
        let range = c.start as usize..(c.start + c.count) as usize;
        Some((&self.ids[range.clone()], &self.positions[range]))
    }

    /// Whether the last rebuild chose the dense lookup table.
    pub fn uses_dense_lookup(&self) -> bool {
        self.use_dense
    }

    /// Rebuilds the grid from parallel id and position slices.
    ///
    /// Cell keys are `floor((p - origin) / cell_size)` per axis; keys are
    /// relabelled to the smallest bit width that covers the occupied cells'
    /// bounding box (order preserved) and sorted by [`radix_sort_by_key`].
    ///
    /// # Errors
    /// [`GridError::LengthMismatch`], [`GridError::TooManyPoints`], or
    /// [`GridError::InvalidPoint`] for the first position that is NaN,
    /// infinite or out of key range. On error the grid is left empty.
    pub fn rebuild(&mut self, ids: &[I], positions: &[P]) -> Result<(), GridError> {
        self.rebuild_impl(ids, positions, false)
    }

    /// [`rebuild`](Self::rebuild) with key computation and the final gather
    /// run in parallel on rayon (the radix sort itself is sequential).
    /// The result is identical to `rebuild`.
    ///
    /// # Errors
    /// As [`rebuild`](Self::rebuild).
    pub fn par_rebuild(&mut self, ids: &[I], positions: &[P]) -> Result<(), GridError> {
        self.rebuild_impl(ids, positions, true)
    }

    /// Empties the grid, keeping its buffers.
    pub fn clear(&mut self) {
        self.positions.clear();
        self.ids.clear();
        self.order.clear();
        self.cells.clear();
        self.cell_keys.clear();
        self.dense.clear();
        self.use_dense = false;
    }

    /// Total bytes reserved by the grid's buffers (a steady-state rebuild
    /// keeps this constant).
    pub fn reserved_bytes(&self) -> usize {
        use std::mem::size_of;
        self.positions.capacity() * size_of::<P>()
            + self.ids.capacity() * size_of::<I>()
            + self.order.capacity() * 4
            + self.cells.capacity() * size_of::<Cell>()
            + self.cell_keys.capacity() * 8
            + self.dense.capacity() * 4
            + self.point_keys.capacity() * 8
            + (self.narrow.capacity() + self.narrow_scratch.capacity()) * 8
            + (self.wide.capacity() + self.wide_scratch.capacity()) * size_of::<(u64, u32)>()
            + self.counts.capacity() * 4
            + self.positions_back.capacity() * size_of::<P>()
            + self.ids_back.capacity() * size_of::<I>()
            + self.cells_back.capacity() * size_of::<Cell>()
            + self.cell_keys_back.capacity() * 8
            + self.edit_ops.capacity() * size_of::<EditOp>()
            + (self.edit_removed_cells.capacity() + self.edit_inserted_cells.capacity()) * 4
            + self.edit_changes.capacity() * 16
    }

    fn rebuild_impl(&mut self, ids: &[I], positions: &[P], parallel: bool) -> Result<(), GridError> {
        self.clear();
        if ids.len() != positions.len() {
            return Err(GridError::LengthMismatch { ids: ids.len(), positions: positions.len() });
        }
        let n = positions.len();
        if n > u32::MAX as usize {
            return Err(GridError::TooManyPoints);
        }
        if n == 0 {
            return Ok(());
        }

        // 1. Cell key of every point, and the bounding box of the cells.
        let (origin, cell_size) = (self.origin, self.cell_size);
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
        let (min, max) = match bounds {
            Ok(b) => b,
            Err(e) => {
                self.point_keys.clear();
                return Err(GridError::InvalidPoint(e));
            }
        };
        self.min = min;
        self.max = max;
        let span = [0, 1, 2].map(|a| (max[a] - min[a]) as usize + 1);
        self.span = span;

        // 2. Order-preserving relabel into `bx + by + bz` bits, then radix sort.
        let bits = span.map(|s| usize::BITS - (s - 1).leading_zeros());
        let total_bits = bits[0] + bits[1] + bits[2];
        let compact = |key: u64| -> u64 {
            let x = ((key & AXIS_MASK) as i64 - (min[0] + BIAS) as i64) as u64;
            let y = (((key >> AXIS_BITS) & AXIS_MASK) as i64 - (min[1] + BIAS) as i64) as u64;
            let z = ((key >> (2 * AXIS_BITS)) as i64 - (min[2] + BIAS) as i64) as u64;
            x | (y << bits[0]) | (z << (bits[0] + bits[1]))
        };
        let expand = |c: u64| -> u64 {
            let x = (c & ((1 << bits[0]) - 1)) as i32 + min[0];
            let y = ((c >> bits[0]) & ((1 << bits[1]) - 1)) as i32 + min[1];
            let z = (c >> (bits[0] + bits[1])) as i32 + min[2];
            pack_unchecked(x, y, z)
        };
        // The cell table comes from runs of equal keys in the sorted items
        // (read in order, instead of looking keys up through `order`).
        let cells = &mut self.cells;
        let cell_keys = &mut self.cell_keys;
        let mut previous = u64::MAX;
        let mut on_sorted = |slot: usize, c: u64| {
            if c != previous {
                let key = expand(c);
                cells.push(Cell { key: CellKey::from_raw_unchecked(key), start: slot as u32, count: 0 });
                cell_keys.push(key);
                previous = c;
            }
        };
        self.order.reserve(n);
        if total_bits <= 32 {
            self.narrow.clear();
            self.narrow.extend(self.point_keys.iter().enumerate().map(|(i, &k)| (compact(k) << 32) | i as u64));
            radix_sort_by_key(&mut self.narrow, &mut self.narrow_scratch, &mut self.counts, total_bits, |&v| v >> 32);
            for (slot, &v) in self.narrow.iter().enumerate() {
                on_sorted(slot, v >> 32);
                self.order.push(v as u32);
            }
        } else {
            self.wide.clear();
            self.wide.extend(self.point_keys.iter().enumerate().map(|(i, &k)| (compact(k), i as u32)));
            radix_sort_by_key(&mut self.wide, &mut self.wide_scratch, &mut self.counts, total_bits, |&(k, _)| k);
            for (slot, &(c, i)) in self.wide.iter().enumerate() {
                on_sorted(slot, c);
                self.order.push(i);
            }
        }
        let cell_count = self.cells.len();
        for c in 0..cell_count {
            let end = if c + 1 < cell_count { self.cells[c + 1].start } else { n as u32 };
            self.cells[c].count = end - self.cells[c].start;
        }

        // 3. Gather positions and ids into key order.
        self.positions.resize(n, positions[0]);
        self.ids.resize(n, ids[0]);
        if parallel {
            let order = &self.order;
            self.positions
                .par_chunks_mut(PAR_BLOCK)
                .zip(self.ids.par_chunks_mut(PAR_BLOCK))
                .zip(order.par_chunks(PAR_BLOCK))
                .for_each(|((ps, is), os)| gather(ps, is, os, positions, ids));
        } else {
            gather(&mut self.positions, &mut self.ids, &self.order, positions, ids);
        }

        // 4. The dense lookup table, when the bounding box is small enough.
        self.build_dense();
        Ok(())
    }

    /// Chooses the lookup and fills the dense table from the cell table and
    /// the bounding box (`min`, `max`, `span` must be current).
    fn build_dense(&mut self) {
        let n = self.positions.len();
        let span = self.span;
        let volume = span[0].checked_mul(span[1]).and_then(|v| v.checked_mul(span[2]));
        self.use_dense = n > 0
            && self.lookup == CellLookup::Auto
            && volume.is_some_and(|v| v <= DENSE_CELLS_PER_POINT * n + DENSE_CELLS_MIN);
        if self.use_dense {
            let volume = volume.unwrap_or(0);
            self.dense.resize(volume + 1, 0);
            // Empty cells point at the next occupied cell's start. Gaps are
            // short, so a plain loop beats a `fill` (memset call) per cell.
            let mut next = 0usize;
            for c in 0..self.cells.len() {
                let cell = self.cells[c];
                let d = self.dense_index(cell.key.raw());
                while next <= d {
                    self.dense[next] = cell.start;
                    next += 1;
                }
            }
            self.dense[next..].fill(n as u32);
        } else {
            self.dense.clear();
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
        if self.use_dense {
            let c = unpack(key.raw());
            if (0..3).all(|a| c[a] >= self.min[a] && c[a] <= self.max[a]) {
                let d = self.dense_index(key.raw());
                return self.dense[d] as usize..self.dense[d + 1] as usize;
            }
            return 0..0;
        }
        match self.cell_keys.binary_search(&key.raw()) {
            Ok(i) => {
                let c = self.cells[i];
                c.start as usize..(c.start + c.count) as usize
            }
            Err(_) => 0..0,
        }
    }

    /// The sorted slot of the point with id `id` in cell `key`, if there is
    /// one (a scan of that cell's points).
    pub fn find_slot(&self, key: CellKey, id: I) -> Option<usize> {
        let range = self.cell_slots(key);
        let start = range.start;
        self.ids[range].iter().position(|&i| i == id).map(|i| start + i)
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
        let Some(&old) = self.positions.get(slot) else {
            return Err(GridError::SlotOutOfRange { slot, len: self.positions.len() });
        };
        let new_key =
            self.cell_key_of(position).map_err(|error| GridError::InvalidPoint(BatchError { index: slot, error }))?;
        // `old` was keyed when it was stored, so this cannot fail.
        let old_key =
            self.cell_key_of(old).map_err(|error| GridError::InvalidPoint(BatchError { index: slot, error }))?;
        if new_key != old_key {
            return Err(GridError::CellMismatch { slot });
        }
        self.positions[slot] = position;
        Ok(())
    }

    /// [`set_position_in_cell`](Self::set_position_in_cell) for a caller
    /// that already knows `position` lies in the slot's cell (the broad
    /// phase, feature `ecs`).
    #[cfg(feature = "ecs")]
    #[inline]
    pub(crate) fn set_position_unchecked(&mut self, slot: usize, position: P) {
        debug_assert_eq!(self.cell_key_of(position).ok(), self.cell_key_of(self.positions[slot]).ok());
        self.positions[slot] = position;
    }

    /// Edits the grid in place of a rebuild: removes the points at the sorted
    /// slots `removed` and inserts `inserted` as `(cell key, id, position)`.
    /// Nothing is re-keyed or re-sorted except the inserted points: the
    /// kept points are copied in long runs and the cell table is shifted, so
    /// the cost is one linear pass plus `O(k log k)` for `k` edits. Both
    /// lists are sorted in place (slots, keys).
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
        let n_old = self.positions.len();
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
    /// and the result holds at most `u32::MAX` points.
    pub(crate) fn apply_edits_unchecked(&mut self, removed: &mut [u32], inserted: &mut [(CellKey, I, P)]) {
        let n_old = self.positions.len();
        let n_new = n_old - removed.len() + inserted.len();
        removed.sort_unstable();
        inserted.sort_unstable_by_key(|e| e.0.raw());
        if removed.is_empty() && inserted.is_empty() {
            return;
        }

        // 1. The new cell table and the copy plan in old slot order. Cells
        //    between edited ones are copied with their start shifted; only
        //    edited cells are looked at one by one.
        let old_cells = &self.cells;
        let c_old = old_cells.len();
        let mut removed_cell = std::mem::take(&mut self.edit_removed_cells);
        removed_cell.clear();
        removed_cell
            .extend(removed.iter().map(|&slot| old_cells.partition_point(|c| c.start + c.count <= slot) as u32));
        let mut inserted_cell = std::mem::take(&mut self.edit_inserted_cells);
        inserted_cell.clear();
        inserted_cell.extend(inserted.iter().map(|e| self.cell_keys.partition_point(|&k| k < e.0.raw()) as u32));
        let mut cells = std::mem::take(&mut self.cells_back);
        let mut keys = std::mem::take(&mut self.cell_keys_back);
        let mut ops = std::mem::take(&mut self.edit_ops);
        let mut changes = std::mem::take(&mut self.edit_changes);
        cells.clear();
        keys.clear();
        ops.clear();
        changes.clear();
        let mut grew = self.positions.is_empty();
        let (mut min, mut max) = if grew { EMPTY_BOUNDS } else { (self.min, self.max) };
        let mut delta: i64 = 0;
        let (mut c, mut r, mut ins) = (0usize, 0usize, 0usize);
        let old_start = |t: usize| if t < c_old { old_cells[t].start as usize } else { n_old };
        loop {
            let next_r = removed_cell.get(r).map_or(usize::MAX, |&t| t as usize);
            let next_i = inserted_cell.get(ins).map_or(usize::MAX, |&t| t as usize);
            let t = next_r.min(next_i).min(c_old);
            // Untouched cells: shifted copies.
            cells
                .extend(old_cells[c..t].iter().map(|cell| Cell { start: (cell.start as i64 + delta) as u32, ..*cell }));
            keys.extend_from_slice(&self.cell_keys[c..t]);
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
                cells.push(Cell { key: CellKey::from_raw_unchecked(k), start: start as u32, count: count as u32 });
                keys.push(k);
                changes.push((k, count as i64));
                let coords = unpack(k);
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
                cells.push(Cell { key: cell.key, start: (cell.start as i64 + delta) as u32, count: count as u32 });
                keys.push(cell.key.raw());
            }
            let net = count - cell.count as i64;
            if net != 0 {
                changes.push((cell.key.raw(), net));
            }
            delta += net;
            c = t + 1;
        }
        debug_assert_eq!(cells.last().map_or(0, |c| (c.start + c.count) as usize), n_new);
        self.edit_removed_cells = removed_cell;
        self.edit_inserted_cells = inserted_cell;

        // 2. The points: kept runs copied whole, inserted points between.
        let mut positions = std::mem::take(&mut self.positions_back);
        let mut ids = std::mem::take(&mut self.ids_back);
        positions.clear();
        ids.clear();
        positions.reserve(n_new);
        ids.reserve(n_new);
        let mut from = 0usize;
        for &op in &ops {
            match op {
                EditOp::Remove(slot) => {
                    let slot = slot as usize;
                    positions.extend_from_slice(&self.positions[from..slot]);
                    ids.extend_from_slice(&self.ids[from..slot]);
                    from = slot + 1;
                }
                EditOp::Insert { before, index } => {
                    let before = before as usize;
                    positions.extend_from_slice(&self.positions[from..before]);
                    ids.extend_from_slice(&self.ids[from..before]);
                    from = before;
                    let (_, id, p) = inserted[index as usize];
                    positions.push(p);
                    ids.push(id);
                }
            }
        }
        positions.extend_from_slice(&self.positions[from..]);
        ids.extend_from_slice(&self.ids[from..]);
        debug_assert_eq!(positions.len(), n_new);

        // 3. Swap the new arrays in, keep the old ones as back buffers.
        self.positions_back = std::mem::replace(&mut self.positions, positions);
        self.ids_back = std::mem::replace(&mut self.ids, ids);
        self.cells_back = std::mem::replace(&mut self.cells, cells);
        self.cell_keys_back = std::mem::replace(&mut self.cell_keys, keys);
        self.edit_ops = ops;
        self.order.clear();
        if n_new == 0 {
            self.edit_changes = changes;
            self.clear();
            return;
        }
        // The bounding box only grows here (a box larger than the occupied
        // cells is still correct for every query); a rebuild makes it tight.
        let was_dense = self.use_dense;
        let span = [0, 1, 2].map(|a| (max[a] - min[a]) as usize + 1);
        let volume = span[0].checked_mul(span[1]).and_then(|v| v.checked_mul(span[2]));
        let still_dense = self.lookup == CellLookup::Auto
            && volume.is_some_and(|v| v <= DENSE_CELLS_PER_POINT * n_new + DENSE_CELLS_MIN);
        self.min = min;
        self.max = max;
        self.span = span;
        if grew || !was_dense || !still_dense {
            self.build_dense();
        } else {
            // `dense[i]` counts the points in cells before dense cell `i`:
            // shift each stretch by the net change of the cells before it.
            let mut running: i64 = 0;
            let mut from = 0usize;
            for &(key, net) in &changes {
                let d = self.dense_index(key);
                for v in &mut self.dense[from..=d] {
                    *v = (*v as i64 + running) as u32;
                }
                from = d + 1;
                running += net;
            }
            for v in &mut self.dense[from..] {
                *v = (*v as i64 + running) as u32;
            }
        }
        self.edit_changes = changes;
    }

    #[inline]
    fn dense_index(&self, key: u64) -> usize {
        let x = (key & AXIS_MASK) as usize - (self.min[0] + BIAS) as usize;
        let y = ((key >> AXIS_BITS) & AXIS_MASK) as usize - (self.min[1] + BIAS) as usize;
        let z = (key >> (2 * AXIS_BITS)) as usize - (self.min[2] + BIAS) as usize;
        x + self.span[0] * (y + self.span[1] * z)
    }

    #[inline]
    fn cell_start(&self, cell: usize) -> usize {
        match self.cells.get(cell) {
            Some(c) => c.start as usize,
            None => self.positions.len(),
        }
    }

    /// The sorted-point range of the cells `x0..=x1` in row `(y, z)`. All
    /// coordinates must lie inside the occupied bounding box.
    #[inline(always)]
    pub(crate) fn row_slots(&self, y: i32, z: i32, x0: i32, x1: i32) -> (usize, usize) {
        debug_assert!(x0 <= x1 && x0 >= self.min[0] && x1 <= self.max[0]);
        debug_assert!(y >= self.min[1] && y <= self.max[1] && z >= self.min[2] && z <= self.max[2]);
        if self.use_dense {
            let row = self.span[0] * ((y - self.min[1]) as usize + self.span[1] * (z - self.min[2]) as usize);
            let lo = row + (x0 - self.min[0]) as usize;
            let hi = row + (x1 - self.min[0]) as usize + 1;
            (self.dense[lo] as usize, self.dense[hi] as usize)
        } else {
            self.row_slots_search(y, z, x0, x1)
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
    ///   per row: a dense-table lookup, O(1), or without the dense table a
    ///   binary search), or in a grid with the dense table when it has at
    ///   most `2 * K + ROWS_FREE` rows (2 more probes to find `K`);
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
        let rows = (hi[1] - lo[1] + 1) as u64 * (hi[2] - lo[2] + 1) as u64;
        if self.use_dense && rows <= ROWS_FREE {
            self.dense_rows(lo, hi, &mut f);
            return rows;
        }
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
        let rows = (hi[1] - y0) as u64 + (hi[2] - z0) as u64 * (hi[1] - lo[1] + 1) as u64;
        if rows <= ROWS_FREE {
            // As `dense_rows` or `searched_rows`, from the row after `own`.
            let x = self.dense_columns(lo, hi);
            let mut row = |y: i32, z: i32| {
                let (s, e) =
                    if self.use_dense { self.dense_run(y, z, x) } else { self.row_slots_search(y, z, lo[0], hi[0]) };
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
            self.searched_rows(lo, hi, f);
            rows
        } else {
            let keys = &self.cell_keys;
            let from = keys.partition_point(|&k| k < pack_unchecked(lo[0], lo[1], lo[2]));
            let end = from + keys[from..].partition_point(|&k| k <= pack_unchecked(hi[0], hi[1], hi[2]));
            if self.use_dense && rows <= 2 * (end - from) as u64 + ROWS_FREE {
                self.dense_rows(lo, hi, f);
                2 + rows
            } else {
                2 + self.skip_scan(lo, hi, from, end, f)
            }
        }
    }

    /// [`for_each_row`](Self::for_each_row) by one dense-table lookup per row.
    #[inline(always)]
    fn dense_rows(&self, lo: [i32; 3], hi: [i32; 3], f: &mut impl FnMut(usize, usize)) {
        let x = self.dense_columns(lo, hi);
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                let (s, e) = self.dense_run(y, z, x);
                if s < e {
                    f(s, e);
                }
            }
        }
    }

    /// The box's first and one-past-last `x` as offsets into a dense row.
    #[inline(always)]
    fn dense_columns(&self, lo: [i32; 3], hi: [i32; 3]) -> (usize, usize) {
        ((lo[0] - self.min[0]) as usize, (hi[0] - self.min[0]) as usize + 1)
    }

    /// The sorted-slot range of the cells `x` ([`dense_columns`](Self::dense_columns))
    /// of row `(y, z)`, from the dense table.
    #[inline(always)]
    fn dense_run(&self, y: i32, z: i32, (x0, x1): (usize, usize)) -> (usize, usize) {
        let row = self.span[0] * ((y - self.min[1]) as usize + self.span[1] * (z - self.min[2]) as usize);
        (self.dense[row + x0] as usize, self.dense[row + x1] as usize)
    }

    /// [`for_each_row`](Self::for_each_row) for a box of few rows in a grid
    /// without the dense table: one search of the cell table per row.
    #[inline]
    fn searched_rows(&self, lo: [i32; 3], hi: [i32; 3], f: &mut impl FnMut(usize, usize)) {
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                let (s, e) = self.row_slots_search(y, z, lo[0], hi[0]);
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
fn gallop(keys: &[u64], mut from: usize, end: usize, target: u64) -> usize {
    let mut step = 1;
    while from < end {
        let probe = (from + step - 1).min(end - 1);
        if keys[probe] >= target {
            return from + keys[from..probe].partition_point(|&k| k < target);
        }
        from = probe + 1;
        step *= 2;
    }
    end
}

/// The cell coordinates of a packed key.
#[inline]
fn unpack(key: u64) -> [i32; 3] {
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

/// Cell keys of one block of points; returns the cells' bounding box.
fn encode_block<P: GridPoint>(
    origin: Vec3,
    cell_size: f32,
    first_index: usize,
    points: &[P],
    keys: &mut [u64],
) -> Result<Bounds, BatchError> {
    let (mut min, mut max) = EMPTY_BOUNDS;
    for (i, (p, key)) in points.iter().zip(keys.iter_mut()).enumerate() {
        let p = p.to_vec3();
        let cell = |v: f32, o: f32| cell_axis(v, o, cell_size);
        let coords = (|| -> Result<[i32; 3], EncodeError> {
            Ok([cell(p.x, origin.x)?, cell(p.y, origin.y)?, cell(p.z, origin.z)?])
        })()
        .map_err(|error| BatchError { index: first_index + i, error })?;
        for a in 0..3 {
            min[a] = min[a].min(coords[a]);
            max[a] = max[a].max(coords[a]);
        }
        *key = pack_unchecked(coords[0], coords[1], coords[2]);
    }
    Ok((min, max))
}

fn gather<P: Copy, I: Copy>(out_p: &mut [P], out_i: &mut [I], order: &[u32], positions: &[P], ids: &[I]) {
    for ((p, id), &o) in out_p.iter_mut().zip(out_i.iter_mut()).zip(order) {
        *p = positions[o as usize];
        *id = ids[o as usize];
    }
}
