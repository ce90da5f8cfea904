//! The `game` scene on bevy 0.20 (feature `peers`), written as a bevy user
//! would: a `bevy_app::App` with bevy_time's `TimePlugin` on a manual clock
//! (one fixed step of [`FRAME`] per update), bevy_transform's propagation,
//! the scene's systems in `FixedUpdate` with `par_iter_mut` where ours runs
//! in parallel (steering and moving the boids), and `Changed<GlobalTransform>`
//! for the position sync (see the [parent module](super)). Queries are
//! walked with `for_each` (internal iteration), bevy's fastest walk and the
//! form ours uses: bevy's `for` loop over a `Changed` query took up to
//! twice as long in the skip scenario.
//!
//! Neighbour searches use the same `ecs_spatial::SparseGrid` as ours,
//! rebuilt every step in `FixedPreUpdate` from a query over the positions:
//! bevy has no chunk ticks that could drive an incremental broad phase (its
//! change ticks are per row, so finding the moved rows is itself a scan of
//! every row).
//!
//! bevy_transform's `TransformPlugin` is spelled out (the same plugin,
//! resource and systems, in the same schedules and set) so that each of its
//! systems can be wrapped in a [`Timed`] adapter, which records the
//! system's wall time for the per-system split; every scene system is
//! wrapped the same way (two clock reads per system and frame).
//!
//! bevy uses glam 0.33 (through `bevy_math`), the workspace glam 0.30: the
//! scene's own components hold workspace glam values (the same code
//! computes them as in ours) and only `Transform`s cross over, as arrays.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bevy_app::{App, FixedPreUpdate, FixedUpdate, PostStartup, PostUpdate, ValidateParentHasComponentPlugin};
use bevy_ecs::hierarchy::ChildOf;
use bevy_ecs::prelude::{
    Changed, Commands, Component, DetectChangesMut, Entity, Has, IntoScheduleConfigs, Local, Or, Query, Res, ResMut,
    Resource, With, Without,
};
use bevy_ecs::system::{Adapt, IntoAdapterSystem, IntoSystem, RunSystemError, System, SystemIn, SystemInput};
use bevy_time::{Fixed, Time, TimePlugin, TimeUpdateStrategy};
use bevy_transform::StaticTransformOptimizations;
use bevy_transform::TransformSystems;
use bevy_transform::components::{GlobalTransform, Transform};
use bevy_transform::systems::{mark_dirty_trees, propagate_parent_transforms, sync_simple_transforms};
use ecs_examples::boids::BoidSettings;
use ecs_spatial::{GridError, SparseGrid};
use glam::Vec3;

use super::{
    BOID_CELL, EntityMap, FRAME, GAME_SYSTEMS, GameScene, Layout, MELEE, Nearest, NeighbourSums, RIG_NODES, Snapshot,
    Spin, SystemKind, damage_per_step, offer_target, predator_point, rig_offset, spin_local, starting_health,
    target_point,
};

fn to_bevy(v: Vec3) -> bevy_math::Vec3 {
    bevy_math::Vec3::from_array(v.to_array())
}

fn from_bevy(v: bevy_math::Vec3) -> Vec3 {
    Vec3::from_array(v.to_array())
}

/// A world-space position (scenery, rig roots, boids, target, predator).
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Position(pub Vec3);

/// Marks static scenery.
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

/// A unit's position.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct UnitPosition(pub Vec3);

/// A unit's team (0 or 1) and stable id.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Team.
    pub team: u8,
    /// Stable id.
    pub id: u32,
}

/// Health in milli-points.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Health(pub i32);

/// A unit's attack.
#[derive(Component, Clone, Copy, Debug, PartialEq)]
pub struct Attack {
    /// Enemies within this distance can be attacked.
    pub range: f32,
    /// Damage per second (points).
    pub damage_per_second: f32,
}

/// Whether the unit had a target in the latest fight.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Engaged(pub bool);

