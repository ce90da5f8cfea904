//! The cube scene of Glenn Fiedler's "Snapshot Compression": 901 cubes (a
//! 30 x 30 grid of small cubes plus the player's cube) on a flat floor. The
//! player walks a looping path and pushes the cubes near it; pushed cubes
//! slide, knock the cubes they touch, spin and settle under friction. Cubes at rest are never written,
//! so replication (and any `Changed` query) skips their chunks.
//!
//! [`CubeScene`] is the world plus its [`Schedule`]; [`registry`] is what
//! the replication server and clients agree on; [`CubeSession`] runs the
//! scene, a replication server and N clients over loopback UDP (renet and
//! renet_netcode) in one process: what the showcase and the examples use.
//!
//! ```
//! use ecs_examples::cubes::{CubeConfig, CubeScene};
//!
//! let mut scene = CubeScene::new(&CubeConfig::default()).unwrap();
//! assert_eq!(scene.world().len(), 901);
//! for _ in 0..120 {
//!     scene.step().unwrap();
//! }
//! assert!(scene.moving_cubes() > 0); // the player pushed some
//! scene.set_player_moving(false);
//! for _ in 0..600 {
//!     scene.step().unwrap();
//! }
//! assert_eq!(scene.moving_cubes(), 0); // everything settled
//! ```

use std::time::Duration;

use ecs_core::prelude::*;
use ecs_core::{ScheduleError, StoreError};
use ecs_replication::prelude::*;
use ecs_replication::registry::RegistryError;
use ecs_replication::server::ClientStats;
use ecs_replication::transport::TransportError;
use ecs_replication::transport::udp::Loopback;
use glam::{Quat, Vec3};

/// Where a cube is (replicated, quantized to [`POSITION_UNIT`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubePosition(pub Vec3);

impl AsPosition for CubePosition {
    fn position(&self) -> Vec3 {
        self.0
    }
    fn from_position(p: Vec3) -> Self {
        CubePosition(p)
    }
}

/// How a cube is turned (replicated as smallest three, 29 bits).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeRotation(pub Quat);

impl AsRotation for CubeRotation {
    fn rotation(&self) -> Quat {
        self.0
    }
    fn from_rotation(q: Quat) -> Self {
        CubeRotation(q)
    }
}

/// Sliding speed (server only; zero when at rest).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Velocity(pub Vec3);

/// Spin about the vertical axis, radians per second (server only).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spin(pub f32);

/// Marks the player's cube.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Player;

/// Position step on the wire: 1/512 of a unit, as in Fiedler's article.
pub const POSITION_UNIT: f32 = 1.0 / 512.0;

/// The replication registry of the scene: position (1/512 unit, 18 bits
/// per axis, +-256 units) and rotation (smallest three, 9 bits).
pub fn registry() -> Result<Registry, RegistryError> {
    Registry::new().position::<CubePosition>("position", POSITION_UNIT, 18)?.rotation::<CubeRotation>("rotation", 9)
}

/// Scene parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeConfig {
    /// Cubes per side of the grid (30: 900 cubes, plus the player's).
    pub grid: usize,
    /// Distance between grid cubes.
    pub spacing: f32,
    /// Cubes closer than this to the player are pushed.
    pub push_radius: f32,
    /// The player's speed, units per second.
    pub player_speed: f32,
    /// Velocity kept per tick while sliding (0..1).
    pub friction: f32,
    /// Seconds per tick (1/60).
    pub dt: f32,
}

impl Default for CubeConfig {
    fn default() -> Self {
        CubeConfig { grid: 30, spacing: 1.5, push_radius: 3.0, player_speed: 8.0, friction: 0.97, dt: 1.0 / 60.0 }
    }
}

/// The scene clock and the player's script (a resource).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeClock {
    /// Ticks run.
    pub tick: u64,
    /// Seconds the player has walked.
    pub walked: f32,
    /// Whether the player walks.
    pub player_moving: bool,
    /// The configuration.
    pub config: CubeConfig,
}

/// Why the scene could not be built or run.
#[derive(Debug)]
pub enum CubeError {
    /// A configuration value out of range.
    Config(String),
    /// The store refused an operation.
    Store(StoreError),
    /// The schedule refused to build or run.
    Schedule(ScheduleError),
    /// The registry refused a component.
    Registry(RegistryError),
    /// The transport failed.
    Transport(TransportError),
}

