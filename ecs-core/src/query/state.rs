//! `QueryState`: a cached query bound to one world (matched archetypes,
//! column caches, its last-run tick, the chunk counts of its latest run) and
//! its sequential entry points.

use std::marker::PhantomData;

use crate::query::access::{Access, ConflictKind};
use crate::query::fetch::{QueryData, ReadOnlyQueryData};
use crate::query::filter::{Disabled, QueryFilter};
use crate::query::iter::{QueryIter, run_rows};
use crate::query::view::ChunkView;
use crate::storage::archetype::{Archetype, ArchetypeId};
use crate::storage::component::ComponentId;
use crate::storage::entity::Entity;
use crate::storage::tick::TickWindow;
use crate::world::World;

/// Chunks a walk visits before its row loops prefetch the next chunk's
/// rows: 32 chunks are 512 KiB, half the AMD host's L2. A walk over fewer
/// mostly finds its rows in the caches (a system that touches a few
/// thousand rows a frame), where the prefetches only cost issue slots
/// (skip clustered 1-10 %: 10-30 % slower with them from the first
/// chunk); a longer walk reads past what the caches keep, and the
/// prefetches are what keep its rows coming (skip clustered 100 %).
pub(crate) const PREFETCH_AFTER: usize = 32;

/// How many chunks one query run covered and how many it skipped: every
/// allocated chunk of the matched archetypes counts; a chunk is skipped when
/// its rows were not looked at (the filter's chunk-level test failed from
/// chunk ticks alone, or the chunk is empty).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ChunkStats {
    /// Allocated chunks in the matched archetypes.
    pub chunks_total: u64,
    /// Chunks whose rows were not looked at.
    pub chunks_skipped: u64,
    /// Entities (rows) in the matched archetypes, looked at or not.
    pub entities: u64,
}

impl ChunkStats {
    /// Chunks whose rows were looked at.
    pub fn chunks_visited(&self) -> u64 {
        self.chunks_total - self.chunks_skipped
    }

    /// Share of chunks skipped, 0.0 to 1.0 (1.0 when there were none).
    pub fn skip_ratio(&self) -> f64 {
        if self.chunks_total == 0 { 1.0 } else { self.chunks_skipped as f64 / self.chunks_total as f64 }
    }

    /// Adds another run's counts.
    pub fn add(&mut self, other: ChunkStats) {
        self.chunks_total += other.chunks_total;
        self.chunks_skipped += other.chunks_skipped;
        self.entities += other.entities;
    }
}

/// Why a query could not be made or answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// The query borrows one component in two incompatible ways.
    Conflict {
        /// The query's type.
        query: &'static str,
        /// The component's type name.
        component: &'static str,
        /// How it collides.
        kind: ConflictKind,
    },
    /// The entity is not alive.
    NoSuchEntity(Entity),
    /// The entity is alive but does not match the query.
    NoMatch(Entity),
    /// The query state was made for another world.
    WrongWorld {
        /// The id of the world the state was made for.
        state_world: u64,
        /// The id of the world it was used with.
        world: u64,
    },
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Conflict { query, component, kind } => write!(
                f,
                "query {query} is refused: component {component} is {}; split it into two queries or use one borrow",
                kind.describe()
            ),
            QueryError::NoSuchEntity(e) => write!(f, "entity {e} does not exist"),
            QueryError::NoMatch(e) => write!(f, "entity {e} does not match the query"),
            QueryError::WrongWorld { state_world, world } => write!(
                f,
                "a query state made for world {state_world} was used with world {world}, which it was not made for; make one state per world"
            ),
        }
    }
}

impl std::error::Error for QueryError {}

const NOT_MATCHED: u32 = u32::MAX;

pub(crate) struct Matched<Q: QueryData, F: QueryFilter> {
    pub(crate) archetype: ArchetypeId,
    pub(crate) data: Q::Cache,
    pub(crate) filter: F::Cache,
}

impl<Q: QueryData, F: QueryFilter> Clone for Matched<Q, F> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<Q: QueryData, F: QueryFilter> Copy for Matched<Q, F> {}

