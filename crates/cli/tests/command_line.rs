//! The installed command as a user types it: options, errors, and runs on the embedded corpus.

use std::process::{Command, Output};

fn dmlcts(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args(args)
        // Outside the checkout, as an outsider would run it: nothing here but the binary.
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run dmlcts")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_mistyped_flag_is_named_with_a_suggestion_and_exits_2() {
    let out = dmlcts(&["conformance", "--backnd", "cpu"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("unexpected argument '--backnd'"), "{err}");
    assert!(
        err.contains("a similar argument exists: '--backend'"),
        "{err}"
    );
}

#[test]
fn a_bad_value_names_its_flag() {
    let out = dmlcts(&["conformance", "--feature-level", "9_9"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("invalid value '9_9' for '--feature-level <X_Y>': unknown level `9_9`"),
        "{err}"
    );
    let out = dmlcts(&["conformance", "--process-timeout", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(
        "invalid value '0' for '--process-timeout <SECS>': `0` is not a positive number of seconds"
    ));
    let out = dmlcts(&["fuzz", "--valid-only", "--invalid-only"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("'--valid-only' cannot be used with '--invalid-only'"));
}

#[test]
fn version_and_help_follow_the_conventions() {
    // The version, the commit where the build knew it, and the embedded corpus's digest.
    let out = dmlcts(&["--version"]);
    assert!(out.status.success());
    let (digest, files) = dmlcts_harness::corpus::digest::embedded();
    let commit = match dmlcts_cli::COMMIT {
        Some(commit) => format!("commit {commit}, "),
        None => String::new(),
    };
    assert_eq!(
        text(&out.stdout),
        format!(
            "dmlcts {} ({commit}embedded corpus {digest} in {files} files)\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    let out = dmlcts(&["conformance", "--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for flag in [
        "--backend <NAME>",
        "--backend-config <FILE>",
        "--process-timeout <SECS>",
        "--adapter <TEXT>",
        "--cases <PATH>",
        "--filter <TEXT>",
        "--exact",
        "--feature-level <X_Y>",
        "--strict-level",
        "--expectations <FILE>",
        "--json <FILE>",
        "--junit <FILE>",
        "--list",
        "--verbose",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}

#[test]
fn an_unknown_backend_lists_the_known_ones() {
    let out = dmlcts(&["conformance", "--backend", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: --backend nosuch: unknown backend `nosuch`; known: cpu, oracle, wgpu, directml, \
         cpu-process, tract, process:COMMAND\n"
    );
}

#[test]
fn directml_outside_a_checkout_says_where_the_stack_comes_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args(["conformance", "--backend", "directml"])
        .current_dir(std::env::temp_dir())
        .env("DMLCTS_DIRECTML_STACK", "/nonexistent/directml-stack")
        .output()
        .expect("run dmlcts");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(
            "error: --backend directml: no DirectML stack at /nonexistent/directml-stack/run-server.sh"
        ),
        "{err}"
    );
    assert!(err.contains("cargo xtask directml setup"), "{err}");
}

#[test]
fn the_embedded_corpus_runs_from_any_folder_in_and_out_of_process() {
    for backend in ["cpu", "cpu-process"] {
        let out = dmlcts(&["conformance", "--backend", backend, "--filter", "doc."]);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "{backend}: {stdout}{}",
            text(&out.stderr)
        );
        let last = stdout.lines().last().unwrap_or_default();
        assert_eq!(last, "8 passed, 0 failed, 0 skipped", "{backend}: {stdout}");
    }
}

fn corpus_size() -> usize {
    dmlcts_harness::Corpus::embedded().cases.len()
}

#[test]
fn the_whole_corpus_runs_each_case_at_its_own_level() {
    let n = corpus_size();
    for backend in ["cpu", "oracle", "cpu-process"] {
        let json = std::env::temp_dir().join(format!("dmlcts-levels-{backend}.json"));
        let out = dmlcts(&[
            "conformance",
            "--backend",
            backend,
            "--json",
            json.to_str().expect("a UTF-8 path"),
        ]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{backend}: {stdout}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert!(
            lines[0].ends_with(&format!("each case at its own feature level, {n} cases")),
            "{}",
            lines[0]
        );
        assert_eq!(
            lines[lines.len() - 1],
            format!("{n} passed, 0 failed, 0 skipped")
        );
        // What the run covered: every assertion of the pages, at each case's own level.
        assert_eq!(
            lines[lines.len() - 3],
            "checked: 32 of 32 rules, 23 of 23 execution properties, 11 of 11 data types at \
             ranks 1-8, at levels 1_0 to 4_1"
        );
        assert!(
            lines[lines.len() - 2].starts_with("backend start-up ")
                && lines[lines.len() - 2].contains(&format!("; {n} cases ran in ")),
            "{}",
            lines[lines.len() - 2]
        );
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("the JSON report"))
                .expect("JSON");
        let _ = std::fs::remove_file(&json);
        let summary = &report["summary"];
        assert_eq!(summary["feature_level"], "each case's own");
        let by_level = summary["by_level"].as_object().expect("by_level");
        let passed: u64 = by_level
            .values()
            .map(|s| s["passed"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(passed as usize, n);
        assert!(by_level.contains_key("1_0") && by_level.contains_key("4_1"));
        let case = &report["cases"][0];
        assert_eq!(case["feature_level"], case["run_level"], "{case}");
    }
}

#[test]
fn a_backend_at_one_level_reports_its_level_bound_skips_in_one_line() {
    // The CPU server pinned to 4_1 offers no other level, as real DirectML offers one.
    let server = format!(
        "process:{} serve-cpu --feature-level 4_1",
        env!("CARGO_BIN_EXE_dmlcts")
    );
    let out = dmlcts(&["conformance", "--backend", &server, "--verbose"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("feature level 4_1 (the only level it offers)"),
        "{stdout}"
    );
    let summary = stdout.lines().last().expect("a summary");
    let skipped: usize = summary
        .split(", ")
        .find_map(|part| part.strip_suffix(" skipped"))
        .and_then(|n| n.parse().ok())
        .expect("a skipped count");
    assert!(
        skipped > 0 && summary.contains(" passed, 0 failed, "),
        "{summary}"
    );
    let reasons: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "skipped, by reason:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(
        reasons,
        [format!(
            "  {skipped:5}  checks another level's feature-level table; running at 4_1"
        )]
    );
    // --verbose breaks the run down by the cases' level: 4_1's cases all ran but the three
    // feature-level sibling groups (siblings.*.feature_level), whose second step is at 4_0.
    let level_4_1 = stdout
        .lines()
        .find(|l| l.starts_with("  4_1: "))
        .expect("a 4_1 line");
    assert!(level_4_1.ends_with(", 0 failed, 3 skipped"), "{level_4_1}");
}

#[test]
fn a_name_from_the_backends_file_in_the_current_folder_starts_there() {
    // The installed command's default is `backends.yaml`, a relative path whose folder is "".
    let dir = std::env::temp_dir().join(format!("dmlcts-named-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("backends.yaml"),
        format!(
            "backends:\n  here:\n    command: {} serve-cpu\n",
            env!("CARGO_BIN_EXE_dmlcts")
        ),
    )
    .unwrap();
    for extra in [&[][..], &["--backend-config", "backends.yaml"][..]] {
        let out = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
            .args(["conformance", "--backend", "here", "--filter", "doc."])
            .args(extra)
            .current_dir(&dir)
            .output()
            .expect("run dmlcts");
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
        assert_eq!(stdout.lines().last(), Some("8 passed, 0 failed, 0 skipped"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_slow_starting_servers_start_up_is_counted_apart_from_the_cases_time() {
    let server = format!(
        "process:sleep 1; exec {} serve-cpu",
        env!("CARGO_BIN_EXE_dmlcts")
    );
    let json = std::env::temp_dir().join(format!("dmlcts-slow-{}.json", std::process::id()));
    let out = dmlcts(&[
        "conformance",
        "--backend",
        &server,
        "--filter",
        "doc.",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let startup = report["summary"]["startup_s"].as_f64().unwrap();
    let cases = report["summary"]["cases_s"].as_f64().unwrap();
    assert!(startup >= 1.0, "{startup}");
    assert!(cases < 1.0, "{cases}");
    assert!(
        stdout.contains(&format!(
            "backend start-up {startup:.3} s; 8 cases ran in {cases:.3} s"
        )),
        "{stdout}"
    );
}

// On main, `--help` pointed at docs/backend-protocol.md, a path only a checkout has, and no
// command printed the protocol.
#[test]
fn the_protocol_is_printed_by_the_command_and_help_names_no_repository_path() {
    let out = dmlcts(&["protocol"]);
    assert_eq!(out.status.code(), Some(0));
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/backend-protocol.md"
    ))
    .unwrap();
    assert_eq!(text(&out.stdout), format!("{}\n", doc.trim_end()));
    for words in [
        vec!["--help"],
        vec!["conformance", "--help"],
        vec!["fuzz", "--help"],
        vec!["backends"],
    ] {
        let out = dmlcts(&words);
        let help = text(&out.stdout);
        assert!(!help.contains("docs/"), "{words:?}: {help}");
        assert!(help.contains("dmlcts protocol"), "{words:?}: {help}");
    }
}
