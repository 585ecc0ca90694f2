//! Size edges through every layout (cases/large/size_edges.yaml): sizes and coordinates past
//! the narrow integers an implementation may count in, each valid and as small in memory as
//! its layout allows.
//!
//! - dimensions of 65,535, 65,536 and 65,537 (past a 16-bit count), written element by element
//!   (interleaved, transposed and reversed outputs);
//! - a tensor of just past 2^24 elements (where a FLOAT32 index stops being exact) written
//!   element by element: a Join into an interleaved output (one case only: about 1.4 s on the
//!   CPU backend, most of it the scalar oracle; a Split gathering and a Slice1 reversing as
//!   many cost as much each, and are left out to keep the corpus's run time);
//! - element offsets past 2^24 with few elements: a Split's strided output and a Slice1's
//!   strided input and output whose rows lie 2^24 + 3 elements apart;
//! - exactly 2^32 - 1 elements in a Slice1 input of every element size, broadcast so its buffer
//!   stays small, with a window at its far end: logical indices past 2^31 (and past 2^32 bytes
//!   for the wider types), where a signed 32-bit index or a limit computed on bytes breaks;
//! - a window offset past 2^31 (into a broadcast dimension);
//! - reversed rows of 1,001 elements over more than 64 KiB of output in every element size:
//!   every power-of-two chunk boundary up to 64 KiB (in bytes or elements) falls inside a row.

use super::case;
use crate::corpus::{Case, Expectation};
use dmlcts_oracle::validate;
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc,
};

/// One type per element size.
const SIZE_CLASSES: [DataType; 4] = [
    DataType::Uint8,
    DataType::Int16,
    DataType::Float32,
    DataType::Int64,
];

fn strided(data_type: DataType, sizes: &[u32], strides: &[u32]) -> TensorDesc {
    TensorDesc::strided(data_type, sizes, Some(strides))
}

fn packed(data_type: DataType, sizes: &[u32]) -> TensorDesc {
    TensorDesc::packed(data_type, sizes)
}

