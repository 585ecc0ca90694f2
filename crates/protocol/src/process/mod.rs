//! `ProcessBackend`: a backend served by a child process. Every write and every wait for a
//! reply is bounded by `timeout`; a child that exits, is killed by a signal, hangs, stops
//! reading or breaks the protocol fails the request with what happened and the last lines of
//! its stderr (bounded in bytes), its whole process group is killed and reaped, and the next
//! request starts a fresh child. A child whose `hello` is unusable fails every case with the
//! reason instead of stopping the run.

use crate::PROTOCOL_VERSION;
use crate::descriptor::to_json;
use crate::frame::{Frame, FrameError, read_frame, write_frame};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected, ValidationProfile,
};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Lines of the child's stderr kept for failure messages.
pub const STDERR_LINES: usize = 20;
/// Bytes kept of each of those lines; the rest of a longer line is counted, not kept. So a
/// failure message carries at most 20 x 2 KiB = 40 KiB of stderr.
pub const STDERR_LINE_BYTES: usize = 2048;
/// How long a child that is already closing its pipes gets to exit on its own before its
/// group is killed (so its own exit status can be reported).
const EXIT_GRACE: Duration = Duration::from_millis(200);
/// Longest wait for the `release` and `shutdown` messages, which have no reply.
const NOTICE_TIMEOUT: Duration = Duration::from_millis(500);

#[derive(Clone, Debug)]
pub struct ProcessOptions {
    /// Run with `sh -c` (`cmd /C` on Windows).
    pub command: String,
    /// The name reports and replay commands use (e.g. `process:<command>`).
    pub name: String,
    /// Longest wait for any one reply.
    pub timeout: Duration,
    /// Longest wait for the first `hello` (device creation can be slow).
    pub startup_timeout: Duration,
    /// Where the command runs (the current folder when None).
    pub working_dir: Option<std::path::PathBuf>,
}

impl ProcessOptions {
    pub fn new(command: &str) -> ProcessOptions {
        ProcessOptions {
            command: command.to_string(),
            name: format!("process:{command}"),
            timeout: Duration::from_secs(10),
            startup_timeout: Duration::from_secs(60),
            working_dir: None,
        }
    }
}

/// What the server said about itself.
#[derive(Clone, Debug)]
struct Hello {
    name: String,
    feature_level: FeatureLevel,
    /// The levels a `compile` may ask for (`feature_levels`); empty: the claimed one only.
    feature_levels: Vec<FeatureLevel>,
    data_types: Vec<DataType>,
    device: String,
    /// `profile` and `not_enforced`: the DirectML rules it enforces (absent: all).
    profile: ValidationProfile,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    frames: Receiver<Result<Frame, String>>,
    stderr: Arc<Mutex<StderrTail>>,
    generation: u64,
}

pub struct ProcessBackend {
    options: ProcessOptions,
    /// The server's hello, or why there is none usable: then every case fails with it.
    hello: Result<Hello, String>,
    running: Mutex<Option<Running>>,
    generations: AtomicU64,
    next_id: AtomicU64,
}

impl ProcessBackend {
    /// Starts the server and asks who it is. Only a process that cannot be started at all is
    /// an error here; a server that dies, hangs or answers `hello` badly gives a backend whose
    /// every case fails with that reason, so the run still ends with its report.
    pub fn start(options: ProcessOptions) -> Result<ProcessBackend, String> {
        let generations = AtomicU64::new(0);
        let (running, hello) = match spawn(&options, &generations) {
            Ok((running, hello)) => (Some(running), Ok(hello)),
            Err(SpawnError::CannotStart(e)) => return Err(e),
            Err(SpawnError::NoHello(e)) => (None, Err(e)),
        };
        Ok(ProcessBackend {
            options,
            hello,
            running: Mutex::new(running),
            generations,
            next_id: AtomicU64::new(1),
        })
    }

    /// Why the server's hello is unusable, if it is.
    pub fn hello_error(&self) -> Option<&str> {
        self.hello.as_ref().err().map(String::as_str)
    }

