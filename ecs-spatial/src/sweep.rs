//! The batch queries' walk over the occupied cells (all pairs, a radius
//! query around every point): each occupied cell's scan box, and the rows
//! of cells that box reaches.
//!
//! The batch queries visit the occupied cells in key order and gather, per
//! cell, the points of the rows its scan box reaches (see
//! [`Candidates`](crate::kernel::Candidates)). Finding those rows is most
//! of the per-cell work, so it is done here without closures or per-row
//! searches:
//! - with the dense table, a row is two loads at offsets that step by a
//!   constant from row to row;
//! - without it, each row would be a hash probe and a search of that row's
//!   cells, and with cells much smaller than the radius a scan box has
//!   dozens of rows per occupied cell (25 at `cell = r / 2`): that was the
//!   cost cliff of small cells. Instead a [`RowFinder`] keeps one pair of
//!   cursors into the sorted cell table per row offset `(dy, dz)` from the
//!   visited cell. As the visited cell moves forward in key order, the
//!   first and last cell of the row at each offset move forward too, so
//!   each cursor only ever steps forward: a row costs a comparison or two
//!   (plus the occupied cells the cursor steps over, each once per offset
//!   over the whole walk), whatever the occupancy or the bounding box. A
//!   cursor that would have to move back (it does not happen for the boxes
//!   made here, but nothing depends on it) is found by a search.
//!
//! - in a grid whose occupied box's rows fit a block table (a first-cell
//!   index per few cells of each row, built instead of the hash; see
//!   `SparseGrid::block_cells`), a row is one load and a compare of four
//!   keys: in sparse worlds (about one point per row of a scan box) the
//!   cursors' steps over the rows in between cost more than that, and
//!   mispredicted.
//!
//! Boxes beyond the cursors' reach or of many rows (radii of many cells)
//! go to [`SparseGrid::walk_rows`], which bounds their cost by the occupied
//! cells of their key range.

use glam::Vec3;

use crate::cell::{AXIS_BITS, pack_unchecked};
use crate::grid::{LookupKind, SparseGrid, floor_in_range, gallop};
use crate::kernel::Soa;
use crate::point::{EntityId, GridPoint};

/// Largest row offset the cursors cover: at most `(2 * 8 + 1)^2 = 289`
/// rows per box, radii up to about 8 cells.
const MAX_REACH: i32 = 8;

/// Rows a dense-table box may have to be walked row by row here (larger
/// boxes go to [`SparseGrid::walk_rows`]).
const DENSE_ROWS_MAX: i64 = 289;

/// A range of cells: `lo..=hi` per axis.
pub(crate) type CellBox = ([i32; 3], [i32; 3]);

/// The scan boxes of a batch query of radius `r`: per occupied cell, the
/// cells within `r` of the bounding box of its points, in the occupied box.
///
/// The arithmetic is that of the single queries: `(p - origin) * (1 /
/// cell_size)` and a margin far above its rounding, taken at the larger
/// corner of the points' bounding box.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BoxMaker {
    origin: Vec3,
    inv: f32,
    /// The radius in cells.
    rc: f32,
    min: [i32; 3],
    max: [i32; 3],
    /// The occupied box widened by one cell, as floats.
    fmin: Vec3,
    fmax: Vec3,
    /// Every box is the whole occupied box (infinite radius, or a margin
    /// that overflowed).
    whole: bool,
}

/// Relative widening of scanned cell ranges: an axis's range is widened by
/// `(|q| + rc + 1) * 4 * SLACK` cells, `q` the query's coordinate and `rc`
/// the radius in cells on that axis. The range's rounding errors against
/// the build's cells, in units of `u = 2^-24` (f32 rounding): the centre's
/// `(c - origin) * inv` three, the radius `r * inv` two, the two
/// subtractions one each, a stored point's `(p - origin) / cell` two, and
/// the distance test's acceptance of points up to three beyond the radius:
/// under `9u (|q| + rc + 1)`, about `5.4e-7 (|q| + rc + 1)`. `4 * SLACK` is
/// `1e-6`, about twice that bound. (The border tests of `tests/brute_force.rs`,
/// points one ulp beside cell borders, fail with `SLACK = 1e-8` and pass
/// with `5e-8`.) It was `2e-6`, of the coordinates summed over the axes:
/// points 100 000 cells from the origin along x and 60 000 along y had
/// every range widened by 1.3 cells on each side, 6.7 times the distance
/// tests of the same points at the origin.
pub(crate) const SLACK: f32 = 2.5e-7;

