//! Input upstream: what a player does, sent every tick with the last few
//! inputs repeated (Fiedler, "Networked Physics": redundancy beats resends
//! for data that is stale in 100 ms), and the server's per-client buffer
//! that hands out the input for tick T at tick T.
//!
//! ## Wire format (one datagram per client tick), bit-packed
//! ```text
//! magic u16 | CRC-32 u32 of every other byte
//! ack flag (1 bit) [newest applied snapshot tick u32 | previous u32]
//! timestamp u16 (client clock, ms, wraps) | newest input tick u32
//! input count (4 bits, 0..=MAX_INPUTS_PER_PACKET)
//! inputs, newest first: the newest in full; each older one a "same as the
//! newer one" bit, then in full if it differs
//! ```
//! The acknowledgement rides along, so a playing client sends one datagram
//! per tick. At 60 Hz with 3 redundant inputs of a 2-byte input the packet is
//! 23 bytes (see the `upstream_bytes` test).
//!
//! The decoder is hostile-input safe: bounded count, every read checked,
//! CRC first, trailing bytes refused, no allocation sized by the packet
//! beyond [`MAX_INPUTS_PER_PACKET`] inputs. [`ClientInput::read`] must not
//! allocate from a length it read without bounding it.

use std::collections::VecDeque;

use crate::ack::Ack;
use crate::bits::{BitError, BitReader, BitWriter, crc32};
use crate::tick::{tick_diff, tick_newer};

/// The first two bytes of an upstream datagram.
pub const UPSTREAM_MAGIC: u16 = 0x1B7E;

/// Most inputs one datagram carries (the newest and up to 15 repeats).
pub const MAX_INPUTS_PER_PACKET: usize = 15;

/// How far ahead of the server's tick an input may be (about 4 s at 60 Hz);
/// later ones are refused as hostile (they would fill the buffer).
pub const MAX_INPUT_LEAD: i32 = 240;

/// A player's input for one tick: bit-packed, compared for the redundancy
/// coding and for "did the server use what I predicted with".
///
/// ```
/// use ecs_replication::bits::{BitError, BitReader, BitWriter};
/// use ecs_replication::input::ClientInput;
///
/// #[derive(Clone, Copy, Debug, Default, PartialEq)]
/// struct Move { x: i8, y: i8, fire: bool }
/// impl ClientInput for Move {
///     fn write(&self, w: &mut BitWriter) {
///         w.write_bits(self.x as u8 as u64, 2);
///         w.write_bits(self.y as u8 as u64, 2);
///         w.write_bool(self.fire);
///     }
///     fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
///         let axis = |v: u64| match v { 1 => 1, 3 => -1, _ => 0 };
///         Ok(Move { x: axis(r.read_bits(2)?), y: axis(r.read_bits(2)?), fire: r.read_bool()? })
///     }
/// }
/// ```
pub trait ClientInput: Clone + PartialEq + Default + Send + Sync + 'static {
    /// Writes the input.
    fn write(&self, w: &mut BitWriter);
    /// Reads one; every malformed field is an error, never a panic.
    fn read(r: &mut BitReader<'_>) -> Result<Self, BitError>;
}

/// Why an upstream datagram was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputError {
    /// Malformed or short.
    Bits(BitError),
    /// Not an upstream datagram.
    BadMagic(u16),
    /// Corrupted (CRC-32 mismatch).
    Checksum,
    /// An acknowledgement or input tick of 0.
    ZeroTick,
    /// More inputs than [`MAX_INPUTS_PER_PACKET`].
    TooManyInputs(u64),
    /// Bytes after the last input that are not padding.
    TrailingData,
}

impl From<BitError> for InputError {
    fn from(e: BitError) -> Self {
        InputError::Bits(e)
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputError::Bits(e) => write!(f, "malformed input datagram: {e}"),
            InputError::BadMagic(m) => write!(f, "not an input datagram (magic {m:#06x})"),
            InputError::Checksum => f.write_str("input datagram checksum mismatch"),
            InputError::ZeroTick => f.write_str("tick 0 in an input datagram"),
            InputError::TooManyInputs(n) => write!(f, "{n} inputs, at most {MAX_INPUTS_PER_PACKET}"),
            InputError::TrailingData => f.write_str("data after the last input"),
        }
    }
}

