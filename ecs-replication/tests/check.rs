//! The check helper: every kind of mismatch is reported, with what the
//! server has and what the client has; a client one round trip behind a
//! moving world matches the server's state at the tick it applied.

mod common;

use common::*;
use ecs_core::{Entity, World};
use ecs_replication::check::{CheckAt, CheckError, CheckOptions, Mismatch, Place, WorldValues, check_client};
use ecs_replication::client::InterpolationConfig;
use ecs_replication::codec::{NetId, Value};
use ecs_replication::prelude::*;
use glam::{Quat, Vec3};

const ID: ClientId = ClientId(1);

struct Pair {
    world: World,
    server: Server,
    entities: Vec<Entity>,
    cw: World,
    client: Client,
}

impl Pair {
    fn new(count: usize) -> Pair {
        let mut world = World::new();
        let entities = (0..count)
            .map(|i| {
                world.spawn((Replicated, Position(Vec3::new(i as f32, 0.0, 0.0)), Rotation(Quat::IDENTITY), Health(7)))
            })
            .collect();
        let server = Server::new(&mut world, registry(), ServerConfig::default());
        let mut cw = World::new();
        let client = Client::new(&mut cw, &registry());
        let mut pair = Pair { world, server, entities, cw, client };
        pair.server.add_client(ID, None).unwrap();
        pair
    }

    /// A server tick; the packet is delivered (and acknowledged) or lost.
    fn tick(&mut self, deliver: bool) {
        self.server.update(&mut self.world).unwrap();
        if let (true, Some(packet)) = (deliver, self.server.packet(ID)) {
            let packet = packet.to_vec();
            self.client.receive(&mut self.cw, &packet).unwrap();
            self.server.receive(ID, &self.client.ack().to_bytes()).unwrap();
        }
    }

    fn check(&self, options: CheckOptions) -> Result<SyncReport, CheckError> {
        check_client(&self.server, ID, &self.client, &self.cw, options)
    }

    fn net(&self, i: usize) -> NetId {
        self.server.net_id(self.entities[i]).unwrap()
    }
}

#[test]
fn every_kind_of_mismatch_is_reported() {
    let mut p = Pair::new(5);
    for _ in 0..3 {
        p.tick(true);
    }
    let report = p.check(CheckOptions::default()).unwrap();
    assert!(report.is_match(), "{report}");
    assert_eq!((report.expected, report.held), (5, 5));
    // Two components per entity and place: 5 entities x 3 components x 2.
    assert_eq!(report.values_compared, 30);

    // On the server, undelivered: entity 0 moves, entity 1 loses its
    // health, entity 2 despawns, a new one spawns.
    p.world.get_mut::<Position>(p.entities[0]).unwrap().0.y = 4.0;
    p.world.remove_one::<Health>(p.entities[1]).unwrap();
    let gone = p.net(2);
    p.world.despawn(p.entities[2]).unwrap();
    let new = p.world.spawn((Replicated, Position(Vec3::splat(9.0))));
    p.tick(false);
    let new = p.server.net_id(new).unwrap();
    // On the client: entity 3's local entity is despawned by hand, and a
    // stray entity carries entity 4's id.
    let local3 = p.client.local_entity(p.net(3)).unwrap();
    p.cw.despawn(local3).unwrap();
    let stray = p.cw.spawn((p.net(4),));

    let report = p.check(CheckOptions::default()).unwrap();
    assert!(!report.is_match());
    let q = registry().position_quantizer().unwrap();
    let (was, now) = (q.quantize(Vec3::ZERO).unwrap(), q.quantize(Vec3::new(0.0, 4.0, 0.0)).unwrap());
    let (n0, n1, n3, n4) = (p.net(0), p.net(1), p.net(3), p.net(4));
    let health = Value::Bytes(7u32.to_le_bytes().to_vec());
    let mut want = vec![
        Mismatch::Value {
            net_id: n0,
            component: 0,
            place: Place::Held,
            expected: Some(Value::Position(now)),
            found: Some(Value::Position(was)),
        },
        Mismatch::Value {
            net_id: n0,
            component: 0,
            place: Place::World,
            expected: Some(Value::Position(now)),
            found: Some(Value::Position(was)),
        },
        Mismatch::Value { net_id: n1, component: 2, place: Place::Held, expected: None, found: Some(health.clone()) },
        Mismatch::Value { net_id: n1, component: 2, place: Place::World, expected: None, found: Some(health) },
        Mismatch::Ghost { net_id: gone },
        Mismatch::NoLocalEntity { net_id: n3, local: local3 },
        Mismatch::StrayEntity { net_id: n4, local: stray },
        Mismatch::Missing { net_id: new },
    ];
    want.sort_by_key(Mismatch::net_id);
    assert_eq!(report.mismatches, want, "{report}");
    assert_eq!((report.expected, report.held), (5, 5));
    assert_eq!(report.entities_off(), 6);
    // The report reads as text too.
    let text = report.to_string();
    assert!(text.contains("8 mismatches on 6 entities") && text.contains("missing"), "{text}");

    // Without the world: only the held state.
    let held_only = p.check(CheckOptions { world: WorldValues::Skip, ..CheckOptions::default() }).unwrap();
    assert_eq!(held_only.mismatches.len(), 4, "{held_only}");
}

