//! The broad-phase system: a [`BroadPhase`] resource holding a
//! [`SparseGrid`] of entities, kept in sync with their positions by
//! [`update_broad_phase`] from `ecs-core`'s chunk ticks (feature `ecs`).
//!
//! Positions come from a component that implements [`SpatialPosition`]; this
//! crate ships [`Position`] (a [`Vec3`]), and any component of yours can
//! implement the trait (a 2D game can return a [`glam::Vec2`]).
//!
//! Per run the system:
//! - counts the entities that have the position component from the lengths
//!   of the archetypes it matches (O(archetypes), no chunk visited);
//! - walks the rows whose position changed since its previous run through a
//!   `Changed` query, which skips every chunk whose chunk tick is older, so
//!   a frame where nothing moved touches no row and re-keys nothing;
//! - re-keys only the changed rows: a row that stayed in its cell is
//!   updated in place; rows that changed cell, spawned, or were despawned
//!   are removed and inserted by one [`SparseGrid::apply_edits`] pass (in
//!   place: only the points between a moved row's old and new cell shift;
//!   no re-sort). A row's slot is found by
//!   a scan of its cell, or, in a cell of more than 32 points (a crowd),
//!   from the slot its entity table entry keeps, so a crowd of 100 000 in
//!   one cell costs a check per moved row, not a scan of the crowd;
//! - when more than [`BroadPhase::rebuild_share`] of the entities changed, or
//!   on the first run, rebuilds the grid from all positions instead; the
//!   changed rows past that share are then only counted, not read, and
//!   the rebuild reads every row once (when every row changed in the
//!   previous run, they are all read, and a run where all changed again
//!   rebuilds from them without a second read);
//! - drops the entities that were despawned or lost the component since its
//!   previous run, read from the store's removal log
//!   ([`ecs_core::RemovedComponents`]), and those marked
//!   [`ecs_core::Disabled`] since (an `Added<Disabled>` query): no sweep over
//!   the tracked entities;
//! - puts back the entities whose `Disabled` marker was removed (the removal
//!   log of `Disabled`), at the position they have now, moved while disabled
//!   or not;
//! - keeps the entities whose position has no cell key (not finite, out of
//!   range) in a list of their own, [`BroadPhase::invalid_entities`], each
//!   found there in O(1);
//! - only when the count of rows in its query disagrees with the count it
//!   tracks (a caller of [`BroadPhase::update`] that does not pass the
//!   entities that left or entered), it checks every entity once.
//!
//! Other systems read the grid through `Res<BroadPhase<C>>`, in parallel
//! with each other.
//!
//! ```
//! use ecs_core::prelude::*;
//! use ecs_spatial::broad_phase::{BroadPhase, Position, update_broad_phase};
//! use glam::Vec3;
//!
//! fn count_neighbours(grid: Res<BroadPhase<Position>>, mut out: ResMut<Vec<usize>>) {
//!     let mut near = Vec::new();
//!     grid.grid().query_radius(Vec3::ZERO, 1.5, &mut near);
//!     out.push(near.len());
//! }
//!
//! let mut world = World::new();
//! world.insert_resource(BroadPhase::<Position>::new(Vec3::ZERO, 2.0).unwrap());
//! world.insert_resource(Vec::<usize>::new());
//! let a = world.spawn((Position(Vec3::new(1.0, 0.0, 0.0)),));
//! world.spawn((Position(Vec3::new(9.0, 0.0, 0.0)),));
//!
//! let mut schedule = Schedule::new();
//! schedule.add_systems((update_broad_phase::<Position>, count_neighbours).chain());
//! schedule.run(&mut world).unwrap();
//! world.get_mut::<Position>(a).unwrap().0 = Vec3::new(5.0, 0.0, 0.0);
//! schedule.run(&mut world).unwrap();
//! assert_eq!(world.resource::<Vec<usize>>().unwrap(), &vec![1, 0]);
//!
//! // A frame where nothing moved skips every chunk and re-keys nothing.
//! schedule.run(&mut world).unwrap();
//! let stats = world.resource::<BroadPhase<Position>>().unwrap().stats();
//! assert_eq!((stats.chunks_visited(), stats.rows_rekeyed), (0, 0));
//! ```

use ecs_core::{Added, Changed, Component, Disabled, Entity, Query, QueryFilter, RemovedComponents, ResMut, With};
use glam::Vec3;

use crate::cell::CellKey;
use crate::error::{EncodeError, GridError};
use crate::grid::SparseGrid;
use crate::point::GridPoint;

