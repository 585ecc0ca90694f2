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
//! - `slow-start`: sleeps 2 s before reading anything, then serves correctly;
//! - `huge-messages`: answers every compile with an `error` whose message is 15 MiB;
//! - `frame-flood`: on its first compile, writes well-framed `accepted` frames without end;
//! - `huge-payload`: answers every execute with a reply that declares a 2 GiB payload, then
//!   sends zeros until the pipe closes;
//! - `escape-setsid`: on every compile, starts a process that calls `setsid` (a session and
//!   group of its own) and starts a lingering copy of this program (a double fork), then
//!   exits with status 3 without answering;
//! - `hang-after-hello`: answers hello, then reads nothing and answers nothing;
//! - `starts-once`: the first process crashes (status 3) on its first compile; every later one
//!   (the pids file has a line already) exits with status 1 before its hello;
//! - `leave-group`: on its first compile, moves itself into a process group of its own
//!   (`setpgid`), then reads nothing and answers nothing;
//! - `ignore-shutdown`: moves itself into another process group at start (as `leave-group`),
//!   serves correctly, but ignores `shutdown` and, once its input closes, sleeps;
//! - `setsid-orphans`: on every compile, starts 25 processes that each leave (`setsid`) and
//!   exit 20 ms later, their parent gone first (so they are orphans), then answers;
//! - `fork-chain`: on its first compile, starts a chain of copies of itself: each records its
//!   pid, leaves (`setsid`), sleeps 2 ms, starts the next and exits; then serves correctly;
//! - `slow-hello-die`: sleeps 400 ms before reading anything, then exits with status 3 at its
//!   first compile;
//! - `error-then-hang`: answers its odd-numbered compiles with an `error` and never answers its
//!   even-numbered ones;
//! - `escape-garbage`: on its first compile, starts a copy of itself with an empty environment
//!   that leaves (`setsid`) and starts another that keeps the server's stdin, stdout and
//!   stderr and sleeps (a double fork), then answers with bytes that are not a frame;
//! - `random SEED`: each request met by a behaviour drawn from SEED (timing, process tricks,
//!   frame corruptions, exits, combined), see `serve_randomly`; the pids file, if any, follows
//!   the seed.
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

