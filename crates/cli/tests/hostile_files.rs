//! Config files and output paths a user hands the `dmlcts` command, as an attacker (or a
//! typo) would: a backends file that does not parse fails every command that reads it, with
//! its file, line and field; timeouts that are no number of seconds are an error, never a
//! panic; report paths that cannot be written are refused before anything runs; one fuzz
//! campaign at a time saves into a folder; a case folder's links are left out with a note.
//! Each test failed on main (see each one's comment for how).

#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn dmlcts_in(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dmlcts"));
    for (name, _) in std::env::vars().filter(|(n, _)| n.starts_with("DMLCTS_")) {
        command.env_remove(name);
    }
    command
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run dmlcts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("dmlcts-cli-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path_text(path: &Path) -> &str {
    path.to_str().unwrap()
}

// On main: `backends` listed none of the file's names and exited 0; `matrix` ran the built-in
// columns and exited 0; `conformance` and `fuzz` said only "unknown backend `mine`".
#[test]
fn a_backends_file_with_a_typo_fails_every_command_that_reads_it_naming_line_and_field() {
    let dir = fresh_dir("typo");
    let config = dir.join("backends.yaml");
    std::fs::write(
        &config,
        "backends:\n  mine:\n    command: exit 1\n    tiemout: 5\n",
    )
    .unwrap();
    let error = "backends.mine: unknown field `tiemout`, expected one of `command`, \
                 `description`, `timeout_seconds`, `startup_timeout_seconds`";
    let named = format!("error: {}:4: {error}", config.display());
    let config = path_text(&config);

    let out = dmlcts_in(&dir, &["backends", "--backend-config", config]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).trim_end(), named);
    assert!(
        text(&out.stdout).contains("cpu-process"),
        "built-in names still listed"
    );

    let reports = dir.join("reports");
    let out = dmlcts_in(
        &dir,
        &[
            "matrix",
            "--backend-config",
            config,
            "--filter",
            "doc.split",
            "--out",
            path_text(&reports),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr).trim_end(), named);
    assert!(
        text(&out.stdout).is_empty(),
        "nothing ran: {}",
        text(&out.stdout)
    );

    let out = dmlcts_in(
        &dir,
        &[
            "conformance",
            "--backend",
            "mine",
            "--backend-config",
            config,
            "--filter",
            "doc.split",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!("{config}:4: {error}")),
        "{}",
        text(&out.stderr)
    );

    // `fuzz` reads the backends file in the current folder.
    let out = dmlcts_in(
        &dir,
        &[
            "fuzz",
            "--backend",
            "mine",
            "--cases",
            "5",
            "--out",
            "saved",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(&format!("backends.yaml:4: {error}")),
        "{}",
        text(&out.stderr)
    );
}

