//! The `game` scenario: the showcase's scene (`ecs_examples::showcase`)
//! without the network, as whole frames, on our ECS ([`ours`]) and on
//! bevy_ecs + bevy_app + bevy_time + bevy_transform 0.20 (`bevy`, feature
//! `peers`).
//!
//! The scene: static scenery, rigs of [`RIG_NODES`] nodes of which a share
//! spins (their roots' locals written every step, the hierarchy propagated,
//! the roots' global translation copied to their [`Position`](ecs_spatial::Position)
//! under a `Changed<GlobalTransform>` filter), a flock of boids of which the
//! same share steers (separation, alignment, a moving target, fleeing a
//! predator) with neighbours from a broad phase on `Position`, and two armies
//! that march, fight the nearest enemy in range (all pairs in range from a
//! broad phase on their own `UnitPosition`) and die. Every frame of either
//! app is 1/60 s of game time on a manual clock and runs exactly one fixed
//! step (broad phases in `FixedPreUpdate`, the game in `FixedUpdate`,
//! transform propagation and the position sync in `PostUpdate`).
//!
//! Both worlds are built from one [`Layout`] (the same seed, the same spawn
//! order) and run the same rules, written once here as plain functions
//! ([`spin_local`], [`target_point`], [`NeighbourSums`],
//! `ecs_examples::boids::next_heading`, [`offer_target`], [`damage_per_step`]).
//! The simulation does not depend on the order in which an ECS hands out
//! entities or a grid hands out neighbours:
//! - a boid sums its neighbours' positions and headings in fixed point
//!   ([`NeighbourSums`]), so any order gives the same sums;
//! - an attacker keeps its nearest enemy, ties going to the lower
//!   [`UnitSpawn::id`], and health is whole milli-points, so blows add up the
//!   same in any order;
//! - time is the fixed clock's elapsed `Duration`, the same sum of steps on
//!   both sides.
//!
//! So after the same number of frames both worlds hold the same entities,
//! the same dead and the same positions (the rigs' nodes within a float
//! tolerance: each ECS multiplies its own matrices); [`Snapshot::compare`]
//! checks it, before timing and after.
//!
//! One deliberate difference from the showcase: its armies start 40 units
//! apart with 100 health; here they start [`MeleeParams::gap`] apart with
//! [`MeleeParams::health`], so that the frames timed after a short warm-up
//! see units marching, fighting and dying at once.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::Duration;

use ecs_examples::boids::BoidSettings;
use ecs_examples::showcase::Rng;
use glam::{Quat, Vec3};

pub mod ours;
mod run;

#[cfg(feature = "peers")]
pub mod bevy;

pub use run::{GAME_SYSTEMS, GameResult, SystemKind, cases, check_agree, run, run_case, scene, table};

/// Game time per frame and the fixed step (one step per frame).
pub const FRAME: Duration = Duration::from_nanos(16_666_667);

/// Seed of every random choice of the layout.
pub const SEED: u64 = 0x6A3E_5EED;

/// Nodes per rig: a root and three limbs of three nodes.
pub const RIG_NODES: usize = 10;

/// Cases with at least this many entities are skipped by `--skip-1m`.
pub const LARGE_ENTITIES: usize = 1_000_000;

/// One case of the `game` scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GameCase {
    /// Case name as reported (`active_5pct`, `active_5pct_1m`, ...).
    pub name: &'static str,
    /// Entities in all (about: half scenery, a fifth rig nodes, a fifth
    /// boids, a tenth units, plus the target and the predator).
    pub entities: usize,
    /// Share (0.0 to 1.0) of the rigs and boids that move; the units all
    /// march and fight.
    pub active: f64,
}

/// The `game` cases, in report order.
pub const GAME_CASES: [GameCase; 6] = [
    GameCase { name: "active_0pct", entities: 100_000, active: 0.0 },
    GameCase { name: "active_1pct", entities: 100_000, active: 0.01 },
    GameCase { name: "active_5pct", entities: 100_000, active: 0.05 },
    GameCase { name: "active_20pct", entities: 100_000, active: 0.2 },
    GameCase { name: "active_100pct", entities: 100_000, active: 1.0 },
    GameCase { name: "active_5pct_1m", entities: 1_000_000, active: 0.05 },
];

