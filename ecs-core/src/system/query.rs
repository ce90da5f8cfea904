//! The `Query` system parameter, with every method it has: iteration with
//! the system's tick window, lookups by entity (one, several at once, or
//! the only match), combinations of rows, and parallel access to disjoint
//! entity groups.

use std::ops::ControlFlow;

use crate::query::fetch::{QueryData, ReadOnlyQueryData};
use crate::query::filter::QueryFilter;
use crate::query::{ChunkStats, ChunkView, QueryError, QueryIter, QueryState};
use crate::storage::archetype::Archetype;
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
    ///
    /// An item may outlive the loop, so each write stamps the row's tick
    /// and checks its block's and its chunk's ticks itself (stamping them
    /// when they are older). [`Query::for_each_mut`] keeps the block and
    /// chunk marks in the loop and stamps them once: prefer it for loops
    /// that write many rows (1.4-2.1x as fast in the `probe_iter` bench).
    pub fn iter_mut(&mut self) -> QueryIter<'_, '_, Q, F> {
        // SAFETY: as above; `&mut self` keeps the items unique.
        unsafe { self.state.iter_in(self.world, self.window) }
    }

    /// Runs `f` on every matching row (read-only data).
    #[inline(always)]
    pub fn for_each(&mut self, f: impl FnMut(Q::Item<'_>))
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: as above.
        unsafe { self.state.for_each_in(self.world, self.window, f) }
    }

    /// Runs `f` on every matching row (the fast per-row path).
    #[inline(always)]
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
    #[inline]
    pub fn get(&self, entity: Entity) -> Result<Q::Item<'_>, QueryError>
    where
        Q: ReadOnlyQueryData,
    {
        self.state.get(self.world, entity)
    }

    /// One entity's data, mutably.
    #[inline]
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

/// Why [`Query::single`] or [`Query::single_mut`] found no answer. Both
/// variants name the query's type (data and filter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuerySingleError {
    /// No row matched the query.
    NoEntities(&'static str),
    /// More than one row matched the query.
    MultipleEntities(&'static str),
}

impl std::fmt::Display for QuerySingleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuerySingleError::NoEntities(query) => {
                write!(f, "query {query} matched no entity; single() needs exactly one")
            }
            QuerySingleError::MultipleEntities(query) => {
                write!(f, "query {query} matched more than one entity; single() needs exactly one")
            }
        }
    }
}

impl std::error::Error for QuerySingleError {}

/// Why [`Query::get_many`] or [`Query::get_many_mut`] refused a set of
/// entities. Nothing is fetched when any entity is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GetManyError {
    /// The entity was asked for twice by `get_many_mut`: two `Mut`s to one
    /// row would alias.
    Duplicate(Entity),
    /// The entity is not alive.
    NoSuchEntity(Entity),
    /// The entity is alive but does not match the query (its data or its
    /// archetype-level filters).
    NoMatch(Entity),
}

impl std::fmt::Display for GetManyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GetManyError::Duplicate(e) => {
                write!(f, "entity {e} was asked for twice; get_many_mut needs distinct entities")
            }
            GetManyError::NoSuchEntity(e) => write!(f, "entity {e} does not exist"),
            GetManyError::NoMatch(e) => write!(f, "entity {e} does not match the query"),
        }
    }
}

impl std::error::Error for GetManyError {}

/// Where one matching row lives: its archetype, the query's column cache
/// for that archetype, its chunk and its row.
type RowAt<'w, Q> = (&'w Archetype, <Q as QueryData>::Cache, usize, usize);

/// The matching rows of one query run, gathered for combination loops: one
/// fetch per chunk and `(fetch index, row)` per row, each row once.
struct Gathered<'w, Q: QueryData> {
    fetches: Vec<Q::Fetch<'w>>,
    rows: Vec<(u32, u32)>,
}

impl<'w, Q: QueryData> Gathered<'w, Q> {
    /// One row's item.
    ///
    /// # Safety
    /// `index < self.rows.len()`, the gatherer's caller holds the query's
    /// access for `'w`, and for mutable data no other item of that row is
    /// alive.
    #[inline]
    unsafe fn item(&self, index: usize) -> Q::Item<'w> {
        let (fetch, row) = self.rows[index];
        // SAFETY: forwarded contract; the row was live when gathered and
        // no structural change can happen while the access is held.
        unsafe { Q::item(&self.fetches[fetch as usize], row as usize) }
    }
}

