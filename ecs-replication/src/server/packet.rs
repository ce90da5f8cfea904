//! Packet building for one client: the entities it controls first, then
//! the send queue in deadline order under the byte budget (up to the
//! catch-up ceiling while a backlog exists), then, with room left under
//! the budget, entries whose acknowledgement is late; deltas sized by the
//! codec.

use ecs_core::Entity;

use crate::codec::{Encoder, Entry, EntryKind, Limits, MAX_ENTRIES_ON_WIRE, NetId, Value, delta_of, value_bits};
use crate::registry::Registry;
use crate::tick::tick_diff;

use super::changes::Record;
use super::client_state::{ClientState, Fate, Phase, Sent, SentEntry};
use super::{IdMap, ServerConfig, ServerError};

/// Entries tried that did not fit before the packet is closed (a small
/// one, a despawn, may still fit after a large one did not).
const MAX_MISSES: usize = 16;

/// Scratch space reused entry after entry.
#[derive(Default)]
struct Scratch {
    components: Vec<(u8, Value)>,
    base_state: Vec<Option<Value>>,
}

/// What every entry of one packet is built from.
struct Context<'a> {
    records: &'a IdMap<NetId, Record>,
    registry: &'a Registry,
    config: &'a ServerConfig,
    tick: u32,
}

/// The entry that brings the client up to date on `net`: a despawn, a
/// spawn with every value, or an update of the dirty components, each as a
/// delta against the acknowledged baseline where the codec says it is
/// smaller. `None`: nothing to say (a live entity with no work that is not
/// confirmed every tick).
fn entry_for(
    cx: &Context<'_>,
    client: &ClientState,
    net: NetId,
    confirmed: bool,
    scratch: &mut Scratch,
) -> Option<Entry> {
    let t = client.tracked.get(&net)?;
    let (schema, config, tick) = (cx.registry.schema(), cx.config, cx.tick);
    Some(match (t.phase, cx.records.get(&net)) {
        (Phase::Despawning, _) | (_, None) => {
            Entry { kind: EntryKind::Despawn, net_id: net, baseline: 0, components: Vec::new(), removed: 0 }
        }
        (Phase::Spawning, Some(r)) => {
            let mut components = std::mem::take(&mut scratch.components);
            components.clear();
            components.extend(r.values.iter().enumerate().filter_map(|(i, v)| v.clone().map(|v| (i as u8, v))));
            Entry { kind: EntryKind::Spawn, net_id: net, baseline: 0, components, removed: 0 }
        }
        (Phase::Live, Some(r)) => {
            if t.dirty == 0 && !confirmed {
                return None;
            }
            // The baseline: the client's state at its newest acknowledged
            // entry for this entity, if recent enough and still in the
            // record's history.
            let back = tick_diff(tick, t.acked_tick);
            let has_base = t.acked_tick != 0 && (1..=config.delta_window as i32).contains(&back);
            if has_base {
                r.state_at(t.acked_tick, &mut scratch.base_state);
            }
            let mut components = std::mem::take(&mut scratch.components);
            components.clear();
            let mut removed = 0;
            let mut any_delta = false;
            for (i, v) in r.values.iter().enumerate() {
                if t.dirty >> i & 1 == 0 {
                    continue;
                }
                let Some(v) = v else {
                    // Written, then removed: the removal is the news, on
                    // the same acknowledgement rule as a value.
                    removed |= 1 << i;
                    continue;
                };
                let mut value = v.clone();
                if let (true, Some(Some(old)), Some(codec)) = (has_base, scratch.base_state.get(i), schema.codec(i))
                    && let Some(delta) = delta_of(codec, old, v)
                    && value_bits(codec, &delta) < value_bits(codec, &value)
                {
                    value = delta;
                    any_delta = true;
                }
                components.push((i as u8, value));
            }
            let baseline = if any_delta { back as u32 } else { 0 };
            Entry { kind: EntryKind::Update, net_id: net, baseline, components, removed }
        }
    })
}

