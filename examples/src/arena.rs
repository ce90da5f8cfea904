//! A small multiplayer arena over real UDP (renet + netcode): players move
//! with their input (predicted on their own client, corrected by the
//! server), shoot projectiles by reliable message, and the server finds
//! hits with the `ecs-spatial` grid and announces them by reliable message.
//! Remote players and projectiles are interpolated.
//!
//! The pieces: [`registry`] (what is replicated), [`simulate`] (the fixed
//! step both ends run), [`ArenaServer`] and [`ArenaClient`] (one frame of
//! each), and [`run_server`] / [`run_client`] (60 Hz loops over UDP, the
//! client through a [`LinkProxy`] that adds latency, jitter and loss both
//! ways). The `arena` binary runs them as separate processes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use ecs_core::{Component, Entity, World};
use ecs_replication::bits::{BitError, BitReader, BitWriter};
use ecs_replication::codec::{BytesDelta, FieldCodec, Value};
use ecs_replication::input::ClientInput;
use ecs_replication::prelude::*;
use ecs_replication::quantize::QuantizeError;
use ecs_replication::registry::{AsEntity, ComponentCodec, RegistryError};
use ecs_replication::reliable::NetMessage;
use ecs_replication::session::{ClientSession, ClientSessionConfig, ControlledBy, PlayerInput, ServerSession};
use ecs_replication::transport::udp::{DEMO_KEY, LinkProxy, UdpClient, UdpServer, connect_token_via};
use ecs_replication::transport::{ClientTransport, pump_session, serve_session};
use ecs_spatial::SparseGrid;
use glam::Vec3;

/// Fixed steps per second.
pub const TICK_HZ: f64 = 60.0;
/// Half the arena's side.
pub const ARENA_HALF: f32 = 20.0;
/// A player's travel per tick.
pub const PLAYER_STEP: f32 = 0.1;
/// A projectile's travel per tick.
pub const PROJECTILE_STEP: f32 = 0.5;
/// Ticks a projectile flies.
pub const PROJECTILE_TICKS: u32 = 60;
/// Distance at which a projectile hits a player.
pub const HIT_RADIUS: f32 = 0.8;
/// Health a player starts (and respawns) with.
pub const START_HEALTH: u32 = 5;

/// Where a player or projectile is.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Pos(pub Vec3);

impl AsPosition for Pos {
    fn position(&self) -> Vec3 {
        self.0
    }
    fn from_position(p: Vec3) -> Self {
        Pos(p)
    }
}

/// A player's health (replicated, word-delta-coded).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health(pub u32);

/// Health as a 4-byte little-endian word, delta-coded by its difference.
pub struct HealthCodec;

impl ComponentCodec<Health> for HealthCodec {
    fn field(&self) -> FieldCodec {
        FieldCodec::Bytes(4, BytesDelta::Words)
    }
    fn encode(&self, value: &Health) -> Result<Value, QuantizeError> {
        Ok(Value::Bytes(value.0.to_le_bytes().to_vec()))
    }
    fn decode(&self, value: &Value) -> Option<Health> {
        match value {
            Value::Bytes(b) => Some(Health(u32::from_le_bytes(b.as_slice().try_into().ok()?))),
            _ => None,
        }
    }
}

/// The player who fired a projectile (an entity reference, mapped to the
/// client's entity).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Shooter(pub Entity);

impl AsEntity for Shooter {
    fn entity(&self) -> Entity {
        self.0
    }
    fn from_entity(entity: Entity) -> Self {
        Shooter(entity)
    }
}

/// Server only: a projectile's flight.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Flight {
    /// Travel per tick.
    pub velocity: Vec3,
    /// Ticks left.
    pub ticks_left: u32,
}

/// A player's input for one tick: a direction on each axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Steer {
    /// -1, 0 or 1.
    pub x: i8,
    /// -1, 0 or 1.
    pub y: i8,
}

