//! Quantization of what snapshots carry: positions as signed fixed point
//! (error at most half a unit per axis) and rotations as "smallest three"
//! (the largest quaternion component is dropped and rebuilt; 2 bits say
//! which, then 3 components of N bits each: 29 bits at N = 9, as in Glenn
//! Fiedler's "Snapshot Compression").

use glam::{Quat, Vec3};

use crate::bits::{BitError, BitReader, BitWriter};

/// Why a value cannot be quantized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QuantizeError {
    /// NaN or infinite input.
    NotFinite,
    /// A coordinate outside what the configured bits can hold.
    OutOfRange {
        /// The coordinate.
        value: f32,
        /// The largest magnitude the config can encode.
        limit: f32,
    },
    /// A configuration that cannot work (unit not positive and finite, or
    /// a bit count out of range).
    BadConfig(&'static str),
}

impl std::fmt::Display for QuantizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuantizeError::NotFinite => f.write_str("value is NaN or infinite"),
            QuantizeError::OutOfRange { value, limit } => {
                write!(f, "coordinate {value} is outside the encodable range +-{limit}")
            }
            QuantizeError::BadConfig(why) => write!(f, "bad quantizer config: {why}"),
        }
    }
}

impl std::error::Error for QuantizeError {}

/// Positions as signed fixed point: `round(p / unit)` per axis in `bits`
/// bits.
///
/// ```
/// use ecs_replication::quantize::PositionQuantizer;
/// use glam::Vec3;
/// let q = PositionQuantizer::new(0.01, 20).unwrap();
/// let p = Vec3::new(1.234_56, -20.0, 0.005);
/// let back = q.dequantize(q.quantize(p).unwrap());
/// assert!((back - p).abs().max_element() <= 0.005 + 1e-6);
/// assert!(q.quantize(Vec3::new(1e9, 0.0, 0.0)).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PositionQuantizer {
    unit: f32,
    bits: u32,
}

impl PositionQuantizer {
    /// A quantizer with step `unit` and `bits` (1 to 32) bits per axis.
    pub fn new(unit: f32, bits: u32) -> Result<Self, QuantizeError> {
        if !(unit.is_finite() && unit > 0.0) {
            return Err(QuantizeError::BadConfig("unit must be positive and finite"));
        }
        if !(1..=32).contains(&bits) {
            return Err(QuantizeError::BadConfig("bits per axis must be 1 to 32"));
        }
        Ok(PositionQuantizer { unit, bits })
    }

    /// The step.
    pub fn unit(&self) -> f32 {
        self.unit
    }

    /// Bits per axis.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    fn range(&self) -> (i64, i64) {
        let half = 1i64 << (self.bits - 1);
        (-half, half - 1)
    }

    /// The largest coordinate magnitude that encodes.
    pub fn limit(&self) -> f32 {
        self.range().1 as f32 * self.unit
    }

    /// Quantizes one position.
    pub fn quantize(&self, p: Vec3) -> Result<[i32; 3], QuantizeError> {
        let (lo, hi) = self.range();
        let mut out = [0i32; 3];
        for (o, v) in out.iter_mut().zip(p.to_array()) {
            if !v.is_finite() {
                return Err(QuantizeError::NotFinite);
            }
            let q = (v as f64 / self.unit as f64).round();
            if q < lo as f64 || q > hi as f64 {
                return Err(QuantizeError::OutOfRange { value: v, limit: self.limit() });
            }
            *o = q as i32;
        }
        Ok(out)
    }

    /// The position a quantized value stands for.
    pub fn dequantize(&self, q: [i32; 3]) -> Vec3 {
        Vec3::new(
            (q[0] as f64 * self.unit as f64) as f32,
            (q[1] as f64 * self.unit as f64) as f32,
            (q[2] as f64 * self.unit as f64) as f32,
        )
    }

    /// Writes a quantized position in `3 * bits` bits.
    pub fn write(&self, w: &mut BitWriter, q: [i32; 3]) {
        let bias = 1i64 << (self.bits - 1);
        for v in q {
            w.write_bits((v as i64 + bias) as u64, self.bits);
        }
    }

    /// Reads a quantized position; any bit pattern is a valid position.
    pub fn read(&self, r: &mut BitReader<'_>) -> Result<[i32; 3], BitError> {
        let bias = 1i64 << (self.bits - 1);
        let mut out = [0i32; 3];
        for o in &mut out {
            *o = (r.read_bits(self.bits)? as i64 - bias) as i32;
        }
        Ok(out)
    }
}

