//! The one place this crate uses `unsafe` on Linux: between fork and exec, a server started by
//! the harness joins its cgroup (when it has one, see reaper.rs) and asks the kernel to send it
//! SIGKILL when the harness dies (`PR_SET_PDEATHSIG`), so that a harness killed by SIGKILL,
//! which cleans nothing up, leaves no server running. Only the process the harness starts gets
//! the signal: `sh -c 'exec SERVER'` (a simple command) is the server itself; a compound
//! command's shell gets it, not what the shell starts (its cgroup holds them all).
#![allow(unsafe_code)]

use rustix::process::{Pid, Signal, getpid, getppid, set_parent_process_death_signal};
use std::os::fd::{BorrowedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the child that `command` starts join the cgroup whose `cgroup.procs` is open as
/// `cgroup_procs` (if any), and die with the thread that starts it (see
/// reaper::spawn_lasting, which starts every server from a thread that lasts as long as the
/// harness). The descriptor must stay open until the child is started.
pub(super) fn contain(command: &mut Command, cgroup_procs: Option<RawFd>) {
    let harness: Pid = getpid();
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe work is allowed. It makes system calls through rustix's raw Linux
    // backend (write, prctl and getppid), allocates nothing (an error is a raw OS error code)
    // and takes no lock. `cgroup_procs` is open in the parent until the spawn returns (the
    // caller keeps it), so it is open in the child, which inherits it.
    unsafe {
        command.pre_exec(move || {
            if let Some(fd) = cgroup_procs {
                // "0": the writing process itself.
                rustix::io::write(BorrowedFd::borrow_raw(fd), b"0")?;
            }
            set_parent_process_death_signal(Some(Signal::KILL))?;
            // The harness may have died before the signal was asked for: then none will come.
            if getppid() != Some(harness) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}
