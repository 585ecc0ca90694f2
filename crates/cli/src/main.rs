//! `dmlcts`: the conformance suite for DirectML's Split, Join and Slice1, installed. The
//! corpus is compiled in; run it against your backend from any folder.

use clap::{CommandFactory, FromArgMatches, Parser};
use dmlcts_cli::{DEFAULT_FUZZ_OUT, Host, SuiteCommand};
use dmlcts_cli::{find_directml_stack, found_directml_names, ready_directml_names};
use std::path::PathBuf;
use std::process::ExitCode;

/// Conformance suite and reference oracle for DirectML's DML_SPLIT, DML_JOIN and DML_SLICE1.
///
/// A backend in any language speaks the backend protocol (`dmlcts protocol` prints it); run it
/// with `dmlcts conformance --backend 'process:COMMAND'`.
#[derive(Parser)]
#[command(name = "dmlcts", version)]
struct Cli {
    #[command(subcommand)]
    command: SuiteCommand,
}

fn main() -> ExitCode {
    // The version names the commit and the embedded corpus's digest, known at build time.
    let version: &'static str = Box::leak(dmlcts_cli::version_text().into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let host = Host {
        program: "dmlcts",
        default_backends_file: PathBuf::from("backends.yaml"),
        // A folder of its own in the user's current folder, never the corpus's `cases/`.
        default_fuzz_out: PathBuf::from(DEFAULT_FUZZ_OUT),
        directml: find_directml_stack,
        directml_names: found_directml_names,
        directml_ready: ready_directml_names,
    };
    // The one place this binary's exit status and error text are decided.
    dmlcts_cli::finish(cli.command.run(&host))
}