// On main: each one a panic (exit 101) in Duration::from_secs_f64.
#[test]
fn a_timeout_that_is_no_number_of_seconds_is_an_error_naming_its_line_never_a_panic() {
    let dir = fresh_dir("timeouts");
    let config = dir.join("backends.yaml");
    let not_positive = "is not a positive number of seconds";
    let too_long = "is more than the longest allowed, 604800 seconds (7 days)";
    for (value, shown, error) in [
        ("-1", "-1", not_positive),
        (".nan", "NaN", not_positive),
        (".inf", "inf", not_positive),
        ("1e300", "1e300", too_long),
        ("604801", "604801", too_long),
        ("0", "0", not_positive),
    ] {
        for field in ["timeout_seconds", "startup_timeout_seconds"] {
            std::fs::write(
                &config,
                format!(
                    "backends:\n  mine:\n    command: {} serve-cpu\n    {field}: {value}\n",
                    env!("CARGO_BIN_EXE_dmlcts")
                ),
            )
            .unwrap();
            let out = dmlcts_in(
                &dir,
                &[
                    "conformance",
                    "--backend",
                    "mine",
                    "--backend-config",
                    path_text(&config),
                    "--filter",
                    "doc.split",
                ],
            );
            assert_eq!(
                out.status.code(),
                Some(2),
                "{field}: {value}: {}",
                text(&out.stderr)
            );
            let expected = format!(
                "{}:4: backends.mine.{field}: {shown} {error}",
                config.display()
            );
            assert!(
                text(&out.stderr).contains(&expected),
                "{}",
                text(&out.stderr)
            );
        }
    }
    // Within the bounds, the backend runs.
    std::fs::write(
        &config,
        format!(
            "backends:\n  mine:\n    command: {} serve-cpu\n    timeout_seconds: 604800\n",
            env!("CARGO_BIN_EXE_dmlcts")
        ),
    )
    .unwrap();
    let out = dmlcts_in(
        &dir,
        &[
            "conformance",
            "--backend",
            "mine",
            "--backend-config",
            path_text(&config),
            "--filter",
            "doc.split",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
}

// On main: every one of these ran the whole corpus (or the whole campaign) first, and only
// then failed to write (`fuzz --out` did not even fail: its cases were lost, exit 0).
#[test]
fn report_paths_that_cannot_be_written_are_refused_before_anything_runs() {
    let dir = fresh_dir("paths");
    let blocker = dir.join("blocker");
    std::fs::write(&blocker, "a file, not a folder").unwrap();
    let under = blocker.join("report");
    let under = path_text(&under);
    let not_a_folder = format!("{} exists and is not a folder", blocker.display());
    for (args, flag) in [
        (vec!["conformance", "--json", under], "--json"),
        (vec!["conformance", "--junit", under], "--junit"),
        (vec!["matrix", "--backend", "cpu", "--out", under], "--out"),
        (
            vec!["fuzz", "--cases", "200", "--json", under, "--out", "saved"],
            "--json",
        ),
        (vec!["fuzz", "--cases", "200", "--out", under], "--out"),
    ] {
        let out = dmlcts_in(&dir, &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stdout).is_empty(),
            "{args:?}: ran: {}",
            text(&out.stdout)
        );
        assert_eq!(
            text(&out.stderr).trim_end(),
            format!("error: {flag} {under}: {not_a_folder}"),
            "{args:?}"
        );
    }
    let folder = path_text(&dir);
    let out = dmlcts_in(&dir, &["conformance", "--junit", folder]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!("error: --junit {folder}: {folder} is a folder")
    );
    // A report in folders that do not exist yet: made, and written.
    let deep = dir.join("missing/dir/f.json");
    let out = dmlcts_in(
        &dir,
        &[
            "fuzz",
            "--cases",
            "20",
            "--seed",
            "1",
            "--json",
            path_text(&deep),
            "--out",
            "saved",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(deep.is_file());
}

// On main: the second campaign ran alongside the first, each overwriting the other's files.
#[test]
fn a_second_campaign_on_the_same_folder_is_refused_while_the_first_runs() {
    let dir = fresh_dir("lock");
    let saved = dir.join("saved");
    let mut first = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args([
            "fuzz",
            "--time",
            "120",
            "--seed",
            "1",
            "--out",
            path_text(&saved),
        ])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Its "repeat this run" line comes once the folder is locked and the backend started.
    let mut lines = BufReader::new(first.stdout.take().unwrap()).lines();
    let repeat = lines.find_map(|line| {
        line.ok()
            .filter(|l| l.starts_with("fuzz: repeat this run with:"))
    });
    assert!(
        repeat.is_some(),
        "the first campaign never said how to repeat it"
    );
    let second = dmlcts_in(&dir, &["fuzz", "--cases", "10", "--out", path_text(&saved)]);
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(second.status.code(), Some(2));
    assert!(text(&second.stdout).is_empty());
    assert_eq!(
        text(&second.stderr).trim_end(),
        format!(
            "error: --out {0}: another fuzz campaign is saving into {0} (it holds the folder's \
             lock); give this one its own --out",
            saved.display()
        )
    );
    // Once the first has ended (killed, here), the folder is free.
    let third = dmlcts_in(&dir, &["fuzz", "--cases", "10", "--out", path_text(&saved)]);
    assert_eq!(third.status.code(), Some(0), "{}", text(&third.stderr));
}

// On main: the link was followed and its target's text printed in the load error; here it
// is a note, and nothing of the file it points to is read.
#[test]
fn a_case_folder_walk_notes_what_it_left_out() {
    let dir = fresh_dir("walk");
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(
        cases.join("good.yaml"),
        "cases:\n  - name: good\n    split: {axis: 0, input: {data_type: UINT8, sizes: [1]}, \
         outputs: [{data_type: UINT8, sizes: [1]}]}\n",
    )
    .unwrap();
    let secret = dir.join("secret");
    std::fs::write(&secret, "TOKEN=ghp_SECRET\n").unwrap();
    std::os::unix::fs::symlink(&secret, cases.join("secret.yaml")).unwrap();
    let out = dmlcts_in(&dir, &["conformance", "--cases", path_text(&cases)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("ghp_SECRET"), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "note: left out {}: a symbolic link (to a file): folders are walked without \
             following links; name it with --cases to load it\n",
            cases.join("secret.yaml").display()
        )),
        "{stdout}"
    );
}

// On main: the note printed the link's name raw, so a name holding an escape sequence (here
// one that clears the screen) reached the terminal.
#[test]
fn a_left_out_entry_s_name_is_escaped_in_its_note() {
    let dir = fresh_dir("walk-escape");
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(
        cases.join("good.yaml"),
        "cases:\n  - name: good\n    split: {axis: 0, input: {data_type: UINT8, sizes: [1]}, \
         outputs: [{data_type: UINT8, sizes: [1]}]}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(cases.join("good.yaml"), cases.join("x\u{1b}[2J.yaml")).unwrap();
    let out = dmlcts_in(&dir, &["conformance", "--cases", path_text(&cases)]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    let note = stdout.lines().next().unwrap();
    assert_eq!(
        note,
        format!(
            "note: left out {}/x\\u{{1b}}[2J.yaml: a symbolic link (to a file): folders are \
             walked without following links; name it with --cases to load it",
            cases.display()
        )
    );
}

// On main: conformance failed (a duplicate name is a load error) while the matrix, which
// keys its rows by name, let the first `dup` overwrite the error's row and exited 0.
#[test]
fn a_duplicate_case_name_fails_the_matrix_as_it_fails_conformance() {
    let dir = fresh_dir("duplicates");
    let cases = dir.join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    let case = "cases:\n  - name: dup\n    split: {axis: 0, input: {data_type: UINT8, sizes: \
                [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}\n";
    std::fs::write(cases.join("a.yaml"), case).unwrap();
    std::fs::write(cases.join("b.yaml"), case).unwrap();
    let cases = path_text(&cases);
    let out = dmlcts_in(
        &dir,
        &["conformance", "--backend", "oracle", "--cases", cases],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).ends_with("0 passed, 1 failed, 0 skipped\n"),
        "{}",
        text(&out.stdout)
    );
    let reports = dir.join("reports");
    let out = dmlcts_in(
        &dir,
        &[
            "matrix",
            "--backend",
            "oracle",
            "--cases",
            cases,
            "--out",
            path_text(&reports),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let matrix: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("matrix.json")).unwrap())
            .unwrap();
    assert_eq!(matrix["columns"][0]["totals"]["failed"], 1, "{matrix:#}");
    assert_eq!(matrix["columns"][0]["totals"]["passed"], 0, "{matrix:#}");
}

// On main: about a minute in the parser, then the error was swallowed (`backends` listed the
// built-in names and exited 0).
#[test]
fn a_backends_file_nested_100000_deep_fails_at_once_with_its_line() {
    let dir = fresh_dir("deep");
    let config = dir.join("deep.yaml");
    std::fs::write(
        &config,
        format!(
            "backends:\n  mine: {}{}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = dmlcts_in(&dir, &["backends", "--backend-config", path_text(&config)]);
    // Milliseconds; the bound is loose for a shared machine and a debug build.
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!(
            "error: {}:2: nested more than 64 levels deep (open brackets plus indentation); \
             backends files need about 6",
            config.display()
        )
    );
}

// On main, `dmlcts backends` printed a backends file's names and descriptions as they were:
// an escape sequence reached the terminal and a line break made a line of its own.
#[test]
fn a_backends_files_names_and_descriptions_are_printed_escaped() {
    let dir = fresh_dir("described");
    std::fs::write(
        dir.join("backends.yaml"),
        "backends:\n  \"evil\\e[2J\":\n    command: ./server\n    description: \"clears\\e]0;title\\a the screen\\nFAKE line\"\n",
    )
    .unwrap();
    let out = dmlcts_in(&dir, &["backends"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
    assert!(!stdout.contains('\u{7}'), "{stdout:?}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("evil"))
        .expect("the file's backend is listed");
    assert!(
        line.starts_with("evil\\u{1b}[2J "),
        "the name is escaped: {line:?}"
    );
    assert!(
        line.contains("clears\\u{1b}]0;title\\u{7} the screen\\nFAKE line (from backends.yaml)"),
        "{line:?}"
    );
    assert!(!stdout.lines().any(|l| l.starts_with("FAKE")), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

// On main (aa4714d): `cpu` and `oracle` from a backends file were listed a second time (the
// matrix made a second column of the built-in's name); `directml@...` and `process:...` ones
// were left out of the matrix without a word; `-x` made replay commands that did not parse.
#[test]
fn a_backends_file_name_that_collides_with_a_reserved_one_is_refused_with_its_line() {
    let dir = fresh_dir("reserved");
    for (name, why) in [
        (
            "cpu",
            "`cpu` is a built-in backend's name: the file cannot name another",
        ),
        (
            "oracle",
            "`oracle` is a built-in backend's name: the file cannot name another",
        ),
        (
            "cpu-process",
            "`cpu-process` is a built-in backend's name: the file cannot name another",
        ),
        (
            "directml",
            "`directml` is a built-in backend's name: the file cannot name another",
        ),
        (
            "directml@1.9.0",
            "`directml@1.9.0` starts with `directml`, which --backend keeps for its own names",
        ),
        (
            "'process:x'",
            "`process:x` starts with `process:`, which --backend keeps for its own names",
        ),
        (
            "'-x'",
            "`-x`: a backend name must be non-empty and not start with `-`",
        ),
    ] {
        std::fs::write(
            dir.join("backends.yaml"),
            format!("backends:\n  mine:\n    command: ./server\n  {name}:\n    command: ./s\n"),
        )
        .unwrap();
        for command in [&["backends"][..], &["matrix", "--out", "m"]] {
            let out = dmlcts_in(&dir, command);
            assert_eq!(out.status.code(), Some(2), "{name} {command:?}");
            assert!(
                text(&out.stderr).ends_with(&format!("error: backends.yaml:4: backends: {why}\n")),
                "{name} {command:?}: {}",
                text(&out.stderr)
            );
        }
        assert!(!dir.join("m").exists(), "the matrix ran with {name}");
    }
    // The repository's own file loads: names with `@` that are no built-in's are fine.
    std::fs::write(
        dir.join("backends.yaml"),
        "backends:\n  wgpu@swiftshader:\n    command: ./server\n",
    )
    .unwrap();
    let out = dmlcts_in(&dir, &["backends"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
}
