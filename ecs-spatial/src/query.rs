//! Queries on a [`SparseGrid`]: radius, box, k nearest, all pairs within a
//! radius, and a radius query around every point (sequential and parallel).
//!
//! No query allocates: results go to a caller-owned `Vec` (cleared first) or
//! a closure. Cells are found per row along `x` (keys of a row are
//! adjacent), through the grid's dense offset table, its block table (a
//! first-cell index per few cells of each row), its hash table of occupied
//! rows, or a search of its cell table. A box with many rows but
//! few occupied cells between its first and last key is walked over those
//! cells instead (a skip-scan of the sorted cell table), so the cost of
//! every single query is bounded by the occupied cells it can reach, not by
//! the empty cells of its box; see [`cell_probes`].
//!
//! The batch queries (all pairs, a radius query around every point) walk
//! the occupied cells in key order in units of a few sparse cells of a row
//! (or one dense cell): per unit one scan box, its rows (the dense table,
//! the block table, or one forward-only cursor per row offset: no hash
//! probe per row; see the `sweep` module), and one gather of the rows'
//! points into a padded candidate buffer that every point of the unit
//! tests in whole chunks of 8 lanes.
//!
//! Exactness: a point is reported when `point.distance_squared(center) <=
//! radius * radius` (or `min <= point <= max` for boxes), the same test a
//! brute-force loop makes, so results equal brute force exactly. The cells
//! scanned are widened by a few ulps so float rounding at cell borders cannot
//! hide a point. A negative or NaN radius, or a non-finite centre, finds
//! nothing.

use std::cell::Cell;
use std::cmp::Ordering;
use std::ops::Range;

use glam::Vec3;
use rayon::prelude::*;

use crate::cell::AXIS_BITS;
use crate::cell::floor_to_i64;
use crate::grid::unpack;
use crate::grid::{LookupKind, PAR_BLOCK, SparseGrid};
use crate::kernel::{Candidates, Hits, Lanes, with_lanes};
use crate::point::{EntityId, GridPoint};
use crate::sweep::{BoxMaker, RowFinder, SLACK};

thread_local! {
    static PROBES: Cell<u64> = const { Cell::new(0) };
}

/// The number of cell lookups ("probes") the grid's queries have made on the
/// calling thread since it started: one per row of cells looked up in a
/// grid's dense table, per search of its sorted cell table, and per step of
/// a skip-scan over that table (each step lands on an occupied cell).
///
/// It is deterministic for a given grid and sequence of queries, so the
/// difference around a call is that call's work, independent of timing.
/// Every query's probes are bounded by the occupied cells it can reach
/// (those whose keys lie between its box's first and last key), never by the
/// empty cells of its box. The parallel queries count on rayon's threads.
///
/// ```
/// use ecs_spatial::{SparseGrid, cell_probes};
/// use glam::Vec3;
///
/// // Two points far apart: a radius query spanning 2^40 cells stays cheap.
/// let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 1.0).unwrap();
/// grid.rebuild(&[0, 1], &[Vec3::ZERO, Vec3::new(0.0, 1.0e6, 1.0e6)]).unwrap();
/// let before = cell_probes();
/// let mut hits = Vec::new();
/// grid.query_radius(Vec3::ZERO, 4.0e6, &mut hits);
/// assert_eq!(hits.len(), 2);
/// assert!(cell_probes() - before <= 8);
/// ```
pub fn cell_probes() -> u64 {
    PROBES.with(Cell::get)
}

/// Adds `n` to [`cell_probes`].
#[inline(always)]
pub(crate) fn count_probes(n: u64) {
    PROBES.with(|p| p.set(p.get().wrapping_add(n)));
}

/// A k-nearest result.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbor<P, I> {
    /// The point's id.
    pub id: I,
    /// The point's position.
    pub position: P,
    /// Squared distance to the query centre.
    pub distance_squared: f32,
}

/// The results of a radius query around every point of a grid, in compressed
/// rows: list `s` belongs to the grid's sorted point `s` (id
/// `grid.ids()[s]`), and holds the ids of all points within the radius,
/// itself included, in grid order.
///
/// Keep one around and pass it to every call: its buffers are reused.
#[derive(Clone, Debug, Default)]
pub struct NeighborLists<I> {
    queries: Vec<I>,
    offsets: Vec<u32>,
    neighbors: Vec<I>,
    parts: Vec<ListPart<I>>,
    scratch: BatchScratch<I>,
}

/// One parallel block's lists.
#[derive(Clone, Debug)]
struct ListPart<I> {
    offsets: Vec<u32>,
    neighbors: Vec<I>,
    scratch: BatchScratch<I>,
}

impl<I> Default for ListPart<I> {
    fn default() -> Self {
        ListPart { offsets: Vec::new(), neighbors: Vec::new(), scratch: BatchScratch::default() }
    }
}

