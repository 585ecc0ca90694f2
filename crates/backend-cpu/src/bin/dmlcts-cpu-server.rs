//! The CPU backend as an out-of-process protocol server (docs/backend-protocol.md), on
//! stdin/stdout: a device at every feature level (each `compile` names one), or with
//! `--feature-level X_Y` a device at that level only.

use dmlcts_tensor::FeatureLevel;
use std::process::ExitCode;

/// Why the server stopped short.
enum ServerError {
    /// The command line is wrong: exit status 2.
    Usage(String),
    /// The connection broke: exit status 1.
    Serve(String),
}

fn main() -> ExitCode {
    // The one place this binary's exit status is decided.
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(ServerError::Usage(message)) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
        Err(ServerError::Serve(message)) => {
            eprintln!("dmlcts-cpu-server: {message}");
            ExitCode::from(1)
        }
    }
}

fn run() -> Result<(), ServerError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let level = match args.as_slice() {
        [] => None,
        [flag, value] if flag == "--feature-level" => {
            Some(FeatureLevel::parse(value).ok_or_else(|| {
                ServerError::Usage(format!(
                    "dmlcts-cpu-server: unknown feature level `{value}`"
                ))
            })?)
        }
        _ => {
            return Err(ServerError::Usage(
                "usage: dmlcts-cpu-server [--feature-level X_Y]".to_string(),
            ));
        }
    };
    dmlcts_backend_cpu::serve_stdio(level).map_err(|e| ServerError::Serve(e.to_string()))
}
