//! One client's send queue: the entities waiting to go out, in deadline
//! order, one bucket per tick.
//!
//! An entity's deadline is the tick at which a priority accumulator (a
//! rate per tick: spawns and despawns gain most, entities near the
//! client's view more) would reach a fixed threshold, fixed when it starts
//! waiting. Taking entries in deadline order is the accumulator's order
//! without scoring every waiting entity each tick: pushing is O(1), taking
//! the next entry is O(1) amortized, so a tick costs what it sends plus
//! what started waiting, not what waits. Within a tick, first in, first
//! out. Nothing starves: an entry is taken before every entry whose
//! deadline is later, so one that waits has only the entries due before it
//! ahead of it.
//!
//! Deadlines count the client's own updates (a `u64` that never wraps),
//! not network ticks.

use std::collections::VecDeque;

use crate::codec::NetId;

/// One waiting entry: the entity and the stamp its tracked state holds
/// while this entry is its live one (an entry whose stamp no longer
/// matches is stale and skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Waiting {
    pub(super) net_id: NetId,
    pub(super) stamp: u32,
    pub(super) deadline: u64,
}

/// The queue: `buckets[i]` holds the entries due at `first + i`, and the
/// first `head` entries of `buckets[0]` are taken.
#[derive(Default)]
pub(super) struct SendQueue {
    buckets: VecDeque<Vec<(NetId, u32)>>,
    first: u64,
    head: usize,
    /// Emptied buckets, kept for their allocation.
    spare: Vec<Vec<(NetId, u32)>>,
    /// Entries put back after they were taken, the earliest last: they
    /// come before any bucket entry due later (O(1), however full the
    /// buckets are).
    returned: Vec<Waiting>,
    /// Entries in the queue, stale ones included.
    len: usize,
}

impl SendQueue {
    /// Entries in the queue, stale ones included.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Drops every entry.
    pub(super) fn clear(&mut self) {
        while let Some(mut b) = self.buckets.pop_front() {
            b.clear();
            self.spare.push(b);
        }
        self.head = 0;
        self.returned.clear();
        self.len = 0;
    }

    fn bucket(&mut self, deadline: u64) -> &mut Vec<(NetId, u32)> {
        if self.buckets.is_empty() {
            self.first = deadline;
            self.head = 0;
        }
        while deadline < self.first {
            // Earlier than anything queued: new buckets in front. Only the
            // front bucket can be partly taken, and a new front is not.
            let b = self.spare.pop().unwrap_or_default();
            if self.head > 0 {
                let front = &mut self.buckets[0];
                front.drain(..self.head);
                self.head = 0;
            }
            self.buckets.push_front(b);
            self.first -= 1;
        }
        let index = (deadline - self.first) as usize;
        while self.buckets.len() <= index {
            let b = self.spare.pop().unwrap_or_default();
            self.buckets.push_back(b);
        }
        &mut self.buckets[index]
    }

    /// Queues an entry due at `deadline`, after the entries due then.
    pub(super) fn push(&mut self, deadline: u64, net_id: NetId, stamp: u32) {
        self.bucket(deadline).push((net_id, stamp));
        self.len += 1;
    }

    /// Puts back an entry [`SendQueue::pop`] just took, ahead of the
    /// entries due at the same tick or later (it keeps its place). Entries
    /// taken together are put back in reverse order.
    pub(super) fn put_back(&mut self, w: Waiting) {
        self.returned.push(w);
        self.len += 1;
    }

    /// The earliest deadline among the bucket entries, dropping emptied
    /// buckets from the front.
    fn front_deadline(&mut self) -> Option<u64> {
        loop {
            let front = self.buckets.front()?;
            if front.len() > self.head {
                return Some(self.first);
            }
            if let Some(mut b) = self.buckets.pop_front() {
                b.clear();
                self.spare.push(b);
            }
            self.head = 0;
            self.first += 1;
        }
    }

    /// The entry with the earliest deadline (first in among those), if
    /// any.
    pub(super) fn pop(&mut self) -> Option<Waiting> {
        let front = self.front_deadline();
        if let Some(r) = self.returned.last()
            && front.is_none_or(|d| r.deadline <= d)
        {
            self.len -= 1;
            return self.returned.pop();
        }
        front?;
        let (net_id, stamp) = self.buckets[0][self.head];
        self.head += 1;
        self.len -= 1;
        Some(Waiting { net_id, stamp, deadline: self.first })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn deadline_order_then_first_in_first_out() {
        let mut q = SendQueue::default();
        q.push(10, NetId(1), 1);
        q.push(8, NetId(2), 1);
        q.push(10, NetId(3), 1);
        q.push(5, NetId(4), 1);
        q.push(8, NetId(5), 1);
        let order: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|w| w.net_id.0).collect();
        assert_eq!(order, vec![4, 2, 5, 1, 3]);
        assert_eq!(q.len(), 0);
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn a_put_back_entry_keeps_its_place() {
        let mut q = SendQueue::default();
        for i in 0..4 {
            q.push(3, NetId(i), 7);
        }
        let a = q.pop().unwrap();
        let b = q.pop().unwrap();
        q.put_back(b);
        q.put_back(a);
        // An earlier deadline pushed after a partial take.
        q.push(1, NetId(9), 7);
        let order: Vec<u64> = std::iter::from_fn(|| q.pop()).map(|w| w.net_id.0).collect();
        assert_eq!(order, vec![9, 0, 1, 2, 3]);
    }

    proptest! {
        /// The queue against a sorted model: (deadline, sequence) order.
        #[test]
        fn matches_a_sorted_model(ops in proptest::collection::vec((0u8..5, 0u64..40), 1..300)) {
            let mut q = SendQueue::default();
            let mut model: Vec<(u64, u64, u64)> = Vec::new();
            let mut seq = 0u64;
            let mut floor = 0u64;
            for (op, d) in ops {
                if op == 4 {
                    // Take a few and put them back (a packet that filled
                    // up): the order is unchanged.
                    let taken: Vec<Waiting> = (0..d % 5).map_while(|_| q.pop()).collect();
                    for w in taken.into_iter().rev() {
                        q.put_back(w);
                    }
                } else if op < 3 {
                    // Deadlines never earlier than what was already taken
                    // minus a little, as the server's are (now or later).
                    let deadline = floor.saturating_sub(2) + d;
                    seq += 1;
                    q.push(deadline, NetId(seq), 0);
                    model.push((deadline, seq, seq));
                } else {
                    model.sort();
                    let want = if model.is_empty() { None } else { Some(model.remove(0)) };
                    let got = q.pop();
                    prop_assert_eq!(got.map(|w| (w.deadline, w.net_id.0)), want.map(|(d, _, id)| (d, id)));
                    if let Some(w) = got {
                        floor = floor.max(w.deadline);
                    }
                }
                prop_assert_eq!(q.len(), model.len());
            }
        }
    }
}
