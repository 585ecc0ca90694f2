//! For every constraint id in specs/, a descriptor that breaks only that rule, rejected with
//! exactly that id. The test walks the spec files: a new rule without a descriptor here fails.

use dmlcts_oracle::{spec, validate};
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc,
};

fn t(sizes: &[u32]) -> TensorDesc {
    TensorDesc::packed(DataType::Float32, sizes)
}

fn typed(data_type: DataType, sizes: &[u32]) -> TensorDesc {
    TensorDesc::packed(data_type, sizes)
}

/// Valid at every level from 1_0: 4 dimensions, FLOAT32.
fn split_base() -> SplitDesc {
    SplitDesc {
        input_tensor: t(&[2, 3, 4, 5]),
        output_tensors: vec![t(&[2, 1, 4, 5]), t(&[2, 2, 4, 5])],
        axis: 1,
    }
}

fn join_base() -> JoinDesc {
    JoinDesc {
        input_tensors: vec![t(&[2, 1, 4, 5]), t(&[2, 2, 4, 5])],
        output_tensor: t(&[2, 3, 4, 5]),
        axis: 1,
    }
}

/// The Slice1 page's Example 1, valid from 2_1.
fn slice1_base() -> Slice1Desc {
    Slice1Desc {
        input_tensor: t(&[1, 1, 4, 4]),
        output_tensor: t(&[1, 1, 2, 2]),
        dimension_count: 4,
        input_window_offsets: vec![0, 0, 0, 1],
        input_window_sizes: vec![1, 1, 4, 3],
        input_window_strides: vec![1, 1, 2, 2],
    }
}

