//! Hostile backends, each run in a copy of this test binary held to 1 GiB of address space
//! (`prlimit --as=1073741824`): a run against each ends with its summary line and its report
//! files, within bounded time, with nothing it started left running. And a harness killed by
//! SIGKILL takes its server with it.
#![cfg(target_os = "linux")]

mod common;

use common::{Run, doc_cases, run_recording_pids, zombie_children};
use dmlcts_harness::report::{RunInfo, Summary, json_report, junit_report};
use dmlcts_harness::{Case, CaseResult, RunOptions, Status, run_case};
use dmlcts_protocol::bounds::MAX_TEXT_BYTES;
use dmlcts_protocol::{LOST_TIME_BUDGET, ProcessBackend, ProcessOptions};
use dmlcts_tensor::{Backend, CompileError, CompiledOperator, OperatorDesc};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The address space each hostile run gets: 1 GiB.
const ADDRESS_SPACE_BYTES: u64 = 1 << 30;
/// Set in the limited copy: the folder its reports go to.
const CHILD_OUT: &str = "DMLCTS_HOSTILE_OUT";
/// The longest a limited copy may run.
const CHILD_TIME: Duration = Duration::from_secs(300);

/// In the test itself: runs the test `name` again in a copy of this binary under `prlimit
/// --as=1073741824`, checks that it passed and ended with its summary line and its JSON and
/// JUnit reports, and returns None. In that copy: the folder for its reports.
fn in_limited_copy(name: &str) -> Option<PathBuf> {
    in_limited_copy_within(name, CHILD_TIME)
}

