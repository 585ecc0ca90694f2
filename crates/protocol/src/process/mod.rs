//! `ProcessBackend`: a backend served by a child process. Every write and every wait for a
//! reply is bounded by `timeout`; a child that exits, is killed by a signal, hangs, stops
//! reading or breaks the protocol fails the request with what happened and the last lines of
//! its stderr (bounded in bytes), it and everything it started are killed and reaped
//! (reaper.rs), and the next request starts a fresh child. A child whose `hello` is unusable
//! fails every case with the reason instead of stopping the run. A run gives a server a
//! budget of time lost (see `Link`): once it is spent, or after `FAILED_STARTS_BEFORE_GIVING_UP`
//! failed starts in a row, every later request fails at once. What a reply says is kept only
//! up to `MAX_TEXT_BYTES` a text.

mod child;
mod hello;
#[cfg(windows)]
mod job;
#[cfg(target_os = "linux")]
mod parent_death;
mod reaper;

pub use reaper::{Containment, containment};

use crate::bounds::{MAX_TEXT_BYTES, bounded, bounded_json};
use crate::descriptor::to_json;
use crate::frame::Frame;
use child::{Running, SpawnError, bury, exchange, notify, shut_down, spawn};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, Implementation, OperatorDesc,
    OutputBinding, Rejected, ValidationProfile,
};
use hello::Hello;
pub(crate) use hello::implementation_json;
use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use child::{STDERR_LINE_BYTES, STDERR_LINES};

/// Longest wait for the `release` and `shutdown` messages, which have no reply.
const NOTICE_TIMEOUT: Duration = Duration::from_millis(500);
/// The longest timeout a `ProcessBackend` uses (7 days); longer ones are cut to it.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);
/// The time a run may lose to one server, in timeouts: hangs (no reply, or a request not
/// read, within the timeout) may take `LOST_TIME_BUDGET` x the timeout (`--process-timeout`);
/// restarts (every start after the first, its hello awaited) and requests that failed
/// otherwise (a crash, a protocol violation) may take `LOST_TIME_BUDGET` x the start-up
/// timeout. Once either is spent, every later request fails at once, without a process.
pub const LOST_TIME_BUDGET: u32 = 3;
/// Failed starts (no usable hello) in a row after which every later request fails at once.
pub const FAILED_STARTS_BEFORE_GIVING_UP: u32 = 3;

#[derive(Clone, Debug)]
pub struct ProcessOptions {
    /// Run with `sh -c`; on Windows, the program and its arguments as `split_command_line`
    /// splits them (no shell).
    pub command: String,
    /// The name reports and replay commands use (e.g. `process:<command>`).
    pub name: String,
    /// Longest wait for any one reply (at most `MAX_TIMEOUT`).
    pub timeout: Duration,
    /// Longest wait for the first `hello` (device creation can be slow; at most
    /// `MAX_TIMEOUT`).
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

pub struct ProcessBackend {
    options: ProcessOptions,
    /// The server's hello, or why there is none usable: then every case fails with it.
    hello: Result<Hello, String>,
    link: Mutex<Link>,
    generations: AtomicU64,
    next_id: AtomicU64,
}

/// The child now serving, and the time the run has lost to its server. So a run's time with a
/// server is bounded: the time lost is at most `LOST_TIME_BUDGET` x (timeout + start-up
/// timeout), plus the one request or start that crossed a budget; every other request is
/// answered within its timeout.
#[derive(Default)]
struct Link {
    running: Option<Running>,
    /// Time spent waiting on hangs.
    hung: Duration,
    /// Time spent on restarts and on requests that failed otherwise.
    restarts: Duration,
    /// Failed starts since the last start that gave a usable hello.
    failed_starts: u32,
    /// Why every request now fails at once: the budget spent, the last failure's text.
    given_up: Option<String>,
}

/// What was lost on a failed request or start.
enum Lost {
    Hang,
    Restart,
    FailedStart,
}

impl Link {
    /// Counts `spent` against its budget; the text for this request's failure.
    fn lost(
        &mut self,
        what: Lost,
        spent: Duration,
        text: String,
        options: &ProcessOptions,
    ) -> String {
        let why = match what {
            Lost::Hang => {
                self.hung += spent;
                let budget = options.timeout * LOST_TIME_BUDGET;
                (self.hung >= budget).then(|| {
                    format!(
                        "its hangs took {:.1} s of the run, their budget ({LOST_TIME_BUDGET} x \
                         the {:.1} s timeout)",
                        self.hung.as_secs_f64(),
                        options.timeout.as_secs_f64()
                    )
                })
            }
            Lost::Restart | Lost::FailedStart => {
                self.restarts += spent;
                if matches!(what, Lost::FailedStart) {
                    self.failed_starts += 1;
                }
                let budget = options.startup_timeout * LOST_TIME_BUDGET;
                if self.failed_starts >= FAILED_STARTS_BEFORE_GIVING_UP {
                    Some(format!(
                        "{FAILED_STARTS_BEFORE_GIVING_UP} failed starts in a row"
                    ))
                } else {
                    (self.restarts >= budget).then(|| {
                        format!(
                            "its restarts and failed requests took {:.1} s of the run, their \
                             budget ({LOST_TIME_BUDGET} x the {:.1} s start-up timeout)",
                            self.restarts.as_secs_f64(),
                            options.startup_timeout.as_secs_f64()
                        )
                    })
                }
            }
        };
        let Some(why) = why else {
            return text;
        };
        let given_up = format!(
            "backend process: given up: {why}; every later case fails at once without it. \
             The last: {text}"
        );
        self.given_up = Some(given_up.clone());
        given_up
    }
}

impl ProcessBackend {
    /// Starts the server and asks who it is. Only a process that cannot be started at all is
    /// an error here; a server that dies, hangs or answers `hello` badly gives a backend whose
    /// every case fails with that reason, so the run still ends with its report.
    pub fn start(mut options: ProcessOptions) -> Result<ProcessBackend, String> {
        options.timeout = options.timeout.min(MAX_TIMEOUT);
        options.startup_timeout = options.startup_timeout.min(MAX_TIMEOUT);
        let generations = AtomicU64::new(0);
        let (running, hello) = match spawn(&options, &generations) {
            Ok((running, hello)) => (Some(running), Ok(hello)),
            Err(SpawnError::CannotStart(e)) => return Err(e),
            Err(SpawnError::NoHello(e)) => (None, Err(e)),
        };
        Ok(ProcessBackend {
            options,
            hello,
            link: Mutex::new(Link {
                running,
                ..Link::default()
            }),
            generations,
            next_id: AtomicU64::new(1),
        })
    }

