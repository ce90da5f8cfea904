//! Bit packing: a writer that appends values of any width up to 64 bits,
//! and a reader that treats every byte as hostile (every read is bounds
//! checked and returns an error past the end; nothing panics and nothing
//! allocates from a value it read).

/// Why a read failed. Decoding never panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitError {
    /// The read needed more bits than the buffer holds.
    OutOfData {
        /// Bits the read asked for.
        wanted: u32,
        /// Bits left.
        left: usize,
    },
    /// A width above 64 bits was asked for.
    BadWidth(u32),
    /// A length field exceeded the caller's bound.
    TooLong {
        /// The decoded length.
        len: u64,
        /// The largest allowed.
        max: u64,
    },
}

impl std::fmt::Display for BitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BitError::OutOfData { wanted, left } => write!(f, "packet ends early: wanted {wanted} bits, {left} left"),
            BitError::BadWidth(bits) => write!(f, "bit width {bits} is above 64"),
            BitError::TooLong { len, max } => write!(f, "length {len} exceeds the limit {max}"),
        }
    }
}

impl std::error::Error for BitError {}

/// Appends bit fields, least significant bit first, into bytes.
///
/// ```
/// use ecs_replication::bits::{BitReader, BitWriter};
/// let mut w = BitWriter::new();
/// w.write_bits(5, 3);
/// w.write_bool(true);
/// w.write_varint(300);
/// let bytes = w.finish();
/// let mut r = BitReader::new(&bytes);
/// assert_eq!(r.read_bits(3), Ok(5));
/// assert_eq!(r.read_bool(), Ok(true));
/// assert_eq!(r.read_varint(), Ok(300));
/// ```
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    /// Complete bytes.
    bytes: Vec<u8>,
    /// Bits not yet in `bytes`, least significant first (fewer than 8
    /// between calls).
    acc: u128,
    /// Bits in `acc`.
    acc_bits: u32,
}

impl BitWriter {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty writer that reuses `buffer`'s allocation.
    pub fn with_buffer(mut buffer: Vec<u8>) -> Self {
        buffer.clear();
        BitWriter { bytes: buffer, acc: 0, acc_bits: 0 }
    }

    /// Bits written so far.
    pub fn bit_len(&self) -> usize {
        self.bytes.len() * 8 + self.acc_bits as usize
    }

    /// Moves the complete bytes of the accumulator out.
    #[inline]
    fn flush(&mut self) {
        while self.acc_bits >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.acc_bits -= 8;
        }
    }

    /// Writes the low `bits` bits of `value` (`bits <= 64`; higher bits of
    /// `value` are ignored).
    ///
    /// # Panics
    /// If `bits > 64`: a programming error, never driven by input.
    #[inline]
    pub fn write_bits(&mut self, value: u64, bits: u32) {
        assert!(bits <= 64, "bit width {bits} is above 64");
        if bits == 0 {
            return;
        }
        let value = if bits == 64 { value } else { value & ((1u64 << bits) - 1) };
        self.acc |= (value as u128) << self.acc_bits;
        self.acc_bits += bits;
        self.flush();
    }

    /// Writes one bit.
    #[inline]
    pub fn write_bool(&mut self, value: bool) {
        self.write_bits(value as u64, 1);
    }

    /// Writes an unsigned value in 7-bit groups (small values are short).
    pub fn write_varint(&mut self, mut value: u64) {
        loop {
            let group = value & 0x7f;
            value >>= 7;
            self.write_bits(group | if value != 0 { 0x80 } else { 0 }, 8);
            if value == 0 {
                return;
            }
        }
    }

    /// Writes a signed value zigzag-encoded as a varint.
    pub fn write_signed_varint(&mut self, value: i64) {
        self.write_varint(zigzag(value));
    }

    /// Drops everything written after the first `bits` bits (no-op if
    /// fewer were written).
    pub fn truncate(&mut self, bits: usize) {
        if bits >= self.bit_len() {
            return;
        }
        let full = self.bytes.len() * 8;
        if bits >= full {
            let keep = (bits - full) as u32;
            self.acc &= (1u128 << keep) - 1;
            self.acc_bits = keep;
        } else {
            let rem = (bits % 8) as u32;
            self.acc = if rem == 0 { 0 } else { (self.bytes[bits / 8] & ((1u8 << rem) - 1)) as u128 };
            self.acc_bits = rem;
            self.bytes.truncate(bits / 8);
        }
    }

    /// Replaces the `bits` bits written at bit `at` with the low bits of
    /// `value` (for a field whose value is known only later, like a
    /// count). Bits past what was written are ignored.
    pub fn overwrite_bits(&mut self, at: usize, value: u64, bits: u32) {
        let full = self.bytes.len() * 8;
        for i in 0..bits.min(64) as usize {
            let p = at + i;
            let bit = (value >> i) & 1;
            if p < full {
                let byte = &mut self.bytes[p / 8];
                *byte = (*byte & !(1 << (p % 8))) | ((bit as u8) << (p % 8));
            } else if p < full + self.acc_bits as usize {
                let q = p - full;
                self.acc = (self.acc & !(1u128 << q)) | ((bit as u128) << q);
            }
        }
    }

    /// Appends everything `other` has written, bit for bit.
    pub fn append(&mut self, other: &BitWriter) {
        if self.acc_bits == 0 {
            self.bytes.extend_from_slice(&other.bytes);
        } else {
            let mut chunks = other.bytes.chunks_exact(8);
            for chunk in &mut chunks {
                let word = u64::from_le_bytes(chunk.try_into().expect("chunks of 8"));
                self.write_bits(word, 64);
            }
            for b in chunks.remainder() {
                self.write_bits(*b as u64, 8);
            }
        }
        if other.acc_bits != 0 {
            self.write_bits(other.acc as u64, other.acc_bits);
        }
    }

    /// The bytes, the last one padded with zero bits.
    pub fn finish(mut self) -> Vec<u8> {
        if self.acc_bits > 0 {
            self.bytes.push(self.acc as u8);
        }
        self.bytes
    }
}

