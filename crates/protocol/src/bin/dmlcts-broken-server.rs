//! A deliberately broken protocol server, for the harness's own tests. It serves the oracle
//! correctly except for one fault, chosen by its first argument:
//!
//! - `crash-on-3`: exits with status 3 on the third compile request of its life;
//! - `abort-on-3`: aborts (SIGABRT on Unix) on the third compile request;
//! - `hang-on-join`: never answers an execute request of a Join;
//! - `short-output`: returns every output one byte short;
//! - `garbage`: answers execute requests with bytes that are not a frame;
//! - `stop-reading`: after answering its first compile, sleeps and never reads again;
//! - `stderr-flood`: on its first compile, writes 300 MiB to stderr with no newline and
//!   exits with status 1;
//! - `fork-and-exit`: on its first compile, starts a copy of itself (`linger`) that keeps
//!   stdin, stdout and stderr open and sleeps, then exits without answering;
//! - `hello-wrong-types`: answers hello with a number for the level and a string for the
//!   data types;
//! - `hello-wrong-protocol`: answers hello with protocol 999;
//! - `hello-bad-profile`: answers hello with the profile "lenient";
//! - `hello-unknown-rule`: answers hello with a rule id no spec has in `not_enforced`;
//! - `values-only`: declares the profile "values-only" and accepts every descriptor (the
//!   oracle's verdict decides only whether it can execute it);
//! - `not-enforced`: the same, declaring `not_enforced: [slice1.window_inside_input]`;
//! - `slow-start`: sleeps 2 s before reading anything, then serves correctly.
//!
//! A second argument names a file to which every process it starts (itself included)
//! appends its pid, so tests can check that none survives.

use dmlcts_oracle::OracleBackend;
use dmlcts_protocol::frame::{Frame, read_frame};
use dmlcts_protocol::{Server, write_reply};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
    ValidationProfile,
};
use serde_json::json;
use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

/// What `stderr-flood` writes, in bytes.
const FLOOD_BYTES: usize = 300 << 20;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fault = args.first().cloned().unwrap_or_default();
    let pids_file = args.get(1).cloned();
    if let Some(file) = &pids_file {
        record_pid(file);
    }
    if fault == "linger" {
        sleep_forever();
    }
    eprintln!("broken server starting with fault `{fault}`");
    if fault == "slow-start" {
        std::thread::sleep(Duration::from_secs(2));
    }
    let profile = match fault.as_str() {
        "values-only" => Some(ValidationProfile::ValuesOnly),
        "not-enforced" => Some(ValidationProfile::NotEnforced(vec![
            "slice1.window_inside_input".to_string(),
        ])),
        _ => None,
    };
    let oracle = OracleBackend::default();
    let accepting = profile.map(|profile| AcceptsEverything {
        oracle: OracleBackend::default(),
        profile,
    });
    let backend: &dyn Backend = match &accepting {
        Some(accepting) => accepting,
        None => &oracle,
    };
    serve(backend, &fault, pids_file.as_deref());
}

/// Serves `backend` on stdin and stdout, with the fault, until shutdown or end of input.
fn serve(backend: &dyn Backend, fault: &str, pids_file: Option<&str>) {
    let mut server = Server::new(backend);
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    let mut compiles = 0;
    let mut joins = HashSet::new();
    while let Ok(Some(frame)) = read_frame(&mut stdin) {
        if frame.kind() == "hello" {
            let bad = bad_hello(fault);
            if let Some(header) = bad {
                eprintln!("answering hello wrongly on purpose");
                let _ = write_reply(&mut stdout, &Frame::new(header));
                continue;
            }
        }
        if frame.kind() == "compile" {
            compiles += 1;
            exit_at_compile(fault, compiles, pids_file);
            if frame.header["operator"].get("join").is_some() {
                joins.insert(frame.id());
            }
        }
        if frame.kind() == "execute" {
            if fault == "hang-on-join" && joins.contains(&frame.id()) {
                eprintln!("hanging on purpose");
                sleep_forever();
            }
            if fault == "garbage" {
                let _ = stdout.write_all(b"\xff\xff\xff\x7fthis is not a frame");
                let _ = stdout.flush();
                continue;
            }
        }
        let Some(mut reply) = server.handle(&frame) else {
            continue;
        };
        if fault == "short-output" && frame.kind() == "execute" {
            for payload in &mut reply.payloads {
                payload.pop();
            }
        }
        if write_reply(&mut stdout, &reply).is_err() || frame.kind() == "shutdown" {
            return;
        }
        if fault == "stop-reading" && frame.kind() == "compile" {
            eprintln!("no longer reading, on purpose");
            sleep_forever();
        }
    }
}

