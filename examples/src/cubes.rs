//! The cube scene of Glenn Fiedler's "Snapshot Compression": 901 cubes (a
//! 30 x 30 grid of small cubes plus the player's cube) on a flat floor. The
//! player walks a looping path and pushes the cubes near it; pushed cubes
//! slide, knock the cubes they touch, spin and settle under friction. Cubes at rest are never written,
//! so replication (and any `Changed` query) skips their chunks.
//!
//! - [`CubeScene`] is the world plus its own [`Schedule`], stepped by hand
//!   (the benches and the fuzzer drive a replication server with it);
//! - [`CubePlugin`] puts the same systems on an [`App`], in `FixedUpdate`;
//! - [`cube_server_app`] and [`cube_client_app`] are the two ends that the
//!   `replication_server` and `replication_client` binaries run (over UDP)
//!   and the tests run in one process (over a
//!   [`SharedNetwork`](ecs_replication::transport::SharedNetwork)): a server
//!   that waits for clients, spawns the scene when the first one comes
//!   ([`CubeServerState`]) and sends a snapshot every fixed step; a client
//!   that connects, mirrors the scene once its clock is synced and clears
//!   the mirror when the connection drops ([`CubeClientState`]).
//!
//! [`registry`] is what the server and clients agree on.
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

use std::collections::BTreeMap;
use std::time::Duration;

use ecs_core::prelude::*;
use ecs_core::schedule::SystemConfigs;
use ecs_core::{ScheduleError, StoreError};
use ecs_replication::bits::{BitError, BitReader, BitWriter};
use ecs_replication::clock::ClockConfig;
use ecs_replication::input::ClientInput;
use ecs_replication::plugin::{
    ReplicationClient, ReplicationClientEvent, ReplicationClientPlugin, ReplicationServer, ReplicationServerEvent,
    ReplicationServerPlugin,
};
use ecs_replication::prelude::*;
use ecs_replication::registry::RegistryError;
use ecs_replication::session::ClientSessionConfig;
use ecs_replication::transport::{ClientTransport, ServerTransport};
use glam::{Quat, Vec3};

/// Where a cube is (replicated, quantized to [`POSITION_UNIT`]).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
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
#[derive(Component, Clone, Copy, Debug, PartialEq)]
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
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Velocity(pub Vec3);

/// Spin about the vertical axis, radians per second (server only).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Spin(pub f32);

/// Marks the player's cube.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
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
}

impl std::fmt::Display for CubeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CubeError::Config(s) => write!(f, "bad configuration: {s}"),
            CubeError::Store(e) => write!(f, "store: {e}"),
            CubeError::Schedule(e) => write!(f, "schedule: {e}"),
            CubeError::Registry(e) => write!(f, "registry: {e}"),
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

/// Checks a configuration before anything is built from it.
fn check_config(config: &CubeConfig) -> Result<(), CubeError> {
    if !(1..=1000).contains(&config.grid) {
        return Err(CubeError::Config("grid must be 1..=1000 cubes per side".into()));
    }
    if !(config.spacing.is_finite() && config.spacing > 0.0 && (0.0..1.0).contains(&config.friction)) {
        return Err(CubeError::Config("spacing must be positive, friction within 0..1".into()));
    }
    if !(config.dt.is_finite() && (1e-4..=1.0).contains(&config.dt)) {
        return Err(CubeError::Config("dt must be within 0.0001..=1 s".into()));
    }
    Ok(())
}

/// Spawns the scene into `world`: the grid of cubes at rest and the
/// player at the start of its path. Returns the player's entity. The
/// scene's systems need a [`CubeClock`] resource besides.
pub fn spawn_cubes(world: &mut World, config: &CubeConfig) -> Entity {
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
    world.spawn((Replicated, CubePosition(player_path(config, 0.0)), CubeRotation(Quat::IDENTITY), Player))
}

/// The scene's systems in their order: the player walks, pushes, the
/// cubes knock each other, then slide. One run is one tick of
/// [`CubeConfig::dt`].
pub fn cube_systems() -> SystemConfigs {
    (move_player, push_cubes, knock_cubes, slide_cubes).chain()
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
        check_config(config)?;
        let mut world = World::new();
        let player = spawn_cubes(&mut world, config);
        world.insert_resource(CubeClock { tick: 0, walked: 0.0, player_moving: true, config: *config });
        let mut schedule = Schedule::new();
        schedule.add_systems(cube_systems());
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
        moving_cubes(&mut self.world)
    }
}

/// Cubes sliding now in `world`.
pub fn moving_cubes(world: &mut World) -> usize {
    let mut q = world.query::<&Velocity>();
    q.iter(world).filter(|v| v.0 != Vec3::ZERO).count()
}

