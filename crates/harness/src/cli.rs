//! `cargo xtask conformance`: argument parsing, progress, summary and reports. The xtask
//! binary only supplies the table of backends.

use crate::case::{Case, Corpus};
use crate::report::{Expectations, RunInfo, Summary, json_report, junit_report, load_error_result};
use crate::runner::{CaseResult, RunOptions, SkipCheck, Status, run_case};
use dmlcts_tensor::{Backend, FeatureLevel};
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What `--backend` and its companion options ask for.
#[derive(Clone, Debug, Default)]
pub struct BackendRequest {
    pub name: String,
    /// Run as a device at this level, for backends that can.
    pub feature_level: Option<FeatureLevel>,
    /// Per-request timeout for out-of-process backends.
    pub process_timeout: Option<Duration>,
    /// A file naming out-of-process backends (see backends.yaml).
    pub backend_config: Option<PathBuf>,
    /// For GPU backends: a substring of the adapter's name, backend or driver.
    pub adapter: Option<String>,
}

/// Makes a backend from a request.
pub type BackendResolver<'a> = &'a dyn Fn(&BackendRequest) -> Result<Box<dyn Backend>, String>;

pub const CONFORMANCE_USAGE: &str = "\
usage: cargo xtask conformance [options]

  --backend NAME          backend to test (default: cpu); `cargo xtask backends` lists them;
                          `process:COMMAND` runs any protocol server (docs/backend-protocol.md)
  --backend-config FILE   names for out-of-process backends (default: backends.yaml)
  --process-timeout SECS  longest wait for one reply from an out-of-process backend (default 10)
  --adapter TEXT          GPU backends: the adapter whose name, backend or driver contains TEXT
  --cases PATH            case file or folder; repeatable (default: the corpus, cases/)
  --filter TEXT           run cases whose name contains TEXT; repeatable
  --exact                 --filter must equal the case name
  --feature-level X_Y     run at this level (default: the level the backend claims)
  --strict-level          require rejection of what the level's tables do not support
  --expectations FILE     known failures (YAML); an unexpected pass fails the run
  --json FILE             write a JSON report
  --junit FILE            write a JUnit XML report
  --list                  list the selected cases and exit
  --verbose               print every case, with notes
";

#[derive(Debug, Default)]
pub struct ConformanceArgs {
    pub backend: Option<String>,
    pub backend_config: Option<PathBuf>,
    pub process_timeout: Option<Duration>,
    pub adapter: Option<String>,
    pub cases: Vec<PathBuf>,
    pub filters: Vec<String>,
    pub exact: bool,
    pub feature_level: Option<FeatureLevel>,
    pub strict_level: bool,
    pub expectations: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    pub list: bool,
    pub verbose: bool,
}