/// A component that gives an entity's position in the broad phase.
///
/// ```
/// use ecs_core::Component;
/// use ecs_spatial::broad_phase::SpatialPosition;
/// use glam::Vec2;
///
/// /// A 2D game's position.
/// #[derive(Component)]
/// struct Pos2(Vec2);
///
/// impl SpatialPosition for Pos2 {
///     type Point = Vec2;
///     fn grid_point(&self) -> Vec2 {
///         self.0
///     }
/// }
/// ```
pub trait SpatialPosition: Component {
    /// The grid's point type: [`Vec3`] or [`glam::Vec2`].
    type Point: GridPoint;

    /// The position the grid indexes.
    fn grid_point(&self) -> Self::Point;
}

/// A world-space position, the ready-made [`SpatialPosition`].
#[derive(Component, Clone, Copy, Debug, Default, PartialEq)]
pub struct Position(pub Vec3);

impl SpatialPosition for Position {
    type Point = Vec3;

    #[inline]
    fn grid_point(&self) -> Vec3 {
        self.0
    }
}

/// What the latest run of [`update_broad_phase`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BroadPhaseStats {
    /// Chunks of the archetypes that have the position component.
    pub chunks_total: u64,
    /// Of these, chunks skipped from their chunk tick alone (or empty).
    pub chunks_skipped: u64,
    /// Rows whose position was read and given a cell key again.
    pub rows_rekeyed: u64,
    /// Re-keyed rows that stayed in their cell (updated in place).
    pub moved_in_cell: u64,
    /// Grid ids compared while finding the slots of the re-keyed rows in
    /// their cells. A point in a cell of more than 32 keeps its slot in the
    /// entity table, so a crowd in one cell costs a check per row, not a
    /// scan of the crowd.
    pub ids_scanned: u64,
    /// Points removed from the grid by the incremental edit (cell changes,
    /// despawns, lost components).
    pub points_removed: u64,
    /// Points inserted by the incremental edit (cell changes, spawns).
    pub points_inserted: u64,
    /// Whether the grid was rebuilt from all positions.
    pub full_rebuild: bool,
    /// Entities reported as gone from the query: despawned, lost the
    /// component, or disabled.
    pub removals_seen: u64,
    /// Entities back in the query without a changed position (re-enabled),
    /// put back in the grid or the invalid list.
    pub entities_entered: u64,
    /// Whether the run checked every entity for membership: only when the
    /// count of rows disagreed with the count tracked, which
    /// [`update_broad_phase`] never leaves to it (a caller of
    /// [`BroadPhase::update`] that passes no `left` or `entered` entities
    /// may).
    pub membership_sweep: bool,
    /// Entities with the component in the world after the run.
    pub entities: u64,
}

impl BroadPhaseStats {
    /// Chunks whose rows were looked at.
    pub fn chunks_visited(&self) -> u64 {
        self.chunks_total - self.chunks_skipped
    }

    /// Share of chunks skipped, 0.0 to 1.0 (1.0 when there were none).
    pub fn skip_ratio(&self) -> f64 {
        if self.chunks_total == 0 { 1.0 } else { self.chunks_skipped as f64 / self.chunks_total as f64 }
    }
}

/// The share of changed entities above which a broad phase without a set
/// [`BroadPhase::with_rebuild_share`] rebuilds, for a grid holding
/// `points_per_cell` points per occupied cell:
/// `0.06 * points_per_cell^0.4`, from 6 % (a sparse world, about one point
/// per cell) to at most 15 % (7.2 points a cell give 13 %).
///
/// Fitted to the crossovers the `rebuild_share` example measures (the share
/// moved at which the incremental run costs as much as a rebuild; each
/// moved entity a step of at most a fifth of a cell per axis): about 6-7 %
/// for uniform points one to a cell (100k and 1M entities), 5.5 % and 10 %
/// for uniform points two to a cell (100k, 1M), 11-13 % for balls of seven
/// a cell (see the crate README). Denser cells keep more moved entities in
/// occupied cells, so the edit changes fewer cells for the same moves.
/// Measured, the path this picks cost at most about 1.2x the other one; a
/// fixed 15 % let the incremental run cost up to 1.55-1.79x a rebuild (at
/// 14.3 % moved) in the worlds of one to two points a cell.
///
/// ```
/// use ecs_spatial::default_rebuild_share;
/// assert_eq!(default_rebuild_share(1.0), 0.06);
/// assert!(default_rebuild_share(2.0) > 0.075 && default_rebuild_share(2.0) < 0.08);
/// assert_eq!(default_rebuild_share(100.0), 0.15);
/// assert_eq!(default_rebuild_share(f64::NAN), 0.06);
/// ```
pub fn default_rebuild_share(points_per_cell: f64) -> f32 {
    let ppc = if points_per_cell >= 1.0 { points_per_cell } else { 1.0 };
    (0.06 * ppc.powf(0.4)).min(0.15) as f32
}

