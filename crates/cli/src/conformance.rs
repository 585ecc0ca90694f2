//! `conformance`: options, the run's header, progress and failures, and its end (closing
//! lines, reports, exit status) around the harness's runner.

use crate::backends::{BackendRequest, Resolved, Resolver, resolve};
use crate::closing::{
    is_stdout, print_failed_list, print_informational, print_levels, print_skip_reasons,
    summary_line, write_reports,
};
use crate::out::{ColorChoice, Paint, count, paint};
use crate::progress::Progress;
use crate::{Host, parse_feature_level, parse_seconds};
use clap::Args;
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::report::{RunInfo, Summary};
use dmlcts_harness::run::replay::dmlcts_env;
use dmlcts_harness::text::{Block, Line};
use dmlcts_harness::{
    Case, CaseResult, Corpus, Devices, ReplayRecipe, ResultIds, SkipCheck, Status, case_id,
    load_error_results, run_case,
};
use dmlcts_tensor::{FeatureLevel, ValidationProfile};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Options shared by every command that runs a backend.
#[derive(Clone, Debug, Args)]
pub struct BackendOptions {
    /// Backend to test; the `backends` command lists them
    ///
    /// cpu, oracle, wgpu, directml (the newest pinned DirectML.dll), directml@VERSION,
    /// cpu-process, tract (tract-core in process), process:COMMAND (any server speaking the
    /// backend protocol, which `dmlcts protocol` prints; started with `sh -c COMMAND`), or a
    /// name from the backends file. directml needs a dmlcts checkout: its `cargo xtask directml setup` prepares the
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

impl BackendOptions {
    /// The words of the options given that shape a run, for replay commands.
    pub fn replay_words(&self) -> Vec<String> {
        let mut words = Vec::new();
        if let Some(config) = &self.backend_config {
            words.extend(["--backend-config".to_string(), config.display().to_string()]);
        }
        if let Some(timeout) = self.process_timeout {
            words.extend([
                "--process-timeout".to_string(),
                timeout.as_secs_f64().to_string(),
            ]);
        }
        if let Some(adapter) = &self.adapter {
            words.extend(["--adapter".to_string(), adapter.clone()]);
        }
        words
    }
}

#[derive(Clone, Debug, Args)]
pub struct ConformanceArgs {
    #[command(flatten)]
    pub backend: BackendOptions,
    /// Case file or folder; repeatable [default: the corpus, embedded]
    #[arg(long = "cases", value_name = "PATH")]
    pub cases: Vec<PathBuf>,
    /// Run the cases whose name contains TEXT; repeatable; one that selects nothing is an
    /// error (exit status 2)
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
    /// Write a JSON report; `-`: to stdout, alone (the human text goes to stderr)
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write a JUnit XML report; `-`: to stdout, alone (the human text goes to stderr)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// List the selected cases, and how many, and exit
    #[arg(long)]
    pub list: bool,
    /// Print every case with the level it ran at, and its notes
    #[arg(long, short)]
    pub verbose: bool,
    /// Colour the text: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

impl ConformanceArgs {
    fn selects(&self, case: &Case) -> bool {
        selects(&self.filters, self.exact, case)
    }

