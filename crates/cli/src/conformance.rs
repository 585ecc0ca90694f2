//! `conformance`: options, the run's header, progress and failures, and its end (closing
//! lines, reports, exit status) around the harness's runner.

use crate::backends::{BackendRequest, Resolved, Resolver, resolve};
use crate::closing::is_stdout;
use crate::error::{CommandError, CommandResult, Verdict};
use crate::out::{ColorChoice, count};
use crate::reporters::{ReportFiles, Terminal};
use crate::{Host, parse_feature_level, parse_seconds};
use clap::Args;
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::run::replay::dmlcts_env;
use dmlcts_harness::session::SessionOptions;
use dmlcts_harness::text::Line;
use dmlcts_harness::{Case, Corpus, ReplayRecipe};
use dmlcts_tensor::FeatureLevel;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `--backend`'s long help: where `directml` comes from differs by system.
#[cfg(windows)]
const BACKEND_HELP: &str = "Backend to test; the `backends` command lists them\n\n\
cpu, oracle, wgpu, directml (real DirectML: the DirectML.dll beside dmlcts.exe, or \
--directml-dll PATH or $DMLCTS_DIRECTML_DLL, else the system's; run in a child dmlcts.exe on \
the adapter --adapter picks), cpu-process, tract (tract-core in process), process:COMMAND (any \
server speaking the backend protocol, which `dmlcts protocol` prints), or a name from the \
backends file.";
#[cfg(not(windows))]
const BACKEND_HELP: &str = "Backend to test; the `backends` command lists them\n\n\
cpu, oracle, wgpu, directml (the newest pinned DirectML.dll), directml@VERSION, cpu-process, \
tract (tract-core in process), process:COMMAND (any server speaking the backend protocol, \
which `dmlcts protocol` prints; started with `sh -c COMMAND`), or a name from the backends \
file. On Linux, directml runs under Wine from a dmlcts checkout: its `cargo xtask directml \
setup` prepares the stack, which the installed binary finds in ./target/directml-stack or in \
$DMLCTS_DIRECTML_STACK. On Windows, dmlcts.exe runs DirectML itself.";

/// Options shared by every command that runs a backend.
#[derive(Clone, Debug, Args)]
pub struct BackendOptions {
    #[arg(long, value_name = "NAME", default_value = "cpu", long_help = BACKEND_HELP)]
    pub backend: String,
    /// Names for out-of-process backends [default: backends.yaml]
    #[arg(long, value_name = "FILE")]
    pub backend_config: Option<PathBuf>,
    /// Longest wait for one reply from an out-of-process backend [default: 10]
    #[arg(long, value_name = "SECS", value_parser = parse_seconds)]
    pub process_timeout: Option<Duration>,
    /// GPU backends: the adapter whose name, backend or driver contains TEXT (DirectML on
    /// Windows: an index from `dmlcts adapters`, `warp`, or text in the adapter's name)
    #[arg(long, value_name = "TEXT")]
    pub adapter: Option<String>,
    /// DirectML on Windows: the DirectML.dll to load [default: $DMLCTS_DIRECTML_DLL, else the
    /// one beside dmlcts.exe, else the system's]
    #[arg(long, value_name = "PATH")]
    pub directml_dll: Option<PathBuf>,
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
        if let Some(dll) = &self.directml_dll {
            words.extend(["--directml-dll".to_string(), dll.display().to_string()]);
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
    /// Fail the run unless it checked these assertions (rule or execution-property ids,
    /// comma-separated; `PREFIX*` for a group, `all` for every one); repeatable
    #[arg(long, value_name = "RULES|all", value_delimiter = ',')]
    pub require_coverage: Vec<String>,
}

impl ConformanceArgs {
    /// The files and folders the run reads (`--cases`, `--expectations`, `--backend-config`),
    /// with their flags: no report may be written over one.
    fn inputs(&self) -> Vec<(&'static str, &Path)> {
        let cases = self.cases.iter().map(|c| ("--cases", c.as_path()));
        let expectations = self
            .expectations
            .iter()
            .map(|e| ("--expectations", e.as_path()));
        let backends =
            (self.backend.backend_config.iter()).map(|b| ("--backend-config", b.as_path()));
        cases.chain(expectations).chain(backends).collect()
    }

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

/// Runs the conformance command.
pub fn conformance_main(args: &ConformanceArgs, host: &Host) -> CommandResult {
    conformance_with(args, host.program, &|request| resolve(host, request))
}

/// The conformance command with a backend made by `resolve` (tests pass their own).
/// `host_program` starts the replay commands (`cargo xtask`, `dmlcts`). `Passed` when nothing
/// failed, `Failed` when a case (or the run's own check) failed, an error when the run could
/// not be made (a filter selecting nothing, a backend that cannot start, a file that cannot be
/// read or written).
pub fn conformance_with(
    args: &ConformanceArgs,
    host_program: &str,
    resolve: Resolver<'_>,
) -> CommandResult {
    if let (Some(json), Some(junit)) = (&args.json, &args.junit)
        && is_stdout(json)
        && is_stdout(junit)
    {
        return Err(CommandError::Usage(
            "--json - and --junit - cannot both have stdout".to_string(),
        ));
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
        return Err(CommandError::Usage(nothing_selected(
            &args.filters,
            args.exact,
            loaded,
            &from,
        )));
    }
    if args.list {
        return Ok(list_cases(&cases, &corpus.errors));
    }
    check_floor_names(&args.require_coverage)?;
    // Before the backend starts: the report files can be written, so a run never ends in
    // "cannot write".
    let reports: Vec<(&str, &Path)> = [("--json", &args.json), ("--junit", &args.junit)]
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path.as_deref()?)))
        .collect();
    crate::preflight::check_distinct(&reports, &args.inputs())?;
    crate::preflight::check_report_files(&[
        ("--json", args.json.as_deref()),
        ("--junit", args.junit.as_deref()),
    ])?;
    let (resolved, resolve_time) = resolve_backend(args, resolve)?;
    if let Some(reason) = &resolved.not_ready {
        // One error, not a failure per case: nothing can run on a backend that did not start.
        return Err(CommandError::Backend(format!(
            "--backend {}: the backend cannot start: {reason}",
            Line(&args.backend.backend)
        )));
    }
    let expectations = match &args.expectations {
        Some(path) => Some(
            Expectations::load(path)
                .map_err(|e| CommandError::Input(format!("--expectations: {e}")))?,
        ),
        None => None,
    };
    let recipe = args.replay_recipe(host_program);
    let mut session = resolved.session(SessionOptions {
        feature_level: args.feature_level,
        strict_level: args.strict_level,
        expectations,
        not_enforced: Vec::new(),
        replay: Some(recipe),
    });
    session.info_mut().suite = suite;
    session.info_mut().startup = resolve_time;
    let mut files = ReportFiles::new(args.json.clone(), args.junit.clone());
    let mut terminal = Terminal::new(args.verbose);
    // The report files are written before the terminal's closing lines, as the run ends.
    let report = session.run(&cases, &corpus.errors, &mut (&mut files, &mut terminal));
    files.result()?;
    let below_floor = report
        .info
        .coverage
        .as_ref()
        .is_some_and(|coverage| below_coverage_floor(coverage, &args.require_coverage, ""));
    Ok(Verdict::failed_if(report.summary.failed > 0 || below_floor))
}

