//! The receiving side: applies snapshots newer than the last applied one,
//! ignores older and duplicate ones, maps server entities to local ones,
//! acknowledges, and keeps an interpolation buffer for rendering.
//!
//! "Newer" is serial number order ([`crate::tick`]): the server's tick
//! wraps from `u32::MAX` to 1, and a packet of tick 1 is newer than one of
//! tick `u32::MAX`.
//!
//! A packet is checked whole before anything changes: a delta whose
//! baseline this client does not hold, an update of an entity it does not
//! know, a value out of range, refuses the packet (it is not acknowledged,
//! so the server sends the work again).
//!
//! The entries are checked in order against the state they produce, so a
//! packet that contradicts itself is refused whole too
//! ([`ClientError::Inconsistent`]):
//! - an update or despawn of an entity an earlier entry despawned, unless a
//!   spawn re-created it in between;
//! - a spawn of an entity an earlier entry spawned or updated (it is live);
//! - an update of an entity that is neither held nor spawned earlier in the
//!   packet ([`ClientError::UnknownEntity`]);
//! - a position delta against the history of an incarnation an earlier
//!   entry despawned ([`ClientError::MissingBaseline`]: a re-created entity
//!   has no history yet).
//!
//! Two cases are not contradictions, because the server resends work until
//! it is acknowledged and acknowledgements can be lost: a spawn of an entity
//! the client already holds (no earlier entry touched it) replaces its
//! state, and a despawn of an entity the client does not hold (no earlier
//! entry touched it) does nothing.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use ecs_core::{Entity, World};
use glam::{Quat, Vec3};

use crate::ack::Ack;
use crate::codec::{
    DecodeError, DeltaError, Entry, EntryKind, Limits, NetId, Schema, TimeSync, Value, decode, resolve_value,
};
use crate::interpolation::InterpolationBuffer;
use crate::quantize::{PositionQuantizer, RotationQuantizer};
use crate::registry::{Column, PositionWriter, Predicted, Registry, RotationWriter, Write};
use crate::tick::{tick_diff, tick_newer};

/// Ticks of position history kept per entity (baselines the server may
/// delta against; the server's window is at most half of this by default).
pub const HISTORY_TICKS: u32 = 64;

/// Why a packet was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// The bytes are not a valid packet.
    Decode(DecodeError),
    /// An update for an entity this client does not have.
    UnknownEntity(NetId),
    /// A position delta whose baseline tick this client does not hold.
    MissingBaseline {
        /// The entity.
        net_id: NetId,
        /// The baseline tick named.
        tick: u32,
    },
    /// A delta that lands outside the quantizer's range.
    DeltaOutOfRange(NetId),
    /// A packet of tick 0, which is never a tick (0 means "none").
    ZeroTick,
    /// An entry that contradicts the state the packet's earlier entries
    /// produce (see the [module docs](self)).
    Inconsistent {
        /// The entry's position in the packet (from 0).
        entry: usize,
        /// The entity.
        net_id: NetId,
        /// What is contradicted.
        problem: Inconsistency,
    },
}

/// How an entry contradicts the earlier entries of its packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inconsistency {
    /// A spawn of an entity an earlier entry spawned or updated: it is
    /// live already.
    DuplicateSpawn,
    /// An update of an entity an earlier entry despawned, with no spawn
    /// re-creating it in between.
    UpdateAfterDespawn,
    /// A despawn of an entity an earlier entry despawned, with no spawn
    /// re-creating it in between.
    DuplicateDespawn,
}

impl std::fmt::Display for Inconsistency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Inconsistency::DuplicateSpawn => "spawned, but an earlier entry of the packet already made it live",
            Inconsistency::UpdateAfterDespawn => "updated after an earlier entry of the packet despawned it",
            Inconsistency::DuplicateDespawn => "despawned after an earlier entry of the packet despawned it",
        })
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Decode(e) => write!(f, "refused packet: {e}"),
            ClientError::UnknownEntity(id) => write!(f, "update for unknown entity {id}"),
            ClientError::MissingBaseline { net_id, tick } => {
                write!(f, "entity {net_id}: no baseline at tick {tick}")
            }
            ClientError::DeltaOutOfRange(id) => write!(f, "entity {id}: delta leaves the position range"),
            ClientError::ZeroTick => f.write_str("packet of tick 0 (no server sends tick 0)"),
            ClientError::Inconsistent { entry, net_id, problem } => {
                write!(f, "refused packet: entry {entry}, entity {net_id}: {problem}")
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// What [`Client::receive`] did with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Receipt {
    /// Applied: the tick and the entries in it.
    Applied {
        /// The packet's tick.
        tick: u32,
        /// Entries applied.
        entries: usize,
    },
    /// Not newer than the newest applied tick (serial number order,
    /// [`crate::tick`]): ignored.
    Stale {
        /// The packet's tick.
        tick: u32,
    },
}