impl std::error::Error for InputError {}

/// The fixed part of an upstream datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpstreamHeader {
    /// The snapshot acknowledgement, once the client applied one.
    pub ack: Option<Ack>,
    /// The client's clock when it sent this (ms, wraps at 2^16), echoed by
    /// the server for the round-trip time.
    pub timestamp: u16,
    /// The tick of the newest input (0 with no inputs).
    pub newest_input: u32,
    /// Inputs carried.
    pub count: u8,
}

/// Writes one upstream datagram: `inputs` newest first, the newest for tick
/// `newest_input`.
///
/// # Panics
/// If more than [`MAX_INPUTS_PER_PACKET`] inputs are given (a programming
/// error).
pub fn encode_upstream<I: ClientInput>(ack: Option<Ack>, timestamp: u16, newest_input: u32, inputs: &[I]) -> Vec<u8> {
    assert!(inputs.len() <= MAX_INPUTS_PER_PACKET, "at most {MAX_INPUTS_PER_PACKET} inputs per datagram");
    let mut w = BitWriter::new();
    w.write_bits(UPSTREAM_MAGIC as u64, 16);
    w.write_bits(0, 32);
    w.write_bool(ack.is_some());
    if let Some(a) = ack {
        w.write_bits(a.newest as u64, 32);
        w.write_bits(a.previous as u64, 32);
    }
    w.write_bits(timestamp as u64, 16);
    w.write_bits(if inputs.is_empty() { 0 } else { newest_input } as u64, 32);
    w.write_bits(inputs.len() as u64, 4);
    for (i, input) in inputs.iter().enumerate() {
        if i > 0 {
            let same = *input == inputs[i - 1];
            w.write_bool(same);
            if same {
                continue;
            }
        }
        input.write(&mut w);
    }
    let mut bytes = w.finish();
    let crc = checksum(&bytes);
    bytes[2..6].copy_from_slice(&crc.to_le_bytes());
    bytes
}

fn checksum(bytes: &[u8]) -> u32 {
    crc32(&[&bytes[..2.min(bytes.len())], bytes.get(6..).unwrap_or(&[])])
}

/// Writes the magic and the CRC-32 of the rest into the first 6 bytes of
/// `bytes` (a no-op for fewer): for fuzzing and tools that build datagrams
/// by hand, so the decoder's checks past the checksum are reached.
pub fn seal_upstream(bytes: &mut [u8]) {
    if bytes.len() < 6 {
        return;
    }
    bytes[..2].copy_from_slice(&UPSTREAM_MAGIC.to_le_bytes());
    let crc = checksum(bytes);
    bytes[2..6].copy_from_slice(&crc.to_le_bytes());
}

/// Whether `bytes` look like an upstream datagram (by magic only).
pub fn is_upstream(bytes: &[u8]) -> bool {
    bytes.len() >= 2 && u16::from_le_bytes([bytes[0], bytes[1]]) == UPSTREAM_MAGIC
}

fn read_header<'a>(bytes: &'a [u8]) -> Result<(UpstreamHeader, BitReader<'a>), InputError> {
    let mut r = BitReader::new(bytes);
    let magic = r.read_bits(16)? as u16;
    if magic != UPSTREAM_MAGIC {
        return Err(InputError::BadMagic(magic));
    }
    let crc = r.read_bits(32)? as u32;
    if crc != checksum(bytes) {
        return Err(InputError::Checksum);
    }
    let ack = if r.read_bool()? {
        let newest = r.read_bits(32)? as u32;
        let previous = r.read_bits(32)? as u32;
        if newest == 0 {
            return Err(InputError::ZeroTick);
        }
        Some(Ack { newest, previous })
    } else {
        None
    };
    let timestamp = r.read_bits(16)? as u16;
    let newest_input = r.read_bits(32)? as u32;
    let count = r.read_bits(4)?;
    if count as usize > MAX_INPUTS_PER_PACKET {
        return Err(InputError::TooManyInputs(count));
    }
    if count > 0 && newest_input == 0 {
        return Err(InputError::ZeroTick);
    }
    Ok((UpstreamHeader { ack, timestamp, newest_input, count: count as u8 }, r))
}

