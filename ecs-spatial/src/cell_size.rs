//! Choosing a grid's cell size: [`suggest_cell_size`].
//!
//! A query around a point scans the rows of cells that its box touches.
//! Small cells scan less empty space but cost more rows (and more units of
//! cells, each gathering its box's points); large cells cost few rows but
//! test many points that lie outside the radius. Which wins depends on how
//! many points a cell holds, so the helper measures the local density of a
//! sample and prices each candidate size with a small cost model of the
//! batch queries (see the README's measured table).

use crate::grid::SparseGrid;
use crate::point::GridPoint;

/// Cell sizes tried, as multiples of the radius.
const FACTORS: [f32; 3] = [0.5, 1.0, 2.0];

/// Sample points whose neighbourhoods are counted, at most.
const PROBES: usize = 512;

/// The cost model of a radius query around every point, in units of one
/// chunk of 8 lanes of the distance kernel (about 50 instructions), from
/// instruction counts of the batch queries (see the README's table):
/// per point (its scan set-up and hit list),
const POINT_COST: f32 = 1.7;
/// per unit of cells sharing a scan box (box, row walk and gather set-up),
const UNIT_COST: f32 = 4.0;
/// per row of a unit's box through the dense table or a row cursor,
const ROW_COST_DENSE: f32 = 0.2;
const ROW_COST_CURSOR: f32 = 0.3;
/// per row of a unit's box that holds points (gathered),
const GATHER_COST: f32 = 1.0;
const GATHER_POINT_COST: f32 = 0.09;
/// and per chunk of candidates a point tests.
const CHUNK_COST: f32 = 1.0;
/// A unit takes cells of a row until it holds this many points or spans
/// this many radii (as the batch queries do).
const UNIT_POINTS: f32 = 6.0;
const UNIT_REACH: f32 = 8.0;
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
/// cells. The result is one of `radius * [0.5, 1, 2]`, the one whose
/// modelled cost of a radius query around every point is lowest. With `m`
/// points per cell and `rc = radius / cell`, the batch queries group the
/// cells of a row into units of about 6 points (a cell with more is a unit
/// of its own) spanning `w` cells along x; a unit's scan box spans
/// `2 rc + 1` cells per axis (plus `w - 1` along x), so it has
/// `(2 rc + 1)^2` rows and about `(2 rc + w) (2 rc + 1)^2 m` candidates.
/// The model prices per unit a set-up, its rows (a dense-table lookup or a
/// row cursor, by the lookup the sample's box would get), the rows and
/// points it gathers; and per point a set-up and its kernel chunks of 8
/// candidates. Dense data (many points per cell at `cell = radius`) gets
/// smaller cells, sparse data larger ones; see the README for the measured
/// costs behind the constants and how close the picks come.
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
    let dims = P::DIMENSIONS as i32;
    let mut best = (f32::INFINITY, radius);
    for f in FACTORS {
        let cell = radius * f;
        let rc = 1.0 / f;
        // Points per cell, and a unit: a run of cells of one row holding
        // about UNIT_POINTS points (a dense cell is a unit of its own),
        // spanning `w` cells along x.
        let m = density * if P::DIMENSIONS == 3 { cell * cell * cell } else { cell * cell };
        let w = if m >= UNIT_POINTS {
            1.0
        } else {
            (1.0 + (UNIT_POINTS - 1.0) / m.max(1e-6)).min(UNIT_REACH * rc.max(1.0))
        };
        let points = m.max(1.0) + m * (w - 1.0);
        // A box reaches `rc` cells on each side of its points, which lie
        // anywhere in their cells: `2 rc + 1` cells per axis on average
        // (plus the unit's extent along x).
        let side = 2.0 * rc + 1.0;
        let rows = side.powi(dims - 1);
        let candidates = (side + w - 1.0) * rows * m;
        let filled = rows * (1.0 - (-m * (side + w - 1.0)).exp());
        let cells = (extent / cell + 1.0).element_product();
        let dense = cells <= DENSE_CELLS_PER_POINT * sample.len() as f32 + DENSE_CELLS_MIN;
        let row_cost = if dense { ROW_COST_DENSE } else { ROW_COST_CURSOR };
        let per_unit = UNIT_COST + rows * row_cost + filled * GATHER_COST + candidates * GATHER_POINT_COST;
        let cost = per_unit / points + POINT_COST + CHUNK_COST * (candidates / 8.0).max(1.0);
        if cost < best.0 {
            best = (cost, cell);
        }
    }
    best.1
}
