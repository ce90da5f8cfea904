//! The distance kernel shared by the radius queries and all pairs: the
//! grid keeps its sorted positions as structure-of-arrays coordinates
//! ([`Soa`]; the only copy, read back as points by
//! [`GridPositions`](crate::GridPositions)), and a query tests them in chunks of [`LANES`]
//! lanes, four at a time in glam's [`Vec4`] (SSE2 on every x86-64, NEON on
//! aarch64, plain scalar code elsewhere: glam picks), or, in the batch
//! queries and all pairs on x86-64 CPUs with AVX2 (the `simd` feature, on
//! by default), eight at a time through pulp's safe AVX intrinsics, chosen
//! at run time (see [`Lanes`]). No `unsafe` here: glam's and pulp's safe
//! APIs are the SIMD layer.
//!
//! Exactness: each lane computes `((dx * dx + dy * dy) + dz * dz) <= r2`
//! with `d = p - c` (vector operations are lane-wise IEEE operations), the
//! same operations in the same order as glam's
//! `Vec3::distance_squared` (2D points have `z = 0`, and adding `0 * 0` to a
//! sum of squares changes nothing), so a hit here is a hit of
//! [`GridPoint::distance_squared`](crate::GridPoint::distance_squared).

use std::ops::Range;

use glam::{Vec3, Vec4};

/// Lanes per chunk.
pub(crate) const LANES: usize = 8;

/// Points [`Candidates::gather`] copies per step: two chunks, so the rows
/// of a typical scan box (a handful of cells of a few points each) take one
/// step, and the step loop's exit is the same branch outcome row after row.
const COPY: usize = 2 * LANES;

