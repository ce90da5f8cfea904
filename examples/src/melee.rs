//! Melee: RTS units of two teams march at each other, and each unit attacks
//! the nearest enemy within its attack range; enemies in range are found
//! with the broad phase's all-pairs query (each pair once, half the
//! neighbour cells scanned). Units whose health reaches zero are despawned,
//! and the broad phase drops them.
//!
//! Each frame: [`march`] (units without a target walk towards the enemy),
//! [`update_broad_phase::<UnitPosition>`](update_broad_phase), [`fight`] (pairs
//! within range, nearest enemy per attacker, damage), [`reap`] (despawn the
//! dead, count kills).
//!
//! ```
//! use ecs_core::prelude::*;
//! use ecs_examples::melee::{MeleeConfig, add_melee, summary};
//!
//! let mut world = World::new();
//! let mut schedule = Schedule::new();
//! add_melee(&mut world, &mut schedule, &MeleeConfig { units_per_team: 200, ..MeleeConfig::default() }).unwrap();
//! for _ in 0..400 {
//!     schedule.run(&mut world).unwrap();
//! }
//! let s = summary(&mut world);
//! assert!(s.kills[0] + s.kills[1] > 0);
//! assert_eq!(s.alive[0] + s.alive[1] + s.kills[0] + s.kills[1], 400);
//! ```

use std::collections::HashMap;

use ecs_core::StoreError;
use ecs_core::prelude::*;
use ecs_spatial::GridError;
use ecs_spatial::broad_phase::{BroadPhase, SpatialPosition, update_broad_phase};
use glam::Vec3;

/// A unit's position. Units have a position component of their own, so the
/// battle's broad phase (`BroadPhase<UnitPosition>`) holds only units and can
/// run beside another broad phase of the same world (the showcase keeps one
/// on [`ecs_spatial::Position`] for scenery and boids).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnitPosition(pub Vec3);

impl SpatialPosition for UnitPosition {
    type Point = Vec3;

    fn grid_point(&self) -> Vec3 {
        self.0
    }
}

/// The battle's size and the units' numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeleeConfig {
    /// Units per team (at least 1).
    pub units_per_team: usize,
    /// Attack range of every unit.
    pub attack_range: f32,
    /// Damage per second a unit deals to its target.
    pub damage_per_second: f32,
    /// Starting health.
    pub health: f32,
    /// Marching speed, units per second.
    pub move_speed: f32,
    /// Distance between neighbouring units in a team's starting block.
    pub spacing: f32,
    /// Fixed frame time, seconds.
    pub frame_time: f32,
    /// Seed of the starting jitter.
    pub seed: u64,
}

impl Default for MeleeConfig {
    fn default() -> Self {
        MeleeConfig {
            units_per_team: 5_000,
            attack_range: 2.0,
            damage_per_second: 20.0,
            health: 100.0,
            move_speed: 4.0,
            spacing: 1.5,
            frame_time: 1.0 / 30.0,
            seed: 0x3E1EE,
        }
    }
}

/// Why the melee scene could not be set up.
#[derive(Debug)]
pub enum MeleeError {
    /// A configuration value out of range.
    Config(&'static str),
    /// The store refused a spawn.
    Store(StoreError),
    /// The broad phase refused its configuration.
    Grid(GridError),
}

impl std::fmt::Display for MeleeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MeleeError::Config(s) => write!(f, "bad configuration: {s}"),
            MeleeError::Store(e) => write!(f, "store: {e}"),
            MeleeError::Grid(e) => write!(f, "broad phase: {e}"),
        }
    }
}

impl std::error::Error for MeleeError {}

/// A unit's team, 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Team(pub u8);

/// A unit's health; at zero or below the unit dies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Health(pub f32);

/// A unit's attack.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attack {
    /// Enemies within this distance can be attacked.
    pub range: f32,
    /// Damage per second to the target.
    pub damage_per_second: f32,
}

/// Whether the unit had a target in the latest [`fight`] (it then stands
/// still instead of marching).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Engaged(pub bool);

/// The battle's rules, a resource.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeleeSettings {
    /// Marching speed.
    pub move_speed: f32,
    /// Fixed frame time, seconds.
    pub frame_time: f32,
    /// The largest attack range of any unit: the all-pairs query radius.
    pub max_range: f32,
}

/// What happened so far, a resource.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeleeStats {
    /// Frames fought.
    pub frames: u64,
    /// Enemies killed by each team.
    pub kills: [usize; 2],
    /// Damage dealt by each team.
    pub damage: [f64; 2],
    /// Pairs within range found by the latest [`fight`] (any teams).
    pub pairs_in_range: usize,
}

