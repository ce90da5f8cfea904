//! One client's books on the server: what it tracks (spawning, live,
//! despawning), the send queue of entities with work, the entries in
//! flight, the ring of sent packets, and what an acknowledgement settles
//! or shows lost.
//!
//! An entity with unacknowledged work is either waiting in the send queue
//! or in flight: its newest entry went out in a packet whose fate is not
//! known yet, and nothing changed since. In flight, it is not sent again.
//! New work (a change, a despawn, a re-entry) supersedes the entry in
//! flight and queues the entity again: the next entry carries the newest
//! state, delta-coded against the acknowledged baseline, and whatever
//! becomes of the superseded packet, its entry is not resent. An
//! acknowledgement settles the packets it names and shows lost the older
//! ones it does not name (the client applies only packets newer than the
//! newest it applied, so a packet it skipped never will be): their
//! entries that are still the newest queue again, due at once.
//!
//! A lost packet's acknowledgement never comes, and the one that shows it
//! lost comes only after a later packet got through and its
//! acknowledgement came back. So a packet also counts as lost once it
//! waited [`TIMEOUT_MARGIN`] ticks longer than any acknowledgement took
//! lately (the smallest of the last [`RTT_SAMPLES`] round trips, in
//! ticks: the link's own), or as soon as that round trip passed if the packet
//! being built has room for it under the steady budget and nothing else
//! waits. Its entries that are still the newest queue again, due at once,
//! and the packet stays in the ring, so an acknowledgement that names it
//! after all still settles it. On a link whose round trip does not grow,
//! nothing goes twice; after loss, what was lost goes again one round
//! trip (plus at most the margin) after it was sent, whatever became of
//! the acknowledgements.

use std::collections::VecDeque;

use ecs_core::Entity;
use glam::Vec3;

use crate::ack::Ack;
use crate::codec::{EntryKind, NetId, TimeSync};
use crate::input::UpstreamHeader;
use crate::tick::{tick_diff, tick_newer};

use super::interest::View;
use super::queue::{SendQueue, Waiting};
use super::{ClientStats, IdMap};

/// The accumulator threshold behind a deadline, in ticks: an entity waits
/// `WAIT_THRESHOLD / rate`, its rate being 1 (live) or 4 (spawning,
/// despawning) plus up to 1 the nearer it is to the client's view center.
/// Deadlines order the queue; an entry past its deadline (one whose
/// packet was lost, due at once) also starts catch-up at once, before the
/// next tick would (see `packet`).
const WAIT_THRESHOLD: f32 = 2.0;

/// Round-trip samples kept per client: a packet counts as lost once it
/// waited [`TIMEOUT_MARGIN`] ticks longer than the smallest of them.
const RTT_SAMPLES: usize = 16;

/// Ticks past the smallest recent round trip after which an
/// unacknowledged packet counts as lost. A client acknowledges every step
/// (`transport::pump_client`; sessions send their upstream datagram every
/// tick), so the margin lets later acknowledgements (each naming the 32
/// packets before its newest) bring the news when the first was lost, or
/// when the round trip varies by up to the margin: under loss on the way
/// back, a shorter wait sends again what had arrived. (With
/// room in the packet under the steady budget, a packet goes again as
/// soon as the round trip passed: see `time_out_early`.)
const TIMEOUT_MARGIN: i32 = 2;

/// Deadline units per tick (deadlines are finer than ticks, so priority
/// orders entries due within the same tick).
const QUANTA: u64 = 4;

/// Where an entity stands on one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Its spawn is not acknowledged yet.
    Spawning,
    /// The client holds it.
    Live,
    /// It left (despawned or out of interest); the despawn is not
    /// acknowledged yet.
    Despawning,
}

/// One tracked entity of one client.
pub(super) struct Tracked {
    pub(super) phase: Phase,
    /// Unique per client across incarnations, so an old acknowledgement
    /// never settles a later incarnation.
    pub(super) epoch: u32,
    /// Whether an entry of this epoch went out (the client may hold it).
    pub(super) sent_in_epoch: bool,
    /// Components written and not acknowledged since (schema bits).
    pub(super) dirty: u64,
    /// The tick of the newest change marked dirty.
    pub(super) last_change: u32,
    /// The newest acknowledged tick whose packet held an entry for it in
    /// this epoch (0: none): the client's state of the entity then is the
    /// server's state at that tick, the baseline of deltas.
    pub(super) acked_tick: u32,
    /// The tick of the packet holding its newest entry while that packet's
    /// fate is unknown and nothing changed since (0: not in flight).
    pub(super) in_flight: u32,
    /// The stamp of its live entry in the send queue (0: not queued).
    pub(super) queued: u32,
}

