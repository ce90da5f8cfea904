//! Entity references inside replicated components are mapped to the
//! client's entities; an unknown reference is deferred, never a wrong
//! entity.

mod common;

use common::Position;
use ecs_core::{Component, Entity, World};
use ecs_replication::codec::{BytesDelta, Encoder, Entry, EntryKind, FieldCodec, NetId, Value};
use ecs_replication::prelude::*;
use ecs_replication::quantize::QuantizeError;
use ecs_replication::registry::{AsEntity, ComponentCodec, MapEntities, NO_ENTITY};
use glam::Vec3;

#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Target(Entity);

impl AsEntity for Target {
    fn entity(&self) -> Entity {
        self.0
    }
    fn from_entity(entity: Entity) -> Self {
        Target(entity)
    }
}

/// Several references in one component, with a codec of its own.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
struct Squad {
    leader: Entity,
    wingmen: [Entity; 2],
}

impl MapEntities for Squad {
    fn map_entities(&mut self, map: &mut dyn FnMut(Entity) -> Entity) {
        self.leader = map(self.leader);
        for w in &mut self.wingmen {
            *w = map(*w);
        }
    }
}

struct SquadCodec;

impl ComponentCodec<Squad> for SquadCodec {
    fn field(&self) -> FieldCodec {
        FieldCodec::Bytes(24, BytesDelta::Xor)
    }
    fn encode(&self, value: &Squad) -> Result<Value, QuantizeError> {
        let mut out = Vec::with_capacity(24);
        for e in [value.leader, value.wingmen[0], value.wingmen[1]] {
            out.extend_from_slice(&e.to_bits().to_le_bytes());
        }
        Ok(Value::Bytes(out))
    }
    fn decode(&self, value: &Value) -> Option<Squad> {
        let Value::Bytes(b) = value else { return None };
        let e = |i: usize| Some(Entity::from_bits(u64::from_le_bytes(b.get(8 * i..8 * i + 8)?.try_into().ok()?)));
        Some(Squad { leader: e(0)?, wingmen: [e(1)?, e(2)?] })
    }
}

fn registry() -> Registry {
    Registry::new()
        .position::<Position>("position", 0.01, 20)
        .unwrap()
        .entity_ref::<Target>("target")
        .unwrap()
        .mapped::<Squad, SquadCodec>("squad", SquadCodec)
        .unwrap()
}

struct Pair {
    world: World,
    server: Server,
    client_world: World,
    client: Client,
}

impl Pair {
    fn new(view: Option<View>) -> Pair {
        let mut world = World::new();
        let server = Server::new(&mut world, registry(), ServerConfig::default());
        let mut client_world = World::new();
        let client = Client::new(&mut client_world, &registry());
        let mut pair = Pair { world, server, client_world, client };
        pair.server.add_client(ClientId(1), view).unwrap();
        pair
    }

    fn tick(&mut self) {
        self.server.update(&mut self.world).unwrap();
        if let Some(packet) = self.server.packet(ClientId(1)) {
            self.client.receive(&mut self.client_world, packet).unwrap();
        }
        if self.client.has_ack() {
            self.server.receive(ClientId(1), &self.client.ack().to_bytes()).unwrap();
        }
    }

    fn local(&self, server_entity: Entity) -> Entity {
        self.client.local_entity(self.server.net_id(server_entity).unwrap()).unwrap()
    }
}