/// The battle's rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeleeParams {
    /// Enemies within this distance can be attacked (also the unit grid's
    /// cell size and the all-pairs radius).
    pub attack_range: f32,
    /// Damage per second of every unit.
    pub damage_per_second: f32,
    /// Starting health (points; stored as milli-points, see [`HEALTH_SCALE`]).
    pub health: f32,
    /// Marching speed, units per second.
    pub move_speed: f32,
    /// Distance between neighbouring units in a team's starting block.
    pub spacing: f32,
    /// Distance between the two front lines at the start.
    pub gap: f32,
}

/// The battle of every case.
pub const MELEE: MeleeParams =
    MeleeParams { attack_range: 2.0, damage_per_second: 20.0, health: 10.0, move_speed: 4.0, spacing: 1.5, gap: 3.0 };

/// Health is stored in whole milli-points: integer sums do not depend on
/// the order of the blows.
pub const HEALTH_SCALE: f32 = 1000.0;

/// Cell size of the broad phase on `Position` (the boids' view radius).
pub const BOID_CELL: f32 = 8.0;

/// Speed of the boids' target along its circle, units per second.
pub const TARGET_SPEED: f32 = 15.0;

/// A rig at spawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigSpawn {
    /// The root's translation.
    pub root: Vec3,
    /// Its spin, for the rigs that move.
    pub spin: Option<Spin>,
}

/// How a moving rig's root spins about the vertical axis and bobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spin {
    /// Radians per second.
    pub speed: f32,
    /// Phase of the bob, radians.
    pub phase: f32,
}

/// A boid at spawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoidSpawn {
    /// Position.
    pub position: Vec3,
    /// Unit heading.
    pub heading: Vec3,
    /// Whether it steers and moves.
    pub active: bool,
}

/// A melee unit at spawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitSpawn {
    /// Position.
    pub position: Vec3,
    /// Team, 0 or 1.
    pub team: u8,
    /// Stable id, the same in both worlds: ties between equally near
    /// enemies go to the lower id.
    pub id: u32,
}

/// Everything a case spawns, in spawn order, from [`SEED`]: both worlds
/// spawn exactly this.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Half the side of the square the scenery and the rigs stand in; the
    /// broad phase on `Position` starts at `-side` on every axis.
    pub side: f32,
    /// Scenery positions.
    pub scenery: Vec<Vec3>,
    /// Rigs (moving ones first).
    pub rigs: Vec<RigSpawn>,
    /// Boids (active ones first).
    pub boids: Vec<BoidSpawn>,
    /// Units of team 0, then team 1.
    pub units: Vec<UnitSpawn>,
    /// The flock's rules (`ecs_examples::boids` defaults, path radius from
    /// the flock's size).
    pub boid_settings: BoidSettings,
}

