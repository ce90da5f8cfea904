//! Reliable ordered messages, both ways, for events that must arrive (chat,
//! "match starts", "player X joined", a projectile spawned by the server).
//!
//! Two layers:
//! - Typed messages: a [`NetMessage`] writes and reads itself bit-packed;
//!   [`encode_message`] frames it (magic, at most [`MAX_MESSAGE_BYTES`]) and
//!   [`decode_message`] refuses anything malformed with a clear error.
//! - A reliable ordered channel of byte messages. Over UDP it is renet's
//!   `ReliableOrdered` channel ([`crate::transport::udp`]); in process,
//!   [`ReliableEndpoint`] does the same over any lossy datagram link (the
//!   [`crate::transport::LocalNetwork`] uses it, so the tests run it
//!   through loss, duplication and reordering): sequence numbers, a
//!   cumulative acknowledgement with a 32-bit selective mask, resends
//!   after a timeout, in-order delivery.
//!
//! ## Endpoint datagram (version 1), bit-packed
//! ```text
//! magic u16 | CRC-32 u32 of every other byte
//! next expected sequence u16 | mask u32 (bit i: sequence next + 1 + i received)
//! message count (varint, at most MAX_MESSAGES_PER_DATAGRAM)
//! per message: sequence u16 | length (varint, at most MAX_MESSAGE_BYTES) | bytes
//! ```
//! Every decoder bounds what it reads before sizing anything: counts,
//! lengths, and the receive window ([`RECEIVE_WINDOW`] messages past the
//! next expected one; later ones are dropped, so a peer cannot make the
//! buffer grow).

use std::collections::{BTreeMap, VecDeque};

use crate::bits::{BitError, BitReader, BitWriter, crc32};

/// The largest message, in bytes (framed).
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// The most messages in one endpoint datagram.
pub const MAX_MESSAGES_PER_DATAGRAM: u64 = 64;

/// Messages past the next expected one that a receiver buffers.
pub const RECEIVE_WINDOW: u16 = 256;

const MESSAGE_MAGIC: u16 = 0x3E55;
const DATAGRAM_MAGIC: u16 = 0x4E11;

/// A message type: bit-packed, every malformed field an error.
///
/// ```
/// use ecs_replication::bits::{BitError, BitReader, BitWriter};
/// use ecs_replication::reliable::{NetMessage, decode_message, encode_message};
///
/// #[derive(Clone, Debug, PartialEq)]
/// enum Event { MatchStarts { round: u8 }, Joined { player: u16 } }
/// impl NetMessage for Event {
///     fn write(&self, w: &mut BitWriter) {
///         match self {
///             Event::MatchStarts { round } => { w.write_bits(0, 2); w.write_bits(*round as u64, 8) }
///             Event::Joined { player } => { w.write_bits(1, 2); w.write_bits(*player as u64, 16) }
///         }
///     }
///     fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
///         match r.read_bits(2)? {
///             0 => Ok(Event::MatchStarts { round: r.read_bits(8)? as u8 }),
///             1 => Ok(Event::Joined { player: r.read_bits(16)? as u16 }),
///             k => Err(BitError::TooLong { len: k, max: 1 }),
///         }
///     }
/// }
/// let bytes = encode_message(&Event::Joined { player: 7 }).unwrap();
/// assert_eq!(decode_message::<Event>(&bytes), Ok(Event::Joined { player: 7 }));
/// assert!(decode_message::<Event>(&bytes[..2]).is_err());
/// ```
pub trait NetMessage: Sized + Send + Sync + 'static {
    /// Writes the message.
    fn write(&self, w: &mut BitWriter);
    /// Reads one; every malformed field is an error, never a panic, and a
    /// length read from the message must be bounded before anything is
    /// sized from it.
    fn read(r: &mut BitReader<'_>) -> Result<Self, BitError>;
}

/// Why a message or an endpoint datagram was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageError {
    /// Malformed or short.
    Bits(BitError),
    /// Not a message (or not an endpoint datagram).
    BadMagic(u16),
    /// Larger than [`MAX_MESSAGE_BYTES`].
    TooLarge(usize),
    /// Bytes after the message or the last entry.
    TrailingData,
    /// A corrupted endpoint datagram.
    Checksum,
    /// An acknowledgement of messages never sent.
    AckFromFuture,
    /// The sender holds [`ReliableConfig::max_in_flight`] unacknowledged
    /// messages already.
    Full,
}

