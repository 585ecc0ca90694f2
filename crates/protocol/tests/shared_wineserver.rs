//! Two DirectML servers at once under Wine share one `wineserver` (per Wine prefix), started by
//! the first: ending the first server (its cgroup killed) must not end the second's. Runs only
//! where `DMLCTS_DIRECTML_STACK` names a stack made by `cargo xtask directml setup` (its
//! `run-server.sh` and a version folder, 1.15.4 by default, or `DMLCTS_DIRECTML_VERSION`).
#![cfg(target_os = "linux")]

#[allow(dead_code)] // this file uses only the doc cases of the shared helpers
mod common;

use common::doc_cases;
use dmlcts_harness::report::Summary;
use dmlcts_harness::{RunOptions, run_case};
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn directml_server(stack: &Path, version: &str) -> ProcessBackend {
    let command = format!(
        "{} {}",
        stack.join("run-server.sh").display(),
        stack.join(version).display()
    );
    let mut options = ProcessOptions::new(&command);
    options.timeout = Duration::from_secs(60);
    options.startup_timeout = Duration::from_secs(120);
    let backend = ProcessBackend::start(options).expect("the DirectML server starts");
    assert_eq!(backend.hello_error(), None);
    backend
}

/// The running wineservers' pids.
fn wineservers() -> Vec<String> {
    std::fs::read_dir("/proc")
        .expect("a process table")
        .flatten()
        .filter(|entry| {
            std::fs::read_link(entry.path().join("exe")).is_ok_and(|exe| {
                exe.file_name()
                    .is_some_and(|n| n == "wineserver" || n == "wineserver64")
            })
        })
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn ending_one_directml_server_leaves_the_wineserver_another_one_uses() {
    let Some(stack) = std::env::var_os("DMLCTS_DIRECTML_STACK").map(PathBuf::from) else {
        eprintln!("skipped: DMLCTS_DIRECTML_STACK names no DirectML stack");
        return;
    };
    let version = std::env::var("DMLCTS_DIRECTML_VERSION").unwrap_or_else(|_| "1.15.4".to_string());
    let cases = doc_cases();
    let first = directml_server(&stack, &version);
    let second = directml_server(&stack, &version);
    assert_eq!(wineservers().len(), 1, "one wineserver for the prefix");
    let run = |backend: &ProcessBackend| {
        let results: Vec<_> = cases
            .iter()
            .map(|case| run_case(backend, case, &RunOptions::default()))
            .collect();
        Summary::of(&results).line()
    };
    assert_eq!(run(&first), "8 passed, 0 failed, 0 skipped");
    drop(first);
    assert_eq!(
        wineservers().len(),
        1,
        "the shared wineserver outlives the first server"
    );
    assert_eq!(run(&second), "8 passed, 0 failed, 0 skipped");
    drop(second);
}