/// Checks an upstream datagram's header (magic, checksum, counts) without
/// reading the inputs: what the snapshot server needs (the acknowledgement
/// and the timestamp), with no knowledge of the input type.
pub fn decode_upstream_header(bytes: &[u8]) -> Result<UpstreamHeader, InputError> {
    read_header(bytes).map(|(h, _)| h)
}

/// Decodes a whole upstream datagram: the header and the inputs, newest
/// first.
pub fn decode_upstream<I: ClientInput>(bytes: &[u8]) -> Result<(UpstreamHeader, Vec<I>), InputError> {
    let (header, mut r) = read_header(bytes)?;
    let mut inputs: Vec<I> = Vec::with_capacity(header.count as usize);
    for i in 0..header.count {
        if i > 0 && r.read_bool()? {
            let newer = inputs[i as usize - 1].clone();
            inputs.push(newer);
            continue;
        }
        inputs.push(I::read(&mut r)?);
    }
    if r.remaining() >= 8 || r.read_bits(r.remaining() as u32)? != 0 {
        return Err(InputError::TrailingData);
    }
    Ok((header, inputs))
}

/// A client's recent inputs by tick: what it sends (the newest few, again
/// and again) and what it re-simulates after a correction.
#[derive(Clone, Debug)]
pub struct InputHistory<I> {
    capacity: usize,
    inputs: VecDeque<(u32, I)>,
}

impl<I: ClientInput> InputHistory<I> {
    /// Keeps the inputs of the last `capacity` ticks (at least
    /// [`MAX_INPUTS_PER_PACKET`]).
    pub fn new(capacity: usize) -> Self {
        InputHistory { capacity: capacity.max(MAX_INPUTS_PER_PACKET), inputs: VecDeque::new() }
    }

    /// Records the input of `tick` (ticks must count up; an input for a
    /// tick not newer than the newest replaces nothing and is ignored).
    pub fn push(&mut self, tick: u32, input: I) {
        if self.inputs.back().is_some_and(|(t, _)| !tick_newer(tick, *t)) {
            return;
        }
        self.inputs.push_back((tick, input));
        while self.inputs.len() > self.capacity {
            self.inputs.pop_front();
        }
    }

    /// The input of `tick`, if held.
    pub fn get(&self, tick: u32) -> Option<&I> {
        // Usually one of the newest few; ticks skip 0 at the wrap, so the
        // index cannot be computed from the difference.
        self.inputs.iter().rev().take_while(|(t, _)| !tick_newer(tick, *t)).find(|(t, _)| *t == tick).map(|(_, i)| i)
    }

    /// The newest tick held.
    pub fn newest(&self) -> Option<u32> {
        self.inputs.back().map(|(t, _)| *t)
    }

    /// An upstream datagram with the newest input and `redundancy` older
    /// ones (as many as are held, at most [`MAX_INPUTS_PER_PACKET`] in
    /// all).
    pub fn datagram(&self, ack: Option<Ack>, timestamp: u16, redundancy: usize) -> Vec<u8> {
        let take = (redundancy + 1).min(MAX_INPUTS_PER_PACKET).min(self.inputs.len());
        let newest: Vec<I> = self.inputs.iter().rev().take(take).map(|(_, i)| i.clone()).collect();
        encode_upstream(ack, timestamp, self.newest().unwrap_or(0), &newest)
    }
}

/// Where the input the server used for a tick came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputSource {
    /// The client's input for that tick.
    Received,
    /// Not there in time: the last known input, repeated.
    Repeated,
    /// Nothing received yet: the default input.
    Default,
}

/// Counters of one client's input stream on the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InputStats {
    /// Datagrams decoded.
    pub datagrams: u64,
    /// Datagrams refused.
    pub refused: u64,
    /// Ticks whose input was there in time.
    pub on_time: u64,
    /// Ticks whose input was missing when the tick ran (the last one was
    /// repeated).
    pub late: u64,
    /// How many ticks ahead of the server the newest input was when its
    /// datagram arrived (negative: behind), latest datagram.
    pub lead: i32,
}

