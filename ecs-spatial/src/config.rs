//! The versioned encoding config both ends of a pipe agree on, and fixed-point
//! quantization with round.

use glam::{DVec3, IVec3, Vec3};

use crate::cell::{CellCoord, CellKey, cell_of};
use crate::error::{ConfigError, ConfigField, EncodeError};

/// How positions become cell keys and fixed-point integers.
///
/// Two ends that exchange keys or quantized positions compare their configs
/// with [`EncodingConfig::check_compatible`] and refuse data encoded under a
/// different one. Equality is bitwise on the floats, so a config survives a
/// round trip through bytes unchanged.
///
/// ```
/// use ecs_spatial::EncodingConfig;
/// use glam::Vec3;
///
/// let config = EncodingConfig::new(Vec3::ZERO, 4.0, 0.01, 1).unwrap();
/// let q = config.quantize(Vec3::new(1.234, -5.0, 0.005)).unwrap();
/// let back = config.dequantize(q);
/// assert!((back - Vec3::new(1.234, -5.0, 0.005)).abs().max_element() <= 0.005 + 1e-6);
///
/// let other = EncodingConfig::new(Vec3::ZERO, 4.0, 0.01, 2).unwrap();
/// assert!(config.check_compatible(&other).is_err());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct EncodingConfig {
    /// World position of the corner of cell (0, 0, 0) and of quantized zero.
    pub origin: Vec3,
    /// Edge length of a cell.
    pub cell_size: f32,
    /// Quantization step: one fixed-point unit in world units.
    pub unit: f32,
    /// Format version, bumped whenever any of the above changes for stored data.
    pub version: u32,
}

impl EncodingConfig {
    /// A validated config.
    ///
    /// # Errors
    /// See [`EncodingConfig::validate`].
    pub fn new(origin: Vec3, cell_size: f32, unit: f32, version: u32) -> Result<Self, ConfigError> {
        let config = EncodingConfig { origin, cell_size, unit, version };
        config.validate()?;
        Ok(config)
    }

    /// Checks that the origin is finite and the cell size and unit are finite
    /// and positive.
    ///
    /// # Errors
    /// [`ConfigError::NonFiniteOrigin`], [`ConfigError::InvalidCellSize`] or
    /// [`ConfigError::InvalidUnit`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.origin.is_finite() {
            return Err(ConfigError::NonFiniteOrigin);
        }
        if !(self.cell_size.is_finite() && self.cell_size > 0.0) {
            return Err(ConfigError::InvalidCellSize);
        }
        if !(self.unit.is_finite() && self.unit > 0.0) {
            return Err(ConfigError::InvalidUnit);
        }
        Ok(())
    }

    /// Checks that data encoded with `other` decodes correctly with `self`:
    /// same version, and bitwise the same origin, cell size and unit.
    ///
    /// # Errors
    /// [`ConfigError::Mismatch`] naming the first field that differs.
    pub fn check_compatible(&self, other: &EncodingConfig) -> Result<(), ConfigError> {
        if self.version != other.version {
            return Err(ConfigError::Mismatch(ConfigField::Version));
        }
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits();
        if !(same(self.origin.x, other.origin.x)
            && same(self.origin.y, other.origin.y)
            && same(self.origin.z, other.origin.z))
        {
            return Err(ConfigError::Mismatch(ConfigField::Origin));
        }
        if !same(self.cell_size, other.cell_size) {
            return Err(ConfigError::Mismatch(ConfigField::CellSize));
        }
        if !same(self.unit, other.unit) {
            return Err(ConfigError::Mismatch(ConfigField::Unit));
        }
        Ok(())
    }

    /// The cell containing `point`.
    ///
    /// # Errors
    /// As [`cell_axis`](crate::cell_axis).
    #[inline]
    pub fn cell(&self, point: Vec3) -> Result<CellCoord, EncodeError> {
        cell_of(point, self.origin, self.cell_size)
    }

    /// The key of the cell containing `point`.
    ///
    /// # Errors
    /// As [`cell_axis`](crate::cell_axis).
    #[inline]
    pub fn cell_key(&self, point: Vec3) -> Result<CellKey, EncodeError> {
        CellKey::of_point(point, self.origin, self.cell_size)
    }

    /// The world-space centre of a cell.
    #[inline]
    pub fn cell_center(&self, key: CellKey) -> Vec3 {
        let c = key.coord();
        let centre = DVec3::new(c.x as f64 + 0.5, c.y as f64 + 0.5, c.z as f64 + 0.5) * self.cell_size as f64
            + self.origin.as_dvec3();
        centre.as_vec3()
    }

    /// Fixed-point quantization with round (half away from zero):
    /// `round((p - origin) / unit)` per axis, computed in `f64`.
    ///
    /// The reconstruction error of [`dequantize_f64`](Self::dequantize_f64) is
    /// at most `unit / 2` per axis.
    ///
    /// # Errors
    /// [`EncodeError::NotFinite`] for NaN or infinite input,
    /// [`EncodeError::OutOfRange`] when a value does not fit an `i32`.
    #[inline]
    pub fn quantize(&self, point: Vec3) -> Result<IVec3, EncodeError> {
        Ok(IVec3::new(
            quantize_axis(point.x, self.origin.x, self.unit)?,
            quantize_axis(point.y, self.origin.y, self.unit)?,
            quantize_axis(point.z, self.origin.z, self.unit)?,
        ))
    }

    /// The inverse of [`quantize`](Self::quantize), in `f64`.
    #[inline]
    pub fn dequantize_f64(&self, q: IVec3) -> DVec3 {
        q.as_dvec3() * self.unit as f64 + self.origin.as_dvec3()
    }

    /// The inverse of [`quantize`](Self::quantize), rounded to `f32` (which
    /// adds at most half an `f32` ulp of the result to the `unit / 2` bound).
    #[inline]
    pub fn dequantize(&self, q: IVec3) -> Vec3 {
        self.dequantize_f64(q).as_vec3()
    }
}