impl Layout {
    /// The layout of `entities` entities with `active` of the rigs and
    /// boids moving.
    ///
    /// # Errors
    /// A message for fewer than 100 entities, more than 50 million, or a
    /// share outside 0.0..=1.0.
    pub fn new(entities: usize, active: f64) -> Result<Self, String> {
        if !(100..=50_000_000).contains(&entities) {
            return Err(format!("{entities} entities: the game scene needs 100 to 50 million"));
        }
        if !(0.0..=1.0).contains(&active) {
            return Err(format!("active share {active} is outside 0.0..=1.0"));
        }
        let mut rng = Rng::new(SEED);
        let side = (entities as f32).sqrt() * 2.0;
        let scenery =
            (0..entities / 2).map(|_| Vec3::new(rng.range(-side, side), 0.0, rng.range(-side, side))).collect();

        let rig_count = entities / 5 / RIG_NODES;
        let spinning = (rig_count as f64 * active).round() as usize;
        let rigs = (0..rig_count)
            .map(|r| {
                let root = Vec3::new(rng.range(-side, side), 0.0, rng.range(-side, side));
                let spin = (r < spinning)
                    .then(|| Spin { speed: rng.range(0.5, 2.0), phase: rng.range(0.0, std::f32::consts::TAU) });
                RigSpawn { root, spin }
            })
            .collect();

        // The flock: `ecs_examples::boids` defaults, a disc growing with the
        // square root of the count, a slab of +-20.
        let boid_count = entities / 5;
        let defaults = ecs_examples::boids::BoidsConfig::default();
        let radius = 2.0 * (boid_count as f32).sqrt().max(10.0);
        let flying = ((boid_count as f64 * active).round() as usize).min(boid_count);
        let boids = (0..boid_count)
            .map(|i| {
                let (x, z) = loop {
                    let (x, z) = (rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
                    if x * x + z * z <= 1.0 {
                        break (x * radius, z * radius);
                    }
                };
                let position = Vec3::new(x, rng.range(-1.0, 1.0) * 20.0, z);
                let heading = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0) * 0.2, rng.range(-1.0, 1.0))
                    .normalize_or(Vec3::X);
                BoidSpawn { position, heading, active: i < flying }
            })
            .collect();
        let boid_settings = BoidSettings {
            cell_radius: BOID_CELL,
            separation_weight: defaults.separation_weight,
            alignment_weight: defaults.alignment_weight,
            target_weight: defaults.target_weight,
            obstacle_aversion_distance: defaults.obstacle_aversion_distance,
            move_speed: defaults.move_speed,
            path_radius: 0.5 * radius,
        };

        // Two blocks facing each other across the gap, rows behind the front.
        let per_team = (entities / 20).max(1);
        let columns = (per_team as f64).sqrt().ceil() as usize;
        let mut seed = SEED ^ 0x3E1EE;
        let mut jitter = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.5
        };
        let m = MELEE;
        let mut units = Vec::with_capacity(2 * per_team);
        for team in 0..2u8 {
            let sign = if team == 0 { -1.0 } else { 1.0 };
            for i in 0..per_team {
                let (row, col) = ((i / columns) as f32, (i % columns) as f32);
                let x = sign * (0.5 * m.gap + row * m.spacing) + jitter() * m.spacing;
                let z = (col - columns as f32 / 2.0) * m.spacing + jitter() * m.spacing;
                units.push(UnitSpawn { position: Vec3::new(x, 0.0, z), team, id: units.len() as u32 });
            }
        }
        Ok(Layout { side, scenery, rigs, boids, units, boid_settings })
    }

    /// Rigs whose roots spin.
    pub fn spinning_rigs(&self) -> usize {
        self.rigs.iter().filter(|r| r.spin.is_some()).count()
    }

    /// Boids that steer and move.
    pub fn active_boids(&self) -> usize {
        self.boids.iter().filter(|b| b.active).count()
    }

    /// Entities spawned: scenery, rig nodes, boids, target, predator, units.
    pub fn entity_count(&self) -> usize {
        self.scenery.len() + self.rigs.len() * RIG_NODES + self.boids.len() + 2 + self.units.len()
    }

    /// Where the target is at the start.
    pub fn target_start(&self) -> Vec3 {
        target_point(self.boid_settings.path_radius, 0.0)
    }

    /// Where the predator is at the start.
    pub fn predator_start(&self) -> Vec3 {
        predator_point(self.boid_settings.path_radius, 0.0)
    }
}

/// The local translation of joint `joint` (0..3) of limb `limb` (0..3)
/// relative to its parent (the root for joint 0).
pub fn rig_offset(limb: usize, joint: usize) -> Vec3 {
    match (limb, joint) {
        (0, 0) => Vec3::new(0.5, 1.0, 0.0),
        (1, 0) => Vec3::new(-0.5, 1.0, 0.0),
        (_, 0) => Vec3::new(0.0, 1.5, 0.0),
        _ => Vec3::new(0.0, 0.5, 0.0),
    }
}

/// A spinning root's rotation and height above its spawn point at time `t`
/// (seconds of fixed time).
#[inline]
pub fn spin_local(spin: Spin, t: f32) -> (Quat, f32) {
    (Quat::from_rotation_y(spin.speed * t), 0.5 * (t * 2.0 + spin.phase).sin())
}

