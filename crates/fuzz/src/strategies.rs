//! proptest strategies for descriptors and cases, public so a backend author's own tests can
//! use them: valid descriptors of each operator, random bit-pattern inputs, and near misses
//! (a valid descriptor with one rule broken).

use dmlcts_harness::corpus::data::TensorData;
use dmlcts_harness::{Case, Expectation};
use dmlcts_oracle::validate;
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc, TensorDesc,
};
use proptest::prelude::*;
use proptest::sample::Index;

/// Generated tensors have at most this many elements.
pub const MAX_ELEMENTS: u64 = 4096;

pub fn data_type() -> impl Strategy<Value = DataType> {
    prop::sample::select(DataType::ALL.to_vec())
}

/// The large tier: 1 in this many tensors' sizes hold 1 to 2 MiB (see `sizes_for`).
pub const LARGE_TIER_ONE_IN: u32 = 5000;
/// The large tier's byte range.
pub const LARGE_TIER_BYTES: std::ops::RangeInclusive<u64> = (1 << 20)..=(2 << 20);

/// Sizes for tensors of `data_type`: `sizes()` nearly always, and 1 in `LARGE_TIER_ONE_IN`
/// a large tensor of 1 to 2 MiB (`large_sizes`), so a campaign reaches sizes the corpus's
/// small cases never do (multi-threaded chunking, large offsets) without slowing the
/// common case. Shrinking leaves the large tier for the small one first.
pub fn sizes_for(data_type: DataType) -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        LARGE_TIER_ONE_IN - 1 => sizes().boxed(),
        1 => large_sizes(data_type.element_size() as u64).boxed(),
    ]
}

/// 1 to 4 dimensions holding 1 to 2 MiB: inner sizes small, the outermost one whatever
/// makes up the byte count.
pub fn large_sizes(element_size: u64) -> impl Strategy<Value = Vec<u32>> {
    let inner = prop::collection::vec(prop_oneof![1u32..=8, 9u32..=300], 0..=3);
    (inner, LARGE_TIER_BYTES).prop_map(move |(inner, bytes)| {
        let elements = bytes.div_ceil(element_size.max(1));
        let inner_count: u64 = inner.iter().map(|&s| u64::from(s)).product();
        let outer = elements.div_ceil(inner_count.max(1)).max(1);
        let mut sizes = vec![u32::try_from(outer).unwrap_or(u32::MAX)];
        sizes.extend(inner);
        sizes
    })
}

/// 1 to 8 dimensions, sizes biased to small values: an element budget is drawn first (mostly
/// up to 64, sometimes up to 512, now and then up to `MAX_ELEMENTS`) and the largest size is
/// halved until the tensor fits it. Shrinking drives the budget, and so the tensor, down.
pub fn sizes() -> impl Strategy<Value = Vec<u32>> {
    let size = prop_oneof![6 => 1u32..=3, 3 => 4u32..=8, 1 => 9u32..=64];
    let budget = prop_oneof![6 => 1u64..=64, 3 => 65u64..=512, 1 => 513u64..=MAX_ELEMENTS];
    (prop::collection::vec(size, 1..=8), budget).prop_map(|(mut sizes, budget)| {
        while sizes.iter().map(|&s| u64::from(s)).product::<u64>() > budget {
            let largest = (0..sizes.len()).max_by_key(|&i| sizes[i]).unwrap_or(0);
            sizes[largest] = sizes[largest].div_ceil(2);
        }
        sizes
    })
}

/// How a tensor's elements are laid out in its buffer.
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
}

pub fn layout(allow_broadcast: bool) -> BoxedStrategy<Layout> {
    let padding = || prop::collection::vec(prop_oneof![3 => Just(0u32), 1 => 1u32..=3], 8);
    let mut choices = vec![
        (4, Just(Layout::Packed).boxed()),
        (2, padding().prop_map(Layout::Padded).boxed()),
        (
            2,
            (prop::collection::vec(any::<Index>(), 8), padding())
                .prop_map(|(order, padding)| Layout::Permuted { order, padding })
                .boxed(),
        ),
    ];
    if allow_broadcast {
        choices.push((
            1,
            prop::collection::vec(any::<bool>(), 8)
                .prop_map(Layout::Broadcast)
                .boxed(),
        ));
    }
    prop::strategy::Union::new_weighted(choices).boxed()
}

