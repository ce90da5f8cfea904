//! Convergence under a hostile link, interest, budget and fallbacks.

mod common;

use std::collections::BTreeSet;

use common::*;
use ecs_core::{Component, World};
use ecs_replication::codec::{EntryKind, Limits, decode};
use ecs_replication::prelude::*;
use glam::Vec3;
use proptest::prelude::{ProptestConfig, Strategy, proptest};

fn views() -> Vec<Option<View>> {
    vec![
        None,
        Some(View { center: Vec3::new(-8.0, 0.0, 0.0), radius: 12.0 }),
        Some(View { center: Vec3::new(10.0, 5.0, 0.0), radius: 7.0 }),
    ]
}

fn converge_after_chaos(seed: u64, loss: f64, ticks: usize) {
    let mut run = Run::new(seed, &views(), ServerConfig::default(), 25);
    run.set_links(LinkConfig { loss, delay: 2, jitter: 4, duplicate: 0.1, corrupt: 0.05 });
    for t in 0..ticks {
        run.step(true, 40);
        if t % 37 == 0 {
            // Views move too.
            let id = run.clients[2].0;
            let c = run.rng.point(15.0);
            run.server.set_view(id, Some(View { center: c, radius: 7.0 })).unwrap();
        }
    }
    // Clean link: one tick each way. An entry is not resent while its
    // packet's fate is unknown, so the last loss is learned a round trip
    // after the packet that followed it: the state must match within
    // that round trip, the resend's way and one tick, and stay matched.
    run.set_links(LinkConfig::clean(1));
    for _ in 0..4 {
        run.step(false, 40);
    }
    run.assert_converged("a round trip plus the resend's way after the link cleared");
    for _ in 0..5 {
        run.step(false, 40);
    }
    run.assert_converged("later");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    #[test]
    fn clients_converge_after_loss_reorder_duplication_and_corruption(seed in 1u64.., loss in (0u32..=500_000).prop_map(|v| f64::from(v) / 1e6)) {
        converge_after_chaos(seed, loss, 150);
    }
}

#[test]
fn half_the_packets_lost_still_converges() {
    converge_after_chaos(0xDEAD_BEEF, 0.5, 250);
}

#[test]
fn clean_link_tracks_every_tick() {
    // With a clean link and the world changing every tick, the client is
    // exactly one tick behind: after each step it holds the state of the
    // previous server tick.
    let mut run = Run::new(7, &[None], ServerConfig::default(), 30);
    run.set_links(LinkConfig::clean(0));
    for _ in 0..60 {
        run.step(true, 40);
        run.step(false, 40);
        run.assert_converged("clean link");
    }
}

#[test]
fn small_budget_defers_in_priority_order_and_converges() {
    // Catch-up off: the budget is the ceiling.
    let config = ServerConfig { budget_bytes: 200, catch_up_budget_bytes: 0, ..ServerConfig::default() };
    let mut run = Run::new(11, &[None], config, 120);
    run.set_links(LinkConfig::clean(1));
    let mut largest = 0;
    for _ in 0..10 {
        largest = largest.max(run.step(true, 150));
    }
    let stats = run.server.client_stats(run.clients[0].0).unwrap();
    assert!(stats.entries_deferred > 0, "the budget should have deferred work");
    assert!(largest <= 200);
    for _ in 0..60 {
        run.step(false, 150);
    }
    run.assert_converged("after the backlog drained");
}

#[test]
fn a_client_behind_the_ring_gets_full_state() {
    let mut run = Run::new(5, &[None], ServerConfig::default(), 20);
    run.set_links(LinkConfig::clean(1));
    for _ in 0..5 {
        run.step(true, 30);
    }
    // Acks stop for longer than the ring.
    let id = run.clients[0].0;
    run.net.set_links(id, LinkConfig::clean(1), LinkConfig { loss: 1.0, ..LinkConfig::clean(1) });
    for _ in 0..40 {
        run.step(true, 30);
    }
    assert_eq!(run.server.client_stats(id).unwrap().full_resyncs, 1);
    run.set_links(LinkConfig::clean(1));
    for _ in 0..3 {
        run.step(false, 30);
    }
    run.assert_converged("after full state");
}

