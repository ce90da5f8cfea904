//! Boids on the broad-phase grid: separation, alignment, seeking a moving
//! target and fleeing a predator, after Unity's ECS boids sample, with its
//! defaults (cell radius 8, separation and alignment weight 1, target weight
//! 2, obstacle aversion distance 30, move speed 25, frame time clamped to
//! 0.05 s).
//!
//! [`add_boids`] spawns the flock, the target and the predator into an
//! [`App`]'s world and adds the systems; the binary `boids` and the showcase
//! both call it. A chosen share of the boids is [`Active`]: only those steer
//! and move, the rest are written once at spawn, so their chunks are skipped
//! by the broad phase every step.
//!
//! The flock moves in the app's fixed steps (`FixedUpdate`, reading the
//! fixed clock through [`Time`]); the frame time is the app's virtual clock,
//! clamped to [`BoidsConfig::max_frame_time`] (Unity's 0.05 s), so a stalled
//! frame runs at most that much simulation. Each step:
//! [`update_broad_phase::<Position>`](ecs_spatial::update_broad_phase)
//! (the [`BroadPhasePlugin`], in `FixedPreUpdate`, unless the caller runs
//! one already), then in `FixedUpdate` [`move_target_and_predator`],
//! [`steer_boids`] (reads the grid through `Res`, in parallel over chunks)
//! and [`move_boids`], in the set [`BoidsSystems`].
//!
//! ```
//! use std::time::Duration;
//! use ecs_core::prelude::*;
//! use ecs_examples::boids::{BoidsConfig, add_boids};
//! use ecs_spatial::Position;
//!
//! let mut app = App::new();
//! app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(20)))
//!     .insert_resource(Time::<Fixed>::from_hz(50.0));
//! let config = BoidsConfig { boids: 500, ..BoidsConfig::default() };
//! let scene = add_boids(&mut app, &config).unwrap();
//! let start = app.world().get::<Position>(scene.boids[0]).unwrap().0;
//! app.run_frames(10); // 10 steps of 20 ms at 25 units per second: 5 units flown
//! let moved = app.world().get::<Position>(scene.boids[0]).unwrap().0.distance(start);
//! assert!(moved > 3.0 && moved <= 5.001, "{moved}"); // less as the crow flies: it turned
//! ```

use std::time::Duration;

use ecs_core::StoreError;
use ecs_core::prelude::*;
use ecs_spatial::broad_phase::{BroadPhase, Position};
use ecs_spatial::{BroadPhasePlugin, GridError};
use glam::Vec3;

/// The flock's size and steering weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoidsConfig {
    /// Boids in the flock (at least 1).
    pub boids: usize,
    /// Share (0.0 to 1.0) of the boids that steer and move.
    pub active_share: f32,
    /// Radius within which boids see each other (also the grid's cell size
    /// when [`BoidsConfig::add_broad_phase`] is set).
    pub cell_radius: f32,
    /// Weight of steering away from the neighbours' centre.
    pub separation_weight: f32,
    /// Weight of steering towards the neighbours' mean heading.
    pub alignment_weight: f32,
    /// Weight of steering towards the target.
    pub target_weight: f32,
    /// Boids closer than this to the predator flee from it.
    pub obstacle_aversion_distance: f32,
    /// Speed of every boid, units per second.
    pub move_speed: f32,
    /// Upper bound of the frame time, seconds: [`add_boids`] sets it as the
    /// app's [`Time<Virtual>`] maximum delta.
    pub max_frame_time: f32,
    /// Seed of the spawn layout.
    pub seed: u64,
    /// Whether [`add_boids`] adds the [`BroadPhasePlugin`] on [`Position`]
    /// (cells of [`BoidsConfig::cell_radius`]); turn it off when the caller
    /// already runs a broad phase on [`Position`] before the fixed steps.
    pub add_broad_phase: bool,
}

impl Default for BoidsConfig {
    fn default() -> Self {
        BoidsConfig {
            boids: 10_000,
            active_share: 0.25,
            cell_radius: 8.0,
            separation_weight: 1.0,
            alignment_weight: 1.0,
            target_weight: 2.0,
            obstacle_aversion_distance: 30.0,
            move_speed: 25.0,
            max_frame_time: 0.05,
            seed: 0xB01D5,
            add_broad_phase: true,
        }
    }
}

