//! A tiny game for the session tests: players move on a grid by their
//! input; a few non-player movers wander. The simulation snaps positions
//! to the quantization grid (as Fiedler suggests), so a correct
//! prediction agrees with the server exactly.

use std::time::Duration;

use ecs_core::{Component, Entity, World};
use ecs_replication::bits::{BitError, BitReader, BitWriter};
use ecs_replication::input::ClientInput;
use ecs_replication::prelude::*;
use ecs_replication::quantize::PositionQuantizer;
use ecs_replication::session::{ClientSession, ClientSessionConfig, ControlledBy, PlayerInput, ServerSession};
use ecs_replication::transport::{LocalNetwork, pump_session, serve_session};
use glam::Vec3;

use super::Position;

pub const DT: Duration = Duration::from_nanos(16_666_667);

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Move {
    pub dx: i8,
    pub dy: i8,
}

impl ClientInput for Move {
    fn write(&self, w: &mut BitWriter) {
        w.write_bits((self.dx + 1) as u64, 2);
        w.write_bits((self.dy + 1) as u64, 2);
    }
    fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
        let axis = |v: u64| (v.min(2) as i8) - 1;
        Ok(Move { dx: axis(r.read_bits(2)?), dy: axis(r.read_bits(2)?) })
    }
}

/// A non-player mover: its velocity per tick.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Drift(pub Vec3);

pub fn registry() -> Registry {
    let r = Registry::new().position::<Position>("position", 0.01, 20).unwrap().predict::<Position>(0).unwrap();
    ControlledBy::register(r).unwrap()
}

fn quantizer() -> PositionQuantizer {
    PositionQuantizer::new(0.01, 20).unwrap()
}

/// The fixed step, the same on both ends.
pub fn simulate(world: &mut World) {
    let q = quantizer();
    let mut players = world.query::<(&PlayerInput<Move>, &mut Position)>();
    players.for_each_mut(world, |(input, mut p)| {
        let next = p.0 + Vec3::new(input.0.dx as f32, input.0.dy as f32, 0.0) * 0.05;
        p.0 = q.dequantize(q.quantize(next.clamp(Vec3::splat(-50.0), Vec3::splat(50.0))).unwrap());
    });
    let mut movers = world.query::<(&mut Drift, &mut Position)>();
    movers.for_each_mut(world, |(mut d, mut p)| {
        let mut next = p.0 + d.0;
        if next.x.abs() > 20.0 {
            d.0.x = -d.0.x;
            next.x = p.0.x;
        }
        p.0 = q.dequantize(q.quantize(next).unwrap());
    });
}

/// The scripted input of a player: changes direction every 23 ticks.
pub fn scripted(seed: u32, tick: u32) -> Move {
    let phase = (tick / 23).wrapping_add(seed) % 5;
    match phase {
        0 => Move { dx: 1, dy: 0 },
        1 => Move { dx: 0, dy: 1 },
        2 => Move { dx: -1, dy: -1 },
        3 => Move { dx: 0, dy: 0 },
        _ => Move { dx: -1, dy: 1 },
    }
}

/// A server, its world with one player per client and a few movers, and
/// the clients, over a [`LocalNetwork`].
pub struct Game {
    pub world: World,
    pub server: ServerSession<Move>,
    pub net: LocalNetwork,
    pub players: Vec<Entity>,
    pub clients: Vec<(ClientId, World, ClientSession<Move>)>,
    pub rolled_back: u32,
    /// Players stop (input zero) from this client tick on.
    pub stop_at: Option<u32>,
}

impl Game {
    pub fn new(clients: usize, link: LinkConfig, config: ClientSessionConfig) -> Game {
        let mut world = World::new();
        for i in 0..5 {
            world.spawn((Replicated, Position(Vec3::new(i as f32, -3.0, 0.0)), Drift(Vec3::new(0.03, 0.0, 0.0))));
        }
        let mut server = ServerSession::new(Server::new(&mut world, registry(), ServerConfig::default()));
        let mut net = LocalNetwork::new();
        let mut players = Vec::new();
        let mut list = Vec::new();
        for i in 0..clients {
            let id = ClientId(1 + i as u64);
            server.add_client(id, None).unwrap();
            let player = world.spawn((Replicated, Position(Vec3::new(0.0, i as f32, 0.0))));
            server.set_controlled(&mut world, id, player).unwrap();
            players.push(player);
            net.connect(id, link, link, 7 + i as u64);
            let mut cw = World::new();
            let session = ClientSession::new(&mut cw, &registry(), id, config);
            list.push((id, cw, session));
        }
        Game { world, server, net, players, clients: list, rolled_back: 0, stop_at: None }
    }

    pub fn set_links(&mut self, link: LinkConfig) {
        for (id, _, _) in &self.clients {
            self.net.set_links(*id, link, link);
        }
    }

    /// One frame: the server tick, every client's frame, time advances.
    pub fn step(&mut self) {
        serve_session(&mut self.server, &mut self.world, &mut self.net.server(), DT, None, simulate).unwrap();
        let stop_at = self.stop_at;
        for (i, (id, cw, session)) in self.clients.iter_mut().enumerate() {
            let seed = i as u32;
            let input = |t: u32| match stop_at {
                Some(stop) if t >= stop => Move::default(),
                _ => scripted(seed, t),
            };
            let (_, report) = pump_session(session, cw, &mut self.net.client(*id), DT, input, simulate).unwrap();
            if report.rolled_back {
                self.rolled_back += 1;
            }
        }
        self.net.advance();
    }

    /// The server's quantized position of a player.
    pub fn server_position(&self, player: usize) -> Vec3 {
        self.world.get::<Position>(self.players[player]).unwrap().0
    }
}