/// Rotations as smallest three: 2 bits for the dropped component, then
/// three components in `bits` bits each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RotationQuantizer {
    bits: u32,
}

const MAX_SMALL: f32 = std::f32::consts::FRAC_1_SQRT_2;

impl RotationQuantizer {
    /// A quantizer with `bits` (2 to 20) bits per stored component.
    pub fn new(bits: u32) -> Result<Self, QuantizeError> {
        if !(2..=20).contains(&bits) {
            return Err(QuantizeError::BadConfig("bits per component must be 2 to 20"));
        }
        Ok(RotationQuantizer { bits })
    }

    /// Total bits per rotation.
    pub fn total_bits(&self) -> u32 {
        2 + 3 * self.bits
    }

    /// The largest stored level: an odd number of levels (`0..=max`), so
    /// zero, and with it the identity rotation, encodes exactly.
    fn max_level(&self) -> u64 {
        (1u64 << self.bits) - 2
    }

    /// Largest error of one stored component (half a step).
    pub fn component_error(&self) -> f32 {
        MAX_SMALL / self.max_level() as f32
    }

    /// Encodes a rotation (normalized first; NaN is an error).
    pub fn encode(&self, q: Quat) -> Result<u64, QuantizeError> {
        let v = q.to_array();
        if v.iter().any(|c| !c.is_finite()) || q.length_squared() == 0.0 {
            return Err(QuantizeError::NotFinite);
        }
        let q = q.normalize().to_array();
        let (largest, _) =
            q.iter().enumerate().fold((0, -1.0f32), |best, (i, c)| if c.abs() > best.1 { (i, c.abs()) } else { best });
        // q and -q are the same rotation: make the dropped one positive.
        let sign = if q[largest] < 0.0 { -1.0 } else { 1.0 };
        let max = self.max_level() as f32;
        let mut packed = largest as u64;
        let mut shift = 2;
        for (i, c) in q.iter().enumerate() {
            if i == largest {
                continue;
            }
            let unit = ((c * sign).clamp(-MAX_SMALL, MAX_SMALL) + MAX_SMALL) / (2.0 * MAX_SMALL);
            packed |= ((unit * max).round() as u64) << shift;
            shift += self.bits;
        }
        Ok(packed)
    }

    /// Decodes any bit pattern into a unit quaternion (hostile patterns give
    /// some valid rotation, never NaN).
    pub fn decode(&self, packed: u64) -> Quat {
        let largest = (packed & 3) as usize;
        let max_level = self.max_level();
        let max = max_level as f32;
        let mut out = [0.0f32; 4];
        let mut shift = 2;
        let mut sum = 0.0;
        for (i, o) in out.iter_mut().enumerate() {
            if i == largest {
                continue;
            }
            // The all-ones pattern is never written; hostile input may hold it.
            let raw = ((packed >> shift) & ((1u64 << self.bits) - 1)).min(max_level) as f32;
            *o = raw / max * (2.0 * MAX_SMALL) - MAX_SMALL;
            sum += *o * *o;
            shift += self.bits;
        }
        out[largest] = (1.0 - sum).max(0.0).sqrt();
        Quat::from_array(out).normalize()
    }

    /// Writes an encoded rotation.
    pub fn write(&self, w: &mut BitWriter, packed: u64) {
        w.write_bits(packed, self.total_bits());
    }

