//! The closing lines of a run (skips and informational results by reason, each level with
//! `--verbose`, the failed cases) and the summary line, as the terminal reporter prints them;
//! `-` as a report path (stdout). Every text from a backend or a case file is escaped
//! (`dmlcts_harness::text`) before it is printed.

use crate::out::{Paint, count, paint};
use dmlcts_harness::report::Summary;
use dmlcts_harness::text::Line;
use dmlcts_harness::{CaseResult, Status};
use std::collections::BTreeMap;
use std::path::Path;

/// Skips by reason, most frequent first (twelve at most).
pub(crate) fn print_skip_reasons(results: &[CaseResult]) {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results.iter().filter(|r| r.status == Status::Skipped) {
        *reasons.entry(r.reason.as_str()).or_default() += 1;
    }
    if reasons.is_empty() {
        return;
    }
    let mut sorted: Vec<(&str, usize)> = reasons.into_iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    crate::say!("skipped, by reason:");
    for (reason, n) in sorted.iter().take(12) {
        crate::say!("  {n:5}  {}", Line(reason));
    }
    if sorted.len() > 12 {
        crate::say!(
            "  ... and {} more (see --json)",
            count(sorted.len() - 12, "reason", "reasons")
        );
    }
}

/// Must-reject cases accepted under the backend's validation profile, by rule.
pub(crate) fn print_informational(results: &[CaseResult]) {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results.iter().filter(|r| r.status == Status::Informational) {
        *reasons.entry(r.reason.as_str()).or_default() += 1;
    }
    if reasons.is_empty() {
        return;
    }
    crate::say!("informational (rules the backend does not enforce; not failures):");
    for (reason, n) in reasons {
        crate::say!("  {n:5}  {}", Line(reason));
    }
}

/// `--verbose`: the summary per case feature level.
pub(crate) fn print_levels(results: &[CaseResult]) {
    crate::say!("by the cases' feature level:");
    for (level, summary) in Summary::by_level(results) {
        let expected = if summary.expected_failures > 0 {
            format!(
                ", {}",
                count(
                    summary.expected_failures,
                    "expected failure",
                    "expected failures"
                )
            )
        } else {
            String::new()
        };
        crate::say!("  {level}: {}{expected}", summary.line());
    }
}

/// The failed results, one line each (as cargo test and pytest end), before the summary.
pub(crate) fn print_failed_list(results: &[CaseResult]) {
    let failed: Vec<&CaseResult> = results
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect();
    if failed.is_empty() {
        return;
    }
    crate::say!(
        "{}",
        paint(
            Paint::Red,
            &format!("failed ({}):", count(failed.len(), "case", "cases"))
        )
    );
    for r in failed {
        crate::say!(
            "    {} ({}): {}",
            Line(&r.name),
            Line(&r.location()),
            Line(&r.reason)
        );
    }
}

/// The summary line, coloured: green when nothing failed, its failures red.
pub(crate) fn summary_line(summary: &Summary) -> String {
    let line = summary.line();
    if summary.failed == 0 {
        return paint(Paint::Green, &line);
    }
    let failed = format!("{} failed", summary.failed);
    line.replacen(&failed, &paint(Paint::Red, &failed), 1)
}

/// A report path: `-` is stdout.
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}
