//! The Windows side, cross-built on Linux for x86_64-pc-windows-gnu: the Rust target, the
//! DirectML protocol server (.exe), and the small bcryptprimitives shim DLL that Wine 8 lacks
//! (built with Debian's mingw-w64).

use super::shell::{run, step};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "x86_64-pc-windows-gnu";

pub(super) fn rust_target() -> Result<(), String> {
    let sysroot = run(
        Command::new("rustc").args(["--print", "sysroot"]),
        "rustc --print sysroot",
    )?;
    if Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(TARGET)
        .exists()
    {
        return Ok(());
    }
    step(&format!("rustup target add {TARGET}"));
    run(
        Command::new("rustup").args(["target", "add", TARGET]),
        "rustup target add",
    )
    .map_err(|e| {
        format!(
            "{e}\nThe Rust standard library for {TARGET} is needed: `rustup target add {TARGET}`."
        )
    })?;
    Ok(())
}

pub(super) fn shim(dir: &Path) -> Result<PathBuf, String> {
    let out = dir.join("bcryptprimitives.dll");
    let source = crate::repository_root().join("crates/backend-directml/shim/bcryptprimitives.c");
    let fresh = out.metadata().and_then(|o| o.modified()).ok()
        >= source.metadata().and_then(|s| s.modified()).ok();
    if out.exists() && fresh {
        return Ok(out);
    }
    step("building the bcryptprimitives shim with mingw-w64");
    run(
        Command::new("x86_64-w64-mingw32-gcc")
            .args(["-shared", "-O2", "-o"])
            .arg(&out)
            .arg(&source)
            .arg("-ladvapi32"),
        "building bcryptprimitives.dll",
    )?;
    Ok(out)
}

/// Cross-builds the server (cargo does nothing when it is up to date); returns the .exe.
pub(super) fn server() -> Result<PathBuf, String> {
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "build",
                "--release",
                "--quiet",
                "--target",
                TARGET,
                "-p",
                "dmlcts-backend-directml",
                "--bin",
                "dmlcts-directml-server",
            ])
            .current_dir(crate::repository_root()),
        "cross-building the DirectML server",
    )?;
    Ok(crate::repository_root()
        .join("target")
        .join(TARGET)
        .join("release/dmlcts-directml-server.exe"))
}

/// Cross-builds the dmlcts command for Windows (its slim build, as `cargo install` and the
/// wheel make it); returns the .exe.
pub(super) fn command_exe() -> Result<PathBuf, String> {
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "build",
                "--release",
                "--quiet",
                "--target",
                TARGET,
                "-p",
                "dmlcts",
            ])
            .current_dir(crate::repository_root()),
        "cross-building dmlcts.exe",
    )?;
    Ok(crate::repository_root()
        .join("target")
        .join(TARGET)
        .join("release/dmlcts.exe"))
}