    /// Sends a request and waits for its reply. Any failure kills the child; the next
    /// request starts a new one.
    fn request(
        &self,
        header: &Value,
        payloads: &[&[u8]],
        generation: Option<u64>,
    ) -> Result<(Frame, u64), String> {
        let mut guard = self
            .running
            .lock()
            .map_err(|_| "the backend lock is poisoned".to_string())?;
        if let Err(e) = &self.hello {
            return Err(e.clone());
        }
        if guard.is_none() {
            let (running, _) = spawn(&self.options, &self.generations).map_err(SpawnError::text)?;
            *guard = Some(running);
        }
        let running = guard.as_mut().expect("just started");
        if let Some(expected) = generation
            && expected != running.generation
        {
            return Err(
                "the backend process was restarted since this operator was compiled".to_string(),
            );
        }
        let this_generation = running.generation;
        let outcome = exchange(running, header, payloads, self.options.timeout);
        match outcome {
            Ok(frame) => Ok((frame, this_generation)),
            Err(what) => {
                let running = guard.take().expect("present");
                Err(bury(running, &what))
            }
        }
    }
}

impl Drop for ProcessBackend {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.running.lock()
            && let Some(mut running) = guard.take()
        {
            // Ask politely, then make sure: the whole group goes.
            let shutdown = json!({"type": "shutdown"});
            if write_within(&mut running.stdin, &shutdown, &[], NOTICE_TIMEOUT).is_ok() {
                let _ = running.frames.recv_timeout(NOTICE_TIMEOUT);
            }
            end_process_group(&mut running.child);
        }
    }
}

fn shell(command: &str) -> Command {
    if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.arg("/C").arg(command);
        c
    } else {
        // A simple command replaces the shell, so the server is the harness's own child and
        // its exit status or signal arrives unchanged; a compound one keeps the shell.
        let simple = !command.contains([';', '&', '|', '<', '>', '(', ')', '$', '`', '\n']);
        let mut c = Command::new("sh");
        c.arg("-c").arg(if simple {
            format!("exec {command}")
        } else {
            command.to_string()
        });
        c
    }
}

/// Why no child could be made ready.
enum SpawnError {
    /// The operating system could not start the command at all.
    CannotStart(String),
    /// It started, but gave no usable hello (it died, hung or answered wrongly).
    NoHello(String),
}

impl SpawnError {
    fn text(self) -> String {
        match self {
            SpawnError::CannotStart(e) | SpawnError::NoHello(e) => e,
        }
    }
}

fn spawn(
    options: &ProcessOptions,
    generations: &AtomicU64,
) -> Result<(Running, Hello), SpawnError> {
    let mut command = shell(&options.command);
    if let Some(dir) = &options.working_dir {
        command.current_dir(dir);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        // Its own process group, so that whatever it starts is killed with it.
        use std::os::unix::process::CommandExt;
        command.process_group(0);
        become_subreaper();
    }
    let mut child = command
        .spawn()
        .map_err(|e| SpawnError::CannotStart(format!("cannot start `{}`: {e}", options.command)))?;
    let stdin = child.stdin.take().expect("piped");
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr_pipe = child.stderr.take().expect("piped");
    #[cfg(unix)]
    if let Err(e) = rustix::io::ioctl_fionbio(&stdin, true) {
        end_process_group(&mut child);
        return Err(SpawnError::CannotStart(format!(
            "cannot make the pipe to `{}` non-blocking: {e}",
            options.command
        )));
    }
    let (sender, frames) = channel();
    std::thread::spawn(move || {
        loop {
            let message = match read_frame(&mut stdout) {
                Ok(Some(frame)) => Ok(frame),
                Ok(None) => Err("the backend process closed its output".to_string()),
                Err(FrameError::Io(e)) => Err(format!("reading the backend's output failed: {e}")),
                Err(e) => Err(format!("protocol violation: {e}")),
            };
            let stop = message.is_err();
            if sender.send(message).is_err() || stop {
                return;
            }
        }
    });
    let stderr = Arc::new(Mutex::new(StderrTail::default()));
    let tail = Arc::clone(&stderr);
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 << 10];
        loop {
            match stderr_pipe.read(&mut buffer) {
                Ok(0) => return,
                Ok(n) => {
                    if let Ok(mut tail) = tail.lock() {
                        tail.push(&buffer[..n]);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    });
    let mut running = Running {
        child,
        stdin,
        frames,
        stderr,
        generation: generations.fetch_add(1, Ordering::SeqCst),
    };
    let hello = json!({"type": "hello", "protocol": PROTOCOL_VERSION});
    let reply = match exchange(&mut running, &hello, &[], options.startup_timeout) {
        Ok(reply) => reply,
        Err(what) => {
            return Err(SpawnError::NoHello(bury(
                running,
                &format!("during hello: {what}"),
            )));
        }
    };
    match parse_hello(&reply) {
        Ok(hello) => Ok((running, hello)),
        Err(e) => Err(SpawnError::NoHello(bury(
            running,
            &format!("bad hello reply: {e}"),
        ))),
    }
}

/// The last lines of a child's stderr, each cut to `STDERR_LINE_BYTES`.
#[derive(Default)]
struct StderrTail {
    lines: VecDeque<String>,
    /// The line being written (no newline yet), up to `STDERR_LINE_BYTES`.
    current: Vec<u8>,
    /// Bytes of the current line beyond what is kept.
    current_cut: u64,
}

impl StderrTail {
    fn push(&mut self, mut bytes: &[u8]) {
        while let Some(newline) = bytes.iter().position(|&b| b == b'\n') {
            self.append(&bytes[..newline]);
            let line = self.current_line();
            if self.lines.len() == STDERR_LINES {
                self.lines.pop_front();
            }
            self.lines.push_back(line);
            self.current.clear();
            self.current_cut = 0;
            bytes = &bytes[newline + 1..];
        }
        self.append(bytes);
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = STDERR_LINE_BYTES.saturating_sub(self.current.len());
        let kept = room.min(bytes.len());
        self.current.extend_from_slice(&bytes[..kept]);
        self.current_cut += (bytes.len() - kept) as u64;
    }

    fn current_line(&self) -> String {
        let bytes = self.current.strip_suffix(b"\r").unwrap_or(&self.current);
        let mut line = String::from_utf8_lossy(bytes).into_owned();
        if self.current_cut > 0 {
            line.push_str(&format!(
                " [line cut: {} more bytes not kept]",
                self.current_cut
            ));
        }
        line
    }

    /// The kept lines, and the unfinished one if there is one.
    fn lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.lines.iter().cloned().collect();
        if !self.current.is_empty() || self.current_cut > 0 {
            if lines.len() == STDERR_LINES {
                lines.remove(0);
            }
            lines.push(self.current_line());
        }
        lines
    }
}