impl PartialEq for EncodingConfig {
    fn eq(&self, other: &Self) -> bool {
        self.check_compatible(other).is_ok()
    }
}

impl Eq for EncodingConfig {}

/// `round((value - origin) / unit)` as an `i32`, computed in `f64`.
///
/// # Errors
/// [`EncodeError::NotFinite`] or [`EncodeError::OutOfRange`].
#[inline]
pub fn quantize_axis(value: f32, origin: f32, unit: f32) -> Result<i32, EncodeError> {
    let q = ((value as f64 - origin as f64) / unit as f64).round();
    if !q.is_finite() {
        return Err(EncodeError::NotFinite);
    }
    if q < i32::MIN as f64 || q > i32::MAX as f64 {
        return Err(EncodeError::OutOfRange);
    }
    Ok(q as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn config() -> EncodingConfig {
        EncodingConfig::new(Vec3::new(-3.0, 10.0, 0.5), 2.0, 0.01, 3).unwrap()
    }

    #[test]
    fn validation() {
        assert_eq!(EncodingConfig::new(Vec3::NAN, 1.0, 1.0, 0), Err(ConfigError::NonFiniteOrigin));
        assert_eq!(EncodingConfig::new(Vec3::ZERO, 0.0, 1.0, 0), Err(ConfigError::InvalidCellSize));
        assert_eq!(EncodingConfig::new(Vec3::ZERO, -1.0, 1.0, 0), Err(ConfigError::InvalidCellSize));
        assert_eq!(EncodingConfig::new(Vec3::ZERO, f32::INFINITY, 1.0, 0), Err(ConfigError::InvalidCellSize));
        assert_eq!(EncodingConfig::new(Vec3::ZERO, 1.0, f32::NAN, 0), Err(ConfigError::InvalidUnit));
        assert_eq!(EncodingConfig::new(Vec3::ZERO, 1.0, 0.0, 0), Err(ConfigError::InvalidUnit));
    }

    #[test]
    fn mismatches_are_named() {
        let a = config();
        assert_eq!(a.check_compatible(&a), Ok(()));
        assert_eq!(a, a);
        let mut b = a;
        b.version += 1;
        assert_eq!(a.check_compatible(&b), Err(ConfigError::Mismatch(ConfigField::Version)));
        let mut b = a;
        b.origin.y += 1.0;
        assert_eq!(a.check_compatible(&b), Err(ConfigError::Mismatch(ConfigField::Origin)));
        let mut b = a;
        b.cell_size = 2.5;
        assert_eq!(a.check_compatible(&b), Err(ConfigError::Mismatch(ConfigField::CellSize)));
        let mut b = a;
        b.unit = 0.02;
        assert_eq!(a.check_compatible(&b), Err(ConfigError::Mismatch(ConfigField::Unit)));
        assert_ne!(a, b);
    }

    #[test]
    fn quantize_rounds_half_away_from_zero() {
        let c = EncodingConfig::new(Vec3::ZERO, 1.0, 0.5, 0).unwrap();
        assert_eq!(c.quantize(Vec3::new(0.25, -0.25, 0.74)), Ok(IVec3::new(1, -1, 1)));
        assert_eq!(c.quantize(Vec3::new(0.24, -0.24, 0.76)), Ok(IVec3::new(0, 0, 2)));
        assert_eq!(c.quantize(Vec3::new(f32::NAN, 0.0, 0.0)), Err(EncodeError::NotFinite));
        assert_eq!(c.quantize(Vec3::new(0.0, f32::INFINITY, 0.0)), Err(EncodeError::NotFinite));
        assert_eq!(c.quantize(Vec3::new(0.0, 0.0, 2.0e9)), Err(EncodeError::OutOfRange));
    }

    #[test]
    fn cell_center_lies_in_the_cell() {
        let c = config();
        let key = c.cell_key(Vec3::new(-7.3, 12.0, 100.0)).unwrap();
        assert_eq!(c.cell_key(c.cell_center(key)), Ok(key));
    }

    proptest! {
        #[test]
        fn quantization_error_is_at_most_half_a_unit(
            x in crate::uniform_f32(-1.0e4, 1.0e4), y in crate::uniform_f32(-1.0e4, 1.0e4), z in crate::uniform_f32(-1.0e4, 1.0e4),
            unit in prop::sample::select(vec![0.001f32, 0.01, 0.1, 0.37, 1.0, 16.0]),
        ) {
            let c = EncodingConfig::new(Vec3::new(1.5, -2.25, 0.0), 4.0, unit, 0).unwrap();
            let p = Vec3::new(x, y, z);
            let q = c.quantize(p).unwrap();
            let back = c.dequantize_f64(q);
            let err = (back - p.as_dvec3()).abs().max_element();
            // f64 arithmetic adds error far below 1e-9 of a unit at these magnitudes.
            prop_assert!(err <= unit as f64 * 0.5 * (1.0 + 1e-9), "err {err} unit {unit}");
            // Quantizing the f32 reconstruction gives the same integers back
            // when an f32 ulp at this magnitude (<= 1e-3) is well below a unit.
            if unit >= 0.01 {
                prop_assert_eq!(c.quantize(c.dequantize(q)).unwrap(), q);
            }
        }
    }
}