/// The grid key an entity is known under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    /// Not tracked.
    No,
    /// In the grid, in cell `key`. `hint` is the slot it had when the
    /// hints were last written (or [`NO_HINT`]): right while no edit moved
    /// it, and always checked before use.
    InCell { key: CellKey, hint: u32 },
    /// Has the component, but its position has no cell key (out of range or
    /// not finite); not in the grid. The entity's index in the invalid list,
    /// so no run searches that list.
    Invalid(u32),
}

/// An entity table entry. It counts only when `epoch` equals the table's
/// epoch: a rebuild starts a new epoch instead of clearing a table sized by
/// the world's entity indices.
#[derive(Clone, Copy, Debug)]
struct Tracked {
    generation: u32,
    epoch: u32,
    known: Known,
}

const UNTRACKED: Tracked = Tracked { generation: 0, epoch: 0, known: Known::No };

/// No slot known for an entity in the grid.
const NO_HINT: u32 = u32::MAX;

/// Cells holding more points than this keep their points' slots in the
/// entity table ([`Known::InCell`]'s hint), so finding one of them costs a
/// check, not a scan of the cell. Smaller cells are scanned: a scan of 32
/// ids reads four cache lines, as much as the check's own miss costs.
const HINTED_CELL: u32 = 32;

/// The broad phase's entity table, indexed by entity index.
///
/// A rebuild forgets every entry in O(1) by starting a new epoch (the table
/// is cleared only when the epoch counter wraps), so its bookkeeping costs
/// the entities it tracks, not the largest entity index in the world.
struct EntityTable {
    slots: Vec<Tracked>,
    /// Entries from another epoch read as untracked. Never 0.
    epoch: u32,
}

impl EntityTable {
    fn new() -> Self {
        EntityTable { slots: Vec::new(), epoch: 1 }
    }

    /// The entry at `index` (untracked when never written in this epoch).
    fn get(&self, index: u32) -> Tracked {
        match self.slots.get(index as usize) {
            Some(&slot) if slot.epoch == self.epoch => slot,
            _ => UNTRACKED,
        }
    }

    /// Records `entity` as known under `known`, growing the table on demand.
    fn set(&mut self, entity: Entity, known: Known) {
        let i = entity.index() as usize;
        if i >= self.slots.len() {
            self.slots.resize(i + 1, UNTRACKED);
        }
        self.slots[i] = Tracked { generation: entity.generation(), epoch: self.epoch, known };
    }

    /// Records the slot of the entity at `index`, if it is in the grid.
    fn set_hint(&mut self, index: u32, slot: u32) {
        let epoch = self.epoch;
        if let Some(Tracked { epoch: e, known: Known::InCell { hint, .. }, .. }) = self.slots.get_mut(index as usize)
            && *e == epoch
        {
            *hint = slot;
        }
    }

    /// Forgets whatever is recorded at `index`.
    fn clear(&mut self, index: u32) {
        if let Some(slot) = self.slots.get_mut(index as usize) {
            *slot = UNTRACKED;
        }
    }

    /// Forgets every entry.
    fn clear_all(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // Entries of every epoch may exist again: clear them once.
            self.slots.fill(UNTRACKED);
            self.epoch = 1;
        }
    }
}

