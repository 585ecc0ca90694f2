//! The JSON report of a run (`--json FILE`). Identities (`id`, `name`, `file`) are written
//! exactly (JSON's own escapes lose nothing); the human-readable texts (`reason`, `details`,
//! `notes`, the device) are escaped as for a terminal (`text`), since they get printed.

use super::coverage::Coverage;
use super::{Suite, Summary};
use crate::expectations::Subject;
use crate::run::CaseResult;
use crate::text;
use std::time::Duration;

/// Where and how a run was made, for the reports.
#[derive(Clone, Debug, Default)]
pub struct RunInfo {
    pub backend: String,
    pub device: String,
    /// What the backend says it runs (`Backend::implementation`): reports write it, and
    /// expectations entries match it.
    pub implementation: dmlcts_tensor::Implementation,
    /// The level the run was at: one level, or "each case's own".
    pub feature_level: String,
    pub strict_level: bool,
    /// The backend's validation profile (`strict`, `values-only`, `not-enforced: ...`).
    pub validation_profile: String,
    /// Starting the backend: processes, adapters, a device per level.
    pub startup: Duration,
    /// Running the cases, start-up excluded.
    pub cases_time: Duration,
    /// The suite's version and commit, and the corpus it ran.
    pub suite: Suite,
    /// What the run covered, by assertion: filled when the run finishes (None before, and
    /// for reports made without a session).
    pub coverage: Option<Coverage>,
}

/// One result as the JSON reports write it.
pub fn result_json(r: &CaseResult) -> serde_json::Value {
    let mut entry = serde_json::json!({
        "id": r.id,
        "name": r.name,
        "file": r.file,
        "line": r.line,
        "status": r.status.name(),
        "reason": text::line(&r.reason),
        "details": text::block(&r.details),
        "notes": r.notes.iter().map(|n| text::line(n)).collect::<Vec<_>>(),
        "duration_us": r.duration.as_micros() as u64,
        "feature_level": r.feature_level.map(|l| l.to_string()),
        "run_level": r.run_level.map(|l| l.to_string()),
    });
    if let Some(descriptor) = &r.descriptor {
        entry["descriptor"] = serde_json::json!(descriptor);
    }
    if let Some(replay) = &r.replay {
        entry["replay"] = serde_json::json!(replay.render());
        entry["replay_words"] = serde_json::json!(replay.words);
        if !replay.env.is_empty() {
            entry["replay_env"] = replay
                .env
                .iter()
                .map(|(name, value)| (name.clone(), serde_json::json!(value)))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
    }
    entry
}

impl RunInfo {
    /// The backend as expectations entries see it.
    pub fn subject(&self) -> Subject {
        Subject {
            backend: self.backend.clone(),
            device: self.device.clone(),
            implementation: self.implementation.clone(),
        }
    }
}

/// The implementation fields as the report writes them (escaped as the device is); null when
/// the backend said nothing.
fn implementation_json(implementation: &dmlcts_tensor::Implementation) -> serde_json::Value {
    if implementation.is_empty() {
        return serde_json::Value::Null;
    }
    let adapter = &implementation.adapter;
    serde_json::json!({
        "name": text::line(&implementation.name),
        "version": text::line(&implementation.version),
        "adapter": {
            "name": text::line(&adapter.name),
            "vendor": text::line(&adapter.vendor),
            "driver": text::line(&adapter.driver),
        },
    })
}

pub fn json_report(info: &RunInfo, results: &[CaseResult]) -> String {
    let summary = Summary::of(results);
    let cases: Vec<serde_json::Value> = results.iter().map(result_json).collect();
    let report = serde_json::json!({
        "suite": info.suite.json(),
        "summary": {
            "total": results.len(),
            "passed": summary.passed,
            "failed": summary.failed,
            "skipped": summary.skipped,
            "expected_failures": summary.expected_failures,
            "informational": summary.informational,
            "backend": text::line(&info.backend),
            "validation_profile": info.validation_profile,
            "device": text::line(&info.device),
            "version": info.subject().version().map(|v| v.to_string()),
            "implementation": implementation_json(&info.implementation),
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
    let mut report = report;
    if let Some(coverage) = &info.coverage {
        report["coverage"] = coverage.json();
    }
    serde_json::to_string_pretty(&report).unwrap_or_default()
}