    /// Reads an encoded rotation.
    pub fn read(&self, r: &mut BitReader<'_>) -> Result<u64, BitError> {
        r.read_bits(self.total_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Millionths in `-limit..limit`, as an `f32`: drawn as integers,
    /// since proptest's `f32` range sampler can fail a debug assertion of
    /// its own on some seeds.
    fn micros(limit: i64) -> impl Strategy<Value = f32> {
        (-limit * 1_000_000..limit * 1_000_000).prop_map(|v| (v as f64 / 1e6) as f32)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn positions_round_trip_within_half_a_unit(x in micros(1000), y in micros(1000), z in micros(1000), bits in 18u32..=32) {
            let q = PositionQuantizer::new(0.01, bits).unwrap();
            let p = Vec3::new(x, y, z);
            match q.quantize(p) {
                Ok(v) => {
                    let back = q.dequantize(v);
                    prop_assert!((back - p).abs().max_element() <= 0.005 + p.abs().max_element() * 1e-6);
                    let mut w = BitWriter::new();
                    q.write(&mut w, v);
                    let bytes = w.finish();
                    prop_assert_eq!(q.read(&mut BitReader::new(&bytes)), Ok(v));
                }
                Err(QuantizeError::OutOfRange { .. }) => prop_assert!(p.abs().max_element() > q.limit() - 0.01),
                Err(e) => prop_assert!(false, "{e}"),
            }
        }

        #[test]
        fn rotations_round_trip(ax in micros(1), ay in micros(1), az in micros(1), angle in micros(10), bits in 6u32..=16) {
            let axis = Vec3::new(ax, ay, az);
            prop_assume!(axis.length() > 1e-3);
            let rot = RotationQuantizer::new(bits).unwrap();
            let q = Quat::from_axis_angle(axis.normalize(), angle);
            let back = rot.decode(rot.encode(q).unwrap());
            // Each stored component is off by at most half a step; the
            // rebuilt one follows from the unit length.
            let err = rot.component_error() as f64;
            // The rotation between two unit quaternions from their chord
            // (well-conditioned for small angles, unlike acos of the dot),
            // with the sign aligned since q and -q are one rotation.
            let (a, b) = (q.to_array(), back.to_array());
            let chord = |s: f64| (0..4).map(|i| (a[i] as f64 - s * b[i] as f64).powi(2)).sum::<f64>().sqrt();
            let d = chord(1.0).min(chord(-1.0));
            let angle_error = 4.0 * (d / 2.0).min(1.0).asin();
            prop_assert!(angle_error <= 8.0 * err + 1e-5, "error {angle_error} rad with {bits} bits");
        }

        #[test]
        fn any_bits_decode_to_a_unit_rotation(packed in any::<u64>(), bits in 2u32..=20) {
            let rot = RotationQuantizer::new(bits).unwrap();
            let q = rot.decode(packed);
            prop_assert!(q.is_finite());
            prop_assert!((q.length() - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn bad_input_is_an_error() {
        let q = PositionQuantizer::new(0.5, 8).unwrap();
        assert_eq!(q.quantize(Vec3::new(f32::NAN, 0.0, 0.0)), Err(QuantizeError::NotFinite));
        assert!(matches!(q.quantize(Vec3::new(64.0, 0.0, 0.0)), Err(QuantizeError::OutOfRange { .. })));
        assert_eq!(q.quantize(Vec3::new(63.4, -64.0, 0.24)), Ok([127, -128, 0]));
        assert!(PositionQuantizer::new(0.0, 8).is_err());
        assert!(PositionQuantizer::new(1.0, 33).is_err());
        let r = RotationQuantizer::new(9).unwrap();
        assert_eq!(r.total_bits(), 29);
        assert_eq!(r.encode(Quat::from_xyzw(f32::NAN, 0.0, 0.0, 1.0)), Err(QuantizeError::NotFinite));
        assert_eq!(r.encode(Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)), Err(QuantizeError::NotFinite));
        let id = r.decode(r.encode(Quat::IDENTITY).unwrap());
        assert!(id.abs_diff_eq(Quat::IDENTITY, 1e-6), "{id:?}");
        // -q is the same rotation and encodes the same way.
        let q = Quat::from_rotation_y(1.0);
        assert_eq!(r.encode(q), r.encode(-q));
    }
}