/// A hello member listing names (`what` names one: "data type", "level"), each parsed by
/// `parse`; None when it is absent or null.
fn name_list<T>(
    frame: &Frame,
    key: &str,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<Vec<T>>, String> {
    match frame.header.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(names)) => names
            .iter()
            .map(|v| {
                v.as_str()
                    .and_then(&parse)
                    .ok_or_else(|| format!("unknown {what} {v} in \"{key}\""))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!(
            "\"{key}\" must be an array of names, found {other}"
        )),
    }
}

fn parse_hello(frame: &Frame) -> Result<Hello, String> {
    if frame.kind() != "hello" {
        return Err(format!("expected a hello, got {}", frame.header));
    }
    let protocol = frame.header.get("protocol").and_then(Value::as_u64);
    if protocol != Some(PROTOCOL_VERSION) {
        return Err(format!(
            "protocol {protocol:?}; this harness speaks {PROTOCOL_VERSION}"
        ));
    }
    let text = |key: &str| match frame.header.get(key) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(other) => Err(format!("\"{key}\" must be a string, found {other}")),
    };
    let level = text("feature_level")?;
    let feature_level =
        FeatureLevel::parse(&level).ok_or_else(|| format!("bad feature_level {level:?}"))?;
    let data_types = name_list(frame, "data_types", "data type", DataType::from_name)?
        .ok_or("hello needs \"data_types\"")?;
    let feature_levels =
        name_list(frame, "feature_levels", "level", FeatureLevel::parse)?.unwrap_or_default();
    let profile = parse_profile(frame)?;
    Ok(Hello {
        name: text("name")?,
        feature_level,
        feature_levels,
        data_types,
        device: text("device")?,
        profile,
    })
}

/// The hello's `profile` (`"strict"`, `"values-only"`; absent: strict) and `not_enforced`
/// (rule ids from specs/).
fn parse_profile(frame: &Frame) -> Result<ValidationProfile, String> {
    let values_only = match frame.header.get("profile") {
        None | Some(Value::Null) => false,
        Some(Value::String(name)) if name == "strict" => false,
        Some(Value::String(name)) if name == "values-only" => true,
        Some(other) => {
            return Err(format!(
                "unknown \"profile\" {other}; the profiles are \"strict\" and \"values-only\""
            ));
        }
    };
    let not_enforced = name_list(frame, "not_enforced", "rule id", |rule| {
        dmlcts_oracle::spec::constraint(rule).map(|_| rule.to_string())
    })?
    .unwrap_or_default();
    Ok(if values_only {
        ValidationProfile::ValuesOnly
    } else if not_enforced.is_empty() {
        ValidationProfile::Strict
    } else {
        ValidationProfile::NotEnforced(not_enforced)
    })
}

