//! `directml setup`: the steps in the order the stack is built on, each checking its own
//! result first, and the script that starts a version's server.

use super::cross_build::{rust_target, server, shim};
use super::doctor;
use super::pins::{Pin, directml_dll, version_dir};
use super::shell::{run, server_script, stack_dir};
use super::wine::{debian_packages, mesa, mesa_lib_dir, wine_prefix};
use std::path::{Path, PathBuf};
use std::process::Command;

fn copy_into(file: &Path, dir: &Path) -> Result<(), String> {
    let name = file.file_name().ok_or("a file without a name")?;
    std::fs::copy(file, dir.join(name))
        .map(|_| ())
        .map_err(|e| format!("copying {} into {}: {e}", file.display(), dir.display()))
}

/// Prepares the shared stack and the pin's folder; returns that folder.
pub fn setup(pin: &Pin) -> Result<PathBuf, String> {
    if cfg!(windows) {
        return Err(
            "on Windows, DirectML runs natively: see docs/guide/directml.md, On Windows (no Wine stack needed)".to_string(),
        );
    }
    let dir = stack_dir();
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    debian_packages()?;
    rust_target()?;
    let icd = mesa(&dir)?;
    let shim = shim(&dir)?;
    let exe = server()?;
    let prefix = wine_prefix(&dir)?;
    let version_dir = version_dir(pin);
    directml_dll(pin, &version_dir)?;
    copy_into(&shim, &version_dir)?;
    copy_into(&exe, &version_dir)?;
    let script = server_script();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n# Written by `cargo xtask directml setup`: real DirectML under Wine, on Mesa 25 lavapipe.\n\
             # usage: run-server.sh VERSION_FOLDER [server options]; the folder holds the server, its\n\
             # DirectML.dll and the shim.\n\
             export WINEPREFIX='{}' WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml='\n\
             # DMLCTS_VK_ICD swaps the Vulkan driver (CI points it at Debian 12's Mesa 22 to see the\n\
             # self-test refuse a broken stack).\n\
             export VK_ICD_FILENAMES=\"${{DMLCTS_VK_ICD:-{}}}\" LD_LIBRARY_PATH='{}'\n\
             export XDG_RUNTIME_DIR=\"${{XDG_RUNTIME_DIR:-$(mktemp -d)}}\"\n\
             cd \"$1\" && shift || exit 2\n\
             exec xvfb-run -a -s '-screen 0 640x480x24 -nolisten tcp' wine dmlcts-directml-server.exe \"$@\"\n",
            prefix.display(),
            icd.display(),
            mesa_lib_dir().display(),
        ),
    )
    .map_err(|e| e.to_string())?;
    run(Command::new("chmod").arg("+x").arg(&script), "chmod")?;
    Ok(version_dir)
}

/// Sets the pin up, checks every piece (one line naming the first missing one), and returns
/// the command that starts its server.
pub fn prepare(pin: &Pin) -> Result<String, String> {
    let dir = setup(pin)?;
    doctor::verdict(&doctor::checks(&doctor::System::this_machine(), pin, &dir))?;
    Ok(format!(
        "{} {}",
        dmlcts_harness::shell_word(&server_script().display().to_string()),
        dmlcts_harness::shell_word(&dir.display().to_string())
    ))
}