    /// The recipe of this run's replay commands: `program` (`dmlcts`, `cargo xtask`), the
    /// backend as `--backend` named it, every option that shaped the run, `--cases` only for
    /// files the user gave, and the `DMLCTS_*` settings.
    pub fn replay_recipe(&self, program: &str) -> ReplayRecipe {
        let mut options = self.backend.replay_words();
        if let Some(level) = self.feature_level {
            options.extend(["--feature-level".to_string(), level.to_string()]);
        }
        if self.strict_level {
            options.push("--strict-level".to_string());
        }
        if let Some(file) = &self.expectations {
            options.extend(["--expectations".to_string(), file.display().to_string()]);
        }
        ReplayRecipe::Conformance {
            program: program.split_whitespace().map(str::to_string).collect(),
            backend: self.backend.backend.clone(),
            options,
            cases_from_files: !self.cases.is_empty(),
            env: dmlcts_env(),
        }
    }
}

/// Whether `--filter` (each a substring, or with `--exact` the whole name) selects `case`.
pub fn selects(filters: &[String], exact: bool, case: &Case) -> bool {
    filters.is_empty()
        || filters.iter().any(|f| {
            if exact {
                case.name == *f
            } else {
                case.name.contains(f.as_str())
            }
        })
}

/// The error for a selection of no case (exit status 2): what was looked for, and where.
pub fn nothing_selected(filters: &[String], exact: bool, loaded: usize, from: &str) -> String {
    let looked_for = if filters.is_empty() {
        "no case to run".to_string()
    } else {
        let filters: Vec<String> = filters.iter().map(|f| format!("`{}`", Line(f))).collect();
        format!(
            "no case name {} {}",
            if exact { "equals" } else { "contains" },
            filters.join(" or ")
        )
    };
    format!(
        "{looked_for} among the {} of {from}",
        count(loaded, "case", "cases")
    )
}

/// The corpus `--cases` names, or the embedded one; and where it came from, in words.
pub fn load_corpus(paths: &[PathBuf]) -> (Corpus, String) {
    if paths.is_empty() {
        (Corpus::embedded(), "the embedded corpus".to_string())
    } else {
        let named: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        (
            Corpus::load_paths(paths),
            format!("--cases {}", Line(&named.join(", "))),
        )
    }
}

/// Runs the conformance command; returns the process exit status (0 iff nothing failed).
pub fn conformance_main(args: &ConformanceArgs, host: &Host) -> i32 {
    conformance_with(args, host.program, &|request| resolve(host, request))
}

/// The conformance command with a backend made by `resolve` (tests pass their own).
/// `host_program` starts the replay commands (`cargo xtask`, `dmlcts`). Exit status: 0
/// when nothing failed, 1 when a case (or the run's own check) failed, 2 when the run could
/// not be made (a filter selecting nothing, a backend that cannot start, a file that cannot
/// be read or written).
pub fn conformance_with(args: &ConformanceArgs, host_program: &str, resolve: Resolver<'_>) -> i32 {
    if let (Some(json), Some(junit)) = (&args.json, &args.junit)
        && is_stdout(json)
        && is_stdout(junit)
    {
        crate::say_err!("error: --json - and --junit - cannot both have stdout");
        return 2;
    }
    if args.json.as_deref().is_some_and(is_stdout) || args.junit.as_deref().is_some_and(is_stdout) {
        crate::out::human_text_to_stderr();
    }
    crate::out::set_color(args.color);
    let (corpus, from) = load_corpus(&args.cases);
    crate::preflight::print_skipped(&corpus);
    let loaded = corpus.cases.len();
    let suite = crate::suite::suite(&corpus.digest);
    let cases: Vec<Case> = corpus
        .cases
        .into_iter()
        .filter(|c| args.selects(c))
        .collect();
    if cases.is_empty() && (!args.filters.is_empty() || corpus.errors.is_empty()) {
        crate::say_err!(
            "error: {}",
            nothing_selected(&args.filters, args.exact, loaded, &from)
        );
        return 2;
    }
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
    if let Some(reason) = &resolved.not_ready {
        // One error, not a failure per case: nothing can run on a backend that did not start.
        crate::say_err!(
            "{} --backend {}: the backend cannot start: {}",
            paint(Paint::Red, "error:"),
            Line(&backend_name),
            Block(reason)
        );
        return 2;
    }
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
    run.info.suite = suite;
    print_header(&run, cases.len());

    let mut results = load_error_results(&corpus.errors);
    for result in &results {
        crate::say!("{}", failure_text(result));
    }
    let recipe = args.replay_recipe(host_program);
    let skip_check = run_cases(&mut run, &cases, args.verbose, &recipe, &mut results);
    let mut info = run.info;
    info.startup += resolve_time;

    if let Some(expectations) = &expectations {
        let stale = apply_expectations(expectations, &info, &recipe, &mut results);
        for result in results.iter().filter(|r| r.reason == "unexpected pass") {
            crate::say!("{}", failure_text(result));
        }
        for case in stale {
            crate::say!(
                "note: the expectations file names `{}`, which did not run",
                Line(&case)
            );
        }
    }
    if let Some(failure) = skip_check.failure(&info.backend) {
        results.push(skipped_everything(&info.backend, &failure));
    }
    summarize(args, &info, &results, cases.len())
}

/// Before the backend starts: the `--json` and `--junit` files can be written (exit status 2
/// if not), so a run never ends in "cannot write".
fn check_before_run(args: &ConformanceArgs) -> Result<(), i32> {
    crate::preflight::check_report_files(&[
        ("--json", args.json.as_deref()),
        ("--junit", args.junit.as_deref()),
    ])
}

/// The result that fails a run in which an available backend skipped every case it could
/// run: counted as a failure in the summary, the JSON and the JUnit report.
pub fn skipped_everything(backend: &str, failure: &str) -> CaseResult {
    CaseResult::run_failure(
        "skipped-everything",
        &format!("run: backend {backend} tested nothing"),
        "the backend skipped every case it could run",
        &format!("  {failure}\n"),
    )
}

/// A failure as printed: its report, `FAIL` coloured.
pub fn failure_text(result: &CaseResult) -> String {
    let report = result.failure_report();
    let report = report.trim_end();
    match report.strip_prefix("FAIL ") {
        Some(rest) => format!("{} {rest}\n", paint(Paint::Red, "FAIL")),
        None => format!("{report}\n"),
    }
}

/// `--list`: the selected cases, how many, then the corpus's load errors (exit status 1 if
/// any).
fn list_cases(cases: &[Case], errors: &[impl std::fmt::Display]) -> i32 {
    for case in cases {
        crate::say!(
            "{}  ({}:{}, {}, level {})",
            Line(&case.name),
            Line(&case.file),
            case.line,
            case.op.kind(),
            case.feature_level
        );
    }
    for error in errors {
        crate::say!("error: {}", Line(&error.to_string()));
    }
    let mut total = count(cases.len(), "case", "cases");
    if !errors.is_empty() {
        total.push_str(&format!(
            ", {}",
            count(errors.len(), "load error", "load errors")
        ));
    }
    crate::say!("{total}");
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
            crate::say_err!(
                "{} --backend {}: {}",
                paint(Paint::Red, "error:"),
                Line(&backend_name),
                Block(&e)
            );
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
                crate::say_err!("error: --expectations: {}", Block(&e.to_string()));
                return Err(2);
            }
        },
        None => None,
    };
    Ok(expectations)
}