/// Writes a request and waits for one reply frame; each of the two takes at most `timeout`.
fn exchange(
    running: &mut Running,
    header: &Value,
    payloads: &[&[u8]],
    timeout: Duration,
) -> Result<Frame, String> {
    write_within(&mut running.stdin, header, payloads, timeout).map_err(|e| {
        if e.kind() == io::ErrorKind::TimedOut {
            format!(
                "the request was not read within {:.1} s (the backend stopped reading its input?)",
                timeout.as_secs_f64()
            )
        } else {
            format!("writing to the backend process failed: {e}")
        }
    })?;
    match running.frames.recv_timeout(timeout) {
        Ok(Ok(frame)) => Ok(frame),
        Ok(Err(what)) => Err(what),
        Err(RecvTimeoutError::Timeout) => Err(format!(
            "no reply within {:.1} s (hung?)",
            timeout.as_secs_f64()
        )),
        Err(RecvTimeoutError::Disconnected) => {
            Err("the backend process's output is gone".to_string())
        }
    }
}

/// Writes one frame, giving up with `TimedOut` when the child has not taken it all within
/// `timeout` (its stdin is non-blocking on Unix).
fn write_within(
    stdin: &mut ChildStdin,
    header: &Value,
    payloads: &[&[u8]],
    timeout: Duration,
) -> io::Result<()> {
    let mut writer = DeadlineWriter {
        stdin,
        deadline: Instant::now() + timeout,
    };
    write_frame(&mut writer, header, payloads)
}

struct DeadlineWriter<'a> {
    stdin: &'a mut ChildStdin,
    /// Used where the pipe can be non-blocking (Unix).
    #[cfg_attr(not(unix), allow(dead_code))]
    deadline: Instant,
}

impl Write for DeadlineWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        loop {
            match self.stdin.write(bytes) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait_writable()?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stdin.flush()
    }
}

impl DeadlineWriter<'_> {
    #[cfg(unix)]
    fn wait_writable(&self) -> io::Result<()> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let timeout = Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        };
        let mut fds = [PollFd::new(&*self.stdin, PollFlags::OUT)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => Err(io::ErrorKind::TimedOut.into()),
            // Writable, or an error the next write reports.
            Ok(_) => Ok(()),
            Err(rustix::io::Errno::INTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Elsewhere the pipe blocks and never says `WouldBlock`.
    #[cfg(not(unix))]
    fn wait_writable(&self) -> io::Result<()> {
        Err(io::ErrorKind::TimedOut.into())
    }
}

/// Makes this process the reaper of orphaned descendants (Linux), so that a server's
/// grandchildren, killed with its group, are reaped here instead of waiting on an init that
/// may never reap them.
#[cfg(unix)]
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        });
    }
}

/// Kills the child's whole process group, then reaps the child and every member of the group
/// that was reparented here. Returns the child's status.
fn end_process_group(child: &mut Child) -> Option<std::process::ExitStatus> {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, WaitOptions, kill_process_group, waitpgid};
        let group = Pid::from_child(child);
        // The child is not reaped yet, so its pid (the group's id) cannot have been reused.
        let _ = kill_process_group(group, Signal::KILL);
        let status = child.wait().ok();
        // Members whose parent died were reparented to this process (see become_subreaper);
        // SIGKILL cannot be caught, so they go quickly, but never wait without bound.
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            match waitpgid(group, WaitOptions::NOHANG) {
                Ok(Some(_)) => {}
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break, // no child of ours left in the group
            }
        }
        status
    }
    #[cfg(not(unix))]
    {
        let _ = child.kill();
        child.wait().ok()
    }
}

/// Whether the child has exited, without reaping it (so its group id stays reserved).
fn has_exited(child: &mut Child) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        matches!(
            waitid(WaitId::Pid(Pid::from_child(child)), options),
            Ok(Some(_))
        )
    }
    #[cfg(not(unix))]
    {
        matches!(child.try_wait(), Ok(Some(_)))
    }
}

