//! Prediction and rollback end to end: a client predicts its player ahead
//! of the server with its own inputs; the server's snapshots confirm or
//! correct it.

mod common;

use common::Position;
use common::game::*;
use ecs_core::World;
use ecs_replication::codec::Value;
use ecs_replication::prelude::*;
use ecs_replication::session::{ClientSessionConfig, PlayerInput};
use glam::Vec3;

fn held_position(game: &Game, client: usize, net: ecs_replication::codec::NetId) -> Option<Vec3> {
    let q = registry().position_quantizer().unwrap();
    let (_, _, session) = &game.clients[client];
    let values = session.client().entities().find(|(n, _)| *n == net)?.1;
    match &values[0] {
        Some(Value::Position(p)) => Some(q.dequantize(*p)),
        _ => None,
    }
}

#[test]
fn the_prediction_matches_the_server_under_loss_and_jitter() {
    // 100 ms round trip (3 ticks each way), 1 tick (17 ms) of jitter, 5 %
    // loss and 2 % duplication both ways: inputs arrive in time (three
    // repeats each), so the prediction is confirmed on >= 99 % of ticks.
    let link = LinkConfig { loss: 0.05, delay: 3, jitter: 1, duplicate: 0.02, corrupt: 0.0 };
    let mut game = Game::new(2, link, ClientSessionConfig::default());
    for _ in 0..3600 {
        game.step();
    }
    for (_, _, session) in &game.clients {
        let stats = session.prediction_stats();
        // Two snapshots arriving in one frame are one comparison.
        assert!(stats.comparisons > 2400, "{stats:?}");
        let share = 1.0 - stats.mispredictions as f64 / stats.comparisons as f64;
        assert!(share >= 0.99, "the prediction matched on {share:.4} of compared ticks: {stats:?}");
        assert_eq!(stats.rollbacks, stats.mispredictions);
    }
    // The link clears: within a round trip the predicted world equals the
    // server's (the players as of the confirmed tick; the movers as held).
    game.set_links(LinkConfig::clean(3));
    for _ in 0..60 {
        game.step();
    }
    let before: Vec<_> = game.clients.iter().map(|(_, _, s)| s.prediction_stats()).collect();
    for _ in 0..12 {
        game.step();
    }
    for (i, (id, cw, session)) in game.clients.iter().enumerate() {
        let stats = session.prediction_stats();
        assert_eq!(stats.mispredictions, before[i].mispredictions, "no misprediction on a clean link");
        // Every server entity is there with the server's values as of the
        // tick the client applied, and nothing else (the predicted and
        // interpolated components of the world are the client's own:
        // checked for presence).
        let at = CheckOptions { at: CheckAt::ClientApplied, ..CheckOptions::default() };
        let report = check_client(game.server.server(), *id, session.client(), cw, at).unwrap();
        assert!(report.is_match(), "{report}");
        assert_eq!(report.expected, game.server.server().entities().count());
        assert_eq!(cw.len() as usize, report.held);
    }
    // The players stop: within a round trip the predicted world shows every
    // player where the server has it, its own (predicted) and the others
    // (interpolated).
    let stop = game.clients.iter().map(|(_, _, s)| s.clock().tick()).max().unwrap() + 1;
    game.stop_at = Some(stop);
    // A round trip (6 ticks) and the client's lead, plus the interpolation
    // delay for the other players.
    for _ in 0..20 {
        game.step();
    }
    for (_, cw, session) in &game.clients {
        for (p, player) in game.players.iter().enumerate() {
            let net = game.server.server().net_id(*player).unwrap();
            let local = session.client().local_entity(net).unwrap();
            assert_eq!(cw.get::<Position>(local).unwrap().0, game.server_position(p), "player {p}");
        }
    }
}

#[test]
fn a_server_side_correction_is_rolled_back_and_re_simulated() {
    let mut game = Game::new(1, LinkConfig::clean(3), ClientSessionConfig::default());
    for _ in 0..120 {
        game.step();
    }
    assert_eq!(game.clients[0].2.prediction_stats().mispredictions, 0, "clean link, no misprediction");
    // The server moves the player by hand (a knock-back the client cannot
    // foresee).
    let player = game.players[0];
    game.world.get_mut::<Position>(player).unwrap().0 += Vec3::new(3.0, -2.0, 0.0);
    let net = game.server.server().net_id(player).unwrap();
    let mut corrected = false;
    for _ in 0..20 {
        game.step();
        if game.clients[0].2.prediction_stats().rollbacks > 0 {
            corrected = true;
            break;
        }
    }
    assert!(corrected, "the correction was never seen");
    // The client's state now equals a direct simulation from the server's
    // state at the corrected tick with the client's inputs since.
    let (_, cw, session) = &game.clients[0];
    let confirmed = session.client().predicted().next().unwrap().confirmed_tick;
    let start = held_position(&game, 0, net).unwrap();
    let mut direct = World::new();
    let e = direct.spawn((Position(start), PlayerInput(Move::default())));
    let mut tick = confirmed;
    let now = session.clock().tick();
    while tick != now {
        tick = ecs_replication::tick::next_tick(tick);
        direct.get_mut::<PlayerInput<Move>>(e).unwrap().0 = *session.input(tick).unwrap();
        simulate(&mut direct);
    }
    let local = session.client().local_entity(net).unwrap();
    assert_eq!(cw.get::<Position>(local).unwrap().0, direct.get::<Position>(e).unwrap().0);
    let stats = session.prediction_stats();
    assert_eq!(stats.rollbacks, 1);
    assert!(stats.resimulated_ticks >= 3, "{stats:?}");
    // And it stays right: no further misprediction.
    for _ in 0..60 {
        game.step();
    }
    assert_eq!(game.clients[0].2.prediction_stats().mispredictions, 1);
}

#[test]
fn an_unpredicted_client_shows_the_server_state() {
    let config = ClientSessionConfig { predict: false, interpolation: None, ..ClientSessionConfig::default() };
    let mut game = Game::new(1, LinkConfig::clean(2), config);
    for _ in 0..200 {
        game.step();
    }
    let (_, cw, session) = &game.clients[0];
    assert_eq!(session.prediction_stats().comparisons, 0);
    let net = game.server.server().net_id(game.players[0]).unwrap();
    let local = session.client().local_entity(net).unwrap();
    assert!(!session.client().is_predicted(net));
    assert_eq!(Some(cw.get::<Position>(local).unwrap().0), held_position(&game, 0, net));
}