/// Sorted positions as three coordinate arrays, each padded with [`COPY`]
/// NaNs past the last point so a chunk or a gather step may start at any
/// slot (padding lanes are masked out, and a NaN never passes a distance
/// test anyway).
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
            v.resize(n + COPY, f32::NAN);
        }
    }

    /// Writes the padding after `n` points (the arrays must hold `n + COPY`).
    pub(crate) fn pad(&mut self, n: usize) {
        for v in [&mut self.x, &mut self.y, &mut self.z] {
            v[n..n + COPY].fill(f32::NAN);
        }
    }

    /// Point `slot`'s coordinates.
    #[inline(always)]
    pub(crate) fn set(&mut self, slot: usize, p: Vec3) {
        self.x[slot] = p.x;
        self.y[slot] = p.y;
        self.z[slot] = p.z;
    }

    /// Point `slot`'s coordinates.
    #[inline(always)]
    pub(crate) fn point(&self, slot: usize) -> Vec3 {
        Vec3::new(self.x[slot], self.y[slot], self.z[slot])
    }

    /// Bytes reserved.
    pub(crate) fn capacity_bytes(&self) -> usize {
        (self.x.capacity() + self.y.capacity() + self.z.capacity()) * 4
    }

    /// The bit mask of the lanes of the chunk at `i` whose point lies within
    /// `sqrt(r2)` of `c` (padding and points past the end included: callers
    /// mask the lanes they own), through the [`Portable`] kernel (the single
    /// queries are not dispatched: a few chunks each).
    #[inline(always)]
    pub(crate) fn chunk_mask(&self, i: usize, c: Vec3, r2: f32) -> u32 {
        let (Some(x), Some(y), Some(z)) = (array_at(&self.x, i), array_at(&self.y, i), array_at(&self.z, i)) else {
            return 0; // not reached: the arrays are padded by COPY >= LANES
        };
        Portable.block_mask(x, y, z, Portable.centre(c, r2))
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

/// The points a batch query's unit (one occupied cell) may reach, gathered
/// from the rows of its scan box into one contiguous, padded run of
/// coordinate arrays, with each candidate's id beside it. Every point of
/// the unit then tests whole chunks of [`LANES`] candidates, however short
/// the rows are (rows of a few points would otherwise leave most lanes of
/// their chunks empty).
///
/// Past the last candidate, `x` holds [`LANES`] NaNs (no distance test
/// passes); `y`, `z` and `ids` hold leftovers, which only NaN lanes see.
#[derive(Clone, Debug)]
pub(crate) struct Candidates<I> {
    x: Vec<f32>,
    y: Vec<f32>,
    z: Vec<f32>,
    ids: Vec<I>,
    len: usize,
    /// Offsets of one group's hits from the group's first candidate
    /// ([`hits_into`](Self::hits_into)).
    found: Box<[u8; GROUP * LANES + LANES]>,
    /// A unit's pending pairs ([`unit_pairs`](Self::unit_pairs)): the
    /// candidate index of each pair's later point, and of its earlier one.
    later: Box<[u8; PAIRS + LANES]>,
    earlier: Box<[u8; PAIRS + LANES]>,
}

impl<I> Default for Candidates<I> {
    fn default() -> Self {
        Candidates {
            x: Vec::new(),
            y: Vec::new(),
            z: Vec::new(),
            ids: Vec::new(),
            len: 0,
            found: Box::new([0; GROUP * LANES + LANES]),
            later: Box::new([0; PAIRS + LANES]),
            earlier: Box::new([0; PAIRS + LANES]),
        }
    }
}

impl<I: Copy> Candidates<I> {
    /// Replaces the candidates with the points of the sorted slot ranges
    /// `rows` (in order), copied in whole blocks of [`COPY`] (the grid's
    /// coordinate arrays are padded, so a block may run past a range's end;
    /// the next range overwrites the excess, and the end is sealed with
    /// NaNs).
    ///
    /// A block is two chunks, not one: most rows of a scan box hold 1 to 16
    /// points, so each takes exactly one block, where blocks of [`LANES`]
    /// took one or two and the copy loop's exit mispredicted on about
    /// every other row.
    #[inline(always)]
    pub(crate) fn gather(&mut self, soa: &Soa, ids: &[I], rows: &[(u32, u32)]) {
        let total: usize = rows.iter().map(|&(s, e)| (e - s) as usize).sum();
        let cap = total + COPY;
        // Room past the end for `hits_into`'s fixed blocks too: a byte of
        // `found` may index up to `GROUP * LANES - 1` past a group's start.
        if self.x.len() < cap + GROUP * LANES
            && let Some(&fill) = ids.first()
        {
            self.grow(cap + GROUP * LANES, fill);
        }
        let (Some(x), Some(y), Some(z), Some(cand_ids)) =
            (self.x.get_mut(..cap), self.y.get_mut(..cap), self.z.get_mut(..cap), self.ids.get_mut(..cap))
        else {
            self.len = 0;
            return; // only with no points at all
        };
        // Equal lengths, so one bounds check covers all the arrays.
        let m = soa.x.len().min(soa.y.len()).min(soa.z.len());
        let (sx, sy, sz) = (&soa.x[..m], &soa.y[..m], &soa.z[..m]);
        let mut to = 0usize;
        for &(s, e) in rows {
            let (s, n) = (s as usize, (e - s) as usize);
            let mut i = 0;
            while i < n {
                let (a, b) = (s + i, to + i);
                if a + COPY > m || b + COPY > cap {
                    break; // not reached: the grid's arrays are padded, `cap` has room
                }
                x[b..b + COPY].copy_from_slice(&sx[a..a + COPY]);
                y[b..b + COPY].copy_from_slice(&sy[a..a + COPY]);
                z[b..b + COPY].copy_from_slice(&sz[a..a + COPY]);
                match ids.get(a..a + COPY) {
                    Some(block) => cand_ids[b..b + COPY].copy_from_slice(block),
                    None => copy_tail(&ids[a.min(ids.len())..], &mut cand_ids[b..b + COPY]),
                }
                i += COPY;
            }
            to += n;
        }
        x[total..total + LANES].fill(f32::NAN);
        self.len = total;
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, need: usize, fill: I) {
        let size = need.next_power_of_two();
        self.x.resize(size, f32::NAN);
        self.y.resize(size, f32::NAN);
        self.z.resize(size, f32::NAN);
        self.ids.resize(size, fill);
    }

    /// Appends the ids of the candidates that lie within `sqrt(r2)` of `c`
    /// to `out`, in order.
    ///
    /// Branch-free per lane: each chunk writes the offsets of its hits
    /// (within a group of [`GROUP`] chunks, so they fit a byte) as one
    /// 8-byte word from a table indexed by its 8-bit mask into a small
    /// buffer, and the write position advances by the chunk's hit count;
    /// every [`GROUP`] chunks the buffer's ids go to `out`. A group of at
    /// most [`HIT_BLOCK`] hits (the usual case: a query finds a few to a
    /// dozen neighbours) goes as one fixed block of [`HIT_BLOCK`] ids, the
    /// excess cut off again, so no loop's exit depends on the hit count.
    #[inline(always)]
    pub(crate) fn hits_into<L: Lanes>(&mut self, lanes: L, c: Vec3, r2: f32, out: &mut Vec<I>) {
        let (xs, ys, zs) = chunks_of(&self.x, &self.y, &self.z, self.len);
        let centre = lanes.centre(c, r2);
        let buffer = &mut *self.found;
        let chunks = xs.len().min(ys.len()).min(zs.len());
        let mut k = 0;
        while k < chunks {
            let end = (k + GROUP).min(chunks);
            let found = compact_group(lanes, (xs, ys, zs), k..end, 0xFF, centre, buffer);
            let Some(ids) = window(&self.ids, k * LANES) else {
                break; // not reached: `gather` keeps the room
            };
            if found <= HIT_BLOCK {
                // Entries past `found` are leftovers, offsets below
                // `GROUP * LANES`: inside the window.
                let block: [I; HIT_BLOCK] = std::array::from_fn(|j| ids[usize::from(buffer[j])]);
                let len = out.len();
                out.extend_from_slice(&block);
                out.truncate(len + found);
            } else {
                out.extend(buffer[..found].iter().map(|&i| ids[i as usize]));
            }
            k = end;
        }
    }

    /// Calls `f(a, b)` for each pair of a unit whose points (sorted slots
    /// `slots`) are the first candidates (as the half scan box gathers
    /// them): point `p` (id `a`) with each later candidate `b` within
    /// `sqrt(r2)`, in the order of `p`, then of `b`, as one call per point of
    /// [`for_each_hit`](Self::for_each_hit) from `p + 1` would.
    ///
    /// With at most 256 candidates, the hits of all the unit's points are
    /// collected first (per chunk, the word of candidate indices of
    /// [`chunk_hits`] and one of the point's index) and `f` runs in one
    /// loop per unit, not one per
    /// point: a point has a few pairs, a varying number, and the exit of a
    /// loop per point mispredicted about once a point. Larger candidate
    /// sets (dense cells) take the per-point path.
    #[inline(always)]
    pub(crate) fn unit_pairs<L: Lanes>(
        &mut self,
        lanes: L,
        points: &Soa,
        slots: Range<usize>,
        r2: f32,
        f: &mut impl FnMut(I, I),
    ) {
        let (xs, ys, zs) = chunks_of(&self.x, &self.y, &self.z, self.len);
        let chunks = xs.len().min(ys.len()).min(zs.len());
        if self.len > GROUP * LANES || slots.len() > GROUP * LANES {
            for (p, s) in slots.enumerate() {
                let a = self.ids[p];
                self.for_each_hit(lanes, p + 1, points.point(s), r2, |b| f(a, b));
            }
            return;
        }
        let Some(ids) = window(&self.ids, 0) else {
            return; // not reached: `gather` keeps the room
        };
        let (later, earlier) = (&mut *self.later, &mut *self.earlier);
        let mut pending = 0usize;
        for (p, s) in slots.enumerate() {
            let first = (p + 1) / LANES;
            // Room for every lane of this point's chunks, or hand the
            // pending pairs over first (rare: about a hundred pairs fit).
            if pending + (chunks - first.min(chunks)) * LANES > PAIRS {
                flush_pairs(ids, &later[..pending], &earlier[..pending], f);
                pending = 0;
            }
            let centre = lanes.centre(points.point(s), r2);
            let own = (p as u64) * 0x0101_0101_0101_0101;
            let mut mask = 0xFFu32 << ((p + 1) % LANES);
            for k in first..chunks {
                let (Some(x), Some(y), Some(z)) = (xs.get(k), ys.get(k), zs.get(k)) else {
                    break; // not reached: `k < chunks`
                };
                let (word, count) = chunk_hits(lanes, x, y, z, centre, mask, k * LANES);
                mask = 0xFF;
                let at = pending & (PAIRS - 1);
                later[at..at + LANES].copy_from_slice(&word.to_le_bytes());
                earlier[at..at + LANES].copy_from_slice(&own.to_le_bytes());
                pending += count;
            }
        }
        flush_pairs(ids, &later[..pending.min(PAIRS)], &earlier[..pending.min(PAIRS)], f);
    }

    /// Calls `f(id)` for each candidate from index `from` on that lies
    /// within `sqrt(r2)` of `c`, in order. The hits of up to [`GROUP`]
    /// chunks are compacted branch-free first (as in
    /// [`hits_into`](Self::hits_into)), so the calls run in one loop
    /// instead of one per chunk with hits.
    #[inline(always)]
    pub(crate) fn for_each_hit<L: Lanes>(&mut self, lanes: L, from: usize, c: Vec3, r2: f32, mut f: impl FnMut(I)) {
        let (xs, ys, zs) = chunks_of(&self.x, &self.y, &self.z, self.len);
        let centre = lanes.centre(c, r2);
        let buffer = &mut *self.found;
        let chunks = xs.len().min(ys.len()).min(zs.len());
        let mut k = from / LANES;
        let mut first_lanes = 0xFFu32 << (from % LANES);
        while k < chunks {
            let end = (k + GROUP).min(chunks);
            let found = compact_group(lanes, (xs, ys, zs), k..end, first_lanes, centre, buffer);
            first_lanes = 0xFF;
            let Some(ids) = window(&self.ids, k * LANES) else {
                break; // not reached: `gather` keeps the room
            };
            for &i in &buffer[..found] {
                f(ids[i as usize]);
            }
            k = end;
        }
    }
}

/// The last ids of the grid (fewer than a block: the ids are not padded)
/// into the start of `to`. Out of line, so the compiler keeps the common
/// block copy a fixed 64-byte copy instead of merging both into one call
/// of `memcpy` with a variable length (3 % of all pairs' time).
#[cold]
#[inline(never)]
fn copy_tail<I: Copy>(tail: &[I], to: &mut [I]) {
    let n = tail.len().min(to.len());
    to[..n].copy_from_slice(&tail[..n]);
}

/// The `GROUP * LANES` candidate ids from index `from` (a group's first
/// chunk): a byte offset indexes it without a bounds check. `None` only
/// past the room [`Candidates::gather`] keeps after the last candidate.
#[inline(always)]
fn window<I>(ids: &[I], from: usize) -> Option<&[I; GROUP * LANES]> {
    array_at(ids, from)
}

/// The `N` entries of `v` from index `from`, as an array (`None` past the
/// end).
#[inline(always)]
fn array_at<T, const N: usize>(v: &[T], from: usize) -> Option<&[T; N]> {
    v.get(from..from + N)?.try_into().ok()
}

/// Calls `f(ids[e], ids[l])` for each pending pair `(e, l)` of
/// [`Candidates::unit_pairs`], in order.
#[inline(always)]
fn flush_pairs<I: Copy>(ids: &[I; GROUP * LANES], later: &[u8], earlier: &[u8], f: &mut impl FnMut(I, I)) {
    for (&e, &l) in earlier.iter().zip(later) {
        f(ids[usize::from(e)], ids[usize::from(l)]);
    }
}

/// Writes to `buffer`, in order, the offsets (from the group's first
/// candidate) of the hits of the chunks `group` (at most [`GROUP`]),
/// with the first chunk's lanes masked by `first_lanes`, and returns how
/// many. Each chunk is one 8-byte store of its [`chunk_hits`] word (its
/// offset from the group's first candidate, at most `8 * (GROUP - 1)`, so
/// no byte carries), and an add of its hit count: no branch per lane or per
/// chunk.
#[inline(always)]
fn compact_group<L: Lanes>(
    lanes: L,
    (xs, ys, zs): Blocks<'_>,
    group: Range<usize>,
    first_lanes: u32,
    centre: L::Centre,
    buffer: &mut [u8; GROUP * LANES + LANES],
) -> usize {
    debug_assert!(group.len() <= GROUP);
    let first = group.start;
    let mut found = 0usize;
    for k in group {
        let (Some(x), Some(y), Some(z)) = (xs.get(k), ys.get(k), zs.get(k)) else {
            break; // not reached: callers pass chunks of the arrays
        };
        let mask = if k == first { first_lanes } else { 0xFF };
        let (word, count) = chunk_hits(lanes, x, y, z, centre, mask, (k - first) * LANES);
        // At most 8 * 31 hits come before the last chunk of a group, so
        // the mask never changes `found` here; it only lets the compiler
        // see the bound.
        let at = found & (GROUP * LANES - 1);
        buffer[at..at + LANES].copy_from_slice(&word.to_le_bytes());
        found += count;
    }
    found.min(GROUP * LANES)
}

/// The hits of one chunk among its lanes `mask`, for a
/// candidate buffer: a word holding, from its lowest byte, each hit's lane
/// plus `offset` (the chunk's first candidate, counted from wherever the
/// caller's offsets start; at most 248, so no byte carries), and how many
/// hits there are. The word is [`COMPACT8`]'s entry for the hit mask with
/// `offset` added to every byte; bytes past the count are filler.
#[inline(always)]
fn chunk_hits<L: Lanes>(
    lanes: L,
    x: &[f32; LANES],
    y: &[f32; LANES],
    z: &[f32; LANES],
    centre: L::Centre,
    mask: u32,
    offset: usize,
) -> (u64, usize) {
    let m = (lanes.block_mask(x, y, z, centre) & mask & 0xFF) as usize;
    (COMPACT8[m] + offset as u64 * 0x0101_0101_0101_0101, COUNT8[m] as usize)
}

/// Coordinate arrays as blocks of [`LANES`]: `x`, `y`, `z`.
type Blocks<'a> = (&'a [[f32; LANES]], &'a [[f32; LANES]], &'a [[f32; LANES]]);

