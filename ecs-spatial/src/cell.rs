//! Exact cell keys: `floor((p - origin) / cell_size)` per axis, biased and
//! packed 21 bits per axis into a `u64`.
//!
//! Bit layout of a [`CellKey`]: bits 0..21 hold `x + BIAS`, bits 21..42 hold
//! `y + BIAS`, bits 42..63 hold `z + BIAS`; bit 63 is always zero. Sorting keys
//! therefore sorts cells by `z`, then `y`, then `x`: the cells of one row along
//! `x` are adjacent, which is what the grid's queries rely on. 2D cells use
//! `z = 0`.
//!
//! Packing never wraps: a coordinate outside `CELL_MIN..=CELL_MAX`, or a NaN or
//! infinite input, is an [`EncodeError`]. Unlike a prime-xor hash, two distinct
//! cells never share a key.

use std::fmt;

use glam::{Vec2, Vec3};

use crate::error::EncodeError;

/// Bits per axis in a packed key.
pub const AXIS_BITS: u32 = 21;
/// Added to a signed cell coordinate before packing.
pub const BIAS: i32 = 1 << (AXIS_BITS - 1);
/// Smallest cell coordinate a key can hold on any axis.
pub const CELL_MIN: i32 = -BIAS;
/// Largest cell coordinate a key can hold on any axis.
pub const CELL_MAX: i32 = BIAS - 1;
/// Mask of one packed axis.
pub const AXIS_MASK: u64 = (1 << AXIS_BITS) - 1;

/// Integer coordinates of a cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellCoord {
    /// Cell index along x.
    pub x: i32,
    /// Cell index along y.
    pub y: i32,
    /// Cell index along z (0 for 2D).
    pub z: i32,
}

impl CellCoord {
    /// A cell coordinate from its three components.
    pub const fn new(x: i32, y: i32, z: i32) -> Self {
        CellCoord { x, y, z }
    }

    /// Whether every axis lies in `CELL_MIN..=CELL_MAX`.
    pub const fn in_range(self) -> bool {
        in_range(self.x) && in_range(self.y) && in_range(self.z)
    }
}

impl fmt::Display for CellCoord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

const fn in_range(v: i32) -> bool {
    v >= CELL_MIN && v <= CELL_MAX
}

/// The cell index of one coordinate: `floor((value - origin) / cell_size)`.
///
/// Floor, never truncation: with a cell size of 1, `-0.5` is in cell `-1`.
/// `cell_size` must be positive (see [`EncodingConfig`](crate::EncodingConfig)
/// for a validated form).
///
/// # Errors
/// [`EncodeError::NotFinite`] for NaN or infinite input or quotient,
/// [`EncodeError::OutOfRange`] when the cell lies outside `CELL_MIN..=CELL_MAX`.
///
/// ```
/// use ecs_spatial::cell_axis;
/// assert_eq!(cell_axis(-1.7, 0.0, 1.0), Ok(-2));
/// assert_eq!(cell_axis(-0.5, 0.0, 1.0), Ok(-1));
/// assert_eq!(cell_axis(0.0, 0.0, 1.0), Ok(0));
/// assert_eq!(cell_axis(1.7, 0.0, 1.0), Ok(1));
/// assert!(cell_axis(f32::NAN, 0.0, 1.0).is_err());
/// ```
#[inline]
pub fn cell_axis(value: f32, origin: f32, cell_size: f32) -> Result<i32, EncodeError> {
    let quotient = (value - origin) / cell_size;
    // `floor(q)` lies in CELL_MIN..=CELL_MAX exactly when q lies in
    // [CELL_MIN, CELL_MAX + 1) (both bounds are exact in f32). NaN fails too.
    if !(quotient >= CELL_MIN as f32 && quotient < (CELL_MAX + 1) as f32) {
        return Err(if quotient.is_finite() { EncodeError::OutOfRange } else { EncodeError::NotFinite });
    }
    // In range, truncation is exact and the step down for negative
    // non-integers is branch-free (no libm `floorf` call).
    let t = quotient as i32;
    Ok(t - ((t as f32) > quotient) as i32)
}

/// `v.floor()` as an `i64`, saturating (`NaN` gives 0), without a libm call
/// on targets that lack a floor instruction.
#[inline(always)]
pub(crate) fn floor_to_i64(v: f32) -> i64 {
    let t = v as i64; // truncates toward zero, saturates
    // For |v| < 2^63 `t as f32` is exact when v is an integer, so this only
    // steps down for negative non-integers.
    if (t as f32) > v { t.saturating_sub(1) } else { t }
}

/// The cell of a 3D point. See [`cell_axis`].
///
/// # Errors
/// As [`cell_axis`], for the first axis that fails.
#[inline]
pub fn cell_of(point: Vec3, origin: Vec3, cell_size: f32) -> Result<CellCoord, EncodeError> {
    Ok(CellCoord {
        x: cell_axis(point.x, origin.x, cell_size)?,
        y: cell_axis(point.y, origin.y, cell_size)?,
        z: cell_axis(point.z, origin.z, cell_size)?,
    })
}

