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
    /// Throughput against memcpy, ndarray and the oracle: [--runs N] [--no-oracle] [--json FILE]
    /// [--filter TEXT] [--backend cpu|wgpu] [--adapter TEXT]
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
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
    #[command(disable_help_flag = true)]
    Directml {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
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
        Command::Bench { args } => said(bench::bench_main(&args)),
        Command::Directml { args } => said(directml::directml_main(&args)),
        Command::Crosscheck(args) => said(crosscheck::crosscheck_main(&args, &host, &root)),
        Command::Mutants {
            package,
            cargo_mutants_args,
        } => said(mutants::mutants_main(&package, &cargo_mutants_args, &root)),
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
}
