//! A packet is checked against the state it produces, entry by entry, and
//! refused whole (nothing applied) when an entry contradicts that state:
//! an update or despawn of an entity an earlier entry despawned (unless a
//! spawn re-created it in between), a spawn of an entity an earlier entry
//! already made live, an update of an entity that neither exists nor was
//! spawned, a delta against the history of an incarnation the packet
//! despawned.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use ecs_core::{Entity, World};
use ecs_replication::client::{ClientError, Inconsistency};
use ecs_replication::codec::{Delta, Encoder, Entry, EntryKind, Value};
use ecs_replication::prelude::*;
use glam::{Quat, Vec3};
use proptest::prelude::*;

/// Ticks: the setup packet, then the packet under test.
const SETUP: u32 = 10;
const TICK: u32 = 11;

fn packet(tick: u32, entries: &[Entry]) -> Vec<u8> {
    let schema = registry().schema().clone();
    let mut encoder = Encoder::new(&schema, tick, 0);
    for e in entries {
        encoder.push(e).unwrap();
    }
    encoder.finish()
}

fn rotation() -> Value {
    let q = registry().rotation_quantizer().unwrap();
    Value::Rotation(q.encode(Quat::from_rotation_z(0.5)).unwrap())
}

fn health(v: u32) -> Value {
    Value::Bytes(v.to_le_bytes().to_vec())
}

/// A spawn with a position and a health (no rotation).
fn spawn(id: u64, x: i32, hp: u32) -> Entry {
    Entry {
        kind: EntryKind::Spawn,
        baseline: 0,
        net_id: NetId(id),
        components: vec![(0, Value::Position([x, 0, 0])), (2, health(hp))],
        removed: 0,
    }
}

fn set_hp(id: u64, hp: u32) -> Entry {
    Entry { kind: EntryKind::Update, baseline: 0, net_id: NetId(id), components: vec![(2, health(hp))], removed: 0 }
}

fn set_x(id: u64, x: i32) -> Entry {
    Entry {
        kind: EntryKind::Update,
        baseline: 0,
        net_id: NetId(id),
        components: vec![(0, Value::Position([x, 0, 0]))],
        removed: 0,
    }
}

fn delta_x(id: u64, back: u32, dx: i32) -> Entry {
    Entry {
        kind: EntryKind::Update,
        net_id: NetId(id),
        baseline: back,
        components: vec![(0, Value::Delta(Delta::Position([dx as i64, 0, 0])))],
        removed: 0,
    }
}

fn despawn(id: u64) -> Entry {
    Entry { kind: EntryKind::Despawn, baseline: 0, net_id: NetId(id), components: Vec::new(), removed: 0 }
}

/// A client holding entities 1, 2 and 3 (position, rotation, health), all
/// spawned at tick [`SETUP`].
fn setup() -> (World, Client) {
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    let spawns: Vec<Entry> = (1..=3u64)
        .map(|id| Entry {
            kind: EntryKind::Spawn,
            baseline: 0,
            net_id: NetId(id),
            components: vec![(0, Value::Position([id as i32 * 100, 0, 0])), (1, rotation()), (2, health(id as u32))],
            removed: 0,
        })
        .collect();
    assert!(matches!(client.receive(&mut cw, &packet(SETUP, &spawns)), Ok(Receipt::Applied { .. })));
    (cw, client)
}

/// A local entity's replicated components in the client's world.
type Components = (Option<Vec3>, Option<Quat>, Option<u32>);

/// Everything observable about a client and its world.
#[derive(Debug, PartialEq)]
struct Snapshot {
    held: BTreeMap<NetId, Vec<Option<Value>>>,
    locals: BTreeMap<NetId, Entity>,
    world: BTreeMap<NetId, Components>,
    world_len: u32,
    last_applied: u32,
    ack: (u32, u32),
    samples: BTreeMap<NetId, Option<Vec3>>,
}

fn snapshot(cw: &World, client: &Client) -> Snapshot {
    let held = held(client);
    let locals: BTreeMap<NetId, Entity> = held.keys().map(|id| (*id, client.local_entity(*id).unwrap())).collect();
    let world = locals
        .iter()
        .map(|(id, e)| {
            let p = cw.get::<Position>(*e).ok().map(|p| p.0);
            let r = cw.get::<Rotation>(*e).ok().map(|r| r.0);
            let h = cw.get::<Health>(*e).ok().map(|h| h.0);
            (*id, (p, r, h))
        })
        .collect();
    let samples = (1..=9u64)
        .map(NetId)
        .map(|id| (id, client.interpolation().sample(id, client.last_applied() as f64).map(|s| s.0)))
        .collect();
    let ack = client.ack();
    Snapshot {
        held,
        locals,
        world,
        world_len: cw.len(),
        last_applied: client.last_applied(),
        ack: (ack.newest, ack.previous),
        samples,
    }
}

