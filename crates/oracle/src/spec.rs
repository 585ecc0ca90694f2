//! The operator pages as data: specs/*.yaml, compiled into the binary and parsed once.

use dmlcts_tensor::{DataType, FeatureLevel, OperatorKind};
use serde::Deserialize;
use std::sync::OnceLock;

pub const SPLIT_YAML: &str = include_str!("../../../specs/split.yaml");
pub const JOIN_YAML: &str = include_str!("../../../specs/join.yaml");
pub const SLICE1_YAML: &str = include_str!("../../../specs/slice1.yaml");
pub const TENSOR_YAML: &str = include_str!("../../../specs/tensor.yaml");
pub const EXECUTION_YAML: &str = include_str!("../../../specs/execution-properties.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperatorSpec {
    pub operator: String,
    #[serde(rename = "struct")]
    pub struct_name: String,
    pub page: String,
    pub summary: String,
    pub introduced: String,
    pub fields: Vec<Field>,
    pub constraints: Vec<Constraint>,
    pub tensor_support: Vec<SupportRow>,
    pub errata: Vec<Erratum>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonSpec {
    pub constraints: Vec<Constraint>,
    pub errata: Vec<Erratum>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: String,
    pub text: String,
    #[serde(default)]
    pub original: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Constraint {
    pub id: String,
    /// `page`, `tensor page`, `header`, or `reading` (the project's reading where pages are silent).
    pub source: String,
    #[serde(default)]
    pub depends_on_feature_level: bool,
    pub fields: Vec<String>,
    pub text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupportRow {
    /// "DML_FEATURE_LEVEL_<level> and above".
    pub level: String,
    pub tensors: Vec<TensorSupport>,
    /// `level`, parsed once when the specs are (`row_level`).
    #[serde(skip)]
    parsed_level: Option<FeatureLevel>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TensorSupport {
    pub name: String,
    pub kind: String,
    /// Inclusive [min, max].
    pub dimension_counts: [u32; 2],
    pub data_types: Vec<String>,
    /// `data_types`, parsed once when the specs are (`supported_data_types`).
    #[serde(skip)]
    parsed_data_types: Option<Vec<DataType>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Erratum {
    pub id: String,
    pub page_says: String,
    #[serde(default)]
    pub other_sources: Option<String>,
    pub reading: String,
}

/// specs/execution-properties.yaml: what a valid case checks when it executes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionSpec {
    pub properties: Vec<ExecutionProperty>,
    pub uncheckable: Vec<Uncheckable>,
}

/// One execution property: an assertion of the pages about the copy, checked by the valid
/// cases whose descriptor exercises it (the harness derives that from the descriptor).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionProperty {
    pub id: String,
    /// The operators it applies to (`split`, `join`, `slice1`).
    pub operators: Vec<String>,
    /// For a data type's bit patterns: the type.
    #[serde(default)]
    pub data_type: Option<String>,
    pub text: String,
    pub derived_from: String,
}

/// An assertion (a rule id or a property id) that no case can check at an operator and level
/// although the tables do not rule it out, and why.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Uncheckable {
    pub assertion: String,
    pub operator: String,
    pub levels: Vec<String>,
    pub reason: String,
}

impl ExecutionProperty {
    pub fn applies_to(&self, kind: OperatorKind) -> bool {
        self.operators.iter().any(|o| o == kind.name())
    }

    pub fn data_type(&self) -> Option<DataType> {
        (self.data_type.as_deref()).map(|t| DataType::from_name(t).expect("a known data type"))
    }
}

pub struct Specs {
    pub split: OperatorSpec,
    pub join: OperatorSpec,
    pub slice1: OperatorSpec,
    pub common: CommonSpec,
    pub execution: ExecutionSpec,
}

/// The parsed specs. They are compiled in, and a test parses them, so a failure here is a
/// build defect, not bad user input.
pub fn specs() -> &'static Specs {
    static SPECS: OnceLock<Specs> = OnceLock::new();
    SPECS.get_or_init(|| Specs {
        split: with_parsed_tables(
            serde_yaml::from_str(SPLIT_YAML).expect("specs/split.yaml parses"),
        ),
        join: with_parsed_tables(serde_yaml::from_str(JOIN_YAML).expect("specs/join.yaml parses")),
        slice1: with_parsed_tables(
            serde_yaml::from_str(SLICE1_YAML).expect("specs/slice1.yaml parses"),
        ),
        common: serde_yaml::from_str(TENSOR_YAML).expect("specs/tensor.yaml parses"),
        execution: serde_yaml::from_str(EXECUTION_YAML)
            .expect("specs/execution-properties.yaml parses"),
    })
}

/// The support tables' levels and data types parsed once, with the specs, instead of on
/// every validation.
fn with_parsed_tables(mut spec: OperatorSpec) -> OperatorSpec {
    for row in &mut spec.tensor_support {
        row.parsed_level = Some(parse_row_level(&row.level));
        for tensor in &mut row.tensors {
            tensor.parsed_data_types = Some(parse_data_types(&tensor.data_types));
        }
    }
    spec
}

fn parse_row_level(level: &str) -> FeatureLevel {
    FeatureLevel::parse(level).expect("table level in specs is a known level")
}

fn parse_data_types(names: &[String]) -> Vec<DataType> {
    names
        .iter()
        .map(|name| DataType::from_name(name).expect("data type in specs is known"))
        .collect()
}

/// Every execution property, in the file's order.
pub fn execution_properties() -> &'static [ExecutionProperty] {
    &specs().execution.properties
}

