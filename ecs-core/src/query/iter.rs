//! Per-row iteration: the `QueryIter` iterator and the internal loop with
//! loop-local chunk marks that `for_each_mut` and the parallel loops share.

use crate::query::fetch::QueryData;
use crate::query::filter::QueryFilter;
use crate::query::state::{ChunkStats, Matched};
use crate::storage::archetype::{Archetype, BLOCK_SHIFT};
use crate::storage::tick::TickWindow;

/// Runs `f` on rows `start..end` of one chunk that pass the filter, with
/// the chunk mark kept in a local and the chunk tick stamped once at the
/// end. When every row passes, the block marks too: if a row was written,
/// the ticks of the blocks (of 16 rows) of the range are stamped at the end;
/// when rows are tested, a written row stamps its own block, except in a
/// group of 64 rows that all pass, whose blocks are stamped after it.
///
/// With `ahead`, the next chunk of the same archetype the walk will visit,
/// the loop asks the cache for that chunk's values while it visits the
/// same rows here ([`QueryData::prefetch`], 16 rows at a time), wherever
/// it visits whole runs of rows: a chunk's columns are too short for the
/// hardware prefetcher to get ahead of the loop on its own.
///
/// # Safety
/// The archetype matched, the chunk is in range, `end` is at most its
/// length, the caller holds the query's access to these rows, and no other
/// item of them is alive; `ahead` is a chunk of the archetype.
#[inline]
#[allow(clippy::too_many_arguments, reason = "the per-chunk loop's inputs, passed by the two walks")]
pub(crate) unsafe fn run_rows<Q: QueryData, F: QueryFilter>(
    archetype: &Archetype,
    m: &Matched<Q, F>,
    chunk: usize,
    start: usize,
    end: usize,
    ahead: Option<usize>,
    window: TickWindow,
    f: &mut impl FnMut(Q::Item<'_>),
) {
    debug_assert!(ahead.is_none_or(|next| next < archetype.chunk_count()));
    // SAFETY: forwarded contract.
    let mut data = unsafe { Q::fetch(m.data, archetype, chunk, window) };
    // The next chunk's fetch, made when a run of rows first needs it (a
    // chunk of scattered rows never does).
    // SAFETY: `ahead` is a chunk of the matched archetype (the caller's
    // contract). Its fetch only computes column addresses and serves
    // prefetch hints: no row of it is read or written through it.
    let ahead_fetch = || ahead.map(|next| unsafe { Q::fetch(m.data, archetype, next, window) });
    let filter = F::fetch(m.filter, archetype, chunk, window);
    let mut marks = Q::new_marks(&data);
    let marks_ptr = &raw mut marks;
    let all_pass = F::ARCHETYPAL || F::all_rows_pass(&filter);
    // SAFETY: `marks` lives until the guard below flushes it, `f` cannot
    // keep the items it is given (its argument's lifetime is higher-ranked),
    // and, when items leave the blocks to the loop, the guard flushes the
    // blocks of every row visited.
    unsafe {
        if all_pass {
            Q::redirect_marks_by_block(&mut data, marks_ptr);
        } else {
            Q::redirect_marks(&mut data, marks_ptr);
        }
    }
    // Stamps the blocks of the rows visited (when the loop stamps them) and
    // the chunk when dropped, if a row was written: after the loop, or while
    // a panic in `f` unwinds, so no block or chunk tick ends up older than a
    // row tick written before the panic. It holds a copy of the fetch, so
    // the loop's own `data` stays a local that no store can alias.
    let mut flush = FlushMarks::<Q> { data, marks: marks_ptr, first: start >> BLOCK_SHIFT, run: 0 };
    if all_pass {
        // Every row is visited, and if one was written every block of the
        // range is stamped at the end: no per-row block store, so the loop
        // stays as tight as without blocks (a loop that leaves some rows
        // alone marks their blocks as well: a false positive that costs a
        // later reader one look at 16 row ticks, never a wrong row).
        if start < end {
            (flush.first, flush.run) = block_span(start, end);
        }
        // SAFETY: every row in `start..end` is live and visited once.
        unsafe { visit_run::<Q>(&data, ahead_fetch().as_ref(), start, end, f) };
    } else {
        // Rows tested 64 at a time; in a group where some rows fail, a
        // written row stamps its own block (one store more per written row,
        // exact, and nothing per group).
        let mut group = start;
        let mut ahead = None;
        while group < end {
            let n = (end - group).min(64);
            // SAFETY: `group + n <= end`, within the chunk's length.
            let mask = unsafe { group_mask::<F>(&filter, group, n) };
            if mask == crate::storage::tick::low_bits(n) {
                // Every row passes (clustered writes): a plain loop, and
                // the next chunk's rows are likely written alike.
                let next = *ahead.get_or_insert_with(ahead_fetch);
                // Its items leave their blocks to the loop, which stamps
                // the group's blocks once after it (one store fewer per
                // written row, as when every row of the chunk passes). The
                // marks of rows written before, which stamped their own
                // blocks, are settled first, so the stamp after the run
                // follows this run's writes alone; while the run is
                // visited, the guard covers its blocks, should `f` panic.
                let (first, run) = block_span(group, group + n);
                let mut by_block = data;
                // SAFETY: `marks` is the loop's and no item is alive
                // between rows; `by_block`'s items, like `data`'s, do not
                // outlive the loop, and every row they are fetched for is
                // in the `run` blocks from `first`, flushed below or by the
                // guard.
                unsafe {
                    Q::flush_block_marks(&data, marks_ptr, first, 0);
                    Q::redirect_marks_by_block(&mut by_block, marks_ptr);
                }
                (flush.first, flush.run) = (first, run);
                // SAFETY: as above.
                unsafe { visit_run::<Q>(&by_block, next.as_ref(), group, group + n, f) };
                // SAFETY: as above: the run's rows are in these blocks.
                unsafe { Q::flush_block_marks(&data, marks_ptr, first, run) };
                flush.run = 0;
            } else {
                let mut rows = mask;
                while rows != 0 {
                    let row = group + rows.trailing_zeros() as usize;
                    rows &= rows - 1;
                    // SAFETY: as above.
                    f(unsafe { Q::item(&data, row) });
                }
            }
            group += n;
        }
    }
}

/// The first block of rows `start..end` (not empty) and how many blocks
/// they touch: at most 128, as a chunk holds at most `CHUNK_SIZE / 8` rows.
#[inline(always)]
fn block_span(start: usize, end: usize) -> (usize, usize) {
    debug_assert!(start < end);
    let first = start >> BLOCK_SHIFT;
    let run = ((end - 1) >> BLOCK_SHIFT) - first + 1;
    debug_assert!(run <= 128);
    (first, run)
}

/// Visits rows `from..to` of `data`'s chunk, all of them, asking the cache
/// for the same rows of the next chunk (`ahead`, its fetch) [`PREFETCH_ROWS`]
/// at a time.
///
/// # Safety
/// The rows are live, the caller holds the access to them, and no other
/// item of them is alive.
#[inline(always)]
unsafe fn visit_run<'w, Q: QueryData>(
    data: &Q::Fetch<'w>,
    ahead: Option<&Q::Fetch<'w>>,
    from: usize,
    to: usize,
    f: &mut impl FnMut(Q::Item<'_>),
) {
    match ahead {
        Some(next) => {
            let mut row = from;
            while row < to {
                let stop = (row + PREFETCH_ROWS).min(to);
                Q::prefetch(next, row);
                // SAFETY: the caller's contract.
                unsafe { visit_rows::<Q>(data, row, stop, f) };
                row = stop;
            }
        }
        // The plain loop, as tight as before prefetching (the entry points
        // are `#[inline(always)]`: with this second copy of the caller's
        // closure the compiler no longer inlined them on its own, and kept
        // the closure's captured counters in memory).
        None => {
            // SAFETY: the caller's contract.
            unsafe { visit_rows::<Q>(data, from, to, f) };
        }
    }
}

/// Visits rows `from..to`, two per step. Rolled, the loop spent 4 of the
/// 12 instructions of a row of the suite's `simple_iter` on its two
/// counters (the row tick's index and the values' offset), its test and
/// its branch, and the compiler did not unroll it on its own (a row's body
/// with its tick store is past its size limit for that): two rows a step
/// cut the frame from 135k to 117k instructions (callgrind).
///
/// # Safety
/// As [`visit_run`].
#[inline(always)]
unsafe fn visit_rows<'w, Q: QueryData>(data: &Q::Fetch<'w>, from: usize, to: usize, f: &mut impl FnMut(Q::Item<'_>)) {
    let mut r = from;
    while r + 1 < to {
        // SAFETY: the caller's contract.
        f(unsafe { Q::item(data, r) });
        // SAFETY: the caller's contract.
        f(unsafe { Q::item(data, r + 1) });
        r += 2;
    }
    if r < to {
        // SAFETY: the caller's contract.
        f(unsafe { Q::item(data, r) });
    }
}

/// Rows per prefetch step of [`run_rows`]: a step of 64-byte values asks
/// for 16 lines, about what one core keeps in flight.
pub(crate) const PREFETCH_ROWS: usize = 16;

/// [`QueryFilter::row_mask`] of rows `start..start + n` (`n <= 64`), with a
/// whole group tested through the constant 64: that test compiles to
/// straight-line vector compares (no loop over a run-time length, no
/// checks of it), a fifth fewer instructions per scattered-change frame
/// than one call with `n`. Only the mask is duplicated; the rows are
/// visited by one copy of the caller's loop (a second copy of the visit
/// got the user's closure outlined: slower despite fewer instructions).
///
/// # Safety
/// `start + n` is at most the chunk's length.
#[inline(always)]
unsafe fn group_mask<F: QueryFilter>(filter: &F::Fetch<'_>, start: usize, n: usize) -> u64 {
    // SAFETY: the caller's contract.
    unsafe { if n == 64 { F::row_mask(filter, start, 64) } else { F::row_mask(filter, start, n) } }
}

/// Calls `f` with every row in `start..end` that passes the filter, in
/// order: the rows are tested 64 at a time ([`QueryFilter::row_mask`]) and
/// only the set bits are visited, so a chunk with a few changed rows costs a
/// few vector compares per 64 rows rather than a branch per row.
#[inline]
pub(crate) fn for_each_passing_row<F: QueryFilter>(
    filter: &F::Fetch<'_>,
    start: usize,
    end: usize,
    mut f: impl FnMut(usize),
) {
    let mut base = start;
    while base < end {
        let n = (end - base).min(64);
        // SAFETY: `base + n <= end`, which the callers keep within the
        // chunk's length.
        let mut mask = unsafe { group_mask::<F>(filter, base, n) };
        if mask == crate::storage::tick::low_bits(n) {
            // A whole block passes (clustered writes): a plain loop.
            (base..base + n).for_each(&mut f);
            base += n;
            continue;
        }
        while mask != 0 {
            let row = base + mask.trailing_zeros() as usize;
            mask &= mask - 1;
            f(row);
        }
        base += n;
    }
}

/// Stamps a loop's block and chunk marks into the block and chunk ticks
/// (see [`crate::query::change`]) when dropped, also when the loop
/// unwinds.
struct FlushMarks<'w, Q: QueryData> {
    data: Q::Fetch<'w>,
    /// The loop's marks; they outlive this guard (declared before it).
    marks: *mut Q::Marks,
    /// The blocks the loop stamps: the `run` blocks from `first` on (none
    /// when its items stamp their own).
    first: usize,
    run: usize,
}

