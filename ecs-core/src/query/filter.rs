//! Query filters: `With`, `Without`, `Changed`, `Added`, `Or`, and tuples
//! (all must pass).
//!
//! Each filter answers at three levels, cheapest first: per archetype
//! (`matches`), per chunk from the chunk ticks alone (`chunk_may_pass`: a
//! `false` skips the chunk without touching its memory), and per row
//! (`row_passes`, the exact answer from row ticks).

use std::marker::PhantomData;

use crate::query::access::{Access, ConflictKind};
use crate::storage::archetype::{Archetype, BLOCK_ROWS, BLOCK_SHIFT, GROUP_BLOCKS};
use crate::storage::component::{Component, ComponentId, Components};
use crate::storage::tick::{AtomicTick, Tick, TickWindow, low_bits};

/// A query's filter part.
///
/// # Safety
/// `update_access` must record every component whose ticks or values the
/// filter reads; `matches` must hold only for archetypes with every column
/// `cache` looks up.
pub unsafe trait QueryFilter {
    /// Component ids, resolved once.
    type State: Copy + Send + Sync + 'static;
    /// Per matched archetype.
    type Cache: Copy + Send + Sync + 'static;
    /// Per chunk.
    type Fetch<'w>: Copy;
    /// True when the filter never rejects single rows (archetype-level only).
    const ARCHETYPAL: bool;

    /// Registers the components involved.
    fn init_state(components: &mut Components) -> Self::State;
    /// Records what the filter reads and the `With`/`Without` constraints.
    fn update_access(state: Self::State, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)>;
    /// Archetype-level test.
    fn matches(state: Self::State, archetype: &Archetype) -> bool;
    /// Column lookups for a matched archetype.
    fn cache(state: Self::State, archetype: &Archetype) -> Self::Cache;
    /// Chunk-level test from chunk ticks only. `false` means no row of the
    /// chunk can pass.
    fn chunk_may_pass(cache: Self::Cache, archetype: &Archetype, chunk: usize, window: TickWindow) -> bool;
    /// The first chunk at or after `from` (of `count`) that may hold passing
    /// rows, or `count` if none: the skip loop, from chunk ticks alone.
    #[inline]
    fn next_passing_chunk(
        cache: Self::Cache,
        archetype: &Archetype,
        from: usize,
        count: usize,
        window: TickWindow,
    ) -> usize {
        (from..count).find(|&c| Self::chunk_may_pass(cache, archetype, c, window)).unwrap_or(count)
    }
    /// Per-chunk state for row tests.
    fn fetch<'w>(cache: Self::Cache, archetype: &'w Archetype, chunk: usize, window: TickWindow) -> Self::Fetch<'w>;
    /// Whether every row of the chunk passes (no row test needed).
    fn all_rows_pass(fetch: &Self::Fetch<'_>) -> bool;
    /// Row-level test.
    ///
    /// # Safety
    /// `row` is below the chunk's length.
    unsafe fn row_passes(fetch: &Self::Fetch<'_>, row: usize) -> bool;
    /// Which of rows `start..start + n` pass (`n <= 64`), bit `i` for row
    /// `start + i`: the row test a block at a time, which the tick filters
    /// answer with vector compares (the loops walk the set bits).
    ///
    /// # Safety
    /// `start + n` is at most the chunk's length.
    #[inline]
    unsafe fn row_mask(fetch: &Self::Fetch<'_>, start: usize, n: usize) -> u64 {
        let mut mask = 0;
        for i in 0..n {
            // SAFETY: `start + i < start + n`, within the chunk's length.
            if unsafe { Self::row_passes(fetch, start + i) } {
                mask |= 1 << i;
            }
        }
        mask
    }
}

/// Matches entities that have `T` (without borrowing it).
pub struct With<T>(PhantomData<fn() -> T>);
/// Matches entities that lack `T`.
pub struct Without<T>(PhantomData<fn() -> T>);
/// Matches rows whose `T` was written since the query last ran.
pub struct Changed<T>(PhantomData<fn() -> T>);
/// Matches rows whose `T` was added since the query last ran.
pub struct Added<T>(PhantomData<fn() -> T>);
/// Matches rows that pass any of the filters in the tuple `F`.
pub struct Or<F>(PhantomData<fn() -> F>);
/// Matches every entity and names `T`, so a query with it also matches the
/// entities that queries skip unless they name `T`: `Allow<Disabled>` makes
/// a query see enabled and [`Disabled`] entities alike (without it a query
/// skips disabled ones; with `With<Disabled>` it sees only those).
///
/// ```
/// use ecs_core::{Allow, Component, Disabled, World};
/// #[derive(Component)]
/// struct Part;
/// let mut world = World::new();
/// world.spawn((Part,));
/// world.spawn((Part, Disabled));
/// assert_eq!(world.query::<&Part>().iter(&world).count(), 1);
/// assert_eq!(world.query_filtered::<&Part, Allow<Disabled>>().iter(&world).count(), 2);
/// ```
pub struct Allow<T>(PhantomData<fn() -> T>);

/// The [`QueryFilter`] of a filter decided per archetype alone (`With`,
/// `Without`, `Allow`): `$access` records it in the query's access and
/// `$matches(state, archetype)` says whether an archetype matches; every
/// row of a matched archetype passes.
macro_rules! archetypal_filter {
    ($name:ident, $access:ident, $matches:expr) => {
        // SAFETY: reads nothing; `cache` looks nothing up.
        unsafe impl<T: Component> QueryFilter for $name<T> {
            type State = ComponentId;
            type Cache = ();
            type Fetch<'w> = ();
            const ARCHETYPAL: bool = true;

            fn init_state(components: &mut Components) -> ComponentId {
                components.register::<T>()
            }
            fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
                access.$access(state);
                Ok(())
            }
            fn matches(state: ComponentId, archetype: &Archetype) -> bool {
                let matches: fn(ComponentId, &Archetype) -> bool = $matches;
                matches(state, archetype)
            }
            fn cache(_: ComponentId, _: &Archetype) {}
            #[inline]
            fn chunk_may_pass(_: (), _: &Archetype, _: usize, _: TickWindow) -> bool {
                true
            }
            #[inline]
            fn next_passing_chunk(_: (), _: &Archetype, from: usize, _: usize, _: TickWindow) -> usize {
                from
            }
            #[inline]
            fn fetch<'w>(_: (), _: &'w Archetype, _: usize, _: TickWindow) -> Self::Fetch<'w> {}
            #[inline]
            fn all_rows_pass(_: &()) -> bool {
                true
            }
            #[inline]
            unsafe fn row_passes(_: &(), _: usize) -> bool {
                true
            }
        }
    };
}

