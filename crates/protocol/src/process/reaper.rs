//! Nothing a server starts outlives it. On Linux:
//!
//! - the server runs in its own process group, and the whole group is killed with it;
//! - the harness is a child subreaper (`PR_SET_CHILD_SUBREAPER`): what a server starts and
//!   then leaves (a double fork, `setsid`) is reparented to the harness, not to init, and is
//!   reaped here;
//! - every server gets a tag in its environment (`DMLCTS_SERVER_TAG`), which whatever it
//!   starts inherits; when the server ends, every process carrying its tag, or descending from
//!   it, is killed too, wherever its group or session (found in /proc);
//! - the server gets SIGKILL when the harness dies (`PR_SET_PDEATHSIG`, see parent_death.rs),
//!   so that a harness killed by SIGKILL leaves no server behind. The signal is tied to the
//!   thread that started the child, so every server is started from one thread that lasts as
//!   long as the harness.
//!
//! A process that a server starts with its environment cleared and then leaves escapes the
//! sweep (it is still reaped here if it exits); so does one whose harness was killed.

use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};

/// The environment variable that tags a server and what it starts.
pub(super) const TAG_VARIABLE: &str = "DMLCTS_SERVER_TAG";
/// Longest wait for the processes of one server to be gone and reaped.
#[cfg(unix)]
const SWEEP_TIME: std::time::Duration = std::time::Duration::from_secs(2);

/// A tag no other server of any harness has: this process's id and a counter.
pub(super) fn new_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

type SpawnRequest = (Command, Sender<io::Result<Child>>);

/// Starts `command` from the one thread that starts every server, which lives as long as the
/// harness (a parent-death signal fires when the thread that started the child ends).
pub(super) fn spawn_lasting(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Option<Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        become_subreaper();
        let (sender, requests) = channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("dmlcts-server-spawner".to_string())
            .spawn(move || {
                for (mut command, reply) in requests {
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| sender)
    });
    let Some(spawner) = spawner else {
        return Err(io::Error::other(
            "the thread that starts servers could not start",
        ));
    };
    let (reply, child) = channel();
    spawner
        .send((command, reply))
        .map_err(|_| io::Error::other("the thread that starts servers is gone"))?;
    child
        .recv()
        .map_err(|_| io::Error::other("the thread that starts servers is gone"))?
}

/// Makes this process the reaper of orphaned descendants (Linux), so that a server's
/// grandchildren, killed with its group, are reaped here instead of waiting on an init that
/// may never reap them.
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    }
}

/// Kills the child's whole process group and every process that carries its tag or descends
/// from it, then reaps the child and those of them that were reparented here. Returns the
/// child's status.
pub(super) fn end_server(child: &mut Child, tag: &str) -> Option<ExitStatus> {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, WaitOptions, kill_process_group, waitpgid};
        use std::time::{Duration, Instant};
        let group = Pid::from_child(child);
        // Seen before the kill: once the server dies, its descendants are no longer linked to
        // it by their parent ids.
        let mut strays = table::strays(group.as_raw_nonzero().get(), tag);
        // The child is not reaped yet, so its pid (the group's id) cannot have been reused.
        let _ = kill_process_group(group, Signal::KILL);
        table::kill(&strays);
        let status = child.wait().ok();
        // Members whose parent died were reparented to this process (see become_subreaper);
        // SIGKILL cannot be caught, so they go quickly, but never wait without bound.
        let until = Instant::now() + SWEEP_TIME;
        while Instant::now() < until {
            match waitpgid(group, WaitOptions::NOHANG) {
                Ok(Some(_)) => {}
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break, // no child of ours left in the group
            }
        }
        // A tagged process may have forked while the others were being killed.
        while Instant::now() < until {
            let more: Vec<i32> = table::strays(0, tag)
                .into_iter()
                .filter(|pid| !strays.contains(pid))
                .collect();
            if more.is_empty() {
                break;
            }
            table::kill(&more);
            strays.extend(more);
        }
        table::reap(&strays, until);
        status
    }
    #[cfg(not(unix))]
    {
        let _ = tag;
        let _ = child.kill();
        child.wait().ok()
    }
}

/// The process table, read from /proc (Linux). Elsewhere it is empty: only the process group
/// is killed.
#[cfg(unix)]
mod table {
    use std::time::{Duration, Instant};

    /// Processes that carry `tag` in their environment, or descend from `root` (0: none),
    /// zombies included, this process excluded.
    pub(super) fn strays(root: i32, tag: &str) -> Vec<i32> {
        let entries = read();
        let me = std::process::id() as i32;
        let mut found: Vec<i32> = entries
            .iter()
            .filter(|e| e.pid != me && (e.pid == root || carries(e.pid, tag)))
            .map(|e| e.pid)
            .collect();
        // Descendants, by parent id, until no new one appears.
        let mut grew = true;
        while grew {
            grew = false;
            for e in &entries {
                if e.pid != me && found.contains(&e.parent) && !found.contains(&e.pid) {
                    found.push(e.pid);
                    grew = true;
                }
            }
        }
        found.retain(|&pid| pid != root);
        found
    }

    pub(super) fn kill(pids: &[i32]) {
        use rustix::process::{Pid, Signal, kill_process};
        for &pid in pids {
            if let Some(pid) = Pid::from_raw(pid) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
    }

    /// Reaps those of `pids` whose parent is this process (so never another's child), until
    /// `until`.
    pub(super) fn reap(pids: &[i32], until: Instant) {
        use rustix::process::{Pid, WaitOptions, waitpid};
        let me = std::process::id() as i32;
        let mut left: Vec<i32> = pids.to_vec();
        while !left.is_empty() {
            let entries = read();
            left.retain(|&pid| {
                let Some(entry) = entries.iter().find(|e| e.pid == pid) else {
                    return false; // gone, reaped elsewhere
                };
                if entry.parent != me {
                    return false; // not ours to reap
                }
                let Some(raw) = Pid::from_raw(pid) else {
                    return false;
                };
                !matches!(
                    waitpid(Some(raw), WaitOptions::NOHANG),
                    Ok(Some(_)) | Err(_)
                )
            });
            if left.is_empty() || Instant::now() >= until {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    struct Entry {
        pid: i32,
        parent: i32,
    }

    #[cfg(target_os = "linux")]
    fn read() -> Vec<Entry> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|entry| {
                let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                // "pid (comm) state ppid ...": comm may hold anything, so split after its ')'.
                let (_, rest) = stat.rsplit_once(')')?;
                let parent = rest.split_whitespace().nth(1)?.parse().ok()?;
                Some(Entry { pid, parent })
            })
            .collect()
    }

    #[cfg(not(target_os = "linux"))]
    fn read() -> Vec<Entry> {
        Vec::new()
    }

    /// Whether the process's environment holds `DMLCTS_SERVER_TAG=tag` (read up to 8 MiB; a
    /// process of another user is not readable and carries no tag of ours).
    fn carries(pid: i32, tag: &str) -> bool {
        use std::io::Read;
        let Ok(file) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let mut environment = Vec::new();
        if file.take(8 << 20).read_to_end(&mut environment).is_err() {
            return false;
        }
        let wanted = format!("{}={tag}", super::TAG_VARIABLE);
        environment
            .split(|&b| b == 0)
            .any(|variable| variable == wanted.as_bytes())
    }
}
