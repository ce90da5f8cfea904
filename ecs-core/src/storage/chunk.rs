//! 16 KiB chunks: the raw memory blocks that rows live in, and the layout
//! rules that place one contiguous column per component inside them.
//!
//! A chunk is `CHUNK_SIZE` bytes aligned to at least `CHUNK_ALIGN`. The entity
//! column sits at offset 0; each component column follows, aligned to
//! `max(align_of::<T>(), CHUNK_ALIGN)` so every column starts on a cache line.
//! Capacity is the largest row count for which everything fits. Zero-sized
//! components take no bytes.

use std::alloc::Layout;
use std::ptr::NonNull;

use crate::storage::entity::Entity;

/// Bytes in one chunk.
pub const CHUNK_SIZE: usize = 16 * 1024;

/// Minimum alignment of a chunk and of each of its columns.
pub const CHUNK_ALIGN: usize = 64;

/// Where each column of an archetype sits inside its chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ChunkLayout {
    /// Rows per chunk.
    pub capacity: usize,
    /// Byte offset of each component column, in the archetype's column order.
    pub offsets: Vec<usize>,
    /// Layout of the chunk allocation itself.
    pub block: Layout,
}

const fn align_up(value: usize, align: usize) -> usize {
    (value + align - 1) & !(align - 1)
}

impl ChunkLayout {
    /// Places columns of the given layouts. `None` when not one row fits.
    pub(crate) fn new(columns: &[Layout]) -> Option<ChunkLayout> {
        let row_bytes = size_of::<Entity>() + columns.iter().map(Layout::size).sum::<usize>();
        let max_align = columns.iter().map(Layout::align).fold(CHUNK_ALIGN, usize::max);
        let block = Layout::from_size_align(CHUNK_SIZE, max_align).ok()?;
        let mut capacity = CHUNK_SIZE / row_bytes;
        let mut offsets = Vec::with_capacity(columns.len());
        while capacity > 0 {
            offsets.clear();
            let mut end = size_of::<Entity>() * capacity;
            for column in columns {
                if column.size() == 0 {
                    offsets.push(0);
                    continue;
                }
                let start = align_up(end, column.align().max(CHUNK_ALIGN));
                offsets.push(start);
                end = start + column.size() * capacity;
            }
            if end <= CHUNK_SIZE {
                return Some(ChunkLayout { capacity, offsets, block });
            }
            capacity -= 1;
        }
        None
    }

    /// Bytes one row needs, with the column alignment padding spread over a
    /// single row (what the error message reports when nothing fits).
    pub(crate) fn single_row_bytes(columns: &[Layout]) -> usize {
        let mut end = size_of::<Entity>();
        for column in columns.iter().filter(|c| c.size() > 0) {
            end = align_up(end, column.align().max(CHUNK_ALIGN)) + column.size();
        }
        end
    }
}

/// One chunk's memory and its live row count.
///
/// The chunk does not know its columns' types; the owning archetype drops
/// values before the chunk is freed.
pub(crate) struct Chunk {
    data: NonNull<u8>,
    block: Layout,
    pub(crate) len: u32,
}

// SAFETY: a chunk is plain memory owned by exactly one archetype. Rows are
// only written through `&mut World`, or through a query whose access set was
// checked for conflicts, so sending or sharing the handle between threads
// cannot create unsynchronised access by itself.
unsafe impl Send for Chunk {}
// SAFETY: see the `Send` impl above; shared access only hands out raw
// pointers whose use is governed by the query access rules.
unsafe impl Sync for Chunk {}

/// Freed blocks of the standard layout kept for reuse, so a game that
/// despawns and respawns (or drops and rebuilds worlds) does not hand memory
/// back to the OS and fault it in again.
struct BlockPool {
    blocks: Vec<NonNull<u8>>,
    limit: usize,
}

// SAFETY: the pool only holds unused, uniquely owned blocks.
unsafe impl Send for BlockPool {}

static POOL: std::sync::Mutex<BlockPool> =
    std::sync::Mutex::new(BlockPool { blocks: Vec::new(), limit: DEFAULT_POOL_BLOCKS });

/// Blocks the pool keeps by default: 16 MiB.
pub const DEFAULT_POOL_BLOCKS: usize = 1024;

/// Whether freed blocks go to the pool. The address-sanitizer run builds with
/// `--cfg ecs_no_chunk_pool` so every chunk is really freed and a stale
/// pointer into a dropped chunk is reported instead of reading a recycled
/// block.
const POOLING: bool = !cfg!(ecs_no_chunk_pool);

fn standard_block() -> Layout {
    Layout::from_size_align(CHUNK_SIZE, CHUNK_ALIGN).expect("valid chunk layout")
}

impl BlockPool {
    /// Takes the block given back last, if any.
    fn take(&mut self) -> Option<NonNull<u8>> {
        self.blocks.pop()
    }

    /// Keeps `block` for reuse if below the limit; otherwise hands it back
    /// for the caller to free.
    fn give(&mut self, block: NonNull<u8>) -> Option<NonNull<u8>> {
        if self.blocks.len() < self.limit {
            self.blocks.push(block);
            None
        } else {
            Some(block)
        }
    }

    /// Sets the limit and returns the blocks beyond it, for the caller to
    /// free.
    fn set_limit(&mut self, blocks: usize) -> Vec<NonNull<u8>> {
        self.limit = blocks;
        let keep = self.blocks.len().min(blocks);
        self.blocks.split_off(keep)
    }
}