impl ClientInput for Steer {
    fn write(&self, w: &mut BitWriter) {
        w.write_bits((self.x.clamp(-1, 1) + 1) as u64, 2);
        w.write_bits((self.y.clamp(-1, 1) + 1) as u64, 2);
    }
    fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
        let axis = |v: u64| (v.min(2) as i8) - 1;
        Ok(Steer { x: axis(r.read_bits(2)?), y: axis(r.read_bits(2)?) })
    }
}

/// Reliable events, both ways.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArenaEvent {
    /// Client to server: fire towards `aim` (256 steps of a turn).
    Fire {
        /// Direction, 0..=255.
        aim: u8,
    },
    /// Server to clients: a player joined.
    Joined {
        /// Its client id.
        client: u64,
    },
    /// Server to clients: a hit.
    Hit {
        /// The shooter's client id.
        shooter: u64,
        /// The target's client id.
        target: u64,
        /// The target's health after it.
        health: u32,
    },
}

impl NetMessage for ArenaEvent {
    fn write(&self, w: &mut BitWriter) {
        match self {
            ArenaEvent::Fire { aim } => {
                w.write_bits(0, 2);
                w.write_bits(*aim as u64, 8);
            }
            ArenaEvent::Joined { client } => {
                w.write_bits(1, 2);
                w.write_varint(*client);
            }
            ArenaEvent::Hit { shooter, target, health } => {
                w.write_bits(2, 2);
                w.write_varint(*shooter);
                w.write_varint(*target);
                w.write_varint(*health as u64);
            }
        }
    }
    fn read(r: &mut BitReader<'_>) -> Result<Self, BitError> {
        match r.read_bits(2)? {
            0 => Ok(ArenaEvent::Fire { aim: r.read_bits(8)? as u8 }),
            1 => Ok(ArenaEvent::Joined { client: r.read_varint()? }),
            2 => Ok(ArenaEvent::Hit {
                shooter: r.read_varint()?,
                target: r.read_varint()?,
                health: r.read_len(u32::MAX as u64)? as u32,
            }),
            kind => Err(BitError::TooLong { len: kind, max: 2 }),
        }
    }
}

/// What the arena replicates: positions (predicted for the player's own
/// entity, exact: the simulation snaps to the quantization grid), who
/// controls what, health, and who fired each projectile.
pub fn registry() -> Result<Registry, RegistryError> {
    let r = Registry::new().position::<Pos>("position", 0.01, 20)?.predict::<Pos>(0)?;
    ControlledBy::register(r)?
        .with_codec::<Health, HealthCodec>("health", HealthCodec)?
        .entity_ref::<Shooter>("shooter")
}

fn snap(p: Vec3) -> Vec3 {
    (p * 100.0).round() / 100.0
}

/// The fixed step both ends run: every entity with an input moves by it,
/// inside the arena, on the 0.01 grid.
pub fn simulate(world: &mut World) {
    let mut players = world.query::<(&PlayerInput<Steer>, &mut Pos)>();
    players.for_each_mut(world, |(input, mut p)| {
        let step = Vec3::new(input.0.x as f32, input.0.y as f32, 0.0) * PLAYER_STEP;
        let next = snap((p.0 + step).clamp(Vec3::splat(-ARENA_HALF), Vec3::splat(ARENA_HALF)));
        if next != p.0 {
            p.0 = next;
        }
    });
}

/// The scripted input of a headless player: a slow figure in the arena
/// (changes every 40 ticks, so corrections show where inputs were late).
pub fn scripted_input(seed: u64, tick: u32) -> Steer {
    let phase = (tick / 40) as u64 + seed;
    let dirs = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1), (0, 0)];
    let (x, y) = dirs[(phase % dirs.len() as u64) as usize];
    Steer { x, y }
}

/// The server: the world, the session, and the grid hits are found with.
pub struct ArenaServer {
    /// The game world.
    pub world: World,
    /// The replication session.
    pub session: ServerSession<Steer>,
    players: BTreeMap<ClientId, Entity>,
    grid: SparseGrid<Vec3, u32>,
    /// Hits so far.
    pub hits: u64,
    /// Projectiles fired so far.
    pub shots: u64,
}

