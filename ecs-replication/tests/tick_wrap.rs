//! Network ticks wrap from `u32::MAX` to 1 (0 means "none"). Both ends
//! compare ticks in serial number order, so a session runs through the
//! wrap: the client keeps applying, the server keeps taking
//! acknowledgements, delta baselines and the interpolation buffer keep
//! their order.

mod common;

use common::*;
use ecs_core::World;
use ecs_replication::codec::{Delta, Encoder, Entry, EntryKind, Value};
use ecs_replication::interpolation::InterpolationBuffer;
use ecs_replication::prelude::*;
use glam::{Quat, Vec3};
use proptest::prelude::{ProptestConfig, Strategy, proptest};

fn views() -> Vec<Option<View>> {
    vec![
        None,
        Some(View { center: Vec3::new(-8.0, 0.0, 0.0), radius: 12.0 }),
        Some(View { center: Vec3::new(10.0, 5.0, 0.0), radius: 7.0 }),
    ]
}

fn starting_at(first_tick: u32) -> ServerConfig {
    ServerConfig { first_tick, ..ServerConfig::default() }
}

fn packet(tick: u32, entries: &[Entry]) -> Vec<u8> {
    let schema = registry().schema().clone();
    let mut encoder = Encoder::new(&schema, tick, 0);
    for e in entries {
        encoder.push(e).unwrap();
    }
    encoder.finish()
}

fn at_x(kind: EntryKind, net_id: u64, x: i32) -> Entry {
    Entry { kind, net_id: NetId(net_id), baseline: 0, components: vec![(0, Value::Position([x, 0, 0]))], removed: 0 }
}

#[test]
fn first_tick_is_the_first_update_and_the_tick_wraps_to_one() {
    let mut world = World::new();
    let mut server = Server::new(&mut world, registry(), starting_at(u32::MAX - 1));
    assert_eq!(server.config().first_tick, u32::MAX - 1);
    assert_eq!(server.tick(), u32::MAX - 2);
    let mut ticks = Vec::new();
    for _ in 0..4 {
        server.update(&mut world).unwrap();
        ticks.push(server.tick());
    }
    assert_eq!(ticks, vec![u32::MAX - 1, u32::MAX, 1, 2]);

    // 0 is not a tick: it counts as 1, like the default.
    let mut server = Server::new(&mut world, registry(), starting_at(0));
    assert_eq!(server.config().first_tick, 1);
    server.update(&mut world).unwrap();
    assert_eq!(server.tick(), 1);
}

#[test]
fn the_client_applies_packets_after_tick_u32_max() {
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    let applied = |r| matches!(r, Ok(Receipt::Applied { .. }));
    assert!(applied(client.receive(&mut cw, &packet(u32::MAX - 1, &[at_x(EntryKind::Spawn, 1, 10)]))));
    assert!(applied(client.receive(&mut cw, &packet(u32::MAX, &[at_x(EntryKind::Update, 1, 20)]))));
    // The server's tick after u32::MAX is 1.
    assert_eq!(
        client.receive(&mut cw, &packet(1, &[at_x(EntryKind::Update, 1, 30)])),
        Ok(Receipt::Applied { tick: 1, entries: 1 })
    );
    // A delta against the value of tick u32::MAX, three ticks back from 2
    // in wrapping arithmetic (the server computes `back` the same way).
    let delta = Entry {
        kind: EntryKind::Update,
        net_id: NetId(1),
        baseline: 3,
        components: vec![(0, Value::Delta(Delta::Position([5, 0, 0])))],
        removed: 0,
    };
    assert_eq!(client.receive(&mut cw, &packet(2, &[delta])), Ok(Receipt::Applied { tick: 2, entries: 1 }));
    assert_eq!(held(&client)[&NetId(1)][0], Some(Value::Position([25, 0, 0])));
    assert_eq!(client.last_applied(), 2);

    // Older packets, on either side of the wrap, are stale.
    for tick in [u32::MAX - 1, u32::MAX, 1, 2] {
        assert_eq!(client.receive(&mut cw, &packet(tick, &[])), Ok(Receipt::Stale { tick }));
    }
    assert_eq!(held(&client)[&NetId(1)][0], Some(Value::Position([25, 0, 0])));
    let ack = client.ack();
    assert_eq!(ack.newest, 2);
    assert!(ack.contains(1) && ack.contains(u32::MAX) && ack.contains(u32::MAX - 1));
    assert_eq!(client.counters().stale, 4);
    assert_eq!(client.counters().refused, 0);

    // Newer ones still apply.
    assert!(applied(client.receive(&mut cw, &packet(40, &[at_x(EntryKind::Update, 1, 7)]))));
    assert_eq!(client.last_applied(), 40);
}

