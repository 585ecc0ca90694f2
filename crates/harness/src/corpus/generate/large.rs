//! The large tier (cases/large/): outputs from 1 MiB to 64 MiB for every operator and element
//! size class, shaped to cross what implementations do differently for large tensors:
//!
//! - the CPU backend copies outputs of 1 MiB or more on several threads, cutting the output
//!   along its outermost dimension into chunks (8 per thread) that clip the pieces crossing
//!   them, and only when that dimension's stride nests the others;
//! - the wgpu backend dispatches at most 65535 workgroups of 256 per dimension (16,776,960
//!   elements or words), then goes two-dimensional, and moves aligned runs as words;
//! - every backend allocates, binds and transfers buffers of these sizes.
//!
//! Rows are not multiples of the chunk count, pieces start inside chunks, and outputs come
//! packed, padded, transposed and interleaved; Slice1 reverses outer dimensions. Every
//! operator has an output of just over 2^20 elements in every element size (a count, not a
//! size in bytes, is where some implementations change paths). Inputs are
//! seeded random bit patterns. The tier stays small enough that the whole corpus runs in a
//! few seconds on the CPU backend: most cases are just above 1 MiB, one is 64 MiB.

use super::case;
use crate::corpus::{Case, Expectation};
use dmlcts_oracle::validate;
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc, TensorDesc,
};

const MIB: u32 = 1 << 20;

