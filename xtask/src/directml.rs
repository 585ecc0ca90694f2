//! `cargo xtask directml setup | doctor | matrix | windows-command`: everything real DirectML needs on Linux,
//! prepared in target/directml-stack (outside git), idempotently: each step checks its own
//! result first.
//!
//! The stack: the server .exe (x86_64-pc-windows-gnu, built with Debian's mingw-w64), run by
//! Wine 8 under Xvfb; Wine's d3d12 (vkd3d) runs on Vulkan (Debian's loader, libvulkan1)
//! through Mesa 25's lavapipe, unpacked privately from bookworm-backports (Debian 12's Mesa 22
//! lacks VK_EXT_descriptor_indexing and DirectML then silently writes nothing); each pinned
//! DirectML.dll comes from a PyPI wheel, checked against its hashes; and a small shim DLL
//! that Wine 8 lacks. The Wine prefix, Mesa, the shim and the server build are shared; each
//! version gets a folder of its own (target/directml-stack/VERSION) with its DLL.
//!
//! The files: `pins` (the pinned DLLs and their download), `wine` (Debian's packages, Mesa 25,
//! the Wine prefix), `cross_build` (the server and the shim for Windows), `setup` (the steps in
//! order, and the start script), `doctor` (each piece checked), `matrix` (every version's run),
//! `command` (the dmlcts command for Windows, run under Wine and compared with the server path),
//! and `shell` (the leaf they share: running a command, a step's line, sha256, the stack's
//! folder). They form no circle: command -> setup -> {cross_build, pins, wine, doctor} -> shell, and no
//! module here uses this one (xtask/tests/module_graph.rs checks it).

mod command;
mod cross_build;
mod doctor;
mod matrix;
mod pins;
mod setup;
mod shell;
mod wine;

use clap::Subcommand;
pub use matrix::MatrixError;
pub use pins::backend_names;
use pins::{PINS, Pin, pin_for, version_dir};
use setup::{prepare, setup};
use shell::server_script;

/// `cargo xtask directml`'s commands.
#[derive(Subcommand)]
pub enum DirectmlCommand {
    /// Prepare the stack in target/directml-stack, idempotently (each step checks its own
    /// result first), and the named versions' folders
    Setup {
        /// Pinned DirectML versions (e.g. 1.15.4), or `all` alone [default: the newest pin]
        #[arg(value_name = "VERSION")]
        versions: Vec<String>,
    },
    /// Check each piece of the stack for the named versions, one line each
    Doctor {
        /// Pinned DirectML versions (e.g. 1.15.4), or `all` alone [default: the newest pin]
        #[arg(value_name = "VERSION")]
        versions: Vec<String>,
    },
    /// The corpus with expectations on every pinned version, each in its own `cargo xtask
    /// conformance` process: the table (in target/directml-stack/matrix/table.md)
    Matrix {
        /// Also write the table into docs/guide/directml.md, between its markers
        #[arg(long)]
        write_guide: bool,
    },
    /// The dmlcts command cross-built for Windows, run under Wine as a Windows user runs it
    /// (dmlcts.exe beside DirectML.dll): the corpus on the CPU; per version, `adapters`, and
    /// `--backend directml --adapter 0` with expectations/directml.yaml case for case as the
    /// server path; a printed replay run again through Wine's cmd
    WindowsCommand {
        /// Pinned DirectML versions (e.g. 1.9.0 1.15.4), or `all` alone [default: the newest pin]
        #[arg(value_name = "VERSION")]
        versions: Vec<String>,
    },
}

/// Why `cargo xtask directml` failed; main.rs says it and picks the exit status.
#[derive(Debug)]
pub enum DirectmlError {
    /// `setup` or `doctor` (`command`) was given a version that is not pinned.
    NotPinned {
        command: &'static str,
        message: String,
    },
    /// A setup step failed: what it said.
    Setup(String),
    /// The doctor found a piece missing (its lines said which).
    Missing,
    /// The matrix stopped, or a version's run failed.
    Matrix(MatrixError),
    /// A check of `windows-command` failed: what it found.
    WindowsCommand(String),
}

/// The `Host::directml_ready` of `cargo xtask`: the pinned versions set up in the stack
/// (their DLL and the start script in place), without setting anything up.
pub fn ready_names() -> Vec<String> {
    if !server_script().is_file() {
        return Vec::new();
    }
    PINS.iter()
        .filter(|pin| version_dir(pin).join("DirectML.dll").is_file())
        .map(|pin| format!("directml@{}", pin.version))
        .collect()
}

/// The `Host::directml` of `cargo xtask`: sets up (on demand) and checks the version a
/// DirectML backend name asks for; `None` for other names.
pub fn start_command(backend: &str) -> Option<Result<String, String>> {
    pin_for(backend).map(|pin| prepare(pin?))
}

/// The pins named on the command line: none is the newest, `all` alone is every one.
fn pins_named(versions: &[String]) -> Result<Vec<&'static Pin>, String> {
    if versions.is_empty() {
        return Ok(vec![PINS.last().expect("at least one pin")]);
    }
    if versions.len() == 1 && versions[0] == "all" {
        return Ok(PINS.iter().collect());
    }
    versions
        .iter()
        .map(|v| pin_for(&format!("directml@{v}")).expect("a directml@ name"))
        .collect()
}

pub fn directml_main(command: &DirectmlCommand) -> Result<(), DirectmlError> {
    match command {
        DirectmlCommand::Setup { versions } => {
            let pins = pins_named(versions).map_err(|message| DirectmlError::NotPinned {
                command: "setup",
                message,
            })?;
            for pin in pins {
                let dir = setup(pin).map_err(DirectmlError::Setup)?;
                dmlcts_cli::say!(
                    "directml setup: DirectML {} ready in {}; run the corpus with `cargo xtask \
                     conformance --backend directml@{}`",
                    pin.version,
                    dir.display(),
                    pin.version
                );
            }
            Ok(())
        }
        DirectmlCommand::Doctor { versions } => {
            let pins = pins_named(versions).map_err(|message| DirectmlError::NotPinned {
                command: "doctor",
                message,
            })?;
            if doctor::doctor_main(&pins) {
                Ok(())
            } else {
                Err(DirectmlError::Missing)
            }
        }
        DirectmlCommand::Matrix { write_guide } => {
            matrix::matrix_main(*write_guide).map_err(DirectmlError::Matrix)
        }
        DirectmlCommand::WindowsCommand { versions } => {
            let pins = pins_named(versions).map_err(|message| DirectmlError::NotPinned {
                command: "windows-command",
                message,
            })?;
            command::windows_command(&pins).map_err(DirectmlError::WindowsCommand)
        }
    }
}
