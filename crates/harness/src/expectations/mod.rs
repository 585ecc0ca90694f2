//! The expectations file (`--expectations FILE`), in one place: what a backend is expected to
//! fail in the corpus (`expected_failures`, here), the known differences and not-enforced rules
//! of fuzz campaigns (`known`), which backends an entry is about (`subject`: by name, or by
//! the implementation, version and adapter a backend reports) and which versions (`versions`).

mod known;
mod subject;
mod versions;

pub use known::{KnownDifference, NotEnforced, PREDICATES, Predicate, predicate};
pub use subject::{AdapterMatch, Subject};
pub use versions::{Version, VersionSpec, device_version};

use subject::Key;

use crate::corpus::read::{EXPECTATIONS_FILE, load_yaml};
use crate::run::LOAD_ERROR_ID_PREFIX;
use crate::run::{CaseResult, Status};
use serde::Deserialize;
use std::path::Path;

/// Known failures, per backend (`--expectations FILE`):
///
/// ```yaml
/// expected_failures:
///   - implementation: directml  # what the backend runs, however it was reached; or
///     # backend: directml       # a --backend name, or "*" for any (one of the two, or both)
///     device: "llvmpipe"      # optional: a substring of the backend's device text
///     versions: ">=1.12.1, <1.15"  # optional: the versions it fails on (`versions`);
///                             # matched against the implementation's version, else the
///                             # `version X.Y.Z` in the device text
///     adapter: {vendor: nvidia, driver: "31.0.15.5000-31.0.15.5999"}  # optional (`subject`)
///     case: some.case.name    # exact case name
///     reason: why it fails, and what settles it
/// ```
/// The `expecting` text is `corpus::read::EXPECTATIONS_FILE.expecting`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a YAML mapping with `expected_failures:`, `known_differences:` or \
                 `not_enforced:` (an expectations file)"
)]
pub struct Expectations {
    #[serde(default)]
    pub expected_failures: Vec<ExpectedFailure>,
    /// Fuzz campaigns: known differences on generated cases (`known`).
    #[serde(default)]
    pub known_differences: Vec<crate::expectations::KnownDifference>,
    /// Fuzz campaigns: rules a backend does not enforce by design (`known`).
    #[serde(default)]
    pub not_enforced: Vec<crate::expectations::NotEnforced>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFailure {
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub implementation: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub versions: Option<VersionSpec>,
    #[serde(default)]
    pub adapter: Option<AdapterMatch>,
    pub case: String,
    pub reason: String,
}

impl ExpectedFailure {
    fn key(&self) -> Key<'_> {
        Key {
            backend: self.backend.as_deref(),
            implementation: self.implementation.as_deref(),
            device: self.device.as_deref(),
            versions: self.versions.as_ref(),
            adapter: self.adapter.as_ref(),
        }
    }

    /// Whether the entry is about this backend (and this version and adapter, where it names
    /// them: an entry for another version is not about this run at all).
    pub fn applies(&self, subject: &Subject) -> bool {
        self.key().applies(subject)
    }
}

impl Expectations {
    /// Reads and checks an expectations file: a regular file of at most 1 MiB, YAML within
    /// its node budget (`corpus::read::EXPECTATIONS_FILE`); errors are `FILE:LINE: FIELD:
    /// MESSAGE` where the parser names them.
    pub fn load(path: &Path) -> Result<Expectations, String> {
        let expectations: Expectations = load_yaml(path, &EXPECTATIONS_FILE)?;
        let problems: Vec<String> = (expectations.expected_failures.iter().enumerate())
            .flat_map(|(i, e)| {
                e.key()
                    .problems()
                    .into_iter()
                    .map(move |p| format!("expected_failures[{i}] ({}): {p}", e.case))
            })
            .chain(
                (expectations.known_differences.iter().enumerate()).flat_map(|(i, k)| {
                    k.problems()
                        .into_iter()
                        .map(move |p| format!("known_differences[{i}] ({}): {p}", k.name))
                }),
            )
            .chain(
                (expectations.not_enforced.iter().enumerate()).flat_map(|(i, n)| {
                    n.problems()
                        .into_iter()
                        .map(move |p| format!("not_enforced[{i}]: {p}"))
                }),
            )
            .collect();
        match problems.first() {
            Some(problem) => Err(format!("{}: {problem}", path.display())),
            None => Ok(expectations),
        }
    }