/// Kills per team.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kills(pub [u32; 2]);

/// The flock's rules.
#[derive(Resource, Clone, Copy, Debug)]
pub struct Settings(pub BoidSettings);

/// A position component a [`Grid`] indexes.
pub trait GridPosition: Component {
    /// The indexed point.
    fn point(&self) -> Vec3;
}

impl GridPosition for Position {
    fn point(&self) -> Vec3 {
        self.0
    }
}

impl GridPosition for UnitPosition {
    fn point(&self) -> Vec3 {
        self.0
    }
}

/// A [`SparseGrid`] of the entities with `C`, rebuilt every step by
/// [`rebuild_grid`].
#[derive(Resource)]
pub struct Grid<C: GridPosition> {
    grid: SparseGrid<Vec3, Entity>,
    ids: Vec<Entity>,
    points: Vec<Vec3>,
    error: Option<GridError>,
    component: PhantomData<fn() -> C>,
}

impl<C: GridPosition> Grid<C> {
    fn new(origin: Vec3, cell_size: f32) -> Result<Self, GridError> {
        Ok(Grid {
            grid: SparseGrid::new(origin, cell_size)?,
            ids: Vec::new(),
            points: Vec::new(),
            error: None,
            component: PhantomData,
        })
    }
}

/// Rebuilds the grid of `C` from every entity's position (in query order,
/// into buffers kept from step to step).
pub fn rebuild_grid<C: GridPosition>(query: Query<(Entity, &C)>, mut grid: ResMut<Grid<C>>) {
    let grid = &mut *grid;
    grid.ids.clear();
    grid.points.clear();
    query.iter().for_each(|(entity, c)| {
        grid.ids.push(entity);
        grid.points.push(c.point());
    });
    if let Err(e) = grid.grid.rebuild(&grid.ids, &grid.points) {
        grid.error.get_or_insert(e);
    }
}

/// Spins and bobs the moving rigs' roots.
pub fn spin_rigs(mut rigs: Query<(&mut Transform, &Spinning)>, time: Res<Time>) {
    let t = time.elapsed().as_secs_f32();
    rigs.iter_mut().for_each(|(mut transform, spin)| {
        let (rotation, y) = spin_local(spin.0, t);
        transform.rotation = bevy_math::Quat::from_array(rotation.to_array());
        transform.translation.y = y;
    });
}

/// Moves the target and the predator.
pub fn move_target_and_predator(
    mut target: Query<&mut Position, With<BoidTarget>>,
    mut predator: Query<&mut Position, (With<Predator>, Without<BoidTarget>)>,
    time: Res<Time>,
    settings: Res<Settings>,
) {
    let t = time.elapsed().as_secs_f32();
    target.iter_mut().for_each(|mut p| p.0 = target_point(settings.0.path_radius, t));
    predator.iter_mut().for_each(|mut p| p.0 = predator_point(settings.0.path_radius, t));
}

/// The filter of the target and the predator.
type TargetOrPredator = Or<(With<BoidTarget>, With<Predator>)>;

