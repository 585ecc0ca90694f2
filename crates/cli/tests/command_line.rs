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
    let out = dmlcts(&["--version"]);
    assert!(out.status.success());
    assert_eq!(
        text(&out.stdout),
        format!("dmlcts {}\n", env!("CARGO_PKG_VERSION"))
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
         cpu-process, process:COMMAND\n"
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