/// Counters of a client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCounters {
    /// Packets applied.
    pub applied: u64,
    /// Old or duplicate packets ignored.
    pub stale: u64,
    /// Packets refused.
    pub refused: u64,
    /// Packet bytes received (all of them).
    pub bytes_received: u64,
    /// Components held back now because an entity they reference is not
    /// held (yet); see [`crate::registry::MapEntities`].
    pub deferred: usize,
}

/// What the earlier entries of a packet left an entity as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// Spawned or updated; `history`: its position history (for deltas)
    /// is the one held before the packet.
    Live { history: bool },
    /// Despawned.
    Despawned,
}

struct Known {
    local: Entity,
    values: Vec<Option<Value>>,
    /// The entity's state after each applied entry of the last
    /// [`HISTORY_TICKS`] ticks (at least the newest): the baselines the
    /// server's deltas may name.
    history: VecDeque<(u32, Vec<Option<Value>>)>,
    /// Whether the client predicts it ([`Client::set_predicted`]).
    predicted: bool,
    /// The newest tick whose packet held an entry for it: its values are
    /// the server's state at that tick.
    entry_tick: u32,
}

/// A predicted entity as the client holds it ([`Client::predicted`]).
#[derive(Clone, Copy, Debug)]
pub struct PredictedEntity<'a> {
    /// The server's id.
    pub net_id: NetId,
    /// The local entity.
    pub local: Entity,
    /// The newest tick whose packet held an entry for it.
    pub confirmed_tick: u32,
    /// The server's values at that tick, in schema order.
    pub values: &'a [Option<Value>],
}

/// A replication client. See the [module docs](self) and
/// [`crate::server::Server`] for a round trip.
pub struct Client {
    schema: Schema,
    columns: Vec<Box<dyn Column>>,
    limits: Limits,
    position: Option<(usize, PositionQuantizer)>,
    rotation: Option<(usize, RotationQuantizer)>,
    last_applied: u32,
    applied_mask: u32,
    known: HashMap<NetId, Known>,
    interpolation: InterpolationBuffer,
    counters: ClientCounters,
    sync: Option<TimeSync>,
    predicted_mask: u64,
    /// Components to write once their entity references resolve.
    unresolved: BTreeSet<(NetId, u8)>,
    /// Interpolation of remote entities into the world, when on.
    interpolate: Option<InterpolationConfig>,
    writers: (Option<PositionWriter>, Option<RotationWriter>),
    /// Entities whose rendered state may still change.
    moving: HashSet<NetId>,
}

/// How remote (not predicted) entities are rendered when
/// [`Client::set_interpolation`] is on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InterpolationConfig {
    /// Ticks of extrapolation past the newest sample before the entity
    /// holds still (default 3: a few lost packets are bridged, a long loss
    /// does not send entities flying).
    pub max_extrapolation: f64,
}

impl Default for InterpolationConfig {
    fn default() -> Self {
        InterpolationConfig { max_extrapolation: 3.0 }
    }
}

/// What one [`Client::interpolate`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InterpolationStats {
    /// Entities whose rendered state was computed.
    pub sampled: usize,
    /// Of these, past their newest sample (extrapolated or held).
    pub extrapolated: usize,
}

impl Client {
    /// A client that writes into `world` the components of `registry` (the
    /// same registry the server uses).
    pub fn new(world: &mut World, registry: &Registry) -> Client {
        Client {
            schema: registry.schema().clone(),
            columns: registry.columns(world),
            limits: Limits::default(),
            position: registry.position_index().zip(registry.position_quantizer()),
            rotation: registry.rotation_index().zip(registry.rotation_quantizer()),
            last_applied: 0,
            applied_mask: 0,
            known: HashMap::new(),
            interpolation: InterpolationBuffer::new(8),
            counters: ClientCounters::default(),
            sync: None,
            predicted_mask: registry.predicted_mask(),
            unresolved: BTreeSet::new(),
            interpolate: None,
            writers: registry.writers(),
            moving: HashSet::new(),
        }
    }