impl<Q: QueryData> Drop for FlushMarks<'_, Q> {
    fn drop(&mut self) {
        // SAFETY: `marks` is the loop's, declared before this guard and so
        // alive; the closure could keep no item, so none that writes the
        // marks is alive; every row the loop visited with items that leave
        // their block to it is in these blocks.
        unsafe { Q::flush_block_marks(&self.data, self.marks, self.first, self.run) };
        // SAFETY: as above.
        Q::flush_marks(&self.data, unsafe { &*self.marks });
    }
}

/// The rows of one query run, chunk by chunk.
pub struct QueryIter<'w, 's, Q: QueryData, F: QueryFilter> {
    pub(crate) archetypes: &'w [Archetype],
    pub(crate) matched: std::slice::Iter<'s, Matched<Q, F>>,
    /// The query state's counts, which the counts below are added to when
    /// the iterator is dropped.
    pub(crate) stats: &'s mut ChunkStats,
    /// This run's counts so far, kept in the iterator until it is dropped: a
    /// count behind `stats` was reloaded after every row, since the items'
    /// tick stores go through pointers that could, for all the compiler
    /// knew, reach it (3 loads a row of a `for` loop, and the spills of the
    /// registers they took).
    pub(crate) counts: ChunkStats,
    pub(crate) window: TickWindow,
    pub(crate) current: Option<(&'w Archetype, Matched<Q, F>)>,
    pub(crate) chunk: usize,
    pub(crate) fetch: Option<(Q::Fetch<'w>, F::Fetch<'w>)>,
    pub(crate) row: usize,
    pub(crate) len: usize,
    pub(crate) all_pass: bool,
    /// Rows of the current block still to yield (bit `i`: row
    /// `mask_base + i`), when rows are tested ([`QueryFilter::row_mask`]).
    pub(crate) mask: u64,
    pub(crate) mask_base: usize,
}

impl<Q: QueryData, F: QueryFilter> Drop for QueryIter<'_, '_, Q, F> {
    fn drop(&mut self) {
        self.stats.add(self.counts);
    }
}

impl<'w, Q: QueryData, F: QueryFilter> QueryIter<'w, '_, Q, F> {
    /// Moves to the next chunk that passes the chunk-level filter. Returns
    /// false when none is left.
    #[inline]
    fn next_chunk(&mut self) -> bool {
        loop {
            let Some((archetype, m)) = self.current else {
                let m = match self.matched.next() {
                    Some(m) => *m,
                    None => return false,
                };
                let archetype = &self.archetypes[m.archetype.index()];
                self.counts.chunks_total += archetype.chunk_count() as u64;
                self.counts.entities += archetype.len() as u64;
                self.current = Some((archetype, m));
                self.chunk = 0;
                continue;
            };
            let count = archetype.chunk_count();
            let from = self.chunk;
            let chunk = F::next_passing_chunk(m.filter, archetype, from, count, self.window);
            self.counts.chunks_skipped += (chunk - from) as u64;
            if chunk >= count {
                self.current = None;
                continue;
            }
            self.chunk = chunk + 1;
            let len = archetype.chunk_len(chunk);
            if len == 0 {
                self.counts.chunks_skipped += 1;
                continue;
            }
            // SAFETY: matched archetype, chunk in range; the iterator's
            // creator holds the access and hands out each row once.
            let data = unsafe { Q::fetch(m.data, archetype, chunk, self.window) };
            let filter = F::fetch(m.filter, archetype, chunk, self.window);
            self.all_pass = F::ARCHETYPAL || F::all_rows_pass(&filter);
            self.fetch = Some((data, filter));
            self.row = 0;
            self.len = len;
            self.mask = 0;
            return true;
        }
    }
}

