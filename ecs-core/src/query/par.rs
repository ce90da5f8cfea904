//! Parallel iteration: matching chunks (or row ranges of them, when there
//! are too few chunks to keep every thread busy) spread over rayon's pool.

use rayon::prelude::*;

use crate::query::fetch::{QueryData, ReadOnlyQueryData};
use crate::query::filter::QueryFilter;
use crate::query::iter::run_rows;
use crate::query::state::QueryState;
use crate::query::view::ChunkView;
use crate::storage::tick::TickWindow;
use crate::world::World;

impl<Q: QueryData, F: QueryFilter> QueryState<Q, F> {
    /// Lists the chunks that pass the chunk-level filter, counting skips.
    fn chunk_tasks(&mut self, world: &World, window: TickWindow) -> Vec<ChunkTask> {
        let mut tasks = Vec::new();
        self.walk_chunks(world, window, |matched, _, _, chunk, len, _| {
            tasks.push(ChunkTask { matched: matched as u32, chunk: chunk as u32, start: 0, end: len as u32 });
        });
        tasks
    }

    /// Runs `f` on every matching row, chunks spread over rayon's threads.
    /// When there are few chunks, chunks are split into row ranges so both
    /// cores get work.
    pub fn par_for_each_mut(&mut self, world: &mut World, f: impl Fn(Q::Item<'_>) + Send + Sync) {
        world.check_change_ticks();
        // SAFETY: `&mut World` is exclusive; tasks cover disjoint rows.
        unsafe { self.par_for_each_unchecked(world, f) }
    }

    /// Read-only form of [`QueryState::par_for_each_mut`].
    pub fn par_for_each(&mut self, world: &World, f: impl Fn(Q::Item<'_>) + Send + Sync)
    where
        Q: ReadOnlyQueryData,
    {
        // SAFETY: read-only data through a shared borrow.
        unsafe { self.par_for_each_unchecked(world, f) }
    }

    /// Parallel per-row iteration through a shared world borrow.
    ///
    /// # Safety
    /// As [`QueryState::iter_unchecked`].
    pub unsafe fn par_for_each_unchecked(&mut self, world: &World, f: impl Fn(Q::Item<'_>) + Send + Sync) {
        let window = self.begin(world);
        // SAFETY: forwarded contract.
        unsafe { self.par_for_each_in(world, window, f) }
    }

    /// # Safety
    /// As [`QueryState::iter_in`].
    pub(crate) unsafe fn par_for_each_in(
        &mut self,
        world: &World,
        window: TickWindow,
        f: impl Fn(Q::Item<'_>) + Send + Sync,
    ) {
        let mut tasks = self.chunk_tasks(world, window);
        split_tasks(&mut tasks);
        let archetypes = world.archetypes();
        let matched = &self.matched;
        // A task's next one in the list is, mostly, the one the same thread
        // runs next (rayon splits the list into contiguous halves): its
        // chunk, if it is another whole chunk of the same archetype, is
        // prefetched as the task runs, past the first `PREFETCH_AFTER`
        // tasks (as `walk_chunks` does).
        let ahead_of = |i: usize, task: &ChunkTask| {
            if i < crate::query::state::PREFETCH_AFTER {
                return None;
            }
            tasks
                .get(i + 1)
                .filter(|next| next.matched == task.matched && next.chunk != task.chunk && next.start == 0)
                .map(|next| next.chunk as usize)
        };
        let run = |(i, task): (usize, &ChunkTask)| {
            let m = &matched[task.matched as usize];
            let archetype = &archetypes[m.archetype.index()];
            let ahead = ahead_of(i, task);
            let mut f = &f;
            // SAFETY: the archetype matched and the chunk is in range; tasks
            // cover disjoint rows, so no row is fetched twice, and each task
            // marks into its own local before stamping the chunk atomically;
            // `ahead` is a chunk of the same archetype.
            unsafe {
                run_rows::<Q, F>(
                    archetype,
                    m,
                    task.chunk as usize,
                    task.start as usize,
                    task.end as usize,
                    ahead,
                    window,
                    &mut f,
                )
            };
        };
        if tasks.len() <= 1 {
            tasks.iter().enumerate().for_each(run);
        } else {
            tasks.par_iter().enumerate().for_each(run);
        }
    }

    /// Runs `f` on every matching chunk in parallel.
    pub fn par_for_each_chunk_mut(&mut self, world: &mut World, f: impl Fn(ChunkView<'_, Q, F>) + Send + Sync) {
        world.check_change_ticks();
        // SAFETY: `&mut World` is exclusive; each chunk is one task.
        unsafe { self.par_for_each_chunk_unchecked(world, f) }
    }

    /// Parallel per-chunk iteration through a shared world borrow.
    ///
    /// # Safety
    /// As [`QueryState::iter_unchecked`].
    pub unsafe fn par_for_each_chunk_unchecked<'w>(
        &mut self,
        world: &'w World,
        f: impl Fn(ChunkView<'w, Q, F>) + Send + Sync,
    ) {
        let window = self.begin(world);
        // SAFETY: forwarded contract.
        unsafe { self.par_for_each_chunk_in(world, window, f) }
    }

    /// # Safety
    /// As [`QueryState::iter_in`].
    pub(crate) unsafe fn par_for_each_chunk_in<'w>(
        &mut self,
        world: &'w World,
        window: TickWindow,
        f: impl Fn(ChunkView<'w, Q, F>) + Send + Sync,
    ) {
        let tasks = self.chunk_tasks(world, window);
        let archetypes = world.archetypes();
        let matched = &self.matched;
        tasks.par_iter().for_each(|task| {
            let m = &matched[task.matched as usize];
            let archetype = &archetypes[m.archetype.index()];
            // SAFETY: one task per chunk; the caller holds the access.
            f(unsafe { ChunkView::new(archetype, m.data, m.filter, task.chunk as usize, task.end as usize, window) });
        });
    }
}

#[derive(Copy, Clone, Debug)]
struct ChunkTask {
    matched: u32,
    chunk: u32,
    start: u32,
    end: u32,
}

/// Splits chunk tasks into row ranges when there are too few to keep every
/// thread busy.
fn split_tasks(tasks: &mut Vec<ChunkTask>) {
    let threads = rayon::current_num_threads();
    let wanted = threads * 8;
    if threads <= 1 || tasks.is_empty() || tasks.len() >= wanted {
        return;
    }
    let rows: u32 = tasks.iter().map(|t| t.end - t.start).sum();
    // Whole groups of 64 rows, so no two tasks share a block tick (a
    // filter reads a group's block ticks with one plain vector load).
    let piece = (rows as usize).div_ceil(wanted).next_multiple_of(64) as u32;
    let mut split = Vec::with_capacity(wanted + tasks.len());
    for t in tasks.iter() {
        let mut start = t.start;
        while start < t.end {
            let end = (start + piece).min(t.end);
            split.push(ChunkTask { start, end, ..*t });
            start = end;
        }
    }
    *tasks = split;
}
