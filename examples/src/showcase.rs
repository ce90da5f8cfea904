//! The showcase scene: static scenery, transform hierarchies (rigs), a flock
//! of boids and two armies of melee units in one [`App`]: the
//! [`TransformPlugin`], two [`BroadPhasePlugin`]s, the flock and the battle
//! in fixed steps of 1/60 s, and a replication server beside it.
//!
//! Each frame is 1/60 s of game time on a manual clock ([`FRAME`]), one
//! fixed step: the broad phases (`FixedPreUpdate`), then [`spin_rigs`], the
//! boids and the battle (`FixedUpdate`), then transform propagation and
//! [`sync_positions`] (`PostUpdate`), then the replication tick
//! ([`Showcase::step`]). The run is a state: [`ShowcaseState::Running`]
//! while frames are measured, then [`Showcase::finish`] enters
//! [`ShowcaseState::Summary`], which stops the simulation and records the
//! [`ShowcaseSummary`].
//!
//! A chosen share of the rigs and boids is active (the units all march and
//! fight, on a broad phase of their own: [`crate::melee`]); everything else
//! is written once at spawn and never again, so its chunks are skipped by
//! every change-driven system: propagation, the position sync, the broad
//! phase and replication.
//!
//! With `clients > 0` every positioned entity is replicated (`ecs-replication`)
//! to that many clients over loopback UDP (renet + netcode) in this process,
//! each client seeing what lies within [`VIEW_RADIUS`] of the flock's centre.
//!
//! ```
//! use ecs_examples::showcase::{Showcase, ShowcaseConfig};
//!
//! let config = ShowcaseConfig { entities: 4_000, active: 0.05, seed: 7, clients: 0 };
//! let mut show = Showcase::new(&config).unwrap();
//! show.step().unwrap(); // the first frame sees every spawn
//! show.step().unwrap();
//! let rows = show.system_rows();
//! let propagation = rows.iter().find(|r| r.name == "propagate_transforms").unwrap();
//! assert!(propagation.chunks.chunks_skipped > 0);
//! let summary = show.finish().unwrap();
//! assert_eq!(summary.fixed_steps, 2);
//! ```

use ecs_core::app::{AppError, Schedules};
use ecs_core::prelude::*;
use ecs_core::{ScheduleError, StoreError};
use ecs_spatial::BroadPhasePlugin;
use ecs_spatial::broad_phase::Position;

use std::time::{Duration, Instant};

use ecs_replication::prelude::{Registry, Replicated, Server, ServerConfig, View};
use ecs_replication::registry::RegistryError;
use ecs_replication::transport::TransportError;
use ecs_replication::transport::udp::Loopback;

use crate::boids::{BoidsConfig, BoidsError, BoidsSystems, add_boids};
use crate::melee::{MeleeConfig, MeleeError, MeleeSummary, MeleeSystems, add_melee, summary};
use ecs_transform::{
    GlobalTransform, LocalTransform, TransformPlugin, TransformSystems, WorldHierarchyExt, transform_bundle,
};
use glam::{Quat, Vec3};

/// How big the scene is and how much of it moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShowcaseConfig {
    /// Entities in all (at least 100): half scenery, a fifth rig nodes, a fifth
    /// boids, a tenth units.
    pub entities: usize,
    /// Share (0.0 to 1.0) of rigs, boids and units that are active.
    pub active: f64,
    /// Seed of every random choice in the scene.
    pub seed: u64,
    /// Replication clients over loopback UDP (0 to 64; 0: no replication).
    pub clients: usize,
}

/// Each replication client sees the entities within this distance of the
/// flock's centre.
pub const VIEW_RADIUS: f32 = 100.0;

/// Position step of the replicated positions (1/64 unit, 20 bits per axis:
/// +-8192 units).
pub const POSITION_UNIT: f32 = 1.0 / 64.0;

