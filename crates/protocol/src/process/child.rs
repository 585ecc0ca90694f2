//! One server process: starting it contained (reaper.rs), its `hello`, the two threads that
//! read its stdout (frames, each checked against what the request waiting for it may take)
//! and stderr (a bounded tail), which end when its pipes close or it is buried, one request
//! and its reply within a timeout, and its burial.

use super::ProcessOptions;
use super::hello::{Hello, parse_hello};
use super::reaper::{Contained, end_server, spawn_lasting};
use crate::PROTOCOL_VERSION;
use crate::bounds::bounded_json;
use crate::frame::{Frame, FrameError, read_head, write_frame};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
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

pub(super) struct Running {
    pub(super) child: Child,
    pub(super) stdin: Input,
    /// Replies, each to the request that was waiting for one; then at most one error, after
    /// which the reader stops. Never more than two are queued.
    frames: Receiver<Result<Frame, String>>,
    /// The payload limits of the reply the harness waits for (None: no request waits, so a
    /// frame that comes is unsolicited).
    awaited: Arc<Mutex<Option<Vec<u64>>>>,
    stderr: Arc<Mutex<StderrTail>>,
    pub(super) generation: u64,
    /// What holds the server and all it starts.
    contained: Contained,
    /// Ends the two reader threads when the server is buried, even while another process
    /// still holds its pipes.
    stop: Stop,
}

/// Why an exchange failed: the text, and whether the child stalled (no reply, or the request
/// not read, within the timeout), which is what costs a run its time.
pub(super) struct Failure {
    pub(super) text: String,
    pub(super) stalled: bool,
}

impl Failure {
    fn stall(text: String) -> Failure {
        Failure {
            text,
            stalled: true,
        }
    }

    fn other(text: String) -> Failure {
        Failure {
            text,
            stalled: false,
        }
    }
}