impl Tracked {
    /// Whether the client lacks something of it: a spawn, a despawn, or
    /// written components.
    pub(super) fn has_work(&self) -> bool {
        self.phase != Phase::Live || self.dirty != 0
    }
}

/// What one entry of a sent packet was, to settle on acknowledgement.
pub(super) struct SentEntry {
    pub(super) net_id: NetId,
    pub(super) epoch: u32,
    pub(super) kind: EntryKind,
    pub(super) mask: u64,
}

/// What became of a sent packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fate {
    /// Not known yet.
    InFlight,
    /// Acknowledged.
    Acked,
    /// Not acknowledged within the round-trip timeout: its entries were
    /// queued again, but an acknowledgement may still settle it.
    TimedOut,
    /// Known lost (or given up: it left the ring unacknowledged).
    Lost,
}

/// The round trips of a client's recent acknowledgements, in ticks: from
/// the tick a packet was built to the tick that settled the
/// acknowledgement naming it as the newest applied.
#[derive(Default)]
pub(super) struct RoundTrips {
    samples: [u8; RTT_SAMPLES],
    next: usize,
    len: usize,
}

impl RoundTrips {
    fn push(&mut self, ticks: u32) {
        self.samples[self.next] = ticks.clamp(1, u8::MAX as u32) as u8;
        self.next = (self.next + 1) % RTT_SAMPLES;
        self.len = (self.len + 1).min(RTT_SAMPLES);
    }

    /// The smallest recent round trip (`None` before the first one): by
    /// then the acknowledgement of a packet that arrived has come, unless
    /// it was lost or late. (An acknowledgement repeated after one was
    /// lost, or a client that applied late, makes a longer sample; the
    /// smallest is the link's.)
    pub(super) fn smallest(&self) -> Option<u32> {
        self.samples[..self.len].iter().min().map(|&t| t as u32)
    }
}

/// One sent packet.
pub(super) struct Sent {
    pub(super) tick: u32,
    pub(super) fate: Fate,
    pub(super) entries: Vec<SentEntry>,
    /// Its size in bytes.
    pub(super) bytes: usize,
}

/// Everything the server keeps for one client.
pub(super) struct ClientState {
    pub(super) view: Option<View>,
    pub(super) view_changed: bool,
    pub(super) newest_ack: u32,
    pub(super) ring: VecDeque<Sent>,
    pub(super) tracked: IdMap<NetId, Tracked>,
    /// Entities waiting to be sent, in deadline order.
    pub(super) queue: SendQueue,
    /// Tracked entities with a live entry in `queue`.
    pub(super) queued: usize,
    /// Tracked entities in flight (never queued at the same time).
    pub(super) in_flight: usize,
    next_stamp: u32,
    /// Catching up: the previous packet left work waiting (or an entry
    /// waited past its deadline this tick). Packets may grow to the
    /// catch-up ceiling until the queue is empty.
    pub(super) catching_up: bool,
    /// Updates built for this client: the clock of queue deadlines (in
    /// [`QUANTA`] per update).
    pub(super) clock: u64,
    /// The entities in view, sorted (clients with a view only).
    pub(super) interest: Vec<NetId>,
    pub(super) resynced: bool,
    pub(super) stats: ClientStats,
    pub(super) packet: Vec<u8>,
    pub(super) next_epoch: u32,
    pub(super) last_sent: u32,
    /// The newest upstream timestamp and the server tick it arrived at.
    pub(super) echo: Option<(u16, u32)>,
    /// How far ahead of the server's tick the newest input was.
    pub(super) input_lead: i32,
    /// Entities this client controls (and predicts): in every packet.
    /// Each once; `controlled_at` holds each one's index.
    pub(super) controlled: Vec<Entity>,
    pub(super) controlled_at: super::IdMap<Entity, u32>,
    /// Acknowledgements received since the previous tick, oldest first.
    pub(super) acks: Vec<Ack>,
    /// Recent round trips: the loss timeout.
    pub(super) round_trips: RoundTrips,
}