/// Buffers of a batch query's walk over the occupied cells.
#[derive(Clone, Debug)]
pub(crate) struct BatchScratch<I> {
    candidates: Candidates<I>,
    finder: RowFinder,
    /// The slot ranges of one cell's scan box.
    rows: Vec<(u32, u32)>,
}

impl<I> Default for BatchScratch<I> {
    fn default() -> Self {
        BatchScratch { candidates: Candidates::default(), finder: RowFinder::default(), rows: Vec::new() }
    }
}

impl<I: EntityId> NeighborLists<I> {
    /// Empty lists.
    pub fn new() -> Self {
        NeighborLists {
            queries: Vec::new(),
            offsets: Vec::new(),
            neighbors: Vec::new(),
            parts: Vec::new(),
            scratch: BatchScratch::default(),
        }
    }

    /// Number of lists (one per query point).
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether there are no lists.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The query id and neighbour ids of list `index`.
    ///
    /// # Panics
    /// If `index >= self.len()`.
    pub fn get(&self, index: usize) -> (I, &[I]) {
        let range = self.offsets[index] as usize..self.offsets[index + 1] as usize;
        (self.queries[index], &self.neighbors[range])
    }

    /// All lists in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (I, &[I])> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Total number of hits over all lists.
    pub fn total_hits(&self) -> usize {
        self.neighbors.len()
    }

    fn clear(&mut self) {
        self.queries.clear();
        self.offsets.clear();
        self.neighbors.clear();
    }
}

type CellBox = ([i32; 3], [i32; 3]);

/// The smallest box holding both boxes.
fn hull(a: CellBox, b: CellBox) -> CellBox {
    ([0, 1, 2].map(|i| a.0[i].min(b.0[i])), [0, 1, 2].map(|i| a.1[i].max(b.1[i])))
}

/// Whether `inner` lies inside `outer`.
fn contains(outer: CellBox, inner: CellBox) -> bool {
    (0..3).all(|i| outer.0[i] <= inner.0[i] && inner.1[i] <= outer.1[i])
}

/// Calls `f(lo, hi)` for up to six disjoint boxes that together hold the
/// cells of `outer` outside `inner` (all of `outer` when `inner` is `None`);
/// `inner` must lie inside `outer`.
fn box_minus(outer: CellBox, inner: Option<CellBox>, mut f: impl FnMut([i32; 3], [i32; 3])) {
    let (olo, ohi) = outer;
    let Some((ilo, ihi)) = inner else {
        f(olo, ohi);
        return;
    };
    debug_assert!(contains(outer, (ilo, ihi)));
    // Layers below and above the inner box.
    if olo[2] < ilo[2] {
        f(olo, [ohi[0], ohi[1], ilo[2] - 1]);
    }
    if ihi[2] < ohi[2] {
        f([olo[0], olo[1], ihi[2] + 1], ohi);
    }
    // Rows before and after it, in its layers.
    if olo[1] < ilo[1] {
        f([olo[0], olo[1], ilo[2]], [ohi[0], ilo[1] - 1, ihi[2]]);
    }
    if ihi[1] < ohi[1] {
        f([olo[0], ihi[1] + 1, ilo[2]], [ohi[0], ohi[1], ihi[2]]);
    }
    // Cells before and after it, in its rows.
    if olo[0] < ilo[0] {
        f([olo[0], ilo[1], ilo[2]], [ilo[0] - 1, ihi[1], ihi[2]]);
    }
    if ihi[0] < ohi[0] {
        f([ihi[0] + 1, ilo[1], ilo[2]], [ohi[0], ihi[1], ihi[2]]);
    }
}

impl<P: GridPoint, I: EntityId> SparseGrid<P, I> {
    #[inline]
    fn cell_f(&self, v: f32, axis: usize) -> i64 {
        // Saturates (and infinities clamp) before the bounding-box clamp.
        floor_to_i64((v - self.origin[axis]) / self.cell_size)
    }

    /// The query in cell units: centre `(c - origin) / cell_size`, radius
    /// `r / cell_size`, and per axis a margin that covers every rounding
    /// error of that axis's range arithmetic (a multiply by the inverse
    /// cell size rather than the build's exact division, hence the margin:
    /// scanning a few ulps more never changes a result, missing one would).
    /// An axis's errors scale with that axis's coordinates only, so a world
    /// far from the origin along one axis widens only that axis's range.
    #[inline(always)]
    fn cell_space(&self, c: Vec3, r: f32) -> (Vec3, f32, Vec3) {
        let inv = 1.0 / self.cell_size;
        let q = (c - self.origin) * inv;
        let rc = r * inv;
        let margin = (q.abs() + (rc + 1.0)) * (4.0 * SLACK);
        (q, rc, margin)
    }

