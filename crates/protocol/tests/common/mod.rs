//! What the broken-server tests share: the doc cases, and a run that records every process
//! the server starts and checks the process table afterwards.

use dmlcts_harness::{Case, CaseResult, Corpus, RunOptions, run_case};
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use std::path::Path;
use std::time::{Duration, Instant};

/// The eight `doc.` cases: join four times, slice1 twice, split twice, in that order.
pub fn doc_cases() -> Vec<Case> {
    Corpus::embedded()
        .cases
        .into_iter()
        .filter(|c| c.name.starts_with("doc."))
        .collect()
}

/// A broken server's run: its results, the wall time, and what its processes left behind.
pub struct Run {
    pub results: Vec<CaseResult>,
    pub elapsed: Duration,
    /// Processes the server started (itself included) or members of their process groups
    /// still in the process table after the run, zombies included.
    pub left_behind: Vec<String>,
}

/// Runs `cases` on `dmlcts-broken-server FAULT PIDS_FILE`, then checks the process table.
pub fn run_recording_pids(fault: &str, cases: &[Case], timeout: Duration) -> Run {
    let pids_file = std::env::temp_dir().join(format!(
        "dmlcts-broken-{}-{}.pids",
        fault.replace(' ', "-"),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&pids_file);
    let command = format!(
        "{} {fault} {}",
        env!("CARGO_BIN_EXE_dmlcts-broken-server"),
        pids_file.display()
    );
    let mut options = ProcessOptions::new(&command);
    options.timeout = timeout;
    options.startup_timeout = timeout;
    let started = Instant::now();
    let backend = ProcessBackend::start(options).expect("the broken server starts");
    let results = cases
        .iter()
        .map(|case| run_case(&backend, case, &RunOptions::default()))
        .collect::<Vec<_>>();
    drop(backend);
    let elapsed = started.elapsed();
    let left_behind = left_behind(&pids_file);
    let _ = std::fs::remove_file(&pids_file);
    Run {
        results,
        elapsed,
        left_behind,
    }
}

/// Every process in /proc whose pid or process group is one of those recorded in the file.
pub fn left_behind(pids_file: &Path) -> Vec<String> {
    let recorded: Vec<u32> = std::fs::read_to_string(pids_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert!(!recorded.is_empty(), "the broken server recorded its pid");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")
        .expect("a process table")
        .flatten()
    {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces, so split after its ')'.
        let Some((comm, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let group: u32 = fields.get(2).and_then(|g| g.parse().ok()).unwrap_or(0);
        if recorded.contains(&pid) || recorded.contains(&group) {
            found.push(format!(
                "pid {pid} group {group} state {} {comm})",
                fields.first().unwrap_or(&"?")
            ));
        }
    }
    found
}

/// This process's children that are zombies (exited, not reaped), as "pid (comm)".
#[allow(dead_code)] // used by some of the test files that share this module
pub fn zombie_children() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")
        .expect("a process table")
        .flatten()
    {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str()) {
            found.push(format!("{head})"));
        }
    }
    found
}