impl From<BitError> for MessageError {
    fn from(e: BitError) -> Self {
        MessageError::Bits(e)
    }
}

impl std::fmt::Display for MessageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MessageError::Bits(e) => write!(f, "malformed message: {e}"),
            MessageError::BadMagic(m) => write!(f, "not a message (magic {m:#06x})"),
            MessageError::TooLarge(n) => write!(f, "message of {n} bytes, at most {MAX_MESSAGE_BYTES}"),
            MessageError::TrailingData => f.write_str("data after the message"),
            MessageError::Checksum => f.write_str("reliable datagram checksum mismatch"),
            MessageError::AckFromFuture => f.write_str("acknowledgement of messages never sent"),
            MessageError::Full => f.write_str("too many unacknowledged messages"),
        }
    }
}

impl std::error::Error for MessageError {}

/// Frames a message: magic, then its bits.
pub fn encode_message<M: NetMessage>(message: &M) -> Result<Vec<u8>, MessageError> {
    let mut w = BitWriter::new();
    w.write_bits(MESSAGE_MAGIC as u64, 16);
    message.write(&mut w);
    let bytes = w.finish();
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(MessageError::TooLarge(bytes.len()));
    }
    Ok(bytes)
}

/// Reads a framed message, checking everything.
pub fn decode_message<M: NetMessage>(bytes: &[u8]) -> Result<M, MessageError> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(MessageError::TooLarge(bytes.len()));
    }
    let mut r = BitReader::new(bytes);
    let magic = r.read_bits(16)? as u16;
    if magic != MESSAGE_MAGIC {
        return Err(MessageError::BadMagic(magic));
    }
    let message = M::read(&mut r)?;
    if r.remaining() >= 8 || r.read_bits(r.remaining() as u32)? != 0 {
        return Err(MessageError::TrailingData);
    }
    Ok(message)
}

/// Writes the magic and the CRC-32 of the rest into the first 6 bytes of
/// `bytes` (a no-op for fewer): for fuzzing, so the checks past the
/// checksum are reached.
pub fn seal_datagram(bytes: &mut [u8]) {
    if bytes.len() < 6 {
        return;
    }
    bytes[..2].copy_from_slice(&DATAGRAM_MAGIC.to_le_bytes());
    let crc = datagram_checksum(bytes);
    bytes[2..6].copy_from_slice(&crc.to_le_bytes());
}

/// Frames arbitrary bits as a message (the magic, then `body`): for
/// fuzzing the typed decoders.
pub fn frame_raw_message(body: &[u8]) -> Vec<u8> {
    let mut out = MESSAGE_MAGIC.to_le_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// Whether `bytes` look like an endpoint datagram (by magic only).
pub fn is_reliable_datagram(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && u16::from_le_bytes([bytes[0], bytes[1]]) == DATAGRAM_MAGIC
}

/// Sequence `a` is after `b` (serial order on `u16`).
fn seq_after(a: u16, b: u16) -> bool {
    (a.wrapping_sub(b) as i16) > 0
}

/// How an endpoint resends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReliableConfig {
    /// Ticks after which an unacknowledged message is sent again (default
    /// 8: a little over a 100 ms round trip at 60 Hz).
    pub resend_after: u64,
    /// Unacknowledged messages held before [`ReliableEndpoint::send`]
    /// refuses more (default 256, at most [`RECEIVE_WINDOW`]).
    pub max_in_flight: usize,
    /// Largest datagram in bytes (default 1200).
    pub max_datagram_bytes: usize,
}

impl Default for ReliableConfig {
    fn default() -> Self {
        ReliableConfig { resend_after: 8, max_in_flight: 256, max_datagram_bytes: 1200 }
    }
}

/// Counters of an endpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReliableStats {
    /// Messages queued to send.
    pub sent: u64,
    /// Messages sent again.
    pub resent: u64,
    /// Messages delivered in order.
    pub delivered: u64,
    /// Datagrams refused as malformed.
    pub refused: u64,
    /// Messages dropped as duplicates or outside the window.
    pub dropped: u64,
}

#[derive(Debug)]
struct Outgoing {
    seq: u16,
    bytes: Vec<u8>,
    last_sent: Option<u64>,
}

