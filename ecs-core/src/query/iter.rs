//! Per-row iteration: the `QueryIter` iterator and the internal loop with
//! loop-local chunk marks that `for_each_mut` and the parallel loops share.

use crate::query::fetch::QueryData;
use crate::query::filter::QueryFilter;
use crate::query::state::{ChunkStats, Matched};
use crate::storage::archetype::{Archetype, BLOCK_ROWS, BLOCK_SHIFT};
use crate::storage::tick::TickWindow;

/// Runs `f` on rows `start..end` of one chunk that pass the filter, with
/// block and chunk marks kept in a local: the ticks of the blocks (of 16
/// rows) the rows visited lie in are stamped if one of those rows was
/// written (for the whole range at once when every row passes, 64 rows at a
/// time when rows are tested), the chunk tick once at the end.
///
/// # Safety
/// The archetype matched, the chunk is in range, `end` is at most its
/// length, the caller holds the query's access to these rows, and no other
/// item of them is alive.
#[inline]
pub(crate) unsafe fn run_rows<Q: QueryData, F: QueryFilter>(
    archetype: &Archetype,
    m: &Matched<Q, F>,
    chunk: usize,
    start: usize,
    end: usize,
    window: TickWindow,
    f: &mut impl FnMut(Q::Item<'_>),
) {
    // SAFETY: forwarded contract.
    let mut data = unsafe { Q::fetch(m.data, archetype, chunk, window) };
    let filter = F::fetch(m.filter, archetype, chunk, window);
    let mut marks = Q::new_marks(&data);
    let marks_ptr = &raw mut marks;
    // SAFETY: `marks` lives until the guard below flushes it, `f` cannot
    // keep the items it is given (its argument's lifetime is higher-ranked),
    // and the loops below flush each block after visiting its rows.
    unsafe { Q::redirect_marks_by_block(&mut data, marks_ptr) };
    // Flushes the marks of the blocks being visited and of the chunk when
    // dropped: after the loop, or while a panic in `f` unwinds, so no block
    // or chunk tick ends up older than a row tick written before the panic.
    // It holds a copy of the fetch, so the loop's own `data` stays a local
    // that no store can alias.
    let mut flush =
        FlushMarks::<Q> { data, marks: marks_ptr, first: start >> BLOCK_SHIFT, span: 0, rows: 0, offset: 0 };
    if F::ARCHETYPAL || F::all_rows_pass(&filter) {
        // One pass over the rows; if one was written, every block they
        // cover is stamped (a loop that leaves some rows alone marks their
        // blocks as well: a false positive that costs a later reader one
        // look at 16 row ticks, never a wrong row).
        if start < end {
            // At most 128: a chunk holds at most `CHUNK_SIZE / 8` rows.
            flush.span = ((end - 1) >> BLOCK_SHIFT) - flush.first + 1;
            debug_assert!(flush.span <= 128);
        }
        for row in start..end {
            // SAFETY: `row` is live and yielded once.
            f(unsafe { Q::item(&data, row) });
        }
        flush.flush_blocks();
    } else {
        // 64 rows at a time: the rows that pass, then the blocks that held
        // them, stamped if one of those rows was written (a block among
        // them whose visited rows were all left alone is stamped as well:
        // a false positive that costs a later reader one look at 16 row
        // ticks, never a wrong row).
        let mut group = start;
        while group < end {
            let n = (end - group).min(64);
            // SAFETY: `group + n <= end`, within the chunk's length.
            let mask = unsafe { F::row_mask(&filter, group, n) };
            if mask != 0 {
                let first = group >> BLOCK_SHIFT;
                (flush.first, flush.rows, flush.offset) = (first, mask, group - (first << BLOCK_SHIFT));
                if mask == crate::storage::tick::low_bits(n) {
                    // Every row passes (clustered writes): a plain loop.
                    for row in group..group + n {
                        // SAFETY: as above.
                        f(unsafe { Q::item(&data, row) });
                    }
                } else {
                    let mut rows = mask;
                    while rows != 0 {
                        let row = group + rows.trailing_zeros() as usize;
                        rows &= rows - 1;
                        // SAFETY: as above.
                        f(unsafe { Q::item(&data, row) });
                    }
                }
                flush.flush_blocks();
            }
            group += n;
        }
    }
}

/// Which blocks hold a row of `rows`, bit `i` for block `i` counted from
/// the block of the rows' first, which is `offset` (< 16) rows into its
/// block.
#[inline]
fn touched_blocks(rows: u64, offset: usize) -> u32 {
    let lane = |i: u32| u32::from((rows >> (i * BLOCK_ROWS as u32)) as u16 != 0) << i;
    if offset == 0 {
        return lane(0) | lane(1) | lane(2) | lane(3);
    }
    // Up to 64 + 15 rows from the first block's start: five blocks.
    let wide = u128::from(rows) << offset;
    (0..5).fold(0, |blocks, i| blocks | u32::from((wide >> (i << BLOCK_SHIFT)) as u16 != 0) << i)
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
        let mut mask = unsafe { F::row_mask(filter, base, n) };
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
/// (see [`crate::query::change`]): the current block's when the loop moves
/// on, and the last block's and the chunk's when dropped, also when the
/// loop unwinds.
struct FlushMarks<'w, Q: QueryData> {
    data: Q::Fetch<'w>,
    /// The loop's marks; they outlive this guard (declared before it).
    marks: *mut Q::Marks,
    /// The rows the loop visits: every row of the `span` blocks from block
    /// `first` on when `span` is not 0, else bit `i` of `rows` for row
    /// `offset + i` counted from the start of block `first`.
    first: usize,
    span: usize,
    rows: u64,
    offset: usize,
}

impl<Q: QueryData> FlushMarks<'_, Q> {
    /// Stamps the blocks being visited if one of their rows was written.
    #[inline]
    fn flush_blocks(&mut self) {
        let (span, rows, offset) = (self.span, self.rows, self.offset);
        let blocks = move || {
            if span > 0 { u128::MAX >> (128 - span) } else { u128::from(touched_blocks(rows, offset)) }
        };
        // SAFETY: `marks` is the loop's, declared before this guard and so
        // alive; the closure could keep no item, so none that writes the
        // marks is alive; every row visited since the last flush is in
        // these blocks (a chunk has at most 128).
        unsafe { Q::flush_block_marks(&self.data, self.marks, self.first, blocks) };
    }
}

