//! `cargo xtask <command>`: the project's automation, in plain Rust. `conformance`, `fuzz`
//! and `backends` are the `dmlcts` binary's own commands (crates/cli), run from the checkout.

mod bench;
mod crosscheck;
mod directml;
mod mutants;

use clap::{Parser, Subcommand};
use dmlcts_cli::{CommandError, CommandResult, Host, SuiteCommand, Verdict};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    version,
    about = "The dmlcts project's automation (conformance, fuzz, matrix, show and backends are the dmlcts command's own)"
)]
struct Xtask {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    #[command(flatten)]
    Suite(SuiteCommand),
    /// Regenerate the generated part of cases/ from specs/
    GenCases,
    /// Write docs/guide/coverage.md: every assertion of the pages against the cases that
    /// check it (per operator, level, data type and rank); fails naming any assertion no case
    /// checks where it can be checked
    Coverage,
    /// Throughput against memcpy, ndarray and the oracle: [--runs N] [--no-oracle] [--json FILE]
    /// [--filter TEXT] [--backend cpu|wgpu] [--adapter TEXT]; or --fuzz [--runs N] [--json FILE]
    #[command(args_override_self = true)]
    Bench(bench::BenchArgs),
    /// Mutation testing with cargo-mutants 27.1.0: the share of a package's mutants its tests
    /// kill (the CPU backend against the corpus alone; the oracle's validate.rs against its
    /// tests and the corpus). Slow: about half an hour each on 2 cores
    Mutants {
        /// dmlcts-backend-cpu or dmlcts-oracle
        #[arg(long, default_value = "dmlcts-backend-cpu")]
        package: String,
        /// More cargo-mutants options, after `--` (e.g. `-- --re copy_run` for a subset)
        #[arg(last = true)]
        cargo_mutants_args: Vec<String>,
    },
    /// The oracle against three references nobody here wrote (ONNX's ReferenceEvaluator,
    /// OpenVINO's Model.evaluate(), LiteRT's reference kernels): the corpus and a campaign of
    /// valid cases each, bit for bit; fails on any disagreement no expectations file explains
    Crosscheck(crosscheck::CrosscheckArgs),
    /// Real DirectML under Wine (Linux): `setup`, `doctor`, `matrix` (every pinned version)
    Directml {
        #[command(subcommand)]
        command: directml::DirectmlCommand,
    },
}

fn main() -> ExitCode {
    let root = repository_root();
    let host = Host {
        program: "cargo xtask",
        default_backends_file: root.join("backends.yaml"),
        default_fuzz_out: root.join("cases").join("regressions"),
        directml: directml::start_command,
        directml_names: directml::backend_names,
        directml_ready: directml::ready_names,
    };
    let result = match Xtask::parse().command {
        Command::Suite(command) => command.run(&host),
        Command::GenCases => gen_cases(),
        Command::Coverage => coverage(),
        Command::Bench(args) => said(bench_status(bench::bench_main(&args))),
        Command::Directml { command } => said(directml_status(directml::directml_main(&command))),
        Command::Crosscheck(args) => said(crosscheck::crosscheck_main(&args, &host, &root)),
        Command::Mutants {
            package,
            cargo_mutants_args,
        } => mutants::mutants_main(&package, &cargo_mutants_args, &root),
    };
    // The one place this binary's exit status and error text are decided.
    dmlcts_cli::finish(result)
}

/// A command that printed its own words and returns an exit status: 0 passed, 1 failed,
/// anything else could not run (already said).
fn said(status: i32) -> CommandResult {
    match status {
        0 => Ok(Verdict::Passed),
        1 => Ok(Verdict::Failed),
        _ => Err(CommandError::Said),
    }
}

/// `cargo xtask bench`'s exit status: 0, or 1 after the error's line.
fn bench_status(result: Result<(), bench::BenchError>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) => {
            dmlcts_cli::say_err!("{e}");
            1
        }
    }
}

/// `cargo xtask directml`'s exit status: 0; 2 for a version that is not pinned (as for any
/// other usage error); 1 for a failure, after its line where the run has not said it already.
fn directml_status(result: Result<(), directml::DirectmlError>) -> i32 {
    use directml::{DirectmlError, MatrixError};
    match result {
        Ok(()) => 0,
        Err(DirectmlError::NotPinned { command, message }) => {
            dmlcts_cli::say_err!("directml {command}: {message}");
            2
        }
        Err(DirectmlError::Setup(e)) => {
            dmlcts_cli::say_err!("directml setup: {e}");
            1
        }
        Err(DirectmlError::Matrix(MatrixError::Stopped(e))) => {
            dmlcts_cli::say_err!("directml matrix: {e}");
            1
        }
        Err(DirectmlError::WindowsCommand(e)) => {
            dmlcts_cli::say_err!("directml windows-command: {e}");
            1
        }
        Err(DirectmlError::Missing | DirectmlError::Matrix(MatrixError::RunsFailed)) => 1,
    }
}

