//! The eight examples of the three pages, with the pages' exact values.

use dmlcts_oracle::execute;
use dmlcts_tensor::{DataType, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc};

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32_values(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn iota(from: u32, count: u32) -> Vec<f32> {
    (from..from + count).map(|v| v as f32).collect()
}

fn tensor(sizes: &[u32]) -> TensorDesc {
    TensorDesc::packed(DataType::Float32, sizes)
}

fn run(op: &OperatorDesc, inputs: &[Vec<f32>]) -> Vec<Vec<f32>> {
    let bytes: Vec<Vec<u8>> = inputs.iter().map(|v| f32_bytes(v)).collect();
    let refs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    execute(op, &refs)
        .expect("doc example is valid")
        .into_iter()
        .map(|out| {
            assert!(
                out.addressed.iter().all(|&a| a),
                "packed outputs are fully addressed"
            );
            f32_values(&out.bytes)
        })
        .collect()
}

fn split_input() -> Vec<f32> {
    iota(1, 12)
}

#[test]
fn split_example_1_axis_2() {
    let op = OperatorDesc::Split(SplitDesc {
        input_tensor: tensor(&[1, 1, 6, 2]),
        output_tensors: vec![
            tensor(&[1, 1, 2, 2]),
            tensor(&[1, 1, 1, 2]),
            tensor(&[1, 1, 3, 2]),
        ],
        axis: 2,
    });
    let outputs = run(&op, &[split_input()]);
    assert_eq!(outputs[0], vec![1.0, 2.0, 3.0, 4.0]);
    assert_eq!(outputs[1], vec![5.0, 6.0]);
    assert_eq!(outputs[2], vec![7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
}

#[test]
fn split_example_2_axis_3() {
    let op = OperatorDesc::Split(SplitDesc {
        input_tensor: tensor(&[1, 1, 6, 2]),
        output_tensors: vec![tensor(&[1, 1, 6, 1]), tensor(&[1, 1, 6, 1])],
        axis: 3,
    });
    let outputs = run(&op, &[split_input()]);
    assert_eq!(outputs[0], vec![1.0, 3.0, 5.0, 7.0, 9.0, 11.0]);
    assert_eq!(outputs[1], vec![2.0, 4.0, 6.0, 8.0, 10.0, 12.0]);
}

#[test]
fn join_example_1_single_possible_axis() {
    let op = OperatorDesc::Join(JoinDesc {
        input_tensors: vec![tensor(&[1, 1, 2, 3]), tensor(&[1, 1, 2, 4])],
        output_tensor: tensor(&[1, 1, 2, 7]),
        axis: 3,
    });
    let outputs = run(&op, &[iota(1, 6), iota(7, 8)]);
    assert_eq!(
        outputs[0],
        vec![1., 2., 3., 7., 8., 9., 10., 4., 5., 6., 11., 12., 13., 14.]
    );
}

fn join_example_2(axis: u32, output_sizes: &[u32]) -> Vec<f32> {
    let op = OperatorDesc::Join(JoinDesc {
        input_tensors: vec![tensor(&[1, 1, 2, 2]); 3],
        output_tensor: tensor(output_sizes),
        axis,
    });
    run(&op, &[iota(1, 4), iota(5, 4), iota(9, 4)]).remove(0)
}

#[test]
fn join_example_2_axis_1() {
    assert_eq!(join_example_2(1, &[1, 3, 2, 2]), iota(1, 12));
}

#[test]
fn join_example_2_axis_2() {
    assert_eq!(join_example_2(2, &[1, 1, 6, 2]), iota(1, 12));
}

#[test]
fn join_example_2_axis_3() {
    assert_eq!(
        join_example_2(3, &[1, 1, 2, 6]),
        vec![1., 2., 5., 6., 9., 10., 3., 4., 7., 8., 11., 12.]
    );
}

fn slice1_example(strides: [i32; 4]) -> Vec<f32> {
    let op = OperatorDesc::Slice1(Slice1Desc {
        input_tensor: tensor(&[1, 1, 4, 4]),
        output_tensor: tensor(&[1, 1, 2, 2]),
        dimension_count: 4,
        input_window_offsets: vec![0, 0, 0, 1],
        input_window_sizes: vec![1, 1, 4, 3],
        input_window_strides: strides.to_vec(),
    });
    run(&op, &[iota(1, 16)]).remove(0)
}

#[test]
fn slice1_example_1_positive_strides() {
    assert_eq!(slice1_example([1, 1, 2, 2]), vec![2., 4., 10., 12.]);
}

#[test]
fn slice1_example_2_negative_strides() {
    assert_eq!(slice1_example([1, 1, -2, 2]), vec![14., 16., 6., 8.]);
}
