//! Summaries, expectations (known failures), and machine-readable reports: JSON and JUnit XML.

use crate::case::LoadError;
use crate::runner::{CaseResult, Status};
use crate::versions::{VersionSpec, device_version};
use dmlcts_tensor::FeatureLevel;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub expected_failures: usize,
    /// Must-reject cases accepted under the backend's validation profile.
    pub informational: usize,
}

impl Summary {
    pub fn of(results: &[CaseResult]) -> Summary {
        let mut summary = Summary::default();
        for result in results {
            match result.status {
                Status::Passed => summary.passed += 1,
                Status::Failed => summary.failed += 1,
                Status::Skipped => summary.skipped += 1,
                Status::ExpectedFailure => summary.expected_failures += 1,
                Status::Informational => summary.informational += 1,
            }
        }
        summary
    }

    /// One summary per case feature level (cases that loaded; a load error has no level).
    pub fn by_level(results: &[CaseResult]) -> BTreeMap<FeatureLevel, Summary> {
        let mut levels: BTreeMap<FeatureLevel, Vec<CaseResult>> = BTreeMap::new();
        for result in results {
            if let Some(level) = result.feature_level {
                levels.entry(level).or_default().push(result.clone());
            }
        }
        levels
            .into_iter()
            .map(|(level, results)| (level, Summary::of(&results)))
            .collect()
    }

    /// The closing line: `N passed, M failed, K skipped`, and `, I informational` when some
    /// must-reject cases were accepted under the backend's validation profile.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        );
        if self.informational > 0 {
            let _ = write!(line, ", {} informational", self.informational);
        }
        line
    }
}

/// A load error reported as a failed result, so it counts and shows in every report.
pub fn load_error_result(error: &LoadError) -> CaseResult {
    CaseResult {
        name: match &error.case {
            Some(case) => case.clone(),
            None => format!("load:{}", error.file),
        },
        file: error.file.clone(),
        line: error.line.unwrap_or(0),
        status: Status::Failed,
        reason: "case file error".to_string(),
        details: format!("  {error}\n"),
        notes: Vec::new(),
        duration: Duration::ZERO,
        feature_level: None,
        run_level: None,
    }
}

/// Known failures, per backend (`--expectations FILE`):
///
/// ```yaml
/// expected_failures:
///   - backend: directml       # a backend name, or "*" for any
///     device: "llvmpipe"      # optional: a substring of the backend's device text
///     versions: ">=1.12.1, <1.15"  # optional: the versions it fails on (crate::versions);
///                             # matched against the `version X.Y.Z` in the device text
///     case: some.case.name    # exact case name
///     reason: why it fails, and what settles it
/// ```
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    #[serde(default)]
    pub expected_failures: Vec<ExpectedFailure>,
    /// Fuzz campaigns: known differences on generated cases (see `known`).
    #[serde(default)]
    pub known_differences: Vec<crate::known::KnownDifference>,
    /// Fuzz campaigns: rules a backend does not enforce by design (see `known`).
    #[serde(default)]
    pub not_enforced: Vec<crate::known::NotEnforced>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedFailure {
    pub backend: String,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub versions: Option<VersionSpec>,
    pub case: String,
    pub reason: String,
}

impl ExpectedFailure {
    /// Whether the entry is about this backend on this device (and this version, where it
    /// names versions: an entry for another version is not about this run at all).
    fn applies(&self, backend: &str, device: &str) -> bool {
        (self.backend == "*" || self.backend == backend)
            && self.device.as_deref().is_none_or(|d| device.contains(d))
            && self
                .versions
                .as_ref()
                .is_none_or(|v| v.matches_device(device))
    }
}

impl Expectations {
    pub fn load(path: &Path) -> Result<Expectations, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let expectations: Expectations =
            serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let problems: Vec<String> = (expectations.known_differences.iter().enumerate())
            .flat_map(|(i, k)| {
                k.problems()
                    .into_iter()
                    .map(move |p| format!("known_differences[{i}] ({}): {p}", k.name))
            })
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

    fn find(&self, backend: &str, device: &str, case: &str) -> Option<&ExpectedFailure> {
        self.expected_failures
            .iter()
            .find(|e| e.case == case && e.applies(backend, device))
    }