#[test]
fn clients_cannot_change_server_state() {
    let mut run = Run::new(3, &[None], ServerConfig::default(), 10);
    run.set_links(LinkConfig::clean(0));
    for _ in 0..3 {
        run.step(true, 20);
    }
    let id = run.clients[0].0;
    let before: Vec<_> = expected(&run.server, id).into_iter().collect();
    // Garbage, truncated acks, acks from the future, unknown clients.
    let mut rng = Rng(99);
    for len in 0..64 {
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        assert!(run.server.receive(id, &bytes).is_err());
    }
    let future = Ack { newest: run.server.tick() + 5, previous: u32::MAX };
    assert!(run.server.receive(id, &future.to_bytes()).is_err());
    assert!(run.server.receive(ClientId(999), &Ack { newest: 1, previous: 0 }.to_bytes()).is_err());
    assert_eq!(run.server.client_stats(id).unwrap().bad_acks, 65);
    let after: Vec<_> = expected(&run.server, id).into_iter().collect();
    assert_eq!(before, after);
    // The stream still works.
    for _ in 0..3 {
        run.step(false, 20);
    }
    run.assert_converged("after hostile acks");
}

#[test]
fn old_and_duplicate_packets_are_ignored() {
    let mut world = World::new();
    let mut rng = Rng(1);
    let mut scene = Scene::new(&mut world, &mut rng, 5, 10.0);
    let mut server = Server::new(&mut world, registry(), ServerConfig::default());
    server.add_client(ClientId(1), None).unwrap();
    let mut packets = Vec::new();
    for _ in 0..3 {
        scene.mutate(&mut world, &mut rng, 10);
        server.update(&mut world).unwrap();
        packets.push(server.packet(ClientId(1)).unwrap().to_vec());
    }
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    assert!(matches!(client.receive(&mut cw, &packets[0]), Ok(Receipt::Applied { tick: 1, .. })));
    assert!(matches!(client.receive(&mut cw, &packets[2]), Ok(Receipt::Applied { tick: 3, .. })));
    assert_eq!(client.receive(&mut cw, &packets[1]), Ok(Receipt::Stale { tick: 2 }));
    assert_eq!(client.receive(&mut cw, &packets[2]), Ok(Receipt::Stale { tick: 3 }));
    let ack = client.ack();
    assert_eq!(ack.newest, 3);
    assert!(ack.contains(1) && !ack.contains(2));
    assert_eq!(client.counters().stale, 2);
    // A corrupted packet is refused whole.
    let mut bad = packets[2].clone();
    bad[9] ^= 4;
    assert!(client.receive(&mut cw, &bad).is_err());
}

#[test]
fn entities_outside_the_radius_never_reach_the_stream() {
    // Entities circle the edge of a client's view; every packet is decoded
    // and each spawn or update checked against the server's positions.
    let mut world = World::new();
    let mut ents = Vec::new();
    for i in 0..40 {
        let angle = i as f32 * 0.3;
        let r = 4.0 + (i % 5) as f32;
        let p = Vec3::new(angle.cos() * r, angle.sin() * r, 0.0);
        ents.push((world.spawn((Replicated, Position(p), Rotation(glam::Quat::IDENTITY), Health(0))), r, angle));
    }
    let mut server = Server::new(&mut world, registry(), ServerConfig::default());
    let view = View { center: Vec3::ZERO, radius: 6.0 };
    server.add_client(ClientId(1), Some(view)).unwrap();
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    let schema = registry().schema().clone();
    let (mut inside_seen, mut outside_existing) = (BTreeSet::new(), BTreeSet::new());
    for t in 0..120 {
        for (e, r, angle) in &mut ents {
            *angle += 0.05;
            let radius = *r + (t as f32 * 0.1 + *angle).sin() * 1.5;
            world.get_mut::<Position>(*e).unwrap().0 = Vec3::new(angle.cos() * radius, angle.sin() * radius, 0.0);
        }
        if t == 60 {
            // A moved view takes a full radius query on a rebuilt grid.
            server.set_view(ClientId(1), Some(View { center: Vec3::new(1.5, 0.0, 0.0), radius: 6.0 })).unwrap();
        }
        server.update(&mut world).unwrap();
        // A fixed view is kept up to date from the moved entities alone.
        assert_eq!(server.tick_stats().grid_rebuilt, t == 0 || t == 60, "tick {t}");
        let packet = server.packet(ClientId(1)).unwrap().to_vec();
        for entry in decode(&packet, &schema, Limits::default()).unwrap().entries {
            if entry.kind != EntryKind::Despawn {
                assert!(server.in_interest(ClientId(1), entry.net_id), "entity {} outside the view", entry.net_id);
                inside_seen.insert(entry.net_id);
            }
        }
        for (net, _, _) in server.entities() {
            if !server.in_interest(ClientId(1), net) {
                outside_existing.insert(net);
            }
        }
        client.receive(&mut cw, &packet).unwrap();
        server.receive(ClientId(1), &client.ack().to_bytes()).unwrap();
        // What the client holds is inside the view (one tick behind at most:
        // the client holds exactly what the latest packet left it).
        for (net, _) in client.entities() {
            assert!(server.in_interest(ClientId(1), net), "client holds {net} outside its view");
        }
    }
    // The scene really crossed the edge both ways.
    assert!(!inside_seen.is_empty() && !outside_existing.is_empty());
}