/// The replicated components: the broad phase's [`Position`].
///
/// # Errors
///
/// The registry's error if the codec parameters are refused.
pub fn registry() -> Result<Registry, RegistryError> {
    Registry::new().position::<Position>("position", POSITION_UNIT, 20)
}

/// Why a scene could not be built or run.
#[derive(Debug)]
pub enum ShowcaseError {
    /// A configuration value out of range.
    Config(String),
    /// The store refused an operation.
    Store(StoreError),
    /// A schedule refused to build or run.
    Schedule(ScheduleError),
    /// A schedule of the app refused to build.
    App(AppError),
    /// A hierarchy edit failed.
    Hierarchy(ecs_transform::HierarchyError),
    /// The broad phase refused its configuration.
    Grid(ecs_spatial::GridError),
    /// The flock could not be set up.
    Boids(BoidsError),
    /// The armies could not be set up.
    Melee(MeleeError),
    /// The replication registry refused its codecs.
    Registry(RegistryError),
    /// The UDP transport failed.
    Transport(TransportError),
}

impl std::fmt::Display for ShowcaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShowcaseError::Config(s) => write!(f, "bad configuration: {s}"),
            ShowcaseError::Store(e) => write!(f, "store: {e}"),
            ShowcaseError::Schedule(e) => write!(f, "schedule: {e}"),
            ShowcaseError::App(e) => write!(f, "app: {e}"),
            ShowcaseError::Hierarchy(e) => write!(f, "hierarchy: {e}"),
            ShowcaseError::Grid(e) => write!(f, "broad phase: {e}"),
            ShowcaseError::Boids(e) => write!(f, "boids: {e}"),
            ShowcaseError::Melee(e) => write!(f, "melee: {e}"),
            ShowcaseError::Registry(e) => write!(f, "replication registry: {e}"),
            ShowcaseError::Transport(e) => write!(f, "transport: {e}"),
        }
    }
}

impl std::error::Error for ShowcaseError {}

impl From<StoreError> for ShowcaseError {
    fn from(e: StoreError) -> Self {
        ShowcaseError::Store(e)
    }
}

impl From<ScheduleError> for ShowcaseError {
    fn from(e: ScheduleError) -> Self {
        ShowcaseError::Schedule(e)
    }
}

impl From<AppError> for ShowcaseError {
    fn from(e: AppError) -> Self {
        ShowcaseError::App(e)
    }
}

/// Nodes per rig: a root, three limbs of three nodes.
pub const RIG_NODES: usize = 10;

/// Marks static scenery (never written after spawn).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Scenery;

/// Spins an active rig's root about the vertical axis and bobs it.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Spin {
    /// Radians per second.
    pub speed: f32,
    /// Phase of the bob, radians.
    pub phase: f32,
}

/// Game time per frame, and the fixed step: 1/60 s (the same duration
/// for both, so every frame runs exactly one step).
pub const FRAME: Duration = Duration::from_nanos(16_666_667);

/// The showcase run (a state): the scene moves while
/// [`ShowcaseState::Running`]; [`Showcase::finish`] enters
/// [`ShowcaseState::Summary`], which stops it and records the
/// [`ShowcaseSummary`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShowcaseState {
    /// Frames are being run and measured.
    #[default]
    Running,
    /// The run is over.
    Summary,
}

impl States for ShowcaseState {}

/// The showcase's own systems in `FixedUpdate` ([`spin_rigs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShowcaseSystems;

impl SystemSet for ShowcaseSystems {}

/// What the run did, a resource recorded on entering
/// [`ShowcaseState::Summary`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShowcaseSummary {
    /// Fixed steps run.
    pub fixed_steps: u64,
    /// Game time simulated (the fixed steps), seconds.
    pub game_seconds: f64,
    /// Entities in the world.
    pub entities: u32,
    /// The battle: units alive and kills per team.
    pub battle: MeleeSummary,
}