/// The packet of `entries` is refused and changes nothing; a good packet
/// of the same tick still applies afterwards.
fn assert_refused_whole(entries: &[Entry]) -> ClientError {
    let (mut cw, mut client) = setup();
    let before = snapshot(&cw, &client);
    let refused = client.counters().refused;
    let result = client.receive(&mut cw, &packet(TICK, entries));
    let Err(error) = result else {
        panic!("{entries:?} was not refused: {result:?}; the client now holds {:?}", held(&client));
    };
    assert!(!error.to_string().is_empty());
    assert_eq!(snapshot(&cw, &client), before, "{entries:?} was refused ({error}) but changed the client");
    assert_eq!(client.counters().refused, refused + 1);
    assert_eq!(
        client.receive(&mut cw, &packet(TICK, &[set_hp(1, 77)])),
        Ok(Receipt::Applied { tick: TICK, entries: 1 })
    );
    error
}

#[test]
fn despawn_then_update_in_one_packet_is_refused_whole() {
    // The reported case: the update used to resurrect the entity as a new
    // local entity holding only the updated component.
    let error = assert_refused_whole(&[despawn(1), set_hp(1, 5)]);
    assert_eq!(
        error,
        ClientError::Inconsistent { entry: 1, net_id: NetId(1), problem: Inconsistency::UpdateAfterDespawn }
    );
    assert_eq!(
        error.to_string(),
        "refused packet: entry 1, entity 1: updated after an earlier entry of the packet despawned it"
    );
    // Any component, any distance between the two entries.
    assert_refused_whole(&[despawn(1), set_x(1, 7)]);
    assert_refused_whole(&[despawn(1), delta_x(1, 1, 3)]);
    let error = assert_refused_whole(&[despawn(1), set_hp(2, 9), set_x(3, 1), set_hp(1, 5)]);
    assert_eq!(
        error,
        ClientError::Inconsistent { entry: 3, net_id: NetId(1), problem: Inconsistency::UpdateAfterDespawn }
    );
    // Also when the earlier incarnation was spawned in the same packet, or
    // re-created and despawned again, or never held at all.
    assert_refused_whole(&[spawn(9, 1, 1), despawn(9), set_hp(9, 1)]);
    assert_refused_whole(&[despawn(1), spawn(1, 5, 5), despawn(1), set_hp(1, 2)]);
    assert_refused_whole(&[despawn(4), set_hp(4, 1)]);
}

#[test]
fn a_second_despawn_of_one_entity_in_one_packet_is_refused() {
    let error = assert_refused_whole(&[despawn(1), despawn(1)]);
    assert_eq!(
        error,
        ClientError::Inconsistent { entry: 1, net_id: NetId(1), problem: Inconsistency::DuplicateDespawn }
    );
    assert_refused_whole(&[despawn(1), set_hp(2, 3), despawn(1)]);
    assert_refused_whole(&[despawn(4), despawn(4)]);
}

#[test]
fn a_spawn_of_an_entity_the_packet_already_made_live_is_refused() {
    let error = assert_refused_whole(&[spawn(9, 1, 1), spawn(9, 1, 1)]);
    assert_eq!(error, ClientError::Inconsistent { entry: 1, net_id: NetId(9), problem: Inconsistency::DuplicateSpawn });
    assert_refused_whole(&[spawn(1, 1, 1), spawn(1, 2, 2)]);
    assert_refused_whole(&[set_hp(1, 5), spawn(1, 2, 2)]);
    assert_refused_whole(&[spawn(9, 1, 1), set_hp(9, 2), spawn(9, 3, 3)]);
    assert_refused_whole(&[despawn(1), spawn(1, 5, 5), spawn(1, 5, 5)]);
}

#[test]
fn an_update_of_an_entity_neither_held_nor_spawned_is_refused() {
    assert_eq!(assert_refused_whole(&[set_hp(9, 1)]), ClientError::UnknownEntity(NetId(9)));
    assert_refused_whole(&[set_hp(1, 4), set_x(9, 1)]);
    assert_refused_whole(&[spawn(8, 1, 1), delta_x(9, 1, 1)]);
}