/// A cached query: the matched archetypes (kept up to date as archetypes
/// appear), the resolved column indices, its own last-run tick, and the
/// chunk counts of its latest run.
///
/// A run sees changes stamped in `(last_run, this_run]`, where `this_run` is
/// the world tick when the run starts; its own writes are stamped
/// `this_run`. After the run `last_run = this_run` and the world tick is
/// advanced by one, so anything written later is stamped newer and the next
/// run sees it, while the run's own writes are never seen again by itself.
/// A new state has never run, so its first run sees everything as changed.
///
/// ```
/// use ecs_core::{Changed, Component, World};
/// #[derive(Component)]
/// struct Pos(f32);
///
/// let mut world = World::new();
/// let a = world.spawn((Pos(0.0),));
/// let _b = world.spawn((Pos(0.0),));
/// let mut moved = world.query_filtered::<ecs_core::Entity, Changed<Pos>>();
/// assert_eq!(moved.iter(&world).count(), 2); // first run: all new
///
/// world.increment_change_tick();
/// world.get_mut::<Pos>(a).unwrap().0 = 1.0;
/// world.increment_change_tick();
/// assert_eq!(moved.iter(&world).collect::<Vec<_>>(), vec![a]);
/// assert_eq!(moved.stats().chunks_total, 1);
/// assert_eq!(moved.stats().entities, 2); // rows in the matched chunks, looked at or not
/// ```
pub struct QueryState<Q: QueryData, F: QueryFilter = ()> {
    world_id: u64,
    data_state: Q::State,
    filter_state: F::State,
    /// The `Disabled` marker's id, unless the query names it: archetypes
    /// holding it are then not matched.
    skip_disabled: Option<ComponentId>,
    access: Access,
    archetypes_seen: usize,
    pub(crate) matched: Vec<Matched<Q, F>>,
    /// Position in `matched` of each archetype seen, `NOT_MATCHED` if it does
    /// not match: `get` finds an entity's column cache in O(1).
    matched_index: Vec<u32>,
    last_run: u64,
    pub(crate) stats: ChunkStats,
    _marker: PhantomData<fn() -> (Q, F)>,
}

