//! `cargo xtask directml setup`: everything real DirectML needs on Linux, prepared in
//! target/directml-stack (outside git), idempotently: each step checks its own result first.
//!
//! The stack: the server .exe (x86_64-pc-windows-gnu, built with Debian's mingw-w64), run by
//! Wine 8 under Xvfb; Wine's d3d12 (vkd3d) runs on Vulkan through Mesa 25's lavapipe, unpacked
//! privately from bookworm-backports (Debian 12's Mesa 22 lacks VK_EXT_descriptor_indexing
//! and DirectML then silently writes nothing); DirectML.dll comes from the pinned
//! onnxruntime-directml wheel on PyPI, checked against its hash; and a small shim DLL that
//! Wine 8 lacks.

use std::path::{Path, PathBuf};
use std::process::Command;

const WHEEL: &str = "onnxruntime-directml==1.16.3";
const WHEEL_FILE: &str = "onnxruntime_directml-1.16.3-cp311-cp311-win_amd64.whl";
const WHEEL_SHA256: &str = "62ff6a437fb9ade5179fb7a65414daa5a6872551d1e9ea35e37a412481725931";
/// DirectML 1.12.1, as shipped in that wheel.
const DLL_SHA256: &str = "ad81ea396c042e52829d5d77ca573ba255cc0f61cbd801d4071a94e24c6df343";
const DEBIAN_PACKAGES: &[&str] = &[
    "gcc-mingw-w64-x86-64",
    "wine64",
    "wine",
    "libwine",
    "xvfb",
    "xauth",
];
const MESA_PACKAGES: &[&str] = &["mesa-vulkan-drivers", "libdrm2", "libdrm-amdgpu1"];
const TARGET: &str = "x86_64-pc-windows-gnu";

pub fn stack_dir() -> PathBuf {
    crate::repository_root()
        .join("target")
        .join("directml-stack")
}

/// The command that starts the server (after `setup`).
pub fn server_command() -> PathBuf {
    stack_dir().join("run-server.sh")
}

