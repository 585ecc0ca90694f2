//! libtest-mimic glue: every case becomes one named test, so `cargo test` and
//! `cargo nextest run` list, filter and run single cases.
//!
//! A backend author's crate needs one test target with `harness = false`:
//!
//! ```toml
//! [dev-dependencies]
//! dmlcts-harness = { git = "https://example.invalid/dmlcts", rev = "COMMIT" }
//!
//! [[test]]
//! name = "dmlcts"
//! harness = false
//! ```
//!
//! whose main hands a factory to [`libtest_main`] (a backend with one fixed level) or
//! [`libtest_main_at_each_level`] (one that validates as a device at the level it is made
//! for). Here with the oracle standing in for your backend:
//!
//! ```no_run
//! // tests/dmlcts.rs
//! use dmlcts_oracle::OracleBackend as MyBackend; // your backend
//!
//! fn main() {
//!     dmlcts_harness::libtest_main_at_each_level(|level| Box::new(MyBackend::new(level)));
//! }
//! ```
//!
//! `cargo test --test dmlcts` then runs the embedded corpus (nothing to download),
//! `-- --list` lists it and `-- doc.join` runs the cases whose names contain `doc.join`;
//! `DMLCTS_CASES=path/to/cases` adds your own case files or folders. The run fails when a case
//! fails, and when the backend is available but skipped every case (a run that tests nothing).
//!
//! Copy the workspace's `[profile.dev.package.dmlcts-*] opt-level = 3` settings into your own
//! workspace's root Cargo.toml: the harness, the oracle and the tensor crate do the
//! per-element work, and unoptimized the corpus takes about twice as long. The
//! `examples/rust-backend` crate of the dmlcts repository is a complete backend with this
//! target, an in-process campaign (`dmlcts_fuzz::run_campaign`) and those settings.
//!
//! A failing case prints the command that reruns it in that crate: `cargo test -p PACKAGE
//! --test TARGET -- NAME --exact` (the package from `CARGO_PKG_NAME`, which cargo and nextest
//! set when they run a test binary; the target from the binary's name), with the `DMLCTS_*`
//! settings of the run; the test binary itself where cargo did not start it.

use crate::corpus::Corpus;
use crate::run::load_error_result;
use crate::run::{ReplayRecipe, Status};
use crate::session::{Session, SessionOptions};
use dmlcts_tensor::{Backend, FeatureLevel};
use libtest_mimic::{Arguments, Completion, Conclusion, Failed, Trial};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Runs the embedded corpus (plus the files or folders in `DMLCTS_CASES`, separated by
/// the platform's path separator) as libtest tests, and exits.
///
/// `make_backend(level)` is asked for a backend at each case's own level. A backend that
/// can emulate that level (its `feature_level()` equals it) is held strictly to it, so the
/// feature-level table cases run too; a backend with one fixed level runs every case at
/// that level, exactly as `cargo xtask conformance` would.
pub fn libtest_main(make_backend: impl Fn(FeatureLevel) -> Box<dyn Backend>) -> ! {
    exit_with(libtest_run(&Arguments::from_args(), &make_backend))
}

/// As `libtest_main`, for a backend that can act as a device at every level (as the CPU
/// backend and the oracle can): the device made for a case's level must report that level,
/// or the case fails naming both. A factory that ignored the level it was asked for would
/// otherwise run the table cases of lower levels at its own level, where accepting what the
/// lower level's tables do not list is allowed, and nothing would show it.
pub fn libtest_main_at_each_level(make_backend: impl Fn(FeatureLevel) -> Box<dyn Backend>) -> ! {
    exit_with(libtest_run_at_each_level(
        &Arguments::from_args(),
        &make_backend,
    ))
}

/// The libtest entry point's exit: the one place outside a binary's `main` that ends the
/// process (a libtest target's `main` hands its whole run here), with libtest's statuses.
fn exit_with(result: Result<(), String>) -> ! {
    match result {
        Ok(()) => std::process::exit(0),
        Err(message) => {
            eprintln!("error: {message}");
            std::process::exit(101)
        }
    }
}

/// Runs the corpus as libtest tests, as `libtest_main` does with `args`. An error when a test
/// failed, and when the backend is available but skipped every selected case within its
/// level (e.g. it claims no data type): a run that tests nothing must not pass.
pub fn libtest_run(
    args: &Arguments,
    make_backend: &dyn Fn(FeatureLevel) -> Box<dyn Backend>,
) -> Result<(), String> {
    run_trials(args, make_backend, Levels::AsMade)
}

/// Runs the corpus as `libtest_main_at_each_level` does with `args`.
pub fn libtest_run_at_each_level(
    args: &Arguments,
    make_backend: &dyn Fn(FeatureLevel) -> Box<dyn Backend>,
) -> Result<(), String> {
    run_trials(args, make_backend, Levels::Exact)
}

/// How the devices a factory makes relate to the levels asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Levels {
    /// A device may exist at its own level only; it runs every case there.
    AsMade,
    /// Every device must be at the level asked for.
    Exact,
}

