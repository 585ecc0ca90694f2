//! proptest strategies for descriptors and cases, public so a backend author's own tests can
//! use them: valid descriptors within a level's tables (`descs`, with `sizes` and `layout`),
//! near misses that break one rule of specs/ just past its edge and nothing else at that
//! level (`near_miss`), and the cases around them. A level's tables come from specs/ through
//! the oracle (`tables`).

pub mod descs;
pub mod edit;
pub mod layout;
pub mod near_miss;
pub mod siblings;
pub mod sizes;
pub mod tables;

pub use descs::{Within, desc_in, join_in, slice1_in, split_in};
pub use layout::{Layout, TensorLayout, UnitStride, layout, tensor};
pub use near_miss::{NearMiss, Picks, break_one_rule, break_rule, near_miss_at, rules_for};
pub use sizes::{LARGE_TIER_ELEMENTS, MAX_ELEMENTS, large_sizes_in, sizes, sizes_for, sizes_in};
pub use tables::Tables;

use dmlcts_harness::corpus::data::TensorData;
use dmlcts_harness::{Case, Expectation};
use dmlcts_oracle::validate;
use dmlcts_tensor::{DataType, FeatureLevel, OperatorDesc, OperatorKind};
use proptest::prelude::*;

pub fn data_type() -> impl Strategy<Value = DataType> {
    prop::sample::select(DataType::ALL.to_vec())
}

/// The operators that exist at `level` (of `kind`, or of all three).
pub fn kinds_at(kind: Option<OperatorKind>, level: FeatureLevel) -> Vec<OperatorKind> {
    kind.map_or(OperatorKind::ALL.to_vec(), |k| vec![k])
        .into_iter()
        .filter(|&k| Tables::of(k, level).available)
        .collect()
}

/// A valid descriptor of `kind` (or any operator that exists at `level`) within `level`'s
/// tables, in the large tier with tensors of `large_element_size` bytes where the tables
/// list such a type. None where no such operator exists at `level`.
pub fn valid_desc_at(
    kind: Option<OperatorKind>,
    level: FeatureLevel,
    large_element_size: Option<usize>,
) -> Option<BoxedStrategy<OperatorDesc>> {
    let mut kinds = kinds_at(kind, level);
    if let Some(size) = large_element_size {
        let sized: Vec<_> = (kinds.iter().copied())
            .filter(|&k| !Tables::of(k, level).data_types_of_size(size).is_empty())
            .collect();
        if !sized.is_empty() {
            kinds = sized;
        }
    }
    let strategies: Vec<BoxedStrategy<OperatorDesc>> = kinds
        .into_iter()
        .map(|kind| {
            desc_in(&Within {
                tables: Tables::of(kind, level),
                large_element_size,
            })
        })
        .collect();
    (!strategies.is_empty()).then(|| prop::strategy::Union::new(strategies).boxed())
}

/// A valid descriptor of `kind`, or of any operator, within the 4_1 tables (every type, 1
/// to 8 dimensions).
pub fn valid_desc(kind: Option<OperatorKind>) -> BoxedStrategy<OperatorDesc> {
    valid_desc_at(kind, FeatureLevel::L4_1, None).expect("every operator exists at 4_1")
}

pub fn split_desc() -> BoxedStrategy<OperatorDesc> {
    split_in(&Within::tables(OperatorKind::Split, FeatureLevel::L4_1))
}

pub fn join_desc() -> BoxedStrategy<OperatorDesc> {
    join_in(&Within::tables(OperatorKind::Join, FeatureLevel::L4_1))
}

pub fn slice1_desc() -> BoxedStrategy<OperatorDesc> {
    slice1_in(&Within::tables(OperatorKind::Slice1, FeatureLevel::L4_1))
}

/// Random bit-pattern inputs from `seed`, one per input tensor.
pub fn random_inputs(op: &OperatorDesc, seed: u64) -> Vec<TensorData> {
    (0..op.inputs().len())
        .map(|i| TensorData::Random {
            seed: seed.wrapping_add(i as u64),
        })
        .collect()
}

/// A case around a descriptor, judged at `level`: random bit-pattern inputs from `seed`, the
/// expectation the oracle gives there, and `level` as its feature level (so it replays there).
pub fn case_at(name: &str, op: OperatorDesc, seed: u64, level: FeatureLevel) -> Case {
    let expect = match validate(&op, level) {
        Ok(()) => Expectation::Accept,
        Err(violation) => Expectation::Reject {
            rule: violation.rule,
        },
    };
    case_with(name, op, seed, expect, level)
}

/// A case around a descriptor: random bit-pattern inputs from `seed`, the expectation and
/// level the oracle gives (the lowest level where it holds; see cases/README.md).
pub fn case_for(name: &str, op: OperatorDesc, seed: u64) -> Case {
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
    case_with(name, op, seed, expect, feature_level)
}

fn case_with(
    name: &str,
    op: OperatorDesc,
    seed: u64,
    expect: Expectation,
    feature_level: FeatureLevel,
) -> Case {
    let inputs = random_inputs(&op, seed);
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
        steps: Vec::new(),
    }
}

/// A valid case within the 4_1 tables with random inputs (its level the lowest it is valid at).
pub fn valid_case(kind: Option<OperatorKind>) -> impl Strategy<Value = Case> {
    (valid_desc(kind), any::<u64>()).prop_map(|(op, seed)| case_for("fuzz.valid", op, seed))
}

/// A near miss within the 4_1 tables (its level the lowest where the oracle gives the same
/// rule).
pub fn near_miss_case(kind: Option<OperatorKind>) -> impl Strategy<Value = Case> {
    (near_miss_at(kind, FeatureLevel::L4_1), any::<u64>())
        .prop_map(|(miss, seed)| case_for("fuzz.near_miss", miss.op, seed))
}

/// A valid case judged at `level` (None where no operator of `kind` exists there).
pub fn valid_case_at(
    kind: Option<OperatorKind>,
    level: FeatureLevel,
    large_element_size: Option<usize>,
) -> Option<BoxedStrategy<Case>> {
    let descs = valid_desc_at(kind, level, large_element_size)?;
    Some(
        (descs, any::<u64>())
            .prop_map(move |(op, seed)| case_at("fuzz.valid", op, seed, level))
            .boxed(),
    )
}

/// A near miss judged at `level`, named after the rule it aims at.
pub fn near_miss_case_at(kind: Option<OperatorKind>, level: FeatureLevel) -> BoxedStrategy<Case> {
    (near_miss_at(kind, level), any::<u64>())
        .prop_map(move |(miss, seed)| {
            let name = if miss.rule.is_empty() {
                "fuzz.near_miss".to_string()
            } else {
                format!("fuzz.near_miss.{}", miss.rule)
            };
            case_at(&name, miss.op, seed, level)
        })
        .boxed()
}
