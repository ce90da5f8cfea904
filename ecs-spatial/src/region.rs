//! Two-level keys for worlds wider than 2^21 cells: a region id plus a local
//! cell key.
//!
//! A global cell coordinate `g` (an `i64` per axis) splits into a region
//! `r = floor((g + BIAS) / 2^21)` and a local coordinate `l = g - r * 2^21` in
//! `CELL_MIN..=CELL_MAX`. Region 0 is exactly the single-level key space: for
//! `|g| < 2^20` the local key equals [`CellKey`] of `g`. Regions are packed the
//! same way as cells, so a two-level key covers `2^42` cells per axis.

use std::fmt;

use glam::DVec3;

use crate::cell::{AXIS_BITS, BIAS, CellCoord, CellKey};
use crate::error::EncodeError;

const REGION_SPAN: i64 = 1 << AXIS_BITS;
/// Smallest global cell coordinate a [`RegionKey`] can hold on any axis.
pub const GLOBAL_CELL_MIN: i64 = -(BIAS as i64) * REGION_SPAN - BIAS as i64;
/// Largest global cell coordinate a [`RegionKey`] can hold on any axis.
pub const GLOBAL_CELL_MAX: i64 = (BIAS as i64 - 1) * REGION_SPAN + BIAS as i64 - 1;

/// Integer cell coordinates in a world larger than one key range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalCell {
    /// Cell index along x.
    pub x: i64,
    /// Cell index along y.
    pub y: i64,
    /// Cell index along z.
    pub z: i64,
}

impl GlobalCell {
    /// A global cell from its components.
    pub const fn new(x: i64, y: i64, z: i64) -> Self {
        GlobalCell { x, y, z }
    }

    /// The cell containing `point`: `floor((point - origin) / cell_size)` in `f64`.
    ///
    /// # Errors
    /// [`EncodeError::NotFinite`] for NaN or infinite input,
    /// [`EncodeError::OutOfRange`] beyond what a [`RegionKey`] can hold.
    pub fn of_point(point: DVec3, origin: DVec3, cell_size: f64) -> Result<Self, EncodeError> {
        let axis = |p: f64, o: f64| -> Result<i64, EncodeError> {
            let c = ((p - o) / cell_size).floor();
            if !c.is_finite() {
                return Err(EncodeError::NotFinite);
            }
            // Both bounds are exact in f64 (|v| < 2^42).
            if c < GLOBAL_CELL_MIN as f64 || c > GLOBAL_CELL_MAX as f64 {
                return Err(EncodeError::OutOfRange);
            }
            Ok(c as i64)
        };
        Ok(GlobalCell { x: axis(point.x, origin.x)?, y: axis(point.y, origin.y)?, z: axis(point.z, origin.z)? })
    }
}

/// A packed region coordinate (same layout as [`CellKey`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegionId(CellKey);

impl RegionId {
    /// Packs a region coordinate.
    ///
    /// # Errors
    /// [`EncodeError::OutOfRange`] outside `CELL_MIN..=CELL_MAX` per axis.
    pub const fn pack(coord: CellCoord) -> Result<Self, EncodeError> {
        match CellKey::pack(coord) {
            Ok(k) => Ok(RegionId(k)),
            Err(e) => Err(e),
        }
    }

    /// The region coordinate.
    pub const fn coord(self) -> CellCoord {
        self.0.coord()
    }

    /// The raw packed bits.
    pub const fn raw(self) -> u64 {
        self.0.raw()
    }
}

impl fmt::Debug for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RegionId{}", self.coord())
    }
}

/// A two-level cell key: which region, and which cell inside it.
///
/// ```
/// use ecs_spatial::{GlobalCell, RegionKey};
///
/// let far = GlobalCell::new(5_000_000, -3, 1 << 20);
/// let key = RegionKey::from_global(far).unwrap();
/// assert_eq!(key.global(), far);
/// // Neighbours across a region border are found like any others.
/// let mut n = 0;
/// key.for_each_neighbor(1, |k| { n += 1; assert!(k.global().z >= (1 << 20) - 1); });
/// assert_eq!(n, 27);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RegionKey {
    /// The region.
    pub region: RegionId,
    /// The cell inside the region.
    pub local: CellKey,
}