/// SplitMix64: small deterministic generator for scene layout.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// Spins and bobs the active rigs' roots (their locals change every step).
pub fn spin_rigs(mut rigs: Query<(&mut LocalTransform, &Spin)>, time: Res<Time>) {
    let t = time.elapsed_secs();
    rigs.for_each_mut(|(mut local, spin)| {
        local.rotation = Quat::from_rotation_y(spin.speed * t);
        local.translation.y = 0.5 * (t * 2.0 + spin.phase).sin();
    });
}

/// Copies a changed global translation into the broad-phase [`Position`],
/// writing only when it differs, so only moved rigs reach the grid.
pub fn sync_positions(mut moved: Query<(&GlobalTransform, &mut Position), Changed<GlobalTransform>>) {
    moved.for_each_mut(|(global, mut pos)| {
        pos.set_if_neq(Position(global.translation()));
    });
}

/// One system's line of the showcase table.
#[derive(Clone, Debug, PartialEq)]
pub struct SystemRow {
    /// The system's short name.
    pub name: String,
    /// Chunk counts of its queries in the latest run, added up.
    pub chunks: ChunkStats,
    /// Entities its widest query matched (queries of one system often
    /// overlap, so their counts are not added).
    pub entities: u64,
    /// Wall time of its latest run.
    pub time: std::time::Duration,
}

/// A system's path without module prefixes or generic arguments.
/// A system's name without module paths: `update_broad_phase<Position>`.
fn short_name(path: &str) -> String {
    let mut out = String::new();
    for (i, part) in path.split('<').enumerate() {
        if i > 0 {
            out.push('<');
        }
        out.push_str(part.rsplit("::").next().unwrap_or(part));
    }
    out
}

/// The replication server and its clients over loopback UDP.
pub struct Network {
    server: Server,
    link: Loopback,
    clients: usize,
}

impl Network {
    /// The server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The clients: their worlds and replication state.
    pub fn clients(&self) -> impl Iterator<Item = (&World, &ecs_replication::prelude::Client)> + '_ {
        self.link.clients()
    }
}

/// What one network tick did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NetFrame {
    /// Wall time of the tick: the server's change scan and encode, the UDP
    /// sends, and every client's receive, apply and acknowledgement.
    pub time: Duration,
    /// The server's part of [`NetFrame::time`]: receiving acknowledgements,
    /// the change scan, encoding and the UDP sends (the rest is the
    /// in-process clients receiving and applying).
    pub server_time: Duration,
    /// Snapshot payload bytes sent, averaged over the clients.
    pub bytes_per_client: f64,
    /// The server's change scan: chunks of replicated archetypes and how
    /// many were skipped (entities: the replicated ones).
    pub chunks: ChunkStats,
    /// Clients connected to the server.
    pub connected: usize,
    /// Replicated entities the change scan found with a changed value
    /// this tick (every client's books and packet work scale with it).
    pub changed: usize,
}

/// On entering [`ShowcaseState::Summary`]: records the [`ShowcaseSummary`].
fn record_summary(world: &mut World) {
    let fixed_steps = world.resource::<Time<Fixed>>().map_or(0, Time::frame_count);
    let game_seconds = world.resource::<Time<Fixed>>().map_or(0.0, Time::elapsed_secs_f64);
    let battle = summary(world);
    let entities = world.len();
    world.insert_resource(ShowcaseSummary { fixed_steps, game_seconds, entities, battle });
}

/// The scene: the app and what was spawned.
pub struct Showcase {
    /// The app: world, plugins, schedules.
    pub app: App,
    /// Scenery entities.
    pub scenery: usize,
    /// Rigs, and how many of them spin.
    pub rigs: (usize, usize),
    /// Boids, and how many of them fly.
    pub boids: (usize, usize),
    /// Melee units (both teams) at the start.
    pub units: usize,
    /// Replication, when clients were asked for.
    pub network: Option<Network>,
    /// The latest network tick.
    pub net_frame: Option<NetFrame>,
}