/// `in_limited_copy`, with the copy killed (and the test failed) after `limit`.
fn in_limited_copy_within(name: &str, limit: Duration) -> Option<PathBuf> {
    if let Some(out) = std::env::var_os(CHILD_OUT) {
        let limits = std::fs::read_to_string("/proc/self/limits").expect("limits");
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max address space"))
            .expect("an address-space line");
        assert!(
            line.contains(&ADDRESS_SPACE_BYTES.to_string()),
            "not limited: {line}"
        );
        return Some(PathBuf::from(out));
    }
    let out = std::env::temp_dir().join(format!(
        "dmlcts-hostile-server-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("a report folder");
    let stdout = std::fs::File::create(out.join("stdout.txt")).expect("stdout file");
    let stderr = std::fs::File::create(out.join("stderr.txt")).expect("stderr file");
    let exe = std::env::current_exe().expect("this test binary");
    let mut child = Command::new("prlimit")
        .arg(format!("--as={ADDRESS_SPACE_BYTES}"))
        .arg("--")
        .arg(exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD_OUT, &out)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("prlimit (util-linux) runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |file: &str| std::fs::read_to_string(out.join(file)).unwrap_or_default();
    let (stdout, stderr) = (read("stdout.txt"), read("stderr.txt"));
    let tail = |text: &str| text[text.len().saturating_sub(4000)..].to_string();
    assert!(
        status.success(),
        "{name} under 1 GiB: {status}\nstdout: {}\nstderr: {}",
        tail(&stdout),
        tail(&stderr)
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("summary: ")),
        "no summary line: {}",
        tail(&stdout)
    );
    let json: serde_json::Value =
        serde_json::from_str(&read("report.json")).expect("a JSON report");
    assert!(json["cases"].as_array().is_some_and(|c| !c.is_empty()));
    assert!(read("report.xml").contains("<testsuite"), "a JUnit report");
    let _ = std::fs::remove_dir_all(&out);
    None
}

/// Writes the run's reports to `out` and prints its summary line.
fn report(backend: &str, results: &[CaseResult], out: &Path) {
    let info = RunInfo {
        backend: backend.to_string(),
        ..RunInfo::default()
    };
    std::fs::write(out.join("report.json"), json_report(&info, results)).expect("JSON");
    std::fs::write(out.join("report.xml"), junit_report(&info, results)).expect("JUnit");
    println!("\nsummary: {}", Summary::of(results).line());
}

/// The broken server with `fault` on `cases`, its reports written to `out`.
fn hostile_run(fault: &str, cases: &[Case], timeout: Duration, out: &Path) -> Run {
    let run = run_recording_pids(fault, cases, timeout);
    report(&format!("broken-server {fault}"), &run.results, out);
    println!(
        "{} cases in {:.1} s",
        cases.len(),
        run.elapsed.as_secs_f64()
    );
    assert_eq!(run.results.len(), cases.len());
    assert_eq!(run.left_behind, Vec::<String>::new());
    run
}

/// The doc cases, `times` times over.
fn doc_cases_times(times: usize) -> Vec<Case> {
    let cases = doc_cases();
    (0..times).flat_map(|_| cases.clone()).collect()
}

/// "[... N more bytes not kept]" for a text of `total` bytes cut to `kept`.
fn cut_note(total: usize, kept: usize) -> String {
    format!("[... {} more bytes not kept]", total - kept)
}

#[test]
fn every_case_answered_with_a_15_mib_message_keeps_memory_bounded() {
    let Some(out) =
        in_limited_copy("every_case_answered_with_a_15_mib_message_keeps_memory_bounded")
    else {
        return;
    };
    // 56 cases: kept whole, their messages alone would be 880 MB, which with the test
    // program's own 280 MB is over the limit.
    let run = hostile_run(
        "huge-messages",
        &doc_cases_times(7),
        Duration::from_secs(30),
        &out,
    );
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert_eq!(r.reason, "the backend failed");
        let kept = format!(
            "the backend reported an error: {} {}",
            "m".repeat(MAX_TEXT_BYTES),
            cut_note(15 << 20, MAX_TEXT_BYTES)
        );
        assert!(r.details.contains(&kept), "{}", &r.details[..200]);
        assert!(r.details.len() < 2 * MAX_TEXT_BYTES, "{}", r.details.len());
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 56 failed, 0 skipped"
    );
}

#[test]
fn a_flood_of_unsolicited_frames_fails_the_process_not_the_run() {
    let Some(out) = in_limited_copy("a_flood_of_unsolicited_frames_fails_the_process_not_the_run")
    else {
        return;
    };
    let run = hostile_run("frame-flood", &doc_cases(), Duration::from_secs(10), &out);
    // The first frame answers the compile. The next is read either while no request waits
    // for a reply (a stray frame: the process is ended, its stderr kept) or after the execute
    // was sent (its wrong reply: the case fails and the process stays, per the protocol page).
    // Which depends on the scheduler; the stray frame's path is tested without a race in
    // process::child's unit tests.
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        let stray = r
            .details
            .contains("protocol violation: a frame that no request waits for: {\"id\":")
            && r.details.contains("| flooding frames, on purpose");
        let wrong_reply = r.details.contains("protocol violation: expected `")
            && r.details.contains("\"type\":\"accepted\"}");
        assert!(stray || wrong_reply, "{}", r.details);
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 8 failed, 0 skipped"
    );
}

#[test]
fn a_reply_declaring_a_2_gib_payload_is_refused_before_a_byte_is_read() {
    let Some(out) =
        in_limited_copy("a_reply_declaring_a_2_gib_payload_is_refused_before_a_byte_is_read")
    else {
        return;
    };
    let run = hostile_run("huge-payload", &doc_cases(), Duration::from_secs(10), &out);
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert_eq!(r.reason, "execution failed");
        assert!(
            r.details.contains(
                "protocol violation: a reply's payloads do not fit its request: \
                 payload 0 declared as 2147483648 bytes; at most "
            ),
            "{}",
            r.details
        );
        assert!(
            r.details
                .contains("| declaring a 2 GiB payload, on purpose"),
            "{}",
            r.details
        );
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 8 failed, 0 skipped"
    );
}