/// `--require-coverage`: every word must name an assertion (an id, `PREFIX*`, `all`).
pub(crate) fn check_floor_names(wanted: &[String]) -> Result<(), CommandError> {
    let unknown = dmlcts_harness::report::coverage::unknown(wanted);
    if unknown.is_empty() {
        return Ok(());
    }
    let unknown: Vec<String> = unknown.iter().map(|w| format!("`{}`", Line(w))).collect();
    Err(CommandError::Usage(format!(
        "--require-coverage: not an assertion of specs/: {} (rule and execution-property ids are \
         listed in docs/guide/coverage.md)",
        unknown.join(", ")
    )))
}

/// Whether the run missed what `--require-coverage` asks for; prints what it missed, after
/// `who` (a matrix column's name and `: `, or nothing).
pub(crate) fn below_coverage_floor(
    coverage: &dmlcts_harness::report::coverage::Coverage,
    wanted: &[String],
    who: &str,
) -> bool {
    if wanted.is_empty() {
        return false;
    }
    let missed = coverage.missed(wanted);
    if missed.is_empty() {
        crate::say!(
            "{who}coverage floor met: every assertion --require-coverage names was checked"
        );
        return false;
    }
    let named: Vec<String> = missed
        .iter()
        .map(|(id, state)| format!("{id} ({})", state.name()))
        .collect();
    crate::say!(
        "{who}coverage floor not met: --require-coverage names {} this run did not check: {}",
        count(missed.len(), "assertion", "assertions"),
        named.join(", ")
    );
    true
}

/// `--list`: the selected cases, how many, then the corpus's load errors (exit status 1 if
/// any).
fn list_cases(cases: &[Case], errors: &[impl std::fmt::Display]) -> Verdict {
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
    Verdict::failed_if(!errors.is_empty())
}

/// Makes the backend `--backend` names, and times it (start-up).
fn resolve_backend(
    args: &ConformanceArgs,
    resolve: Resolver<'_>,
) -> Result<(Resolved, Duration), CommandError> {
    let backend_name = args.backend.backend.clone();
    let request = BackendRequest {
        name: backend_name.clone(),
        feature_level: args.feature_level,
        process_timeout: args.backend.process_timeout,
        backend_config: args.backend.backend_config.clone(),
        adapter: args.backend.adapter.clone(),
        directml_dll: args.backend.directml_dll.clone(),
    };
    let starting = Instant::now();
    let resolved = resolve(&request)
        .map_err(|e| CommandError::Backend(format!("--backend {}: {e}", Line(&backend_name))))?;
    Ok((resolved, starting.elapsed()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_harness::Session;

    #[test]
    fn an_unexpected_pass_gets_the_run_s_replay_command_with_its_expectations_file() {
        let expectations: Expectations = serde_yaml::from_str(
            "expected_failures:\n  - backend: oracle\n    case: doc.split.example1_axis2\n    reason: r\n",
        )
        .unwrap();
        let case = Corpus::embedded()
            .cases
            .into_iter()
            .find(|c| c.name == "doc.split.example1_axis2")
            .unwrap();
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
        let oracle = std::sync::Arc::new(dmlcts_oracle::OracleBackend::new(FeatureLevel::L4_1));
        let session = Session::new(
            oracle,
            None,
            SessionOptions {
                expectations: Some(expectations),
                replay: Some(recipe),
                ..SessionOptions::default()
            },
        );
        let report = session.run(std::slice::from_ref(&case), &[], &mut ());
        assert!(report.stale.is_empty());
        let result = &report.results[0];
        assert_eq!(result.status, dmlcts_harness::Status::Failed);
        assert_eq!(result.reason, "unexpected pass");
        assert_eq!(
            result.replay.as_ref().map(|r| r.render()).as_deref(),
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
        let oracle = std::sync::Arc::new(dmlcts_oracle::OracleBackend::new(FeatureLevel::L4_1));
        let result = Session::new(oracle, None, SessionOptions::default()).step(&case);
        assert_eq!(
            crate::reporters::verbose_line(&result),
            format!("passed {} (at 4_1)", case.name)
        );
    }
}
