//! Cached archetype edges: for each (source archetype, bundle type) that was
//! inserted or removed, the destination archetype and the full column
//! mapping, so a structural change is one hash lookup and a straight copy.

use std::any::TypeId;

use smallvec::SmallVec;

use crate::storage::archetype::{Archetype, ArchetypeId};
use crate::storage::component::{ComponentId, TypeIdMap};

/// Edges of one archetype keyed by bundle type: a short list searched
/// linearly (most archetypes have a handful of edges, and comparing a few
/// `TypeId`s beats hashing one), spilling into a hash map past 8 entries.
#[derive(Debug, Default)]
pub(crate) struct EdgeMap {
    few: SmallVec<[(TypeId, u32); 4]>,
    many: TypeIdMap<u32>,
}

impl EdgeMap {
    const FEW: usize = 8;

    #[inline]
    pub(crate) fn get(&self, key: &TypeId) -> Option<u32> {
        // Most archetypes have one edge per bundle they met: the first is
        // tested without setting up the search.
        if let Some(&(k, plan)) = self.few.first()
            && k == *key
        {
            return Some(plan);
        }
        if let Some(&(_, plan)) = self.few.iter().find(|(k, _)| k == key) {
            return Some(plan);
        }
        if self.many.is_empty() { None } else { self.many.get(key).copied() }
    }

    pub(crate) fn insert(&mut self, key: TypeId, plan: u32) {
        if self.few.len() < Self::FEW {
            self.few.push((key, plan));
        } else {
            self.many.insert(key, plan);
        }
    }
}

/// A column both ends of a move hold, with what the move needs of it in
/// one place (no lookup of either archetype's column per move).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SharedColumn {
    /// Column index in the source.
    pub(crate) src: u32,
    /// Column index in the destination.
    pub(crate) dst: u32,
    /// Byte offset of the column in a source chunk.
    pub(crate) src_offset: u32,
    /// Byte offset of the column in a destination chunk.
    pub(crate) dst_offset: u32,
    /// Bytes per value (0 for a tag).
    pub(crate) size: u32,
}

/// How one bundle insert or remove moves a row.
#[derive(Debug, Clone)]
pub(crate) struct MovePlan {
    /// Where the row goes (equal to the source when an insert only
    /// replaces values).
    pub(crate) dst: ArchetypeId,
    /// The components both hold.
    pub(crate) shared: Box<[SharedColumn]>,
    /// Destination columns the source lacks.
    pub(crate) fresh: Box<[u32]>,

    /// Per bundle element: its column in the destination (insert) or in the
    /// source (remove), and for inserts its column in the source if the
    /// value already existed there (it is replaced, not added).
    pub(crate) bundle: Box<[(u32, Option<u32>)]>,
    /// Whether an insert along this plan replaces a value whose type has a
    /// destructor (then the insert guards against that destructor
    /// panicking; otherwise it takes the plain path).
    pub(crate) drops_replaced: bool,
}

impl MovePlan {
    /// The plan for moving rows of `src` to `dst`; `bundle` lists the
    /// bundle's components in tuple order and `insert` says which way.
    pub(crate) fn new(src: &Archetype, dst: &Archetype, bundle: &[ComponentId], insert: bool) -> MovePlan {
        let mut shared = Vec::new();
        for (scol, &component) in src.components().iter().enumerate() {
            if let Some(dcol) = dst.column_of(component) {
                let (s, d) = (&src.columns[scol], &dst.columns[dcol]);
                debug_assert_eq!(s.size, d.size);
                // Offsets and sizes are below `CHUNK_SIZE`, so they fit.
                shared.push(SharedColumn {
                    src: scol as u32,
                    dst: dcol as u32,
                    src_offset: s.offset as u32,
                    dst_offset: d.offset as u32,
                    size: s.size as u32,
                });
            }
        }
        let fresh =
            (0..dst.components().len()).filter(|&d| !src.contains(dst.components()[d])).map(|d| d as u32).collect();
        let bundle: Box<[(u32, Option<u32>)]> = bundle
            .iter()
            .map(|&c| {
                if insert {
                    let d = dst.column_of(c).expect("destination holds the inserted bundle") as u32;
                    (d, src.column_of(c).map(|s| s as u32))
                } else {
                    (src.column_of(c).expect("source holds the removed bundle") as u32, None)
                }
            })
            .collect();
        let drops_replaced = bundle.iter().any(|&(_, existing): &(u32, Option<u32>)| {
            existing.is_some_and(|s| src.columns[s as usize].drop.is_some())
        });
        MovePlan { dst: dst.id(), shared: shared.into(), fresh, bundle, drops_replaced }
    }
}

/// Copies one value of `size` bytes between non-overlapping places, without
/// a `memcpy` call for the common small sizes.
///
/// # Safety
/// `src` and `dst` are valid for `size` bytes and do not overlap.
#[inline]
pub(crate) unsafe fn copy_value(src: *const u8, dst: *mut u8, size: usize) {
    // SAFETY: the caller guarantees both ranges; `[u8; N]` has alignment 1,
    // so each arm is a plain unaligned copy of exactly `size` bytes.
    // Tested in turn rather than through a jump table: the common sizes
    // cost a compare or two.
    unsafe {
        if size == 4 {
            dst.cast::<[u8; 4]>().write(src.cast::<[u8; 4]>().read());
        } else if size == 8 {
            dst.cast::<[u8; 8]>().write(src.cast::<[u8; 8]>().read());
        } else if size == 12 {
            dst.cast::<[u8; 12]>().write(src.cast::<[u8; 12]>().read());
        } else if size == 16 {
            dst.cast::<[u8; 16]>().write(src.cast::<[u8; 16]>().read());
        } else {
            std::ptr::copy_nonoverlapping(src, dst, size);
        }
    }
}
