//! How a tensor's elements lie in its buffer: packed, padded, permuted, broadcast (inputs),
//! interleaved (two dimensions neither nested in the other, every address still distinct),
//! and what becomes of the strides of size-1 dimensions (0, or 2^32 - 1: they never move an
//! address, so outputs may have them too).

use dmlcts_tensor::{DataType, TensorDesc};
use proptest::prelude::*;
use proptest::sample::Index;

/// The arrangement of the dimensions.
#[derive(Clone, Debug)]
pub enum Layout {
    Packed,
    /// Row-major with extra elements after each dimension (`padding[d]`).
    Padded(Vec<u32>),
    /// Dimensions nested in another order (`order`, outermost first), with padding.
    Permuted {
        order: Vec<Index>,
        padding: Vec<u32>,
    },
    /// Inputs only: the dimensions marked true have stride 0.
    Broadcast(Vec<bool>),
    /// A dimension of size n >= 3 with stride p and another of size m >= 2 with stride p + 1,
    /// where p >= m: p + 1 <= (n - 1) p, so neither is nested in the other, and p >= m keeps
    /// every address distinct. `pair` picks the two; `stretch` adds to p. The other
    /// dimensions nest outside them. Packed when no two dimensions are that large.
    Interleaved {
        pair: (u8, u8),
        stretch: u32,
    },
}

/// What a size-1 dimension's stride becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitStride {
    /// As the layout made it.
    Keep,
    Zero,
    /// 2^32 - 1: any index arithmetic that multiplies it by a size overflows 32 bits.
    Largest,
}

/// A layout and the strides of its size-1 dimensions.
#[derive(Clone, Debug)]
pub struct TensorLayout {
    pub layout: Layout,
    pub unit_strides: Vec<UnitStride>,
}

impl TensorLayout {
    pub const PACKED: TensorLayout = TensorLayout {
        layout: Layout::Packed,
        unit_strides: Vec::new(),
    };
}

/// A layout for an input (`allow_broadcast`) or an output; `allow_interleaved` is off where
/// the oracle cannot decide an interleaved output (more than 2^20 elements).
pub fn layout(allow_broadcast: bool, allow_interleaved: bool) -> BoxedStrategy<TensorLayout> {
    let padding = || prop::collection::vec(prop_oneof![3 => Just(0u32), 1 => 1u32..=3], 8);
    let mut choices = vec![
        (8, Just(Layout::Packed).boxed()),
        (4, padding().prop_map(Layout::Padded).boxed()),
        (
            4,
            (prop::collection::vec(any::<Index>(), 8), padding())
                .prop_map(|(order, padding)| Layout::Permuted { order, padding })
                .boxed(),
        ),
    ];
    if allow_broadcast {
        choices.push((
            2,
            prop::collection::vec(any::<bool>(), 8)
                .prop_map(Layout::Broadcast)
                .boxed(),
        ));
    }
    if allow_interleaved {
        choices.push((
            1,
            (any::<u8>(), any::<u8>(), 0u32..=2)
                .prop_map(|(a, b, stretch)| Layout::Interleaved {
                    pair: (a, b),
                    stretch,
                })
                .boxed(),
        ));
    }
    let unit = prop_oneof![
        8 => Just(UnitStride::Keep),
        2 => Just(UnitStride::Zero),
        1 => Just(UnitStride::Largest),
    ];
    (
        prop::strategy::Union::new_weighted(choices),
        prop::collection::vec(unit, 8),
    )
        .prop_map(|(layout, unit_strides)| TensorLayout {
            layout,
            unit_strides,
        })
        .boxed()
}

/// A tensor with these sizes laid out as `layout`, with `extra_bytes` more
/// TotalTensorSizeInBytes than the minimum.
pub fn tensor(
    data_type: DataType,
    sizes: &[u32],
    layout: &TensorLayout,
    extra_bytes: u64,
) -> TensorDesc {
    let dims = sizes.len();
    let row_major: Vec<usize> = (0..dims).collect();
    let mut strides: Option<Vec<u32>> = match &layout.layout {
        Layout::Packed => None,
        Layout::Padded(padding) => Some(nested_strides(sizes, &row_major, padding, 1)),
        Layout::Permuted { order, padding } => {
            // A permutation from the indices: pick the remaining dimensions one by one.
            let mut remaining = row_major.clone();
            let mut chosen = Vec::with_capacity(dims);
            for index in order.iter().take(dims) {
                chosen.push(remaining.remove(index.index(remaining.len())));
            }
            Some(nested_strides(sizes, &chosen, padding, 1))
        }
        Layout::Broadcast(zero) => {
            let mut strides = nested_strides(sizes, &row_major, &[], 1);
            for (stride, &zero) in strides.iter_mut().zip(zero) {
                if zero {
                    *stride = 0;
                }
            }
            Some(strides)
        }
        Layout::Interleaved { pair, stretch } => interleaved_strides(sizes, *pair, *stretch),
    };
    let unit_changes = sizes
        .iter()
        .zip(&layout.unit_strides)
        .any(|(&size, &unit)| size == 1 && unit != UnitStride::Keep);
    if unit_changes {
        let mut changed = strides.unwrap_or_else(|| nested_strides(sizes, &row_major, &[], 1));
        for (d, (&size, &unit)) in sizes.iter().zip(&layout.unit_strides).enumerate() {
            match unit {
                _ if size != 1 => {}
                UnitStride::Keep => {}
                UnitStride::Zero => changed[d] = 0,
                UnitStride::Largest => changed[d] = u32::MAX,
            }
        }
        strides = Some(changed);
    }
    let mut desc = TensorDesc::strided(data_type, sizes, strides.as_deref());
    // A layout whose buffer would be far larger than its elements (padding or interleaving
    // on a large tensor) is packed instead: every byte of an input is generated.
    let packed = TensorDesc::packed(data_type, sizes);
    if desc.total_tensor_size_in_bytes > 4 * packed.total_tensor_size_in_bytes + (64 << 10) {
        desc = packed;
    }
    desc.total_tensor_size_in_bytes += extra_bytes;
    desc
}

