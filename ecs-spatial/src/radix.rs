//! LSD radix sort on integer keys, with caller-owned scratch so repeated sorts
//! allocate nothing once the buffers have grown.

/// Bits per digit: 2048 buckets, whose counts (8 KiB) stay in L1.
const DIGIT_BITS: u32 = 11;
const BUCKETS: usize = 1 << DIGIT_BITS;

/// Stable LSD radix sort of `items` by the low `key_bits` bits of `key(item)`.
///
/// Digits are 11 bits wide; one pass over the data builds the histograms of
/// every digit, and a digit whose values all fall in one bucket is skipped.
/// `scratch` and `counts` are working space (their contents are ignored and
/// overwritten); they only grow.
///
/// ```
/// use ecs_spatial::radix_sort_by_key;
/// let mut items = vec![(5u64, 'a'), (1, 'b'), (5, 'c'), (0, 'd')];
/// let (mut scratch, mut counts) = (Vec::new(), Vec::new());
/// radix_sort_by_key(&mut items, &mut scratch, &mut counts, 3, |&(k, _)| k);
/// assert_eq!(items, vec![(0, 'd'), (1, 'b'), (5, 'a'), (5, 'c')]);
/// ```
pub fn radix_sort_by_key<T: Copy>(
    items: &mut Vec<T>,
    scratch: &mut Vec<T>,
    counts: &mut Vec<u32>,
    key_bits: u32,
    key: impl Fn(&T) -> u64,
) {
    let n = items.len();
    if n < 2 || key_bits == 0 {
        return;
    }
    assert!(n <= u32::MAX as usize, "radix_sort_by_key sorts at most u32::MAX items");
    let key_bits = key_bits.min(64);
    let passes = key_bits.div_ceil(DIGIT_BITS) as usize;
    counts.clear();
    counts.resize(passes * BUCKETS, 0);
    for item in items.iter() {
        let k = key(item);
        for pass in 0..passes {
            let digit = ((k >> (pass as u32 * DIGIT_BITS)) as usize) & (BUCKETS - 1);
            counts[pass * BUCKETS + digit] += 1;
        }
    }
    scratch.clear();
    scratch.extend_from_slice(items);
    for pass in 0..passes {
        let hist = &mut counts[pass * BUCKETS..(pass + 1) * BUCKETS];
        if hist.iter().any(|&c| c as usize == n) {
            continue; // every item has the same digit: this pass would not move anything
        }
        // Exclusive prefix sums turn counts into write positions.
        let mut sum = 0u32;
        for c in hist.iter_mut() {
            let here = *c;
            *c = sum;
            sum += here;
        }
        let shift = pass as u32 * DIGIT_BITS;
        for item in items.iter() {
            let digit = ((key(item) >> shift) as usize) & (BUCKETS - 1);
            let slot = &mut hist[digit];
            scratch[*slot as usize] = *item;
            *slot += 1;
        }
        std::mem::swap(items, scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_a_stable_std_sort(
            keys in prop::collection::vec(any::<u64>(), 0..500),
            bits in prop::sample::select(vec![1u32, 7, 11, 12, 22, 33, 63, 64]),
        ) {
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            let mut items: Vec<(u64, usize)> = keys.iter().enumerate().map(|(i, &k)| (k & mask, i)).collect();
            let mut expected = items.clone();
            expected.sort_by_key(|&(k, _)| k);
            let (mut scratch, mut counts) = (Vec::new(), Vec::new());
            radix_sort_by_key(&mut items, &mut scratch, &mut counts, bits, |&(k, _)| k);
            prop_assert_eq!(items, expected);
        }
    }

    #[test]
    fn constant_digits_are_skipped_but_result_is_sorted() {
        let mut items: Vec<u64> = (0..1000u64).rev().map(|i| (i << 22) | 0x155).collect();
        let (mut scratch, mut counts) = (Vec::new(), Vec::new());
        radix_sort_by_key(&mut items, &mut scratch, &mut counts, 40, |&k| k);
        assert!(items.windows(2).all(|w| w[0] < w[1]));
    }
}