/// Reads bit fields written by [`BitWriter`], checking every bound.
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> BitReader<'a> {
    /// A reader over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        BitReader { bytes, pos: 0 }
    }

    /// Bits not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() * 8 - self.pos
    }

    /// Reads `bits` bits (`bits <= 64`).
    pub fn read_bits(&mut self, bits: u32) -> Result<u64, BitError> {
        if bits > 64 {
            return Err(BitError::BadWidth(bits));
        }
        if bits as usize > self.remaining() {
            return Err(BitError::OutOfData { wanted: bits, left: self.remaining() });
        }
        let mut value = 0u64;
        let mut got = 0u32;
        while got < bits {
            let byte = self.bytes[self.pos / 8];
            let offset = (self.pos % 8) as u32;
            let take = (8 - offset).min(bits - got);
            let part = (byte >> offset) as u64 & ((1u64 << take) - 1);
            value |= part << got;
            got += take;
            self.pos += take as usize;
        }
        Ok(value)
    }

    /// Reads one bit.
    pub fn read_bool(&mut self) -> Result<bool, BitError> {
        Ok(self.read_bits(1)? == 1)
    }

    /// Reads a varint; at most 10 groups, so hostile input cannot loop.
    pub fn read_varint(&mut self) -> Result<u64, BitError> {
        let mut value = 0u64;
        for i in 0..10 {
            let group = self.read_bits(8)?;
            value |= (group & 0x7f).checked_shl(7 * i).unwrap_or(0);
            if group & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(BitError::TooLong { len: u64::MAX, max: u64::MAX >> 1 })
    }

    /// Reads a zigzag varint.
    pub fn read_signed_varint(&mut self) -> Result<i64, BitError> {
        Ok(unzigzag(self.read_varint()?))
    }

    /// Reads a length and refuses it above `max` (so a caller never sizes
    /// a buffer from an unchecked field).
    pub fn read_len(&mut self, max: u64) -> Result<u64, BitError> {
        let len = self.read_varint()?;
        if len > max { Err(BitError::TooLong { len, max }) } else { Ok(len) }
    }
}

/// Bits a [`BitWriter::write_varint`] of `value` takes: 8 per started
/// group of 7 significant bits (at least one group).
///
/// ```
/// use ecs_replication::bits::varint_bits;
/// assert_eq!((varint_bits(0), varint_bits(127), varint_bits(128)), (8, 8, 16));
/// ```
pub fn varint_bits(value: u64) -> usize {
    ((64 - value.leading_zeros()).max(1) as usize).div_ceil(7) * 8
}

/// Zigzag encoding of a signed value (0, -1, 1, -2, ... become 0, 1, 2,
/// 3, ...), as [`BitWriter::write_signed_varint`] writes it.
pub fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