/// The scene's systems, as a set (in `FixedUpdate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CubeSystems;

impl SystemSet for CubeSystems {}

/// The scene on an [`App`]: a fixed step of [`CubeConfig::dt`], a
/// [`CubeClock`], and [`cube_systems`] in `FixedUpdate` in [`CubeSystems`].
/// It spawns nothing: call [`spawn_cubes`] when the scene should appear
/// (the server app does on entering [`CubeServerState::Running`]).
pub struct CubePlugin {
    /// The scene's parameters (checked by [`cube_server_app`]).
    pub config: CubeConfig,
}

impl Plugin for CubePlugin {
    fn build(&self, app: &mut App) {
        let config = self.config;
        app.insert_resource(Time::<Fixed>::from_seconds(config.dt as f64))
            .insert_resource(CubeClock { tick: 0, walked: 0.0, player_moving: true, config })
            .add_systems(FixedUpdate, cube_systems().in_set(CubeSystems));
    }
}

/// The input of a cube client: none (the cube clients watch). Upstream
/// datagrams carry only acknowledgements and clock samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoInput;

impl ClientInput for NoInput {
    fn write(&self, _: &mut BitWriter) {}
    fn read(_: &mut BitReader<'_>) -> Result<Self, BitError> {
        Ok(NoInput)
    }
}

/// What the cube apps report (connections, state changes, the figures of
/// each second), one line each, oldest first. The binaries print and
/// [`take`](CubeLog::take) them after every frame; tests read them. Lines
/// pile up until taken.
#[derive(Debug, Default)]
pub struct CubeLog {
    lines: Vec<String>,
}

impl CubeLog {
    /// Adds a line.
    pub fn push(&mut self, line: String) {
        self.lines.push(line);
    }

    /// The lines not taken yet.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Takes the lines.
    pub fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines)
    }
}

/// How often the apps log their figures.
pub const REPORT_PERIOD: Duration = Duration::from_secs(1);

/// The server app's phases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CubeServerState {
    /// No client: no scene, nothing simulated (snapshots of an empty world
    /// to nobody).
    #[default]
    Waiting,
    /// At least one client: the scene exists and steps. Entering spawns it
    /// fresh; leaving (the last client left) despawns it.
    Running,
}

impl States for CubeServerState {}

/// The server end of the cube scene on an [`App`]: the
/// [`ReplicationServerPlugin`] over `transport` (new clients see `view`;
/// `None`: everything), the [`CubePlugin`] in `FixedUpdate` while
/// [`CubeServerState::Running`], a snapshot to every client each fixed
/// step of [`CubeConfig::dt`] (in `FixedLast`), and a [`CubeLog`]:
/// "client N connected" / "client N left", the scene spawned and cleared,
/// and every [`REPORT_PERIOD`] the server tick, the moving cubes and each
/// client's snapshot bandwidth.
///
/// The app runs on the real clock unless the caller inserts a
/// [`TimeUpdateStrategy`] (tests: `ManualDuration` of one step per frame).
pub fn cube_server_app(
    config: &CubeConfig,
    view: Option<View>,
    transport: impl ServerTransport + Send + Sync + 'static,
) -> Result<App, CubeError> {
    check_config(config)?;
    let registry = registry().map_err(CubeError::Registry)?;
    let mut app = App::new();
    app.add_plugins(
        ReplicationServerPlugin::<NoInput>::new(registry, ServerConfig::default(), transport).with_view(view),
    )
    .add_plugins(CubePlugin { config: *config })
    .init_resource::<CubeLog>()
    .init_state::<CubeServerState>()
    .configure_sets(FixedUpdate, CubeSystems.run_if(in_state(CubeServerState::Running)))
    .add_systems(Update, (track_clients, report_server.run_if(on_timer(REPORT_PERIOD))).chain())
    .add_systems(OnEnter(CubeServerState::Running), start_scene)
    .add_systems(OnExit(CubeServerState::Running), clear_scene);
    Ok(app)
}

/// Logs connections and moves between waiting and running as clients
/// come and go.
fn track_clients(
    mut events: EventReader<ReplicationServerEvent>,
    server: Res<ReplicationServer<NoInput>>,
    state: Res<State<CubeServerState>>,
    mut next: ResMut<NextState<CubeServerState>>,
    mut log: ResMut<CubeLog>,
) {
    for event in events.read() {
        log.push(match event {
            ReplicationServerEvent::Connected(id) => format!("client {} connected", id.0),
            ReplicationServerEvent::Disconnected(id) => format!("client {} left", id.0),
        });
    }
    let clients = server.session.server().clients().count();
    match state.get() {
        CubeServerState::Waiting if clients > 0 => next.set(CubeServerState::Running),
        CubeServerState::Running if clients == 0 => next.set(CubeServerState::Waiting),
        _ => {}
    }
}