fn run(command: &mut Command, what: &str) -> Result<String, String> {
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

fn have(program: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {program}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    run(Command::new("id").arg("-u"), "id").is_ok_and(|out| out.trim() == "0")
}

fn sha256(path: &Path) -> Result<String, String> {
    let out = run(Command::new("sha256sum").arg(path), "sha256sum")?;
    Ok(out
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

fn step(name: &str) {
    println!("directml setup: {name}");
}

/// Debian's packages: installed with apt-get when running as root, otherwise named.
fn debian_packages() -> Result<(), String> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .copied()
        .filter(|p| run(Command::new("dpkg").args(["-s", p]), "dpkg").is_err())
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        return Err(format!(
            "missing Debian packages: {}. Install them with:\n  sudo apt-get install --no-install-recommends {}",
            missing.join(" "),
            missing.join(" ")
        ));
    }
    step(&format!("installing {}", missing.join(" ")));
    run(
        Command::new("apt-get").args(["update", "-qq"]),
        "apt-get update",
    )?;
    run(
        Command::new("apt-get")
            .args(["install", "-y", "-qq", "--no-install-recommends"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        "apt-get install",
    )?;
    Ok(())
}

fn rust_target() -> Result<(), String> {
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

/// The Debian mirror the machine already uses.
fn debian_mirror() -> String {
    let mut texts = vec![std::fs::read_to_string("/etc/apt/sources.list").unwrap_or_default()];
    if let Ok(entries) = std::fs::read_dir("/etc/apt/sources.list.d") {
        for entry in entries.flatten() {
            let path = entry.path();
            if path
                .extension()
                .is_some_and(|e| e == "sources" || e == "list")
            {
                texts.push(std::fs::read_to_string(path).unwrap_or_default());
            }
        }
    }
    for text in texts {
        for word in text.split_whitespace() {
            if word.starts_with("http") && word.trim_end_matches('/').ends_with("/debian") {
                return word.trim_end_matches('/').to_string();
            }
        }
    }
    "http://deb.debian.org/debian".to_string()
}

/// Mesa 25's lavapipe from bookworm-backports, unpacked into the stack (not installed).
fn mesa(dir: &Path) -> Result<PathBuf, String> {
    let lib = dir.join("mesa25/usr/lib/x86_64-linux-gnu");
    let icd = dir.join("lvp25_icd.json");
    if !lib.join("libvulkan_lvp.so").exists() {
        let codename = std::fs::read_to_string("/etc/os-release")
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VERSION_CODENAME=").map(str::to_string))
            .unwrap_or_default();
        if codename != "bookworm" {
            return Err(format!(
                "Mesa 25 comes from bookworm-backports; this machine is Debian `{codename}`. On Debian 13 \
                 or later, Mesa >= 25 is the system's own: point VK_ICD_FILENAMES at its lvp_icd json."
            ));
        }
        step("downloading Mesa 25 lavapipe from bookworm-backports (private, not installed)");
        let apt = dir.join("apt");
        for sub in [
            "etc/preferences.d",
            "lists/partial",
            "cache/archives/partial",
            "debs",
        ] {
            std::fs::create_dir_all(apt.join(sub)).map_err(|e| e.to_string())?;
        }
        std::fs::write(
            apt.join("etc/sources.list"),
            format!(
                "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] {} bookworm-backports main\n",
                debian_mirror()
            ),
        )
        .map_err(|e| e.to_string())?;
        std::fs::write(apt.join("etc/preferences"), "").map_err(|e| e.to_string())?;
        let options = |cmd: &mut Command| {
            let a = |s: &str| apt.join(s).display().to_string();
            cmd.args([
                "-o".to_string(),
                format!("Dir::Etc::SourceList={}", a("etc/sources.list")),
                "-o".to_string(),
                "Dir::Etc::SourceParts=/nonexistent".to_string(),
                "-o".to_string(),
                format!("Dir::State::Lists={}", a("lists")),
                "-o".to_string(),
                format!("Dir::Cache={}", a("cache")),
                "-o".to_string(),
                format!("Dir::Etc::Preferences={}", a("etc/preferences")),
                "-o".to_string(),
                format!("Dir::Etc::PreferencesParts={}", a("etc/preferences.d")),
                "-o".to_string(),
                "Debug::NoLocking=1".to_string(),
                "-o".to_string(),
                "APT::Sandbox::User=root".to_string(),
            ]);
        };
        let mut update = Command::new("apt-get");
        options(&mut update);
        run(
            update.arg("update").arg("-qq"),
            "apt-get update (bookworm-backports)",
        )?;
        let mut download = Command::new("apt-get");
        options(&mut download);
        download.arg("download").current_dir(apt.join("debs"));
        for package in MESA_PACKAGES {
            download.arg(format!("{package}/bookworm-backports"));
        }
        run(&mut download, "apt-get download (Mesa 25)")?;
        for entry in std::fs::read_dir(apt.join("debs"))
            .map_err(|e| e.to_string())?
            .flatten()
        {
            run(
                Command::new("dpkg")
                    .arg("-x")
                    .arg(entry.path())
                    .arg(dir.join("mesa25")),
                "dpkg -x",
            )?;
        }
        if !lib.join("libvulkan_lvp.so").exists() {
            return Err("the Mesa 25 package did not contain libvulkan_lvp.so".to_string());
        }
    }
    std::fs::write(
        &icd,
        format!(
            "{{\n  \"ICD\": {{\n    \"api_version\": \"1.4.305\",\n    \"library_path\": \"{}\"\n  }},\n  \"file_format_version\": \"1.0.0\"\n}}\n",
            lib.join("libvulkan_lvp.so").display()
        ),
    )
    .map_err(|e| e.to_string())?;
    Ok(icd)
}

/// DirectML.dll from the pinned wheel, checked against its hashes.
fn directml_dll(dir: &Path) -> Result<PathBuf, String> {
    let dll = dir.join("DirectML.dll");
    if dll.exists() && sha256(&dll)? == DLL_SHA256 {
        return Ok(dll);
    }
    let wheels = dir.join("wheel");
    let wheel = wheels.join(WHEEL_FILE);
    if !wheel.exists() {
        step(&format!(
            "downloading {WHEEL} (win_amd64) from PyPI for its DirectML.dll"
        ));
        run(
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--platform",
                    "win_amd64",
                    "--python-version",
                    "3.11",
                    WHEEL,
                    "-d",
                ])
                .arg(&wheels),
            "pip download",
        )?;
    }
    let got = sha256(&wheel)?;
    if got != WHEEL_SHA256 {
        return Err(format!(
            "{} has sha256 {got}, expected {WHEEL_SHA256}",
            wheel.display()
        ));
    }
    run(
        Command::new("python3").arg("-c").arg(
            "import sys, zipfile; open(sys.argv[2], 'wb').write(zipfile.ZipFile(sys.argv[1]).read('onnxruntime/capi/DirectML.dll'))",
        ).arg(&wheel).arg(&dll),
        "extracting DirectML.dll",
    )?;
    let got = sha256(&dll)?;
    if got != DLL_SHA256 {
        return Err(format!(
            "DirectML.dll has sha256 {got}, expected {DLL_SHA256}"
        ));
    }
    Ok(dll)
}

fn shim(dir: &Path) -> Result<PathBuf, String> {
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

fn server(dir: &Path) -> Result<PathBuf, String> {
    step(&format!(
        "cargo build --release --target {TARGET} -p dmlcts-backend-directml"
    ));
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
    let built = crate::repository_root()
        .join("target")
        .join(TARGET)
        .join("release/dmlcts-directml-server.exe");
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir).map_err(|e| e.to_string())?;
    let exe = run_dir.join("dmlcts-directml-server.exe");
    std::fs::copy(&built, &exe).map_err(|e| format!("copying {}: {e}", built.display()))?;
    Ok(exe)
}

fn wine_prefix(dir: &Path) -> Result<PathBuf, String> {
    let prefix = dir.join("wineprefix");
    if prefix.join("system.reg").exists() {
        return Ok(prefix);
    }
    step("creating the Wine prefix");
    run(
        Command::new("wineboot")
            .arg("-i")
            .env("WINEPREFIX", &prefix)
            .env("WINEDEBUG", "-all")
            .env("WINEDLLOVERRIDES", "mscoree,mshtml="),
        "wineboot",
    )?;
    Ok(prefix)
}

/// Prepares the whole stack; returns the server command.
pub fn setup() -> Result<PathBuf, String> {
    if cfg!(windows) {
        return Err(
            "on Windows, DirectML runs natively: see the README (no Wine stack needed)".to_string(),
        );
    }
    let dir = stack_dir();
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    debian_packages()?;
    rust_target()?;
    let icd = mesa(&dir)?;
    let dll = directml_dll(&dir)?;
    let shim = shim(&dir)?;
    let exe = server(&dir)?;
    let run_dir = exe.parent().expect("run folder").to_path_buf();
    for file in [&dll, &shim] {
        std::fs::copy(file, run_dir.join(file.file_name().expect("file")))
            .map_err(|e| e.to_string())?;
    }
    let prefix = wine_prefix(&dir)?;
    let lib = dir.join("mesa25/usr/lib/x86_64-linux-gnu");
    let script = server_command();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n# Written by `cargo xtask directml setup`: real DirectML under Wine, on Mesa 25 lavapipe.\n\
             export WINEPREFIX='{}' WINEDEBUG=-all WINEDLLOVERRIDES='mscoree,mshtml='\n\
             # DMLCTS_VK_ICD swaps the Vulkan driver (CI points it at Debian 12's Mesa 22 to see the\n\
             # self-test refuse a broken stack).\n\
             export VK_ICD_FILENAMES=\"${{DMLCTS_VK_ICD:-{}}}\" LD_LIBRARY_PATH='{}'\n\
             export XDG_RUNTIME_DIR=\"${{XDG_RUNTIME_DIR:-$(mktemp -d)}}\"\n\
             cd '{}'\n\
             exec xvfb-run -a -s '-screen 0 640x480x24 -nolisten tcp' wine dmlcts-directml-server.exe \"$@\"\n",
            prefix.display(),
            icd.display(),
            lib.display(),
            run_dir.display()
        ),
    )
    .map_err(|e| e.to_string())?;
    run(Command::new("chmod").arg("+x").arg(&script), "chmod")?;
    for tool in ["wine", "xvfb-run"] {
        if !have(tool) {
            return Err(format!(
                "`{tool}` is not on PATH after installing Debian's packages"
            ));
        }
    }
    Ok(script)
}

pub fn directml_main(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("setup") => match setup() {
            Ok(script) => {
                println!(
                    "directml setup: ready; the server starts with {}",
                    script.display()
                );
                println!(
                    "directml setup: run the corpus with `cargo xtask conformance --backend directml`"
                );
                0
            }
            Err(e) => {
                eprintln!("directml setup: {e}");
                1
            }
        },
        _ => {
            eprintln!("usage: cargo xtask directml setup");
            2
        }
    }
}