archetypal_filter!(With, add_with, |state, archetype| archetype.contains(state));
archetypal_filter!(Without, add_without, |state, archetype| !archetype.contains(state));
archetypal_filter!(Allow, add_allowed, |_, _| true);

/// Per-chunk state of a tick filter.
#[derive(Copy, Clone)]
#[doc(hidden)]
pub struct TickFetch<'w> {
    rows: *const u32,
    /// The chunk's first block tick, or null when the ticks tested have no
    /// block level (`Added`).
    blocks: *const AtomicTick,
    /// Whether every block of the chunk's first 64 rows was written: then
    /// changes are dense, and testing blocks would not skip any row ticks,
    /// so the chunk's rows are tested directly.
    dense: bool,
    capacity: usize,
    all: bool,
    window: TickWindow,
    _ticks: PhantomData<&'w AtomicTick>,
}

impl TickFetch<'_> {
    /// # Safety
    /// `row` is below the chunk's capacity.
    #[inline]
    unsafe fn row(&self, row: usize) -> bool {
        debug_assert!(row < self.capacity);
        // SAFETY: `rows` spans the chunk's capacity and the caller keeps
        // `row` below it. A plain read is race-free: the filter's access
        // records a read of the column, so no other thread writes these
        // ticks meanwhile, and a parallel task of the same query only writes
        // the ticks of its own rows.
        self.all || self.window.contains(Tick::new(unsafe { *self.rows.add(row) }))
    }

    /// # Safety
    /// `start + n` is at most the chunk's capacity.
    #[inline(always)]
    unsafe fn mask(&self, start: usize, n: usize) -> u64 {
        debug_assert!(start + n <= self.capacity && n <= 64);
        if self.all {
            return low_bits(n);
        }
        // SAFETY: `rows` spans the chunk's capacity and the caller keeps
        // `start + n` within it; plain reads are race-free as in `row`.
        let ticks = unsafe { std::slice::from_raw_parts(self.rows.add(start), n) };
        if self.blocks.is_null() || self.dense {
            return self.window.mask(ticks);
        }
        // Only blocks whose tick is inside the window can hold a passing
        // row (a block tick is never older than its rows' own ticks), so
        // scattered changes read one block tick per 16 rows and the row
        // ticks of the few blocks that were written.
        if start.is_multiple_of(64) && n > 0 {
            // A group (the last of a chunk may be short): its four block
            // ticks in one vector compare.
            // SAFETY: a group starting at a multiple of 64 rows has its four
            // block ticks inside the chunk's blocks (they come in whole
            // groups). A plain read is race-free: block ticks are written by
            // holders of write access to the column, which the filter's
            // read access excludes, except for parallel tasks of this
            // query, which split chunks at multiples of 64 rows and so
            // never touch this group's blocks.
            let group = unsafe { &*self.blocks.add(start >> BLOCK_SHIFT).cast::<[u32; GROUP_BLOCKS]>() };
            let all = low_bits(n.div_ceil(BLOCK_ROWS));
            let mut blocks = self.window.mask(group) & all;
            if blocks == 0 {
                return 0;
            }
            if blocks == all {
                // Every block was written to (dense changes): one pass.
                return self.window.mask(ticks);
            }
            let mut mask = 0;
            while blocks != 0 {
                let lo = blocks.trailing_zeros() as usize * BLOCK_ROWS;
                blocks &= blocks - 1;
                let rows = &ticks[lo..(lo + BLOCK_ROWS).min(n)];
                mask |= match <&[u32; BLOCK_ROWS]>::try_from(rows) {
                    Ok(block) => self.window.mask(block),
                    Err(_) => self.window.mask(rows),
                } << lo;
            }
            return mask;
        }
        self.mask_by_blocks(ticks, start)
    }

    /// [`TickFetch::mask`] of rows `start..start + ticks.len()` for any
    /// start: the row ranges of parallel tasks that split a chunk.
    #[inline(never)]
    fn mask_by_blocks(&self, ticks: &[u32], start: usize) -> u64 {
        if ticks.is_empty() {
            return 0;
        }
        let end = start + ticks.len();
        let mut mask = 0;
        for block in start >> BLOCK_SHIFT..=(end - 1) >> BLOCK_SHIFT {
            // SAFETY: `blocks` spans the chunk's blocks, which cover its
            // capacity, and `block` covers a row below `end`.
            let tick = unsafe { (*self.blocks.add(block)).load() };
            if self.window.contains(tick) {
                let lo = (block << BLOCK_SHIFT).max(start) - start;
                let hi = ((block + 1) << BLOCK_SHIFT).min(end) - start;
                mask |= self.window.mask(&ticks[lo..hi]) << lo;
            }
        }
        mask
    }
}