/// The broad-phase resource: a [`SparseGrid`] of the entities that have
/// component `C`, kept up to date by [`update_broad_phase`].
///
/// Read it from other systems with `Res<BroadPhase<C>>` and query
/// [`BroadPhase::grid`]: the ids it hands back are [`Entity`] handles.
pub struct BroadPhase<C: SpatialPosition> {
    grid: SparseGrid<C::Point, Entity>,
    tracked: EntityTable,
    /// The table does not describe the grid yet: the latest rebuild left
    /// it to the next incremental run, which fills it before reading it (a
    /// world whose entities all move rebuilds every run and never needs it).
    table_stale: bool,
    /// Whether every row of the query changed in the latest run.
    all_changed: bool,
    /// Entities that are `InCell` or `Invalid`.
    tracked_count: usize,
    /// A cell above [`HINTED_CELL`] may exist: edits refresh the hints.
    crowded: bool,
    invalid: Vec<(Entity, EncodeError)>,
    /// The share set by [`BroadPhase::with_rebuild_share`], or `None` for
    /// [`default_rebuild_share`] of the grid.
    rebuild_share: Option<f32>,
    stats: BroadPhaseStats,
    // Scratch, reused across runs.
    /// The changed rows of this run (ids and positions apart, so a run
    /// where every row changed builds the grid from them as they are).
    changed_ids: Vec<Entity>,
    changed_points: Vec<C::Point>,
    /// Entities the removal log reported this run, and those disabled.
    lost: Vec<Entity>,
    /// Entities whose `Disabled` marker was removed this run.
    entered: Vec<Entity>,
    /// Rows of the query found untracked by a membership sweep.
    missing: Vec<(Entity, C::Point)>,
    /// Changed rows that stayed in their cell: the row and the slots of its
    /// cell to search for its entity, or, with [`NO_HINT`] as the end, the
    /// slot its hint already found.
    stayed: Vec<(u32, u32, u32)>,
    removed: Vec<u32>,
    inserted: Vec<(CellKey, Entity, C::Point)>,
    all_ids: Vec<Entity>,
    all_points: Vec<C::Point>,
}

impl<C: SpatialPosition> std::fmt::Debug for BroadPhase<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BroadPhase")
            .field("component", &std::any::type_name::<C>())
            .field("points", &self.grid.len())
            .field("invalid", &self.invalid.len())
            .field("rebuild_share", &self.rebuild_share())
            .field("stats", &self.stats)
            .finish()
    }
}

impl<C: SpatialPosition> BroadPhase<C> {
    /// An empty broad phase with cells of edge `cell_size` whose cell
    /// `(0, 0, 0)` starts at `origin`. A cell size near the usual query
    /// radius is a good start.
    ///
    /// # Errors
    /// [`GridError::InvalidConfig`] as [`SparseGrid::new`].
    pub fn new(origin: C::Point, cell_size: f32) -> Result<Self, GridError> {
        Ok(BroadPhase {
            grid: SparseGrid::new(origin, cell_size)?,
            tracked: EntityTable::new(),
            table_stale: false,
            all_changed: false,
            tracked_count: 0,
            crowded: false,
            invalid: Vec::new(),
            rebuild_share: None,
            stats: BroadPhaseStats::default(),
            changed_ids: Vec::new(),
            changed_points: Vec::new(),
            lost: Vec::new(),
            entered: Vec::new(),
            missing: Vec::new(),
            stayed: Vec::new(),
            removed: Vec::new(),
            inserted: Vec::new(),
            all_ids: Vec::new(),
            all_points: Vec::new(),
        })
    }

    /// The same broad phase, rebuilding from all positions when more than
    /// `share` (0.0 to 1.0) of the tracked entities changed in one run
    /// (by default [`default_rebuild_share`] of the grid's points per
    /// occupied cell, 6 to 15 %; a NaN `share` restores the default).
    /// `1.0` or more never rebuilds after the first run, `0.0` always
    /// rebuilds when anything changed.
    pub fn with_rebuild_share(mut self, share: f32) -> Self {
        self.rebuild_share = if share.is_nan() { None } else { Some(share.max(0.0)) };
        self
    }

    /// The share of changed entities above which the next run rebuilds:
    /// the one set by [`with_rebuild_share`](Self::with_rebuild_share), or
    /// [`default_rebuild_share`] of the grid as it is now.
    pub fn rebuild_share(&self) -> f32 {
        self.rebuild_share
            .unwrap_or_else(|| default_rebuild_share(self.grid.len() as f64 / self.grid.cells().len().max(1) as f64))
    }

    /// The grid, for queries (ids are entities).
    pub fn grid(&self) -> &SparseGrid<C::Point, Entity> {
        &self.grid
    }

    /// What the latest run did.
    pub fn stats(&self) -> BroadPhaseStats {
        self.stats
    }

    /// Entities that have the component but are not in the grid because
    /// their position has no cell key (not finite, or out of the key range),
    /// with the reason. They re-enter the grid when their position is
    /// written with a valid value.
    pub fn invalid_entities(&self) -> &[(Entity, EncodeError)] {
        &self.invalid
    }

