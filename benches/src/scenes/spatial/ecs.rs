//! The broad-phase *system* cases of the `spatial` scenario: the scene's
//! points as entities with [`Position`] in an `ecs-core` world, kept in a
//! [`BroadPhase`] by [`update_broad_phase`] run from a [`Schedule`].
//!
//! Three frames are timed, each one `Schedule::run` of that single system:
//! nothing moved (every chunk skipped from its tick), 5 % moved (the changed
//! rows re-keyed, cell changes applied by an in-place grid edit), and all
//! moved (the system's full rebuild from every row). Moves are written
//! untimed before each frame.

use ecs_core::{Entity, Schedule, World};
use ecs_spatial::{BroadPhase, BroadPhaseStats, LookupKind, NeighborLists, Position, SparseGrid, update_broad_phase};
use glam::Vec3;

use super::{QUANTUM, SPATIAL_CELL, SPATIAL_SIDE, SplitMix64};

/// Entities moved per frame in the 5 % case: one in this many.
pub const MOVED_ONE_IN: usize = 20;

/// How far a moving entity goes from its home point, per axis, at most.
pub const MOVE_REACH: f32 = 1.0;

/// A world of the scene's points and the broad-phase schedule.
pub struct EcsBroadPhase {
    world: World,
    schedule: Schedule,
    entities: Vec<Entity>,
    homes: Vec<Vec3>,
    offsets: Vec<Vec3>,
    away: Vec<bool>,
    frame: usize,
    error: Option<String>,
}

impl EcsBroadPhase {
    /// Spawns one entity per point and runs the system once (its first run
    /// builds the grid); moves stay in the scene's cube.
    ///
    /// # Errors
    /// If the grid or the world refuse the setup.
    pub fn new(points: &[Vec3]) -> Result<Self, String> {
        Self::in_cube(points, SPATIAL_SIDE)
    }

    /// As [`new`](Self::new) for points anywhere in `[0, side)` per axis
    /// (other world sizes than the scene's): moves stay in that cube.
    ///
    /// # Errors
    /// If the grid or the world refuse the setup.
    pub fn in_cube(points: &[Vec3], side: f32) -> Result<Self, String> {
        let mut world = World::new();
        let broad_phase = BroadPhase::<Position>::new(Vec3::ZERO, SPATIAL_CELL).map_err(|e| format!("grid: {e}"))?;
        world.insert_resource(broad_phase);
        let entities = world.spawn_batch(points.iter().map(|&p| (Position(p),)));
        let mut schedule = Schedule::new();
        schedule.add_systems(update_broad_phase::<Position>);
        schedule.run(&mut world).map_err(|e| format!("first run: {e}"))?;
        // A lattice offset per entity (keeps coordinates multiples of QUANTUM), clamped into the cube.
        let mut rng = SplitMix64::new(0x000F_F5E7);
        let steps = (2.0 * MOVE_REACH / QUANTUM) as u32 + 1;
        let offsets = points
            .iter()
            .map(|&p| {
                let o = Vec3::from_array([0; 3].map(|_| (rng.below(steps) as f32 - (steps / 2) as f32) * QUANTUM));
                (p + o).clamp(Vec3::ZERO, Vec3::splat(side - QUANTUM)) - p
            })
            .collect();
        Ok(Self {
            world,
            schedule,
            entities,
            homes: points.to_vec(),
            offsets,
            away: vec![false; points.len()],
            frame: 0,
            error: None,
        })
    }

    /// Untimed: moves every `one_in`-th entity (a different set each frame)
    /// between its home point and its offset point.
    pub fn move_some(&mut self, one_in: usize) {
        let one_in = one_in.max(1);
        let first = self.frame % one_in;
        self.frame += 1;
        for i in (first..self.entities.len()).step_by(one_in) {
            self.away[i] = !self.away[i];
            let p = if self.away[i] { self.homes[i] + self.offsets[i] } else { self.homes[i] };
            match self.world.get_mut::<Position>(self.entities[i]) {
                Ok(mut pos) => pos.0 = p,
                Err(e) => self.error = Some(format!("move: {e}")),
            }
        }
    }

    /// Timed: one frame of the broad-phase system.
    pub fn frame(&mut self) {
        if let Err(e) = self.schedule.run(&mut self.world) {
            self.error = Some(format!("run: {e}"));
        }
    }

    /// The cell lookup the grid uses now.
    pub fn lookup_kind(&self) -> Option<LookupKind> {
        self.world.resource::<BroadPhase<Position>>().map(|b| b.grid().lookup_kind())
    }

    /// What the latest frame did.
    pub fn stats(&self) -> BroadPhaseStats {
        self.world.resource::<BroadPhase<Position>>().map(BroadPhase::stats).unwrap_or_default()
    }

    /// Points in the grid, or the first error of a setup or a frame.
    pub fn grid_len(&self) -> Result<usize, String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        self.world
            .resource::<BroadPhase<Position>>()
            .map(|b| b.grid().len())
            .ok_or_else(|| "the broad-phase resource is gone".to_owned())
    }

    /// Untimed check: the grid holds exactly the world's entities at their
    /// current positions, and a radius-`radius` query around every point
    /// finds as many hits as in a grid rebuilt from scratch from the world.
    ///
    /// # Errors
    /// The first difference found.
    pub fn check(&mut self, radius: f32) -> Result<(), String> {
        let broad_phase = self
            .world
            .resource::<BroadPhase<Position>>()
            .ok_or_else(|| "the broad-phase resource is gone".to_owned())?;
        let grid = broad_phase.grid();
        if grid.len() != self.entities.len() {
            return Err(format!("the grid holds {} entities, the world {}", grid.len(), self.entities.len()));
        }
        for (&e, p) in grid.ids().iter().zip(grid.positions()) {
            let actual = self.world.get::<Position>(e).map_err(|err| format!("{e}: {err}"))?.0;
            if actual != p {
                return Err(format!("{e} is at {actual} in the world but at {p} in the grid"));
            }
        }
        let mut fresh = SparseGrid::<Vec3, Entity>::new(Vec3::ZERO, SPATIAL_CELL).map_err(|e| format!("grid: {e}"))?;
        fresh.rebuild(grid.ids(), &grid.positions().to_vec()).map_err(|e| format!("rebuild: {e}"))?;
        let (mut a, mut b) = (NeighborLists::new(), NeighborLists::new());
        grid.query_radius_all(radius, &mut a);
        fresh.query_radius_all(radius, &mut b);
        if a.total_hits() != b.total_hits() {
            return Err(format!("{} hits in the system's grid, {} in a rebuilt one", a.total_hits(), b.total_hits()));
        }
        Ok(())
    }
}