// SAFETY: reads only `T`'s ticks, recorded as a read of `T`.
unsafe impl<T: Component> QueryFilter for Changed<T> {
    type State = ComponentId;
    type Cache = usize;
    type Fetch<'w> = TickFetch<'w>;
    const ARCHETYPAL: bool = false;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        access.add_with(state);
        access.add_filter_read(state);
        Ok(())
    }
    fn matches(state: ComponentId, archetype: &Archetype) -> bool {
        archetype.contains(state)
    }
    fn cache(state: ComponentId, archetype: &Archetype) -> usize {
        archetype.column_of(state).expect("matched archetype holds the column")
    }
    #[inline]
    fn chunk_may_pass(cache: usize, archetype: &Archetype, chunk: usize, window: TickWindow) -> bool {
        window.contains(archetype.columns[cache].ticks.chunk_changed[chunk].load())
    }
    #[inline]
    fn next_passing_chunk(cache: usize, archetype: &Archetype, from: usize, count: usize, window: TickWindow) -> usize {
        let ticks = &archetype.columns[cache].ticks.chunk_changed[..count];
        ticks[from.min(count)..].iter().position(|t| window.contains(t.load())).map_or(count, |p| from + p)
    }
    #[inline]
    fn fetch<'w>(cache: usize, archetype: &'w Archetype, chunk: usize, window: TickWindow) -> TickFetch<'w> {
        let rows = archetype.row_ticks(cache, chunk);
        // Atomic loads: a parallel task of this query may be stamping the
        // blocks of its own rows meanwhile.
        let dense = rows.blocks[..GROUP_BLOCKS].iter().all(|t| window.contains(t.load()));
        TickFetch {
            rows: AtomicTick::slice_ptr(rows.changed, 0),
            blocks: rows.blocks.as_ptr(),
            dense,
            capacity: archetype.chunk_capacity(),
            all: window.contains(archetype.columns[cache].ticks.chunk_all_changed[chunk].load()),
            window,
            _ticks: PhantomData,
        }
    }
    #[inline]
    fn all_rows_pass(fetch: &TickFetch<'_>) -> bool {
        fetch.all
    }
    #[inline]
    unsafe fn row_passes(fetch: &TickFetch<'_>, row: usize) -> bool {
        // SAFETY: forwarded contract (`row` below the chunk's length).
        unsafe { fetch.row(row) }
    }
    #[inline(always)]
    unsafe fn row_mask(fetch: &TickFetch<'_>, start: usize, n: usize) -> u64 {
        // SAFETY: forwarded contract (within the chunk's length).
        unsafe { fetch.mask(start, n) }
    }
}

