//! Properties of the oracle that follow from the pages, checked on random descriptors.

use dmlcts_oracle::{execute, spec, validate};
use dmlcts_tensor::{
    Coordinates, DataType, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc,
    fill_random_bits,
};
use proptest::prelude::*;

fn data_type() -> impl Strategy<Value = DataType> {
    prop::sample::select(DataType::ALL.to_vec())
}

/// 1 to 8 dimensions of 1 to 4, at most a few hundred elements.
fn shape() -> impl Strategy<Value = Vec<u32>> {
    (1usize..=8).prop_flat_map(|dims| {
        let max = if dims > 5 { 2u32 } else { 4 };
        prop::collection::vec(1..=max, dims)
    })
}

/// Splits `total` into 1 to 4 positive parts.
fn partition(total: u32) -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(any::<prop::sample::Index>(), 0..4).prop_map(move |cuts| {
        let mut points: Vec<u32> = cuts
            .iter()
            .map(|i| i.index(total as usize) as u32)
            .filter(|&p| p > 0)
            .collect();
        points.push(0);
        points.push(total);
        points.sort();
        points.dedup();
        points.windows(2).map(|w| w[1] - w[0]).collect()
    })
}

fn split_case() -> impl Strategy<Value = (DataType, Vec<u32>, usize, Vec<u32>, u64)> {
    (data_type(), shape()).prop_flat_map(|(dt, sizes)| {
        let dims = sizes.len();
        (Just(dt), Just(sizes), 0..dims).prop_flat_map(|(dt, sizes, axis)| {
            let total = sizes[axis];
            (
                Just(dt),
                Just(sizes),
                Just(axis),
                partition(total),
                any::<u64>(),
            )
        })
    })
}

fn random_bytes(desc: &TensorDesc, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; desc.total_tensor_size_in_bytes as usize];
    fill_random_bits(desc.data_type, &mut bytes, seed);
    bytes
}

fn with_axis(sizes: &[u32], axis: usize, value: u32) -> Vec<u32> {
    let mut s = sizes.to_vec();
    s[axis] = value;
    s
}

/// The logical elements of a tensor in row-major order, as raw bytes.
fn logical(desc: &TensorDesc, bytes: &[u8]) -> Vec<u8> {
    let strides = desc.effective_strides();
    let size = desc.data_type.element_size();
    let mut out = Vec::new();
    for c in Coordinates::new(&desc.sizes) {
        let at = desc.byte_offset(&c, &strides).unwrap() as usize;
        out.extend_from_slice(&bytes[at..at + size]);
    }
    out
}

