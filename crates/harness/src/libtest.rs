//! libtest-mimic glue: every case becomes one named test, so `cargo test` and
//! `cargo nextest run` list, filter and run single cases.
//!
//! A backend author's crate needs one test target with `harness = false` whose main is:
//!
//! ```ignore
//! fn main() {
//!     dmlcts_harness::libtest_main(|_level| Box::new(MyBackend::new()));
//! }
//! ```

use crate::case::Corpus;
use crate::devices::Devices;
use crate::report::load_error_result;
use crate::runner::{SkipCheck, Status, run_case, skip_reason};
use dmlcts_tensor::{Backend, FeatureLevel};
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::sync::{Arc, Mutex};

/// Runs the embedded corpus (plus the files or folders in `DMLCTS_CASES`, separated by
/// the platform's path separator) as libtest tests, and exits.
///
/// `make_backend(level)` is asked for a backend at each case's own level. A backend that
/// can emulate that level (its `feature_level()` equals it) is held strictly to it, so the
/// feature-level table cases run too; a backend with one fixed level runs every case at
/// that level, exactly as `cargo xtask conformance` would.
pub fn libtest_main(make_backend: impl Fn(FeatureLevel) -> Box<dyn Backend>) -> ! {
    let args = Arguments::from_args();
    match libtest_run(&args, &make_backend) {
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
    let (trials, check, backend_name) = trials_and_skip_check(make_backend, args);
    let conclusion = libtest_mimic::run(args, trials);
    if conclusion.has_failed() {
        return Err(format!("{} test(s) failed", conclusion.num_failed));
    }
    let failure = check
        .lock()
        .map_or(None, |check| check.failure(&backend_name));
    match failure {
        Some(failure) if !args.list => Err(failure),
        _ => Ok(()),
    }
}

/// The trials `libtest_main` runs (exposed for tests of the glue itself).
pub fn corpus_trials(make_backend: &dyn Fn(FeatureLevel) -> Box<dyn Backend>) -> Vec<Trial> {
    trials_and_skip_check(make_backend, &Arguments::default()).0
}

/// The trials, and what the backend skips among those `args` selects (the trials add the
/// skips they find at run time).
fn trials_and_skip_check(
    make_backend: &dyn Fn(FeatureLevel) -> Box<dyn Backend>,
    args: &Arguments,
) -> (Vec<Trial>, Arc<Mutex<SkipCheck>>, String) {
    let mut corpus = Corpus::embedded();
    if let Some(extra) = std::env::var_os("DMLCTS_CASES") {
        let paths: Vec<_> = std::env::split_paths(&extra).collect();
        let more = Corpus::load_paths(&paths);
        corpus.cases.extend(more.cases);
        corpus.errors.extend(more.errors);
    }
    let mut devices = Devices::per_case(Box::new(|level| Arc::from(make_backend(level))), false);
    let mut trials = Vec::new();
    let check = Arc::new(Mutex::new(SkipCheck::default()));
    let mut backend_name = String::new();
    for error in &corpus.errors {
        let result = load_error_result(error);
        let report = result.failure_report();
        trials.push(Trial::test(
            format!("load_error::{}", result.name),
            move || Err(Failed::from(report)),
        ));
    }
    for case in corpus.cases {
        let (backend, options) = devices.for_case(&case);
        let kind = case.op.kind().name();
        let name = case.name.clone();
        let skip = skip_reason(backend.as_ref(), &case, &options);
        let recorded = (case.clone(), options.clone(), skip.clone());
        let trial = Trial::ignorable_test(name, {
            let backend = backend.clone();
            let check = check.clone();
            move || {
                let result = run_case(backend.as_ref(), &case, &options);
                match result.status {
                    Status::Passed | Status::ExpectedFailure | Status::Informational => {
                        Ok(Completion::Completed)
                    }
                    Status::Failed => Err(Failed::from(result.failure_report())),
                    // A skip found only at run time (the backend's compile said Unsupported)
                    // is ignored with its reason, as a skip known in advance is: never a pass.
                    Status::Skipped => {
                        if let Ok(mut check) = check.lock() {
                            check.skipped_at_run_time(&result.reason);
                        }
                        Ok(Completion::ignored_with(format!(
                            "skipped at run time: {}",
                            result.reason
                        )))
                    }
                }
            }
        })
        .with_kind(kind)
        .with_ignored_flag(skip.is_some());
        if !args.is_filtered_out(&trial) {
            let (case, options, skip) = recorded;
            if let Ok(mut check) = check.lock() {
                check.record(backend.as_ref(), &case, &options, skip.as_deref());
            }
            if backend_name.is_empty() {
                backend_name = backend.name();
            }
        }
        trials.push(trial);
    }
    (trials, check, backend_name)
}
