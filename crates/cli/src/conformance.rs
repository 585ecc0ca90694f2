//! `conformance`: options, progress, summary and reports around the harness's runner.

use crate::backends::{BackendRequest, Resolver, resolve};
use crate::{Host, parse_feature_level, parse_seconds};
use clap::Args;
use dmlcts_harness::report::{
    Expectations, RunInfo, Summary, json_report, junit_report, load_error_result,
};
use dmlcts_harness::{Case, CaseResult, Corpus, Devices, SkipCheck, Status, run_case};
use dmlcts_tensor::FeatureLevel;
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
    /// cpu-process, process:COMMAND (any server speaking docs/backend-protocol.md, started
    /// with `sh -c COMMAND`), or a name from the backends file. directml needs a dmlcts
    /// checkout: its `cargo xtask directml setup` prepares the stack, which the installed
    /// binary finds in ./target/directml-stack or in $DMLCTS_DIRECTML_STACK.
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
    let cases: Vec<Case> = corpus
        .cases
        .into_iter()
        .filter(|c| args.selects(c))
        .collect();
    if args.list {
        for case in &cases {
            crate::say!(
                "{}  ({}:{}, {}, level {})",
                case.name,
                case.file,
                case.line,
                case.op.kind(),
                case.feature_level
            );
        }
        for error in &corpus.errors {
            crate::say!("error: {error}");
        }
        return if corpus.errors.is_empty() { 0 } else { 1 };
    }
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
            return 2;
        }
    };
    let resolve_time = starting.elapsed();
    let expectations = match &args.expectations {
        Some(path) => match Expectations::load(path) {
            Ok(e) => Some(e),
            Err(e) => {
                crate::say_err!("error: --expectations: {e}");
                return 2;
            }
        },
        None => None,
    };
    let backend = resolved.backend.clone();
    let strict = if args.strict_level { " (strict)" } else { "" };
    let (level_text, mut devices) = match (args.feature_level, resolved.at_level) {
        (Some(level), _) => (
            format!("feature level {level}{strict}"),
            Devices::pinned(backend.clone(), level, args.strict_level),
        ),
        (None, Some(at_level)) => (
            "each case at its own feature level".to_string(),
            Devices::per_case(at_level, args.strict_level),
        ),
        (None, None) => {
            let only = backend.clone();
            (
                format!(
                    "feature level {}{strict} (the only level it offers)",
                    backend.feature_level()
                ),
                Devices::per_case(Box::new(move |_| only.clone()), args.strict_level),
            )
        }
    };
    let mut info = RunInfo {
        backend: backend.name(),
        device: backend.device(),
        feature_level: match args.feature_level {
            Some(level) => level.to_string(),
            None if level_text.starts_with("each") => "each case's own".to_string(),
            None => backend.feature_level().to_string(),
        },
        strict_level: args.strict_level,
        validation_profile: backend.validation_profile().name(),
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
    let profile_text = match profile {
        dmlcts_tensor::ValidationProfile::Strict => String::new(),
        _ => format!(", validation profile {}", info.validation_profile),
    };
    crate::say!(
        "dmlcts conformance: backend {} ({}), {level_text}{profile_text}, {} cases",
        info.backend,
        if info.device.is_empty() {
            "no device description"
        } else {
            &info.device
        },
        cases.len()
    );

    let started = Instant::now();
    let mut results: Vec<CaseResult> = corpus.errors.iter().map(load_error_result).collect();
    for result in &results {
        crate::say!("{}", result.failure_report());
    }
    let mut progress = Progress::new(cases.len());
    let mut skip_check = SkipCheck::default();
    for case in &cases {
        let (device, mut options) = devices.for_case(case);
        options.program = Some(host_program.to_string());
        options.not_enforced = not_enforced.clone();
        let result = run_case(device.as_ref(), case, &options);
        let skipped = (result.status == Status::Skipped).then_some(result.reason.as_str());
        skip_check.record(device.as_ref(), case, &options, skipped);
        if result.status == Status::Failed {
            progress.clear();
            crate::say!("{}", result.failure_report());
        } else if args.verbose {
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
        progress.update(&result);
        results.push(result);
    }
    progress.clear();
    // Making a device at a new level is start-up too (a GPU device, a Python import).
    info.startup = resolve_time + devices.startup();
    info.cases_time = started.elapsed().saturating_sub(devices.startup());

    if let Some(expectations) = &expectations {
        let stale = expectations.apply(&info.backend, &info.device, &mut results);
        for result in results.iter().filter(|r| r.reason == "unexpected pass") {
            crate::say!("{}", result.failure_report());
        }
        for case in stale {
            crate::say!("note: the expectations file names `{case}`, which did not run");
        }
    }
    print_skip_reasons(&results);
    print_informational(&results);
    let summary = Summary::of(&results);
    if summary.expected_failures > 0 {
        crate::say!(
            "{} expected failures (listed in the expectations file)",
            summary.expected_failures
        );
    }
    if args.verbose {
        print_levels(&results);
    }
    crate::say!(
        "backend start-up {:.3} s; {} cases ran in {:.3} s",
        info.startup.as_secs_f64(),
        cases.len(),
        info.cases_time.as_secs_f64()
    );
    let mut status = if summary.failed == 0 { 0 } else { 1 };
    if let Some(failure) = skip_check.failure(&info.backend) {
        crate::say!("error: {failure}");
        status = 1;
    }
    for (path, text) in [
        (
            &args.json,
            args.json.as_ref().map(|_| json_report(&info, &results)),
        ),
        (
            &args.junit,
            args.junit.as_ref().map(|_| junit_report(&info, &results)),
        ),
    ] {
        if let (Some(path), Some(text)) = (path, text)
            && let Err(e) = write_report(path, &text)
        {
            crate::say_err!("error: cannot write {}: {e}", path.display());
            status = 2;
        }
    }
    crate::say!("{}", summary.line());
    status
}

fn write_report(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
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
