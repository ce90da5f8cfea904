//! The `game` scene on our ECS: an [`App`] with the [`TransformPlugin`] and
//! two [`BroadPhasePlugin`]s (on [`Position`]: scenery, rig roots, boids,
//! target and predator; on [`UnitPosition`]: the units), as the showcase
//! builds it, and the scene's systems (see the [parent module](super)).
//!
//! Each frame: `FixedPreUpdate` keeps the two broad phases up to date from
//! chunk ticks (incrementally: only rows whose position changed are
//! re-keyed); `FixedUpdate` runs [`spin_rigs`], the flock
//! ([`move_target_and_predator`], [`steer_boids`] in parallel over chunks,
//! [`move_boids`] in parallel) and the battle ([`march`], [`fight`],
//! [`reap`]); `PostUpdate` propagates transforms and runs
//! [`sync_positions`] on `Changed<GlobalTransform>`.

use ecs_core::app::{InternedScheduleLabel, Schedules};
use ecs_core::prelude::*;
use ecs_examples::boids::BoidSettings;
use ecs_spatial::BroadPhasePlugin;
use ecs_spatial::broad_phase::{BroadPhase, Position, SpatialPosition};
use ecs_transform::{
    GlobalTransform, LocalTransform, TransformPlugin, TransformSystems, WorldHierarchyExt, transform_bundle,
};
use glam::Vec3;

use super::{
    BOID_CELL, EntityMap, FRAME, GAME_SYSTEMS, GameScene, Layout, MELEE, Nearest, NeighbourSums, RIG_NODES, Snapshot,
    Spin, SystemKind, damage_per_step, offer_target, predator_point, rig_offset, spin_local, starting_health,
    target_point,
};
use crate::scenes::ChunkCounts;

/// Marks static scenery (never written after spawn).
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scenery;

/// A spinning rig root's spin.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Spinning(pub Spin);

/// Marks a boid.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boid;

/// Marks a boid that steers and moves.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Active;

/// A boid's unit heading.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Heading(pub Vec3);

/// The heading an active boid turns to this step.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Steering(pub Vec3);

/// Marks the boids' target.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoidTarget;

/// Marks the predator.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Predator;

/// A unit's position (the battle's own broad phase).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct UnitPosition(pub Vec3);

impl SpatialPosition for UnitPosition {
    type Point = Vec3;

    #[inline]
    fn grid_point(&self) -> Vec3 {
        self.0
    }
}

/// A unit's team (0 or 1) and stable id.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Team.
    pub team: u8,
    /// Stable id (ties between equally near enemies go to the lower).
    pub id: u32,
}

/// Health in milli-points; at zero or below the unit dies.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health(pub i32);

/// A unit's attack.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Attack {
    /// Enemies within this distance can be attacked.
    pub range: f32,
    /// Damage per second to the target (points).
    pub damage_per_second: f32,
}

/// Whether the unit had a target in the latest [`fight`] (it then stands).
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Engaged(pub bool);

/// Kills per team, a resource.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kills(pub [u32; 2]);

/// Spins and bobs the moving rigs' roots (their locals change every step).
pub fn spin_rigs(mut rigs: Query<(&mut LocalTransform, &Spinning)>, time: Res<Time>) {
    let t = time.elapsed().as_secs_f32();
    rigs.for_each_mut(|(mut local, spin)| {
        let (rotation, y) = spin_local(spin.0, t);
        local.rotation = rotation;
        local.translation.y = y;
    });
}

/// Moves the target and the predator to where they are at the end of the
/// step.
pub fn move_target_and_predator(
    mut target: Query<&mut Position, With<BoidTarget>>,
    mut predator: Query<&mut Position, (With<Predator>, Without<BoidTarget>)>,
    time: Res<Time>,
    settings: Res<BoidSettings>,
) {
    let t = time.elapsed().as_secs_f32();
    target.for_each_mut(|mut p| p.0 = target_point(settings.path_radius, t));
    predator.for_each_mut(|mut p| p.0 = predator_point(settings.path_radius, t));
}

/// The filter of the target and the predator.
type TargetOrPredator = Or<(With<BoidTarget>, With<Predator>)>;