impl<Q: QueryData> Drop for FlushMarks<'_, Q> {
    fn drop(&mut self) {
        self.flush_blocks();
        // SAFETY: as in `flush_blocks`.
        Q::flush_marks(&self.data, unsafe { &*self.marks });
    }
}

/// The rows of one query run, chunk by chunk.
pub struct QueryIter<'w, 's, Q: QueryData, F: QueryFilter> {
    pub(crate) archetypes: &'w [Archetype],
    pub(crate) matched: std::slice::Iter<'s, Matched<Q, F>>,
    pub(crate) stats: &'s mut ChunkStats,
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
                self.stats.chunks_total += archetype.chunk_count() as u64;
                self.stats.entities += archetype.len() as u64;
                self.current = Some((archetype, m));
                self.chunk = 0;
                continue;
            };
            let count = archetype.chunk_count();
            let from = self.chunk;
            let chunk = F::next_passing_chunk(m.filter, archetype, from, count, self.window);
            self.stats.chunks_skipped += (chunk - from) as u64;
            if chunk >= count {
                self.current = None;
                continue;
            }
            self.chunk = chunk + 1;
            let len = archetype.chunk_len(chunk);
            if len == 0 {
                self.stats.chunks_skipped += 1;
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
                        self.mask = unsafe { F::row_mask(filter, self.row, n) };
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