/// A tensor with these sizes laid out as `layout`, and sometimes extra TotalTensorSizeInBytes.
pub fn tensor(data_type: DataType, sizes: &[u32], layout: &Layout, extra_words: u64) -> TensorDesc {
    let dims = sizes.len();
    let strides: Option<Vec<u32>> = match layout {
        Layout::Packed => None,
        Layout::Padded(padding) => {
            let order: Vec<usize> = (0..dims).collect();
            Some(nested_strides(sizes, &order, padding))
        }
        Layout::Permuted { order, padding } => {
            // A permutation from the indices: pick the remaining dimensions one by one.
            let mut remaining: Vec<usize> = (0..dims).collect();
            let mut chosen = Vec::with_capacity(dims);
            for index in order.iter().take(dims) {
                chosen.push(remaining.remove(index.index(remaining.len())));
            }
            Some(nested_strides(sizes, &chosen, padding))
        }
        Layout::Broadcast(zero) => {
            let order: Vec<usize> = (0..dims).collect();
            let mut strides = nested_strides(sizes, &order, &[0; 8]);
            for d in 0..dims {
                if zero[d] {
                    strides[d] = 0;
                }
            }
            Some(strides)
        }
    };
    let mut desc = TensorDesc::strided(data_type, sizes, strides.as_deref());
    desc.total_tensor_size_in_bytes += 4 * extra_words;
    desc
}

/// Strides nesting the dimensions in `order` (outermost first), each padded.
fn nested_strides(sizes: &[u32], order: &[usize], padding: &[u32]) -> Vec<u32> {
    let mut strides = vec![0u32; sizes.len()];
    let mut running = 1u32;
    for &d in order.iter().rev() {
        strides[d] = running;
        running = running.saturating_mul(sizes[d] + padding.get(d).copied().unwrap_or(0));
    }
    strides
}

