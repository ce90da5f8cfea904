//! `ChunkView`: one chunk of a query run, with its column slices and tick
//! information (the SIMD-friendly path).

use crate::query::fetch::QueryData;
use crate::query::filter::QueryFilter;
use crate::storage::archetype::Archetype;
use crate::storage::entity::Entity;
use crate::storage::tick::TickWindow;

/// One chunk of a query run: its entities, its column slices, and the
/// tick window of the run.
pub struct ChunkView<'w, Q: QueryData, F: QueryFilter> {
    archetype: &'w Archetype,
    chunk: usize,
    len: usize,
    data: Q::Fetch<'w>,
    filter: F::Fetch<'w>,
    all_pass: bool,
    window: TickWindow,
}

impl<'w, Q: QueryData, F: QueryFilter> ChunkView<'w, Q, F> {
    /// # Safety
    /// The caller holds the query's access to this chunk for `'w` and hands
    /// out no other view or item of it.
    pub(crate) unsafe fn new(
        archetype: &'w Archetype,
        data: Q::Cache,
        filter: F::Cache,
        chunk: usize,
        len: usize,
        window: TickWindow,
    ) -> Self {
        // SAFETY: forwarded contract.
        let data = unsafe { Q::fetch(data, archetype, chunk, window) };
        let filter = F::fetch(filter, archetype, chunk, window);
        ChunkView { archetype, chunk, len, data, filter, all_pass: F::ARCHETYPAL || F::all_rows_pass(&filter), window }
    }

    /// Live rows in the chunk.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the chunk has no rows (never true for views a query hands
    /// out).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk's index in its archetype.
    pub fn chunk_index(&self) -> usize {
        self.chunk
    }

    /// The archetype the chunk belongs to (its chunk ticks included).
    pub fn archetype(&self) -> &'w Archetype {
        self.archetype
    }

    /// The run's tick window.
    pub fn window(&self) -> TickWindow {
        self.window
    }

    /// When `component` was last written anywhere in this chunk (`None` if
    /// the archetype lacks it).
    pub fn changed_tick(&self, component: crate::ComponentId) -> Option<crate::Tick> {
        self.archetype.chunk_changed_tick(component, self.chunk)
    }

    /// When `component` was last added to a row of this chunk.
    pub fn added_tick(&self, component: crate::ComponentId) -> Option<crate::Tick> {
        self.archetype.chunk_added_tick(component, self.chunk)
    }

    /// Whether `component` was written in this chunk since the query's last
    /// run (the chunk-level test `Changed` uses).
    pub fn changed_since_last_run(&self, component: crate::ComponentId) -> bool {
        self.changed_tick(component).is_some_and(|t| self.window.contains(t))
    }

    /// The entities, in row order.
    pub fn entities(&self) -> &'w [Entity] {
        &self.archetype.chunk_entities(self.chunk)[..self.len]
    }

    /// Whether the filter passes every row (no row test needed).
    pub fn all_rows_pass(&self) -> bool {
        self.all_pass
    }

    /// Whether one row passes the filter. Rows out of range do not.
    pub fn row_passes(&self, row: usize) -> bool {
        // SAFETY: `row` is checked against the length first.
        row < self.len && (self.all_pass || unsafe { F::row_passes(&self.filter, row) })
    }

    /// The rows that pass the filter, in order.
    pub fn matching_rows(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len).filter(|&row| self.row_passes(row))
    }

    /// The whole chunk's columns as slices (all rows, filter or not).
    /// Mutable columns are stamped changed for the whole chunk in O(1).
    pub fn slices(&mut self) -> Q::Slices<'_> {
        // SAFETY: `&mut self` keeps these slices the only borrow of the
        // chunk's columns taken through this view.
        Q::shrink_slices(unsafe { Q::slices(&self.data, self.len) })
    }

    /// One row's item (marks only on write), or `None` past the end.
    /// Does not apply the filter.
    pub fn get(&mut self, row: usize) -> Option<Q::Item<'_>> {
        // SAFETY: the row is live, and `&mut self` keeps the item unique.
        (row < self.len).then(|| Q::shrink(unsafe { Q::item(&self.data, row) }))
    }

    /// The items of the rows that pass the filter.
    pub fn items(self) -> impl Iterator<Item = Q::Item<'w>> {
        let ChunkView { data, filter, all_pass, len, .. } = self;
        // SAFETY: rows are below `len`, each yielded once; the view is
        // consumed, so no other borrow through it remains.
        (0..len)
            .filter(move |&row| all_pass || unsafe { F::row_passes(&filter, row) })
            .map(move |row| unsafe { Q::item(&data, row) })
    }
}