impl ArenaServer {
    /// An empty arena.
    pub fn new() -> Result<ArenaServer, String> {
        let mut world = World::new();
        let registry = registry().map_err(|e| e.to_string())?;
        let server = Server::new(&mut world, registry, ServerConfig::default());
        let grid = SparseGrid::new(Vec3::ZERO, 2.0).map_err(|e| e.to_string())?;
        Ok(ArenaServer {
            world,
            session: ServerSession::new(server),
            players: BTreeMap::new(),
            grid,
            hits: 0,
            shots: 0,
        })
    }

    /// Spawns a player for a new client and tells everyone.
    pub fn join(&mut self, id: ClientId) {
        if self.players.contains_key(&id) {
            return;
        }
        let at = Vec3::new((id.0 % 7) as f32 * 3.0 - 9.0, 0.0, 0.0);
        let player = self.world.spawn((Replicated, Pos(at), Health(START_HEALTH)));
        let _ = self.session.set_controlled(&mut self.world, id, player);
        self.players.insert(id, player);
        let _ = self.session.broadcast_message(&ArenaEvent::Joined { client: id.0 });
    }

    /// A client left: its player goes.
    pub fn leave(&mut self, id: ClientId) {
        if let Some(player) = self.players.remove(&id) {
            let _ = self.world.despawn(player);
        }
    }

    /// Fires the projectiles the clients asked for (reliable messages).
    pub fn fire(&mut self) {
        for (id, event) in self.session.take_messages::<ArenaEvent>() {
            let (ArenaEvent::Fire { aim }, Some(player)) = (event, self.players.get(&id).copied()) else { continue };
            let Ok(from) = self.world.get::<Pos>(player).map(|p| p.0) else { continue };
            let angle = aim as f32 / 256.0 * std::f32::consts::TAU;
            let velocity = Vec3::new(angle.cos(), angle.sin(), 0.0) * PROJECTILE_STEP;
            self.world.spawn((
                Replicated,
                Pos(snap(from + velocity * 2.0)),
                Shooter(player),
                Flight { velocity, ticks_left: PROJECTILE_TICKS },
            ));
            self.shots += 1;
        }
    }

    /// Server-only part of a tick, after [`simulate`]: projectiles fly,
    /// hits are found with the grid (players keyed by their slot), hit
    /// players lose health (and respawn at full health at 0).
    pub fn step(&mut self) {
        let mut flights = self.world.query::<(Entity, &mut Flight, &mut Pos, &Shooter)>();
        let mut moving: Vec<(Entity, Vec3, Entity)> = Vec::new();
        let mut expired = Vec::new();
        flights.for_each_mut(&mut self.world, |(e, mut f, mut p, s)| {
            p.0 = snap(p.0 + f.velocity);
            f.ticks_left = f.ticks_left.saturating_sub(1);
            if f.ticks_left == 0 || p.0.abs().max_element() > ARENA_HALF {
                expired.push(e);
            } else {
                moving.push((e, p.0, s.0));
            }
        });
        let players: Vec<(ClientId, Entity, Vec3)> =
            self.players.iter().filter_map(|(id, e)| Some((*id, *e, self.world.get::<Pos>(*e).ok()?.0))).collect();
        let ids: Vec<u32> = (0..players.len() as u32).collect();
        let positions: Vec<Vec3> = players.iter().map(|p| p.2).collect();
        let mut hits = Vec::new();
        if self.grid.rebuild(&ids, &positions).is_ok() {
            let mut near = Vec::new();
            for (projectile, at, shooter) in moving {
                near.clear();
                self.grid.query_radius(at, HIT_RADIUS, &mut near);
                if let Some(slot) = near.iter().copied().find(|slot| players[*slot as usize].1 != shooter) {
                    hits.push((projectile, shooter, players[slot as usize].0, players[slot as usize].1));
                }
            }
        }
        for (projectile, shooter, target_id, target) in hits {
            if self.world.despawn(projectile).is_err() {
                continue;
            }
            self.hits += 1;
            let health = match self.world.get_mut::<Health>(target) {
                Ok(mut h) => {
                    h.0 = if h.0 <= 1 { START_HEALTH } else { h.0 - 1 };
                    h.0
                }
                Err(_) => continue,
            };
            let shooter_id = self.players.iter().find(|(_, e)| **e == shooter).map_or(0, |(id, _)| id.0);
            let _ =
                self.session.broadcast_message(&ArenaEvent::Hit { shooter: shooter_id, target: target_id.0, health });
        }
        for e in expired {
            let _ = self.world.despawn(e);
        }
    }
}

