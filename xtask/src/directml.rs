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

mod doctor;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// One DirectML.dll, from the PyPI wheel that carries it, pinned by both hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The DLL's own version resource says this (major.minor.build).
    pub version: &'static str,
    /// The wheel, as pip names it.
    pub requirement: &'static str,
    /// The Python version the win_amd64 wheel is built for.
    pub python: &'static str,
    pub wheel_file: &'static str,
    pub wheel_sha256: &'static str,
    /// Where the DLL sits inside the wheel.
    pub dll_in_wheel: &'static str,
    pub dll_sha256: &'static str,
}

/// Every pinned DirectML, oldest first. The newest is what plain `directml` runs.
pub const PINS: &[Pin] = &[
    Pin {
        version: "1.9.0",
        requirement: "onnxruntime-directml==1.12.1",
        python: "3.10",
        wheel_file: "onnxruntime_directml-1.12.1-cp310-cp310-win_amd64.whl",
        wheel_sha256: "07d179201f81f62b3a8e7eb17f69baeb0f2c05ddacfe37c7be9845d2f3cd921a",
        dll_in_wheel: "onnxruntime/capi/DirectML.dll",
        dll_sha256: "2f08d9e46bf1776297ca0f1336fc17e590698ad002c0e8eedbf554b829ed39c9",
    },
    Pin {
        version: "1.10.1",
        requirement: "onnxruntime-directml==1.14.1",
        python: "3.10",
        wheel_file: "onnxruntime_directml-1.14.1-cp310-cp310-win_amd64.whl",
        wheel_sha256: "ec135ef65b876a248a234b233e120b5275fb0247c64d74de202da6094e3adfe4",
        dll_in_wheel: "onnxruntime/capi/DirectML.dll",
        dll_sha256: "7311ef80e8ba38cca79ea73068edb7cd8792dc95986f25db219f2e5f78a02096",
    },
    Pin {
        version: "1.12.1",
        requirement: "onnxruntime-directml==1.16.3",
        python: "3.11",
        wheel_file: "onnxruntime_directml-1.16.3-cp311-cp311-win_amd64.whl",
        wheel_sha256: "62ff6a437fb9ade5179fb7a65414daa5a6872551d1e9ea35e37a412481725931",
        dll_in_wheel: "onnxruntime/capi/DirectML.dll",
        dll_sha256: "ad81ea396c042e52829d5d77ca573ba255cc0f61cbd801d4071a94e24c6df343",
    },
    // No onnxruntime-directml wheel ships 1.13.x; torch-directml's does.
    Pin {
        version: "1.13.1",
        requirement: "torch-directml==0.2.5.dev240914",
        python: "3.11",
        wheel_file: "torch_directml-0.2.5.dev240914-cp311-cp311-win_amd64.whl",
        wheel_sha256: "3315b6c7e898685827607f1d8170dacc386ac248502aba9bd36cf82e78d930bb",
        dll_in_wheel: "torch_directml/DirectML.dll",
        dll_sha256: "5ab77cc5db8e1544d386fd28586598317da8dcbef098fb86d8d8a60e739e0e5d",
    },
    Pin {
        version: "1.15.4",
        requirement: "onnxruntime-directml==1.24.4",
        python: "3.11",
        wheel_file: "onnxruntime_directml-1.24.4-cp311-cp311-win_amd64.whl",
        wheel_sha256: "96642a787e5a6f33bf043521c0f06eb1eb663f6b830e5862a2026d03f9c90543",
        dll_in_wheel: "onnxruntime/capi/DirectML.dll",
        dll_sha256: "c07cb8c2f870f0152bfb690f64c4b048e78bbc219efad420a9758fc896cbecb0",
    },
];