/// The target's point on its circle of `radius` at time `t`.
#[inline]
pub fn target_point(radius: f32, t: f32) -> Vec3 {
    let angle = t * TARGET_SPEED / radius;
    Vec3::new(radius * angle.cos(), 0.0, radius * angle.sin())
}

/// The predator follows the target's circle 0.4 radians behind, slightly
/// wider, so it runs through the flock's tail.
#[inline]
pub fn predator_point(radius: f32, t: f32) -> Vec3 {
    let angle = t * TARGET_SPEED / radius - 0.4;
    let r = radius * 1.05;
    Vec3::new(r * angle.cos(), 4.0 * (t * 0.7).sin(), r * angle.sin())
}

/// Fixed-point steps of the neighbour sums: positions in 1/1024 unit,
/// headings in 2^-20.
const POSITION_STEPS: f32 = 1024.0;
const HEADING_STEPS: f32 = 1_048_576.0;

/// A boid's neighbour count and the sums of their positions and headings,
/// in fixed point (each term truncated to its step): integer addition does
/// not depend on the order the grid hands out the neighbours, so both
/// worlds steer every boid alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NeighbourSums {
    count: u32,
    position: [i64; 3],
    heading: [i64; 3],
}

impl NeighbourSums {
    /// Adds one neighbour.
    #[inline]
    pub fn add(&mut self, position: Vec3, heading: Vec3) {
        self.count += 1;
        for a in 0..3 {
            // A cast, not `round` (a libm call on baseline x86-64): the
            // step's truncation is as deterministic.
            self.position[a] += (position[a] * POSITION_STEPS) as i64;
            self.heading[a] += (heading[a] * HEADING_STEPS) as i64;
        }
    }

    /// The boid's next heading (`ecs_examples::boids::next_heading` on the
    /// sums).
    #[inline]
    pub fn next_heading(
        &self,
        settings: &BoidSettings,
        dt: f32,
        position: Vec3,
        heading: Vec3,
        target: Vec3,
        predator: Vec3,
    ) -> Vec3 {
        let sum = |v: [i64; 3], steps: f32| Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32) / steps;
        ecs_examples::boids::next_heading(
            settings,
            dt,
            position,
            heading,
            self.count as usize,
            sum(self.position, POSITION_STEPS),
            sum(self.heading, HEADING_STEPS),
            target,
            predator,
        )
    }
}

/// A hasher for entity keys (Fx-style: rotate, xor, multiply per word),
/// the role bevy's `EntityHash` plays for its `EntityHashMap`: both ECSs'
/// `fight` key their map by entity with it, so neither pays SipHash.
#[derive(Clone, Copy, Debug, Default)]
pub struct EntityHasher(u64);

impl EntityHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for EntityHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
}

/// A map keyed by entity, hashed with [`EntityHasher`].
pub type EntityMap<E, V> = HashMap<E, V, BuildHasherDefault<EntityHasher>>;

/// An attacker's nearest enemy in range so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Nearest<E> {
    /// The enemy.
    pub target: E,
    /// Its stable id ([`UnitSpawn::id`]).
    pub id: u32,
    /// Squared distance to it.
    pub distance_squared: f32,
}

/// Offers `candidate` as `attacker`'s target: kept when nearer than the
/// best so far, or as near with a lower id (so the choice does not depend
/// on the order pairs are found in).
#[inline]
pub fn offer_target<E: Copy + Eq + Hash>(nearest: &mut EntityMap<E, Nearest<E>>, attacker: E, candidate: Nearest<E>) {
    let best = nearest.entry(attacker).or_insert(candidate);
    if candidate.distance_squared < best.distance_squared
        || (candidate.distance_squared == best.distance_squared && candidate.id < best.id)
    {
        *best = candidate;
    }
}

/// Damage of one step of `dt` seconds at `damage_per_second`, in
/// milli-points.
#[inline]
pub fn damage_per_step(damage_per_second: f32, dt: f32) -> i32 {
    (damage_per_second * dt * HEALTH_SCALE).round() as i32
}