/// One client: its world and session, and what it saw.
pub struct ArenaClient {
    /// The client's world (its predicted player, the interpolated rest).
    pub world: World,
    /// The replication session.
    pub session: ClientSession<Steer>,
    /// Reliable events received.
    pub events: Vec<ArenaEvent>,
    seed: u64,
    fired: u32,
}

impl ArenaClient {
    /// A client with id `id` (the transport's), scripted from `seed`.
    pub fn new(id: ClientId, seed: u64) -> Result<ArenaClient, String> {
        let mut world = World::new();
        let registry = registry().map_err(|e| e.to_string())?;
        let session = ClientSession::new(&mut world, &registry, id, ClientSessionConfig::default());
        Ok(ArenaClient { world, session, events: Vec::new(), seed, fired: 0 })
    }

    /// Fires a projectile every 30 ticks of its clock, aimed around.
    fn maybe_fire(&mut self) {
        let tick = self.session.clock().tick();
        if tick != 0 && tick / 30 != self.fired {
            self.fired = tick / 30;
            let aim = (tick.wrapping_mul(37) as u64 + self.seed * 91) as u8;
            let _ = self.session.send_message(&ArenaEvent::Fire { aim });
        }
    }

    /// One frame through a transport (scripted input).
    pub fn frame<T: ClientTransport>(&mut self, transport: &mut T, dt: Duration) -> Result<(), String> {
        self.maybe_fire();
        let seed = self.seed;
        pump_session(&mut self.session, &mut self.world, transport, dt, |t| scripted_input(seed, t), simulate)
            .map_err(|e| e.to_string())?;
        self.events.extend(self.session.take_messages::<ArenaEvent>());
        Ok(())
    }

    /// One frame with a player's input: `steer` held, `fire` (an aim) if
    /// the player fired this frame.
    pub fn frame_with<T: ClientTransport>(
        &mut self,
        transport: &mut T,
        dt: Duration,
        steer: Steer,
        fire: Option<u8>,
    ) -> Result<(), String> {
        if let Some(aim) = fire {
            let _ = self.session.send_message(&ArenaEvent::Fire { aim });
        }
        pump_session(&mut self.session, &mut self.world, transport, dt, |_| steer, simulate)
            .map_err(|e| e.to_string())?;
        self.events.extend(self.session.take_messages::<ArenaEvent>());
        Ok(())
    }

    /// The arena as text, 40 x 20 characters: `@` this player, `P` others,
    /// `*` projectiles.
    pub fn render(&mut self) -> String {
        let (w, h) = (40usize, 20usize);
        let mut cells = vec![vec![b'.'; w]; h];
        let mut q =
            self.world.query::<(&Pos, ecs_core::Has<ecs_replication::registry::Predicted>, ecs_core::Has<Shooter>)>();
        q.for_each(&self.world, |(p, mine, projectile)| {
            let x = ((p.0.x + ARENA_HALF) / (2.0 * ARENA_HALF) * (w - 1) as f32).round().clamp(0.0, (w - 1) as f32)
                as usize;
            let y = ((ARENA_HALF - p.0.y) / (2.0 * ARENA_HALF) * (h - 1) as f32).round().clamp(0.0, (h - 1) as f32)
                as usize;
            cells[y][x] = if mine {
                b'@'
            } else if projectile {
                b'*'
            } else {
                b'P'
            };
        });
        cells.into_iter().map(|row| String::from_utf8_lossy(&row).into_owned() + "\n").collect()
    }
}

