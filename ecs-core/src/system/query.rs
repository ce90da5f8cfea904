//! The `Query` system parameter, with every method it has: iteration with
//! the system's tick window, lookups by entity, and parallel access to
//! disjoint entity groups.

use crate::query::fetch::{QueryData, ReadOnlyQueryData};
use crate::query::filter::QueryFilter;
use crate::query::{ChunkStats, ChunkView, QueryError, QueryIter, QueryState};
use crate::storage::entity::Entity;
use crate::storage::tick::TickWindow;
use crate::world::World;

use crate::query::groups::{EntityGroups, GroupRows};
use crate::system::{SystemMeta, SystemParam};
use rayon::prelude::*;

/// A query parameter: iterates the matching rows with the system's tick
/// window.
pub struct Query<'w, 's, Q: QueryData + 'static, F: QueryFilter + 'static = ()> {
    pub(crate) world: &'w World,
    pub(crate) state: &'s mut QueryState<Q, F>,
    pub(crate) window: TickWindow,
}

impl<'w, 's, Q: QueryData + 'static, F: QueryFilter + 'static> Query<'w, 's, Q, F> {
    /// The matching rows, read-only.
    pub fn iter(&mut self) -> QueryIter<'_, '_, Q, F>
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: the system holds the query's access for 'w.
        unsafe { self.state.iter_in(self.world, self.window) }
    }

    /// The matching rows; `&mut T` items mark their row on write.
    pub fn iter_mut(&mut self) -> QueryIter<'_, '_, Q, F> {
        // SAFETY: as above; `&mut self` keeps the items unique.
        unsafe { self.state.iter_in(self.world, self.window) }
    }

    /// Runs `f` on every matching row (read-only data).
    pub fn for_each(&mut self, f: impl FnMut(Q::Item<'_>))
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: as above.
        unsafe { self.state.for_each_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching row (the fast per-row path).
    pub fn for_each_mut(&mut self, f: impl FnMut(Q::Item<'_>)) {
        // SAFETY: as above.
        unsafe { self.state.for_each_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching row, chunks spread over rayon's threads.
    pub fn par_for_each_mut(&mut self, f: impl Fn(Q::Item<'_>) + Send + Sync) {
        // SAFETY: as above.
        unsafe { self.state.par_for_each_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching chunk.
    pub fn for_each_chunk_mut(&mut self, f: impl FnMut(ChunkView<'_, Q, F>)) {
        // SAFETY: as above.
        unsafe { self.state.for_each_chunk_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching chunk in parallel.
    pub fn par_for_each_chunk_mut(&mut self, f: impl Fn(ChunkView<'_, Q, F>) + Send + Sync) {
        // SAFETY: as above.
        unsafe { self.state.par_for_each_chunk_in(self.world, self.window, f) }
    }

    /// One entity's data (archetype-level filters only).
    pub fn get(&self, entity: Entity) -> Result<Q::Item<'_>, QueryError>
    where
        Q: ReadOnlyQueryData,
    {
        self.state.get(self.world, entity)
    }

    /// One entity's data, mutably.
    pub fn get_mut(&mut self, entity: Entity) -> Result<Q::Item<'_>, QueryError> {
        // SAFETY: the system holds the query's access; `&mut self` keeps the
        // item unique.
        unsafe { self.state.get_unchecked(self.world, entity, self.window) }
    }

    /// Chunk counts of this run so far.
    pub fn stats(&self) -> ChunkStats {
        self.state.stats()
    }

    /// The system's tick window.
    pub fn window(&self) -> TickWindow {
        self.window
    }
}

// SAFETY: records the query's component access; fetches only through it.
unsafe impl<Q: QueryData + 'static, F: QueryFilter + 'static> SystemParam for Query<'_, '_, Q, F> {
    /// `None` when the query itself is refused; the system then never runs.
    type State = Option<QueryState<Q, F>>;
    type Item<'w, 's> = Query<'w, 's, Q, F>;

    fn init_state(world: &mut World, meta: &mut SystemMeta) -> Self::State {
        let name = std::any::type_name::<Self>();
        match QueryState::<Q, F>::try_new(world) {
            Ok(state) => {
                meta.add_query(state.access().clone(), world.components(), name);
                Some(state)
            }
            Err(e) => {
                meta.refuse(format!("system {} is refused: {e}", meta.name));
                None
            }
        }
    }

    fn validate(state: &Self::State, _: &World) -> Result<(), String> {
        state.as_ref().map(drop).ok_or_else(|| "a query parameter was refused".to_string())
    }

    unsafe fn get_param<'w, 's>(
        state: &'s mut Self::State,
        world: &'w World,
        window: TickWindow,
    ) -> Query<'w, 's, Q, F> {
        let state = state.as_mut().expect("a system with a refused query never runs");
        state.update_archetypes(world);
        state.reset_stats();
        Query { world, state, window }
    }

    fn report(state: &Self::State, stats: &mut Vec<ChunkStats>) {
        if let Some(state) = state {
            stats.push(state.stats());
        }
    }
}

impl<'w, Q: QueryData + 'static, F: QueryFilter + 'static> Query<'w, '_, Q, F> {
    /// Caches the current location of every entity in `groups`.
    pub fn update_group_locations(&self, groups: &mut EntityGroups) {
        groups.update_locations(self.world);
    }

    /// Live entities in the archetypes this query matches (tick filters not
    /// applied): a cheap fingerprint of the query's membership.
    pub fn matched_entity_count(&self) -> usize {
        let archetypes = self.world.archetypes();
        self.state.matched_archetypes().map(|id| archetypes[id.index()].len()).sum()
    }

    /// The id of component `T` in this query's world (`None` if `T` was
    /// never registered), e.g. for [`crate::ChunkView::changed_since_last_run`].
    pub fn component_id<T: crate::Component>(&self) -> Option<crate::ComponentId> {
        self.world.components().id::<T>()
    }

    /// Archetypes this query matches.
    pub fn matched_archetype_count(&self) -> usize {
        self.state.matched_archetypes().count()
    }

    /// Runs `f` once per selected group (indices into `groups`; repeats are
    /// run once), groups spread over rayon's threads. `init` makes one
    /// scratch value per worker, handed to `f` with the group's rows.
    /// Tick filters do not apply to [`GroupRows::get_mut`].
    ///
    /// # Panics
    /// If a selected index is not a group of `groups`.
    pub fn par_for_each_group_mut<T>(
        &mut self,
        groups: &EntityGroups,
        selected: &[u32],
        init: impl Fn() -> T + Send + Sync,
        f: impl Fn(&mut T, &mut GroupRows<'_, Q, F>) + Send + Sync,
    ) {
        let mut none = vec![(); groups.entity_count()];
        self.par_for_each_group_with(groups, selected, &mut none, init, |scratch, rows, _| f(scratch, rows));
    }

    /// [`Query::par_for_each_group_mut`] with per-entity data of the
    /// caller's: `side` holds one value per entity of `groups`, in the
    /// groups' order, and each task gets its group's part of it mutably.
    ///
    /// ```
    /// use ecs_core::{EntityGroups, Query, Res, ResMut, Schedule, World};
    /// struct Hp(u32);
    /// #[derive(Default)]
    /// struct Side(Vec<u32>);
    ///
    /// let mut world = World::new();
    /// let e = world.spawn_batch((0..4).map(|i| (Hp(i),))).unwrap();
    /// let mut groups = EntityGroups::new();
    /// groups.push_group(&e[..2]).unwrap();
    /// groups.push_group(&e[2..]).unwrap();
    /// world.insert_resource(groups);
    /// world.insert_resource(Side(vec![0; 4]));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(|mut q: Query<&Hp>, groups: Res<EntityGroups>, mut side: ResMut<Side>| {
    ///     q.par_for_each_group_with(&groups, &[0, 1], &mut side.0, || (), |_, rows, side| {
    ///         for k in 0..rows.len() {
    ///             side[k] = rows.get_mut(k).unwrap().0 * 10;
    ///         }
    ///     });
    /// });
    /// schedule.run(&mut world).unwrap();
    /// assert_eq!(world.resource::<Side>().unwrap().0, [0, 10, 20, 30]);
    /// ```
    ///
    /// # Panics
    /// If a selected index is not a group of `groups`, or `side` does not
    /// hold exactly one value per entity of `groups`.
    pub fn par_for_each_group_with<T, U: Send>(
        &mut self,
        groups: &EntityGroups,
        selected: &[u32],
        side: &mut [U],
        init: impl Fn() -> T + Send + Sync,
        f: impl Fn(&mut T, &mut GroupRows<'_, Q, F>, &mut [U]) + Send + Sync,
    ) {
        assert_eq!(side.len(), groups.entity_count(), "one side value per grouped entity");
        let mut selected = selected.to_vec();
        selected.sort_unstable();
        selected.dedup();
        if let Some(&last) = selected.last() {
            assert!((last as usize) < groups.len(), "group {last} of {} selected", groups.len());
        }
        // Each selected group's part of `side`, split off in order.
        let mut parts: Vec<(u32, &mut [U])> = Vec::with_capacity(selected.len());
        let mut rest = side;
        let mut offset = 0;
        for &g in &selected {
            let (start, end) = (groups.starts[g as usize] as usize, groups.starts[g as usize + 1] as usize);
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - offset);
            let (part, tail) = tail.split_at_mut(end - start);
            parts.push((g, part));
            rest = tail;
            offset = end;
        }
        let world = self.world;
        let state: &QueryState<Q, F> = self.state;
        let window = self.window;
        let run = |scratch: &mut T, (group, part): &mut (u32, &mut [U])| {
            let g = *group as usize;
            let range = groups.starts[g] as usize..groups.starts[g + 1] as usize;
            let mut rows =
                GroupRows::new(world, state, &groups.entities[range.clone()], &groups.locations[range], g, window);
            // Dropping `rows` stamps the chunk ticks of the last chunk
            // written, also when `f` panics.
            f(scratch, &mut rows, part);
        };
        if parts.len() <= 1 {
            let mut scratch = init();
            parts.iter_mut().for_each(|part| run(&mut scratch, part));
        } else {
            parts.par_iter_mut().for_each_init(&init, run);
        }
    }
}
