//! The YAML case format (cases/README.md documents it): the raw file as parsed, and its
//! conversion into a `Case` with every field checked.

use super::data::{TensorData, parse_data, seed_from_name};
use super::read::{needs_escape, quoted};
use super::{Case, Expectation};
use dmlcts_oracle::{spec, validate};
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc,
};
use serde::Deserialize;

/// How results name a file that could not be loaded (`load:FILE`, run/load_error.rs): no
/// case name may start with it.
pub const LOAD_ERROR_PREFIX: &str = "load:";

pub(super) struct CaseError {
    pub case: String,
    pub text: String,
}

/// The `expecting` text is `read::CASE_FILE.expecting`: a file whose top level is not a
/// mapping (a key, a token: not YAML at all) is recognized by it and never quoted.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a YAML mapping with `cases:` (a case file)"
)]
pub(crate) struct RawFile {
    pub cases: Vec<RawCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCase {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub feature_level: Option<String>,
    #[serde(default)]
    pub split: Option<RawSplit>,
    #[serde(default)]
    pub join: Option<RawJoin>,
    #[serde(default)]
    pub slice1: Option<RawSlice1>,
    #[serde(default)]
    pub reject: Option<String>,
    /// A sibling group: its steps, each a case of its own (cases/README.md, "Sibling groups").
    #[serde(default)]
    pub steps: Option<Vec<RawCase>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSplit {
    pub axis: u32,
    pub input: RawTensor,
    pub outputs: Vec<RawTensor>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJoin {
    pub axis: u32,
    pub inputs: Vec<RawTensor>,
    pub output: RawTensor,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSlice1 {
    #[serde(default)]
    pub dimension_count: Option<u32>,
    pub input_window_offsets: Vec<u32>,
    pub input_window_sizes: Vec<u32>,
    pub input_window_strides: Vec<i32>,
    pub input: RawTensor,
    pub output: RawTensor,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTensor {
    pub data_type: String,
    pub sizes: Vec<u32>,
    #[serde(default)]
    pub strides: Option<Vec<u32>>,
    #[serde(default)]
    pub total_tensor_size_in_bytes: Option<u64>,
    /// Inputs only: the values (or a generator).
    #[serde(default)]
    pub data: Option<serde_yaml::Value>,
    /// Outputs only: the expected values.
    #[serde(default)]
    pub expected: Option<serde_yaml::Value>,
}

enum Role {
    Input,
    Output,
}

struct Converted {
    inputs: Vec<TensorData>,
    expected: Vec<Option<Vec<u64>>>,
}

impl RawTensor {
    fn to_desc(&self, field: &str) -> Result<TensorDesc, String> {
        let data_type = DataType::from_name(&self.data_type).ok_or_else(|| {
            format!(
                "{field}.data_type: unknown data type `{}` (expected one of {})",
                quoted(&self.data_type),
                DataType::ALL.map(DataType::name).join(", ")
            )
        })?;
        let mut desc = TensorDesc::strided(data_type, &self.sizes, self.strides.as_deref());
        if let Some(total) = self.total_tensor_size_in_bytes {
            desc.total_tensor_size_in_bytes = total;
        }
        Ok(desc)
    }

    fn convert(
        &self,
        field: &str,
        role: Role,
        desc: &TensorDesc,
        seed: u64,
        out: &mut Converted,
    ) -> Result<(), String> {
        match role {
            Role::Input => {
                if self.expected.is_some() {
                    return Err(format!(
                        "{field}.expected: only output tensors have expected values"
                    ));
                }
                let data = match &self.data {
                    Some(node) => parse_data(node, desc.data_type, &desc.sizes, seed)
                        .map_err(|e| format!("{field}.data: {e}"))?,
                    None => TensorData::Random { seed },
                };
                out.inputs.push(data);
            }
            Role::Output => {
                if self.data.is_some() {
                    return Err(format!(
                        "{field}.data: output tensors take `expected`, not `data`"
                    ));
                }
                let expected = match &self.expected {
                    None => None,
                    Some(node) => match parse_data(node, desc.data_type, &desc.sizes, seed)
                        .map_err(|e| format!("{field}.expected: {e}"))?
                    {
                        TensorData::Logical(values) => Some(values),
                        _ => {
                            return Err(format!(
                                "{field}.expected: expected values must be listed, not generated"
                            ));
                        }
                    },
                };
                out.expected.push(expected);
            }
        }
        Ok(())
    }
}

/// The longest case name (and tag, and `reject` rule id), in bytes: a name is copied into
/// every result, report and matrix column, so a 30 MiB one would take gigabytes.
pub(crate) const MAX_NAME_BYTES: usize = 4096;
/// The longest case description, in bytes.
pub(crate) const MAX_DESCRIPTION_BYTES: usize = 64 << 10;
/// The most tags a case may have.
pub(crate) const MAX_TAGS: usize = 64;
/// The fewest and the most steps a sibling group may have: a group compares its steps, and
/// runs them in one test, so a long one would hold a test thread for its whole length.
pub(crate) const MIN_GROUP_STEPS: usize = 2;
pub(crate) const MAX_GROUP_STEPS: usize = 16;

impl RawCase {
    pub(super) fn to_case(&self, file: &str, line: usize) -> Result<Case, CaseError> {
        self.to_case_in(file, line, None)
    }

    /// The case, or a group's step when `group` names its group (the step's name is then
    /// `GROUP/STEP`, its seeded inputs seeded from that whole name).
    fn to_case_in(&self, file: &str, line: usize, group: Option<&str>) -> Result<Case, CaseError> {
        let error = |text: String| CaseError {
            case: self.name.clone(),
            text,
        };
        // Bounded where they enter: every report and every matrix column copies a name.
        for (field, text, max) in [
            ("name", Some(self.name.as_str()), MAX_NAME_BYTES),
            (
                "description",
                self.description.as_deref(),
                MAX_DESCRIPTION_BYTES,
            ),
            ("reject", self.reject.as_deref(), MAX_NAME_BYTES),
        ] {
            if let Some(text) = text
                && text.len() > max
            {
                return Err(CaseError {
                    case: self.name.chars().take(64).collect(),
                    text: format!(
                        "{field}: {} bytes, more than the {max} a case's {field} may have",
                        text.len()
                    ),
                });
            }
        }
        if self.tags.len() > MAX_TAGS || self.tags.iter().any(|t| t.len() > MAX_NAME_BYTES) {
            return Err(CaseError {
                case: self.name.clone(),
                text: format!(
                    "tags: at most {MAX_TAGS} tags of at most {MAX_NAME_BYTES} bytes each"
                ),
            });
        }
        if self.name.trim().is_empty() || self.name.chars().any(char::is_whitespace) {
            return Err(error(format!(
                "name: `{}` must be non-empty and contain no spaces",
                quoted(&self.name)
            )));
        }
        if self.name.chars().any(needs_escape) {
            return Err(error(format!(
                "name: `{}` must contain no control characters, line breaks, non-characters, \
                 direction overrides or invisible characters (format characters, spaces, \
                 unassigned code points)",
                quoted(&self.name)
            )));
        }
        // Reports name a file that could not be loaded `load:FILE`; a case must not pass for
        // one (nor one for it).
        if self.name.starts_with(LOAD_ERROR_PREFIX) {
            return Err(error(format!(
                "name: `{}` starts with `{LOAD_ERROR_PREFIX}`, which reports keep for files \
                 that could not be loaded",
                quoted(&self.name)
            )));
        }
        if let Some(steps) = &self.steps {
            return self.group_to_case(steps, file, line, group);
        }
        let name = match group {
            Some(group) => format!("{group}/{}", self.name),
            None => self.name.clone(),
        };
        let seed = seed_from_name(&name);
        let mut converted = Converted {
            inputs: Vec::new(),
            expected: Vec::new(),
        };
        let present = [
            self.split.is_some(),
            self.join.is_some(),
            self.slice1.is_some(),
        ];
        if present.iter().filter(|&&p| p).count() != 1 {
            return Err(error(
                "exactly one of `split`, `join` or `slice1` must be given".to_string(),
            ));
        }
        let op = if let Some(split) = &self.split {
            let input = split.input.to_desc("split.input").map_err(error)?;
            split
                .input
                .convert("split.input", Role::Input, &input, seed, &mut converted)
                .map_err(error)?;
            let mut outputs = Vec::new();
            for (i, raw) in split.outputs.iter().enumerate() {
                let field = format!("split.outputs[{i}]");
                let desc = raw.to_desc(&field).map_err(error)?;
                raw.convert(&field, Role::Output, &desc, seed, &mut converted)
                    .map_err(error)?;
                outputs.push(desc);
            }
            OperatorDesc::Split(SplitDesc {
                input_tensor: input,
                output_tensors: outputs,
                axis: split.axis,
            })
        } else if let Some(join) = &self.join {
            let mut inputs = Vec::new();
            for (i, raw) in join.inputs.iter().enumerate() {
                let field = format!("join.inputs[{i}]");
                let desc = raw.to_desc(&field).map_err(error)?;
                raw.convert(
                    &field,
                    Role::Input,
                    &desc,
                    seed.wrapping_add(i as u64),
                    &mut converted,
                )
                .map_err(error)?;
                inputs.push(desc);
            }
            let output = join.output.to_desc("join.output").map_err(error)?;
            join.output
                .convert("join.output", Role::Output, &output, seed, &mut converted)
                .map_err(error)?;
            OperatorDesc::Join(JoinDesc {
                input_tensors: inputs,
                output_tensor: output,
                axis: join.axis,
            })
        } else {
            let slice = self.slice1.as_ref().expect("one operator is present");
            let input = slice.input.to_desc("slice1.input").map_err(error)?;
            slice
                .input
                .convert("slice1.input", Role::Input, &input, seed, &mut converted)
                .map_err(error)?;
            let output = slice.output.to_desc("slice1.output").map_err(error)?;
            slice
                .output
                .convert("slice1.output", Role::Output, &output, seed, &mut converted)
                .map_err(error)?;
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: input,
                output_tensor: output,
                dimension_count: slice
                    .dimension_count
                    .unwrap_or(slice.input_window_offsets.len() as u32),
                input_window_offsets: slice.input_window_offsets.clone(),
                input_window_sizes: slice.input_window_sizes.clone(),
                input_window_strides: slice.input_window_strides.clone(),
            })
        };
        let expect = match &self.reject {
            None => Expectation::Accept,
            Some(rule) => {
                if spec::constraint(rule).is_none() {
                    return Err(error(format!(
                        "reject: unknown rule id `{}` (the ids are the constraint ids in specs/)",
                        quoted(rule)
                    )));
                }
                Expectation::Reject { rule: rule.clone() }
            }
        };
        let feature_level = match &self.feature_level {
            Some(text) => FeatureLevel::parse(text).ok_or_else(|| {
                error(format!(
                    "feature_level: unknown level `{}` (expected e.g. 1_0, 2_1, 4_1)",
                    quoted(text)
                ))
            })?,
            None => lowest_level_with_verdict(&op, &expect).ok_or_else(|| {
                let verdict = match validate(&op, FeatureLevel::LATEST) {
                    Ok(()) => "accepts it".to_string(),
                    Err(v) => format!("rejects it with {v}"),
                };
                error(format!(
                    "no feature level gives the stated expectation; at {} the oracle {verdict}",
                    FeatureLevel::LATEST
                ))
            })?,
        };
        Ok(Case {
            name,
            file: file.to_string(),
            line,
            description: self.description.clone(),
            tags: self.tags.clone(),
            feature_level,
            op,
            inputs: converted.inputs,
            expected: converted.expected,
            expect,
            steps: Vec::new(),
        })
    }

    /// A sibling group: 2 to 16 steps, each a case (no group inside a group), names unique
    /// within it; the group itself has a name, a description and tags, nothing else.
    fn group_to_case(
        &self,
        steps: &[RawCase],
        file: &str,
        line: usize,
        group: Option<&str>,
    ) -> Result<Case, CaseError> {
        let error = |text: String| CaseError {
            case: self.name.clone(),
            text,
        };
        if group.is_some() {
            return Err(error("steps: a step cannot be a group itself".to_string()));
        }
        for (field, given) in [
            ("split", self.split.is_some()),
            ("join", self.join.is_some()),
            ("slice1", self.slice1.is_some()),
            ("reject", self.reject.is_some()),
            ("feature_level", self.feature_level.is_some()),
        ] {
            if given {
                return Err(error(format!(
                    "{field}: a group (`steps`) has no `{field}` of its own; each step has its own"
                )));
            }
        }
        if !(MIN_GROUP_STEPS..=MAX_GROUP_STEPS).contains(&steps.len()) {
            return Err(error(format!(
                "steps: {} step(s); a group has {MIN_GROUP_STEPS} to {MAX_GROUP_STEPS}",
                steps.len()
            )));
        }
        let mut cases: Vec<Case> = Vec::with_capacity(steps.len());
        for (i, raw) in steps.iter().enumerate() {
            let step = raw
                .to_case_in(file, line, Some(&self.name))
                .map_err(|e| error(format!("steps[{i}]: {}", e.text)))?;
            if let Some(j) = cases.iter().position(|c| c.name == step.name) {
                return Err(error(format!(
                    "steps[{i}].name: `{}` names steps[{j}] too; a group's steps have distinct names",
                    quoted(&raw.name)
                )));
            }
            cases.push(step);
        }
        let mut case = cases[0].clone();
        case.name = self.name.clone();
        case.description = self.description.clone();
        case.tags = self.tags.clone();
        case.steps = cases;
        Ok(case)
    }
}

/// The lowest level at which the oracle's verdict is the case's expectation.
fn lowest_level_with_verdict(op: &OperatorDesc, expect: &Expectation) -> Option<FeatureLevel> {
    FeatureLevel::ALL
        .into_iter()
        .find(|&level| match (validate(op, level), expect) {
            (Ok(()), Expectation::Accept) => true,
            (Err(v), Expectation::Reject { rule }) => v.rule == *rule,
            _ => false,
        })
}