    /// An expected failure that fails becomes `ExpectedFailure`; one that passes fails the
    /// run ("unexpected pass": the expectation is stale). Returns the applicable entries
    /// naming no case that ran, so stale entries can be reported.
    pub fn apply(&self, backend: &str, device: &str, results: &mut [CaseResult]) -> Vec<String> {
        for result in results.iter_mut() {
            let Some(expected) = self.find(backend, device, &result.name) else {
                continue;
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
                    result.reason = "unexpected pass".to_string();
                    let on = match (&expected.versions, device_version(device)) {
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
        self.expected_failures
            .iter()
            .filter(|e| e.applies(backend, device))
            .filter(|e| !results.iter().any(|r| r.name == e.case))
            .map(|e| e.case.clone())
            .collect()
    }
}

/// Where and how a run was made, for the reports.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    pub backend: String,
    pub device: String,
    /// The level the run was at: one level, or "each case's own".
    pub feature_level: String,
    pub strict_level: bool,
    /// The backend's validation profile (`strict`, `values-only`, `not-enforced: ...`).
    pub validation_profile: String,
    /// Starting the backend: processes, adapters, a device per level.
    pub startup: Duration,
    /// Running the cases, start-up excluded.
    pub cases_time: Duration,
}

pub fn json_report(info: &RunInfo, results: &[CaseResult]) -> String {
    let summary = Summary::of(results);
    let cases: Vec<serde_json::Value> = results
        .iter()
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "file": r.file,
                "line": r.line,
                "status": r.status.name(),
                "reason": r.reason,
                "details": r.details,
                "notes": r.notes,
                "duration_us": r.duration.as_micros() as u64,
                "feature_level": r.feature_level.map(|l| l.to_string()),
                "run_level": r.run_level.map(|l| l.to_string()),
            })
        })
        .collect();
    let report = serde_json::json!({
        "summary": {
            "passed": summary.passed,
            "failed": summary.failed,
            "skipped": summary.skipped,
            "expected_failures": summary.expected_failures,
            "informational": summary.informational,
            "backend": info.backend,
            "validation_profile": info.validation_profile,
            "device": info.device,
            "version": device_version(&info.device).map(|v| v.to_string()),
            "feature_level": info.feature_level,
            "strict_level": info.strict_level,
            "startup_s": info.startup.as_secs_f64(),
            "cases_s": info.cases_time.as_secs_f64(),
            "by_level": Summary::by_level(results)
                .into_iter()
                .map(|(level, s)| {
                    (
                        level.to_string(),
                        serde_json::json!({
                            "passed": s.passed,
                            "failed": s.failed,
                            "skipped": s.skipped,
                            "expected_failures": s.expected_failures,
                            "informational": s.informational,
                        }),
                    )
                })
                .collect::<serde_json::Map<_, _>>(),
        },
        "cases": cases,
    });
    serde_json::to_string_pretty(&report).unwrap_or_default()
}

pub fn junit_report(info: &RunInfo, results: &[CaseResult]) -> String {
    let summary = Summary::of(results);
    let total: f64 = results.iter().map(|r| r.duration.as_secs_f64()).sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites><testsuite name=\"dmlcts.{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{total:.6}\">",
        xml_escape(&info.backend),
        results.len(),
        summary.failed,
        summary.skipped + summary.expected_failures
    );
    let _ = writeln!(
        xml,
        "  <properties><property name=\"device\" value=\"{}\"/><property name=\"feature_level\" value=\"{}\"/></properties>",
        xml_escape(&info.device),
        xml_escape(&info.feature_level)
    );
    for r in results {
        let _ = write!(
            xml,
            "  <testcase classname=\"{}\" name=\"{}\" file=\"{}\" line=\"{}\" time=\"{:.6}\"",
            xml_escape(&r.file),
            xml_escape(&r.name),
            xml_escape(&r.file),
            r.line,
            r.duration.as_secs_f64()
        );
        match r.status {
            Status::Passed => xml.push_str("/>\n"),
            // Not a failure: a passed test case that says what it was.
            Status::Informational => {
                let _ = writeln!(
                    xml,
                    "><system-out>informational: {}\n{}</system-out></testcase>",
                    xml_escape(&r.reason),
                    xml_escape(&r.details)
                );
            }
            Status::Failed => {
                let _ = writeln!(
                    xml,
                    "><failure message=\"{}\">{}</failure></testcase>",
                    xml_escape(&r.reason),
                    xml_escape(&r.details)
                );
            }
            Status::Skipped | Status::ExpectedFailure => {
                let reason = if r.status == Status::Skipped {
                    r.reason.clone()
                } else {
                    r.notes.join("; ")
                };
                let _ = writeln!(
                    xml,
                    "><skipped message=\"{}\"/></testcase>",
                    xml_escape(&reason)
                );
            }
        }
    }
    xml.push_str("</testsuite></testsuites>\n");
    xml
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no way to carry other control characters.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(name: &str, status: Status) -> CaseResult {
        CaseResult {
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

    fn device(version: &str) -> String {
        format!("directml: DirectML.dll version {version} on llvmpipe, DML feature level 6_1")
    }

    #[test]
    fn an_entry_applies_only_to_the_versions_it_names() {
        let expectations: Expectations = serde_yaml::from_str(FILE).unwrap();
        for (version, a_expected) in [("1.12.1.0", true), ("1.13.1.0", true), ("1.15.4.0", false)] {
            let mut results = vec![result("a", Status::Failed), result("b", Status::Passed)];
            let stale = expectations.apply("directml", &device(version), &mut results);
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
        expectations.apply("directml", &device("1.13.1.0"), &mut results);
        assert_eq!(results[0].status, Status::Failed);
        assert_eq!(results[0].reason, "unexpected pass");
        assert_eq!(
            results[0].details,
            "  the expectations file lists it as failing on versions >=1.12.1, <1.15, and this \
             is 1.13.1.0 (window shape); remove the entry or narrow its versions\n"
        );
        assert_eq!(results[1].status, Status::Passed);
        let mut results = vec![result("b", Status::Passed)];
        expectations.apply("directml", &device("1.9.0.0"), &mut results);
        assert_eq!(results[0].reason, "unexpected pass");
    }

    #[test]
    fn stale_entries_are_only_those_for_the_running_version() {
        let expectations: Expectations = serde_yaml::from_str(FILE).unwrap();
        let mut results = vec![result("other", Status::Passed)];
        let stale = expectations.apply("directml", &device("1.9.0.0"), &mut results);
        assert_eq!(stale, vec!["b".to_string()]);
        let stale = expectations.apply("directml", "a device with no version", &mut results);
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
}
