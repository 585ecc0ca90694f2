//! Deliberately broken servers are each reported as the right kind of failure, the run
//! completes within its timeouts, no process of theirs outlives it, and the other cases still
//! pass.
// The tests that check the process table are Unix-only; on Windows their helpers are unused.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

mod common;

use common::{doc_cases, run_recording_pids};
use dmlcts_harness::report::Summary;
use dmlcts_harness::{Case, CaseResult, Corpus, RunOptions, Status, run_case};
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use std::time::Duration;

fn run(fault: &str, timeout: Duration) -> Vec<CaseResult> {
    let command = format!("{} {fault}", env!("CARGO_BIN_EXE_dmlcts-broken-server"));
    let mut options = ProcessOptions::new(&command);
    options.timeout = timeout;
    let backend = ProcessBackend::start(options).expect("the broken server says hello");
    let results = doc_cases()
        .iter()
        .map(|case| run_case(&backend, case, &RunOptions::default()))
        .collect::<Vec<_>>();
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

/// Two of the doc joins, each followed by two other doc cases: two hangs, fewer than the
/// `LOST_TIME_BUDGET` timeouts that would give the server up.
fn two_joins_apart() -> Vec<Case> {
    let (joins, others): (Vec<Case>, Vec<Case>) = doc_cases()
        .into_iter()
        .partition(|c| c.name.starts_with("doc.join."));
    assert_eq!((joins.len(), others.len()), (4, 4));
    joins
        .into_iter()
        .take(2)
        .zip(others.chunks(2))
        .flat_map(|(j, o)| [j, o[0].clone(), o[1].clone()])
        .collect()
}

#[test]
fn a_hang_times_out_and_the_run_goes_on() {
    let command = format!(
        "{} hang-on-join",
        env!("CARGO_BIN_EXE_dmlcts-broken-server")
    );
    let mut options = ProcessOptions::new(&command);
    options.timeout = Duration::from_millis(500);
    let backend = ProcessBackend::start(options).expect("the broken server says hello");
    let results = two_joins_apart()
        .iter()
        .map(|case| run_case(&backend, case, &RunOptions::default()))
        .collect::<Vec<_>>();
    assert_eq!(results.len(), 6, "the run completes");
    for r in &results {
        if r.name.starts_with("doc.join.") {
            assert_eq!(r.status, Status::Failed, "{}", r.name);
            assert_eq!(r.reason, "execution failed");
            assert!(
                r.details.contains("no reply within 0.5 s (hung?)"),
                "{}",
                r.details
            );
            assert!(
                r.details.contains("; it was killed by the harness;"),
                "{}",
                r.details
            );
            assert!(r.details.contains("| hanging on purpose"), "{}", r.details);
        } else {
            assert_eq!(r.status, Status::Passed, "{}", r.failure_report());
        }
    }
}

#[test]
fn three_timeouts_of_hangs_give_the_backend_up_and_the_rest_fail_at_once() {
    // The doc order: four joins, each hanging in execute, then slice1 and split twice each.
    let timeout = Duration::from_millis(500);
    let results = run("hang-on-join", timeout);
    assert!(results.iter().all(|r| r.status == Status::Failed));
    let hang = "no reply within 0.5 s (hung?); it was killed by the harness";
    for r in &results[..2] {
        assert!(r.details.contains(hang), "{}", r.details);
        assert!(!r.details.contains("given up"), "{}", r.details);
    }
    // The third hang spends the budget of three timeouts and is the last that waits: it and
    // every case after it say why.
    let given_up = format!(
        "their budget (3 x the 0.5 s timeout); every later case fails at once without it. The \
         last: backend process: {hang}"
    );
    for r in &results[2..] {
        assert!(
            r.details
                .contains("backend process: given up: its hangs took 1.5 s of the run, ")
                || r.details
                    .contains("backend process: given up: its hangs took 1.6 s of the run, "),
            "{}: {}",
            r.name,
            r.details
        );
        assert!(r.details.contains(&given_up), "{}: {}", r.name, r.details);
    }
    for r in &results[3..] {
        assert!(r.duration < timeout / 2, "{}: {:?}", r.name, r.duration);
    }
    assert_eq!(results[7].reason, "the backend failed");
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
fn a_command_that_does_not_exist_fails_every_case_with_the_reason() {
    let backend = ProcessBackend::start(ProcessOptions::new("/no/such/dmlcts-server"))
        .expect("sh itself starts");
    let error = backend.hello_error().expect("no hello").to_string();
    assert!(error.contains("during hello"), "{error}");
    assert!(error.contains("exited with status 127"), "{error}");
    let results = doc_cases()
        .iter()
        .map(|case| run_case(&backend, case, &RunOptions::default()))
        .collect::<Vec<_>>();
    for r in &results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        // The backend's words are quoted lines in the details, each line whole.
        assert!(
            error.lines().all(|line| r.details.contains(line)),
            "{}",
            r.details
        );
    }
}

/// A FLOAT32 Split of 1 MiB (`sizes: [2, 131072]`): its request is far larger than a pipe.
fn one_mebibyte_case() -> Case {
    let mut corpus = Corpus::default();
    corpus.add_text(
        "one-mebibyte.yaml",
        "cases:
  - name: split.one_mebibyte
    split:
      axis: 0
      input: {data_type: FLOAT32, sizes: [2, 131072]}
      outputs:
        - {data_type: FLOAT32, sizes: [1, 131072]}
        - {data_type: FLOAT32, sizes: [1, 131072]}
",
    );
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    corpus.cases.remove(0)
}

#[cfg(unix)]
#[test]
fn a_server_that_stops_reading_fails_the_case_within_the_timeout() {
    let cases = vec![one_mebibyte_case(), doc_cases().remove(0)];
    let run = run_recording_pids("stop-reading", &cases, Duration::from_secs(1));
    let big = &run.results[0];
    assert_eq!(big.status, Status::Failed);
    assert_eq!(big.reason, "execution failed");
    assert!(
        big.details.contains(
            "the request was not read within 1.0 s (the backend stopped reading its input?)"
        ),
        "{}",
        big.details
    );
    assert!(
        big.details.contains("| no longer reading, on purpose"),
        "{}",
        big.details
    );
    // A small request fits in the pipe; then the reply is what never comes.
    assert!(
        run.results[1]
            .details
            .contains("no reply within 1.0 s (hung?)"),
        "{}",
        run.results[1].details
    );
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 2 failed, 0 skipped"
    );
    // Two cases, each one write or one reply timeout of 1 s, plus start-up and clean-up.
    assert!(run.elapsed < Duration::from_secs(15), "{:?}", run.elapsed);
    assert_eq!(run.left_behind, Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn a_huge_stderr_line_is_cut_and_the_run_completes() {
    let cases: Vec<Case> = doc_cases().into_iter().take(2).collect();
    let run = run_recording_pids("stderr-flood", &cases, Duration::from_secs(10));
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert!(r.details.contains("exited with status 1"), "{}", r.details);
        assert!(
            r.details
                .contains("| broken server starting with fault `stderr-flood`"),
            "{}",
            r.details
        );
        // 300 MiB on one line: 2 KiB kept, the rest counted.
        let kept = format!("| {} [line cut: ", "x".repeat(2048));
        assert!(r.details.contains(&kept), "{}", &r.details[..500]);
        assert!(
            r.details.contains(&format!(
                "[line cut: {} more bytes not kept]",
                (300 << 20) - 2048
            )),
            "{}",
            &r.details[r.details.len().saturating_sub(500)..]
        );
        assert!(r.details.len() < 64 << 10, "{} bytes", r.details.len());
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 2 failed, 0 skipped"
    );
    assert!(run.elapsed < Duration::from_secs(60), "{:?}", run.elapsed);
    assert_eq!(run.left_behind, Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn a_server_that_forks_and_exits_leaves_no_process_behind() {
    let run = run_recording_pids("fork-and-exit", &doc_cases(), Duration::from_millis(500));
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert!(
            r.details
                .contains("no reply within 0.5 s (hung?); it exited with status 0"),
            "{}",
            r.details
        );
        assert!(
            r.details
                .contains("| exiting, with a child holding the pipes open"),
            "{}",
            r.details
        );
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 8 failed, 0 skipped"
    );
    assert!(run.elapsed < Duration::from_secs(30), "{:?}", run.elapsed);
    assert_eq!(run.left_behind, Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn a_hello_with_a_wrong_protocol_fails_every_case_with_the_reason() {
    let run = run_recording_pids(
        "hello-wrong-protocol",
        &doc_cases(),
        Duration::from_secs(10),
    );
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert_eq!(r.reason, "the backend failed");
        assert!(
            r.details.contains(
                "while compiling, the backend said:\n    | backend process: bad hello reply: \
                 protocol Some(999); this harness speaks 1; it was killed by the harness"
            ),
            "{}",
            r.details
        );
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 8 failed, 0 skipped"
    );
    assert!(run.elapsed < Duration::from_secs(15), "{:?}", run.elapsed);
    assert_eq!(run.left_behind, Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn a_hello_with_wrong_types_fails_every_case_with_the_reason() {
    let run = run_recording_pids("hello-wrong-types", &doc_cases(), Duration::from_secs(10));
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert!(
            r.details
                .contains("bad hello reply: \"feature_level\" must be a string, found 41"),
            "{}",
            r.details
        );
        assert!(
            r.details.contains("| answering hello wrongly on purpose"),
            "{}",
            r.details
        );
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 8 failed, 0 skipped"
    );
    assert!(run.elapsed < Duration::from_secs(15), "{:?}", run.elapsed);
    assert_eq!(run.left_behind, Vec::<String>::new());
}