    /// Brings the grid up to date. Since the previous call:
    /// - `changed` must be the rows whose `C` changed, and `present` all
    ///   rows with `C`;
    /// - `left`, the entities that left `present`: despawned, lost `C` (a
    ///   [`RemovedComponents`] reader), or were disabled;
    /// - `entered`, the entities that may have come back into `present`
    ///   without a change of `C`: those whose [`Disabled`] marker was
    ///   removed. Entities listed that are not in `present`, or already
    ///   tracked, are passed over.
    ///
    /// [`update_broad_phase`] passes its parameters here. A caller that
    /// cannot name the entities that left or entered may pass fewer: when
    /// the count of rows then disagrees with the count tracked, the run
    /// checks every entity once (`membership_sweep` in [`BroadPhaseStats`]).
    pub fn update(
        &mut self,
        changed: &mut Query<'_, '_, (Entity, &C), Changed<C>>,
        present: &mut Query<'_, '_, (Entity, &C)>,
        left: impl IntoIterator<Item = Entity>,
        entered: impl IntoIterator<Item = Entity>,
    ) {
        self.stats = BroadPhaseStats::default();
        let current = present.matched_entity_count();
        self.lost.clear();
        self.lost.extend(left);
        self.stats.removals_seen = self.lost.len() as u64;
        self.entered.clear();
        self.entered.extend(entered);

        let first_run = self.tracked_count == 0 && self.grid.is_empty();
        // Past this many changed rows the run rebuilds from every row.
        let share_limit = (f64::from(self.rebuild_share()) * self.tracked_count as f64) as usize;
        // Rows are read past that limit only where they may all have
        // changed (the first run, or every row changed in the previous
        // one): the rebuild then takes them as they are. Otherwise those
        // past it are only counted, and the rebuild reads every row once.
        let keep = if first_run || self.all_changed { usize::MAX } else { share_limit };
        let changed_count = collect_rows_up_to(changed, &mut self.changed_ids, &mut self.changed_points, keep);
        self.all_changed = changed_count == current && changed_count > 0;
        let chunk_stats = changed.stats();
        self.stats.chunks_total = chunk_stats.chunks_total;
        self.stats.chunks_skipped = chunk_stats.chunks_skipped;
        self.stats.rows_rekeyed = changed_count as u64;

        if changed_count > 0 && (first_run || changed_count > share_limit) {
            self.rebuild(present, current);
        } else {
            self.apply_changes(present, current);
        }
        self.stats.entities = current as u64;
    }

    /// Rebuilds the grid from every row of `present` (`current` of them);
    /// the entity table is filled when an incremental run next needs it.
    fn rebuild(&mut self, present: &mut Query<'_, '_, (Entity, &C)>, current: usize) {
        self.stats.full_rebuild = true;
        if self.changed_ids.len() == current {
            // Every row changed (the changed rows are rows of `present`, each
            // once): they are all the positions, already read. The buffers
            // trade places, so nothing is copied.
            std::mem::swap(&mut self.all_ids, &mut self.changed_ids);
            std::mem::swap(&mut self.all_points, &mut self.changed_points);
        } else {
            collect_rows(present, &mut self.all_ids, &mut self.all_points);
        }
        self.invalid.clear();
        if self.grid.rebuild(&self.all_ids, &self.all_points).is_err() {
            // Some positions have no key: set them aside and build from the rest.
            let mut keep = 0;
            for i in 0..self.all_ids.len() {
                match self.grid.cell_key_of(self.all_points[i]) {
                    Ok(_) => {
                        self.all_ids[keep] = self.all_ids[i];
                        self.all_points[keep] = self.all_points[i];
                        keep += 1;
                    }
                    Err(e) => self.invalid.push((self.all_ids[i], e)),
                }
            }
            self.all_ids.truncate(keep);
            self.all_points.truncate(keep);
            if let Err(e) = self.grid.rebuild(&self.all_ids, &self.all_points) {
                // Every point left has a key; only `TooManyPoints` remains.
                unreachable_after_filter(e);
            }
        }
        self.table_stale = true;
        self.tracked_count = self.grid.len() + self.invalid.len();
    }

