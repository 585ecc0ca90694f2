//! Inputs that become memory are costed before anything is allocated for them: each command
//! here runs under a 1 GiB address-space cap (`prlimit --as`, util-linux) and must end with a
//! result or a clear error naming the file, line and field, never an abort
//! (`memory allocation of N bytes failed`, signal 6).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CAP: &str = "--as=1073741824";

fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-memory-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `dmlcts ARGS` in `dir` under the cap (its servers inherit it).
fn capped(dir: &Path, args: &[&str]) -> Output {
    Command::new("prlimit")
        .arg(CAP)
        .arg(env!("CARGO_BIN_EXE_dmlcts"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("prlimit (util-linux)")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Exit status 0 or 1 (a result) or 2 (an error), never a signal.
fn ended_cleanly(output: &Output, what: &str) {
    assert!(
        matches!(output.status.code(), Some(0..=2)),
        "{what}: {:?}\n{}",
        output.status,
        text(output).chars().take(2000).collect::<String>()
    );
    assert!(
        !text(output).contains("memory allocation of"),
        "{what}: {}",
        text(output).chars().take(2000).collect::<String>()
    );
}

/// Every column this build has (`dmlcts backends` marks the others), and three more CPU
/// servers from a backends file: the matrix of the finding had six columns.
fn every_column(dir: &Path) -> Vec<String> {
    let listed = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .arg("backends")
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    let mut words = vec!["--backend-config".to_string(), "more.yaml".to_string()];
    let mut file = "backends:\n".to_string();
    for name in ["cpu", "oracle", "wgpu", "cpu-process", "tract"] {
        let built = listed
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name) && !l.contains("not in this build"));
        if built {
            words.extend(["--backend".to_string(), name.to_string()]);
        }
    }
    for i in 1..=3 {
        file.push_str(&format!(
            "  more{i}:\n    command: {} serve-cpu\n",
            env!("CARGO_BIN_EXE_dmlcts")
        ));
        words.extend(["--backend".to_string(), format!("more{i}")]);
    }
    std::fs::write(dir.join("more.yaml"), file).unwrap();
    words
}

// On main (aa4714d): `memory allocation of 3221225472 bytes failed` (24 bytes of bookkeeping
// per buffer byte for listed data), no summary.
#[test]
fn a_listed_value_in_a_128_mib_input_runs_under_a_1_gib_cap_in_conformance_and_the_matrix() {
    let dir = fresh_dir("hole");
    std::fs::write(
        dir.join("hole.yaml"),
        "cases:\n  - name: hole\n    split:\n      axis: 0\n      input: {data_type: UINT8, \
         sizes: [1], data: [7], total_tensor_size_in_bytes: 134217728}\n      outputs:\n        \
         - {data_type: UINT8, sizes: [1]}\n",
    )
    .unwrap();
    // A result: it passes, or, where the address space left under the cap is less than the
    // case's cost (a build with every backend maps a 320 MB binary), it is skipped saying so.
    let output = capped(&dir, &["conformance", "--cases", "hole.yaml"]);
    ended_cleanly(&output, "conformance");
    let all = text(&output);
    assert!(
        all.contains("\n1 passed, 0 failed, 0 skipped\n")
            || all.contains("needs about 805306368 bytes (6 times it), and this process's"),
        "{all}"
    );

    let mut args = vec!["matrix", "--cases", "hole.yaml", "--out", "m"];
    let columns = every_column(&dir);
    args.extend(columns.iter().map(String::as_str));
    let output = capped(&dir, &args);
    ended_cleanly(&output, "matrix");
    assert!(dir.join("m/matrix.json").is_file(), "{}", text(&output));
    let _ = std::fs::remove_dir_all(&dir);
}

// On main: a six-column matrix of a failing case with a 30 MiB name aborted (each name copied
// about 9 times per column).
#[test]
fn a_30_mib_case_name_is_an_error_naming_file_line_and_field_under_a_1_gib_cap() {
    let dir = fresh_dir("name");
    let name = "x".repeat(30 << 20);
    std::fs::write(
        dir.join("big.yaml"),
        format!(
            "cases:\n  - name: {name}\n    split:\n      axis: 0\n      input: {{data_type: UINT8, \
             sizes: [3], data: [1, 2, 3]}}\n      outputs: [{{data_type: UINT8, sizes: [3], \
             expected: [9, 9, 9]}}]\n"
        ),
    )
    .unwrap();
    drop(name);
    let says = "big.yaml:2: case `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx`: \
                name: 31457280 bytes, more than the 4096 a case's name may have";
    let output = capped(&dir, &["conformance", "--cases", "big.yaml"]);
    ended_cleanly(&output, "conformance");
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output).contains(says), "{}", text(&output));

    let mut args = vec!["matrix", "--cases", "big.yaml", "--out", "m"];
    let columns = every_column(&dir);
    args.extend(columns.iter().map(String::as_str));
    let output = capped(&dir, &args);
    ended_cleanly(&output, "matrix");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let matrix = std::fs::read_to_string(dir.join("m/matrix.json")).unwrap();
    assert!(matrix.len() < 1 << 20, "{} bytes", matrix.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A shard report of `bytes` bytes: the fields a merge checks, then a list of zeros.
fn big_report(path: &Path, shard: &str, bytes: usize) {
    let head = format!(
        "{{\"seed\": 1, \"cases_run\": 1, \"descriptors_run\": 1, \"backend\": \"cpu\", \
         \"shard\": \"{shard}\", \"buckets\": [], \"padding\": ["
    );
    let zeros = (bytes - head.len() - 3) / 2;
    let mut text = head;
    text.reserve(bytes);
    for _ in 0..zeros {
        text.push_str("0,");
    }
    text.push_str("0]}");
    std::fs::write(path, text).unwrap();
}

// On main: two 64 MiB shard reports, each parsed whole (17 times its size), aborted the merge.
#[test]
fn shard_reports_past_the_merge_budget_are_errors_naming_the_file_under_a_1_gib_cap() {
    let dir = fresh_dir("merge");
    big_report(&dir.join("a.json"), "0/2", 64 << 20);
    big_report(&dir.join("b.json"), "1/2", 64 << 20);
    let output = capped(&dir, &["fuzz", "merge", "a.json", "b.json"]);
    ended_cleanly(&output, "merge of 64 MiB reports");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: fuzz merge: a.json: 67108864 bytes, more than the bound for fuzz reports \
         (16777216 bytes, 16 MiB): not read\n"
    );
    // Within the bytes, past the values: refused at the line where the count passed.
    big_report(&dir.join("a.json"), "0/2", 15 << 20);
    let output = capped(&dir, &["fuzz", "merge", "a.json", "b.json"]);
    ended_cleanly(&output, "merge of 15 MiB of values");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: fuzz merge: a.json:1: more JSON values by this line than are left (2097152) \
         of what one merge parses (2097152, all its reports together): not parsed\n"
    );
    // Within each report's bound, past the merge's: the fifth of 15 MiB is not read.
    let names: Vec<String> = (0..5).map(|i| format!("s{i}.json")).collect();
    for (i, name) in names.iter().enumerate() {
        let padding = format!("\"{}\"", "p".repeat((15 << 20) - 200));
        let report = format!(
            "{{\"seed\": 1, \"cases_run\": 1, \"descriptors_run\": 1, \"backend\": \"cpu\", \
             \"shard\": \"{i}/5\", \"buckets\": [], \"padding\": {padding}}}"
        );
        std::fs::write(dir.join(name), report).unwrap();
    }
    let mut args = vec!["fuzz", "merge"];
    args.extend(names.iter().map(String::as_str));
    let output = capped(&dir, &args);
    ended_cleanly(&output, "merge of five 15 MiB reports");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error: fuzz merge: s4.json: ")
            && stderr.contains("of what one merge reads (67108864 bytes, 64 MiB"),
        "{stderr}"
    );
    // Four of them are merged, under the cap.
    let output = capped(&dir, &[&args[..5], &["--json", "merged.json"]].concat());
    ended_cleanly(&output, "merge of four 15 MiB reports");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let _ = std::fs::remove_dir_all(&dir);
}

