//! The authoritative side: per-client acknowledged baselines, interest,
//! priority and a byte budget per packet.
//!
//! Each [`Server::update`] is one network tick:
//! 1. World level, once for all clients: replicated entities that appeared
//!    ([`ecs_core::Added`] on the [`Replicated`] marker, chunk-skipping),
//!    disappeared (an O(archetypes) count check; only when the count is off
//!    are the known entities walked), and whose replicated components were
//!    written (one `Changed<T>` query per component: whole chunks skipped by
//!    their chunk tick, then row ticks). Values are quantized once; a write
//!    that quantizes to the same value is not a change.
//! 2. Interest: when anything moved or a view changed, the positions go into
//!    an `ecs-spatial` [`SparseGrid`] and each client with a view radius asks
//!    it; entering entities spawn on that client, leaving ones despawn.
//! 3. Per client: the changes of this tick are added to the entities that
//!    client tracks; every entity with unacknowledged work waits in the
//!    client's pending list with a priority accumulator. The packet takes
//!    entries in priority order until the byte budget is reached; the rest
//!    wait, gaining priority. Positions are delta-coded against the value
//!    the client acknowledged when that is smaller. Work per client grows
//!    with what changed and what is pending, not with world size.
//!
//! Acknowledgements ([`crate::ack`]) name the newest applied tick and the 32
//! before it. An acknowledged packet settles its entries: spawns become live,
//! despawns are forgotten, sent components stop being resent unless written
//! again since. Work stays pending until acknowledged, so loss delays but
//! never loses it, and an entity is only forgotten once its despawn is
//! acknowledged: no ghosts. A client whose newest acknowledgement is older
//! than the ring of sent packets gets full state.
//!
//! Clients can only acknowledge: an acknowledgement changes nothing but that
//! client's own bookkeeping, and one that names a tick never sent is
//! refused.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use ecs_core::{Added, Entity, QueryState, With, World};
use ecs_spatial::SparseGrid;
use glam::Vec3;

use crate::ack::{Ack, AckError};
use crate::codec::{EncodeError, Encoder, Entry, EntryKind, FieldCodec, MAX_DELTA_BACK, Value};
use crate::registry::{Column, Registry, Replicated};
use crate::tick::{next_tick, tick_diff, tick_newer};

/// A client's id on the server (the transport's id, e.g. renet's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

/// Server tuning.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerConfig {
    /// Largest packet in bytes (default 1200, under a typical MTU). An
    /// entry larger than this on its own is sent alone in a packet.
    pub budget_bytes: usize,
    /// Sent packets remembered per client (default 32). A client that
    /// acknowledged none of them gets full state.
    pub ring_len: u32,
    /// Largest age in ticks of an acknowledged position used as a delta
    /// baseline (default 32, at most [`MAX_DELTA_BACK`]).
    pub delta_window: u32,
    /// Cell size of the interest grid (default 8.0).
    pub grid_cell: f32,
    /// With nothing to send, a client still gets an empty packet every
    /// `heartbeat` ticks (default 30: twice a second at 60 Hz), so a scene
    /// at rest costs almost nothing. 1 sends every tick.
    pub heartbeat: u32,
    /// The tick the first [`Server::update`] builds (default 1; 0 counts
    /// as 1). Ticks count up by one per update and wrap from `u32::MAX` to
    /// 1 (0 means "none" on the wire); both ends compare them in serial
    /// number order ([`crate::tick`]), so a session runs through the wrap.
    /// Mostly for tests of the wrap, e.g. `u32::MAX - 100`.
    pub first_tick: u32,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            budget_bytes: 1200,
            ring_len: 32,
            delta_window: 32,
            grid_cell: 8.0,
            heartbeat: 30,
            first_tick: 1,
        }
    }
}

/// What a client sees: everything within `radius` of `center`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    /// The middle of the view.
    pub center: Vec3,
    /// The view radius.
    pub radius: f32,
}

/// Why a server call was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerError {
    /// No client with this id.
    UnknownClient(ClientId),
    /// A client with this id exists already.
    DuplicateClient(ClientId),
    /// A malformed acknowledgement.
    Ack(AckError),
    /// An acknowledgement of a tick the server has not sent yet.
    AckFromFuture {
        /// The tick named.
        acked: u32,
        /// The server's newest tick.
        newest: u32,
    },
    /// A view that is not finite or has a negative radius.
    BadView,
    /// A packet could not be encoded (a bug: values come from the registry).
    Encode(EncodeError),
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerError::UnknownClient(c) => write!(f, "no client {}", c.0),
            ServerError::DuplicateClient(c) => write!(f, "client {} is already connected", c.0),
            ServerError::Ack(e) => write!(f, "bad acknowledgement: {e}"),
            ServerError::AckFromFuture { acked, newest } => {
                write!(f, "acknowledgement of tick {acked}, but the newest tick sent is {newest}")
            }
            ServerError::BadView => f.write_str("a view needs a finite center and a finite radius >= 0"),
            ServerError::Encode(e) => write!(f, "encoding failed: {e}"),
        }
    }
}