    /// Why the server's hello is unusable, if it is.
    pub fn hello_error(&self) -> Option<&str> {
        self.hello.as_ref().err().map(String::as_str)
    }

    /// Sends a request and waits for its reply, whose payloads must fit `reply_limits`. Any
    /// failure kills the child; the next request starts a new one, unless the run's budget of
    /// lost time is spent (see `Link`).
    fn request(
        &self,
        header: &Value,
        payloads: &[&[u8]],
        reply_limits: &[u64],
        generation: Option<u64>,
    ) -> Result<(Frame, u64), String> {
        let mut link = self
            .link
            .lock()
            .map_err(|_| "the backend lock is poisoned".to_string())?;
        if let Err(e) = &self.hello {
            return Err(e.clone());
        }
        if let Some(given_up) = &link.given_up {
            return Err(given_up.clone());
        }
        let running = match link.running.take() {
            Some(running) => running,
            None => {
                let started = Instant::now();
                match spawn(&self.options, &self.generations) {
                    Ok((running, _)) => {
                        link.failed_starts = 0;
                        link.restarts += started.elapsed();
                        running
                    }
                    Err(e) => {
                        let text = e.text();
                        return Err(link.lost(
                            Lost::FailedStart,
                            started.elapsed(),
                            text,
                            &self.options,
                        ));
                    }
                }
            }
        };
        let running = link.running.insert(running);
        if let Some(expected) = generation
            && expected != running.generation
        {
            return Err(
                "the backend process was restarted since this operator was compiled".to_string(),
            );
        }
        let this_generation = running.generation;
        let asked = Instant::now();
        match exchange(
            running,
            header,
            payloads,
            reply_limits,
            self.options.timeout,
        ) {
            Ok(frame) => Ok((frame, this_generation)),
            Err(failure) => {
                // What the request itself took: the burial that follows is bounded apart.
                let spent = asked.elapsed();
                let running = link.running.take().expect("present");
                let text = bury(running, &failure.text);
                let what = if failure.stalled {
                    Lost::Hang
                } else {
                    Lost::Restart
                };
                Err(link.lost(what, spent, text, &self.options))
            }
        }
    }
}

impl Drop for ProcessBackend {
    fn drop(&mut self) {
        if let Ok(mut link) = self.link.lock()
            && let Some(running) = link.running.take()
        {
            // Ask politely, then make sure: the child and all it started go.
            shut_down(running, NOTICE_TIMEOUT);
        }
    }
}

/// A reply's text member, bounded; None when absent or not a string.
fn text(reply: &Frame, key: &str) -> Option<String> {
    reply
        .header
        .get(key)
        .and_then(Value::as_str)
        .map(|text| bounded(text, MAX_TEXT_BYTES))
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
        // The reply may carry the output buffers, each at most as long as it went.
        let limits: Vec<u64> = output_bytes.iter().map(|o| o.len() as u64).collect();
        let (reply, _) =
            self.backend
                .request(&header, &payloads, &limits, Some(self.generation))?;
        match reply.kind() {
            "executed" if reply.id() == Some(self.id) => {}
            "error" => {
                return Err(format!(
                    "the backend reported an error: {}",
                    text(&reply, "message").unwrap_or_else(|| "(no message)".to_string())
                ));
            }
            _ => {
                return Err(format!(
                    "protocol violation: expected `executed` for id {}, got {}",
                    self.id,
                    bounded_json(&reply.header)
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
        if let Ok(mut link) = self.backend.link.lock()
            && let Some(running) = link.running.as_mut()
            && running.generation == self.generation
        {
            let release = json!({"type": "release", "id": self.id});
            let _ = notify(running, &release, NOTICE_TIMEOUT);
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

    /// As its hello said (`implementation`); empty without one.
    fn implementation(&self) -> Implementation {
        (self.hello.as_ref())
            .map_or_else(|_| Implementation::default(), |h| h.implementation.clone())
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
            .request(&header, &[], &[], None)
            .map_err(CompileError::Failed)?;
        match reply.kind() {
            "accepted" if reply.id() == Some(id) => Ok(Box::new(ProcessCompiled {
                backend: self,
                id,
                generation,
            })),
            "rejected" if reply.id() == Some(id) => Err(CompileError::Rejected(Rejected {
                rule: text(&reply, "rule"),
                message: text(&reply, "reason").unwrap_or_default(),
            })),
            "unsupported" if reply.id() == Some(id) => Err(CompileError::Unsupported(
                text(&reply, "reason").unwrap_or_default(),
            )),
            "error" => Err(CompileError::Failed(format!(
                "the backend reported an error: {}",
                text(&reply, "message").unwrap_or_default()
            ))),
            _ => Err(CompileError::Failed(format!(
                "protocol violation: expected `accepted` or `rejected` for id {id}, got {}",
                bounded_json(&reply.header)
            ))),
        }
    }
}