/// The state of the battle.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeleeSummary {
    /// Units alive per team.
    pub alive: [usize; 2],
    /// Enemies killed by each team.
    pub kills: [usize; 2],
    /// Damage dealt by each team.
    pub damage: [f64; 2],
    /// Frames fought.
    pub frames: u64,
}

/// Spawns two teams in facing blocks (team 0 at negative `x`, team 1 at
/// positive `x`, 40 units apart), inserts the resources (including the
/// `BroadPhase<UnitPosition>` with cells of the attack range) and adds the
/// systems to `schedule` in frame order.
///
/// # Errors
/// [`MeleeError::Config`] for a value out of range; [`MeleeError::Grid`] or
/// [`MeleeError::Store`] if the grid or the store refuse the setup.
pub fn add_melee(world: &mut World, schedule: &mut Schedule, config: &MeleeConfig) -> Result<Vec<Entity>, MeleeError> {
    let positive = |v: f32| v.is_finite() && v > 0.0;
    if config.units_per_team == 0 || config.units_per_team > 10_000_000 {
        return Err(MeleeError::Config("units_per_team must be within 1..=10 million"));
    }
    let values = [config.attack_range, config.damage_per_second, config.health, config.spacing, config.frame_time];
    if !(values.into_iter().all(positive) && config.move_speed.is_finite() && config.move_speed >= 0.0) {
        return Err(MeleeError::Config("ranges, damage, health, spacing and frame time must be finite and positive"));
    }
    let side = (config.units_per_team as f64).sqrt().ceil() as usize;
    let mut seed = config.seed;
    let mut jitter = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.5
    };
    let mut units = Vec::with_capacity(2 * config.units_per_team);
    for team in 0..2u8 {
        let sign = if team == 0 { -1.0 } else { 1.0 };
        let mut block = Vec::with_capacity(config.units_per_team);
        for i in 0..config.units_per_team {
            let (row, col) = ((i / side) as f32, (i % side) as f32);
            let x = sign * (20.0 + row * config.spacing) + jitter() * config.spacing;
            let z = (col - side as f32 / 2.0) * config.spacing + jitter() * config.spacing;
            block.push((
                UnitPosition(Vec3::new(x, 0.0, z)),
                Team(team),
                Health(config.health),
                Attack { range: config.attack_range, damage_per_second: config.damage_per_second },
                Engaged(false),
            ));
        }
        units.extend(world.spawn_batch(block));
    }
    let grid = BroadPhase::<UnitPosition>::new(Vec3::ZERO, config.attack_range).map_err(MeleeError::Grid)?;
    world.insert_resource(grid);
    world.insert_resource(MeleeSettings {
        move_speed: config.move_speed,
        frame_time: config.frame_time,
        max_range: config.attack_range,
    });
    world.insert_resource(MeleeStats::default());
    schedule.add_systems((march, update_broad_phase::<UnitPosition>, fight, reap).chain());
    Ok(units)
}

/// Units without a target walk straight at the enemy side.
pub fn march(mut units: Query<(&mut UnitPosition, &Team, &Engaged)>, settings: Res<MeleeSettings>) {
    let step = settings.move_speed * settings.frame_time;
    if step == 0.0 {
        return;
    }
    units.for_each_mut(|(mut position, team, engaged)| {
        if !engaged.0 {
            position.0.x += if team.0 == 0 { step } else { -step };
        }
    });
}

/// Finds every pair of units within [`MeleeSettings::max_range`] with the
/// grid's all-pairs query, keeps for each unit its nearest enemy within its
/// own range, and deals damage for this frame.
pub fn fight(
    units: Query<(&UnitPosition, &Team, &Attack)>,
    mut targets: Query<(Entity, &mut Health, &mut Engaged)>,
    grid: Res<BroadPhase<UnitPosition>>,
    settings: Res<MeleeSettings>,
    mut stats: ResMut<MeleeStats>,
    mut nearest: Local<HashMap<Entity, (Entity, f32)>>,
) {
    nearest.clear();
    let mut pairs = 0;
    let offer = |nearest: &mut HashMap<Entity, (Entity, f32)>, attacker: Entity, target: Entity, d2: f32| {
        let best = nearest.entry(attacker).or_insert((target, d2));
        if d2 < best.1 || (d2 == best.1 && target < best.0) {
            *best = (target, d2);
        }
    };
    grid.grid().for_each_pair_within(settings.max_range, |a, b| {
        let (Ok((pa, ta, aa)), Ok((pb, tb, ab))) = (units.get(a), units.get(b)) else { return };
        pairs += 1;
        if ta.0 == tb.0 {
            return;
        }
        let d2 = pa.0.distance_squared(pb.0);
        if d2 <= aa.range * aa.range {
            offer(&mut nearest, a, b, d2);
        }
        if d2 <= ab.range * ab.range {
            offer(&mut nearest, b, a, d2);
        }
    });
    stats.pairs_in_range = pairs;
    stats.frames += 1;
    for (&attacker, &(target, _)) in nearest.iter() {
        let Ok((_, team, attack)) = units.get(attacker) else { continue };
        let damage = attack.damage_per_second * settings.frame_time;
        if let Ok((_, mut health, _)) = targets.get_mut(target) {
            health.0 -= damage;
            stats.damage[usize::from(team.0.min(1))] += f64::from(damage);
        }
    }
    let nearest = &*nearest;
    targets.for_each_mut(|(entity, _, mut engaged)| {
        let now = nearest.contains_key(&entity);
        if engaged.0 != now {
            engaged.0 = now;
        }
    });
}