/// The coordinate arrays as chunks of [`LANES`], up to the chunk that holds
/// candidate `len - 1`.
#[inline(always)]
fn chunks_of<'a>(x: &'a [f32], y: &'a [f32], z: &'a [f32], len: usize) -> Blocks<'a> {
    let end = len.div_ceil(LANES) * LANES;
    match (x.get(..end), y.get(..end), z.get(..end)) {
        (Some(x), Some(y), Some(z)) => (x.as_chunks().0, y.as_chunks().0, z.as_chunks().0),
        _ => (&[], &[], &[]), // not reached: `gather` keeps room past the end
    }
}

/// How the batch kernels test a chunk of [`LANES`] candidates against one
/// query point: [`Portable`] everywhere, [`Avx`] on x86-64 CPUs that have
/// AVX2 (detected at run time by [`with_lanes!`], so the crate still builds
/// for baseline x86-64). Both compute each lane exactly as the module docs
/// say (no fused multiply-add), so they find the same hits.
pub(crate) trait Lanes: Copy {
    /// A query point's coordinates and squared radius, splatted once per
    /// point.
    type Centre: Copy;

    /// The splatted centre `c` and squared radius `r2`.
    fn centre(self, c: Vec3, r2: f32) -> Self::Centre;

    /// The bit mask of the lanes of one block whose point lies within
    /// `sqrt(r2)` of `c`, the centre splatted by [`centre`](Lanes::centre)
    /// (padding lanes included: callers mask the lanes they own).
    fn block_mask(self, x: &[f32; LANES], y: &[f32; LANES], z: &[f32; LANES], centre: Self::Centre) -> u32;
}

