//! The buffer rules at their exact edges, at realistic sizes (cases/generated/buffers_*.yaml):
//! for every operator, on an input and on an output, in every element size,
//!
//! - `tensor.total_size_minimum`: TotalTensorSizeInBytes at the unrounded minimum and one
//!   below the rounded one (both rejected) and at the rounded minimum (valid), packed and
//!   padded; and minimums whose index arithmetic needs more than 32 bits (a stride times a
//!   size, a sum of such, an index times the element size), given the size a 32-bit
//!   computation arrives at;
//! - `tensor.element_count_limit`: 2^32 elements, one past the limit (rejected);
//! - `tensor.output_addresses_distinct`: rows whose stride is 1, half a row and 1 element short
//!   of the row (rejected), beside the row exactly (valid); interleaved dimensions whose
//!   addresses are all distinct, and 0 strides on dimensions of size 1 (valid).
//!
//! Each must-reject case breaks its rule alone, from the lowest level where it can.

use super::{accepted, rejected_alone};
use crate::corpus::Case;
use dmlcts_tensor::{
    DataType, JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc, TensorDesc,
    calc_buffer_tensor_size,
};

/// One data type per element size (1, 2, 4, 8 bytes), a different set for each operator, so
/// that every operator meets every size and the corpus most types.
pub(super) fn element_sizes(kind: OperatorKind) -> [DataType; 4] {
    match kind {
        OperatorKind::Split => [
            DataType::Uint8,
            DataType::Float16,
            DataType::Float32,
            DataType::Float64,
        ],
        OperatorKind::Join => [
            DataType::Int8,
            DataType::Int16,
            DataType::Uint32,
            DataType::Int64,
        ],
        OperatorKind::Slice1 => [
            DataType::Uint8,
            DataType::Uint16,
            DataType::Int32,
            DataType::Uint64,
        ],
    }
}

/// Which tensor of the operator a case changes.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Input,
    Output,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Output => "output",
        }
    }
}

const ROLES: [Role; 2] = [Role::Input, Role::Output];

/// A valid operator of `kind` around `tensor`, which plays `role`: the other tensors are
/// packed with the sizes the operator needs (Split and Join along axis 1, adding a part of
/// one along it; Slice1 with the whole window).
fn around(kind: OperatorKind, role: Role, tensor: TensorDesc) -> OperatorDesc {
    let dt = tensor.data_type;
    let sizes = tensor.sizes.clone();
    let packed = |sizes: &[u32]| TensorDesc::packed(dt, sizes);
    let mut wider = sizes.clone();
    wider[1] += 1;
    let mut sliver = sizes.clone();
    sliver[1] = 1;
    match (kind, role) {
        (OperatorKind::Split, Role::Input) => {
            let mut first = sizes.clone();
            first[1] -= 1;
            let outputs = if first[1] == 0 {
                vec![packed(&sizes)]
            } else {
                vec![packed(&first), packed(&sliver)]
            };
            OperatorDesc::Split(SplitDesc {
                input_tensor: tensor,
                output_tensors: outputs,
                axis: 1,
            })
        }
        (OperatorKind::Split, Role::Output) => OperatorDesc::Split(SplitDesc {
            input_tensor: packed(&wider),
            output_tensors: vec![tensor, packed(&sliver)],
            axis: 1,
        }),
        (OperatorKind::Join, Role::Input) => OperatorDesc::Join(JoinDesc {
            input_tensors: vec![packed(&sliver), tensor],
            output_tensor: packed(&wider),
            axis: 1,
        }),
        (OperatorKind::Join, Role::Output) => {
            let mut first = sizes.clone();
            first[1] -= 1;
            let inputs = if first[1] == 0 {
                vec![packed(&sizes)]
            } else {
                vec![packed(&sliver), packed(&first)]
            };
            OperatorDesc::Join(JoinDesc {
                input_tensors: inputs,
                output_tensor: tensor,
                axis: 1,
            })
        }
        (OperatorKind::Slice1, role) => {
            let (input, output) = match role {
                Role::Input => (tensor, packed(&sizes)),
                Role::Output => (packed(&sizes), tensor),
            };
            OperatorDesc::Slice1(Slice1Desc {
                dimension_count: sizes.len() as u32,
                input_window_offsets: vec![0; sizes.len()],
                input_window_sizes: sizes.clone(),
                input_window_strides: vec![1; sizes.len()],
                input_tensor: input,
                output_tensor: output,
            })
        }
    }
}

/// Realistic sizes whose element count (4551) and padded extent (5321 elements) are odd
/// and not multiples of 4, so 1- and 2-byte tensors fall between the unrounded and the
/// rounded minimum.
const SIZES: [u32; 4] = [1, 3, 37, 41];
/// Rows of 41 padded to 48 elements; the last element sits at index 5320.
const PADDED_STRIDES: [u32; 4] = [5328, 1776, 48, 1];