#[test]
fn references_become_the_clients_entities() {
    let mut p = Pair::new(None);
    // The referring entity spawns first (lower network id): its reference
    // to the later one resolves at the end of the same packet.
    let hunter = p.world.spawn((Replicated, Position(Vec3::ZERO)));
    let prey = p.world.spawn((Replicated, Position(Vec3::X)));
    let bystander = p.world.spawn((Replicated, Position(Vec3::Y)));
    let unreplicated = p.world.spawn((Position(Vec3::Z),));
    p.world.insert_one(hunter, Target(prey)).unwrap();
    p.world.insert_one(bystander, Target(unreplicated)).unwrap();
    p.world.insert_one(prey, Squad { leader: hunter, wingmen: [bystander, prey] }).unwrap();
    p.tick();
    let (lh, lp, lb) = (p.local(hunter), p.local(prey), p.local(bystander));
    assert_eq!(p.client_world.get::<Target>(lh).unwrap().0, lp);
    assert_eq!(p.client_world.get::<Squad>(lp).unwrap(), &Squad { leader: lh, wingmen: [lb, lp] });
    // A reference to an entity that is not replicated names nothing.
    assert_eq!(p.client_world.get::<Target>(lb).unwrap().0, NO_ENTITY);
    assert_eq!(p.client.counters().deferred, 0);
    // Retargeting is an update like any other (XOR delta of the id).
    p.world.get_mut::<Target>(hunter).unwrap().0 = bystander;
    p.tick();
    assert_eq!(p.client_world.get::<Target>(lh).unwrap().0, lb);
    // The target despawns: the client's reference is a stale handle, never
    // another entity.
    p.world.despawn(bystander).unwrap();
    p.tick();
    assert!(!p.client_world.contains(lb));
    assert_eq!(p.client_world.get::<Target>(lh).unwrap().0, lb);
}

#[test]
fn a_reference_outside_the_interest_waits_for_its_target() {
    let view = View { center: Vec3::ZERO, radius: 5.0 };
    let mut p = Pair::new(Some(view));
    let hunter = p.world.spawn((Replicated, Position(Vec3::ZERO)));
    let prey = p.world.spawn((Replicated, Position(Vec3::new(50.0, 0.0, 0.0))));
    p.world.insert_one(hunter, Target(prey)).unwrap();
    p.tick();
    let lh = p.local(hunter);
    assert!(p.client.local_entity(p.server.net_id(prey).unwrap()).is_none());
    // Held back, not written with a wrong entity.
    assert!(p.client_world.get::<Target>(lh).is_err());
    assert_eq!(p.client.counters().deferred, 1);
    // The prey walks into view: the reference resolves.
    p.world.get_mut::<Position>(prey).unwrap().0 = Vec3::new(2.0, 0.0, 0.0);
    p.tick();
    assert_eq!(p.client_world.get::<Target>(lh).unwrap().0, p.local(prey));
    assert_eq!(p.client.counters().deferred, 0);
}

#[test]
fn a_hostile_reference_is_never_a_wrong_entity() {
    let reg = registry();
    let schema = reg.schema().clone();
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &reg);
    let spawn = |net: u64, target: Option<u64>| Entry {
        kind: EntryKind::Spawn,
        net_id: NetId(net),
        baseline: 0,
        components: match target {
            Some(t) => vec![(0, Value::Position([0; 3])), (1, Value::Bytes(t.to_le_bytes().to_vec()))],
            None => vec![(0, Value::Position([0; 3]))],
        },
        removed: 0,
    };
    let packet = |tick, entries: &[Entry]| {
        let mut enc = Encoder::new(&schema, tick, 0);
        for e in entries {
            enc.push(e).unwrap();
        }
        enc.finish()
    };
    // Entity 1 targets 7, which does not exist; entities 2..=6 do.
    let entries: Vec<Entry> = std::iter::once(spawn(1, Some(7))).chain((2..=6).map(|n| spawn(n, None))).collect();
    client.receive(&mut cw, &packet(1, &entries)).unwrap();
    let l1 = client.local_entity(NetId(1)).unwrap();
    assert!(cw.get::<Target>(l1).is_err());
    assert_eq!(client.counters().deferred, 1);
    // A garbage id (past every id ever given out): still deferred.
    client.receive(&mut cw, &packet(2, &[Entry { kind: EntryKind::Update, ..spawn(1, Some(u64::MAX)) }])).unwrap();
    assert!(cw.get::<Target>(l1).is_err());
    // Retargeted at 7, and 7 arrives: now it resolves, to 7's entity.
    client.receive(&mut cw, &packet(3, &[Entry { kind: EntryKind::Update, ..spawn(1, Some(7)) }])).unwrap();
    client.receive(&mut cw, &packet(4, &[spawn(7, None)])).unwrap();
    assert_eq!(cw.get::<Target>(l1).unwrap().0, client.local_entity(NetId(7)).unwrap());
    assert_eq!(client.counters().deferred, 0);
}