/// One end of an in-process reliable ordered channel over a lossy datagram
/// link. Time is the caller's tick count.
///
/// ```
/// use ecs_replication::reliable::{ReliableConfig, ReliableEndpoint};
/// let (mut a, mut b) = (ReliableEndpoint::new(ReliableConfig::default()), ReliableEndpoint::new(ReliableConfig::default()));
/// a.send(b"hello".to_vec()).unwrap();
/// a.send(b"world".to_vec()).unwrap();
/// let lost = a.poll(0).unwrap(); // the first datagram is lost
/// drop(lost);
/// assert!(a.poll(1).is_none()); // nothing due before the resend timeout
/// let again = a.poll(8).unwrap();
/// b.receive(&again).unwrap();
/// assert_eq!(b.take(), Some(b"hello".to_vec()));
/// assert_eq!(b.take(), Some(b"world".to_vec()));
/// a.receive(&b.poll(8).unwrap()).unwrap(); // the acknowledgement
/// assert_eq!(a.in_flight(), 0);
/// ```
#[derive(Debug)]
pub struct ReliableEndpoint {
    config: ReliableConfig,
    next_seq: u16,
    outgoing: VecDeque<Outgoing>,
    next_expected: u16,
    buffered: BTreeMap<u16, Vec<u8>>,
    delivered: VecDeque<Vec<u8>>,
    ack_owed: bool,
    stats: ReliableStats,
}

impl ReliableEndpoint {
    /// An endpoint with nothing sent or received.
    pub fn new(config: ReliableConfig) -> Self {
        let config = ReliableConfig {
            max_in_flight: config.max_in_flight.clamp(1, RECEIVE_WINDOW as usize),
            max_datagram_bytes: config.max_datagram_bytes.max(64),
            resend_after: config.resend_after.max(1),
        };
        ReliableEndpoint {
            config,
            next_seq: 0,
            outgoing: VecDeque::new(),
            next_expected: 0,
            buffered: BTreeMap::new(),
            delivered: VecDeque::new(),
            ack_owed: false,
            stats: ReliableStats::default(),
        }
    }

    /// Queues a message (at most [`MAX_MESSAGE_BYTES`]).
    pub fn send(&mut self, bytes: Vec<u8>) -> Result<(), MessageError> {
        if bytes.len() > MAX_MESSAGE_BYTES {
            return Err(MessageError::TooLarge(bytes.len()));
        }
        if self.outgoing.len() >= self.config.max_in_flight {
            return Err(MessageError::Full);
        }
        self.outgoing.push_back(Outgoing { seq: self.next_seq, bytes, last_sent: None });
        self.next_seq = self.next_seq.wrapping_add(1);
        self.stats.sent += 1;
        Ok(())
    }

    /// Messages not acknowledged yet.
    pub fn in_flight(&self) -> usize {
        self.outgoing.len()
    }

    /// The counters.
    pub fn stats(&self) -> ReliableStats {
        self.stats
    }

    /// The next delivered message, in order.
    pub fn take(&mut self) -> Option<Vec<u8>> {
        self.delivered.pop_front()
    }

    /// A datagram to send at tick `now`, if anything is due: messages never
    /// sent or not acknowledged `resend_after` ticks after their last send,
    /// up to the size limit, and the acknowledgement state.
    pub fn poll(&mut self, now: u64) -> Option<Vec<u8>> {
        let mut body = BitWriter::new();
        let mut count = 0u64;
        let budget_bits = (self.config.max_datagram_bytes - 16) * 8;
        for out in &mut self.outgoing {
            if count >= MAX_MESSAGES_PER_DATAGRAM {
                break;
            }
            let due = out.last_sent.is_none_or(|t| now >= t + self.config.resend_after);
            if !due {
                continue;
            }
            let start = body.bit_len();
            body.write_bits(out.seq as u64, 16);
            body.write_varint(out.bytes.len() as u64);
            for b in &out.bytes {
                body.write_bits(*b as u64, 8);
            }
            if body.bit_len() > budget_bits && count > 0 {
                body.truncate(start);
                break;
            }
            if out.last_sent.is_some() {
                self.stats.resent += 1;
            }
            out.last_sent = Some(now);
            count += 1;
        }
        if count == 0 && !self.ack_owed {
            return None;
        }
        self.ack_owed = false;
        let mut w = BitWriter::new();
        w.write_bits(DATAGRAM_MAGIC as u64, 16);
        w.write_bits(0, 32);
        w.write_bits(self.next_expected as u64, 16);
        let mut mask = 0u32;
        for i in 0..32u16 {
            if self.buffered.contains_key(&self.next_expected.wrapping_add(1 + i)) {
                mask |= 1 << i;
            }
        }
        w.write_bits(mask as u64, 32);
        w.write_varint(count);
        w.append(&body);
        let mut bytes = w.finish();
        let crc = datagram_checksum(&bytes);
        bytes[2..6].copy_from_slice(&crc.to_le_bytes());
        Some(bytes)
    }