impl std::error::Error for ServerError {}

/// Counters of one client's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Bytes of the packet built in the latest tick.
    pub last_packet_bytes: usize,
    /// Bytes of all packets built.
    pub bytes_sent: u64,
    /// Packets built.
    pub packets: u64,
    /// Entries written.
    pub entries_sent: u64,
    /// Entries that had work but did not fit the budget, summed over ticks.
    pub entries_deferred: u64,
    /// Times the client fell behind the ring and got full state.
    pub full_resyncs: u64,
    /// Acknowledgements refused.
    pub bad_acks: u64,
    /// Entities the client tracks (spawning, live or despawning).
    pub tracked: usize,
    /// Entities with unacknowledged work.
    pub pending: usize,
}

/// Counters of the world-level part of a tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickStats {
    /// Replicated entities that appeared.
    pub spawned: usize,
    /// Replicated entities that disappeared.
    pub despawned: usize,
    /// Entities with at least one changed component value.
    pub changed: usize,
    /// Values that could not be quantized (kept at their previous value).
    pub quantize_errors: u64,
    /// Whether the interest grid was rebuilt.
    pub grid_rebuilt: bool,
    /// Chunks of replicated archetypes the change scan covered, summed over
    /// the replicated component types (each type scans its own column).
    pub chunks_total: u64,
    /// Of these, chunks skipped from their chunk tick alone.
    pub chunks_skipped: u64,
}

struct Record {
    entity: Entity,
    values: Vec<Option<Value>>,
    position: Option<Vec3>,
    changed_mask: u64,
}

impl Record {
    fn full_mask(&self) -> u64 {
        self.values.iter().enumerate().filter(|(_, v)| v.is_some()).fold(0, |m, (i, _)| m | 1 << i)
    }
}

/// A fast hasher for the server's own keys (network ids and entities, not
/// chosen by clients, so no flooding concern).
#[derive(Clone, Copy, Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
type IdSet<K> = HashSet<K, BuildHasherDefault<IdHasher>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Spawning,
    Live,
    Despawning,
}

struct Tracked {
    phase: Phase,
    epoch: u32,
    sent_in_epoch: bool,
    dirty: u64,
    last_change: u32,
    acked_position: Option<(u32, [i32; 3])>,
    priority: f32,
    queued: bool,
}

struct SentEntry {
    net_id: u64,
    epoch: u32,
    kind: EntryKind,
    mask: u64,
    position: Option<[i32; 3]>,
}

struct Sent {
    tick: u32,
    acked: bool,
    entries: Vec<SentEntry>,
}

struct ClientState {
    view: Option<View>,
    view_changed: bool,
    newest_ack: u32,
    ring: VecDeque<Sent>,
    tracked: IdMap<u64, Tracked>,
    /// Entities with work, each once (`Tracked::queued`).
    pending: Vec<u64>,
    /// Ids in `pending` whose tracked entry was dropped (an acknowledged
    /// despawn, an unsent spawn that left interest): a re-entry takes over that place in `pending`
    /// instead of queueing the id twice (which would put two entries for
    /// one entity in a packet, and the client refuses such packets).
    orphans: IdSet<u64>,
    interest: Vec<u64>,
    resynced: bool,
    stats: ClientStats,
    packet: Vec<u8>,
    next_epoch: u32,
    last_sent: u32,
}

impl ClientState {
    fn queue(&mut self, net_id: u64) {
        if let Some(t) = self.tracked.get_mut(&net_id)
            && !t.queued
        {
            t.queued = true;
            self.pending.push(net_id);
        }
    }

    fn enter(&mut self, net_id: u64, tick: u32) {
        match self.tracked.get_mut(&net_id) {
            Some(t) if t.phase == Phase::Despawning => {
                // The despawn is not acknowledged: the client may still
                // hold the entity, so it counts as sent.
                t.epoch = self.next_epoch;
                self.next_epoch = self.next_epoch.wrapping_add(1);
                t.phase = Phase::Spawning;
                t.sent_in_epoch = true;
                t.dirty = 0;
                t.last_change = tick;
                t.acked_position = None;
            }
            Some(_) => return,
            None => {
                // Epochs are unique per client across incarnations, so an
                // old acknowledgement never settles a newer incarnation.
                let epoch = self.next_epoch;
                self.next_epoch = self.next_epoch.wrapping_add(1);
                // Still in `pending` from an earlier incarnation?
                let queued = self.orphans.remove(&net_id);
                self.tracked.insert(
                    net_id,
                    Tracked {
                        phase: Phase::Spawning,
                        epoch,
                        sent_in_epoch: false,
                        dirty: 0,
                        last_change: tick,
                        acked_position: None,
                        priority: 0.0,
                        queued,
                    },
                );
            }
        }
        self.queue(net_id);
    }