fn split(g: i64) -> Result<(i32, i32), EncodeError> {
    let region = (g + BIAS as i64).div_euclid(REGION_SPAN);
    let local = g - region * REGION_SPAN;
    if region < -(BIAS as i64) || region >= BIAS as i64 {
        return Err(EncodeError::OutOfRange);
    }
    Ok((region as i32, local as i32))
}

impl RegionKey {
    /// Splits a global cell into region and local key.
    ///
    /// # Errors
    /// [`EncodeError::OutOfRange`] if the region does not fit 21 bits per axis.
    pub fn from_global(cell: GlobalCell) -> Result<Self, EncodeError> {
        let (rx, lx) = split(cell.x)?;
        let (ry, ly) = split(cell.y)?;
        let (rz, lz) = split(cell.z)?;
        Ok(RegionKey {
            region: RegionId::pack(CellCoord::new(rx, ry, rz))?,
            local: CellKey::pack(CellCoord::new(lx, ly, lz))?,
        })
    }

    /// The key of the cell containing `point`. See [`GlobalCell::of_point`].
    ///
    /// # Errors
    /// As [`GlobalCell::of_point`].
    pub fn of_point(point: DVec3, origin: DVec3, cell_size: f64) -> Result<Self, EncodeError> {
        RegionKey::from_global(GlobalCell::of_point(point, origin, cell_size)?)
    }

    /// The global cell coordinate.
    pub const fn global(self) -> GlobalCell {
        let r = self.region.coord();
        let l = self.local.coord();
        GlobalCell {
            x: r.x as i64 * REGION_SPAN + l.x as i64,
            y: r.y as i64 * REGION_SPAN + l.y as i64,
            z: r.z as i64 * REGION_SPAN + l.z as i64,
        }
    }

    /// The key `(dx, dy, dz)` cells away, crossing region borders as needed.
    ///
    /// # Errors
    /// [`EncodeError::OutOfRange`] if the result leaves the key space.
    pub fn offset(self, dx: i64, dy: i64, dz: i64) -> Result<Self, EncodeError> {
        let g = self.global();
        let (Some(x), Some(y), Some(z)) = (g.x.checked_add(dx), g.y.checked_add(dy), g.z.checked_add(dz)) else {
            return Err(EncodeError::OutOfRange);
        };
        RegionKey::from_global(GlobalCell { x, y, z })
    }

    /// Calls `f` for every key within Chebyshev distance `radius` cells
    /// (including `self`), in `z`, `y`, `x` order, crossing region borders.
    /// Neighbours outside the key space are skipped without being visited:
    /// the loop runs once per key it reports.
    pub fn for_each_neighbor(self, radius: u32, mut f: impl FnMut(RegionKey)) {
        let r = radius as i64;
        let g = self.global();
        // The offsets along one axis that stay inside the key space.
        let span = |v: i64| (-r).max(GLOBAL_CELL_MIN - v)..=r.min(GLOBAL_CELL_MAX - v);
        for dz in span(g.z) {
            for dy in span(g.y) {
                for dx in span(g.x) {
                    if let Ok(k) = self.offset(dx, dy, dz) {
                        f(k);
                    }
                }
            }
        }
    }
}

impl fmt::Debug for RegionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.global();
        write!(
            f,
            "RegionKey{{region: {}, local: {}, global: ({}, {}, {})}}",
            self.region.coord(),
            self.local,
            g.x,
            g.y,
            g.z
        )
    }
}

