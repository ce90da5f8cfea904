//! Interpolation applied: remote entities are rendered in the world at a
//! tick behind the server, smoothly under loss, extrapolated for at most a
//! few ticks when snapshots stop, and left alone once at rest.

mod common;

use common::Position;
use common::game::*;
use ecs_replication::prelude::*;
use ecs_replication::session::ClientSessionConfig;

/// The server's x of mover 0 at each tick, and the client's rendered x and
/// render tick at each frame.
fn track(game: &mut Game, frames: usize, server_x: &mut Vec<(u32, f32)>, rendered: &mut Vec<(f64, f32)>) {
    for _ in 0..frames {
        game.step();
        // The first entity spawned is mover 0.
        let mover = game.server.server().entities().map(|(n, e, _)| (n, e)).min().unwrap();
        server_x.push((game.server.server().tick(), game.world.get::<Position>(mover.1).unwrap().0.x));
        let (_, cw, session) = &game.clients[0];
        if let (Some(local), Some(r)) =
            (session.client().local_entity(mover.0), session.clock().interpolation_tick(2.0))
        {
            rendered.push((r, cw.get::<Position>(local).unwrap().0.x));
        }
    }
}

fn server_x_at(server_x: &[(u32, f32)], tick: f64) -> Option<f32> {
    let lo = tick.floor() as u32;
    let a = server_x.iter().find(|(t, _)| *t == lo)?.1;
    let b = server_x.iter().find(|(t, _)| *t == lo + 1)?.1;
    Some(a + (b - a) * (tick - lo as f64) as f32)
}

#[test]
fn remote_entities_render_smoothly_behind_the_server_under_loss() {
    let link = LinkConfig { loss: 0.05, delay: 3, jitter: 1, duplicate: 0.0, corrupt: 0.0 };
    let mut game = Game::new(1, link, ClientSessionConfig::default());
    let (mut server_x, mut rendered) = (Vec::new(), Vec::new());
    track(&mut game, 900, &mut server_x, &mut rendered);
    let settled = &rendered[120..];
    let mut close = 0;
    for (r, x) in settled {
        // The movers bounce at +-20: near a bounce, interpolation cuts the
        // corner; everywhere else it is on the server's path.
        if let Some(want) = server_x_at(&server_x, *r)
            && (want - x).abs() < 0.011
        {
            close += 1;
        }
    }
    let share = close as f64 / settled.len() as f64;
    assert!(share >= 0.95, "rendered on the server's path on {share:.3} of frames");
    // Smooth: a frame moves it by about one tick's travel, never a jump.
    for w in settled.windows(2) {
        let step = (w[1].1 - w[0].1).abs();
        assert!(step < 0.1, "a jump of {step}");
    }
}

#[test]
fn extrapolation_is_capped_when_snapshots_stop() {
    let mut game = Game::new(1, LinkConfig::clean(3), ClientSessionConfig::default());
    let (mut server_x, mut rendered) = (Vec::new(), Vec::new());
    track(&mut game, 200, &mut server_x, &mut rendered);
    game.set_links(LinkConfig { loss: 1.0, ..LinkConfig::clean(3) });
    let before = rendered.len();
    track(&mut game, 60, &mut server_x, &mut rendered);
    let outage = &rendered[before..];
    // Still moving right after the outage starts (the buffer, then at most
    // 3 ticks of extrapolation), then still.
    let last = outage.last().unwrap().1;
    assert!(outage[20..].iter().all(|(_, x)| *x == last), "it kept moving: {:?}", &outage[20..25]);
    let moved = (last - outage[0].1).abs();
    assert!(moved > 0.0 && moved <= 0.03 * 8.0, "moved {moved} during the outage");
}

#[test]
fn entities_at_rest_are_not_visited() {
    // A client that sees only players at rest (inputs zero) and the
    // movers: once the players' samples settle, only the movers are
    // sampled each frame.
    let mut game = Game::new(2, LinkConfig::clean(2), ClientSessionConfig::default());
    let mut last = Default::default();
    for _ in 0..300 {
        serve_and_step(&mut game, &mut last);
    }
    // Five movers drift; the other client's player moves by script, so at
    // most six entities are in motion.
    assert!(last.interpolated <= 6, "{last:?}");
}

fn serve_and_step(game: &mut Game, last: &mut ecs_replication::session::FrameReport) {
    use ecs_replication::transport::{pump_session, serve_session};
    serve_session(&mut game.server, &mut game.world, &mut game.net.server(), DT, None, simulate).unwrap();
    for (i, (id, cw, session)) in game.clients.iter_mut().enumerate() {
        let seed = i as u32;
        let (_, report) =
            pump_session(session, cw, &mut game.net.client(*id), DT, |t| scripted(seed, t), simulate).unwrap();
        if i == 0 {
            *last = report;
        }
    }
    game.net.advance();
}