impl Showcase {
    /// Builds the scene for `config`.
    ///
    /// # Errors
    ///
    /// [`ShowcaseError::Config`] for fewer than 100 entities or a share outside
    /// 0.0..=1.0; store, hierarchy and schedule errors as they come.
    pub fn new(config: &ShowcaseConfig) -> Result<Self, ShowcaseError> {
        if config.entities < 100 {
            return Err(ShowcaseError::Config(format!("{} entities: need at least 100", config.entities)));
        }
        if config.clients > 64 {
            return Err(ShowcaseError::Config(format!("{} clients: at most 64", config.clients)));
        }
        if !(0.0..=1.0).contains(&config.active) {
            return Err(ShowcaseError::Config(format!("active share {} is outside 0.0..=1.0", config.active)));
        }
        let mut rng = Rng::new(config.seed);
        let side = (config.entities as f32).sqrt() * 2.0;
        let grid = BroadPhasePlugin::<Position>::try_new(Vec3::splat(-side), 8.0).map_err(ShowcaseError::Grid)?;
        let mut app = App::new();
        app.add_plugins((TransformPlugin, grid))
            .insert_resource(TimeUpdateStrategy::ManualDuration(FRAME))
            .insert_resource(Time::<Fixed>::from_duration(FRAME))
            .init_state::<ShowcaseState>()
            .add_systems(FixedUpdate, spin_rigs.in_set(ShowcaseSystems))
            .add_systems(PostUpdate, sync_positions.after(TransformSystems::Propagate))
            .add_systems(OnEnter(ShowcaseState::Summary), record_summary);
        let world = app.world_mut();

        let scenery = config.entities / 2;
        world.spawn_batch((0..scenery).map(|_| {
            let p = Vec3::new(rng.range(-side, side), 0.0, rng.range(-side, side));
            let (local, global) = transform_bundle(LocalTransform::from_translation(p));
            (local, global, Position(p), Scenery, Replicated)
        }));

        let rigs = config.entities / 5 / RIG_NODES;
        let spinning = (rigs as f64 * config.active).round() as usize;
        for r in 0..rigs {
            let p = Vec3::new(rng.range(-side, side), 0.0, rng.range(-side, side));
            let (local, global) = transform_bundle(LocalTransform::from_translation(p));
            let root = if r < spinning {
                let spin = Spin { speed: rng.range(0.5, 2.0), phase: rng.range(0.0, std::f32::consts::TAU) };
                world.spawn((local, global, Position(p), spin, Replicated))
            } else {
                world.spawn((local, global, Position(p), Replicated))
            };
            for limb in 0..3 {
                let mut parent = root;
                for joint in 0..3 {
                    let offset = match (limb, joint) {
                        (0, 0) => Vec3::new(0.5, 1.0, 0.0),
                        (1, 0) => Vec3::new(-0.5, 1.0, 0.0),
                        (_, 0) => Vec3::new(0.0, 1.5, 0.0),
                        _ => Vec3::new(0.0, 0.5, 0.0),
                    };
                    let node = world.spawn(transform_bundle(LocalTransform::from_translation(offset)));
                    world.set_parent(node, parent).map_err(ShowcaseError::Hierarchy)?;
                    parent = node;
                }
            }
        }

        // The flock shares the scene's broad phase (the plugin above keeps
        // it before every fixed step; the boids read it in the step).
        let flock = BoidsConfig {
            boids: config.entities / 5,
            active_share: config.active as f32,
            seed: config.seed,
            add_broad_phase: false,
            ..BoidsConfig::default()
        };
        let flock = add_boids(&mut app, &flock).map_err(ShowcaseError::Boids)?;
        for &boid in &flock.boids {
            app.world_mut().insert_one(boid, Replicated)?;
        }
        // Two armies march at each other and fight (all-pairs query on the
        // units' own broad phase); the dead are despawned.
        let armies = MeleeConfig { units_per_team: (config.entities / 20).max(1), ..MeleeConfig::default() };
        let units = add_melee(&mut app, &armies).map_err(ShowcaseError::Melee)?.len();
        // Everything moves only while the run is on.
        let running = || in_state(ShowcaseState::Running);
        app.configure_sets(FixedUpdate, ShowcaseSystems.run_if(running()))
            .configure_sets(FixedUpdate, BoidsSystems.run_if(running()))
            .configure_sets(FixedUpdate, MeleeSystems.run_if(running()));
        app.build_schedules()?;
        let network = if config.clients > 0 {
            let server =
                Server::new(app.world_mut(), registry().map_err(ShowcaseError::Registry)?, ServerConfig::default());
            // The registry was accepted just above; a default one would only
            // make the clients refuse every packet (schema hash mismatch).
            let link =
                Loopback::bind(config.clients, || registry().unwrap_or_default()).map_err(ShowcaseError::Transport)?;
            Some(Network { server, link, clients: config.clients })
        } else {
            None
        };
        Ok(Showcase {
            app,
            scenery,
            rigs: (rigs, spinning),
            boids: (flock.boids.len(), flock.active),
            units,
            network,
            net_frame: None,
        })
    }