/// A descriptor breaking `rule` alone, and the level to validate it at.
fn breaking(rule: &str) -> Option<(OperatorDesc, FeatureLevel)> {
    use OperatorDesc::{Join, Slice1, Split};
    let l1_0 = FeatureLevel::L1_0;
    let l2_1 = FeatureLevel::L2_1;
    Some(match rule {
        "operator.introduced_at_level" => (Slice1(slice1_base()), FeatureLevel::L2_0),
        "tensor.strides_count" => {
            let mut d = split_base();
            d.input_tensor.strides = Some(vec![60, 20, 5]);
            (Split(d), l1_0)
        }
        "tensor.sizes_nonzero" => {
            let mut d = join_base();
            d.input_tensors = vec![t(&[2, 3, 4, 5]), t(&[2, 0, 4, 5])];
            (Join(d), l1_0)
        }
        "tensor.element_count_limit" => {
            let d = SplitDesc {
                input_tensor: t(&[65536, 65536, 1, 1]),
                output_tensors: vec![t(&[65535, 65536, 1, 1]), t(&[1, 65536, 1, 1])],
                axis: 0,
            };
            (Split(d), l1_0)
        }
        "tensor.total_size_minimum" => {
            let mut d = split_base();
            d.input_tensor.total_tensor_size_in_bytes -= 4;
            (Split(d), l1_0)
        }
        "tensor.output_addresses_distinct" => {
            let mut d = split_base();
            d.output_tensors[0] =
                TensorDesc::strided(DataType::Float32, &[2, 1, 4, 5], Some(&[0, 20, 5, 1]));
            (Split(d), l1_0)
        }
        "split.output_count_nonzero" => {
            let mut d = split_base();
            d.output_tensors.clear();
            (Split(d), l1_0)
        }
        "split.same_dimension_count" => {
            let mut d = split_base();
            d.output_tensors[0] = t(&[2, 1, 20]);
            (Split(d), l1_0)
        }
        "split.same_data_type" => {
            let mut d = split_base();
            d.output_tensors[1] = typed(DataType::Float16, &[2, 2, 4, 5]);
            (Split(d), l1_0)
        }
        "split.dimension_count_supported" => {
            let d = SplitDesc {
                input_tensor: t(&[2, 3, 20]),
                output_tensors: vec![t(&[2, 1, 20]), t(&[2, 2, 20])],
                axis: 1,
            };
            (Split(d), l2_1)
        }
        "split.data_type_supported" => {
            let d = SplitDesc {
                input_tensor: typed(DataType::Int8, &[2, 3, 4, 5]),
                output_tensors: vec![
                    typed(DataType::Int8, &[2, 1, 4, 5]),
                    typed(DataType::Int8, &[2, 2, 4, 5]),
                ],
                axis: 1,
            };
            (Split(d), l1_0)
        }
        "split.axis_in_range" => {
            let mut d = split_base();
            d.axis = 4;
            (Split(d), l1_0)
        }
        "split.non_axis_sizes_match" => {
            let mut d = split_base();
            d.output_tensors[1] = t(&[2, 2, 4, 6]);
            (Split(d), l1_0)
        }
        "split.output_sizes_sum_to_input" => {
            let mut d = split_base();
            d.output_tensors[1] = t(&[2, 1, 4, 5]);
            (Split(d), l1_0)
        }
        "join.input_count_nonzero" => {
            let mut d = join_base();
            d.input_tensors.clear();
            (Join(d), l1_0)
        }
        "join.same_dimension_count" => {
            let mut d = join_base();
            d.input_tensors[0] = t(&[2, 1, 20]);
            (Join(d), l1_0)
        }
        "join.same_data_type" => {
            let mut d = join_base();
            d.input_tensors[1] = typed(DataType::Uint16, &[2, 2, 4, 5]);
            (Join(d), l1_0)
        }
        "join.dimension_count_supported" => {
            // 6 dimensions: Split accepts them at 3_0, Join's page says 4 to 5.
            let d = JoinDesc {
                input_tensors: vec![t(&[1, 2, 1, 4, 5, 1]), t(&[1, 2, 2, 4, 5, 1])],
                output_tensor: t(&[1, 2, 3, 4, 5, 1]),
                axis: 2,
            };
            (Join(d), FeatureLevel::L3_0)
        }
        "join.data_type_supported" => {
            let d = JoinDesc {
                input_tensors: vec![
                    typed(DataType::Uint64, &[2, 1, 4, 5]),
                    typed(DataType::Uint64, &[2, 2, 4, 5]),
                ],
                output_tensor: typed(DataType::Uint64, &[2, 3, 4, 5]),
                axis: 1,
            };
            (Join(d), FeatureLevel::L4_0)
        }
        "join.axis_in_range" => {
            let mut d = join_base();
            d.axis = 7;
            (Join(d), l1_0)
        }
        "join.non_axis_sizes_match" => {
            let mut d = join_base();
            d.input_tensors[0] = t(&[2, 1, 3, 5]);
            (Join(d), l1_0)
        }
        "join.input_sizes_sum_to_output" => {
            let mut d = join_base();
            d.output_tensor = t(&[2, 4, 4, 5]);
            (Join(d), l1_0)
        }
        "slice1.window_arrays_length" => {
            let mut d = slice1_base();
            d.input_window_offsets.pop();
            (Slice1(d), l2_1)
        }
        "slice1.same_dimension_count" => {
            let mut d = slice1_base();
            d.output_tensor = t(&[1, 2, 2]);
            (Slice1(d), l2_1)
        }
        "slice1.dimension_count_matches_tensors" => {
            let mut d = slice1_base();
            d.dimension_count = 5;
            d.input_window_offsets.push(0);
            d.input_window_sizes.push(1);
            d.input_window_strides.push(1);
            (Slice1(d), l2_1)
        }
        "slice1.same_data_type" => {
            let mut d = slice1_base();
            d.output_tensor = typed(DataType::Int32, &[1, 1, 2, 2]);
            (Slice1(d), l2_1)
        }
        "slice1.dimension_count_supported" => {
            let d = Slice1Desc {
                input_tensor: t(&[1, 4, 4]),
                output_tensor: t(&[1, 2, 2]),
                dimension_count: 3,
                input_window_offsets: vec![0, 0, 1],
                input_window_sizes: vec![1, 4, 3],
                input_window_strides: vec![1, 2, 2],
            };
            (Slice1(d), l2_1)
        }
        "slice1.data_type_supported" => {
            let mut d = slice1_base();
            d.input_tensor = typed(DataType::Float64, &[1, 1, 4, 4]);
            d.output_tensor = typed(DataType::Float64, &[1, 1, 2, 2]);
            (Slice1(d), FeatureLevel::L3_0)
        }
        "slice1.window_nonempty" => {
            let mut d = slice1_base();
            d.input_window_sizes[0] = 0;
            (Slice1(d), l2_1)
        }
        "slice1.window_inside_input" => {
            let mut d = slice1_base();
            d.input_window_offsets[2] = 1;
            (Slice1(d), l2_1)
        }
        "slice1.window_stride_nonzero" => {
            let mut d = slice1_base();
            d.input_window_strides[2] = 0;
            (Slice1(d), l2_1)
        }
        "slice1.output_size_within_max_copied" => {
            let mut d = slice1_base();
            d.output_tensor = t(&[1, 1, 3, 2]);
            (Slice1(d), l2_1)
        }
        _ => return None,
    })
}

