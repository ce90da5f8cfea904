//! Melee: RTS units of two teams march at each other, and each unit attacks
//! the nearest enemy within its attack range; enemies in range are found
//! with the broad phase's all-pairs query (each pair once, half the
//! neighbour cells scanned). Units whose health reaches zero are despawned,
//! and the broad phase drops them.
//!
//! The battle runs in an [`App`]'s fixed steps while the [`Battle`] state
//! is [`Battle::Fighting`]. Each step:
//! [`update_broad_phase::<UnitPosition>`](ecs_spatial::update_broad_phase)
//! (the [`BroadPhasePlugin`], in `FixedPreUpdate`), then in `FixedUpdate`
//! [`march`] (units without a target walk towards the enemy), [`fight`]
//! (pairs within range, nearest enemy per attacker, damage for the step's
//! time), [`reap`] (despawn the dead, count kills), then in
//! `FixedPostUpdate` [`check_victory`], which ends the battle
//! ([`Battle::Over`], applied at the next frame's state transition) once a
//! team has no unit left; entering `Over` records the [`MeleeOutcome`].
//!
//! ```
//! use std::time::Duration;
//! use ecs_core::prelude::*;
//! use ecs_examples::melee::{Battle, MeleeConfig, add_melee, summary};
//!
//! let mut app = App::new();
//! app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(33)))
//!     .insert_resource(Time::<Fixed>::from_duration(Duration::from_millis(33)));
//! add_melee(&mut app, &MeleeConfig { units_per_team: 200, ..MeleeConfig::default() }).unwrap();
//! app.run_frames(400);
//! let s = summary(app.world_mut());
//! assert!(s.kills[0] + s.kills[1] > 0);
//! assert_eq!(s.alive[0] + s.alive[1] + s.kills[0] + s.kills[1], 400);
//! assert_eq!(app.world().resource::<State<Battle>>().unwrap().get(), &Battle::Fighting);
//! ```

use std::collections::HashMap;

use ecs_core::StoreError;
use ecs_core::prelude::*;
use ecs_spatial::broad_phase::{BroadPhase, SpatialPosition};
use ecs_spatial::{BroadPhasePlugin, GridError};
use glam::Vec3;

/// A unit's position. Units have a position component of their own, so the
/// battle's broad phase (`BroadPhase<UnitPosition>`) holds only units and can
/// run beside another broad phase of the same world (the showcase keeps one
/// on [`ecs_spatial::Position`] for scenery and boids).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
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
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Team(pub u8);

/// A unit's health; at zero or below the unit dies.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Health(pub f32);

/// A unit's attack.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Attack {
    /// Enemies within this distance can be attacked.
    pub range: f32,
    /// Damage per second to the target.
    pub damage_per_second: f32,
}

/// Whether the unit had a target in the latest [`fight`] (it then stands
/// still instead of marching).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Engaged(pub bool);

/// The battle's rules, a resource.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeleeSettings {
    /// Marching speed.
    pub move_speed: f32,
    /// The largest attack range of any unit: the all-pairs query radius.
    pub max_range: f32,
}

/// Whether the battle goes on (a state: the battle's systems run while
/// [`Battle::Fighting`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Battle {
    /// Both teams have units.
    #[default]
    Fighting,
    /// A team has none left.
    Over,
}

impl States for Battle {}

/// How the battle ended, a resource inserted on entering [`Battle::Over`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeleeOutcome {
    /// The team with units left (`None`: both wiped out in the same step).
    pub winner: Option<u8>,
    /// Fixed steps fought.
    pub steps: u64,
}

/// The battle's systems in `FixedUpdate`, to order other systems against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MeleeSystems;

impl SystemSet for MeleeSystems {}

/// What happened so far, a resource.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeleeStats {
    /// Fixed steps fought.
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
    /// Fixed steps fought.
    pub frames: u64,
}

/// Spawns two teams in facing blocks (team 0 at negative `x`, team 1 at
/// positive `x`, 40 units apart) into `app`'s world, inserts the resources,
/// adds the [`BroadPhasePlugin`] on [`UnitPosition`] (cells of the attack
/// range) and the [`Battle`] state, and adds the systems (see the
/// [module docs](self)). The step is the app's fixed step.
///
/// # Errors
/// [`MeleeError::Config`] for a value out of range; [`MeleeError::Grid`] or
/// [`MeleeError::Store`] if the grid or the store refuse the setup.
pub fn add_melee(app: &mut App, config: &MeleeConfig) -> Result<Vec<Entity>, MeleeError> {
    let positive = |v: f32| v.is_finite() && v > 0.0;
    if config.units_per_team == 0 || config.units_per_team > 10_000_000 {
        return Err(MeleeError::Config("units_per_team must be within 1..=10 million"));
    }
    let values = [config.attack_range, config.damage_per_second, config.health, config.spacing];
    if !(values.into_iter().all(positive) && config.move_speed.is_finite() && config.move_speed >= 0.0) {
        return Err(MeleeError::Config("ranges, damage, health and spacing must be finite and positive"));
    }
    let grid = BroadPhasePlugin::<UnitPosition>::try_new(Vec3::ZERO, config.attack_range).map_err(MeleeError::Grid)?;
    let world = app.world_mut();
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
    world.insert_resource(MeleeSettings { move_speed: config.move_speed, max_range: config.attack_range });
    world.insert_resource(MeleeStats::default());
    app.add_plugins(grid)
        .init_state::<Battle>()
        .add_systems(FixedUpdate, (march, fight, reap).chain().in_set(MeleeSystems).run_if(in_state(Battle::Fighting)))
        .add_systems(FixedPostUpdate, check_victory.run_if(in_state(Battle::Fighting)))
        .add_systems(OnEnter(Battle::Over), record_outcome);
    Ok(units)
}

