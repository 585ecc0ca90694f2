//! `conformance`: options, progress, summary and reports around the harness's runner.

use crate::backends::{BackendRequest, Resolved, Resolver, resolve};
use crate::{Host, parse_feature_level, parse_seconds};
use clap::Args;
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::load_error_result;
use dmlcts_harness::report::{RunInfo, Summary, json_report, junit_report};
use dmlcts_harness::{Case, CaseResult, Corpus, Devices, SkipCheck, Status, run_case, shell_word};
use dmlcts_tensor::{FeatureLevel, ValidationProfile};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options shared by every command that runs a backend.
#[derive(Clone, Debug, Args)]
pub struct BackendOptions {
    /// Backend to test; the `backends` command lists them
    ///
    /// cpu, oracle, wgpu, directml (the newest pinned DirectML.dll), directml@VERSION,
    /// cpu-process, tract (tract-core in process), process:COMMAND (any server speaking
    /// docs/backend-protocol.md, started with `sh -c COMMAND`), or a name from the backends
    /// file. directml needs a dmlcts checkout: its `cargo xtask directml setup` prepares the
    /// stack, which the installed binary finds in ./target/directml-stack or in
    /// $DMLCTS_DIRECTML_STACK.
    #[arg(long, value_name = "NAME", default_value = "cpu")]
    pub backend: String,
    /// Names for out-of-process backends [default: backends.yaml]
    #[arg(long, value_name = "FILE")]
    pub backend_config: Option<PathBuf>,
    /// Longest wait for one reply from an out-of-process backend [default: 10]
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub process_timeout: Option<Duration>,
    /// GPU backends: the adapter whose name, backend or driver contains TEXT
    #[arg(long, value_name = "TEXT")]
    pub adapter: Option<String>,
}

#[derive(Clone, Debug, Args)]
pub struct ConformanceArgs {
    #[command(flatten)]
    pub backend: BackendOptions,
    /// Case file or folder; repeatable [default: the corpus, embedded]
    #[arg(long = "cases", value_name = "PATH")]
    pub cases: Vec<PathBuf>,
    /// Run the cases whose name contains TEXT; repeatable
    #[arg(long = "filter", value_name = "TEXT")]
    pub filters: Vec<String>,
    /// --filter must equal the case name
    #[arg(long)]
    pub exact: bool,
    /// Pin one level: every case runs as on a device at X_Y [default: each case at its own
    /// level, on backends that can act at several]
    #[arg(long, value_name = "X_Y", value_parser = parse_feature_level)]
    pub feature_level: Option<FeatureLevel>,
    /// Require rejection of what the running level's tables do not support, also where the
    /// device is not at the case's own level
    #[arg(long)]
    pub strict_level: bool,
    /// Known failures (YAML); an unexpected pass fails the run
    #[arg(long, value_name = "FILE")]
    pub expectations: Option<PathBuf>,
    /// Write a JSON report
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a JUnit XML report
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// List the selected cases and exit
    #[arg(long)]
    pub list: bool,
    /// Print every case, with notes
    #[arg(long, short)]
    pub verbose: bool,
}

impl ConformanceArgs {
    fn selects(&self, case: &Case) -> bool {
        self.filters.is_empty()
            || self.filters.iter().any(|f| {
                if self.exact {
                    case.name == *f
                } else {
                    case.name.contains(f.as_str())
                }
            })
    }
}

/// Runs the conformance command; returns the process exit status (0 iff nothing failed).
pub fn conformance_main(args: &ConformanceArgs, host: &Host) -> i32 {
    conformance_with(args, host.program, &|request| resolve(host, request))
}