/// The command: on Unix through `sh -c`; on Windows the program itself, its arguments split by
/// `split_command_line`, with no shell that a kill would leave its child behind.
fn shell(command: &str) -> Command {
    if cfg!(windows) {
        let mut words = split_command_line(command).into_iter();
        let mut c = Command::new(words.next().unwrap_or_default());
        c.args(words);
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

/// A command line split into words the way `process:` commands are on Windows: spaces and tabs
/// separate words; text between double quotes is kept whole, quotes removed; a backslash is
/// itself (paths), except that `\"` is a double quote. So `"C:\Program Files\s.exe" --x "a b"`
/// is three words. (The words are then quoted for the program by the standard library.)
#[cfg_attr(not(windows), allow(dead_code))]
pub(super) fn split_command_line(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'"') => {
                chars.next();
                word.get_or_insert_with(String::new).push('"');
            }
            '"' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            ' ' | '\t' if !quoted => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Why no child could be made ready.
pub(super) enum SpawnError {
    /// The operating system could not start the command at all.
    CannotStart(String),
    /// It started, but gave no usable hello (it died, hung or answered wrongly).
    NoHello(String),
}

impl SpawnError {
    pub(super) fn text(self) -> String {
        match self {
            SpawnError::CannotStart(e) | SpawnError::NoHello(e) => e,
        }
    }
}

pub(super) fn spawn(
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
    let mut contained = Contained::prepare(&mut command);
    let mut child = spawn_lasting(command)
        .map_err(|e| SpawnError::CannotStart(format!("cannot start `{}`: {e}", options.command)))?;
    if let Err(e) = contained.started(&child) {
        end_server(&mut child, &mut contained);
        return Err(SpawnError::CannotStart(format!(
            "cannot contain `{}`: {e}",
            options.command
        )));
    }
    let stdin = child.stdin.take().expect("piped");
    let stdout = child.stdout.take().expect("piped");
    let stderr_pipe = child.stderr.take().expect("piped");
    let stop = match Stop::new() {
        Ok(stop) => stop,
        Err(e) => {
            end_server(&mut child, &mut contained);
            return Err(SpawnError::CannotStart(format!(
                "cannot start `{}`: {e}",
                options.command
            )));
        }
    };
    let stdin = match Input::new(stdin) {
        Ok(stdin) => stdin,
        Err(e) => {
            end_server(&mut child, &mut contained);
            return Err(SpawnError::CannotStart(format!(
                "cannot make the pipe to `{}` non-blocking: {e}",
                options.command
            )));
        }
    };
    // The hello is awaited from the start: a server may answer it before the request is
    // written (or before `exchange` marks it awaited), and that is its reply, not a stray frame.
    let awaited = Arc::new(Mutex::new(Some(Vec::new())));
    let frames = read_replies(stop.reader(stdout), Arc::clone(&awaited));
    let stderr = Arc::new(Mutex::new(StderrTail::default()));
    let tail = Arc::clone(&stderr);
    let mut stderr_pipe = stop.reader(stderr_pipe);
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
        awaited,
        stderr,
        generation: generations.fetch_add(1, Ordering::SeqCst),
        contained,
        stop,
    };
    let hello = json!({"type": "hello", "protocol": PROTOCOL_VERSION});
    let reply = match exchange(&mut running, &hello, &[], &[], options.startup_timeout) {
        Ok(reply) => reply,
        Err(failure) => {
            return Err(SpawnError::NoHello(bury(
                running,
                &format!("during hello: {}", failure.text),
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

/// The thread that reads the child's stdout. Each frame's head is read first: a frame that
/// no request waits for is a protocol violation (so a flood of frames costs one), and a
/// reply's payloads must fit what its request takes before a byte of them is read (so a
/// declared 2 GiB payload allocates nothing). The first error ends the thread.
fn read_replies(
    mut stdout: impl Read + Send + 'static,
    awaited: Arc<Mutex<Option<Vec<u64>>>>,
) -> Receiver<Result<Frame, String>> {
    let (sender, frames) = sync_channel(2);
    std::thread::spawn(move || {
        loop {
            let message = match read_head(&mut stdout) {
                Ok(Some(head)) => {
                    let limits = awaited.lock().ok().and_then(|mut limits| limits.take());
                    match limits {
                        None => Err(format!(
                            "protocol violation: a frame that no request waits for: {}",
                            bounded_json(&head.header)
                        )),
                        Some(limits) => match head.check_payloads(&limits) {
                            Err(e) => Err(format!(
                                "protocol violation: a reply's payloads do not fit its request: {e}"
                            )),
                            Ok(()) => head
                                .read_payloads(&mut stdout)
                                .map_err(|e| describe_read_error(&e)),
                        },
                    }
                }
                Ok(None) => Err("the backend process closed its output".to_string()),
                Err(e) => Err(describe_read_error(&e)),
            };
            let stop = message.is_err();
            if sender.send(message).is_err() || stop {
                return;
            }
        }
    });
    frames
}

fn describe_read_error(error: &FrameError) -> String {
    match error {
        FrameError::Io(e) => format!("reading the backend's output failed: {e}"),
        e => format!("protocol violation: {e}"),
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

/// Writes a request and waits for one reply frame; each of the two takes at most `timeout`.
/// `reply_limits` bounds the reply's payloads (see `Head::check_payloads`).
pub(super) fn exchange(
    running: &mut Running,
    header: &Value,
    payloads: &[&[u8]],
    reply_limits: &[u64],
    timeout: Duration,
) -> Result<Frame, Failure> {
    if let Ok(mut awaited) = running.awaited.lock() {
        *awaited = Some(reply_limits.to_vec());
    }
    write_within(&mut running.stdin, header, payloads, timeout).map_err(|e| {
        if e.kind() == io::ErrorKind::TimedOut {
            Failure::stall(format!(
                "the request was not read within {:.1} s (the backend stopped reading its input?)",
                timeout.as_secs_f64()
            ))
        } else if let Ok(Err(what)) = running.frames.try_recv() {
            // The reader's error came first (a stray frame, garbage): it is why the process
            // is gone, so it is the cause, not the broken pipe that followed.
            Failure::other(what)
        } else {
            Failure::other(format!("writing to the backend process failed: {e}"))
        }
    })?;
    match running.frames.recv_timeout(timeout) {
        Ok(Ok(frame)) => Ok(frame),
        Ok(Err(what)) => Err(Failure::other(what)),
        Err(RecvTimeoutError::Timeout) => Err(Failure::stall(format!(
            "no reply within {:.1} s (hung?)",
            timeout.as_secs_f64()
        ))),
        Err(RecvTimeoutError::Disconnected) => Err(Failure::other(
            "the backend process's output is gone".to_string(),
        )),
    }
}

/// Writes a message that has no reply (`release`), within `timeout`.
pub(super) fn notify(running: &mut Running, header: &Value, timeout: Duration) -> io::Result<()> {
    write_within(&mut running.stdin, header, &[], timeout)
}

/// The pipe to the server's stdin. On Unix it is non-blocking, and a write polls it until its
/// deadline; on Windows, where an anonymous pipe cannot be, a thread of its own writes each
/// frame while the request waits until its deadline (the thread ends when the pipe breaks,
/// which the job object's kill sees to, or when this is dropped and its write is done).
pub(super) struct Input {
    #[cfg(not(windows))]
    stdin: ChildStdin,
    #[cfg(windows)]
    frames: std::sync::mpsc::SyncSender<Vec<u8>>,
    #[cfg(windows)]
    written: Receiver<io::Result<()>>,
    /// A frame is still being written (Windows: its deadline passed).
    #[cfg(windows)]
    busy: bool,
}

impl Input {
    fn new(stdin: ChildStdin) -> io::Result<Input> {
        #[cfg(unix)]
        rustix::io::ioctl_fionbio(&stdin, true)?;
        #[cfg(not(windows))]
        return Ok(Input { stdin });
        #[cfg(windows)]
        {
            let (frames, to_write) = sync_channel::<Vec<u8>>(1);
            let (done, written) = sync_channel(1);
            let mut stdin = stdin;
            std::thread::spawn(move || {
                for frame in to_write {
                    let result = stdin.write_all(&frame).and_then(|()| stdin.flush());
                    if done.send(result).is_err() {
                        return;
                    }
                }
            });
            Ok(Input {
                frames,
                written,
                busy: false,
            })
        }
    }
}

/// Writes one frame, giving up with `TimedOut` when the child has not taken it all within
/// `timeout`.
fn write_within(
    input: &mut Input,
    header: &Value,
    payloads: &[&[u8]],
    timeout: Duration,
) -> io::Result<()> {
    let now = Instant::now();
    let deadline = now.checked_add(timeout).unwrap_or(now + super::MAX_TIMEOUT);
    #[cfg(not(windows))]
    {
        let mut writer = DeadlineWriter {
            stdin: &mut input.stdin,
            deadline,
        };
        write_frame(&mut writer, header, payloads)
    }
    #[cfg(windows)]
    {
        if input.busy {
            // The last frame is not written yet: this one cannot be until it is.
            match input.written.recv_timeout(timeout) {
                Ok(_) => input.busy = false,
                Err(_) => return Err(io::ErrorKind::TimedOut.into()),
            }
        }
        let mut frame = Vec::new();
        write_frame(&mut frame, header, payloads)?;
        if input.frames.send(frame).is_err() {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match input.written.recv_timeout(left) {
            Ok(result) => result,
            Err(RecvTimeoutError::Timeout) => {
                input.busy = true;
                Err(io::ErrorKind::TimedOut.into())
            }
            Err(RecvTimeoutError::Disconnected) => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }
}

#[cfg(not(windows))]
struct DeadlineWriter<'a> {
    stdin: &'a mut ChildStdin,
    deadline: Instant,
}

#[cfg(not(windows))]
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

#[cfg(not(windows))]
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

    /// Neither Unix nor Windows: the pipe blocks and never says `WouldBlock`.
    #[cfg(not(unix))]
    fn wait_writable(&self) -> io::Result<()> {
        let _ = self.deadline;
        Err(io::ErrorKind::TimedOut.into())
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

/// Asks the child to stop (`shutdown`, waiting `timeout` for its `bye`), then ends it and
/// whatever it started.
pub(super) fn shut_down(mut running: Running, timeout: Duration) {
    let shutdown = json!({"type": "shutdown"});
    if let Ok(mut awaited) = running.awaited.lock() {
        *awaited = Some(Vec::new());
    }
    if write_within(&mut running.stdin, &shutdown, &[], timeout).is_ok() {
        let _ = running.frames.recv_timeout(timeout);
    }
    end_server(&mut running.child, &mut running.contained);
    running.stop.stop();
}

/// Ends the child and whatever it started, and describes how the child ended, with its last
/// stderr lines.
pub(super) fn bury(mut running: Running, what: &str) -> String {
    // A child that already closed its pipes may be about to exit: let it, to report its own
    // status.
    let started = Instant::now();
    let mut exited = has_exited(&mut running.child);
    while !exited && started.elapsed() < EXIT_GRACE {
        std::thread::sleep(Duration::from_millis(10));
        exited = has_exited(&mut running.child);
    }
    let status = end_server(&mut running.child, &mut running.contained);
    let ended = match (exited, status) {
        (true, Some(status)) => describe_exit(status),
        _ => "was killed by the harness".to_string(),
    };
    std::thread::sleep(Duration::from_millis(20)); // let the stderr reader catch up
    running.stop.stop();
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

/// What ends a server's reader threads when it is buried (Linux: an eventfd each read polls
/// beside its pipe). Elsewhere a pipe's reader ends when the pipe closes, which the job object
/// (Windows) or process group (other Unix) sees to.
struct Stop {
    #[cfg(target_os = "linux")]
    event: Arc<std::os::fd::OwnedFd>,
}

impl Stop {
    fn new() -> io::Result<Stop> {
        #[cfg(target_os = "linux")]
        {
            use rustix::event::{EventfdFlags, eventfd};
            let event = eventfd(0, EventfdFlags::CLOEXEC)?;
            Ok(Stop {
                event: Arc::new(event),
            })
        }
        #[cfg(not(target_os = "linux"))]
        Ok(Stop {})
    }

    /// `pipe`, read until it closes or `stop` is called.
    fn reader<R: Read + Send + 'static + StopPollable>(&self, pipe: R) -> StoppableReader<R> {
        StoppableReader {
            pipe,
            #[cfg(target_os = "linux")]
            event: Arc::clone(&self.event),
        }
    }

    fn stop(&self) {
        #[cfg(target_os = "linux")]
        let _ = rustix::io::write(&*self.event, &1u64.to_ne_bytes());
    }
}

/// A pipe whose descriptor can be polled (Linux).
#[cfg(target_os = "linux")]
trait StopPollable: std::os::fd::AsFd {}
#[cfg(target_os = "linux")]
impl<T: std::os::fd::AsFd> StopPollable for T {}
#[cfg(not(target_os = "linux"))]
trait StopPollable {}
#[cfg(not(target_os = "linux"))]
impl<T> StopPollable for T {}

struct StoppableReader<R> {
    pipe: R,
    #[cfg(target_os = "linux")]
    event: Arc<std::os::fd::OwnedFd>,
}

impl<R: Read + StopPollable> Read for StoppableReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        #[cfg(target_os = "linux")]
        loop {
            use rustix::event::{PollFd, PollFlags, poll};
            let mut fds = [
                PollFd::new(&self.pipe, PollFlags::IN),
                PollFd::new(&*self.event, PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(_) => {}
            }
            if !fds[1].revents().is_empty() {
                return Err(io::Error::other("the server was buried"));
            }
            break;
        }
        self.pipe.read(buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::{read_replies, split_command_line};
    use crate::frame::write_frame;
    use serde_json::json;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_frame_read_while_no_request_waits_ends_the_reader_with_a_violation() {
        let mut bytes = Vec::new();
        for _ in 0..3 {
            write_frame(&mut bytes, &json!({"type": "accepted", "id": 1}), &[]).unwrap();
        }
        // One reply is awaited: the first frame is it, the second is unsolicited and the
        // third is never read (a flood costs one violation).
        let awaited = Arc::new(Mutex::new(Some(Vec::new())));
        let frames = read_replies(std::io::Cursor::new(bytes), awaited);
        let first = frames.recv().unwrap().unwrap();
        assert_eq!(first.kind(), "accepted");
        assert_eq!(
            frames.recv().unwrap().unwrap_err(),
            r#"protocol violation: a frame that no request waits for: {"id":1,"payloads":[],"type":"accepted"}"#
        );
        assert!(
            frames.recv().is_err(),
            "the reader goes on after a violation"
        );
    }

    #[test]
    fn a_windows_command_line_splits_at_unquoted_blanks_keeping_backslashes() {
        let words = |line: &str| split_command_line(line);
        assert_eq!(
            words(r#""C:\Program Files\s.exe" --x "a b"  c\d"#),
            ["C:\\Program Files\\s.exe", "--x", "a b", "c\\d"]
        );
        assert_eq!(words("python\tserver.py"), ["python", "server.py"]);
        assert_eq!(words(r#"say \"hi\" """#), ["say", "\"hi\"", ""]);
        assert_eq!(words(r#"a"b c"d"#), ["ab cd"]);
        assert_eq!(words("  "), Vec::<String>::new());
    }
}