impl BoidsConfig {
    /// Radius of the disc the flock spawns in: grows with the square root of
    /// the boid count, so density stays the same.
    pub fn spawn_radius(&self) -> f32 {
        2.0 * (self.boids as f32).sqrt().max(10.0)
    }

    /// Half the height of the flock's spawn slab (the flock is flat-ish, for a
    /// top-down view).
    pub fn spawn_half_height(&self) -> f32 {
        20.0
    }

    fn validate(&self) -> Result<(), BoidsError> {
        let positive = |v: f32| v.is_finite() && v > 0.0;
        let checks: [(bool, &str); 8] = [
            (self.boids >= 1, "boids must be at least 1"),
            ((0.0..=1.0).contains(&self.active_share), "active_share must be within 0.0..=1.0"),
            (positive(self.cell_radius), "cell_radius must be finite and positive"),
            (
                [self.separation_weight, self.alignment_weight, self.target_weight].iter().all(|w| w.is_finite()),
                "weights must be finite",
            ),
            (positive(self.obstacle_aversion_distance), "obstacle_aversion_distance must be finite and positive"),
            (positive(self.move_speed), "move_speed must be finite and positive"),
            (positive(self.max_frame_time), "max_frame_time must be finite and positive"),
            (self.boids <= 50_000_000, "boids must be at most 50 million"),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, message)) => Err(BoidsError::Config(message)),
            None => Ok(()),
        }
    }
}

/// Why the boids scene could not be set up.
#[derive(Debug)]
pub enum BoidsError {
    /// A configuration value out of range.
    Config(&'static str),
    /// The store refused a spawn.
    Store(StoreError),
    /// The broad phase refused its configuration.
    Grid(GridError),
}

impl std::fmt::Display for BoidsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BoidsError::Config(s) => write!(f, "bad configuration: {s}"),
            BoidsError::Store(e) => write!(f, "store: {e}"),
            BoidsError::Grid(e) => write!(f, "broad phase: {e}"),
        }
    }
}

impl std::error::Error for BoidsError {}

/// Marks a boid.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boid;

/// Marks a boid that steers and moves (the others stay where they spawned).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Active;

/// A boid's unit heading.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Heading(pub Vec3);

/// The heading an active boid turns to this frame, written by
/// [`steer_boids`] and applied by [`move_boids`].
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Steering(pub Vec3);

/// Marks the target the flock seeks (it also has a [`Position`]).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoidTarget;

/// Marks the predator the flock flees (it also has a [`Position`]).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Predator;

/// The steering weights, a resource (from [`BoidsConfig`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoidSettings {
    /// See [`BoidsConfig::cell_radius`].
    pub cell_radius: f32,
    /// See [`BoidsConfig::separation_weight`].
    pub separation_weight: f32,
    /// See [`BoidsConfig::alignment_weight`].
    pub alignment_weight: f32,
    /// See [`BoidsConfig::target_weight`].
    pub target_weight: f32,
    /// See [`BoidsConfig::obstacle_aversion_distance`].
    pub obstacle_aversion_distance: f32,
    /// See [`BoidsConfig::move_speed`].
    pub move_speed: f32,
    /// Radius of the target's circular path.
    pub path_radius: f32,
}

/// The flock's systems (in `FixedUpdate`), to order other systems against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BoidsSystems;

impl SystemSet for BoidsSystems {}

/// The entities [`add_boids`] spawned.
#[derive(Clone, Debug, PartialEq)]
pub struct BoidsScene {
    /// Every boid, active ones first.
    pub boids: Vec<Entity>,
    /// How many of [`BoidsScene::boids`] are active.
    pub active: usize,
    /// The target.
    pub target: Entity,
    /// The predator.
    pub predator: Entity,
}