/// The operators a rule applies to: its own operator's, or all three for the common rules
/// (tensor.yaml).
pub fn rule_operators(rule_id: &str) -> Vec<OperatorKind> {
    let own = rule_id.split('.').next().and_then(OperatorKind::from_name);
    match own {
        Some(kind) => vec![kind],
        None => OperatorKind::ALL.to_vec(),
    }
}

pub fn operator(kind: OperatorKind) -> &'static OperatorSpec {
    let specs = specs();
    match kind {
        OperatorKind::Split => &specs.split,
        OperatorKind::Join => &specs.join,
        OperatorKind::Slice1 => &specs.slice1,
    }
}

/// Every constraint of every spec file, common ones first.
pub fn all_constraints() -> Vec<&'static Constraint> {
    let specs = specs();
    specs
        .common
        .constraints
        .iter()
        .chain(&specs.split.constraints)
        .chain(&specs.join.constraints)
        .chain(&specs.slice1.constraints)
        .collect()
}

pub fn constraint(id: &str) -> Option<&'static Constraint> {
    static BY_ID: OnceLock<std::collections::HashMap<&'static str, &'static Constraint>> =
        OnceLock::new();
    BY_ID
        .get_or_init(|| {
            all_constraints()
                .into_iter()
                .map(|c| (c.id.as_str(), c))
                .collect()
        })
        .get(id)
        .copied()
}

/// Whether a rule's verdict changes with the feature level (the tables, availability).
pub fn depends_on_feature_level(rule_id: &str) -> bool {
    constraint(rule_id).is_some_and(|c| c.depends_on_feature_level)
}

pub fn introduced(kind: OperatorKind) -> FeatureLevel {
    let text = &operator(kind).introduced;
    FeatureLevel::parse(text).expect("introduced level in specs is a known level")
}

/// The table row that applies at `level`: the highest "X and above" row not above it.
pub fn support_row(kind: OperatorKind, level: FeatureLevel) -> Option<&'static SupportRow> {
    operator(kind)
        .tensor_support
        .iter()
        .filter(|row| row_level(row) <= level)
        .max_by_key(|row| row_level(row))
}

pub fn row_level(row: &SupportRow) -> FeatureLevel {
    row.parsed_level
        .unwrap_or_else(|| parse_row_level(&row.level))
}

impl TensorSupport {
    pub fn supports_dimension_count(&self, count: usize) -> bool {
        let [min, max] = self.dimension_counts;
        (min as usize..=max as usize).contains(&count)
    }

    pub fn supported_data_types(&self) -> Vec<DataType> {
        match &self.parsed_data_types {
            Some(parsed) => parsed.clone(),
            None => parse_data_types(&self.data_types),
        }
    }

    /// Whether the row lists `data_type` (no allocation once the specs are parsed).
    pub fn supports_data_type(&self, data_type: DataType) -> bool {
        match &self.parsed_data_types {
            Some(parsed) => parsed.contains(&data_type),
            None => parse_data_types(&self.data_types).contains(&data_type),
        }
    }

    /// "1 to 8", or "4" when the row lists a single count.
    pub fn dimension_counts_text(&self) -> String {
        let [min, max] = self.dimension_counts;
        if min == max {
            min.to_string()
        } else {
            format!("{min} to {max}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_file_parses_and_names_known_levels_and_types() {
        for kind in OperatorKind::ALL {
            let spec = operator(kind);
            assert_eq!(spec.operator, kind.name());
            assert_eq!(spec.struct_name, kind.dml_name());
            introduced(kind);
            for row in &spec.tensor_support {
                row_level(row);
                for tensor in &row.tensors {
                    assert!(!tensor.supported_data_types().is_empty());
                }
            }
            for c in &spec.constraints {
                assert!(c.id.starts_with(&format!("{}.", kind.name())), "{}", c.id);
            }
        }
    }

    #[test]
    fn execution_properties_name_known_operators_and_types_and_no_rule_id() {
        let mut ids = Vec::new();
        for p in execution_properties() {
            assert!(!p.operators.is_empty(), "{}", p.id);
            for o in &p.operators {
                assert!(OperatorKind::from_name(o).is_some(), "{}: {o}", p.id);
            }
            p.data_type();
            assert!(constraint(&p.id).is_none(), "{} is a rule id", p.id);
            ids.push(p.id.as_str());
        }
        let before = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), before, "property ids are unique");
        for u in &specs().execution.uncheckable {
            assert!(OperatorKind::from_name(&u.operator).is_some());
            for l in &u.levels {
                assert!(FeatureLevel::parse(l).is_some(), "{l}");
            }
        }
    }

    #[test]
    fn constraint_ids_are_unique() {
        let mut ids: Vec<&str> = all_constraints().iter().map(|c| c.id.as_str()).collect();
        let before = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), before);
    }

    #[test]
    fn each_page_keeps_its_own_3_0_row() {
        let split = support_row(OperatorKind::Split, FeatureLevel::L3_0).unwrap();
        let join = support_row(OperatorKind::Join, FeatureLevel::L3_0).unwrap();
        assert_eq!(split.tensors[0].dimension_counts, [1, 8]);
        assert_eq!(join.tensors[0].dimension_counts, [4, 5]);
        // 4_0 has no row of its own: 3_0's applies.
        let join_4_0 = support_row(OperatorKind::Join, FeatureLevel::L4_0).unwrap();
        assert_eq!(join_4_0.level, "3_0");
        assert!(support_row(OperatorKind::Slice1, FeatureLevel::L2_0).is_none());
    }
}
