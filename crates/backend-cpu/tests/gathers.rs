//! The backend's gather kernels against the oracle: Slice1 windows read with steps of -1
//! (reversed), 2 (every other element) and others either way, at every element size (1, 2,
//! 4 and 8 bytes), on random shapes with odd lengths and tails, rows short and long enough
//! (past 4 KiB) to be staged and streamed, on one thread and split across threads.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_tensor::{Backend, DataType, OperatorDesc, OutputBinding, Slice1Desc, TensorDesc};
use proptest::prelude::*;

/// One data type of each element size.
const TYPES: [DataType; 4] = [
    DataType::Uint8,
    DataType::Float16,
    DataType::Float32,
    DataType::Float64,
];

/// A Slice1 of a packed [rows, cols] tensor: every row (reversed when `rows_reversed`), the
/// columns from `offset` on (`size` of them) read with `step`.
fn slice(
    data_type: DataType,
    (rows, cols): (u32, u32),
    (offset, size, step): (u32, u32, i32),
    rows_reversed: bool,
) -> OperatorDesc {
    let out_cols = size.div_ceil(step.unsigned_abs());
    OperatorDesc::Slice1(Slice1Desc {
        input_tensor: TensorDesc::packed(data_type, &[rows, cols]),
        output_tensor: TensorDesc::packed(data_type, &[rows, out_cols]),
        dimension_count: 2,
        input_window_offsets: vec![0, offset],
        input_window_sizes: vec![rows, size],
        input_window_strides: vec![if rows_reversed { -1 } else { 1 }, step],
    })
}

/// Runs `op` on `backend` and asserts its output equals the oracle's, byte for byte.
fn assert_matches_the_oracle(backend: &CpuBackend, op: &OperatorDesc, seed: u64) {
    let (_, input_desc) = op.inputs()[0];
    let data_type = input_desc.data_type;
    let mut input = vec![0u8; input_desc.total_tensor_size_in_bytes as usize];
    dmlcts_tensor::fill_random_bits(data_type, &mut input, seed);
    let expected = dmlcts_oracle::execute(op, &[&input]).expect("a valid slice");
    let mut output = vec![0u8; expected[0].bytes.len()];
    let compiled = backend.compile(op).expect("a valid slice");
    compiled
        .execute(&[&input], &mut [OutputBinding::whole(&mut output)])
        .expect("executes");
    assert!(
        output == expected[0].bytes,
        "{data_type} {op:?}: the backend's output differs from the oracle's"
    );
}

/// Columns for output rows of up to about 3 blocks of 4 KiB (staged and streamed in
/// pieces) read with steps of up to `widest`, or short ones, at element size `size`.
fn cols_for(size: usize, widest: u32) -> impl Strategy<Value = u32> {
    let long = widest * (3 * 4096 / size as u32 + 40);
    prop_oneof![1u32..70, 1u32..long]
}

/// The backends the kernels are checked on: one thread with the default thresholds (cached
/// stores), and two threads with every output split and streamed (staged blocks).
fn backends() -> [CpuBackend; 2] {
    [
        CpuBackend::new().with_threads(1),
        CpuBackend::new()
            .with_threads(2)
            .with_parallel_threshold(0)
            .with_streaming_threshold(0),
    ]
}

/// A window of `cols` columns: an offset, a size and a step from `steps`.
fn window(cols: u32, steps: &'static [i32]) -> impl Strategy<Value = (u32, u32, i32)> {
    (0..cols, proptest::sample::select(steps))
        .prop_flat_map(move |(offset, step)| (Just(offset), 1..=cols - offset, Just(step)))
}

/// A gather case: the data type, the input's [rows, cols], the window on the columns
/// (offset, size, step), whether the rows are reversed too, and the input's seed.
type GatherCase = (DataType, (u32, u32), (u32, u32, i32), bool, u64);

fn gather_case(steps: &'static [i32]) -> impl Strategy<Value = GatherCase> {
    let widest = steps.iter().map(|s| s.unsigned_abs()).max().unwrap_or(1);
    proptest::sample::select(&TYPES[..]).prop_flat_map(move |data_type| {
        (1u32..4, cols_for(data_type.element_size(), widest)).prop_flat_map(move |(rows, cols)| {
            (
                Just(data_type),
                Just((rows, cols)),
                window(cols, steps),
                any::<bool>(),
                any::<u64>(),
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn reversed_gather_matches_the_oracle_for_every_element_size(
        (data_type, shape, window, rows_reversed, seed) in gather_case(&[-1])
    ) {
        let op = slice(data_type, shape, window, rows_reversed);
        for backend in backends() {
            assert_matches_the_oracle(&backend, &op, seed);
        }
    }

    #[test]
    fn every_other_element_gather_matches_the_oracle_for_every_element_size(
        (data_type, shape, window, rows_reversed, seed) in gather_case(&[2])
    ) {
        let op = slice(data_type, shape, window, rows_reversed);
        for backend in backends() {
            assert_matches_the_oracle(&backend, &op, seed);
        }
    }

    #[test]
    fn strided_gather_either_way_matches_the_oracle_for_every_element_size(
        (data_type, shape, window, rows_reversed, seed) in gather_case(&[-3, -2, 3, 5])
    ) {
        let op = slice(data_type, shape, window, rows_reversed);
        for backend in backends() {
            assert_matches_the_oracle(&backend, &op, seed);
        }
    }
}
