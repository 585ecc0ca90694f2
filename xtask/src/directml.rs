//! `cargo xtask directml setup | doctor | matrix`: everything real DirectML needs on Linux,
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
//! order, and the start script), `doctor` (each piece checked), `matrix` (every version's run).

mod cross_build;
mod doctor;
mod matrix;
mod pins;
mod setup;
mod wine;

pub use pins::backend_names;
use pins::{PINS, Pin, pin_for};
use setup::{prepare, setup};
use std::path::PathBuf;

pub fn stack_dir() -> PathBuf {
    crate::repository_root()
        .join("target")
        .join("directml-stack")
}

/// The script that starts the server in a version's folder (after `setup`).
pub fn server_script() -> PathBuf {
    stack_dir().join("run-server.sh")
}

/// A version's own folder: its DirectML.dll, next to a copy of the server and the shim.
pub fn version_dir(pin: &Pin) -> PathBuf {
    stack_dir().join(pin.version)
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

fn pins_named(args: &[String]) -> Result<Vec<&'static Pin>, String> {
    if args.is_empty() {
        return Ok(vec![PINS.last().expect("at least one pin")]);
    }
    if args.len() == 1 && args[0] == "all" {
        return Ok(PINS.iter().collect());
    }
    args.iter()
        .map(|v| pin_for(&format!("directml@{v}")).expect("a directml@ name"))
        .collect()
}

const USAGE: &str = "\
usage: cargo xtask directml setup [VERSION... | all]   prepare the stack (default: the newest pin)
       cargo xtask directml doctor [VERSION... | all]  check each piece, one line each
       cargo xtask directml matrix [--write-guide]     the corpus on every pinned version: the table
";

pub fn directml_main(args: &[String]) -> i32 {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("setup") => {
            let pins = match pins_named(rest) {
                Ok(pins) => pins,
                Err(e) => {
                    dmlcts_cli::say_err!("directml setup: {e}");
                    return 2;
                }
            };
            for pin in pins {
                match setup(pin) {
                    Ok(dir) => dmlcts_cli::say!(
                        "directml setup: DirectML {} ready in {}; run the corpus with `cargo xtask \
                         conformance --backend directml@{}`",
                        pin.version,
                        dir.display(),
                        pin.version
                    ),
                    Err(e) => {
                        dmlcts_cli::say_err!("directml setup: {e}");
                        return 1;
                    }
                }
            }
            0
        }
        Some("doctor") => match pins_named(rest) {
            Ok(pins) => doctor::doctor_main(&pins),
            Err(e) => {
                dmlcts_cli::say_err!("directml doctor: {e}");
                2
            }
        },
        Some("matrix") => matrix::matrix_main(rest),
        _ => {
            dmlcts_cli::say_err!("{}", USAGE.trim_end());
            2
        }
    }
}