    fn find(&self, subject: &Subject, case: &str) -> Option<&ExpectedFailure> {
        self.expected_failures
            .iter()
            .find(|e| e.case == case && e.applies(subject))
    }

    /// An expected failure that fails becomes `ExpectedFailure`; one that passes fails the
    /// run ("unexpected pass": the expectation is stale). Returns the applicable entries
    /// naming no case that ran, so stale entries can be reported.
    ///
    /// A case file's load error is matched by its result id (`load-error:FILE:LINE`), never
    /// by the name of the case it broke: a broken case named like an expected failure must
    /// not pass as that failure.
    pub fn apply(&self, subject: &Subject, results: &mut [CaseResult]) -> Vec<String> {
        for result in results.iter_mut() {
            self.apply_to(subject, result);
        }
        self.stale(subject, results)
    }

    /// `apply` for one result, as a run's step applies it to each case as it finishes.
    pub fn apply_to(&self, subject: &Subject, result: &mut CaseResult) {
        let Some(expected) = self.find(subject, expectation_key(result)) else {
            return;
        };
        match result.status {
            Status::Failed => {
                result.status = Status::ExpectedFailure;
                result
                    .notes
                    .push(format!("expected failure: {}", expected.reason));
            }
            Status::Passed => {
                result.status = Status::Failed;
                result.reason = UNEXPECTED_PASS.to_string();
                let on = match (&expected.versions, subject.version()) {
                    (Some(versions), Some(version)) => {
                        format!(" on versions {versions}, and this is {version}")
                    }
                    _ => String::new(),
                };
                result.details = format!(
                    "  the expectations file lists it as failing{on} ({}); remove the entry \
                     or narrow its versions\n",
                    expected.reason
                );
            }
            Status::Skipped | Status::ExpectedFailure | Status::Informational => {}
        }
    }

    /// The expected failures for this backend naming no case among `results`.
    pub fn stale(&self, subject: &Subject, results: &[CaseResult]) -> Vec<String> {
        self.expected_failures
            .iter()
            .filter(|e| e.applies(subject))
            .filter(|e| !results.iter().any(|r| expectation_key(r) == e.case))
            .map(|e| e.case.clone())
            .collect()
    }
}

/// The reason of a passing case the expectations file lists as failing: a failure.
pub const UNEXPECTED_PASS: &str = "unexpected pass";

