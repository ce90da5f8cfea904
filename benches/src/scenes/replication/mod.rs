//! Replication scenes: the cube scene streamed to one client through the
//! in-process link conditioner (bandwidth under loss and at rest), a 100k
//! entity world with a share of it changing (encode cost per client per
//! tick), and 64 clients of a 10k entity world (fan-out).

use std::time::{Duration, Instant};

/// The arena game: input upstream, prediction under a bad link, client cost.
pub mod game;

/// 128 clients x 10k entities through 50 % loss and back: cost per client
/// per tick, backlog, ticks to converge.
pub mod backlog;

use ecs_core::{Entity, World};
use ecs_examples::cubes::{CubeConfig, CubePosition, CubeRotation, CubeScene, registry};
use ecs_replication::prelude::*;
use ecs_replication::transport::{LocalNetwork, pump_client, serve};
use glam::{Quat, Vec3};

/// Snapshots per second.
pub const TICK_RATE: f64 = 60.0;

/// One-way latency of the conditioned link, in ticks (2 ticks: 33 ms).
pub const LINK_DELAY: u32 = 2;

/// The cube scene, a server and one client behind a conditioned link.
pub struct CubeStream {
    scene: CubeScene,
    server: Server,
    net: LocalNetwork,
    client_world: World,
    client: Client,
    id: ClientId,
}

/// What a run of ticks cost.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamFigures {
    /// Snapshot payload to the client, kilobits per second at 60 Hz.
    pub kbps: f64,
    /// Server update time per tick, microseconds, one per tick.
    pub update_us: Vec<f64>,
    /// Ticks measured.
    pub ticks: usize,
    /// Cubes sliding, averaged over the measured ticks (counted untimed).
    pub moving_cubes: f64,
}

impl CubeStream {
    /// The scene and one client on a link that loses `loss` of the packets
    /// each way (two ticks of delay each way).
    pub fn new(loss: f64) -> Result<CubeStream, String> {
        let mut scene = CubeScene::new(&CubeConfig::default()).map_err(|e| e.to_string())?;
        let reg = registry().map_err(|e| e.to_string())?;
        let mut server = Server::new(scene.world_mut(), reg, ServerConfig::default());
        let id = ClientId(1);
        server.add_client(id, None).map_err(|e| e.to_string())?;
        let mut net = LocalNetwork::new();
        let link = LinkConfig { loss, ..LinkConfig::clean(LINK_DELAY) };
        net.connect(id, link, link, 0x5EED);
        let mut client_world = World::new();
        let client = Client::new(&mut client_world, &registry().map_err(|e| e.to_string())?);
        Ok(CubeStream { scene, server, net, client_world, client, id })
    }

    /// Stops or starts the player.
    pub fn set_player_moving(&mut self, moving: bool) {
        self.scene.set_player_moving(moving);
    }

    /// Cubes sliding now.
    pub fn moving_cubes(&mut self) -> usize {
        self.scene.moving_cubes()
    }

    /// One tick: the scene steps, the server sends (timed), the client
    /// receives and acknowledges. Returns the server update time in us.
    pub fn tick(&mut self) -> Result<f64, String> {
        self.scene.step().map_err(|e| e.to_string())?;
        let start = Instant::now();
        serve(&mut self.server, self.scene.world_mut(), &mut self.net.server(), Duration::ZERO, None)
            .map_err(|e| e.to_string())?;
        let us = start.elapsed().as_secs_f64() * 1e6;
        pump_client(&mut self.client, &mut self.client_world, &mut self.net.client(self.id), Duration::ZERO)
            .map_err(|e| e.to_string())?;
        self.net.advance();
        Ok(us)
    }

    /// Runs `ticks` ticks and measures the bandwidth and update time.
    pub fn measure(&mut self, ticks: usize) -> Result<StreamFigures, String> {
        let before = self.bytes_sent();
        let mut update_us = Vec::with_capacity(ticks);
        let mut moving = 0usize;
        for _ in 0..ticks {
            update_us.push(self.tick()?);
            moving += self.moving_cubes();
        }
        let bytes = self.bytes_sent() - before;
        let seconds = ticks as f64 / TICK_RATE;
        Ok(StreamFigures {
            kbps: bytes as f64 * 8.0 / seconds / 1000.0,
            update_us,
            ticks,
            moving_cubes: moving as f64 / ticks.max(1) as f64,
        })
    }

    fn bytes_sent(&self) -> u64 {
        self.server.client_stats(self.id).map_or(0, |s| s.bytes_sent)
    }