#[test]
fn every_spec_rule_has_a_descriptor_rejected_with_that_rule() {
    let mut missing = Vec::new();
    for constraint in spec::all_constraints() {
        let Some((op, level)) = breaking(&constraint.id) else {
            missing.push(constraint.id.clone());
            continue;
        };
        let violation = validate(&op, level).expect_err(&constraint.id);
        assert_eq!(violation.rule, constraint.id, "{violation}");
        assert!(!violation.message.is_empty());
        assert_eq!(
            violation.depends_on_feature_level(),
            constraint.depends_on_feature_level
        );
    }
    assert!(
        missing.is_empty(),
        "rules without a rejecting descriptor: {missing:?}"
    );
}

#[test]
fn the_bases_are_valid_at_their_lowest_level() {
    let split = OperatorDesc::Split(split_base());
    let join = OperatorDesc::Join(join_base());
    let slice1 = OperatorDesc::Slice1(slice1_base());
    for level in FeatureLevel::ALL {
        assert_eq!(validate(&split, level), Ok(()));
        assert_eq!(validate(&join, level), Ok(()));
        if level >= FeatureLevel::L2_1 {
            assert_eq!(validate(&slice1, level), Ok(()));
        }
    }
}

#[test]
fn level_rules_are_lifted_at_the_levels_the_tables_say() {
    let (split, _) = breaking("split.dimension_count_supported").unwrap();
    assert!(validate(&split, FeatureLevel::L3_0).is_ok());
    let (join, _) = breaking("join.dimension_count_supported").unwrap();
    assert!(validate(&join, FeatureLevel::L4_0).is_err());
    assert!(validate(&join, FeatureLevel::L4_1).is_ok());
    let (join64, _) = breaking("join.data_type_supported").unwrap();
    assert!(validate(&join64, FeatureLevel::L4_1).is_ok());
}

#[test]
fn messages_name_the_field_and_both_values() {
    let (op, level) = breaking("split.non_axis_sizes_match").unwrap();
    let v = validate(&op, level).unwrap_err();
    assert_eq!(
        v.message,
        "OutputTensors[1].Sizes[3] is 6 but InputTensor.Sizes[3] is 5 (only the axis, 1, may differ)"
    );
    let (op, level) = breaking("slice1.output_size_within_max_copied").unwrap();
    let v = validate(&op, level).unwrap_err();
    assert_eq!(
        v.message,
        "OutputTensor.Sizes[2] is 3 but MaxCopiedElements[2] = 1 + (4 - 1) / |2| = 2"
    );
}