/// Builds this tick's packet for `client` into `client.packet` (left empty
/// when there is nothing to say, no packet's fate is awaited and a
/// heartbeat went out recently), and records what it holds in the
/// client's ring.
///
/// The entities the client controls go first, changed or not. Then the
/// send queue in deadline order, while the packet is under
/// [`ServerConfig::budget_bytes`], or, while a backlog exists (work the
/// previous packet left waiting, or an entry past its deadline: after
/// loss, a join, a burst), under [`ServerConfig::catch_up_budget_bytes`].
/// Once nothing waits, room left under the steady budget takes the
/// entries of packets whose acknowledgement is due and has not come (see
/// `client_state`). The selection touches only the entries it takes (plus
/// at most [`MAX_MISSES`] that did not fit), never the whole backlog.
pub(super) fn build_packet(
    client: &mut ClientState,
    records: &IdMap<NetId, Record>,
    by_entity: &IdMap<Entity, NetId>,
    registry: &Registry,
    config: &ServerConfig,
    tick: u32,
) -> Result<(), ServerError> {
    let cx = Context { records, registry, config, tick };
    let mut encoder = Encoder::with_sync(registry.schema(), tick, client.newest_ack, client.time_sync(tick));
    let budget = config.budget_bytes;
    let ceiling = config.catch_up_budget_bytes.max(budget);
    let mut sent: Vec<SentEntry> = Vec::new();
    let mut scratch = Scratch::default();
    let mut caught_up = false;
    // The entities this client controls go in every packet, changed or
    // not, so its prediction is confirmed (or corrected) every tick.
    // Each controlled entity is listed once, and entities have distinct
    // network ids: no entry here repeats another.
    let confirm: Vec<NetId> = client.controlled.iter().filter_map(|e| by_entity.get(e).copied()).collect();
    for &net in &confirm {
        let Some(entry) = entry_for(&cx, client, net, true, &mut scratch) else { continue };
        // Over the budget if need be: the player's own entity is never
        // held back.
        encoder.push(&entry).map_err(ServerError::Encode)?;
        note_sent(client, &mut sent, &entry, tick);
        scratch.components = entry.components;
    }
    // No more entries than a client's decoder takes by default.
    let max_entries = Limits::default().max_entries.min(MAX_ENTRIES_ON_WIRE);
    let mut misses = 0;
    let mut missed = Vec::new();
    // A backlog exists when the previous packet left work waiting, or the
    // first entry waiting now is past its deadline (deadline order: it is
    // the most overdue; e.g. an entry whose packet was lost). Until the
    // queue is empty, packets may grow to the ceiling, for every entry
    // waiting, not only the overdue ones (fresh changes do not wait behind
    // the backlog).
    let mut first = true;
    let mut full = false;
    loop {
        let Some((waiting, due)) = client.next_waiting() else {
            // Nothing waits. Room left under the steady budget goes to the
            // oldest packet whose acknowledgement is late (it may be lost):
            // its entries queue again and go in this packet.
            let room = budget.saturating_sub(encoder.byte_len());
            if !full && client.time_out_early(tick, room) {
                continue;
            }
            break;
        };
        let net = waiting.net_id;
        if std::mem::take(&mut first) && due {
            client.catching_up = true;
        }
        let limit = if client.catching_up { ceiling } else { budget };
        if encoder.byte_len() >= limit || encoder.entries() >= max_entries {
            missed.push(waiting);
            break;
        }
        let Some(entry) = entry_for(&cx, client, net, false, &mut scratch) else { continue };
        let mut fits = encoder.push_within(&entry, limit).map_err(ServerError::Encode)?;
        let alone = !fits && encoder.entries() == 0;
        if alone {
            // An entry larger than the whole budget goes alone in its
            // packet (the transport fragments it) rather than never.
            encoder.push(&entry).map_err(ServerError::Encode)?;
            fits = true;
        }
        if fits {
            if encoder.byte_len() > budget {
                caught_up = true;
            }
            note_sent(client, &mut sent, &entry, tick);
            scratch.components = entry.components;
            if alone {
                break;
            }
        } else {
            scratch.components = entry.components;
            missed.push(waiting);
            misses += 1;
            full = true;
            if misses >= MAX_MISSES {
                break;
            }
        }
    }
    // What did not fit keeps its place.
    for w in missed.into_iter().rev() {
        client.put_back(w);
    }
    client.stats.entries_deferred += client.queued as u64;
    client.catching_up = client.queued > 0;
    if caught_up {
        client.stats.catch_up_packets += 1;
    }
    // Ticks since the last packet: a distance, not an order (0: none sent).
    let since = tick.wrapping_sub(client.last_sent);
    let quiet = sent.is_empty() && !client.awaits_fate();
    client.clock += 1;
    if quiet && client.last_sent != 0 && since < config.heartbeat {
        // Nothing to say, no packet's fate awaited (a packet that has
        // entries in flight is followed by one every tick, so the
        // acknowledgement that shows it lost comes soon), and a heartbeat
        // went out recently.
        client.packet.clear();
        client.stats.last_packet_bytes = 0;
        return Ok(());
    }
    client.last_sent = tick;
    // Nothing waits: an entity not in this packet did not change.
    encoder.set_complete(client.queued == 0);
    let bytes = encoder.finish();
    client.stats.last_packet_bytes = bytes.len();
    client.stats.bytes_sent += bytes.len() as u64;
    client.stats.packets += 1;
    client.ring.push_back(Sent { tick, fate: Fate::InFlight, entries: sent, bytes: bytes.len() });
    client.packet = bytes;
    while client.ring.len() > config.ring_len as usize {
        if client.ring.front().is_some_and(|s| s.fate == Fate::InFlight) {
            // Never acknowledged nor shown lost within the ring: given up
            // on, its entries go again.
            client.settle_lost(0);
        }
        client.ring.pop_front();
    }
    Ok(())
}

/// Notes an entry that went into the packet.
fn note_sent(client: &mut ClientState, sent: &mut Vec<SentEntry>, entry: &Entry, tick: u32) {
    let Some(epoch) = client.tracked.get(&entry.net_id).map(|t| t.epoch) else { return };
    let mask = entry.components.iter().fold(entry.removed, |m, (i, _)| m | 1 << i);
    sent.push(SentEntry { net_id: entry.net_id, epoch, kind: entry.kind, mask });
    client.sent(entry.net_id, tick);
    client.stats.entries_sent += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Delta, FieldCodec, Value};

    #[test]
    fn deltas_are_chosen_by_their_codec_size() {
        let codec = FieldCodec::Position(crate::quantize::PositionQuantizer::new(0.01, 20).unwrap());
        let (a, b) = (Value::Position([100, 5, 0]), Value::Position([103, 5, -700]));
        let delta = delta_of(codec, &a, &b).unwrap();
        assert_eq!(delta, Value::Delta(Delta::Position([3, 0, -700])));
        assert!(value_bits(codec, &delta) < value_bits(codec, &b));
    }
}