impl std::fmt::Display for CubeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CubeError::Config(s) => write!(f, "bad configuration: {s}"),
            CubeError::Store(e) => write!(f, "store: {e}"),
            CubeError::Schedule(e) => write!(f, "schedule: {e}"),
            CubeError::Registry(e) => write!(f, "registry: {e}"),
            CubeError::Transport(e) => write!(f, "transport: {e}"),
        }
    }
}

impl std::error::Error for CubeError {}

/// The player's point on its path at `walked` seconds: a loop through the
/// grid that crosses it many times.
pub fn player_path(config: &CubeConfig, walked: f32) -> Vec3 {
    let half = (config.grid as f32 - 1.0) * config.spacing * 0.5;
    let s = walked * config.player_speed / half.max(1.0);
    Vec3::new((s * 0.5).sin() * half * 0.9, (s * 0.37).sin() * (s * 0.11).cos() * half * 0.9, 0.0)
}

/// Advances the clock and walks the player (writes it only while it walks).
pub fn move_player(
    mut clock: ResMut<CubeClock>,
    mut player: Query<(&mut CubePosition, &mut CubeRotation), With<Player>>,
) {
    clock.tick += 1;
    if !clock.player_moving {
        return;
    }
    let config = clock.config;
    clock.walked += config.dt;
    let next = player_path(&config, clock.walked);
    player.for_each_mut(|(mut p, mut r)| {
        let heading = next - p.0;
        p.0 = next;
        if heading.length_squared() > 1e-12 {
            r.0 = Quat::from_rotation_z(heading.y.atan2(heading.x));
        }
    });
}

/// Pushes the cubes within the push radius of the player away from it
/// (writes only the pushed cubes' velocity).
pub fn push_cubes(
    clock: Res<CubeClock>,
    mut player: Query<&CubePosition, With<Player>>,
    mut cubes: Query<(&CubePosition, &mut Velocity, &mut Spin), Without<Player>>,
) {
    if !clock.player_moving {
        return;
    }
    let Some(center) = player.iter().next().map(|p| p.0) else { return };
    let radius = clock.config.push_radius;
    cubes.for_each_mut(|(p, mut v, mut spin)| {
        let away = p.0 - center;
        let d = away.length();
        if d < radius && d > 1e-4 {
            let push = away / d * (radius - d) * 6.0;
            v.0 = push;
            spin.0 = (away.x - away.y).signum() * push.length() * 1.5;
        }
    });
}

/// Scratch of [`knock_cubes`]: the grid and the gathered cubes.
#[derive(Default)]
pub struct KnockScratch {
    grid: Option<ecs_spatial::SparseGrid<Vec3, u32>>,
    entities: Vec<Entity>,
    ids: Vec<u32>,
    positions: Vec<Vec3>,
    velocities: Vec<Vec3>,
    hits: Vec<u32>,
}

/// Sliding cubes knock the cubes they touch (an `ecs-spatial` grid finds
/// them): part of the closing speed passes on, so pushes spread in chains.
/// Only knocked cubes are written.
pub fn knock_cubes(
    clock: Res<CubeClock>,
    mut cubes: Query<(Entity, &CubePosition, &mut Velocity), Without<Player>>,
    mut scratch: Local<KnockScratch>,
) {
    let contact = clock.config.spacing * 0.75;
    let s = &mut *scratch;
    s.entities.clear();
    s.ids.clear();
    s.positions.clear();
    s.velocities.clear();
    cubes.for_each_mut(|(e, p, v)| {
        s.ids.push(s.entities.len() as u32);
        s.entities.push(e);
        s.positions.push(p.0);
        s.velocities.push(v.0);
    });
    if !s.velocities.iter().any(|v| *v != Vec3::ZERO) {
        return;
    }
    if s.grid.is_none() {
        s.grid = ecs_spatial::SparseGrid::new(Vec3::ZERO, contact.max(0.01)).ok();
    }
    let Some(grid) = s.grid.as_mut() else { return };
    if grid.rebuild(&s.ids, &s.positions).is_err() {
        return;
    }
    let before = s.velocities.clone();
    for a in 0..s.entities.len() {
        let va = before[a];
        if va.length_squared() < 0.25 {
            continue;
        }
        s.hits.clear();
        grid.query_radius(s.positions[a], contact, &mut s.hits);
        for &b in &s.hits {
            let b = b as usize;
            if b == a {
                continue;
            }
            let dir = (s.positions[b] - s.positions[a]).normalize_or_zero();
            let closing = va.dot(dir) - before[b].dot(dir);
            if closing > 0.0 {
                let impulse = dir * closing * 0.45;
                s.velocities[b] += impulse;
                s.velocities[a] -= impulse;
            }
        }
    }
    for (i, e) in s.entities.iter().enumerate() {
        if s.velocities[i] != before[i]
            && let Ok((_, _, mut v)) = cubes.get_mut(*e)
        {
            v.0 = s.velocities[i];
        }
    }
}