/// The position of the next `K`-combination of `0..n` in lexicographic
/// order (indices strictly increasing), or `None` after the last.
fn first_combination<const K: usize>(n: usize) -> Option<[usize; K]> {
    (K > 0 && K <= n).then(|| std::array::from_fn(|j| j))
}

fn next_combination<const K: usize>(index: &mut [usize; K], n: usize) -> bool {
    // The last position that can still move right.
    let Some(j) = (0..K).rev().find(|&j| index[j] < n - K + j) else {
        return false;
    };
    index[j] += 1;
    for l in j + 1..K {
        index[l] = index[l - 1] + 1;
    }
    true
}

/// Read-only combinations of a query's rows: every set of `K` distinct
/// matching rows once, as `[item; K]` in iteration order (see
/// [`Query::iter_combinations`]).
pub struct QueryCombinations<'w, Q: QueryData, const K: usize> {
    gathered: Gathered<'w, Q>,
    next: Option<[usize; K]>,
}

impl<'w, Q: ReadOnlyQueryData, const K: usize> Iterator for QueryCombinations<'w, Q, K> {
    type Item = [Q::Item<'w>; K];

    fn next(&mut self) -> Option<Self::Item> {
        let index = self.next?;
        // SAFETY: every index is below the row count (`first_combination`
        // and `next_combination` keep them there); the data is read-only,
        // so items of one row may coexist.
        let items = std::array::from_fn(|j| unsafe { self.gathered.item(index[j]) });
        let mut following = index;
        self.next = next_combination(&mut following, self.gathered.rows.len()).then_some(following);
        Some(items)
    }
}

/// Mutable combinations of a query's rows, handed out one set at a time by
/// [`QueryCombinationsMut::fetch_next`] (see
/// [`Query::iter_combinations_mut`]).
///
/// It is not an [`Iterator`]: the items of one set borrow the loop itself,
/// so they are gone before the next set is fetched, and the `K` items of a
/// set are always `K` distinct rows. No two `Mut`s to one row can exist:
///
/// ```compile_fail,E0499
/// use ecs_core::prelude::*;
/// struct Pos(f32);
/// fn keep_two(mut q: Query<&mut Pos>) {
///     let mut pairs = q.iter_combinations_mut();
///     let [a, _] = pairs.fetch_next().unwrap();
///     let [b, _] = pairs.fetch_next().unwrap(); // error: `pairs` is still borrowed by `a`
///     drop((a, b));
/// }
/// # let mut schedule = Schedule::new();
/// # schedule.add_systems(keep_two);
/// ```
pub struct QueryCombinationsMut<'w, Q: QueryData, const K: usize> {
    gathered: Gathered<'w, Q>,
    next: Option<[usize; K]>,
}

impl<Q: QueryData, const K: usize> QueryCombinationsMut<'_, Q, K> {
    /// The next set of `K` distinct rows, or `None` when every set was
    /// handed out. The items borrow `self` until they are dropped.
    pub fn fetch_next(&mut self) -> Option<[Q::Item<'_>; K]> {
        let index = self.next?;
        let mut following = index;
        self.next = next_combination(&mut following, self.gathered.rows.len()).then_some(following);
        let gathered = &self.gathered;
        // SAFETY: the indices are distinct and below the row count, and each
        // gathered row is a distinct row, so the `K` items are `K` distinct
        // rows; the items of the previous set borrowed `self` mutably and
        // are gone, so no other item of these rows is alive; the `Query`
        // this was made from is borrowed mutably for the loop's lifetime
        // and holds the query's access.
        Some(std::array::from_fn(|j| Q::shrink(unsafe { gathered.item(index[j]) })))
    }
}