/// The wrong hello header of the `hello-*` faults.
fn bad_hello(fault: &str) -> Option<serde_json::Value> {
    match fault {
        "hello-wrong-types" => Some(json!({"type": "hello", "protocol": 1,
            "name": "broken", "feature_level": 41, "data_types": "FLOAT32"})),
        "hello-wrong-protocol" => Some(json!({"type": "hello", "protocol": 999,
            "name": "broken", "feature_level": "4_1", "data_types": ["FLOAT32"]})),
        "hello-bad-profile" => Some(json!({"type": "hello", "protocol": 1,
            "name": "broken", "feature_level": "4_1", "data_types": ["FLOAT32"],
            "profile": "lenient"})),
        "hello-unknown-rule" => Some(json!({"type": "hello", "protocol": 1,
            "name": "broken", "feature_level": "4_1", "data_types": ["FLOAT32"],
            "not_enforced": ["slice1.window_inside"]})),
        _ => None,
    }
}

/// The faults that end the process at a compile request (`compiles` counts them, this one
/// included): crash-on-3, abort-on-3, stderr-flood, fork-and-exit.
fn exit_at_compile(fault: &str, compiles: u32, pids_file: Option<&str>) {
    if compiles == 3 && fault == "crash-on-3" {
        eprintln!("crashing on purpose at compile #3");
        std::process::exit(3);
    }
    if compiles == 3 && fault == "abort-on-3" {
        eprintln!("aborting on purpose at compile #3");
        std::process::abort();
    }
    if fault == "stderr-flood" {
        flood_stderr();
        std::process::exit(1);
    }
    if fault == "fork-and-exit" {
        start_lingering_copy(pids_file);
        eprintln!("exiting, with a child holding the pipes open");
        std::process::exit(0);
    }
}

/// The oracle, accepting every descriptor under a profile that enforces less.
struct AcceptsEverything {
    oracle: OracleBackend,
    profile: ValidationProfile,
}

/// What an accepted descriptor the oracle rejects compiles to.
struct NotExecutable(String);

impl CompiledOperator for NotExecutable {
    fn execute(&self, _: &[&[u8]], _: &mut [OutputBinding<'_>]) -> Result<(), String> {
        Err(format!("accepted but not executable: {}", self.0))
    }
}

impl Backend for AcceptsEverything {
    fn name(&self) -> String {
        "accepts-everything".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.oracle.feature_level()
    }
    fn validation_profile(&self) -> ValidationProfile {
        self.profile.clone()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match self.oracle.compile(op) {
            Err(CompileError::Rejected(rejected)) => Ok(Box::new(NotExecutable(rejected.message))),
            other => other,
        }
    }
}

fn sleep_forever() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// 300 MiB of one line, in 1 MiB writes.
fn flood_stderr() {
    let chunk = vec![b'x'; 1 << 20];
    let mut stderr = std::io::stderr().lock();
    for _ in 0..FLOOD_BYTES / chunk.len() {
        if stderr.write_all(&chunk).is_err() {
            return;
        }
    }
    let _ = stderr.flush();
}

/// A copy of this program that inherits the pipes and sleeps.
fn start_lingering_copy(pids_file: Option<&str>) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut command = std::process::Command::new(exe);
    command.arg("linger");
    if let Some(file) = pids_file {
        command.arg(file);
    }
    if let Ok(child) = command.spawn() {
        // Wait until it has recorded itself, so the test knows of it.
        if let Some(file) = pids_file {
            let pid = child.id().to_string();
            for _ in 0..500 {
                let recorded = std::fs::read_to_string(file).unwrap_or_default();
                if recorded.lines().any(|l| l == pid) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        drop(child);
    }
}

fn record_pid(file: &str) {
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
    {
        let _ = writeln!(f, "{}", std::process::id());
    }
}