// SAFETY: reads only `T`'s ticks, recorded as a read of `T`.
unsafe impl<T: Component> QueryFilter for Added<T> {
    type State = ComponentId;
    type Cache = usize;
    type Fetch<'w> = TickFetch<'w>;
    const ARCHETYPAL: bool = false;

    fn init_state(components: &mut Components) -> ComponentId {
        components.register::<T>()
    }
    fn update_access(state: ComponentId, access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
        access.add_with(state);
        access.add_filter_read(state);
        Ok(())
    }
    fn matches(state: ComponentId, archetype: &Archetype) -> bool {
        archetype.contains(state)
    }
    fn cache(state: ComponentId, archetype: &Archetype) -> usize {
        archetype.column_of(state).expect("matched archetype holds the column")
    }
    #[inline]
    fn chunk_may_pass(cache: usize, archetype: &Archetype, chunk: usize, window: TickWindow) -> bool {
        window.contains(archetype.columns[cache].ticks.chunk_added[chunk].load())
    }
    #[inline]
    fn next_passing_chunk(cache: usize, archetype: &Archetype, from: usize, count: usize, window: TickWindow) -> usize {
        let ticks = &archetype.columns[cache].ticks.chunk_added[..count];
        ticks[from.min(count)..].iter().position(|t| window.contains(t.load())).map_or(count, |p| from + p)
    }
    #[inline]
    fn fetch<'w>(cache: usize, archetype: &'w Archetype, chunk: usize, window: TickWindow) -> TickFetch<'w> {
        TickFetch {
            rows: AtomicTick::slice_ptr(archetype.row_ticks(cache, chunk).added, 0),
            blocks: std::ptr::null(),
            dense: true,
            capacity: archetype.chunk_capacity(),
            all: false,
            window,
            _ticks: PhantomData,
        }
    }
    #[inline]
    fn all_rows_pass(fetch: &TickFetch<'_>) -> bool {
        fetch.all
    }
    #[inline]
    unsafe fn row_passes(fetch: &TickFetch<'_>, row: usize) -> bool {
        // SAFETY: forwarded contract (`row` below the chunk's length).
        unsafe { fetch.row(row) }
    }
    #[inline(always)]
    unsafe fn row_mask(fetch: &TickFetch<'_>, start: usize, n: usize) -> u64 {
        // SAFETY: forwarded contract (within the chunk's length).
        unsafe { fetch.mask(start, n) }
    }
}