/// Computes every active boid's [`Steering`] (bevy's `par_iter_mut`).
pub fn steer_boids(
    mut boids: Query<(Entity, &Position, &Heading, &mut Steering), With<Active>>,
    headings: Query<&Heading, With<Boid>>,
    goals: Query<(&Position, Has<BoidTarget>), TargetOrPredator>,
    grid: Res<Grid<Position>>,
    settings: Res<Settings>,
    time: Res<Time>,
) {
    let (mut target, mut predator) = (Vec3::ZERO, Vec3::splat(f32::INFINITY));
    goals.iter().for_each(|(p, is_target)| if is_target { target = p.0 } else { predator = p.0 });
    let grid = &grid.grid;
    let (settings, dt) = (settings.0, time.delta().as_secs_f32());
    let headings = &headings;
    boids.par_iter_mut().for_each(|(me, position, heading, mut steering)| {
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

/// Turns every active boid to its steering and moves it (`par_iter_mut`).
pub fn move_boids(
    mut boids: Query<(&mut Position, &mut Heading, &Steering), With<Active>>,
    settings: Res<Settings>,
    time: Res<Time>,
) {
    let step = settings.0.move_speed * time.delta().as_secs_f32();
    boids.par_iter_mut().for_each(|(mut position, mut heading, steering)| {
        heading.0 = steering.0;
        position.0 += steering.0 * step;
    });
}

/// Units without a target walk at the enemy.
pub fn march(mut units: Query<(&mut UnitPosition, &Unit, &Engaged)>, time: Res<Time>) {
    let step = MELEE.move_speed * time.delta().as_secs_f32();
    units.iter_mut().for_each(|(mut position, unit, engaged)| {
        if !engaged.0 {
            position.0.x += if unit.team == 0 { step } else { -step };
        }
    });
}

/// All pairs in range on the units' grid, each unit's nearest enemy, the
/// step's damage.
pub fn fight(
    units: Query<(&UnitPosition, &Unit, &Attack)>,
    mut targets: Query<(Entity, &mut Health, &mut Engaged)>,
    grid: Res<Grid<UnitPosition>>,
    time: Res<Time>,
    mut nearest: Local<EntityMap<Entity, Nearest<Entity>>>,
) {
    nearest.clear();
    grid.grid.for_each_pair_within(MELEE.attack_range, |a, b| {
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
    targets.iter_mut().for_each(|(entity, _, mut engaged)| {
        engaged.set_if_neq(Engaged(nearest.contains_key(&entity)));
    });
}

/// Despawns the dead, counting kills.
pub fn reap(dead: Query<(Entity, &Health, &Unit)>, mut commands: Commands, mut kills: ResMut<Kills>) {
    dead.iter().for_each(|(entity, health, unit)| {
        if health.0 <= 0 {
            commands.entity(entity).despawn();
            kills.0[usize::from(1 - unit.team.min(1))] += 1;
        }
    });
}

/// Copies changed global translations into [`Position`].
pub fn sync_positions(mut moved: Query<(&GlobalTransform, &mut Position), Changed<GlobalTransform>>) {
    moved.iter_mut().for_each(|(global, mut position)| {
        position.set_if_neq(Position(from_bevy(global.translation())));
    });
}

/// Per-row wall times of the latest frame, nanoseconds, one slot per
/// [`GAME_SYSTEMS`] row.
type Slots = Arc<[AtomicU64; GAME_SYSTEMS.len()]>;

/// A system adapter that adds the wrapped system's wall time to its slot.
#[derive(Clone)]
pub struct Timed {
    slots: Slots,
    kind: SystemKind,
}

impl<S: System> Adapt<S> for Timed {
    type In = S::In;
    type Out = S::Out;

    fn adapt(
        &mut self,
        input: <Self::In as SystemInput>::Inner<'_>,
        run_system: impl FnOnce(SystemIn<'_, S>) -> Result<S::Out, RunSystemError>,
    ) -> Result<Self::Out, RunSystemError> {
        let start = Instant::now();
        let out = run_system(input);
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.slots[self.kind as usize].fetch_add(nanos, Ordering::Relaxed);
        out
    }
}

/// `system`, timed into `kind`'s slot.
fn timed<M, S: IntoSystem<(), (), M>>(slots: &Slots, kind: SystemKind, system: S) -> IntoAdapterSystem<Timed, S> {
    IntoAdapterSystem::new(Timed { slots: slots.clone(), kind }, system)
}

/// The scene on bevy.
pub struct GameApp {
    app: App,
    entities: Vec<Entity>,
    layout_counts: (usize, usize, usize, usize),
    slots: Slots,
}

impl GameApp {
    /// Spawns `layout`, builds the app and runs its first update (bevy's
    /// startup frame: the startup schedules and no fixed step, as its real
    /// clock starts on the first update), so that every later frame is one
    /// fixed step, as ours.
    ///
    /// # Errors
    /// A message when a grid refuses its configuration.
    pub fn new(layout: &Layout) -> Result<Self, String> {
        bevy_tasks::ComputeTaskPool::get_or_init(bevy_tasks::TaskPool::default);
        let slots: Slots = Arc::new(std::array::from_fn(|_| AtomicU64::new(0)));
        let positions = Grid::<Position>::new(Vec3::splat(-layout.side), BOID_CELL)
            .map_err(|e| format!("grid on Position: {e}"))?;
        let units = Grid::<UnitPosition>::new(Vec3::ZERO, MELEE.attack_range)
            .map_err(|e| format!("grid on UnitPosition: {e}"))?;
        let mut app = App::new();
        app.add_plugins(TimePlugin)
            .insert_resource(TimeUpdateStrategy::ManualDuration(FRAME))
            .insert_resource(Time::<Fixed>::from_duration(FRAME))
            // bevy_transform's TransformPlugin, with each system timed.
            .add_plugins(ValidateParentHasComponentPlugin::<GlobalTransform>::default())
            .init_resource::<StaticTransformOptimizations>()
            .add_systems(
                PostStartup,
                (mark_dirty_trees, propagate_parent_transforms, sync_simple_transforms)
                    .chain()
                    .in_set(TransformSystems::Propagate),
            )
            .add_systems(
                PostUpdate,
                (
                    timed(&slots, SystemKind::Propagate, mark_dirty_trees),
                    timed(&slots, SystemKind::Propagate, propagate_parent_transforms),
                    timed(&slots, SystemKind::Propagate, sync_simple_transforms),
                )
                    .chain()
                    .in_set(TransformSystems::Propagate),
            )
            .insert_resource(positions)
            .insert_resource(units)
            .insert_resource(Settings(layout.boid_settings))
            .insert_resource(Kills::default())
            .add_systems(
                FixedPreUpdate,
                (
                    timed(&slots, SystemKind::BroadPhasePositions, rebuild_grid::<Position>),
                    timed(&slots, SystemKind::BroadPhaseUnits, rebuild_grid::<UnitPosition>),
                ),
            )
            .add_systems(FixedUpdate, timed(&slots, SystemKind::SpinRigs, spin_rigs))
            .add_systems(
                FixedUpdate,
                (
                    timed(&slots, SystemKind::MoveTargetAndPredator, move_target_and_predator),
                    timed(&slots, SystemKind::SteerBoids, steer_boids),
                    timed(&slots, SystemKind::MoveBoids, move_boids),
                )
                    .chain(),
            )
            .add_systems(
                FixedUpdate,
                (
                    timed(&slots, SystemKind::March, march),
                    timed(&slots, SystemKind::Fight, fight),
                    timed(&slots, SystemKind::Reap, reap),
                )
                    .chain(),
            )
            .add_systems(
                PostUpdate,
                timed(&slots, SystemKind::SyncPositions, sync_positions).after(TransformSystems::Propagate),
            );

        let world = app.world_mut();
        let mut entities = Vec::with_capacity(layout.entity_count());
        entities.extend(
            world
                .spawn_batch(
                    layout.scenery.iter().map(|&p| (Transform::from_translation(to_bevy(p)), Position(p), Scenery)),
                )
                .collect::<Vec<_>>(),
        );
        for rig in &layout.rigs {
            let transform = Transform::from_translation(to_bevy(rig.root));
            let root = match rig.spin {
                Some(spin) => world.spawn((transform, Position(rig.root), Spinning(spin))).id(),
                None => world.spawn((transform, Position(rig.root))).id(),
            };
            entities.push(root);
            for limb in 0..3 {
                let mut parent = root;
                for joint in 0..3 {
                    let node = world
                        .spawn((Transform::from_translation(to_bevy(rig_offset(limb, joint))), ChildOf(parent)))
                        .id();
                    entities.push(node);
                    parent = node;
                }
            }
        }
        let active = layout.active_boids();
        entities.extend(
            world
                .spawn_batch(
                    layout.boids[..active]
                        .iter()
                        .map(|b| (Position(b.position), Heading(b.heading), Steering(b.heading), Boid, Active)),
                )
                .collect::<Vec<_>>(),
        );
        entities.extend(
            world
                .spawn_batch(layout.boids[active..].iter().map(|b| (Position(b.position), Heading(b.heading), Boid)))
                .collect::<Vec<_>>(),
        );
        entities.push(world.spawn((Position(layout.target_start()), BoidTarget)).id());
        entities.push(world.spawn((Position(layout.predator_start()), Predator)).id());
        let attack = Attack { range: MELEE.attack_range, damage_per_second: MELEE.damage_per_second };
        entities.extend(
            world
                .spawn_batch(layout.units.iter().map(|u| {
                    (
                        UnitPosition(u.position),
                        Unit { team: u.team, id: u.id },
                        Health(starting_health()),
                        attack,
                        Engaged(false),
                    )
                }))
                .collect::<Vec<_>>(),
        );
        app.finish();
        app.cleanup();
        app.update();
        Ok(GameApp {
            app,
            entities,
            layout_counts: (layout.scenery.len(), layout.rigs.len(), layout.boids.len(), layout.units.len()),
            slots,
        })
    }

    fn grid_error(&self) -> Option<String> {
        let world = self.app.world();
        let positions = world.get_resource::<Grid<Position>>().and_then(|g| g.error.as_ref());
        let units = world.get_resource::<Grid<UnitPosition>>().and_then(|g| g.error.as_ref());
        positions.or(units).map(|e| format!("grid rebuild: {e}"))
    }
}

impl GameScene for GameApp {
    fn frame(&mut self) -> Result<(), String> {
        for slot in self.slots.iter() {
            slot.store(0, Ordering::Relaxed);
        }
        self.app.update();
        Ok(())
    }

    fn system_times(&self) -> [f64; GAME_SYSTEMS.len()] {
        std::array::from_fn(|k| self.slots[k].load(Ordering::Relaxed) as f64 / 1e3)
    }

    fn snapshot(&mut self) -> Result<Snapshot, String> {
        if let Some(e) = self.grid_error() {
            return Err(e);
        }
        let scene_entities = {
            let world = self.app.world_mut();
            let mut q = world.query_filtered::<Entity, Or<(With<Position>, With<UnitPosition>, With<Transform>)>>();
            q.iter(world).count()
        };
        let world = self.app.world();
        let (scenery, rigs, boids, units) = self.layout_counts;
        let mut entities = self.entities.iter().copied();
        let position = |e: Entity| world.get::<Position>(e).map(|p| p.0).ok_or_else(|| format!("{e} has no Position"));
        let global = |e: Entity| {
            world.get::<GlobalTransform>(e).map(|g| from_bevy(g.translation())).ok_or_else(|| format!("{e}: no global"))
        };
        let mut next = || entities.next().ok_or_else(|| "fewer entities than the layout".to_owned());
        let mut snap = Snapshot {
            fixed_elapsed: world.get_resource::<Time<Fixed>>().map_or(Default::default(), Time::elapsed),
            entities: scene_entities,
            scenery: Vec::with_capacity(scenery),
            rigs: Vec::with_capacity(rigs * (RIG_NODES + 1)),
            boids: Vec::with_capacity(boids + 2),
            units: Vec::with_capacity(units),
            kills: world.get_resource::<Kills>().map_or([0; 2], |k| k.0),
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
                (Some(p), Some(h)) => Some((p.0, h.0)),
                _ if world.get_entity(e).is_err() => None,
                _ => return Err(format!("unit {e} lacks its position or health")),
            });
        }
        Ok(snap)
    }
}