/// Computes every active boid's [`Steering`] from the boids within
/// [`BoidSettings::cell_radius`] on the grid, in parallel over chunks.
pub fn steer_boids(
    mut boids: Query<(Entity, &Position, &Heading, &mut Steering), With<Active>>,
    headings: Query<&Heading, With<Boid>>,
    goals: Query<(&Position, Has<BoidTarget>), TargetOrPredator>,
    grid: Res<BroadPhase<Position>>,
    settings: Res<BoidSettings>,
    time: Res<Time>,
) {
    let mut goals = goals;
    let (mut target, mut predator) = (Vec3::ZERO, Vec3::splat(f32::INFINITY));
    goals.for_each(|(p, is_target)| if is_target { target = p.0 } else { predator = p.0 });
    let grid = grid.grid();
    let (settings, dt) = (*settings, time.delta().as_secs_f32());
    let headings = &headings;
    boids.par_for_each_mut(|(me, position, heading, mut steering)| {
        let mut sums = NeighbourSums::default();
        grid.for_each_in_radius(position.0, settings.cell_radius, |other, p| {
            if other != me
                && let Ok(h) = headings.get(other)
            {
                sums.add(p, h.0);
            }
        });
        steering.0 = sums.next_heading(&settings, dt, position.0, heading.0, target, predator);
    });
}

/// Turns every active boid to its [`Steering`] and moves it for the step.
pub fn move_boids(
    mut boids: Query<(&mut Position, &mut Heading, &Steering), With<Active>>,
    settings: Res<BoidSettings>,
    time: Res<Time>,
) {
    let step = settings.move_speed * time.delta().as_secs_f32();
    boids.par_for_each_mut(|(mut position, mut heading, steering)| {
        heading.0 = steering.0;
        position.0 += steering.0 * step;
    });
}

/// Units without a target walk straight at the enemy side.
pub fn march(mut units: Query<(&mut UnitPosition, &Unit, &Engaged)>, time: Res<Time>) {
    let step = MELEE.move_speed * time.delta().as_secs_f32();
    units.for_each_mut(|(mut position, unit, engaged)| {
        if !engaged.0 {
            position.0.x += if unit.team == 0 { step } else { -step };
        }
    });
}

