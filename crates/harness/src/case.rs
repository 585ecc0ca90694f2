//! The case corpus: the YAML format (cases/README.md documents it), loading it from files,
//! folders or the copy embedded in this crate, and writing cases back out.

use crate::data::{TensorData, parse_data, quote_hex_literals, seed_from_name};
use dmlcts_oracle::{spec, validate};
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc,
    format_element,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_cases.rs"));
}

/// One conformance case, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub name: String,
    /// The file it came from, as given (e.g. `cases/doc/split.yaml`), and the line of its
    /// `name:`.
    pub file: String,
    pub line: usize,
    pub description: Option<String>,
    pub tags: Vec<String>,
    /// The level at which the stored expectation holds: for accepted cases and for
    /// level-independent rejections, the lowest level that runs it; for rejections by a
    /// feature-level table, the level whose table rejects it.
    pub feature_level: FeatureLevel,
    pub op: OperatorDesc,
    /// One per input tensor, in `OperatorDesc::inputs` order.
    pub inputs: Vec<TensorData>,
    /// The case's own expected values per output (logical order, raw bits), when given.
    pub expected: Vec<Option<Vec<u64>>>,
    pub expect: Expectation,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expectation {
    Accept,
    Reject { rule: String },
}

impl Case {
    /// Whether the stored rejection comes from a feature-level table (and so holds only at
    /// this case's level).
    pub fn rejection_depends_on_level(&self) -> bool {
        match &self.expect {
            Expectation::Reject { rule } => spec::depends_on_feature_level(rule),
            Expectation::Accept => false,
        }
    }

    /// Every data type the case's tensors use.
    pub fn data_types(&self) -> Vec<DataType> {
        let mut types: Vec<DataType> = self
            .op
            .inputs()
            .into_iter()
            .chain(self.op.outputs())
            .map(|(_, t)| t.data_type)
            .collect();
        types.sort();
        types.dedup();
        types
    }
}

/// A file or case that could not be loaded. It is reported as a failure of the run; the
/// other files and cases still load and run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub file: String,
    pub line: Option<usize>,
    pub case: Option<String>,
    pub message: String,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(case) = &self.case {
            write!(f, ": case `{case}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Cases and the errors met while loading them.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    pub cases: Vec<Case>,
    pub errors: Vec<LoadError>,
}

impl Corpus {
    /// The corpus compiled into this crate (the repository's cases/ folder).
    pub fn embedded() -> Corpus {
        let mut corpus = Corpus::default();
        for (file, text) in embedded::EMBEDDED_CASES {
            corpus.add_text(file, text);
        }
        corpus.check_unique_names();
        corpus
    }

    /// The names of the embedded files (for listing and tests).
    pub fn embedded_files() -> Vec<&'static str> {
        embedded::EMBEDDED_CASES.iter().map(|(f, _)| *f).collect()
    }

    /// Loads a file, or every `.yaml`/`.yml` file under a folder.
    pub fn load_path(path: &Path) -> Corpus {
        let mut corpus = Corpus::default();
        corpus.add_path(path);
        corpus.check_unique_names();
        corpus
    }

    /// Loads several paths into one corpus (names must be unique across all of them).
    pub fn load_paths(paths: &[impl AsRef<Path>]) -> Corpus {
        let mut corpus = Corpus::default();
        for path in paths {
            corpus.add_path(path.as_ref());
        }
        corpus.check_unique_names();
        corpus
    }

    fn add_path(&mut self, path: &Path) {
        if path.is_dir() {
            let mut files = Vec::new();
            collect_yaml(path, &mut files, &mut self.errors);
            files.sort();
            for file in files {
                self.add_path(&file);
            }
            return;
        }
        let display = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => self.add_text(&display, &text),
            Err(e) => self.errors.push(LoadError {
                file: display,
                line: None,
                case: None,
                message: format!("cannot read: {e}"),
            }),
        }
    }

    /// Parses one file's text; `file` is the name used in messages.
    pub fn add_text(&mut self, file: &str, text: &str) {
        let raw: RawFile = match serde_yaml::from_str(&quote_hex_literals(text)) {
            Ok(raw) => raw,
            Err(e) => {
                self.errors.push(LoadError {
                    file: file.to_string(),
                    line: e.location().map(|l| l.line()),
                    case: None,
                    message: without_location(&e.to_string()),
                });
                return;
            }
        };
        let lines = name_lines(text);
        for raw_case in raw.cases {
            let line = lines.get(raw_case.name.as_str()).copied();
            match raw_case.into_case(file, line.unwrap_or(0)) {
                Ok(case) => self.cases.push(case),
                Err(CaseError { case, text }) => self.errors.push(LoadError {
                    file: file.to_string(),
                    line,
                    case: Some(case),
                    message: text,
                }),
            }
        }
    }

    fn check_unique_names(&mut self) {
        let mut seen: HashMap<String, (String, usize)> = HashMap::new();
        let mut duplicates = Vec::new();
        self.cases.retain(|case| {
            if let Some((file, line)) = seen.get(&case.name) {
                duplicates.push(LoadError {
                    file: case.file.clone(),
                    line: Some(case.line),
                    case: Some(case.name.clone()),
                    message: format!("duplicate case name (first defined at {file}:{line})"),
                });
                false
            } else {
                seen.insert(case.name.clone(), (case.file.clone(), case.line));
                true
            }
        });
        self.errors.extend(duplicates);
    }
}