#[test]
fn a_server_that_hangs_after_hello_is_given_up_after_three_timeouts_of_hangs() {
    let Some(out) = in_limited_copy(
        "a_server_that_hangs_after_hello_is_given_up_after_three_timeouts_of_hangs",
    ) else {
        return;
    };
    let timeout = Duration::from_millis(500);
    let run = hostile_run("hang-after-hello", &doc_cases_times(3), timeout, &out);
    let stalls = LOST_TIME_BUDGET as usize;
    let own_hang = "backend process: no reply within 0.5 s (hung?); it was killed by the harness";
    for (i, r) in run.results.iter().enumerate() {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        if i < stalls - 1 {
            assert!(
                r.details.contains(&format!(
                    "while compiling, the backend said:\n    | {own_hang}"
                )),
                "{i}: {}",
                r.details
            );
        } else {
            assert!(
                r.details.contains(
                    "while compiling, the backend said:\n    | backend process: given up: its \
                     hangs took 1."
                ) && r.details.contains(&format!(
                    "their budget (3 x the 0.5 s timeout); every later case fails at once \
                     without it. The last: {own_hang}"
                )),
                "{i}: {}",
                r.details
            );
            assert!(
                r.details.contains("| hanging after hello, on purpose"),
                "{}",
                r.details
            );
        }
        // Past the third, no case waits for a reply.
        if i >= stalls {
            assert!(r.duration < timeout / 2, "{i}: {:?}", r.duration);
        }
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 24 failed, 0 skipped"
    );
}

#[test]
fn a_server_that_cannot_start_again_is_given_up_after_three_failed_starts() {
    let Some(out) =
        in_limited_copy("a_server_that_cannot_start_again_is_given_up_after_three_failed_starts")
    else {
        return;
    };
    let run = hostile_run("starts-once", &doc_cases(), Duration::from_secs(10), &out);
    let details: Vec<&str> = run.results.iter().map(|r| r.details.as_str()).collect();
    assert!(
        details[0].contains("exited with status 3"),
        "{}",
        details[0]
    );
    // The server exits at once: the harness either writes its hello into a closed pipe or
    // reads the closed output, whichever comes first; both are a failed start.
    let failed_start = "backend process: during hello: ";
    let exited = "it exited with status 1";
    for d in &details[1..3] {
        assert!(d.contains(failed_start) && d.contains(exited), "{d}");
        assert!(!d.contains("given up"), "{d}");
    }
    for d in &details[3..] {
        assert!(
            d.contains(&format!(
                "given up: 3 failed starts in a row; every later case fails at once without it. \
                 The last: {failed_start}"
            )) && d.contains(exited),
            "{d}"
        );
        assert!(d.contains("| refusing to start again, on purpose"), "{d}");
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 8 failed, 0 skipped"
    );
}

#[test]
fn a_setsid_double_fork_leaves_no_process_behind() {
    let Some(out) = in_limited_copy("a_setsid_double_fork_leaves_no_process_behind") else {
        return;
    };
    // hostile_run checks the process table: no server, escapee or lingering copy is left,
    // zombies included.
    let run = hostile_run("escape-setsid", &doc_cases(), Duration::from_secs(10), &out);
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert!(
            r.details
                .contains("closed its output; it exited with status 3"),
            "{}",
            r.details
        );
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 8 failed, 0 skipped"
    );
}

/// The longest a copy running one of the process-trick servers below may take: far more than
/// their bound (a few timeouts of 0.5 s and their budget), far less than forever.
const TRICK_TIME: Duration = Duration::from_secs(60);

#[test]
fn a_server_that_leaves_its_process_group_and_hangs_ends_with_nothing_left() {
    let name = "a_server_that_leaves_its_process_group_and_hangs_ends_with_nothing_left";
    let Some(out) = in_limited_copy_within(name, TRICK_TIME) else {
        return;
    };
    let run = hostile_run(
        "leave-group",
        &doc_cases(),
        Duration::from_millis(500),
        &out,
    );
    for r in &run.results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
    }
    assert!(
        run.results[0]
            .details
            .contains("no reply within 0.5 s (hung?); it was killed by the harness"),
        "{}",
        run.results[0].details
    );
    assert_no_zombie_children();
}