    /// Fills the entity table from the grid and the invalid list if the
    /// latest rebuild left it stale.
    fn ensure_table(&mut self) {
        if !self.table_stale {
            return;
        }
        self.table_stale = false;
        self.tracked.clear_all();
        let grid = &self.grid;
        self.crowded = false;
        for cell in grid.cells() {
            let range = cell.start as usize..(cell.start + cell.count) as usize;
            // Only big cells' points get a hint: a stale one would cost a
            // miss before the scan that finds them anyway.
            let hinted = cell.count > HINTED_CELL;
            self.crowded |= hinted;
            for (slot, &entity) in range.clone().zip(&grid.ids()[range]) {
                let hint = if hinted { slot as u32 } else { NO_HINT };
                self.tracked.set(entity, Known::InCell { key: cell.key, hint });
            }
        }
        for (i, &(entity, _)) in self.invalid.iter().enumerate() {
            self.tracked.set(entity, Known::Invalid(i as u32));
        }
    }

    /// Re-keys the changed rows, sweeps for despawns when the counts say so,
    /// and edits the grid.
    fn apply_changes(&mut self, present: &mut Query<'_, '_, (Entity, &C)>, current: usize) {
        self.ensure_table();
        self.removed.clear();
        self.inserted.clear();
        // Despawned or lost the component (and not given it back since).
        for i in 0..self.lost.len() {
            let entity = self.lost[i];
            let slot = self.tracked.get(entity.index());
            if slot.generation == entity.generation() && slot.known != Known::No && present.get(entity).is_err() {
                self.forget(entity, slot.known);
            }
        }
        self.rekey_changed();
        // Entities back in the query without a changed position (their
        // `Disabled` marker was removed): tracked again from where they are.
        // Those that also moved came in with the changed rows above.
        for i in 0..self.entered.len() {
            let entity = self.entered[i];
            let slot = self.tracked.get(entity.index());
            if slot.generation == entity.generation() && slot.known != Known::No {
                continue;
            }
            if let Ok((entity, c)) = present.get(entity) {
                self.rekey(entity, c.grid_point());
                self.stats.entities_entered += 1;
            }
        }
        if self.tracked_count < current {
            // Rows of the query that no list above named (a caller of
            // `update` that does not pass the entities that entered it).
            self.stats.membership_sweep = true;
            let (tracked, missing) = (&self.tracked, &mut self.missing);
            missing.clear();
            present.for_each(|(entity, c)| {
                let slot = tracked.get(entity.index());
                if slot.generation != entity.generation() || slot.known == Known::No {
                    missing.push((entity, c.grid_point()));
                }
            });
            for i in 0..self.missing.len() {
                let (entity, point) = self.missing[i];
                self.rekey(entity, point);
            }
        }

        // Every entity with the component is tracked now; more tracked than
        // present means some left the query without losing the component
        // (despawns and removals came from the log above).
        if self.tracked_count > current {
            self.stats.membership_sweep = true;
            for s in 0..self.grid.len() {
                let entity = self.grid.ids()[s];
                let slot = self.tracked.get(entity.index());
                // Entities already removed this run are not tracked under this generation.
                if slot.generation == entity.generation() && slot.known != Known::No && present.get(entity).is_err() {
                    self.removed.push(s as u32);
                    self.tracked.clear(entity.index());
                    self.tracked_count -= 1;
                }
            }
            let mut i = 0;
            while i < self.invalid.len() {
                let entity = self.invalid[i].0;
                if present.get(entity).is_err() {
                    self.drop_invalid(i);
                    self.tracked.clear(entity.index());
                    self.tracked_count -= 1;
                } else {
                    i += 1;
                }
            }
        }

        self.stats.points_removed = self.removed.len() as u64;
        self.stats.points_inserted = self.inserted.len() as u64;
        // Slots come from the grid itself, each once (an entity leaves once per
        // run), and keys from `cell_key_of`.
        if self.removed.is_empty() && self.inserted.is_empty() {
            // No slot moved: every hint still holds.
            return;
        }
        let largest_edited = self.grid.apply_edits_unchecked(&mut self.removed, &mut self.inserted);
        self.refresh_hints(largest_edited);
    }