/// SplitMix64, for the spawn layout.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[-1, 1)`.
    fn signed(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// Spawns the flock (active boids first, in their own archetype), the
/// target and the predator into `app`'s world, inserts the
/// [`BoidSettings`] resource, sets the virtual clock's maximum delta to
/// [`BoidsConfig::max_frame_time`], adds (with
/// [`BoidsConfig::add_broad_phase`]) the [`BroadPhasePlugin`] on
/// [`Position`] with cells of [`BoidsConfig::cell_radius`], and adds the
/// systems to `FixedUpdate` (see the [module docs](self)).
///
/// # Errors
/// [`BoidsError::Config`] for a value out of range, [`BoidsError::Grid`] or
/// [`BoidsError::Store`] if the grid or the store refuse the setup.
pub fn add_boids(app: &mut App, config: &BoidsConfig) -> Result<BoidsScene, BoidsError> {
    config.validate()?;
    let grid = if config.add_broad_phase {
        Some(BroadPhasePlugin::<Position>::try_new(Vec3::ZERO, config.cell_radius).map_err(BoidsError::Grid)?)
    } else {
        None
    };
    let world = app.world_mut();
    let radius = config.spawn_radius();
    let half_height = config.spawn_half_height();
    let mut rng = Rng(config.seed);
    let active = ((config.boids as f64 * f64::from(config.active_share)).round() as usize).min(config.boids);
    let spawn = |rng: &mut Rng| {
        // Uniform in a disc (rejection), uniform in height.
        let (x, z) = loop {
            let (x, z) = (rng.signed(), rng.signed());
            if x * x + z * z <= 1.0 {
                break (x * radius, z * radius);
            }
        };
        let p = Vec3::new(x, rng.signed() * half_height, z);
        let h = Vec3::new(rng.signed(), rng.signed() * 0.2, rng.signed()).normalize_or(Vec3::X);
        (p, h)
    };
    let moving: Vec<_> = (0..active)
        .map(|_| {
            let (p, h) = spawn(&mut rng);
            (Position(p), Heading(h), Steering(h), Boid, Active)
        })
        .collect();
    let resting: Vec<_> = (active..config.boids)
        .map(|_| {
            let (p, h) = spawn(&mut rng);
            (Position(p), Heading(h), Boid)
        })
        .collect();
    let mut boids = world.spawn_batch(moving);
    boids.extend(world.spawn_batch(resting));
    let path_radius = 0.5 * radius;
    let target = world.spawn((Position(target_point(path_radius, 0.0)), BoidTarget));
    let predator = world.spawn((Position(predator_point(path_radius, 0.0)), Predator));

    world.insert_resource(BoidSettings {
        cell_radius: config.cell_radius,
        separation_weight: config.separation_weight,
        alignment_weight: config.alignment_weight,
        target_weight: config.target_weight,
        obstacle_aversion_distance: config.obstacle_aversion_distance,
        move_speed: config.move_speed,
        path_radius,
    });
    if let Some(clock) = world.resource_mut::<Time<Virtual>>() {
        // In whole microseconds: 0.05_f32 is not exactly 50 ms.
        clock.set_max_delta(Duration::from_micros((f64::from(config.max_frame_time) * 1e6).round().max(1.0) as u64));
    }
    if let Some(grid) = grid {
        app.add_plugins(grid);
    }
    app.add_systems(FixedUpdate, (move_target_and_predator, steer_boids, move_boids).chain().in_set(BoidsSystems));
    Ok(BoidsScene { boids, active, target, predator })
}

/// Speed of the target along its path, units per second.
const TARGET_SPEED: f32 = 15.0;

/// The target's point on its path at time `t`: a circle of `radius` in the
/// horizontal plane, at [`TARGET_SPEED`].
fn target_point(radius: f32, t: f32) -> Vec3 {
    let angle = t * TARGET_SPEED / radius;
    Vec3::new(radius * angle.cos(), 0.0, radius * angle.sin())
}

/// The predator follows the target's circle 0.4 radians behind, slightly
/// wider, so it runs through the flock's tail.
fn predator_point(radius: f32, t: f32) -> Vec3 {
    let angle = t * TARGET_SPEED / radius - 0.4;
    let r = radius * 1.05;
    Vec3::new(r * angle.cos(), 4.0 * (t * 0.7).sin(), r * angle.sin())
}

/// Moves the target and the predator along their paths, to where they are
/// at the end of this step (fixed time).
pub fn move_target_and_predator(
    mut target: Query<&mut Position, With<BoidTarget>>,
    mut predator: Query<&mut Position, (With<Predator>, Without<BoidTarget>)>,
    time: Res<Time>,
    settings: Res<BoidSettings>,
) {
    let t = time.elapsed_secs();
    target.for_each_mut(|mut p| p.0 = target_point(settings.path_radius, t));
    predator.for_each_mut(|mut p| p.0 = predator_point(settings.path_radius, t));
}

/// One boid's next heading from what it sees (Unity's boids rule): the
/// weighted sum of alignment (neighbours' mean heading minus its own),
/// separation (away from the neighbours' centre) and target seeking, each
/// normalized; within `obstacle_aversion_distance` of the predator it turns
/// away from it instead. The heading turns towards that by `dt` (the step).
#[allow(
    clippy::too_many_arguments,
    reason = "one steering step reads each flock input separately; a struct would only rename them"
)]
pub fn next_heading(
    settings: &BoidSettings,
    dt: f32,
    position: Vec3,
    heading: Vec3,
    neighbours: usize,
    neighbour_position_sum: Vec3,
    neighbour_heading_sum: Vec3,
    target: Vec3,
    predator: Vec3,
) -> Vec3 {
    let mut wanted = settings.target_weight * (target - position).normalize_or_zero();
    if neighbours > 0 {
        let n = neighbours as f32;
        wanted += settings.alignment_weight * (neighbour_heading_sum / n - heading).normalize_or_zero();
        wanted += settings.separation_weight * (position * n - neighbour_position_sum).normalize_or_zero();
    }
    let away = position - predator;
    let distance = away.length();
    let wanted = if distance < settings.obstacle_aversion_distance {
        // Head for the point on the aversion sphere straight away from the predator.
        let escape = predator + away.normalize_or(Vec3::X) * settings.obstacle_aversion_distance;
        (escape - position).normalize_or(away.normalize_or(Vec3::X))
    } else {
        wanted.normalize_or(heading)
    };
    (heading + dt * (wanted - heading)).normalize_or(heading)
}