proptest! {
    #[test]
    fn join_of_split_is_identity((dt, sizes, axis, parts, seed) in split_case()) {
        let input = TensorDesc::packed(dt, &sizes);
        let outputs: Vec<TensorDesc> =
            parts.iter().map(|&p| TensorDesc::packed(dt, &with_axis(&sizes, axis, p))).collect();
        let bytes = random_bytes(&input, seed);
        let split = OperatorDesc::Split(SplitDesc {
            input_tensor: input.clone(),
            output_tensors: outputs.clone(),
            axis: axis as u32,
        });
        let pieces = execute(&split, &[&bytes]).unwrap();
        let piece_bytes: Vec<&[u8]> = pieces.iter().map(|p| p.bytes.as_slice()).collect();
        let join = OperatorDesc::Join(JoinDesc {
            input_tensors: outputs,
            output_tensor: input.clone(),
            axis: axis as u32,
        });
        let joined = execute(&join, &piece_bytes).unwrap();
        prop_assert_eq!(logical(&input, &joined[0].bytes), logical(&input, &bytes));
    }

    #[test]
    fn split_of_join_gives_back_the_parts((dt, sizes, axis, parts, seed) in split_case()) {
        let whole = TensorDesc::packed(dt, &sizes);
        let pieces: Vec<TensorDesc> =
            parts.iter().map(|&p| TensorDesc::packed(dt, &with_axis(&sizes, axis, p))).collect();
        let piece_bytes: Vec<Vec<u8>> = pieces
            .iter()
            .enumerate()
            .map(|(i, d)| random_bytes(d, seed.wrapping_add(i as u64)))
            .collect();
        let refs: Vec<&[u8]> = piece_bytes.iter().map(Vec::as_slice).collect();
        let joined = execute(
            &OperatorDesc::Join(JoinDesc {
                input_tensors: pieces.clone(),
                output_tensor: whole.clone(),
                axis: axis as u32,
            }),
            &refs,
        )
        .unwrap();
        let again = execute(
            &OperatorDesc::Split(SplitDesc {
                input_tensor: whole,
                output_tensors: pieces.clone(),
                axis: axis as u32,
            }),
            &[&joined[0].bytes],
        )
        .unwrap();
        for ((desc, original), result) in pieces.iter().zip(&piece_bytes).zip(&again) {
            prop_assert_eq!(logical(desc, &result.bytes), logical(desc, original));
        }
    }

    #[test]
    fn slice1_reversing_every_dimension_twice_is_identity(
        dt in data_type(), sizes in shape(), seed in any::<u64>()
    ) {
        let desc = TensorDesc::packed(dt, &sizes);
        let dims = sizes.len();
        let reverse = OperatorDesc::Slice1(Slice1Desc {
            input_tensor: desc.clone(),
            output_tensor: desc.clone(),
            dimension_count: dims as u32,
            input_window_offsets: vec![0; dims],
            input_window_sizes: sizes.clone(),
            input_window_strides: vec![-1; dims],
        });
        let bytes = random_bytes(&desc, seed);
        let once = execute(&reverse, &[&bytes]).unwrap();
        let twice = execute(&reverse, &[&once[0].bytes]).unwrap();
        prop_assert_eq!(logical(&desc, &twice[0].bytes), logical(&desc, &bytes));
    }

    #[test]
    fn slice1_with_a_full_stride_one_window_is_a_copy(
        dt in data_type(), sizes in shape(), seed in any::<u64>()
    ) {
        let desc = TensorDesc::packed(dt, &sizes);
        let dims = sizes.len();
        let copy = OperatorDesc::Slice1(Slice1Desc {
            input_tensor: desc.clone(),
            output_tensor: desc.clone(),
            dimension_count: dims as u32,
            input_window_offsets: vec![0; dims],
            input_window_sizes: sizes.clone(),
            input_window_strides: vec![1; dims],
        });
        let bytes = random_bytes(&desc, seed);
        let out = execute(&copy, &[&bytes]).unwrap();
        prop_assert_eq!(logical(&desc, &out[0].bytes), logical(&desc, &bytes));
    }

    #[test]
    fn slice1_output_elements_come_from_the_coordinate_the_formula_names(
        (sizes, windows) in shape().prop_flat_map(|sizes| {
            let per_dim: Vec<_> = sizes.iter().map(|&s| {
                (0..s).prop_flat_map(move |offset| {
                    (Just(offset), 1..=(s - offset), prop_oneof![1i32..=3, -3i32..=-1])
                        .prop_flat_map(|(offset, size, stride)| {
                            let max = 1 + (size - 1) / stride.unsigned_abs();
                            (Just(offset), Just(size), Just(stride), 1..=max)
                        })
                }).boxed()
            }).collect();
            (Just(sizes), per_dim)
        })
    ) {
        // Each input element holds its own linear index, so an output value names its source.
        let input = TensorDesc::packed(DataType::Uint32, &sizes);
        let count = input.element_count() as u32;
        let bytes: Vec<u8> = (0..count).flat_map(|v| v.to_le_bytes()).collect();
        let output_sizes: Vec<u32> = windows.iter().map(|w| w.3).collect();
        let output = TensorDesc::packed(DataType::Uint32, &output_sizes);
        let op = OperatorDesc::Slice1(Slice1Desc {
            input_tensor: input.clone(),
            output_tensor: output.clone(),
            dimension_count: sizes.len() as u32,
            input_window_offsets: windows.iter().map(|w| w.0).collect(),
            input_window_sizes: windows.iter().map(|w| w.1).collect(),
            input_window_strides: windows.iter().map(|w| w.2).collect(),
        });
        prop_assert_eq!(validate(&op, FeatureLevel::L4_1), Ok(()));
        let out = execute(&op, &[&bytes]).unwrap();
        let input_strides = input.effective_strides();
        for (n, c) in Coordinates::new(&output_sizes).enumerate() {
            let got = u32::from_le_bytes(out[0].bytes[n * 4..n * 4 + 4].try_into().unwrap());
            let mut expected_index = 0u64;
            for (i, &(offset, size, stride, _)) in windows.iter().enumerate() {
                let start = if stride < 0 { offset + size - 1 } else { offset } as i64;
                let coordinate = start + stride as i64 * c[i] as i64;
                prop_assert!(coordinate >= offset as i64 && coordinate < (offset + size) as i64);
                expected_index += coordinate as u64 * input_strides[i];
            }
            prop_assert_eq!(u64::from(got), expected_index);
        }
    }

    #[test]
    fn strided_and_packed_layouts_give_the_same_result(
        (dt, sizes, axis, parts, seed) in split_case(),
        padding in prop::collection::vec(0u32..3, 8),
        reverse_order in any::<bool>(),
    ) {
        // The same logical input laid out packed, and with padded (and optionally reversed,
        // i.e. permuted) strides; outputs with holes. Logical results must be equal.
        let packed = TensorDesc::packed(dt, &sizes);
        let dims = sizes.len();
        let mut order: Vec<usize> = (0..dims).collect();
        if reverse_order {
            order.reverse();
        }
        let mut strides = vec![0u32; dims];
        let mut running = 1u32;
        for &d in order.iter().rev() {
            strides[d] = running;
            running *= sizes[d] + padding[d];
        }
        let strided = TensorDesc::strided(dt, &sizes, Some(&strides));
        let packed_bytes = random_bytes(&packed, seed);
        let mut strided_bytes = vec![0xEEu8; strided.total_tensor_size_in_bytes as usize];
        let size = dt.element_size();
        let s_strides = strided.effective_strides();
        for (n, c) in Coordinates::new(&sizes).enumerate() {
            let at = strided.byte_offset(&c, &s_strides).unwrap() as usize;
            strided_bytes[at..at + size].copy_from_slice(&packed_bytes[n * size..(n + 1) * size]);
        }
        let outputs_packed: Vec<TensorDesc> =
            parts.iter().map(|&p| TensorDesc::packed(dt, &with_axis(&sizes, axis, p))).collect();
        let outputs_holey: Vec<TensorDesc> = outputs_packed
            .iter()
            .map(|d| {
                let mut holey = d.effective_strides().iter().map(|&s| s as u32 * 2).collect::<Vec<_>>();
                if let Some(last) = holey.last_mut() { *last = 2; }
                TensorDesc::strided(dt, &d.sizes, Some(&holey))
            })
            .collect();
        let run = |input: &TensorDesc, bytes: &[u8], outputs: &[TensorDesc]| {
            let op = OperatorDesc::Split(SplitDesc {
                input_tensor: input.clone(),
                output_tensors: outputs.to_vec(),
                axis: axis as u32,
            });
            let results = execute(&op, &[bytes]).unwrap();
            outputs.iter().zip(results).map(|(d, r)| logical(d, &r.bytes)).collect::<Vec<_>>()
        };
        let a = run(&packed, &packed_bytes, &outputs_packed);
        let b = run(&strided, &strided_bytes, &outputs_holey);
        prop_assert_eq!(a, b);
    }

    #[test]
    fn validate_and_execute_never_panic_on_arbitrary_descriptors(
        op in arbitrary_descriptor(),
        level in prop::sample::select(FeatureLevel::ALL.to_vec()),
    ) {
        match validate(&op, level) {
            Err(violation) => {
                prop_assert!(spec::constraint(&violation.rule).is_some(), "{}", violation.rule);
            }
            Ok(()) => {
                let inputs = op.inputs();
                let small = inputs.iter().chain(op.outputs().iter())
                    .all(|(_, d)| d.total_tensor_size_in_bytes <= 1 << 20);
                if small {
                    let buffers: Vec<Vec<u8>> = inputs
                        .iter()
                        .map(|(_, d)| vec![0u8; d.total_tensor_size_in_bytes as usize])
                        .collect();
                    let refs: Vec<&[u8]> = buffers.iter().map(Vec::as_slice).collect();
                    let out = execute(&op, &refs);
                    prop_assert!(out.is_ok());
                    // Wrong input lengths are refused, not read past.
                    if let Some(first) = refs.first().filter(|b| !b.is_empty()) {
                        let mut short = refs.clone();
                        short[0] = &first[1..];
                        prop_assert!(execute(&op, &short).is_err());
                    }
                }
            }
        }
    }
}

