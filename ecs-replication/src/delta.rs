//! Deltas against the acknowledged baseline, for every kind of component
//! (no ECS types; the codec writes them, the server chooses them, the
//! client applies them).
//!
//! - Positions: the per-axis difference of the quantized values.
//! - Rotations (smallest three): the difference of the three stored levels
//!   when the dropped component is the same one; otherwise the rotation
//!   goes whole.
//! - Plain bytes, chosen per component in the registry ([`BytesDelta`]):
//!   `Xor` sends a mask of the bytes that changed and their XOR with the
//!   baseline (good for flags, small structs of unrelated fields); `Words`
//!   sends each 32-bit little-endian word's wrapping difference (good for
//!   counters, health, timers, fixed-point fields); `None` always sends the
//!   bytes whole.
//!
//! Differences are bit-packed as "small" integers ([`write_small`]): a
//! 2-bit class, then nothing (zero), 4 bits (|d| <= 8), 10 bits
//! (|d| <= 512) or a varint, all zigzag-coded. A still axis costs 2 bits, a
//! slowly moving one 6 or 12.

use crate::bits::{BitError, BitReader, BitWriter, unzigzag, varint_bits, zigzag};
use crate::quantize::RotationQuantizer;

/// How a plain-bytes component is delta-coded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BytesDelta {
    /// Always whole.
    None,
    /// Changed bytes: a mask (one bit per byte) and the XOR of each changed
    /// byte with the baseline.
    #[default]
    Xor,
    /// The wrapping difference of each 32-bit little-endian word (the size
    /// must be a multiple of 4).
    Words,
}

/// A component's difference from its baseline value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delta {
    /// Per-axis difference of a quantized position.
    Position([i64; 3]),
    /// Per-level difference of a smallest-three rotation (same dropped
    /// component).
    Rotation([i64; 3]),
    /// XOR with the baseline bytes (full length; zero bytes did not change).
    Xor(Vec<u8>),
    /// Wrapping difference of each 32-bit word.
    Words(Vec<i64>),
}

/// Why a delta could not be applied to a baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaError {
    /// The baseline is not a value of this kind (or missing).
    WrongBaseline,
    /// The result leaves the codec's range (a position past its bits, a
    /// rotation level past its maximum, a word past 32 bits).
    OutOfRange,
    /// The delta's length does not match the component.
    WrongLength,
}

impl std::fmt::Display for DeltaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeltaError::WrongBaseline => "the baseline is not a value of this component",
            DeltaError::OutOfRange => "the delta leaves the component's range",
            DeltaError::WrongLength => "the delta's length does not match the component",
        })
    }
}

impl std::error::Error for DeltaError {}

/// Writes a signed integer in 2, 6, 12 or 2 + varint bits (see the
/// [module docs](self)).
pub fn write_small(w: &mut BitWriter, value: i64) {
    let z = zigzag(value);
    match z {
        0 => w.write_bits(0, 2),
        1..16 => {
            w.write_bits(1, 2);
            w.write_bits(z, 4);
        }
        16..1024 => {
            w.write_bits(2, 2);
            w.write_bits(z, 10);
        }
        _ => {
            w.write_bits(3, 2);
            w.write_varint(z);
        }
    }
}

/// Reads what [`write_small`] wrote.
pub fn read_small(r: &mut BitReader<'_>) -> Result<i64, BitError> {
    let z = match r.read_bits(2)? {
        0 => 0,
        1 => r.read_bits(4)?,
        2 => r.read_bits(10)?,
        _ => r.read_varint()?,
    };
    Ok(unzigzag(z))
}

/// Bits [`write_small`] takes for `value`.
pub fn small_bits(value: i64) -> usize {
    match zigzag(value) {
        0 => 2,
        1..16 => 6,
        16..1024 => 12,
        z => 2 + varint_bits(z),
    }
}

/// The three stored levels of a smallest-three rotation.
pub(crate) fn rotation_levels(q: RotationQuantizer, packed: u64) -> [i64; 3] {
    let bits = (q.total_bits() - 2) / 3;
    let mask = (1u64 << bits) - 1;
    [0, 1, 2].map(|i| ((packed >> (2 + i * bits)) & mask) as i64)
}

/// The delta of a rotation from a baseline, if they drop the same
/// component.
pub fn rotation_delta(q: RotationQuantizer, base: u64, current: u64) -> Option<[i64; 3]> {
    if base & 3 != current & 3 {
        return None;
    }
    let (a, b) = (rotation_levels(q, base), rotation_levels(q, current));
    Some([b[0] - a[0], b[1] - a[1], b[2] - a[2]])
}

/// A rotation from a baseline and a level delta.
pub fn apply_rotation_delta(q: RotationQuantizer, base: u64, delta: [i64; 3]) -> Result<u64, DeltaError> {
    let bits = (q.total_bits() - 2) / 3;
    let max = (1i64 << bits) - 2;
    let levels = rotation_levels(q, base);
    let mut packed = base & 3;
    for i in 0..3 {
        let level = levels[i].checked_add(delta[i]).ok_or(DeltaError::OutOfRange)?;
        if !(0..=max).contains(&level) {
            return Err(DeltaError::OutOfRange);
        }
        packed |= (level as u64) << (2 + i as u32 * bits);
    }
    Ok(packed)
}

/// The XOR delta of two byte strings of one length.
pub fn xor_delta(base: &[u8], current: &[u8]) -> Option<Vec<u8>> {
    (base.len() == current.len()).then(|| base.iter().zip(current).map(|(a, b)| a ^ b).collect())
}