/// Frees a block of the standard layout.
///
/// # Safety
/// `block` was allocated with [`standard_block`] and nobody else owns it.
unsafe fn free_block(block: NonNull<u8>) {
    // SAFETY: forwarded contract.
    unsafe { std::alloc::dealloc(block.as_ptr(), standard_block()) }
}

/// Sets how many free 16 KiB blocks the process-wide chunk pool keeps for
/// reuse (default [`DEFAULT_POOL_BLOCKS`]); extra blocks are freed now.
pub fn set_chunk_pool_limit(blocks: usize) {
    let extra = POOL.lock().unwrap_or_else(|e| e.into_inner()).set_limit(blocks);
    for block in extra {
        // SAFETY: pooled blocks were allocated with the standard layout and
        // are owned by nobody else.
        unsafe { free_block(block) }
    }
}

/// Free blocks currently held by the chunk pool.
pub fn chunk_pool_len() -> usize {
    POOL.lock().unwrap_or_else(|e| e.into_inner()).blocks.len()
}

impl Chunk {
    pub(crate) fn new(block: Layout) -> Chunk {
        debug_assert!(block.size() > 0);
        if POOLING && block == standard_block() {
            let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(data) = pooled {
                return Chunk { data, block, len: 0 };
            }
        }
        // SAFETY: `block` has a non-zero size (CHUNK_SIZE).
        let raw = unsafe { std::alloc::alloc(block) };
        let Some(data) = NonNull::new(raw) else { std::alloc::handle_alloc_error(block) };
        Chunk { data, block, len: 0 }
    }

    /// Base address of the block. Columns are at `base + offset`.
    #[inline]
    pub(crate) fn base(&self) -> *mut u8 {
        self.data.as_ptr()
    }

    /// The entity column.
    #[inline]
    pub(crate) fn entities_ptr(&self) -> *mut Entity {
        self.data.as_ptr().cast::<Entity>()
    }

    /// The live entities of this chunk.
    #[inline]
    pub(crate) fn entities(&self) -> &[Entity] {
        // SAFETY: rows `0..len` of the entity column are initialised, the
        // column starts at offset 0 of a 64-byte-aligned block, and entity
        // rows are only written through `&mut` access to the archetype.
        unsafe { std::slice::from_raw_parts(self.entities_ptr(), self.len as usize) }
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if POOLING && self.block == standard_block() {
            let refused = POOL.lock().unwrap_or_else(|e| e.into_inner()).give(self.data);
            if let Some(block) = refused {
                // SAFETY: a standard-layout block allocated in `Chunk::new`
                // (or taken from the pool), owned by this chunk alone.
                unsafe { free_block(block) }
            }
            return;
        }
        // SAFETY: `data` was allocated in `Chunk::new` with `block`.
        unsafe { std::alloc::dealloc(self.data.as_ptr(), self.block) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_and_are_aligned() {
        let cols = [Layout::new::<[f32; 16]>(), Layout::new::<[f32; 3]>(), Layout::new::<()>()];
        let l = ChunkLayout::new(&cols).unwrap();
        assert!(l.capacity > 100);
        assert_eq!(l.offsets[0] % 64, 0);
        assert_eq!(l.offsets[1] % 64, 0);
        assert!(l.offsets[1] + 12 * l.capacity <= CHUNK_SIZE);
        // one more row would not fit
        let more = l.capacity + 1;
        let end = align_up(align_up(8 * more, 64) + 64 * more, 64) + 12 * more;
        assert!(end > CHUNK_SIZE);
    }

    /// A pool of its own (not the process-wide one other tests use): blocks
    /// come back last in, first out; beyond the limit they are refused; a
    /// lower limit hands back the extra blocks.
    #[test]
    fn pool_reuses_blocks_up_to_its_limit() {
        let alloc = || {
            // SAFETY: the standard layout has a non-zero size.
            NonNull::new(unsafe { std::alloc::alloc(standard_block()) }).expect("allocation")
        };
        let mut pool = BlockPool { blocks: Vec::new(), limit: 2 };
        let (a, b, c) = (alloc(), alloc(), alloc());
        assert_eq!(pool.give(a), None);
        assert_eq!(pool.give(b), None);
        assert_eq!(pool.give(c), Some(c), "a third block is over the limit");
        assert_eq!(pool.take(), Some(b));
        assert_eq!(pool.give(b), None);
        let extra = pool.set_limit(1);
        assert_eq!(extra, vec![b]);
        assert_eq!(pool.blocks, vec![a]);
        assert_eq!(pool.give(b), Some(b), "the new limit holds");
        assert_eq!(pool.take(), Some(a));
        assert_eq!(pool.take(), None);
        for block in [a, b, c] {
            // SAFETY: each block was allocated above with the standard
            // layout and is no longer in the pool.
            unsafe { free_block(block) }
        }
    }

    #[test]
    fn tags_only_fit_many_rows() {
        let l = ChunkLayout::new(&[Layout::new::<()>()]).unwrap();
        assert_eq!(l.capacity, CHUNK_SIZE / 8);
    }

    #[test]
    fn too_large_is_none() {
        assert!(ChunkLayout::new(&[Layout::new::<[u8; CHUNK_SIZE]>()]).is_none());
        assert!(ChunkLayout::new(&[Layout::new::<[u8; CHUNK_SIZE - 64]>()]).is_some());
    }

    #[test]
    fn over_aligned_components_raise_block_alignment() {
        #[repr(align(256))]
        struct Big(
            #[allow(dead_code, reason = "the value is never read: it gives the type its size or its destructor")] u8,
        );
        let l = ChunkLayout::new(&[Layout::new::<Big>()]).unwrap();
        assert_eq!(l.block.align(), 256);
        assert_eq!(l.offsets[0] % 256, 0);
    }
}