#[test]
fn tick_zero_is_refused() {
    // 0 means "none": no server ever sends it, and the client must not
    // take it as its newest tick.
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    assert!(client.receive(&mut cw, &packet(0, &[at_x(EntryKind::Spawn, 1, 10)])).is_err());
    assert!(client.is_empty());
    assert!(!client.has_ack());
    assert!(matches!(client.receive(&mut cw, &packet(u32::MAX, &[])), Ok(Receipt::Applied { .. })));
    assert!(client.receive(&mut cw, &packet(0, &[])).is_err());
    assert_eq!(client.last_applied(), u32::MAX);
}

#[test]
fn the_server_takes_acknowledgements_across_the_wrap() {
    // Lockstep, acknowledgements one tick late: the acknowledgement of
    // u32::MAX reaches the server when its tick is 1.
    let mut world = World::new();
    let mut rng = Rng(3);
    let mut scene = Scene::new(&mut world, &mut rng, 12, 10.0);
    let config = ServerConfig { heartbeat: 1, ..starting_at(u32::MAX - 20) };
    let mut server = Server::new(&mut world, registry(), config);
    let id = ClientId(1);
    server.add_client(id, None).unwrap();
    let mut cw = World::new();
    let mut client = Client::new(&mut cw, &registry());
    let mut late_ack: Option<Ack> = None;
    for step in 0..60 {
        scene.mutate(&mut world, &mut rng, 20);
        if let Some(ack) = late_ack.take() {
            server.receive(id, &ack.to_bytes()).unwrap_or_else(|e| panic!("step {step}: {e}"));
            assert_eq!(server.newest_ack(id), Some(ack.newest), "step {step}");
        }
        server.update(&mut world).unwrap();
        let bytes = server.packet(id).unwrap().to_vec();
        let receipt = client.receive(&mut cw, &bytes);
        assert!(
            matches!(receipt, Ok(Receipt::Applied { tick, .. }) if tick == server.tick()),
            "step {step}: {receipt:?}"
        );
        late_ack = Some(client.ack());
    }
    assert!(server.tick() < 100, "the run crossed the wrap");
    assert_eq!(server.client_stats(id).unwrap().bad_acks, 0);
    // At rest, every acknowledgement settles its work: the books empty.
    for _ in 0..4 {
        if let Some(ack) = late_ack.take() {
            server.receive(id, &ack.to_bytes()).unwrap();
        }
        server.update(&mut world).unwrap();
        client.receive(&mut cw, server.packet(id).unwrap()).unwrap();
        late_ack = Some(client.ack());
    }
    assert_in_sync(&server, id, &client, &cw, "at rest after the wrap");
    assert_eq!(server.client_stats(id).unwrap().pending, 0, "acknowledged work is settled after the wrap");
    // An acknowledgement of a tick not sent yet is still refused.
    let future = Ack { newest: server.tick().wrapping_add(5), previous: 0 };
    assert!(matches!(
        server.receive(id, &future.to_bytes()),
        Err(ecs_replication::server::ServerError::AckFromFuture { .. })
    ));
}

#[test]
fn clean_link_tracks_every_tick_through_the_wrap() {
    let mut run = Run::new(7, &[None], starting_at(u32::MAX - 30), 30);
    run.set_links(LinkConfig::clean(0));
    for _ in 0..60 {
        run.step(true, 40);
        run.step(false, 40);
        run.assert_converged("clean link");
    }
    // One tick behind (the clean link delivers on the next step), past
    // the wrap.
    let (tick, last) = (run.server.tick(), run.clients[0].2.last_applied());
    assert!(tick < 100 && (1..=tick).contains(&last) && tick - last <= 1, "server at {tick}, client at {last}");
}

fn converge_through_the_wrap(seed: u64, first_tick: u32, loss: f64, ticks: usize) {
    let mut run = Run::new(seed, &views(), starting_at(first_tick), 25);
    let chaos = LinkConfig { loss, delay: 2, jitter: 4, duplicate: 0.1, corrupt: 0.05 };
    for round in 0..2 {
        run.set_links(chaos);
        for t in 0..ticks {
            run.step(true, 40);
            if t % 37 == 0 {
                let id = run.clients[2].0;
                let c = run.rng.point(15.0);
                run.server.set_view(id, Some(View { center: c, radius: 7.0 })).unwrap();
            }
        }
        run.set_links(LinkConfig::clean(1));
        for _ in 0..4 {
            run.step(false, 40);
        }
        run.assert_converged(&format!("round {round}: a round trip plus the resend's way after the link cleared"));
        for _ in 0..5 {
            run.step(false, 40);
        }
        run.assert_converged(&format!("round {round}: later"));
    }
    let tick = run.server.tick();
    assert!(tick.wrapping_sub(first_tick) < 10 * ticks as u32 && tick < first_tick, "the run crossed the wrap");
    for (id, _, client) in &run.clients {
        // Heartbeats at rest: the newest applied tick is at most one
        // heartbeat behind, and past the wrap.
        let last = client.last_applied();
        assert!(
            last < first_tick && tick.wrapping_sub(last) <= 40,
            "client {id:?} applied up to {last}, server at {tick}"
        );
        assert_eq!(run.server.client_stats(*id).unwrap().pending, 0);
    }
}

