//! Windows: each server in a job object of its own, which ends the server and everything it
//! started when the server is ended (`TerminateJobObject`) or when the harness dies, however it
//! dies (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: the kernel closes the harness's handles, the
//! last one to the job ends it). The server is created suspended (`CREATE_SUSPENDED`),
//! assigned to the job, then resumed, so nothing it starts is born outside the job. The one
//! place this crate uses `unsafe` on Windows.
#![allow(unsafe_code)]

use std::io;
use std::os::windows::io::AsRawHandle;
use std::process::Child;
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};

pub(super) use windows_sys::Win32::System::Threading::CREATE_SUSPENDED;

/// A job object that kills its processes when its last handle closes.
pub(super) struct Job {
    /// The job's handle, as an integer (a handle is a pointer type, which is not `Send`; this
    /// one is used only through the functions below, from any thread).
    handle: isize,
}

impl Job {
    pub(super) fn new() -> io::Result<Job> {
        // SAFETY: plain Win32 calls with valid arguments: no security attributes, no name; the
        // limit structure is zeroed (a valid value of that plain-data type), lives across the
        // call, and its size is passed with it. The handle is checked before use and closed
        // once, by Drop.
        unsafe {
            let handle = CreateJobObjectW(std::ptr::null(), std::ptr::null());
            if handle.is_null() {
                return Err(io::Error::last_os_error());
            }
            let job = Job {
                handle: handle as isize,
            };
            let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = std::mem::zeroed();
            limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
            let set = SetInformationJobObject(
                handle,
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            );
            if set == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(job)
        }
    }

    fn raw(&self) -> HANDLE {
        self.handle as HANDLE
    }

    /// Puts the (suspended) child in the job, then resumes its threads.
    pub(super) fn adopt(&self, child: &Child) -> io::Result<()> {
        // SAFETY: the child's process handle is valid while `child` is (it is not yet
        // waited for); the job's handle is valid while `self` is.
        let assigned = unsafe { AssignProcessToJobObject(self.raw(), child.as_raw_handle()) };
        let result = if assigned == 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
        // Resumed either way: a child that cannot be contained is killed by the caller, which
        // must be able to end it.
        resume(child.id())?;
        result
    }

    /// Ends every process in the job.
    pub(super) fn kill(&self) {
        // SAFETY: the job's handle is valid while `self` is.
        unsafe {
            TerminateJobObject(self.raw(), 1);
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: the handle came from CreateJobObjectW and is closed only here.
        unsafe {
            CloseHandle(self.raw());
        }
    }
}

/// Resumes every thread of process `pid` (a process created suspended has one).
fn resume(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of the system's threads, walked with an entry whose size field is set
    // as the API requires; every handle opened is checked and closed.
    unsafe {
        let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0);
        if snapshot == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        let mut entry: THREADENTRY32 = std::mem::zeroed();
        entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
        let mut resumed = 0;
        let mut more = Thread32First(snapshot, &mut entry) != 0;
        while more {
            if entry.th32OwnerProcessID == pid {
                let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                if !thread.is_null() {
                    if ResumeThread(thread) != u32::MAX {
                        resumed += 1;
                    }
                    CloseHandle(thread);
                }
            }
            more = Thread32Next(snapshot, &mut entry) != 0;
        }
        CloseHandle(snapshot);
        if resumed == 0 {
            return Err(io::Error::other("its thread could not be resumed"));
        }
        Ok(())
    }
}
