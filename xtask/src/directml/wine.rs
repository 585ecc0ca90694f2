//! The Linux stack under the server: Debian's packages (Wine, Xvfb, the Vulkan loader), Mesa
//! 25's lavapipe unpacked privately from bookworm-backports (the Vulkan driver vkd3d runs on),
//! and the Wine prefix.

use super::shell::{is_root, run, stack_dir, step};
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// The lavapipe ICD the server uses: Mesa 25's, or DMLCTS_VK_ICD.
pub(super) fn icd_path() -> PathBuf {
    std::env::var_os("DMLCTS_VK_ICD")
        .map(PathBuf::from)
        .unwrap_or_else(|| stack_dir().join("lvp25_icd.json"))
}

pub(super) fn mesa_lib_dir() -> PathBuf {
    stack_dir().join("mesa25/usr/lib/x86_64-linux-gnu")
}

/// Debian's packages: installed with apt-get when running as root, otherwise named.
pub(super) fn debian_packages() -> Result<(), String> {
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
pub(super) fn mesa(dir: &Path) -> Result<PathBuf, String> {
    let lib = dir.join("mesa25/usr/lib/x86_64-linux-gnu");
    let icd = dir.join("lvp25_icd.json");
    if !lib.join("libvulkan_lvp.so").exists() {
        download_mesa(dir, &lib)?;
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

/// Downloads Mesa 25's packages from bookworm-backports with apt-get on a configuration of
/// the stack's own, and unpacks them into the stack's mesa25 folder.
fn download_mesa(dir: &Path, lib: &Path) -> Result<(), String> {
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
    let mut update = private_apt_get(&apt);
    run(
        update.arg("update").arg("-qq"),
        "apt-get update (bookworm-backports)",
    )?;
    let mut download = private_apt_get(&apt);
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
    Ok(())
}

/// apt-get with the stack's own sources (bookworm-backports), lists, cache and preferences
/// under `apt`, leaving the machine's apt state alone.
fn private_apt_get(apt: &Path) -> Command {
    let mut cmd = Command::new("apt-get");
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
    cmd
}

pub(super) fn wine_prefix(dir: &Path) -> Result<PathBuf, String> {
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