/// Two glam [`Vec4`]s per chunk: SSE2 on every x86-64, NEON on aarch64,
/// scalar code elsewhere; each step is one vector instruction per four
/// lanes and the compare's mask comes out with one `movmskps`, all through
/// glam's safe API (plain array code leaves the compiler shuffling lanes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Lanes for Portable {
    type Centre = (Vec4, Vec4, Vec4, Vec4);

    #[inline(always)]
    fn centre(self, c: Vec3, r2: f32) -> Self::Centre {
        (Vec4::splat(c.x), Vec4::splat(c.y), Vec4::splat(c.z), Vec4::splat(r2))
    }

    #[inline(always)]
    fn block_mask(self, x: &[f32; LANES], y: &[f32; LANES], z: &[f32; LANES], (cx, cy, cz, r2): Self::Centre) -> u32 {
        let half = |h: usize| {
            let dx = Vec4::from_slice(&x[4 * h..]) - cx;
            let dy = Vec4::from_slice(&y[4 * h..]) - cy;
            let dz = Vec4::from_slice(&z[4 * h..]) - cz;
            (dx * dx + dy * dy + dz * dz).cmple(r2).bitmask()
        };
        half(0) | (half(1) << 4)
    }
}

#[cfg(all(feature = "simd", target_arch = "x86_64"))]
pub(crate) use avx::Avx;

