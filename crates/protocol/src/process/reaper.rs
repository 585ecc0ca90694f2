//! Nothing a server starts outlives it. Each server is contained by the strongest means the
//! system offers, named by [`containment`] (the run's header prints it):
//!
//! - **cgroup v2** (Linux, where the harness may make cgroups: root, or a delegated
//!   subtree): each server starts inside a fresh cgroup made next to the harness's own (its v2
//!   mount found in /proc/self/mountinfo, its place in /proc/self/cgroup); the server joins
//!   it between fork and exec, so everything it starts is in it too, whatever it does with
//!   process groups, sessions or its environment. Ending the server writes `cgroup.kill`: the
//!   kernel kills every member at once, and the harness waits (bounded) until the cgroup is
//!   empty, then removes it. The one exception: a Wine server (`wineserver`, which every Wine
//!   process of a prefix shares, started by the first of them) is moved into the harness's
//!   shared cgroup before the kill, so that ending one DirectML server does not end another's;
//!   it exits by itself once its last client is gone.
//! - **process group and tag** (other Unix systems, Linux without a usable cgroup v2, or
//!   `DMLCTS_NO_CGROUP=1` in the harness's environment): the
//!   server runs in its own process group, which is killed with it, and every process that
//!   carries its tag (`DMLCTS_SERVER_TAG`, inherited through the environment) or descends from
//!   it is killed too (found in /proc). A process that leaves the group and clears its
//!   environment before the server ends escapes this sweep.
//! - **job object** (Windows): each server is created suspended, put in a job object of its
//!   own that kills its processes when its last handle closes, then resumed (job.rs); ending
//!   the server terminates the job. A harness that dies closes its handles, and so ends its
//!   servers' jobs.
//!
//! On Linux the harness is a child subreaper (`PR_SET_CHILD_SUBREAPER`): what a server starts
//! and leaves is reparented to the harness, not to init (which in a container may never reap
//! it), and reaped here as it exits (the thread that starts servers looks every
//! `ADOPTED_SCAN` while a server runs, and for `SWEEP_TIME` after one ends). Only processes
//! that were a server's are reaped this way, never another child of the harness, whose exit
//! status belongs to whoever started it: with cgroups, those whose cgroup is one of this
//! harness's; in the fallback, those seen alive carrying a server's tag or descending from it
//! when a server ended (a zombie's environment cannot be read), so there an orphan that exits
//! unseen stays a zombie until the harness exits. The server gets SIGKILL when the harness dies (`PR_SET_PDEATHSIG`, see
//! parent_death.rs), tied to the thread that started it, so every server is started from one
//! thread that lasts as long as the harness. Every wait here has a deadline: the server itself
//! always gets SIGKILL, and one that the kernel does not let go within `SWEEP_TIME` is left to
//! the scan that reaps adopted processes.

use std::io;
use std::process::{Child, Command, ExitStatus};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::time::Duration;

/// Set to 1, servers are not put in cgroups: the process group and tag sweep holds them.
#[cfg(target_os = "linux")]
pub(super) const NO_CGROUP_VARIABLE: &str = "DMLCTS_NO_CGROUP";
/// The environment variable that tags a server and what it starts.
pub(super) const TAG_VARIABLE: &str = "DMLCTS_SERVER_TAG";
/// Longest wait for the processes of one server to be gone and reaped.
const SWEEP_TIME: Duration = Duration::from_secs(2);
/// How often, while a server runs, the processes adopted from servers are looked for and
/// reaped.
const ADOPTED_SCAN: Duration = Duration::from_millis(200);

/// How the servers of this run are contained (see the module's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Containment {
    /// A cgroup v2 per server, ended with `cgroup.kill` (Linux).
    Cgroup,
    /// The server's process group, and a sweep of the processes carrying its tag (Unix).
    ProcessGroupAndTag,
    /// A job object per server, closed with its last handle (Windows).
    JobObject,
}

impl std::fmt::Display for Containment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Containment::Cgroup => "a cgroup v2 per server (the kernel ends all it started)",
            Containment::ProcessGroupAndTag => {
                "process group and tag sweep (no usable cgroup v2: a process that leaves its \
                 group and clears its environment can escape)"
            }
            Containment::JobObject => "a job object per server (Windows ends all it started)",
        })
    }
}

/// How servers started now are contained.
pub fn containment() -> Containment {
    #[cfg(target_os = "linux")]
    if cgroup::base().is_some() {
        return Containment::Cgroup;
    }
    if cfg!(windows) {
        Containment::JobObject
    } else {
        Containment::ProcessGroupAndTag
    }
}

