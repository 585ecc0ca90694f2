//! `ProcessBackend`: a backend served by a child process. Each request waits at most
//! `timeout`; a child that exits, is killed by a signal, hangs or breaks the protocol fails
//! the request with what happened and the last lines of its stderr, and the next request
//! starts a fresh child.

use crate::PROTOCOL_VERSION;
use crate::descriptor::to_json;
use crate::frame::{Frame, FrameError, read_frame, write_frame};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected,
};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Lines of the child's stderr kept for failure messages.
const STDERR_LINES: usize = 20;

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
    data_types: Vec<DataType>,
    device: String,
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    frames: Receiver<Result<Frame, String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    generation: u64,
}

pub struct ProcessBackend {
    options: ProcessOptions,
    hello: Hello,
    running: Mutex<Option<Running>>,
    generations: AtomicU64,
    next_id: AtomicU64,
}

impl ProcessBackend {
    /// Starts the server and asks who it is.
    pub fn start(options: ProcessOptions) -> Result<ProcessBackend, String> {
        let generations = AtomicU64::new(0);
        let (running, hello) = spawn(&options, &generations)?;
        Ok(ProcessBackend {
            options,
            hello,
            running: Mutex::new(Some(running)),
            generations,
            next_id: AtomicU64::new(1),
        })
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
        if guard.is_none() {
            let (running, _) = spawn(&self.options, &self.generations)?;
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
            // Ask politely, then make sure.
            let _ = write_frame(&mut running.stdin, &json!({"type": "shutdown"}), &[]);
            let _ = running.frames.recv_timeout(Duration::from_millis(500));
            let _ = running.child.kill();
            let _ = running.child.wait();
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

fn spawn(options: &ProcessOptions, generations: &AtomicU64) -> Result<(Running, Hello), String> {
    let mut command = shell(&options.command);
    if let Some(dir) = &options.working_dir {
        command.current_dir(dir);
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", options.command))?;
    let stdin = child.stdin.take().expect("piped");
    let mut stdout = child.stdout.take().expect("piped");
    let stderr_pipe = child.stderr.take().expect("piped");
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
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    let tail = Arc::clone(&stderr);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr_pipe).lines() {
            let Ok(line) = line else { return };
            if let Ok(mut tail) = tail.lock() {
                if tail.len() == STDERR_LINES {
                    tail.pop_front();
                }
                tail.push_back(line);
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
        Err(what) => return Err(bury(running, &format!("during hello: {what}"))),
    };
    match parse_hello(&reply) {
        Ok(hello) => Ok((running, hello)),
        Err(e) => Err(bury(running, &format!("bad hello reply: {e}"))),
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
    let text = |key: &str| {
        frame
            .header
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let feature_level = FeatureLevel::parse(&text("feature_level"))
        .ok_or_else(|| format!("bad feature_level {:?}", text("feature_level")))?;
    let data_types = frame
        .header
        .get("data_types")
        .and_then(Value::as_array)
        .ok_or("hello needs \"data_types\"")?
        .iter()
        .map(|v| {
            v.as_str()
                .and_then(DataType::from_name)
                .ok_or_else(|| format!("unknown data type {v}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Hello {
        name: text("name"),
        feature_level,
        data_types,
        device: text("device"),
    })
}

/// Writes a request and waits for one reply frame.
fn exchange(
    running: &mut Running,
    header: &Value,
    payloads: &[&[u8]],
    timeout: Duration,
) -> Result<Frame, String> {
    write_frame(&mut running.stdin, header, payloads)
        .map_err(|e| format!("writing to the backend process failed: {e}"))?;
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

/// Kills the child and describes how it ended, with its last stderr lines.
fn bury(mut running: Running, what: &str) -> String {
    // A child that already exited keeps its status; give it a moment to finish exiting.
    let mut status = None;
    for _ in 0..20 {
        if let Ok(Some(s)) = running.child.try_wait() {
            status = Some(s);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let ended = match status {
        Some(status) => describe_exit(status),
        None => {
            let _ = running.child.kill();
            let _ = running.child.wait();
            "killed by the harness".to_string()
        }
    };
    std::thread::sleep(Duration::from_millis(20)); // let the stderr reader catch up
    let tail: Vec<String> = running
        .stderr
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();
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
            let _ = write_frame(
                &mut running.stdin,
                &json!({"type": "release", "id": self.id}),
                &[],
            );
        }
    }
}

impl Backend for ProcessBackend {
    fn name(&self) -> String {
        self.options.name.clone()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.hello.feature_level
    }

    fn data_types(&self) -> Vec<DataType> {
        self.hello.data_types.clone()
    }

    fn device(&self) -> String {
        if self.hello.device.is_empty() {
            format!("{} (out of process)", self.hello.name)
        } else {
            format!(
                "{}: {} (out of process)",
                self.hello.name, self.hello.device
            )
        }
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let header = json!({"type": "compile", "id": id, "operator": to_json(op)});
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