/// Starting health in milli-points.
pub fn starting_health() -> i32 {
    (MELEE.health * HEALTH_SCALE).round() as i32
}

/// The state of a world after some frames, in [`Layout`] order, for
/// comparing two worlds.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Fixed time simulated.
    pub fixed_elapsed: Duration,
    /// Entities in the world with one of the scene's components (a
    /// position, a unit position or a transform; not the app's own).
    pub entities: usize,
    /// Scenery positions.
    pub scenery: Vec<Vec3>,
    /// Per rig: the root's `Position`, then the global translation of each
    /// of its [`RIG_NODES`] nodes (root first).
    pub rigs: Vec<Vec3>,
    /// Boid positions, then the target's and the predator's.
    pub boids: Vec<Vec3>,
    /// Per unit: position and health in milli-points, `None` once dead
    /// (despawned).
    pub units: Vec<Option<(Vec3, i32)>>,
    /// Kills per team.
    pub kills: [u32; 2],
}

impl Snapshot {
    /// Units alive.
    pub fn alive(&self) -> usize {
        self.units.iter().filter(|u| u.is_some()).count()
    }

    /// Checks that `other` (another ECS's world after as many frames) holds
    /// the same: the same fixed time, entity count, kills and dead, the same
    /// health, and every position within `1e-3 * (1 + |p|)` per axis (the
    /// rigs' nodes multiply matrices each ECS its own way; everything else
    /// is computed alike and is expected to be equal).
    ///
    /// # Errors
    /// The first difference, named.
    pub fn compare(&self, other: &Snapshot) -> Result<(), String> {
        if self.fixed_elapsed != other.fixed_elapsed {
            return Err(format!("fixed time {:?} against {:?}", self.fixed_elapsed, other.fixed_elapsed));
        }
        if self.entities != other.entities {
            return Err(format!("{} entities against {}", self.entities, other.entities));
        }
        if self.kills != other.kills {
            return Err(format!("kills {:?} against {:?}", self.kills, other.kills));
        }
        let close = |a: Vec3, b: Vec3| (a - b).abs().max_element() <= 1e-3 * (1.0 + a.abs().max_element());
        let positions = |what: &str, a: &[Vec3], b: &[Vec3]| -> Result<(), String> {
            if a.len() != b.len() {
                return Err(format!("{} {what} against {}", a.len(), b.len()));
            }
            match a.iter().zip(b).position(|(&x, &y)| !close(x, y)) {
                Some(i) => Err(format!("{what} {i} at {} against {}", a[i], b[i])),
                None => Ok(()),
            }
        };
        positions("scenery", &self.scenery, &other.scenery)?;
        positions("rig node", &self.rigs, &other.rigs)?;
        positions("boid", &self.boids, &other.boids)?;
        if self.units.len() != other.units.len() {
            return Err(format!("{} units against {}", self.units.len(), other.units.len()));
        }
        for (i, (a, b)) in self.units.iter().zip(&other.units).enumerate() {
            match (a, b) {
                (None, None) => {}
                (Some((pa, ha)), Some((pb, hb))) => {
                    if ha != hb || !close(*pa, *pb) {
                        return Err(format!("unit {i}: at {pa} with {ha} health against at {pb} with {hb}"));
                    }
                }
                _ => {
                    return Err(format!(
                        "unit {i} is {} against {}",
                        if a.is_some() { "alive" } else { "dead" },
                        if b.is_some() { "alive" } else { "dead" }
                    ));
                }
            }
        }
        Ok(())
    }
}

/// A game scene on one ECS: [`GameScene::frame`] is the timed unit.
pub trait GameScene {
    /// One frame: one `App::update` (one fixed step of [`FRAME`]).
    ///
    /// # Errors
    /// The app's error, where the ECS reports one.
    fn frame(&mut self) -> Result<(), String>;

    /// Wall time of each of [`GAME_SYSTEMS`] in the latest frame,
    /// microseconds (systems of several parts add them up).
    fn system_times(&self) -> [f64; GAME_SYSTEMS.len()];

