//! The one place this crate uses `unsafe`: a server started by the harness asks the kernel to
//! send it SIGKILL when the harness dies (`PR_SET_PDEATHSIG`), so that a harness killed by
//! SIGKILL, which cleans nothing up, leaves no server running. Only the process the harness
//! starts gets it: `sh -c 'exec SERVER'` (a simple command) is the server itself; a compound
//! command's shell gets it, not what the shell starts.
#![allow(unsafe_code)]

use rustix::process::{Pid, Signal, getpid, getppid, set_parent_process_death_signal};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the child that `command` starts die with the thread that starts it (see
/// reaper::spawn_lasting, which starts every server from a thread that lasts as long as the
/// harness).
pub(super) fn kill_with_harness(command: &mut Command) {
    let harness: Pid = getpid();
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe work is allowed. It makes two system calls through rustix's raw Linux
    // backend (prctl and getppid), allocates nothing (an error is a raw OS error code) and
    // takes no lock.
    unsafe {
        command.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::KILL))?;
            // The harness may have died before the signal was asked for: then none will come.
            if getppid() != Some(harness) {
                return Err(rustix::io::Errno::SRCH.into());
            }
            Ok(())
        });
    }
}
