//! The authoritative side: per-client acknowledged baselines, interest,
//! priority, a byte budget per packet and a catch-up ceiling.
//!
//! Each [`Server::update`] is one network tick:
//! 1. World level, once for all clients: replicated entities that appeared
//!    ([`ecs_core::Added`] on the [`Replicated`](crate::registry::Replicated) marker, chunk-skipping),
//!    disappeared (an O(archetypes) count check; only when the count is off
//!    are the known entities walked), and whose replicated components were
//!    written (one `Changed<T>` query per component: whole chunks skipped by
//!    their chunk tick, then row ticks). Values are quantized once; a write
//!    that quantizes to the same value is not a change.
//! 2. Interest: when anything moved or a view changed, the positions go into
//!    an `ecs-spatial` [`SparseGrid`](ecs_spatial::SparseGrid) and each client with a view radius asks
//!    it; entering entities spawn on that client, leaving ones despawn.
//! 3. Per client: the acknowledgements received since the last tick are
//!    settled, the changes of this tick are added to the entities that
//!    client tracks, and its packet is built from its send queue
//!    (`queue`): an entity with new work waits there with a deadline, the
//!    tick at which a priority accumulator would reach a threshold (spawns
//!    and despawns gain most, nearer entities more), fixed when it starts
//!    waiting. The packet takes entries in deadline order up to the byte
//!    budget, or, while a backlog exists (work left waiting by the previous
//!    packet, or an entry whose packet was lost), up to the catch-up
//!    ceiling. Every component goes
//!    delta-coded against the value the client acknowledged when that is
//!    smaller. A tick costs what changed, what is sent and what
//!    acknowledgements settle, never what waits or what the world holds.
//!
//! Acknowledgements ([`crate::ack`]) name the newest applied tick and the 32
//! before it. An acknowledged packet settles its entries: spawns become live,
//! despawns are forgotten, sent components stop being resent unless written
//! again since. An entry in flight is not sent again while its packet's
//! fate is unknown; new work supersedes it (the next entry carries the
//! newest state). An acknowledgement that names newer packets but not an
//! older one shows that one lost: its entries that are still the newest
//! queue again, due at once (a packet that left the ring unacknowledged
//! counts as lost). While a packet with entries is in flight, the client
//! gets a packet every tick, so an acknowledgement showing a loss comes
//! within a round trip. A packet whose acknowledgement is two ticks later
//! than the smallest recent round trip counts as lost too (or as soon as
//! that round trip passed, when the packet being built has room for it
//! under the budget): its entries queue again, and a late acknowledgement
//! still settles it. Work stays pending until acknowledged, so loss
//! delays but never loses it, and an entity is only forgotten once its
//! despawn is acknowledged: no ghosts. A client whose newest
//! acknowledgement is older than the ring of sent packets gets full state
//! of every entity with unacknowledged work.
//!
//! Clients can only acknowledge: an acknowledgement changes nothing but that
//! client's own bookkeeping, and one that names a tick never sent is
//! refused.
//!
//! Layout: [`changes`](self) finds the tick's spawns, despawns and changed
//! values once for all clients; `interest` keeps each client's view;
//! `client_state` holds a client's books (tracked entities, work waiting
//! or in flight, the ring of sent packets, what an acknowledgement settles
//! or shows lost); `queue` is a client's send queue; `packet` builds one
//! client's packet; `expected` rebuilds what a client should hold at a
//! recent tick, for [`crate::check`].

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use std::hash::{BuildHasherDefault, Hasher};

use ecs_core::{Entity, World};
use glam::Vec3;

use crate::ack::{Ack, AckError};
use crate::codec::{EncodeError, MAX_DELTA_BACK, NetId, Value};
use crate::input::{InputError, decode_upstream_header, is_upstream};
use crate::registry::Registry;
use crate::tick::{next_tick, tick_newer};

mod changes;
mod client_state;
mod expected;
mod interest;
mod packet;
mod queue;

pub use interest::View;

use changes::ChangeScan;
use client_state::ClientState;
use interest::{Interest, check_view, in_view};

/// Clients from which [`Server::update`] builds packets on rayon's pool.
pub const PARALLEL_CLIENTS: usize = 8;

/// The largest catch-up ceiling ([`ServerConfig::catch_up_budget_bytes`]).
pub const MAX_CATCH_UP_BYTES: usize = 1 << 20;

/// A client's id on the server (the transport's id, e.g. renet's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub u64);