impl<'w, 's, Q: QueryData + 'static, F: QueryFilter + 'static> Query<'w, 's, Q, F> {
    /// The query's type, for messages.
    fn type_name() -> &'static str {
        std::any::type_name::<(Q, F)>()
    }

    /// Calls `visit` with every row that passes the query's filter (data,
    /// archetype, chunk and row level, with the system's window), in
    /// iteration order, until it breaks. Chunk counts are not touched.
    fn visit_rows(&self, mut visit: impl FnMut(RowAt<'w, Q>) -> ControlFlow<()>) {
        let archetypes = self.world.archetypes();
        let window = self.window;
        for m in &self.state.matched {
            let archetype = &archetypes[m.archetype.index()];
            let count = archetype.chunk_count();
            let mut chunk = 0;
            loop {
                chunk = F::next_passing_chunk(m.filter, archetype, chunk, count, window);
                if chunk >= count {
                    break;
                }
                let len = archetype.chunk_len(chunk);
                let filter = F::fetch(m.filter, archetype, chunk, window);
                let all_pass = F::ARCHETYPAL || F::all_rows_pass(&filter);
                for row in 0..len {
                    // SAFETY: `row` is below the chunk's length.
                    if (all_pass || unsafe { F::row_passes(&filter, row) })
                        && visit((archetype, m.data, chunk, row)).is_break()
                    {
                        return;
                    }
                }
                chunk += 1;
            }
        }
    }

    /// The one matching row, or why there is not exactly one.
    fn single_row(&self) -> Result<RowAt<'w, Q>, QuerySingleError> {
        let mut found = None;
        let mut many = false;
        self.visit_rows(|at| {
            if found.is_some() {
                many = true;
                ControlFlow::Break(())
            } else {
                found = Some(at);
                ControlFlow::Continue(())
            }
        });
        match found {
            None => Err(QuerySingleError::NoEntities(Self::type_name())),
            Some(_) if many => Err(QuerySingleError::MultipleEntities(Self::type_name())),
            Some(at) => Ok(at),
        }
    }

    /// The item of the only row that matches the query (every filter
    /// applied, ticks included), read-only.
    ///
    /// # Errors
    /// [`QuerySingleError::NoEntities`] when no row matches,
    /// [`QuerySingleError::MultipleEntities`] when more than one does.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Component)]
    /// struct Player;
    /// #[derive(Component)]
    /// struct Hp(u32);
    /// fn show(q: Query<&Hp, With<Player>>) {
    ///     match q.single() {
    ///         Ok(hp) => assert_eq!(hp.0, 3),
    ///         Err(e) => panic!("{e}"),
    ///     }
    /// }
    /// let mut world = World::new();
    /// world.spawn((Player, Hp(3)));
    /// world.spawn((Hp(7),));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(show);
    /// schedule.run(&mut world).unwrap();
    /// ```
    pub fn single(&self) -> Result<Q::Item<'_>, QuerySingleError>
    where
        Q: ReadOnlyQueryData,
    {
        let (archetype, cache, chunk, row) = self.single_row()?;
        // SAFETY: the row passed the query in a matched archetype, the
        // chunk is in range and the row below its length; the data is
        // read-only and the system holds the query's access.
        let item = unsafe { Q::item(&Q::fetch(cache, archetype, chunk, self.window), row) };
        Ok(Q::shrink(item))
    }

    /// The item of the only row that matches the query, mutably (writes
    /// mark the row as any `Mut<T>` does).
    ///
    /// # Errors
    /// As [`Query::single`].
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Component)]
    /// struct Player;
    /// #[derive(Component)]
    /// struct Hp(u32);
    /// fn heal(mut q: Query<&mut Hp, With<Player>>) {
    ///     if let Ok(mut hp) = q.single_mut() {
    ///         hp.0 += 1;
    ///     }
    /// }
    /// let mut world = World::new();
    /// let p = world.spawn((Player, Hp(3)));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(heal);
    /// schedule.run(&mut world).unwrap();
    /// assert_eq!(world.get::<Hp>(p).unwrap().0, 4);
    /// ```
    pub fn single_mut(&mut self) -> Result<Q::Item<'_>, QuerySingleError> {
        let (archetype, cache, chunk, row) = self.single_row()?;
        // SAFETY: as in `single`; `&mut self` keeps this the only item of
        // the query alive, and the system holds the query's access.
        let item = unsafe { Q::item(&Q::fetch(cache, archetype, chunk, self.window), row) };
        Ok(Q::shrink(item))
    }

    /// Where `entity`'s row is, if it is alive and matches the query
    /// (archetype level, as [`Query::get`]).
    fn locate(&self, entity: Entity) -> Result<RowAt<'w, Q>, GetManyError> {
        let world = self.world;
        let loc = world.location(entity).map_err(|_| GetManyError::NoSuchEntity(entity))?;
        let cache = self.state.cache_of(loc.archetype).ok_or(GetManyError::NoMatch(entity))?;
        Ok((&world.archetypes()[loc.archetype.index()], cache, loc.chunk as usize, loc.row as usize))
    }

    /// The rows of `entities`, all located before any item is made.
    fn locate_all<const N: usize>(&self, entities: [Entity; N]) -> Result<[RowAt<'w, Q>; N], GetManyError> {
        let mut rows: [Option<RowAt<'w, Q>>; N] = [None; N];
        for (slot, &entity) in rows.iter_mut().zip(&entities) {
            *slot = Some(self.locate(entity)?);
        }
        Ok(rows.map(|row| row.expect("every slot was filled above")))
    }

    /// The data of several entities at once, read-only (archetype-level
    /// filters only, as [`Query::get`]). An entity may appear more than once.
    ///
    /// # Errors
    /// [`GetManyError::NoSuchEntity`] or [`GetManyError::NoMatch`] for the
    /// first entity that is dead or does not match.
    pub fn get_many<const N: usize>(&self, entities: [Entity; N]) -> Result<[Q::Item<'_>; N], GetManyError>
    where
        Q: ReadOnlyQueryData,
    {
        let rows = self.locate_all(entities)?;
        Ok(rows.map(|(archetype, cache, chunk, row)| {
            // SAFETY: each row is live in a matched archetype (located
            // above, and nothing moves while the system holds the query's
            // access); the data is read-only, so items of one row may
            // coexist.
            let item = unsafe { Q::item(&Q::fetch(cache, archetype, chunk, self.window), row) };
            Q::shrink(item)
        }))
    }

    /// The data of several distinct entities at once, mutably: e.g. both
    /// sides of a collision. Writes mark their rows as any `Mut<T>` does.
    ///
    /// # Errors
    /// [`GetManyError::Duplicate`] if an entity appears twice (two `Mut`s
    /// to one row would alias), else [`GetManyError::NoSuchEntity`] or
    /// [`GetManyError::NoMatch`] for the first entity that is dead or does
    /// not match. Nothing is fetched then.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Component)]
    /// struct Hp(i32);
    /// #[derive(Default)]
    /// struct Hits(Vec<(Entity, Entity)>);
    /// fn trade(mut q: Query<&mut Hp>, hits: Res<Hits>) {
    ///     for &(a, b) in &hits.0 {
    ///         if let Ok([mut a, mut b]) = q.get_many_mut([a, b]) {
    ///             a.0 -= 1;
    ///             b.0 -= 1;
    ///         }
    ///     }
    /// }
    /// let mut world = World::new();
    /// let a = world.spawn((Hp(5),));
    /// let b = world.spawn((Hp(5),));
    /// world.insert_resource(Hits(vec![(a, b), (a, a)])); // (a, a) is refused
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(trade);
    /// schedule.run(&mut world).unwrap();
    /// assert_eq!((world.get::<Hp>(a).unwrap().0, world.get::<Hp>(b).unwrap().0), (4, 4));
    /// ```
    pub fn get_many_mut<const N: usize>(&mut self, entities: [Entity; N]) -> Result<[Q::Item<'_>; N], GetManyError> {
        for (i, &entity) in entities.iter().enumerate() {
            if entities[..i].contains(&entity) {
                return Err(GetManyError::Duplicate(entity));
            }
        }
        let rows = self.locate_all(entities)?;
        Ok(rows.map(|(archetype, cache, chunk, row)| {
            // SAFETY: the entities are distinct, so the rows are distinct
            // (an alive entity has one row); each row is live in a matched
            // archetype; `&mut self` keeps these the only items of the query
            // alive, and the system holds the query's access.
            let item = unsafe { Q::item(&Q::fetch(cache, archetype, chunk, self.window), row) };
            Q::shrink(item)
        }))
    }

    /// Gathers every matching row once, in iteration order.
    fn gather(&self) -> Gathered<'w, Q> {
        let mut gathered = Gathered { fetches: Vec::new(), rows: Vec::new() };
        let mut current: Option<(*const Archetype, usize)> = None;
        self.visit_rows(|(archetype, cache, chunk, row)| {
            let here = (std::ptr::from_ref(archetype), chunk);
            if current != Some(here) {
                current = Some(here);
                // SAFETY: a matched archetype and a chunk in range; the
                // system holds the query's access for `'w`, and the fetch
                // only makes items through `Gathered::item`'s contract.
                gathered.fetches.push(unsafe { Q::fetch(cache, archetype, chunk, self.window) });
            }
            gathered.rows.push(((gathered.fetches.len() - 1) as u32, row as u32));
            ControlFlow::Continue(())
        });
        gathered
    }

    /// Every set of `K` distinct matching rows once (unordered: `[a, b]`
    /// and never also `[b, a]`), read-only, as arrays in iteration order.
    /// `K` is usually inferred from the pattern: `for [a, b] in ...` walks
    /// the `n * (n - 1) / 2` pairs. The matching rows are gathered once
    /// when this is called (all filters applied, ticks included); chunk
    /// counts are not touched.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Component)]
    /// struct Pos(f32);
    /// fn closest(q: Query<(Entity, &Pos)>, mut best: Local<Option<f32>>) {
    ///     let mut pairs = 0;
    ///     for [(_, a), (_, b)] in q.iter_combinations() {
    ///         let d = (a.0 - b.0).abs();
    ///         *best = Some(best.map_or(d, |x: f32| x.min(d)));
    ///         pairs += 1;
    ///     }
    ///     assert_eq!(pairs, 4 * 3 / 2);
    ///     assert_eq!(*best, Some(1.0));
    /// }
    /// let mut world = World::new();
    /// world.spawn_batch([0.0, 4.0, 5.0, 9.0].map(|x| (Pos(x),)));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(closest);
    /// schedule.run(&mut world).unwrap();
    /// ```
    ///
    /// # Panics
    /// Fails to compile for `K == 0`.
    pub fn iter_combinations<const K: usize>(&self) -> QueryCombinations<'_, Q, K>
    where
        Q: ReadOnlyQueryData,
    {
        const { assert!(K > 0, "combinations of zero rows") };
        let gathered = self.gather();
        let next = first_combination::<K>(gathered.rows.len());
        QueryCombinations { gathered, next }
    }

    /// Every set of `K` distinct matching rows once, mutably, one set at a
    /// time through [`QueryCombinationsMut::fetch_next`]: a set's items
    /// borrow the loop and are gone before the next set is fetched, so no
    /// two `Mut`s to one row ever exist. Rows are gathered as in
    /// [`Query::iter_combinations`]; writes mark rows as any `Mut<T>` does.
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Component)]
    /// struct Charge(f32);
    /// #[derive(Component)]
    /// struct Force(f32);
    /// fn pull(mut q: Query<(&Charge, &mut Force)>) {
    ///     let mut pairs = q.iter_combinations_mut();
    ///     while let Some([(qa, mut fa), (qb, mut fb)]) = pairs.fetch_next() {
    ///         let f = qa.0 * qb.0;
    ///         fa.0 += f;
    ///         fb.0 -= f;
    ///     }
    /// }
    /// let mut world = World::new();
    /// world.spawn_batch((1..=3).map(|i| (Charge(i as f32), Force(0.0))));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(pull);
    /// schedule.run(&mut world).unwrap();
    /// let mut forces = world.query::<&Force>();
    /// let total: f32 = forces.iter(&world).map(|f| f.0).sum();
    /// assert_eq!(total, 0.0); // every pair pushed equally both ways
    /// ```
    ///
    /// # Panics
    /// Fails to compile for `K == 0`.
    pub fn iter_combinations_mut<const K: usize>(&mut self) -> QueryCombinationsMut<'_, Q, K> {
        const { assert!(K > 0, "combinations of zero rows") };
        let gathered = self.gather();
        let next = first_combination::<K>(gathered.rows.len());
        QueryCombinationsMut { gathered, next }
    }

    /// Runs `f` on every set of `K` distinct matching rows once, mutably:
    /// the closure form of [`Query::iter_combinations_mut`] (the closure
    /// cannot keep the items).
    ///
    /// ```
    /// use ecs_core::prelude::*;
    ///
    /// #[derive(Component)]
    /// struct Hp(u32);
    /// fn duel(mut q: Query<&mut Hp>) {
    ///     q.for_each_combination_mut(|[mut a, mut b]| {
    ///         a.0 -= 1;
    ///         b.0 -= 1;
    ///     });
    /// }
    /// let mut world = World::new();
    /// let e = world.spawn_batch((0..4).map(|_| (Hp(10),)));
    /// let mut schedule = Schedule::new();
    /// schedule.add_systems(duel);
    /// schedule.run(&mut world).unwrap();
    /// // Each of 4 entities is in 3 of the 6 pairs.
    /// assert!(e.iter().all(|&e| world.get::<Hp>(e).unwrap().0 == 7));
    /// ```
    pub fn for_each_combination_mut<const K: usize>(&mut self, mut f: impl FnMut([Q::Item<'_>; K])) {
        let mut combinations = self.iter_combinations_mut::<K>();
        while let Some(items) = combinations.fetch_next() {
            f(items);
        }
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

    /// Caches the current location of the entities of group `first_group`
    /// and the groups after it (see [`EntityGroups::update_locations_from`]).
    pub fn update_group_locations_from(&self, groups: &mut EntityGroups, first_group: usize) {
        groups.update_locations_from(self.world, first_group);
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
    /// use ecs_core::{Component, EntityGroups, Query, Res, ResMut, Schedule, World};
    /// #[derive(Component)]
    /// struct Hp(u32);
    /// #[derive(Default)]
    /// struct Side(Vec<u32>);
    ///
    /// let mut world = World::new();
    /// let e = world.spawn_batch((0..4).map(|i| (Hp(i),)));
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
        let selected = in_group_order(selected, groups.len());
        // Each selected group's part of `side`, split off in order.
        let mut parts: Vec<(u32, &mut [U])> = Vec::with_capacity(selected.len());
        let mut rest = side;
        let mut offset = 0;
        for &g in &selected {
            let (start, end) = (groups.starts[g as usize] as usize, groups.ends[g as usize] as usize);
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
            let range = groups.starts[g] as usize..groups.ends[g] as usize;
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

/// `selected` sorted, without repeats.
///
/// A list in order is copied; a short one (under one in 32 groups) is
/// sorted; a longer one goes through a bit per group, so a list that is
/// almost in order (a tree rebuilt at the end of a plan, listed among the
/// others) costs a pass, not a sort.
///
/// # Panics
/// If an index is not below `groups`.
fn in_group_order(selected: &[u32], groups: usize) -> Vec<u32> {
    let in_order = selected.is_sorted_by(|a, b| a < b);
    let last = if in_order { selected.last() } else { selected.iter().max() };
    if let Some(&last) = last {
        assert!((last as usize) < groups, "group {last} of {groups} selected");
    }
    if in_order {
        return selected.to_vec();
    }
    if selected.len() < groups / 32 {
        let mut sorted = selected.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        return sorted;
    }
    let mut bits = vec![0u64; groups.div_ceil(64)];
    for &g in selected {
        bits[g as usize / 64] |= 1 << (g % 64);
    }
    let mut sorted = Vec::with_capacity(selected.len());
    for (w, &word) in bits.iter().enumerate() {
        let mut rest = word;
        while rest != 0 {
            sorted.push((w * 64) as u32 + rest.trailing_zeros());
            rest &= rest - 1;
        }
    }
    sorted
}

#[cfg(test)]
mod tests {
    use super::{first_combination, in_group_order, next_combination};

    #[test]
    fn selected_groups_come_in_order_once() {
        assert_eq!(in_group_order(&[], 0), Vec::<u32>::new());
        assert_eq!(in_group_order(&[1, 4, 9], 10), [1, 4, 9]);
        // Short lists are sorted, long ones go through the bits; both
        // drop repeats.
        assert_eq!(in_group_order(&[900, 3, 900, 77], 1000), [3, 77, 900]);
        let almost: Vec<u32> = (0..200).filter(|&g| g != 50).chain([50, 199, 0]).collect();
        assert_eq!(in_group_order(&almost, 200), (0..200).collect::<Vec<u32>>());
        let across_words: Vec<u32> = [129, 63, 64, 0, 127, 128, 63].to_vec();
        assert_eq!(in_group_order(&across_words, 130), [0, 63, 64, 127, 128, 129]);
    }

    #[test]
    #[should_panic(expected = "group 10 of 10 selected")]
    fn a_group_past_the_end_is_refused() {
        in_group_order(&[3, 10, 2], 10);
    }

    fn all<const K: usize>(n: usize) -> Vec<[usize; K]> {
        let mut out = Vec::new();
        let mut next = first_combination::<K>(n);
        while let Some(index) = next {
            out.push(index);
            let mut following = index;
            next = next_combination(&mut following, n).then_some(following);
        }
        out
    }

    #[test]
    fn combinations_are_every_increasing_index_set_once_in_order() {
        assert_eq!(all::<2>(4), [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]);
        assert_eq!(all::<3>(4), [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]);
        assert_eq!(all::<1>(3), [[0], [1], [2]]);
        assert!(all::<2>(1).is_empty() && all::<2>(0).is_empty() && all::<3>(2).is_empty());
        assert_eq!(all::<4>(4), [[0, 1, 2, 3]]);
        for n in 0..12 {
            assert_eq!(all::<2>(n).len(), n * n.saturating_sub(1) / 2);
            let sets = all::<3>(n);
            assert!(sets.windows(2).all(|w| w[0] < w[1]), "lexicographic, no repeats");
            assert!(sets.iter().all(|s| s[0] < s[1] && s[1] < s[2] && s[2] < n));
        }
    }
}