impl fmt::Display for RegionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.global();
        write!(f, "({}, {}, {})", g.x, g.y, g.z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn region_zero_is_the_single_level_key() {
        for g in [0i64, 1, -1, BIAS as i64 - 1, -(BIAS as i64)] {
            let key = RegionKey::from_global(GlobalCell::new(g, 3, 7)).unwrap();
            assert_eq!(key.region.coord(), CellCoord::new(0, 0, 0));
            assert_eq!(key.local, CellKey::pack(CellCoord::new(g as i32, 3, 7)).unwrap());
        }
        let key = RegionKey::from_global(GlobalCell::new(BIAS as i64, 0, 0)).unwrap();
        assert_eq!(key.region.coord(), CellCoord::new(1, 0, 0));
        assert_eq!(key.local.coord().x, -BIAS);
    }

    #[test]
    fn neighbours_cross_region_borders() {
        let edge = RegionKey::from_global(GlobalCell::new(BIAS as i64 - 1, 0, 0)).unwrap();
        let mut seen = Vec::new();
        edge.for_each_neighbor(1, |k| seen.push(k.global()));
        assert_eq!(seen.len(), 27);
        let mut expected = Vec::new();
        for z in -1..=1 {
            for y in -1..=1 {
                for x in -1..=1 {
                    expected.push(GlobalCell::new(BIAS as i64 - 1 + x, y, z));
                }
            }
        }
        assert_eq!(seen, expected);
        let right = edge.offset(1, 0, 0).unwrap();
        assert_ne!(right.region, edge.region);
        assert_eq!(right.offset(-1, 0, 0), Ok(edge));
    }

    #[test]
    fn world_edges_are_errors() {
        let g = GlobalCell::new(GLOBAL_CELL_MAX, GLOBAL_CELL_MIN, 0);
        assert_eq!(RegionKey::from_global(g).map(RegionKey::global), Ok(g));
        assert_eq!(RegionKey::from_global(GlobalCell::new(GLOBAL_CELL_MAX + 1, 0, 0)), Err(EncodeError::OutOfRange));
        assert_eq!(RegionKey::from_global(GlobalCell::new(0, GLOBAL_CELL_MIN - 1, 0)), Err(EncodeError::OutOfRange));
        let corner = RegionKey::from_global(GlobalCell::new(GLOBAL_CELL_MAX, 0, 0)).unwrap();
        let mut n = 0;
        corner.for_each_neighbor(1, |_| n += 1);
        assert_eq!(n, 18);
        let mut keys = Vec::new();
        corner.for_each_neighbor(3, |k| keys.push(k.global()));
        assert_eq!(keys.len(), 4 * 7 * 7);
        assert!(keys.windows(2).all(|w| (w[0].z, w[0].y, w[0].x) < (w[1].z, w[1].y, w[1].x)));
        assert_eq!(GlobalCell::of_point(DVec3::new(f64::NAN, 0.0, 0.0), DVec3::ZERO, 1.0), Err(EncodeError::NotFinite));
        assert_eq!(GlobalCell::of_point(DVec3::new(1e300, 0.0, 0.0), DVec3::ZERO, 1.0), Err(EncodeError::OutOfRange));
        assert_eq!(
            GlobalCell::of_point(DVec3::new(-0.5, 1e7, 0.0), DVec3::ZERO, 1.0),
            Ok(GlobalCell::new(-1, 10_000_000, 0))
        );
    }

    proptest! {
        #[test]
        fn global_round_trips(x in GLOBAL_CELL_MIN..=GLOBAL_CELL_MAX, y in GLOBAL_CELL_MIN..=GLOBAL_CELL_MAX, z in GLOBAL_CELL_MIN..=GLOBAL_CELL_MAX) {
            let g = GlobalCell::new(x, y, z);
            let key = RegionKey::from_global(g).unwrap();
            prop_assert_eq!(key.global(), g);
        }

        #[test]
        fn key_order_matches_within_a_region(a in -1000i64..1000, b in -1000i64..1000) {
            let ka = RegionKey::from_global(GlobalCell::new(a, 0, 0)).unwrap();
            let kb = RegionKey::from_global(GlobalCell::new(b, 0, 0)).unwrap();
            prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
        }
    }
}