/// Finds every pair of units within the attack range on the units' grid,
/// keeps each unit's nearest enemy within its own range, and deals the
/// step's damage.
pub fn fight(
    units: Query<(&UnitPosition, &Unit, &Attack)>,
    mut targets: Query<(Entity, &mut Health, &mut Engaged)>,
    grid: Res<BroadPhase<UnitPosition>>,
    time: Res<Time>,
    mut nearest: Local<EntityMap<Entity, Nearest<Entity>>>,
) {
    nearest.clear();
    grid.grid().for_each_pair_within(MELEE.attack_range, |a, b| {
        let (Ok((pa, ua, aa)), Ok((pb, ub, ab))) = (units.get(a), units.get(b)) else { return };
        if ua.team == ub.team {
            return;
        }
        let d2 = pa.0.distance_squared(pb.0);
        if d2 <= aa.range * aa.range {
            offer_target(&mut nearest, a, Nearest { target: b, id: ub.id, distance_squared: d2 });
        }
        if d2 <= ab.range * ab.range {
            offer_target(&mut nearest, b, Nearest { target: a, id: ua.id, distance_squared: d2 });
        }
    });
    let dt = time.delta().as_secs_f32();
    for (&attacker, best) in nearest.iter() {
        let Ok((_, _, attack)) = units.get(attacker) else { continue };
        if let Ok((_, mut health, _)) = targets.get_mut(best.target) {
            health.0 -= damage_per_step(attack.damage_per_second, dt);
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

/// Despawns the units whose health reached zero and credits the kill to the
/// other team.
pub fn reap(dead: Query<(Entity, &Health, &Unit)>, mut commands: Commands, mut kills: ResMut<Kills>) {
    let mut dead = dead;
    dead.for_each(|(entity, health, unit)| {
        if health.0 <= 0 {
            commands.despawn(entity);
            kills.0[usize::from(1 - unit.team.min(1))] += 1;
        }
    });
}

/// Copies a changed global translation into the broad-phase [`Position`],
/// writing only when it differs.
pub fn sync_positions(mut moved: Query<(&GlobalTransform, &mut Position), Changed<GlobalTransform>>) {
    moved.for_each_mut(|(global, mut pos)| {
        pos.set_if_neq(Position(global.translation()));
    });
}

/// The scene's row of [`GAME_SYSTEMS`] for one of our systems, by its short
/// name; `None` for systems of the app's own (time, states).
fn kind_of(short: &str) -> Option<SystemKind> {
    Some(match short {
        "update_broad_phase<Position>" => SystemKind::BroadPhasePositions,
        "update_broad_phase<UnitPosition>" => SystemKind::BroadPhaseUnits,
        "spin_rigs" => SystemKind::SpinRigs,
        "move_target_and_predator" => SystemKind::MoveTargetAndPredator,
        "steer_boids" => SystemKind::SteerBoids,
        "move_boids" => SystemKind::MoveBoids,
        "march" => SystemKind::March,
        "fight" => SystemKind::Fight,
        "reap" => SystemKind::Reap,
        "propagate_transforms" => SystemKind::Propagate,
        "sync_positions" => SystemKind::SyncPositions,
        _ => return None,
    })
}

/// A system's path without module prefixes: `update_broad_phase<Position>`.
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

/// The scene on our ECS.
pub struct GameApp {
    app: App,
    /// Every spawned entity in [`Layout`] order: scenery, rig nodes (root
    /// first), boids, target, predator, units.
    entities: Vec<Entity>,
    layout_counts: (usize, usize, usize, usize),
    /// The schedules that hold the scene's systems.
    labels: [InternedScheduleLabel; 3],
    error: Option<String>,
}

impl GameApp {
    /// Spawns `layout` and builds the app; runs no frame.
    ///
    /// # Errors
    /// A message when a broad phase refuses its configuration, a hierarchy
    /// link fails or a schedule does not build.
    pub fn new(layout: &Layout) -> Result<Self, String> {
        let positions = BroadPhasePlugin::<Position>::try_new(Vec3::splat(-layout.side), BOID_CELL)
            .map_err(|e| format!("broad phase on Position: {e}"))?;
        let units = BroadPhasePlugin::<UnitPosition>::try_new(Vec3::ZERO, MELEE.attack_range)
            .map_err(|e| format!("broad phase on UnitPosition: {e}"))?;
        let mut app = App::new();
        app.add_plugins((TransformPlugin, positions, units))
            .insert_resource(TimeUpdateStrategy::ManualDuration(FRAME))
            .insert_resource(Time::<Fixed>::from_duration(FRAME))
            .insert_resource(layout.boid_settings)
            .insert_resource(Kills::default())
            .add_systems(FixedUpdate, spin_rigs)
            .add_systems(FixedUpdate, (move_target_and_predator, steer_boids, move_boids).chain())
            .add_systems(FixedUpdate, (march, fight, reap).chain())
            .add_systems(PostUpdate, sync_positions.after(TransformSystems::Propagate));
        let world = app.world_mut();
        let mut entities = Vec::with_capacity(layout.entity_count());
        entities.extend(world.spawn_batch(layout.scenery.iter().map(|&p| {
            let (local, global) = transform_bundle(LocalTransform::from_translation(p));
            (local, global, Position(p), Scenery)
        })));
        for rig in &layout.rigs {
            let (local, global) = transform_bundle(LocalTransform::from_translation(rig.root));
            let root = match rig.spin {
                Some(spin) => world.spawn((local, global, Position(rig.root), Spinning(spin))),
                None => world.spawn((local, global, Position(rig.root))),
            };
            entities.push(root);
            for limb in 0..3 {
                let mut parent = root;
                for joint in 0..3 {
                    let node = world.spawn(transform_bundle(LocalTransform::from_translation(rig_offset(limb, joint))));
                    world.set_parent(node, parent).map_err(|e| format!("rig hierarchy: {e}"))?;
                    entities.push(node);
                    parent = node;
                }
            }
        }
        let active = layout.active_boids();
        entities.extend(
            world.spawn_batch(
                layout.boids[..active]
                    .iter()
                    .map(|b| (Position(b.position), Heading(b.heading), Steering(b.heading), Boid, Active)),
            ),
        );
        entities.extend(
            world.spawn_batch(layout.boids[active..].iter().map(|b| (Position(b.position), Heading(b.heading), Boid))),
        );
        entities.push(world.spawn((Position(layout.target_start()), BoidTarget)));
        entities.push(world.spawn((Position(layout.predator_start()), Predator)));
        let attack = Attack { range: MELEE.attack_range, damage_per_second: MELEE.damage_per_second };
        entities.extend(world.spawn_batch(layout.units.iter().map(|u| {
            (
                UnitPosition(u.position),
                Unit { team: u.team, id: u.id },
                Health(starting_health()),
                attack,
                Engaged(false),
            )
        })));
        app.build_schedules().map_err(|e| format!("schedules: {e}"))?;
        Ok(GameApp {
            app,
            entities,
            layout_counts: (layout.scenery.len(), layout.rigs.len(), layout.boids.len(), layout.units.len()),
            labels: [FixedPreUpdate.intern(), FixedUpdate.intern(), PostUpdate.intern()],
            error: None,
        })
    }

    /// The app.
    pub fn app(&self) -> &App {
        &self.app
    }

    /// The app, mutably.
    pub fn app_mut(&mut self) -> &mut App {
        &mut self.app
    }

    /// The scene's systems' statistics of the latest frame, in schedule
    /// order, with their row of [`GAME_SYSTEMS`].
    fn scene_systems(&self) -> Vec<(SystemKind, &ecs_core::SystemStats)> {
        let Some(schedules) = self.app.world().resource::<Schedules>() else { return Vec::new() };
        self.labels
            .iter()
            .filter_map(|label| schedules.get(label.clone()))
            .flat_map(Schedule::system_stats)
            .filter_map(|s| kind_of(&short_name(&s.name)).map(|k| (k, s)))
            .collect()
    }
}

impl GameScene for GameApp {
    fn frame(&mut self) -> Result<(), String> {
        match self.app.try_update() {
            Ok(()) => Ok(()),
            Err(e) => {
                let e = format!("app update: {e}");
                self.error.get_or_insert(e.clone());
                Err(e)
            }
        }
    }

    fn system_times(&self) -> [f64; GAME_SYSTEMS.len()] {
        let mut out = [0.0; GAME_SYSTEMS.len()];
        for (kind, stats) in self.scene_systems() {
            out[kind as usize] += stats.time.as_secs_f64() * 1e6;
        }
        out
    }

    fn chunk_counts(&self) -> Option<ChunkCounts> {
        let mut counts = ChunkCounts::default();
        for (_, stats) in self.scene_systems() {
            let c = stats.chunks();
            counts.total += c.chunks_total;
            counts.skipped += c.chunks_skipped;
        }
        Some(counts)
    }

    fn snapshot(&mut self) -> Result<Snapshot, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let found = self.scene_systems().len();
        if found != GAME_SYSTEMS.len() {
            return Err(format!("found {found} of the scene's {} systems in the schedules", GAME_SYSTEMS.len()));
        }
        let scene_entities = {
            let world = self.app.world_mut();
            let mut q =
                world.query_filtered::<Entity, Or<(With<Position>, With<UnitPosition>, With<LocalTransform>)>>();
            q.iter(world).count()
        };
        let world = self.app.world();
        let (scenery, rigs, boids, units) = self.layout_counts;
        let mut entities = self.entities.iter().copied();
        let position = |e: Entity| world.get::<Position>(e).map(|p| p.0).map_err(|err| format!("{e}: {err}"));
        let global =
            |e: Entity| world.get::<GlobalTransform>(e).map(|g| g.translation()).map_err(|err| format!("{e}: {err}"));
        let mut next = || entities.next().ok_or_else(|| "fewer entities than the layout".to_owned());
        let mut snap = Snapshot {
            fixed_elapsed: world.resource::<Time<Fixed>>().map_or(Default::default(), Time::elapsed),
            entities: scene_entities,
            scenery: Vec::with_capacity(scenery),
            rigs: Vec::with_capacity(rigs * (RIG_NODES + 1)),
            boids: Vec::with_capacity(boids + 2),
            units: Vec::with_capacity(units),
            kills: world.resource::<Kills>().map_or([0; 2], |k| k.0),
        };
        for _ in 0..scenery {
            snap.scenery.push(position(next()?)?);
        }
        for _ in 0..rigs {
            let root = next()?;
            snap.rigs.push(position(root)?);
            snap.rigs.push(global(root)?);
            for _ in 1..RIG_NODES {
                snap.rigs.push(global(next()?)?);
            }
        }
        for _ in 0..boids + 2 {
            snap.boids.push(position(next()?)?);
        }
        for _ in 0..units {
            let e = next()?;
            snap.units.push(match (world.get::<UnitPosition>(e), world.get::<Health>(e)) {
                (Ok(p), Ok(h)) => Some((p.0, h.0)),
                _ if !world.contains(e) => None,
                _ => return Err(format!("unit {e} lacks its position or health")),
            });
        }
        Ok(snap)
    }
}