/// The filter of the target and the predator.
type TargetOrPredator = Or<(With<BoidTarget>, With<Predator>)>;

/// Computes every active boid's [`Steering`] from its neighbours within
/// [`BoidSettings::cell_radius`], found on the grid (read-only, `Res`), in
/// parallel over chunks.
pub fn steer_boids(
    mut boids: Query<(Entity, &Position, &Heading, &mut Steering), With<Active>>,
    headings: Query<&Heading, With<Boid>>,
    goals: Query<(&Position, Option<&BoidTarget>), TargetOrPredator>,
    grid: Res<BroadPhase<Position>>,
    settings: Res<BoidSettings>,
    time: Res<Time>,
) {
    let mut goals = goals;
    let (mut target, mut predator) = (Vec3::ZERO, Vec3::splat(f32::INFINITY));
    goals.for_each(|(p, is_target)| {
        if is_target.is_some() {
            target = p.0;
        } else {
            predator = p.0;
        }
    });
    let grid = grid.grid();
    let (settings, dt) = (*settings, time.delta_secs());
    let radius = settings.cell_radius;
    let headings = &headings;
    boids.par_for_each_mut(|(me, position, heading, mut steering)| {
        let (mut count, mut position_sum, mut heading_sum) = (0usize, Vec3::ZERO, Vec3::ZERO);
        grid.for_each_in_radius(position.0, radius, |other, p| {
            if other != me
                && let Ok(h) = headings.get(other)
            {
                count += 1;
                position_sum += p;
                heading_sum += h.0;
            }
        });
        steering.0 =
            next_heading(&settings, dt, position.0, heading.0, count, position_sum, heading_sum, target, predator);
    });
}

/// Turns every active boid to its [`Steering`] and moves it at
/// [`BoidSettings::move_speed`] for the step's time.
pub fn move_boids(
    mut boids: Query<(&mut Position, &mut Heading, &Steering), With<Active>>,
    settings: Res<BoidSettings>,
    time: Res<Time>,
) {
    let step = settings.move_speed * time.delta_secs();
    boids.par_for_each_mut(|(mut position, mut heading, steering)| {
        heading.0 = steering.0;
        position.0 += steering.0 * step;
    });
}