fn extra_words() -> impl Strategy<Value = u64> {
    prop_oneof![4 => Just(0u64), 1 => 1u64..=4]
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

fn with_axis(sizes: &[u32], axis: usize, value: u32) -> Vec<u32> {
    let mut s = sizes.to_vec();
    s[axis] = value;
    s
}

pub fn split_desc() -> impl Strategy<Value = OperatorDesc> {
    data_type()
        .prop_flat_map(|dt| (Just(dt), sizes_for(dt)))
        .prop_flat_map(|(dt, sizes)| {
            let dims = sizes.len();
            (Just(dt), Just(sizes), 0..dims)
        })
        .prop_flat_map(|(dt, sizes, axis)| {
            let parts = partition(sizes[axis], 5);
            (Just(dt), Just(sizes), Just(axis), parts)
        })
        .prop_flat_map(|(dt, sizes, axis, parts)| {
            let n = parts.len();
            (
                Just((dt, sizes, axis, parts)),
                layout(true),
                extra_words(),
                prop::collection::vec((layout(false), extra_words()), n),
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
}

pub fn join_desc() -> impl Strategy<Value = OperatorDesc> {
    split_desc().prop_flat_map(|split| {
        let OperatorDesc::Split(split) = split else {
            unreachable!("split_desc makes splits")
        };
        let n = split.output_tensors.len();
        (
            Just(split),
            prop::collection::vec((layout(true), extra_words()), n),
        )
            .prop_map(|(split, layouts)| {
                let dt = split.input_tensor.data_type;
                OperatorDesc::Join(JoinDesc {
                    input_tensors: split
                        .output_tensors
                        .iter()
                        .zip(&layouts)
                        .map(|(t, (l, e))| tensor(dt, &t.sizes, l, *e))
                        .collect(),
                    // The split's input layout never broadcasts onto an output: re-lay it.
                    output_tensor: tensor(dt, &split.input_tensor.sizes, &Layout::Packed, 0),
                    axis: split.axis,
                })
            })
            .prop_flat_map(|join| {
                let OperatorDesc::Join(join) = join else {
                    unreachable!("built a join")
                };
                (Just(join), layout(false), extra_words()).prop_map(|(mut join, l, e)| {
                    let dt = join.output_tensor.data_type;
                    join.output_tensor = tensor(dt, &join.output_tensor.sizes.clone(), &l, e);
                    OperatorDesc::Join(join)
                })
            })
    })
}

/// One dimension of a Slice1 window: (offset, size, stride, output size).
fn window(input_size: u32) -> impl Strategy<Value = (u32, u32, i32, u32)> {
    (0..input_size)
        .prop_flat_map(move |offset| {
            let stride = prop_oneof![
                4 => Just(1i32),
                3 => Just(-1i32),
                2 => 2i32..=3,
                2 => -3i32..=-2,
                1 => (input_size as i32 + 1)..=(input_size as i32 + 4),
                1 => -(input_size as i32 + 4)..=-(input_size as i32 + 1),
            ];
            (Just(offset), 1..=(input_size - offset), stride)
        })
        .prop_flat_map(|(offset, size, stride)| {
            let max_copied = 1 + (size - 1) / stride.unsigned_abs();
            let output = prop_oneof![3 => Just(max_copied), 1 => 1..=max_copied];
            (Just(offset), Just(size), Just(stride), output)
        })
}

pub fn slice1_desc() -> impl Strategy<Value = OperatorDesc> {
    data_type()
        .prop_flat_map(|dt| (Just(dt), sizes_for(dt)))
        .prop_flat_map(|(dt, sizes)| {
            let windows: Vec<_> = sizes.iter().map(|&s| window(s)).collect();
            (
                Just(dt),
                Just(sizes),
                windows,
                layout(true),
                extra_words(),
                layout(false),
                extra_words(),
            )
        })
        .prop_map(
            |(dt, sizes, windows, in_layout, in_extra, out_layout, out_extra)| {
                let output_sizes: Vec<u32> = windows.iter().map(|w| w.3).collect();
                OperatorDesc::Slice1(Slice1Desc {
                    input_tensor: tensor(dt, &sizes, &in_layout, in_extra),
                    output_tensor: tensor(dt, &output_sizes, &out_layout, out_extra),
                    dimension_count: sizes.len() as u32,
                    input_window_offsets: windows.iter().map(|w| w.0).collect(),
                    input_window_sizes: windows.iter().map(|w| w.1).collect(),
                    input_window_strides: windows.iter().map(|w| w.2).collect(),
                })
            },
        )
}

/// A valid descriptor of `kind`, or of any operator.
pub fn valid_desc(kind: Option<OperatorKind>) -> BoxedStrategy<OperatorDesc> {
    match kind {
        Some(OperatorKind::Split) => split_desc().boxed(),
        Some(OperatorKind::Join) => join_desc().boxed(),
        Some(OperatorKind::Slice1) => slice1_desc().boxed(),
        None => prop_oneof![split_desc(), join_desc(), slice1_desc()].boxed(),
    }
}

/// A case around a descriptor: random bit-pattern inputs from `seed`, the expectation and
/// level the oracle gives (lowest level where it holds; see cases/README.md).
pub fn case_for(name: &str, op: OperatorDesc, seed: u64) -> Case {
    let inputs = (0..op.inputs().len())
        .map(|i| TensorData::Random {
            seed: seed.wrapping_add(i as u64),
        })
        .collect();
    let (expect, feature_level) = match validate(&op, FeatureLevel::LATEST) {
        Ok(()) => (
            Expectation::Accept,
            FeatureLevel::ALL
                .into_iter()
                .find(|&l| validate(&op, l).is_ok())
                .unwrap_or(FeatureLevel::LATEST),
        ),
        Err(violation) => {
            let level = FeatureLevel::ALL
                .into_iter()
                .find(|&l| {
                    validate(&op, l)
                        .err()
                        .is_some_and(|v| v.rule == violation.rule)
                })
                .unwrap_or(FeatureLevel::LATEST);
            (
                Expectation::Reject {
                    rule: violation.rule,
                },
                level,
            )
        }
    };
    let expected = vec![None; op.outputs().len()];
    Case {
        name: name.to_string(),
        file: "(generated)".to_string(),
        line: 0,
        description: None,
        tags: vec!["fuzz".to_string()],
        feature_level,
        op,
        inputs,
        expected,
        expect,
    }
}

/// A valid case with random inputs.
pub fn valid_case(kind: Option<OperatorKind>) -> impl Strategy<Value = Case> {
    (valid_desc(kind), any::<u64>()).prop_map(|(op, seed)| case_for("fuzz.valid", op, seed))
}

/// Ways to break exactly one rule of a valid descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breakage {
    AxisOutOfRange,
    NoParts,
    ExtraDimension,
    OtherDataType,
    NonAxisSize,
    AxisSizeSum,
    ZeroSize,
    TotalTooSmall,
    StridesTooShort,
    OutputStrideZero,
    WindowEmpty,
    WindowOutside,
    WindowStrideZero,
    OutputTooLarge,
    DimensionCountMismatch,
}

const BREAKAGES: [Breakage; 15] = [
    Breakage::AxisOutOfRange,
    Breakage::NoParts,
    Breakage::ExtraDimension,
    Breakage::OtherDataType,
    Breakage::NonAxisSize,
    Breakage::AxisSizeSum,
    Breakage::ZeroSize,
    Breakage::TotalTooSmall,
    Breakage::StridesTooShort,
    Breakage::OutputStrideZero,
    Breakage::WindowEmpty,
    Breakage::WindowOutside,
    Breakage::WindowStrideZero,
    Breakage::OutputTooLarge,
    Breakage::DimensionCountMismatch,
];

/// Applies a breakage where it makes sense for the operator (otherwise the descriptor may
/// stay valid: the oracle decides either way, and the backend must agree with it).
pub fn break_rule(op: &mut OperatorDesc, breakage: Breakage, pick: Index, other_type: DataType) {
    match op {
        OperatorDesc::Split(d) => {
            let n = d.output_tensors.len();
            let part = &mut d.output_tensors[pick.index(n)];
            break_split_join(&mut d.axis, &d.input_tensor, part, breakage, other_type);
            if breakage == Breakage::NoParts {
                d.output_tensors.clear();
            }
        }
        OperatorDesc::Join(d) => {
            let n = d.input_tensors.len();
            let part = &mut d.input_tensors[pick.index(n)];
            break_split_join(&mut d.axis, &d.output_tensor, part, breakage, other_type);
            if breakage == Breakage::NoParts {
                d.input_tensors.clear();
            }
            if breakage == Breakage::OutputStrideZero {
                zero_a_stride(&mut d.output_tensor);
            }
        }
        OperatorDesc::Slice1(d) => {
            let dims = d.input_window_offsets.len();
            let i = pick.index(dims);
            match breakage {
                Breakage::WindowEmpty => d.input_window_sizes[i] = 0,
                Breakage::WindowOutside => {
                    d.input_window_offsets[i] =
                        d.input_tensor.sizes[i] - d.input_window_sizes[i] + 1;
                }
                Breakage::WindowStrideZero => d.input_window_strides[i] = 0,
                Breakage::OutputTooLarge => {
                    let size = d.input_window_sizes[i];
                    let max = 1 + (size - 1) / d.input_window_strides[i].unsigned_abs();
                    let dt = d.output_tensor.data_type;
                    let mut sizes = d.output_tensor.sizes.clone();
                    sizes[i] = max + 1;
                    d.output_tensor = TensorDesc::packed(dt, &sizes);
                }
                Breakage::DimensionCountMismatch => d.dimension_count += 1,
                Breakage::OtherDataType => {
                    let sizes = d.output_tensor.sizes.clone();
                    d.output_tensor = TensorDesc::packed(other_type, &sizes);
                }
                Breakage::TotalTooSmall => shrink_total(&mut d.input_tensor),
                Breakage::StridesTooShort => drop_a_stride(&mut d.output_tensor),
                Breakage::OutputStrideZero => zero_a_stride(&mut d.output_tensor),
                Breakage::ZeroSize => {
                    let mut sizes = d.output_tensor.sizes.clone();
                    sizes[i] = 0;
                    d.output_tensor = TensorDesc::packed(d.output_tensor.data_type, &sizes);
                }
                _ => {}
            }
        }
    }
}

fn break_split_join(
    axis: &mut u32,
    whole: &TensorDesc,
    part: &mut TensorDesc,
    breakage: Breakage,
    other_type: DataType,
) {
    let dims = whole.sizes.len();
    let a = *axis as usize;
    let relayout = |part: &mut TensorDesc, sizes: Vec<u32>| {
        *part = TensorDesc::packed(part.data_type, &sizes);
    };
    match breakage {
        Breakage::AxisOutOfRange => *axis = dims as u32 + (*axis % 3),
        Breakage::ExtraDimension => {
            let mut sizes = part.sizes.clone();
            sizes.push(1);
            relayout(part, sizes);
        }
        Breakage::OtherDataType => *part = TensorDesc::packed(other_type, &part.sizes.clone()),
        Breakage::NonAxisSize if dims > 1 => {
            let d = (a + 1) % dims;
            let mut sizes = part.sizes.clone();
            sizes[d] += 1;
            relayout(part, sizes);
        }
        Breakage::AxisSizeSum => {
            let mut sizes = part.sizes.clone();
            sizes[a] += 1;
            relayout(part, sizes);
        }
        Breakage::ZeroSize => {
            let mut sizes = part.sizes.clone();
            sizes[a] = 0;
            relayout(part, sizes);
        }
        Breakage::TotalTooSmall => shrink_total(part),
        Breakage::StridesTooShort => drop_a_stride(part),
        Breakage::OutputStrideZero => zero_a_stride(part),
        _ => {}
    }
}

fn shrink_total(tensor: &mut TensorDesc) {
    let minimum = tensor.minimum_size_in_bytes() as u64;
    tensor.total_tensor_size_in_bytes = minimum.saturating_sub(4);
}

fn drop_a_stride(tensor: &mut TensorDesc) {
    let mut strides = tensor
        .effective_strides()
        .iter()
        .map(|&s| s as u32)
        .collect::<Vec<_>>();
    strides.pop();
    tensor.strides = Some(strides);
}

fn zero_a_stride(tensor: &mut TensorDesc) {
    if let Some(d) = tensor.sizes.iter().position(|&s| s > 1) {
        let mut strides: Vec<u32> = tensor
            .effective_strides()
            .iter()
            .map(|&s| s as u32)
            .collect();
        strides[d] = 0;
        tensor.strides = Some(strides);
    }
}

/// A near miss: a valid descriptor with one rule broken. Its expectation is whatever the
/// oracle says (usually a rejection with the broken rule).
pub fn near_miss_case(kind: Option<OperatorKind>) -> impl Strategy<Value = Case> {
    (
        valid_desc(kind),
        prop::sample::select(BREAKAGES.to_vec()),
        any::<Index>(),
        data_type(),
        any::<u64>(),
    )
        .prop_map(|(mut op, breakage, pick, other_type, seed)| {
            let other_type = if op.outputs().first().map(|(_, t)| t.data_type) == Some(other_type) {
                DataType::ALL[(DataType::ALL
                    .iter()
                    .position(|&d| d == other_type)
                    .unwrap_or(0)
                    + 1)
                    % 11]
            } else {
                other_type
            };
            break_rule(&mut op, breakage, pick, other_type);
            case_for("fuzz.near_miss", op, seed)
        })
}
