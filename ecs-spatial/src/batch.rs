//! Batch encoding over slices, de-duplication and key migration between
//! config versions.
//!
//! Every batch function writes into a caller-owned `Vec` (cleared first), so a
//! caller that keeps its buffers allocates nothing in steady state. On error
//! the output holds the elements before the failing one.

use glam::{IVec3, Vec3};

use crate::cell::CellKey;
use crate::config::EncodingConfig;
use crate::error::{BatchError, EncodeError};

fn at(index: usize) -> impl Fn(EncodeError) -> BatchError {
    move |error| BatchError { index, error }
}

/// The cell key of every point.
///
/// # Errors
/// The first point that cannot be encoded.
///
/// ```
/// use ecs_spatial::{EncodingConfig, encode_cell_keys};
/// use glam::Vec3;
/// let config = EncodingConfig::new(Vec3::ZERO, 1.0, 0.01, 1).unwrap();
/// let mut keys = Vec::new();
/// encode_cell_keys(&config, &[Vec3::new(-0.5, 0.0, 1.7)], &mut keys).unwrap();
/// assert_eq!(keys[0].to_string(), "(-1, 0, 1)");
/// ```
pub fn encode_cell_keys(config: &EncodingConfig, points: &[Vec3], out: &mut Vec<CellKey>) -> Result<(), BatchError> {
    out.clear();
    out.reserve(points.len());
    for (i, &p) in points.iter().enumerate() {
        out.push(config.cell_key(p).map_err(at(i))?);
    }
    Ok(())
}

/// The centre of every cell.
pub fn decode_cell_centers(config: &EncodingConfig, keys: &[CellKey], out: &mut Vec<Vec3>) {
    out.clear();
    out.extend(keys.iter().map(|&k| config.cell_center(k)));
}

/// Quantizes every point. See [`EncodingConfig::quantize`].
///
/// # Errors
/// The first point that cannot be quantized.
pub fn quantize_points(config: &EncodingConfig, points: &[Vec3], out: &mut Vec<IVec3>) -> Result<(), BatchError> {
    out.clear();
    out.reserve(points.len());
    for (i, &p) in points.iter().enumerate() {
        out.push(config.quantize(p).map_err(at(i))?);
    }
    Ok(())
}

/// Dequantizes every point. See [`EncodingConfig::dequantize`].
pub fn dequantize_points(config: &EncodingConfig, quantized: &[IVec3], out: &mut Vec<Vec3>) {
    out.clear();
    out.extend(quantized.iter().map(|&q| config.dequantize(q)));
}

/// Sorts keys and removes duplicates, leaving each distinct cell once.
pub fn dedup_keys(keys: &mut Vec<CellKey>) {
    keys.sort_unstable();
    keys.dedup();
}

/// Indices of the points to keep so that no two kept points quantize to the
/// same fixed-point position: the first point (in input order) of each
/// distinct quantized position. `out` is in ascending order.
///
/// # Errors
/// The first point that cannot be quantized.
///
/// ```
/// use ecs_spatial::{EncodingConfig, dedup_quantized};
/// use glam::Vec3;
/// let config = EncodingConfig::new(Vec3::ZERO, 1.0, 0.1, 1).unwrap();
/// let points = [Vec3::ZERO, Vec3::new(0.5, 0.0, 0.0), Vec3::new(0.01, -0.02, 0.0)];
/// let mut keep = Vec::new();
/// dedup_quantized(&config, &points, &mut keep).unwrap();
/// assert_eq!(keep, vec![0, 1]);
/// ```
pub fn dedup_quantized(config: &EncodingConfig, points: &[Vec3], out: &mut Vec<usize>) -> Result<(), BatchError> {
    let mut tagged = Vec::with_capacity(points.len());
    for (i, &p) in points.iter().enumerate() {
        let q = config.quantize(p).map_err(at(i))?;
        tagged.push(((q.x, q.y, q.z), i));
    }
    tagged.sort_unstable();
    out.clear();
    let mut previous = None;
    for (q, i) in tagged {
        if previous != Some(q) {
            out.push(i);
            previous = Some(q);
        }
    }
    out.sort_unstable();
    Ok(())
}