    /// Occupied-box-clamped cell range that holds every point within `r` of `c`.
    #[inline]
    fn radius_cells(&self, c: Vec3, r: f32) -> Option<CellBox> {
        if self.is_empty() || r.is_nan() || r < 0.0 || !c.is_finite() {
            return None;
        }
        if (r * r).is_infinite() {
            // Every squared distance is at most infinity: every point is a hit.
            return Some((self.min, self.max));
        }
        let (q, rc, margin) = self.cell_space(c, r);
        self.clamped_cells(q, q, rc, margin)
    }

    /// The cells from `qmin - rc - margin` to `qmax + rc + margin` (cell
    /// space, the margin per axis), clamped to the occupied box; `None` when
    /// nothing is left.
    #[inline(always)]
    fn clamped_cells(&self, qmin: Vec3, qmax: Vec3, rc: f32, margin: Vec3) -> Option<CellBox> {
        if !margin.is_finite() {
            // A centre whose cell overflows to infinity (or a radius of
            // infinitely many cells) would give `inf - inf` (NaN) bounds:
            // take every cell instead (the distance test decides).
            return Some((self.min, self.max));
        }
        let (mut lo, mut hi) = ([0; 3], [0; 3]);
        for a in 0..3 {
            let l = floor_to_i64(qmin[a] - rc - margin[a]).max(self.min[a] as i64);
            let h = floor_to_i64(qmax[a] + rc + margin[a]).min(self.max[a] as i64);
            if l > h {
                return None;
            }
            lo[a] = l as i32;
            hi[a] = h as i32;
        }
        Some((lo, hi))
    }

    /// Calls `flush(slots)` with the sorted points within `r` of `center`,
    /// in grid order (in one or more batches).
    #[inline]
    fn scan_radius(&self, center: P, r: f32, mut flush: impl FnMut(&[u32])) {
        let c = center.to_vec3();
        let Some((lo, hi)) = self.radius_cells(c, r) else { return };
        let r2 = r * r;
        let mut hits = Hits::new();
        self.for_each_row(lo, hi, |s, e| self.soa.scan(s, e, c, r2, &mut hits, &mut flush));
        hits.finish(&mut flush);
    }

    /// Appends the ids within `r` of `center` to `out`.
    #[inline]
    fn collect_radius(&self, center: P, r: f32, out: &mut Vec<I>) {
        self.scan_radius(center, r, |slots| out.extend(slots.iter().map(|&s| self.ids[s as usize])));
    }

    /// Calls `f(id, position)` for every point within `radius` of `center`
    /// (distance `<= radius`), in grid order.
    pub fn for_each_in_radius(&self, center: P, radius: f32, mut f: impl FnMut(I, P)) {
        self.scan_radius(center, radius, |slots| {
            for &s in slots {
                f(self.ids[s as usize], P::from_vec3(self.soa.point(s as usize)));
            }
        });
    }

    /// Ids of every point within `radius` of `center`, written to `out`
    /// (cleared first), in grid order.
    pub fn query_radius(&self, center: P, radius: f32, out: &mut Vec<I>) {
        out.clear();
        self.collect_radius(center, radius, out);
    }

    /// Calls `f(id, position)` for every point with `min <= p <= max` on
    /// every axis, in grid order. An inverted or NaN box finds nothing.
    pub fn for_each_in_box(&self, min: P, max: P, mut f: impl FnMut(I, P)) {
        if self.is_empty() || !min.is_finite() || !max.is_finite() {
            return;
        }
        let (lo_v, hi_v) = (min.to_vec3(), max.to_vec3());
        let (mut lo, mut hi) = ([0; 3], [0; 3]);
        for a in 0..3 {
            let l = self.cell_f(lo_v[a], a).max(self.min[a] as i64);
            let h = self.cell_f(hi_v[a], a).min(self.max[a] as i64);
            if l > h {
                return;
            }
            lo[a] = l as i32;
            hi[a] = h as i32;
        }
        self.for_each_row(lo, hi, |s, e| {
            for slot in s..e {
                let p = P::from_vec3(self.soa.point(slot));
                if p.in_box(min, max) {
                    f(self.ids[slot], p);
                }
            }
        });
    }

    /// Ids of every point inside the closed box `min..=max`, written to `out`
    /// (cleared first), in grid order.
    pub fn query_box(&self, min: P, max: P, out: &mut Vec<I>) {
        out.clear();
        self.for_each_in_box(min, max, |id, _| out.push(id));
    }