/// The word delta of two byte strings of one length, a multiple of 4.
pub fn words_delta(base: &[u8], current: &[u8]) -> Option<Vec<i64>> {
    if base.len() != current.len() || !base.len().is_multiple_of(4) {
        return None;
    }
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    Some(
        base.chunks_exact(4)
            .zip(current.chunks_exact(4))
            .map(|(a, b)| word(b).wrapping_sub(word(a)) as i32 as i64)
            .collect(),
    )
}

/// Bytes from a baseline and a word delta.
pub fn apply_words_delta(base: &[u8], delta: &[i64]) -> Result<Vec<u8>, DeltaError> {
    if base.len() != delta.len() * 4 {
        return Err(DeltaError::WrongLength);
    }
    let mut out = Vec::with_capacity(base.len());
    for (chunk, d) in base.chunks_exact(4).zip(delta) {
        let d = i32::try_from(*d).map_err(|_| DeltaError::OutOfRange)?;
        let word = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]).wrapping_add(d as u32);
        out.extend_from_slice(&word.to_le_bytes());
    }
    Ok(out)
}

/// Bytes from a baseline and an XOR delta.
pub fn apply_xor_delta(base: &[u8], delta: &[u8]) -> Result<Vec<u8>, DeltaError> {
    if base.len() != delta.len() {
        return Err(DeltaError::WrongLength);
    }
    Ok(base.iter().zip(delta).map(|(a, b)| a ^ b).collect())
}

/// Writes an XOR delta: the changed-byte mask, then the changed bytes.
pub(crate) fn write_xor(w: &mut BitWriter, xor: &[u8]) {
    for chunk in xor.chunks(64) {
        let mut mask = 0u64;
        for (i, b) in chunk.iter().enumerate() {
            if *b != 0 {
                mask |= 1 << i;
            }
        }
        w.write_bits(mask, chunk.len() as u32);
    }
    for b in xor.iter().filter(|b| **b != 0) {
        w.write_bits(*b as u64, 8);
    }
}

/// Reads an XOR delta of `len` bytes (`len` from the schema, never from
/// the packet).
pub(crate) fn read_xor(r: &mut BitReader<'_>, len: usize) -> Result<Vec<u8>, BitError> {
    let mut out = vec![0u8; len];
    let mut changed = Vec::new();
    for start in (0..len).step_by(64) {
        let n = (len - start).min(64);
        let mask = r.read_bits(n as u32)?;
        for i in 0..n {
            if mask >> i & 1 == 1 {
                changed.push(start + i);
            }
        }
    }
    for i in changed {
        out[i] = r.read_bits(8)? as u8;
    }
    Ok(out)
}

/// Bits of an XOR delta.
pub(crate) fn xor_bits(xor: &[u8]) -> usize {
    xor.len() + 8 * xor.iter().filter(|b| **b != 0).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn small_integers_round_trip(values in proptest::collection::vec(any::<i64>(), 0..20), small in proptest::collection::vec(-600i64..600, 0..20)) {
            let mut w = BitWriter::new();
            for v in values.iter().chain(&small) {
                write_small(&mut w, *v);
            }
            let total: usize = values.iter().chain(&small).map(|v| small_bits(*v)).sum();
            prop_assert_eq!(w.bit_len(), total);
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            for v in values.iter().chain(&small) {
                prop_assert_eq!(read_small(&mut r), Ok(*v));
            }
        }

        #[test]
        fn byte_deltas_round_trip(base in proptest::collection::vec(any::<u8>(), 1..100), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..10)) {
            let mut current = base.clone();
            for (i, v) in flips {
                let n = current.len();
                current[i % n] = v;
            }
            let xor = xor_delta(&base, &current).unwrap();
            prop_assert_eq!(apply_xor_delta(&base, &xor).unwrap(), current.clone());
            let mut w = BitWriter::new();
            write_xor(&mut w, &xor);
            prop_assert_eq!(w.bit_len(), xor_bits(&xor));
            let bytes = w.finish();
            prop_assert_eq!(read_xor(&mut BitReader::new(&bytes), base.len()).unwrap(), xor);
            let cut = base.len() / 4 * 4;
            if cut > 0 {
                let words = words_delta(&base[..cut], &current[..cut]).unwrap();
                prop_assert_eq!(apply_words_delta(&base[..cut], &words).unwrap(), current[..cut].to_vec());
            }
        }

        #[test]
        fn rotation_deltas_round_trip(a in any::<u64>(), b in any::<u64>(), bits in 2u32..=20) {
            let q = RotationQuantizer::new(bits).unwrap();
            let max = (1u64 << bits) - 2;
            // Valid patterns only: every level at most `max`.
            let fix = |v: u64| {
                let mut out = v & 3;
                for (i, l) in rotation_levels(q, v).iter().enumerate() {
                    out |= (*l as u64).min(max) << (2 + i as u32 * bits);
                }
                out
            };
            let (a, b) = (fix(a), fix(b) & !3 | a & 3);
            let d = rotation_delta(q, a, b).unwrap();
            prop_assert_eq!(apply_rotation_delta(q, a, d), Ok(b));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(
            [0, 1, -8, 8, 9, 511, -512, 512, 100_000].map(small_bits),
            [2, 6, 6, 12, 12, 12, 12, 2 + 16, 2 + 24]
        );
        // A word counter going up by one: 6 bits instead of 32.
        let d = words_delta(&7u32.to_le_bytes(), &8u32.to_le_bytes()).unwrap();
        assert_eq!(d, vec![1]);
        assert_eq!(xor_bits(&[0, 0, 5, 0]), 4 + 8);
        let q = RotationQuantizer::new(9).unwrap();
        assert_eq!(apply_rotation_delta(q, 0, [511, 0, 0]), Err(DeltaError::OutOfRange));
        assert_eq!(apply_words_delta(&[0; 8], &[1]), Err(DeltaError::WrongLength));
    }
}