/// A top-down picture of the scene: `size` x `size` palette indices
/// ([`PALETTE`]) of the `x`/`z` plane, `extent` units from the centre to
/// each edge. Inactive boids are grey, active ones white, the target a green
/// cross, the predator a red square; points outside are left out.
pub fn render_top_down(world: &mut World, size: usize, extent: f32, pixels: &mut Vec<u8>) {
    pixels.clear();
    pixels.resize(size * size, 0);
    if size == 0 || !(extent.is_finite() && extent > 0.0) {
        return;
    }
    let scale = size as f32 / (2.0 * extent);
    let to_pixel = |p: Vec3| -> Option<(usize, usize)> {
        let x = ((p.x + extent) * scale).floor();
        let y = ((p.z + extent) * scale).floor();
        (x >= 0.0 && y >= 0.0 && x < size as f32 && y < size as f32).then_some((x as usize, y as usize))
    };
    let plot = |pixels: &mut Vec<u8>, x: isize, y: isize, color: u8| {
        if x >= 0 && y >= 0 && (x as usize) < size && (y as usize) < size {
            pixels[y as usize * size + x as usize] = color;
        }
    };
    let mut boids = world.query_filtered::<(&Position, Option<&Active>), With<Boid>>();
    // Resting boids first, so moving ones are drawn over them.
    for pass in [false, true] {
        boids.for_each(world, |(p, active)| {
            if active.is_some() == pass
                && let Some((x, y)) = to_pixel(p.0)
            {
                plot(pixels, x as isize, y as isize, if pass { 2 } else { 1 });
            }
        });
    }
    let mut marks = world.query::<(&Position, Option<&BoidTarget>, Option<&Predator>)>();
    marks.for_each(world, |(p, target, predator)| {
        let Some((x, y)) = to_pixel(p.0) else { return };
        let (x, y) = (x as isize, y as isize);
        if target.is_some() {
            for d in -4..=4 {
                plot(pixels, x + d, y, 3);
                plot(pixels, x, y + d, 3);
            }
        } else if predator.is_some() {
            for dy in -3..=3 {
                for dx in -3..=3 {
                    plot(pixels, x + dx, y + dy, 4);
                }
            }
        }
    });
}

/// RGB palette of [`render_top_down`]: background, resting boid, active
/// boid, target, predator.
pub const PALETTE: [u8; 15] = [16, 20, 32, 90, 96, 110, 235, 235, 220, 80, 220, 100, 235, 60, 60];

#[cfg(test)]
mod tests {
    use super::*;