    /// [`rekey`](Self::rekey) for every changed row, in two passes so the
    /// cache misses of different rows overlap: first each row's entity
    /// table entry, cell key and, for a row that stayed in its cell, the
    /// range of slots to search (its cell's, or its hint), rows that left
    /// their cell or were not tracked taking the whole `rekey` there; then,
    /// for the rows that stayed, the search and the write of the position.
    /// Row by row, each step waited for the miss of the one before (a row's
    /// table entry and cell range, then its ids, then its coordinates).
    fn rekey_changed(&mut self) {
        let mut stayed = std::mem::take(&mut self.stayed);
        stayed.clear();
        for i in 0..self.changed_ids.len() {
            let (entity, point) = (self.changed_ids[i], self.changed_points[i]);
            let slot = self.tracked.get(entity.index());
            match (self.grid.cell_key_of(point), slot.known) {
                (Ok(key), Known::InCell { key: old, hint }) if key == old && slot.generation == entity.generation() => {
                    if hint == NO_HINT {
                        let range = self.grid.cell_slots(key);
                        stayed.push((i as u32, range.start as u32, range.end as u32));
                    } else if let Some(s) = self.slot_of(key, entity, hint) {
                        // A crowd's point: its slot now (from the hint, or a
                        // scan of the cell if the hint went stale).
                        stayed.push((i as u32, s as u32, NO_HINT));
                    }
                }
                _ => self.rekey(entity, point),
            }
        }
        for &(i, start, end) in &stayed {
            let (entity, point) = (self.changed_ids[i as usize], self.changed_points[i as usize]);
            let found = if end == NO_HINT {
                Some(start as usize)
            } else {
                let (found, scanned) = self.grid.find_in_slots(start as usize..end as usize, entity);
                self.stats.ids_scanned += scanned as u64;
                found
            };
            if let Some(s) = found {
                // The key was checked above: same cell.
                self.grid.set_position_unchecked(s, point);
                self.stats.moved_in_cell += 1;
            }
        }
        self.stayed = stayed;
    }

    /// Gives a row of the query (changed, or back in it) its cell again:
    /// updated in place when it stayed in its cell, else listed for the
    /// edit or the invalid list.
    #[inline(always)]
    fn rekey(&mut self, entity: Entity, point: C::Point) {
        let slot = self.tracked.get(entity.index());
        if slot.known != Known::No && slot.generation != entity.generation() {
            // The index was reused: the entity tracked under it is dead.
            let dead = Entity::from_parts(entity.index(), slot.generation);
            self.forget(dead, slot.known);
        }
        let known = if slot.generation == entity.generation() { slot.known } else { Known::No };
        match (self.grid.cell_key_of(point), known) {
            (Ok(key), Known::InCell { key: old, hint }) if key == old => {
                if let Some(s) = self.slot_of(key, entity, hint) {
                    // The key was just checked: same cell.
                    self.grid.set_position_unchecked(s, point);
                    self.stats.moved_in_cell += 1;
                }
            }
            (Ok(key), known) => {
                self.leave(entity, known);
                self.inserted.push((key, entity, point));
                self.tracked.set(entity, Known::InCell { key, hint: NO_HINT });
                self.tracked_count += 1;
            }
            (Err(error), Known::Invalid(i)) => {
                debug_assert_eq!(self.invalid[i as usize].0, entity);
                self.invalid[i as usize].1 = error;
            }
            (Err(error), known) => {
                self.leave(entity, known);
                self.tracked.set(entity, Known::Invalid(self.invalid.len() as u32));
                self.invalid.push((entity, error));
                self.tracked_count += 1;
            }
        }
    }

    /// Takes entry `i` out of the invalid list; the entry moved into its
    /// place keeps its index in the table.
    fn drop_invalid(&mut self, i: usize) {
        self.invalid.swap_remove(i);
        if let Some(&(moved, _)) = self.invalid.get(i) {
            self.tracked.set(moved, Known::Invalid(i as u32));
        }
    }

    /// The grid slot of `entity`, known to be in cell `key`: its hint if
    /// the hint still points at it, else a scan of the cell.
    #[inline]
    fn slot_of(&mut self, key: CellKey, entity: Entity, hint: u32) -> Option<usize> {
        if self.grid.ids().get(hint as usize) == Some(&entity) {
            return Some(hint as usize);
        }
        let (found, scanned) = self.grid.find_slot_counted(key, entity);
        self.stats.ids_scanned += scanned as u64;
        found
    }

    /// After an edit: writes the slots of the points in cells above
    /// [`HINTED_CELL`] into their hints, if such a cell may exist (one did
    /// at the last look, or the edit grew a cell past it), but only in the
    /// cells whose slots the edit moved (it works in place: the others keep
    /// theirs). A grid of small cells pays nothing, and a crowd pays only
    /// when points before it or in it were removed or inserted.
    fn refresh_hints(&mut self, largest_edited: u32) {
        if !self.crowded && largest_edited <= HINTED_CELL {
            return;
        }
        // Stays set until the table is filled again (`ensure_table` looks
        // at every cell): a crowd that dispersed costs a check of the count
        // of each cell an edit moves.
        self.crowded = true;
        let (grid, tracked) = (&self.grid, &mut self.tracked);
        grid.for_each_moved_cell(|cell| {
            if cell.count > HINTED_CELL {
                let range = cell.start as usize..(cell.start + cell.count) as usize;
                for (slot, &entity) in range.clone().zip(&grid.ids()[range]) {
                    tracked.set_hint(entity.index(), slot as u32);
                }
            }
        });
    }

