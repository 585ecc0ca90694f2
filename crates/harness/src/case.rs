//! The case corpus: the YAML format (cases/README.md documents it), loading it from files,
//! folders or the copy embedded in this crate, and writing cases back out.

use crate::data::{TensorData, parse_data, quote_hex_literals, seed_from_name};
use crate::scan::{self, MAX_NESTING, TooDeep};
use dmlcts_oracle::{spec, validate};
use dmlcts_tensor::{
    DataType, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc,
    format_element,
};
use serde::Deserialize;
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
    /// The file it came from, as given (e.g. `cases/doc/split.yaml`), and the line where its
    /// mapping starts (its `- ` in block style, its `{` in flow style and JSON).
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
    /// The same case with its inputs given as buffers.
    pub fn with_inputs(mut self, inputs: Vec<Vec<u8>>) -> Case {
        self.inputs = inputs.into_iter().map(TensorData::Bytes).collect();
        self
    }

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
        Corpus::load_paths(&[path])
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
        match std::fs::read(path).map(String::from_utf8) {
            Ok(Ok(text)) => self.add_text(&display, &text),
            Ok(Err(e)) => {
                let bytes = e.as_bytes();
                let valid = e.utf8_error().valid_up_to();
                let line_start = bytes[..valid]
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |p| p + 1);
                self.errors.push(LoadError {
                    file: display,
                    line: Some(bytes[..valid].iter().filter(|&&b| b == b'\n').count() + 1),
                    case: None,
                    message: format!(
                        "not UTF-8 text: byte 0x{:02X} at column {} starts no UTF-8 character",
                        bytes[valid],
                        valid - line_start + 1
                    ),
                });
            }
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
        let file_error = |line: Option<usize>, message: String| LoadError {
            file: file.to_string(),
            line,
            case: None,
            message,
        };
        // Checked before parsing: the parser takes seconds on very deep nesting, ignores
        // tags, and gives no position for an alias bomb or for each case.
        let scan = match scan::scan(text) {
            Ok(scan) => scan,
            Err(TooDeep { line }) => {
                self.errors.push(file_error(
                    Some(line),
                    format!(
                        "nested more than {MAX_NESTING} levels deep (open brackets plus \
                         indentation); case files need about 20"
                    ),
                ));
                return;
            }
        };
        if let Some((line, tag)) = &scan.unknown_tag {
            let field = field_before(text, *line, tag);
            self.errors.push(file_error(
                Some(*line),
                format!("{field}: unknown YAML tag `{tag}` (case files use no tags)"),
            ));
            return;
        }
        let raw: RawFile = match serde_yaml::from_str(&quote_hex_literals(text)) {
            Ok(raw) => raw,
            Err(e) => {
                let message = without_location(&e.to_string());
                let (line, message) = match e.location() {
                    Some(location) => (Some(location.line()), message),
                    None if message.contains("repetition limit") => (
                        scan.first_alias,
                        format!(
                            "{message}: its aliases expand to too much (the first is on this line)"
                        ),
                    ),
                    None => (None, message),
                };
                self.errors.push(file_error(line, message));
                return;
            }
        };
        if raw.cases.is_empty() {
            self.errors.push(file_error(
                scan.cases_key_line,
                format!("cases: no cases in {file}"),
            ));
            return;
        }
        let lines: Vec<Option<usize>> = if scan.case_lines.len() == raw.cases.len() {
            scan.case_lines.into_iter().map(Some).collect()
        } else {
            // YAML the scan does not follow: fall back to finding each `name:` by its text.
            let by_name = name_lines(text);
            raw.cases
                .iter()
                .map(|c| by_name.get(c.name.as_str()).copied())
                .collect()
        };
        for (raw_case, line) in raw.cases.iter().zip(lines) {
            match raw_case.to_case(file, line.unwrap_or(0)) {
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

/// The line (1-based) of the first `name:` with each value, found by text.
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

/// The key a value on `line` belongs to (`split` in `    split: !weird {...}`), for messages.
fn field_before(text: &str, line: usize, value: &str) -> String {
    let text = text.lines().nth(line - 1).unwrap_or("");
    let before = text.split(value).next().unwrap_or("").trim_end();
    let key = before.strip_suffix(':').unwrap_or(before);
    let key = key
        .rsplit(|c: char| c.is_whitespace() || matches!(c, '{' | ',' | '[' | '-'))
        .next()
        .unwrap_or("")
        .trim_matches(|c| c == '"' || c == '\'');
    if key.is_empty() {
        format!("line {line}")
    } else {
        key.to_string()
    }
}

struct CaseError {
    case: String,
    text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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
    fn to_case(&self, file: &str, line: usize) -> Result<Case, CaseError> {
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

/// Writes cases in the corpus format, one file's worth, in the compact style of the
/// hand-written files. Every value is written so it loads back to the same bits.
pub fn cases_to_yaml(cases: &[Case]) -> String {
    let mut out = String::from("cases:\n");
    for (i, case) in cases.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_case(&mut out, case);
    }
    out
}

fn write_case(out: &mut String, case: &Case) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "  - name: {}", scalar(&case.name));
    if let Some(description) = &case.description {
        let _ = writeln!(out, "    description: {}", scalar(description));
    }
    if !case.tags.is_empty() {
        let tags: Vec<String> = case.tags.iter().map(|t| scalar(t)).collect();
        let _ = writeln!(out, "    tags: [{}]", tags.join(", "));
    }
    let _ = writeln!(out, "    feature_level: \"{}\"", case.feature_level);
    if let Expectation::Reject { rule } = &case.expect {
        let _ = writeln!(out, "    reject: {}", scalar(rule));
    }
    let mut inputs = case.inputs.iter();
    let mut expected = case.expected.iter();
    let mut input = |desc: &TensorDesc| tensor_flow(desc, inputs.next(), None);
    let mut output =
        |desc: &TensorDesc| tensor_flow(desc, None, expected.next().and_then(Option::as_ref));
    match &case.op {
        OperatorDesc::Split(d) => {
            let _ = writeln!(out, "    split:\n      axis: {}", d.axis);
            let _ = writeln!(out, "      input: {}", input(&d.input_tensor));
            write_list(
                out,
                "outputs",
                d.output_tensors.iter().map(&mut output).collect(),
            );
        }
        OperatorDesc::Join(d) => {
            let _ = writeln!(out, "    join:\n      axis: {}", d.axis);
            write_list(
                out,
                "inputs",
                d.input_tensors.iter().map(&mut input).collect(),
            );
            let _ = writeln!(out, "      output: {}", output(&d.output_tensor));
        }
        OperatorDesc::Slice1(d) => {
            let _ = writeln!(out, "    slice1:");
            if d.dimension_count as usize != d.input_window_offsets.len() {
                let _ = writeln!(out, "      dimension_count: {}", d.dimension_count);
            }
            let _ = writeln!(
                out,
                "      input_window_offsets: {}",
                flow_list(&d.input_window_offsets)
            );
            let _ = writeln!(
                out,
                "      input_window_sizes: {}",
                flow_list(&d.input_window_sizes)
            );
            let _ = writeln!(
                out,
                "      input_window_strides: {}",
                flow_list(&d.input_window_strides)
            );
            let _ = writeln!(out, "      input: {}", input(&d.input_tensor));
            let _ = writeln!(out, "      output: {}", output(&d.output_tensor));
        }
    }
}

fn write_list(out: &mut String, key: &str, items: Vec<String>) {
    use std::fmt::Write as _;
    if items.is_empty() {
        let _ = writeln!(out, "      {key}: []");
        return;
    }
    let _ = writeln!(out, "      {key}:");
    for item in items {
        let _ = writeln!(out, "        - {item}");
    }
}

fn flow_list<T: fmt::Display>(values: &[T]) -> String {
    let items: Vec<String> = values.iter().map(T::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// `{data_type: FLOAT32, sizes: [1, 2], data: [...]}`
fn tensor_flow(
    desc: &TensorDesc,
    data: Option<&TensorData>,
    expected: Option<&Vec<u64>>,
) -> String {
    let mut fields = vec![
        format!("data_type: {}", desc.data_type.name()),
        format!("sizes: {}", flow_list(&desc.sizes)),
    ];
    if let Some(strides) = &desc.strides {
        fields.push(format!("strides: {}", flow_list(strides)));
    }
    if u128::from(desc.total_tensor_size_in_bytes) != desc.minimum_size_in_bytes() {
        fields.push(format!(
            "total_tensor_size_in_bytes: {}",
            desc.total_tensor_size_in_bytes
        ));
    }
    if let Some(data) = data {
        let text = match data {
            TensorData::Logical(values) => values_flow(desc.data_type, values),
            TensorData::Bytes(bytes) => {
                values_flow(desc.data_type, &crate::data::logical_elements(desc, bytes))
            }
            TensorData::Iota { start, step } => {
                format!("{{generate: iota, start: {start}, step: {step}}}")
            }
            TensorData::Random { seed } => format!("{{generate: random, seed: {seed}}}"),
            TensorData::Fill { bits } => {
                format!(
                    "{{generate: fill, value: {}}}",
                    element_text(desc.data_type, *bits)
                )
            }
        };
        fields.push(format!("data: {text}"));
    }
    if let Some(values) = expected {
        fields.push(format!("expected: {}", values_flow(desc.data_type, values)));
    }
    format!("{{{}}}", fields.join(", "))
}

fn values_flow(data_type: DataType, values: &[u64]) -> String {
    let items: Vec<String> = values.iter().map(|&v| element_text(data_type, v)).collect();
    format!("[{}]", items.join(", "))
}

/// The value's text, unquoted when YAML reads it back to the same bits, quoted otherwise.
fn element_text(data_type: DataType, bits: u64) -> String {
    let text = format_element(data_type, bits);
    let read_back =
        serde_yaml::from_str::<serde_yaml::Value>(&crate::data::quote_hex_literals(&text))
            .ok()
            .and_then(|node| {
                crate::data::parse_data(
                    &serde_yaml::Value::Sequence(vec![node]),
                    data_type,
                    &[1],
                    0,
                )
                .ok()
            });
    if read_back == Some(TensorData::Logical(vec![bits])) {
        text
    } else {
        format!("\"{text}\"")
    }
}

/// A YAML scalar for a name or description: plain when that is safe, quoted otherwise.
fn scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
        && !text.starts_with(['-', '.'])
        && serde_yaml::from_str::<serde_yaml::Value>(text).is_ok_and(|v| v.as_str() == Some(text));
    if plain {
        text.to_string()
    } else {
        serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
    }
}