/// The conformance command with a backend made by `resolve` (tests pass their own).
/// `host_program` starts the replay commands (`cargo xtask`, `dmlcts`).
pub fn conformance_with(args: &ConformanceArgs, host_program: &str, resolve: Resolver<'_>) -> i32 {
    let corpus = if args.cases.is_empty() {
        Corpus::embedded()
    } else {
        Corpus::load_paths(&args.cases)
    };
    crate::preflight::print_skipped(&corpus);
    let cases: Vec<Case> = corpus
        .cases
        .into_iter()
        .filter(|c| args.selects(c))
        .collect();
    if args.list {
        return list_cases(&cases, &corpus.errors);
    }
    if let Err(status) = check_before_run(args) {
        return status;
    }
    let backend_name = args.backend.backend.clone();
    let (resolved, resolve_time) = match resolve_backend(args, resolve) {
        Ok(resolved) => resolved,
        Err(status) => return status,
    };
    let expectations = match load_expectations(args) {
        Ok(expectations) => expectations,
        Err(status) => return status,
    };
    let mut run = prepare(
        resolved,
        args.feature_level,
        args.strict_level,
        expectations.as_ref(),
    );
    print_header(&run, cases.len());

    let mut results: Vec<CaseResult> = corpus.errors.iter().map(load_error_result).collect();
    for result in &results {
        crate::say!("{}", result.failure_report());
    }
    let skip_check = run_cases(
        &mut run,
        &cases,
        args.verbose,
        host_program,
        &backend_name,
        &mut results,
    );
    let mut info = run.info;
    info.startup += resolve_time;

    if let Some(expectations) = &expectations {
        report_expectations(
            args,
            expectations,
            &info,
            host_program,
            &backend_name,
            &mut results,
        );
    }
    summarize(args, &info, &results, cases.len(), &skip_check)
}

/// Before the backend starts: the `--json` and `--junit` files can be written (exit status 2
/// if not), so a run never ends in "cannot write".
fn check_before_run(args: &ConformanceArgs) -> Result<(), i32> {
    crate::preflight::check_report_files(&[
        ("--json", args.json.as_deref()),
        ("--junit", args.junit.as_deref()),
    ])
}

/// `--list`: the selected cases, then the corpus's load errors (exit status 1 if any).
fn list_cases(cases: &[Case], errors: &[impl std::fmt::Display]) -> i32 {
    for case in cases {
        crate::say!(
            "{}  ({}:{}, {}, level {})",
            case.name,
            case.file,
            case.line,
            case.op.kind(),
            case.feature_level
        );
    }
    for error in errors {
        crate::say!("error: {error}");
    }
    if errors.is_empty() { 0 } else { 1 }
}

/// Makes the backend `--backend` names, and times it (start-up); an error is exit status 2.
fn resolve_backend(
    args: &ConformanceArgs,
    resolve: Resolver<'_>,
) -> Result<(Resolved, Duration), i32> {
    let backend_name = args.backend.backend.clone();
    let request = BackendRequest {
        name: backend_name.clone(),
        feature_level: args.feature_level,
        process_timeout: args.backend.process_timeout,
        backend_config: args.backend.backend_config.clone(),
        adapter: args.backend.adapter.clone(),
    };
    let starting = Instant::now();
    let resolved = match resolve(&request) {
        Ok(resolved) => resolved,
        Err(e) => {
            crate::say_err!("error: --backend {backend_name}: {e}");
            return Err(2);
        }
    };
    let resolve_time = starting.elapsed();
    Ok((resolved, resolve_time))
}

/// The `--expectations` file, if given; one that does not load is exit status 2.
fn load_expectations(args: &ConformanceArgs) -> Result<Option<Expectations>, i32> {
    let expectations = match &args.expectations {
        Some(path) => match Expectations::load(path) {
            Ok(e) => Some(e),
            Err(e) => {
                crate::say_err!("error: --expectations: {e}");
                return Err(2);
            }
        },
        None => None,
    };
    Ok(expectations)
}

/// The first line: the backend, its device, how levels are chosen, its profile, the cases.
fn print_header(run: &PreparedRun, cases: usize) {
    let info = &run.info;
    crate::say!(
        "dmlcts conformance: backend {} ({}), {}{}, {} cases",
        info.backend,
        if info.device.is_empty() {
            "no device description"
        } else {
            &info.device
        },
        run.level_text,
        run.profile_text(),
        cases
    );
}