#[test]
fn a_lossy_session_converges_through_the_wrap() {
    // The wrap falls in the lossy phase of the first round.
    converge_through_the_wrap(0xDEAD_BEEF, u32::MAX - 60, 0.3, 150);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    #[test]
    fn sessions_starting_anywhere_near_the_wrap_converge(seed in 1u64.., before in 0u32..200, loss in (0u32..=500_000).prop_map(|v| f64::from(v) / 1e6)) {
        converge_through_the_wrap(seed, u32::MAX - before, loss, 120);
    }
}

#[test]
fn a_client_behind_the_ring_across_the_wrap_gets_full_state() {
    let mut run = Run::new(5, &[None], starting_at(u32::MAX - 10), 20);
    run.set_links(LinkConfig::clean(1));
    for _ in 0..5 {
        run.step(true, 30);
    }
    // Acknowledgements stop for longer than the ring, across the wrap.
    let id = run.clients[0].0;
    run.net.set_links(id, LinkConfig::clean(1), LinkConfig { loss: 1.0, ..LinkConfig::clean(1) });
    for _ in 0..40 {
        run.step(true, 30);
    }
    assert!(run.server.tick() < 100);
    assert_eq!(run.server.client_stats(id).unwrap().full_resyncs, 1);
    run.set_links(LinkConfig::clean(1));
    for _ in 0..3 {
        run.step(false, 30);
    }
    run.assert_converged("after full state");
}

#[test]
fn a_client_whose_first_acknowledgements_are_lost_converges_across_the_wrap() {
    // "No acknowledgement yet" is not a tick. Such a client still has all
    // its spawns pending (no full state needed); once its acknowledgements
    // get through, after the wrap, it settles.
    let mut run = Run::new(6, &[None], starting_at(u32::MAX - 20), 20);
    let id = run.clients[0].0;
    run.net.set_links(id, LinkConfig::clean(1), LinkConfig { loss: 1.0, ..LinkConfig::clean(1) });
    for _ in 0..40 {
        run.step(true, 30);
    }
    assert_eq!(run.server.newest_ack(id), Some(0));
    assert_eq!(run.server.client_stats(id).unwrap().full_resyncs, 0);
    run.set_links(LinkConfig::clean(1));
    for _ in 0..3 {
        run.step(false, 30);
    }
    run.assert_converged("after the acknowledgements got through");
    for _ in 0..3 {
        run.step(false, 30);
    }
    assert_eq!(run.server.client_stats(id).unwrap().pending, 0);
}

#[test]
fn interpolation_keeps_order_across_the_wrap() {
    let mut buffer = InterpolationBuffer::new(8);
    let at = |x: f32| Vec3::new(x, 0.0, 0.0);
    buffer.push(NetId(1), u32::MAX - 1, at(0.0), Quat::IDENTITY);
    buffer.push(NetId(1), u32::MAX, at(1.0), Quat::IDENTITY);
    // The tick after u32::MAX is 1 (0 is skipped): two ticks on.
    buffer.push(NetId(1), 1, at(3.0), Quat::IDENTITY);
    buffer.push(NetId(1), 2, at(4.0), Quat::IDENTITY);
    // Older than the newest: ignored.
    buffer.push(NetId(1), u32::MAX, at(100.0), Quat::IDENTITY);
    buffer.push(NetId(1), 2, at(100.0), Quat::IDENTITY);
    let x = |tick: f64| buffer.sample(NetId(1), tick).unwrap().0.x;
    assert_eq!(x(2.0), 4.0);
    assert_eq!(x(1.0), 3.0);
    assert!((x(1.5) - 3.5).abs() < 1e-5);
    assert_eq!(x(u32::MAX as f64), 1.0);
    assert!((x(u32::MAX as f64 - 0.5) - 0.5).abs() < 1e-5);
    // A render tick computed as `last_applied - 2.5` with the newest at 1
    // is -1.5: taken modulo 2^32, that is u32::MAX - 0.5.
    assert!((x(-1.5) - 0.5).abs() < 1e-5);
    // Halfway between u32::MAX and 1, the skipped tick 0.
    assert!((x(0.0) - 2.0).abs() < 1e-5);
    assert!((x(u32::MAX as f64 + 1.0) - 2.0).abs() < 1e-5);
    // Before the oldest: the oldest; after the newest: the newest.
    assert_eq!(x(u32::MAX as f64 - 5.0), 0.0);
    assert_eq!(x(50.0), 4.0);
    // Hostile render ticks are no panic.
    for t in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -1e300] {
        let _ = buffer.sample(NetId(1), t);
    }
}