/// Server tuning.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ServerConfig {
    /// Largest packet in bytes in the steady state (default 1200, under a
    /// typical MTU). An entry larger than this on its own is sent alone in
    /// a packet.
    pub budget_bytes: usize,
    /// The catch-up ceiling (default 4800, four times the default budget;
    /// at most 1 MiB): while a backlog exists, the packet may grow past
    /// [`ServerConfig::budget_bytes`] up to this many bytes. A backlog is
    /// work the previous packet left waiting, or an entry past its
    /// deadline (one whose packet was lost): after loss, a join, a burst
    /// of spawns. It lasts until nothing waits. Ticks to catch up are then
    /// about backlog / ceiling instead of backlog / budget. Packets over the MTU are
    /// fragmented by the transport (renet does), so the ceiling is a
    /// bandwidth cap per client per tick: 4800 bytes at 60 Hz is 2.3 Mbps.
    /// A world whose changes never fit the budget runs at the ceiling; a
    /// ceiling at or below the budget turns catch-up off.
    pub catch_up_budget_bytes: usize,
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
            catch_up_budget_bytes: 4800,
            ring_len: 32,
            delta_window: 32,
            grid_cell: 8.0,
            heartbeat: 30,
            first_tick: 1,
        }
    }
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
    /// A malformed upstream datagram (input and acknowledgement).
    Upstream(InputError),
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
            ServerError::Upstream(e) => write!(f, "bad upstream datagram: {e}"),
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
    /// Entities left waiting in the send queue after a packet was built,
    /// summed over ticks.
    pub entries_deferred: u64,
    /// Entries queued again because the packet holding them was lost (an
    /// acknowledgement named newer packets but not it, it waited longer
    /// than the round-trip timeout, or it left the ring unacknowledged)
    /// and they were still their entity's newest.
    pub entries_resent: u64,
    /// Packets with entries known lost.
    pub packets_lost: u64,
    /// Packets with entries not acknowledged within the round-trip
    /// timeout (the smallest recent round trip + 2 ticks): taken for lost, their
    /// entries queued again.
    pub packets_timed_out: u64,
    /// Of these, packets an acknowledgement named after all (they had
    /// arrived; their acknowledgement was lost or late).
    pub spurious_timeouts: u64,
    /// Packets that grew past the steady budget to catch up on a backlog.
    pub catch_up_packets: u64,
    /// Entries taken from the send queue, stale ones included, summed over
    /// ticks: the priority selection's work (it grows with what is sent
    /// and what started waiting, not with what waits).
    pub queue_visits: u64,
    /// Times the client fell behind the ring and got full state.
    pub full_resyncs: u64,
    /// Acknowledgements refused.
    pub bad_acks: u64,
    /// Entities the client tracks (spawning, live or despawning).
    pub tracked: usize,
    /// Entities with unacknowledged work: waiting in the send queue, or in
    /// flight (their newest entry sent, its packet's fate unknown).
    pub pending: usize,
    /// Of these, the ones waiting in the send queue.
    pub queued: usize,
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
    /// Components removed from live replicated entities.
    pub removed: usize,
    /// Values that could not be quantized (kept at their previous value).
    pub quantize_errors: u64,
    /// Whether the interest grid was rebuilt.
    pub grid_rebuilt: bool,
    /// Chunks of replicated archetypes the change scan covered, summed over
    /// the replicated component types (each type scans its own column).
    pub chunks_total: u64,
    /// Of these, chunks skipped from their chunk tick alone.
    pub chunks_skipped: u64,
    /// Whether the tick checked every record to find the entities that
    /// left. The removal log of `Replicated` (despawns and removals) and an
    /// `Added<Disabled>` query name them, so this happens only if those
    /// lists disagree with the count of replicated entities.
    pub departures_swept: bool,
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

/// The replication server. See the [module docs](self).
///
/// ```
/// use ecs_core::{Component, World};
/// use ecs_replication::prelude::*;
/// use glam::Vec3;
///
/// #[derive(Component, Clone, Copy, Debug, PartialEq)]
/// struct Position(Vec3);
/// impl AsPosition for Position {
///     fn position(&self) -> Vec3 { self.0 }
///     fn from_position(p: Vec3) -> Self { Position(p) }
/// }
/// let registry = || Registry::new().position::<Position>("position", 0.01, 20).unwrap();
///
/// let mut world = World::new();
/// world.spawn((Replicated, Position(Vec3::new(1.0, 2.0, 3.0))));
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
    config: ServerConfig,
    tick: u32,
    changes: ChangeScan,
    interest: Interest,
    clients: BTreeMap<ClientId, ClientState>,
    tick_stats: TickStats,
}

