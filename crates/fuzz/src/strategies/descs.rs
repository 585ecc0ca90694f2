//! Valid descriptors within a level's tables: Split (input broadcast or strided, outputs laid
//! out any way that keeps their addresses distinct), Join (the same, mirrored) and Slice1
//! (windows with offsets, strides of either sign up to 2^31, outputs up to MaxCopiedElements).

use super::layout::{TensorLayout, layout, tensor};
use super::sizes::{MAX_ELEMENTS, sizes_for};
use super::tables::Tables;
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc,
};
use proptest::prelude::*;
use proptest::sample::Index;

/// What a valid descriptor is drawn from: an operator's tables at a level and, for the large
/// tier, the element size its tensors have (any the tables list, where they list none).
#[derive(Clone, Debug)]
pub struct Within {
    pub tables: Tables,
    pub large_element_size: Option<usize>,
}

impl Within {
    pub fn tables(kind: OperatorKind, level: FeatureLevel) -> Within {
        Within {
            tables: Tables::of(kind, level),
            large_element_size: None,
        }
    }

    fn data_types(&self) -> Vec<DataType> {
        let sized = self
            .large_element_size
            .map(|size| self.tables.data_types_of_size(size))
            .unwrap_or_default();
        match (sized.is_empty(), self.tables.data_types.is_empty()) {
            (false, _) => sized,
            (true, false) => self.tables.data_types.clone(),
            (true, true) => DataType::ALL.to_vec(),
        }
    }

    fn sizes(&self) -> BoxedStrategy<(DataType, Vec<u32>)> {
        let dims = self.tables.dims.clone();
        let large = self.large_element_size.is_some();
        (
            prop::sample::select(self.data_types()),
            sizes_for(dims, large),
        )
            .boxed()
    }
}

/// The oracle decides an interleaved output only up to 2^20 elements.
fn interleaving_allowed(sizes: &[u32]) -> bool {
    sizes.iter().map(|&s| u64::from(s)).product::<u64>() <= 1 << 20
}

/// Extra TotalTensorSizeInBytes: none mostly, whole words, or 1 to 3 bytes (a total that is
/// not a multiple of 4 but at least the minimum is valid).
fn extra_bytes() -> impl Strategy<Value = u64> {
    prop_oneof![8 => Just(0u64), 2 => (1u64..=4).prop_map(|w| 4 * w), 1 => 1u64..=3]
}

/// Splits `total` into 1 to `max_parts` positive parts.
fn partition(total: u32, max_parts: usize) -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(any::<Index>(), 0..max_parts).prop_map(move |cuts| {
        let mut points: Vec<u32> = cuts
            .iter()
            .map(|i| i.index(total as usize) as u32)
            .filter(|&p| p > 0)
            .collect();
        points.extend([0, total]);
        points.sort_unstable();
        points.dedup();
        points.windows(2).map(|w| w[1] - w[0]).collect()
    })
}

/// Mostly up to 5 parts; now and then up to 9 (counts that are not multiples of the batch
/// widths implementations use); and now and then exactly `MANY_PARTS` (11 to 13): part counts
/// of two digits, where an implementation that orders parts by their index as text puts 10
/// before 2. About one Split or Join in six, so a campaign of a few thousand cases meets
/// hundreds.
fn max_parts() -> impl Strategy<Value = usize> {
    prop_oneof![8 => Just(5usize), 2 => Just(9usize), 2 => MANY_PARTS]
}

/// Exact part counts past 10.
const MANY_PARTS: std::ops::RangeInclusive<usize> = 11..=13;

/// `count` parts along an axis of `total` (at least `count`): ones, the last taking the rest.
fn exact_parts(total: u32, count: usize) -> Vec<u32> {
    let mut parts = vec![1u32; count];
    if let Some(last) = parts.last_mut() {
        *last = total - (count as u32 - 1);
    }
    parts
}

fn with_axis(sizes: &[u32], axis: usize, value: u32) -> Vec<u32> {
    let mut s = sizes.to_vec();
    s[axis] = value;
    s
}

/// A valid Split within `within`.
pub fn split_in(within: &Within) -> BoxedStrategy<OperatorDesc> {
    within
        .sizes()
        .prop_flat_map(|(dt, sizes)| {
            let dims = sizes.len();
            (Just(dt), Just(sizes), 0..dims, max_parts())
        })
        .prop_flat_map(|(dt, mut sizes, axis, max_parts)| {
            let others: u64 = (sizes.iter().enumerate())
                .filter(|&(d, _)| d != axis)
                .map(|(_, &s)| u64::from(s))
                .product();
            let parts = if MANY_PARTS.contains(&max_parts) && others <= MAX_ELEMENTS / 16 {
                // The axis grows to hold the parts, if it must (to at most 13 times sizes that
                // hold at most MAX_ELEMENTS / 16 elements).
                sizes[axis] = sizes[axis].max(max_parts as u32);
                Just(exact_parts(sizes[axis], max_parts)).boxed()
            } else {
                partition(sizes[axis], max_parts.min(9)).boxed()
            };
            (Just(dt), Just(sizes), Just(axis), parts)
        })
        .prop_flat_map(|(dt, sizes, axis, parts)| {
            let n = parts.len();
            let interleave = interleaving_allowed(&sizes);
            (
                Just((dt, sizes, axis, parts)),
                layout(true, true),
                extra_bytes(),
                prop::collection::vec((layout(false, interleave), extra_bytes()), n),
            )
        })
        .prop_map(
            |((dt, sizes, axis, parts), input_layout, input_extra, outputs)| {
                OperatorDesc::Split(SplitDesc {
                    input_tensor: tensor(dt, &sizes, &input_layout, input_extra),
                    output_tensors: parts
                        .iter()
                        .zip(&outputs)
                        .map(|(&p, (l, e))| tensor(dt, &with_axis(&sizes, axis, p), l, *e))
                        .collect(),
                    axis: axis as u32,
                })
            },
        )
        .boxed()
}

