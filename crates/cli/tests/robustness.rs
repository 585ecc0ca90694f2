//! The command as a user runs it against misbehaving backends and files, and into a closed
//! pipe: every run ends with its true summary line and exit status, within its timeouts, and
//! leaves no process behind.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn dmlcts(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run dmlcts");
    (out, started.elapsed())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A shell command that writes one protocol frame with this JSON header.
fn printf_frame(header: &str) -> String {
    let length: String = (header.len() as u32)
        .to_le_bytes()
        .iter()
        .map(|b| format!("\\{b:03o}"))
        .collect();
    format!("printf '{length}{header}'")
}

#[test]
fn a_closed_stdout_ends_the_run_quietly_with_its_status() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args(["conformance", "--backend", "cpu", "--verbose"])
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dmlcts");
    // `| head -c 600`: read 600 bytes, then go.
    let mut head = [0u8; 600];
    child
        .stdout
        .take()
        .expect("piped")
        .read_exact(&mut head)
        .expect("600 bytes of output");
    let out = child.wait_with_output().expect("it ends");
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
}

#[cfg(unix)]
#[test]
fn a_bad_hello_is_one_error_that_ends_the_run_with_exit_status_2() {
    let server = format!(
        "{}; echo 'my server: cannot open the device' >&2; exec sleep 30",
        printf_frame(r#"{"type":"hello","protocol":999}"#)
    );
    let backend = format!("process:{server}");
    let (out, elapsed) = dmlcts(&[
        "conformance",
        "--backend",
        &backend,
        "--filter",
        "doc.",
        "--process-timeout",
        "2",
    ]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    // One message, with why and the server's stderr; no case ran, nothing else printed.
    assert_eq!(stdout, "");
    assert_eq!(
        stderr
            .matches("bad hello reply: protocol Some(999); this harness speaks 1")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.starts_with(&format!(
            "error: --backend {backend}: the backend cannot start: its server gave no usable hello: "
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("FAIL"), "{stderr}");
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
}

#[cfg(unix)]
#[test]
fn a_command_that_does_not_exist_is_one_error_with_its_stderr() {
    let (out, _) = dmlcts(&[
        "conformance",
        "--backend",
        "process:./no-such-server --port 1",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(text(&out.stdout), "");
    assert_eq!(stderr.matches("error:").count(), 1, "{stderr}");
    assert!(stderr.contains("./no-such-server: not found"), "{stderr}");
    assert!(stderr.lines().count() < 5, "{stderr}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_server_whose_child_keeps_its_output_open_leaves_nothing_behind() {
    let types = r#"["FLOAT64","FLOAT32","FLOAT16","INT64","INT32","INT16","INT8","UINT64","UINT32","UINT16","UINT8"]"#;
    let hello = format!(
        r#"{{"type":"hello","protocol":1,"name":"forker","feature_level":"6_4","data_types":{types}}}"#
    );
    // A sleep nobody else runs, so the process table can be searched for it.
    let marker = format!("7{}", std::process::id());
    // The sleep keeps stdin (through fd 3: `&` points its own stdin at /dev/null) and stdout
    // open after the shell, the server, has exited.
    let server = format!(
        "exec 3<&0; {}; sleep {marker} <&3 & exit 0",
        printf_frame(&hello)
    );
    let backend = format!("process:{server}");
    let (out, elapsed) = dmlcts(&[
        "conformance",
        "--backend",
        &backend,
        "--filter",
        "doc.",
        "--process-timeout",
        "0.5",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert_eq!(
        stdout
            .matches("no reply within 0.5 s (hung?); it exited with status 0")
            .count(),
        8,
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 8 failed, 0 skipped"),
        "{stdout}"
    );
    // Eight cases, each one 0.5 s wait, a start and a clean-up.
    assert!(elapsed < Duration::from_secs(30), "{elapsed:?}");
    let mut left = Vec::new();
    for entry in std::fs::read_dir("/proc")
        .expect("a process table")
        .flatten()
    {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if text(&cmdline).replace('\0', " ").trim_end() == format!("sleep {marker}") {
            left.push(entry.file_name());
        }
    }
    assert!(left.is_empty(), "still running: {left:?}");
}

#[test]
fn bad_case_files_fail_the_run_with_their_lines_and_the_summary() {
    let dir = std::env::temp_dir().join(format!("dmlcts-robustness-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let deep = dir.join("deep.yaml");
    std::fs::write(
        &deep,
        format!("cases: {}{}\n", "[".repeat(100_000), "]".repeat(100_000)),
    )
    .unwrap();
    let empty = dir.join("empty.yaml");
    std::fs::write(&empty, "cases:\n").unwrap();
    let tagged = dir.join("tagged.yaml");
    std::fs::write(
        &tagged,
        "cases:\n  - name: tagged\n    split: !weird {axis: 0, input: {data_type: UINT8, sizes: [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}\n",
    )
    .unwrap();
    let paths = [&deep, &empty, &tagged].map(|p| p.display().to_string());
    let (out, elapsed) = dmlcts(&[
        "conformance",
        "--cases",
        &paths[0],
        "--cases",
        &paths[1],
        "--cases",
        &paths[2],
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for expected in [
        format!("{}:1: nested more than 64 levels deep", paths[0]),
        format!("{}:1: cases: no cases in {}", paths[1], paths[1]),
        format!(
            "{}:3: split: unknown YAML tag `!weird` (case files use no tags)",
            paths[2]
        ),
    ] {
        assert!(stdout.contains(&expected), "{expected}\n{stdout}");
    }
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 3 failed, 0 skipped"),
        "{stdout}"
    );
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}