    /// Takes a datagram from the other end: its acknowledgement settles
    /// sent messages, its messages are delivered in order (duplicates and
    /// messages outside the window dropped). Refused whole, changing
    /// nothing, if malformed.
    pub fn receive(&mut self, bytes: &[u8]) -> Result<(), MessageError> {
        let parsed = match parse_datagram(bytes) {
            Ok(p) => p,
            Err(e) => {
                self.stats.refused += 1;
                return Err(e);
            }
        };
        // The acknowledgement: everything before `next`, and the masked ones.
        let (next, mask) = parsed.ack;
        let oldest_unsent = self.next_seq;
        if seq_after(next, oldest_unsent) {
            self.stats.refused += 1;
            return Err(MessageError::AckFromFuture);
        }
        self.outgoing.retain(|o| {
            let before = seq_after(next, o.seq);
            let offset = o.seq.wrapping_sub(next).wrapping_sub(1);
            let selected = offset < 32 && mask >> offset & 1 == 1;
            !(before || selected)
        });
        for (seq, message) in parsed.messages {
            self.ack_owed = true;
            let ahead = seq.wrapping_sub(self.next_expected);
            if ahead >= RECEIVE_WINDOW || self.buffered.contains_key(&seq) {
                self.stats.dropped += 1;
                continue;
            }
            self.buffered.insert(seq, message);
        }
        while let Some(message) = self.buffered.remove(&self.next_expected) {
            self.delivered.push_back(message);
            self.stats.delivered += 1;
            self.next_expected = self.next_expected.wrapping_add(1);
        }
        Ok(())
    }
}

struct Parsed {
    ack: (u16, u32),
    messages: Vec<(u16, Vec<u8>)>,
}

fn datagram_checksum(bytes: &[u8]) -> u32 {
    crc32(&[&bytes[..2.min(bytes.len())], bytes.get(6..).unwrap_or(&[])])
}