#[cfg(all(feature = "simd", target_arch = "x86_64"))]
mod avx {
    use std::arch::x86_64::{__m256, _CMP_LE_OQ};

    use glam::Vec3;
    use pulp::x86::V3;

    use super::{LANES, Lanes};

    /// One 256-bit AVX vector per coordinate of a chunk, through pulp's safe
    /// intrinsics: the token proves the CPU has them, and code inlined into
    /// [`vectorize`](Self::vectorize) is compiled for them.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Avx(V3);

    impl Avx {
        /// The token, when this CPU has AVX2 (and the rest of x86-64-v3);
        /// the detection runs once per process.
        #[inline(always)]
        pub(crate) fn detect() -> Option<Self> {
            V3::try_new().map(Avx)
        }

        /// Runs `f` compiled for x86-64-v3 (`f` must be inlined, so its
        /// callers mark it `#[inline(always)]`, as [`with_lanes!`] does).
        #[inline(always)]
        pub(crate) fn vectorize<R>(self, f: impl FnOnce() -> R) -> R {
            self.0.vectorize(f)
        }
    }

    impl Lanes for Avx {
        type Centre = (__m256, __m256, __m256, __m256);

        #[inline(always)]
        fn centre(self, c: Vec3, r2: f32) -> Self::Centre {
            let avx = self.0.avx;
            (avx._mm256_set1_ps(c.x), avx._mm256_set1_ps(c.y), avx._mm256_set1_ps(c.z), avx._mm256_set1_ps(r2))
        }

