//! Change ticks: the world's clock and the wrap-safe rules for comparing
//! stamps against it.
//!
//! The world keeps a monotonic 64-bit tick. Storage keeps only its low 32 bits
//! ([`Tick`]) per chunk and per row, so comparisons are done on the *age* of a
//! stamp (`this_run - tick`, wrapping) rather than on raw values, as Unity's
//! `ChangeVersionUtility` and bevy's `Tick` do. Ages are capped at
//! [`MAX_CHANGE_AGE`]; the world clamps every stored stamp older than that
//! each [`CHECK_TICK_THRESHOLD`] ticks, so a world running past 2^32 ticks
//! never mistakes an ancient stamp for a fresh one.

use std::sync::atomic::{AtomicU32, Ordering};

/// How many world ticks may pass between two clamps of the stored stamps.
pub const CHECK_TICK_THRESHOLD: u32 = 518_400_000;

/// The largest age (in ticks) a stored stamp may have. Older stamps are
/// clamped to this age and then count as "not changed" for every query.
pub const MAX_CHANGE_AGE: u32 = u32::MAX - (2 * CHECK_TICK_THRESHOLD - 1);

/// A stamp of the world's change clock (its low 32 bits).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Tick(u32);

impl Tick {
    /// A tick from its raw value.
    #[inline]
    pub const fn new(raw: u32) -> Self {
        Tick(raw)
    }

    /// The raw 32-bit value.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }

    /// Ticks from `self` to `now`, wrapping, capped at [`MAX_CHANGE_AGE`].
    #[inline]
    pub fn age(self, now: Tick) -> u32 {
        now.0.wrapping_sub(self.0).min(MAX_CHANGE_AGE)
    }

    /// Whether `self` was stamped after `last_run`, seen from `this_run`.
    ///
    /// ```
    /// use ecs_core::Tick;
    /// let (last, now) = (Tick::new(10), Tick::new(20));
    /// assert!(Tick::new(11).is_newer_than(last, now));
    /// assert!(!Tick::new(10).is_newer_than(last, now));
    /// // Wrap-safe: stamps are compared by age, not by raw value.
    /// assert!(Tick::new(2).is_newer_than(Tick::new(u32::MAX - 5), Tick::new(4)));
    /// ```
    #[inline]
    pub fn is_newer_than(self, last_run: Tick, this_run: Tick) -> bool {
        self.age(this_run) < last_run.age(this_run)
    }

    /// Clamps the stamp so its age seen from `now` is at most
    /// [`MAX_CHANGE_AGE`]. Returns whether it changed.
    #[inline]
    pub fn clamp_age(&mut self, now: Tick) -> bool {
        if now.0.wrapping_sub(self.0) > MAX_CHANGE_AGE {
            self.0 = now.0.wrapping_sub(MAX_CHANGE_AGE);
            true
        } else {
            false
        }
    }

    /// The newer of two stamps, seen from `now`.
    #[inline]
    pub fn newest(self, other: Tick, now: Tick) -> Tick {
        if self.age(now) <= other.age(now) { self } else { other }
    }
}

impl std::fmt::Display for Tick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "t{}", self.0)
    }
}

/// The window of ticks one query run sees: stamps in `(last_run, this_run]`.
///
/// Built once per run so the per-row test is one subtraction and one compare.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TickWindow {
    this_run: u32,
    since_last: u32,
}

impl TickWindow {
    /// The window of a run at `this_run` whose previous run was `last_run`
    /// (both full 64-bit world ticks, so a window longer than
    /// [`MAX_CHANGE_AGE`] is recognised and capped).
    #[inline]
    pub fn new(last_run: u64, this_run: u64) -> Self {
        let since = this_run.saturating_sub(last_run).min(MAX_CHANGE_AGE as u64);
        TickWindow { this_run: this_run as u32, since_last: since as u32 }
    }

    /// The tick this run stamps its writes with.
    #[inline]
    pub fn this_run(self) -> Tick {
        Tick(self.this_run)
    }

    /// Whether `tick` falls inside the window (was stamped after the last run).
    #[inline]
    pub fn contains(self, tick: Tick) -> bool {
        // An age >= MAX_CHANGE_AGE can never be below `since_last`, which is
        // capped at MAX_CHANGE_AGE, so no extra clamp is needed here.
        self.this_run.wrapping_sub(tick.0) < self.since_last
    }

