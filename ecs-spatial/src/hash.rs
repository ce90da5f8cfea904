//! The open-addressing table that finds an occupied row of cells from its
//! packed `(y, z)` in O(1) expected probes, whatever the occupied cells'
//! bounding box: what a grid uses when a dense table over that box would be
//! too large or too sparse. The cells of a row are adjacent in the sorted
//! cell table, so a row's entry is its range there, searched for `x`.
//!
//! Multiplicative (Fibonacci) hashing of the key, linear probing, load
//! factor at most 1/2. A slot holds the row's key and, beside it, the row's
//! range, so an edit of the grid updates the rows it touched in place
//! (inserted, overwritten, or removed with the backward shift of linear
//! probing) instead of building the table again. Rows are far fewer than
//! cells (a row of a query box holds several cells), so the table is small
//! and stays in cache.

/// An empty slot (row keys have `2 * AXIS_BITS` bits, far below it).
const EMPTY: u64 = u64::MAX;

/// The golden-ratio multiplier of Fibonacci hashing.
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Row key -> the row's range of the cell table.
#[derive(Clone, Debug, Default)]
pub(crate) struct CellHash {
    keys: Vec<u64>,
    ranges: Vec<(u32, u32)>,
    /// Rows held.
    len: usize,
    /// `64 - log2(keys.len())`.
    shift: u32,
}

