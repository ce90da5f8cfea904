//! Network ticks and their order.
//!
//! A network tick is a `u32` that counts up by one per server update and
//! wraps from `u32::MAX` to 1 ([`next_tick`]); 0 is never a tick (it means
//! "none": no packet applied, no baseline). Ticks are compared in serial
//! number order (RFC 1982), never with `<` or `max`: `a` is newer than `b`
//! iff `a.wrapping_sub(b)`, read as an `i32`, is positive. So 1 is newer
//! than `u32::MAX`, and a session runs through the wrap. The order is
//! meaningful for ticks less than 2^31 apart (over a year at 60 Hz).
//!
//! Every comparison of network ticks in this crate goes through
//! [`tick_newer`] or [`tick_diff`].
//!
//! ```
//! use ecs_replication::tick::{next_tick, tick_diff, tick_newer};
//! assert!(tick_newer(5, 4) && !tick_newer(4, 5) && !tick_newer(4, 4));
//! assert!(tick_newer(1, u32::MAX)); // across the wrap
//! assert_eq!(next_tick(u32::MAX), 1); // 0 is skipped
//! assert_eq!(tick_diff(1, u32::MAX - 1), 3);
//! assert_eq!(tick_diff(u32::MAX, 2), -3);
//! ```

/// Whether network tick `a` is newer than `b` in serial number order:
/// `a.wrapping_sub(b) as i32 > 0`. Not newer when equal, and not newer
/// either way for ticks exactly 2^31 apart.
#[inline]
pub fn tick_newer(a: u32, b: u32) -> bool {
    tick_diff(a, b) > 0
}

/// How many ticks `a` is after `b` (negative: before), in serial number
/// order: `a.wrapping_sub(b) as i32`.
#[inline]
pub fn tick_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

/// The tick after `tick`: `tick + 1`, wrapping from `u32::MAX` to 1 (0 is
/// not a tick).
#[inline]
pub fn next_tick(tick: u32) -> u32 {
    tick.wrapping_add(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn order_near_the_wrap() {
        assert!(tick_newer(0, u32::MAX));
        assert!(tick_newer(1, u32::MAX));
        assert!(tick_newer(100, u32::MAX - 100));
        assert!(!tick_newer(u32::MAX - 100, 100));
        assert!(!tick_newer(7, 7));
        // Exactly half the circle apart: neither is newer.
        assert!(!tick_newer(1 << 31, 0) && !tick_newer(0, 1 << 31));
        assert_eq!(next_tick(0), 1);
        assert_eq!(next_tick(41), 42);
        assert_eq!(next_tick(u32::MAX - 1), u32::MAX);
        assert_eq!(next_tick(u32::MAX), 1);
    }

    proptest! {
        #[test]
        fn serial_order_is_shift_invariant(a in any::<u32>(), d in 1u32..(1 << 31), shift in any::<u32>()) {
            let b = a.wrapping_add(d);
            prop_assert!(tick_newer(b, a) && !tick_newer(a, b));
            prop_assert!(tick_newer(b.wrapping_add(shift), a.wrapping_add(shift)));
            prop_assert_eq!(tick_diff(b, a), d as i32);
            prop_assert_eq!(tick_diff(a, b), -(d as i32));
        }
    }
}