/// Kills the child's group and describes how the child ended, with its last stderr lines.
fn bury(mut running: Running, what: &str) -> String {
    // A child that already closed its pipes may be about to exit: let it, to report its own
    // status.
    let started = Instant::now();
    let mut exited = has_exited(&mut running.child);
    while !exited && started.elapsed() < EXIT_GRACE {
        std::thread::sleep(Duration::from_millis(10));
        exited = has_exited(&mut running.child);
    }
    let status = end_process_group(&mut running.child);
    let ended = match (exited, status) {
        (true, Some(status)) => describe_exit(status),
        _ => "was killed by the harness".to_string(),
    };
    std::thread::sleep(Duration::from_millis(20)); // let the stderr reader catch up
    let tail = running.stderr.lock().map(|t| t.lines()).unwrap_or_default();
    let mut message = format!("backend process: {what}; it {ended}");
    if tail.is_empty() {
        message.push_str("; its stderr was empty");
    } else {
        message.push_str("; last lines of its stderr:");
        for line in tail {
            message.push_str("\n    | ");
            message.push_str(&line);
        }
    }
    message
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    match status.code() {
        // A shell reports a child killed by signal N as status 128 + N.
        Some(code) if cfg!(unix) && (129..=192).contains(&code) => format!(
            "exited with status {code} (from the shell: killed by signal {})",
            code - 128
        ),
        Some(code) => format!("exited with status {code}"),
        None => "exited".to_string(),
    }
}

struct ProcessCompiled<'a> {
    backend: &'a ProcessBackend,
    id: u64,
    generation: u64,
}

impl CompiledOperator for ProcessCompiled<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let header = json!({"type": "execute", "id": self.id, "inputs": inputs.len(), "outputs": outputs.len()});
        let output_bytes: Vec<Vec<u8>> =
            outputs.iter_mut().map(|o| o.bytes_mut().to_vec()).collect();
        let mut payloads: Vec<&[u8]> = inputs.to_vec();
        payloads.extend(output_bytes.iter().map(Vec::as_slice));
        let (reply, _) = self
            .backend
            .request(&header, &payloads, Some(self.generation))?;
        match reply.kind() {
            "executed" if reply.id() == Some(self.id) => {}
            "error" => {
                return Err(format!(
                    "the backend reported an error: {}",
                    reply
                        .header
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("(no message)")
                ));
            }
            _ => {
                return Err(format!(
                    "protocol violation: expected `executed` for id {}, got {}",
                    self.id, reply.header
                ));
            }
        }
        if reply.payloads.len() != outputs.len() {
            return Err(format!(
                "protocol violation: {} output buffers returned for {} outputs",
                reply.payloads.len(),
                outputs.len()
            ));
        }
        for (i, (binding, bytes)) in outputs.iter_mut().zip(&reply.payloads).enumerate() {
            let target = binding.bytes_mut();
            if bytes.len() != target.len() {
                return Err(format!(
                    "protocol violation: output {i} came back with {} bytes, expected {}",
                    bytes.len(),
                    target.len()
                ));
            }
            target.copy_from_slice(bytes);
        }
        Ok(())
    }
}

impl Drop for ProcessCompiled<'_> {
    fn drop(&mut self) {
        // `release` has no reply; a dead child needs no release.
        if let Ok(mut guard) = self.backend.running.lock()
            && let Some(running) = guard.as_mut()
            && running.generation == self.generation
        {
            let release = json!({"type": "release", "id": self.id});
            let _ = write_within(&mut running.stdin, &release, &[], NOTICE_TIMEOUT);
        }
    }
}

impl Backend for ProcessBackend {
    fn name(&self) -> String {
        self.options.name.clone()
    }

    /// Without a usable hello, the latest level and every data type: so that the cases
    /// reach `compile` and fail with the reason instead of being skipped.
    fn feature_level(&self) -> FeatureLevel {
        match &self.hello {
            Ok(hello) => hello.feature_level,
            Err(_) => FeatureLevel::LATEST,
        }
    }

    fn data_types(&self) -> Vec<DataType> {
        match &self.hello {
            Ok(hello) => hello.data_types.clone(),
            Err(_) => DataType::ALL.to_vec(),
        }
    }

    fn device(&self) -> String {
        match &self.hello {
            Err(_) => "no usable hello (out of process)".to_string(),
            Ok(hello) if hello.device.is_empty() => format!("{} (out of process)", hello.name),
            Ok(hello) => format!("{}: {} (out of process)", hello.name, hello.device),
        }
    }

