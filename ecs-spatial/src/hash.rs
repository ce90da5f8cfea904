//! The open-addressing table that finds an occupied cell from its packed
//! key in O(1) expected probes, whatever the occupied cells' bounding box:
//! what a grid uses when a dense table over that box would be too large or
//! too sparse.
//!
//! Multiplicative (Fibonacci) hashing of the packed key, linear probing,
//! load factor at most 1/2. A slot holds a 32-bit tag of the key and the
//! cell's index in the grid's sorted cell table; a tag match is confirmed
//! against the table's key, so distinct cells never merge (a hash collision
//! costs a probe, never a wrong answer).

use crate::grid::Cell;

/// An empty slot (no cell index reaches `u32::MAX`: a grid holds fewer
/// cells than points, and at most `u32::MAX` points).
const EMPTY: u64 = u64::MAX;

/// The golden-ratio multiplier of Fibonacci hashing.
const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// Cell key -> index in the sorted cell table.
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

    /// Fills the table from the sorted, distinct cell keys (`keys[i]` is cell `i`).
    pub(crate) fn build(&mut self, keys: &[u64]) {
        let capacity = (keys.len() * 2).next_power_of_two().max(16);
        self.slots.clear();
        self.slots.resize(capacity, EMPTY);
        self.shift = 64 - capacity.trailing_zeros();
        let mask = capacity - 1;
        for (i, &key) in keys.iter().enumerate() {
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

    /// The index of the cell `key` in `cells` (whose keys the table was
    /// built from), if it is occupied.
    #[inline(always)]
    pub(crate) fn find(&self, key: u64, cells: &[Cell]) -> Option<usize> {
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
                if cells.get(i).is_some_and(|c| c.key.raw() == key) {
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
    use crate::cell::{CellKey, pack_unchecked};

    fn cells_of(keys: &[u64]) -> Vec<Cell> {
        keys.iter().map(|&k| Cell { key: CellKey::from_raw_unchecked(k), start: 0, count: 1 }).collect()
    }

    #[test]
    fn finds_every_key_and_no_other() {
        let mut keys: Vec<u64> = (0..2000).map(|i| pack_unchecked(i % 13 - 6, i / 13 % 11, i / 143 - 3)).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut h = CellHash::default();
        h.build(&keys);
        let cells = cells_of(&keys);
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(h.find(k, &cells), Some(i));
        }
        for x in [-100, 7, 100_000] {
            assert_eq!(h.find(pack_unchecked(x, 3, 500), &cells), None);
        }
        assert_eq!(CellHash::default().find(keys[0], &cells), None);
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
            h.build(&keys);
            let mean = h.mean_probe_length(&keys);
            assert!(mean < 2.5, "mean probe length {mean}");
        }
    }
}
