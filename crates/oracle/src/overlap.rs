//! Whether two coordinates of a tensor share an element address, decided exactly: the
//! reading `tensor.output_addresses_distinct` (specs/tensor.yaml).
//!
//! Coordinates x and y share an address when sum(x[i] * Strides[i]) = sum(y[i] * Strides[i]).
//! Dimensions of size 1 never move the address. The answer, cheapest way first:
//!
//! 1. a 0 stride on a dimension of size above 1: coordinates 0 and 1 along it share one;
//! 2. nested strides: sorted by stride, each stride is larger than the farthest the
//!    smaller-stride dimensions reach together, so no two coordinates meet (packed, padded
//!    and permuted layouts);
//! 3. an address span (the largest address + 1) of at most `BITMAP_SPAN_LIMIT` elements:
//!    every coordinate, in row-major order, marks its address in a bitmap; the first address
//!    marked twice is shared;
//! 4. beyond: a search for the difference d = x - y of two coordinates that meet: d is not
//!    all 0, |d[i]| <= Sizes[i] - 1 and sum(d[i] * Strides[i]) = 0.

use dmlcts_tensor::Coordinates;

/// The largest address span settled with a bitmap (16 MiB of bits). Every output the harness
/// materializes (128 MiB at most, at least a byte per element) whose TotalTensorSizeInBytes
/// covers its sizes and strides spans at most 2^27 elements.
pub const BITMAP_SPAN_LIMIT: u128 = 1 << 27;

/// Two coordinates with one address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedAddress {
    /// Strides[dimension] is 0 on a dimension of size above 1.
    ZeroStride { dimension: usize },
    /// `first` comes before `second` in row-major order; both address `element`.
    Coordinates {
        first: Vec<u32>,
        second: Vec<u32>,
        element: u128,
    },
}

/// Two coordinates of a tensor of `sizes` and `strides` (one per dimension) that share an
/// address, or None when every address is distinct.
pub fn shared_address(sizes: &[u32], strides: &[u32]) -> Option<SharedAddress> {
    assert_eq!(sizes.len(), strides.len(), "a stride per dimension");
    if sizes.contains(&0) {
        return None; // no coordinates at all
    }
    if let Some(dimension) = (0..sizes.len()).find(|&d| sizes[d] > 1 && strides[d] == 0) {
        return Some(SharedAddress::ZeroStride { dimension });
    }
    if nested(sizes, strides) {
        return None;
    }
    let (first, second) = if span(sizes, strides) <= BITMAP_SPAN_LIMIT {
        shared_by_bitmap(sizes, strides)
    } else {
        shared_by_search(sizes, strides)
    }?;
    let element = address(&first, strides);
    Some(SharedAddress::Coordinates {
        first,
        second,
        element,
    })
}

/// The address of `coordinates`.
fn address(coordinates: &[u32], strides: &[u32]) -> u128 {
    coordinates
        .iter()
        .zip(strides)
        .map(|(&c, &s)| u128::from(c) * u128::from(s))
        .sum()
}

/// The largest address + 1.
fn span(sizes: &[u32], strides: &[u32]) -> u128 {
    let last: Vec<u32> = sizes.iter().map(|&s| s.saturating_sub(1)).collect();
    address(&last, strides) + 1
}

/// Way 2: sorted by stride, each moving dimension's stride is beyond the reach of those
/// before it. Sufficient for distinct addresses, not necessary.
fn nested(sizes: &[u32], strides: &[u32]) -> bool {
    let mut moving: Vec<(u32, u32)> = (0..sizes.len())
        .filter(|&d| sizes[d] > 1)
        .map(|d| (strides[d], sizes[d]))
        .collect();
    moving.sort();
    let mut reach: u128 = 0; // the farthest address the dimensions so far reach
    for (stride, size) in moving {
        if u128::from(stride) <= reach {
            return false;
        }
        reach += u128::from(size - 1) * u128::from(stride);
    }
    true
}

/// Way 3: the first coordinate, in row-major order, whose address an earlier one had, and
/// that earlier one. Memory: a bit per address of the span (the caller bounds the span).
fn shared_by_bitmap(sizes: &[u32], strides: &[u32]) -> Option<(Vec<u32>, Vec<u32>)> {
    let span = usize::try_from(span(sizes, strides)).expect("the caller bounds the span");
    let mut marked = vec![0u64; span.div_ceil(64)];
    let mut walk = Coordinates::new(sizes);
    while let Some(second) = walk.advance() {
        let at = address(second, strides);
        let (word, bit) = ((at / 64) as usize, at % 64);
        if marked[word] & (1 << bit) != 0 {
            let first = Coordinates::new(sizes)
                .find(|c| address(c, strides) == at)
                .expect("an earlier coordinate marked it");
            return Some((first, second.to_vec()));
        }
        marked[word] |= 1 << bit;
    }
    None
}