impl BoxMaker {
    /// The boxes of radius `r` over `grid`, or `None` when no point can be
    /// within `r` of another (an empty grid, a NaN or negative radius).
    pub(crate) fn new<P: GridPoint, I: EntityId>(grid: &SparseGrid<P, I>, r: f32) -> Option<Self> {
        if grid.is_empty() || r.is_nan() || r < 0.0 {
            return None;
        }
        let inv = 1.0 / grid.cell_size;
        let rc = r * inv;
        // The largest margin any box gets (its |q| are below the occupied
        // box's largest |cell| + 1 per axis): when that is not finite, or
        // the radius squared is infinite (every point a hit), every box is
        // the whole occupied box.
        let q: f32 = (0..3).map(|a| (grid.min[a].unsigned_abs().max(grid.max[a].unsigned_abs()) + 1) as f32).sum();
        let margin = (q + rc + 1.0) * (4.0 * SLACK);
        let whole = (r * r).is_infinite() || !(rc + margin).is_finite();
        let fmin = Vec3::from_array(grid.min.map(|v| (v - 1) as f32));
        let fmax = Vec3::from_array(grid.max.map(|v| (v + 1) as f32));
        Some(BoxMaker { origin: grid.origin, inv, rc, min: grid.min, max: grid.max, fmin, fmax, whole })
    }

    /// The scan box of the points in sorted slots `s..e` (not empty).
    #[inline(always)]
    pub(crate) fn cell_box(&self, soa: &Soa, s: usize, e: usize) -> Option<CellBox> {
        if self.whole {
            return Some((self.min, self.max));
        }
        let first = soa.point(s);
        let (mut pmin, mut pmax) = (first, first);
        for slot in s + 1..e {
            let p = soa.point(slot);
            pmin = pmin.min(p);
            pmax = pmax.max(p);
        }
        let (qmin, qmax) = ((pmin - self.origin) * self.inv, (pmax - self.origin) * self.inv);
        // Per axis every point's |q| is at most the larger corner's, so this
        // margin is at least each point's own (as in the single queries),
        // axis by axis.
        let margin = (qmin.abs().max(qmax.abs()) + (self.rc + 1.0)) * (4.0 * SLACK);
        let (qmin, qmax) = (qmin - (margin + self.rc), qmax + (margin + self.rc));
        // Clamped just outside the occupied box first, so the fast floor
        // (exact below 2^22) applies; the bounds are clamped again after.
        let (fmin, fmax) = (self.fmin, self.fmax);
        let (qmin, qmax) = (qmin.clamp(fmin, fmax), qmax.clamp(fmin, fmax));
        let (mut lo, mut hi) = ([0; 3], [0; 3]);
        for a in 0..3 {
            let l = floor_in_range(qmin[a]).max(self.min[a]);
            let h = floor_in_range(qmax[a]).min(self.max[a]);
            if l > h {
                return None;
            }
            (lo[a], hi[a]) = (l, h);
        }
        Some((lo, hi))
    }
}

/// Finds the rows of scan boxes for one walk over the occupied cells in key
/// order (see the [module docs](self)).
#[derive(Clone, Debug, Default)]
pub(crate) struct RowFinder {
    /// Largest `|dy|`, `|dz|` the cursors cover; negative when they are
    /// off (dense table, or radii of many cells).
    reach: i32,
    /// `2 * reach + 1`.
    side: usize,
    /// Per offset: the first cell whose key is at least the row's first
    /// key, as of the last box that used the offset.
    first: Vec<u32>,
}

impl RowFinder {
    /// Sets the finder up for scan boxes of radius `r` over `grid`, keeping
    /// its buffers.
    pub(crate) fn reset<P: GridPoint, I: EntityId>(&mut self, grid: &SparseGrid<P, I>, r: f32) {
        self.reach = -1;
        if grid.lookup_kind() == LookupKind::Dense || grid.is_empty() || r.is_nan() || r < 0.0 {
            return;
        }
        // A box reaches at most `rc + margin` cells beyond its cell on each
        // side (see `BoxMaker`).
        let rc = f64::from(r) / f64::from(grid.cell_size);
        let q = (0..3).map(|a| f64::from(grid.min[a].unsigned_abs().max(grid.max[a].unsigned_abs()) + 1)).sum::<f64>();
        let margin = (q + rc + 1.0) * 1.0e-5;
        let reach = (rc + margin).floor() + 1.0;
        if reach > f64::from(MAX_REACH) {
            return;
        }
        self.reach = reach as i32;
        self.side = 2 * self.reach as usize + 1;
        let offsets = self.side * self.side;
        self.first.clear();
        self.first.resize(offsets, 0);
    }