fn with_total(mut tensor: TensorDesc, total: u64) -> TensorDesc {
    tensor.total_tensor_size_in_bytes = total;
    tensor
}

/// Cases for one operator's file.
pub fn buffer_cases(kind: OperatorKind, file: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    total_size_edges(kind, file, &mut cases);
    total_size_past_32_bits(kind, file, &mut cases);
    element_count_edges(kind, file, &mut cases);
    overlapping_rows(kind, file, &mut cases);
    cases
}

fn total_size_edges(kind: OperatorKind, file: &str, cases: &mut Vec<Case>) {
    let rule = "tensor.total_size_minimum";
    for dt in element_sizes(kind) {
        let dtn = dt.name().to_ascii_lowercase();
        for role in ROLES {
            for (layout, strides) in [("packed", None), ("padded", Some(&PADDED_STRIDES[..]))] {
                let tensor = TensorDesc::strided(dt, &SIZES, strides);
                let rounded = tensor.total_tensor_size_in_bytes;
                let unrounded = unrounded_minimum(dt, &SIZES, strides);
                let name = format!("buffers.{kind}.total_size.{dtn}.{}.{layout}", role.name());
                let mut below = Vec::new();
                if unrounded < rounded {
                    below.push((unrounded, "the unrounded minimum"));
                }
                if rounded - 1 != unrounded {
                    below.push((rounded - 1, "1 byte below the rounded minimum"));
                }
                for (total, what) in below {
                    let op = around(kind, role, with_total(tensor.clone(), total));
                    cases.push(rejected_alone(
                        format!("{name}.at_{total}"),
                        file,
                        format!(
                            "{layout} {dt} {} of {SIZES:?}: TotalTensorSizeInBytes {total}, {what} \
                             ({unrounded} bytes of elements, rounded up to {rounded})",
                            role.name()
                        ),
                        op,
                        rule,
                    ));
                }
                let op = around(kind, role, tensor);
                cases.push(accepted(
                    format!("{name}.at_minimum"),
                    file,
                    format!(
                        "{layout} {dt} {} of {SIZES:?}: TotalTensorSizeInBytes {rounded}, \
                         exactly the rounded minimum",
                        role.name()
                    ),
                    op,
                ));
            }
        }
    }
}

fn size_of(dt: DataType) -> u64 {
    dt.element_size() as u64
}

/// The bytes the elements take, before the rounding up to 4: (the last index + 1) times the
/// element size (packed when `strides` is None).
fn unrounded_minimum(dt: DataType, sizes: &[u32], strides: Option<&[u32]>) -> u64 {
    let strides: Vec<u64> = match strides {
        Some(s) => s.iter().map(|&s| u64::from(s)).collect(),
        None => TensorDesc::packed(dt, sizes).effective_strides(),
    };
    let last: u64 = sizes
        .iter()
        .zip(&strides)
        .map(|(&n, &s)| u64::from(n - 1) * s)
        .sum();
    (last + 1) * size_of(dt)
}

/// The minimum a computation in 32-bit unsigned arithmetic arrives at (every product and sum
/// wrapped), rounded up to 4 as the helper does.
fn minimum_in_32_bits(dt: DataType, sizes: &[u32], strides: &[u32]) -> u64 {
    let mut index: u32 = 0;
    for (&n, &s) in sizes.iter().zip(strides) {
        index = index.wrapping_add((n - 1).wrapping_mul(s));
    }
    let bytes = index.wrapping_add(1).wrapping_mul(dt.element_size() as u32);
    u64::from(bytes).div_ceil(4) * 4
}