/// The first lines: the backend, its device, how levels are chosen, its profile, the cases;
/// then the suite, its commit and the corpus.
fn print_header(run: &PreparedRun, cases: usize) {
    let info = &run.info;
    crate::say!(
        "dmlcts conformance: backend {} ({}), {}{}, {}",
        Line(&info.backend),
        if info.device.is_empty() {
            "no device description".to_string()
        } else {
            Line(&info.device).to_string()
        },
        run.level_text,
        run.profile_text(),
        count(cases, "case", "cases")
    );
    crate::say!("suite: {}, {}", info.suite.name(), info.suite.corpus());
}

/// Runs the cases under a progress line, printing each failure as it comes (with `verbose`,
/// every case, with the level it ran at); their results go after those already in `results`.
fn run_cases(
    run: &mut PreparedRun,
    cases: &[Case],
    verbose: bool,
    recipe: &ReplayRecipe,
    results: &mut Vec<CaseResult>,
) -> SkipCheck {
    let mut progress = Progress::new(cases.len());
    let skip_check = run.run(cases, recipe, &mut |result| {
        if result.status == Status::Failed {
            progress.clear();
            crate::say!("{}", failure_text(result));
        } else if verbose {
            progress.clear();
            crate::say!("{}", verbose_line(result));
            if result.status == Status::Informational {
                crate::say!("{}", Block(result.details.trim_end()));
            }
            for note in &result.notes {
                crate::say!("    note: {}", Line(note));
            }
        }
        progress.update(result);
        results.push(result.clone());
    });
    progress.clear();
    skip_check
}

/// `--verbose`: `passed NAME (at 4_1)`, and `: REASON` where there is one.
pub fn verbose_line(result: &CaseResult) -> String {
    let mut line = format!("{} {}", result.status.name(), Line(&result.name));
    if let Some(level) = result.run_level {
        line.push_str(&format!(" (at {level})"));
    }
    if !result.reason.is_empty() {
        line.push_str(&format!(": {}", Line(&result.reason)));
    }
    line
}