/// One dimension that moves the address, as the search sees it.
struct Moving {
    dimension: usize,
    stride: i128,
    /// Sizes[dimension] - 1: the largest |d| along it.
    bound: i128,
}

/// Way 4: a difference d (see the module's text), chosen dimension by dimension from the
/// largest stride. At dimension i the remaining sum must come to `target`; the dimensions
/// after it reach at most `reach_after[i]` either way and make only multiples of the
/// greatest common divisor of their strides, so d[i] is tried only where both can still
/// hold. By symmetry (-d meets as well) the first non-zero d[i] is positive. The pair is then
/// the positive part of d and the negative part.
fn shared_by_search(sizes: &[u32], strides: &[u32]) -> Option<(Vec<u32>, Vec<u32>)> {
    let mut moving: Vec<Moving> = (0..sizes.len())
        .filter(|&d| sizes[d] > 1)
        .map(|d| Moving {
            dimension: d,
            stride: i128::from(strides[d]),
            bound: i128::from(sizes[d] - 1),
        })
        .collect();
    moving.sort_by_key(|m| std::cmp::Reverse(m.stride));
    let count = moving.len();
    let mut d = vec![0i128; count];
    if let Some(still) = moving.iter().position(|m| m.stride == 0) {
        d[still] = 1; // a 0 stride on a moving dimension: one step along it meets
        return Some(pair_from_difference(sizes.len(), &moving, &d));
    }
    // [i] is about the dimensions after i (the last entry: none).
    let mut reach_after = vec![0i128; count];
    let mut gcd_after = vec![0i128; count];
    for i in (0..count.saturating_sub(1)).rev() {
        let next = &moving[i + 1];
        reach_after[i] = reach_after[i + 1] + next.bound * next.stride;
        gcd_after[i] = gcd(gcd_after[i + 1], next.stride);
    }
    let search = Search {
        moving: &moving,
        reach_after: &reach_after,
        gcd_after: &gcd_after,
    };
    if !search.from(0, 0, true, &mut d) {
        return None;
    }
    Some(pair_from_difference(sizes.len(), &moving, &d))
}

/// The two coordinates a difference d (over `moving`) joins, in row-major order.
fn pair_from_difference(dimensions: usize, moving: &[Moving], d: &[i128]) -> (Vec<u32>, Vec<u32>) {
    let mut positive = vec![0u32; dimensions];
    let mut negative = vec![0u32; dimensions];
    for (m, &di) in moving.iter().zip(d) {
        let magnitude = u32::try_from(di.unsigned_abs()).expect("|d| is below a size");
        if di > 0 {
            positive[m.dimension] = magnitude;
        } else {
            negative[m.dimension] = magnitude;
        }
    }
    if positive < negative {
        (positive, negative)
    } else {
        (negative, positive)
    }
}

struct Search<'a> {
    moving: &'a [Moving],
    /// reach_after[i]: sum of bound * stride over the dimensions after i.
    reach_after: &'a [i128],
    /// gcd_after[i]: the greatest common divisor of the strides after i (0: none).
    gcd_after: &'a [i128],
}