/// One client's input buffer on the server: inputs by tick, handed out at
/// their tick.
///
/// ```
/// use ecs_replication::input::{InputBuffer, InputSource, encode_upstream};
/// # use ecs_replication::bits::{BitError, BitReader, BitWriter};
/// # use ecs_replication::input::ClientInput;
/// # #[derive(Clone, Copy, Debug, Default, PartialEq)]
/// # struct Fire(bool);
/// # impl ClientInput for Fire {
/// #     fn write(&self, w: &mut BitWriter) { w.write_bool(self.0) }
/// #     fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> { Ok(Fire(r.read_bool()?)) }
/// # }
/// let mut buffer = InputBuffer::<Fire>::new(64);
/// // Inputs for ticks 12, 11, 10 in one datagram, received at server tick 9.
/// let datagram = encode_upstream(None, 0, 12, &[Fire(true), Fire(false), Fire(false)]);
/// buffer.receive(&datagram, 9).unwrap();
/// assert_eq!(buffer.take(10), (Fire(false), InputSource::Received));
/// assert_eq!(buffer.take(12), (Fire(true), InputSource::Received));
/// assert_eq!(buffer.take(13), (Fire(true), InputSource::Repeated)); // late: repeated
/// assert_eq!(buffer.stats().late, 1);
/// ```
#[derive(Clone, Debug)]
pub struct InputBuffer<I> {
    capacity: usize,
    /// Inputs not handed out yet, ascending by tick.
    pending: VecDeque<(u32, I)>,
    /// The last input handed out (what a late tick repeats).
    last: Option<I>,
    /// The newest tick handed out (0: none).
    consumed: u32,
    stats: InputStats,
    /// The newest timestamp received and the server tick it arrived at.
    echo: Option<(u16, u32)>,
}

impl<I: ClientInput> InputBuffer<I> {
    /// A buffer holding up to `capacity` future inputs.
    pub fn new(capacity: usize) -> Self {
        InputBuffer {
            capacity: capacity.clamp(MAX_INPUTS_PER_PACKET, MAX_INPUT_LEAD as usize + 1),
            pending: VecDeque::new(),
            last: None,
            consumed: 0,
            stats: InputStats::default(),
            echo: None,
        }
    }

    /// Takes an upstream datagram that arrived while the server's newest
    /// built tick was `server_tick`. Returns its header (the snapshot
    /// server wants the acknowledgement). Inputs for ticks already handed
    /// out are counted late; inputs further ahead than [`MAX_INPUT_LEAD`]
    /// are ignored.
    pub fn receive(&mut self, bytes: &[u8], server_tick: u32) -> Result<UpstreamHeader, InputError> {
        let (header, inputs) = match decode_upstream::<I>(bytes) {
            Ok(x) => x,
            Err(e) => {
                self.stats.refused += 1;
                return Err(e);
            }
        };
        self.stats.datagrams += 1;
        if self.echo.is_none_or(|(t, _)| (header.timestamp.wrapping_sub(t) as i16) > 0) {
            self.echo = Some((header.timestamp, server_tick));
        }
        if inputs.is_empty() {
            return Ok(header);
        }
        self.stats.lead = tick_diff(header.newest_input, server_tick);
        for (back, input) in inputs.into_iter().enumerate() {
            let tick = header.newest_input.wrapping_sub(back as u32);
            if tick == 0 {
                break;
            }
            if self.consumed != 0 && !tick_newer(tick, self.consumed) {
                // Its tick ran already (it was counted late then).
                continue;
            }
            if tick_diff(tick, server_tick) > MAX_INPUT_LEAD {
                continue;
            }
            // Insert keeping ascending order; duplicates are ignored.
            match self.pending.iter().rposition(|(t, _)| !tick_newer(*t, tick)) {
                Some(i) if self.pending[i].0 == tick => {}
                Some(i) => self.pending.insert(i + 1, (tick, input)),
                None => self.pending.push_front((tick, input)),
            }
        }
        while self.pending.len() > self.capacity {
            self.pending.pop_back();
        }
        Ok(header)
    }