macro_rules! tuple_filter {
    ($($name:ident $idx:tt),*) => {
        // SAFETY: each element records its own access.
        #[allow(clippy::unused_unit, reason = "the expansion for the empty tuple returns ()")]
        unsafe impl<$($name: QueryFilter),*> QueryFilter for ($($name,)*) {
            type State = ($($name::State,)*);
            type Cache = ($($name::Cache,)*);
            type Fetch<'w> = ($($name::Fetch<'w>,)*);
            const ARCHETYPAL: bool = true $( && $name::ARCHETYPAL )*;

            fn init_state(_components: &mut Components) -> Self::State {
                ($($name::init_state(_components),)*)
            }
            fn update_access(_state: Self::State, _access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
                $( $name::update_access(_state.$idx, _access)?; )*
                Ok(())
            }
            fn matches(_state: Self::State, _archetype: &Archetype) -> bool {
                true $( && $name::matches(_state.$idx, _archetype) )*
            }
            fn cache(_state: Self::State, _archetype: &Archetype) -> Self::Cache {
                ($($name::cache(_state.$idx, _archetype),)*)
            }
            #[inline]
            fn chunk_may_pass(_cache: Self::Cache, _archetype: &Archetype, _chunk: usize, _window: TickWindow) -> bool {
                true $( && $name::chunk_may_pass(_cache.$idx, _archetype, _chunk, _window) )*
            }
            #[inline]
            #[allow(unused_mut, reason = "the expansion for the empty tuple has nothing to narrow or widen")]
            fn next_passing_chunk(_cache: Self::Cache, _archetype: &Archetype, from: usize, _count: usize, _window: TickWindow) -> usize {
                // Every element must pass: jump to the furthest candidate
                // until all agree.
                let mut chunk = from;
                loop {
                    let mut next = chunk;
                    $( next = next.max($name::next_passing_chunk(_cache.$idx, _archetype, next, _count, _window)); )*
                    if next == chunk || next >= _count {
                        return next.min(_count);
                    }
                    chunk = next;
                }
            }
            #[inline]
            fn fetch<'w>(_cache: Self::Cache, _archetype: &'w Archetype, _chunk: usize, _window: TickWindow) -> Self::Fetch<'w> {
                ($($name::fetch(_cache.$idx, _archetype, _chunk, _window),)*)
            }
            #[inline]
            fn all_rows_pass(_fetch: &Self::Fetch<'_>) -> bool {
                true $( && $name::all_rows_pass(&_fetch.$idx) )*
            }
            #[inline]
            unsafe fn row_passes(_fetch: &Self::Fetch<'_>, _row: usize) -> bool {
                // SAFETY: forwarded contract.
                true $( && unsafe { $name::row_passes(&_fetch.$idx, _row) } )*
            }
            #[inline(always)]
            #[allow(unused_mut, reason = "the empty tuple has no element to narrow the mask")]
            unsafe fn row_mask(_fetch: &Self::Fetch<'_>, _start: usize, n: usize) -> u64 {
                let mut mask = low_bits(n);
                // Archetype-level elements pass every row.
                $( if !$name::ARCHETYPAL {
                    // SAFETY: forwarded contract.
                    mask &= unsafe { $name::row_mask(&_fetch.$idx, _start, n) };
                } )*
                mask
            }
        }

        // SAFETY: each element records its own access; `Or` never adds
        // `With`/`Without` constraints since only one branch need hold.
        #[allow(clippy::unused_unit, reason = "the expansion for the empty tuple returns ()")]
        unsafe impl<$($name: QueryFilter),*> QueryFilter for Or<($($name,)*)> {
            type State = ($($name::State,)*);
            type Cache = ($(Option<$name::Cache>,)*);
            type Fetch<'w> = ($(Option<$name::Fetch<'w>>,)*);
            const ARCHETYPAL: bool = true $( && $name::ARCHETYPAL )*;

            fn init_state(_components: &mut Components) -> Self::State {
                ($($name::init_state(_components),)*)
            }
            fn update_access(_state: Self::State, _access: &mut Access) -> Result<(), (ComponentId, ConflictKind)> {
                $(
                    let mut sub = Access::default();
                    $name::update_access(_state.$idx, &mut sub)?;
                    for &r in sub.reads() {
                        _access.add_filter_read(r);
                    }
                )*
                Ok(())
            }
            fn matches(_state: Self::State, _archetype: &Archetype) -> bool {
                false $( || $name::matches(_state.$idx, _archetype) )*
            }
            fn cache(_state: Self::State, _archetype: &Archetype) -> Self::Cache {
                ($( $name::matches(_state.$idx, _archetype).then(|| $name::cache(_state.$idx, _archetype)), )*)
            }
            #[inline]
            fn chunk_may_pass(_cache: Self::Cache, _archetype: &Archetype, _chunk: usize, _window: TickWindow) -> bool {
                false $( || _cache.$idx.is_some_and(|c| $name::chunk_may_pass(c, _archetype, _chunk, _window)) )*
            }
            #[inline]
            #[allow(unused_variables, unused_mut, reason = "the expansion for the empty tuple uses neither")]
            fn next_passing_chunk(_cache: Self::Cache, _archetype: &Archetype, from: usize, count: usize, _window: TickWindow) -> usize {
                // Any element may pass: the nearest candidate. Each element
                // scans only up to the nearest one found so far, so an
                // element that rarely passes is not rescanned to the end on
                // every call once an earlier one has found a nearer chunk.
                let mut next = count;
                $( if let Some(c) = _cache.$idx { next = $name::next_passing_chunk(c, _archetype, from, next, _window); } )*
                next
            }
            #[inline]
            fn fetch<'w>(_cache: Self::Cache, _archetype: &'w Archetype, _chunk: usize, _window: TickWindow) -> Self::Fetch<'w> {
                ($(
                    _cache.$idx
                        .filter(|&c| $name::chunk_may_pass(c, _archetype, _chunk, _window))
                        .map(|c| $name::fetch(c, _archetype, _chunk, _window)),
                )*)
            }
            #[inline]
            fn all_rows_pass(_fetch: &Self::Fetch<'_>) -> bool {
                false $( || _fetch.$idx.as_ref().is_some_and(|f| $name::all_rows_pass(f)) )*
            }
            #[inline]
            unsafe fn row_passes(_fetch: &Self::Fetch<'_>, _row: usize) -> bool {
                // SAFETY: forwarded contract.
                false $( || _fetch.$idx.as_ref().is_some_and(|f| unsafe { $name::row_passes(f, _row) }) )*
            }
            #[inline]
            #[allow(unused_mut, reason = "the empty tuple has no element to widen the mask")]
            unsafe fn row_mask(_fetch: &Self::Fetch<'_>, _start: usize, _n: usize) -> u64 {
                let mut mask = 0;
                $( if let Some(f) = &_fetch.$idx {
                    // An element present at this chunk passes the rows of
                    // its own mask (every row, for an archetype-level one).
                    mask |= if $name::ARCHETYPAL {
                        low_bits(_n)
                    } else {
                        // SAFETY: forwarded contract.
                        unsafe { $name::row_mask(f, _start, _n) }
                    };
                } )*
                mask
            }
        }
    };
}