    fn leave(&mut self, net_id: u64) {
        let Some(t) = self.tracked.get_mut(&net_id) else { return };
        if t.phase == Phase::Spawning && !t.sent_in_epoch {
            // The client never heard of it in this epoch.
            forget(&mut self.tracked, &mut self.orphans, net_id);
            return;
        }
        t.phase = Phase::Despawning;
        t.dirty = 0;
        t.acked_position = None;
        self.queue(net_id);
    }
}

/// The replication server. See the [module docs](self).
///
/// ```
/// use ecs_core::World;
/// use ecs_replication::prelude::*;
/// use glam::Vec3;
///
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// struct Position(Vec3);
/// impl AsPosition for Position {
///     fn position(&self) -> Vec3 { self.0 }
///     fn from_position(p: Vec3) -> Self { Position(p) }
/// }
/// let registry = || Registry::new().position::<Position>("position", 0.01, 20).unwrap();
///
/// let mut world = World::new();
/// world.spawn((Replicated, Position(Vec3::new(1.0, 2.0, 3.0)))).unwrap();
/// let mut server = Server::new(&mut world, registry(), ServerConfig::default());
/// server.add_client(ClientId(7), None).unwrap();
/// server.update(&mut world).unwrap();
///
/// let mut client_world = World::new();
/// let mut client = Client::new(&mut client_world, &registry());
/// for (id, packet) in server.packets() {
///     assert_eq!(id, ClientId(7));
///     client.receive(&mut client_world, packet).unwrap();
/// }
/// assert_eq!(client.len(), 1);
/// server.receive(ClientId(7), &client.ack().to_bytes()).unwrap();
/// ```
pub struct Server {
    registry: Registry,
    columns: Vec<Box<dyn Column>>,
    config: ServerConfig,
    tick: u32,
    added: QueryState<Entity, Added<Replicated>>,
    all: QueryState<Entity, With<Replicated>>,
    next_net_id: u64,
    by_entity: IdMap<Entity, u64>,
    records: IdMap<u64, Record>,
    changed: Vec<u64>,
    grid: Option<SparseGrid<Vec3, u64>>,
    /// Positions changed since the interest grid was built; it is rebuilt
    /// only when a view is (re)placed and needs a full radius query.
    grid_stale: bool,
    /// Entities whose position changed, or that spawned with one, this
    /// tick: the only ones whose interest can change for a fixed view.
    moved: Vec<u64>,
    clients: BTreeMap<ClientId, ClientState>,
    tick_stats: TickStats,
    scratch_ids: Vec<u64>,
    scratch_positions: Vec<Vec3>,
    scratch_hits: Vec<u64>,
}

