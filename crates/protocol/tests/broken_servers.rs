//! Deliberately broken servers are each reported as the right kind of failure, the run
//! completes, and the other cases still pass.

use dmlcts_harness::{Case, CaseResult, Corpus, RunOptions, Status, run_cases};
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use std::time::Duration;

fn doc_cases() -> Vec<Case> {
    Corpus::embedded()
        .cases
        .into_iter()
        .filter(|c| c.name.starts_with("doc."))
        .collect()
}

fn run(fault: &str, timeout: Duration) -> Vec<CaseResult> {
    let command = format!("{} {fault}", env!("CARGO_BIN_EXE_dmlcts-broken-server"));
    let mut options = ProcessOptions::new(&command);
    options.timeout = timeout;
    let backend = ProcessBackend::start(options).expect("the broken server says hello");
    let results = run_cases(&backend, &doc_cases(), &RunOptions::default(), |_, _, _| {});
    assert_eq!(results.len(), 8, "the run completes");
    results
}

fn failures(results: &[CaseResult]) -> Vec<&CaseResult> {
    results
        .iter()
        .filter(|r| r.status == Status::Failed)
        .collect()
}

#[test]
fn a_crash_on_the_third_case_fails_that_case_and_a_fresh_child_serves_the_rest() {
    let results = run("crash-on-3", Duration::from_secs(10));
    let failed = failures(&results);
    // Compile #3 of each child crashes: the third case, then (with a fresh child counting
    // from 1 again) the sixth.
    let names: Vec<&str> = failed.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        vec![results[2].name.as_str(), results[5].name.as_str()]
    );
    let report = failed[0].failure_report();
    assert!(report.contains("check: the backend failed"), "{report}");
    assert!(report.contains("exited with status 3"), "{report}");
    assert!(
        report.contains("| crashing on purpose at compile #3"),
        "{report}"
    );
    assert_eq!(
        results
            .iter()
            .filter(|r| r.status == Status::Passed)
            .count(),
        6
    );
}

#[cfg(unix)]
#[test]
fn a_signal_is_named() {
    let results = run("abort-on-3", Duration::from_secs(10));
    let report = failures(&results)[0].failure_report();
    assert!(report.contains("was killed by signal 6"), "{report}");
}

#[test]
fn a_hang_times_out_and_the_run_goes_on() {
    let results = run("hang-on-join", Duration::from_millis(500));
    for r in &results {
        if r.name.starts_with("doc.join.") {
            assert_eq!(r.status, Status::Failed, "{}", r.name);
            assert_eq!(r.reason, "execution failed");
            assert!(
                r.details.contains("no reply within 0.5 s (hung?)"),
                "{}",
                r.details
            );
            assert!(r.details.contains("killed by the harness"), "{}", r.details);
            assert!(r.details.contains("| hanging on purpose"), "{}", r.details);
        } else {
            assert_eq!(r.status, Status::Passed, "{}", r.failure_report());
        }
    }
}

#[test]
fn a_short_output_is_a_protocol_violation() {
    let results = run("short-output", Duration::from_secs(10));
    for r in &results {
        assert_eq!(r.status, Status::Failed);
        assert!(
            r.details
                .contains("protocol violation: output 0 came back with"),
            "{}",
            r.details
        );
    }
}

#[test]
fn garbage_is_a_protocol_violation_and_a_fresh_child_takes_over() {
    let results = run("garbage", Duration::from_secs(10));
    for r in &results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert!(
            r.details.contains("protocol violation: malformed frame"),
            "{}",
            r.details
        );
    }
}

#[test]
fn a_command_that_does_not_exist_is_a_clear_error() {
    let error = ProcessBackend::start(ProcessOptions::new("/no/such/dmlcts-server"))
        .err()
        .expect("no server");
    assert!(error.contains("during hello"), "{error}");
    assert!(error.contains("exited with status 127"), "{error}");
}