#[test]
fn a_delta_against_an_incarnation_the_packet_despawned_is_refused() {
    // Entity 1 holds a position at tick 10, but the packet despawned that
    // incarnation: the re-created one has no history yet.
    let error = assert_refused_whole(&[despawn(1), spawn(1, 5, 5), delta_x(1, 1, 3)]);
    assert_eq!(error, ClientError::MissingBaseline { net_id: NetId(1), tick: SETUP });
    // A fresh spawn has none either.
    assert_refused_whole(&[spawn(9, 5, 5), delta_x(9, 1, 3)]);
}

#[test]
fn a_bad_entry_after_good_ones_applies_none_of_them() {
    assert_refused_whole(&[set_hp(1, 5), spawn(9, 4, 4), despawn(2), set_x(3, 1), despawn(3), set_hp(3, 1)]);
    assert_refused_whole(&[spawn(9, 4, 4), despawn(1), delta_x(2, 1, 1), set_hp(9, 3), spawn(9, 4, 4)]);
}

#[test]
fn consistent_sequences_are_applied() {
    // Despawn, explicit re-spawn, update: a new local entity with exactly
    // what the spawn and the update carry.
    let (mut cw, mut client) = setup();
    let old = client.local_entity(NetId(1)).unwrap();
    let r = client.receive(&mut cw, &packet(TICK, &[despawn(1), spawn(1, 50, 7), set_hp(1, 8)]));
    assert_eq!(r, Ok(Receipt::Applied { tick: TICK, entries: 3 }));
    let new = client.local_entity(NetId(1)).unwrap();
    assert_ne!(new, old);
    assert!(!cw.contains(old));
    assert_eq!(held(&client)[&NetId(1)], vec![Some(Value::Position([50, 0, 0])), None, Some(health(8))]);
    assert_eq!(cw.get::<Health>(new).unwrap().0, 8);
    assert!(cw.get::<Rotation>(new).is_err());
    // Its history starts at this tick: a delta against it applies, one
    // against the despawned incarnation's tick does not.
    let r = client.receive(&mut cw, &packet(TICK + 1, &[delta_x(1, 1, 5)]));
    assert_eq!(r, Ok(Receipt::Applied { tick: TICK + 1, entries: 1 }));
    assert_eq!(held(&client)[&NetId(1)][0], Some(Value::Position([55, 0, 0])));
    assert!(client.receive(&mut cw, &packet(TICK + 2, &[delta_x(1, 3, 5)])).is_err());

    // Spawn then update of a new entity; spawn then despawn; update then
    // despawn; a despawn of an entity not held (a resend whose first copy
    // was applied, or whose spawn was lost) is a no-op.
    let (mut cw, mut client) = setup();
    let entries = [spawn(9, 1, 1), set_hp(9, 3), spawn(8, 2, 2), despawn(8), set_hp(1, 5), despawn(1), despawn(4)];
    assert_eq!(client.receive(&mut cw, &packet(TICK, &entries)), Ok(Receipt::Applied { tick: TICK, entries: 7 }));
    let ids: BTreeSet<NetId> = held(&client).into_keys().collect();
    assert_eq!(ids, BTreeSet::from([NetId(2), NetId(3), NetId(9)]));
    assert_eq!(held(&client)[&NetId(9)], vec![Some(Value::Position([1, 0, 0])), None, Some(health(3))]);
    assert_eq!(cw.len(), 3);
}

#[test]
fn a_spawn_resent_for_a_held_entity_replaces_its_state_in_the_world_too() {
    // The server resends a spawn until it is acknowledged: the client may
    // hold the entity already. A spawn carries full state, so a component
    // it lacks is gone, from the client's values and from its world.
    let (mut cw, mut client) = setup();
    let local = client.local_entity(NetId(2)).unwrap();
    assert!(cw.get::<Rotation>(local).is_ok());
    assert_eq!(
        client.receive(&mut cw, &packet(TICK, &[spawn(2, 60, 9)])),
        Ok(Receipt::Applied { tick: TICK, entries: 1 })
    );
    assert_eq!(client.local_entity(NetId(2)), Some(local));
    assert_eq!(held(&client)[&NetId(2)], vec![Some(Value::Position([60, 0, 0])), None, Some(health(9))]);
    assert!(cw.get::<Rotation>(local).is_err(), "the world still holds a component the spawn does not carry");
    assert_eq!(cw.get::<Health>(local).unwrap().0, 9);
    // The same incarnation: its position history stays.
    assert!(client.receive(&mut cw, &packet(TICK + 1, &[delta_x(2, 2, 1)])).is_ok());
    assert_eq!(held(&client)[&NetId(2)][0], Some(Value::Position([201, 0, 0])));
}