/// The closing lines (skips and informational results by reason, expected failures, with
/// `--verbose` each level, the times, the failed cases), the reports and the summary line.
/// Returns the exit status: 1 when a case or the run's own check failed, 2 when a report was
/// not written.
fn summarize(args: &ConformanceArgs, info: &RunInfo, results: &[CaseResult], cases: usize) -> i32 {
    print_skip_reasons(results);
    print_informational(results);
    let summary = Summary::of(results);
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
    if args.verbose {
        print_levels(results);
    }
    crate::say!(
        "backend start-up {:.3} s; {} in {:.3} s",
        info.startup.as_secs_f64(),
        count(cases, "case ran", "cases ran"),
        info.cases_time.as_secs_f64()
    );
    print_failed_list(results);
    let mut status = if summary.failed == 0 { 0 } else { 1 };
    if !write_reports(args.json.as_ref(), args.junit.as_ref(), info, results) {
        status = 2;
    }
    crate::say!("{}", summary_line(&summary));
    status
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
    /// `on_result`; fills in the start-up (making devices) and case times. Failures' replay
    /// commands come from `recipe`; results get ids unique in the run (`ResultIds`).
    pub fn run(
        &mut self,
        cases: &[Case],
        recipe: &ReplayRecipe,
        on_result: &mut dyn FnMut(&CaseResult),
    ) -> SkipCheck {
        let started = Instant::now();
        let mut skip_check = SkipCheck::default();
        let mut ids = ResultIds::default();
        for case in cases {
            let (device, mut options) = self.devices.for_case(case);
            options.replay = Some(recipe.clone());
            options.not_enforced = self.not_enforced.clone();
            let mut result = run_case(device.as_ref(), case, &options);
            result.id = ids.unique(case_id(case));
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

/// Applies an expectations file to a run's results; an unexpected pass gets the run's replay
/// command (`recipe`, which names the expectations file). Returns the entries for this
/// backend naming no case that ran.
pub fn apply_expectations(
    expectations: &Expectations,
    info: &RunInfo,
    recipe: &ReplayRecipe,
    results: &mut [CaseResult],
) -> Vec<String> {
    let stale = expectations.apply(&info.backend, &info.device, results);
    for result in results.iter_mut() {
        if result.reason == "unexpected pass" && result.replay.is_none() {
            result.replay = Some(recipe.for_case(&result.name, &result.file));
        }
    }
    stale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unexpected_pass_gets_the_run_s_replay_command_with_its_expectations_file() {
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
        let args = <Words as clap::Parser>::parse_from([
            "conformance",
            "--backend",
            "directml@1.9.0",
            "--expectations",
            "expectations/directml.yaml",
            "--process-timeout",
            "90",
        ])
        .args;
        let mut recipe = args.replay_recipe("dmlcts");
        if let ReplayRecipe::Conformance { env, .. } = &mut recipe {
            env.clear();
        }
        let stale = apply_expectations(&expectations, &info, &recipe, &mut results);
        assert!(stale.is_empty());
        assert_eq!(results[0].status, Status::Failed);
        assert_eq!(results[0].reason, "unexpected pass");
        assert_eq!(
            results[0].replay.as_ref().map(|r| r.render()).as_deref(),
            Some(
                "dmlcts conformance --backend directml@1.9.0 --process-timeout 90 \
                 --expectations expectations/directml.yaml --filter doc.split.example1_axis2 --exact"
            )
        );
    }

    #[derive(clap::Parser)]
    struct Words {
        #[command(flatten)]
        args: ConformanceArgs,
    }

    #[test]
    fn the_replay_keeps_every_option_that_shaped_the_run_and_names_only_given_files() {
        let args = <Words as clap::Parser>::parse_from([
            "conformance",
            "--backend",
            "process:./my server",
            "--backend-config",
            "my backends.yaml",
            "--process-timeout",
            "2.5",
            "--adapter",
            "llvmpipe",
            "--feature-level",
            "3_0",
            "--strict-level",
            "--cases",
            "mine",
        ])
        .args;
        let ReplayRecipe::Conformance {
            program,
            options,
            cases_from_files,
            ..
        } = args.replay_recipe("cargo xtask")
        else {
            panic!("a conformance recipe");
        };
        assert_eq!(program, ["cargo", "xtask"]);
        assert_eq!(
            options,
            [
                "--backend-config",
                "my backends.yaml",
                "--process-timeout",
                "2.5",
                "--adapter",
                "llvmpipe",
                "--feature-level",
                "3_0",
                "--strict-level"
            ]
        );
        assert!(cases_from_files);
    }

    #[test]
    fn verbose_lines_name_the_level_and_end_without_spaces() {
        let case = Corpus::embedded().cases.remove(0);
        let oracle = dmlcts_oracle::OracleBackend::new(FeatureLevel::L4_1);
        let result = run_case(&oracle, &case, &Default::default());
        assert_eq!(
            verbose_line(&result),
            format!("passed {} (at 4_1)", case.name)
        );
    }
}
