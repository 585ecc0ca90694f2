//! `validate_enforced`: with every rule enforced it is `validate`; with none, it lists every
//! rule a descriptor breaks, in `validate`'s order, without panicking on any corpus case;
//! a broken rule that is enforced is the error even after one that is not.

use dmlcts_harness::Corpus;
use dmlcts_oracle::{validate, validate_enforced};
use dmlcts_tensor::{DataType, FeatureLevel, OperatorDesc, Slice1Desc, TensorDesc};

#[test]
fn with_every_rule_enforced_it_is_validate_and_with_none_the_first_listed_is_validates_rule() {
    let corpus = Corpus::embedded();
    assert!(corpus.cases.len() > 500);
    for case in &corpus.cases {
        for level in [case.feature_level, FeatureLevel::L1_0, FeatureLevel::LATEST] {
            let strict = validate(&case.op, level);
            assert_eq!(
                validate_enforced(&case.op, level, |_| true).map(|_| ()),
                strict,
                "{}",
                case.name
            );
            let none = validate_enforced(&case.op, level, |_| false).expect("nothing enforced");
            assert_eq!(
                none.first().map(|v| v.rule.clone()),
                strict.err().map(|v| v.rule),
                "{}",
                case.name
            );
        }
    }
}

fn slice(offsets: [u32; 2], strides: [i32; 2], output: [u32; 2]) -> OperatorDesc {
    OperatorDesc::Slice1(Slice1Desc {
        input_tensor: TensorDesc::packed(DataType::Float32, &[4, 4]),
        output_tensor: TensorDesc::packed(DataType::Float32, &output),
        dimension_count: 2,
        input_window_offsets: offsets.to_vec(),
        input_window_sizes: vec![4, 3],
        input_window_strides: strides.to_vec(),
    })
}

#[test]
fn a_broken_rule_that_is_enforced_is_the_error_after_one_that_is_not() {
    // Dimension 0: 1 + 4 > 4; dimension 1: a zero stride.
    let op = slice([1, 0], [1, 0], [2, 2]);
    let level = FeatureLevel::L6_4;
    let outside = "slice1.window_inside_input";
    let error = validate_enforced(&op, level, |rule| rule != outside).unwrap_err();
    assert_eq!(error.rule, "slice1.window_stride_nonzero");
    let listed = validate_enforced(&op, level, |_| false).unwrap();
    let rules: Vec<&str> = listed.iter().map(|v| v.rule.as_str()).collect();
    assert_eq!(rules, [outside, "slice1.window_stride_nonzero"]);
    // Only the rule not enforced is broken: listed, and no error.
    let op = slice([1, 0], [1, 1], [2, 2]);
    let listed = validate_enforced(&op, level, |rule| rule != outside).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].rule, outside);
}

#[test]
fn checks_a_broken_structure_makes_meaningless_are_left_out_without_a_panic() {
    // Window arrays shorter than DimensionCount, output of another dimension count: the
    // per-dimension window checks cover only the dimensions every array has.
    let op = OperatorDesc::Slice1(Slice1Desc {
        input_tensor: TensorDesc::packed(DataType::Float32, &[4, 4, 4]),
        output_tensor: TensorDesc::packed(DataType::Float32, &[9]),
        dimension_count: 3,
        input_window_offsets: vec![0],
        input_window_sizes: vec![0, 1],
        input_window_strides: vec![0, 1, 1],
    });
    let listed = validate_enforced(&op, FeatureLevel::L6_4, |_| false).unwrap();
    let rules: Vec<&str> = listed.iter().map(|v| v.rule.as_str()).collect();
    assert_eq!(
        rules,
        [
            "slice1.window_arrays_length",
            "slice1.same_dimension_count",
            "slice1.window_nonempty",
            "slice1.window_stride_nonzero",
        ]
    );
}