/// Units without a target walk towards the centre of the enemy team (the
/// mean position of its living units, taken at the start of the step), and
/// stop on it. Steering by the centre rather than straight along `x` makes
/// survivors that broke through turn back: a battle ends with one team
/// wiped out instead of units walking away for ever.
#[expect(clippy::type_complexity, reason = "the set spells out its two queries")]
pub fn march(
    mut units: ParamSet<(Query<(&UnitPosition, &Team)>, Query<(&mut UnitPosition, &Team, &Engaged)>)>,
    settings: Res<MeleeSettings>,
    time: Res<Time>,
) {
    let step = settings.move_speed * time.delta_secs();
    if step == 0.0 {
        return;
    }
    let mut sum = [glam::DVec3::ZERO; 2];
    let mut count = [0u32; 2];
    units.p0().for_each(|(position, team)| {
        let t = usize::from(team.0.min(1));
        sum[t] += position.0.as_dvec3();
        count[t] += 1;
    });
    let centre = |t: usize| (count[t] > 0).then(|| (sum[t] / f64::from(count[t])).as_vec3());
    let targets = [centre(1), centre(0)];
    units.p1().for_each_mut(|(mut position, team, engaged)| {
        if engaged.0 {
            return;
        }
        let Some(target) = targets[usize::from(team.0.min(1))] else { return };
        let to = target - position.0;
        let distance = to.length();
        if distance > 0.0 {
            position.0 += to * (step.min(distance) / distance);
        }
    });
}