    /// As its hello said; without a usable hello, strict (every case fails anyway).
    fn validation_profile(&self) -> ValidationProfile {
        match &self.hello {
            Ok(hello) => hello.profile.clone(),
            Err(_) => ValidationProfile::Strict,
        }
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.compile_at(op, None)
    }
}

impl ProcessBackend {
    /// The levels the server said a `compile` may ask for (empty: only its claimed one).
    pub fn feature_levels(&self) -> &[FeatureLevel] {
        match &self.hello {
            Ok(hello) => &hello.feature_levels,
            Err(_) => &[],
        }
    }

    /// Compiles as a device at `level` (one of `feature_levels`), or at the claimed level.
    pub fn compile_at(
        &self,
        op: &OperatorDesc,
        level: Option<FeatureLevel>,
    ) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let mut header = json!({"type": "compile", "id": id, "operator": to_json(op)});
        if let Some(level) = level {
            header["feature_level"] = json!(level.to_string());
        }
        let (reply, generation) = self
            .request(&header, &[], None)
            .map_err(CompileError::Failed)?;
        let text = |key: &str| {
            reply
                .header
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        match reply.kind() {
            "accepted" if reply.id() == Some(id) => Ok(Box::new(ProcessCompiled {
                backend: self,
                id,
                generation,
            })),
            "rejected" if reply.id() == Some(id) => Err(CompileError::Rejected(Rejected {
                rule: text("rule"),
                message: text("reason").unwrap_or_default(),
            })),
            "unsupported" if reply.id() == Some(id) => Err(CompileError::Unsupported(
                text("reason").unwrap_or_default(),
            )),
            "error" => Err(CompileError::Failed(format!(
                "the backend reported an error: {}",
                text("message").unwrap_or_default()
            ))),
            _ => Err(CompileError::Failed(format!(
                "protocol violation: expected `accepted` or `rejected` for id {id}, got {}",
                reply.header
            ))),
        }
    }
}

#[cfg(test)]
mod hello_tests {
    use super::*;

    fn hello(extra: Value) -> Result<Hello, String> {
        let mut header = json!({"type": "hello", "protocol": PROTOCOL_VERSION, "name": "x",
                                "feature_level": "4_1", "data_types": ["FLOAT32"]});
        for (key, value) in extra.as_object().expect("an object") {
            header[key] = value.clone();
        }
        parse_hello(&Frame::new(header))
    }

    #[test]
    fn feature_levels_are_optional_and_each_must_be_a_level() {
        assert_eq!(hello(json!({})).expect("a hello").feature_levels, []);
        assert_eq!(
            hello(json!({"feature_levels": ["1_0", "4_1"]}))
                .expect("a hello")
                .feature_levels,
            [FeatureLevel::L1_0, FeatureLevel::L4_1]
        );
        assert_eq!(
            hello(json!({"feature_levels": ["1_0", "9_9"]})).err(),
            Some("unknown level \"9_9\" in \"feature_levels\"".to_string())
        );
        assert_eq!(
            hello(json!({"feature_levels": "4_1"})).err(),
            Some("\"feature_levels\" must be an array of names, found \"4_1\"".to_string())
        );
    }

    #[test]
    fn a_profile_is_strict_values_only_or_rules_not_enforced_and_each_rule_must_exist() {
        let profile = |extra: Value| hello(extra).map(|h| h.profile);
        assert_eq!(profile(json!({})), Ok(ValidationProfile::Strict));
        assert_eq!(
            profile(json!({"profile": "strict"})),
            Ok(ValidationProfile::Strict)
        );
        assert_eq!(
            profile(json!({"profile": "values-only"})),
            Ok(ValidationProfile::ValuesOnly)
        );
        assert_eq!(
            profile(json!({"not_enforced": ["slice1.window_inside_input"]})),
            Ok(ValidationProfile::NotEnforced(vec![
                "slice1.window_inside_input".to_string()
            ]))
        );
        assert_eq!(
            profile(json!({"profile": "lenient"})),
            Err(
                "unknown \"profile\" \"lenient\"; the profiles are \"strict\" and \"values-only\""
                    .to_string()
            )
        );
        assert_eq!(
            profile(json!({"not_enforced": ["slice1.window_inside"]})),
            Err("unknown rule id \"slice1.window_inside\" in \"not_enforced\"".to_string())
        );
        assert_eq!(
            profile(json!({"not_enforced": "slice1.window_inside_input"})),
            Err(
                "\"not_enforced\" must be an array of names, found \"slice1.window_inside_input\""
                    .to_string()
            )
        );
    }
}