/// Options of a server run.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerOptions {
    /// Where to listen.
    pub address: SocketAddr,
    /// Most clients.
    pub clients: usize,
    /// Frames to run at 60 Hz after the first client connects.
    pub frames: u64,
    /// Give up if no client connects within this long.
    pub connect_timeout: Duration,
}

/// Options of a client run.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientOptions {
    /// The server.
    pub server: SocketAddr,
    /// This client's id.
    pub id: u64,
    /// Frames to run at 60 Hz after connecting.
    pub frames: u64,
    /// One-way latency added each way, ms.
    pub latency_ms: u32,
    /// Extra random latency, 0 to this many ms, each way.
    pub jitter_ms: u32,
    /// Share of datagrams lost each way.
    pub loss: f64,
}

/// What one client saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientSummary {
    /// The client id.
    pub id: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// Smoothed round-trip time, ms.
    pub rtt_ms: f64,
    /// Predictions compared with the server.
    pub comparisons: u64,
    /// Mispredictions per second.
    pub mispredictions_per_s: f64,
    /// Corrections (rollbacks) per second.
    pub corrections_per_s: f64,
    /// Share of compared ticks the prediction matched.
    pub matched: f64,
    /// Payload kilobits per second, client to server.
    pub kbps_up: f64,
    /// Payload kilobits per second, server to client.
    pub kbps_down: f64,
    /// Reliable events received.
    pub events: usize,
    /// Entities held at the end.
    pub entities: usize,
}

impl std::fmt::Display for ClientSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "client {}: {:.1} s, rtt {:.1} ms, {} predictions compared, matched {:.2} %, mispredictions {:.2}/s, corrections {:.2}/s, up {:.1} kbps, down {:.1} kbps, {} events, {} entities",
            self.id,
            self.seconds,
            self.rtt_ms,
            self.comparisons,
            self.matched * 100.0,
            self.mispredictions_per_s,
            self.corrections_per_s,
            self.kbps_up,
            self.kbps_down,
            self.events,
            self.entities
        )
    }
}

/// What the server saw of one client.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerClientSummary {
    /// The client id.
    pub id: u64,
    /// Ticks whose input was there in time.
    pub inputs_on_time: u64,
    /// Ticks whose input arrived late (the last one was repeated).
    pub inputs_late: u64,
    /// Payload kilobits per second sent to it.
    pub kbps_down: f64,
    /// Payload kilobits per second received from it.
    pub kbps_up: f64,
}

/// What a server run saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerSummary {
    /// Ticks run.
    pub ticks: u64,
    /// Projectiles fired.
    pub shots: u64,
    /// Hits.
    pub hits: u64,
    /// Per client.
    pub clients: Vec<ServerClientSummary>,
}

impl std::fmt::Display for ServerSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "server: {} ticks, {} shots, {} hits", self.ticks, self.shots, self.hits)?;
        for c in &self.clients {
            let share = c.inputs_late as f64 / (c.inputs_on_time + c.inputs_late).max(1) as f64 * 100.0;
            writeln!(
                f,
                "  client {}: inputs on time {}, late {} ({share:.2} %), down {:.1} kbps, up {:.1} kbps",
                c.id, c.inputs_on_time, c.inputs_late, c.kbps_down, c.kbps_up
            )?;
        }
        Ok(())
    }
}

fn tick_duration() -> Duration {
    Duration::from_secs_f64(1.0 / TICK_HZ)
}