/// Entering Running: a fresh scene (the grid at rest, the player at the
/// start of its path, the clock at zero).
fn start_scene(world: &mut World) {
    let Some(clock) = world.resource_mut::<CubeClock>() else { return };
    let config = clock.config;
    *clock = CubeClock { tick: 0, walked: 0.0, player_moving: true, config };
    spawn_cubes(world, &config);
    let cubes = world.query::<&CubePosition>().iter(world).count();
    if let Some(log) = world.resource_mut::<CubeLog>() {
        log.push(format!("scene spawned: {cubes} cubes"));
    }
}

/// Leaving Running (the last client left): the scene goes (every entity
/// with a [`CubePosition`]), so the next client starts a fresh one.
fn clear_scene(world: &mut World) {
    let doomed: Vec<Entity> = world.query_filtered::<Entity, With<CubePosition>>().iter(world).collect();
    for &entity in &doomed {
        // Only this system despawns scene entities: each is still alive.
        let _ = world.despawn(entity);
    }
    if let Some(log) = world.resource_mut::<CubeLog>() {
        log.push(format!("no clients left: scene cleared ({} cubes despawned)", doomed.len()));
    }
}

/// Every report period: the server tick, the moving cubes, each client's
/// snapshot bandwidth over the period.
fn report_server(
    server: Res<ReplicationServer<NoInput>>,
    mut cubes: Query<&Velocity>,
    mut log: ResMut<CubeLog>,
    mut sent_before: Local<BTreeMap<ClientId, u64>>,
) {
    let moving = cubes.iter().filter(|v| v.0 != Vec3::ZERO).count();
    let snapshots = server.session.server();
    let mut line = Vec::new();
    let mut sent_now = BTreeMap::new();
    for id in snapshots.clients() {
        let sent = snapshots.client_stats(id).map_or(0, |s| s.bytes_sent);
        let before = sent_before.get(&id).copied().unwrap_or(0);
        let kbps = sent.saturating_sub(before) as f64 * 8.0 / 1000.0 / REPORT_PERIOD.as_secs_f64();
        line.push(format!("client {}: {kbps:.1} kbps", id.0));
        sent_now.insert(id, sent);
    }
    *sent_before = sent_now;
    log.push(format!(
        "tick {:>5}  moving cubes {moving:>3}  {}",
        snapshots.tick(),
        if line.is_empty() { "no clients".into() } else { line.join(", ") }
    ));
}

/// The client app's phases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CubeClientState {
    /// Waiting for the connection, the first snapshot and the first round
    /// trip of the clock.
    #[default]
    Connecting,
    /// The scene is mirrored and the clock follows the server's.
    Synced,
    /// The connection dropped (or never came): the mirror is cleared and
    /// [`CubeClientEnd`] says why.
    Disconnected,
}

impl States for CubeClientState {}

/// Why a client app reached [`CubeClientState::Disconnected`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CubeDisconnect {
    /// No connection within the connect timeout.
    NoConnection(Duration),
    /// The connection was up and went down (the server left, timed out or
    /// dropped the client).
    ByServer,
}

impl std::fmt::Display for CubeDisconnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CubeDisconnect::NoConnection(after) => {
                write!(f, "no connection after {} s (is the server running?)", after.as_secs_f64())
            }
            CubeDisconnect::ByServer => f.write_str("disconnected by the server"),
        }
    }
}

/// A client app's outcome: `None` until it disconnects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CubeClientEnd(pub Option<CubeDisconnect>);

/// How long a client app waits for its connection (a resource).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectTimeout(pub Duration);