/// What an expected failure's `case` names: a case by its name, a load error by its id.
fn expectation_key(result: &CaseResult) -> &str {
    if result.id.starts_with(LOAD_ERROR_ID_PREFIX) {
        &result.id
    } else {
        &result.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn result(name: &str, status: Status) -> CaseResult {
        CaseResult {
            id: format!("cases/x.yaml:{name}"),
            replay: None,
            descriptor: None,
            name: name.to_string(),
            file: "cases/x.yaml".to_string(),
            line: 1,
            status,
            reason: String::new(),
            details: String::new(),
            notes: Vec::new(),
            duration: Duration::ZERO,
            feature_level: None,
            run_level: None,
        }
    }

    const FILE: &str = r#"
expected_failures:
  - backend: directml
    versions: ">=1.12.1, <1.15"
    case: a
    reason: window shape
  - backend: directml
    versions: ["1.9.0"]
    case: b
    reason: old bug
"#;

    fn device(version: &str) -> Subject {
        Subject::named(
            "directml",
            &format!("directml: DirectML.dll version {version} on llvmpipe, DML feature level 6_1"),
        )
    }

    #[test]
    fn an_entry_applies_only_to_the_versions_it_names() {
        let expectations: Expectations = serde_yaml::from_str(FILE).unwrap();
        for (version, a_expected) in [("1.12.1.0", true), ("1.13.1.0", true), ("1.15.4.0", false)] {
            let mut results = vec![result("a", Status::Failed), result("b", Status::Passed)];
            let stale = expectations.apply(&device(version), &mut results);
            let a_status = if a_expected {
                Status::ExpectedFailure
            } else {
                Status::Failed
            };
            assert_eq!(results[0].status, a_status, "{version}");
            // b's entry is for 1.9.0 only: passing here is not an unexpected pass.
            assert_eq!(results[1].status, Status::Passed, "{version}");
            assert!(stale.is_empty(), "{version}: {stale:?}");
        }
    }

    #[test]
    fn an_entry_for_the_running_version_that_passes_fails_the_run() {
        let expectations: Expectations = serde_yaml::from_str(FILE).unwrap();
        let mut results = vec![result("a", Status::Passed), result("b", Status::Passed)];
        expectations.apply(&device("1.13.1.0"), &mut results);
        assert_eq!(results[0].status, Status::Failed);
        assert_eq!(results[0].reason, "unexpected pass");
        assert_eq!(
            results[0].details,
            "  the expectations file lists it as failing on versions >=1.12.1, <1.15, and this \
             is 1.13.1.0 (window shape); remove the entry or narrow its versions\n"
        );
        assert_eq!(results[1].status, Status::Passed);
        let mut results = vec![result("b", Status::Passed)];
        expectations.apply(&device("1.9.0.0"), &mut results);
        assert_eq!(results[0].reason, "unexpected pass");
    }

    #[test]
    fn stale_entries_are_only_those_for_the_running_version() {
        let expectations: Expectations = serde_yaml::from_str(FILE).unwrap();
        let mut results = vec![result("other", Status::Passed)];
        let stale = expectations.apply(&device("1.9.0.0"), &mut results);
        assert_eq!(stale, vec!["b".to_string()]);
        let stale = expectations.apply(
            &Subject::named("directml", "a device with no version"),
            &mut results,
        );
        assert!(stale.is_empty(), "{stale:?}");
    }

    #[test]
    fn a_bad_versions_field_names_the_entry_and_its_line() {
        let text = "expected_failures:\n  - backend: directml\n    versions: \">=1.x\"\n    case: a\n    reason: r\n";
        let error = serde_yaml::from_str::<Expectations>(text)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("expected_failures[0]: `>=1.x` is not a version requirement"),
            "{error}"
        );
        assert!(error.contains("line 2"), "{error}");
    }

    // On main, apply matched by name: a case file whose case `a` did not load (its result
    // named `a`, failed) passed as directml's expected failure `a`.
    #[test]
    fn a_load_error_is_never_an_expected_failure_by_its_cases_name() {
        let expectations: Expectations = serde_yaml::from_str(FILE).unwrap();
        let error = crate::LoadError {
            file: "mine.yaml".to_string(),
            line: Some(3),
            case: Some("a".to_string()),
            message: "sizes: expected a list".to_string(),
        };
        let mut results = vec![crate::load_error_result(&error)];
        assert_eq!(results[0].name, "a");
        let stale = expectations.apply(&device("1.13.1.0"), &mut results);
        assert_eq!(results[0].status, Status::Failed);
        assert_eq!(results[0].reason, "case file error");
        assert!(results[0].notes.is_empty(), "{:?}", results[0].notes);
        // The entry still names a case that did not run.
        assert_eq!(stale, vec!["a".to_string()]);
        // An entry may name the load error itself, by its id.
        let by_id: Expectations = serde_yaml::from_str(
            "expected_failures:\n  - backend: directml\n    case: \"load-error:mine.yaml:3\"\n    reason: known broken file\n",
        )
        .unwrap();
        let stale = by_id.apply(&device("1.13.1.0"), &mut results);
        assert_eq!(results[0].status, Status::ExpectedFailure);
        assert!(stale.is_empty(), "{stale:?}");
    }
}
