//! Acknowledgements: the only thing a client sends. Fourteen bytes: a magic
//! number, the newest applied tick, a bit mask of which of the 32 ticks
//! before it were applied too (bit `i`: tick `newest - 1 - i`), and a CRC-32
//! of the ten bytes before it (a corrupted acknowledgement must not settle
//! work the client never got).

const ACK_MAGIC: u16 = 0xAC4B;

/// Bytes in an acknowledgement.
pub const ACK_BYTES: usize = 14;

/// An acknowledgement of applied snapshots.
///
/// ```
/// use ecs_replication::ack::Ack;
/// let ack = Ack { newest: 40, previous: 0b101 };
/// assert!(ack.contains(40) && ack.contains(39) && !ack.contains(38) && ack.contains(37));
/// assert_eq!(Ack::from_bytes(&ack.to_bytes()), Ok(ack));
/// assert!(Ack::from_bytes(&[0; 3]).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The newest tick applied.
    pub newest: u32,
    /// Bit `i`: tick `newest - 1 - i` was applied.
    pub previous: u32,
}

/// Why bytes are not an acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckError {
    /// Not exactly [`ACK_BYTES`] long.
    Length(usize),
    /// Wrong magic number.
    Magic(u16),
    /// Tick 0 (no snapshot has that tick).
    ZeroTick,
    /// The CRC-32 does not match (corrupted).
    Checksum,
}

impl std::fmt::Display for AckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AckError::Length(n) => write!(f, "{n} bytes, expected {ACK_BYTES}"),
            AckError::Magic(m) => write!(f, "magic {m:#06x} is not an acknowledgement"),
            AckError::ZeroTick => f.write_str("tick 0 cannot be acknowledged"),
            AckError::Checksum => f.write_str("checksum mismatch"),
        }
    }
}

impl std::error::Error for AckError {}

impl Ack {
    /// Whether `tick` is acknowledged.
    pub fn contains(&self, tick: u32) -> bool {
        if tick == self.newest {
            return true;
        }
        let back = crate::tick::tick_diff(self.newest, tick);
        (1..=32).contains(&back) && self.previous >> (back - 1) & 1 == 1
    }

    /// The wire form.
    pub fn to_bytes(&self) -> [u8; ACK_BYTES] {
        let mut out = [0u8; ACK_BYTES];
        out[..2].copy_from_slice(&ACK_MAGIC.to_le_bytes());
        out[2..6].copy_from_slice(&self.newest.to_le_bytes());
        out[6..10].copy_from_slice(&self.previous.to_le_bytes());
        let crc = crate::bits::crc32(&[&out[..10]]);
        out[10..].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parses and checks the wire form.
    pub fn from_bytes(bytes: &[u8]) -> Result<Ack, AckError> {
        let bytes: &[u8; ACK_BYTES] = bytes.try_into().map_err(|_| AckError::Length(bytes.len()))?;
        let magic = u16::from_le_bytes([bytes[0], bytes[1]]);
        if magic != ACK_MAGIC {
            return Err(AckError::Magic(magic));
        }
        let newest = u32::from_le_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
        if newest == 0 {
            return Err(AckError::ZeroTick);
        }
        let crc = u32::from_le_bytes([bytes[10], bytes[11], bytes[12], bytes[13]]);
        if crc != crate::bits::crc32(&[&bytes[..10]]) {
            return Err(AckError::Checksum);
        }
        let previous = u32::from_le_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]);
        Ok(Ack { newest, previous })
    }
}
