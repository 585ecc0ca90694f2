//! `matrix`: the corpus on every backend this machine can run (or those named), one column
//! each, through the same path as `conformance` (a `Session` per column, its reporter saying
//! which backend runs); writes the harness's matrix as JSON and as a static HTML page.

use crate::backends::{BackendRequest, Resolved, Resolver, known, resolve};
use crate::conformance::{nothing_selected, selects};
use crate::error::{CommandError, CommandResult, Verdict};
use crate::out::{ColorChoice, count};
use crate::reporters::failure_text;
use crate::{Host, parse_feature_level};
use clap::Args;
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::report::matrix::{Matrix, MatrixColumn};
use dmlcts_harness::run::replay::dmlcts_env;
use dmlcts_harness::session::{Event, Reporter, SessionOptions};
use dmlcts_harness::text::{Block, Line};
use dmlcts_harness::{
    Case, CaseResult, Corpus, LoadError, ReplayRecipe, Status, load_error_results, shell_word,
};
use dmlcts_tensor::FeatureLevel;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[derive(Clone, Debug, Args)]
pub struct MatrixArgs {
    /// A backend for a column; repeatable [default: every backend `backends` lists (each
    /// DirectML version set up here, not plain `directml`; not `process:COMMAND`)]
    #[arg(long = "backend", value_name = "NAME")]
    pub backends: Vec<String>,
    /// Leave this backend out of the default columns; repeatable; a name that is not one of
    /// them is an error (exit status 2), so a renamed backend cannot slip back in unnoticed
    #[arg(
        long = "skip-backend",
        value_name = "NAME",
        conflicts_with = "backends"
    )]
    pub skip_backends: Vec<String>,
    /// Names for out-of-process backends [default: backends.yaml]
    #[arg(long, value_name = "FILE")]
    pub backend_config: Option<PathBuf>,
    /// Longest wait for one reply from an out-of-process backend [default: 10, or the
    /// backends file's]
    #[arg(long, value_name = "SECS", value_parser = crate::parse_seconds)]
    pub process_timeout: Option<std::time::Duration>,
    /// GPU backends: the adapter whose name, backend or driver contains TEXT
    #[arg(long, value_name = "TEXT")]
    pub adapter: Option<String>,
    /// Case file or folder; repeatable [default: the corpus, embedded]
    #[arg(long = "cases", value_name = "PATH")]
    pub cases: Vec<PathBuf>,
    /// Run the cases whose name contains TEXT; repeatable; one that selects nothing is an
    /// error (exit status 2)
    #[arg(long = "filter", value_name = "TEXT")]
    pub filters: Vec<String>,
    /// Pin one level for every backend [default: each case at its own level]
    #[arg(long, value_name = "X_Y", value_parser = parse_feature_level)]
    pub feature_level: Option<FeatureLevel>,
    /// Each backend's known failures: DIR/NAME.yaml where present, NAME being the backend's
    /// name before any `@` (directml@1.15.4 takes directml.yaml) [default: expectations,
    /// beside the backends file]
    #[arg(long, value_name = "DIR")]
    pub expectations_dir: Option<PathBuf>,
    /// Use no expectations files
    #[arg(long, conflicts_with = "expectations_dir")]
    pub no_expectations: bool,
    /// Fail when a backend listed by default cannot run here (CI: every backend must)
    #[arg(long)]
    pub require_all: bool,
    /// Fail unless every available column checked these assertions (as conformance's
    /// --require-coverage: ids, `PREFIX*`, `all`)
    #[arg(long, value_name = "RULES|all", value_delimiter = ',')]
    pub require_coverage: Vec<String>,
    /// Columns run at once. The columns of one backend (the name before `@`: each DirectML
    /// version, each driver of a code generator) share a lane and run one after another: they
    /// share its resources (a Wine prefix; a module cache the later ones reuse). With more
    /// than one, a column's times include the others' load
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// Where matrix.json and matrix.html go
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub out: PathBuf,
    /// Colour the text: auto (on a terminal, unless NO_COLOR is set), always, never
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// A column to make: a `--backend` name, and whether the user named it (a named backend that
/// cannot run fails the matrix; one found by default is a column saying why).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted {
    pub name: String,
    pub named: bool,
    /// Known not to be runnable before trying (e.g. no DirectML version set up): why.
    pub unavailable: Option<String>,
}