impl Server {
    /// A server replicating `registry`'s components of the entities in
    /// `world` that carry [`Replicated`].
    pub fn new(world: &mut World, registry: Registry, config: ServerConfig) -> Server {
        let columns = registry.columns(world);
        let mut config = config;
        config.delta_window = config.delta_window.clamp(1, MAX_DELTA_BACK);
        config.ring_len = config.ring_len.clamp(1, 1024);
        config.budget_bytes = config.budget_bytes.max(64);
        config.first_tick = config.first_tick.max(1);
        let grid = SparseGrid::new(Vec3::ZERO, config.grid_cell).ok();
        Server {
            registry,
            columns,
            config,
            // The tick before the first one built.
            tick: config.first_tick - 1,
            added: QueryState::new(world),
            all: QueryState::new(world),
            next_net_id: 1,
            by_entity: IdMap::default(),
            records: IdMap::default(),
            changed: Vec::new(),
            grid,
            grid_stale: true,
            moved: Vec::new(),
            clients: BTreeMap::new(),
            tick_stats: TickStats::default(),
            scratch_ids: Vec::new(),
            scratch_positions: Vec::new(),
            scratch_hits: Vec::new(),
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The newest tick built (before the first update:
    /// [`ServerConfig::first_tick`] minus one, 0 by default).
    pub fn tick(&self) -> u32 {
        self.tick
    }

    /// The configuration in force.
    pub fn config(&self) -> ServerConfig {
        self.config
    }

    /// Changes the packet budget from the next tick on (at least 64 bytes;
    /// e.g. a large budget to bring new clients up to date quickly).
    pub fn set_budget_bytes(&mut self, bytes: usize) {
        self.config.budget_bytes = bytes.max(64);
    }

    /// Adds a client that sees everything (`view: None`) or what lies
    /// within a radius. Its first packets spawn what it sees.
    pub fn add_client(&mut self, id: ClientId, view: Option<View>) -> Result<(), ServerError> {
        if self.clients.contains_key(&id) {
            return Err(ServerError::DuplicateClient(id));
        }
        if let Some(v) = view {
            check_view(v)?;
        }
        let mut client = ClientState {
            view,
            view_changed: true,
            newest_ack: 0,
            ring: VecDeque::new(),
            tracked: IdMap::default(),
            pending: Vec::new(),
            orphans: IdSet::default(),
            interest: Vec::new(),
            resynced: true,
            stats: ClientStats::default(),
            packet: Vec::new(),
            next_epoch: 0,
            last_sent: 0,
        };
        let mut ids: Vec<u64> =
            self.records.iter().filter(|(_, r)| view.is_none() || r.position.is_none()).map(|(id, _)| *id).collect();
        ids.sort_unstable();
        for id in ids {
            client.enter(id, self.tick);
        }
        self.clients.insert(id, client);
        Ok(())
    }

    /// Removes a client and everything kept for it.
    pub fn remove_client(&mut self, id: ClientId) -> Result<(), ServerError> {
        self.clients.remove(&id).map(|_| ()).ok_or(ServerError::UnknownClient(id))
    }

    /// The connected clients.
    pub fn clients(&self) -> impl Iterator<Item = ClientId> + '_ {
        self.clients.keys().copied()
    }

    /// Moves or resizes a client's view (`None`: sees everything).
    pub fn set_view(&mut self, id: ClientId, view: Option<View>) -> Result<(), ServerError> {
        if let Some(v) = view {
            check_view(v)?;
        }
        let tick = self.tick;
        let records = &self.records;
        let client = self.clients.get_mut(&id).ok_or(ServerError::UnknownClient(id))?;
        if client.view == view {
            return Ok(());
        }
        if view.is_none() {
            let mut ids: Vec<u64> = records.keys().copied().collect();
            ids.sort_unstable();
            for net in ids {
                client.enter(net, tick);
            }
            client.interest.clear();
        }
        client.view = view;
        client.view_changed = true;
        Ok(())
    }

    /// A client's view.
    pub fn view(&self, id: ClientId) -> Option<View> {
        self.clients.get(&id).and_then(|c| c.view)
    }

    /// A client's counters.
    pub fn client_stats(&self, id: ClientId) -> Option<ClientStats> {
        self.clients.get(&id).map(|c| {
            let mut s = c.stats;
            s.tracked = c.tracked.len();
            s.pending = c.pending.len();
            s
        })
    }

    /// The newest tick a client acknowledged (0: none).
    pub fn newest_ack(&self, id: ClientId) -> Option<u32> {
        self.clients.get(&id).map(|c| c.newest_ack)
    }

    /// The world-level counters of the latest tick.
    pub fn tick_stats(&self) -> TickStats {
        self.tick_stats
    }

    /// The packets built by the latest [`Server::update`], at most one per
    /// client (none for a client with nothing new between heartbeats).
    pub fn packets(&self) -> impl Iterator<Item = (ClientId, &[u8])> + '_ {
        self.clients.iter().filter(|(_, c)| !c.packet.is_empty()).map(|(id, c)| (*id, c.packet.as_slice()))
    }

    /// The packet built for one client by the latest update, if one was.
    pub fn packet(&self, id: ClientId) -> Option<&[u8]> {
        self.clients.get(&id).map(|c| c.packet.as_slice()).filter(|p| !p.is_empty())
    }

    /// The replicated entities: network id, world entity and quantized
    /// component values in schema order.
    pub fn entities(&self) -> impl Iterator<Item = (u64, Entity, &[Option<Value>])> + '_ {
        self.records.iter().map(|(id, r)| (*id, r.entity, r.values.as_slice()))
    }

    /// The network id of a replicated entity.
    pub fn net_id(&self, entity: Entity) -> Option<u64> {
        self.by_entity.get(&entity).copied()
    }

    /// Whether an entity is inside a client's interest now (what the
    /// client should hold once the stream settles).
    pub fn in_interest(&self, id: ClientId, net_id: u64) -> bool {
        let (Some(client), Some(record)) = (self.clients.get(&id), self.records.get(&net_id)) else {
            return false;
        };
        match (client.view, record.position) {
            (None, _) | (_, None) => true,
            (Some(v), Some(p)) => p.distance_squared(v.center) <= v.radius * v.radius,
        }
    }