/// The pin a `--backend` name asks for: `directml` (the newest) or `directml@VERSION`.
/// `None` when the name is not a DirectML one.
pub fn pin_for(backend: &str) -> Option<Result<&'static Pin, String>> {
    let newest = PINS.last().expect("at least one pin");
    if backend == "directml" {
        return Some(Ok(newest));
    }
    let version = backend.strip_prefix("directml@")?;
    Some(PINS.iter().find(|p| p.version == version).ok_or_else(|| {
        format!(
            "DirectML {version} is not pinned; the pinned versions are {}",
            PINS.iter()
                .map(|p| p.version)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }))
}

/// The DirectML backend names, with a line about each, for `cargo xtask backends`.
pub fn backend_names() -> Vec<(String, String)> {
    let newest = PINS.last().expect("at least one pin");
    let mut names = vec![(
        "directml".to_string(),
        format!(
            "real DirectML, the newest pinned ({}); on Linux under Wine on Mesa 25 lavapipe (set up on demand)",
            newest.version
        ),
    )];
    for pin in PINS {
        names.push((
            format!("directml@{}", pin.version),
            format!(
                "DirectML {} (DirectML.dll from {})",
                pin.version, pin.requirement
            ),
        ));
    }
    names
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

const DEBIAN_PACKAGES: &[(&str, &str)] = &[
    (
        "gcc-mingw-w64-x86-64",
        "cross-builds the server and the shim for Windows",
    ),
    ("wine", "runs the Windows server"),
    ("wine64", "the 64-bit Wine loader"),
    ("libwine", "Wine's libraries, d3d12 (vkd3d) among them"),
    ("xvfb", "the X server Wine's graphics driver needs"),
    ("xauth", "xvfb-run needs it"),
    ("libvulkan1", "the Vulkan loader winevulkan opens"),
    (
        "mesa-vulkan-drivers",
        "Debian's Mesa 22: brings the libraries Mesa 25's lavapipe links against (libLLVM-15, xcb, wayland)",
    ),
    (
        "python3",
        "pip downloads the wheels that carry DirectML.dll",
    ),
    ("python3-pip", "pip itself"),
    ("ca-certificates", "pip's HTTPS"),
];
const MESA_PACKAGES: &[&str] = &["mesa-vulkan-drivers", "libdrm2", "libdrm-amdgpu1"];
const TARGET: &str = "x86_64-pc-windows-gnu";

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

/// The lavapipe ICD the server uses: Mesa 25's, or DMLCTS_VK_ICD.
pub fn icd_path() -> PathBuf {
    std::env::var_os("DMLCTS_VK_ICD")
        .map(PathBuf::from)
        .unwrap_or_else(|| stack_dir().join("lvp25_icd.json"))
}

fn mesa_lib_dir() -> PathBuf {
    stack_dir().join("mesa25/usr/lib/x86_64-linux-gnu")
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
    dmlcts_cli::say!("directml setup: {name}");
}

/// Debian's packages: installed with apt-get when running as root, otherwise named.
fn debian_packages() -> Result<(), String> {
    let missing: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| !dpkg_installed(p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if !is_root() {
        let named: Vec<String> = DEBIAN_PACKAGES
            .iter()
            .filter(|(p, _)| missing.contains(p))
            .map(|(p, why)| format!("{p} ({why})"))
            .collect();
        return Err(format!(
            "missing Debian packages: {}; install them with `sudo apt-get install \
             --no-install-recommends {}`",
            named.join(", "),
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

fn dpkg_installed(package: &str) -> bool {
    run(
        Command::new("dpkg-query").args(["-W", "-f=${Status}", package]),
        "dpkg-query",
    )
    .is_ok_and(|status| status.ends_with("installed"))
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

/// The pin's DirectML.dll in its folder, from its wheel, both checked against their hashes.
fn directml_dll(pin: &Pin, dir: &Path) -> Result<PathBuf, String> {
    let dll = dir.join("DirectML.dll");
    if dll.exists() && sha256(&dll)? == pin.dll_sha256 {
        return Ok(dll);
    }
    let wheels = stack_dir().join("wheels");
    let wheel = wheels.join(pin.wheel_file);
    if !wheel.exists() || sha256(&wheel)? != pin.wheel_sha256 {
        step(&format!(
            "downloading {} (win_amd64) from PyPI for DirectML {}",
            pin.requirement, pin.version
        ));
        let _ = std::fs::remove_file(&wheel);
        run(
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "--only-binary=:all:",
                    "--platform",
                    "win_amd64",
                    "--python-version",
                    pin.python,
                    pin.requirement,
                    "-d",
                ])
                .arg(&wheels),
            "pip download",
        )?;
        let got = sha256(&wheel)?;
        if got != pin.wheel_sha256 {
            return Err(format!(
                "{} has sha256 {got}, expected {} (pinned)",
                wheel.display(),
                pin.wheel_sha256
            ));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    run(
        Command::new("python3").arg("-c").arg(
            "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
        ).arg(&wheel).arg(pin.dll_in_wheel).arg(&dll),
        "extracting DirectML.dll",
    )?;
    let got = sha256(&dll)?;
    if got != pin.dll_sha256 {
        return Err(format!(
            "{} has sha256 {got}, expected {} (pinned)",
            dll.display(),
            pin.dll_sha256
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

/// Cross-builds the server (cargo does nothing when it is up to date); returns the .exe.
fn server() -> Result<PathBuf, String> {
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
            "on Windows, DirectML runs natively: see the README (no Wine stack needed)".to_string(),
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
       cargo xtask directml matrix [--write-readme]    the corpus on every pinned version: the table
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
        Some("matrix") => matrix_main(rest),
        _ => {
            dmlcts_cli::say_err!("{}", USAGE.trim_end());
            2
        }
    }
}

/// One version's line in the matrix, from its conformance run's JSON report.
struct MatrixRow {
    pin: &'static Pin,
    loaded: String,
    passed: u64,
    failed: u64,
    skipped: u64,
    expected_failures: u64,
    feature_level: String,
    seconds: f64,
}

const README_BEGIN: &str =
    "<!-- directml matrix: begin (cargo xtask directml matrix --write-readme) -->";
const README_END: &str = "<!-- directml matrix: end -->";

fn matrix_table(rows: &[MatrixRow]) -> String {
    let mut table = String::from(
        "| DirectML.dll loaded | from | passed | failed | skipped | expected failures | max feature level | run (s) |\n\
         | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |\n",
    );
    for row in rows {
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} |\n",
            row.loaded,
            row.pin.requirement,
            row.passed,
            row.failed,
            row.skipped,
            row.expected_failures,
            row.feature_level,
            row.seconds
        ));
    }
    table
}

/// Replaces the README's table between its markers.
fn replace_between_markers(readme: &str, table: &str) -> Result<String, String> {
    let begin = readme
        .find(README_BEGIN)
        .ok_or_else(|| format!("README.md has no `{README_BEGIN}` line"))?;
    let end = readme[begin..]
        .find(README_END)
        .map(|e| begin + e)
        .ok_or_else(|| format!("README.md has no `{README_END}` line after the begin marker"))?;
    Ok(format!(
        "{}{README_BEGIN}\n{table}{}",
        &readme[..begin],
        &readme[end..]
    ))
}

/// `cargo xtask directml matrix`: the corpus with expectations on every pinned version, each
/// in its own `cargo xtask conformance` process; prints the table (and writes it into the
/// README with --write-readme). Fails if any version's run failed.
fn matrix_main(args: &[String]) -> i32 {
    let mut write_readme = false;
    for arg in args {
        match arg.as_str() {
            "--write-readme" => write_readme = true,
            other => {
                dmlcts_cli::say_err!("directml matrix: unknown option `{other}`\n{USAGE}");
                return 2;
            }
        }
    }
    let root = crate::repository_root();
    let out = stack_dir().join("matrix");
    if let Err(e) = std::fs::create_dir_all(&out) {
        dmlcts_cli::say_err!("directml matrix: {}: {e}", out.display());
        return 1;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            dmlcts_cli::say_err!("directml matrix: {e}");
            return 1;
        }
    };
    // Set every version up first, so that the timings below are the runs alone.
    for pin in PINS {
        if let Err(e) = setup(pin) {
            dmlcts_cli::say_err!("directml matrix: setting up DirectML {}: {e}", pin.version);
            return 1;
        }
    }
    let mut rows = Vec::new();
    let mut status = 0;
    for pin in PINS {
        let json = out.join(format!("{}.json", pin.version));
        let log = out.join(format!("{}.log", pin.version));
        let _ = std::fs::remove_file(&json);
        let started = Instant::now();
        let ran = std::fs::File::create(&log)
            .and_then(|file| Ok((file.try_clone()?, file)))
            .and_then(|(stdout, stderr)| {
                Command::new(&exe)
                    .arg("conformance")
                    .arg("--backend")
                    .arg(format!("directml@{}", pin.version))
                    .arg("--expectations")
                    .arg(root.join("expectations/directml.yaml"))
                    .arg("--json")
                    .arg(&json)
                    .stdout(stdout)
                    .stderr(stderr)
                    .status()
            });
        let seconds = started.elapsed().as_secs_f64();
        let report: Option<serde_json::Value> = std::fs::read_to_string(&json)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        let ok = ran.as_ref().is_ok_and(|s| s.success());
        let Some(report) = report else {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let last = tail.lines().last().unwrap_or("no output");
            dmlcts_cli::say!(
                "DirectML {}: no report ({last}); log: {}",
                pin.version,
                log.display()
            );
            status = 1;
            continue;
        };
        let summary = &report["summary"];
        let count = |key: &str| summary[key].as_u64().unwrap_or(0);
        let row = MatrixRow {
            pin,
            loaded: summary["version"].as_str().unwrap_or("(none)").to_string(),
            passed: count("passed"),
            failed: count("failed"),
            skipped: count("skipped"),
            expected_failures: count("expected_failures"),
            feature_level: summary["feature_level"].as_str().unwrap_or("?").to_string(),
            seconds,
        };
        dmlcts_cli::say!(
            "DirectML {} (loaded {}): {} passed, {} failed, {} skipped, {} expected failures, \
             feature level {}, {seconds:.1} s; log: {}",
            pin.version,
            row.loaded,
            row.passed,
            row.failed,
            row.skipped,
            row.expected_failures,
            row.feature_level,
            log.display()
        );
        if !ok {
            status = 1;
        }
        rows.push(row);
    }
    let table = matrix_table(&rows);
    dmlcts_cli::say!("\n{table}");
    let table_file = out.join("table.md");
    if let Err(e) = std::fs::write(&table_file, &table) {
        dmlcts_cli::say_err!("directml matrix: {}: {e}", table_file.display());
        return 1;
    }
    if write_readme {
        let readme = root.join("README.md");
        let result = std::fs::read_to_string(&readme)
            .map_err(|e| e.to_string())
            .and_then(|text| replace_between_markers(&text, &table))
            .and_then(|text| std::fs::write(&readme, text).map_err(|e| e.to_string()));
        match result {
            Ok(()) => {
                dmlcts_cli::say!("directml matrix: wrote the table into {}", readme.display())
            }
            Err(e) => {
                dmlcts_cli::say_err!("directml matrix: {}: {e}", readme.display());
                return 1;
            }
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_resolve_to_pins() {
        assert_eq!(pin_for("directml"), Some(Ok(PINS.last().unwrap())));
        assert_eq!(pin_for("directml@1.9.0").unwrap().unwrap().version, "1.9.0");
        assert_eq!(
            pin_for("directml@1.11.0"),
            Some(Err(
                "DirectML 1.11.0 is not pinned; the pinned versions are 1.9.0, 1.10.1, 1.12.1, 1.13.1, 1.15.4"
                    .to_string()
            ))
        );
        assert_eq!(pin_for("cpu"), None);
        let names: Vec<String> = backend_names().into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "directml",
                "directml@1.9.0",
                "directml@1.10.1",
                "directml@1.12.1",
                "directml@1.13.1",
                "directml@1.15.4"
            ]
        );
    }

    #[test]
    fn pins_are_oldest_first_and_hashes_are_sha256() {
        let versions: Vec<dmlcts_harness::versions::Version> = PINS
            .iter()
            .map(|p| dmlcts_harness::versions::Version::parse(p.version).unwrap())
            .collect();
        for pair in versions.windows(2) {
            assert!(
                dmlcts_harness::versions::VersionSpec::parse(&[format!(">{}", pair[0])])
                    .unwrap()
                    .matches(&pair[1])
            );
        }
        for pin in PINS {
            for hash in [pin.wheel_sha256, pin.dll_sha256] {
                assert!(
                    hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{hash}"
                );
            }
        }
    }

    #[test]
    fn the_readme_table_is_replaced_between_its_markers() {
        let readme = format!("intro\n{README_BEGIN}\nold table\n{README_END}\nrest\n");
        assert_eq!(
            replace_between_markers(&readme, "| new |\n").unwrap(),
            format!("intro\n{README_BEGIN}\n| new |\n{README_END}\nrest\n")
        );
        assert!(
            replace_between_markers("no markers", "x")
                .unwrap_err()
                .contains("has no")
        );
    }

    /// The pinned versions a `versions` field covers.
    fn covered(spec: &serde_yaml::Value) -> Vec<&'static str> {
        let spec: dmlcts_harness::versions::VersionSpec =
            serde_yaml::from_value(spec.clone()).expect("a versions field that parses");
        PINS.iter()
            .map(|p| p.version)
            .filter(|v| spec.matches(&dmlcts_harness::versions::Version::parse(v).unwrap()))
            .collect()
    }

    #[test]
    fn the_directml_record_names_pinned_versions_real_cases_and_matching_expectations() {
        let root = crate::repository_root();
        let read = |path: &str| -> serde_yaml::Value {
            serde_yaml::from_str(&std::fs::read_to_string(root.join(path)).unwrap()).unwrap()
        };
        let record = read("specs/directml.yaml");
        let expectations = read("expectations/directml.yaml");
        let recorded: Vec<&str> = record["versions"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        let pinned: Vec<&str> = PINS.iter().map(|p| p.version).collect();
        assert_eq!(recorded, pinned);
        let corpus = dmlcts_harness::Corpus::embedded();
        for entry in record["silent_places"].as_sequence().unwrap() {
            assert!(!covered(&entry["versions"]).is_empty(), "{entry:?}");
            for case in entry["cases"].as_sequence().unwrap() {
                let case = case.as_str().unwrap();
                assert!(corpus.cases.iter().any(|c| c.name == case), "{case}");
            }
        }
        // A DirectML finding's corpus cases are expected to fail on exactly the pinned
        // versions it was seen on (the findings record's own test checks the rest).
        let findings = dmlcts_harness::findings::load_dir(&root.join("docs/findings")).unwrap();
        let directml: Vec<_> = findings
            .iter()
            .filter(|f| f.finding.implementation == "directml")
            .collect();
        assert!(!directml.is_empty());
        for f in directml {
            assert!(!f.finding.corpus_cases.is_empty(), "{}", f.file);
            for version in &f.finding.versions {
                assert!(pinned.contains(&version.as_str()), "{}: {version}", f.file);
            }
            for case in &f.finding.corpus_cases {
                let entries: Vec<&serde_yaml::Value> = expectations["expected_failures"]
                    .as_sequence()
                    .unwrap()
                    .iter()
                    .filter(|e| e["case"].as_str() == Some(case.as_str()))
                    .collect();
                let mut expected: Vec<&str> = entries
                    .iter()
                    .flat_map(|e| covered(&e["versions"]))
                    .collect();
                expected.sort_by_key(|v| pinned.iter().position(|p| p == v));
                assert_eq!(expected, f.finding.versions, "{}: {case}", f.file);
            }
        }
    }
}