    /// The input for `tick` (ticks must be taken in order): the client's
    /// own if it arrived, else the last one repeated (counted late). Older
    /// inputs still held are dropped.
    pub fn take(&mut self, tick: u32) -> (I, InputSource) {
        while self.pending.front().is_some_and(|(t, _)| tick_newer(tick, *t)) {
            self.pending.pop_front();
        }
        self.consumed = tick;
        if self.pending.front().is_some_and(|(t, _)| *t == tick) {
            let (_, input) = self.pending.pop_front().expect("checked above");
            self.last = Some(input.clone());
            self.stats.on_time += 1;
            return (input, InputSource::Received);
        }
        match &self.last {
            Some(last) => {
                self.stats.late += 1;
                (last.clone(), InputSource::Repeated)
            }
            None => (I::default(), InputSource::Default),
        }
    }

    /// The counters.
    pub fn stats(&self) -> InputStats {
        self.stats
    }

    /// Inputs waiting for their tick.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no input waits.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The newest client timestamp received and the server tick it arrived
    /// at: what the server echoes for the round-trip time.
    pub fn echo(&self) -> Option<(u16, u32)> {
        self.echo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A typical action game input: a movement direction (3 bits: 8
    /// directions or none... 4 bits), aim (8 bits), 4 buttons.
    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct Pad {
        direction: u8,
        aim: u8,
        buttons: u8,
    }

    impl ClientInput for Pad {
        fn write(&self, w: &mut BitWriter) {
            w.write_bits(self.direction as u64, 4);
            w.write_bits(self.aim as u64, 8);
            w.write_bits(self.buttons as u64, 4);
        }
        fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
            Ok(Pad { direction: r.read_bits(4)? as u8, aim: r.read_bits(8)? as u8, buttons: r.read_bits(4)? as u8 })
        }
    }

    fn pad() -> impl Strategy<Value = Pad> {
        (0u8..16, any::<u8>(), 0u8..16).prop_map(|(direction, aim, buttons)| Pad { direction, aim, buttons })
    }

    #[test]
    fn upstream_bytes() {
        // The newest and 3 redundant inputs, all different (the worst case)
        // and all the same (a held key), with an acknowledgement.
        let ack = Some(Ack { newest: 1000, previous: u32::MAX });
        let all_new: Vec<Pad> = (0..4).map(|i| Pad { direction: i, aim: 10 * i, buttons: 1 }).collect();
        let worst = encode_upstream(ack, 77, 1234, &all_new);
        let held = encode_upstream(ack, 77, 1234, &[Pad { direction: 3, aim: 9, buttons: 0 }; 4]);
        assert_eq!(worst.len(), 29);
        assert_eq!(held.len(), 23);
        assert!(worst.len() <= 64);
    }

    proptest! {
        #[test]
        fn datagrams_round_trip(inputs in proptest::collection::vec(pad(), 0..=MAX_INPUTS_PER_PACKET), newest in 1u32.., stamp in any::<u16>(), ack in proptest::option::of((1u32.., any::<u32>()))) {
            let ack = ack.map(|(newest, previous)| Ack { newest, previous });
            let bytes = encode_upstream(ack, stamp, newest, &inputs);
            let (header, back) = decode_upstream::<Pad>(&bytes).unwrap();
            prop_assert_eq!(header.ack, ack);
            prop_assert_eq!(header.timestamp, stamp);
            prop_assert_eq!(header.count as usize, inputs.len());
            prop_assert_eq!(back, inputs);
            prop_assert_eq!(decode_upstream_header(&bytes), Ok(header));
        }

        #[test]
        fn hostile_datagrams_are_refused_without_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..80), seal in any::<bool>()) {
            if seal && bytes.len() >= 6 {
                bytes[..2].copy_from_slice(&UPSTREAM_MAGIC.to_le_bytes());
                let crc = checksum(&bytes);
                bytes[2..6].copy_from_slice(&crc.to_le_bytes());
            }
            let _ = decode_upstream::<Pad>(&bytes);
            let mut buffer = InputBuffer::<Pad>::new(64);
            let _ = buffer.receive(&bytes, 5);
            prop_assert!(buffer.len() <= 64);
        }