/// Slides and spins the moving cubes; friction stops them (cubes at rest
/// are read, never written).
pub fn slide_cubes(
    clock: Res<CubeClock>,
    mut cubes: Query<(&mut CubePosition, &mut CubeRotation, &mut Velocity, &mut Spin), Without<Player>>,
) {
    let config = clock.config;
    let half = (config.grid as f32 + 4.0) * config.spacing * 0.5;
    cubes.for_each_mut(|(mut p, mut r, mut v, mut spin)| {
        if v.0 == Vec3::ZERO {
            return;
        }
        let next = (p.0 + v.0 * config.dt).clamp(Vec3::new(-half, -half, 0.0), Vec3::new(half, half, 0.0));
        p.0 = next;
        r.0 = (Quat::from_rotation_z(spin.0 * config.dt) * r.0).normalize();
        let slowed = v.0 * config.friction;
        if slowed.length() < 0.05 {
            v.0 = Vec3::ZERO;
            spin.0 = 0.0;
        } else {
            v.0 = slowed;
            spin.0 *= config.friction;
        }
    });
}

/// The scene: a world of 901 cubes and the schedule that moves them.
pub struct CubeScene {
    world: World,
    schedule: Schedule,
    player: Entity,
}

impl CubeScene {
    /// Builds the grid, the player and the schedule.
    pub fn new(config: &CubeConfig) -> Result<CubeScene, CubeError> {
        if !(1..=1000).contains(&config.grid) {
            return Err(CubeError::Config("grid must be 1..=1000 cubes per side".into()));
        }
        if !(config.spacing > 0.0 && config.dt > 0.0 && (0.0..1.0).contains(&config.friction)) {
            return Err(CubeError::Config("spacing and dt must be positive, friction within 0..1".into()));
        }
        let mut world = World::new();
        let half = (config.grid as f32 - 1.0) * config.spacing * 0.5;
        let cubes = (0..config.grid * config.grid).map(|i| {
            let (x, y) = ((i % config.grid) as f32, (i / config.grid) as f32);
            (
                Replicated,
                CubePosition(Vec3::new(x * config.spacing - half, y * config.spacing - half, 0.0)),
                CubeRotation(Quat::IDENTITY),
                Velocity(Vec3::ZERO),
                Spin(0.0),
            )
        });
        world.spawn_batch(cubes);
        let player =
            world.spawn((Replicated, CubePosition(player_path(config, 0.0)), CubeRotation(Quat::IDENTITY), Player));
        world.insert_resource(CubeClock { tick: 0, walked: 0.0, player_moving: true, config: *config });
        let mut schedule = Schedule::new();
        schedule.add_systems((move_player, push_cubes, knock_cubes, slide_cubes).chain());
        schedule.build(&mut world).map_err(CubeError::Schedule)?;
        Ok(CubeScene { world, schedule, player })
    }

    /// Runs one tick of the schedule.
    pub fn step(&mut self) -> Result<(), CubeError> {
        self.schedule.run(&mut self.world).map_err(CubeError::Schedule)
    }

    /// Starts or stops the player (stopped: everything settles, then the
    /// scene is at rest).
    pub fn set_player_moving(&mut self, moving: bool) {
        if let Some(clock) = self.world.resource_mut::<CubeClock>() {
            clock.player_moving = moving;
        }
    }

    /// The world.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// The world, mutably (for the replication server).
    pub fn world_mut(&mut self) -> &mut World {
        &mut self.world
    }

    /// The player's entity.
    pub fn player(&self) -> Entity {
        self.player
    }

    /// Cubes sliding now.
    pub fn moving_cubes(&mut self) -> usize {
        let mut q = self.world.query::<&Velocity>();
        q.iter(&self.world).filter(|v| v.0 != Vec3::ZERO).count()
    }
}