    /// Whether the client holds exactly the server's quantized state.
    pub fn converged(&self) -> bool {
        let mut want: Vec<_> = self.server.entities().map(|(n, _, v)| (n, v.to_vec())).collect();
        let mut have: Vec<_> = self.client.entities().map(|(n, v)| (n, v.to_vec())).collect();
        want.sort_by_key(|(n, _)| *n);
        have.sort_by_key(|(n, _)| *n);
        want == have
    }

    /// Makes the link clean (same delay).
    pub fn clean_link(&mut self) {
        self.net.set_links(self.id, LinkConfig::clean(LINK_DELAY), LinkConfig::clean(LINK_DELAY));
    }
}

/// A world of `entities` replicated cubes (position, rotation), `clients`
/// clients that see everything and acknowledge every tick at once, and a
/// share of the entities moved before each tick. Packets stay within the
/// steady budget (catch-up off).
pub struct EncodeScene {
    world: World,
    server: Server,
    clients: Vec<ClientId>,
    movers: Vec<Entity>,
    step: f32,
}

impl EncodeScene {
    /// Builds the world, brings every client fully up to date (a large
    /// budget for the initial sync, then the default 1200 bytes) and picks
    /// `changed` (0.0 to 1.0) of the entities, spread evenly, as movers.
    pub fn new(entities: usize, clients: usize, changed: f64) -> Result<EncodeScene, String> {
        let mut world = World::new();
        let side = (entities as f64).sqrt().ceil() as usize;
        let spawned = world.spawn_batch((0..entities).map(|i| {
            let p = Vec3::new((i % side) as f32 * 0.5, (i / side) as f32 * 0.5, 0.0);
            (Replicated, CubePosition(p), CubeRotation(Quat::IDENTITY))
        }));
        let reg = registry().map_err(|e| e.to_string())?;
        // The encode cases measure a tick at the steady budget (1200
        // bytes), as before catch-up existed: its ceiling is off here (the
        // backlog case measures catch-up).
        let config = ServerConfig { catch_up_budget_bytes: 0, ..ServerConfig::default() };
        let mut server = Server::new(&mut world, reg, config);
        let ids: Vec<ClientId> = (1..=clients as u64).map(ClientId).collect();
        for id in &ids {
            server.add_client(*id, None).map_err(|e| e.to_string())?;
        }
        server.set_budget_bytes(256 * 1024);
        for _ in 0..10_000 {
            server.update(&mut world).map_err(|e| e.to_string())?;
            for id in &ids {
                ack_all(&mut server, *id)?;
            }
            let pending: usize = ids.iter().filter_map(|id| server.client_stats(*id)).map(|s| s.pending).sum();
            if pending == 0 {
                break;
            }
        }
        if ids.iter().filter_map(|id| server.client_stats(*id)).any(|s| s.pending != 0 || s.tracked != entities) {
            return Err("clients did not come up to date".into());
        }
        server.set_budget_bytes(ServerConfig::default().budget_bytes);
        let count = (entities as f64 * changed).round() as usize;
        let stride = entities.checked_div(count).unwrap_or(1);
        let movers = spawned.iter().step_by(stride.max(1)).take(count).copied().collect();
        Ok(EncodeScene { world, server, clients: ids, movers, step: 0.0 })
    }

    /// Untimed: moves the movers a little.
    pub fn mutate(&mut self) {
        self.step += 0.01;
        let d = Vec3::new(self.step.sin() * 0.05, self.step.cos() * 0.05, 0.0);
        for &e in &self.movers {
            if let Ok(mut p) = self.world.get_mut::<CubePosition>(e) {
                p.0 += d;
            }
        }
    }

    /// Timed: one server tick and every client's acknowledgement of it.
    /// Returns the bytes sent to the first client.
    pub fn tick(&mut self) -> usize {
        if self.server.update(&mut self.world).is_err() {
            return 0;
        }
        for id in &self.clients {
            let _ = ack_all(&mut self.server, *id);
        }
        self.server.client_stats(self.clients[0]).map_or(0, |s| s.last_packet_bytes)
    }

    /// Entities changed per tick.
    pub fn movers(&self) -> usize {
        self.movers.len()
    }

    /// Clients.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }
}

/// Acknowledges everything the server sent (what a client on a perfect
/// link would do).
fn ack_all(server: &mut Server, id: ClientId) -> Result<(), String> {
    let ack = Ack { newest: server.tick(), previous: u32::MAX };
    server.receive(id, &ack.to_bytes()).map_err(|e| e.to_string())
}

/// The median of some figures.
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