#[test]
fn at_rest_only_heartbeats_go_out() {
    let mut run = Run::new(9, &[None], ServerConfig::default(), 10);
    run.set_links(LinkConfig::clean(1));
    for _ in 0..10 {
        run.step(false, 20);
    }
    let id = run.clients[0].0;
    let before = run.server.client_stats(id).unwrap().packets;
    for _ in 0..90 {
        run.step(false, 20);
    }
    let sent = run.server.client_stats(id).unwrap().packets - before;
    assert!((3..=4).contains(&sent), "{sent} packets in 90 ticks at rest");
    run.assert_converged("at rest");
    // At rest the change scan skips every chunk from its chunk tick.
    let scan = run.server.tick_stats();
    assert!(scan.chunks_total > 0);
    assert_eq!(scan.chunks_skipped, scan.chunks_total, "at rest: every chunk skipped");
    // One change goes out at once.
    run.scene.mutate(&mut run.world, &mut run.rng, 20);
    run.step(false, 20);
    assert!(run.server.packet(id).is_some());
    let scan = run.server.tick_stats();
    assert!(scan.chunks_skipped < scan.chunks_total, "the changed rows' chunks were visited");
}

#[derive(Component, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Big([u8; 1024]);

#[test]
fn an_entry_larger_than_the_budget_still_arrives() {
    let registry = || Registry::new().pod::<Big>("big").unwrap();
    let mut world = World::new();
    for i in 0..3u8 {
        world.spawn((Replicated, Big([i; 1024])));
    }
    let config = ServerConfig { budget_bytes: 200, ..ServerConfig::default() };
    let mut server = Server::new(&mut world, registry(), config);
    server.add_client(ClientId(1), None).unwrap();
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    for _ in 0..5 {
        server.update(&mut world).unwrap();
        if let Some(packet) = server.packet(ClientId(1)) {
            let packet = packet.to_vec();
            client.receive(&mut cw, &packet).unwrap();
            server.receive(ClientId(1), &client.ack().to_bytes()).unwrap();
        }
    }
    assert_eq!(client.len(), 3);
    let mut values: Vec<u8> = client
        .entities()
        .map(|(_, v)| match &v[0] {
            Some(ecs_replication::codec::Value::Bytes(b)) => b[0],
            _ => 255,
        })
        .collect();
    values.sort();
    assert_eq!(values, vec![0, 1, 2]);
}

#[test]
fn every_component_type_is_delta_coded() {
    use ecs_replication::codec::Value;
    let mut run = Run::new(21, &[None], ServerConfig::default(), 30);
    run.set_links(LinkConfig { loss: 0.1, delay: 2, jitter: 2, duplicate: 0.0, corrupt: 0.0 });
    let schema = run.server.registry().schema().clone();
    let mut deltas = [0usize; 3];
    for _ in 0..300 {
        run.step(true, 40);
        for (_, packet) in run.server.packets() {
            for e in decode(packet, &schema, Limits::default()).unwrap().entries {
                for (i, v) in &e.components {
                    if matches!(v, Value::Delta(_)) {
                        deltas[*i as usize] += 1;
                    }
                }
            }
        }
    }
    assert!(deltas.iter().all(|d| *d > 20), "deltas per component (position, rotation, health): {deltas:?}");
    run.set_links(LinkConfig::clean(1));
    for _ in 0..4 {
        run.step(false, 40);
    }
    run.assert_converged("after delta-coded updates of every type");
}
