//! Tensor sizes: small ones nearly always (an element budget first, then sizes), and the large
//! tier, past 2^20 elements, which a campaign schedules by case index (`LARGE_TIER_EVERY`) so
//! that every element size the tables allow reaches it in a few thousand cases.

use proptest::prelude::*;
use std::ops::RangeInclusive;

/// Generated tensors of the small tier have at most this many elements.
pub const MAX_ELEMENTS: u64 = 4096;

/// The large tier's element counts: just past 2^20 (where implementations switch to chunked,
/// threaded or 64-bit paths), for every element size.
pub const LARGE_TIER_ELEMENTS: RangeInclusive<u64> = ((1 << 20) + 1)..=((1 << 20) + (1 << 16));

/// 1 to 8 dimensions (or `dims`), sizes biased to small values: an element budget is drawn
/// first (mostly up to 64, sometimes up to 512, now and then up to `MAX_ELEMENTS`) and the
/// largest size is halved until the tensor fits it. Shrinking drives the budget, and so the
/// tensor, down.
pub fn sizes_in(dims: RangeInclusive<usize>) -> impl Strategy<Value = Vec<u32>> {
    let size = prop_oneof![6 => 1u32..=3, 3 => 4u32..=8, 1 => 9u32..=64];
    let budget = prop_oneof![6 => 1u64..=64, 3 => 65u64..=512, 1 => 513u64..=MAX_ELEMENTS];
    (prop::collection::vec(size, dims), budget).prop_map(|(mut sizes, budget)| {
        while sizes.iter().map(|&s| u64::from(s)).product::<u64>() > budget {
            let largest = (0..sizes.len()).max_by_key(|&i| sizes[i]).unwrap_or(0);
            sizes[largest] = sizes[largest].div_ceil(2);
        }
        sizes
    })
}

/// `sizes_in(1..=8)`.
pub fn sizes() -> impl Strategy<Value = Vec<u32>> {
    sizes_in(1..=8)
}

/// A tensor of `dims` dimensions with `LARGE_TIER_ELEMENTS` elements: inner sizes small, the
/// outermost whatever makes up the count.
pub fn large_sizes_in(dims: RangeInclusive<usize>) -> impl Strategy<Value = Vec<u32>> {
    let (low, high) = (*dims.start(), *dims.end());
    let inner = prop::collection::vec(prop_oneof![1u32..=8, 9u32..=300], low.max(1) - 1..high);
    (inner, LARGE_TIER_ELEMENTS).prop_map(move |(mut inner, elements)| {
        // The inner sizes leave the outermost at least 16 (the count overshoots by less
        // than one inner block).
        while inner.iter().map(|&s| u64::from(s)).product::<u64>() > elements / 16 {
            let largest = (0..inner.len()).max_by_key(|&i| inner[i]).unwrap_or(0);
            inner[largest] = inner[largest].div_ceil(2);
        }
        let inner_count: u64 = inner.iter().map(|&s| u64::from(s)).product();
        let outer = elements.div_ceil(inner_count.max(1)).max(1);
        let mut sizes = vec![u32::try_from(outer).unwrap_or(u32::MAX)];
        sizes.extend(inner);
        sizes
    })
}

/// Sizes of `dims` dimensions, in the large tier when `large`: the tier is a flag that shrinks
/// to the small sizes first, so a failure that needs no large tensor ends small.
pub fn sizes_for(dims: RangeInclusive<usize>, large: bool) -> BoxedStrategy<Vec<u32>> {
    if !large {
        return sizes_in(dims).boxed();
    }
    prop::bool::weighted(1.0)
        .prop_flat_map(move |large| {
            if large {
                large_sizes_in(dims.clone()).boxed()
            } else {
                sizes_in(dims.clone()).boxed()
            }
        })
        .boxed()
}
