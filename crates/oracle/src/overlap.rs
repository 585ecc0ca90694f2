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
//! 4. beyond: more coordinates than addresses in the span share one; otherwise a search for
//!    the difference d = x - y of two coordinates that meet: d is not all 0,
//!    |d[i]| <= Sizes[i] - 1 and sum(d[i] * Strides[i]) = 0.

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
    /// More coordinates than addresses in the span (found without listing them).
    MoreElementsThanAddresses { elements: u128, addresses: u128 },
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
    let span = span(sizes, strides);
    let elements: u128 = sizes.iter().map(|&n| u128::from(n)).product();
    let (first, second) = if span <= BITMAP_SPAN_LIMIT {
        shared_by_bitmap(sizes, strides)
    } else if elements > span {
        return Some(SharedAddress::MoreElementsThanAddresses {
            elements,
            addresses: span,
        });
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

/// The most differences the search lists in its table (8 MiB of entries).
const TABLE_LIMIT: u128 = 1 << 18;

/// One dimension that moves the address, as the search sees it.
struct Moving {
    dimension: usize,
    stride: i128,
    /// Sizes[dimension] - 1: the largest |d| along it.
    bound: i128,
}

/// Way 4: a difference d (see the module's text). The smallest-stride dimensions, as many as
/// keep their differences within `TABLE_LIMIT`, are listed whole in a table of sums, sorted;
/// the others are chosen one by one from the largest stride, each d[i] tried only where the
/// dimensions after it (table included) can still make the rest: within their reach either
/// way, and a multiple of the greatest common divisor of their strides. What is left is
/// looked up in the table. By symmetry (-d meets as well) the first non-zero d[i] chosen is
/// positive. The pair is then the positive part of d and the negative part.
fn shared_by_search(sizes: &[u32], strides: &[u32]) -> Option<(Vec<u32>, Vec<u32>)> {
    search_with_table_limit(sizes, strides, TABLE_LIMIT)
}

/// `shared_by_search` with at most `table_limit` differences in the table (tests take it
/// down to 1, a search without a table).
fn search_with_table_limit(
    sizes: &[u32],
    strides: &[u32],
    table_limit: u128,
) -> Option<(Vec<u32>, Vec<u32>)> {
    let mut moving: Vec<Moving> = (0..sizes.len())
        .filter(|&d| sizes[d] > 1)
        .map(|d| Moving {
            dimension: d,
            stride: i128::from(strides[d]),
            bound: i128::from(sizes[d] - 1),
        })
        .collect();
    moving.sort_by_key(|m| m.stride);
    let mut d = vec![0i128; moving.len()];
    if let Some(still) = moving.iter().position(|m| m.stride == 0) {
        d[still] = 1; // a 0 stride on a moving dimension: one step along it meets
        return Some(pair_from_difference(sizes.len(), &moving, &d));
    }
    let mut listed = 0;
    let mut entries: u128 = 1;
    while let Some(m) = moving.get(listed) {
        let choices = 2 * m.bound as u128 + 1;
        if entries * choices > table_limit {
            break;
        }
        entries *= choices;
        listed += 1;
    }
    let (low, high) = moving.split_at(listed);
    let table = Table::new(low);
    // Within the table's dimensions alone: a non-zero difference whose sum is 0.
    if let Some(index) = table.find(0, true) {
        table.decode(index, &mut d[..listed]);
        return Some(pair_from_difference(sizes.len(), &moving, &d));
    }
    // The others, largest stride first: [i] is about those after the i-th chosen, the
    // table's included.
    let order: Vec<usize> = (listed..moving.len()).rev().collect();
    let mut reach_after = vec![table.reach; order.len()];
    let mut gcd_after = vec![table.gcd; order.len()];
    for i in (0..order.len().saturating_sub(1)).rev() {
        let next = &moving[order[i + 1]];
        reach_after[i] = reach_after[i + 1] + next.bound * next.stride;
        gcd_after[i] = gcd(gcd_after[i + 1], next.stride);
    }
    let search = Search {
        high,
        listed,
        reach_after: &reach_after,
        gcd_after: &gcd_after,
        table: &table,
    };
    if !search.from(0, 0, true, &mut d) {
        return None;
    }
    Some(pair_from_difference(sizes.len(), &moving, &d))
}

/// Every sum of d[i] * stride[i] over some dimensions, |d[i]| <= bound, each with the index
/// of its d (mixed radix, digit d[i] + bound), sorted by sum.
struct Table {
    dims: Vec<(i128, i128)>, // (stride, bound)
    sums: Vec<(i128, u32)>,
    /// The index of d = 0.
    zero: u32,
    /// The farthest a sum reaches either way, and the gcd of the strides (0: no dimension).
    reach: i128,
    gcd: i128,
}

impl Table {
    fn new(dims: &[Moving]) -> Table {
        let dims: Vec<(i128, i128)> = dims.iter().map(|m| (m.stride, m.bound)).collect();
        let entries: u32 = dims.iter().map(|&(_, b)| 2 * b as u32 + 1).product();
        let mut zero = 0;
        for &(_, bound) in dims.iter().rev() {
            zero = zero * (2 * bound as u32 + 1) + bound as u32;
        }
        let mut table = Table {
            reach: dims.iter().map(|&(s, b)| s * b).sum(),
            gcd: dims.iter().fold(0, |g, &(s, _)| gcd(g, s)),
            dims,
            sums: Vec::with_capacity(entries as usize),
            zero,
        };
        let mut d = vec![0i128; table.dims.len()];
        for index in 0..entries {
            table.decode(index, &mut d);
            let sum = table.dims.iter().zip(&d).map(|(&(s, _), &di)| s * di).sum();
            table.sums.push((sum, index));
        }
        table.sums.sort_unstable();
        table
    }

    /// The d of an index.
    fn decode(&self, mut index: u32, d: &mut [i128]) {
        for (&(_, bound), di) in self.dims.iter().zip(d.iter_mut()) {
            let choices = 2 * bound as u32 + 1;
            *di = i128::from(index % choices) - bound;
            index /= choices;
        }
    }

    /// An index whose sum is `sum` (its d not all 0 when `nonzero`).
    fn find(&self, sum: i128, nonzero: bool) -> Option<u32> {
        let first = self.sums.partition_point(|&(s, _)| s < sum);
        self.sums[first..]
            .iter()
            .take_while(|&&(s, _)| s == sum)
            .map(|&(_, index)| index)
            .find(|&index| !nonzero || index != self.zero)
    }
}

struct Search<'a> {
    /// The dimensions outside the table, in ascending stride (chosen from the last).
    high: &'a [Moving],
    /// How many dimensions the table holds (the first of `d`).
    listed: usize,
    /// [i]: the farthest the dimensions after the i-th chosen reach, the table's included.
    reach_after: &'a [i128],
    /// [i]: the gcd of their strides.
    gcd_after: &'a [i128],
    table: &'a Table,
}