/// Runs the cases under a progress line, printing each failure as it comes (with `verbose`,
/// every case); their results go after those already in `results`.
fn run_cases(
    run: &mut PreparedRun,
    cases: &[Case],
    verbose: bool,
    host_program: &str,
    backend_name: &str,
    results: &mut Vec<CaseResult>,
) -> SkipCheck {
    let mut progress = Progress::new(cases.len());
    let skip_check = run.run(cases, host_program, backend_name, &mut |result| {
        if result.status == Status::Failed {
            progress.clear();
            crate::say!("{}", result.failure_report());
        } else if verbose {
            progress.clear();
            crate::say!(
                "{} {}  {}",
                result.status.name(),
                result.name,
                result.reason
            );
            if result.status == Status::Informational {
                crate::say!("{}", result.details.trim_end());
            }
            for note in &result.notes {
                crate::say!("    note: {note}");
            }
        }
        progress.update(result);
        results.push(result.clone());
    });
    progress.clear();
    skip_check
}

/// Applies the `--expectations` file to the results and prints what it turned up: the
/// unexpected passes, and the entries naming a case that did not run.
fn report_expectations(
    args: &ConformanceArgs,
    expectations: &Expectations,
    info: &RunInfo,
    host_program: &str,
    backend_name: &str,
    results: &mut [CaseResult],
) {
    let file = args
        .expectations
        .as_deref()
        .unwrap_or(std::path::Path::new(""));
    let stale = apply_expectations(
        expectations,
        file,
        info,
        host_program,
        backend_name,
        results,
    );
    for result in results.iter().filter(|r| r.reason == "unexpected pass") {
        crate::say!("{}", result.failure_report());
    }
    for case in stale {
        crate::say!("note: the expectations file names `{case}`, which did not run");
    }
}

/// The closing lines (skips and informational results by reason, expected failures, with
/// `--verbose` each level, the times), the reports and the summary line. Returns the exit
/// status: 1 when a case failed or everything was skipped, 2 when a report was not written.
fn summarize(
    args: &ConformanceArgs,
    info: &RunInfo,
    results: &[CaseResult],
    cases: usize,
    skip_check: &SkipCheck,
) -> i32 {
    print_skip_reasons(results);
    print_informational(results);
    let summary = Summary::of(results);
    if summary.expected_failures > 0 {
        crate::say!(
            "{} expected failures (listed in the expectations file)",
            summary.expected_failures
        );
    }
    if args.verbose {
        print_levels(results);
    }
    crate::say!(
        "backend start-up {:.3} s; {} cases ran in {:.3} s",
        info.startup.as_secs_f64(),
        cases,
        info.cases_time.as_secs_f64()
    );
    let mut status = if summary.failed == 0 { 0 } else { 1 };
    if let Some(failure) = skip_check.failure(&info.backend) {
        crate::say!("error: {failure}");
        status = 1;
    }
    if !write_reports(args, info, results) {
        status = 2;
    }
    crate::say!("{}", summary.line());
    status
}

/// `--json` and `--junit`; false when one could not be written (said on stderr).
fn write_reports(args: &ConformanceArgs, info: &RunInfo, results: &[CaseResult]) -> bool {
    let mut written = true;
    for (path, text) in [
        (
            &args.json,
            args.json.as_ref().map(|_| json_report(info, results)),
        ),
        (
            &args.junit,
            args.junit.as_ref().map(|_| junit_report(info, results)),
        ),
    ] {
        if let (Some(path), Some(text)) = (path, text)
            && let Err(e) = write_report(path, &text)
        {
            crate::say_err!("error: cannot write {}: {e}", path.display());
            written = false;
        }
    }
    written
}

/// A resolved backend ready to run cases: its devices (one per level, or pinned) and what
/// the reports say about the run. `conformance` and `matrix` both run backends through it.
pub struct PreparedRun {
    devices: Devices<'static>,
    pub info: RunInfo,
    /// How the cases' levels are chosen, in words.
    pub level_text: String,
    /// The expectations file's `not_enforced` rules for this backend (added to its profile).
    pub not_enforced: Vec<String>,
    /// The validation profile the run holds the backend to.
    pub profile: ValidationProfile,
}