impl<'w, Q: QueryData, F: QueryFilter> Iterator for QueryIter<'w, '_, Q, F> {
    type Item = Q::Item<'w>;

    #[inline]
    fn next(&mut self) -> Option<Q::Item<'w>> {
        loop {
            if let Some((data, filter)) = &self.fetch {
                if self.all_pass {
                    if self.row < self.len {
                        let row = self.row;
                        self.row += 1;
                        // SAFETY: `row` is below the chunk's length and each
                        // row is yielded once per run.
                        return Some(unsafe { Q::item(data, row) });
                    }
                } else {
                    loop {
                        if self.mask != 0 {
                            let row = self.mask_base + self.mask.trailing_zeros() as usize;
                            self.mask &= self.mask - 1;
                            // SAFETY: as above.
                            return Some(unsafe { Q::item(data, row) });
                        }
                        if self.row >= self.len {
                            break;
                        }
                        let n = (self.len - self.row).min(64);
                        // SAFETY: `row + n` is at most the chunk's length.
                        self.mask = unsafe { group_mask::<F>(filter, self.row, n) };
                        self.mask_base = self.row;
                        self.row += n;
                    }
                }
                self.fetch = None;
            }
            if !self.next_chunk() {
                return None;
            }
        }
    }

    #[inline]
    fn fold<B, G>(mut self, init: B, mut g: G) -> B
    where
        G: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        let mut start = self.row;
        loop {
            if let Some((data, filter)) = self.fetch.take() {
                if self.all_pass {
                    for row in start..self.len {
                        // SAFETY: `row` is below the chunk's length and
                        // yielded once.
                        acc = g(acc, unsafe { Q::item(&data, row) });
                    }
                } else {
                    // What `next` left of its current block first.
                    let mut mask = std::mem::take(&mut self.mask);
                    while mask != 0 {
                        let row = self.mask_base + mask.trailing_zeros() as usize;
                        mask &= mask - 1;
                        // SAFETY: as above.
                        acc = g(acc, unsafe { Q::item(&data, row) });
                    }
                    let mut slot = Some(acc);
                    for_each_passing_row::<F>(&filter, start, self.len, |row| {
                        let a = slot.take().expect("put back after each call");
                        // SAFETY: as above.
                        slot = Some(g(a, unsafe { Q::item(&data, row) }));
                    });
                    acc = slot.expect("put back after each call");
                }
            }
            if !self.next_chunk() {
                return acc;
            }
            start = 0;
        }
    }
}