    /// Chunk counters of the latest frame's systems, added up, where the
    /// ECS has them.
    fn chunk_counts(&self) -> Option<super::ChunkCounts> {
        None
    }

    /// The world's state.
    ///
    /// # Errors
    /// A message when an entity the layout spawned misses a component it
    /// must have.
    fn snapshot(&mut self) -> Result<Snapshot, String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_have_the_documented_shares() {
        let layout = Layout::new(100_000, 0.05).unwrap();
        assert_eq!(layout.scenery.len(), 50_000);
        assert_eq!(layout.rigs.len(), 2_000);
        assert_eq!(layout.spinning_rigs(), 100);
        assert_eq!(layout.boids.len(), 20_000);
        assert_eq!(layout.active_boids(), 1_000);
        assert_eq!(layout.units.len(), 10_000);
        assert_eq!(layout.entity_count(), 100_002);
        // The same seed gives the same layout; moving ones come first.
        assert_eq!(layout, Layout::new(100_000, 0.05).unwrap());
        assert!(layout.boids[..1_000].iter().all(|b| b.active) && !layout.boids[1_000].active);
        assert!(layout.rigs[99].spin.is_some() && layout.rigs[100].spin.is_none());
        // The fronts start the gap apart, team 0 on the left.
        let front = |team: u8| {
            layout.units.iter().filter(|u| u.team == team).map(|u| u.position.x.abs()).fold(f32::INFINITY, f32::min)
        };
        assert!(front(0) < MELEE.gap && front(1) < MELEE.gap);
        assert!(layout.units.iter().all(|u| (u.team == 0) == (u.position.x < 0.0)));
        assert!(Layout::new(99, 0.0).is_err());
        assert!(Layout::new(1_000, 1.5).is_err());
        assert!(Layout::new(1_000, f64::NAN).is_err());
    }

    #[test]
    fn neighbour_sums_do_not_depend_on_order() {
        let points: Vec<(Vec3, Vec3)> = (0..50)
            .map(|i| {
                let f = i as f32;
                (Vec3::new(283.1 + f * 0.013, -f * 1e-4, 0.1 * f), Vec3::new(f.sin(), 0.2, f.cos()).normalize())
            })
            .collect();
        let mut forward = NeighbourSums::default();
        points.iter().for_each(|&(p, h)| forward.add(p, h));
        let mut backward = NeighbourSums::default();
        points.iter().rev().for_each(|&(p, h)| backward.add(p, h));
        assert_eq!(forward, backward);
        let settings = Layout::new(1_000, 1.0).unwrap().boid_settings;
        let h = forward.next_heading(&settings, 1.0 / 60.0, Vec3::new(283.0, 0.0, 0.0), Vec3::X, Vec3::ZERO, Vec3::Y);
        assert!((h.length() - 1.0).abs() < 1e-5);
    }

    #[test]
    fn the_nearest_target_does_not_depend_on_order() {
        let offers = [(7u32, 2.0f32), (3, 1.0), (9, 1.0), (1, 4.0)];
        let mut forward = EntityMap::default();
        for &(id, d2) in &offers {
            offer_target(&mut forward, 0u32, Nearest { target: id, id, distance_squared: d2 });
        }
        let mut backward = EntityMap::default();
        for &(id, d2) in offers.iter().rev() {
            offer_target(&mut backward, 0u32, Nearest { target: id, id, distance_squared: d2 });
        }
        assert_eq!(forward[&0].id, 3);
        assert_eq!(forward, backward);
        assert_eq!(damage_per_step(20.0, 1.0 / 60.0), 333);
    }

    /// Runs `frames` frames of `scene`.
    fn run(scene: &mut dyn GameScene, frames: usize) {
        for _ in 0..frames {
            scene.frame().unwrap();
        }
    }