impl<Q: QueryData, F: QueryFilter> std::fmt::Debug for QueryState<Q, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryState")
            .field("query", &std::any::type_name::<Q>())
            .field("filter", &std::any::type_name::<F>())
            .field("matched_archetypes", &self.matched.len())
            .field("last_run", &self.last_run)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<Q: QueryData, F: QueryFilter> QueryState<Q, F> {
    /// A query state for `world`, refusing conflicting borrows.
    pub fn try_new(world: &mut World) -> Result<Self, QueryError> {
        let components = world.components_mut();
        let data_state = Q::init_state(components);
        let filter_state = F::init_state(components);
        let mut access = Access::default();
        let checked =
            Q::update_access(data_state, &mut access).and_then(|()| F::update_access(filter_state, &mut access));
        if let Err((id, kind)) = checked {
            return Err(QueryError::Conflict {
                query: std::any::type_name::<(Q, F)>(),
                component: world.components().info(id).name(),
                kind,
            });
        }
        let disabled = world.register::<Disabled>();
        let skip_disabled = (!access.mentions(disabled)).then_some(disabled);
        let mut state = QueryState {
            world_id: world.id(),
            data_state,
            filter_state,
            skip_disabled,
            access,
            archetypes_seen: 0,
            matched: Vec::new(),
            matched_index: Vec::new(),
            last_run: 0,
            stats: ChunkStats::default(),
            _marker: PhantomData,
        };
        state.update_archetypes(world);
        Ok(state)
    }

    /// A query state for `world`.
    ///
    /// # Panics
    /// If the query borrows a component mutably twice, or mutably and
    /// shared, e.g. `(&mut A, &A)`; the message names the component.
    pub fn new(world: &mut World) -> Self {
        match Self::try_new(world) {
            Ok(state) => state,
            Err(e) => panic!("{e}"),
        }
    }

    /// The components this query reads and writes.
    pub fn access(&self) -> &Access {
        &self.access
    }

    /// Chunk counts of the latest run.
    pub fn stats(&self) -> ChunkStats {
        self.stats
    }

    /// Zeroes the chunk counts (systems do this before each run).
    pub fn reset_stats(&mut self) {
        self.stats = ChunkStats::default();
    }

    /// The world tick of the latest run (0 before the first).
    pub fn last_run(&self) -> u64 {
        self.last_run
    }

    /// Sets the last-run tick (schedulers keep it per system).
    pub fn set_last_run(&mut self, tick: u64) {
        self.last_run = tick;
    }

    /// Archetypes matched so far.
    pub fn matched_archetypes(&self) -> impl Iterator<Item = ArchetypeId> + '_ {
        self.matched.iter().map(|m| m.archetype)
    }

    /// The id of the world this state was made for.
    pub fn world_id(&self) -> u64 {
        self.world_id
    }

    /// Refuses a world this state was not made for: its archetype indices
    /// and column caches describe another world's layout.
    #[inline]
    fn check_world(&self, world: &World) -> Result<(), QueryError> {
        if self.world_id == world.id() {
            Ok(())
        } else {
            Err(QueryError::WrongWorld { state_world: self.world_id, world: world.id() })
        }
    }

    /// Whether rows of `archetype` belong to this query: its data and
    /// archetype-level filters match, and it does not hold [`Disabled`]
    /// unless the query names `Disabled`.
    fn matches(&self, archetype: &Archetype) -> bool {
        Q::matches(self.data_state, archetype)
            && F::matches(self.filter_state, archetype)
            && self.skip_disabled.is_none_or(|d| !archetype.contains(d))
    }

    /// Picks up archetypes created since the last call.
    ///
    /// # Panics
    /// If `world` is not the world this state was made for.
    pub fn update_archetypes(&mut self, world: &World) {
        if let Err(e) = self.check_world(world) {
            panic!("{e}");
        }
        let archetypes = world.archetypes();
        for archetype in &archetypes[self.archetypes_seen..] {
            if self.matches(archetype) {
                self.matched_index.push(self.matched.len() as u32);
                self.matched.push(Matched {
                    archetype: archetype.id(),
                    data: Q::cache(self.data_state, archetype),
                    filter: F::cache(self.filter_state, archetype),
                });
            } else {
                self.matched_index.push(NOT_MATCHED);
            }
        }
        self.archetypes_seen = archetypes.len();
    }

    /// Starts a run: refreshes archetypes, fixes the tick window, resets
    /// the counts.
    pub(crate) fn begin(&mut self, world: &World) -> TickWindow {
        self.update_archetypes(world);
        let this_run = world.change_tick();
        // Writes made after this run (by anyone) must be stamped newer than
        // `this_run`, or the next run would miss them.
        world.increment_change_tick_shared();
        let window = TickWindow::new(self.last_run, this_run);
        self.last_run = this_run;
        self.stats = ChunkStats::default();
        window
    }

    /// Iterates the matching rows of a read-only query.
    pub fn iter<'w, 's>(&'s mut self, world: &'w World) -> QueryIter<'w, 's, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: the data is read-only and `&World` forbids writers.
        unsafe { self.iter_unchecked(world) }
    }

    /// Iterates the matching rows; `&mut T` items are [`crate::Mut`] and mark
    /// their row when written.
    ///
    /// An item may outlive the loop, so each write stamps the row's tick
    /// and checks its block's and its chunk's ticks itself (stamping them
    /// when they are older); [`QueryState::for_each_mut`] stamps the block
    /// and chunk ticks once per run of rows and is the faster loop for
    /// writes.
    pub fn iter_mut<'w, 's>(&'s mut self, world: &'w mut World) -> QueryIter<'w, 's, Q, F> {
        world.check_change_ticks();
        // SAFETY: `&mut World` is exclusive for `'w`.
        unsafe { self.iter_unchecked(world) }
    }

    /// Iterates through a shared world borrow.
    ///
    /// # Safety
    /// For `'w`, nothing else may access the components this query writes,
    /// nor write the ones it reads (schedulers check this with
    /// [`QueryState::access`]).
    pub unsafe fn iter_unchecked<'w, 's>(&'s mut self, world: &'w World) -> QueryIter<'w, 's, Q, F> {
        let window = self.begin(world);
        // SAFETY: forwarded contract.
        unsafe { self.iter_in(world, window) }
    }

    /// Iterates with a window the caller chose (a system's), adding to the
    /// chunk counts instead of resetting them.
    ///
    /// # Safety
    /// As [`QueryState::iter_unchecked`]; the archetypes must be up to date.
    pub(crate) unsafe fn iter_in<'w, 's>(
        &'s mut self,
        world: &'w World,
        window: TickWindow,
    ) -> QueryIter<'w, 's, Q, F> {
        QueryIter {
            archetypes: world.archetypes(),
            matched: self.matched.iter(),
            stats: &mut self.stats,
            counts: ChunkStats::default(),
            window,
            current: None,
            chunk: 0,
            fetch: None,
            row: 0,
            len: 0,
            all_pass: true,
            mask: 0,
            mask_base: 0,
        }
    }

    /// Runs `f` on every matching row: the fastest per-row path. The
    /// closure cannot keep items, so writes mark a loop-local flag and each
    /// chunk's tick is stamped once when the loop leaves it.
    #[inline(always)]
    pub fn for_each_mut(&mut self, world: &mut World, f: impl FnMut(Q::Item<'_>)) {
        world.check_change_ticks();
        // SAFETY: `&mut World` is exclusive.
        unsafe { self.for_each_unchecked(world, f) }
    }

    /// Read-only form of [`QueryState::for_each_mut`].
    #[inline(always)]
    pub fn for_each(&mut self, world: &World, f: impl FnMut(Q::Item<'_>))
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: read-only data through a shared borrow.
        unsafe { self.for_each_unchecked(world, f) }
    }

    /// Per-row internal iteration through a shared world borrow.
    ///
    /// # Safety
    /// As [`QueryState::iter_unchecked`].
    #[inline(always)]
    pub unsafe fn for_each_unchecked(&mut self, world: &World, f: impl FnMut(Q::Item<'_>)) {
        let window = self.begin(world);
        // SAFETY: forwarded contract.
        unsafe { self.for_each_in(world, window, f) }
    }

    /// # Safety
    /// As [`QueryState::iter_in`].
    #[inline(always)]
    pub(crate) unsafe fn for_each_in(&mut self, world: &World, window: TickWindow, mut f: impl FnMut(Q::Item<'_>)) {
        self.walk_chunks(world, window, |_, m, archetype, chunk, len, next| {
            // SAFETY: the caller holds the access; each chunk once; `next`
            // is a chunk of the same archetype.
            unsafe { run_rows::<Q, F>(archetype, m, chunk, 0, len, next, window, &mut f) };
        });
    }

    /// Calls `visit` for every non-empty chunk of the matched archetypes
    /// that passes the filter's chunk-level test, with the next such chunk
    /// of the same archetype if there is one and the walk has visited more
    /// than [`PREFETCH_AFTER`] chunks (for prefetching), counting
    /// chunks seen and skipped: the one walk every iteration form shares.
    /// The skip loop reads chunk ticks only.
    #[inline]
    pub(crate) fn walk_chunks<'w>(
        &mut self,
        world: &'w World,
        window: TickWindow,
        mut visit: impl FnMut(usize, &Matched<Q, F>, &'w Archetype, usize, usize, Option<usize>),
    ) {
        let archetypes = world.archetypes();
        let (mut total, mut visited, mut entities) = (0u64, 0u64, 0u64);
        for (index, m) in self.matched.iter().enumerate() {
            let archetype = &archetypes[m.archetype.index()];
            let count = archetype.chunk_count();
            total += count as u64;
            entities += archetype.len() as u64;
            let mut chunk = 0;
            // The next passing chunk, when a look-ahead already found it.
            let mut peeked = None;
            loop {
                chunk = match peeked.take() {
                    Some(next) => next,
                    None => F::next_passing_chunk(m.filter, archetype, chunk, count, window),
                };
                if chunk >= count {
                    break;
                }
                let len = archetype.chunk_len(chunk);
                if len > 0 {
                    visited += 1;
                    // Prefetch only once the walk has read more than the
                    // caches are likely to keep (see `PREFETCH_AFTER`); a
                    // shorter walk does not even look ahead. The chunk found
                    // is where the walk goes next, so it is not searched twice.
                    let ahead = if visited > PREFETCH_AFTER as u64 {
                        let next = F::next_passing_chunk(m.filter, archetype, chunk + 1, count, window);
                        peeked = Some(next);
                        (next < count).then_some(next)
                    } else {
                        None
                    };
                    visit(index, m, archetype, chunk, len, ahead);
                }
                chunk += 1;
            }
        }
        self.stats.chunks_total += total;
        self.stats.chunks_skipped += total - visited;
        self.stats.entities += entities;
    }

    /// Runs `f` on every matching chunk, as a [`ChunkView`] (column slices,
    /// entities, tick info): the SIMD-friendly path.
    pub fn for_each_chunk_mut(&mut self, world: &mut World, f: impl FnMut(ChunkView<'_, Q, F>)) {
        world.check_change_ticks();
        // SAFETY: `&mut World` is exclusive.
        unsafe { self.for_each_chunk_unchecked(world, f) }
    }

    /// Read-only form of [`QueryState::for_each_chunk_mut`].
    pub fn for_each_chunk(&mut self, world: &World, f: impl FnMut(ChunkView<'_, Q, F>))
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: read-only data through a shared borrow.
        unsafe { self.for_each_chunk_unchecked(world, f) }
    }

    /// Per-chunk iteration through a shared world borrow.
    ///
    /// # Safety
    /// As [`QueryState::iter_unchecked`].
    pub unsafe fn for_each_chunk_unchecked<'w>(&mut self, world: &'w World, f: impl FnMut(ChunkView<'w, Q, F>)) {
        let window = self.begin(world);
        // SAFETY: forwarded contract.
        unsafe { self.for_each_chunk_in(world, window, f) }
    }

    /// # Safety
    /// As [`QueryState::iter_in`].
    pub(crate) unsafe fn for_each_chunk_in<'w>(
        &mut self,
        world: &'w World,
        window: TickWindow,
        mut f: impl FnMut(ChunkView<'w, Q, F>),
    ) {
        self.walk_chunks(world, window, |_, m, archetype, chunk, len, _| {
            // SAFETY: the caller holds the query's access; each chunk is
            // handed out once.
            f(unsafe { ChunkView::new(archetype, m.data, m.filter, chunk, len, window) });
        });
    }

    /// The column cache of a matched archetype, `None` if the archetype
    /// does not match (or appeared after the last archetype refresh).
    #[inline]
    pub(crate) fn cache_of(&self, archetype: ArchetypeId) -> Option<Q::Cache> {
        let index = *self.matched_index.get(archetype.index())?;
        self.matched.get(index as usize).map(|m| m.data)
    }

    #[inline(always)]
    fn matched_cache(&self, world: &World, entity: Entity) -> Result<(Q::Cache, crate::EntityLocation), QueryError> {
        self.check_world(world)?;
        let Some(loc) = world.get_location(entity) else {
            return Err(QueryError::NoSuchEntity(entity));
        };
        // Archetypes this state has seen: one lookup. Newer ones (the state
        // was not refreshed since they appeared): test them directly.
        if let Some(&index) = self.matched_index.get(loc.archetype.index()) {
            return match self.matched.get(index as usize) {
                Some(m) => Ok((m.data, loc)),
                None => Err(QueryError::NoMatch(entity)),
            };
        }
        let archetype = &world.archetypes()[loc.archetype.index()];
        if !self.matches(archetype) {
            return Err(QueryError::NoMatch(entity));
        }
        Ok((Q::cache(self.data_state, archetype), loc))
    }

    /// The data of one entity, if it matches the query's data and
    /// archetype-level filters (tick filters are not applied here).
    ///
    /// # Errors
    /// [`QueryError::NoSuchEntity`] for a stale or never-issued handle,
    /// [`QueryError::NoMatch`] if the entity does not match,
    /// [`QueryError::WrongWorld`] if this state was made for another world.
    #[inline(always)]
    pub fn get<'w>(&self, world: &'w World, entity: Entity) -> Result<Q::Item<'w>, QueryError>
    where
        Q: ReadOnlyQueryData,
    {
        let (cache, loc) = self.matched_cache(world, entity)?;
        let archetype = &world.archetypes()[loc.archetype.index()];
        let window = TickWindow::new(self.last_run, world.change_tick());
        // SAFETY: read-only data, live row, matched archetype.
        unsafe {
            let fetch = Q::fetch(cache, archetype, loc.chunk as usize, window);
            Ok(Q::item(&fetch, loc.row as usize))
        }
    }

    /// One entity's item through a shared world borrow, for a run that
    /// sees `window` (writes stamped `window.this_run()`).
    ///
    /// # Safety
    /// As [`QueryState::iter_unchecked`], and no other item for the entity's
    /// row is alive.
    #[inline(always)]
    pub(crate) unsafe fn get_unchecked<'w>(
        &self,
        world: &'w World,
        entity: Entity,
        window: TickWindow,
    ) -> Result<Q::Item<'w>, QueryError> {
        let (cache, loc) = self.matched_cache(world, entity)?;
        let archetype = &world.archetypes()[loc.archetype.index()];
        // SAFETY: forwarded contract; live row, matched archetype.
        unsafe {
            let fetch = Q::fetch(cache, archetype, loc.chunk as usize, window);
            Ok(Q::item(&fetch, loc.row as usize))
        }
    }

    /// Mutable form of [`QueryState::get`]; writes are stamped with the
    /// world's current tick. Errors as [`QueryState::get`].
    #[inline(always)]
    pub fn get_mut<'w>(&self, world: &'w mut World, entity: Entity) -> Result<Q::Item<'w>, QueryError> {
        let (cache, loc) = self.matched_cache(world, entity)?;
        let window = TickWindow::new(self.last_run, world.change_tick());
        let archetype = &world.archetypes()[loc.archetype.index()];
        // SAFETY: `&mut World` is exclusive; live row, matched archetype.
        unsafe {
            let fetch = Q::fetch(cache, archetype, loc.chunk as usize, window);
            Ok(Q::item(&fetch, loc.row as usize))
        }
    }
}
