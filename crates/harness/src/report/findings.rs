//! The findings record: every disagreement between an implementation and the oracle that is
//! not its adapter's own doing, one YAML file each under docs/findings/, indexed by
//! docs/findings.md. A file holds its minimal case in the corpus's own format; `check` loads it
//! with the corpus loader and asks the oracle whether the file says what the oracle says.
//!
//! ```yaml
//! title: one line
//! implementation: directml            # the backend's name: directml, onnxruntime, jax, ...
//! versions: ["1.15.4"]                # the library versions it was observed on
//! classification: implementation-bug  # or semantics-difference, page-ambiguity
//! expectation: expectations/directml.yaml  # optional: where the runner is told about it
//! found_by: corpus                    # corpus | fuzz campaign (seed, cases) | probe, then detail
//! corpus_cases: [edge.slice1.x]       # optional: corpus cases that show it
//! summary: |
//!   what happens, what the page says, why it is classified so
//! observed:                           # optional: what the implementation did with `case`
//!   accepted: true                    #   a must-reject case it accepted, or
//!   # rejected: "its reason"          #   a valid case it rejected, or
//!   # outputs: [[[100, 101], [102, 103]]]  # the values it wrote, one entry per output
//! case:                               # ONE minimal case, as in cases/*.yaml
//!   name: finding.directml.x
//!   slice1: ...
//! ```

use crate::corpus::{Case, Corpus, Expectation};
use crate::run::{RunOptions, Status, run_case};
use dmlcts_oracle::OracleBackend;
use serde::Deserialize;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

pub const CLASSIFICATIONS: &[&str] = &[
    "implementation-bug",
    "semantics-difference",
    "page-ambiguity",
];

/// How `found_by` starts.
pub const FOUND_BY: &[&str] = &["corpus", "fuzz campaign", "probe"];

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    pub title: String,
    pub implementation: String,
    pub versions: Vec<String>,
    pub classification: String,
    #[serde(default)]
    pub expectation: Option<String>,
    pub found_by: String,
    #[serde(default)]
    pub corpus_cases: Vec<String>,
    pub summary: String,
    #[serde(default)]
    pub observed: Option<Observed>,
    pub case: Value,
}

/// What the implementation did with the finding's case: exactly one of the three.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observed {
    /// It accepted a case the oracle rejects (`accepted: true`).
    #[serde(default)]
    pub accepted: Option<bool>,
    /// It rejected a case the oracle accepts, with this reason.
    #[serde(default)]
    pub rejected: Option<String>,
    /// The values it wrote, one entry per output (null: not recorded), written as `expected`.
    #[serde(default)]
    pub outputs: Option<Vec<Value>>,
}

/// A finding file, loaded.
#[derive(Clone, Debug)]
pub struct FindingFile {
    /// The file name, e.g. `directml-slice1-output-smaller-than-window.yaml`.
    pub file: String,
    pub finding: Finding,
}

/// Every `*.yaml` file in `dir`, sorted by name; an error names the file and what is wrong.
pub fn load_dir(dir: &Path) -> Result<Vec<FindingFile>, String> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    paths.sort();
    paths.iter().map(|path| load_file(path)).collect()
}

pub fn load_file(path: &Path) -> Result<FindingFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let finding: Finding =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(FindingFile { file, finding })
}

impl Finding {
    /// The case, loaded by the corpus loader (`file` names it in errors).
    pub fn load_case(&self, file: &str) -> Result<Case, String> {
        load_one(file, &self.case)
    }