    /// The `k` points nearest `center`, written to `out` (cleared first)
    /// ordered by squared distance, ties broken by id.
    ///
    /// Scans growing boxes of cells around the centre's cell, each round only
    /// the cells the previous boxes did not cover, until `k` points are found;
    /// then the box of every cell that could hold a closer point. The cells
    /// are walked like every other query's (occupied cells, not empty space),
    /// and once the rounds have cost more probes than the grid has points and
    /// cells, the rest is a scan of every point.
    ///
    /// ```
    /// use ecs_spatial::SparseGrid;
    /// use glam::Vec2;
    /// let mut grid = SparseGrid::<Vec2, u64>::new(Vec2::ZERO, 1.0).unwrap();
    /// let points: Vec<Vec2> = (0..10).map(|i| Vec2::new(i as f32 * 3.0, 0.0)).collect();
    /// let ids: Vec<u64> = (0..10).collect();
    /// grid.rebuild(&ids, &points).unwrap();
    /// let mut out = Vec::new();
    /// grid.query_k_nearest(Vec2::new(7.0, 1.0), 2, &mut out);
    /// assert_eq!(out.iter().map(|n| n.id).collect::<Vec<_>>(), vec![2, 3]);
    /// ```
    pub fn query_k_nearest(&self, center: P, k: usize, out: &mut Vec<Neighbor<P, I>>) {
        out.clear();
        let c = center.to_vec3();
        if k == 0 || self.is_empty() || !c.is_finite() {
            return;
        }
        // The centre's cell, clamped near the key range (a centre further out
        // only changes where the rounds start, not which cells they end with).
        let cc = [0, 1, 2].map(|a| self.cell_f(c[a], a).clamp(-(1 << 30), 1 << 30));
        let (min, max) = (self.min, self.max);
        let occupied: CellBox = (min, max);
        let consider = |slot: usize, out: &mut Vec<Neighbor<P, I>>| {
            let position = P::from_vec3(self.soa.point(slot));
            let n = Neighbor { id: self.ids[slot], position, distance_squared: position.distance_squared(center) };
            let order = |a: &Neighbor<P, I>| {
                a.distance_squared.total_cmp(&n.distance_squared).then(a.id.cmp(&n.id)) != Ordering::Greater
            };
            if out.len() == k {
                if !order(&out[k - 1]) {
                    // New point sorts before the current worst.
                    let at = out.partition_point(order);
                    out.pop();
                    out.insert(at, n);
                }
            } else {
                let at = out.partition_point(order);
                out.insert(at, n);
            }
        };
        // The cells that can hold a point closer than the current k-th.
        let needed = |out: &Vec<Neighbor<P, I>>| {
            if out.len() < k {
                return None;
            }
            Some(self.radius_cells(c, out[k - 1].distance_squared.sqrt()).unwrap_or(occupied))
        };
        // The cells within Chebyshev distance `d` of the centre's cell, in
        // the occupied box; not empty from `start` on (the distance to it).
        let around = |d: i64| -> CellBox {
            let clamp = |v: i64, a: usize| v.clamp(min[a] as i64, max[a] as i64) as i32;
            ([0, 1, 2].map(|a| clamp(cc[a].saturating_sub(d), a)), [0, 1, 2].map(|a| clamp(cc[a].saturating_add(d), a)))
        };
        let start = (0..3)
            .map(|a| (min[a] as i64).saturating_sub(cc[a]).max(cc[a].saturating_sub(max[a] as i64)).max(0))
            .max()
            .unwrap_or(0);
        let budget = (self.len() + self.cells().len()) as u64;
        let mut spent = 0;
        let mut scanned: Option<CellBox> = None;
        let mut d = start;
        loop {
            let want = needed(out).unwrap_or_else(|| around(d));
            let target = scanned.map_or(want, |s| hull(s, want));
            if scanned == Some(target) {
                break; // not reached: every round grows the box
            }
            box_minus(target, scanned, |lo, hi| {
                spent += self.for_each_row(lo, hi, |s, e| (s..e).for_each(|slot| consider(slot, out)));
            });
            scanned = Some(target);
            if target == occupied || needed(out).is_some_and(|n| contains(target, n)) {
                return;
            }
            if spent > budget {
                break;
            }
            d = d.saturating_add(1 + d / 2);
        }
        // The rounds have cost more than a scan of every point would.
        out.clear();
        (0..self.len()).for_each(|slot| consider(slot, out));
    }

    /// Calls `f(a, b)` once for every unordered pair of distinct points
    /// within `radius` of each other (`a` is the one earlier in grid order).
    ///
    /// Each point scans only the cells after its own in key order (half the
    /// neighbourhood) and, in its own cell, only the points after it; radii
    /// larger than a cell scan more rings.
    pub fn for_each_pair_within(&self, radius: f32, f: impl FnMut(I, I)) {
        self.ensure_pages();
        let mut scratch = BatchScratch::default();
        let probes = self.pairs_of_cells(0..self.cells().len(), radius, &mut scratch, f);
        count_probes(probes);
    }