#[test]
fn a_server_in_another_group_that_ignores_shutdown_still_lets_the_run_end() {
    let name = "a_server_in_another_group_that_ignores_shutdown_still_lets_the_run_end";
    let Some(out) = in_limited_copy_within(name, TRICK_TIME) else {
        return;
    };
    let run = hostile_run(
        "ignore-shutdown",
        &doc_cases(),
        Duration::from_millis(500),
        &out,
    );
    assert_eq!(
        Summary::of(&run.results).line(),
        "8 passed, 0 failed, 0 skipped"
    );
    assert_no_zombie_children();
}

#[test]
fn orphans_that_setsid_and_exit_leave_no_zombie_of_the_harness() {
    let name = "orphans_that_setsid_and_exit_leave_no_zombie_of_the_harness";
    let Some(out) = in_limited_copy_within(name, TRICK_TIME) else {
        return;
    };
    // 25 orphans a compile, 8 compiles: none of them is left a zombie of this process.
    let run = hostile_run(
        "setsid-orphans",
        &doc_cases(),
        Duration::from_secs(10),
        &out,
    );
    assert_eq!(
        Summary::of(&run.results).line(),
        "8 passed, 0 failed, 0 skipped"
    );
    assert_no_zombie_children();
}

#[test]
fn a_fork_chain_that_keeps_the_tag_never_outlives_its_server() {
    let name = "a_fork_chain_that_keeps_the_tag_never_outlives_its_server";
    let Some(out) = in_limited_copy_within(name, TRICK_TIME) else {
        return;
    };
    // The chain forks every 20 ms; a run of 40 cases lasts long enough for it to be moving
    // when the server ends. Twelve runs: a race lost once fails the test.
    for _ in 0..12 {
        let run = hostile_run(
            "fork-chain",
            &doc_cases_times(5),
            Duration::from_secs(10),
            &out,
        );
        assert_eq!(
            Summary::of(&run.results).line(),
            "40 passed, 0 failed, 0 skipped"
        );
        assert_no_zombie_children();
    }
}

#[test]
fn a_server_that_answers_hello_late_and_dies_is_given_up_within_its_budget() {
    let name = "a_server_that_answers_hello_late_and_dies_is_given_up_within_its_budget";
    let Some(out) = in_limited_copy_within(name, TRICK_TIME) else {
        return;
    };
    // Each start takes 0.4 s of a 0.5 s start-up timeout; the restarts' budget is three
    // start-up timeouts (1.5 s): the fifth restart at the latest is the last.
    let run = hostile_run(
        "slow-hello-die",
        &doc_cases_times(4),
        Duration::from_millis(500),
        &out,
    );
    let given_up = "given up: its restarts and failed requests took";
    let first = run
        .results
        .iter()
        .position(|r| r.details.contains(given_up))
        .expect("given up");
    assert!(first <= 5, "given up only at case {first}");
    for r in &run.results[first..] {
        assert!(r.details.contains(given_up), "{}", r.details);
    }
    for r in &run.results[first + 1..] {
        assert!(r.duration < Duration::from_millis(250), "{:?}", r.duration);
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 32 failed, 0 skipped"
    );
}

#[test]
fn a_server_alternating_errors_and_hangs_is_given_up_after_three_timeouts_of_hangs() {
    let name = "a_server_alternating_errors_and_hangs_is_given_up_after_three_timeouts_of_hangs";
    let Some(out) = in_limited_copy_within(name, TRICK_TIME) else {
        return;
    };
    let run = hostile_run(
        "error-then-hang",
        &doc_cases_times(4),
        Duration::from_millis(500),
        &out,
    );
    // Case 0: an error; case 1: a hang; ... the third hang (case 5) spends the budget.
    let given_up = "given up: its hangs took";
    for (i, r) in run.results.iter().enumerate() {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert_eq!(r.details.contains(given_up), i >= 5, "{i}: {}", r.details);
    }
    assert_eq!(
        Summary::of(&run.results).line(),
        "0 passed, 32 failed, 0 skipped"
    );
}