    /// Which of up to 64 raw ticks fall inside the window, bit `i` for
    /// `ticks[i]`: four lanes per SSE2 compare on x86-64 (part of its
    /// baseline, so no feature detection), eight-lane blocks the compiler
    /// may vectorise elsewhere. A chunk's row ticks are tested 64 at a time
    /// instead of one branch per row.
    #[inline]
    pub(crate) fn mask(self, ticks: &[u32]) -> u64 {
        debug_assert!(ticks.len() <= 64);
        #[cfg(target_arch = "x86_64")]
        {
            self.mask_sse2(ticks)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self.mask_scalar(ticks)
        }
    }

    /// The portable form of [`TickWindow::mask`].
    #[inline]
    #[cfg_attr(target_arch = "x86_64", allow(dead_code, reason = "x86-64 uses mask_sse2; tests compare the two"))]
    fn mask_scalar(self, ticks: &[u32]) -> u64 {
        let (this, since) = (self.this_run, self.since_last);
        let mut mask = 0u64;
        let mut lanes = ticks.chunks_exact(8);
        let mut base = 0;
        for lane in &mut lanes {
            let mut bits = 0u64;
            for (k, &t) in lane.iter().enumerate() {
                bits |= u64::from(this.wrapping_sub(t) < since) << k;
            }
            mask |= bits << base;
            base += 8;
        }
        for (k, &t) in lanes.remainder().iter().enumerate() {
            mask |= u64::from(this.wrapping_sub(t) < since) << (base + k);
        }
        mask
    }

    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn mask_sse2(self, ticks: &[u32]) -> u64 {
        use std::arch::x86_64::{
            __m128i, _mm_castsi128_ps, _mm_cmplt_epi32, _mm_loadu_si128, _mm_movemask_ps, _mm_set1_epi32,
            _mm_sub_epi32, _mm_xor_si128,
        };
        let n = ticks.len();
        let mut mask = 0u64;
        let mut i = 0;
        // `this - t < since` unsigned is `(this - t) ^ MIN < since ^ MIN`
        // signed, which SSE2 compares four lanes at a time.
        // SAFETY: SSE2 is part of the x86-64 baseline, so the intrinsics are
        // available on every x86-64 CPU; each unaligned 16-byte load reads
        // `ticks[i..i + 4]`, in bounds because `i + 4 <= n`.
        unsafe {
            let this = _mm_set1_epi32(self.this_run as i32);
            let flip = _mm_set1_epi32(i32::MIN);
            let since = _mm_set1_epi32((self.since_last ^ 0x8000_0000) as i32);
            while i + 4 <= n {
                let t = _mm_loadu_si128(ticks.as_ptr().add(i).cast::<__m128i>());
                let age = _mm_xor_si128(_mm_sub_epi32(this, t), flip);
                let inside = _mm_cmplt_epi32(age, since);
                mask |= (_mm_movemask_ps(_mm_castsi128_ps(inside)) as u64) << i;
                i += 4;
            }
        }
        for (k, &t) in ticks[i..].iter().enumerate() {
            mask |= u64::from(self.this_run.wrapping_sub(t) < self.since_last) << (i + k);
        }
        mask
    }
}