    /// An app of 30 frames per second of game time on a manual clock, fixed
    /// steps of 1/60 s (two a frame).
    fn app() -> App {
        let mut app = App::new();
        app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_nanos(33_333_334)))
            .insert_resource(Time::<Fixed>::from_duration(Duration::from_nanos(16_666_667)));
        app
    }

    fn run(config: &BoidsConfig, frames: u64) -> (App, BoidsScene) {
        let mut app = app();
        let scene = add_boids(&mut app, config).unwrap();
        app.run_frames(frames);
        (app, scene)
    }

    #[test]
    fn boids_stay_finite_and_separated() {
        let config = BoidsConfig { boids: 2_000, active_share: 1.0, ..BoidsConfig::default() };
        let (app, scene) = run(&config, 150);
        let world = app.world();
        let positions: Vec<Vec3> = scene.boids.iter().map(|&e| world.get::<Position>(e).unwrap().0).collect();
        assert!(positions.iter().all(|p| p.is_finite()));
        for &e in &scene.boids {
            let h = world.get::<Heading>(e).unwrap().0;
            assert!((h.length() - 1.0).abs() < 1e-3, "{h}");
        }
        // Separated: no two boids on top of each other, and most keep a
        // body length (1 unit) of room (the grid finds the nearest).
        let grid = world.resource::<BroadPhase<Position>>().unwrap().grid();
        let mut crowded = 0;
        let mut near = Vec::new();
        for (&e, &p) in scene.boids.iter().zip(&positions) {
            grid.query_k_nearest(p, 2, &mut near);
            let nearest = near.iter().find(|n| n.id != e).map_or(f32::INFINITY, |n| n.distance_squared.sqrt());
            assert!(nearest > 0.0, "{e} shares its position");
            if nearest < 1.0 {
                crowded += 1;
            }
        }
        assert!(crowded * 10 < positions.len(), "{crowded} of {} boids within 1 unit of another", positions.len());
        // And they went somewhere: the same seed spawns the same flock.
        let (start, scene0) = run(&config, 0);
        let moved = scene0
            .boids
            .iter()
            .zip(&positions)
            .filter(|&(&e, p)| start.world().get::<Position>(e).unwrap().0.distance(*p) > 10.0)
            .count();
        assert!(moved * 10 > positions.len() * 9, "only {moved} boids moved more than 10 units");
    }

    #[test]
    fn the_same_frames_give_the_same_flock() {
        let config = BoidsConfig { boids: 300, active_share: 1.0, ..BoidsConfig::default() };
        let (a, scene) = run(&config, 40);
        let (b, _) = run(&config, 40);
        for &e in &scene.boids {
            assert_eq!(a.world().get::<Position>(e).unwrap(), b.world().get::<Position>(e).unwrap());
        }
        // 40 frames of 1/30 s: 80 fixed steps, 80/60 s of flight.
        let fixed = a.world().resource::<Time<Fixed>>().unwrap();
        assert_eq!(fixed.frame_count(), 80);
    }

    #[test]
    fn resting_boids_stay_and_their_chunks_are_skipped() {
        let config = BoidsConfig { boids: 20_000, active_share: 0.1, ..BoidsConfig::default() };
        let mut app = app();
        let scene = add_boids(&mut app, &config).unwrap();
        let resting = scene.boids[scene.active];
        let before = app.world().get::<Position>(resting).unwrap().0;
        let mover = scene.boids[0];
        let mover_before = app.world().get::<Position>(mover).unwrap().0;
        app.run_frames(3);
        let world = app.world();
        assert_eq!(world.get::<Position>(resting).unwrap().0, before);
        assert_ne!(world.get::<Position>(mover).unwrap().0, mover_before);
        let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
        assert!(stats.skip_ratio() > 0.8, "{stats:?}");
        assert_eq!(stats.rows_rekeyed as usize, scene.active + 2, "active boids, target and predator");
    }

    #[test]
    fn a_stalled_frame_runs_at_most_max_frame_time() {
        let mut app = app();
        add_boids(&mut app, &BoidsConfig { boids: 10, ..BoidsConfig::default() }).unwrap();
        app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs(3)))
            .insert_resource(Time::<Fixed>::from_duration(Duration::from_millis(10)));
        app.update();
        // A 3 s frame counts as 0.05 s: five fixed steps of 10 ms.
        let fixed = app.world().resource::<Time<Fixed>>().unwrap();
        assert_eq!(fixed.steps_this_frame(), 5);
        assert_eq!(app.world().resource::<Time<Virtual>>().unwrap().delta(), Duration::from_millis(50));
    }

    #[test]
    fn a_boid_flees_the_predator_and_seeks_the_target() {
        let settings = BoidSettings {
            cell_radius: 8.0,
            separation_weight: 1.0,
            alignment_weight: 1.0,
            target_weight: 2.0,
            obstacle_aversion_distance: 30.0,
            move_speed: 25.0,
            path_radius: 100.0,
        };
        let h = Vec3::X;
        // Target ahead-left, predator far: turns towards the target.
        let seek =
            next_heading(&settings, 0.05, Vec3::ZERO, h, 0, Vec3::ZERO, Vec3::ZERO, Vec3::Z * 50.0, Vec3::splat(1e6));
        assert!(seek.z > 0.0 && (seek.length() - 1.0).abs() < 1e-5);
        // Predator close behind-left: turns away from it even with the target behind it.
        let flee =
            next_heading(&settings, 0.05, Vec3::ZERO, h, 0, Vec3::ZERO, Vec3::ZERO, Vec3::Z * 50.0, Vec3::Z * 10.0);
        assert!(flee.z < 0.0, "{flee}");
        assert!(matches!(
            add_boids(&mut App::new(), &BoidsConfig { active_share: 2.0, ..BoidsConfig::default() }),
            Err(BoidsError::Config(_))
        ));
        assert!(matches!(
            add_boids(&mut App::new(), &BoidsConfig { max_frame_time: 0.0, ..BoidsConfig::default() }),
            Err(BoidsError::Config(_))
        ));
    }
}
