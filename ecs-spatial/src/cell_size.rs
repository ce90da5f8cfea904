//! Choosing a grid's cell size: [`suggest_cell_size`].
//!
//! A query around a point scans the rows of cells that its box touches.
//! Small cells scan less empty space but cost more rows (and each row at
//! least one chunk of the distance kernel); large cells cost few rows but
//! test many points that lie outside the radius. Which wins depends on how
//! many points a cell holds, so the helper measures the local density of a
//! sample and prices each candidate size with a small cost model of this
//! crate's query loop (see the README's measured table).

use crate::grid::SparseGrid;
use crate::point::GridPoint;

/// Cell sizes tried, as multiples of the radius.
const FACTORS: [f32; 5] = [0.5, 0.75, 1.0, 1.5, 2.0];

/// Sample points whose neighbourhoods are counted, at most.
const PROBES: usize = 512;

/// Cost of one row of cells looked up through the dense table, relative
/// to one chunk of 8 lanes of the distance kernel; fitted to all radius
/// queries over 100k uniform points at cells of `r / 2`, `r` and `2 r`
/// (README), and checked on clustered and clustered-sparse points.
const ROW_COST_DENSE: f32 = 0.33;
/// The same through the hash table (a probe and a search of the row; on
/// clustered-sparse points at `r / 2` it measured about 25x a dense one).
const ROW_COST_HASHED: f32 = 8.0;
/// Cost of one chunk of the kernel.
const CHUNK_COST: f32 = 1.0;
/// The grid's dense-table limit (cells per point, plus a floor).
const DENSE_CELLS_PER_POINT: f32 = 16.0;
const DENSE_CELLS_MIN: f32 = 65_536.0;

/// A cell size for radius queries (and all pairs) of `radius` over points
/// like `sample`, or `radius` when the sample says nothing (empty, or
/// invalid input).
///
/// Pass the positions the grid will hold, or a random subset of them of at
/// least a few thousand points: the local density is measured on the
/// sample, so a small subset makes it look sparser and favours larger
/// cells. The result is one of `radius * [0.5, 0.75, 1, 1.5, 2]`, the one
/// whose modelled cost per query is lowest: with `m` points per cell (at
/// least one in an occupied cell), a cell's scan box spans
/// `k = 1 + (cell * m / (m + 1) + 2 * radius) / cell` cells per axis, so
/// each point pays `k^2 / m` row lookups (the box is shared by the cell's
/// points; a lookup through the hash table, which the grid uses when the
/// sample's box would hold too many cells, costs far more than a dense one)
/// and `k^2 * max(1, k * m / 8)` kernel chunks. Dense data (many points per
/// cell at `cell = radius`) gets smaller cells, sparse data larger ones.
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
    // The mean number of sample points per occupied cell of edge `radius`
    // around a probe point's cell, from a grid over the sample.
    let origin = sample[0];
    let Ok(mut grid) = SparseGrid::<P, u32>::new(origin, radius) else { return radius };
    let ids: Vec<u32> = (0..sample.len() as u32).collect();
    if grid.rebuild(&ids, sample).is_err() {
        return radius;
    }
    let step = (sample.len() / PROBES).max(1);
    let (mut around, mut probes) = (0usize, 0usize);
    let mut hits = Vec::new();
    for &p in sample.iter().step_by(step) {
        grid.query_radius(p, radius, &mut hits);
        around += hits.len();
        probes += 1;
    }
    // Points per unit of volume (or area) near a typical point.
    let ball = if P::DIMENSIONS == 3 {
        4.0 / 3.0 * std::f32::consts::PI * radius * radius * radius
    } else {
        std::f32::consts::PI * radius * radius
    };
    let density = around as f32 / probes.max(1) as f32 / ball;
    // The sample's extent, for the lookup each size would get.
    let (mut lo, mut hi) = (glam::Vec3::splat(f32::INFINITY), glam::Vec3::splat(f32::NEG_INFINITY));
    for p in sample {
        lo = lo.min(p.to_vec3());
        hi = hi.max(p.to_vec3());
    }
    let extent = (hi - lo).max(glam::Vec3::ZERO);
    let mut best = (f32::INFINITY, radius);
    for f in FACTORS {
        let cell = radius * f;
        let m = density * if P::DIMENSIONS == 3 { cell * cell * cell } else { cell * cell };
        let per_cell = m.max(1.0);
        let k = 1.0 + (m / (m + 1.0) + 2.0 / f);
        let rows = if P::DIMENSIONS == 3 { k * k } else { k };
        let cells = (extent / cell + 1.0).element_product();
        let dense = cells <= DENSE_CELLS_PER_POINT * sample.len() as f32 + DENSE_CELLS_MIN;
        let row_cost = if dense { ROW_COST_DENSE } else { ROW_COST_HASHED };
        let cost = row_cost * rows / per_cell + CHUNK_COST * rows * (k * per_cell / 8.0).max(1.0);
        if cost < best.0 {
            best = (cost, cell);
        }
    }
    best.1
}