/// Acknowledgements a client holds between two ticks.
const MAX_UNSETTLED_ACKS: usize = 16;

/// How long an entity in `phase` at `position` waits before it is due,
/// for a client with `view` (see [`WAIT_THRESHOLD`]), in [`QUANTA`].
fn wait_ticks(view: Option<View>, phase: Phase, position: Option<Vec3>) -> u64 {
    let base = match phase {
        Phase::Spawning | Phase::Despawning => 4.0,
        Phase::Live => 1.0,
    };
    let near = match (view, position) {
        (Some(v), Some(p)) => 4.0 / (4.0 + p.distance(v.center)),
        _ => 0.0,
    };
    (WAIT_THRESHOLD * QUANTA as f32 / (base + near)).round() as u64
}

impl ClientState {
    /// Adds `entity` to the controlled entities (once).
    pub(super) fn control(&mut self, entity: Entity) {
        if !self.controlled_at.contains_key(&entity) {
            self.controlled_at.insert(entity, self.controlled.len() as u32);
            self.controlled.push(entity);
        }
    }

    /// Takes `entity` out of the controlled entities, in O(1) (the last one
    /// takes its place in the list).
    pub(super) fn release(&mut self, entity: Entity) {
        let Some(i) = self.controlled_at.remove(&entity) else { return };
        self.controlled.swap_remove(i as usize);
        if let Some(&moved) = self.controlled.get(i as usize) {
            self.controlled_at.insert(moved, i);
        }
    }

    pub(super) fn new(view: Option<View>) -> ClientState {
        ClientState {
            view,
            view_changed: true,
            newest_ack: 0,
            ring: VecDeque::new(),
            tracked: IdMap::default(),
            queue: SendQueue::default(),
            queued: 0,
            in_flight: 0,
            next_stamp: 1,
            catching_up: false,
            clock: 0,
            interest: Vec::new(),
            resynced: true,
            stats: ClientStats::default(),
            packet: Vec::new(),
            next_epoch: 0,
            last_sent: 0,
            echo: None,
            input_lead: 0,
            controlled: Vec::new(),
            controlled_at: Default::default(),
            acks: Vec::new(),
            round_trips: RoundTrips::default(),
        }
    }

    /// Notes the time fields of an upstream datagram that arrived while
    /// `tick` was the newest built.
    pub(super) fn note_upstream(&mut self, header: &UpstreamHeader, tick: u32) {
        if self.echo.is_none_or(|(t, _)| (header.timestamp.wrapping_sub(t) as i16) > 0) {
            self.echo = Some((header.timestamp, tick));
        }
        if header.count > 0 {
            self.input_lead = tick_diff(header.newest_input, tick);
        }
    }

    /// The time sync block of a packet built at `tick`.
    pub(super) fn time_sync(&self, tick: u32) -> Option<TimeSync> {
        let (echo, at) = self.echo?;
        Some(TimeSync {
            echo,
            hold: tick.wrapping_sub(at).min(255) as u8,
            lead: self.input_lead.clamp(i8::MIN as i32, i8::MAX as i32) as i8,
        })
    }

    /// Entities with unacknowledged work: waiting or in flight.
    pub(super) fn pending(&self) -> usize {
        self.queued + self.in_flight
    }

    /// Queues an entity with new work, due in `wait` [`QUANTA`] unless it is
    /// queued already (it keeps its place); an entry of it in flight is
    /// superseded.
    fn requeue(&mut self, net_id: NetId, wait: u64) {
        let Some(t) = self.tracked.get_mut(&net_id) else { return };
        if t.in_flight != 0 {
            t.in_flight = 0;
            self.in_flight -= 1;
        }
        if t.queued == 0 {
            t.queued = self.next_stamp;
            self.next_stamp = self.next_stamp.wrapping_add(1).max(1);
            self.queued += 1;
            self.queue.push(self.clock * QUANTA + wait, net_id, t.queued);
        }
    }