/// The orphans `setsid-orphans` leaves at each compile.
const ORPHANS: usize = 25;
/// What `stderr-flood` writes, in bytes.
const FLOOD_BYTES: usize = 300 << 20;
/// The length of each message `huge-messages` sends, in bytes.
const HUGE_MESSAGE_BYTES: usize = 15 << 20;
/// The payload length `huge-payload` declares, in bytes.
const HUGE_PAYLOAD_BYTES: u64 = 2 << 30;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fault = args.first().cloned().unwrap_or_default();
    // `random SEED [PIDS_FILE]`: the seed comes first.
    let seed = (fault == "random").then(|| args.get(1).and_then(|s| s.parse::<u64>().ok()));
    let pids_file = args.get(if seed.is_some() { 2 } else { 1 }).cloned();
    let started_before = pids_file
        .as_deref()
        .is_some_and(|file| std::fs::read_to_string(file).is_ok_and(|t| !t.trim().is_empty()));
    if let Some(file) = &pids_file {
        record_pid(file);
    }
    if fault == "linger" {
        sleep_forever();
    }
    if fault == "escapee" {
        escape(pids_file.as_deref());
    }
    if fault == "orphan-parent" {
        // Its child outlives it: an orphan.
        let _ = start_copy("orphan", pids_file.as_deref(), false, false);
        std::process::exit(0);
    }
    if fault == "orphan" {
        leave_session();
        std::thread::sleep(Duration::from_millis(20));
        std::process::exit(0);
    }
    if fault == "chain-link" {
        leave_session();
        std::thread::sleep(Duration::from_millis(2));
        let _ = start_copy("chain-link", pids_file.as_deref(), false, false);
        std::process::exit(0);
    }
    if fault == "holder-parent" {
        leave_session();
        let _ = start_copy("holder", pids_file.as_deref(), true, true);
        std::process::exit(0);
    }
    if fault == "holder" {
        sleep_forever();
    }
    if let Some(seed) = seed {
        serve_randomly(seed.unwrap_or(0), pids_file.as_deref());
        return;
    }
    eprintln!("broken server starting with fault `{fault}`");
    if fault == "slow-start" {
        std::thread::sleep(Duration::from_secs(2));
    }
    if fault == "slow-hello-die" {
        std::thread::sleep(Duration::from_millis(400));
    }
    if fault == "ignore-shutdown" {
        leave_group(pids_file.as_deref());
    }
    if fault == "starts-once" && started_before {
        eprintln!("refusing to start again, on purpose");
        std::process::exit(1);
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
        if frame.kind() == "shutdown" && fault == "ignore-shutdown" {
            eprintln!("ignoring shutdown, on purpose");
            continue;
        }
        if frame.kind() == "compile" {
            compiles += 1;
            exit_at_compile(fault, compiles, pids_file);
            process_trick_at_compile(fault, compiles, pids_file);
            if fault == "error-then-hang" && compiles % 2 == 0 {
                eprintln!("hanging on purpose");
                sleep_forever();
            }
            if fault == "error-then-hang" || (fault == "escape-garbage" && compiles == 1) {
                answer_badly(fault, &frame, &mut stdout);
                continue;
            }
            if frame.header["operator"].get("join").is_some() {
                joins.insert(frame.id());
            }
            if misbehave_at_compile(fault, &frame, &mut stdout) {
                continue;
            }
        }
        if frame.kind() == "execute" && fault == "huge-payload" {
            eprintln!("declaring a 2 GiB payload, on purpose");
            send_huge_payload(&frame, &mut stdout);
            return;
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
        if fault == "hang-after-hello" && frame.kind() == "hello" {
            eprintln!("hanging after hello, on purpose");
            sleep_forever();
        }
    }
    if fault == "ignore-shutdown" {
        eprintln!("input closed; sleeping on, on purpose");
        sleep_forever();
    }
}

/// The faults that play process tricks at a compile and then go on: leave-group,
/// setsid-orphans, fork-chain, escape-garbage.
fn process_trick_at_compile(fault: &str, compiles: u32, pids_file: Option<&str>) {
    match fault {
        "leave-group" if compiles == 1 => {
            leave_group(pids_file);
            eprintln!("left my process group; hanging, on purpose");
            sleep_forever();
        }
        "setsid-orphans" => {
            for _ in 0..ORPHANS {
                if let Some(mut parent) = start_copy("orphan-parent", pids_file, false, false) {
                    let _ = parent.wait();
                }
            }
        }
        "fork-chain" if compiles == 1 => {
            let _ = start_copy("chain-link", pids_file, false, false);
        }
        "escape-garbage" if compiles == 1 => {
            if let Some(mut parent) = start_copy("holder-parent", pids_file, true, true) {
                let _ = parent.wait();
            }
        }
        _ => {}
    }
}

/// error-then-hang's `error` reply, or escape-garbage's bytes that are not a frame.
fn answer_badly(fault: &str, frame: &Frame, stdout: &mut impl Write) {
    if fault == "error-then-hang" {
        let reply = json!({"type": "error", "id": frame.id(), "message": "an error, on purpose"});
        let _ = write_reply(stdout, &Frame::new(reply));
    } else {
        eprintln!("writing garbage, with a process of another session holding the pipes");
        let _ = stdout.write_all(b"\xff\xff\xff\x7fthis is not a frame");
        let _ = stdout.flush();
    }
}

/// The compile-time faults that answer (or flood) instead of the server: true when the
/// request has been dealt with.
fn misbehave_at_compile(fault: &str, frame: &Frame, stdout: &mut impl Write) -> bool {
    match fault {
        "huge-messages" => {
            send_huge_message(frame, stdout);
            true
        }
        "frame-flood" => {
            eprintln!("flooding frames, on purpose");
            let reply = Frame::new(json!({"type": "accepted", "id": frame.id()}));
            while write_reply(stdout, &reply).is_ok() {}
            std::process::exit(0);
        }
        _ => false,
    }
}

