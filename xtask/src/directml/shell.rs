//! The leaf the other directml modules share, importing none of them: running a command, a
//! step's line, a file's sha256, whether this runs as root, and where the stack lives.

use std::path::{Path, PathBuf};
use std::process::Command;

/// target/directml-stack: the shared stack (outside git), each version in a folder of its own.
pub fn stack_dir() -> PathBuf {
    crate::repository_root()
        .join("target")
        .join("directml-stack")
}

/// The script that starts the server in a version's folder (after `setup`).
pub fn server_script() -> PathBuf {
    stack_dir().join("run-server.sh")
}

/// Runs a command: its stdout if it succeeded, else what it said and its status.
pub(super) fn run(command: &mut Command, what: &str) -> Result<String, String> {
    let output = command
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", command.get_program()))?;
    if !output.status.success() {
        return Err(format!(
            "{what} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

pub(super) fn is_root() -> bool {
    run(Command::new("id").arg("-u"), "id").is_ok_and(|out| out.trim() == "0")
}

pub(super) fn sha256(path: &Path) -> Result<String, String> {
    let out = run(Command::new("sha256sum").arg(path), "sha256sum")?;
    Ok(out
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

/// The line a setup step says before it does something.
pub(super) fn step(name: &str) {
    dmlcts_cli::say!("directml setup: {name}");
}