/// The default columns: every name `backends` lists, with each DirectML version set up here in
/// place of the DirectML names (or one `directml` column saying none is); a backends file
/// that does not load is an error.
pub fn default_backends(host: &Host, config: Option<&Path>) -> Result<Vec<Wanted>, String> {
    let set_up = (host.directml_ready)();
    let mut wanted = Vec::new();
    for (name, _) in known(host, config)? {
        if name.starts_with("process:") || name.starts_with("directml") {
            continue;
        }
        wanted.push(Wanted {
            name: name.clone(),
            named: false,
            unavailable: None,
        });
        if name == "wgpu" {
            if set_up.is_empty() {
                wanted.push(Wanted {
                    name: "directml".to_string(),
                    named: false,
                    unavailable: Some(
                        "no DirectML version is set up here (`cargo xtask directml setup \
                         VERSION` in a dmlcts checkout prepares one)"
                            .to_string(),
                    ),
                });
            }
            wanted.extend(set_up.iter().map(|name| Wanted {
                name: name.clone(),
                named: false,
                unavailable: None,
            }));
        }
    }
    Ok(wanted)
}

/// The columns, before anything else (the default ones come from the backends file, and named
/// ones may: a file that does not load is an error either way).
fn wanted_backends(args: &MatrixArgs, host: &Host) -> Result<Vec<Wanted>, CommandError> {
    let config = args.backend_config.as_deref();
    let wanted = if args.backends.is_empty() {
        let defaults = default_backends(host, config).map_err(CommandError::Input)?;
        return skip_backends(defaults, &args.skip_backends);
    } else {
        known(host, config).map(|_| {
            (args.backends.iter())
                .map(|name| Wanted {
                    name: name.clone(),
                    named: true,
                    unavailable: None,
                })
                .collect()
        })
    };
    wanted.map_err(CommandError::Input)
}

