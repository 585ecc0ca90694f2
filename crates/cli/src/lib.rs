//! The `dmlcts` command's library: the `conformance`, `fuzz`, `matrix`, `show` and `backends`
//! subcommands (clap), the backend resolver (`--backend NAME`), the conformance run's
//! progress (`progress`), closing lines and reports (`closing`), and which suite and corpus
//! made them (`suite`). The `dmlcts` binary and `cargo xtask` both call [`SuiteCommand::run`],
//! so every entry point parses, resolves and reports the same way; they differ only in their
//! [`Host`] (where backends.yaml is, how DirectML is found, how a replay command starts).

pub mod out;

mod backends;
mod closing;
mod conformance;
mod directml;
mod error;
mod fuzz;
mod matrix;
mod preflight;
mod progress;
mod reporters;
mod show;
mod suite;

use clap::Subcommand;
use dmlcts_tensor::FeatureLevel;
use std::path::PathBuf;
use std::time::Duration;

// The crate's surface: what the `dmlcts` binary, `cargo xtask` and the crate's tests use
// (crates/cli/tests/public_api.rs lists it). Everything else is private to its module.
pub use backends::{
    BackendRequest, Resolved, Resolver, find_directml_stack, found_directml_names,
    ready_directml_names, resolve,
};
pub use conformance::{ConformanceArgs, conformance_with};
pub use error::{CommandError, CommandResult, Verdict, exit_status, finish};
pub use fuzz::{FuzzArgs, fuzz_with};
pub use matrix::{MatrixArgs, Wanted, matrix_with};
pub use suite::{COMMIT, version_text};

/// Where the installed `dmlcts fuzz` saves its cases when `--out` is not given.
pub const DEFAULT_FUZZ_OUT: &str = "dmlcts-regressions";

/// The backend protocol's specification (docs/backend-protocol.md), printed by `dmlcts
/// protocol`, so that an installed command carries it.
pub const PROTOCOL_DOC: &str = include_str!("../../../docs/backend-protocol.md");

/// What differs between running from this repository's checkout (`cargo xtask`) and
/// running the installed `dmlcts` binary anywhere.
pub struct Host {
    /// How commands printed for the user start: `cargo xtask` or `dmlcts`.
    pub program: &'static str,
    /// The backends file used when `--backend-config` is not given (it may not exist).
    pub default_backends_file: PathBuf,
    /// Where `fuzz` saves a minimal failing case when `--out` is not given.
    pub default_fuzz_out: PathBuf,
    /// For a DirectML backend name (`directml`, the newest, or `directml@VERSION`): prepares
    /// (or finds) that version's stack and returns the shell command that starts its protocol
    /// server. `None` for any other name.
    pub directml: fn(&str) -> Option<Result<String, String>>,
    /// The DirectML backend names this host can start, each with a line about it.
    pub directml_names: fn() -> Vec<(String, String)>,
    /// The DirectML versions set up here and ready to start (`directml@X.Y.Z` names, oldest
    /// first), without setting anything up: `matrix`'s default columns.
    pub directml_ready: fn() -> Vec<String>,
}

/// The subcommands the `dmlcts` binary and `cargo xtask` share.
#[derive(Debug, Subcommand)]
pub enum SuiteCommand {
    /// Run the case corpus (or your own case files) against a backend
    Conformance(ConformanceArgs),
    /// Random valid and near-miss cases; the first failure is shrunk and saved
    // Boxed: its options are most of the enum's size.
    Fuzz(Box<FuzzArgs>),
    /// List the backends `--backend` can name
    Backends(backends::BackendsArgs),
    /// The corpus on every backend available here, one column each: reports/matrix.json and
    /// reports/matrix.html
    Matrix(MatrixArgs),
    /// A case in the corpus format: its descriptor, its inputs and the outputs it expects
    Show(show::ShowArgs),
    /// Print the backend protocol's specification (Markdown): what a `process:COMMAND`
    /// server in any language speaks
    Protocol,
    /// Serve the CPU backend over the backend protocol on stdin/stdout (what `--backend
    /// cpu-process` runs)
    #[command(hide = true)]
    ServeCpu(backends::ServeCpuArgs),
    /// The D3D12 adapters DirectML can run on (Windows): index, name, vendor, driver version,
    /// dedicated memory, software or hardware, DirectML's highest feature level there
    Adapters(directml::AdaptersArgs),
    /// Serve real DirectML over the backend protocol on stdin/stdout (Windows; what
    /// `--backend directml` runs there, in a child process)
    #[command(hide = true)]
    ServeDirectml(directml::ServeDirectmlArgs),
}