fn collect_yaml(dir: &Path, out: &mut Vec<std::path::PathBuf>, errors: &mut Vec<LoadError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            errors.push(LoadError {
                file: dir.display().to_string(),
                line: None,
                case: None,
                message: format!("cannot read folder: {e}"),
            });
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_yaml(&path, out, errors);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// serde_yaml appends " at line L column C"; the line is reported separately.
fn without_location(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// The line (1-based) of each `name:` in the file, found by text: serde_yaml gives no
/// positions for values, and case names are unique.
fn name_lines(text: &str) -> HashMap<&str, usize> {
    let mut lines = HashMap::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start().trim_start_matches("- ").trim_start();
        if let Some(rest) = trimmed.strip_prefix("name:") {
            let value = rest.split(" #").next().unwrap_or("").trim();
            let value = value.trim_matches(|c| c == '"' || c == '\'');
            lines.entry(value).or_insert(index + 1);
        }
    }
    lines
}

struct CaseError {
    case: String,
    text: String,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFile {
    pub cases: Vec<RawCase>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCase {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<RawSplit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join: Option<RawJoin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice1: Option<RawSlice1>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject: Option<String>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSplit {
    pub axis: u32,
    pub input: RawTensor,
    pub outputs: Vec<RawTensor>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJoin {
    pub axis: u32,
    pub inputs: Vec<RawTensor>,
    pub output: RawTensor,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSlice1 {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension_count: Option<u32>,
    pub input_window_offsets: Vec<u32>,
    pub input_window_sizes: Vec<u32>,
    pub input_window_strides: Vec<i32>,
    pub input: RawTensor,
    pub output: RawTensor,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTensor {
    pub data_type: String,
    pub sizes: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strides: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tensor_size_in_bytes: Option<u64>,
    /// Inputs only: the values (or a generator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_yaml::Value>,
    /// Outputs only: the expected values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
                self.data_type,
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

impl RawCase {
    fn into_case(&self, file: &str, line: usize) -> Result<Case, CaseError> {
        let error = |text: String| CaseError {
            case: self.name.clone(),
            text,
        };
        if self.name.trim().is_empty() || self.name.chars().any(char::is_whitespace) {
            return Err(error(format!(
                "name: `{}` must be non-empty and contain no spaces",
                self.name
            )));
        }
        let seed = seed_from_name(&self.name);
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
                        "reject: unknown rule id `{rule}` (the ids are the constraint ids in specs/)"
                    )));
                }
                Expectation::Reject { rule: rule.clone() }
            }
        };
        let feature_level = match &self.feature_level {
            Some(text) => FeatureLevel::parse(text).ok_or_else(|| {
                error(format!(
                    "feature_level: unknown level `{text}` (expected e.g. 1_0, 2_1, 4_1)"
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
            name: self.name.clone(),
            file: file.to_string(),
            line,
            description: self.description.clone(),
            tags: self.tags.clone(),
            feature_level,
            op,
            inputs: converted.inputs,
            expected: converted.expected,
            expect,
        })
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

/// Writes cases in the corpus format, one file's worth. Values are written so they load back
/// to the same bits (NaNs as bit patterns, -0.0 kept).
pub fn cases_to_yaml(cases: &[Case]) -> String {
    let raw = RawFile {
        cases: cases.iter().map(raw_case).collect(),
    };
    serde_yaml::to_string(&raw).unwrap_or_else(|e| format!("# could not write cases: {e}\n"))
}

fn raw_case(case: &Case) -> RawCase {
    let mut inputs = case.inputs.iter();
    let mut expected = case.expected.iter();
    let mut tensor = |desc: &TensorDesc, is_input: bool| -> RawTensor {
        let minimum = desc.minimum_size_in_bytes();
        let mut raw = RawTensor {
            data_type: desc.data_type.name().to_string(),
            sizes: desc.sizes.clone(),
            strides: desc.strides.clone(),
            total_tensor_size_in_bytes: (u128::from(desc.total_tensor_size_in_bytes) != minimum)
                .then_some(desc.total_tensor_size_in_bytes),
            data: None,
            expected: None,
        };
        if is_input {
            raw.data = inputs.next().map(|d| data_node(desc, d));
        } else {
            raw.expected = expected
                .next()
                .cloned()
                .flatten()
                .map(|values| values_node(desc.data_type, &values));
        }
        raw
    };
    let mut raw = RawCase {
        name: case.name.clone(),
        description: case.description.clone(),
        tags: case.tags.clone(),
        feature_level: Some(case.feature_level.to_string()),
        split: None,
        join: None,
        slice1: None,
        reject: match &case.expect {
            Expectation::Accept => None,
            Expectation::Reject { rule } => Some(rule.clone()),
        },
    };
    match &case.op {
        OperatorDesc::Split(d) => {
            raw.split = Some(RawSplit {
                axis: d.axis,
                input: tensor(&d.input_tensor, true),
                outputs: d.output_tensors.iter().map(|t| tensor(t, false)).collect(),
            })
        }
        OperatorDesc::Join(d) => {
            let inputs = d.input_tensors.iter().map(|t| tensor(t, true)).collect();
            raw.join = Some(RawJoin {
                axis: d.axis,
                inputs,
                output: tensor(&d.output_tensor, false),
            })
        }
        OperatorDesc::Slice1(d) => {
            let input = tensor(&d.input_tensor, true);
            raw.slice1 = Some(RawSlice1 {
                dimension_count: (d.dimension_count as usize != d.input_window_offsets.len())
                    .then_some(d.dimension_count),
                input_window_offsets: d.input_window_offsets.clone(),
                input_window_sizes: d.input_window_sizes.clone(),
                input_window_strides: d.input_window_strides.clone(),
                input,
                output: tensor(&d.output_tensor, false),
            })
        }
    }
    raw
}

fn data_node(desc: &TensorDesc, data: &TensorData) -> serde_yaml::Value {
    let mut map = serde_yaml::Mapping::new();
    let mut put = |k: &str, v: serde_yaml::Value| {
        map.insert(serde_yaml::Value::String(k.to_string()), v);
    };
    match data {
        TensorData::Logical(values) => return values_node(desc.data_type, values),
        TensorData::Iota { start, step } => {
            put("generate", "iota".into());
            put("start", (*start).into());
            put("step", (*step).into());
        }
        TensorData::Random { seed } => {
            put("generate", "random".into());
            put("seed", (*seed).into());
        }
        TensorData::Fill { bits } => {
            put("generate", "fill".into());
            put("value", element_node(desc.data_type, *bits));
        }
        TensorData::Bytes(bytes) => {
            // Raw buffers are written as their logical values; holes are not data.
            return values_node(desc.data_type, &crate::data::logical_elements(desc, bytes));
        }
    }
    serde_yaml::Value::Mapping(map)
}

fn values_node(data_type: DataType, values: &[u64]) -> serde_yaml::Value {
    serde_yaml::Value::Sequence(values.iter().map(|&v| element_node(data_type, v)).collect())
}

/// A number when the text is a plain number YAML reads back exactly, else a string.
fn element_node(data_type: DataType, bits: u64) -> serde_yaml::Value {
    let text = format_element(data_type, bits);
    let plain = !text.starts_with("0x") && !text.contains("inf") && !text.starts_with("-0.0");
    if plain && !data_type.is_float() {
        if let Ok(v) = text.parse::<i64>() {
            return v.into();
        }
        if let Ok(v) = text.parse::<u64>() {
            return v.into();
        }
    }
    serde_yaml::Value::String(text)
}