/// Chooses the devices for a resolved backend: pinned at `feature_level`, a device at each
/// case's own level where the backend can act at several, or the backend's only level; and
/// its validation profile, with the expectations file's `not_enforced` rules for it.
pub fn prepare(
    resolved: Resolved,
    feature_level: Option<FeatureLevel>,
    strict_level: bool,
    expectations: Option<&Expectations>,
) -> PreparedRun {
    let backend = resolved.backend.clone();
    let strict = if strict_level { " (strict)" } else { "" };
    let (level_text, devices) = match (feature_level, resolved.at_level) {
        (Some(level), _) => (
            format!("feature level {level}{strict}"),
            Devices::pinned(backend.clone(), level, strict_level),
        ),
        (None, Some(at_level)) => (
            "each case at its own feature level".to_string(),
            Devices::per_case(at_level, strict_level),
        ),
        (None, None) => {
            let only = backend.clone();
            (
                format!(
                    "feature level {}{strict} (the only level it offers)",
                    backend.feature_level()
                ),
                Devices::per_case(Box::new(move |_| only.clone()), strict_level),
            )
        }
    };
    let mut info = RunInfo {
        backend: backend.name(),
        device: backend.device(),
        feature_level: match feature_level {
            Some(level) => level.to_string(),
            None if level_text.starts_with("each") => "each case's own".to_string(),
            None => backend.feature_level().to_string(),
        },
        strict_level,
        ..RunInfo::default()
    };
    // The expectations file's `not_enforced` entries for this backend add to its profile.
    let not_enforced: Vec<String> = expectations
        .iter()
        .flat_map(|e| &e.not_enforced)
        .filter(|n| n.applies(&info.backend, &info.device))
        .flat_map(|n| n.rules.iter().cloned())
        .collect();
    let profile = backend.validation_profile().without(&not_enforced);
    info.validation_profile = profile.name();
    PreparedRun {
        devices,
        info,
        level_text,
        not_enforced,
        profile,
    }
}

impl PreparedRun {
    /// `, validation profile P` for a backend that is not strict; empty for a strict one.
    pub fn profile_text(&self) -> String {
        match self.profile {
            ValidationProfile::Strict => String::new(),
            _ => format!(", validation profile {}", self.info.validation_profile),
        }
    }

    /// Runs every case through `run_case` on its device, in order, handing each result to
    /// `on_result`; fills in the start-up (making devices) and case times. Replay commands
    /// start with `program` and name the backend as `backend_name` (what `--backend` said).
    pub fn run(
        &mut self,
        cases: &[Case],
        program: &str,
        backend_name: &str,
        on_result: &mut dyn FnMut(&CaseResult),
    ) -> SkipCheck {
        let started = Instant::now();
        let mut skip_check = SkipCheck::default();
        for case in cases {
            let (device, mut options) = self.devices.for_case(case);
            options.program = Some(program.to_string());
            options.backend_name = Some(backend_name.to_string());
            options.not_enforced = self.not_enforced.clone();
            let result = run_case(device.as_ref(), case, &options);
            let skipped = (result.status == Status::Skipped).then_some(result.reason.as_str());
            skip_check.record(device.as_ref(), case, &options, skipped);
            on_result(&result);
        }
        // Making a device at a new level is start-up too (a GPU device, a Python import).
        self.info.startup = self.devices.startup();
        self.info.cases_time = started.elapsed().saturating_sub(self.devices.startup());
        skip_check
    }
}

/// Applies an expectations file (`file`, for the replay commands) to a run's results; an
/// unexpected pass gets a replay command that passes the file again. Returns the entries for
/// this backend naming no case that ran.
pub fn apply_expectations(
    expectations: &Expectations,
    file: &std::path::Path,
    info: &RunInfo,
    program: &str,
    backend_name: &str,
    results: &mut [CaseResult],
) -> Vec<String> {
    let stale = expectations.apply(&info.backend, &info.device, results);
    for result in results.iter_mut() {
        if result.reason == "unexpected pass" && !result.details.contains("  replay: ") {
            result.details.push_str(&format!(
                "  replay: {program} conformance --backend {} --cases {} --filter {} --exact \
                 --expectations {}\n",
                shell_word(backend_name),
                shell_word(&result.file),
                result.name,
                shell_word(&file.display().to_string())
            ));
        }
    }
    stale
}