/// The default columns without those `--skip-backend` names; a name that is not a default
/// column is a usage error.
fn skip_backends(defaults: Vec<Wanted>, skipped: &[String]) -> Result<Vec<Wanted>, CommandError> {
    if let Some(unknown) = (skipped.iter()).find(|name| !defaults.iter().any(|w| &w.name == *name))
    {
        return Err(CommandError::Usage(format!(
            "--skip-backend {}: not one of the default columns ({})",
            Line(unknown),
            defaults
                .iter()
                .map(|w| Line(&w.name).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(defaults
        .into_iter()
        .filter(|w| !skipped.contains(&w.name))
        .collect())
}

/// Why `--filter` selects nothing from `corpus` (exit status 2), when it does not.
fn selection_error(args: &MatrixArgs, corpus: &Corpus) -> Option<String> {
    let selected = (corpus.cases.iter())
        .filter(|c| selects(&args.filters, false, c))
        .count();
    if selected > 0 || (args.filters.is_empty() && !corpus.errors.is_empty()) {
        return None;
    }
    let from = if args.cases.is_empty() {
        "the embedded corpus"
    } else {
        "--cases"
    };
    Some(nothing_selected(
        &args.filters,
        false,
        corpus.cases.len(),
        from,
    ))
}

/// Runs the matrix command.
pub fn matrix_main(args: &MatrixArgs, host: &Host) -> CommandResult {
    crate::out::set_color(args.color);
    let wanted = wanted_backends(args, host)?;
    let corpus = if args.cases.is_empty() {
        Corpus::embedded()
    } else {
        Corpus::load_paths(&args.cases)
    };
    crate::preflight::print_skipped(&corpus);
    // A command line that selects nothing leaves nothing behind (no --out folder).
    if let Some(error) = selection_error(args, &corpus) {
        return Err(CommandError::Usage(error));
    }
    let (json, html) = (args.out.join("matrix.json"), args.out.join("matrix.html"));
    let inputs: Vec<(&str, &Path)> = (args.cases.iter())
        .map(|c| ("--cases", c.as_path()))
        .chain((args.expectations_dir.iter()).map(|e| ("--expectations-dir", e.as_path())))
        .chain((args.backend_config.iter()).map(|b| ("--backend-config", b.as_path())))
        .collect();
    crate::preflight::check_distinct(&[("--out", &json), ("--out", &html)], &inputs)?;
    crate::preflight::check_report_folder("--out", &args.out)?;
    crate::preflight::check_report_files(&[("--out", Some(&json)), ("--out", Some(&html))])?;
    let expectations_dir = match (&args.expectations_dir, args.no_expectations) {
        (_, true) => None,
        (Some(dir), false) => Some(dir.clone()),
        (None, false) => Some(
            args.backend_config
                .as_deref()
                .unwrap_or(&host.default_backends_file)
                .parent()
                .map(|p| p.join("expectations"))
                .unwrap_or_else(|| PathBuf::from("expectations")),
        ),
    };
    let command = std::iter::once(format!("{} matrix", host.program))
        .chain(
            std::env::args()
                .skip_while(|a| a != "matrix")
                .skip(1)
                .map(|w| shell_word(&w)),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let (matrix, verdict) = matrix_with(
        args,
        &command,
        host.program,
        &|request| resolve(host, request),
        &wanted,
        corpus,
        expectations_dir.as_deref(),
    )?;
    let mut unwritten = Vec::new();
    for (file, text) in [
        ("matrix.json", matrix.to_json()),
        ("matrix.html", matrix.to_html()),
    ] {
        let path = args.out.join(file);
        let written = dmlcts_harness::report::write::write_report(&path, text.as_bytes());
        match written {
            Ok(()) => crate::say!("wrote {}", path.display()),
            Err(e) => unwritten.push(format!("cannot write {}: {e}", path.display())),
        }
    }
    if !unwritten.is_empty() {
        return Err(CommandError::Output(unwritten.join("\nerror: ")));
    }
    Ok(verdict)
}

/// The matrix over `corpus` (filtered by `--filter`) with a column for each wanted backend,
/// made by `resolve` (tests pass their own); `program` starts the replay commands. Returns
/// the matrix and its verdict (failed when a cell or a column's own check failed, or a named
/// backend, or with `--require-all` any, could not run), or an error when `--filter` selects
/// nothing. Each column's totals are what `conformance` says for that backend.
pub fn matrix_with(
    args: &MatrixArgs,
    command: &str,
    program: &str,
    resolve: Resolver<'_>,
    wanted: &[Wanted],
    corpus: Corpus,
    expectations_dir: Option<&Path>,
) -> Result<(Matrix, Verdict), CommandError> {
    let suite = crate::suite::suite(&corpus.digest);
    if let Some(error) = selection_error(args, &corpus) {
        return Err(CommandError::Usage(error));
    }
    crate::conformance::check_floor_names(&args.require_coverage)?;
    let cases: Vec<Case> = (corpus.cases.into_iter())
        .filter(|c| selects(&args.filters, false, c))
        .collect();
    let load_error_rows: Vec<CaseResult> = load_error_results(&corpus.errors);
    crate::say!(
        "dmlcts matrix: {} on {}: {}",
        count(cases.len(), "case", "cases"),
        count(wanted.len(), "backend", "backends"),
        wanted
            .iter()
            .map(|w| Line(&w.name).to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    crate::say!("suite: {}, {}", suite.name(), suite.corpus());
    let mut matrix = Matrix::new(command, suite, &load_error_rows, &cases);
    let columns = Columns {
        args,
        program,
        resolve,
        cases,
        load_errors: corpus.errors,
        expectations_dir,
    };
    let mut status = 0;
    columns.run_all(wanted, usize::from(args.jobs), |i, outcome| {
        if record(&mut matrix, &wanted[i], outcome) {
            status = 1;
        }
    });
    if matrix.failed() {
        status = 1;
    }
    for column in &matrix.columns {
        if let Some(coverage) = &column.coverage {
            let who = format!("{}: ", Line(&column.backend));
            if crate::conformance::below_coverage_floor(coverage, &args.require_coverage, &who) {
                status = 1;
            }
        }
    }
    for (i, column) in matrix.columns.iter().enumerate() {
        crate::say!(
            "  {:18} {}",
            Line(&column.backend),
            match &column.unavailable {
                Some(reason) => format!("not available: {}", Block(reason)),
                None => matrix.totals(i).line(),
            }
        );
    }
    Ok((matrix, Verdict::failed_if(status != 0)))
}

/// What every column of one matrix is made with.
struct Columns<'a> {
    args: &'a MatrixArgs,
    program: &'a str,
    resolve: Resolver<'a>,
    cases: Vec<Case>,
    /// The corpus's load errors, failed results in every column.
    load_errors: Vec<LoadError>,
    expectations_dir: Option<&'a Path>,
}

/// A column's backend, made and ready to run, and its expectations file.
struct Ready {
    resolved: Resolved,
    resolve_time: Duration,
    expectations: Option<Expectations>,
    expectations_file: Option<PathBuf>,
}

impl Columns<'_> {
    /// A column's replay commands: `conformance` with this backend and every option of the
    /// matrix that shaped its run, its expectations file, `--cases` for files the user gave.
    fn replay_recipe(
        &self,
        program: &str,
        backend: &str,
        expectations: Option<&Path>,
    ) -> ReplayRecipe {
        let args = self.args;
        let mut options = Vec::new();
        if let Some(config) = &args.backend_config {
            options.extend(["--backend-config".to_string(), config.display().to_string()]);
        }
        if let Some(timeout) = args.process_timeout {
            options.extend([
                "--process-timeout".to_string(),
                timeout.as_secs_f64().to_string(),
            ]);
        }
        if let Some(adapter) = &args.adapter {
            options.extend(["--adapter".to_string(), adapter.clone()]);
        }
        if let Some(level) = args.feature_level {
            options.extend(["--feature-level".to_string(), level.to_string()]);
        }
        if let Some(file) = expectations {
            options.extend(["--expectations".to_string(), shown_path(file)]);
        }
        ReplayRecipe::Conformance {
            program: program.split_whitespace().map(str::to_string).collect(),
            backend: backend.to_string(),
            options,
            cases_from_files: !args.cases.is_empty(),
            env: dmlcts_env(),
        }
    }

    /// Runs the columns, `jobs` lanes at a time, and hands each column's outcome to `record`
    /// in `wanted`'s order as soon as it and every column before it are done. With one job
    /// the columns run in `wanted`'s order; with more, the columns of one backend share a
    /// lane (`lanes`).
    fn run_all(
        &self,
        wanted: &[Wanted],
        jobs: usize,
        mut record: impl FnMut(usize, ColumnOutcome),
    ) {
        let lanes: Vec<Vec<usize>> = if jobs <= 1 {
            (0..wanted.len()).map(|i| vec![i]).collect()
        } else {
            lanes(wanted)
        };
        let next_lane = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            let (sender, receiver) = mpsc::channel();
            for _ in 0..jobs.clamp(1, lanes.len().max(1)) {
                let (sender, next_lane, lanes) = (sender.clone(), &next_lane, &lanes);
                scope.spawn(move || {
                    while let Some(lane) = lanes.get(next_lane.fetch_add(1, Ordering::Relaxed)) {
                        for &i in lane {
                            if sender.send((i, self.outcome(&wanted[i]))).is_err() {
                                return;
                            }
                        }
                    }
                });
            }
            drop(sender);
            let mut done: BTreeMap<usize, ColumnOutcome> = BTreeMap::new();
            let mut recorded = 0;
            for (i, outcome) in receiver {
                done.insert(i, outcome);
                while let Some(outcome) = done.remove(&recorded) {
                    record(recorded, outcome);
                    recorded += 1;
                }
            }
        });
    }

    /// `want`'s column: its backend's results, or why it is not available and whether that
    /// fails the matrix (an expectations file that does not load; a named backend, or with
    /// `--require-all` any, that cannot run).
    fn outcome(&self, want: &Wanted) -> ColumnOutcome {
        let args = self.args;
        let mut column = MatrixColumn {
            backend: want.name.clone(),
            implementation: want.name.clone(),
            profile: "strict".to_string(),
            ..MatrixColumn::default()
        };
        if let Some(reason) = &want.unavailable {
            let fails = want.named || args.require_all;
            return ColumnOutcome::Unavailable(column, reason.clone(), fails);
        }
        match self.start(want, &mut column) {
            Ok(ready) => self.run(want, column, ready),
            Err((reason, fails)) => ColumnOutcome::Unavailable(column, reason, fails),
        }
    }

    /// Loads the column's expectations file and makes its backend (filling in its
    /// implementation and device). Err: why it cannot run, and whether that fails the matrix.
    fn start(&self, want: &Wanted, column: &mut MatrixColumn) -> Result<Ready, (String, bool)> {
        let args = self.args;
        let expectations_file = self
            .expectations_dir
            .map(|dir| dir.join(format!("{}.yaml", base_name(&want.name))))
            .filter(|path| path.is_file());
        let expectations = match expectations_file.as_deref().map(Expectations::load) {
            None => None,
            Some(Ok(e)) => Some(e),
            Some(Err(e)) => return Err((format!("its expectations file: {e}"), true)),
        };
        let request = BackendRequest {
            name: want.name.clone(),
            feature_level: args.feature_level,
            process_timeout: args.process_timeout,
            backend_config: args.backend_config.clone(),
            adapter: args.adapter.clone(),
            directml_dll: None,
        };
        let starting = Instant::now();
        let resolved = match (self.resolve)(&request) {
            Ok(resolved) => resolved,
            Err(e) => return Err((e, want.named || args.require_all)),
        };
        let resolve_time = starting.elapsed();
        let backend = resolved.backend.clone();
        column.implementation = backend.name();
        column.device = backend.device();
        let not_ready = resolved
            .not_ready
            .clone()
            .or_else(|| backend.unavailable_reason());
        if let Some(reason) = not_ready {
            return Err((reason, want.named || args.require_all));
        }
        Ok(Ready {
            resolved,
            resolve_time,
            expectations,
            expectations_file,
        })
    }

    /// Runs the cases on the column's backend (its expectations file applied as each case
    /// finishes) with the column's reporter, which adds it to the matrix.
    fn run(&self, want: &Wanted, column: MatrixColumn, ready: Ready) -> ColumnOutcome {
        let program = self.program;
        let Ready {
            resolved,
            resolve_time,
            expectations,
            expectations_file,
        } = ready;
        let recipe = self.replay_recipe(program, &want.name, expectations_file.as_deref());
        let mut session = resolved.session(SessionOptions {
            feature_level: self.args.feature_level,
            strict_level: false,
            expectations,
            not_enforced: Vec::new(),
            replay: Some(recipe),
        });
        session.info_mut().startup = resolve_time;
        let mut reporter = ColumnReporter {
            column: Some(column),
            finished: None,
            name: &want.name,
            expectations_file: expectations_file.as_deref(),
        };
        session.run(&self.cases, &self.load_errors, &mut reporter);
        match (reporter.finished, reporter.column) {
            (Some((column, results)), _) => ColumnOutcome::Ran(column, results),
            (None, column) => ColumnOutcome::Unavailable(
                column.unwrap_or_default(),
                "its run ended without a report".to_string(),
                true,
            ),
        }
    }
}

/// What one column's run came to, before it joins the matrix.
enum ColumnOutcome {
    /// It ran: the column filled in, and its results.
    Ran(MatrixColumn, Vec<CaseResult>),
    /// It could not run: why, and whether that fails the matrix.
    Unavailable(MatrixColumn, String, bool),
}

/// The lanes of `wanted`'s columns, in the order of each lane's first column: the columns of
/// one backend (the name before `@`) share one, in their order.
fn lanes(wanted: &[Wanted]) -> Vec<Vec<usize>> {
    let mut lanes: Vec<Vec<usize>> = Vec::new();
    let mut lane_of: HashMap<&str, usize> = HashMap::new();
    for (i, want) in wanted.iter().enumerate() {
        let lane = *lane_of.entry(base_name(&want.name)).or_insert_with(|| {
            lanes.push(Vec::new());
            lanes.len() - 1
        });
        lanes[lane].push(i);
    }
    lanes
}

/// Adds a column's outcome to the matrix, saying its first failures and totals, or why it
/// could not run. Returns whether that fails the matrix.
fn record(matrix: &mut Matrix, want: &Wanted, outcome: ColumnOutcome) -> bool {
    match outcome {
        ColumnOutcome::Ran(column, results) => {
            print_failures(&want.name, &results, &column.problems);
            let (startup, cases_time) = (column.startup, column.cases_time);
            let coverage = column.coverage.as_ref().map(|c| c.line());
            matrix.add_column(column, &results);
            let totals = matrix.totals(matrix.columns.len() - 1);
            crate::say!(
                "{}: {} (start-up {:.2} s, cases {:.2} s)",
                Line(&want.name),
                totals.line(),
                startup.as_secs_f64(),
                cases_time.as_secs_f64()
            );
            if let Some(coverage) = coverage {
                crate::say!("{}: {}", Line(&want.name), Line(&coverage));
            }
            false
        }
        ColumnOutcome::Unavailable(column, reason, fails) => {
            crate::say!(
                "{}: not available: {}",
                Line(&column.backend),
                Block(&reason)
            );
            matrix.add_unavailable(column, &reason);
            fails
        }
    }
}

/// A matrix column as a reporter: says which backend runs, on what device, as its run starts;
/// when it finishes, fills in the column (its level, profile, times, stale expectations, the
/// run's own failure) and keeps it with the results, for `record` to add to the matrix.
struct ColumnReporter<'m> {
    /// Taken when the run finishes.
    column: Option<MatrixColumn>,
    /// The column filled in, and the run's results.
    finished: Option<(MatrixColumn, Vec<CaseResult>)>,
    name: &'m str,
    expectations_file: Option<&'m Path>,
}

impl Reporter for ColumnReporter<'_> {
    fn event(&mut self, event: &Event<'_>) {
        match event {
            Event::RunStarted { info, .. } => {
                crate::say!("{}: running ({})", Line(self.name), Line(&info.device));
            }
            Event::RunFinished(report) => {
                let Some(mut column) = self.column.take() else {
                    return;
                };
                if let Some(file) = self.expectations_file {
                    column.notes.extend((report.stale.iter()).map(|case| {
                        format!("the expectations file names `{case}`, which did not run")
                    }));
                    column.expectations = Some(shown_path(file));
                }
                if let Some(failure) = &report.skipped_everything {
                    // The run's own failure is a result, as in `conformance`, so the column's
                    // totals are the same as its.
                    column.problems.push(failure.clone());
                }
                let info = &report.info;
                column.feature_level = info.feature_level.clone();
                column.profile = info.validation_profile.clone();
                column.startup = info.startup;
                column.cases_time = info.cases_time;
                column.coverage = info.coverage.clone();
                self.finished = Some((column, report.results.clone()));
            }
            Event::LoadError(_) | Event::CaseFinished { .. } => {}
        }
    }
}

/// A column's first three failures (the page lists them all) and its own problems.
fn print_failures(name: &str, results: &[CaseResult], problems: &[String]) {
    let failures: Vec<&CaseResult> = (results.iter())
        .filter(|r| r.status == Status::Failed)
        .collect();
    for result in failures.iter().take(3) {
        crate::say!("{}", failure_text(result));
    }
    if failures.len() > 3 {
        crate::say!(
            "... and {} more on {} (reports/matrix.html lists them all)",
            count(failures.len() - 3, "failure", "failures"),
            Line(name)
        );
    }
    for problem in problems {
        crate::say!("error: {}: {}", Line(name), Block(problem));
    }
}

/// A path as the user would type it: relative to the current folder, where it is inside.
fn shown_path(file: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|here| file.strip_prefix(here).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| file.to_path_buf())
        .display()
        .to_string()
}

/// The expectations file's name for a backend: `directml@1.15.4` -> `directml`.
pub fn base_name(backend: &str) -> &str {
    backend.split('@').next().unwrap_or(backend)
}

#[cfg(test)]
mod tests;