    /// The newest applied tick, in serial number order (0: none).
    pub fn last_applied(&self) -> u32 {
        self.last_applied
    }

    /// Replicated entities held.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether no replicated entity is held.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// The local entity of a server entity.
    pub fn local_entity(&self, net_id: NetId) -> Option<Entity> {
        self.known.get(&net_id).map(|k| k.local)
    }

    /// The held entities: network id and quantized values in schema order.
    pub fn entities(&self) -> impl Iterator<Item = (NetId, &[Option<Value>])> + '_ {
        self.known.iter().map(|(id, k)| (*id, k.values.as_slice()))
    }

    /// The schema.
    pub(crate) fn schema(&self) -> &Schema {
        &self.schema
    }

    /// A held entity for [`crate::check`]: its local entity, the server's
    /// values as held, and whether the client predicts it.
    pub(crate) fn held(&self, net_id: NetId) -> Option<(Entity, &[Option<Value>], bool)> {
        self.known.get(&net_id).map(|k| (k.local, k.values.as_slice(), k.predicted))
    }

    /// Component `index` of a local entity as its wire value, entity
    /// references named by network id (as the server reads them). `None`:
    /// the entity lacks it.
    pub(crate) fn world_value(
        &self,
        world: &World,
        local: Entity,
        index: usize,
    ) -> Option<Result<Value, crate::quantize::QuantizeError>> {
        let refs = |e: Entity| world.get::<NetId>(e).ok().copied();
        self.columns.get(index)?.read(world, local, &refs)
    }

    /// Whether the client itself decides what the world shows of component
    /// `index` of an entity (predicted or not): the predicted components of
    /// a predicted entity (the prediction writes them), the position and
    /// rotation of a remote one while interpolation is on.
    pub(crate) fn renders_itself(&self, index: usize, predicted: bool) -> bool {
        if predicted {
            return self.predicted_mask >> index & 1 == 1;
        }
        self.interpolate.is_some()
            && (self.position.is_some_and(|(p, _)| p == index) || self.rotation.is_some_and(|(r, _)| r == index))
    }

    /// Turns interpolation on or off. On: the position and rotation of
    /// remote (not predicted) entities are no longer written as snapshots
    /// arrive (a spawn still writes them) but by [`Client::interpolate`],
    /// from the buffer at a render tick behind the server; the components
    /// themselves hold the rendered state. [`Client::entities`] keeps the
    /// server's values either way.
    pub fn set_interpolation(&mut self, config: Option<InterpolationConfig>) {
        self.interpolate = config;
    }

    /// Writes the rendered position and rotation of the remote entities
    /// into the world: the buffer sampled at `render_tick` (e.g.
    /// [`crate::clock::ClockSync::interpolation_tick`]), extrapolated at most
    /// [`InterpolationConfig::max_extrapolation`] ticks past the newest
    /// sample. Only entities whose state can still change are visited, and
    /// a component is written only when its value changes, so entities at
    /// rest cost nothing and are not marked changed. Does nothing while
    /// interpolation is off.
    pub fn interpolate(&mut self, world: &mut World, render_tick: f64) -> InterpolationStats {
        let mut stats = InterpolationStats::default();
        let Some(config) = self.interpolate else { return stats };
        let (position, rotation) = (&self.writers.0, &self.writers.1);
        let (known, buffer) = (&self.known, &self.interpolation);
        self.moving.retain(|net| {
            let Some(k) = known.get(net).filter(|k| !k.predicted) else { return false };
            let Some((p, q, past)) = buffer.sample_capped(*net, render_tick, config.max_extrapolation) else {
                return false;
            };
            stats.sampled += 1;
            if past {
                stats.extrapolated += 1;
            }
            if let Some(write) = position {
                write(world, k.local, p);
            }
            if let Some(write) = rotation {
                write(world, k.local, q);
            }
            // Settled once it is past the newest sample by the whole cap.
            let newest = buffer.newest_tick(*net).unwrap_or(0) as f64;
            let ahead = (render_tick - newest).rem_euclid(4_294_967_296.0);
            !(ahead < 2_147_483_648.0 && ahead >= config.max_extrapolation)
        });
        stats
    }

    /// Starts or stops predicting a held entity: a predicted entity carries
    /// the [`Predicted`] marker, and snapshot values of the registry's
    /// predicted components are kept (for [`crate::prediction`] to compare)
    /// but not written into the world. Returns whether the entity is held.
    pub fn set_predicted(&mut self, world: &mut World, net_id: NetId, predicted: bool) -> bool {
        let Some(known) = self.known.get_mut(&net_id) else { return false };
        if known.predicted != predicted {
            known.predicted = predicted;
            if predicted {
                let _ = world.insert_one(known.local, Predicted);
                self.interpolation.remove(net_id);
            } else {
                let _ = world.remove_one::<Predicted>(known.local);
                // Back to the server's values.
                for i in 0..self.columns.len() {
                    if self.predicted_mask >> i & 1 == 1 {
                        self.unresolved.insert((net_id, i as u8));
                    }
                }
                self.write_pending(world);
            }
        }
        true
    }

    /// Writes the held values of the components waiting to be written:
    /// those whose entity references did not resolve yet, and those set
    /// aside by the packet just applied (every mapped component is written
    /// at the end of its packet, so references to entities spawned later
    /// in the same packet resolve). What still does not resolve waits for
    /// the next packet.
    fn write_pending(&mut self, world: &mut World) {
        let known = &self.known;
        let refs = |n: NetId| known.get(&n).map(|k| k.local);
        let columns = &self.columns;
        self.unresolved.retain(|(net, index)| {
            let Some(k) = known.get(net) else { return false };
            let (Some(Some(value)), Some(column)) = (k.values.get(*index as usize), columns.get(*index as usize))
            else {
                return false;
            };
            matches!(column.write(world, k.local, value, &refs), Write::Deferred(_))
        });
        self.counters.deferred = self.unresolved.len();
    }

    /// Whether a held entity is predicted.
    pub fn is_predicted(&self, net_id: NetId) -> bool {
        self.known.get(&net_id).is_some_and(|k| k.predicted)
    }

    /// The predicted entities: network id, local entity, the newest tick
    /// whose packet held an entry for it, and the server's values at that
    /// tick.
    pub fn predicted(&self) -> impl Iterator<Item = PredictedEntity<'_>> + '_ {
        self.known.iter().filter(|(_, k)| k.predicted).map(|(id, k)| PredictedEntity {
            net_id: *id,
            local: k.local,
            confirmed_tick: k.entry_tick,
            values: &k.values,
        })
    }

    /// The time sync block of the newest applied packet (present once the
    /// client sends upstream datagrams; see [`crate::clock`]).
    pub fn time_sync(&self) -> Option<TimeSync> {
        self.sync
    }

    /// The counters.
    pub fn counters(&self) -> ClientCounters {
        self.counters
    }

    /// The interpolation buffer (positions and rotations by tick).
    pub fn interpolation(&self) -> &InterpolationBuffer {
        &self.interpolation
    }

    /// The acknowledgement to send: the newest applied tick and which of
    /// the 32 before it were applied.
    pub fn ack(&self) -> Ack {
        match self.last_applied {
            // Nothing applied: an acknowledgement of nothing (tick 0 cannot
            // be sent; see `has_ack`).
            0 => Ack { newest: 1, previous: 0 },
            newest => Ack { newest, previous: self.applied_mask },
        }
    }

    /// Whether there is anything to acknowledge.
    pub fn has_ack(&self) -> bool {
        self.last_applied != 0
    }

    /// Takes one packet: applies it if newer than the newest applied,
    /// ignores it if not, refuses it (changing nothing) if it is malformed
    /// or does not fit what this client holds.
    pub fn receive(&mut self, world: &mut World, bytes: &[u8]) -> Result<Receipt, ClientError> {
        self.counters.bytes_received += bytes.len() as u64;
        let packet = match decode(bytes, &self.schema, self.limits) {
            Ok(p) => p,
            Err(e) => {
                self.counters.refused += 1;
                return Err(ClientError::Decode(e));
            }
        };
        if packet.tick == 0 {
            self.counters.refused += 1;
            return Err(ClientError::ZeroTick);
        }
        if self.last_applied != 0 && !tick_newer(packet.tick, self.last_applied) {
            self.counters.stale += 1;
            return Ok(Receipt::Stale { tick: packet.tick });
        }
        let resolved = match self.resolve(packet.tick, packet.entries) {
            Ok(r) => r,
            Err(e) => {
                self.counters.refused += 1;
                return Err(e);
            }
        };
        let count = resolved.len();
        for entry in resolved {
            self.apply(world, packet.tick, entry);
        }
        self.write_pending(world);
        if packet.complete {
            self.hold_still(packet.tick);
        }
        if self.last_applied != 0 {
            // Positive: the packet is newer.
            let shift = tick_diff(packet.tick, self.last_applied) as u32;
            self.applied_mask = if shift > 32 { 0 } else { ((self.applied_mask as u64) << shift) as u32 };
            if shift <= 32 {
                self.applied_mask |= 1 << (shift - 1);
            }
        }
        self.last_applied = packet.tick;
        self.sync = packet.sync;
        self.counters.applied += 1;
        Ok(Receipt::Applied { tick: packet.tick, entries: count })
    }

    /// Checks every entry against the state the entries before it produce
    /// (see the [module docs](self)) and turns deltas into absolute values.
    /// Changes nothing.
    fn resolve(&self, tick: u32, entries: Vec<Entry>) -> Result<Vec<Entry>, ClientError> {
        let mut out = Vec::with_capacity(entries.len());
        // What the earlier entries of this packet left each entity as.
        let mut seen: HashMap<NetId, Seen> = HashMap::new();
        for (index, mut entry) in entries.into_iter().enumerate() {
            let id = entry.net_id;
            let held = self.known.get(&id);
            let inconsistent = |problem| ClientError::Inconsistent { entry: index, net_id: id, problem };
            let after = match (entry.kind, seen.get(&id).copied()) {
                (EntryKind::Spawn, Some(Seen::Live { .. })) => return Err(inconsistent(Inconsistency::DuplicateSpawn)),
                // A spawn of a held entity keeps its history (the same
                // incarnation, or one whose deltas name ticks of its own);
                // a despawned one's history is gone.
                (EntryKind::Spawn, None) => Seen::Live { history: held.is_some() },
                (EntryKind::Spawn, Some(Seen::Despawned)) => Seen::Live { history: false },
                (EntryKind::Despawn, Some(Seen::Despawned)) => {
                    return Err(inconsistent(Inconsistency::DuplicateDespawn));
                }
                (EntryKind::Despawn, _) => Seen::Despawned,
                (EntryKind::Update, Some(Seen::Despawned)) => {
                    return Err(inconsistent(Inconsistency::UpdateAfterDespawn));
                }
                (EntryKind::Update, Some(live)) => live,
                (EntryKind::Update, None) if held.is_some() => Seen::Live { history: true },
                (EntryKind::Update, None) => return Err(ClientError::UnknownEntity(id)),
            };
            seen.insert(id, after);
            if entry.kind == EntryKind::Update && entry.baseline != 0 {
                let history = match after {
                    Seen::Live { history: true } => held.map(|k| &k.history),
                    _ => None,
                };
                let base_tick = tick.wrapping_sub(entry.baseline);
                let missing = ClientError::MissingBaseline { net_id: id, tick: base_tick };
                let state = history
                    .and_then(|h| h.iter().rev().find(|(t, _)| *t == base_tick))
                    .map(|(_, state)| state)
                    .ok_or(missing.clone())?;
                for (component, value) in &mut entry.components {
                    if !matches!(value, Value::Delta(_)) {
                        continue;
                    }
                    let codec = self.schema.codec(*component as usize).ok_or(ClientError::DeltaOutOfRange(id))?;
                    let base = state.get(*component as usize).and_then(|v| v.as_ref());
                    let delta = std::mem::replace(value, Value::Bytes(Vec::new()));
                    *value = match resolve_value(codec, base, delta) {
                        Ok(v) => v,
                        Err(DeltaError::WrongBaseline) => return Err(missing),
                        Err(_) => return Err(ClientError::DeltaOutOfRange(id)),
                    };
                }
                entry.baseline = 0;
            }
            out.push(entry);
        }
        Ok(out)
    }

    /// A complete packet of `tick` says every interpolated entity it has no
    /// entry for did not change at `tick`: each gets a sample there at its
    /// held state (once after its newest entry), so its rendered state
    /// comes to rest where the server's is instead of extrapolating past
    /// it.
    fn hold_still(&mut self, tick: u32) {
        if self.interpolate.is_none() {
            return;
        }
        for net in &self.moving {
            let Some(k) = self.known.get(net) else { continue };
            if k.predicted || k.entry_tick == tick || self.interpolation.newest_tick(*net) != Some(k.entry_tick) {
                continue;
            }
            let (position, rotation) = pose(self.position, self.rotation, &k.values);
            self.interpolation.push(*net, tick, position, rotation);
        }
    }

    /// Applies one entry that [`Client::resolve`] accepted.
    fn apply(&mut self, world: &mut World, tick: u32, entry: Entry) {
        let width = self.schema.len();
        let known = match entry.kind {
            EntryKind::Despawn => {
                if let Some(k) = self.known.remove(&entry.net_id) {
                    let _ = world.despawn(k.local);
                    self.interpolation.remove(entry.net_id);
                }
                return;
            }
            EntryKind::Spawn => match self.known.entry(entry.net_id) {
                std::collections::hash_map::Entry::Occupied(held) => {
                    // A spawn carries full state: what it lacks is gone,
                    // from the values and from the world.
                    let k = held.into_mut();
                    for (i, value) in k.values.iter_mut().enumerate() {
                        if value.take().is_some()
                            && !entry.components.iter().any(|(c, _)| *c as usize == i)
                            && let Some(column) = self.columns.get(i)
                        {
                            column.remove(world, k.local);
                        }
                    }
                    k
                }
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let local = world.spawn((entry.net_id,));
                    slot.insert(Known {
                        local,
                        values: vec![None; width],
                        history: VecDeque::new(),
                        predicted: false,
                        entry_tick: tick,
                    })
                }
            },
            // `resolve` refused updates of entities not held (or despawned
            // earlier in the packet): an update never creates an entity.
            EntryKind::Update => match self.known.get_mut(&entry.net_id) {
                Some(k) => k,
                None => return,
            },
        };
        known.entry_tick = tick;
        let mut moved = false;
        for i in 0..width {
            if entry.removed >> i & 1 == 1 {
                if let Some(column) = self.columns.get(i) {
                    column.remove(world, known.local);
                }
                known.values[i] = None;
            }
        }
        for (index, value) in entry.components {
            let i = index as usize;
            // A predicted entity's predicted components belong to the
            // prediction: it compares them and writes them on a rollback.
            let predicted = known.predicted && self.predicted_mask >> i & 1 == 1;
            // Interpolated: the buffer decides what the world shows.
            let interpolated = self.interpolate.is_some()
                && !known.predicted
                && entry.kind == EntryKind::Update
                && (self.position.is_some_and(|(p, _)| p == i) || self.rotation.is_some_and(|(r, _)| r == i));
            if !predicted
                && !interpolated
                && let Some(column) = self.columns.get(i)
            {
                if column.is_mapped() {
                    self.unresolved.insert((entry.net_id, index));
                } else {
                    column.write(world, known.local, &value, &|_| None);
                }
            }
            if self.position.is_some_and(|(pi, _)| pi == i) || self.rotation.is_some_and(|(ri, _)| ri == i) {
                moved = true;
            }
            if let Some(slot) = known.values.get_mut(i) {
                *slot = Some(value);
            }
        }
        // The state after this entry is a baseline the server may name.
        if known.history.back().is_some_and(|(t, _)| *t == tick) {
            known.history.pop_back();
        }
        known.history.push_back((tick, known.values.clone()));
        while known.history.len() > 1
            && known.history.front().is_some_and(|(t, _)| tick_diff(tick, *t) > HISTORY_TICKS as i32)
        {
            known.history.pop_front();
        }
        if moved && !known.predicted {
            let (position, rotation) = pose(self.position, self.rotation, &known.values);
            self.interpolation.push(entry.net_id, tick, position, rotation);
            if self.interpolate.is_some() {
                self.moving.insert(entry.net_id);
            }
        }
    }
}

/// The position and rotation in a held state (zero and identity when
/// absent).
fn pose(
    position: Option<(usize, PositionQuantizer)>,
    rotation: Option<(usize, RotationQuantizer)>,
    values: &[Option<Value>],
) -> (Vec3, Quat) {
    let p = match (position, values.get(position.map_or(usize::MAX, |p| p.0))) {
        (Some((_, q)), Some(Some(Value::Position(p)))) => q.dequantize(*p),
        _ => Vec3::ZERO,
    };
    let r = match (rotation, values.get(rotation.map_or(usize::MAX, |r| r.0))) {
        (Some((_, q)), Some(Some(Value::Rotation(bits)))) => q.decode(*bits),
        _ => Quat::IDENTITY,
    };
    (p, r)
}