/// A valid Join within `within`: a Split's parts as inputs, its whole as the output.
pub fn join_in(within: &Within) -> BoxedStrategy<OperatorDesc> {
    split_in(within)
        .prop_flat_map(|split| {
            let OperatorDesc::Split(split) = split else {
                unreachable!("split_in makes splits")
            };
            let n = split.output_tensors.len();
            let interleave = interleaving_allowed(&split.input_tensor.sizes);
            (
                Just(split),
                prop::collection::vec((layout(true, true), extra_bytes()), n),
                layout(false, interleave),
                extra_bytes(),
            )
        })
        .prop_map(|(split, inputs, output_layout, output_extra)| {
            let dt = split.input_tensor.data_type;
            OperatorDesc::Join(JoinDesc {
                input_tensors: split
                    .output_tensors
                    .iter()
                    .zip(&inputs)
                    .map(|(t, (l, e))| tensor(dt, &t.sizes, l, *e))
                    .collect(),
                output_tensor: tensor(dt, &split.input_tensor.sizes, &output_layout, output_extra),
                axis: split.axis,
            })
        })
        .boxed()
}

/// One dimension of a Slice1 window: (offset, size, stride, output size).
fn window(input_size: u32) -> impl Strategy<Value = (u32, u32, i32, u32)> {
    let beyond = i32::try_from(input_size).unwrap_or(i32::MAX);
    (0..input_size)
        .prop_flat_map(move |offset| {
            let stride = prop_oneof![
                8 => Just(1i32),
                6 => Just(-1i32),
                4 => 2i32..=3,
                4 => -3i32..=-2,
                2 => beyond.saturating_add(1)..=beyond.saturating_add(4),
                2 => beyond.saturating_add(4).saturating_neg()..=beyond.saturating_add(1).saturating_neg(),
                1 => Just(i32::MIN),
                1 => Just(i32::MAX),
            ];
            (Just(offset), 1..=(input_size - offset), stride)
        })
        .prop_flat_map(|(offset, size, stride)| {
            let max_copied = 1 + (size - 1) / stride.unsigned_abs();
            let output = prop_oneof![3 => Just(max_copied), 1 => 1..=max_copied];
            (Just(offset), Just(size), Just(stride), output)
        })
}

/// A valid Slice1 within `within`.
pub fn slice1_in(within: &Within) -> BoxedStrategy<OperatorDesc> {
    within
        .sizes()
        .prop_flat_map(|(dt, sizes)| {
            let windows: Vec<_> = sizes.iter().map(|&s| window(s)).collect();
            (Just(dt), Just(sizes), windows)
        })
        .prop_flat_map(|(dt, sizes, windows)| {
            let output_sizes: Vec<u32> = windows.iter().map(|w| w.3).collect();
            let interleave = interleaving_allowed(&output_sizes);
            (
                Just((dt, sizes, windows)),
                layout(true, true),
                extra_bytes(),
                layout(false, interleave),
                extra_bytes(),
            )
        })
        .prop_map(
            |((dt, sizes, windows), in_layout, in_extra, out_layout, out_extra)| {
                slice1_from(
                    dt,
                    &sizes,
                    &windows,
                    (&in_layout, in_extra),
                    (&out_layout, out_extra),
                )
            },
        )
        .boxed()
}

fn slice1_from(
    dt: DataType,
    sizes: &[u32],
    windows: &[(u32, u32, i32, u32)],
    input: (&TensorLayout, u64),
    output: (&TensorLayout, u64),
) -> OperatorDesc {
    let output_sizes: Vec<u32> = windows.iter().map(|w| w.3).collect();
    OperatorDesc::Slice1(Slice1Desc {
        input_tensor: tensor(dt, sizes, input.0, input.1),
        output_tensor: tensor(dt, &output_sizes, output.0, output.1),
        dimension_count: sizes.len() as u32,
        input_window_offsets: windows.iter().map(|w| w.0).collect(),
        input_window_sizes: windows.iter().map(|w| w.1).collect(),
        input_window_strides: windows.iter().map(|w| w.2).collect(),
    })
}

/// A valid descriptor of `kind` within `within`'s tables.
pub fn desc_in(within: &Within) -> BoxedStrategy<OperatorDesc> {
    match within.tables.kind {
        OperatorKind::Split => split_in(within),
        OperatorKind::Join => join_in(within),
        OperatorKind::Slice1 => slice1_in(within),
    }
}