    /// Everything the record promises about this finding, checked: its fields, its case
    /// (it loads, and its own expectation and `expected` values are the oracle's), and
    /// `observed` (it is not what the oracle gives). `root` is the repository's root.
    pub fn check(&self, file: &str, root: &Path) -> Result<(), String> {
        let fail = |message: String| Err(format!("{file}: {message}"));
        if !file.starts_with(&format!("{}-", self.implementation)) {
            return fail(format!(
                "the file name must start with its implementation, `{}-`",
                self.implementation
            ));
        }
        if self.title.trim().is_empty() || self.title.contains('\n') {
            return fail("title: one line of text".to_string());
        }
        if self.versions.is_empty() {
            return fail("versions: list the versions it was observed on".to_string());
        }
        if !CLASSIFICATIONS.contains(&self.classification.as_str()) {
            return fail(format!(
                "classification: `{}` is not one of {}",
                self.classification,
                CLASSIFICATIONS.join(", ")
            ));
        }
        if !FOUND_BY.iter().any(|f| self.found_by.starts_with(f)) {
            return fail(format!(
                "found_by: starts with one of {} (`{}`)",
                FOUND_BY.join(", "),
                self.found_by
            ));
        }
        if self.summary.trim().is_empty() {
            return fail("summary: say what happens and why it is classified so".to_string());
        }
        if !self.corpus_cases.is_empty() {
            let corpus = Corpus::embedded();
            if let Some(missing) = self
                .corpus_cases
                .iter()
                .find(|name| !corpus.cases.iter().any(|c| &c.name == *name))
            {
                return fail(format!("corpus_cases: no corpus case `{missing}`"));
            }
        }
        if let Some(expectation) = &self.expectation {
            let expectations = crate::expectations::Expectations::load(&root.join(expectation))
                .map_err(|e| format!("{file}: expectation: {e}"))?;
            // The corpus cases that show it are the file's expected failures for this
            // implementation, so the runner knows them.
            if let Some(unlisted) = self.corpus_cases.iter().find(|name| {
                !expectations.expected_failures.iter().any(|e| {
                    let names = |field: &Option<String>| {
                        field.as_deref() == Some(self.implementation.as_str())
                    };
                    e.case == **name
                        && (names(&e.backend)
                            || names(&e.implementation)
                            || e.backend.as_deref() == Some("*"))
                })
            }) {
                return fail(format!(
                    "corpus_cases: `{unlisted}` is not an expected failure of {} in {expectation}",
                    self.implementation
                ));
            }
        }
        let case = self.load_case(file)?;
        oracle_agrees(&case).map_err(|e| format!("{file}: case: {e}"))?;
        let Some(observed) = &self.observed else {
            return Ok(());
        };
        match (&observed.accepted, &observed.rejected, &observed.outputs) {
            (Some(accepted), None, None) => match (&case.expect, accepted) {
                (Expectation::Reject { .. }, true) => Ok(()),
                _ => fail(
                    "observed: `accepted: true` goes with a case that has `reject:`".to_string(),
                ),
            },
            (None, Some(_), None) => match case.expect {
                Expectation::Accept => Ok(()),
                _ => fail("observed: `rejected` goes with a valid case".to_string()),
            },
            (None, None, Some(outputs)) => {
                if case.expect != Expectation::Accept {
                    return fail("observed: `outputs` goes with a valid case".to_string());
                }
                let observed = with_expected(&self.case, outputs)
                    .ok_or_else(|| format!("{file}: observed: one entry per output"))?;
                let observed = load_one(file, &observed)?;
                match oracle_agrees(&observed) {
                    Err(e) if e.contains("expected values disagree") => Ok(()),
                    Err(e) => fail(format!("observed: {e}")),
                    Ok(()) => fail(
                        "observed: the outputs are the oracle's own; that is no disagreement"
                            .to_string(),
                    ),
                }
            }
            _ => fail("observed: give one of `accepted`, `rejected`, `outputs`".to_string()),
        }
    }
}

fn load_one(file: &str, case: &Value) -> Result<Case, String> {
    let mut document = serde_yaml::Mapping::new();
    document.insert("cases".into(), Value::Sequence(vec![case.clone()]));
    let text = serde_yaml::to_string(&document).map_err(|e| format!("{file}: case: {e}"))?;
    let mut corpus = Corpus::default();
    corpus.add_text(&format!("{file} (case:)"), &text);
    if let Some(error) = corpus.errors.first() {
        return Err(error.to_string());
    }
    match corpus.cases.len() {
        1 => Ok(corpus.cases.remove(0)),
        n => Err(format!("{file}: case: {n} cases; give exactly one")),
    }
}

/// The oracle's run of a case: its stored expectation and values are the oracle's.
fn oracle_agrees(case: &Case) -> Result<(), String> {
    let oracle = OracleBackend::new(case.feature_level);
    let options = RunOptions {
        strict_level: true,
        ..RunOptions::default()
    };
    let result = run_case(&oracle, case, &options);
    match result.status {
        Status::Passed => Ok(()),
        _ => Err(format!("{}\n{}", result.reason, result.details)),
    }
}

/// The case with each output's `expected` replaced by the observed values.
fn with_expected(case: &Value, outputs: &[Value]) -> Option<Value> {
    let mut case = case.clone();
    let (operator, field) = ["split", "join", "slice1"]
        .iter()
        .find(|op| case.get(**op).is_some())
        .map(|op| (*op, if *op == "split" { "outputs" } else { "output" }))?;
    let tensors = case.get_mut(operator)?.get_mut(field)?;
    let targets: Vec<&mut Value> = match tensors {
        Value::Sequence(list) => list.iter_mut().collect(),
        single => vec![single],
    };
    if targets.len() != outputs.len() {
        return None;
    }
    for (target, values) in targets.into_iter().zip(outputs) {
        if !values.is_null() {
            target
                .as_mapping_mut()?
                .insert("expected".into(), values.clone());
        }
    }
    Some(case)
}