/// The inverse of [`zigzag`].
pub fn unzigzag(value: u64) -> i64 {
    ((value >> 1) as i64) ^ -((value & 1) as i64)
}

const fn crc_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
}

static CRC_TABLE: [u32; 256] = crc_table();

/// CRC-32 (IEEE) over several byte slices in turn, as if concatenated.
/// Every single-bit error changes it.
///
/// ```
/// use ecs_replication::bits::crc32;
/// assert_eq!(crc32(&[b"123456789"]), 0xCBF4_3926);
/// assert_eq!(crc32(&[b"1234", b"56789"]), 0xCBF4_3926);
/// ```
pub fn crc32(parts: &[&[u8]]) -> u32 {
    let mut c = 0xFFFF_FFFFu32;
    for part in parts {
        for &b in *part {
            c = CRC_TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
        }
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn truncate_equals_writing_less(fields in proptest::collection::vec((any::<u64>(), 1u32..=64), 0..20), keep in 0usize..20) {
            let mut full = BitWriter::new();
            let mut short = BitWriter::new();
            for (i, (v, n)) in fields.iter().enumerate() {
                full.write_bits(*v, *n);
                if i < keep {
                    short.write_bits(*v, *n);
                }
            }
            let bits = short.bit_len();
            full.truncate(bits);
            prop_assert_eq!(full.bit_len(), bits);
            // Writing after a truncation continues cleanly.
            full.write_bits(0b101, 3);
            short.write_bits(0b101, 3);
            prop_assert_eq!(full.finish(), short.finish());
        }

        #[test]
        fn fields_round_trip(fields in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..50)) {
            let mut w = BitWriter::new();
            for &(v, bits) in &fields {
                w.write_bits(v, bits);
            }
            let total: usize = fields.iter().map(|f| f.1 as usize).sum();
            prop_assert_eq!(w.bit_len(), total);
            let bytes = w.finish();
            prop_assert_eq!(bytes.len(), total.div_ceil(8));
            let mut r = BitReader::new(&bytes);
            for &(v, bits) in &fields {
                let want = if bits == 64 { v } else { v & ((1u64 << bits) - 1) };
                prop_assert_eq!(r.read_bits(bits), Ok(want));
            }
            prop_assert!(r.remaining() < 8);
        }

        #[test]
        fn append_equals_writing_in_one_go(a in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..20), b in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..20)) {
            let (mut one, mut first, mut second) = (BitWriter::new(), BitWriter::new(), BitWriter::new());
            for &(v, bits) in &a {
                one.write_bits(v, bits);
                first.write_bits(v, bits);
            }
            for &(v, bits) in &b {
                one.write_bits(v, bits);
                second.write_bits(v, bits);
            }
            first.append(&second);
            prop_assert_eq!(first.bit_len(), one.bit_len());
            prop_assert_eq!(first.finish(), one.finish());
        }

        #[test]
        fn varints_round_trip(a in any::<u64>(), b in any::<i64>()) {
            let mut w = BitWriter::new();
            w.write_bool(true);
            w.write_varint(a);
            w.write_signed_varint(b);
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            prop_assert_eq!(r.read_bool(), Ok(true));
            prop_assert_eq!(r.read_varint(), Ok(a));
            prop_assert_eq!(r.read_signed_varint(), Ok(b));
        }

        #[test]
        fn hostile_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), widths in proptest::collection::vec(0u32..80, 0..40)) {
            let mut r = BitReader::new(&bytes);
            for w in widths {
                let _ = r.read_bits(w);
                let _ = r.read_varint();
                let _ = r.read_len(100);
            }
        }
    }

    #[test]
    fn reads_past_the_end_are_errors() {
        let mut r = BitReader::new(&[0xff]);
        assert_eq!(r.read_bits(9), Err(BitError::OutOfData { wanted: 9, left: 8 }));
        assert_eq!(r.read_bits(65), Err(BitError::BadWidth(65)));
        assert_eq!(r.read_bits(8), Ok(0xff));
        assert!(r.read_bool().is_err());
        // Eleven continuation bytes: refused, not looped on.
        let long = [0x80u8; 11];
        assert!(BitReader::new(&long).read_varint().is_err());
        let mut w = BitWriter::new();
        w.write_varint(1000);
        assert_eq!(BitReader::new(&w.finish()).read_len(999), Err(BitError::TooLong { len: 1000, max: 999 }));
    }
}