/// Checks and reads a whole endpoint datagram before anything changes.
fn parse_datagram(bytes: &[u8]) -> Result<Parsed, MessageError> {
    let mut r = BitReader::new(bytes);
    let magic = r.read_bits(16)? as u16;
    if magic != DATAGRAM_MAGIC {
        return Err(MessageError::BadMagic(magic));
    }
    if r.read_bits(32)? as u32 != datagram_checksum(bytes) {
        return Err(MessageError::Checksum);
    }
    let next = r.read_bits(16)? as u16;
    let mask = r.read_bits(32)? as u32;
    // Each message takes at least 16 + 8 bits: a count the rest cannot hold
    // is refused before anything is sized from it.
    let count = r.read_len(MAX_MESSAGES_PER_DATAGRAM.min(r.remaining() as u64 / 24))?;
    let mut messages = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let seq = r.read_bits(16)? as u16;
        let len = r.read_len((MAX_MESSAGE_BYTES as u64).min(r.remaining() as u64 / 8))? as usize;
        let mut message = Vec::with_capacity(len);
        for _ in 0..len {
            message.push(r.read_bits(8)? as u8);
        }
        messages.push((seq, message));
    }
    if r.remaining() >= 8 || r.read_bits(r.remaining() as u32)? != 0 {
        return Err(MessageError::TrailingData);
    }
    Ok(Parsed { ack: (next, mask), messages })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditioner::{Conditioner, LinkConfig};
    use proptest::prelude::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Chat(String);

    impl NetMessage for Chat {
        fn write(&self, w: &mut BitWriter) {
            w.write_varint(self.0.len() as u64);
            for b in self.0.bytes() {
                w.write_bits(b as u64, 8);
            }
        }
        fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
            let len = r.read_len(200)? as usize;
            let mut bytes = Vec::with_capacity(len);
            for _ in 0..len {
                bytes.push(r.read_bits(8)? as u8);
            }
            String::from_utf8(bytes).map(Chat).map_err(|_| BitError::TooLong { len: 0, max: 0 })
        }
    }

    /// Two endpoints over a conditioned link each way; returns what `b`
    /// delivered of `count` messages sent by `a`.
    fn run(link: LinkConfig, count: usize, seed: u64) -> (Vec<Vec<u8>>, ReliableStats) {
        let (mut a, mut b) =
            (ReliableEndpoint::new(ReliableConfig::default()), ReliableEndpoint::new(ReliableConfig::default()));
        let (mut ab, mut ba) = (Conditioner::new(link, seed), Conditioner::new(link, seed ^ 99));
        let mut got = Vec::new();
        let mut queued = 0;
        let mut out = Vec::new();
        for now in 0..5000u64 {
            while queued < count && a.send(format!("message {queued}").into_bytes()).is_ok() {
                queued += 1;
            }
            if let Some(d) = a.poll(now) {
                ab.send(now, &d);
            }
            if let Some(d) = b.poll(now) {
                ba.send(now, &d);
            }
            ab.receive(now, &mut out);
            for d in out.drain(..) {
                let _ = b.receive(&d);
            }
            ba.receive(now, &mut out);
            for d in out.drain(..) {
                let _ = a.receive(&d);
            }
            while let Some(m) = b.take() {
                got.push(m);
            }
            if got.len() == count && a.in_flight() == 0 {
                break;
            }
        }
        (got, a.stats())
    }

    #[test]
    fn messages_arrive_in_order_through_loss_duplication_reordering_and_corruption() {
        let link = LinkConfig { loss: 0.3, delay: 3, jitter: 5, duplicate: 0.2, corrupt: 0.05 };
        let (got, stats) = run(link, 2000, 5);
        let want: Vec<Vec<u8>> = (0..2000).map(|i| format!("message {i}").into_bytes()).collect();
        assert_eq!(got, want);
        assert!(stats.resent > 0);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let (got, _) = run(LinkConfig { loss: 0.1, ..LinkConfig::clean(2) }, 70_000, 1);
        assert_eq!(got.len(), 70_000);
        assert_eq!(got[69_999], b"message 69999".to_vec());
    }

    #[test]
    fn bounds_and_errors() {
        let mut a = ReliableEndpoint::new(ReliableConfig { max_in_flight: 2, ..ReliableConfig::default() });
        assert_eq!(a.send(vec![0; MAX_MESSAGE_BYTES + 1]), Err(MessageError::TooLarge(MAX_MESSAGE_BYTES + 1)));
        a.send(vec![1]).unwrap();
        a.send(vec![2]).unwrap();
        assert_eq!(a.send(vec![3]), Err(MessageError::Full));
        // An acknowledgement of messages never sent is refused: `from_b`
        // got five messages and acknowledges them to `a`, which sent two.
        let mut b = ReliableEndpoint::new(ReliableConfig::default());
        for _ in 0..5 {
            b.send(vec![9]).unwrap();
        }
        let mut from_b = ReliableEndpoint::new(ReliableConfig::default());
        from_b.receive(&b.poll(0).unwrap()).unwrap();
        assert_eq!(a.receive(&from_b.poll(0).unwrap()), Err(MessageError::AckFromFuture));
        assert_eq!(a.in_flight(), 2);
        // Typed messages.
        let bytes = encode_message(&Chat("hi".into())).unwrap();
        assert_eq!(decode_message::<Chat>(&bytes), Ok(Chat("hi".into())));
        let mut long = bytes.clone();
        long.push(1);
        assert_eq!(decode_message::<Chat>(&long), Err(MessageError::TrailingData));
        assert!(matches!(decode_message::<Chat>(&[0, 0, 0]), Err(MessageError::BadMagic(0))));
        assert!(matches!(encode_message(&Chat("x".repeat(2000))), Err(MessageError::TooLarge(_))));
    }

    proptest! {
        #[test]
        fn hostile_datagrams_are_refused_without_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..300), seal in any::<bool>()) {
            if seal && bytes.len() >= 6 {
                bytes[..2].copy_from_slice(&DATAGRAM_MAGIC.to_le_bytes());
                let crc = datagram_checksum(&bytes);
                bytes[2..6].copy_from_slice(&crc.to_le_bytes());
            }
            let mut e = ReliableEndpoint::new(ReliableConfig::default());
            let _ = e.receive(&bytes);
            prop_assert!(e.buffered.len() <= RECEIVE_WINDOW as usize);
            let _ = decode_message::<Chat>(&bytes);
        }
    }
}