/// An `error` reply whose message is `HUGE_MESSAGE_BYTES` long, written as bytes (building
/// it as JSON would cost this unoptimized test program a second a message).
fn send_huge_message(frame: &Frame, stdout: &mut impl Write) {
    let id = frame.id().map_or("null".to_string(), |id| id.to_string());
    let head = format!(r#"{{"type":"error","id":{id},"message":""#);
    let tail = r#""}"#;
    let message = vec![b'm'; HUGE_MESSAGE_BYTES];
    let length = (head.len() + message.len() + tail.len()) as u32;
    let _ = stdout.write_all(&length.to_le_bytes());
    let _ = stdout.write_all(head.as_bytes());
    let _ = stdout.write_all(&message);
    let _ = stdout.write_all(tail.as_bytes());
    let _ = stdout.flush();
}

/// A reply to an execute that declares one 2 GiB payload, then zeros until the pipe closes.
fn send_huge_payload(frame: &Frame, stdout: &mut impl Write) {
    let header = serde_json::to_vec(
        &json!({"type": "executed", "id": frame.id(), "payloads": [HUGE_PAYLOAD_BYTES]}),
    )
    .expect("a header");
    let _ = stdout.write_all(&(header.len() as u32).to_le_bytes());
    let _ = stdout.write_all(&header);
    let zeros = vec![0u8; 1 << 20];
    let mut sent = 0u64;
    while sent < HUGE_PAYLOAD_BYTES && stdout.write_all(&zeros).is_ok() {
        sent += zeros.len() as u64;
    }
    let _ = stdout.flush();
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
/// included): crash-on-3, abort-on-3, stderr-flood, fork-and-exit, escape-setsid,
/// starts-once, slow-hello-die.
fn exit_at_compile(fault: &str, compiles: u32, pids_file: Option<&str>) {
    if fault == "escape-setsid" {
        // A daemon's way: no pipes of the server's, its parent waits for it.
        if let Some(mut escapee) = start_copy("escapee", pids_file, false, false) {
            let _ = escapee.wait();
        }
        eprintln!("exiting, with a process of another session left behind");
        std::process::exit(3);
    }
    if fault == "starts-once" || fault == "slow-hello-die" {
        eprintln!("crashing on purpose at the first compile");
        std::process::exit(3);
    }
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

/// `escapee`: leaves the server's session and process group (`setsid`), starts a lingering
/// copy of this program there, and exits: the copy is then nobody's child but the reaper's.
fn escape(pids_file: Option<&str>) -> ! {
    leave_session();
    start_lingering_copy(pids_file);
    std::process::exit(0);
}

/// Moves this process into another process group (`setpgid`, Unix): that of a lingering copy
/// started in a group of its own (a group leader cannot `setsid`, and `setpgid(0, 0)` would
/// leave it where it is).
fn leave_group(pids_file: Option<&str>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut command = std::process::Command::new(exe);
        command.arg("linger").process_group(0);
        command.args(pids_file);
        use std::process::Stdio;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let Ok(child) = command.spawn() else {
            return;
        };
        let group = rustix::process::Pid::from_child(&child);
        if let Err(e) = rustix::process::setpgid(None, Some(group)) {
            eprintln!("setpgid failed: {e}");
        }
    }
    #[cfg(not(unix))]
    let _ = pids_file;
}

/// A session and process group of its own (`setsid`, Unix).
fn leave_session() {
    #[cfg(unix)]
    if let Err(e) = rustix::process::setsid() {
        eprintln!("setsid failed: {e}");
    }
}

/// A copy of this program with the fault `fault` (and the pids file), with this one's stdin,
/// stdout and stderr, or none; with an empty environment when `no_environment`.
fn start_copy(
    fault: &str,
    pids_file: Option<&str>,
    inherit_pipes: bool,
    no_environment: bool,
) -> Option<std::process::Child> {
    let exe = std::env::current_exe().ok()?;
    let mut command = std::process::Command::new(exe);
    command.arg(fault);
    if no_environment {
        command.env_clear();
    }
    if !inherit_pipes {
        use std::process::Stdio;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    }
    if let Some(file) = pids_file {
        command.arg(file);
    }
    command.spawn().ok()
}

/// A copy of this program that inherits the pipes and sleeps.
fn start_lingering_copy(pids_file: Option<&str>) {
    if let Some(child) = start_copy("linger", pids_file, true, false) {
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

/// `random SEED`'s dice: xorshift64*, seeded from SEED and the process's place among those the
/// pids file lists (so each restart draws anew, and a run can be replayed from its seed).
struct Dice(u64);

impl Dice {
    fn new(seed: u64, place: u64) -> Dice {
        Dice((seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(place + 1) | 1)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// `random SEED`: serves the oracle, but each request, drawn from the seed: answers it
/// correctly (about half the time), late (up to 800 ms), never, with bytes that are not a
/// frame, with half a frame and an exit, with an `error`, with a reply for another id, or by
/// exiting (status 3 or an abort); or first plays a process trick (leaves its process group,
/// leaves a double-forked copy holding its pipes with its environment cleared, leaves setsid
/// orphans, starts a setsid fork chain) and then answers. A `shutdown` is ignored half the time.
fn serve_randomly(seed: u64, pids_file: Option<&str>) {
    let place = pids_file
        .and_then(|file| std::fs::read_to_string(file).ok())
        .map_or(0, |pids| pids.lines().count() as u64);
    let mut dice = Dice::new(seed, place);
    let oracle = OracleBackend::default();
    let mut server = Server::new(&oracle);
    let mut stdin = std::io::stdin().lock();
    let mut stdout = std::io::stdout().lock();
    eprintln!("random server {seed}, process {place}");
    while let Ok(Some(frame)) = read_frame(&mut stdin) {
        if frame.kind() == "shutdown" && dice.below(2) == 0 {
            eprintln!("ignoring shutdown");
            continue;
        }
        let roll = dice.below(100);
        if roll >= 87 {
            let trick = dice.below(4);
            eprintln!("process trick {trick}");
            match trick {
                0 => leave_group(pids_file),
                1 => {
                    if let Some(mut parent) = start_copy("holder-parent", pids_file, true, true) {
                        let _ = parent.wait();
                    }
                }
                2 => {
                    for _ in 0..5 {
                        if let Some(mut parent) =
                            start_copy("orphan-parent", pids_file, false, false)
                        {
                            let _ = parent.wait();
                        }
                    }
                }
                _ => {
                    let _ = start_copy("chain-link", pids_file, false, false);
                }
            }
        }
        let id = frame.id();
        match roll {
            55..63 => std::thread::sleep(Duration::from_millis(dice.below(800))),
            63..68 => {
                eprintln!("hanging");
                sleep_forever();
            }
            68..72 => {
                eprintln!("garbage");
                let _ = stdout.write_all(b"\xff\xff\xff\x7fnot a frame");
                let _ = stdout.flush();
                continue;
            }
            72..75 => {
                eprintln!("half a frame, then exiting");
                let _ = stdout.write_all(&64u32.to_le_bytes());
                let _ = stdout.write_all(br#"{"type":"acc"#);
                let _ = stdout.flush();
                std::process::exit(0);
            }
            75..79 => {
                eprintln!("an error reply");
                let reply = json!({"type": "error", "id": id, "message": "random error"});
                let _ = write_reply(&mut stdout, &Frame::new(reply));
                continue;
            }
            79..82 => {
                eprintln!("a reply for another id");
                let other = id.map_or(1000, |id| id + 1000);
                let reply = json!({"type": "accepted", "id": other});
                let _ = write_reply(&mut stdout, &Frame::new(reply));
                continue;
            }
            82..85 => {
                eprintln!("exiting");
                std::process::exit(3);
            }
            85..87 => {
                eprintln!("aborting");
                std::process::abort();
            }
            _ => {}
        }
        let Some(reply) = server.handle(&frame) else {
            continue;
        };
        if write_reply(&mut stdout, &reply).is_err() {
            return;
        }
    }
    sleep_forever();
}