// A model of the rule, for random entry sequences.

#[derive(Clone, Copy, PartialEq)]
enum Seen {
    Live,
    Dead,
}

/// What the client should hold after `entries` at [`TICK`] on top of
/// [`setup`], or `None` if the packet must be refused.
fn model(entries: &[Entry]) -> Option<BTreeMap<NetId, Vec<Option<Value>>>> {
    let mut held: BTreeMap<NetId, Vec<Option<Value>>> = (1..=3u64)
        .map(|id| {
            (NetId(id), vec![Some(Value::Position([id as i32 * 100, 0, 0])), Some(rotation()), Some(health(id as u32))])
        })
        .collect();
    let mut seen: BTreeMap<NetId, Seen> = BTreeMap::new();
    // Entities whose tick-10 position is still their history.
    let mut history: BTreeSet<NetId> = (1..=3).map(NetId).collect();
    for e in entries {
        let state = seen.get(&e.net_id).copied();
        match e.kind {
            EntryKind::Spawn => {
                if state == Some(Seen::Live) {
                    return None;
                }
                let mut values = vec![None; 3];
                for (i, v) in &e.components {
                    values[*i as usize] = Some(v.clone());
                }
                held.insert(e.net_id, values);
                seen.insert(e.net_id, Seen::Live);
            }
            EntryKind::Update => {
                if state == Some(Seen::Dead) || (state.is_none() && !held.contains_key(&e.net_id)) {
                    return None;
                }
                let values = held.get_mut(&e.net_id)?;
                for (i, v) in &e.components {
                    let v = match v {
                        Value::Delta(Delta::Position(delta)) => {
                            if e.baseline != 1 || !history.contains(&e.net_id) {
                                return None;
                            }
                            let base = e.net_id.0 as i64 * 100;
                            Value::Position([(base + delta[0]) as i32, delta[1] as i32, delta[2] as i32])
                        }
                        v => v.clone(),
                    };
                    values[*i as usize] = Some(v);
                }
                seen.insert(e.net_id, Seen::Live);
            }
            EntryKind::Despawn => {
                if state == Some(Seen::Dead) {
                    return None;
                }
                held.remove(&e.net_id);
                history.remove(&e.net_id);
                seen.insert(e.net_id, Seen::Dead);
            }
        }
    }
    Some(held)
}