    /// Takes the next waiting entry that is still live (stale ones are
    /// dropped), and whether it is due. Returns `None` once the queue is
    /// empty. The entity leaves the queue; [`ClientState::put_back`]
    /// returns it.
    pub(super) fn next_waiting(&mut self) -> Option<(Waiting, bool)> {
        loop {
            let w = self.queue.pop()?;
            self.stats.queue_visits += 1;
            let Some(t) = self.tracked.get_mut(&w.net_id) else { continue };
            if t.queued != w.stamp {
                continue;
            }
            t.queued = 0;
            self.queued -= 1;
            if !t.has_work() {
                // Its work was settled while it waited.
                continue;
            }
            // Due: its deadline falls within this tick or before.
            return Some((w, w.deadline < (self.clock + 1) * QUANTA));
        }
    }

    /// Returns an entry taken by [`ClientState::next_waiting`] that did not
    /// go out, at its place.
    pub(super) fn put_back(&mut self, w: Waiting) {
        if let Some(t) = self.tracked.get_mut(&w.net_id)
            && t.queued == 0
            && t.in_flight == 0
        {
            t.queued = w.stamp;
            self.queued += 1;
            self.queue.put_back(w);
        }
    }

    /// Notes that an entity's newest entry went out in the packet of
    /// `tick` (taking it out of the queue if it was there).
    pub(super) fn sent(&mut self, net_id: NetId, tick: u32) {
        let Some(t) = self.tracked.get_mut(&net_id) else { return };
        if t.queued != 0 {
            // A controlled entity goes out ahead of the queue: its entry
            // there turns stale.
            t.queued = 0;
            self.queued -= 1;
        }
        if t.in_flight == 0 {
            self.in_flight += 1;
        }
        t.in_flight = tick;
        t.sent_in_epoch = true;
    }