fn wild_u32() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..5,
        1 => Just(u32::MAX),
        1 => Just(65536u32),
        1 => any::<u32>(),
    ]
}

fn wild_tensor() -> impl Strategy<Value = TensorDesc> {
    (
        data_type(),
        prop::collection::vec(wild_u32(), 0..10),
        prop::option::of(prop::collection::vec(wild_u32(), 0..10)),
        prop_oneof![
            Just(None),
            any::<u64>().prop_map(Some),
            (0u64..64).prop_map(Some)
        ],
    )
        .prop_map(|(data_type, sizes, strides, total)| {
            let mut desc = TensorDesc::strided(data_type, &sizes, strides.as_deref());
            if let Some(total) = total {
                desc.total_tensor_size_in_bytes = total;
            }
            desc
        })
}

fn arbitrary_descriptor() -> impl Strategy<Value = OperatorDesc> {
    let tensors = || prop::collection::vec(wild_tensor(), 0..4);
    prop_oneof![
        (wild_tensor(), tensors(), wild_u32()).prop_map(|(input_tensor, output_tensors, axis)| {
            OperatorDesc::Split(SplitDesc {
                input_tensor,
                output_tensors,
                axis,
            })
        }),
        (tensors(), wild_tensor(), wild_u32()).prop_map(|(input_tensors, output_tensor, axis)| {
            OperatorDesc::Join(JoinDesc {
                input_tensors,
                output_tensor,
                axis,
            })
        }),
        (
            wild_tensor(),
            wild_tensor(),
            0u32..10,
            prop::collection::vec(wild_u32(), 0..10),
            prop::collection::vec(wild_u32(), 0..10),
            prop::collection::vec(
                prop_oneof![Just(0), Just(i32::MIN), -3i32..4, any::<i32>()],
                0..10
            ),
        )
            .prop_map(
                |(input_tensor, output_tensor, dimension_count, offsets, sizes, strides)| {
                    OperatorDesc::Slice1(Slice1Desc {
                        input_tensor,
                        output_tensor,
                        dimension_count,
                        input_window_offsets: offsets,
                        input_window_sizes: sizes,
                        input_window_strides: strides,
                    })
                }
            ),
    ]
}