fn total_size_past_32_bits(kind: OperatorKind, file: &str, cases: &mut Vec<Case>) {
    let rule = "tensor.total_size_minimum";
    // Each reaches past 2^32 in one way; rows of 5 elements, distinct addresses either way.
    let shapes: [(&str, &str, [u32; 4], [u32; 4]); 3] = [
        (
            "stride_times_size",
            "(3 - 1) * (2^31 + 1) is past 2^32",
            [1, 1, 3, 5],
            [15, 15, (1 << 31) + 1, 1],
        ),
        (
            "sum_of_terms",
            "(2 - 1) * (2^31 + 8) + (2 - 1) * 2^31 is past 2^32",
            [1, 2, 2, 5],
            [0, (1 << 31) + 8, 1 << 31, 1],
        ),
        (
            "index_times_element_size",
            "the last index, 2^31 + 2^30 + 4, is below 2^32, but not times the element size",
            [1, 1, 4, 5],
            [20, 20, 1 << 30, 1],
        ),
    ];
    for dt in element_sizes(kind) {
        let dtn = dt.name().to_ascii_lowercase();
        for (shape, how, sizes, strides) in shapes {
            if shape == "index_times_element_size" && dt.element_size() == 1 {
                continue;
            }
            let true_minimum = calc_buffer_tensor_size(dt, &sizes, Some(&strides));
            let wrapped = minimum_in_32_bits(dt, &sizes, &strides);
            for role in ROLES {
                let tensor = with_total(TensorDesc::strided(dt, &sizes, Some(&strides)), wrapped);
                cases.push(rejected_alone(
                    format!(
                        "buffers.{kind}.total_size_past_32_bits.{shape}.{dtn}.{}",
                        role.name()
                    ),
                    file,
                    format!(
                        "{dt} {} of sizes {sizes:?}, strides {strides:?}: {how}. It needs \
                         {true_minimum} bytes; TotalTensorSizeInBytes is {wrapped}, what 32-bit \
                         arithmetic gives",
                        role.name()
                    ),
                    around(kind, role, tensor),
                    rule,
                ));
            }
        }
    }
}

fn element_count_edges(kind: OperatorKind, file: &str, cases: &mut Vec<Case>) {
    let rule = "tensor.element_count_limit";
    // 2^32 = 16 * 16 * 256 * 65536. (Exactly 2^32 - 1, valid, is no case here: any tensor of
    // that many elements is gigabytes to an implementation that gathers its inputs densely,
    // and more than the runner materializes. The oracle's own tests cover it, and
    // reject.tensor.total_size_minimum.u32_max_elements has that many.)
    let past_limit: [u32; 4] = [16, 16, 256, 65536];
    // Past the limit, packed, in every element size: never executed.
    for dt in element_sizes(kind) {
        let dtn = dt.name().to_ascii_lowercase();
        for role in ROLES {
            let tensor = TensorDesc::packed(dt, &past_limit);
            cases.push(rejected_alone(
                format!(
                    "buffers.{kind}.element_count.{dtn}.{}.past_limit",
                    role.name()
                ),
                file,
                format!(
                    "a packed {dt} {} of sizes {past_limit:?}: 2^32 elements, one past the limit",
                    role.name()
                ),
                around(kind, role, tensor),
                rule,
            ));
        }
    }
}

fn overlapping_rows(kind: OperatorKind, file: &str, cases: &mut Vec<Case>) {
    let rule = "tensor.output_addresses_distinct";
    let [_, _, rows, columns] = SIZES;
    for dt in element_sizes(kind) {
        let dtn = dt.name().to_ascii_lowercase();
        let name = format!("buffers.{kind}.output_rows.{dtn}");
        // Rows `row_stride` apart; the planes hold 37 rows whatever the row stride.
        let rows_apart = |row_stride: u32| {
            let plane = (rows - 1) * row_stride + columns;
            TensorDesc::strided(dt, &SIZES, Some(&[3 * plane, plane, row_stride, 1]))
        };
        for (row_stride, what) in [
            (
                columns - 1,
                "1 element short of the row: each row's last is the next's first",
            ),
            (columns / 2, "half a row"),
            (1, "1: rows start 1 element apart"),
        ] {
            cases.push(rejected_alone(
                format!("{name}.stride_{row_stride}"),
                file,
                format!("{dt} output rows of {columns} elements, {row_stride} apart: {what}"),
                around(kind, Role::Output, rows_apart(row_stride)),
                rule,
            ));
        }
        cases.push(accepted(
            format!("{name}.stride_{columns}"),
            file,
            format!("{dt} output rows of {columns} elements, {columns} apart: they just touch"),
            around(kind, Role::Output, rows_apart(columns)),
        ));
        // Distinct, but not nested: rows of {2, 3} with strides {3, 2} cover 0, 2, 3, 4, 5, 7.
        let interleaved = TensorDesc::strided(dt, &[1, 37, 2, 3], Some(&[296, 8, 3, 2]));
        cases.push(accepted(
            format!("{name}.interleaved_distinct"),
            file,
            format!(
                "{dt} output of 37 x 2 x 3 with strides {{8, 3, 2}}: each block covers 0, 2, \
                 3, 4, 5 and 7 of its 8 elements; no dimension nests the others, no address repeats"
            ),
            around(kind, Role::Output, interleaved),
        ));
        let zero_on_ones = TensorDesc::strided(dt, &[1, 1, rows, columns], Some(&[0, 0, 41, 1]));
        cases.push(accepted(
            format!("{name}.zero_stride_on_size_1"),
            file,
            format!(
                "{dt} output with a 0 stride on its dimensions of size 1: they never move the \
                 address"
            ),
            around(kind, Role::Output, zero_on_ones),
        ));
    }
}