/// One data type per element size class (1, 2, 4 and 8 bytes) for each operator, so every
/// operator meets every size class and the tier as a whole most types.
fn size_classes(kind: OperatorKind) -> [DataType; 4] {
    match kind {
        OperatorKind::Split => [
            DataType::Uint8,
            DataType::Int16,
            DataType::Float32,
            DataType::Float64,
        ],
        OperatorKind::Join => [
            DataType::Int8,
            DataType::Float16,
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

/// The cases of one operator's file.
pub fn large_tier(kind: OperatorKind, file: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for data_type in size_classes(kind) {
        let mut shapes = match kind {
            OperatorKind::Split => split_shapes(data_type),
            OperatorKind::Join => join_shapes(data_type),
            OperatorKind::Slice1 => slice1_shapes(data_type),
        };
        shapes.push(past_2_20_elements(kind, data_type));
        let dt = data_type.name().to_ascii_lowercase();
        for (shape, description, op) in shapes {
            let name = format!("large.{kind}.{dt}.{shape}");
            let bytes: u64 = op
                .outputs()
                .iter()
                .map(|(_, d)| d.total_tensor_size_in_bytes)
                .sum();
            let description = format!("{description}; {} of output", mebibytes(bytes));
            let level = FeatureLevel::ALL
                .into_iter()
                .find(|&level| validate(&op, level).is_ok())
                .unwrap_or_else(|| panic!("{name} is invalid at every level"));
            let mut case = case(name, file, description, level, op, Expectation::Accept);
            case.tags = vec!["large".to_string()];
            cases.push(case);
        }
    }
    cases
}

/// An output of 1031 x 1018 = 1,049,558 elements, just past 2^20 = 1,048,576, whatever
/// the element size; rows of 1018 are not a multiple of 4, 8 or 16.
fn past_2_20_elements(kind: OperatorKind, dt: DataType) -> Shape {
    let description = "an output of 1031 x 1018 elements, just past 2^20";
    let op = match kind {
        OperatorKind::Split => OperatorDesc::Split(SplitDesc {
            input_tensor: packed(dt, &[1031, 1021]),
            output_tensors: vec![packed(dt, &[1031, 1018]), packed(dt, &[1031, 3])],
            axis: 1,
        }),
        OperatorKind::Join => OperatorDesc::Join(JoinDesc {
            input_tensors: vec![packed(dt, &[1031, 3]), packed(dt, &[1031, 1015])],
            output_tensor: packed(dt, &[1031, 1018]),
            axis: 1,
        }),
        OperatorKind::Slice1 => OperatorDesc::Slice1(Slice1Desc {
            dimension_count: 2,
            input_window_offsets: vec![1, 1],
            input_window_sizes: vec![1031, 1018],
            input_window_strides: vec![1, 1],
            input_tensor: packed(dt, &[1033, 1020]),
            output_tensor: packed(dt, &[1031, 1018]),
        }),
    };
    ("past_2_20_elements", description, op)
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / f64::from(MIB))
}

/// Elements in `bytes` bytes of `data_type`.
fn elements(data_type: DataType, bytes: u32) -> u32 {
    bytes / data_type.element_size() as u32
}

fn packed(data_type: DataType, sizes: &[u32]) -> TensorDesc {
    TensorDesc::packed(data_type, sizes)
}

fn strided(data_type: DataType, sizes: &[u32], strides: &[u32]) -> TensorDesc {
    TensorDesc::strided(data_type, sizes, Some(strides))
}

/// Column-major strides (the first dimension innermost): a transposed layout.
fn transposed(data_type: DataType, sizes: &[u32]) -> TensorDesc {
    let mut strides = Vec::with_capacity(sizes.len());
    let mut running = 1;
    for &size in sizes {
        strides.push(running);
        running *= size;
    }
    strided(data_type, sizes, &strides)
}

/// Rows of `sizes[1]` elements, `pad` bytes apart beyond their own length.
fn padded_rows(data_type: DataType, sizes: [u32; 2], pad: u32) -> TensorDesc {
    strided(data_type, &sizes, &[sizes[1] + elements(data_type, pad), 1])
}

/// Columns so that `rows` x columns elements of `data_type` take a little over 1 MiB.
fn columns_over_a_mebibyte(data_type: DataType, rows: u32) -> u32 {
    elements(data_type, MIB).div_ceil(rows) + 1
}

type Shape = (&'static str, &'static str, OperatorDesc);

fn split_shapes(dt: DataType) -> Vec<Shape> {
    let row = elements(dt, 6 << 10);
    let (r, c) = (1031, columns_over_a_mebibyte(dt, 1031));
    let narrow = elements(dt, 1 << 10);
    let wide = elements(dt, 2 << 10);
    vec![
        (
            "axis_0_uneven_rows",
            "171 rows of 6 KiB (threaded, rows not a multiple of the chunks) and 20 rows",
            OperatorDesc::Split(SplitDesc {
                input_tensor: packed(dt, &[191, row]),
                output_tensors: vec![packed(dt, &[171, row]), packed(dt, &[20, row])],
                axis: 0,
            }),
        ),
        (
            "last_axis_padded_outputs",
            "rows of 2 KiB and 1 KiB, each padded by 64 bytes",
            OperatorDesc::Split(SplitDesc {
                input_tensor: packed(dt, &[523, wide + narrow]),
                output_tensors: vec![
                    padded_rows(dt, [523, wide], 64),
                    padded_rows(dt, [523, narrow], 64),
                ],
                axis: 1,
            }),
        ),
        (
            "transposed_input_and_output",
            "a column-major input into a column-major output (its outer stride nests \
             nothing, so no cut along it) and a packed one (a gather)",
            OperatorDesc::Split(SplitDesc {
                input_tensor: transposed(dt, &[r, c + 7]),
                output_tensors: vec![transposed(dt, &[r, c]), packed(dt, &[r, 7])],
                axis: 1,
            }),
        ),
    ]
}

fn join_shapes(dt: DataType) -> Vec<Shape> {
    let row = elements(dt, 6 << 10);
    let (r, c) = (1031, columns_over_a_mebibyte(dt, 1031));
    let kib = elements(dt, 1 << 10);
    let widths = [kib + 1, 2 * kib - 1, 3];
    let width: u32 = widths.iter().sum();
    vec![
        (
            "axis_0_uneven_rows",
            "inputs of 61, 67 and 43 rows of 6 KiB: pieces start and end inside the chunks",
            OperatorDesc::Join(JoinDesc {
                input_tensors: vec![
                    packed(dt, &[61, row]),
                    packed(dt, &[67, row]),
                    packed(dt, &[43, row]),
                ],
                output_tensor: packed(dt, &[171, row]),
                axis: 0,
            }),
        ),
        (
            "last_axis_padded_output",
            "three inputs side by side in rows padded by 64 bytes, unaligned widths",
            OperatorDesc::Join(JoinDesc {
                input_tensors: widths.iter().map(|&w| packed(dt, &[347, w])).collect(),
                output_tensor: padded_rows(dt, [347, width], 64),
                axis: 1,
            }),
        ),
        (
            "transposed_output",
            "a column-major input and a packed one into a column-major output",
            OperatorDesc::Join(JoinDesc {
                input_tensors: vec![transposed(dt, &[r, c]), packed(dt, &[r, 5])],
                output_tensor: transposed(dt, &[r, c + 5]),
                axis: 1,
            }),
        ),
    ]
}

/// A Slice1 of the whole of `input` with `window_strides`, into `output`.
fn slice1(input: TensorDesc, window_strides: &[i32], output: TensorDesc) -> OperatorDesc {
    let sizes = input.sizes.clone();
    OperatorDesc::Slice1(Slice1Desc {
        dimension_count: sizes.len() as u32,
        input_window_offsets: vec![0; sizes.len()],
        input_window_sizes: sizes,
        input_window_strides: window_strides.to_vec(),
        input_tensor: input,
        output_tensor: output,
    })
}

fn slice1_shapes(dt: DataType) -> Vec<Shape> {
    let row = elements(dt, 2 << 10);
    let (r, c) = (1031, columns_over_a_mebibyte(dt, 1031));
    // Each size class gathers with its own inner stride.
    let (outer, inner): (i32, i32) = match dt.element_size() {
        1 => (-1, 2),
        2 => (1, 3),
        4 => (-1, -2),
        _ => (1, 5),
    };
    let gathered = elements(dt, 1 << 10);
    let window = (gathered - 1) * inner.unsigned_abs() + 1;
    let mut shapes = vec![
        (
            "reversed_outer_dimensions",
            "37 x 15 rows of 2 KiB, both outer dimensions reversed",
            slice1(
                packed(dt, &[37, 15, row]),
                &[-1, -1, 1],
                packed(dt, &[37, 15, row]),
            ),
        ),
        (
            "inner_gather_into_padded_output",
            "every |stride|-th element of each row into rows of 1 KiB padded by 32 bytes",
            slice1(
                packed(dt, &[1031, window]),
                &[outer, inner],
                padded_rows(dt, [1031, gathered], 32),
            ),
        ),
        (
            "reversed_rows_into_transposed_output",
            "the innermost dimension reversed, written column-major",
            slice1(packed(dt, &[r, c]), &[1, -1], transposed(dt, &[r, c])),
        ),
    ];
    if dt.element_size() == 8 {
        shapes.push((
            "reversed_outer_dimensions_64_mib",
            "2 x 2048 rows of 16 KiB, outer dimensions reversed: 2^24 words, past 65535 \
             workgroups of 256 in one dimension",
            slice1(
                packed(dt, &[2, 2048, 2048]),
                &[-1, -1, 1],
                packed(dt, &[2, 2048, 2048]),
            ),
        ));
        shapes.push((
            "interleaved_output",
            "output strides {8, 3} on rows of 5: distinct addresses, but no dimension nests \
             the other",
            slice1(
                packed(dt, &[16384, 9]),
                &[1, 2],
                strided(dt, &[16384, 5], &[8, 3]),
            ),
        ));
    }
    shapes
}