/// Written to a temporary file and renamed: a link or FIFO at the name is replaced.
fn write_report(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    dmlcts_harness::report::write::write_atomically(path, text.as_bytes())
}

/// `--verbose`: the summary per case feature level.
fn print_levels(results: &[CaseResult]) {
    crate::say!("by the cases' feature level:");
    for (level, summary) in Summary::by_level(results) {
        let expected = if summary.expected_failures > 0 {
            format!(", {} expected failures", summary.expected_failures)
        } else {
            String::new()
        };
        crate::say!("  {level}: {}{expected}", summary.line());
    }
}

/// Must-reject cases accepted under the backend's validation profile, by rule.
fn print_informational(results: &[CaseResult]) {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results.iter().filter(|r| r.status == Status::Informational) {
        *reasons.entry(r.reason.as_str()).or_default() += 1;
    }
    if reasons.is_empty() {
        return;
    }
    crate::say!("informational (rules the backend does not enforce; not failures):");
    for (reason, count) in reasons {
        crate::say!("  {count:5}  {reason}");
    }
}

fn print_skip_reasons(results: &[CaseResult]) {
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
    for (reason, count) in sorted.iter().take(12) {
        crate::say!("  {count:5}  {reason}");
    }
    if sorted.len() > 12 {
        crate::say!("  ... and {} more reasons (see --json)", sorted.len() - 12);
    }
}

/// A progress line on stderr: rewritten in place on a terminal, printed every few seconds
/// otherwise (CI logs).
struct Progress {
    total: usize,
    done: usize,
    summary: Summary,
    terminal: bool,
    last: Instant,
    shown: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        Progress {
            total,
            done: 0,
            summary: Summary::default(),
            terminal: std::io::stderr().is_terminal(),
            last: Instant::now(),
            shown: false,
        }
    }

    fn update(&mut self, result: &CaseResult) {
        self.done += 1;
        match result.status {
            Status::Passed => self.summary.passed += 1,
            Status::Failed => self.summary.failed += 1,
            Status::Skipped => self.summary.skipped += 1,
            Status::ExpectedFailure => self.summary.expected_failures += 1,
            Status::Informational => self.summary.informational += 1,
        }
        let interval = if self.terminal {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(5)
        };
        if self.last.elapsed() >= interval || (self.done == self.total && self.terminal) {
            self.last = Instant::now();
            let line = format!("[{}/{}] {}", self.done, self.total, self.summary.line());
            let mut err = std::io::stderr();
            if self.terminal {
                let _ = write!(err, "\r{line}\x1b[K");
                self.shown = true;
            } else {
                let _ = writeln!(err, "{line}");
            }
            let _ = err.flush();
        }
    }

    fn clear(&mut self) {
        if self.terminal && self.shown {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.shown = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn an_unexpected_pass_gets_a_replay_command_that_passes_the_expectations_file_again() {
        let expectations: Expectations = serde_yaml::from_str(
            "expected_failures:\n  - backend: directml\n    case: doc.split.example1_axis2\n    reason: r\n",
        )
        .unwrap();
        let case = Corpus::embedded()
            .cases
            .into_iter()
            .find(|c| c.name == "doc.split.example1_axis2")
            .unwrap();
        let oracle = dmlcts_oracle::OracleBackend::new(FeatureLevel::L4_1);
        let mut results = vec![run_case(&oracle, &case, &Default::default())];
        let info = RunInfo {
            backend: "directml".to_string(),
            ..RunInfo::default()
        };
        let stale = apply_expectations(
            &expectations,
            Path::new("expectations/directml.yaml"),
            &info,
            "dmlcts",
            "directml@1.9.0",
            &mut results,
        );
        assert!(stale.is_empty());
        assert_eq!(results[0].status, Status::Failed);
        assert_eq!(results[0].reason, "unexpected pass");
        assert!(
            results[0].details.ends_with(
                "  replay: dmlcts conformance --backend directml@1.9.0 --cases cases/doc/split.yaml \
                 --filter doc.split.example1_axis2 --exact --expectations expectations/directml.yaml\n"
            ),
            "{}",
            results[0].details
        );
    }
}