/// Strides nesting the dimensions in `order` (outermost first), each padded, the innermost
/// with stride `first`.
fn nested_strides(sizes: &[u32], order: &[usize], padding: &[u32], first: u32) -> Vec<u32> {
    let mut strides = vec![0u32; sizes.len()];
    let mut running = first;
    for &d in order.iter().rev() {
        strides[d] = running;
        let padded = sizes[d].saturating_add(padding.get(d).copied().unwrap_or(0));
        running = running.saturating_mul(padded);
    }
    strides
}

/// `Layout::Interleaved`'s strides, or None (packed) when no dimension has size 3 or more
/// beside another of size 2 or more.
fn interleaved_strides(sizes: &[u32], pair: (u8, u8), stretch: u32) -> Option<Vec<u32>> {
    let wide: Vec<usize> = (0..sizes.len()).filter(|&d| sizes[d] >= 3).collect();
    if wide.is_empty() {
        return None;
    }
    let a = wide[usize::from(pair.0) % wide.len()];
    let others: Vec<usize> = (0..sizes.len())
        .filter(|&d| d != a && sizes[d] >= 2)
        .collect();
    if others.is_empty() {
        return None;
    }
    let b = others[usize::from(pair.1) % others.len()];
    let (n, m) = (sizes[a], sizes[b]);
    let p = m.saturating_add(stretch);
    let q = p.saturating_add(1);
    let reach = (n - 1)
        .saturating_mul(p)
        .saturating_add((m - 1).saturating_mul(q));
    let rest: Vec<usize> = (0..sizes.len()).filter(|&d| d != a && d != b).collect();
    let mut strides = nested_strides(sizes, &rest, &[], reach.saturating_add(1));
    strides[a] = p;
    strides[b] = q;
    Some(strides)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_oracle::validate;
    use dmlcts_tensor::{FeatureLevel, OperatorDesc, Slice1Desc};

    fn as_output(desc: TensorDesc) -> OperatorDesc {
        let dims = desc.sizes.len();
        OperatorDesc::Slice1(Slice1Desc {
            input_tensor: TensorDesc::packed(desc.data_type, &desc.sizes),
            output_tensor: desc.clone(),
            dimension_count: dims as u32,
            input_window_offsets: vec![0; dims],
            input_window_sizes: desc.sizes.clone(),
            input_window_strides: vec![1; dims],
        })
    }

    #[test]
    fn interleaved_outputs_are_not_nested_yet_every_address_is_distinct() {
        let layout = TensorLayout {
            layout: Layout::Interleaved {
                pair: (0, 0),
                stretch: 0,
            },
            unit_strides: Vec::new(),
        };
        let desc = tensor(DataType::Float32, &[3, 2], &layout, 0);
        assert_eq!(desc.strides, Some(vec![2, 3]));
        assert!(validate(&as_output(desc), FeatureLevel::L4_1).is_ok());
        for sizes in [[5u32, 1, 4, 2], [2, 3, 7, 2], [1, 9, 1, 3]] {
            for stretch in 0..=2 {
                let layout = TensorLayout {
                    layout: Layout::Interleaved {
                        pair: (3, 1),
                        stretch,
                    },
                    unit_strides: Vec::new(),
                };
                let desc = tensor(DataType::Uint8, &sizes, &layout, 0);
                assert!(desc.strides.is_some());
                assert!(validate(&as_output(desc), FeatureLevel::L4_1).is_ok());
            }
        }
    }

    #[test]
    fn size_one_dimensions_may_have_stride_zero_or_the_largest_on_an_output() {
        let layout = TensorLayout {
            layout: Layout::Packed,
            unit_strides: vec![
                UnitStride::Zero,
                UnitStride::Keep,
                UnitStride::Largest,
                UnitStride::Zero,
            ],
        };
        let desc = tensor(DataType::Float16, &[1, 3, 1, 2], &layout, 0);
        assert_eq!(desc.strides, Some(vec![0, 2, u32::MAX, 1]));
        assert_eq!(desc.total_tensor_size_in_bytes, 12);
        assert!(validate(&as_output(desc), FeatureLevel::L4_1).is_ok());
    }
}