#[test]
fn window_bounds_do_not_wrap_in_32_bits() {
    let mut d = slice1_base();
    d.input_window_offsets[3] = u32::MAX;
    let v = validate(&OperatorDesc::Slice1(d), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(v.rule, "slice1.window_inside_input");
}

#[test]
fn negative_window_strides_use_their_magnitude_and_int_min_is_safe() {
    let mut d = slice1_base();
    d.input_window_strides = vec![1, 1, -2, i32::MIN];
    d.output_tensor = t(&[1, 1, 2, 1]);
    assert_eq!(
        validate(&OperatorDesc::Slice1(d.clone()), FeatureLevel::L4_1),
        Ok(())
    );
    d.output_tensor = t(&[1, 1, 2, 2]);
    let v = validate(&OperatorDesc::Slice1(d), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(v.rule, "slice1.output_size_within_max_copied");
}

#[test]
fn interleaved_output_strides_are_settled_by_listing_addresses() {
    // Sizes {3, 2} with strides {2, 3}: addresses 0,3,2,5,4,7, all distinct, but not nested.
    let mut d = split_base();
    d.input_tensor = t(&[3, 4]);
    d.output_tensors = vec![
        TensorDesc::strided(DataType::Float32, &[3, 2], Some(&[2, 3])),
        t(&[3, 2]),
    ];
    assert_eq!(
        validate(&OperatorDesc::Split(d.clone()), FeatureLevel::L4_1),
        Ok(())
    );
    // Sizes {2, 3} with strides {2, 1}: (0, 2) and (1, 0) both land on element 2.
    d.output_tensors[0] = TensorDesc::strided(DataType::Float32, &[3, 2], Some(&[1, 1]));
    let v = validate(&OperatorDesc::Split(d), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(v.rule, "tensor.output_addresses_distinct");
    assert!(v.message.contains("[0, 1] and [1, 0]"), "{}", v.message);
}

#[test]
fn broadcast_zero_strides_are_fine_on_inputs() {
    let mut d = split_base();
    d.input_tensor = TensorDesc::strided(DataType::Float32, &[2, 3, 4, 5], Some(&[0, 5, 0, 1]));
    assert_eq!(
        validate(&OperatorDesc::Split(d), FeatureLevel::L1_0),
        Ok(())
    );
}

/// A Join of two halves along axis 0 into `output` (whose sizes must be even on axis 0).
fn join_into(output: TensorDesc) -> OperatorDesc {
    let mut half = output.sizes.clone();
    half[0] /= 2;
    let part = typed(output.data_type, &half);
    OperatorDesc::Join(JoinDesc {
        input_tensors: vec![part.clone(), part],
        output_tensor: output,
        axis: 0,
    })
}

#[test]
fn packed_outputs_at_and_above_two_to_the_20_elements_are_valid() {
    // Packed layouts are nested: no listing of addresses, whatever the size.
    for elements in [1u32 << 20, (1 << 20) + 2, 1 << 26] {
        let op = join_into(typed(DataType::Uint8, &[2, elements / 2]));
        assert_eq!(validate(&op, FeatureLevel::L4_1), Ok(()), "{elements}");
    }
    let padded = TensorDesc::strided(DataType::Uint8, &[2, 1 << 20], Some(&[(1 << 20) + 64, 1]));
    assert_eq!(validate(&join_into(padded), FeatureLevel::L4_1), Ok(()));
}

#[test]
fn interleaved_outputs_past_two_to_the_20_elements_are_decided_exactly() {
    // Rows of {2, 3} elements with strides {3, 2} cover {0, 2, 3, 4, 5, 7}: distinct, but the
    // stride-3 dimension is within the stride-2 one's reach, so the layout is not nested.
    // Blocks 8 apart stay distinct; 5 apart, block 1's element 5 is block 0's (0, 1, 1).
    let blocks = (1 << 18) + 3; // 6 * blocks > 2^20 elements
    let interleaved = |block_stride: u32| {
        join_into(TensorDesc::strided(
            DataType::Uint16,
            &[2 * blocks, 2, 3],
            Some(&[block_stride, 3, 2]),
        ))
    };
    assert!(6 * u64::from(blocks) * 2 > 1 << 20);
    assert_eq!(validate(&interleaved(8), FeatureLevel::L4_1), Ok(()));
    let v = validate(&interleaved(5), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(v.rule, "tensor.output_addresses_distinct");
    assert_eq!(
        v.message,
        "OutputTensor.Strides [5, 3, 2] map coordinates [0, 1, 1] and [1, 0, 0] to the same element 5"
    );
}

#[test]
fn more_output_elements_than_addresses_is_a_shared_address_without_listing() {
    // 16384 x 16384 x 15 coordinates (within the element limit) over strides that reach
    // only 268435470 addresses, past the bitmap's span.
    let output = TensorDesc::strided(
        DataType::Uint8,
        &[1 << 14, 1 << 14, 15],
        Some(&[1 << 13, (1 << 13) + 1, 1]),
    );
    let v = validate(&join_into(output), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(
        v.message,
        "OutputTensor.Strides [8192, 8193, 1] give 4026531840 coordinates only 268435470 \
         element addresses: two of them share one"
    );
}

#[test]
fn a_zero_stride_on_a_size_1_output_dimension_is_valid() {
    let output = TensorDesc::strided(DataType::Float32, &[2, 1, 3], Some(&[3, 0, 1]));
    assert_eq!(validate(&join_into(output), FeatureLevel::L4_1), Ok(()));
    let output = TensorDesc::strided(DataType::Float32, &[2, 2, 3], Some(&[3, 0, 1]));
    let v = validate(&join_into(output), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(
        v.message,
        "OutputTensor.Strides[1] is 0 on a dimension of size 2: 2 output coordinates would share one address"
    );
}

#[test]
fn overlap_with_an_inner_stride_of_2_is_found_by_listing() {
    // Sizes {2, 3} with strides {4, 2}: (0, 2) and (1, 0) are both element 4.
    let output = TensorDesc::strided(DataType::Int16, &[2, 3], Some(&[4, 2]));
    let v = validate(&join_into(output), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(
        v.message,
        "OutputTensor.Strides [4, 2] map coordinates [0, 2] and [1, 0] to the same element 4"
    );
}

#[test]
fn exactly_u32_max_elements_is_within_the_limit_and_one_more_is_not() {
    let sizes = [65535, 65537]; // 2^32 - 1 elements
    let mut output = typed(DataType::Uint8, &sizes);
    output.total_tensor_size_in_bytes = 4;
    let op = OperatorDesc::Slice1(Slice1Desc {
        input_tensor: typed(DataType::Uint8, &sizes),
        output_tensor: output,
        dimension_count: 2,
        input_window_offsets: vec![0, 0],
        input_window_sizes: sizes.to_vec(),
        input_window_strides: vec![1, 1],
    });
    let v = validate(&op, FeatureLevel::L4_1).unwrap_err();
    assert_eq!(v.rule, "tensor.total_size_minimum");
    assert_eq!(
        v.message,
        "OutputTensor.TotalTensorSizeInBytes is 4 but its sizes and strides need at least 4294967296"
    );
    let over = typed(DataType::Uint8, &[65536, 65536]);
    let v = validate(&join_into(over), FeatureLevel::L4_1).unwrap_err();
    assert_eq!(v.rule, "tensor.element_count_limit");
}

#[test]
fn a_violation_reads_as_its_rule_then_its_message_naming_the_side_that_sums() {
    let (op, level) = breaking("join.input_sizes_sum_to_output").unwrap();
    let v = validate(&op, level).unwrap_err();
    assert_eq!(
        v.to_string(),
        format!("[join.input_sizes_sum_to_output] {}", v.message)
    );
    assert_eq!(
        v.message,
        "InputTensors[*].Sizes[1] sum to 3 (1 + 2) but OutputTensor.Sizes[1] is 4"
    );
    let (op, level) = breaking("split.output_sizes_sum_to_input").unwrap();
    let v = validate(&op, level).unwrap_err();
    assert_eq!(
        v.message,
        "OutputTensors[*].Sizes[1] sum to 2 (1 + 1) but InputTensor.Sizes[1] is 3"
    );
}
