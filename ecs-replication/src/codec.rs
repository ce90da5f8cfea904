//! The snapshot packet codec: no ECS types, usable on its own.
//!
//! ## Wire format (version 7), bit-packed
//! ```text
//! magic u16 | version u8 | schema hash ^ CRC-32 u32 | tick u32 | baseline tick u32 (0 = none)
//! time sync flag (1 bit) [echoed client timestamp u16 | ticks held u8 | input lead i8]
//! complete flag (1 bit)
//! entry count u16 (bounded)
//! entry: kind (2 bits: spawn, update, despawn) | network id (varint, bounded)
//!        spawn/update: component mask (one bit per schema component)
//!        update: removal flag (1 bit) [removed mask (one bit per schema component)]
//!                baseline flag (1 bit) [packet-baseline flag (1 bit) | else
//!                ticks back (varint, 1..=MAX_DELTA_BACK)]
//!        spawn/update: per set bit of the component mask:
//!                [delta flag (1 bit), only in an update with a baseline] | value
//! ```
//! The complete flag says that nothing waits on the server for this
//! client: every change up to the packet's tick is in it or in an earlier
//! packet. An entity with no entry in a complete packet did not change at
//! its tick (the client's interpolation holds it there instead of
//! extrapolating on).
//!
//! Values follow the schema: raw bytes of a fixed size, a quantized position
//! (`3 * bits`), or a smallest-three rotation. A delta (see
//! [`crate::delta`]) is against the value the receiver got for that entity
//! in the packet of the entry's baseline tick: the packet's own baseline
//! (the client's newest acknowledged tick, one bit) or `back` ticks before
//! this packet. Positions and rotations send bit-packed per-axis or
//! per-level differences, plain bytes an XOR mask or word differences, as
//! the registry chose per component.
//!
//! The third field is the schema hash XOR a CRC-32 of every other byte of
//! the packet: a packet from another schema or with any single flipped bit
//! is refused, at no extra size. (Real transports authenticate datagrams
//! too; this keeps in-process links and tools honest.)
//!
//! Ticks are network ticks: they wrap from `u32::MAX` to 1 and compare in
//! serial number order ([`crate::tick`]); 0 means "none".
//!
//! The decoder treats every byte as hostile: the schema hash must match,
//! counts and ids are bounded before anything is sized from them, an entry
//! count larger than the remaining bits could hold is refused up front, and
//! any malformed field is an error value, never a panic. It checks the form
//! of a packet; whether its entries fit together and fit what a receiver
//! holds (no update after a despawn of the same entity, no second spawn, ...)
//! is checked by [`crate::client::Client`] before it applies anything.

use crate::bits::{BitError, BitReader, BitWriter};
pub use crate::delta::{BytesDelta, Delta, DeltaError};
use crate::delta::{read_small, read_xor, small_bits, write_small, write_xor, xor_bits};
use crate::quantize::{PositionQuantizer, RotationQuantizer};
use ecs_core::Component;

const MAGIC: u16 = 0xEC5A;
/// The wire format version this codec writes and reads.
pub const WIRE_VERSION: u8 = 7;

/// How far back (in ticks) a delta's baseline may lie.
pub const MAX_DELTA_BACK: u32 = 255;

/// The server's id of a replicated entity: what packets name, never an
/// ECS handle. Ids start at 1 and are not reused (a 40-bit space, see
/// [`Limits::max_net_id`]). On a client it is also a component of every
/// replicated entity.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NetId(pub u64);

impl std::fmt::Display for NetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// How one component type is put on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FieldCodec {
    /// Plain bytes of a fixed size (plain-old-data components), and how
    /// they are delta-coded.
    Bytes(u16, BytesDelta),
    /// A position quantized to fixed point.
    Position(PositionQuantizer),
    /// A rotation as smallest three.
    Rotation(RotationQuantizer),
}

/// The replicated component types, in a fixed order both ends share.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    fields: Vec<(String, FieldCodec)>,
}

/// Why a schema cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaError {
    /// More than 64 component types.
    TooManyComponents,
    /// Two components with one name.
    DuplicateName(String),
    /// A byte field of size 0 or over 1024, or word deltas on a size that
    /// is not a multiple of 4.
    BadByteSize(String),
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaError::TooManyComponents => f.write_str("a schema holds at most 64 component types"),
            SchemaError::DuplicateName(n) => write!(f, "component {n} is listed twice"),
            SchemaError::BadByteSize(n) => {
                write!(f, "component {n}: byte size must be 1 to 1024 (a multiple of 4 for word deltas)")
            }
        }
    }
}

impl std::error::Error for SchemaError {}

impl Schema {
    /// A schema from named codecs, in wire order.
    pub fn new(fields: Vec<(String, FieldCodec)>) -> Result<Schema, SchemaError> {
        if fields.len() > 64 {
            return Err(SchemaError::TooManyComponents);
        }
        for (i, (name, codec)) in fields.iter().enumerate() {
            if fields[..i].iter().any(|(n, _)| n == name) {
                return Err(SchemaError::DuplicateName(name.clone()));
            }
            if let FieldCodec::Bytes(n, delta) = codec
                && (!(1..=1024).contains(n) || (*delta == BytesDelta::Words && !n.is_multiple_of(4)))
            {
                return Err(SchemaError::BadByteSize(name.clone()));
            }
        }
        Ok(Schema { fields })
    }

