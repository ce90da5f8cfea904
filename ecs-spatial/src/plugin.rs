//! [`BroadPhasePlugin`]: a broad phase in an [`App`] in one line (feature
//! `ecs`).
//!
//! `BroadPhasePlugin::<C>::new(origin, cell_size)` inserts the
//! [`BroadPhase<C>`] resource (unless the app has one already) and adds
//! [`update_broad_phase::<C>`](update_broad_phase) in the set
//! [`SpatialSystems::UpdateBroadPhase`].
//!
//! **Where it runs.** By default in [`FixedPreUpdate`], that is before
//! [`FixedUpdate`](ecs_core::app::FixedUpdate) in every fixed step. The
//! fixed-step systems that move things and read the grid (steering,
//! collisions) then always see the positions as the previous step left
//! them, also in a frame that runs several steps, and a frame that runs no
//! step does not pay for it. Readers outside the fixed steps see the grid
//! as of the start of the latest step. Positions written elsewhere (say, a
//! position synced from transforms in `PostUpdate`) are picked up at the
//! next step. An app that wants one update per frame instead picks
//! another schedule with [`BroadPhasePlugin::in_schedule`] (`PreUpdate`
//! runs before the fixed steps of the frame).
//!
//! ```
//! use std::time::Duration;
//! use ecs_core::prelude::*;
//! use ecs_spatial::{BroadPhase, BroadPhasePlugin, Position};
//! use glam::Vec3;
//!
//! #[derive(Default)]
//! struct Near(usize);
//! fn count_near(grid: Res<BroadPhase<Position>>, mut near: ResMut<Near>) {
//!     let mut hits = Vec::new();
//!     grid.grid().query_radius(Vec3::ZERO, 2.5, &mut hits);
//!     near.0 = hits.len();
//! }
//!
//! let mut app = App::new();
//! app.add_plugins(BroadPhasePlugin::<Position>::new(Vec3::ZERO, 4.0))
//!     .insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_millis(20)))
//!     .insert_resource(Time::<Fixed>::from_hz(50.0))
//!     .init_resource::<Near>()
//!     .add_systems(Startup, |mut commands: Commands| {
//!         for x in 0..10 {
//!             commands.spawn((Position(Vec3::new(x as f32, 0.0, 0.0)),));
//!         }
//!     })
//!     .add_systems(FixedUpdate, count_near);
//! app.update();
//! assert_eq!(app.world().resource::<Near>().unwrap().0, 3); // x = 0, 1, 2
//! ```

use std::marker::PhantomData;

use ecs_core::app::{App, FixedPreUpdate, InternedScheduleLabel, Plugin, ScheduleLabel};
use ecs_core::schedule::{IntoSystemConfigs, SystemSet};

use crate::broad_phase::{BroadPhase, SpatialPosition, update_broad_phase};
use crate::error::GridError;

/// The spatial crate's systems, to order game systems against: every
/// [`update_broad_phase`] a [`BroadPhasePlugin`] adds is in
/// [`SpatialSystems::UpdateBroadPhase`]. (One broad phase of several is
/// named by its system: `.after(update_broad_phase::<C>)`.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpatialSystems {
    /// The broad-phase updates: the grids are up to date after it.
    UpdateBroadPhase,
}

impl SystemSet for SpatialSystems {}

/// Adds a broad phase over component `C` to an [`App`] (see the
/// [module docs](self)). Plugins of different `C` live side by side; a
/// second plugin of the same `C` is ignored.
pub struct BroadPhasePlugin<C: SpatialPosition> {
    origin: C::Point,
    cell_size: f32,
    rebuild_share: Option<f32>,
    schedule: InternedScheduleLabel,
    component: PhantomData<fn() -> C>,
}

impl<C: SpatialPosition> std::fmt::Debug for BroadPhasePlugin<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadPhasePlugin")
            .field("component", &std::any::type_name::<C>())
            .field("origin", &self.origin)
            .field("cell_size", &self.cell_size)
            .field("rebuild_share", &self.rebuild_share)
            .field("schedule", &self.schedule)
            .finish()
    }
}

impl<C: SpatialPosition> BroadPhasePlugin<C> {
    /// A broad phase of cells of edge `cell_size` whose cell `(0, 0, 0)`
    /// starts at `origin` (as [`BroadPhase::new`]), updated in
    /// [`FixedPreUpdate`].
    ///
    /// # Panics
    /// When the grid refuses the configuration (a cell size that is not
    /// finite and positive, a non-finite origin); [`BroadPhasePlugin::try_new`]
    /// returns the error instead.
    pub fn new(origin: C::Point, cell_size: f32) -> Self {
        Self::try_new(origin, cell_size).unwrap_or_else(|e| {
            panic!("BroadPhasePlugin<{}>: {e}", std::any::type_name::<C>());
        })
    }

    /// [`BroadPhasePlugin::new`], returning the grid's refusal.
    ///
    /// # Errors
    /// [`GridError::InvalidConfig`] as [`BroadPhase::new`].
    pub fn try_new(origin: C::Point, cell_size: f32) -> Result<Self, GridError> {
        BroadPhase::<C>::new(origin, cell_size)?;
        Ok(BroadPhasePlugin {
            origin,
            cell_size,
            rebuild_share: None,
            schedule: FixedPreUpdate.intern(),
            component: PhantomData,
        })
    }

    /// Runs the update in the schedule `label` instead of
    /// [`FixedPreUpdate`].
    pub fn in_schedule(mut self, label: impl ScheduleLabel) -> Self {
        self.schedule = label.intern();
        self
    }

    /// The broad phase rebuilds from all positions when more than `share`
    /// of the entities changed in one run (see
    /// [`BroadPhase::with_rebuild_share`]).
    pub fn with_rebuild_share(mut self, share: f32) -> Self {
        self.rebuild_share = Some(share);
        self
    }

    /// The schedule the update runs in.
    pub fn schedule(&self) -> &InternedScheduleLabel {
        &self.schedule
    }
}

impl<C: SpatialPosition> Plugin for BroadPhasePlugin<C> {
    fn build(&self, app: &mut App) {
        if !app.world().contains_resource::<BroadPhase<C>>() {
            let grid = match BroadPhase::<C>::new(self.origin, self.cell_size) {
                Ok(grid) => grid,
                // `try_new` built the same grid already.
                Err(e) => panic!("BroadPhasePlugin<{}>: {e}", std::any::type_name::<C>()),
            };
            let grid = match self.rebuild_share {
                Some(share) => grid.with_rebuild_share(share),
                None => grid,
            };
            app.insert_resource(grid);
        }
        app.add_systems(self.schedule.clone(), update_broad_phase::<C>.in_set(SpatialSystems::UpdateBroadPhase));
    }
}