/// Finds every pair of units within [`MeleeSettings::max_range`] with the
/// grid's all-pairs query, keeps for each unit its nearest enemy within its
/// own range, and deals damage for this step.
pub fn fight(
    units: Query<(&UnitPosition, &Team, &Attack)>,
    mut targets: Query<(Entity, &mut Health, &mut Engaged)>,
    grid: Res<BroadPhase<UnitPosition>>,
    settings: Res<MeleeSettings>,
    time: Res<Time>,
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
        let damage = attack.damage_per_second * time.delta_secs();
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

/// Ends the battle once a team has no unit left (after [`reap`]'s
/// despawns were applied).
pub fn check_victory(units: Query<&Team>, mut next: ResMut<NextState<Battle>>) {
    let mut units = units;
    let mut alive = [false; 2];
    units.for_each(|team| alive[usize::from(team.0.min(1))] = true);
    if !(alive[0] && alive[1]) {
        next.set(Battle::Over);
    }
}

/// On entering [`Battle::Over`]: inserts the [`MeleeOutcome`].
pub fn record_outcome(units: Query<&Team>, stats: Res<MeleeStats>, mut commands: Commands) {
    let mut units = units;
    let mut alive = [0usize; 2];
    units.for_each(|team| alive[usize::from(team.0.min(1))] += 1);
    let winner = match alive {
        [0, 0] => None,
        [_, 0] => Some(0),
        _ => Some(1),
    };
    let outcome = MeleeOutcome { winner, steps: stats.frames };
    commands.add(move |world: &mut World| -> Result<(), StoreError> {
        world.insert_resource(outcome);
        Ok(())
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
    use std::time::Duration;

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

    /// A battle that does not march, one fixed step of 0.1 s per frame of
    /// 0.1 s (the virtual clock's maximum delta raised to let it through).
    fn still_battle() -> App {
        let mut app = App::new();
        app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(100)))
            .insert_resource(Time::<Fixed>::from_duration(Duration::from_millis(100)));
        app.world_mut().resource_mut::<Time<Virtual>>().unwrap().set_max_delta(Duration::from_millis(100));
        // One unit, so add_melee's setup runs; it is despawned before the test's units fight.
        let config = MeleeConfig { units_per_team: 1, move_speed: 0.0, ..MeleeConfig::default() };
        let setup = add_melee(&mut app, &config).unwrap();
        for e in setup {
            app.world_mut().despawn(e).unwrap();
        }
        app
    }

    #[test]
    fn a_unit_in_range_takes_damage_and_one_out_of_range_none() {
        let mut app = still_battle();
        let world = app.world_mut();
        let a = unit(world, 0, 0.0);
        let near = unit(world, 1, 1.5); // in range of a
        let far = unit(world, 1, 10.0); // out of range of everyone
        let friend = unit(world, 0, -1.0); // in range of a, same team
        app.update();
        let world = app.world();
        let health = |e| world.get::<Health>(e).unwrap().0;
        assert_eq!(health(near), 97.0, "a hits its nearest enemy: 30/s for 0.1 s");
        assert_eq!(health(a), 97.0, "near hits back");
        assert_eq!(health(far), 100.0);
        assert_eq!(health(friend), 100.0, "friend is 2.5 from near: out of range, and a is a friend");
        assert!(world.get::<Engaged>(a).unwrap().0 && !world.get::<Engaged>(far).unwrap().0);
    }

    #[test]
    fn each_attacker_hits_only_its_nearest_enemy() {
        let mut app = still_battle();
        let world = app.world_mut();
        let a = unit(world, 0, 0.0);
        let close = unit(world, 1, 0.5);
        let farther = unit(world, 1, -1.9);
        app.update();
        // a hits `close` only; both enemies hit a.
        let world = app.world();
        assert_eq!(world.get::<Health>(close).unwrap().0, 97.0);
        assert_eq!(world.get::<Health>(farther).unwrap().0, 100.0);
        assert_eq!(world.get::<Health>(a).unwrap().0, 94.0);
    }

    #[test]
    fn the_dead_are_despawned_and_leave_the_grid_and_the_battle_ends() {
        let mut app = still_battle();
        let world = app.world_mut();
        let a = unit(world, 0, 0.0);
        let b = unit(world, 1, 1.0);
        world.get_mut::<Health>(b).unwrap().0 = 2.0;
        app.update(); // b takes 3 and dies; check_victory asks for Over
        assert!(!app.world().contains(b) && app.world().contains(a));
        assert_eq!(app.world().resource::<State<Battle>>().unwrap().get(), &Battle::Fighting);
        app.update(); // the transition; the step's broad phase drops b
        let world = app.world();
        assert_eq!(world.resource::<State<Battle>>().unwrap().get(), &Battle::Over);
        assert_eq!(world.resource::<MeleeOutcome>(), Some(&MeleeOutcome { winner: Some(0), steps: 1 }));
        let grid = world.resource::<BroadPhase<UnitPosition>>().unwrap().grid();
        assert_eq!(grid.ids(), &[a]);
        // Over: the battle's systems no longer run.
        app.run_frames(3);
        let s = summary(app.world_mut());
        assert_eq!((s.alive, s.kills, s.frames), ([1, 0], [1, 0], 1));
    }

    #[test]
    fn a_battle_is_the_same_for_the_same_config_and_fixed_steps() {
        let battle = || {
            let mut app = App::new();
            app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(40)))
                .insert_resource(Time::<Fixed>::from_duration(Duration::from_millis(20)));
            add_melee(&mut app, &MeleeConfig { units_per_team: 100, ..MeleeConfig::default() }).unwrap();
            app.run_frames(250);
            summary(app.world_mut())
        };
        let (a, b) = (battle(), battle());
        assert_eq!(a, b);
        assert_eq!(a.frames, 500, "two steps a frame");
        assert!(a.kills[0] + a.kills[1] > 0);
    }

    /// Units that break through the enemy line turn back: every battle ends
    /// with a team wiped out (it used to stall with survivors marching away).
    #[test]
    fn battles_end_with_a_team_wiped_out() {
        for (units_per_team, seed) in [(1, 1), (7, 2), (60, 3), (300, 4)] {
            let mut app = App::new();
            app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(50)))
                .insert_resource(Time::<Fixed>::from_duration(Duration::from_millis(50)));
            add_melee(&mut app, &MeleeConfig { units_per_team, seed, ..MeleeConfig::default() }).unwrap();
            let mut frames = 0;
            while app.world().resource::<State<Battle>>().unwrap().get() == &Battle::Fighting {
                assert!(frames < 20_000, "{units_per_team} a side: no end after {frames} frames");
                app.update();
                frames += 1;
            }
            let s = summary(app.world_mut());
            let outcome = *app.world().resource::<MeleeOutcome>().unwrap();
            assert!(s.alive[0] == 0 || s.alive[1] == 0, "{units_per_team} a side: {s:?}");
            assert_eq!(outcome.winner.map(usize::from), (0..2).find(|&t| s.alive[t] > 0));
            assert_eq!(s.alive[0] + s.alive[1] + s.kills[0] + s.kills[1], 2 * units_per_team);
        }
    }
}