    /// The world.
    pub fn world(&self) -> &World {
        self.app.world()
    }

    /// The world, mutably.
    pub fn world_mut(&mut self) -> &mut World {
        self.app.world_mut()
    }

    /// The run's state.
    pub fn state(&self) -> ShowcaseState {
        self.world().resource::<State<ShowcaseState>>().map_or(ShowcaseState::Running, |s| *s.get())
    }

    /// Runs one frame: the app's frame (one fixed step of 1/60 s), then the
    /// replication tick.
    ///
    /// # Errors
    ///
    /// The app's error when a schedule could not be built, the transport's
    /// when the network tick failed.
    pub fn step(&mut self) -> Result<(), ShowcaseError> {
        self.app.try_update()?;
        if let Some(net) = &mut self.network {
            let view = View { center: Vec3::ZERO, radius: VIEW_RADIUS };
            let start = Instant::now();
            let step = net
                .link
                .serve(&mut net.server, self.app.world_mut(), FRAME, Some(view))
                .map_err(ShowcaseError::Transport)?;
            let server_time = start.elapsed();
            net.link.pump_clients(FRAME).map_err(ShowcaseError::Transport)?;
            let time = start.elapsed();
            let stats = net.server.tick_stats();
            let sent: usize = step.bytes.iter().map(|&(_, b)| b).sum();
            self.net_frame = Some(NetFrame {
                time,
                server_time,
                bytes_per_client: sent as f64 / net.clients as f64,
                chunks: ChunkStats {
                    chunks_total: stats.chunks_total,
                    chunks_skipped: stats.chunks_skipped,
                    entities: net.server.entities().count() as u64,
                },
                connected: net.server.clients().count(),
                changed: stats.changed,
            });
        }
        Ok(())
    }

    /// Ends the run: enters [`ShowcaseState::Summary`] (one more frame, in
    /// which nothing moves) and returns the [`ShowcaseSummary`] recorded on
    /// entering it.
    ///
    /// # Errors
    ///
    /// As [`Showcase::step`].
    pub fn finish(&mut self) -> Result<ShowcaseSummary, ShowcaseError> {
        if let Some(next) = self.world_mut().resource_mut::<NextState<ShowcaseState>>() {
            next.set(ShowcaseState::Summary);
        }
        self.app.try_update()?;
        self.world()
            .resource::<ShowcaseSummary>()
            .copied()
            .ok_or_else(|| ShowcaseError::Config("the summary was not recorded".to_owned()))
    }