// On main: no bound across files: a folder of case files each within its own bound was
// loaded whole (about 32 MB of values kept per 4 Mi-node file, and an abort past the cap).
#[test]
fn case_files_past_the_run_s_budget_are_load_errors_naming_the_file_under_a_1_gib_cap() {
    let dir = fresh_dir("run-budget");
    std::fs::create_dir_all(dir.join("cases")).unwrap();
    let n = (3 << 20) - 100;
    let values = vec!["1"; n].join(",");
    for i in 1..=3 {
        std::fs::write(
            dir.join(format!("cases/m{i}.yaml")),
            format!(
                "cases:\n  - name: many{i}\n    split:\n      axis: 0\n      input: \
                 {{data_type: UINT8, sizes: [{n}], data: [{values}]}}\n      outputs: \
                 [{{data_type: UINT8, sizes: [{n}]}}]\n"
            ),
        )
        .unwrap();
    }
    let output = capped(&dir, &["conformance", "--cases", "cases"]);
    ended_cleanly(&output, "three files of 3 Mi values");
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let all = text(&output);
    assert!(
        all.contains("\n  cases/m3.yaml: 6291417 bytes and 3145652 YAML nodes, more than is left"),
        "{all}"
    );
    assert!(all.contains("\n2 passed, 1 failed, 0 skipped\n"), "{all}");
    let _ = std::fs::remove_dir_all(&dir);
}