impl Server {
    /// A server replicating `registry`'s components of the entities in
    /// `world` that carry [`Replicated`](crate::registry::Replicated).
    pub fn new(world: &mut World, registry: Registry, config: ServerConfig) -> Server {
        let mut config = config;
        config.delta_window = config.delta_window.clamp(1, MAX_DELTA_BACK);
        config.ring_len = config.ring_len.clamp(1, 1024);
        config.budget_bytes = config.budget_bytes.max(64);
        config.catch_up_budget_bytes = config.catch_up_budget_bytes.min(MAX_CATCH_UP_BYTES);
        config.first_tick = config.first_tick.max(1);
        Server {
            changes: ChangeScan::new(world, &registry),
            interest: Interest::new(config.grid_cell),
            registry,
            config,
            // The tick before the first one built.
            tick: config.first_tick - 1,
            clients: BTreeMap::new(),
            tick_stats: TickStats::default(),
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
        let mut client = ClientState::new(view);
        let mut ids: Vec<(NetId, Option<Vec3>)> = self
            .changes
            .records
            .iter()
            .filter(|(_, r)| view.is_none() || r.position.is_none())
            .map(|(id, r)| (*id, r.position))
            .collect();
        ids.sort_unstable_by_key(|(id, _)| *id);
        for (id, position) in ids {
            client.enter(id, self.tick, position);
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
        let records = &self.changes.records;
        let client = self.clients.get_mut(&id).ok_or(ServerError::UnknownClient(id))?;
        if client.view == view {
            return Ok(());
        }
        if view.is_none() {
            let mut ids: Vec<(NetId, Option<Vec3>)> = records.iter().map(|(id, r)| (*id, r.position)).collect();
            ids.sort_unstable_by_key(|(id, _)| *id);
            for (net, position) in ids {
                client.enter(net, tick, position);
            }
            client.interest.clear();
        }
        client.view = view;
        client.view_changed = true;
        Ok(())
    }

    /// Marks `entity` as controlled by a client (or not): it goes in every
    /// packet to that client, an empty entry when nothing changed, so the
    /// client's prediction of it is confirmed or corrected every tick
    /// ([`crate::prediction`]). The entity should be in the client's
    /// interest (without a view, everything is). O(1) either way; a
    /// controlled entity that is despawned is released by the next
    /// [`Server::update`].
    pub fn set_controlled(&mut self, id: ClientId, entity: Entity, controlled: bool) -> Result<(), ServerError> {
        let client = self.clients.get_mut(&id).ok_or(ServerError::UnknownClient(id))?;
        if controlled {
            client.control(entity);
        } else {
            client.release(entity);
        }
        Ok(())
    }

    /// The entities a client controls, each once (in the order they were
    /// given, except that a release moves the last one into its place).
    pub fn controlled(&self, id: ClientId) -> &[Entity] {
        self.clients.get(&id).map_or(&[], |c| c.controlled.as_slice())
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
            s.pending = c.pending();
            s.queued = c.queued;
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
    pub fn entities(&self) -> impl Iterator<Item = (NetId, Entity, &[Option<Value>])> + '_ {
        self.changes.records.iter().map(|(id, r)| (*id, r.entity, r.values.as_slice()))
    }

    /// The network id of a replicated entity.
    pub fn net_id(&self, entity: Entity) -> Option<NetId> {
        self.changes.by_entity.get(&entity).copied()
    }

    /// Whether an entity is inside a client's interest now (what the
    /// client should hold once the stream settles).
    pub fn in_interest(&self, id: ClientId, net_id: NetId) -> bool {
        let (Some(client), Some(record)) = (self.clients.get(&id), self.changes.records.get(&net_id)) else {
            return false;
        };
        in_view(client.view, record)
    }

    /// Takes one datagram from a client: an acknowledgement ([`Ack`]), or an
    /// upstream datagram ([`crate::input`]) whose acknowledgement and
    /// timestamp it reads (its inputs are for an
    /// [`crate::input::InputBuffer`]). It only updates that client's
    /// bookkeeping; stale acknowledgements are ignored, malformed datagrams
    /// and acknowledgements naming unsent ticks are refused.
    pub fn receive(&mut self, id: ClientId, bytes: &[u8]) -> Result<(), ServerError> {
        let server_tick = self.tick;
        let client = self.clients.get_mut(&id).ok_or(ServerError::UnknownClient(id))?;
        let ack = if is_upstream(bytes) {
            let header = match decode_upstream_header(bytes) {
                Ok(h) => h,
                Err(e) => {
                    client.stats.bad_acks += 1;
                    return Err(ServerError::Upstream(e));
                }
            };
            client.note_upstream(&header, server_tick);
            match header.ack {
                Some(ack) => ack,
                None => return Ok(()),
            }
        } else {
            match Ack::from_bytes(bytes) {
                Ok(a) => a,
                Err(e) => {
                    client.stats.bad_acks += 1;
                    return Err(ServerError::Ack(e));
                }
            }
        };
        if tick_newer(ack.newest, server_tick) {
            client.stats.bad_acks += 1;
            return Err(ServerError::AckFromFuture { acked: ack.newest, newest: server_tick });
        }
        if client.newest_ack != 0 && !tick_newer(ack.newest, client.newest_ack) {
            return Ok(());
        }
        client.acknowledge(ack);
        Ok(())
    }

    /// One network tick: finds what changed in `world`, updates interest,
    /// and builds one packet per client (read them with
    /// [`Server::packets`]).
    pub fn update(&mut self, world: &mut World) -> Result<(), ServerError> {
        self.tick = next_tick(self.tick);
        self.tick_stats = TickStats::default();
        let tick = self.tick;
        self.changes.scan(world, &self.registry, tick, self.config.delta_window, &mut self.tick_stats);
        let changes = &mut self.changes;
        // Controlled entities that were despawned are released (a disabled
        // one stays controlled: it is alive).
        let dead: Vec<Entity> = changes
            .departed
            .iter()
            .rev()
            .take_while(|(t, _, _)| *t == tick)
            .map(|(_, _, r)| r.entity)
            .filter(|&e| !world.contains(e))
            .collect();
        for client in self.clients.values_mut() {
            if !client.controlled.is_empty() {
                for &e in &dead {
                    client.release(e);
                }
            }
            for &net in &changes.despawned {
                client.leave(net, None);
            }
            // Both lists ascend: one pass drops the despawned from the
            // interest set, where a removal each shifted the set's tail.
            interest::remove_sorted(&mut client.interest, &changes.despawned);
        }
        for &net in &changes.spawned {
            let position = changes.records.get(&net).and_then(|r| r.position);
            for client in self.clients.values_mut() {
                if client.view.is_none() || position.is_none() {
                    client.enter(net, tick, position);
                }
            }
        }
        if changes.positions_changed {
            self.interest.mark_stale();
        }
        self.tick_stats.grid_rebuilt =
            self.interest.update(&mut self.clients, &changes.records, &mut changes.moved, tick);
        let changed_masks: Vec<(NetId, u64, Option<Vec3>)> = changes
            .changed
            .iter()
            .filter_map(|n| changes.records.get(n).map(|r| (*n, r.changed_mask, r.position)))
            .collect();
        let width = self.registry.schema().len();
        let all_components = if width == 64 { u64::MAX } else { (1u64 << width) - 1 };
        let (registry, config) = (&self.registry, &self.config);
        let per_client = |client: &mut ClientState| -> Result<(), ServerError> {
            client.settle_acks(tick);
            // Changes of this tick go to the entities this client tracks.
            client.mark_changed(&changed_masks, tick);
            // No acknowledgement of any packet in the ring: full state.
            let behind = client.ring.len() >= config.ring_len as usize
                && client.ring.front().is_some_and(|s| client.newest_ack == 0 || tick_newer(s.tick, client.newest_ack));
            if !client.resynced && behind {
                client.resynced = true;
                client.stats.full_resyncs += 1;
                client.resync(all_components, tick, |net| changes.records.contains_key(&net));
            }
            packet::build_packet(client, &changes.records, &changes.by_entity, registry, config, tick)
        };
        // Each client's books are its own and the world-level part is read
        // only: packets are built in parallel (rayon's pool; one thread
        // runs them in order) once there are enough clients to pay for it.
        if self.clients.len() >= PARALLEL_CLIENTS && rayon::current_num_threads() > 1 {
            let mut clients: Vec<&mut ClientState> = self.clients.values_mut().collect();
            clients.par_iter_mut().try_for_each(|client| per_client(client))
        } else {
            self.clients.values_mut().try_for_each(per_client)
        }
    }
}