    /// All pairs within `radius` (see [`for_each_pair_within`](Self::for_each_pair_within)),
    /// written to `out` (cleared first).
    pub fn pairs_within(&self, radius: f32, out: &mut Vec<(I, I)>) {
        out.clear();
        self.for_each_pair_within(radius, |a, b| out.push((a, b)));
    }

    /// [`for_each_pair_within`](Self::for_each_pair_within) on rayon: `f` is
    /// called from several threads, in no particular order.
    pub fn par_for_each_pair_within(&self, radius: f32, f: impl Fn(I, I) + Sync) {
        self.ensure_pages();
        self.cell_blocks().into_par_iter().for_each(|cells| {
            let mut scratch = BatchScratch::default();
            count_probes(self.pairs_of_cells(cells, radius, &mut scratch, &f));
        });
    }

    /// Ranges of occupied cells of about [`PAR_BLOCK`] points each, in order.
    fn cell_blocks(&self) -> Vec<Range<usize>> {
        let cells = self.cells();
        let mut blocks = Vec::with_capacity(self.len() / PAR_BLOCK + 1);
        let mut from = 0;
        while from < cells.len() {
            let target = cells[from].start as usize + PAR_BLOCK;
            let to = from + 1 + cells[from + 1..].partition_point(|c| (c.start as usize) < target);
            blocks.push(from..to);
            from = to;
        }
        blocks
    }

    /// The unit of a batch query that starts at occupied cell `c` (before
    /// `end`): that cell and the next ones of the same row while the unit
    /// holds fewer than [`UNIT_POINTS`] points and spans fewer than `extent`
    /// cells along x. Returns the cell after the unit and the
    /// unit's sorted slots `s0..e0`. One scan box, one set of rows and one
    /// gather serve all of a unit's points, so sparse cells share them.
    #[inline(always)]
    fn unit(&self, c: usize, end: usize, extent: u64) -> (usize, usize, usize) {
        let cells = self.cells();
        let first = cells[c];
        let row = first.key.raw() >> AXIS_BITS;
        let mut points = first.count as usize;
        let mut next = c + 1;
        while next < end && points < UNIT_POINTS {
            let key = cells[next].key.raw();
            if key >> AXIS_BITS != row || key - first.key.raw() >= extent {
                break;
            }
            points += cells[next].count as usize;
            next += 1;
        }
        (next, first.start as usize, first.start as usize + points)
    }

    /// The batch queries' driver over the occupied cells `cells` at radius
    /// `r`: per unit (see [`unit`](Self::unit)) the scan box of all its
    /// points (computed once) and the sorted-slot ranges of its rows, then
    /// `per_unit(candidates, rows, s0..e0)` for the unit's sorted slots
    /// (the closure gathers the rows' points into the candidate buffer).
    /// With `half`, the rows hold only what lies after the unit's first
    /// cell in key order (the unit's own points first, then the rest of its
    /// row in the box, the later rows of its layer and the layers above)
    /// and a unit whose box is empty is skipped; otherwise the whole box,
    /// and every unit is handed over. Returns the probes made (the caller
    /// adds them to [`cell_probes`]), or `None` for a NaN or negative
    /// radius (nothing is within it).
    #[inline(always)]
    fn for_each_unit(
        &self,
        cells: Range<usize>,
        r: f32,
        half: bool,
        scratch: &mut BatchScratch<I>,
        mut per_unit: impl FnMut(&mut Candidates<I>, &[(u32, u32)], Range<usize>),
    ) -> Option<u64> {
        let boxes = BoxMaker::new(self, r)?;
        let BatchScratch { candidates, finder, rows } = scratch;
        finder.reset(self, r);
        let extent = unit_extent(r / self.cell_size);
        let mut probes = 0;
        let mut c = cells.start;
        while c < cells.end {
            let (unit, s0, e0) = self.unit(c, cells.end, extent);
            let own = unpack(self.cells()[c].key.raw());
            c = unit;
            rows.clear();
            match boxes.cell_box(&self.soa, s0, e0) {
                Some(scan) if half => {
                    let (_, own_row_end) = finder.own_row(self, own, scan.1[0]);
                    rows.push((s0 as u32, own_row_end.max(e0) as u32));
                    probes += 1 + finder.rows(self, scan, own, true, rows);
                }
                Some(scan) => probes += finder.rows(self, scan, own, false, rows),
                None if half => continue,
                None => {}
            }
            per_unit(candidates, rows, s0..e0);
        }
        Some(probes)
    }

    /// The pairs whose earlier point lies in one of the occupied cells
    /// `cells`: each point of a unit tests the candidates after itself in
    /// chunks of 8 (see [`for_each_unit`](Self::for_each_unit)). Returns
    /// the probes made.
    fn pairs_of_cells(&self, cells: Range<usize>, r: f32, scratch: &mut BatchScratch<I>, f: impl FnMut(I, I)) -> u64 {
        // `f` moves into the body, so the state it captures is a local of
        // the kernel's function, not memory behind a pointer the compiler
        // must reload after every call (a counting closure's counter was
        // 11 % of all pairs' time).
        with_lanes!(lanes => {
            let mut f = f;
            self.pairs_with(lanes, cells, r, scratch, &mut f)
        })
    }

