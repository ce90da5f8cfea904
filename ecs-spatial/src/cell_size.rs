//! Choosing a grid's cell size: [`suggest_cell_size`].
//!
//! A query around a point scans the rows of cells that its box touches.
//! Small cells scan less empty space but cost more rows (and more units of
//! cells, each gathering its box's points); large cells cost few rows but
//! test many points that lie outside the radius. Which wins depends on how
//! the points lie, so the helper builds a grid of the sample at each
//! candidate size, counts the work the batch queries would do there
//! ([`BatchWork`]: units, rows, gathers, kernel chunks, on the sample's own
//! cells, so clusters, their sparse fringes and outliers all count) and
//! prices it with a few per-item costs (see the README's measured table).

use std::ops::Range;

use crate::grid::SparseGrid;
use crate::point::GridPoint;
use crate::query::{BatchScratch, BatchWork};

/// Cell sizes tried, as multiples of the radius.
const FACTORS: [f32; 3] = [0.5, 1.0, 2.0];

/// Points whose queries' work is counted, at most: larger samples are
/// walked in [`WALK_BLOCKS`] runs of consecutive cells spread evenly over
/// the sorted points.
const WALK_POINTS: usize = 16_384;
const WALK_BLOCKS: usize = 32;

/// The cells of `grid` whose queries are counted: all of them up to
/// [`WALK_POINTS`] points, otherwise [`WALK_BLOCKS`] runs of consecutive
/// cells, each starting at an evenly spaced sorted point.
fn walk_blocks<P: GridPoint>(grid: &SparseGrid<P, u32>) -> Vec<Range<usize>> {
    let cells = grid.cells();
    let n = grid.len();
    if n <= WALK_POINTS {
        return std::iter::once(0..cells.len()).collect();
    }
    let per_block = WALK_POINTS / WALK_BLOCKS;
    let mut blocks: Vec<Range<usize>> = Vec::with_capacity(WALK_BLOCKS);
    for b in 0..WALK_BLOCKS {
        let slot = b * n / WALK_BLOCKS;
        // The cell holding sorted point `slot`, and enough cells after it.
        let from = cells.partition_point(|c| (c.start + c.count) as usize <= slot);
        let from = blocks.last().map_or(from, |last| from.max(last.end));
        if from >= cells.len() {
            break;
        }
        let target = cells[from].start as usize + per_block;
        let to = from + 1 + cells[from + 1..].partition_point(|c| (c.start as usize) < target);
        blocks.push(from..to);
    }
    blocks
}

/// A cell size for radius queries (and all pairs) of `radius` over points
/// like `sample`, or `radius` when the sample says nothing (empty, or
/// invalid input).
///
/// Pass the positions the grid will hold (up to 16 384 of them
/// are walked, in runs spread over the set): the work is counted on the
/// sample's own cells, so a random subset makes the points look sparser
/// and favours larger cells. The result is one of `radius * [0.5, 1, 2]`:
/// for each, a grid of the sample is built and the work of a radius query
/// around its points counted ([`SparseGrid::radius_all_work`]: per unit
/// of cells a set-up, its rows, the runs and points it gathers; per point
/// a set-up and its kernel chunks of 8 candidates), priced by
/// [`BatchWork::price`], and the cheapest per point wins. The sample's
/// grids take their origin at the sample point nearest the middle of its
/// box. Dense data
/// (many points per cell at `cell = radius`) gets smaller cells, sparse
/// data larger ones, clusters with sparse fringes what their points
/// actually cost; see the README for the measured costs and how close the
/// picks come.
///
/// ```
/// use ecs_spatial::suggest_cell_size;
/// use glam::Vec3;
/// // A dense lattice: 8 points per unit cube.
/// let dense: Vec<Vec3> =
///     (0..8000).map(|i| Vec3::new((i % 20) as f32, (i / 20 % 20) as f32, (i / 400) as f32) * 0.5).collect();
/// assert!(suggest_cell_size(&dense, 2.0) < 2.0);
/// // A sparse scatter: a point every 10 units.
/// let sparse: Vec<Vec3> = (0..1000).map(|i| Vec3::new(i as f32 * 10.0, 0.0, 0.0)).collect();
/// assert!(suggest_cell_size(&sparse, 2.0) >= 2.0);
/// ```
pub fn suggest_cell_size<P: GridPoint>(sample: &[P], radius: f32) -> f32 {
    if !(radius.is_finite() && radius > 0.0) || sample.is_empty() {
        return radius;
    }
    let Ok(ids) = (0..sample.len()).map(u32::try_from).collect::<Result<Vec<u32>, _>>() else { return radius };
    // The grids' origin: the sample point nearest the middle of its box, so
    // cell coordinates stay small (far from the origin the scan boxes' margin
    // for rounding grows with the coordinates, and the work with it).
    let (mut lo, mut hi) = (glam::Vec3::splat(f32::INFINITY), glam::Vec3::splat(f32::NEG_INFINITY));
    for p in sample {
        lo = lo.min(p.to_vec3());
        hi = hi.max(p.to_vec3());
    }
    let mid = (lo + hi) * 0.5;
    let origin = sample.iter().copied().min_by(|a, b| {
        let (da, db) = (a.to_vec3().distance_squared(mid), b.to_vec3().distance_squared(mid));
        da.total_cmp(&db)
    });
    let Some(origin) = origin else { return radius };
    let mut scratch = BatchScratch::default();
    let mut best = (f64::INFINITY, radius);
    for f in FACTORS {
        let cell = radius * f;
        let Ok(mut grid) = SparseGrid::<P, u32>::new(origin, cell) else { continue };
        if grid.rebuild(&ids, sample).is_err() {
            continue;
        }
        let mut work = BatchWork::default();
        for cells in walk_blocks(&grid) {
            grid.radius_all_work_of(cells, radius, &mut scratch, &mut work);
        }
        let cost = work.price(grid.lookup_kind());
        if cost < best.0 {
            best = (cost, cell);
        }
    }
    best.1
}
