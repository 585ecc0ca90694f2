//! The generator's near misses and valid descriptors, level by level: every rule id in specs/
//! gets a near miss that breaks it and nothing else at the level it is judged at (the oracle's
//! `validate_enforced`, enforcing nothing, lists every broken rule), on each side of its edge;
//! valid descriptors are valid at their level and include the layouts that are valid but
//! unusual (0 strides on size-1 output dimensions, interleaved outputs).

use dmlcts_fuzz::strategies::{near_miss_at, valid_desc_at};
use dmlcts_oracle::{spec, validate, validate_enforced};
use dmlcts_tensor::{FeatureLevel, OperatorDesc, OperatorKind, TensorDesc};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use std::collections::{BTreeMap, BTreeSet};

/// The edges each rule's near misses must land on (both sides where a rule has two).
fn edges_wanted() -> BTreeMap<&'static str, Vec<&'static str>> {
    let sum = vec![
        "the whole one larger along the axis",
        "the whole one smaller along the axis",
        "a part one larger along the axis",
        "a part one smaller along the axis",
    ];
    let mut wanted = BTreeMap::from([
        (
            "operator.introduced_at_level",
            vec!["below the level it was introduced at"],
        ),
        (
            "tensor.strides_count",
            vec![
                "one stride fewer than dimensions",
                "one stride more than dimensions",
                "an empty strides array",
            ],
        ),
        (
            "tensor.sizes_nonzero",
            vec![
                "a part of size 0 along the axis",
                "an output dimension of size 0",
            ],
        ),
        ("tensor.element_count_limit", vec!["2^32 elements"]),
        (
            "tensor.total_size_minimum",
            vec![
                "inside the rounding to 4 bytes",
                "one byte short",
                "below the unrounded minimum",
                "a minimum past 2^32 bytes, its low 32 bits given",
                "TotalTensorSizeInBytes 0",
            ],
        ),
        (
            "tensor.output_addresses_distinct",
            vec![
                "a 0 stride on a dimension of size > 1",
                "rows that overlap by one element",
            ],
        ),
        ("split.output_sizes_sum_to_input", sum.clone()),
        ("join.input_sizes_sum_to_output", sum),
        (
            "slice1.window_arrays_length",
            vec![
                "an array one entry longer than DimensionCount",
                "an array one entry shorter than DimensionCount",
                "an empty array",
            ],
        ),
        (
            "slice1.same_dimension_count",
            vec![
                "an output with one dimension more",
                "an output with one dimension fewer",
            ],
        ),
        (
            "slice1.dimension_count_matches_tensors",
            vec![
                "DimensionCount one more than the tensors'",
                "DimensionCount one fewer than the tensors'",
            ],
        ),
        (
            "slice1.same_data_type",
            vec!["an output of another listed type"],
        ),
        (
            "slice1.dimension_count_supported",
            vec![
                "one dimension fewer than the table allows",
                "one dimension more than the table allows",
            ],
        ),
        (
            "slice1.data_type_supported",
            vec!["a type the table does not list"],
        ),
        ("slice1.window_nonempty", vec!["a window of size 0"]),
        (
            "slice1.window_inside_input",
            vec![
                "a window offset one past",
                "a window one element too large",
                "offset + size past 2^32 (wraps to inside)",
            ],
        ),
        ("slice1.window_stride_nonzero", vec!["a window stride of 0"]),
        (
            "slice1.output_size_within_max_copied",
            vec!["an output one more than MaxCopiedElements"],
        ),
    ]);
    for op in ["split", "join"] {
        let count = if op == "split" {
            "split.output_count_nonzero"
        } else {
            "join.input_count_nonzero"
        };
        wanted.insert(count, vec!["no parts"]);
        let rule = |name: &str| -> &'static str {
            spec::all_constraints()
                .into_iter()
                .map(|c| c.id.as_str())
                .find(|id| *id == format!("{op}.{name}"))
                .expect("a rule of the page")
        };
        wanted.insert(
            rule("same_dimension_count"),
            vec!["one dimension more", "one dimension fewer"],
        );
        wanted.insert(rule("same_data_type"), vec!["another listed type"]);
        wanted.insert(
            rule("dimension_count_supported"),
            vec![
                "one dimension fewer than the table allows",
                "one dimension more than the table allows",
            ],
        );
        wanted.insert(
            rule("data_type_supported"),
            vec!["a type the table does not list"],
        );
        wanted.insert(
            rule("axis_in_range"),
            vec![
                "Axis = DimensionCount",
                "Axis 2^32 - 1 (-1 as a signed integer)",
                "Axis 2^31 (negative as a signed integer)",
            ],
        );
        wanted.insert(
            rule("non_axis_sizes_match"),
            vec!["one larger off the axis", "one smaller off the axis"],
        );
    }
    wanted
}