/// Every case of the file.
pub fn size_edge_cases(file: &str) -> Vec<Case> {
    let mut shapes: Vec<(String, String, OperatorDesc)> = Vec::new();

    // Dimensions at and past 2^16, written element by element.
    shapes.push((
        "sizes.split.uint16.dim_65537_interleaved".into(),
        "a dimension of 65,537 (past 16 bits): Split rows into an interleaved output".into(),
        OperatorDesc::Split(SplitDesc {
            input_tensor: packed(DataType::Uint16, &[1, 1, 3, 65537]),
            output_tensors: vec![
                packed(DataType::Uint16, &[1, 1, 1, 65537]),
                strided(DataType::Uint16, &[1, 1, 2, 65537], &[0, 0, 1, 2]),
            ],
            axis: 2,
        }),
    ));
    shapes.push((
        "sizes.join.int8.dim_65536_padded".into(),
        "a dimension of 65,536 (16 bits wrap to 0): Join columns into a padded output".into(),
        OperatorDesc::Join(JoinDesc {
            input_tensors: vec![
                packed(DataType::Int8, &[1, 1, 65536, 1]),
                strided(DataType::Int8, &[1, 1, 65536, 2], &[0, 0, 1, 65536]),
            ],
            output_tensor: strided(DataType::Int8, &[1, 1, 65536, 3], &[0, 0, 4, 1]),
            axis: 3,
        }),
    ));
    shapes.push((
        "sizes.slice1.uint8.dim_65535_of_65537_reversed".into(),
        "a window of 65,535 of 65,537, reversed, into a transposed output".into(),
        OperatorDesc::Slice1(Slice1Desc {
            input_tensor: packed(DataType::Uint8, &[1, 1, 3, 65537]),
            output_tensor: strided(DataType::Uint8, &[1, 1, 3, 65535], &[0, 0, 1, 3]),
            dimension_count: 4,
            input_window_offsets: vec![0, 0, 0, 1],
            input_window_sizes: vec![1, 1, 3, 65535],
            input_window_strides: vec![1, 1, 1, -1],
        }),
    ));

    // Just past 2^24 elements, written element by element.
    const PAST_2_24: u32 = (1 << 23) + 1; // two rows of it: 2^24 + 2 elements
    shapes.push((
        "sizes.join.uint8.past_2_24_interleaved".into(),
        "2^24 + 2 elements written interleaved: two rows joined into a column-major output".into(),
        OperatorDesc::Join(JoinDesc {
            input_tensors: vec![
                packed(DataType::Uint8, &[1, 1, 1, PAST_2_24]),
                packed(DataType::Uint8, &[1, 1, 1, PAST_2_24]),
            ],
            output_tensor: strided(DataType::Uint8, &[1, 1, 2, PAST_2_24], &[0, 0, 1, 2]),
            axis: 2,
        }),
    ));
    // Element offsets just past 2^24 with only a few elements: a Split writing and a Slice1
    // reading and writing through strides that jump past 2^24 (where an offset computed in
    // FLOAT32 stops being exact), costing a 16 MiB buffer rather than 2^24 elements of work.
    // The Slice1 is INT8, not UINT8, so IREE (which cannot reverse unsigned types) runs it.
    const STRIDE_PAST_2_24: u32 = (1 << 24) + 3;
    shapes.push((
        "sizes.split.uint8.offsets_past_2_24_strided".into(),
        "a Split whose second output's rows lie 2^24 + 3 elements apart (element offsets past          2^24, written one by one)"
            .into(),
        OperatorDesc::Split(SplitDesc {
            input_tensor: packed(DataType::Uint8, &[1, 1, 3, 5]),
            output_tensors: vec![
                packed(DataType::Uint8, &[1, 1, 1, 5]),
                strided(DataType::Uint8, &[1, 1, 2, 5], &[0, 0, STRIDE_PAST_2_24, 1]),
            ],
            axis: 2,
        }),
    ));
    shapes.push((
        "sizes.slice1.int8.offsets_past_2_24_strided".into(),
        "a reversed Slice1 window read from rows 2^24 + 3 elements apart and written into rows          as far apart (element offsets past 2^24 on both sides)"
            .into(),
        OperatorDesc::Slice1(Slice1Desc {
            input_tensor: strided(DataType::Int8, &[1, 1, 3, 5], &[0, 0, STRIDE_PAST_2_24, 1]),
            output_tensor: strided(DataType::Int8, &[1, 1, 2, 4], &[0, 0, STRIDE_PAST_2_24, 1]),
            dimension_count: 4,
            input_window_offsets: vec![0, 0, 1, 0],
            input_window_sizes: vec![1, 1, 2, 4],
            input_window_strides: vec![1, 1, 1, -1],
        }),
    ));

    // 2^32 - 1 = 65,537 x 65,535 elements, one dimension broadcast; the window at the far
    // end reads logical indices past 2^31 (and bytes past 2^32).
    for data_type in SIZE_CLASSES {
        let dt = data_type.name().to_ascii_lowercase();
        shapes.push((
            format!("sizes.slice1.{dt}.limit_elements_far_window"),
            format!(
                "a broadcast input of exactly 2^32 - 1 elements of {data_type}; a reversed window \
                 at its far end (logical indices past 2^31)"
            ),
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: strided(data_type, &[1, 1, 65537, 65535], &[0, 0, 1, 0]),
                output_tensor: packed(data_type, &[1, 1, 7, 5]),
                dimension_count: 4,
                input_window_offsets: vec![0, 0, 65530, 65530],
                input_window_sizes: vec![1, 1, 7, 5],
                input_window_strides: vec![1, 1, -1, 1],
            }),
        ));
    }
    shapes.push((
        "sizes.slice1.uint32.window_offset_past_2_31".into(),
        "a window offset of 2^31 + 1 into a broadcast dimension of 2^31 + 3".into(),
        OperatorDesc::Slice1(Slice1Desc {
            input_tensor: strided(DataType::Uint32, &[1, 1, (1 << 31) + 3, 1], &[0, 0, 0, 0]),
            output_tensor: packed(DataType::Uint32, &[1, 1, 2, 1]),
            dimension_count: 4,
            input_window_offsets: vec![0, 0, (1 << 31) + 1, 0],
            input_window_sizes: vec![1, 1, 2, 1],
            input_window_strides: vec![1, 1, -1, 1],
        }),
    ));

    // Reversed rows of 1,001 over more than 64 KiB (and 65,536 elements) of output.
    for data_type in SIZE_CLASSES {
        let dt = data_type.name().to_ascii_lowercase();
        shapes.push((
            format!("sizes.slice1.{dt}.reversed_rows_over_64_kib"),
            format!(
                "67 reversed rows of 1,001 {data_type} elements: every power-of-two chunk up to \
                 64 KiB starts inside a row"
            ),
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: packed(data_type, &[1, 1, 69, 1003]),
                output_tensor: packed(data_type, &[1, 1, 67, 1001]),
                dimension_count: 4,
                input_window_offsets: vec![0, 0, 1, 1],
                input_window_sizes: vec![1, 1, 67, 1001],
                input_window_strides: vec![1, 1, 1, -1],
            }),
        ));
    }

    shapes
        .into_iter()
        .map(|(name, description, op)| {
            let level = FeatureLevel::ALL
                .into_iter()
                .find(|&level| validate(&op, level).is_ok())
                .unwrap_or_else(|| panic!("{name} is invalid at every level"));
            let mut case = case(name, file, description, level, op, Expectation::Accept);
            case.tags = vec!["large".to_string(), "size-edges".to_string()];
            case
        })
        .collect()
}
