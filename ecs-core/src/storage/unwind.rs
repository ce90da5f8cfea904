//! Finishing work while a panic unwinds.
//!
//! Component destructors are user code and may panic. The store's rule (see
//! "Panic safety" in the design notes): after a caught panic every value has
//! been dropped at most once, an entity is fully there or fully gone, and no
//! row holds a dropped value. The helpers here keep a loop of destructor
//! calls going past a panicking one, as `std`'s collections do: the later
//! values are still dropped while the panic unwinds (a second panic during
//! that unwind aborts the process, as it does in `std`).

use std::ops::Range;

/// Calls `f(i)` for every `i` in `range`, in order. If a call panics, the
/// remaining calls still run while the panic unwinds, then the panic goes on.
pub(crate) fn for_each_finishing(range: Range<usize>, mut f: impl FnMut(usize)) {
    struct Rest<'a, F: FnMut(usize)> {
        next: usize,
        end: usize,
        f: &'a mut F,
    }
    impl<F: FnMut(usize)> Drop for Rest<'_, F> {
        fn drop(&mut self) {
            // Reached with work left only while unwinding from `f`.
            while self.next < self.end {
                let i = self.next;
                self.next += 1;
                (self.f)(i);
            }
        }
    }
    let mut rest = Rest { next: range.start, end: range.end, f: &mut f };
    while rest.next < rest.end {
        let i = rest.next;
        rest.next += 1;
        (rest.f)(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    #[test]
    fn later_calls_run_after_a_panicking_one() {
        let mut seen = Vec::new();
        let caught = catch_unwind(AssertUnwindSafe(|| {
            for_each_finishing(0..5, |i| {
                seen.push(i);
                if i == 1 {
                    panic!("call {i}");
                }
            })
        }));
        assert!(caught.is_err());
        assert_eq!(seen, [0, 1, 2, 3, 4]);
    }
}