impl CellHash {
    /// Empties the table, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.keys.clear();
        self.ranges.clear();
        self.len = 0;
    }

    /// Fills the table with `rows` distinct rows, `(key, range)`.
    pub(crate) fn build(&mut self, rows: usize, entries: impl Iterator<Item = (u64, (u32, u32))>) {
        self.reset(rows);
        let mask = self.keys.len() - 1;
        for (key, range) in entries {
            debug_assert!(self.len < rows && self.find(key).is_none());
            // Distinct keys: each goes to the first empty slot of its probe.
            let mut h = self.home(key);
            while self.keys[h] != EMPTY {
                h = (h + 1) & mask;
            }
            self.keys[h] = key;
            self.ranges[h] = range;
            self.len += 1;
        }
    }

    /// Empties the table and sizes it for `rows` rows.
    fn reset(&mut self, rows: usize) {
        let capacity = (rows * 2).next_power_of_two().max(16);
        self.keys.clear();
        self.keys.resize(capacity, EMPTY);
        // A range is read only where its key is set: the old ones can stay.
        self.ranges.resize(capacity, (0, 0));
        self.shift = 64 - capacity.trailing_zeros();
        self.len = 0;
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(MULTIPLIER) >> self.shift) as usize
    }

    /// The slot holding `key`, or the empty slot that ends its probe.
    #[inline(always)]
    fn probe(&self, key: u64) -> usize {
        let mask = self.keys.len() - 1;
        let mut h = self.home(key);
        while self.keys[h] != key && self.keys[h] != EMPTY {
            h = (h + 1) & mask;
        }
        h
    }

    /// The range of row `key`, if the table holds it.
    #[inline(always)]
    pub(crate) fn find(&self, key: u64) -> Option<(u32, u32)> {
        if self.keys.is_empty() {
            return None;
        }
        let h = self.probe(key);
        (self.keys[h] == key).then(|| self.ranges[h])
    }

    /// Sets the range of row `key`, adding the row if it is new. Returns
    /// false, changing nothing, when a new row would take the table past
    /// its load factor (the caller builds it again, larger).
    pub(crate) fn upsert(&mut self, key: u64, range: (u32, u32)) -> bool {
        debug_assert_ne!(key, EMPTY);
        if self.keys.is_empty() {
            return false;
        }
        let h = self.probe(key);
        if self.keys[h] == EMPTY {
            if (self.len + 1) * 2 > self.keys.len() {
                return false;
            }
            self.keys[h] = key;
            self.len += 1;
        }
        self.ranges[h] = range;
        true
    }

    /// Takes row `key` out of the table, if it is there: the later slots of
    /// its probe run move back so every other row stays found.
    pub(crate) fn remove(&mut self, key: u64) {
        if self.keys.is_empty() {
            return;
        }
        let mask = self.keys.len() - 1;
        let mut hole = self.probe(key);
        if self.keys[hole] == EMPTY {
            return;
        }
        self.len -= 1;
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let k = self.keys[next];
            if k == EMPTY {
                break;
            }
            // An entry may fill the hole if its home is not in the cyclic
            // range `hole+1 ..= next` (it would be probed past the hole).
            let home = self.home(k);
            let stays = if hole <= next { hole < home && home <= next } else { hole < home || home <= next };
            if !stays {
                self.keys[hole] = k;
                self.ranges[hole] = self.ranges[next];
                hole = next;
            }
        }
        self.keys[hole] = EMPTY;
    }

    /// Rows held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slots in the table (a power of two, at least twice the rows).
    pub(crate) fn slots(&self) -> usize {
        self.keys.len()
    }

    /// Bytes reserved.
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.keys.capacity() * 8 + self.ranges.capacity() * 8
    }

    /// The mean number of slots a successful lookup of each key reads.
    #[cfg(test)]
    pub(crate) fn mean_probe_length(&self, keys: &[u64]) -> f64 {
        let mask = self.keys.len() - 1;
        let mut total = 0usize;
        for &key in keys {
            let mut h = self.home(key);
            total += 1;
            while self.keys[h] != key {
                h = (h + 1) & mask;
                total += 1;
            }
        }
        total as f64 / keys.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::pack_unchecked;

    #[test]
    fn finds_every_key_and_no_other() {
        let mut keys: Vec<u64> = (0..2000).map(|i| pack_unchecked(i % 13 - 6, i / 13 % 11, i / 143 - 3)).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut h = CellHash::default();
        h.build(keys.len(), keys.iter().enumerate().map(|(i, &k)| (k, (i as u32, i as u32 + 1))));
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(h.find(k), Some((i as u32, i as u32 + 1)));
        }
        for x in [-100, 7, 100_000] {
            assert_eq!(h.find(pack_unchecked(x, 3, 500)), None);
        }
        assert_eq!(CellHash::default().find(keys[0]), None);
    }

    #[test]
    fn rows_removed_and_added_in_place_stay_found() {
        // Keys that share homes (a small table, long probe runs that wrap
        // around its end), removed and put back in an order that moves
        // entries back across the wrap, against a map.
        let keys: Vec<u64> = (0..200u64).map(|i| i * 0x1_0000_0001 + (i % 7) * 3).collect();
        let mut h = CellHash::default();
        h.build(keys.len(), keys.iter().map(|&k| (k, (k as u32, 1))));
        let mut model: std::collections::BTreeMap<u64, (u32, u32)> = keys.iter().map(|&k| (k, (k as u32, 1))).collect();
        let mut seed = 5u64;
        for step in 0..20_000u32 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = keys[(seed >> 33) as usize % keys.len()];
            match (seed >> 20) % 3 {
                0 => {
                    h.remove(k);
                    model.remove(&k);
                }
                1 => {
                    // A full table refuses a new row; the model follows.
                    if h.upsert(k, (step, 2)) {
                        model.insert(k, (step, 2));
                    } else {
                        assert!(!model.contains_key(&k));
                    }
                }
                _ => {
                    if model.contains_key(&k) {
                        assert!(h.upsert(k, (step, 3)));
                        model.insert(k, (step, 3));
                    }
                }
            }
            assert_eq!(h.len(), model.len());
            if step % 97 == 0 {
                for &k in &keys {
                    assert_eq!(h.find(k), model.get(&k).copied(), "step {step}, key {k:#x}");
                }
            }
        }
    }

    #[test]
    fn structured_keys_keep_probes_short() {
        // Rows, layers, strides of powers of two, a dense block and a sparse
        // diagonal: the multiplicative hash keeps linear probing short.
        let sets: Vec<Vec<u64>> = vec![
            (0..4096).map(|i| pack_unchecked(i, 0, 0)).collect(),
            (0..4096).map(|i| pack_unchecked(0, i, 0)).collect(),
            (0..4096).map(|i| pack_unchecked(0, 0, i)).collect(),
            (0..4096).map(|i| pack_unchecked(i * 64, i * 32, 0)).collect(),
            (0..4096).map(|i| pack_unchecked(i % 16, i / 16 % 16, i / 256)).collect(),
            (0..4096).map(|i| pack_unchecked(i * 97, i * 89, i * 83)).collect(),
        ];
        for mut keys in sets {
            keys.sort_unstable();
            keys.dedup();
            let mut h = CellHash::default();
            h.build(keys.len(), keys.iter().map(|&k| (k, (0, 1))));
            let mean = h.mean_probe_length(&keys);
            assert!(mean < 2.5, "mean probe length {mean}");
        }
    }
}
