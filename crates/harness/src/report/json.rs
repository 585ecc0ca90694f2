//! The JSON report of a run (`--json FILE`).

use super::Summary;
use crate::expectations::device_version;
use crate::run::CaseResult;
use std::time::Duration;

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