/// The client end of the cube scene on an [`App`]: the
/// [`ReplicationClientPlugin`] as client `id` over `transport` (nothing
/// predicted, snapshots written as they arrive, the clock at the scene's
/// tick rate), the [`CubeClientState`]s (Connecting until the first
/// snapshot and round trip, Synced, Disconnected when the connection
/// drops or does not come within `connect_timeout` of real time; entering
/// Disconnected despawns the mirrored entities), and a [`CubeLog`]:
/// "connected", "synced ...", the disconnect, and every [`REPORT_PERIOD`]
/// the newest snapshot tick, the entities held, the bandwidth, the packet
/// counters and the clock's round trip.
///
/// The app runs on the real clock unless the caller inserts a
/// [`TimeUpdateStrategy`].
pub fn cube_client_app(
    config: &CubeConfig,
    id: ClientId,
    transport: impl ClientTransport + Send + Sync + 'static,
    connect_timeout: Duration,
) -> Result<App, CubeError> {
    check_config(config)?;
    let registry = registry().map_err(CubeError::Registry)?;
    let session = ClientSessionConfig {
        clock: ClockConfig { tick_hz: 1.0 / config.dt as f64, ..ClockConfig::default() },
        predict: false,
        interpolation: None,
        ..ClientSessionConfig::default()
    };
    let mut app = App::new();
    app.add_plugins(ReplicationClientPlugin::<NoInput>::new(registry, id, session, transport))
        .init_resource::<CubeLog>()
        .init_resource::<CubeClientEnd>()
        .insert_resource(ConnectTimeout(connect_timeout))
        .init_state::<CubeClientState>()
        .add_systems(
            Update,
            (
                watch_connection,
                await_sync.run_if(in_state(CubeClientState::Connecting)),
                report_client.run_if(on_timer(REPORT_PERIOD)),
            )
                .chain()
                .run_if(not(in_state(CubeClientState::Disconnected))),
        )
        .add_systems(OnEnter(CubeClientState::Synced), announce_sync)
        .add_systems(OnEnter(CubeClientState::Disconnected), clear_mirror);
    Ok(app)
}

/// Logs the connection coming up; its going down ends the session.
fn watch_connection(
    mut events: EventReader<ReplicationClientEvent>,
    mut end: ResMut<CubeClientEnd>,
    mut next: ResMut<NextState<CubeClientState>>,
    mut log: ResMut<CubeLog>,
) {
    for event in events.read() {
        match event {
            ReplicationClientEvent::Connected => log.push("connected".into()),
            ReplicationClientEvent::Disconnected => {
                end.0 = Some(CubeDisconnect::ByServer);
                next.set(CubeClientState::Disconnected);
            }
        }
    }
}

/// Connecting: synced once a snapshot is applied and the clock has a
/// round trip; gives up when no connection came within the timeout.
fn await_sync(
    client: Res<ReplicationClient<NoInput>>,
    time: Res<Time<Real>>,
    timeout: Res<ConnectTimeout>,
    mut end: ResMut<CubeClientEnd>,
    mut next: ResMut<NextState<CubeClientState>>,
) {
    if end.0.is_some() {
        return;
    }
    let session = &client.session;
    if session.client().counters().applied > 0 && session.clock().rtt().is_some() {
        next.set(CubeClientState::Synced);
    } else if !client.is_connected() && time.elapsed() > timeout.0 {
        end.0 = Some(CubeDisconnect::NoConnection(timeout.0));
        next.set(CubeClientState::Disconnected);
    }
}

/// Entering Synced: what the client holds.
fn announce_sync(client: Res<ReplicationClient<NoInput>>, mut log: ResMut<CubeLog>) {
    let session = &client.session;
    log.push(format!(
        "synced: {} entities at tick {}, rtt {:.1} ms",
        session.client().len(),
        session.client().last_applied(),
        session.clock().rtt().unwrap_or_default().as_secs_f64() * 1000.0
    ));
}

/// Entering Disconnected: the mirror is stale, so it goes (every entity
/// with a [`NetId`]).
fn clear_mirror(world: &mut World) {
    let doomed: Vec<Entity> = world.query_filtered::<Entity, With<NetId>>().iter(world).collect();
    for &entity in &doomed {
        // Only this system despawns mirrored entities once disconnected.
        let _ = world.despawn(entity);
    }
    let reason = world.resource::<CubeClientEnd>().and_then(|end| end.0);
    if let Some(log) = world.resource_mut::<CubeLog>() {
        let reason = reason.map_or_else(|| "disconnected".to_string(), |r| r.to_string());
        log.push(format!("{reason}: {} mirrored entities removed", doomed.len()));
    }
}

/// Every report period: the newest snapshot tick, the entities held, the
/// bandwidth over the period, the packet counters, the round trip.
fn report_client(client: Res<ReplicationClient<NoInput>>, mut log: ResMut<CubeLog>, mut bytes_before: Local<u64>) {
    let snapshots = client.session.client();
    let c = snapshots.counters();
    let kbps = c.bytes_received.saturating_sub(*bytes_before) as f64 * 8.0 / 1000.0 / REPORT_PERIOD.as_secs_f64();
    *bytes_before = c.bytes_received;
    log.push(format!(
        "tick {:>5}  entities {:>4}  {kbps:.1} kbps  applied {} stale {} refused {}  rtt {:.1} ms",
        snapshots.last_applied(),
        snapshots.len(),
        c.applied,
        c.stale,
        c.refused,
        client.session.clock().rtt().unwrap_or_default().as_secs_f64() * 1000.0
    ));
}