/// Runs a server on `options.address` at 60 Hz: waits for a client, then
/// runs `frames` ticks (clients joining meanwhile get a player).
pub fn run_server(options: &ServerOptions, on_bound: impl FnOnce(SocketAddr)) -> Result<ServerSummary, String> {
    let mut arena = ArenaServer::new()?;
    let protocol = arena.session.server().registry().schema().hash() as u64;
    let mut udp =
        UdpServer::bind(options.address, options.clients.max(1), protocol, DEMO_KEY).map_err(|e| e.to_string())?;
    on_bound(udp.address());
    let start = Instant::now();
    let mut last = start;
    let mut next = start;
    let mut ticks = 0u64;
    let mut bytes_down: BTreeMap<ClientId, u64> = BTreeMap::new();
    let mut first_client: Option<Instant> = None;
    while ticks < options.frames {
        next += tick_duration();
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let dt = last.elapsed();
        last = Instant::now();
        arena.fire();
        let step = serve_session(&mut arena.session, &mut arena.world, &mut udp, dt, None, simulate)
            .map_err(|e| e.to_string())?;
        arena.step();
        for id in &step.connected {
            arena.join(*id);
        }
        for id in &step.disconnected {
            arena.leave(*id);
        }
        for (id, bytes) in &step.bytes {
            *bytes_down.entry(*id).or_default() += *bytes as u64;
        }
        if first_client.is_none() && udp.connected_clients() > 0 {
            first_client = Some(Instant::now());
        }
        if first_client.is_some() {
            ticks += 1;
        } else if start.elapsed() > options.connect_timeout {
            return Err("no client connected".into());
        }
    }
    let seconds = first_client.map_or(1.0, |t| t.elapsed().as_secs_f64()).max(1e-3);
    let clients = arena
        .session
        .server()
        .clients()
        .map(|id| {
            let inputs = arena.session.input_stats(id).unwrap_or_default();
            ServerClientSummary {
                id: id.0,
                inputs_on_time: inputs.on_time,
                inputs_late: inputs.late,
                kbps_down: bytes_down.get(&id).copied().unwrap_or(0) as f64 * 8.0 / seconds / 1000.0,
                kbps_up: arena.session.upstream_bytes(id) as f64 * 8.0 / seconds / 1000.0,
            }
        })
        .collect();
    Ok(ServerSummary { ticks, shots: arena.shots, hits: arena.hits, clients })
}

/// A player's controls for an interactive client: the direction held, and
/// fire requests (aims), read each frame.
pub struct Controls {
    /// Direction changes.
    pub steer: std::sync::mpsc::Receiver<Steer>,
    /// Shots, by aim.
    pub fire: std::sync::mpsc::Receiver<u8>,
    /// Called about twice a second with the arena as text.
    pub show: Box<dyn FnMut(&str)>,
}

/// Runs a client against `options.server` through a [`LinkProxy`] adding
/// the options' latency, jitter and loss each way, for `frames` frames at
/// 60 Hz once connected, with scripted inputs.
pub fn run_client(options: &ClientOptions) -> Result<ClientSummary, String> {
    run_client_with(options, None)
}