/// The cell of a 2D point (`z = 0`). See [`cell_axis`].
///
/// # Errors
/// As [`cell_axis`], for the first axis that fails.
#[inline]
pub fn cell_of_2d(point: Vec2, origin: Vec2, cell_size: f32) -> Result<CellCoord, EncodeError> {
    Ok(CellCoord { x: cell_axis(point.x, origin.x, cell_size)?, y: cell_axis(point.y, origin.y, cell_size)?, z: 0 })
}

/// A packed cell key: three biased 21-bit axes in one `u64`.
///
/// `Debug` and `Display` show the cell coordinates, not the raw bits.
///
/// ```
/// use ecs_spatial::{CellCoord, CellKey};
/// let key = CellKey::pack(CellCoord::new(-2, 0, 7)).unwrap();
/// assert_eq!(key.coord(), CellCoord::new(-2, 0, 7));
/// assert_eq!(format!("{key}"), "(-2, 0, 7)");
/// assert!(CellKey::pack(CellCoord::new(1 << 20, 0, 0)).is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey(u64);

impl CellKey {
    /// Packs a cell coordinate.
    ///
    /// # Errors
    /// [`EncodeError::OutOfRange`] if an axis lies outside `CELL_MIN..=CELL_MAX`.
    #[inline]
    pub const fn pack(coord: CellCoord) -> Result<Self, EncodeError> {
        if !coord.in_range() {
            return Err(EncodeError::OutOfRange);
        }
        Ok(CellKey(pack_unchecked(coord.x, coord.y, coord.z)))
    }

    /// Unpacks the cell coordinate.
    #[inline]
    pub const fn coord(self) -> CellCoord {
        CellCoord {
            x: (self.0 & AXIS_MASK) as i32 - BIAS,
            y: ((self.0 >> AXIS_BITS) & AXIS_MASK) as i32 - BIAS,
            z: ((self.0 >> (2 * AXIS_BITS)) & AXIS_MASK) as i32 - BIAS,
        }
    }

    /// The raw packed bits (always below `2^63`).
    #[inline]
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// A key from raw bits, as produced by [`CellKey::raw`].
    ///
    /// # Errors
    /// [`EncodeError::InvalidKey`] if bit 63 is set.
    #[inline]
    pub const fn from_raw(raw: u64) -> Result<Self, EncodeError> {
        if raw >> (3 * AXIS_BITS) != 0 {
            return Err(EncodeError::InvalidKey);
        }
        Ok(CellKey(raw))
    }

    /// A key from bits known to be valid (made by packing in-range coordinates).
    #[inline]
    pub(crate) const fn from_raw_unchecked(raw: u64) -> Self {
        debug_assert!(raw >> (3 * AXIS_BITS) == 0);
        CellKey(raw)
    }

    /// The key of the cell `(dx, dy, dz)` cells away.
    ///
    /// # Errors
    /// [`EncodeError::OutOfRange`] if the neighbour lies outside the key range.
    #[inline]
    pub fn offset(self, dx: i32, dy: i32, dz: i32) -> Result<Self, EncodeError> {
        let c = self.coord();
        let (Some(x), Some(y), Some(z)) = (c.x.checked_add(dx), c.y.checked_add(dy), c.z.checked_add(dz)) else {
            return Err(EncodeError::OutOfRange);
        };
        CellKey::pack(CellCoord { x, y, z })
    }

    /// The key of the cell containing a 3D point.
    ///
    /// # Errors
    /// As [`cell_axis`].
    #[inline]
    pub fn of_point(point: Vec3, origin: Vec3, cell_size: f32) -> Result<Self, EncodeError> {
        Ok(CellKey(pack_coord(cell_of(point, origin, cell_size)?)))
    }

    /// The key of the cell containing a 2D point (`z = 0`).
    ///
    /// # Errors
    /// As [`cell_axis`].
    #[inline]
    pub fn of_point_2d(point: Vec2, origin: Vec2, cell_size: f32) -> Result<Self, EncodeError> {
        Ok(CellKey(pack_coord(cell_of_2d(point, origin, cell_size)?)))
    }
}

/// Packs coordinates already known to be in range.
#[inline]
pub(crate) const fn pack_unchecked(x: i32, y: i32, z: i32) -> u64 {
    debug_assert!(in_range(x) && in_range(y) && in_range(z));
    ((x + BIAS) as u64) | (((y + BIAS) as u64) << AXIS_BITS) | (((z + BIAS) as u64) << (2 * AXIS_BITS))
}

#[inline]
const fn pack_coord(c: CellCoord) -> u64 {
    pack_unchecked(c.x, c.y, c.z)
}

impl fmt::Debug for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CellKey{}", self.coord())
    }
}

impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.coord(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn floor_not_truncation() {
        assert_eq!(cell_axis(-1.7, 0.0, 1.0), Ok(-2));
        assert_eq!(cell_axis(-0.5, 0.0, 1.0), Ok(-1));
        assert_eq!(cell_axis(0.0, 0.0, 1.0), Ok(0));
        assert_eq!(cell_axis(-0.0, 0.0, 1.0), Ok(0));
        assert_eq!(cell_axis(1.7, 0.0, 1.0), Ok(1));
        assert_eq!(cell_axis(10.0, 0.0, 5.0), Ok(2));
        assert_eq!(cell_axis(-10.0, 0.0, 5.0), Ok(-2));
        assert_eq!(cell_axis(3.0, 4.0, 2.0), Ok(-1));
    }

    #[test]
    fn fast_floor_matches_floor() {
        for v in [0.0f32, -0.0, 0.5, -0.5, 1.0, -1.0, -1.7, 1.7, 1e9, -1e9, 8388607.5, -8388607.5, 3e19, -3e19] {
            assert_eq!(floor_to_i64(v), v.floor() as i64, "{v}");
        }
        assert_eq!(floor_to_i64(f32::INFINITY), i64::MAX);
        assert_eq!(floor_to_i64(f32::NEG_INFINITY), i64::MIN);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert_eq!(cell_axis(f32::NAN, 0.0, 1.0), Err(EncodeError::NotFinite));
        assert_eq!(cell_axis(f32::INFINITY, 0.0, 1.0), Err(EncodeError::NotFinite));
        assert_eq!(cell_axis(f32::NEG_INFINITY, 0.0, 1.0), Err(EncodeError::NotFinite));
        assert_eq!(cell_axis(1.0, f32::NAN, 1.0), Err(EncodeError::NotFinite));
        assert_eq!(cell_axis(1.0e30, 0.0, 1.0), Err(EncodeError::OutOfRange));
        // The range edges themselves are fine; one past is not.
        assert_eq!(cell_axis(CELL_MAX as f32 + 0.5, 0.0, 1.0), Ok(CELL_MAX));
        assert_eq!(cell_axis(CELL_MAX as f32 + 1.0, 0.0, 1.0), Err(EncodeError::OutOfRange));
        assert_eq!(cell_axis(CELL_MIN as f32, 0.0, 1.0), Ok(CELL_MIN));
        assert_eq!(cell_axis(CELL_MIN as f32 - 0.5, 0.0, 1.0), Err(EncodeError::OutOfRange));
        assert_eq!(CellKey::pack(CellCoord::new(0, CELL_MIN - 1, 0)), Err(EncodeError::OutOfRange));
        assert_eq!(CellKey::from_raw(1 << 63), Err(EncodeError::InvalidKey));
        assert_eq!(
            CellKey::pack(CellCoord::new(CELL_MAX, 0, 0)).unwrap().offset(1, 0, 0),
            Err(EncodeError::OutOfRange)
        );
    }

    #[test]
    fn key_order_is_z_then_y_then_x() {
        let a = CellKey::pack(CellCoord::new(5, 0, 0)).unwrap();
        let b = CellKey::pack(CellCoord::new(-5, 1, 0)).unwrap();
        let c = CellKey::pack(CellCoord::new(-5, -5, 1)).unwrap();
        assert!(a < b && b < c);
        let min = CellKey::pack(CellCoord::new(CELL_MIN, CELL_MIN, CELL_MIN)).unwrap();
        let max = CellKey::pack(CellCoord::new(CELL_MAX, CELL_MAX, CELL_MAX)).unwrap();
        assert_eq!(min.raw(), 0);
        assert_eq!(max.raw(), (1 << 63) - 1);
        assert_eq!(format!("{max:?}"), format!("CellKey({CELL_MAX}, {CELL_MAX}, {CELL_MAX})"));
    }

    proptest! {
        #[test]
        fn pack_round_trips(x in CELL_MIN..=CELL_MAX, y in CELL_MIN..=CELL_MAX, z in CELL_MIN..=CELL_MAX) {
            let c = CellCoord::new(x, y, z);
            let key = CellKey::pack(c).unwrap();
            prop_assert_eq!(key.coord(), c);
            prop_assert_eq!(CellKey::from_raw(key.raw()), Ok(key));
        }

        #[test]
        fn fast_floor_agrees(v in any::<f32>()) {
            prop_assert_eq!(floor_to_i64(v), v.floor() as i64);
        }

        #[test]
        fn point_lies_in_its_cell(p in crate::uniform_f32(-1.0e5, 1.0e5), o in crate::uniform_f32(-100.0, 100.0), size in crate::uniform_f32(0.01, 100.0)) {
            let q = (p - o) / size;
            match cell_axis(p, o, size) {
                Ok(c) => prop_assert!(c as f32 <= q && q < c as f32 + 1.0),
                // Small cells over a large span leave the 21-bit range: that
                // is an error, never a wrapped key.
                Err(e) => {
                    prop_assert_eq!(e, EncodeError::OutOfRange);
                    prop_assert!(q.floor() < CELL_MIN as f32 || q.floor() > CELL_MAX as f32, "q = {}", q);
                }
            }
        }

        #[test]
        fn cell_borders_belong_to_the_upper_cell(k in -10_000i32..10_000, size in prop::sample::select(vec![0.25f32, 0.5, 1.0, 2.0, 4.0, 8.0])) {
            // Multiples of a power-of-two cell size are exact: the border is the start of cell k.
            let p = k as f32 * size;
            prop_assert_eq!(cell_axis(p, 0.0, size), Ok(k));
        }
    }
}
