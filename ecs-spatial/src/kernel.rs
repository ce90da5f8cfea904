//! The distance kernel shared by the radius queries and all pairs: the
//! grid keeps its sorted positions a second time as structure-of-arrays
//! coordinates ([`Soa`]), and a query tests them in chunks of [`LANES`]
//! lanes, four at a time in glam's [`Vec4`] (SSE2 on every x86-64, NEON on
//! aarch64, plain scalar code elsewhere: glam picks). No `std::arch` and no
//! `unsafe` here: glam's safe API is the SIMD layer.
//!
//! Exactness: each lane computes `((dx * dx + dy * dy) + dz * dz) <= r2`
//! with `d = p - c` (vector operations are lane-wise IEEE operations), the
//! same operations in the same order as glam's
//! `Vec3::distance_squared` (2D points have `z = 0`, and adding `0 * 0` to a
//! sum of squares changes nothing), so a hit here is a hit of
//! [`GridPoint::distance_squared`](crate::GridPoint::distance_squared).

use glam::{Vec3, Vec4};

/// Lanes per chunk.
pub(crate) const LANES: usize = 8;

/// Sorted positions as three coordinate arrays, each padded with [`LANES`]
/// NaNs past the last point so a chunk may start at any slot (padding lanes
/// are masked out, and a NaN never passes a distance test anyway).
#[derive(Clone, Debug, Default)]
pub(crate) struct Soa {
    pub(crate) x: Vec<f32>,
    pub(crate) y: Vec<f32>,
    pub(crate) z: Vec<f32>,
}

impl Soa {
    /// Empties the arrays, keeping their buffers.
    pub(crate) fn clear(&mut self) {
        self.x.clear();
        self.y.clear();
        self.z.clear();
    }

    /// Sizes the arrays for `n` points plus the padding; the first `n`
    /// values are left to the caller.
    pub(crate) fn resize(&mut self, n: usize) {
        for v in [&mut self.x, &mut self.y, &mut self.z] {
            v.clear();
            v.resize(n + LANES, f32::NAN);
        }
    }

    /// Writes the padding after `n` points (the arrays must hold `n + LANES`).
    pub(crate) fn pad(&mut self, n: usize) {
        for v in [&mut self.x, &mut self.y, &mut self.z] {
            v[n..n + LANES].fill(f32::NAN);
        }
    }

    /// Point `slot`'s coordinates.
    #[inline(always)]
    pub(crate) fn set(&mut self, slot: usize, p: Vec3) {
        self.x[slot] = p.x;
        self.y[slot] = p.y;
        self.z[slot] = p.z;
    }

    /// Bytes reserved.
    pub(crate) fn capacity_bytes(&self) -> usize {
        (self.x.capacity() + self.y.capacity() + self.z.capacity()) * 4
    }

    /// The bit mask of the lanes of the chunk at `i` whose point lies within
    /// `sqrt(r2)` of `c` (padding and points past the end included: callers
    /// mask the lanes they own).
    ///
    /// Two [`Vec4`]s per coordinate: glam's SSE2 (or NEON, or scalar)
    /// vectors, so each step is one vector instruction per four lanes and
    /// the compare's mask comes out with one `movmskps`, all through glam's
    /// safe API (plain array code leaves the compiler shuffling lanes).
    #[inline(always)]
    pub(crate) fn chunk_mask(&self, i: usize, c: Vec3, r2: f32) -> u32 {
        let (Some(x), Some(y), Some(z)) =
            (self.x.get(i..i + LANES), self.y.get(i..i + LANES), self.z.get(i..i + LANES))
        else {
            return 0; // not reached: the arrays are padded by LANES
        };
        let (cx, cy, cz, r2) = (Vec4::splat(c.x), Vec4::splat(c.y), Vec4::splat(c.z), Vec4::splat(r2));
        let half = |h: usize| {
            let dx = Vec4::from_slice(&x[4 * h..]) - cx;
            let dy = Vec4::from_slice(&y[4 * h..]) - cy;
            let dz = Vec4::from_slice(&z[4 * h..]) - cz;
            (dx * dx + dy * dy + dz * dz).cmple(r2).bitmask()
        };
        half(0) | (half(1) << 4)
    }

    /// Appends the slots of `s..e` whose point lies within `sqrt(r2)` of
    /// `c` to `hits`, in order, handing full buffers to `flush`.
    ///
    /// Branch-free per lane: every lane's slot is written and the write
    /// position advances by the lane's hit bit, so a hit pattern costs no
    /// mispredicted branch (in dense regions about half the candidates hit).
    #[inline(always)]
    pub(crate) fn scan(&self, s: usize, e: usize, c: Vec3, r2: f32, hits: &mut Hits, flush: &mut impl FnMut(&[u32])) {
        let mut i = s;
        while i < e {
            let mut mask = self.chunk_mask(i, c, r2);
            if e - i < LANES {
                mask &= (1u32 << (e - i)) - 1;
            }
            if hits.len > HITS - LANES {
                flush(&hits.slots[..hits.len]);
                hits.len = 0;
            }
            // Four lanes at a time: the slots of the half's hits, in order,
            // from a table indexed by its 4-bit mask, written as one block;
            // the position advances by the half's hit count.
            let mut k = hits.len;
            for half in 0..2 {
                let m = ((mask >> (4 * half)) & 0xF) as usize;
                let base = (i + 4 * half) as u32;
                let lanes = COMPACT[m];
                let block: [u32; 4] = std::array::from_fn(|l| base + lanes[l]);
                hits.slots[k..k + 4].copy_from_slice(&block);
                k += COUNT[m] as usize;
            }
            hits.len = k;
            i += LANES;
        }
    }
}

/// For each 4-bit hit mask, the lanes of its set bits in order (the rest
/// of the block is filler, overwritten or past the end).
const COMPACT: [[u32; 4]; 16] = {
    let mut t = [[0u32; 4]; 16];
    let mut m = 0;
    while m < 16 {
        let mut n = 0;
        let mut l = 0;
        while l < 4 {
            if m >> l & 1 == 1 {
                t[m][n] = l as u32;
                n += 1;
            }
            l += 1;
        }
        m += 1;
    }
    t
};

/// Set bits of each 4-bit mask (no `popcnt` on baseline x86-64).
const COUNT: [u8; 16] = [0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4];

/// Slots of a query's hits, collected by [`Soa::scan`].
pub(crate) const HITS: usize = 256;

/// A buffer of hit slots (see [`Soa::scan`]).
pub(crate) struct Hits {
    pub(crate) slots: [u32; HITS],
    pub(crate) len: usize,
}

impl Hits {
    /// An empty buffer.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Hits { slots: [0; HITS], len: 0 }
    }

    /// Hands the collected slots to `flush` and empties the buffer.
    #[inline(always)]
    pub(crate) fn finish(&mut self, flush: &mut impl FnMut(&[u32])) {
        if self.len > 0 {
            flush(&self.slots[..self.len]);
            self.len = 0;
        }
    }
}
