//! The open-addressing table that finds an occupied row of cells from its
//! packed `(y, z)` in O(1) expected probes, whatever the occupied cells'
//! bounding box: what a grid uses when a dense table over that box would be
//! too large or too sparse. The cells of a row are adjacent in the sorted
//! cell table, so a row's entry is its range there, searched for `x`.
//!
//! Multiplicative (Fibonacci) hashing of the key, linear probing, load
//! factor at most 1/2. A slot holds a 32-bit tag of the key and the entry's
//! index; a tag match is confirmed by the caller against the real key, so
//! distinct rows never merge (a hash collision costs a probe, never a wrong
//! answer). Rows are far fewer than cells (a row of a query box holds
//! several cells), so the table is small and stays in cache.

/// An empty slot (no cell index reaches `u32::MAX`: a grid holds fewer
/// cells than points, and at most `u32::MAX` points).
const EMPTY: u64 = u64::MAX;

/// The golden-ratio multiplier of Fibonacci hashing.
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Row key -> index of the row's entry.
#[derive(Clone, Debug, Default)]
pub(crate) struct CellHash {
    slots: Vec<u64>,
    /// `64 - log2(slots.len())`.
    shift: u32,
}

#[inline(always)]
fn tag(key: u64) -> u32 {
    (key ^ (key >> 32)) as u32
}

impl CellHash {
    /// Empties the table, keeping its buffer.
    pub(crate) fn clear(&mut self) {
        self.slots.clear();
    }

    /// Fills the table from distinct keys (`keys[i]` is entry `i`).
    pub(crate) fn build(&mut self, keys: impl ExactSizeIterator<Item = u64>) {
        let capacity = (keys.len() * 2).next_power_of_two().max(16);
        self.slots.clear();
        self.slots.resize(capacity, EMPTY);
        self.shift = 64 - capacity.trailing_zeros();
        let mask = capacity - 1;
        for (i, key) in keys.enumerate() {
            let mut h = self.home(key);
            while self.slots[h] != EMPTY {
                h = (h + 1) & mask;
            }
            self.slots[h] = (u64::from(tag(key)) << 32) | i as u64;
        }
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(MULTIPLIER) >> self.shift) as usize
    }

    /// The entry of `key`, if there is one; `is(i)` tells whether entry `i`
    /// has this key (checked only on a tag match).
    #[inline(always)]
    pub(crate) fn find(&self, key: u64, is: impl Fn(usize) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let t = tag(key);
        let mut h = self.home(key);
        loop {
            let slot = self.slots[h];
            if slot == EMPTY {
                return None;
            }
            if (slot >> 32) as u32 == t {
                let i = slot as u32 as usize;
                if is(i) {
                    return Some(i);
                }
            }
            h = (h + 1) & mask;
        }
    }

    /// Slots in the table (a power of two, at least twice the cells).
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Bytes reserved.
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.slots.capacity() * 8
    }

    /// The mean number of slots a successful lookup of each key reads.
    #[cfg(test)]
    pub(crate) fn mean_probe_length(&self, keys: &[u64]) -> f64 {
        let mask = self.slots.len() - 1;
        let mut total = 0usize;
        for (i, &key) in keys.iter().enumerate() {
            let mut h = self.home(key);
            total += 1;
            while self.slots[h] as u32 as usize != i {
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
        h.build(keys.iter().copied());
        let is = |k: u64| {
            let keys = &keys;
            move |i: usize| keys[i] == k
        };
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(h.find(k, is(k)), Some(i));
        }
        for x in [-100, 7, 100_000] {
            let k = pack_unchecked(x, 3, 500);
            assert_eq!(h.find(k, is(k)), None);
        }
        assert_eq!(CellHash::default().find(keys[0], is(keys[0])), None);
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
            h.build(keys.iter().copied());
            let mean = h.mean_probe_length(&keys);
            assert!(mean < 2.5, "mean probe length {mean}");
        }
    }
}