/// Bytes sent to one client in one tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientBytes {
    /// The client.
    pub client: ClientId,
    /// Snapshot payload bytes sent this tick (renet and UDP headers not
    /// counted).
    pub bytes: usize,
}

/// The cube scene, a replication server and `clients` clients, all over
/// loopback UDP (renet + renet_netcode, through [`Loopback`])
/// in one process. Each client has its own world that mirrors the scene.
pub struct CubeSession {
    scene: CubeScene,
    server: Server,
    net: Loopback,
    view: Option<View>,
}

impl CubeSession {
    /// Binds a server on 127.0.0.1 (any free port) and connects `clients`
    /// clients to it. `view`: each client's view (`None`: everything).
    pub fn new(config: &CubeConfig, clients: usize, view: Option<View>) -> Result<CubeSession, CubeError> {
        if !(1..=64).contains(&clients) {
            return Err(CubeError::Config("clients must be 1..=64".into()));
        }
        let mut scene = CubeScene::new(config)?;
        let reg = registry().map_err(CubeError::Registry)?;
        let server = Server::new(scene.world_mut(), reg, ServerConfig::default());
        // `registry()` succeeded just above and builds the same thing every
        // time; the default (empty) registry is never reached.
        let net = Loopback::bind(clients, || registry().unwrap_or_default()).map_err(CubeError::Transport)?;
        Ok(CubeSession { scene, server, net, view })
    }

    /// One tick: the scene steps, the server sends, every client receives
    /// and acknowledges. `dt` is the real time since the previous tick (the
    /// transport's timers run on it). Returns the bytes sent per client.
    pub fn tick(&mut self, dt: Duration) -> Result<Vec<ClientBytes>, CubeError> {
        self.scene.step()?;
        let step =
            self.net.tick(&mut self.server, self.scene.world_mut(), dt, self.view).map_err(CubeError::Transport)?;
        Ok(step.bytes.into_iter().map(|(client, bytes)| ClientBytes { client, bytes }).collect())
    }

    /// Clients the server has accepted so far.
    pub fn connected(&self) -> usize {
        self.server.clients().count()
    }

    /// The scene.
    pub fn scene(&mut self) -> &mut CubeScene {
        &mut self.scene
    }

    /// The server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// A client's counters on the server (bytes, entries, resyncs).
    pub fn client_stats(&self, id: ClientId) -> Option<ClientStats> {
        self.server.client_stats(id)
    }

    /// The clients: their worlds and replication state.
    pub fn clients(&self) -> impl Iterator<Item = (&World, &Client)> + '_ {
        self.net.clients()
    }

    /// Whether every client holds exactly the server's quantized state.
    pub fn converged(&self) -> bool {
        let ids: Vec<ClientId> = self.server.clients().collect();
        ids.len() == self.net.clients().count()
            && ids.iter().zip(self.net.clients()).all(|(id, (_, client))| {
                let mut want: Vec<_> = self
                    .server
                    .entities()
                    .filter(|(net, _, _)| self.server.in_interest(*id, *net))
                    .map(|(net, _, v)| (net, v.to_vec()))
                    .collect();
                let mut have: Vec<_> = client.entities().map(|(net, v)| (net, v.to_vec())).collect();
                want.sort_by_key(|(n, _)| *n);
                have.sort_by_key(|(n, _)| *n);
                want == have
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_udp_session_mirrors_the_scene_on_every_client() {
        let mut session = CubeSession::new(&CubeConfig::default(), 2, None).unwrap();
        let mut settled = false;
        for i in 0..4000 {
            std::thread::sleep(Duration::from_millis(1));
            if i == 200 {
                session.scene().set_player_moving(false);
            }
            let sent = session.tick(Duration::from_millis(16)).unwrap();
            assert!(sent.iter().all(|s| s.bytes <= ServerConfig::default().budget_bytes));
            if i > 200 && session.connected() == 2 && session.scene().moving_cubes() == 0 && session.converged() {
                settled = true;
                break;
            }
        }
        assert!(settled, "the clients never matched the server");
        for (world, client) in session.clients() {
            assert_eq!(client.len(), 901);
            assert_eq!(world.len(), 901);
        }
        let id = session.server().clients().next().unwrap();
        assert!(session.client_stats(id).unwrap().bytes_sent > 0);
        assert!(CubeSession::new(&CubeConfig::default(), 0, None).is_err());
    }
}