impl ConformanceArgs {
    pub fn parse(args: &[String]) -> Result<ConformanceArgs, String> {
        let mut parsed = ConformanceArgs::default();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let mut value = |name: &str| {
                iter.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match arg.as_str() {
                "--backend" => parsed.backend = Some(value("--backend")?),
                "--backend-config" => {
                    parsed.backend_config = Some(PathBuf::from(value("--backend-config")?))
                }
                "--process-timeout" => {
                    let text = value("--process-timeout")?;
                    let seconds: f64 = text
                        .parse()
                        .ok()
                        .filter(|s: &f64| s.is_finite() && *s > 0.0)
                        .ok_or_else(|| {
                            format!(
                                "--process-timeout: `{text}` is not a positive number of seconds"
                            )
                        })?;
                    parsed.process_timeout = Some(Duration::from_secs_f64(seconds));
                }
                "--cases" => parsed.cases.push(PathBuf::from(value("--cases")?)),
                "--filter" => parsed.filters.push(value("--filter")?),
                "--exact" => parsed.exact = true,
                "--feature-level" => {
                    let text = value("--feature-level")?;
                    parsed.feature_level = Some(FeatureLevel::parse(&text).ok_or_else(|| {
                        format!("--feature-level: unknown level `{text}` (e.g. 1_0, 3_0, 4_1)")
                    })?);
                }
                "--strict-level" => parsed.strict_level = true,
                "--expectations" => {
                    parsed.expectations = Some(PathBuf::from(value("--expectations")?))
                }
                "--json" => parsed.json = Some(PathBuf::from(value("--json")?)),
                "--junit" => parsed.junit = Some(PathBuf::from(value("--junit")?)),
                "--list" => parsed.list = true,
                "--verbose" | "-v" => parsed.verbose = true,
                other => return Err(format!("unknown option `{other}`")),
            }
        }
        Ok(parsed)
    }

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
pub fn conformance_main(args: &[String], resolve: BackendResolver<'_>) -> i32 {
    let args = match ConformanceArgs::parse(args) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("error: {e}\n\n{CONFORMANCE_USAGE}");
            return 2;
        }
    };
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
            println!(
                "{}  ({}:{}, {}, level {})",
                case.name,
                case.file,
                case.line,
                case.op.kind(),
                case.feature_level
            );
        }
        for error in &corpus.errors {
            println!("error: {error}");
        }
        return if corpus.errors.is_empty() { 0 } else { 1 };
    }
    let backend_name = args.backend.clone().unwrap_or_else(|| "cpu".to_string());
    let request = BackendRequest {
        name: backend_name.clone(),
        feature_level: args.feature_level,
        process_timeout: args.process_timeout,
        backend_config: args.backend_config.clone(),
        adapter: args.adapter.clone(),
    };
    let backend = match resolve(&request) {
        Ok(backend) => backend,
        Err(e) => {
            eprintln!("error: --backend {backend_name}: {e}");
            return 2;
        }
    };
    let expectations = match &args.expectations {
        Some(path) => match Expectations::load(path) {
            Ok(e) => Some(e),
            Err(e) => {
                eprintln!("error: --expectations: {e}");
                return 2;
            }
        },
        None => None,
    };
    let options = RunOptions {
        feature_level: args.feature_level,
        strict_level: args.strict_level,
        replay_hint: None,
    };
    let level = args
        .feature_level
        .unwrap_or_else(|| backend.feature_level());
    let info = RunInfo {
        backend: backend.name(),
        device: backend.device(),
        feature_level: level.to_string(),
        strict_level: args.strict_level,
    };
    println!(
        "dmlcts conformance: backend {} ({}), feature level {level}{}, {} cases",
        info.backend,
        if info.device.is_empty() {
            "no device description"
        } else {
            &info.device
        },
        if args.strict_level { " (strict)" } else { "" },
        cases.len()
    );

    let started = Instant::now();
    let mut results: Vec<CaseResult> = corpus.errors.iter().map(load_error_result).collect();
    for result in &results {
        println!("{}", result.failure_report());
    }
    let mut progress = Progress::new(cases.len());
    let mut skip_check = SkipCheck::default();
    for case in &cases {
        let result = run_case(backend.as_ref(), case, &options);
        let skipped = (result.status == Status::Skipped).then_some(result.reason.as_str());
        skip_check.record(backend.as_ref(), case, &options, skipped);
        if result.status == Status::Failed {
            progress.clear();
            println!("{}", result.failure_report());
        } else if args.verbose {
            progress.clear();
            println!(
                "{} {}  {}",
                result.status.name(),
                result.name,
                result.reason
            );
            for note in &result.notes {
                println!("    note: {note}");
            }
        }
        progress.update(&result);
        results.push(result);
    }
    progress.clear();
    let elapsed = started.elapsed();

    if let Some(expectations) = &expectations {
        let stale = expectations.apply(&info.backend, &info.device, &mut results);
        for result in results.iter().filter(|r| r.reason == "unexpected pass") {
            println!("{}", result.failure_report());
        }
        for case in stale {
            println!("note: the expectations file names `{case}`, which did not run");
        }
    }
    print_skip_reasons(&results);
    let summary = Summary::of(&results);
    if summary.expected_failures > 0 {
        println!(
            "{} expected failures (listed in the expectations file)",
            summary.expected_failures
        );
    }
    println!("ran in {:.3} s", elapsed.as_secs_f64());
    let mut status = if summary.failed == 0 { 0 } else { 1 };
    if let Some(failure) = skip_check.failure(&info.backend) {
        println!("error: {failure}");
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
            eprintln!("error: cannot write {}: {e}", path.display());
            status = 2;
        }
    }
    println!("{}", summary.line());
    status
}

fn write_report(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
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
    println!("skipped, by reason:");
    for (reason, count) in sorted.iter().take(12) {
        println!("  {count:5}  {reason}");
    }
    if sorted.len() > 12 {
        println!("  ... and {} more reasons (see --json)", sorted.len() - 12);
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