/// Re-encodes cell keys stored under `old` for `new`: each key is decoded to
/// its cell centre with the old config and encoded with the new one.
///
/// When the new cells are coarser, several old keys may map to one new key;
/// follow with [`dedup_keys`] if a set is wanted.
///
/// # Errors
/// The first key whose cell centre falls outside the new key range.
pub fn migrate_cell_keys(
    old: &EncodingConfig,
    new: &EncodingConfig,
    keys: &[CellKey],
    out: &mut Vec<CellKey>,
) -> Result<(), BatchError> {
    out.clear();
    out.reserve(keys.len());
    for (i, &k) in keys.iter().enumerate() {
        out.push(new.cell_key(old.cell_center(k)).map_err(at(i))?);
    }
    Ok(())
}

/// Re-encodes quantized positions stored under `old` for `new` (decode in
/// `f64` with the old unit and origin, quantize with the new).
///
/// # Errors
/// The first value that does not fit the new encoding.
pub fn migrate_quantized(
    old: &EncodingConfig,
    new: &EncodingConfig,
    quantized: &[IVec3],
    out: &mut Vec<IVec3>,
) -> Result<(), BatchError> {
    out.clear();
    out.reserve(quantized.len());
    let axis = |v: f64, o: f32, unit: f32| -> Result<i32, EncodeError> {
        let q = ((v - o as f64) / unit as f64).round();
        if !q.is_finite() {
            return Err(EncodeError::NotFinite);
        }
        if q < i32::MIN as f64 || q > i32::MAX as f64 {
            return Err(EncodeError::OutOfRange);
        }
        Ok(q as i32)
    };
    for (i, &q) in quantized.iter().enumerate() {
        let p = old.dequantize_f64(q);
        let e = at(i);
        out.push(IVec3::new(
            axis(p.x, new.origin.x, new.unit).map_err(&e)?,
            axis(p.y, new.origin.y, new.unit).map_err(&e)?,
            axis(p.z, new.origin.z, new.unit).map_err(&e)?,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{CELL_MAX, CellCoord};
    use proptest::prelude::*;

    fn config(cell: f32, unit: f32, version: u32) -> EncodingConfig {
        EncodingConfig::new(Vec3::new(-1.0, 2.0, 0.0), cell, unit, version).unwrap()
    }

    #[test]
    fn batch_errors_name_the_index() {
        let c = config(1.0, 0.1, 1);
        let mut keys = Vec::new();
        let points = [Vec3::ZERO, Vec3::new(0.0, f32::NAN, 0.0), Vec3::ONE];
        let e = encode_cell_keys(&c, &points, &mut keys).unwrap_err();
        assert_eq!(e, BatchError { index: 1, error: EncodeError::NotFinite });
        assert_eq!(keys.len(), 1);
        let mut q = Vec::new();
        let e = quantize_points(&c, &[Vec3::new(0.0, 0.0, 1e12)], &mut q).unwrap_err();
        assert_eq!(e, BatchError { index: 0, error: EncodeError::OutOfRange });
    }

    #[test]
    fn dedup_keeps_first_of_each_position() {
        let c = config(1.0, 0.5, 1);
        let points = [
            Vec3::new(3.0, 3.0, 3.0),
            Vec3::new(-1.0, 2.0, 0.0),
            Vec3::new(3.1, 2.9, 3.2),
            Vec3::new(-1.2, 2.2, 0.1),
            Vec3::new(10.0, 0.0, 0.0),
        ];
        let mut keep = Vec::new();
        dedup_quantized(&c, &points, &mut keep).unwrap();
        assert_eq!(keep, vec![0, 1, 4]);
        let mut keys = vec![];
        let mut cells: Vec<Vec3> = points.to_vec();
        cells.push(Vec3::new(3.5, 3.5, 3.5)); // same cell as points[0]
        encode_cell_keys(&c, &cells, &mut keys).unwrap();
        dedup_keys(&mut keys);
        assert_eq!(keys.len(), 5);
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn migration_to_finer_and_coarser_cells() {
        let old = config(2.0, 0.01, 1);
        let new = config(4.0, 0.02, 2);
        let keys: Vec<_> = [(0, 0, 0), (1, 0, 0), (-1, -1, 5), (3, 2, 1)]
            .iter()
            .map(|&(x, y, z)| CellKey::pack(CellCoord::new(x, y, z)).unwrap())
            .collect();
        let mut out = Vec::new();
        migrate_cell_keys(&old, &new, &keys, &mut out).unwrap();
        let coords: Vec<_> = out.iter().map(|k| k.coord()).collect();
        assert_eq!(
            coords,
            vec![CellCoord::new(0, 0, 0), CellCoord::new(0, 0, 0), CellCoord::new(-1, -1, 2), CellCoord::new(1, 1, 0)]
        );
        // Identity migration changes nothing.
        migrate_cell_keys(&old, &old, &keys, &mut out).unwrap();
        assert_eq!(out, keys);
        // A much finer grid cannot hold a far cell.
        let tiny = config(1e-6, 0.01, 3);
        let far = [CellKey::pack(CellCoord::new(CELL_MAX, 0, 0)).unwrap()];
        assert_eq!(migrate_cell_keys(&old, &tiny, &far, &mut out).unwrap_err().error, EncodeError::OutOfRange);
    }

    proptest! {
        #[test]
        fn quantized_migration_matches_direct_quantization(
            x in crate::uniform_f32(-1.0e3, 1.0e3), y in crate::uniform_f32(-1.0e3, 1.0e3), z in crate::uniform_f32(-1.0e3, 1.0e3),
        ) {
            // Old unit divides the new one: migrating equals quantizing the
            // old reconstruction with the new config.
            let old = config(1.0, 0.01, 1);
            let new = config(1.0, 0.04, 2);
            let q = old.quantize(Vec3::new(x, y, z)).unwrap();
            let mut out = Vec::new();
            migrate_quantized(&old, &new, &[q], &mut out).unwrap();
            let p = old.dequantize_f64(q);
            let err = (new.dequantize_f64(out[0]) - p).abs().max_element();
            prop_assert!(err <= 0.02 * (1.0 + 1e-9));
        }

        #[test]
        fn batch_round_trip(points in prop::collection::vec((crate::uniform_f32(-1.0e4, 1.0e4), crate::uniform_f32(-1.0e4, 1.0e4), crate::uniform_f32(-1.0e4, 1.0e4)), 0..64)) {
            let c = config(0.75, 0.05, 1);
            let points: Vec<Vec3> = points.into_iter().map(|(x, y, z)| Vec3::new(x, y, z)).collect();
            let mut keys = Vec::new();
            encode_cell_keys(&c, &points, &mut keys).unwrap();
            let mut q = Vec::new();
            quantize_points(&c, &points, &mut q).unwrap();
            let mut back = Vec::new();
            dequantize_points(&c, &q, &mut back);
            prop_assert_eq!(back.len(), points.len());
            for i in 0..points.len() {
                prop_assert_eq!(keys[i], c.cell_key(points[i]).unwrap());
                prop_assert_eq!(CellKey::from_raw(keys[i].raw()).unwrap(), keys[i]);
                let err = (c.dequantize_f64(q[i]) - points[i].as_dvec3()).abs().max_element();
                prop_assert!(err <= 0.025 * (1.0 + 1e-9));
            }
            let mut centres = Vec::new();
            decode_cell_centers(&c, &keys, &mut centres);
            for i in 0..points.len() {
                prop_assert_eq!(c.cell_key(centres[i]).unwrap(), keys[i]);
            }
        }
    }
}