    #[test]
    fn ours_is_deterministic_and_the_scene_moves() {
        let layout = Layout::new(4_000, 0.5).unwrap();
        let mut a = ours::GameApp::new(&layout).unwrap();
        let mut b = ours::GameApp::new(&layout).unwrap();
        let start = {
            run(&mut a, 1);
            a.snapshot().unwrap()
        };
        run(&mut a, 59);
        run(&mut b, 60);
        let (sa, sb) = (a.snapshot().unwrap(), b.snapshot().unwrap());
        assert_eq!(sa, sb, "the same layout and frames give the same world");
        assert_eq!(sa.fixed_elapsed, 60 * FRAME, "one fixed step a frame");
        // Everything the scene moves moved, the rest stayed.
        assert_eq!(sa.scenery, start.scenery);
        let moved = |x: &[Vec3], y: &[Vec3]| x.iter().zip(y).filter(|(p, q)| p.distance(**q) > 1e-3).count();
        let spinning = layout.spinning_rigs();
        assert!(spinning > 0);
        // A spinning rig's root bobs and its nodes turn; a still rig stays.
        assert!(moved(&sa.rigs[..spinning * (RIG_NODES + 1)], &start.rigs[..spinning * (RIG_NODES + 1)]) > spinning);
        assert_eq!(moved(&sa.rigs[spinning * (RIG_NODES + 1)..], &start.rigs[spinning * (RIG_NODES + 1)..]), 0);
        let flying = layout.active_boids();
        assert_eq!(moved(&sa.boids[..flying], &start.boids[..flying]), flying);
        assert_eq!(moved(&sa.boids[flying..layout.boids.len()], &start.boids[flying..layout.boids.len()]), 0);
        // The armies met, and units died on both sides and left the world.
        assert!(sa.kills[0] > 0 && sa.kills[1] > 0, "kills {:?}", sa.kills);
        let dead = (sa.kills[0] + sa.kills[1]) as usize;
        assert_eq!(sa.alive() + dead, layout.units.len());
        assert_eq!(sa.entities + dead, layout.entity_count());
        // The per-system split names every system of the scene.
        let times = a.system_times();
        assert!(times[SystemKind::Fight as usize] > 0.0 && times[SystemKind::SteerBoids as usize] > 0.0);
    }

    #[cfg(feature = "peers")]
    #[test]
    fn ours_and_bevy_agree_frame_after_frame() {
        let layout = Layout::new(4_000, 0.5).unwrap();
        let mut ours = ours::GameApp::new(&layout).unwrap();
        let mut peer = bevy::GameApp::new(&layout).unwrap();
        for frames in [1, 9, 50] {
            run(&mut ours, frames);
            run(&mut peer, frames);
            let want = ours.snapshot().unwrap();
            want.compare(&peer.snapshot().unwrap()).unwrap_or_else(|e| panic!("{e}"));
        }
        let snap = ours.snapshot().unwrap();
        assert!(snap.kills[0] + snap.kills[1] > 0, "the check saw units die");
        let times = peer.system_times();
        assert!(times.iter().all(|&t| t > 0.0), "every bevy system was timed: {times:?}");
    }

    #[test]
    fn snapshots_name_the_first_difference() {
        let a = Snapshot {
            fixed_elapsed: FRAME,
            entities: 3,
            scenery: vec![Vec3::ONE],
            rigs: vec![Vec3::ZERO],
            boids: vec![Vec3::X],
            units: vec![Some((Vec3::ZERO, 5)), None],
            kills: [1, 0],
        };
        assert_eq!(a.compare(&a.clone()), Ok(()));
        let mut b = a.clone();
        b.rigs[0] = Vec3::new(0.0, 1e-4, 0.0);
        assert_eq!(a.compare(&b), Ok(()), "within tolerance");
        b.boids[0] = Vec3::new(1.01, 0.0, 0.0);
        assert!(a.compare(&b).unwrap_err().contains("boid 0"));
        let mut c = a.clone();
        c.units[1] = Some((Vec3::ZERO, 1));
        assert!(c.compare(&a).unwrap_err().contains("unit 1 is alive against dead"));
        let mut d = a.clone();
        d.units[0] = Some((Vec3::ZERO, 4));
        assert!(a.compare(&d).unwrap_err().contains("health"));
        let e = Snapshot { fixed_elapsed: 2 * FRAME, ..a.clone() };
        assert!(a.compare(&e).unwrap_err().contains("fixed time"));
    }
}