    /// The cursor slot of the row at `(y, z)` seen from a cell in row
    /// `(y0, z0)`, if the cursors cover it.
    #[inline(always)]
    fn offset(&self, y: i32, z: i32, y0: i32, z0: i32) -> Option<usize> {
        let (dy, dz) = (y - y0, z - z0);
        if self.reach < 0 || dy.abs() > self.reach || dz.abs() > self.reach {
            return None;
        }
        Some((dy + self.reach) as usize + self.side * (dz + self.reach) as usize)
    }

    /// The sorted-slot range of the cells with keys `first_key..=last_key`
    /// (one row's cells `x0..=x1`), through the cursor of offset `o`: the
    /// cursor steps forward to the first key at or after `first_key`, and
    /// the row's cells are the keys from there up to `last_key` (at most
    /// `x1 - x0 + 1` of them). An empty row costs the cursor's step and one
    /// comparison.
    #[inline(always)]
    fn cursor_row<P: GridPoint, I: EntityId>(
        &mut self,
        grid: &SparseGrid<P, I>,
        o: usize,
        first_key: u64,
        last_key: u64,
    ) -> (usize, usize) {
        let keys = grid.cell_keys();
        let a = advance(keys, self.first[o] as usize, first_key);
        self.first[o] = a as u32;
        if keys.get(a).is_none_or(|&k| k > last_key) {
            return (0, 0);
        }
        let mut b = a + 1;
        while keys.get(b).is_some_and(|&k| k <= last_key) {
            b += 1;
        }
        (grid.cell_start(a), grid.cell_start(b))
    }

    /// The sorted-slot range of the cells `own[0]..=x1` of the visited
    /// cell's own row (which must be in the occupied box).
    #[inline(always)]
    pub(crate) fn own_row<P: GridPoint, I: EntityId>(
        &mut self,
        grid: &SparseGrid<P, I>,
        own: [i32; 3],
        x1: i32,
    ) -> (usize, usize) {
        if grid.has_blocks() {
            return grid.block_slots(own[1], own[2], own[0], x1);
        }
        match self.offset(own[1], own[2], own[1], own[2]) {
            Some(o) => {
                let first_key = pack_unchecked(own[0], own[1], own[2]);
                self.cursor_row(grid, o, first_key, first_key + (x1 - own[0]) as u64)
            }
            None => grid.row_slots(own[1], own[2], own[0], x1),
        }
    }

