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

use crate::entity::Entity;

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

/// Sets how many free 16 KiB blocks the process-wide chunk pool keeps for
/// reuse (default [`DEFAULT_POOL_BLOCKS`]); extra blocks are freed now.
pub fn set_chunk_pool_limit(blocks: usize) {
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    pool.limit = blocks;
    while pool.blocks.len() > blocks {
        if let Some(block) = pool.blocks.pop() {
            // SAFETY: pooled blocks were allocated with the standard layout
            // and are owned by nobody else.
            unsafe { std::alloc::dealloc(block.as_ptr(), standard_block()) }
        }
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
            let pooled = POOL.lock().unwrap_or_else(|e| e.into_inner()).blocks.pop();
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
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            if pool.blocks.len() < pool.limit {
                pool.blocks.push(self.data);
                return;
            }
        }
        // SAFETY: `data` was allocated in `Chunk::new` (or taken from the
        // pool, which holds blocks of the standard layout) with `block`.
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

    #[test]
    fn pool_recycles_blocks_within_its_limit() {
        let layout = standard_block();
        let a = Chunk::new(layout);
        let addr = a.base();
        drop(a);
        // The freed block is reused (tests run in parallel, so another
        // thread may take it first; only check when it is ours).
        let b = Chunk::new(layout);
        if b.base() == addr {
            assert_eq!(b.len, 0);
        }
        drop(b);
        set_chunk_pool_limit(0);
        assert_eq!(chunk_pool_len(), 0);
        set_chunk_pool_limit(DEFAULT_POOL_BLOCKS);
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
        struct Big(#[allow(dead_code)] u8);
        let l = ChunkLayout::new(&[Layout::new::<Big>()]).unwrap();
        assert_eq!(l.block.align(), 256);
        assert_eq!(l.offsets[0] % 256, 0);
    }
}