#[test]
fn a_client_behind_a_moving_world_matches_the_tick_it_applied() {
    // Packets take two ticks; every entity moves every tick.
    let mut p = Pair::new(20);
    let mut in_flight: std::collections::VecDeque<Vec<u8>> = Default::default();
    for t in 0..40 {
        for (i, e) in p.entities.iter().enumerate() {
            p.world.get_mut::<Position>(*e).unwrap().0.y = (t as f32 * 0.1 + i as f32).sin();
        }
        if t % 7 == 3 {
            // Something comes and goes as well.
            let e = p.world.spawn((Replicated, Position(Vec3::splat(t as f32))));
            p.entities.push(e);
        }
        if t % 11 == 5 {
            let e = p.entities.remove(0);
            p.world.despawn(e).unwrap();
        }
        p.server.update(&mut p.world).unwrap();
        in_flight.push_back(p.server.packet(ID).unwrap().to_vec());
        if in_flight.len() > 2 {
            let packet = in_flight.pop_front().unwrap();
            p.client.receive(&mut p.cw, &packet).unwrap();
            p.server.receive(ID, &p.client.ack().to_bytes()).unwrap();
        }
        if t > 10 {
            let applied = p.check(CheckOptions { at: CheckAt::ClientApplied, ..CheckOptions::default() }).unwrap();
            assert!(applied.is_match(), "tick {t}: {applied}");
            assert_eq!(applied.tick, p.server.tick() - 2);
            let newest = p.check(CheckOptions::default()).unwrap();
            assert!(!newest.is_match(), "tick {t}: two ticks behind a moving world");
        }
    }
}

#[test]
fn what_the_client_renders_itself_is_checked_for_presence() {
    let mut p = Pair::new(3);
    p.client.set_interpolation(Some(InterpolationConfig::default()));
    for _ in 0..3 {
        p.tick(true);
    }
    // An update moves entity 0; interpolation has not rendered it yet.
    p.world.get_mut::<Position>(p.entities[0]).unwrap().0.x += 5.0;
    p.tick(true);
    let report = p.check(CheckOptions::default()).unwrap();
    assert!(report.is_match(), "{report}");
    assert_eq!(report.presence_only, 6, "position and rotation of three entities");
    let exact = p.check(CheckOptions { world: WorldValues::Exact, ..CheckOptions::default() }).unwrap();
    assert_eq!(exact.mismatches.len(), 1, "{exact}");
    assert!(matches!(exact.mismatches[0], Mismatch::Value { component: 0, place: Place::World, .. }));
    // Presence still counts: a rendered component gone from the world is
    // a mismatch.
    let local = p.client.local_entity(p.net(1)).unwrap();
    p.cw.remove_one::<Rotation>(local).unwrap();
    let report = p.check(CheckOptions::default()).unwrap();
    assert_eq!(report.mismatches.len(), 1, "{report}");
}

#[test]
fn checks_that_cannot_be_made_say_why() {
    let mut p = Pair::new(2);
    p.tick(false);
    let applied = CheckOptions { at: CheckAt::ClientApplied, ..CheckOptions::default() };
    assert_eq!(p.check(applied), Err(CheckError::NothingApplied));
    for _ in 0..40 {
        p.tick(true);
    }
    let old = CheckOptions { at: CheckAt::Tick(2), ..CheckOptions::default() };
    assert!(matches!(p.check(old), Err(CheckError::OutsideWindow { tick: 2, window: 32, .. })));
    let future = CheckOptions { at: CheckAt::Tick(p.server.tick() + 1), ..CheckOptions::default() };
    assert!(matches!(p.check(future), Err(CheckError::OutsideWindow { .. })));
    assert_eq!(
        check_client(&p.server, ClientId(9), &p.client, &p.cw, CheckOptions::default()),
        Err(CheckError::UnknownClient(ClientId(9)))
    );
}