    /// Component types.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the schema is empty.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The codec of component `index`.
    pub fn codec(&self, index: usize) -> Option<FieldCodec> {
        self.fields.get(index).map(|(_, c)| *c)
    }

    /// The name of component `index`.
    pub fn name(&self, index: usize) -> Option<&str> {
        self.fields.get(index).map(|(n, _)| n.as_str())
    }

    /// The index of a component by name.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }

    /// A hash of names, codecs and the wire version: two ends with
    /// different schemas refuse each other's packets.
    pub fn hash(&self) -> u32 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ WIRE_VERSION as u64;
        let mut eat = |v: u64| {
            h ^= v;
            h = h.wrapping_mul(0x100_0000_01b3);
        };
        for (name, codec) in &self.fields {
            for b in name.bytes() {
                eat(b as u64);
            }
            match codec {
                FieldCodec::Bytes(n, delta) => {
                    eat(0x100 | *n as u64);
                    eat(match delta {
                        BytesDelta::None => 0x400,
                        BytesDelta::Xor => 0x401,
                        BytesDelta::Words => 0x402,
                    });
                }
                FieldCodec::Position(p) => {
                    eat(0x200 | p.bits() as u64);
                    eat(p.unit().to_bits() as u64);
                }
                FieldCodec::Rotation(r) => eat(0x300 | r.total_bits() as u64),
            }
        }
        (h ^ (h >> 32)) as u32
    }
}

/// One component value on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Plain bytes.
    Bytes(Vec<u8>),
    /// A quantized position.
    Position([i32; 3]),
    /// A smallest-three rotation.
    Rotation(u64),
    /// The difference from the value the receiver holds at the entry's
    /// baseline tick (updates with a baseline only).
    Delta(Delta),
}

/// What happens to one entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// The entity appears with the listed components.
    Spawn,
    /// Listed components changed.
    Update,
    /// The entity is gone.
    Despawn,
}

/// One entity's part of a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Spawn, update or despawn.
    pub kind: EntryKind,
    /// The server's id for the entity (not an ECS handle).
    pub net_id: NetId,
    /// Updates: how many ticks before this packet the baseline of its
    /// deltas lies (`1..=MAX_DELTA_BACK`), or 0 with no deltas.
    pub baseline: u32,
    /// `(schema index, value)`, ascending by index.
    pub components: Vec<(u8, Value)>,
    /// Updates: components removed from the entity (schema bits, none of
    /// them in `components`). Spawns carry full state and despawns none,
    /// so it is 0 for them.
    pub removed: u64,
}

/// What a snapshot tells its client about time (see [`crate::clock`]):
/// the newest client timestamp the server received, how long it held it,
/// and how early that client's inputs arrive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeSync {
    /// The newest timestamp of the client's upstream datagrams.
    pub echo: u16,
    /// Server ticks between its arrival and this snapshot (saturates).
    pub hold: u8,
    /// Ticks the newest input was ahead of the server's tick when it
    /// arrived (negative: late; saturates at the `i8` range).
    pub lead: i8,
}

/// A decoded packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The server tick this snapshot describes.
    pub tick: u32,
    /// The tick it is delta-coded against (0: none).
    pub baseline: u32,
    /// The time sync block, for clients that send upstream datagrams.
    pub sync: Option<TimeSync>,
    /// Nothing waits on the server for this client: every change up to
    /// this tick is in this packet or an earlier one.
    pub complete: bool,
    /// The entries, in wire order.
    pub entries: Vec<Entry>,
}

/// Bounds the decoder enforces before sizing anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most entries in one packet.
    pub max_entries: u64,
    /// Largest network id.
    pub max_net_id: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_entries: 4096, max_net_id: (1 << 40) - 1 }
    }
}

/// Why a packet was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The packet ended early or a field was malformed.
    Bits(BitError),
    /// Not one of our packets.
    BadMagic(u16),
    /// Another wire version.
    Version(u8),
    /// Another schema, or a corrupted packet (the field carries a CRC-32).
    SchemaMismatch {
        /// Ours.
        expected: u32,
        /// Theirs.
        found: u32,
    },
    /// The entry kind code 3.
    BadEntryKind,
    /// A network id above the limit.
    NetIdOutOfRange(u64),
    /// A component mask naming an unknown component.
    UnknownComponent(u32),
    /// A delta flag on a field that cannot be delta-coded, or in a spawn.
    BadDelta(u32),
    /// A removed mask naming a component the entry also sets, or one past
    /// the schema.
    BadRemoval(u64),
    /// A delta baseline outside `1..=MAX_DELTA_BACK` ticks back, or "the
    /// packet's baseline" in a packet without one.
    BadBaseline(u64),
    /// Bytes after the last entry that are not padding.
    TrailingData,
}