impl Search<'_> {
    /// Whether d can be completed from the i-th chosen dimension on so that its sum there
    /// is `target`, with d not all 0 (`all_zero`: nothing chosen so far is non-zero).
    fn from(&self, i: usize, target: i128, all_zero: bool, d: &mut [i128]) -> bool {
        if i == self.high.len() {
            // Only the table is left; all 0 so far means the table alone, already searched.
            if all_zero {
                return false;
            }
            return match self.table.find(target, false) {
                Some(index) => {
                    self.table.decode(index, &mut d[..self.listed]);
                    true
                }
                None => false,
            };
        }
        let m = &self.high[self.high.len() - 1 - i];
        let at = self.listed + self.high.len() - 1 - i; // its place in d
        let reach = self.reach_after[i];
        let gcd_rest = self.gcd_after[i];
        // |target - d[i] * stride| <= reach, |d[i]| <= bound, and d[i] >= 0 while all 0.
        let mut low = div_ceil(target - reach, m.stride).max(-m.bound);
        let high = div_floor(target + reach, m.stride).min(m.bound);
        if all_zero {
            low = low.max(0);
        }
        // target - d[i] * stride must be a multiple of gcd_rest (exactly 0 with nothing after).
        let Some((first, period)) = congruent_from(low, target, m.stride, gcd_rest) else {
            return false;
        };
        let mut next = Some(first);
        while let Some(di) = next.filter(|&di| di <= high) {
            d[at] = di;
            if self.from(i + 1, target - di * m.stride, all_zero && di == 0, d) {
                return true;
            }
            next = di.checked_add(period);
        }
        d[at] = 0;
        false
    }
}

/// The smallest d >= low with target - d * stride a multiple of `modulus` (with modulus 0:
/// exactly 0), and the step to the next such d (none after it: i128::MAX); None when there
/// is no such d.
fn congruent_from(low: i128, target: i128, stride: i128, modulus: i128) -> Option<(i128, i128)> {
    if modulus == 0 {
        let d = target / stride;
        return (target % stride == 0 && d >= low).then_some((d, i128::MAX));
    }
    // d * stride = target (mod modulus): solvable when gcd(stride, modulus) divides target.
    let g = gcd(stride, modulus);
    if target % g != 0 {
        return None;
    }
    let period = modulus / g;
    let residue = (target / g).rem_euclid(period) * inverse(stride / g, period) % period;
    let first = low + (residue - low).rem_euclid(period);
    Some((first, period))
}

/// x with a * x = 1 (mod m), for gcd(a, m) = 1 (0 when m is 1).
fn inverse(a: i128, m: i128) -> i128 {
    // Extended Euclid on (a mod m, m), tracking the coefficient of a.
    let (mut r0, mut r1) = (a.rem_euclid(m), m);
    let (mut x0, mut x1) = (1i128, 0i128);
    while r1 != 0 {
        let q = r0 / r1;
        (r0, r1) = (r1, r0 - q * r1);
        (x0, x1) = (x1, x0 - q * x1);
    }
    x0.rem_euclid(m)
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
            (sizes, strides) in layout(),
            table_limit in prop::sample::select(vec![1u128, 12, 200, TABLE_LIMIT]),
        ) {
            let found = search_with_table_limit(&sizes, &strides, table_limit);
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
                Some(SharedAddress::MoreElementsThanAddresses { .. }) => {
                    prop_assert!(false, "small tensors are settled by the bitmap");
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
