//! One client's books on the server: what it tracks (spawning, live,
//! despawning), the entities with unacknowledged work, the ring of sent
//! packets, and what an acknowledgement settles.

use std::collections::VecDeque;

use ecs_core::Entity;

use crate::ack::Ack;
use crate::codec::{EntryKind, NetId, TimeSync};
use crate::input::UpstreamHeader;
use crate::tick::{tick_diff, tick_newer};

use super::interest::View;
use super::{ClientStats, IdMap, IdSet};

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
    /// The priority accumulator.
    pub(super) priority: f32,
    /// Whether its id is in `ClientState::pending`.
    pub(super) queued: bool,
}

/// What one entry of a sent packet was, to settle on acknowledgement.
pub(super) struct SentEntry {
    pub(super) net_id: NetId,
    pub(super) epoch: u32,
    pub(super) kind: EntryKind,
    pub(super) mask: u64,
}

/// One sent packet.
pub(super) struct Sent {
    pub(super) tick: u32,
    pub(super) acked: bool,
    pub(super) entries: Vec<SentEntry>,
}

/// Everything the server keeps for one client.
pub(super) struct ClientState {
    pub(super) view: Option<View>,
    pub(super) view_changed: bool,
    pub(super) newest_ack: u32,
    pub(super) ring: VecDeque<Sent>,
    pub(super) tracked: IdMap<NetId, Tracked>,
    /// Entities with work, each once (`Tracked::queued`).
    pub(super) pending: Vec<NetId>,
    /// Ids in `pending` whose tracked entry was dropped (an acknowledged
    /// despawn, an unsent spawn that left interest): a re-entry takes over
    /// that place in `pending` instead of queueing the id twice (which
    /// would put two entries for one entity in a packet, and the client
    /// refuses such packets).
    pub(super) orphans: IdSet<NetId>,
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
    pub(super) controlled: Vec<Entity>,
    /// Acknowledgements received since the previous tick, oldest first.
    pub(super) acks: Vec<Ack>,
}

/// Acknowledgements a client holds between two ticks.
const MAX_UNSETTLED_ACKS: usize = 16;

impl ClientState {
    pub(super) fn new(view: Option<View>) -> ClientState {
        ClientState {
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
            echo: None,
            input_lead: 0,
            controlled: Vec::new(),
            acks: Vec::new(),
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

    pub(super) fn queue(&mut self, net_id: NetId) {
        if let Some(t) = self.tracked.get_mut(&net_id)
            && !t.queued
        {
            t.queued = true;
            self.pending.push(net_id);
        }
    }

    /// The entity enters this client's world (interest or spawn).
    pub(super) fn enter(&mut self, net_id: NetId, tick: u32) {
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
                        acked_tick: 0,
                        priority: 0.0,
                        queued,
                    },
                );
            }
        }
        self.queue(net_id);
    }

    /// The entity leaves this client's world (despawn or interest).
    pub(super) fn leave(&mut self, net_id: NetId) {
        let Some(t) = self.tracked.get_mut(&net_id) else { return };
        if t.phase == Phase::Spawning && !t.sent_in_epoch {
            // The client never heard of it in this epoch.
            forget(&mut self.tracked, &mut self.orphans, net_id);
            return;
        }
        t.phase = Phase::Despawning;
        t.dirty = 0;
        t.acked_tick = 0;
        self.queue(net_id);
    }

    /// Marks a tick's changes (`(entity, changed components)`) on the
    /// entities this client tracks.
    pub(super) fn mark_changed(&mut self, changes: &[(NetId, u64)], tick: u32) {
        for &(net, mask) in changes {
            if let Some(t) = self.tracked.get_mut(&net)
                && t.phase != Phase::Despawning
            {
                t.dirty |= mask;
                t.last_change = tick;
                if t.phase == Phase::Live {
                    self.queue(net);
                }
            }
        }
    }

    /// Takes a new acknowledgement (the caller checked that it is newer
    /// than the newest one and names no future tick); the next tick settles
    /// what it covers ([`ClientState::settle_acks`]): spawns become live,
    /// despawns are forgotten, sent components stop being resent unless
    /// written again since.
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
    /// the start of a tick, on the client's own thread: the entities they
    /// touch are the ones this tick's changes touch next, so they are in
    /// cache then).
    pub(super) fn settle_acks(&mut self) {
        let acks = std::mem::take(&mut self.acks);
        for ack in &acks {
            self.settle(*ack);
        }
        self.acks = acks;
        self.acks.clear();
    }

    fn settle(&mut self, ack: Ack) {
        let ClientState { ring, tracked, orphans, .. } = self;
        let Some(front) = ring.front().map(|s| s.tick) else { return };
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
                        if t.acked_tick == 0 || tick_newer(tick, t.acked_tick) {
                            t.acked_tick = tick;
                        }
                        if !tick_newer(t.last_change, tick) {
                            t.dirty &= !e.mask;
                        }
                    }
                }
            }
        }
    }
}

/// Drops an entity from a client's books; if it is still in `pending`, its
/// id becomes an orphan there (see `ClientState::orphans`).
pub(super) fn forget(tracked: &mut IdMap<NetId, Tracked>, orphans: &mut IdSet<NetId>, net_id: NetId) {
    if tracked.remove(&net_id).is_some_and(|t| t.queued) {
        orphans.insert(net_id);
    }
}
