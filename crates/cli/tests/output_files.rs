//! The report files a command writes never destroy anything: a device, a FIFO or a link to
//! one named as a report path is written into (or refused), never replaced; a report path
//! that names another report's file or an input of the run is refused before the run starts.
//! The devices are made here, in a temporary folder (mknod; the tests run as root), never the
//! machine's own /dev/null.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-output-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn dmlcts_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run dmlcts")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn mknod_null(path: &Path) {
    let status = Command::new("mknod")
        .arg(path)
        .args(["c", "1", "3"])
        .status()
        .expect("mknod (coreutils)");
    assert!(status.success(), "mknod needs root");
}

fn is_char_device(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

const ONE_CASE: [&str; 4] = [
    "conformance",
    "--filter",
    "doc.join.example1_axis3",
    "--exact",
];

/// O_NONBLOCK on Linux (asm-generic and x86).
fn libc_nonblock() -> i32 {
    0o4000
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// On main (aa4714d): both were replaced by regular files holding the reports (as root, the
// `--json /dev/null` of most CI containers).
#[test]
fn a_device_or_a_link_to_one_as_a_report_path_is_written_into_never_replaced() {
    let dir = temp_dir("device");
    mknod_null(&dir.join("null"));
    mknod_null(&dir.join("tty"));
    std::os::unix::fs::symlink("tty", dir.join("stdout")).unwrap();
    let output = dmlcts_in(
        &dir,
        &[&ONE_CASE[..], &["--json", "null", "--junit", "stdout"]].concat(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(is_char_device(&dir.join("null")), "the device was replaced");
    assert!(is_char_device(&dir.join("tty")));
    assert!(
        std::fs::symlink_metadata(dir.join("stdout"))
            .unwrap()
            .is_symlink(),
        "the link was replaced"
    );
    assert_eq!(entries(&dir), ["null", "stdout", "tty"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

// Two reports into one device replace nothing, so they are not "the same file" (a refusal
// meant for regular files): `--json /dev/null --junit /dev/null`.
#[test]
fn two_reports_into_one_device_are_both_written_into_it() {
    let dir = temp_dir("one-device");
    mknod_null(&dir.join("null"));
    let output = dmlcts_in(
        &dir,
        &[&ONE_CASE[..], &["--json", "null", "--junit", "null"]].concat(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(is_char_device(&dir.join("null")), "the device was replaced");
    assert_eq!(entries(&dir), ["null"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

// On main: the FIFO was replaced by a regular file, and its reader waited forever.
#[test]
fn a_fifo_as_a_report_path_is_written_into_for_its_reader() {
    let dir = temp_dir("fifo");
    let fifo = dir.join("report.xml");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // The reader is there before the run: this test holds the FIFO open for reading (and
    // writing, so that it is never at its end), and reads what came once the run is over (a
    // one-case report is far below a pipe's 64 KiB).
    use std::os::unix::fs::OpenOptionsExt;
    let mut held = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc_nonblock())
        .open(&fifo)
        .unwrap();
    let output = dmlcts_in(&dir, &[&ONE_CASE[..], &["--junit", "report.xml"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let mut bytes = vec![0u8; 1 << 16];
    let n = std::io::Read::read(&mut held, &mut bytes).unwrap();
    let read = String::from_utf8_lossy(&bytes[..n]).into_owned();
    assert!(read.starts_with("<?xml"), "{read}");
    assert!(read.contains("doc.join.example1_axis3"), "{read}");
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// On main: the JUnit report silently replaced the JSON one, and a report written over the
// case file the run read (`--cases F --json F`) destroyed it.
#[test]
fn a_report_path_equal_to_another_reports_or_to_an_input_is_refused_before_the_run() {
    let dir = temp_dir("same");
    let case_text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../cases/doc/join.yaml"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("cases")).unwrap();
    std::fs::write(dir.join("cases/join.yaml"), &case_text).unwrap();
    std::fs::write(dir.join("expected.yaml"), "expected_failures: []\n").unwrap();

    let output = dmlcts_in(
        &dir,
        &[&ONE_CASE[..], &["--json", "r.json", "--junit", "./r.json"]].concat(),
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "error: --junit ./r.json and --json r.json are the same file: one report would \
         overwrite the other\n"
    );
    assert!(!dir.join("r.json").exists(), "nothing ran");

    for (args, message) in [
        (
            vec!["--cases", "cases/join.yaml", "--json", "cases/join.yaml"],
            "error: --json cases/join.yaml would overwrite an input of this run (--cases \
             cases/join.yaml)\n",
        ),
        (
            vec!["--cases", "cases", "--junit", "cases/join.yaml"],
            "error: --junit cases/join.yaml would overwrite an input of this run (--cases \
             cases)\n",
        ),
        (
            vec!["--cases", "cases", "--json", "cases/new.yml"],
            "error: --json cases/new.yml would overwrite an input of this run (--cases \
             cases)\n",
        ),
        (
            vec!["--expectations", "expected.yaml", "--json", "expected.yaml"],
            "error: --json expected.yaml would overwrite an input of this run \
             (--expectations expected.yaml)\n",
        ),
    ] {
        let output = dmlcts_in(&dir, &[&ONE_CASE[..], &args].concat());
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&output), message, "{args:?}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("cases/join.yaml")).unwrap(),
        case_text
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("expected.yaml")).unwrap(),
        "expected_failures: []\n"
    );
    assert_eq!(entries(&dir.join("cases")), ["join.yaml"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

// On main: `fuzz merge a.json --json a.json` wrote the merged report over its own input.
#[test]
fn fuzz_merge_refuses_to_write_over_a_shard_report() {
    let dir = temp_dir("merge");
    let report = "{\"seed\": 1, \"cases_run\": 1, \"descriptors_run\": 1, \"backend\": \"cpu\", \
                  \"shard\": \"0/1\", \"buckets\": []}";
    std::fs::write(dir.join("a.json"), report).unwrap();
    let output = dmlcts_in(&dir, &["fuzz", "merge", "a.json", "--json", "a.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "error: --json a.json would overwrite an input of this run (a shard report a.json)\n"
    );
    assert_eq!(std::fs::read_to_string(dir.join("a.json")).unwrap(), report);
    std::fs::remove_dir_all(&dir).unwrap();
}
