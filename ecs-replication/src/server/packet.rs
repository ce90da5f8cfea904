//! Packet building for one client: priority over the entities with work,
//! entries chosen under the byte budget, deltas sized by the codec.

use ecs_core::Entity;

use crate::codec::{Encoder, Entry, EntryKind, NetId, Value, delta_of, value_bits};
use crate::registry::Registry;
use crate::tick::tick_diff;

use super::changes::Record;
use super::client_state::{ClientState, Phase, Sent, SentEntry};
use super::{IdMap, ServerConfig, ServerError};

/// Builds this tick's packet for `client` into `client.packet` (left empty
/// when there is nothing to say and a heartbeat went out recently), and
/// records what it holds in the client's ring.
pub(super) fn build_packet(
    client: &mut ClientState,
    records: &IdMap<NetId, Record>,
    by_entity: &IdMap<Entity, NetId>,
    registry: &Registry,
    config: &ServerConfig,
    tick: u32,
) -> Result<(), ServerError> {
    let schema = registry.schema();
    let mut encoder = Encoder::with_sync(registry.schema(), tick, client.newest_ack, client.time_sync(tick));
    let center = client.view.map(|v| v.center);
    // The entities this client controls go in every packet, changed or not,
    // so its prediction is confirmed (or corrected) every tick.
    let mut confirm: Vec<NetId> = Vec::new();
    for entity in &client.controlled {
        if let Some(net) = by_entity.get(entity) {
            confirm.push(*net);
        }
    }
    for net in &confirm {
        client.queue(*net);
    }
    // Priority: every waiting entity gains each tick; spawns and despawns
    // gain most (they decide what exists), nearer entities gain more. What
    // has no work left leaves the pending list in the same pass (building
    // the packet changes no phase and no dirty mask).
    let mut order: Vec<(f32, NetId)> = Vec::with_capacity(client.pending.len());
    let ClientState { pending, tracked, orphans, .. } = &mut *client;
    pending.retain(|net| {
        let Some(t) = tracked.get_mut(net) else {
            orphans.remove(net);
            return false;
        };
        let confirmed = confirm.contains(net);
        if t.phase == Phase::Live && t.dirty == 0 && !confirmed {
            t.queued = false;
            t.priority = 0.0;
            return false;
        }
        let base = match t.phase {
            Phase::Spawning | Phase::Despawning => 4.0,
            Phase::Live => 1.0,
        };
        let near = match center.and_then(|c| Some((c, records.get(net)?.position?))) {
            Some((c, p)) => 4.0 / (4.0 + p.distance(c)),
            None => 0.0,
        };
        t.priority += base + near;
        if confirmed {
            t.priority += 1.0e6;
        }
        order.push((t.priority, *net));
        true
    });
    // Only the first entries can fit (each takes at least 10 bits): pick
    // them in O(n), then sort just those.
    let by_priority = |a: &(f32, NetId), b: &(f32, NetId)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let can_fit = config.budget_bytes * 8 / 10 + 1;
    let candidates = order.len();
    if order.len() > can_fit {
        order.select_nth_unstable_by(can_fit, by_priority);
        order.truncate(can_fit);
    }
    order.sort_unstable_by(by_priority);
    let mut sent = Vec::with_capacity(order.len());
    let mut misses = 0;
    // One component list and one baseline state, reused entry after entry.
    let mut scratch: Vec<(u8, Value)> = Vec::new();
    let mut base_state: Vec<Option<Value>> = Vec::new();
    for (_, net) in &order {
        let Some(t) = client.tracked.get_mut(net) else { continue };
        let record = records.get(net);
        let entry = match (t.phase, record) {
            (Phase::Despawning, _) | (_, None) => {
                Entry { kind: EntryKind::Despawn, net_id: *net, baseline: 0, components: Vec::new(), removed: 0 }
            }
            (Phase::Spawning, Some(r)) => {
                let mut components = std::mem::take(&mut scratch);
                components.clear();
                components.extend(r.values.iter().enumerate().filter_map(|(i, v)| v.clone().map(|v| (i as u8, v))));
                Entry { kind: EntryKind::Spawn, net_id: *net, baseline: 0, components, removed: 0 }
            }
            (Phase::Live, Some(r)) => {
                if t.dirty == 0 && !confirm.contains(net) {
                    continue;
                }
                // The baseline: the client's state at its newest
                // acknowledged entry for this entity, if recent enough and
                // still in the record's history.
                let back = tick_diff(tick, t.acked_tick);
                let has_base = t.acked_tick != 0 && (1..=config.delta_window as i32).contains(&back);
                if has_base {
                    r.state_at(t.acked_tick, &mut base_state);
                }
                let mut components = std::mem::take(&mut scratch);
                components.clear();
                let mut removed = 0;
                let mut any_delta = false;
                for (i, v) in r.values.iter().enumerate() {
                    if t.dirty >> i & 1 == 0 {
                        continue;
                    }
                    let Some(v) = v else {
                        // Written, then removed: the removal is the news,
                        // on the same acknowledgement rule as a value.
                        removed |= 1 << i;
                        continue;
                    };
                    let mut value = v.clone();
                    if let (true, Some(Some(old)), Some(codec)) = (has_base, base_state.get(i), schema.codec(i))
                        && let Some(delta) = delta_of(codec, old, v)
                        && value_bits(codec, &delta) < value_bits(codec, &value)
                    {
                        value = delta;
                        any_delta = true;
                    }
                    components.push((i as u8, value));
                }
                let baseline = if any_delta { back as u32 } else { 0 };
                Entry { kind: EntryKind::Update, net_id: *net, baseline, components, removed }
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
            let mask = entry.components.iter().fold(entry.removed, |m, (i, _)| m | 1 << i);
            sent.push(SentEntry { net_id: *net, epoch: t.epoch, kind: entry.kind, mask });
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
        scratch = entry.components;
    }
    client.stats.entries_deferred += candidates.saturating_sub(sent.len()) as u64;
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