        #[inline(always)]
        fn block_mask(
            self,
            x: &[f32; LANES],
            y: &[f32; LANES],
            z: &[f32; LANES],
            (cx, cy, cz, r2): Self::Centre,
        ) -> u32 {
            let avx = self.0.avx;
            let dx = avx._mm256_sub_ps(pulp::cast(*x), cx);
            let dy = avx._mm256_sub_ps(pulp::cast(*y), cy);
            let dz = avx._mm256_sub_ps(pulp::cast(*z), cz);
            let d2 = avx._mm256_add_ps(
                avx._mm256_add_ps(avx._mm256_mul_ps(dx, dx), avx._mm256_mul_ps(dy, dy)),
                avx._mm256_mul_ps(dz, dz),
            );
            avx._mm256_movemask_ps(avx._mm256_cmp_ps::<_CMP_LE_OQ>(d2, r2)) as u32
        }
    }
}

/// Evaluates `$body` with `$lanes` bound to the widest [`Lanes`] this CPU
/// has: [`Avx`] (the body inlined into a function compiled for
/// x86-64-v3) when the `simd` feature is on and the CPU has AVX2, else
/// [`Portable`]. The body is generic code monomorphised for both.
macro_rules! with_lanes {
    ($lanes:ident => $body:expr) => {{
        #[cfg(all(feature = "simd", target_arch = "x86_64"))]
        let result = match $crate::kernel::Avx::detect() {
            Some($lanes) => $lanes.vectorize(
                #[inline(always)]
                || $body,
            ),
            None => {
                let $lanes = $crate::kernel::Portable;
                $body
            }
        };
        #[cfg(not(all(feature = "simd", target_arch = "x86_64")))]
        let result = {
            let $lanes = $crate::kernel::Portable;
            $body
        };
        result
    }};
}
pub(crate) use with_lanes;

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

/// For each 8-bit hit mask, the lanes of its set bits in order, one per
/// byte from the lowest (the rest of the word is zero: filler, overwritten
/// or past the end).
const COMPACT8: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut m = 0;
    while m < 256 {
        let mut n = 0;
        let mut l = 0;
        while l < 8 {
            if m >> l & 1 == 1 {
                t[m] |= (l as u64) << (8 * n);
                n += 1;
            }
            l += 1;
        }
        m += 1;
    }
    t
};

/// Set bits of each 8-bit mask (no `popcnt` on baseline x86-64).
const COUNT8: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut m = 0;
    while m < 256 {
        t[m] = (m as u32).count_ones() as u8;
        m += 1;
    }
    t
};

/// Chunks whose hits [`Candidates::hits_into`] buffers at a time (their
/// offsets from the group's first candidate fit a byte).
const GROUP: usize = 32;

/// Pairs [`Candidates::unit_pairs`] collects before handing them over (a
/// power of two, at least `GROUP * LANES` so one point's chunks always fit).
const PAIRS: usize = 1024;

/// Ids [`Candidates::hits_into`] copies as one block when a group has at
/// most this many hits.
const HIT_BLOCK: usize = 16;

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