/// The low `n` bits set (`n <= 64`).
#[inline]
pub(crate) fn low_bits(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// A tick cell that can be read and written through a shared borrow.
///
/// Relaxed atomics compile to plain loads and stores on the targets we care
/// about, and make concurrent stamping of one chunk's tick from two threads
/// (parallel iteration over parts of one chunk) well defined.
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct AtomicTick(AtomicU32);

impl AtomicTick {
    #[inline]
    pub(crate) fn new(tick: Tick) -> Self {
        AtomicTick(AtomicU32::new(tick.0))
    }

    #[inline]
    pub(crate) fn load(&self) -> Tick {
        Tick(self.0.load(Ordering::Relaxed))
    }

    #[inline]
    pub(crate) fn store(&self, tick: Tick) {
        self.0.store(tick.0, Ordering::Relaxed)
    }

    /// The cell's address, for plain (non-atomic) access by code that holds
    /// the column's access rights (see [`crate::query::change`]).
    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut u32 {
        self.0.as_ptr()
    }

    /// Address of `cells[start]` as plain tick words, valid for every cell
    /// from `start` to the end of the slice (the pointer is derived from the
    /// whole tail, so offsetting it stays in bounds of its provenance).
    ///
    /// # Panics
    /// If `start > cells.len()`.
    #[inline]
    pub(crate) fn slice_ptr(cells: &[AtomicTick], start: usize) -> *mut u32 {
        // `AtomicTick` is a transparent `AtomicU32`, which has the layout of
        // `u32` and sits in an `UnsafeCell`, so writing through a pointer
        // derived from a shared borrow is allowed.
        cells[start..].as_ptr().cast::<u32>().cast_mut()
    }

    /// Exclusive access, no atomic operation needed.
    #[inline]
    pub(crate) fn get_mut(&mut self) -> &mut u32 {
        self.0.get_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_than_respects_the_window() {
        let last = Tick::new(100);
        let now = Tick::new(200);
        assert!(Tick::new(101).is_newer_than(last, now));
        assert!(Tick::new(200).is_newer_than(last, now));
        assert!(!Tick::new(100).is_newer_than(last, now));
        assert!(!Tick::new(50).is_newer_than(last, now));
    }

    #[test]
    fn window_matches_is_newer_than_across_wrap() {
        let last: u64 = (1 << 32) - 10;
        let now: u64 = (1 << 32) + 10;
        let w = TickWindow::new(last, now);
        for offset in 0..40u64 {
            let t = Tick::new((last - 10 + offset) as u32);
            let expected = t.is_newer_than(Tick::new(last as u32), Tick::new(now as u32));
            assert_eq!(w.contains(t), expected, "offset {offset}");
            assert_eq!(expected, offset > 10 && offset <= 30);
        }
    }

    #[test]
    fn masks_agree_with_contains() {
        let w = TickWindow::new((1 << 32) - 5, (1 << 32) + 20);
        let ticks: Vec<u32> =
            (0..64u32).map(|i| i.wrapping_mul(0x0F0F_1234).wrapping_add(if i % 3 == 0 { 7 } else { 0 })).collect();
        let near: Vec<u32> = (0..64u32).map(|i| 10u32.wrapping_sub(i)).collect();
        for set in [&ticks, &near] {
            for n in [0, 1, 7, 8, 9, 63, 64] {
                let mask = w.mask(&set[..n]);
                assert_eq!(mask, w.mask_scalar(&set[..n]), "n {n}");
                for (i, &t) in set[..n].iter().enumerate() {
                    assert_eq!(mask >> i & 1 == 1, w.contains(Tick::new(t)), "n {n} tick {i}");
                }
                assert_eq!(mask & !low_bits(n), 0);
            }
        }
        assert!(near.iter().any(|&t| w.contains(Tick::new(t))) && near.iter().any(|&t| !w.contains(Tick::new(t))));
    }

    #[test]
    fn clamp_moves_only_old_ticks() {
        let now = Tick::new(5);
        let mut old = Tick::new(now.get().wrapping_sub(MAX_CHANGE_AGE + 10));
        assert!(old.clamp_age(now));
        assert_eq!(old.age(now), MAX_CHANGE_AGE);
        let mut fresh = Tick::new(3);
        assert!(!fresh.clamp_age(now));
        assert_eq!(fresh, Tick::new(3));
    }

    #[test]
    fn long_window_is_capped() {
        let w = TickWindow::new(0, 10_000_000_000);
        assert_eq!(w.since_last, MAX_CHANGE_AGE);
        // A clamped stamp (age == MAX_CHANGE_AGE) is not inside.
        let clamped = Tick::new((10_000_000_000u64 as u32).wrapping_sub(MAX_CHANGE_AGE));
        assert!(!w.contains(clamped));
        assert!(w.contains(Tick::new(10_000_000_000u64 as u32)));
    }

    #[test]
    fn newest_picks_smaller_age() {
        let now = Tick::new(3);
        assert_eq!(Tick::new(u32::MAX).newest(Tick::new(2), now), Tick::new(2));
    }
}