/// A tag no other server of any harness has: this process's id and a counter.
pub(super) fn new_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// What holds one server: its tag, its cgroup where there is one, its job object (Windows).
pub(super) struct Contained {
    #[cfg_attr(windows, allow(dead_code))]
    tag: String,
    #[cfg(target_os = "linux")]
    cgroup: Option<cgroup::Cgroup>,
    #[cfg(windows)]
    job: Option<super::job::Job>,
}

impl Contained {
    /// Makes `command` start contained: its tag in the environment, its own process group, a
    /// cgroup of its own and the parent-death signal (Linux).
    pub(super) fn prepare(command: &mut Command) -> Contained {
        let tag = new_tag();
        command.env(TAG_VARIABLE, &tag);
        #[cfg(unix)]
        {
            // Its own process group, so that whatever it starts is killed with it.
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        #[cfg(target_os = "linux")]
        {
            let cgroup = cgroup::Cgroup::new(&tag);
            super::parent_death::contain(command, cgroup.as_ref().map(cgroup::Cgroup::procs));
            Contained { tag, cgroup }
        }
        #[cfg(windows)]
        {
            // Created suspended, put in its job, then resumed (see `started`).
            use std::os::windows::process::CommandExt;
            let job = super::job::Job::new().ok();
            if job.is_some() {
                command.creation_flags(super::job::CREATE_SUSPENDED);
            }
            Contained { tag, job }
        }
        #[cfg(not(any(target_os = "linux", windows)))]
        Contained { tag }
    }

    /// Completes the containment of the started server (Windows: into its job, then resumed).
    pub(super) fn started(&self, child: &Child) -> io::Result<()> {
        #[cfg(windows)]
        if let Some(job) = &self.job {
            return job.adopt(child);
        }
        let _ = child;
        Ok(())
    }
}

type SpawnRequest = (Command, Sender<io::Result<Child>>);

/// Starts `command` from the one thread that starts every server, which lives as long as the
/// harness (a parent-death signal fires when the thread that started the child ends), and
/// reaps what servers leave between starts.
pub(super) fn spawn_lasting(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Option<Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        become_subreaper();
        let (sender, requests) = channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("dmlcts-server-spawner".to_string())
            .spawn(move || {
                loop {
                    match requests.recv_timeout(ADOPTED_SCAN) {
                        Ok((mut command, reply)) => {
                            let _ = reply.send(adopted::start(&mut command));
                        }
                        Err(RecvTimeoutError::Timeout) => adopted::reap(),
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
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
/// grandchildren are reaped here, as they exit, instead of by an init that may never reap
/// them.
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    }
}
/// Kills the server and everything it started, then reaps the server and those of its
/// processes that were reparented here, each wait bounded. Returns the server's status, if it
/// was reaped.
pub(super) fn end_server(child: &mut Child, contained: &mut Contained) -> Option<ExitStatus> {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process, kill_process_group};
        use std::time::Instant;
        let server = Pid::from_child(child);
        let until = Instant::now() + SWEEP_TIME;
        #[cfg(target_os = "linux")]
        if let Some(cgroup) = contained.cgroup.take() {
            cgroup.kill(until);
            let _ = kill_process(server, Signal::KILL);
            let status = adopted::wait_server(child, until);
            adopted::reap();
            cgroup.remove(until);
            return status;
        }
        // Seen before the kill: once the server dies, its descendants are no longer linked to
        // it by their parent ids.
        let mut strays = table::strays(server.as_raw_nonzero().get(), &contained.tag);
        adopted::remember(&strays);
        // The child is not reaped yet, so its pid (the group's id) cannot have been reused.
        let _ = kill_process_group(server, Signal::KILL);
        // The server itself, wherever its group now is.
        let _ = kill_process(server, Signal::KILL);
        table::kill(&strays);
        let status = adopted::wait_server(child, until);
        // A tagged process may have forked while the others were being killed.
        while Instant::now() < until {
            let more: Vec<i32> = table::strays(0, &contained.tag)
                .into_iter()
                .filter(|pid| !strays.contains(pid))
                .collect();
            if more.is_empty() {
                break;
            }
            adopted::remember(&more);
            table::kill(&more);
            strays.extend(more);
        }
        // SIGKILL cannot be caught, so they go quickly; what is reparented here is reaped.
        while Instant::now() < until && table::any_alive(&strays) {
            std::thread::sleep(Duration::from_millis(5));
        }
        adopted::reap();
        status
    }
    #[cfg(not(unix))]
    {
        use std::time::Instant;
        #[cfg(windows)]
        if let Some(job) = &contained.job {
            job.kill();
        }
        #[cfg(not(windows))]
        let _ = contained;
        let _ = child.kill();
        let until = Instant::now() + SWEEP_TIME;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                _ => return None,
            }
        }
    }
}