/// Writes the generated corpus files; says which changed.
fn gen_cases() -> CommandResult {
    let root = repository_root();
    for (path, text) in dmlcts_harness::corpus::generate::generated_files() {
        let full = root.join(&path);
        let unchanged = std::fs::read_to_string(&full).is_ok_and(|old| old == text);
        if unchanged {
            dmlcts_cli::say!("unchanged  {path}");
            continue;
        }
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                CommandError::Output(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::write(&full, text)
            .map_err(|e| CommandError::Output(format!("cannot write {}: {e}", full.display())))?;
        dmlcts_cli::say!("wrote      {path}");
    }
    Ok(Verdict::Passed)
}

/// Writes the coverage document (docs/guide/coverage.md) from specs/ and the embedded corpus;
/// `Failed`, naming them, when an assertion has no case where it can be checked.
fn coverage() -> CommandResult {
    use dmlcts_harness::report::coverage_document::Document;
    let document = Document::of(&dmlcts_harness::Corpus::embedded().cases);
    let path = repository_root().join("docs/guide/coverage.md");
    let text = document.markdown();
    if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
        dmlcts_cli::say!("unchanged  docs/guide/coverage.md");
    } else {
        std::fs::write(&path, text)
            .map_err(|e| CommandError::Output(format!("cannot write {}: {e}", path.display())))?;
        dmlcts_cli::say!("wrote      docs/guide/coverage.md");
    }
    let holes = document.holes();
    for hole in &holes {
        dmlcts_cli::say!("hole: {hole} (no case checks it there)");
    }
    Ok(Verdict::failed_if(!holes.is_empty()))
}

/// The workspace root: xtask lives one folder below it.
pub fn repository_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_definitions_pass_clap_s_own_checks() {
        super::Xtask::command().debug_assert();
    }

    fn parse(line: &str) -> Result<super::Command, clap::Error> {
        use clap::Parser;
        super::Xtask::try_parse_from(std::iter::once("cargo xtask").chain(line.split(' ')))
            .map(|x| x.command)
    }

    /// `bench`'s options as the hand parser held them: backend, adapter, runs, oracle, json,
    /// filter, fuzz.
    fn bench(line: &str) -> String {
        match parse(line).unwrap_or_else(|e| panic!("{line}: {e}")) {
            super::Command::Bench(a) => format!(
                "{:?} {:?} {} {} {:?} {:?} {}",
                a.backend, a.adapter, a.runs, a.oracle, a.json, a.filter, a.fuzz
            ),
            _ => panic!("{line}: not bench"),
        }
    }

    /// Every `cargo xtask bench` of .ci/run and docs/guide, with what the hand parser made of
    /// it; its defaults, --runs 0 taken as 1, and a repeated flag's last value.
    #[test]
    fn bench_invocations_parse_as_the_hand_parser_did() {
        for (line, options) in [
            ("bench", "Cpu None 5 true None None false"),
            (
                "bench --runs 1 --no-oracle --filter FLOAT32",
                "Cpu None 1 false None Some(\"FLOAT32\") false",
            ),
            (
                "bench --backend wgpu --runs 1 --filter FLOAT32",
                "Wgpu None 1 true None Some(\"FLOAT32\") false",
            ),
            ("bench --fuzz --runs 5", "Cpu None 5 true None None true"),
            ("bench --runs 7", "Cpu None 7 true None None false"),
            (
                "bench --backend wgpu --runs 3",
                "Wgpu None 3 true None None false",
            ),
            (
                "bench --backend wgpu --adapter NAME",
                "Wgpu Some(\"NAME\") 5 true None None false",
            ),
            (
                "bench --json out.json --runs 0",
                "Cpu None 1 true Some(\"out.json\") None false",
            ),
            ("bench --runs 2 --runs 3", "Cpu None 3 true None None false"),
        ] {
            assert_eq!(bench(line), options, "{line}");
        }
        for wrong in [
            "bench --runs x",
            "bench --backend directml",
            "bench --bogus",
            "bench --json",
        ] {
            assert_eq!(
                parse(wrong).err().map(|e| e.exit_code()),
                Some(2),
                "{wrong}"
            );
        }
    }

    /// Every `cargo xtask directml` of .ci/run and docs/guide parses; versions are checked
    /// against the pins after parsing (a version not pinned exits 2 from main.rs).
    #[test]
    fn directml_invocations_parse_as_the_hand_parser_did() {
        use crate::directml::DirectmlCommand as D;
        let directml = |line: &str| match parse(line).unwrap_or_else(|e| panic!("{line}: {e}")) {
            super::Command::Directml { command } => command,
            _ => panic!("{line}: not directml"),
        };
        let versions = |command: &D| match command {
            D::Setup { versions } | D::Doctor { versions } | D::WindowsCommand { versions } => {
                versions.join(" ")
            }
            D::Matrix { write_guide } => format!("write_guide {write_guide}"),
        };
        for (line, expected) in [
            ("directml setup 1.9.0 1.15.4", "1.9.0 1.15.4"),
            ("directml doctor 1.9.0 1.15.4", "1.9.0 1.15.4"),
            ("directml setup all", "all"),
            ("directml doctor all", "all"),
            ("directml setup", ""),
            ("directml doctor 1.15.4", "1.15.4"),
            ("directml matrix --write-guide", "write_guide true"),
            ("directml matrix", "write_guide false"),
            ("directml windows-command 1.9.0 1.15.4", "1.9.0 1.15.4"),
        ] {
            let command = directml(line);
            assert_eq!(versions(&command), expected, "{line}");
            let verb = line.split(' ').nth(1).unwrap();
            let matches = match command {
                D::Setup { .. } => verb == "setup",
                D::Doctor { .. } => verb == "doctor",
                D::Matrix { .. } => verb == "matrix",
                D::WindowsCommand { .. } => verb == "windows-command",
            };
            assert!(matches, "{line}");
        }
        for wrong in ["directml", "directml repair", "directml matrix --bogus"] {
            assert_eq!(
                parse(wrong).err().map(|e| e.exit_code()),
                Some(2),
                "{wrong}"
            );
        }
    }
}