    /// The entity enters this client's world (interest or spawn).
    pub(super) fn enter(&mut self, net_id: NetId, tick: u32, position: Option<Vec3>) {
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
                t.acked_tick = 0;
            }
            Some(_) => return,
            None => {
                // Epochs are unique per client across incarnations, so an
                // old acknowledgement never settles a newer incarnation.
                let epoch = self.next_epoch;
                self.next_epoch = self.next_epoch.wrapping_add(1);
                self.tracked.insert(
                    net_id,
                    Tracked {
                        phase: Phase::Spawning,
                        epoch,
                        sent_in_epoch: false,
                        dirty: 0,
                        last_change: tick,
                        acked_tick: 0,
                        in_flight: 0,
                        queued: 0,
                    },
                );
            }
        }
        let wait = wait_ticks(self.view, Phase::Spawning, position);
        self.requeue(net_id, wait);
    }

    /// The entity leaves this client's world (despawn or interest).
    pub(super) fn leave(&mut self, net_id: NetId, position: Option<Vec3>) {
        let Some(t) = self.tracked.get_mut(&net_id) else { return };
        if t.phase == Phase::Spawning && !t.sent_in_epoch {
            // The client never heard of it in this epoch.
            self.forget(net_id);
            return;
        }
        t.phase = Phase::Despawning;
        t.dirty = 0;
        t.acked_tick = 0;
        let wait = wait_ticks(self.view, Phase::Despawning, position);
        self.requeue(net_id, wait);
    }

    /// Marks a tick's changes (`(entity, changed components, position)`)
    /// on the entities this client tracks: each queues (or keeps its place
    /// in the queue), superseding an entry in flight.
    pub(super) fn mark_changed(&mut self, changes: &[(NetId, u64, Option<Vec3>)], tick: u32) {
        for &(net, mask, position) in changes {
            let Some(t) = self.tracked.get_mut(&net) else { continue };
            if t.phase == Phase::Despawning {
                continue;
            }
            t.dirty |= mask;
            t.last_change = tick;
            let wait = wait_ticks(self.view, t.phase, position);
            self.requeue(net, wait);
        }
    }

    /// Full state of what the client may lack, after it acknowledged none
    /// of the ring: every entity with unacknowledged work queues, due now,
    /// and live ones go whole (`all_components`, values and removals, no
    /// baseline). An entity whose state the client acknowledged is known
    /// to be held and stays as it is. `exists` says whether the server
    /// still holds an entity.
    pub(super) fn resync(&mut self, all_components: u64, tick: u32, exists: impl Fn(NetId) -> bool) {
        let mut ids: Vec<NetId> = self.tracked.iter().filter(|(_, t)| t.has_work()).map(|(id, _)| *id).collect();
        ids.sort_unstable();
        self.queue.clear();
        self.queued = 0;
        self.in_flight = 0;
        for t in self.tracked.values_mut() {
            t.queued = 0;
            t.in_flight = 0;
        }
        for net in &ids {
            let Some(t) = self.tracked.get_mut(net) else { continue };
            if t.phase == Phase::Live && exists(*net) {
                // The client may hold a component removed while it was
                // behind: every component goes, values and removals.
                t.dirty = all_components;
                t.last_change = tick;
                t.acked_tick = 0;
            }
        }
        for net in ids {
            self.requeue(net, 0);
        }
    }

    /// Takes a new acknowledgement (the caller checked that it is newer
    /// than the newest one and names no future tick); the next tick settles
    /// what it covers ([`ClientState::settle_acks`]).
    pub(super) fn acknowledge(&mut self, ack: Ack) {
        self.newest_ack = ack.newest;
        self.resynced = false;
        if self.acks.len() >= MAX_UNSETTLED_ACKS {
            // Settling late only delays work; the newest ones carry the most.
            self.acks.remove(0);
        }
        self.acks.push(ack);
    }

    /// Settles the acknowledgements received since the previous tick (at
    /// the start of `tick`, on the client's own thread: the entities they
    /// touch are the ones this tick's changes touch next, so they are in
    /// cache then). Packets an acknowledgement names are settled: spawns
    /// become live, despawns are forgotten, sent components stop being
    /// resent unless written again since. Older packets it does not name
    /// are lost: their entries that are still the newest queue again. Then
    /// packets unacknowledged for longer than the round-trip timeout count
    /// as lost too ([`ClientState::time_out`]).
    pub(super) fn settle_acks(&mut self, tick: u32) {
        let acks = std::mem::take(&mut self.acks);
        for ack in &acks {
            self.settle(*ack, tick);
        }
        self.acks = acks;
        self.acks.clear();
        self.time_out(tick);
    }

    fn settle(&mut self, ack: Ack, tick: u32) {
        // The round trip of the packet it names as the newest: the
        // client sent it on applying that packet.
        let round_trip = tick_diff(tick, ack.newest);
        if round_trip > 0 && self.ring.iter().any(|s| s.tick == ack.newest) {
            self.round_trips.push(round_trip as u32);
        }
        for i in 0..self.ring.len() {
            let sent = &self.ring[i];
            if matches!(sent.fate, Fate::Acked | Fate::Lost) || tick_newer(sent.tick, ack.newest) {
                continue;
            }
            if ack.contains(sent.tick) {
                if sent.fate == Fate::TimedOut {
                    self.stats.spurious_timeouts += 1;
                }
                self.settle_acked(i);
            } else {
                self.settle_lost(i);
            }
        }
    }

    /// Packets with entries that waited for an acknowledgement
    /// [`TIMEOUT_MARGIN`] ticks longer than the smallest recent round trip
    /// count as lost: their entries that are still their entity's newest
    /// queue again, due now. They stay in the ring ([`Fate::TimedOut`]): a
    /// late acknowledgement still settles them. Not while the client
    /// acknowledged none of the ring (after a full resync, until an
    /// acknowledgement comes): a client that went silent gets its work
    /// again as packets leave the ring, not every round trip.
    fn time_out(&mut self, tick: u32) {
        let Some(round_trip) = self.round_trips.smallest() else { return };
        if self.resynced {
            return;
        }
        // The ring is in tick order: stop at the first packet too young.
        for i in 0..self.ring.len() {
            let sent = &self.ring[i];
            if tick_diff(tick, sent.tick) < round_trip as i32 + TIMEOUT_MARGIN {
                break;
            }
            if sent.fate != Fate::InFlight || sent.entries.is_empty() {
                continue;
            }
            self.stats.packets_timed_out += 1;
            self.requeue_lost(i, Fate::TimedOut);
        }
    }

    /// Takes for lost, before the margin, the oldest packet in flight that
    /// waited the smallest recent round trip for its acknowledgement, if it
    /// is at most `room` bytes: its entries queue again, due now. For a
    /// packet with room left under the steady budget and nothing waiting:
    /// what the acknowledgement that did not come may mean lost goes again
    /// at once, at no more than a steady packet's cost. Returns whether one
    /// was.
    pub(super) fn time_out_early(&mut self, tick: u32, room: usize) -> bool {
        let Some(round_trip) = self.round_trips.smallest() else { return false };
        if self.resynced {
            return false;
        }
        for i in 0..self.ring.len() {
            let sent = &self.ring[i];
            if tick_diff(tick, sent.tick) < round_trip as i32 {
                return false;
            }
            if sent.fate != Fate::InFlight || sent.entries.is_empty() {
                continue;
            }
            if sent.bytes > room {
                return false;
            }
            self.stats.packets_timed_out += 1;
            self.requeue_lost(i, Fate::TimedOut);
            return true;
        }
        false
    }

    fn settle_acked(&mut self, index: usize) {
        let sent = &mut self.ring[index];
        sent.fate = Fate::Acked;
        let tick = sent.tick;
        let entries = std::mem::take(&mut sent.entries);
        for e in &entries {
            let Some(t) = self.tracked.get_mut(&e.net_id) else { continue };
            if t.epoch != e.epoch {
                continue;
            }
            match e.kind {
                EntryKind::Despawn => {
                    if t.phase == Phase::Despawning {
                        self.forget(e.net_id);
                        continue;
                    }
                }
                EntryKind::Spawn | EntryKind::Update => {
                    if t.phase == Phase::Despawning {
                        continue;
                    }
                    if e.kind == EntryKind::Spawn {
                        t.phase = Phase::Live;
                    }
                    if t.acked_tick == 0 || tick_newer(tick, t.acked_tick) {
                        t.acked_tick = tick;
                    }
                    if !tick_newer(t.last_change, tick) {
                        t.dirty &= !e.mask;
                    }
                }
            }
            if t.in_flight == tick {
                t.in_flight = 0;
                self.in_flight -= 1;
                if t.has_work() {
                    // E.g. a component removed while its spawn was in
                    // flight: the removal is still news.
                    self.requeue(e.net_id, 0);
                }
            }
        }
        self.ring[index].entries = entries;
    }

    /// A packet known lost (or given up on): its entries that are still
    /// their entity's newest queue again, due now.
    pub(super) fn settle_lost(&mut self, index: usize) {
        if !self.ring[index].entries.is_empty() {
            self.stats.packets_lost += 1;
        }
        self.requeue_lost(index, Fate::Lost);
    }

    /// Queues again, due now, the entries of a packet taken for lost that
    /// are still their entity's newest, and gives the packet `fate`.
    fn requeue_lost(&mut self, index: usize, fate: Fate) {
        let sent = &mut self.ring[index];
        sent.fate = fate;
        let tick = sent.tick;
        let entries = std::mem::take(&mut sent.entries);
        for e in &entries {
            let Some(t) = self.tracked.get_mut(&e.net_id) else { continue };
            if t.epoch != e.epoch || t.in_flight != tick {
                // Superseded by a newer entry (or a newer incarnation), or
                // queued again when the packet timed out.
                continue;
            }
            t.in_flight = 0;
            self.in_flight -= 1;
            if t.has_work() {
                self.stats.entries_resent += 1;
                self.requeue(e.net_id, 0);
            }
        }
        self.ring[index].entries = entries;
    }

    /// Whether a packet with entries is still in flight (its fate is news
    /// the server waits for).
    pub(super) fn awaits_fate(&self) -> bool {
        self.ring.iter().any(|s| s.fate == Fate::InFlight && !s.entries.is_empty())
    }

    /// Drops an entity from this client's books.
    fn forget(&mut self, net_id: NetId) {
        if let Some(t) = self.tracked.remove(&net_id) {
            if t.queued != 0 {
                // Its entry in the queue turns stale.
                self.queued -= 1;
            }
            if t.in_flight != 0 {
                self.in_flight -= 1;
            }
        }
    }
}