/// Despawns units whose health reached zero and credits the kill to the
/// other team.
pub fn reap(dead: Query<(Entity, &Health, &Team)>, mut commands: Commands, mut stats: ResMut<MeleeStats>) {
    let mut dead = dead;
    dead.for_each(|(entity, health, team)| {
        if health.0 <= 0.0 {
            commands.despawn(entity);
            stats.kills[usize::from(1 - team.0.min(1))] += 1;
        }
    });
}

/// Units alive per team and the running totals.
pub fn summary(world: &mut World) -> MeleeSummary {
    let mut alive = [0usize; 2];
    let mut teams = world.query::<&Team>();
    teams.for_each(world, |team| alive[usize::from(team.0.min(1))] += 1);
    let stats = world.resource::<MeleeStats>().copied().unwrap_or_default();
    MeleeSummary { alive, kills: stats.kills, damage: stats.damage, frames: stats.frames }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(world: &mut World, team: u8, x: f32) -> Entity {
        world.spawn((
            UnitPosition(Vec3::new(x, 0.0, 0.0)),
            Team(team),
            Health(100.0),
            Attack { range: 2.0, damage_per_second: 30.0 },
            Engaged(false),
        ))
    }

    fn still_battle() -> (World, Schedule) {
        let mut world = World::new();
        let mut schedule = Schedule::new();
        // One unit, so add_melee's setup runs; it is despawned before the test's units fight.
        let config = MeleeConfig { units_per_team: 1, move_speed: 0.0, frame_time: 0.1, ..MeleeConfig::default() };
        let setup = add_melee(&mut world, &mut schedule, &config).unwrap();
        for e in setup {
            world.despawn(e).unwrap();
        }
        (world, schedule)
    }

    #[test]
    fn a_unit_in_range_takes_damage_and_one_out_of_range_none() {
        let (mut world, mut schedule) = still_battle();
        let a = unit(&mut world, 0, 0.0);
        let near = unit(&mut world, 1, 1.5); // in range of a
        let far = unit(&mut world, 1, 10.0); // out of range of everyone
        let friend = unit(&mut world, 0, -1.0); // in range of a, same team
        schedule.run(&mut world).unwrap();
        let health = |w: &World, e| w.get::<Health>(e).unwrap().0;
        assert_eq!(health(&world, near), 97.0, "a hits its nearest enemy: 30/s for 0.1 s");
        assert_eq!(health(&world, a), 97.0, "near hits back");
        assert_eq!(health(&world, far), 100.0);
        assert_eq!(health(&world, friend), 100.0, "friend is 2.5 from near: out of range, and a is a friend");
        assert!(world.get::<Engaged>(a).unwrap().0 && !world.get::<Engaged>(far).unwrap().0);
    }

    #[test]
    fn each_attacker_hits_only_its_nearest_enemy() {
        let (mut world, mut schedule) = still_battle();
        let a = unit(&mut world, 0, 0.0);
        let close = unit(&mut world, 1, 0.5);
        let farther = unit(&mut world, 1, -1.9);
        schedule.run(&mut world).unwrap();
        // a hits `close` only; both enemies hit a.
        assert_eq!(world.get::<Health>(close).unwrap().0, 97.0);
        assert_eq!(world.get::<Health>(farther).unwrap().0, 100.0);
        assert_eq!(world.get::<Health>(a).unwrap().0, 94.0);
    }

    #[test]
    fn the_dead_are_despawned_and_leave_the_grid() {
        let (mut world, mut schedule) = still_battle();
        let a = unit(&mut world, 0, 0.0);
        let b = unit(&mut world, 1, 1.0);
        world.get_mut::<Health>(b).unwrap().0 = 2.0;
        schedule.run(&mut world).unwrap(); // b takes 3 and dies
        assert!(!world.contains(b) && world.contains(a));
        schedule.run(&mut world).unwrap(); // the broad phase notices
        let grid = world.resource::<BroadPhase<UnitPosition>>().unwrap().grid();
        assert_eq!(grid.ids(), &[a]);
        let s = summary(&mut world);
        assert_eq!((s.alive, s.kills), ([1, 0], [1, 0]));
    }
}