impl SuiteCommand {
    /// Runs the command: its verdict, or why it could not run (`finish` turns either into
    /// the exit status).
    pub fn run(self, host: &Host) -> CommandResult {
        match self {
            SuiteCommand::Conformance(args) => conformance::conformance_main(&args, host),
            SuiteCommand::Fuzz(args) => fuzz::fuzz_main(&args, host),
            SuiteCommand::Backends(args) => backends::backends_main(&args, host),
            SuiteCommand::Matrix(args) => matrix::matrix_main(&args, host),
            SuiteCommand::Show(args) => show::show_main(&args),
            SuiteCommand::Protocol => {
                crate::say!("{}", PROTOCOL_DOC.trim_end());
                Ok(Verdict::Passed)
            }
            SuiteCommand::ServeCpu(args) => backends::serve_cpu_main(&args),
            SuiteCommand::Adapters(args) => directml::adapters_main(&args),
            SuiteCommand::ServeDirectml(args) => directml::serve_directml_main(&args),
        }
    }
}

/// `--feature-level X_Y`.
pub fn parse_feature_level(text: &str) -> Result<FeatureLevel, String> {
    FeatureLevel::parse(text).ok_or_else(|| format!("unknown level `{text}` (e.g. 1_0, 3_0, 4_1)"))
}

/// The longest time a flag may give (`--process-timeout`, `--time`, `--shrink-time`): 7 days.
pub const MAX_SECONDS: f64 = 604_800.0;
/// The shortest: 1 ms (a shorter one would round to no time at all).
pub const MIN_SECONDS: f64 = 0.001;

/// A number of seconds from a flag: finite, positive, from `MIN_SECONDS` to `MAX_SECONDS`.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds = text.parse::<f64>().unwrap_or(f64::NAN);
    checked_seconds(seconds).map_err(|e| format!("`{text}` {e}"))
}

/// `seconds` as a duration, when it is a number from `MIN_SECONDS` to `MAX_SECONDS`; else
/// what is wrong with it, to follow the value's own text.
pub fn checked_seconds(seconds: f64) -> Result<Duration, String> {
    if !seconds.is_finite() || seconds <= 0.0 {
        Err("is not a positive number of seconds".to_string())
    } else if seconds > MAX_SECONDS {
        Err(format!(
            "is more than the longest allowed, {MAX_SECONDS} seconds (7 days)"
        ))
    } else if seconds < MIN_SECONDS {
        Err(format!(
            "is less than the shortest allowed, {MIN_SECONDS} seconds"
        ))
    } else {
        Ok(Duration::from_secs_f64(seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::SuiteCommand;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Wrapper {
        #[command(subcommand)]
        command: SuiteCommand,
    }

    #[test]
    fn the_command_definitions_pass_clap_s_own_checks() {
        Wrapper::command().debug_assert();
    }

    #[test]
    fn seconds_must_be_finite_positive_and_at_most_7_days() {
        use super::parse_seconds;
        use std::time::Duration;
        assert_eq!(parse_seconds("2.5"), Ok(Duration::from_millis(2500)));
        assert_eq!(parse_seconds("604800"), Ok(Duration::from_secs(604_800)));
        assert_eq!(parse_seconds("0.001"), Ok(Duration::from_millis(1)));
        for text in ["0", "-1", "nan", "NaN", "inf", "-inf", "ten", ""] {
            assert_eq!(
                parse_seconds(text),
                Err(format!("`{text}` is not a positive number of seconds")),
                "{text}"
            );
        }
        for text in ["1e300", "1e19", "604801"] {
            assert_eq!(
                parse_seconds(text),
                Err(format!(
                    "`{text}` is more than the longest allowed, 604800 seconds (7 days)"
                )),
                "{text}"
            );
        }
        assert_eq!(
            parse_seconds("1e-300"),
            Err("`1e-300` is less than the shortest allowed, 0.001 seconds".to_string())
        );
    }
}