/// Asserts that no process is left a zombie of this one: what the harness adopts is reaped as
/// it exits (within a scan of the thread that starts servers, 0.2 s apart).
// A server that names a program of its own `wineserver` (the one name the cgroup kill spares,
// for the Wine server every DirectML server of a prefix shares) does not outlive its server:
// only the system's own Wine server binary is spared.
#[test]
fn a_program_named_wineserver_that_is_not_the_system_s_does_not_outlive_its_server() {
    if dmlcts_protocol::containment() != dmlcts_protocol::Containment::Cgroup {
        return;
    }
    let dir = std::env::temp_dir().join(format!("dmlcts-fake-wineserver-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("pid");
    let command = format!(
        "cp /bin/sleep {dir}/wineserver && {{ {dir}/wineserver 600 & echo $! > {pid}; }} && \
         exec {server} hang-after-hello",
        dir = dir.display(),
        pid = pid_file.display(),
        server = env!("CARGO_BIN_EXE_dmlcts-broken-server"),
    );
    let mut options = ProcessOptions::new(&command);
    options.timeout = Duration::from_millis(300);
    options.startup_timeout = Duration::from_secs(5);
    let backend = ProcessBackend::start(options).expect("the server starts");
    let result = run_case(&backend, &doc_cases()[0], &RunOptions::default());
    assert_eq!(result.status, Status::Failed);
    drop(backend);
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.contains(") Z "));
    if alive {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!alive, "the fake wineserver {pid} outlived its server");
}

fn assert_no_zombie_children() {
    let until = Instant::now() + Duration::from_secs(2);
    while !zombie_children().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(zombie_children(), Vec::<String>::new());
}

/// This process's threads and open descriptors.
fn threads_and_descriptors() -> (usize, usize) {
    let count = |dir: &str| std::fs::read_dir(dir).expect(dir).count();
    (count("/proc/self/task"), count("/proc/self/fd"))
}

#[test]
fn an_escapee_holding_the_pipes_leaks_no_thread_or_descriptor() {
    let name = "an_escapee_holding_the_pipes_leaks_no_thread_or_descriptor";
    let Some(out) = in_limited_copy_within(name, TRICK_TIME) else {
        return;
    };
    // A first run starts the thread that starts servers, which lasts.
    hostile_run("garbage", &doc_cases(), Duration::from_secs(10), &out);
    let before = threads_and_descriptors();
    // 8 garbage replies, 8 restarts, 8 escapees holding stdin, stdout and stderr.
    let run = hostile_run(
        "escape-garbage",
        &doc_cases(),
        Duration::from_secs(10),
        &out,
    );
    for r in &run.results {
        assert!(r.details.contains("protocol violation"), "{}", r.details);
    }
    // A reader thread ends when its pipe closes or its server is buried: give the last
    // one a moment to be scheduled.
    let until = Instant::now() + Duration::from_secs(5);
    while threads_and_descriptors() != before && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(threads_and_descriptors(), before);
}

/// Seeds of the random hostile servers a test run tries.
const RANDOM_SEEDS: u64 = 12;

#[test]
fn random_hostile_servers_all_end_within_the_bound_with_true_summaries_and_nothing_left() {
    let name =
        "random_hostile_servers_all_end_within_the_bound_with_true_summaries_and_nothing_left";
    let Some(out) = in_limited_copy_within(name, CHILD_TIME) else {
        return;
    };
    let timeout = Duration::from_millis(300);
    // A first run starts the thread that starts servers, which lasts.
    hostile_run("garbage", &doc_cases(), timeout, &out);
    let before = threads_and_descriptors();
    // Each of the two requests of a case waits at most the write and reply timeouts, a burial
    // (0.2 s for the server to exit, 2 s for its processes) and a restart (its start-up
    // timeout and, failing, another burial).
    let per_request =
        2 * timeout + Duration::from_millis(2200) + timeout + Duration::from_millis(2200);
    for seed in 1..=RANDOM_SEEDS {
        let cases = doc_cases();
        let run = hostile_run(&format!("random {seed}"), &cases, timeout, &out);
        let bound = per_request * 2 * cases.len() as u32;
        assert!(
            run.elapsed <= bound,
            "seed {seed}: {:?}, over the bound {bound:?}",
            run.elapsed
        );
        // A true summary: each case passed only where the oracle's answer came back (the
        // server's correct replies are the oracle's), and the counts are the results'.
        let summary = Summary::of(&run.results);
        let passed = run
            .results
            .iter()
            .filter(|r| r.status == Status::Passed)
            .count();
        assert!(
            summary.line().starts_with(&format!("{passed} passed, ")),
            "seed {seed}: {}",
            summary.line()
        );
        for r in &run.results {
            if r.status != Status::Passed {
                assert!(
                    !r.details.is_empty(),
                    "seed {seed}: {} failed without a word",
                    r.name
                );
            }
        }
        println!(
            "seed {seed}: {} in {:.1} s",
            summary.line(),
            run.elapsed.as_secs_f64()
        );
        assert_no_zombie_children();
    }
    let until = Instant::now() + Duration::from_secs(5);
    while threads_and_descriptors() != before && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(threads_and_descriptors(), before);
}

/// An in-process backend whose every compile fails with 15 MiB of text.
struct Verbose;

impl Backend for Verbose {
    fn name(&self) -> String {
        "verbose".to_string()
    }

    fn feature_level(&self) -> dmlcts_tensor::FeatureLevel {
        dmlcts_tensor::FeatureLevel::L4_1
    }

    fn compile(&self, _: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        Err(CompileError::Failed("v".repeat(15 << 20)))
    }
}

#[test]
fn an_in_process_backend_s_15_mib_messages_are_cut_where_results_keep_them() {
    let Some(out) =
        in_limited_copy("an_in_process_backend_s_15_mib_messages_are_cut_where_results_keep_them")
    else {
        return;
    };
    let cases = doc_cases_times(10);
    let results = cases
        .iter()
        .map(|case| run_case(&Verbose, case, &RunOptions::default()))
        .collect::<Vec<_>>();
    report("verbose", &results, &out);
    let kept = dmlcts_harness::run::MAX_BACKEND_TEXT_BYTES;
    for r in &results {
        assert_eq!(r.status, Status::Failed, "{}", r.name);
        assert!(
            r.details.contains(&format!(
                "  while compiling, the backend said:\n    | {} {}\n",
                "v".repeat(kept),
                cut_note(15 << 20, kept)
            )),
            "{}",
            &r.details[..200]
        );
        assert!(r.details.len() < kept + 1024, "{}", r.details.len());
    }
    assert_eq!(
        Summary::of(&results).line(),
        "0 passed, 80 failed, 0 skipped"
    );
}

/// Set in the harness that the parent-death test kills: the pids file of its server.
const VICTIM_PIDS: &str = "DMLCTS_VICTIM_PIDS";

#[test]
fn a_harness_killed_by_sigkill_takes_its_server_with_it() {
    let name = "a_harness_killed_by_sigkill_takes_its_server_with_it";
    if let Some(pids_file) = std::env::var_os(VICTIM_PIDS) {
        // The harness to be killed: a server that, after its hello, never reads again (so it
        // would not notice its stdin closing), then wait to be killed.
        let command = format!(
            "{} hang-after-hello {}",
            env!("CARGO_BIN_EXE_dmlcts-broken-server"),
            Path::new(&pids_file).display()
        );
        let backend = ProcessBackend::start(ProcessOptions::new(&command)).expect("a server");
        assert_eq!(backend.hello_error(), None);
        println!("ready");
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    let pids_file = std::env::temp_dir().join(format!("dmlcts-victim-{}.pids", std::process::id()));
    let _ = std::fs::remove_file(&pids_file);
    let mut harness = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(VICTIM_PIDS, &pids_file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the harness starts");
    let mut stdout = std::io::BufReader::new(harness.stdout.take().expect("piped"));
    let mut line = String::new();
    while !line.trim_end().ends_with("ready") {
        line.clear();
        let n = std::io::BufRead::read_line(&mut stdout, &mut line).expect("its output");
        assert!(n > 0, "the harness ended before its server was ready");
    }
    let server: u32 = std::fs::read_to_string(&pids_file)
        .expect("the server recorded its pid")
        .trim()
        .parse()
        .expect("a pid");
    assert!(alive(server), "the server runs");
    harness.kill().expect("SIGKILL");
    let _ = harness.wait();
    let until = Instant::now() + Duration::from_secs(10);
    while alive(server) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&pids_file);
    assert!(!alive(server), "server {server} outlived its harness");
}

/// Whether a process is running (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Set in the harness that the cgroup test kills: the pids file of its server.
const CGROUP_VICTIM_PIDS: &str = "DMLCTS_CGROUP_VICTIM_PIDS";
/// Set in the harness started after it: start one server, and end.
const NEXT_HARNESS: &str = "DMLCTS_NEXT_HARNESS";

#[test]
fn what_the_server_of_a_harness_killed_by_sigkill_started_is_ended_by_the_next_harness() {
    let name =
        "what_the_server_of_a_harness_killed_by_sigkill_started_is_ended_by_the_next_harness";
    let server = env!("CARGO_BIN_EXE_dmlcts-broken-server");
    if let Some(pids_file) = std::env::var_os(CGROUP_VICTIM_PIDS) {
        // `ignore-shutdown` starts a lingering copy of itself at once, in another group.
        let command = format!(
            "{server} ignore-shutdown {}",
            Path::new(&pids_file).display()
        );
        let backend = ProcessBackend::start(ProcessOptions::new(&command)).expect("a server");
        assert_eq!(backend.hello_error(), None);
        println!("ready");
        std::thread::sleep(Duration::from_secs(120));
        return;
    }
    if std::env::var_os(NEXT_HARNESS).is_some() {
        let backend = ProcessBackend::start(ProcessOptions::new(&format!("{server} none")))
            .expect("a server");
        assert_eq!(backend.hello_error(), None);
        return;
    }
    if dmlcts_protocol::containment() != dmlcts_protocol::Containment::Cgroup {
        eprintln!("skipped: no cgroup v2 here; the fallback cannot find what a dead harness left");
        return;
    }
    let pids_file =
        std::env::temp_dir().join(format!("dmlcts-cgroup-victim-{}.pids", std::process::id()));
    let _ = std::fs::remove_file(&pids_file);
    let exe = std::env::current_exe().expect("this test binary");
    let mut harness = Command::new(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CGROUP_VICTIM_PIDS, &pids_file)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the harness starts");
    let mut stdout = std::io::BufReader::new(harness.stdout.take().expect("piped"));
    let mut line = String::new();
    while !line.trim_end().ends_with("ready") {
        line.clear();
        let n = std::io::BufRead::read_line(&mut stdout, &mut line).expect("its output");
        assert!(n > 0, "the harness ended before its server was ready");
    }
    // The lingering copy records its pid as it starts, which may come after `ready` on a
    // loaded machine: waited for, within a bound.
    let read_pids = || -> Vec<u32> {
        std::fs::read_to_string(&pids_file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    };
    let until = Instant::now() + Duration::from_secs(10);
    while read_pids().len() < 2 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let pids = read_pids();
    assert_eq!(pids.len(), 2, "the server and its lingering copy");
    harness.kill().expect("SIGKILL");
    let _ = harness.wait();
    // The server dies with its harness (its parent-death signal); its copy does not.
    let until = Instant::now() + Duration::from_secs(10);
    while alive(pids[0]) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pids[0]), "the server outlived its harness");
    assert!(alive(pids[1]), "the copy ends only with its cgroup");
    let next = Command::new(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(NEXT_HARNESS, "1")
        .output()
        .expect("the next harness runs");
    assert!(next.status.success(), "{next:?}");
    let until = Instant::now() + Duration::from_secs(10);
    while alive(pids[1]) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&pids_file);
    assert!(
        !alive(pids[1]),
        "the copy {} outlived the next harness",
        pids[1]
    );
}
