//! The reporters of a conformance run: they listen to the harness's session
//! (`dmlcts_harness::session::Event`) and only print or write what they hear. `Terminal` is the
//! human text (the header, failures as they come, `--verbose` lines, the progress line, the
//! closing lines and the summary line); `ReportFiles` writes `--json` and `--junit` when the
//! run finishes.

use crate::closing::{
    is_stdout, print_failed_list, print_informational, print_levels, print_skip_reasons,
    summary_line,
};
use crate::error::CommandError;
use crate::out::{Paint, count, paint};
use crate::progress::Progress;
use dmlcts_harness::expectations::UNEXPECTED_PASS;
use dmlcts_harness::report::{RunInfo, json_report, junit_report};
use dmlcts_harness::session::{Event, Reporter, RunReport};
use dmlcts_harness::text::{Block, Line};
use dmlcts_harness::{CaseResult, Status};
use dmlcts_tensor::ValidationProfile;
use std::path::{Path, PathBuf};

/// The human text of a run, on stdout (stderr under `--json -` or `--junit -`).
pub(crate) struct Terminal {
    verbose: bool,
    progress: Progress,
}

impl Terminal {
    pub(crate) fn new(verbose: bool) -> Terminal {
        Terminal {
            verbose,
            progress: Progress::new(0),
        }
    }

    /// The first lines: the backend, its device, how levels are chosen, its profile, the
    /// cases; then the suite, its commit and the corpus; for a backend served by processes,
    /// how they are contained.
    fn header(info: &RunInfo, levels: &str, profile: &ValidationProfile, cases: usize) {
        let profile_text = match profile {
            ValidationProfile::Strict => String::new(),
            _ => format!(", validation profile {}", info.validation_profile),
        };
        crate::say!(
            "dmlcts conformance: backend {} ({}), {}{}, {}",
            Line(&info.backend),
            if info.device.is_empty() {
                "no device description".to_string()
            } else {
                Line(&info.device).to_string()
            },
            levels,
            profile_text,
            count(cases, "case", "cases")
        );
        crate::say!("suite: {}, {}", info.suite.name(), info.suite.corpus());
        // A backend served by processes: how what they start is ended with them.
        if info.backend.starts_with("process:") || info.backend.starts_with("directml") {
            crate::say!("servers: {}", dmlcts_protocol::containment());
        }
    }

    /// A case as it finishes: a failure (as judged, before the expectations file's word) is
    /// printed whole; with `verbose`, every other case gets its line and notes.
    fn case_finished(&mut self, result: &CaseResult, judged: Status) {
        if judged == Status::Failed {
            self.progress.clear();
            crate::say!("{}", failure_text(result));
        } else if self.verbose {
            self.progress.clear();
            crate::say!("{}", verbose_line(result));
            if result.status == Status::Informational {
                crate::say!("{}", Block(result.details.trim_end()));
            }
            for note in &result.notes {
                crate::say!("    note: {}", Line(note));
            }
        }
        self.progress.update(result);
    }

    /// The closing lines: unexpected passes, stale expectations, skips and informational
    /// results by reason, expected failures, with `--verbose` each level, the times, the
    /// failed cases, and the summary line.
    fn run_finished(&mut self, report: &RunReport) {
        self.progress.clear();
        let results = &report.results;
        for result in results.iter().filter(|r| r.reason == UNEXPECTED_PASS) {
            crate::say!("{}", failure_text(result));
        }
        for case in &report.stale {
            crate::say!(
                "note: the expectations file names `{}`, which did not run",
                Line(case)
            );
        }
        print_skip_reasons(results);
        print_informational(results);
        let summary = &report.summary;
        if summary.expected_failures > 0 {
            crate::say!(
                "{} (listed in the expectations file)",
                count(
                    summary.expected_failures,
                    "expected failure",
                    "expected failures"
                )
            );
        }
        if self.verbose {
            print_levels(results);
        }
        if let Some(coverage) = &report.info.coverage {
            crate::say!("{}", Line(&coverage.line()));
        }
        crate::say!(
            "backend start-up {:.3} s; {} in {:.3} s",
            report.info.startup.as_secs_f64(),
            count(report.cases, "case ran", "cases ran"),
            report.info.cases_time.as_secs_f64()
        );
        print_failed_list(results);
        crate::say!("{}", summary_line(summary));
    }
}

impl Reporter for Terminal {
    fn event(&mut self, event: &Event<'_>) {
        match event {
            Event::RunStarted {
                info,
                levels,
                profile,
                cases,
            } => {
                Terminal::header(info, levels, profile, *cases);
                self.progress = Progress::new(*cases);
            }
            Event::LoadError(result) => crate::say!("{}", failure_text(result)),
            Event::CaseFinished { result, judged } => self.case_finished(result, *judged),
            Event::RunFinished(report) => self.run_finished(report),
        }
    }
}

/// `--json` and `--junit`, written when the run finishes (`-`: stdout); what could not be
/// written is `result`'s error.
pub(crate) struct ReportFiles {
    json: Option<PathBuf>,
    junit: Option<PathBuf>,
    error: Option<CommandError>,
}

impl ReportFiles {
    pub(crate) fn new(json: Option<PathBuf>, junit: Option<PathBuf>) -> ReportFiles {
        ReportFiles {
            json,
            junit,
            error: None,
        }
    }

    /// Whether every report was written.
    pub(crate) fn result(self) -> Result<(), CommandError> {
        self.error.map_or(Ok(()), Err)
    }
}

impl Reporter for ReportFiles {
    fn event(&mut self, event: &Event<'_>) {
        let Event::RunFinished(report) = event else {
            return;
        };
        let reports = [
            (
                &self.json,
                self.json
                    .as_ref()
                    .map(|_| json_report(&report.info, &report.results)),
            ),
            (
                &self.junit,
                (self.junit.as_ref()).map(|_| junit_report(&report.info, &report.results)),
            ),
        ];
        for (path, text) in reports {
            let (Some(path), Some(text)) = (path, text) else {
                continue;
            };
            if let Err(e) = write_report(path, &text) {
                let message = format!("cannot write {}: {e}", path.display());
                match &mut self.error {
                    None => self.error = Some(CommandError::Output(message)),
                    // Both failed: one error naming both.
                    Some(CommandError::Output(first)) => {
                        first.push_str(&format!("\nerror: {message}"));
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

/// A report to its file (`write_report`: into a device or FIFO, a temporary file renamed over
/// anything else), or to stdout for `-`.
fn write_report(path: &Path, text: &str) -> std::io::Result<()> {
    if is_stdout(path) {
        crate::out::report_to_stdout(text)
    } else {
        dmlcts_harness::report::write::write_report(path, text.as_bytes())
    }
}

/// A failure as printed: its report, `FAIL` coloured.
pub(crate) fn failure_text(result: &CaseResult) -> String {
    let report = result.failure_report();
    let report = report.trim_end();
    match report.strip_prefix("FAIL ") {
        Some(rest) => format!("{} {rest}\n", paint(Paint::Red, "FAIL")),
        None => format!("{report}\n"),
    }
}

/// `--verbose`: `passed NAME (at 4_1)`, and `: REASON` where there is one.
pub(crate) fn verbose_line(result: &CaseResult) -> String {
    let mut line = format!("{} {}", result.status.name(), Line(&result.name));
    if let Some(level) = result.run_level {
        line.push_str(&format!(" (at {level})"));
    }
    if !result.reason.is_empty() {
        line.push_str(&format!(": {}", Line(&result.reason)));
    }
    line
}