/// [`run_client`] with a player's [`Controls`] instead of the script.
pub fn run_client_with(options: &ClientOptions, mut controls: Option<Controls>) -> Result<ClientSummary, String> {
    let link = LinkConfig {
        loss: options.loss,
        delay: options.latency_ms,
        jitter: options.jitter_ms,
        duplicate: 0.0,
        corrupt: 0.0,
    };
    let local = if options.server.is_ipv4() {
        SocketAddr::from(([127, 0, 0, 1], 0))
    } else {
        "[::1]:0".parse().map_err(|_| "ipv6")?
    };
    let proxy = LinkProxy::start(local, options.server, link, link, options.id).map_err(|e| e.to_string())?;
    let registry = registry().map_err(|e| e.to_string())?;
    let protocol = registry.schema().hash() as u64;
    let token = connect_token_via(&[proxy.address(), options.server], protocol, &DEMO_KEY, options.id)
        .map_err(|e| e.to_string())?;
    let bind = if options.server.is_ipv4() { SocketAddr::from(([127, 0, 0, 1], 0)) } else { local };
    let mut udp = UdpClient::connect(bind, token).map_err(|e| e.to_string())?;
    let mut client = ArenaClient::new(ClientId(options.id), options.id)?;
    let start = Instant::now();
    let mut last = start;
    let mut next = start;
    let mut frames = 0u64;
    let mut connected_at: Option<(Instant, (u64, u64))> = None;
    let mut held = Steer::default();
    while frames < options.frames {
        next += tick_duration();
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let dt = last.elapsed();
        last = Instant::now();
        match &mut controls {
            None => client.frame(&mut udp, dt)?,
            Some(c) => {
                if let Some(s) = c.steer.try_iter().last() {
                    held = s;
                }
                let fire = c.fire.try_recv().ok();
                client.frame_with(&mut udp, dt, held, fire)?;
                if frames.is_multiple_of(30) {
                    let text = client.render();
                    (c.show)(&text);
                }
            }
        }
        if udp.is_disconnected() {
            return Err("disconnected".into());
        }
        if connected_at.is_none() && udp.is_connected() {
            connected_at = Some((Instant::now(), client.session.traffic()));
        }
        if connected_at.is_some() {
            frames += 1;
        } else if start.elapsed() > Duration::from_secs(10) {
            return Err("could not connect".into());
        }
    }
    let (since, (up0, down0)) = connected_at.unwrap_or((start, (0, 0)));
    let seconds = since.elapsed().as_secs_f64().max(1e-3);
    let stats = client.session.prediction_stats();
    let (up, down) = client.session.traffic();
    udp.disconnect();
    drop(proxy);
    Ok(ClientSummary {
        id: options.id,
        seconds,
        rtt_ms: client.session.clock().rtt().map_or(0.0, |r| r.as_secs_f64() * 1000.0),
        comparisons: stats.comparisons,
        mispredictions_per_s: stats.mispredictions as f64 / seconds,
        corrections_per_s: stats.rollbacks as f64 / seconds,
        matched: 1.0 - stats.mispredictions as f64 / stats.comparisons.max(1) as f64,
        kbps_up: (up - up0) as f64 * 8.0 / seconds / 1000.0,
        kbps_down: (down - down0) as f64 * 8.0 / seconds / 1000.0,
        events: client.events.len(),
        entities: client.session.client().len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_and_two_clients_play_over_loopback_udp() {
        let (tx, rx) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || {
            let options = ServerOptions {
                address: "127.0.0.1:0".parse().unwrap(),
                clients: 2,
                frames: 420,
                connect_timeout: Duration::from_secs(20),
            };
            run_server(&options, |addr| tx.send(addr).unwrap())
        });
        let address = rx.recv().unwrap();
        let clients: Vec<_> = (1..=2u64)
            .map(|id| {
                std::thread::spawn(move || {
                    run_client(&ClientOptions {
                        server: address,
                        id,
                        frames: 360,
                        latency_ms: 30,
                        jitter_ms: 10,
                        loss: 0.03,
                    })
                })
            })
            .collect();
        let summaries: Vec<ClientSummary> = clients.into_iter().map(|c| c.join().unwrap().unwrap()).collect();
        let server = server.join().unwrap().unwrap();
        for s in &summaries {
            assert!(s.comparisons > 100, "{s}");
            // The other player, the player itself, and projectiles.
            assert!(s.entities >= 2, "{s}");
            assert!(s.events >= 2, "{s}");
            assert!(s.rtt_ms > 40.0, "{s}");
        }
        assert!(server.shots > 5, "{server}");
        assert_eq!(server.clients.len(), 2);
    }

    #[test]
    fn events_and_inputs_round_trip() {
        use ecs_replication::reliable::{decode_message, encode_message};
        for e in [
            ArenaEvent::Fire { aim: 200 },
            ArenaEvent::Joined { client: 9 },
            ArenaEvent::Hit { shooter: 1, target: 2, health: 3 },
        ] {
            assert_eq!(decode_message::<ArenaEvent>(&encode_message(&e).unwrap()), Ok(e));
        }
    }
}