/// The servers this harness started and the processes adopted from them (Unix): servers are
/// reaped by whoever owns their `Child`; the others by `reap`, as they exit.
mod adopted {
    use std::collections::HashSet;
    #[cfg(unix)]
    use std::process::ExitStatus;
    use std::process::{Child, Command};
    use std::sync::Mutex;
    #[cfg(unix)]
    use std::time::{Duration, Instant};

    #[derive(Default)]
    struct Known {
        /// Servers not yet reaped by their owner.
        servers: HashSet<i32>,
        /// Processes seen carrying a server's tag, or descending from one (the fallback's way
        /// of knowing them once they are zombies, whose environment cannot be read).
        strays: HashSet<i32>,
        /// When the last server ended: its processes may still be reparented here a moment
        /// later.
        #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
        last_end: Option<std::time::Instant>,
    }

    static KNOWN: Mutex<Option<Known>> = Mutex::new(None);

    fn with<T>(f: impl FnOnce(&mut Known) -> T) -> T {
        let mut known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
        f(known.get_or_insert_with(Known::default))
    }

    /// Starts a server and records it, under the lock `reap` takes, so that `reap` never
    /// takes a server for an adopted process.
    pub(super) fn start(command: &mut Command) -> std::io::Result<Child> {
        with(|known| {
            let child = command.spawn()?;
            known.servers.insert(child.id() as i32);
            Ok(child)
        })
    }

    #[cfg_attr(not(unix), allow(dead_code))]
    pub(super) fn remember(pids: &[i32]) {
        with(|known| known.strays.extend(pids));
    }

    /// Waits for the server (already sent SIGKILL) until `until`; one still not gone is left
    /// to `reap`.
    #[cfg(unix)]
    pub(super) fn wait_server(child: &mut Child, until: Instant) -> Option<ExitStatus> {
        let pid = child.id() as i32;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    with(|known| {
                        known.servers.remove(&pid);
                        known.last_end = Some(Instant::now());
                    });
                    return Some(status);
                }
                Ok(None) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(2));
                }
                _ => {
                    with(|known| {
                        known.servers.remove(&pid);
                        known.strays.insert(pid);
                        known.last_end = Some(Instant::now());
                    });
                    return None;
                }
            }
        }
    }

    /// Reaps every zombie child of this process that was a server's (by its cgroup, or known
    /// as a stray), never another child of the harness.
    pub(super) fn reap() {
        #[cfg(target_os = "linux")]
        with(|known| {
            let recent = known
                .last_end
                .is_some_and(|end| end.elapsed() < super::SWEEP_TIME);
            if known.servers.is_empty() && known.strays.is_empty() && !recent {
                return;
            }
            let me = std::process::id() as i32;
            for (pid, parent, state) in super::table::read() {
                if parent != me || state != 'Z' || known.servers.contains(&pid) {
                    continue;
                }
                if !known.strays.contains(&pid) && !super::cgroup::was_ours(pid) {
                    continue;
                }
                if let Some(raw) = rustix::process::Pid::from_raw(pid) {
                    let _ =
                        rustix::process::waitpid(Some(raw), rustix::process::WaitOptions::NOHANG);
                }
                known.strays.remove(&pid);
            }
            // Strays that are gone (reaped by their own parent) are forgotten.
            known
                .strays
                .retain(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists());
        });
    }
}

/// A cgroup v2 per server (Linux).
#[cfg(target_os = "linux")]
mod cgroup {
    use std::fs::File;
    use std::io::Write;
    use std::os::fd::{AsRawFd, RawFd};
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;
    use std::time::{Duration, Instant};