    /// [`pairs_of_cells`](Self::pairs_of_cells) with the kernel `lanes`
    /// (see [`radius_all_with`](Self::radius_all_with)).
    #[inline(always)]
    fn pairs_with<L: Lanes>(
        &self,
        lanes: L,
        cells: Range<usize>,
        r: f32,
        scratch: &mut BatchScratch<I>,
        f: &mut impl FnMut(I, I),
    ) -> u64 {
        let r2 = r * r;
        let probes = self.for_each_unit(cells, r, true, scratch, |candidates, rows, slots| {
            candidates.gather(&self.soa, &self.ids, rows);
            candidates.unit_pairs(lanes, &self.soa, slots, r2, f);
        });
        probes.unwrap_or(0)
    }

    /// A radius query around every point, written to `out`: list `s` holds
    /// the ids within `radius` of sorted point `s`, itself included, in
    /// grid order.
    ///
    /// ```
    /// use ecs_spatial::{NeighborLists, SparseGrid};
    /// use glam::Vec3;
    /// let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 1.0).unwrap();
    /// grid.rebuild(&[0, 1, 2], &[Vec3::ZERO, Vec3::X, Vec3::splat(5.0)]).unwrap();
    /// let mut lists = NeighborLists::new();
    /// grid.query_radius_all(1.0, &mut lists);
    /// assert_eq!(lists.total_hits(), 5); // 0:{0,1} 1:{0,1} 2:{2}
    /// ```
    pub fn query_radius_all(&self, radius: f32, out: &mut NeighborLists<I>) {
        self.ensure_pages();
        out.clear();
        out.queries.extend_from_slice(&self.ids);
        out.offsets.push(0);
        let probes = self.radius_all_of_cells(
            0..self.cells().len(),
            radius,
            &mut out.scratch,
            &mut out.offsets,
            &mut out.neighbors,
        );
        count_probes(probes);
    }

    /// [`query_radius_all`](Self::query_radius_all) on rayon, with the same
    /// result. Per-block buffers live in `out` and are reused.
    pub fn par_query_radius_all(&self, radius: f32, out: &mut NeighborLists<I>) {
        self.ensure_pages();
        out.clear();
        let blocks = self.cell_blocks();
        let used = blocks.len();
        if out.parts.len() < used {
            out.parts.resize_with(used, Default::default);
        }
        out.parts[..used].par_iter_mut().zip(blocks).for_each(|(part, cells)| {
            part.offsets.clear();
            part.neighbors.clear();
            let probes =
                self.radius_all_of_cells(cells, radius, &mut part.scratch, &mut part.offsets, &mut part.neighbors);
            count_probes(probes);
        });
        out.queries.extend_from_slice(&self.ids);
        out.offsets.push(0);
        for part in &out.parts[..used] {
            let base = out.neighbors.len() as u32;
            out.offsets.extend(part.offsets.iter().map(|&o| base + o));
            out.neighbors.extend_from_slice(&part.neighbors);
        }
    }

    /// The work [`query_radius_all`](Self::query_radius_all) at `radius`
    /// does, counted without testing a distance (see [`BatchWork`]).
    ///
    /// ```
    /// use ecs_spatial::SparseGrid;
    /// use glam::Vec3;
    /// let points: Vec<Vec3> = (0..1000).map(|i| Vec3::new((i % 10) as f32, (i / 10 % 10) as f32, (i / 100) as f32)).collect();
    /// let ids: Vec<u32> = (0..1000).collect();
    /// let mut grid = SparseGrid::<Vec3>::new(Vec3::ZERO, 1.0).unwrap();
    /// grid.rebuild(&ids, &points).unwrap();
    /// let work = grid.radius_all_work(1.0);
    /// assert_eq!(work.points, 1000);
    /// assert!(work.chunks >= 1000); // every point tests at least its own cell
    /// ```
    pub fn radius_all_work(&self, radius: f32) -> BatchWork {
        let mut scratch = BatchScratch::default();
        let mut work = BatchWork::default();
        self.radius_all_work_of(0..self.cells().len(), radius, &mut scratch, &mut work);
        work
    }