    /// Removes a dead entity from wherever it is tracked.
    fn forget(&mut self, dead: Entity, known: Known) {
        self.leave(dead, known);
        self.tracked.clear(dead.index());
    }

    /// Takes a live entity out of the grid or the invalid list (it is about
    /// to be tracked again under a new key).
    #[inline]
    fn leave(&mut self, entity: Entity, known: Known) {
        match known {
            Known::No => return,
            Known::InCell { key, hint } => {
                if let Some(s) = self.slot_of(key, entity, hint) {
                    self.removed.push(s as u32);
                }
            }
            Known::Invalid(i) => self.drop_invalid(i as usize),
        }
        self.tracked_count -= 1;
    }
}

/// Every row of `query`, its entity into `ids` and its grid point into
/// `points` (both cleared first), in query order.
fn collect_rows<C: SpatialPosition, F: QueryFilter + 'static>(
    query: &mut Query<'_, '_, (Entity, &C), F>,
    ids: &mut Vec<Entity>,
    points: &mut Vec<C::Point>,
) {
    ids.clear();
    points.clear();
    query.for_each(|(entity, c)| {
        ids.push(entity);
        points.push(c.grid_point());
    });
}

/// The changed rows of `query` into `ids` and `points` (both cleared
/// first) while there are at most `limit` of them; past that only counted
/// (the run rebuilds from every row then). Returns how many rows changed.
fn collect_rows_up_to<C: SpatialPosition, F: QueryFilter + 'static>(
    query: &mut Query<'_, '_, (Entity, &C), F>,
    ids: &mut Vec<Entity>,
    points: &mut Vec<C::Point>,
    limit: usize,
) -> usize {
    if limit == usize::MAX {
        collect_rows(query, ids, points);
        return ids.len();
    }
    ids.clear();
    points.clear();
    let mut count = 0;
    query.for_each(|(entity, c)| {
        if count <= limit {
            ids.push(entity);
            points.push(c.grid_point());
        }
        count += 1;
    });
    count
}

/// Grid operations fed only keyed points and the grid's own slots fail only
/// on a broken invariant of this module.
#[cold]
fn unreachable_after_filter(e: GridError) -> ! {
    panic!("broad phase: internal invariant broken: {e}")
}

/// The broad-phase system for component `C`: keeps the
/// [`BroadPhase<C>`] resource in sync with the entities' positions (see the
/// [module docs](self)). Add it before the systems that read the grid.
///
/// The resource must exist (insert it with [`BroadPhase::new`]); the
/// schedule refuses to run the system otherwise.
pub fn update_broad_phase<C: SpatialPosition>(
    mut changed: Query<(Entity, &C), Changed<C>>,
    mut present: Query<(Entity, &C)>,
    mut removed: RemovedComponents<C>,
    mut disabled: Query<Entity, (With<C>, Added<Disabled>)>,
    mut enabled: RemovedComponents<Disabled>,
    mut broad_phase: ResMut<BroadPhase<C>>,
) {
    broad_phase.update(&mut changed, &mut present, removed.iter().chain(disabled.iter()), enabled.iter());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_table_forgets_everything_per_epoch_and_across_the_wrap() {
        let a = Entity::from_parts(3, 7);
        let b = Entity::from_parts(9, 1);
        let mut table = EntityTable::new();
        table.set(a, Known::Invalid(0));
        assert_eq!(table.get(3).known, Known::Invalid(0));
        assert_eq!(table.get(3).generation, 7);
        assert_eq!(table.get(9).known, Known::No, "never written");
        table.clear_all();
        assert_eq!(table.get(3).known, Known::No, "written in the previous epoch");
        table.set(b, Known::Invalid(0));
        table.clear(9);
        assert_eq!(table.get(9).known, Known::No);

        // An entry written in epoch 1 must not come back when the counter
        // wraps around to 1.
        table.epoch = 1;
        table.set(a, Known::Invalid(0));
        table.epoch = u32::MAX;
        table.clear_all();
        assert_eq!(table.epoch, 1);
        assert_eq!(table.get(3).known, Known::No);
    }
}