#[test]
fn every_rule_in_specs_has_an_isolated_near_miss_on_each_side_of_its_edge() {
    let mut runner = TestRunner::deterministic();
    let mut seen: BTreeMap<&'static str, BTreeSet<&'static str>> = BTreeMap::new();
    for level in FeatureLevel::ALL {
        for kind in OperatorKind::ALL {
            let strategy = near_miss_at(Some(kind), level);
            for _ in 0..300 {
                let miss = strategy.new_tree(&mut runner).unwrap().current();
                assert!(
                    !miss.rule.is_empty(),
                    "{kind} at {level}: no rule could be broken"
                );
                let broken = validate_enforced(&miss.op, level, |_| false)
                    .expect("nothing is enforced, so every broken rule is listed");
                let rules: Vec<&str> = broken.iter().map(|v| v.rule.as_str()).collect();
                assert_eq!(
                    rules,
                    [miss.rule],
                    "{kind} at {level}, aimed at {} ({}): {:?}",
                    miss.rule,
                    miss.edge,
                    miss.op
                );
                seen.entry(miss.rule).or_default().insert(miss.edge);
            }
        }
    }
    let wanted = edges_wanted();
    for constraint in spec::all_constraints() {
        let id = constraint.id.as_str();
        let edges = wanted
            .get(id)
            .unwrap_or_else(|| panic!("rule {id} of specs/ has no near miss listed here"));
        let got = seen.get(id).cloned().unwrap_or_default();
        for edge in edges {
            assert!(
                got.contains(edge),
                "{id}: no isolated near miss at `{edge}`; got {got:?}"
            );
        }
    }
    assert_eq!(
        wanted.len(),
        spec::all_constraints().len(),
        "a rule listed here is not in specs/"
    );
}

fn outputs(op: &OperatorDesc) -> Vec<TensorDesc> {
    op.outputs().into_iter().map(|(_, t)| t.clone()).collect()
}

/// Sorted by stride, a dimension whose stride is within the reach of the smaller ones.
fn interleaved(tensor: &TensorDesc) -> bool {
    let strides = tensor.effective_strides();
    let mut moving: Vec<(u64, u64)> = (0..tensor.sizes.len())
        .filter(|&d| tensor.sizes[d] > 1)
        .map(|d| (strides[d], u64::from(tensor.sizes[d])))
        .collect();
    moving.sort_unstable();
    let mut reach = 0;
    for (stride, size) in moving {
        if stride <= reach {
            return true;
        }
        reach += (size - 1) * stride;
    }
    false
}

#[test]
fn valid_descriptors_are_valid_at_their_level_and_include_unusual_valid_outputs() {
    let mut runner = TestRunner::deterministic();
    let (mut zero_unit, mut largest_unit, mut interleaved_outputs) = (0, 0, 0);
    let mut two_digit_part_counts = 0;
    for level in FeatureLevel::ALL {
        let Some(strategy) = valid_desc_at(None, level, None) else {
            panic!("Split and Join exist at {level}");
        };
        for _ in 0..300 {
            let op = strategy.new_tree(&mut runner).unwrap().current();
            if let Err(v) = validate(&op, level) {
                panic!("invalid at {level}: {v}: {op:?}");
            }
            let parts = match &op {
                OperatorDesc::Split(d) => d.output_tensors.len(),
                OperatorDesc::Join(d) => d.input_tensors.len(),
                OperatorDesc::Slice1(_) => 1,
            };
            two_digit_part_counts += usize::from(parts >= 11);
            for output in outputs(&op) {
                let unit = |stride: u32| {
                    output.strides.as_ref().is_some_and(|s| {
                        s.iter()
                            .zip(&output.sizes)
                            .any(|(&st, &size)| size == 1 && st == stride)
                    })
                };
                zero_unit += usize::from(unit(0));
                largest_unit += usize::from(unit(u32::MAX));
                interleaved_outputs += usize::from(interleaved(&output));
            }
        }
    }
    assert!(
        zero_unit > 50,
        "{zero_unit} outputs with a 0 stride on a size-1 dimension"
    );
    assert!(
        largest_unit > 20,
        "{largest_unit} outputs with stride 2^32 - 1 on a size-1 dimension"
    );
    assert!(
        interleaved_outputs > 50,
        "{interleaved_outputs} interleaved outputs"
    );
    // Part counts past 10 (where "10" sorts before "2"), often enough that a campaign of a
    // few thousand cases meets many.
    assert!(
        two_digit_part_counts > 100,
        "{two_digit_part_counts} of 2,100 valid descriptors with 11 or more parts"
    );
}

#[test]
fn the_large_tier_holds_more_than_2_to_the_20_elements_in_every_element_size() {
    let mut runner = TestRunner::deterministic();
    for size in [1, 2, 4, 8] {
        let strategy = valid_desc_at(None, FeatureLevel::L4_1, Some(size)).unwrap();
        for _ in 0..20 {
            let op = strategy.new_tree(&mut runner).unwrap().current();
            if let Err(v) = validate(&op, FeatureLevel::L4_1) {
                panic!("{v}: {op:?}");
            }
            let largest = op
                .inputs()
                .iter()
                .chain(&op.outputs())
                .map(|(_, t)| t.element_count())
                .max()
                .unwrap();
            assert!(largest > 1 << 20, "{largest} elements");
            assert!(
                op.inputs()
                    .iter()
                    .all(|(_, t)| t.data_type.element_size() == size)
            );
        }
    }
}