    /// Adds the work of the radius-`r` lists of the occupied cells `cells`
    /// to `work` (see [`radius_all_work`](Self::radius_all_work)).
    pub(crate) fn radius_all_work_of(
        &self,
        cells: Range<usize>,
        r: f32,
        scratch: &mut BatchScratch<I>,
        work: &mut BatchWork,
    ) {
        let rows = self.for_each_unit(cells, r, false, scratch, |_, rows, slots| {
            let gathered: u64 = rows.iter().map(|&(s, e)| u64::from(e - s)).sum();
            let points = slots.len() as u64;
            work.points += points;
            work.units += 1;
            work.runs += rows.len() as u64;
            work.candidates += gathered;
            work.chunks += points * gathered.div_ceil(8);
        });
        work.rows += rows.unwrap_or(0);
    }

    /// The radius-`r` lists of the points of the occupied cells `cells`,
    /// appended to `neighbors`, with each list's end (counted from the
    /// length `neighbors` had) appended to `offsets`: each point of a unit
    /// tests all its candidates in chunks of 8 (see
    /// [`for_each_unit`](Self::for_each_unit)). Returns the probes made.
    fn radius_all_of_cells(
        &self,
        cells: Range<usize>,
        r: f32,
        scratch: &mut BatchScratch<I>,
        offsets: &mut Vec<u32>,
        neighbors: &mut Vec<I>,
    ) -> u64 {
        with_lanes!(lanes => self.radius_all_with(lanes, cells, r, scratch, offsets, neighbors))
    }

    /// [`radius_all_of_cells`](Self::radius_all_of_cells) with the kernel
    /// `lanes` (inlined into [`with_lanes!`]'s body, so the whole pass is
    /// compiled for the lanes' instruction set).
    #[inline(always)]
    fn radius_all_with<L: Lanes>(
        &self,
        lanes: L,
        cells: Range<usize>,
        r: f32,
        scratch: &mut BatchScratch<I>,
        offsets: &mut Vec<u32>,
        neighbors: &mut Vec<I>,
    ) -> u64 {
        let base = neighbors.len();
        let r2 = r * r;
        let probes = self.for_each_unit(cells.clone(), r, false, scratch, |candidates, rows, slots| {
            candidates.gather(&self.soa, &self.ids, rows);
            for s in slots {
                candidates.hits_into(lanes, self.soa.point(s), r2, neighbors);
                offsets.push((neighbors.len() - base) as u32);
            }
        });
        probes.unwrap_or_else(|| {
            // No point is within a NaN or negative radius of any other.
            for c in cells {
                offsets.extend(std::iter::repeat_n(0, self.cells()[c].count as usize));
            }
            0
        })
    }
}

/// The work of a radius query around every point
/// ([`SparseGrid::query_radius_all`]), counted by
/// [`SparseGrid::radius_all_work`] without testing a distance: the same
/// units, scan boxes and rows, deterministic for a grid's points, cell size
/// and radius. [`suggest_cell_size`](crate::suggest_cell_size) prices it to
/// compare cell sizes, and tests compare it across cell sizes instead of
/// timing them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchWork {
    /// Query points (each a set-up and a hit list).
    pub points: u64,
    /// Units of cells sharing one scan box, row walk and gather.
    pub units: u64,
    /// Rows of the units' scan boxes looked at (a dense-table load or a
    /// row cursor step each; the probes of [`cell_probes`]).
    pub rows: u64,
    /// Runs of consecutive sorted slots gathered (rows holding points,
    /// adjacent ones merged).
    pub runs: u64,
    /// Points gathered as candidates, over all units.
    pub candidates: u64,
    /// Chunks of 8 candidates tested by the distance kernel, over all
    /// query points.
    pub chunks: u64,
}

/// The price of a radius query around every point, in units of one chunk
/// of 8 lanes of the distance kernel: a least-squares fit (non-negative,
/// relative error) of the counted work to the measured times of all radius
/// queries on 100k points, 4 distributions (uniform, balls, Gaussian
/// clusters in a large box, far outliers) at 2-3 radii and 3 cell sizes
/// each (the `cell_sizes` example), rounded. Per query point (its set-up
/// and hit list),
const POINT_COST: f64 = 1.7;
/// per unit of cells sharing a scan box (box, row walk and gather set-up),
const UNIT_COST: f64 = 8.0;
/// per row of a unit's box through the dense table (one load, rows a
/// constant stride apart) or a row cursor (a step into another part of the
/// cell table, often a cache miss: the fit puts it near 4-6 chunks),
const ROW_COST_DENSE: f64 = 0.5;
const ROW_COST_CURSOR: f64 = 4.0;
/// per run of slots gathered and per point gathered,
const RUN_COST: f64 = 1.0;
const CANDIDATE_COST: f64 = 0.2;
/// and per chunk of candidates a point tests.
const CHUNK_COST: f64 = 1.0;