impl Search<'_> {
    /// Whether d[i..] can be chosen with sum(d[j] * stride[j]) = target over j >= i, and d
    /// not all 0 (`all_zero`: d[..i] is). Leaves the choice in `d`.
    fn from(&self, i: usize, target: i128, all_zero: bool, d: &mut [i128]) -> bool {
        let Some(m) = self.moving.get(i) else {
            return target == 0 && !all_zero;
        };
        let reach = self.reach_after[i];
        let gcd_rest = self.gcd_after[i];
        // |target - d[i] * stride| <= reach, |d[i]| <= bound, and d[i] >= 0 while all 0.
        let mut low = div_ceil(target - reach, m.stride).max(-m.bound);
        let high = div_floor(target + reach, m.stride).min(m.bound);
        if all_zero {
            low = low.max(0);
        }
        // The rest makes multiples of `gcd_rest` only (0 when there is no rest): the
        // remainder target - d[i] * stride must be one. Once a d[i] leaves one, the next
        // that does is `period` further on.
        let leaves_a_multiple = |di: i128| {
            let remainder = target - di * m.stride;
            if gcd_rest == 0 {
                remainder == 0
            } else {
                remainder % gcd_rest == 0
            }
        };
        let period = if gcd_rest == 0 {
            1
        } else {
            gcd_rest / gcd(gcd_rest, m.stride)
        };
        let mut di = low;
        while di <= high && !leaves_a_multiple(di) {
            di += 1;
        }
        while di <= high {
            d[i] = di;
            if self.from(i + 1, target - di * m.stride, all_zero && di == 0, d) {
                return true;
            }
            di += period;
        }
        d[i] = 0;
        false
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

/// floor(a / b) for b > 0.
fn div_floor(a: i128, b: i128) -> i128 {
    a.div_euclid(b)
}

/// ceil(a / b) for b > 0.
fn div_ceil(a: i128, b: i128) -> i128 {
    -(-a).div_euclid(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every pair of coordinates compared: the definition, for small tensors.
    fn shared_by_listing_every_pair(sizes: &[u32], strides: &[u32]) -> bool {
        let all: Vec<Vec<u32>> = Coordinates::new(sizes).collect();
        all.iter().enumerate().any(|(i, x)| {
            all[i + 1..]
                .iter()
                .any(|y| address(x, strides) == address(y, strides))
        })
    }

    /// A pair a way returned: two different coordinates, in bounds, in row-major order, with
    /// one address.
    fn is_a_shared_pair(sizes: &[u32], strides: &[u32], pair: &(Vec<u32>, Vec<u32>)) -> bool {
        let (x, y) = pair;
        let in_bounds =
            |c: &Vec<u32>| c.len() == sizes.len() && c.iter().zip(sizes).all(|(a, s)| a < s);
        in_bounds(x) && in_bounds(y) && x < y && address(x, strides) == address(y, strides)
    }

    /// 1 to 5 dimensions of 1 to 6, strides 0 to 12: small enough to list every pair, and
    /// mostly not nested.
    fn layout() -> impl Strategy<Value = (Vec<u32>, Vec<u32>)> {
        (1usize..=5).prop_flat_map(|dims| {
            (
                prop::collection::vec(1u32..=6, dims),
                prop::collection::vec(0u32..=12, dims),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn the_bitmap_finds_a_shared_address_exactly_when_listing_every_pair_does(
            (sizes, strides) in layout()
        ) {
            let found = shared_by_bitmap(&sizes, &strides);
            prop_assert_eq!(found.is_some(), shared_by_listing_every_pair(&sizes, &strides));
            if let Some(pair) = found {
                prop_assert!(is_a_shared_pair(&sizes, &strides, &pair), "{:?}", pair);
            }
        }

        #[test]
        fn the_search_finds_a_shared_address_exactly_when_listing_every_pair_does(
            (sizes, strides) in layout()
        ) {
            let found = shared_by_search(&sizes, &strides);
            prop_assert_eq!(found.is_some(), shared_by_listing_every_pair(&sizes, &strides));
            if let Some(pair) = found {
                prop_assert!(is_a_shared_pair(&sizes, &strides, &pair), "{:?}", pair);
            }
        }

        #[test]
        fn shared_address_is_some_exactly_when_listing_every_pair_finds_one(
            (sizes, strides) in layout()
        ) {
            let found = shared_address(&sizes, &strides);
            prop_assert_eq!(found.is_some(), shared_by_listing_every_pair(&sizes, &strides));
            match found {
                Some(SharedAddress::ZeroStride { dimension }) => {
                    prop_assert!(sizes[dimension] > 1 && strides[dimension] == 0);
                }
                Some(SharedAddress::Coordinates { first, second, element }) => {
                    prop_assert_eq!(address(&first, &strides), element);
                    prop_assert!(is_a_shared_pair(&sizes, &strides, &(first, second)));
                }
                None => {}
            }
        }

        #[test]
        fn nested_layouts_have_distinct_addresses((sizes, strides) in layout()) {
            if nested(&sizes, &strides) {
                prop_assert!(!shared_by_listing_every_pair(&sizes, &strides));
            }
        }
    }

    #[test]
    fn the_search_decides_spans_far_beyond_the_bitmap() {
        // Strides 2^16 + 1 and 2^16 on 2^16 x 2^16: d0 * 65537 = -d1 * 65536 needs |d0| to be
        // a multiple of 65536. Interleaved (not nested), distinct, spanning ~2^33 elements.
        let sizes = [65536, 65536];
        assert!(span(&sizes, &[65537, 65536]) > BITMAP_SPAN_LIMIT);
        assert!(!nested(&sizes, &[65537, 65536]));
        assert_eq!(shared_address(&sizes, &[65537, 65536]), None);
        // Strides 65536 and 32768 meet at d = (1, -2): (0, 2) and (1, 0) are both 65536.
        assert_eq!(
            shared_address(&sizes, &[65536, 32768]),
            Some(SharedAddress::Coordinates {
                first: vec![0, 2],
                second: vec![1, 0],
                element: 65536,
            })
        );
        // Three dimensions, the two largest strides meeting nothing by themselves: (0, 0, 32)
        // and (1, 0, 0) are both 2^20.
        let three = [4, 3, 1 << 16];
        let strides = [1 << 20, (1 << 20) + 1, 1 << 15];
        assert!(span(&three, &strides) > BITMAP_SPAN_LIMIT);
        assert_eq!(
            shared_address(&three, &strides),
            Some(SharedAddress::Coordinates {
                first: vec![0, 0, 32],
                second: vec![1, 0, 0],
                element: 1 << 20,
            })
        );
    }
}
