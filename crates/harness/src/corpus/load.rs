//! Loading the corpus: from files, folders or the copy embedded in this crate; each case's
//! file and line; names unique across everything loaded.

use super::data::quote_hex_literals;
use super::format::{CaseError, RawFile};
use super::scan::{self, MAX_NESTING, TooDeep};
use super::{Case, LoadError};
use std::collections::HashMap;
use std::path::Path;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_cases.rs"));
}

/// Cases and the errors met while loading them.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    pub cases: Vec<Case>,
    pub errors: Vec<LoadError>,
    /// The digests of the files' bytes that were loaded (the reports name the corpus by it).
    pub digest: super::digest::CorpusDigest,
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
        self.digest.add(text.as_bytes());
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