impl BatchWork {
    /// The modelled cost of this work per query point, in units of one
    /// chunk of 8 candidates through the distance kernel (about 50
    /// instructions), on a grid whose rows come from `lookup`'s structure
    /// (the dense table, or row cursors otherwise). Comparable across cell
    /// sizes of the same points and radius; see the README's cell-size
    /// table for how it ranks against measured times.
    pub fn price(&self, lookup: LookupKind) -> f64 {
        let row_cost = if lookup == LookupKind::Dense { ROW_COST_DENSE } else { ROW_COST_CURSOR };
        let total = POINT_COST * self.points as f64
            + UNIT_COST * self.units as f64
            + row_cost * self.rows as f64
            + RUN_COST * self.runs as f64
            + CANDIDATE_COST * self.candidates as f64
            + CHUNK_COST * self.chunks as f64;
        total / self.points.max(1) as f64
    }
}

impl std::ops::AddAssign for BatchWork {
    fn add_assign(&mut self, o: BatchWork) {
        self.points += o.points;
        self.units += o.units;
        self.rows += o.rows;
        self.runs += o.runs;
        self.candidates += o.candidates;
        self.chunks += o.chunks;
    }
}

/// A batch query's unit grows by the next cell of its row while it holds
/// fewer points than this: one scan box, row walk and gather then serve
/// several sparse cells (on 100k uniform points at `cell = r`, 1.6 points
/// a cell, units of up to 6 points cut the instructions of all radius
/// queries by a quarter and of all pairs by a third; dense cells are units
/// of their own).
const UNIT_POINTS: usize = 6;
/// A unit spans at most this many times the radius (or cells, for cells
/// wider than the radius) along x: along a sparse row a longer unit shares
/// its rows with more points for few more candidates.
const UNIT_REACH: f32 = 8.0;

/// The most cells along x a unit of radius `rc` cells may span.
fn unit_extent(rc: f32) -> u64 {
    (UNIT_REACH * rc.clamp(1.0, 64.0)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::Portable;

    /// `n` points of a small LCG on a 1/4 lattice (so distances hit the
    /// radius exactly), a tenth of them in one clump of a single cell (more
    /// than 256 candidates there: the kernels' per-point path).
    fn lattice_points(seed: u64, n: usize, side: f32) -> Vec<Vec3> {
        let mut next = crate::lcg_unit(seed);
        (0..n)
            .map(|i| {
                let reach = if i % 10 == 0 { 0.9 } else { side };
                let mut c = || (next() * reach * 4.0).floor() / 4.0;
                Vec3::new(c(), c(), c())
            })
            .collect()
    }

    /// The lists and pairs of the kernel the CPU dispatches to (AVX on
    /// this machine when it has it) against the portable kernel run
    /// directly, and both against a brute-force count: with ties at the
    /// radius, a clump past the per-point threshold, several cell sizes, a
    /// zero and a NaN radius.
    #[test]
    fn the_dispatched_and_portable_kernels_agree_with_brute_force() {
        for (seed, n, side, cell, r) in [
            (1, 3000, 24.0, 2.0, 2.0),
            (2, 3000, 24.0, 1.0, 2.5),
            (3, 2000, 60.0, 4.0, 1.5),
            (4, 1500, 10.0, 2.0, 0.0),
            (5, 500, 10.0, 2.0, f32::NAN),
        ] {
            let points = lattice_points(seed, n, side);
            let ids: Vec<u32> = (0..n as u32).collect();
            let mut grid = SparseGrid::<Vec3, u32>::new(Vec3::ZERO, cell).unwrap();
            grid.rebuild(&ids, &points).unwrap();
            grid.ensure_pages();

            let mut lists = NeighborLists::new();
            grid.query_radius_all(r, &mut lists);
            let (mut offsets, mut neighbors) = (vec![0], Vec::new());
            let mut scratch = BatchScratch::default();
            grid.radius_all_with(Portable, 0..grid.cells().len(), r, &mut scratch, &mut offsets, &mut neighbors);
            assert_eq!(offsets, lists.offsets, "seed {seed}: list ends");
            assert_eq!(neighbors, lists.neighbors, "seed {seed}: lists");

            let mut pairs = Vec::new();
            grid.for_each_pair_within(r, |a, b| pairs.push((a, b)));
            let mut portable = Vec::new();
            grid.pairs_with(Portable, 0..grid.cells().len(), r, &mut scratch, &mut |a, b| portable.push((a, b)));
            assert_eq!(pairs, portable, "seed {seed}: pairs");

            let within = |a: Vec3, b: Vec3| a.distance_squared(b) <= r * r;
            let brute: usize = points.iter().map(|&p| points.iter().filter(|&&q| within(p, q)).count()).sum();
            assert_eq!(neighbors.len(), brute, "seed {seed}: hits");
            assert_eq!(pairs.len() * 2 + if r >= 0.0 { n } else { 0 }, brute, "seed {seed}: pairs");
            if r > 0.0 {
                assert!(pairs.len() > n, "seed {seed}: the set must have pairs to compare");
            }
        }
    }
}