impl From<BitError> for DecodeError {
    fn from(e: BitError) -> Self {
        DecodeError::Bits(e)
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Bits(e) => write!(f, "malformed packet: {e}"),
            DecodeError::BadMagic(m) => write!(f, "not a snapshot packet (magic {m:#06x})"),
            DecodeError::Version(v) => write!(f, "wire version {v}, expected {WIRE_VERSION}"),
            DecodeError::SchemaMismatch { expected, found } => {
                write!(f, "schema hash {found:#010x} does not match ours, {expected:#010x}")
            }
            DecodeError::BadEntryKind => f.write_str("unknown entry kind"),
            DecodeError::NetIdOutOfRange(id) => write!(f, "network id {id} is out of range"),
            DecodeError::UnknownComponent(i) => write!(f, "component index {i} is not in the schema"),
            DecodeError::BadDelta(i) => write!(f, "component {i} cannot be delta-coded here"),
            DecodeError::BadRemoval(mask) => {
                write!(f, "removed mask {mask:#x} overlaps the set components or the schema's end")
            }
            DecodeError::BadBaseline(back) => write!(f, "delta baseline {back} ticks back is out of range"),
            DecodeError::TrailingData => f.write_str("data after the last entry"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Why a packet could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// A value does not fit its schema field.
    WrongValue {
        /// The schema index.
        index: u8,
    },
    /// Components not in ascending schema order, or an index past the schema.
    BadIndex(u8),
    /// A removal or a baseline in a spawn or despawn, a removal past the
    /// schema or of a component the entry also sets.
    BadRemoval(u64),
    /// A baseline past [`MAX_DELTA_BACK`].
    BadBaseline(u32),
    /// More than [`MAX_ENTRIES_ON_WIRE`] entries.
    TooManyEntries,
}

impl std::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EncodeError::WrongValue { index } => write!(f, "value for component {index} does not match its codec"),
            EncodeError::BadIndex(i) => write!(f, "component index {i} is out of order or not in the schema"),
            EncodeError::BadRemoval(mask) => write!(f, "removed mask {mask:#x} does not fit the entry"),
            EncodeError::BadBaseline(back) => write!(f, "baseline {back} ticks back is out of range"),
            EncodeError::TooManyEntries => write!(f, "a packet holds at most {MAX_ENTRIES_ON_WIRE} entries"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// Writes packets for one schema.
#[derive(Clone, Debug)]
pub struct Encoder<'s> {
    schema: &'s Schema,
    /// The packet's tick and baseline tick (entries whose baseline is the
    /// packet's say so in one bit).
    ticks: (u32, u32),
    /// Header, count field, entries: written in one go, the count patched
    /// in at the end.
    writer: BitWriter,
    /// Where the count field starts (the complete flag is the bit before).
    count_at: usize,
    entries: u64,
}

impl<'s> Encoder<'s> {
    /// Starts a packet for `tick`, delta-coded against `baseline` (0: none).
    pub fn new(schema: &'s Schema, tick: u32, baseline: u32) -> Self {
        Self::with_sync(schema, tick, baseline, None)
    }

    /// Starts a packet with a time sync block.
    pub fn with_sync(schema: &'s Schema, tick: u32, baseline: u32, sync: Option<TimeSync>) -> Self {
        let mut writer = BitWriter::new();
        writer.write_bits(MAGIC as u64, 16);
        writer.write_bits(WIRE_VERSION as u64, 8);
        writer.write_bits(schema.hash() as u64, 32);
        writer.write_bits(tick as u64, 32);
        writer.write_bits(baseline as u64, 32);
        writer.write_bool(sync.is_some());
        if let Some(s) = sync {
            writer.write_bits(s.echo as u64, 16);
            writer.write_bits(s.hold as u64, 8);
            writer.write_bits(s.lead as u8 as u64, 8);
        }
        // The complete flag, patched in by `set_complete`.
        writer.write_bool(false);
        let count_at = writer.bit_len();
        writer.write_bits(0, COUNT_BITS);
        Encoder { schema, ticks: (tick, baseline), writer, count_at, entries: 0 }
    }

    /// Appends one entry. Fails, writing nothing, if a value does not fit
    /// its field.
    pub fn push(&mut self, entry: &Entry) -> Result<(), EncodeError> {
        self.push_within(entry, usize::MAX).map(|_| ())
    }

    /// Appends one entry only if the packet then stays within `max_bytes`;
    /// returns whether it was appended. Fails, writing nothing, if a value
    /// does not fit its field, or with [`EncodeError::TooManyEntries`] past
    /// the count field's range.
    pub fn push_within(&mut self, entry: &Entry, max_bytes: usize) -> Result<bool, EncodeError> {
        if self.entries >= MAX_ENTRIES_ON_WIRE {
            return Err(EncodeError::TooManyEntries);
        }
        let start = self.writer.bit_len();
        if let Err(e) = write_entry(self.schema, self.ticks, &mut self.writer, entry) {
            self.writer.truncate(start);
            return Err(e);
        }
        if self.writer.bit_len().div_ceil(8) > max_bytes {
            self.writer.truncate(start);
            return Ok(false);
        }
        self.entries += 1;
        Ok(true)
    }

    /// Sets the complete flag (see the [module docs](self)).
    pub fn set_complete(&mut self, complete: bool) {
        self.writer.overwrite_bits(self.count_at - 1, complete as u64, 1);
    }

    /// Bytes the packet would take now.
    pub fn byte_len(&self) -> usize {
        self.writer.bit_len().div_ceil(8)
    }

    /// Entries pushed.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The finished packet.
    pub fn finish(mut self) -> Vec<u8> {
        self.writer.overwrite_bits(self.count_at, self.entries, COUNT_BITS);
        let mut bytes = self.writer.finish();
        let crc = checksum(&bytes);
        for (b, c) in bytes[3..7].iter_mut().zip(crc.to_le_bytes()) {
            *b ^= c;
        }
        bytes
    }
}

/// Bits of the entry count field.
const COUNT_BITS: u32 = 16;

/// The most entries a packet can hold on the wire.
pub const MAX_ENTRIES_ON_WIRE: u64 = (1 << COUNT_BITS) - 1;

fn write_entry(schema: &Schema, ticks: (u32, u32), w: &mut BitWriter, entry: &Entry) -> Result<(), EncodeError> {
    if entry.kind != EntryKind::Update && (entry.removed != 0 || entry.baseline != 0) {
        return Err(EncodeError::BadRemoval(entry.removed));
    }
    if entry.baseline > MAX_DELTA_BACK {
        return Err(EncodeError::BadBaseline(entry.baseline));
    }
    let kind = match entry.kind {
        EntryKind::Spawn => 0,
        EntryKind::Update => 1,
        EntryKind::Despawn => 2,
    };
    w.write_bits(kind, 2);
    w.write_varint(entry.net_id.0);
    if entry.kind == EntryKind::Despawn {
        return Ok(());
    }
    let mut mask = 0u64;
    let mut last: Option<u8> = None;
    for (index, _) in &entry.components {
        if last.is_some_and(|l| l >= *index) || *index as usize >= schema.len() {
            return Err(EncodeError::BadIndex(*index));
        }
        last = Some(*index);
        mask |= 1 << index;
    }
    w.write_bits(mask, schema.len() as u32);
    if entry.kind == EntryKind::Update {
        let width_mask = if schema.len() == 64 { u64::MAX } else { (1u64 << schema.len()) - 1 };
        if entry.removed & mask != 0 || entry.removed & !width_mask != 0 {
            return Err(EncodeError::BadRemoval(entry.removed));
        }
        w.write_bool(entry.removed != 0);
        if entry.removed != 0 {
            w.write_bits(entry.removed, schema.len() as u32);
        }
        w.write_bool(entry.baseline != 0);
        if entry.baseline != 0 {
            let (tick, packet_baseline) = ticks;
            let same = packet_baseline != 0 && tick.wrapping_sub(packet_baseline) == entry.baseline;
            w.write_bool(same);
            if !same {
                w.write_varint(entry.baseline as u64);
            }
        }
    }
    for (index, value) in &entry.components {
        let codec = schema.codec(*index as usize).ok_or(EncodeError::BadIndex(*index))?;
        let is_delta = matches!(value, Value::Delta(_));
        if entry.baseline != 0 {
            w.write_bool(is_delta);
        } else if is_delta {
            return Err(EncodeError::WrongValue { index: *index });
        }
        write_value(w, codec, value).ok_or(EncodeError::WrongValue { index: *index })?;
    }
    Ok(())
}

/// Writes one value; `None` (nothing useful written) if it does not fit
/// `codec`.
fn write_value(w: &mut BitWriter, codec: FieldCodec, value: &Value) -> Option<()> {
    match (codec, value) {
        (FieldCodec::Bytes(n, _), Value::Bytes(bytes)) if bytes.len() == n as usize => {
            for b in bytes {
                w.write_bits(*b as u64, 8);
            }
        }
        (FieldCodec::Position(q), Value::Position(p)) => q.write(w, *p),
        (FieldCodec::Rotation(r), Value::Rotation(bits)) => r.write(w, *bits),
        (FieldCodec::Position(_), Value::Delta(Delta::Position(d)))
        | (FieldCodec::Rotation(_), Value::Delta(Delta::Rotation(d))) => {
            for v in d {
                write_small(w, *v);
            }
        }
        (FieldCodec::Bytes(n, BytesDelta::Xor), Value::Delta(Delta::Xor(x))) if x.len() == n as usize => {
            write_xor(w, x)
        }
        (FieldCodec::Bytes(n, BytesDelta::Words), Value::Delta(Delta::Words(d))) if d.len() * 4 == n as usize => {
            for v in d {
                write_small(w, *v);
            }
        }
        _ => return None,
    }
    Some(())
}

/// Bits `value` takes on the wire as a component of an entry, delta flag
/// not counted; `None` if it does not fit `codec`. The server sizes its
/// choices (delta or absolute) with this.
///
/// ```
/// use ecs_replication::codec::{Delta, FieldCodec, Value, value_bits};
/// use ecs_replication::quantize::PositionQuantizer;
/// let codec = FieldCodec::Position(PositionQuantizer::new(0.01, 20).unwrap());
/// assert_eq!(value_bits(codec, &Value::Position([0; 3])), Some(60));
/// // Still, a step of 1, a step of 100: 2 + 6 + 12 bits.
/// assert_eq!(value_bits(codec, &Value::Delta(Delta::Position([0, 1, -100]))), Some(20));
/// ```
pub fn value_bits(codec: FieldCodec, value: &Value) -> Option<usize> {
    match (codec, value) {
        (FieldCodec::Bytes(n, _), Value::Bytes(b)) if b.len() == n as usize => Some(8 * n as usize),
        (FieldCodec::Position(q), Value::Position(_)) => Some(3 * q.bits() as usize),
        (FieldCodec::Rotation(r), Value::Rotation(_)) => Some(r.total_bits() as usize),
        (FieldCodec::Position(_), Value::Delta(Delta::Position(d)))
        | (FieldCodec::Rotation(_), Value::Delta(Delta::Rotation(d))) => Some(d.iter().map(|v| small_bits(*v)).sum()),
        (FieldCodec::Bytes(n, BytesDelta::Xor), Value::Delta(Delta::Xor(x))) if x.len() == n as usize => {
            Some(xor_bits(x))
        }
        (FieldCodec::Bytes(n, BytesDelta::Words), Value::Delta(Delta::Words(d))) if d.len() * 4 == n as usize => {
            Some(d.iter().map(|v| small_bits(*v)).sum())
        }
        _ => None,
    }
}

/// The delta of `current` against `base` for `codec`, if the codec
/// delta-codes and both are absolute values of it (a rotation whose dropped
/// component changed, or bytes with [`BytesDelta::None`], have none).
pub fn delta_of(codec: FieldCodec, base: &Value, current: &Value) -> Option<Value> {
    let delta = match (codec, base, current) {
        (FieldCodec::Position(_), Value::Position(a), Value::Position(b)) => {
            Delta::Position([0, 1, 2].map(|i| b[i] as i64 - a[i] as i64))
        }
        (FieldCodec::Rotation(q), Value::Rotation(a), Value::Rotation(b)) => {
            Delta::Rotation(crate::delta::rotation_delta(q, *a, *b)?)
        }
        (FieldCodec::Bytes(_, BytesDelta::Xor), Value::Bytes(a), Value::Bytes(b)) => {
            Delta::Xor(crate::delta::xor_delta(a, b)?)
        }
        (FieldCodec::Bytes(_, BytesDelta::Words), Value::Bytes(a), Value::Bytes(b)) => {
            Delta::Words(crate::delta::words_delta(a, b)?)
        }
        _ => return None,
    };
    Some(Value::Delta(delta))
}

/// The absolute value a delta stands for, given the receiver's baseline
/// value; an absolute `value` is returned as it is.
pub fn resolve_value(codec: FieldCodec, base: Option<&Value>, value: Value) -> Result<Value, DeltaError> {
    let Value::Delta(delta) = value else { return Ok(value) };
    let base = base.ok_or(DeltaError::WrongBaseline)?;
    match (codec, base, delta) {
        (FieldCodec::Position(q), Value::Position(a), Delta::Position(d)) => {
            let half = 1i64 << (q.bits() - 1);
            let mut out = [0i32; 3];
            for i in 0..3 {
                let v = (a[i] as i64).checked_add(d[i]).ok_or(DeltaError::OutOfRange)?;
                if v < -half || v >= half {
                    return Err(DeltaError::OutOfRange);
                }
                out[i] = v as i32;
            }
            Ok(Value::Position(out))
        }
        (FieldCodec::Rotation(q), Value::Rotation(a), Delta::Rotation(d)) => {
            crate::delta::apply_rotation_delta(q, *a, d).map(Value::Rotation)
        }
        (FieldCodec::Bytes(..), Value::Bytes(a), Delta::Xor(x)) => {
            crate::delta::apply_xor_delta(a, &x).map(Value::Bytes)
        }
        (FieldCodec::Bytes(..), Value::Bytes(a), Delta::Words(d)) => {
            crate::delta::apply_words_delta(a, &d).map(Value::Bytes)
        }
        _ => Err(DeltaError::WrongBaseline),
    }
}

/// The CRC-32 of a packet's bytes other than the hash field (bytes 3..7).
fn checksum(bytes: &[u8]) -> u32 {
    crate::bits::crc32(&[&bytes[..3.min(bytes.len())], bytes.get(7..).unwrap_or(&[])])
}

/// Writes `schema`'s hash and the checksum into the hash field of `bytes`
/// (a no-op for fewer than 7 bytes). For fuzzing and tools that build
/// packets by hand: a sealed packet reaches the decoder's body checks.
pub fn seal(bytes: &mut [u8], schema: &Schema) {
    if bytes.len() < 7 {
        return;
    }
    let field = schema.hash() ^ checksum(bytes);
    bytes[3..7].copy_from_slice(&field.to_le_bytes());
}

/// Reads an absolute value of `codec`.
fn read_value(r: &mut BitReader<'_>, codec: FieldCodec) -> Result<Value, DecodeError> {
    Ok(match codec {
        FieldCodec::Bytes(n, _) => {
            // `n` comes from the schema (at most 1024), not the packet.
            let mut out = Vec::with_capacity(n as usize);
            for _ in 0..n {
                out.push(r.read_bits(8)? as u8);
            }
            Value::Bytes(out)
        }
        FieldCodec::Position(q) => Value::Position(q.read(r)?),
        FieldCodec::Rotation(q) => Value::Rotation(q.read(r)?),
    })
}

/// Reads a delta of `codec`.
fn read_delta(r: &mut BitReader<'_>, codec: FieldCodec, index: u32) -> Result<Value, DecodeError> {
    let delta = match codec {
        FieldCodec::Position(_) => Delta::Position([read_small(r)?, read_small(r)?, read_small(r)?]),
        FieldCodec::Rotation(_) => Delta::Rotation([read_small(r)?, read_small(r)?, read_small(r)?]),
        FieldCodec::Bytes(n, BytesDelta::Xor) => Delta::Xor(read_xor(r, n as usize)?),
        FieldCodec::Bytes(n, BytesDelta::Words) => {
            let mut words = Vec::with_capacity(n as usize / 4);
            for _ in 0..n / 4 {
                words.push(read_small(r)?);
            }
            Delta::Words(words)
        }
        FieldCodec::Bytes(_, BytesDelta::None) => return Err(DecodeError::BadDelta(index)),
    };
    Ok(Value::Delta(delta))
}

/// Decodes one packet, checking everything.
pub fn decode(bytes: &[u8], schema: &Schema, limits: Limits) -> Result<Packet, DecodeError> {
    let mut r = BitReader::new(bytes);
    let magic = r.read_bits(16)? as u16;
    if magic != MAGIC {
        return Err(DecodeError::BadMagic(magic));
    }
    let version = r.read_bits(8)? as u8;
    if version != WIRE_VERSION {
        return Err(DecodeError::Version(version));
    }
    let found = r.read_bits(32)? as u32 ^ checksum(bytes);
    if found != schema.hash() {
        return Err(DecodeError::SchemaMismatch { expected: schema.hash(), found });
    }
    let tick = r.read_bits(32)? as u32;
    let packet_baseline = r.read_bits(32)? as u32;
    let sync = if r.read_bool()? {
        let echo = r.read_bits(16)? as u16;
        let hold = r.read_bits(8)? as u8;
        let lead = r.read_bits(8)? as u8 as i8;
        Some(TimeSync { echo, hold, lead })
    } else {
        None
    };
    let complete = r.read_bool()?;
    // Every entry takes at least 2 + 8 bits: a count the rest cannot hold
    // is refused before anything is sized from it.
    let count = r.read_bits(COUNT_BITS)?;
    let max = limits.max_entries.min(r.remaining() as u64 / 10);
    if count > max {
        return Err(DecodeError::Bits(BitError::TooLong { len: count, max }));
    }
    let mut entries = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let kind = match r.read_bits(2)? {
            0 => EntryKind::Spawn,
            1 => EntryKind::Update,
            2 => EntryKind::Despawn,
            _ => return Err(DecodeError::BadEntryKind),
        };
        let net_id = r.read_varint()?;
        if net_id > limits.max_net_id {
            return Err(DecodeError::NetIdOutOfRange(net_id));
        }
        let net_id = NetId(net_id);
        let mut components = Vec::new();
        let mut removed = 0;
        let mut baseline = 0;
        if kind != EntryKind::Despawn {
            let width = schema.len() as u32;
            let mask = r.read_bits(width)?;
            if kind == EntryKind::Update {
                if r.read_bool()? {
                    removed = r.read_bits(width)?;
                    if removed == 0 || removed & mask != 0 {
                        return Err(DecodeError::BadRemoval(removed));
                    }
                }
                if r.read_bool()? {
                    let back = if r.read_bool()? {
                        if packet_baseline == 0 {
                            return Err(DecodeError::BadBaseline(0));
                        }
                        tick.wrapping_sub(packet_baseline) as u64
                    } else {
                        r.read_varint()?
                    };
                    if !(1..=MAX_DELTA_BACK as u64).contains(&back) {
                        return Err(DecodeError::BadBaseline(back));
                    }
                    baseline = back as u32;
                }
            }
            for index in 0..64u32 {
                if mask >> index & 1 == 0 {
                    continue;
                }
                let codec = schema.codec(index as usize).ok_or(DecodeError::UnknownComponent(index))?;
                let delta = baseline != 0 && r.read_bool()?;
                let value = if delta { read_delta(&mut r, codec, index)? } else { read_value(&mut r, codec)? };
                components.push((index as u8, value));
            }
        }
        entries.push(Entry { kind, net_id, baseline, components, removed });
    }
    if r.remaining() >= 8 || r.read_bits(r.remaining() as u32)? != 0 {
        return Err(DecodeError::TrailingData);
    }
    Ok(Packet { tick, baseline: packet_baseline, sync, complete, entries })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn schema() -> Schema {
        Schema::new(vec![
            ("position".into(), FieldCodec::Position(PositionQuantizer::new(0.01, 24).unwrap())),
            ("rotation".into(), FieldCodec::Rotation(RotationQuantizer::new(9).unwrap())),
            ("health".into(), FieldCodec::Bytes(2, BytesDelta::Xor)),
            ("ammo".into(), FieldCodec::Bytes(8, BytesDelta::Words)),
        ])
        .unwrap()
    }

    fn entry() -> impl Strategy<Value = Entry> {
        let pos = proptest::array::uniform3(-(1i32 << 23)..(1i32 << 23));
        (
            (0u8..3, 0u64..1_000_000, proptest::option::of(pos), proptest::option::of(0u64..(1 << 29))),
            (proptest::option::of(any::<[u8; 2]>()), proptest::option::of(any::<[u8; 8]>())),
            (0u8..16, proptest::array::uniform3(-100_000i64..100_000), 0..=MAX_DELTA_BACK, 0u64..16),
        )
            .prop_map(|((kind, net_id, pos, rot), (hp, ammo), (deltas, d, back, drop_mask))| {
                let kind = [EntryKind::Spawn, EntryKind::Update, EntryKind::Despawn][kind as usize];
                let baseline = if kind == EntryKind::Update { back } else { 0 };
                // Component `i` goes as a delta if bit `i` of `deltas` is set
                // (updates with a baseline only).
                let delta = |i: u8| baseline != 0 && deltas >> i & 1 == 1;
                let mut components = Vec::new();
                if kind != EntryKind::Despawn {
                    if let Some(p) = pos {
                        components
                            .push((0, if delta(0) { Value::Delta(Delta::Position(d)) } else { Value::Position(p) }));
                    }
                    if let Some(r) = rot {
                        let v =
                            if delta(1) { Value::Delta(Delta::Rotation([d[1], 0, -3])) } else { Value::Rotation(r) };
                        components.push((1, v));
                    }
                    if let Some(h) = hp {
                        let v =
                            if delta(2) { Value::Delta(Delta::Xor(vec![h[0], 0])) } else { Value::Bytes(h.to_vec()) };
                        components.push((2, v));
                    }
                    if let Some(a) = ammo {
                        let v = if delta(3) {
                            Value::Delta(Delta::Words(vec![d[2], -1]))
                        } else {
                            Value::Bytes(a.to_vec())
                        };
                        components.push((3, v));
                    }
                }
                let set = components.iter().fold(0u64, |m, (i, _)| m | 1 << i);
                let removed = if kind == EntryKind::Update { drop_mask & !set } else { 0 };
                Entry { kind, net_id: NetId(net_id), baseline, components, removed }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        #[test]
        fn packets_round_trip(tick in any::<u32>(), baseline in any::<u32>(), entries in proptest::collection::vec(entry(), 0..40), sync in proptest::option::of((any::<u16>(), any::<u8>(), any::<i8>())), complete in any::<bool>()) {
            let schema = schema();
            let sync = sync.map(|(echo, hold, lead)| TimeSync { echo, hold, lead });
            let mut enc = Encoder::with_sync(&schema, tick, baseline, sync);
            for e in &entries {
                enc.push(e).unwrap();
            }
            enc.set_complete(complete);
            let predicted = enc.byte_len();
            let bytes = enc.finish();
            prop_assert_eq!(bytes.len(), predicted);
            let packet = decode(&bytes, &schema, Limits::default()).unwrap();
            prop_assert_eq!(packet, Packet { tick, baseline, sync, complete, entries });
        }

        #[test]
        fn entries_at_the_packet_baseline_take_one_bit(back in 1..=MAX_DELTA_BACK, tick in any::<u32>()) {
            let schema = schema();
            let e = Entry {
                kind: EntryKind::Update,
                net_id: NetId(5),
                baseline: back,
                components: vec![(0, Value::Delta(Delta::Position([1, 0, 0])))],
                removed: 0,
            };
            let size = |packet_baseline: u32| {
                let mut enc = Encoder::new(&schema, tick, packet_baseline);
                enc.push(&e).unwrap();
                let bytes = enc.finish();
                prop_assert_eq!(&decode(&bytes, &schema, Limits::default()).unwrap().entries, &vec![e.clone()]);
                Ok(bytes.len())
            };
            prop_assert!(size(tick.wrapping_sub(back))? <= size(0)?);
        }

        #[test]
        fn hostile_bytes_are_refused_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes, &schema(), Limits::default());
        }

        #[test]
        fn corrupted_packets_never_panic(entries in proptest::collection::vec(entry(), 1..10), flips in proptest::collection::vec((any::<usize>(), 0u8..8), 1..6)) {
            let schema = schema();
            let mut enc = Encoder::new(&schema, 7, 3);
            for e in &entries {
                enc.push(e).unwrap();
            }
            let mut bytes = enc.finish();
            for (at, bit) in flips {
                let i = at % bytes.len();
                bytes[i] ^= 1 << bit;
            }
            seal(&mut bytes, &schema);
            let _ = decode(&bytes, &schema, Limits::default());
        }

        #[test]
        fn deltas_resolve_to_the_value(a in proptest::array::uniform3(-1000i32..1000), b in proptest::array::uniform3(-1000i32..1000), x in any::<[u8; 8]>(), y in any::<[u8; 8]>()) {
            let schema = schema();
            let (pa, pb) = (Value::Position(a), Value::Position(b));
            let p = schema.codec(0).unwrap();
            prop_assert_eq!(resolve_value(p, Some(&pa), delta_of(p, &pa, &pb).unwrap()), Ok(pb));
            let words = schema.codec(3).unwrap();
            let (bx, by) = (Value::Bytes(x.to_vec()), Value::Bytes(y.to_vec()));
            prop_assert_eq!(resolve_value(words, Some(&bx), delta_of(words, &bx, &by).unwrap()), Ok(by));
            let h = schema.codec(2).unwrap();
            let (hx, hy) = (Value::Bytes(x[..2].to_vec()), Value::Bytes(y[..2].to_vec()));
            prop_assert_eq!(resolve_value(h, Some(&hx), delta_of(h, &hx, &hy).unwrap()), Ok(hy));
        }
    }

    #[test]
    fn mismatches_and_limits_are_errors() {
        let schema = schema();
        let bytes = Encoder::new(&schema, 1, 0).finish();
        assert!(decode(&bytes, &schema, Limits::default()).is_ok());
        let other = Schema::new(vec![("position".into(), FieldCodec::Bytes(12, BytesDelta::Xor))]).unwrap();
        assert!(matches!(decode(&bytes, &other, Limits::default()), Err(DecodeError::SchemaMismatch { .. })));
        assert!(matches!(decode(&[0, 0, 0], &schema, Limits::default()), Err(DecodeError::BadMagic(0))));
        assert!(matches!(decode(&[], &schema, Limits::default()), Err(DecodeError::Bits(_))));
        assert!(Schema::new(vec![("odd".into(), FieldCodec::Bytes(6, BytesDelta::Words))]).is_err());

        // A huge entry count is refused before any allocation.
        let mut w = BitWriter::new();
        w.write_bits(MAGIC as u64, 16);
        w.write_bits(WIRE_VERSION as u64, 8);
        w.write_bits(schema.hash() as u64, 32);
        w.write_bits(1, 32);
        w.write_bits(0, 32);
        w.write_bool(false);
        w.write_bits(u16::MAX as u64, 16);
        let mut bytes = w.finish();
        seal(&mut bytes, &schema);
        assert!(matches!(decode(&bytes, &schema, Limits::default()), Err(DecodeError::Bits(BitError::TooLong { .. }))));

        let entry = |kind, net_id, baseline, components| Entry {
            kind,
            net_id: NetId(net_id),
            baseline,
            components,
            removed: 0,
        };
        let mut enc = Encoder::new(&schema, 1, 0);
        enc.push(&entry(EntryKind::Despawn, 1 << 41, 0, vec![])).unwrap();
        assert_eq!(decode(&enc.finish(), &schema, Limits::default()), Err(DecodeError::NetIdOutOfRange(1 << 41)));

        // "Against the packet's baseline" in a packet without one.
        let mut enc = Encoder::new(&schema, 10, 7);
        enc.push(&entry(EntryKind::Update, 1, 3, vec![(0, Value::Delta(Delta::Position([1, 1, 1])))])).unwrap();
        let mut bytes = enc.finish();
        bytes[11..15].copy_from_slice(&[0; 4]);
        seal(&mut bytes, &schema);
        assert_eq!(decode(&bytes, &schema, Limits::default()).map(|_| ()), Err(DecodeError::BadBaseline(0)));

        let mut enc = Encoder::new(&schema, 1, 0);
        let wrong = entry(EntryKind::Spawn, 1, 0, vec![(2, Value::Bytes(vec![1, 2, 3]))]);
        assert_eq!(enc.push(&wrong), Err(EncodeError::WrongValue { index: 2 }));
        let unordered = entry(EntryKind::Spawn, 1, 0, vec![(1, Value::Rotation(0)), (0, Value::Position([0; 3]))]);
        assert_eq!(enc.push(&unordered), Err(EncodeError::BadIndex(0)));
        let spawn_delta = entry(EntryKind::Spawn, 1, 1, vec![(0, Value::Delta(Delta::Position([1, 2, 3])))]);
        assert_eq!(enc.push(&spawn_delta), Err(EncodeError::BadRemoval(0)));
        let no_baseline = entry(EntryKind::Update, 1, 0, vec![(0, Value::Delta(Delta::Position([1, 2, 3])))]);
        assert_eq!(enc.push(&no_baseline), Err(EncodeError::WrongValue { index: 0 }));
        let far = entry(EntryKind::Update, 1, MAX_DELTA_BACK + 1, vec![]);
        assert_eq!(enc.push(&far), Err(EncodeError::BadBaseline(MAX_DELTA_BACK + 1)));
        assert_eq!(enc.entries(), 0);

        // The budget is honoured exactly and a refused entry writes nothing.
        let big = entry(EntryKind::Spawn, 1, 0, vec![(0, Value::Position([5; 3]))]);
        let mut enc = Encoder::new(&schema, 1, 0);
        assert_eq!(enc.push_within(&big, 10), Ok(false));
        assert_eq!(enc.entries(), 0);
        assert_eq!(enc.push_within(&big, 1200), Ok(true));
        let len = enc.byte_len();
        assert!(len <= 1200);
        assert_eq!(enc.push_within(&big, len), Ok(false));
        assert_eq!(enc.byte_len(), len);
    }
}