    /// Appends to `out` (merging ranges that continue each other) the
    /// sorted-slot range of the cells `lo[0]..=hi[0]` of every row of the
    /// box `lo..=hi` that holds points, in key order; with `after`, only the
    /// rows after the visited cell's own row `(own[1], own[2])` (the later
    /// rows of its layer, then the layers above). The box must lie in the
    /// occupied box and contain the visited cell `own`. Returns the probes
    /// made (one per row looked at).
    #[inline(always)]
    pub(crate) fn rows<P: GridPoint, I: EntityId>(
        &mut self,
        grid: &SparseGrid<P, I>,
        (lo, hi): CellBox,
        own: [i32; 3],
        after: bool,
        out: &mut Vec<(u32, u32)>,
    ) -> u64 {
        let [_, y0, z0] = own;
        if grid.lookup_kind() == LookupKind::Dense {
            // In the table's coordinates (offsets from the occupied box's
            // minimum, or ranks among the occupied coordinates when the
            // table is compacted): `own` is an occupied cell, so its row is
            // one of the table's.
            let ([x0, ty0, tz0], [x1, ty1, tz1]) = grid.dense_box(lo, hi);
            let (z_first, y_after) = if after { grid.dense_after(own) } else { (tz0, ty0) };
            let rows = (ty1 - ty0) * tz1.saturating_sub(z_first);
            if rows <= DENSE_ROWS_MAX as usize {
                let (table, [span_x, span_y]) = grid.dense_table();
                let mut probes = 0;
                for z in z_first..tz1 {
                    let y_first = if z == z_first && after { y_after } else { ty0 };
                    let mut row = span_x * (y_first + span_y * z);
                    for _ in y_first..ty1 {
                        if let (Some(&s), Some(&e)) = (table.get(row + x0), table.get(row + x1))
                            && s < e
                        {
                            push_merged(out, s, e);
                        }
                        row += span_x;
                    }
                    probes += ty1.saturating_sub(y_first) as u64;
                }
                return probes;
            }
        }
        let z_first = if after { z0 } else { lo[2] };
        let rows = i64::from(hi[1] - lo[1] + 1) * i64::from(hi[2] - z_first + 1);
        if grid.has_blocks() && rows <= DENSE_ROWS_MAX {
            return if grid.ranked() {
                block_rows::<true, P, I>(grid, (lo, hi), own, after, out)
            } else {
                block_rows::<false, P, I>(grid, (lo, hi), own, after, out)
            };
        }
        if self.offset(lo[1], lo[2], y0, z0).is_none() || self.offset(hi[1], hi[2], y0, z0).is_none() {
            let mut push = |s: usize, e: usize| push_merged(out, s as u32, e as u32);
            return if after {
                grid.walk_rows_after(lo, hi, [y0, z0], &mut push)
            } else {
                grid.walk_rows(lo, hi, push)
            };
        }
        // Keys step by a constant from row to row of a layer (the
        // coordinates stay in range, so no field overflows into the next).
        const Y: u64 = 1 << AXIS_BITS;
        let width = (hi[0] - lo[0]) as u64;
        let mut probes = 0;
        for z in z_first..=hi[2] {
            let y_first = if after && z == z0 { y0 + 1 } else { lo[1] };
            if y_first > hi[1] {
                continue;
            }
            let mut key = pack_unchecked(lo[0], y_first, z);
            let first_o = (y_first - y0 + self.reach) as usize + self.side * (z - z0 + self.reach) as usize;
            for o in first_o..=first_o + (hi[1] - y_first) as usize {
                let (s, e) = self.cursor_row(grid, o, key, key + width);
                if s < e {
                    push_merged(out, s as u32, e as u32);
                }
                key += Y;
            }
            probes += (hi[1] - y_first + 1) as u64;
        }
        probes
    }
}

/// [`RowFinder::rows`] through the block table (over ranked coordinates
/// when `RANKED`, the grid's [`ranked`](SparseGrid::ranked)): one lookup
/// per row, through the pages when a batch query built them.
#[inline(always)]
fn block_rows<const RANKED: bool, P: GridPoint, I: EntityId>(
    grid: &SparseGrid<P, I>,
    (lo, hi): CellBox,
    [_, y0, z0]: [i32; 3],
    after: bool,
    out: &mut Vec<(u32, u32)>,
) -> u64 {
    let z_first = if after { z0 } else { lo[2] };
    let pages = grid.paged();
    let mut probes = 0;
    for z in z_first..=hi[2] {
        let y_first = if after && z == z0 { y0 + 1 } else { lo[1] };
        for y in y_first..=hi[1] {
            let (s, e) = grid.block_row_slots::<RANKED>(pages, y, z, lo[0], hi[0]);
            if s < e {
                push_merged(out, s as u32, e as u32);
            }
        }
        probes += (hi[1] - y_first + 1).max(0) as u64;
    }
    probes
}

/// Appends the slot range `from..to` to `rows`, merged into the last range
/// when it continues it (consecutive rows whose cells are adjacent in key
/// order make one longer run).
#[inline(always)]
pub(crate) fn push_merged(rows: &mut Vec<(u32, u32)>, from: u32, to: u32) {
    match rows.last_mut() {
        Some(last) if last.1 == from => last.1 = to,
        _ => rows.push((from, to)),
    }
}

/// The first index at or after `c` whose key is at least `target` (a
/// search from the start when `c` is already past it).
#[inline(always)]
fn advance(keys: &[u64], mut c: usize, target: u64) -> usize {
    if c > 0 && keys.get(c - 1).is_some_and(|&k| k >= target) {
        return keys[..c].partition_point(|&k| k < target);
    }
    // Mostly zero or one step; a long way (the first use of a cursor, or a
    // jump over a sparse stretch) gallops.
    if keys.get(c).is_some_and(|&k| k < target) {
        c += 1;
        if keys.get(c).is_some_and(|&k| k < target) {
            c = gallop(keys, c + 1, keys.len(), target);
        }
    }
    c
}