        #[test]
        fn every_flipped_bit_is_refused(flip in 0usize..(8 * 24)) {
            let mut bytes = encode_upstream(None, 1, 50, &[Pad::default(); 3]);
            let bit = flip % (8 * bytes.len());
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode_upstream::<Pad>(&bytes).is_err());
        }
    }

    #[test]
    fn malformed_datagrams_name_the_problem() {
        assert!(matches!(decode_upstream::<Pad>(&[]), Err(InputError::Bits(_))));
        assert_eq!(decode_upstream::<Pad>(&[1, 2, 0, 0, 0, 0, 0]), Err(InputError::BadMagic(0x0201)));
        let mut bytes = encode_upstream(None, 1, 50, &[Pad::default()]);
        bytes.push(0xff);
        assert_eq!(decode_upstream::<Pad>(&bytes), Err(InputError::Checksum));
        // Resealed: now the trailing byte is what is wrong.
        let crc = checksum(&bytes);
        bytes[2..6].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(decode_upstream::<Pad>(&bytes), Err(InputError::TrailingData));
        // A count above the limit.
        let mut w = BitWriter::new();
        w.write_bits(UPSTREAM_MAGIC as u64, 16);
        w.write_bits(0, 32);
        w.write_bool(false);
        w.write_bits(0, 16);
        w.write_bits(9, 32);
        w.write_bits(15, 4);
        let mut bytes = w.finish();
        let crc = checksum(&bytes);
        bytes[2..6].copy_from_slice(&crc.to_le_bytes());
        assert!(matches!(decode_upstream::<Pad>(&bytes), Err(InputError::Bits(_))));
    }

    #[test]
    fn the_buffer_repeats_and_counts_late_inputs() {
        let mut buffer = InputBuffer::<Pad>::new(64);
        let p = |d: u8| Pad { direction: d, aim: 0, buttons: 0 };
        assert_eq!(buffer.take(1), (Pad::default(), InputSource::Default));
        // Ticks 3, 2 arrive at server tick 1: lead 2.
        buffer.receive(&encode_upstream(None, 10, 3, &[p(3), p(2)]), 1).unwrap();
        assert_eq!(buffer.stats().lead, 2);
        assert_eq!(buffer.take(2), (p(2), InputSource::Received));
        assert_eq!(buffer.take(3), (p(3), InputSource::Received));
        // Tick 4 is missing: the last one repeats.
        assert_eq!(buffer.take(4), (p(3), InputSource::Repeated));
        // Tick 4 arrives now, with 5: 4 is late, 5 is used.
        buffer.receive(&encode_upstream(None, 11, 5, &[p(5), p(4)]), 4).unwrap();
        assert_eq!(buffer.take(5), (p(5), InputSource::Received));
        let stats = buffer.stats();
        assert_eq!((stats.on_time, stats.late), (3, 1));
        // Duplicates and reordering change nothing.
        buffer.receive(&encode_upstream(None, 12, 8, &[p(8), p(7), p(6)]), 5).unwrap();
        buffer.receive(&encode_upstream(None, 9, 7, &[p(7), p(6)]), 5).unwrap();
        assert_eq!(buffer.len(), 3);
        assert_eq!(buffer.echo(), Some((12, 5)));
        // Far-future inputs are ignored.
        buffer.receive(&encode_upstream(None, 13, 5 + MAX_INPUT_LEAD as u32 + 10, &[p(1)]), 5).unwrap();
        assert_eq!(buffer.len(), 3);
    }

    #[test]
    fn history_finds_inputs_by_tick_across_the_wrap() {
        let mut history = InputHistory::<Pad>::new(20);
        for (i, tick) in [u32::MAX - 2, u32::MAX - 1, u32::MAX, 1, 2].into_iter().enumerate() {
            history.push(tick, Pad { direction: i as u8, aim: 0, buttons: 0 });
        }
        assert_eq!(history.get(1).map(|p| p.direction), Some(3));
        assert_eq!(history.get(u32::MAX - 2).map(|p| p.direction), Some(0));
        assert_eq!(history.get(3), None);
        let (header, inputs) = decode_upstream::<Pad>(&history.datagram(None, 0, 3)).unwrap();
        assert_eq!(header.newest_input, 2);
        assert_eq!(inputs.iter().map(|p| p.direction).collect::<Vec<_>>(), vec![4, 3, 2, 1]);
    }
}