    /// Takes one acknowledgement from a client. It only updates that
    /// client's bookkeeping; stale ones are ignored, malformed ones and
    /// ones naming unsent ticks are refused.
    pub fn receive(&mut self, id: ClientId, bytes: &[u8]) -> Result<(), ServerError> {
        let server_tick = self.tick;
        let client = self.clients.get_mut(&id).ok_or(ServerError::UnknownClient(id))?;
        let ack = match Ack::from_bytes(bytes) {
            Ok(a) => a,
            Err(e) => {
                client.stats.bad_acks += 1;
                return Err(ServerError::Ack(e));
            }
        };
        if tick_newer(ack.newest, server_tick) {
            client.stats.bad_acks += 1;
            return Err(ServerError::AckFromFuture { acked: ack.newest, newest: server_tick });
        }
        if client.newest_ack != 0 && !tick_newer(ack.newest, client.newest_ack) {
            return Ok(());
        }
        client.newest_ack = ack.newest;
        client.resynced = false;
        let ClientState { ring, tracked, orphans, .. } = client;
        let Some(front) = ring.front().map(|s| s.tick) else { return Ok(()) };
        for sent in ring.iter_mut() {
            if sent.acked || !ack.contains(sent.tick) {
                continue;
            }
            debug_assert!(!tick_newer(front, sent.tick));
            sent.acked = true;
            let tick = sent.tick;
            for e in &sent.entries {
                let Some(t) = tracked.get_mut(&e.net_id) else { continue };
                if t.epoch != e.epoch {
                    continue;
                }
                match e.kind {
                    EntryKind::Despawn => {
                        if t.phase == Phase::Despawning {
                            forget(tracked, orphans, e.net_id);
                        }
                    }
                    EntryKind::Spawn | EntryKind::Update => {
                        if t.phase == Phase::Despawning {
                            continue;
                        }
                        if e.kind == EntryKind::Spawn {
                            t.phase = Phase::Live;
                        }
                        if let Some(p) = e.position
                            && t.acked_position.is_none_or(|(at, _)| tick_newer(tick, at))
                        {
                            t.acked_position = Some((tick, p));
                        }
                        if !tick_newer(t.last_change, tick) {
                            t.dirty &= !e.mask;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// One network tick: finds what changed in `world`, updates interest,
    /// and builds one packet per client (read them with
    /// [`Server::packets`]).
    pub fn update(&mut self, world: &mut World) -> Result<(), ServerError> {
        self.tick = next_tick(self.tick);
        self.tick_stats = TickStats::default();
        self.find_spawns_and_despawns(world);
        self.find_changes(world);
        self.update_interest();
        let tick = self.tick;
        let position_index = self.registry.position_index();
        let position_codec = position_index.and_then(|i| self.registry.schema().codec(i));
        let changed_masks: Vec<(u64, u64)> =
            self.changed.iter().filter_map(|n| self.records.get(n).map(|r| (*n, r.changed_mask))).collect();
        for client in self.clients.values_mut() {
            // Changes of this tick go to the entities this client tracks.
            for &(net, mask) in &changed_masks {
                let net = &net;
                if let Some(t) = client.tracked.get_mut(net)
                    && t.phase != Phase::Despawning
                {
                    t.dirty |= mask;
                    t.last_change = tick;
                    if t.phase == Phase::Live {
                        client.queue(*net);
                    }
                }
            }
            // No acknowledgement of any packet in the ring: full state.
            let behind = client.ring.len() >= self.config.ring_len as usize
                && client.ring.front().is_some_and(|s| client.newest_ack == 0 || tick_newer(s.tick, client.newest_ack));
            if !client.resynced && behind {
                client.resynced = true;
                client.stats.full_resyncs += 1;
                let mut ids: Vec<u64> = client.tracked.keys().copied().collect();
                ids.sort_unstable();
                for net in ids {
                    if let (Some(t), Some(r)) = (client.tracked.get_mut(&net), self.records.get(&net))
                        && t.phase == Phase::Live
                    {
                        t.dirty = r.full_mask();
                        t.last_change = tick;
                        t.acked_position = None;
                    }
                    client.queue(net);
                }
            }
            build_packet(client, &self.records, &self.registry, &self.config, tick, position_index, position_codec)?;
        }
        Ok(())
    }

    fn find_spawns_and_despawns(&mut self, world: &mut World) {
        let mut new_entities: Vec<Entity> = Vec::new();
        let by_entity = &self.by_entity;
        self.added.for_each(world, |e| {
            if !by_entity.contains_key(&e) {
                new_entities.push(e);
            }
        });
        self.all.update_archetypes(world);
        let archetypes = world.archetypes();
        let count: usize = self.all.matched_archetypes().map(|id| archetypes[id.index()].len()).sum();
        if count != self.records.len() + new_entities.len() {
            let mut dead: Vec<u64> = self
                .records
                .iter()
                .filter(|(_, r)| !world.has::<Replicated>(r.entity).unwrap_or(false))
                .map(|(id, _)| *id)
                .collect();
            dead.sort_unstable();
            for net in dead {
                if let Some(r) = self.records.remove(&net) {
                    self.by_entity.remove(&r.entity);
                    if r.position.is_some() {
                        self.grid_stale = true;
                    }
                }
                for client in self.clients.values_mut() {
                    client.leave(net);
                    if let Ok(i) = client.interest.binary_search(&net) {
                        client.interest.remove(i);
                    }
                }
                self.tick_stats.despawned += 1;
            }
        }
        new_entities.sort_unstable();
        for entity in new_entities {
            let net = self.next_net_id;
            self.next_net_id += 1;
            let mut values = Vec::with_capacity(self.columns.len());
            for column in &self.columns {
                values.push(match column.read(world, entity) {
                    Some(Ok(v)) => Some(v),
                    Some(Err(_)) => {
                        self.tick_stats.quantize_errors += 1;
                        None
                    }
                    None => None,
                });
            }
            let position = self.position_of(&values);
            if position.is_some() {
                self.grid_stale = true;
                self.moved.push(net);
            }
            self.records.insert(net, Record { entity, values, position, changed_mask: 0 });
            self.by_entity.insert(entity, net);
            for client in self.clients.values_mut() {
                if client.view.is_none() || position.is_none() {
                    client.enter(net, self.tick);
                }
            }
            self.tick_stats.spawned += 1;
        }
    }

    fn position_of(&self, values: &[Option<Value>]) -> Option<Vec3> {
        let q = self.registry.position_quantizer()?;
        match values.get(self.registry.position_index()?)? {
            Some(Value::Position(p)) => Some(q.dequantize(*p)),
            _ => None,
        }
    }

    fn find_changes(&mut self, world: &World) {
        for net in self.changed.drain(..) {
            if let Some(r) = self.records.get_mut(&net) {
                r.changed_mask = 0;
            }
        }
        let position_index = self.registry.position_index();
        let quantizer = self.registry.position_quantizer();
        let (records, by_entity, changed, stats, moved) =
            (&mut self.records, &self.by_entity, &mut self.changed, &mut self.tick_stats, &mut self.moved);
        let mut grid_stale = false;
        for (index, column) in self.columns.iter_mut().enumerate() {
            column.scan_changed(world, &mut |entity, value| {
                let Some(net) = by_entity.get(&entity) else { return };
                let Some(record) = records.get_mut(net) else { return };
                let value = match value {
                    Ok(v) => v,
                    Err(_) => {
                        stats.quantize_errors += 1;
                        return;
                    }
                };
                if record.values[index].as_ref() == Some(&value) {
                    return;
                }
                if Some(index) == position_index
                    && let (Value::Position(p), Some(q)) = (&value, quantizer)
                {
                    record.position = Some(q.dequantize(*p));
                    grid_stale = true;
                    moved.push(*net);
                }
                record.values[index] = Some(value);
                if record.changed_mask == 0 {
                    changed.push(*net);
                }
                record.changed_mask |= 1 << index;
            });
            let chunks = column.scan_stats();
            stats.chunks_total += chunks.chunks_total;
            stats.chunks_skipped += chunks.chunks_skipped;
        }
        self.changed.sort_unstable();
        self.tick_stats.changed = self.changed.len();
        self.grid_stale |= grid_stale;
    }

    /// Brings every client's interest set up to date. A client whose view
    /// was (re)placed gets a full radius query on the grid (rebuilt first if
    /// positions changed since it was built); for the others only the
    /// entities that moved or spawned this tick are tested against the view,
    /// so a tick costs O(moved x clients), not O(world).
    fn update_interest(&mut self) {
        let mut moved = std::mem::take(&mut self.moved);
        moved.sort_unstable();
        moved.dedup();
        let any_view = self.clients.values().any(|c| c.view.is_some());
        let Some(grid) = self.grid.as_mut().filter(|_| any_view) else {
            moved.clear();
            self.moved = moved;
            return;
        };
        let placed = self.clients.values().any(|c| c.view.is_some() && c.view_changed);
        if placed && self.grid_stale {
            self.scratch_ids.clear();
            self.scratch_positions.clear();
            let mut ids: Vec<(u64, Vec3)> =
                self.records.iter().filter_map(|(id, r)| r.position.map(|p| (*id, p))).collect();
            ids.sort_unstable_by_key(|(id, _)| *id);
            for (id, p) in ids {
                self.scratch_ids.push(id);
                self.scratch_positions.push(p);
            }
            if grid.rebuild(&self.scratch_ids, &self.scratch_positions).is_err() {
                // A point out of the grid's key range: a grid of what can be
                // keyed (unkeyable points are never in view, see below).
                let (ids, positions): (Vec<u64>, Vec<Vec3>) = self
                    .scratch_ids
                    .iter()
                    .zip(&self.scratch_positions)
                    .filter(|(_, p)| grid.cell_key_of(**p).is_ok())
                    .map(|(i, p)| (*i, *p))
                    .unzip();
                let _ = grid.rebuild(&ids, &positions);
            }
            self.grid_stale = false;
            self.tick_stats.grid_rebuilt = true;
        }
        let tick = self.tick;
        for client in self.clients.values_mut() {
            let Some(view) = client.view else { continue };
            if !client.view_changed {
                // The same predicate as the grid's radius query, plus "the
                // grid can key it", so both paths agree on every entity.
                let r2 = view.radius * view.radius;
                for &net in &moved {
                    let Some(p) = self.records.get(&net).and_then(|r| r.position) else { continue };
                    let inside = p.distance_squared(view.center) <= r2 && grid.cell_key_of(p).is_ok();
                    match (client.interest.binary_search(&net), inside) {
                        (Err(i), true) => {
                            client.interest.insert(i, net);
                            client.enter(net, tick);
                        }
                        (Ok(i), false) => {
                            client.interest.remove(i);
                            client.leave(net);
                        }
                        _ => {}
                    }
                }
                continue;
            }
            client.view_changed = false;
            self.scratch_hits.clear();
            grid.query_radius(view.center, view.radius, &mut self.scratch_hits);
            self.scratch_hits.sort_unstable();
            // Leaving: in the old set, not in the new one.
            let old = std::mem::take(&mut client.interest);
            let (mut i, mut j) = (0, 0);
            while i < old.len() || j < self.scratch_hits.len() {
                let a = old.get(i).copied();
                let b = self.scratch_hits.get(j).copied();
                match (a, b) {
                    (Some(x), Some(y)) if x == y => {
                        i += 1;
                        j += 1;
                    }
                    (Some(x), Some(y)) if x < y => {
                        client.leave(x);
                        i += 1;
                    }
                    (Some(x), None) => {
                        client.leave(x);
                        i += 1;
                    }
                    (_, Some(y)) => {
                        client.enter(y, tick);
                        j += 1;
                    }
                    (None, None) => break,
                }
            }
            client.interest.extend_from_slice(&self.scratch_hits);
        }
        moved.clear();
        self.moved = moved;
    }
}

/// Drops an entity from a client's books; if it is still in `pending`, its
/// id becomes an orphan there (see `ClientState::orphans`).
fn forget(tracked: &mut IdMap<u64, Tracked>, orphans: &mut IdSet<u64>, net_id: u64) {
    if tracked.remove(&net_id).is_some_and(|t| t.queued) {
        orphans.insert(net_id);
    }
}

fn check_view(v: View) -> Result<(), ServerError> {
    if v.center.is_finite() && v.radius.is_finite() && v.radius >= 0.0 { Ok(()) } else { Err(ServerError::BadView) }
}

fn varint_bits(v: u64) -> usize {
    // 8 bits per started group of 7.
    let significant = (64 - v.leading_zeros()).max(1) as usize;
    significant.div_ceil(7) * 8
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn build_packet(
    client: &mut ClientState,
    records: &IdMap<u64, Record>,
    registry: &Registry,
    config: &ServerConfig,
    tick: u32,
    position_index: Option<usize>,
    position_codec: Option<FieldCodec>,
) -> Result<(), ServerError> {
    let mut encoder = Encoder::new(registry.schema(), tick, client.newest_ack);
    let center = client.view.map(|v| v.center);
    // Priority: every waiting entity gains each tick; spawns and despawns
    // gain most (they decide what exists), nearer entities gain more.
    let mut order: Vec<(f32, u64)> = Vec::with_capacity(client.pending.len());
    for net in &client.pending {
        let Some(t) = client.tracked.get_mut(net) else { continue };
        let base = match t.phase {
            Phase::Spawning | Phase::Despawning => 4.0,
            Phase::Live => 1.0,
        };
        let near = match center.and_then(|c| Some((c, records.get(net)?.position?))) {
            Some((c, p)) => 4.0 / (4.0 + p.distance(c)),
            None => 0.0,
        };
        t.priority += base + near;
        order.push((t.priority, *net));
    }
    // Only the first entries can fit (each takes at least 10 bits): pick
    // them in O(n), then sort just those.
    let by_priority = |a: &(f32, u64), b: &(f32, u64)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let can_fit = config.budget_bytes * 8 / 10 + 1;
    let candidates = order.len();
    if order.len() > can_fit {
        order.select_nth_unstable_by(can_fit, by_priority);
        order.truncate(can_fit);
    }
    order.sort_unstable_by(by_priority);
    let mut sent = Vec::new();
    let mut misses = 0;
    for (_, net) in &order {
        let Some(t) = client.tracked.get_mut(net) else { continue };
        let record = records.get(net);
        let entry = match (t.phase, record) {
            (Phase::Despawning, _) | (_, None) => {
                Entry { kind: EntryKind::Despawn, net_id: *net, components: Vec::new() }
            }
            (Phase::Spawning, Some(r)) => Entry {
                kind: EntryKind::Spawn,
                net_id: *net,
                components: r.values.iter().enumerate().filter_map(|(i, v)| v.clone().map(|v| (i as u8, v))).collect(),
            },
            (Phase::Live, Some(r)) => {
                if t.dirty == 0 {
                    continue;
                }
                let mut components = Vec::new();
                for (i, v) in r.values.iter().enumerate() {
                    let Some(v) = v else { continue };
                    if t.dirty >> i & 1 == 0 {
                        continue;
                    }
                    let mut value = v.clone();
                    if Some(i) == position_index
                        && let (Value::Position(cur), Some((at, base)), Some(FieldCodec::Position(q))) =
                            (v, t.acked_position, position_codec)
                    {
                        let back = tick_diff(tick, at).max(0) as u32;
                        if (1..=config.delta_window).contains(&back) {
                            let d = [
                                cur[0] as i64 - base[0] as i64,
                                cur[1] as i64 - base[1] as i64,
                                cur[2] as i64 - base[2] as i64,
                            ];
                            let delta_bits =
                                varint_bits(back as u64) + d.iter().map(|x| varint_bits(zigzag(*x))).sum::<usize>();
                            if delta_bits < 3 * q.bits() as usize && d.iter().all(|x| i32::try_from(*x).is_ok()) {
                                value = Value::PositionDelta { back, delta: [d[0] as i32, d[1] as i32, d[2] as i32] };
                            }
                        }
                    }
                    components.push((i as u8, value));
                }
                Entry { kind: EntryKind::Update, net_id: *net, components }
            }
        };
        let mut fits = encoder.push_within(&entry, config.budget_bytes).map_err(ServerError::Encode)?;
        let alone = !fits && encoder.entries() == 0;
        if alone {
            // An entry larger than the whole budget goes alone in its packet
            // (the transport fragments it) rather than never.
            encoder.push(&entry).map_err(ServerError::Encode)?;
            fits = true;
        }
        if fits {
            let mask = entry.components.iter().fold(0u64, |m, (i, _)| m | 1 << i);
            let position = match (position_index, record) {
                (Some(i), Some(r)) if mask >> i & 1 == 1 => match &r.values[i] {
                    Some(Value::Position(p)) => Some(*p),
                    _ => None,
                },
                _ => None,
            };
            sent.push(SentEntry { net_id: *net, epoch: t.epoch, kind: entry.kind, mask, position });
            t.priority = 0.0;
            t.sent_in_epoch = true;
            client.stats.entries_sent += 1;
            if alone {
                break;
            }
        } else {
            // A few more tries: a small entry (a despawn) may still fit.
            misses += 1;
            if misses >= 16 {
                break;
            }
        }
    }
    client.stats.entries_deferred += candidates.saturating_sub(sent.len()) as u64;
    // Keep what still has work.
    let ClientState { pending, tracked, orphans, .. } = client;
    pending.retain(|net| match tracked.get_mut(net) {
        Some(t) if t.phase != Phase::Live || t.dirty != 0 => true,
        Some(t) => {
            t.queued = false;
            t.priority = 0.0;
            false
        }
        None => {
            orphans.remove(net);
            false
        }
    });
    // Ticks since the last packet: a distance, not an order (0: none sent).
    let since = tick.wrapping_sub(client.last_sent);
    if sent.is_empty() && client.pending.is_empty() && client.last_sent != 0 && since < config.heartbeat {
        // Nothing to say and a heartbeat went out recently.
        client.packet.clear();
        client.stats.last_packet_bytes = 0;
        return Ok(());
    }
    client.last_sent = tick;
    let bytes = encoder.finish();
    client.stats.last_packet_bytes = bytes.len();
    client.stats.bytes_sent += bytes.len() as u64;
    client.stats.packets += 1;
    client.packet = bytes;
    client.ring.push_back(Sent { tick, acked: false, entries: sent });
    while client.ring.len() > config.ring_len as usize {
        client.ring.pop_front();
    }
    Ok(())
}