tuple_filter!();
tuple_filter!(A 0);
tuple_filter!(A 0, B 1);
tuple_filter!(A 0, B 1, C 2);
tuple_filter!(A 0, B 1, C 2, D 3);
tuple_filter!(A 0, B 1, C 2, D 3, E 4);
tuple_filter!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_filter!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_filter!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

/// Marks an entity that queries skip unless they name `Disabled` (in their
/// data or a filter such as `With<Disabled>` or `Option<&Disabled>`):
/// insert it to pool or pause an entity without despawning it, remove it to
/// bring the entity back. Lookups by entity (`World::get`) still see it.
/// Disabled archetypes are not matched at all, so chunk skip counts are those
/// of the enabled entities.
///
/// ```
/// use ecs_core::{Component, Disabled, With, World};
/// #[derive(Component)]
/// struct Enemy;
/// let mut world = World::new();
/// let a = world.spawn((Enemy,));
/// world.spawn((Enemy, Disabled));
/// let mut enemies = world.query::<(ecs_core::Entity, &Enemy)>();
/// assert_eq!(enemies.iter(&world).map(|(e, _)| e).collect::<Vec<_>>(), vec![a]);
/// let mut pooled = world.query_filtered::<&Enemy, With<Disabled>>();
/// assert_eq!(pooled.iter(&world).count(), 1);
/// ```
#[derive(crate::Component, Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Disabled;

#[cfg(test)]
mod tests {
    use crate::{Added, Changed, Entity, Or, World};

    #[derive(crate::Component)]
    struct Big([u8; 200]);
    #[derive(crate::Component)]
    struct Tag;

    #[test]
    fn or_finds_the_same_chunks_whichever_element_is_sparse() {
        let mut world = World::new();
        let entities = world.spawn_batch((0..3000).map(|_| (Big([0; 200]),)));
        let mut sparse_first = world.query_filtered::<Entity, Or<(Added<Tag>, Changed<Big>)>>();
        let mut dense_first = world.query_filtered::<Entity, Or<(Changed<Big>, Added<Tag>)>>();
        sparse_first.iter(&world).count();
        dense_first.iter(&world).count();
        world.increment_change_tick();
        // Scattered writes over most chunks, one added tag near the end.
        let mut want: Vec<Entity> = entities.iter().copied().step_by(50).collect();
        for &e in &want {
            world.get_mut::<Big>(e).unwrap().0[0] = 1;
        }
        world.insert_one(entities[2990], Tag).unwrap();
        want.push(entities[2990]);
        want.sort();
        world.increment_change_tick();
        for (name, mut got) in [
            ("sparse first", sparse_first.iter(&world).collect::<Vec<_>>()),
            ("dense first", dense_first.iter(&world).collect::<Vec<_>>()),
        ] {
            got.sort();
            assert_eq!(got, want, "{name}");
        }
        assert_eq!(sparse_first.stats(), dense_first.stats());
        assert!(sparse_first.stats().chunks_visited() > 1);
    }
}