    /// Where this harness makes its servers' cgroups (its own cgroup in the v2 hierarchy), if
    /// it can: one made and removed there to find out, with a `cgroup.kill`.
    pub(super) fn base() -> Option<&'static PathBuf> {
        static BASE: OnceLock<Option<PathBuf>> = OnceLock::new();
        BASE.get_or_init(|| {
            // The fallback, on request (to see what it holds, or where cgroups misbehave).
            if std::env::var_os(super::NO_CGROUP_VARIABLE).is_some_and(|v| v == "1") {
                return None;
            }
            let base = find_base()?;
            let probe = base.join(format!("dmlcts-{}-probe", std::process::id()));
            std::fs::create_dir(&probe).ok()?;
            let usable = probe.join("cgroup.kill").exists() && probe.join("cgroup.procs").exists();
            let _ = std::fs::remove_dir(&probe);
            if usable {
                remove_stale(&base);
            }
            usable.then_some(base)
        })
        .as_ref()
    }

    fn find_base() -> Option<PathBuf> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        // "id parent major:minor root mount-point options ... - fstype source options"
        let mount = mountinfo.lines().find_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            if right.split_whitespace().next()? != "cgroup2" {
                return None;
            }
            let fields: Vec<&str> = left.split_whitespace().collect();
            (fields.get(3) == Some(&"/")).then(|| unescape(fields.get(4)?))?
        })?;
        let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
        Some(Path::new(&mount).join(path.trim_start_matches('/')))
    }

    /// A mountinfo field, with its octal escapes (`\040` for a space) undone.
    fn unescape(field: &str) -> Option<PathBuf> {
        use std::os::unix::ffi::OsStringExt;
        let bytes = field.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'\\' && i + 4 <= bytes.len() {
                let octal = std::str::from_utf8(&bytes[i + 1..i + 4]).ok()?;
                out.push(u8::from_str_radix(octal, 8).ok()?);
                i += 4;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        Some(PathBuf::from(std::ffi::OsString::from_vec(out)))
    }

    /// The name every cgroup of this harness starts with.
    fn prefix() -> String {
        format!("dmlcts-{}-", std::process::id())
    }

    /// Ends what the servers of harnesses no longer running left (one killed by SIGKILL ends
    /// only its servers themselves, by their parent-death signal, not what they started) and
    /// removes their cgroups. A dead harness's shared cgroup (Wine servers, which a live
    /// harness's server may use) is only removed once empty.
    fn remove_stale(base: &Path) {
        let Ok(entries) = std::fs::read_dir(base) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(harness) = name
                .to_str()
                .and_then(|n| n.strip_prefix("dmlcts-"))
                .and_then(|n| n.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if Path::new(&format!("/proc/{harness}")).exists() {
                continue;
            }
            let dir = entry.path();
            if !name.to_string_lossy().ends_with("-shared") {
                let _ = std::fs::write(dir.join("cgroup.kill"), "1");
                let until = Instant::now() + super::SWEEP_TIME;
                while populated(&dir) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
            let _ = std::fs::remove_dir(&dir);
        }
    }

    /// Whether process `pid` is (or, a zombie, was) in a cgroup of this harness.
    pub(super) fn was_ours(pid: i32) -> bool {
        let Ok(cgroups) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            return false;
        };
        let prefix = prefix();
        cgroups
            .lines()
            .filter_map(|l| l.strip_prefix("0::"))
            .any(|path| {
                path.trim_end_matches(" (deleted)")
                    .rsplit('/')
                    .next()
                    .is_some_and(|name| name.starts_with(&prefix))
            })
    }

    pub(super) struct Cgroup {
        dir: PathBuf,
        /// Its `cgroup.procs`, open for the server to write itself into between fork and
        /// exec.
        procs: File,
    }

    impl Cgroup {
        /// A fresh cgroup for the server tagged `tag`, or None (then the fallback holds it).
        pub(super) fn new(tag: &str) -> Option<Cgroup> {
            let base = base()?;
            let dir = base.join(format!("dmlcts-{tag}"));
            std::fs::create_dir(&dir).ok()?;
            match std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
            {
                Ok(procs) => Some(Cgroup { dir, procs }),
                Err(_) => {
                    let _ = std::fs::remove_dir(&dir);
                    None
                }
            }
        }

        pub(super) fn procs(&self) -> RawFd {
            self.procs.as_raw_fd()
        }

        /// Kills every member, the Wine server aside (moved to the shared cgroup first), and
        /// waits until none is left or `until`.
        pub(super) fn kill(&self, until: Instant) {
            for pid in self.members() {
                if is_wine_server(pid)
                    && let Some(shared) = shared()
                {
                    let _ = std::fs::write(shared.join("cgroup.procs"), pid.to_string());
                }
            }
            if let Ok(mut kill) = std::fs::OpenOptions::new()
                .write(true)
                .open(self.dir.join("cgroup.kill"))
            {
                let _ = kill.write_all(b"1");
            }
            while self.populated() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
        }

        fn members(&self) -> Vec<i32> {
            std::fs::read_to_string(self.dir.join("cgroup.procs"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.trim().parse().ok())
                .collect()
        }

        fn populated(&self) -> bool {
            populated(&self.dir)
        }

        /// Removes the (empty) cgroup, trying until `until`; and the shared one, if empty.
        pub(super) fn remove(&self, until: Instant) {
            while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < until {
                if !self.dir.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            if let Some(shared) = base().map(|b| b.join(format!("{}shared", prefix()))) {
                // Fails while a Wine server is still in it.
                let _ = std::fs::remove_dir(shared);
            }
        }
    }

    /// Whether the cgroup at `dir` has a process in it (or below it).
    fn populated(dir: &Path) -> bool {
        std::fs::read_to_string(dir.join("cgroup.events"))
            .map(|events| events.lines().any(|l| l == "populated 1"))
            .unwrap_or(false)
    }

    impl Drop for Cgroup {
        /// One made for a server that never started (or one not removed in time) goes now
        /// if it is empty; else a later harness removes it (see `remove_stale`).
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }

    /// The cgroup of the processes servers share on purpose (made when first needed).
    fn shared() -> Option<PathBuf> {
        let dir = base()?.join(format!("{}shared", prefix()));
        if !dir.exists() {
            std::fs::create_dir(&dir).ok()?;
        }
        Some(dir)
    }

    /// Whether `pid` runs Wine's server (`wineserver`, `wineserver64`), which every Wine
    /// process of a prefix shares: the system's own binary (`system_wine_servers`), never
    /// another file of that name, which a server could make to outlive its cgroup.
    fn is_wine_server(pid: i32) -> bool {
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .is_ok_and(|exe| system_wine_servers().contains(&exe))
    }

    /// The Wine server binaries of this system: `wineserver` and `wineserver64` where PATH
    /// finds them, and beside the file each resolves to (Debian's `wineserver` is a script
    /// that runs `wineserver64` from its own folder), links resolved. Read once.
    fn system_wine_servers() -> &'static [PathBuf] {
        static FOUND: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
        FOUND.get_or_init(|| {
            let names = ["wineserver", "wineserver64"];
            let mut found = Vec::new();
            let path = std::env::var_os("PATH").unwrap_or_default();
            for dir in std::env::split_paths(&path) {
                for name in names {
                    let Ok(real) = std::fs::canonicalize(dir.join(name)) else {
                        continue;
                    };
                    if let Some(folder) = real.parent() {
                        for beside in names {
                            if let Ok(real) = std::fs::canonicalize(folder.join(beside)) {
                                found.push(real);
                            }
                        }
                    }
                    found.push(real);
                }
            }
            found.sort();
            found.dedup();
            found
        })
    }
}

/// The process table, read from /proc (Linux). Elsewhere it is empty: only the process group
/// is killed.
#[cfg(unix)]
mod table {
    /// Processes that carry `tag` in their environment, or descend from `root` (0: none),
    /// zombies included, this process excluded.
    pub(super) fn strays(root: i32, tag: &str) -> Vec<i32> {
        let entries = read();
        let me = std::process::id() as i32;
        let mut found: Vec<i32> = entries
            .iter()
            .filter(|e| e.0 != me && (e.0 == root || carries(e.0, tag)))
            .map(|e| e.0)
            .collect();
        // Descendants, by parent id, until no new one appears.
        let mut grew = true;
        while grew {
            grew = false;
            for e in &entries {
                if e.0 != me && found.contains(&e.1) && !found.contains(&e.0) {
                    found.push(e.0);
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

    /// Whether any of `pids` is still running (not gone, not a zombie).
    pub(super) fn any_alive(pids: &[i32]) -> bool {
        let entries = read();
        entries
            .iter()
            .any(|(pid, _, state)| *state != 'Z' && pids.contains(pid))
    }

    /// Every process: its pid, its parent's and its state.
    #[cfg(target_os = "linux")]
    pub(super) fn read() -> Vec<(i32, i32, char)> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|entry| {
                let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                // "pid (comm) state ppid ...": comm may hold anything, so split after its ')'.
                let (_, rest) = stat.rsplit_once(')')?;
                let mut fields = rest.split_whitespace();
                let state = fields.next()?.chars().next()?;
                let parent = fields.next()?.parse().ok()?;
                Some((pid, parent, state))
            })
            .collect()
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn read() -> Vec<(i32, i32, char)> {
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