fn entry() -> impl Strategy<Value = Entry> {
    (0u8..5, 1u64..=5, -50i32..50, 0u32..100, 1u32..=2).prop_map(|(kind, id, x, hp, back)| match kind {
        0 => spawn(id, x, hp),
        1 => set_hp(id, hp),
        2 => set_x(id, x),
        3 => delta_x(id, back, x),
        _ => despawn(id),
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_entry_sequences_are_applied_whole_or_refused_whole(entries in proptest::collection::vec(entry(), 0..8)) {
        let (mut cw, mut client) = setup();
        let before = snapshot(&cw, &client);
        let result = client.receive(&mut cw, &packet(TICK, &entries));
        match model(&entries) {
            Some(want) => {
                prop_assert_eq!(result, Ok(Receipt::Applied { tick: TICK, entries: entries.len() }));
                prop_assert_eq!(held(&client), want.clone());
                // The world holds exactly those entities, with those values.
                prop_assert_eq!(cw.len() as usize, want.len());
                let q = registry().position_quantizer().unwrap();
                for (id, values) in &want {
                    let local = client.local_entity(*id).unwrap();
                    let p = cw.get::<Position>(local).ok().map(|p| p.0);
                    let h = cw.get::<Health>(local).ok().map(|h| h.0);
                    let want_p = match &values[0] { Some(Value::Position(p)) => Some(q.dequantize(*p)), _ => None };
                    let want_h = match &values[2] { Some(Value::Bytes(b)) => Some(u32::from_le_bytes(b[..4].try_into().unwrap())), _ => None };
                    prop_assert_eq!(p, want_p);
                    prop_assert_eq!(h, want_h);
                    prop_assert_eq!(cw.get::<Rotation>(local).is_ok(), values[1].is_some());
                }
            }
            None => {
                prop_assert!(result.is_err(), "{:?} should be refused, got {:?}", entries, result);
                prop_assert_eq!(snapshot(&cw, &client), before);
            }
        }
    }
}

// The server side of the rule: its packets hold one entry per entity, so a
// client never refuses them. An entity whose despawn was acknowledged while
// it was still queued, and that came back into view before the next packet,
// used to be queued twice: two spawns in one packet.

/// One lockstep tick: update, every packet checked (one entry per entity)
/// and applied, acknowledged.
fn lockstep(server: &mut Server, world: &mut World, cw: &mut World, client: &mut Client) {
    server.update(world).unwrap();
    let Some(bytes) = server.packet(ClientId(1)) else { return };
    let schema = registry().schema().clone();
    let decoded = ecs_replication::codec::decode(bytes, &schema, ecs_replication::codec::Limits::default()).unwrap();
    let ids: BTreeSet<NetId> = decoded.entries.iter().map(|e| e.net_id).collect();
    assert_eq!(
        ids.len(),
        decoded.entries.len(),
        "two entries for one entity at tick {}: {:?}",
        decoded.tick,
        decoded.entries
    );
    client.receive(cw, bytes).unwrap();
    server.receive(ClientId(1), &client.ack().to_bytes()).unwrap();
}

fn place(world: &mut World, e: Entity, x: f32) {
    world.get_mut::<Position>(e).unwrap().0 = Vec3::new(x, 0.0, 0.0);
}

#[test]
fn an_entity_that_leaves_and_reenters_is_sent_once_per_packet() {
    let view = View { center: Vec3::ZERO, radius: 5.0 };

    // Its despawn acknowledged (dropped from the books while still queued),
    // then back in view.
    let mut world = World::new();
    let e = world.spawn((Replicated, Position(Vec3::X), Rotation(Quat::IDENTITY), Health(1)));
    let mut server = Server::new(&mut world, registry(), ServerConfig::default());
    server.add_client(ClientId(1), Some(view)).unwrap();
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    for x in [1.0, 1.0, 10.0, 1.0, 1.0, 10.0, 10.0, 1.0, 2.0] {
        place(&mut world, e, x);
        lockstep(&mut server, &mut world, &mut cw, &mut client);
    }
    assert_in_sync(&server, ClientId(1), &client, &cw, "after the re-entries");

    // Never sent (the budget defers it), out of view and back, then all of
    // it in one packet.
    let mut world = World::new();
    let mut ents = Vec::new();
    for i in 0..40 {
        let p = Vec3::new(i as f32 * 0.1, 0.0, 0.0);
        ents.push(world.spawn((Replicated, Position(p), Rotation(Quat::IDENTITY), Health(i))));
    }
    let config = ServerConfig { budget_bytes: 64, ..ServerConfig::default() };
    let mut server = Server::new(&mut world, registry(), config);
    server.add_client(ClientId(1), Some(view)).unwrap();
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    lockstep(&mut server, &mut world, &mut cw, &mut client);
    for round in 0..4 {
        for (i, e) in ents.iter().enumerate().skip(20) {
            place(&mut world, *e, if round % 2 == 0 { 10.0 } else { i as f32 * 0.1 });
        }
        lockstep(&mut server, &mut world, &mut cw, &mut client);
    }
    // Everything queued now fits one packet.
    server.set_budget_bytes(4000);
    for _ in 0..60 {
        lockstep(&mut server, &mut world, &mut cw, &mut client);
    }
    assert_in_sync(&server, ClientId(1), &client, &cw, "after the re-entries");
    assert_eq!(client.len(), 40);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn hostile_packets_never_panic_and_the_world_matches_the_client(
        packets in proptest::collection::vec(
            (9u32..40, proptest::collection::vec(entry(), 0..8), proptest::collection::vec((any::<usize>(), 0u8..8), 0..3)),
            1..12,
        )
    ) {
        let schema = registry().schema().clone();
        let (mut cw, mut client) = setup();
        for (tick, entries, flips) in packets {
            let mut bytes = packet(tick, &entries);
            for (at, bit) in &flips {
                let i = at % bytes.len();
                bytes[i] ^= 1 << bit;
            }
            ecs_replication::codec::seal(&mut bytes, &schema);
            let before = snapshot(&cw, &client);
            if client.receive(&mut cw, &bytes).is_err() {
                prop_assert_eq!(snapshot(&cw, &client), before);
            }
            // Every held entity is one local entity, and nothing else is.
            prop_assert_eq!(cw.len() as usize, client.len());
            for (id, _) in client.entities() {
                prop_assert!(cw.contains(client.local_entity(id).unwrap()));
            }
        }
    }
}