    /// The latest frame's per-system figures: every schedule of a frame in
    /// the order they run (the fixed-step ones after `RunFixedMainLoop`),
    /// each's systems in the order they were added; the state transitions
    /// are left out.
    pub fn system_rows(&self) -> Vec<SystemRow> {
        let order = self.app.schedule_order();
        let mut labels = Vec::new();
        for label in &order.frame {
            if *label == StateTransition.intern() {
                continue;
            }
            labels.push(label.clone());
            if *label == RunFixedMainLoop.intern() {
                labels.extend(order.fixed.iter().cloned());
            }
        }
        let Some(schedules) = self.world().resource::<Schedules>() else { return Vec::new() };
        labels
            .into_iter()
            .filter_map(|label| schedules.get(label))
            .flat_map(Schedule::system_stats)
            .map(|s| SystemRow {
                name: short_name(&s.name),
                chunks: s.chunks(),
                entities: s.queries.iter().map(|q| q.entities).max().unwrap_or(0),
                time: s.time,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ecs_spatial::BroadPhase;

    fn scene(active: f64) -> Showcase {
        Showcase::new(&ShowcaseConfig { entities: 6_000, active, seed: 3, clients: 0 }).unwrap()
    }

    #[test]
    fn replicates_the_view_to_clients_over_udp() {
        use ecs_replication::prelude::ClientId;
        let config = ShowcaseConfig { entities: 3_000, active: 0.0, seed: 5, clients: 2 };
        let mut show = Showcase::new(&config).unwrap();
        for _ in 0..150 {
            show.step().unwrap();
        }
        let frame = show.net_frame.unwrap();
        assert_eq!(frame.connected, 2);
        assert!(frame.server_time <= frame.time, "the server's part lies within the tick");
        let net = show.network.as_ref().unwrap();
        let server = net.server();
        let want = server.entities().filter(|(n, _, _)| server.in_interest(ClientId(1), *n)).count();
        assert!(want > 100 && want < server.entities().count(), "{want} entities in view");
        for (world, client) in net.clients() {
            assert_eq!(client.len(), want);
            assert_eq!(world.len() as usize, want);
        }
        // Nothing replicated moves: the change scan skips every chunk and
        // only heartbeats go out.
        assert!(frame.chunks.chunks_total > 0);
        assert_eq!(frame.chunks.chunks_skipped, frame.chunks.chunks_total);
        assert_eq!(frame.changed, 0);
        assert!(frame.bytes_per_client < 64.0);
    }

    #[test]
    fn counts_the_replicated_entities_that_changed() {
        let config = ShowcaseConfig { entities: 3_000, active: 1.0, seed: 5, clients: 1 };
        let mut show = Showcase::new(&config).unwrap();
        for _ in 0..5 {
            show.step().unwrap();
        }
        let frame = show.net_frame.unwrap();
        let replicated = show.network.as_ref().unwrap().server().entities().count();
        // Every rig spins and every boid flies: some, not all, of the
        // replicated entities (the scenery stands still) changed.
        assert!(frame.changed > 0 && frame.changed < replicated, "{} of {replicated}", frame.changed);
    }

    #[test]
    fn refuses_bad_config() {
        assert!(matches!(
            Showcase::new(&ShowcaseConfig { entities: 10, active: 0.1, seed: 1, clients: 0 }),
            Err(ShowcaseError::Config(_))
        ));
        assert!(matches!(
            Showcase::new(&ShowcaseConfig { entities: 1000, active: 1.5, seed: 1, clients: 0 }),
            Err(ShowcaseError::Config(_))
        ));
        assert!(Showcase::new(&ShowcaseConfig { entities: 1000, active: f64::NAN, seed: 1, clients: 0 }).is_err());
        assert!(Showcase::new(&ShowcaseConfig { entities: 1000, active: 0.1, seed: 1, clients: 65 }).is_err());
    }

    #[test]
    fn a_still_scene_skips_every_chunk_after_the_first_frame() {
        let mut show = scene(0.0);
        show.step().unwrap();
        show.step().unwrap();
        let rows = show.system_rows();
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "update_broad_phase<Position>",
                "update_broad_phase<UnitPosition>",
                "spin_rigs",
                "move_target_and_predator",
                "steer_boids",
                "move_boids",
                "march",
                "fight",
                "reap",
                "check_victory",
                "propagate_transforms",
                "sync_positions",
            ]
        );
        // The change-driven systems skip every chunk (the boids' target and
        // predator move every step, so the broad phase visits their chunks).
        for row in rows.iter().filter(|r| ["propagate_transforms", "sync_positions"].contains(&r.name.as_str())) {
            assert!(row.chunks.chunks_total > 0);
            assert_eq!(row.chunks.chunks_skipped, row.chunks.chunks_total, "{} visited a chunk", row.name);
        }
        let stats = show.world().resource::<BroadPhase<Position>>().unwrap().stats();
        // Only the target and the predator moved.
        assert_eq!((stats.chunks_visited(), stats.rows_rekeyed), (2, 2));
        // The system's own row is that change walk: counting its entities
        // visits no chunk.
        let grid = rows.iter().find(|r| r.name == "update_broad_phase<Position>").unwrap();
        assert_eq!((grid.chunks.chunks_total, grid.chunks.chunks_visited()), (stats.chunks_total, 2));
    }

    #[test]
    fn spinning_rigs_reach_the_grid_and_nothing_else_does() {
        let mut show = scene(0.5);
        show.step().unwrap();
        show.step().unwrap();
        let (_, spinning) = show.rigs;
        assert!(spinning > 0);
        let stats = show.world().resource::<BroadPhase<Position>>().unwrap().stats();
        // Roots bob, so every spinning root's position changed, and every
        // flying boid, the target and the predator moved; scenery, still rigs
        // and resting boids did not.
        let (_, flying) = show.boids;
        assert_eq!(stats.rows_rekeyed, (spinning + flying + 2) as u64);
        let rows = show.system_rows();
        let propagate = rows.iter().find(|r| r.name == "propagate_transforms").unwrap();
        let grid = rows.iter().find(|r| r.name == "update_broad_phase<Position>").unwrap();
        // The system's row counts the change walk's chunks, and when this
        // share of movers (about 15 %, at the rebuild threshold) makes the
        // run rebuild, the read of every position's chunks once more.
        let reads = if stats.full_rebuild { 2 } else { 1 };
        assert_eq!(grid.chunks.chunks_total, reads * stats.chunks_total);
        assert!(propagate.chunks.chunks_skipped > 0 && propagate.chunks.chunks_skipped < propagate.chunks.chunks_total);
        // Every entity with a position sits where its global transform says.
        let world = show.world_mut();
        let mut q = world.query::<(&GlobalTransform, &Position)>();
        for (global, pos) in q.iter(world) {
            assert!((global.translation() - pos.0).length() < 1e-4);
        }
    }

    #[test]
    fn the_summary_state_stops_the_scene_and_records_the_run() {
        let mut show = scene(0.5);
        for _ in 0..5 {
            show.step().unwrap();
        }
        assert_eq!(show.state(), ShowcaseState::Running);
        let summary = show.finish().unwrap();
        assert_eq!(show.state(), ShowcaseState::Summary);
        // Five frames of one step each: the summary is recorded at the
        // transition, before the summary frame's step.
        assert_eq!(summary.fixed_steps, 5);
        assert!((summary.game_seconds - 5.0 / 60.0).abs() < 1e-6);
        assert_eq!(summary.entities, show.world().len());
        assert_eq!(summary.battle.alive[0] + summary.battle.alive[1], show.units);
        // Nothing moves any more: no position changes, the grid re-keys
        // nothing.
        let world = show.world_mut();
        let mut moved = world.query_filtered::<Entity, Changed<Position>>();
        moved.iter(world).count();
        show.step().unwrap();
        assert_eq!(moved.iter(show.world()).count(), 0);
        let stats = show.world().resource::<BroadPhase<Position>>().unwrap().stats();
        assert_eq!(stats.rows_rekeyed, 0);
    }
}
