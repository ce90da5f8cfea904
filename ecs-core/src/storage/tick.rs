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