fn run_trials(
    args: &Arguments,
    make_backend: &dyn Fn(FeatureLevel) -> Box<dyn Backend>,
    levels: Levels,
) -> Result<(), String> {
    let (trials, session) = trials_and_session(make_backend, args, levels);
    let backend_name = session.as_ref().map(|s| s.info().backend.clone());
    if !args.list && backend_name.as_deref() == Some("") {
        return Err(
            "the backend's name() is empty: reports, expectations files and findings name a backend by it"
                .to_string(),
        );
    }
    let conclusion: Conclusion = libtest_mimic::run(args, trials);
    if conclusion.has_failed() {
        return Err(format!("{} test(s) failed", conclusion.num_failed));
    }
    match session.and_then(|s| s.skipped_everything()) {
        Some(failure) if !args.list => Err(failure),
        _ => Ok(()),
    }
}

/// The trials `libtest_main` runs (exposed for tests of the glue itself).
pub fn corpus_trials(make_backend: &dyn Fn(FeatureLevel) -> Box<dyn Backend>) -> Vec<Trial> {
    trials_and_session(make_backend, &Arguments::default(), Levels::AsMade).0
}

/// The trials, each running its case through the session's step, and the session (None
/// when no case is selected), which counts what the backend skips among those `args`
/// selects.
fn trials_and_session(
    make_backend: &dyn Fn(FeatureLevel) -> Box<dyn Backend>,
    args: &Arguments,
    levels: Levels,
) -> (Vec<Trial>, Option<Arc<Session<'static>>>) {
    let mut corpus = Corpus::embedded();
    if let Some(extra) = std::env::var_os("DMLCTS_CASES") {
        let paths: Vec<_> = std::env::split_paths(&extra).collect();
        let more = Corpus::load_paths(&paths);
        corpus.cases.extend(more.cases);
        corpus.errors.extend(more.errors);
        corpus.digest.extend(&more.digest);
    }
    let mut trials = Vec::new();
    for error in &corpus.errors {
        let result = load_error_result(error);
        let report = result.failure_report();
        trials.push(Trial::test(
            format!("load_error::{}", crate::text::line(&result.name)),
            move || Err(Failed::from(report)),
        ));
    }
    // A device per level the cases ask for, made before the trials run (they run on threads
    // of their own, and the factory is the caller's).
    let mut made: BTreeMap<FeatureLevel, Arc<dyn Backend>> = BTreeMap::new();
    for case in &corpus.cases {
        made.entry(case.feature_level)
            .or_insert_with(|| Arc::from(make_backend(case.feature_level)));
    }
    let Some(first) = made.values().next().cloned() else {
        return (trials, None);
    };
    let factory_devices = made.clone();
    let session = Arc::new(Session::new(
        first,
        Some(Box::new(move |level| factory_devices[&level].clone())),
        SessionOptions {
            replay: Some(ReplayRecipe::libtest(None)),
            ..SessionOptions::default()
        },
    ));
    let mut selected_any = false;
    for mut case in corpus.cases {
        // libtest prints a test's name as it is: a case file's control characters escaped
        // (the same name in the replay command, so that `--exact` finds it).
        case.name = crate::text::line(&case.name).into_owned();
        let kind = case.op.kind().name();
        let name = case.name.clone();
        let made_at = made[&case.feature_level].feature_level();
        if levels == Levels::Exact && made_at != case.feature_level {
            let message = format!(
                "the backend made for level {} reports level {made_at}: this target runs \
                 every case on a device at the case's own level",
                case.feature_level
            );
            trials.push(Trial::test(name, move || Err(Failed::from(message))).with_kind(kind));
            continue;
        }
        let skip = session.skip_reason(&case);
        let trial = Trial::ignorable_test(name, {
            let session = session.clone();
            let case = case.clone();
            move || {
                let result = session.step(&case);
                match result.status {
                    Status::Passed | Status::ExpectedFailure | Status::Informational => {
                        Ok(Completion::Completed)
                    }
                    Status::Failed => Err(Failed::from(result.failure_report())),
                    // A skip found only at run time (the backend's compile said Unsupported)
                    // is ignored with its reason, as a skip known in advance is: never a pass.
                    Status::Skipped => Ok(Completion::ignored_with(format!(
                        "skipped at run time: {}",
                        result.reason
                    ))),
                }
            }
        })
        .with_kind(kind)
        .with_ignored_flag(skip.is_some());
        if !args.is_filtered_out(&trial) {
            selected_any = true;
            // An ignored trial does not run (unless asked to): its skip counts now.
            if let Some(reason) = &skip
                && !args.ignored
                && !args.include_ignored
            {
                session.count_skip(&case, reason);
            }
        }
        trials.push(trial);
    }
    (trials, selected_any.then_some(session))
}
