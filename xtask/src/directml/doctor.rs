//! `cargo xtask directml doctor`, also run before every DirectML server start: checks each
//! piece of the stack and names the missing one in one line, instead of letting the server
//! die in a vkd3d assertion. The checks see the machine only through `System` (programs to
//! run, folders to search), so a test can hand them fake ones.

use super::pins::{Pin, version_dir};
use super::shell::stack_dir;
use super::wine::icd_path;
use std::path::{Path, PathBuf};

/// Runs a program with arguments: its stdout if it ran and succeeded.
pub type Runner = Box<dyn Fn(&str, &[&Path]) -> Option<String>>;

/// The machine as the checks see it.
pub struct System {
    pub run: Runner,
    /// Where programs are found (PATH).
    pub path: Vec<PathBuf>,
    /// Where the dynamic loader finds libvulkan.so.1.
    pub library_dirs: Vec<PathBuf>,
    /// The Vulkan ICD file the server will use.
    pub icd: PathBuf,
    pub wine_prefix: PathBuf,
}

impl System {
    pub fn this_machine() -> System {
        let path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        let mut library_dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        // Debian's multiarch folders, then the classic ones (what ld.so.conf names on Debian).
        for dir in [
            "/usr/local/lib/x86_64-linux-gnu",
            "/usr/local/lib",
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib64",
            "/usr/lib64",
            "/lib",
            "/usr/lib",
        ] {
            library_dirs.push(PathBuf::from(dir));
        }
        System {
            run: Box::new(|program, args| {
                let output = std::process::Command::new(program)
                    .args(args)
                    .output()
                    .ok()?;
                output
                    .status
                    .success()
                    .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
            }),
            path,
            library_dirs,
            icd: icd_path(),
            wine_prefix: stack_dir().join("wineprefix"),
        }
    }

    fn program(&self, name: &str) -> Option<PathBuf> {
        self.path
            .iter()
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    }
}

/// One piece of the stack and what was found: `Ok(what is there)` or `Err(what is wrong,
/// and the package or command that mends it)`.
#[derive(Debug, PartialEq, Eq)]
pub struct Check {
    pub piece: &'static str,
    pub verdict: Result<String, String>,
}

/// Every check, in the order the stack is built on: X, Vulkan, lavapipe, Wine, the DLL.
pub fn checks(system: &System, pin: &Pin, version_dir: &Path) -> Vec<Check> {
    vec![
        Check {
            piece: "X server",
            verdict: x_server(system),
        },
        Check {
            piece: "Vulkan loader",
            verdict: vulkan_loader(system),
        },
        Check {
            piece: "lavapipe",
            verdict: lavapipe(system),
        },
        Check {
            piece: "Wine",
            verdict: wine(system),
        },
        Check {
            piece: "DirectML.dll",
            verdict: directml_dll(system, pin, version_dir),
        },
        Check {
            piece: "server",
            verdict: server_files(version_dir),
        },
    ]
}

/// The first failure, as the one line a user reads.
pub fn verdict(checks: &[Check]) -> Result<(), String> {
    match checks
        .iter()
        .find_map(|c| c.verdict.as_ref().err().map(|e| (c.piece, e)))
    {
        Some((piece, problem)) => Err(format!("directml doctor: {piece}: {problem}")),
        None => Ok(()),
    }
}

fn x_server(system: &System) -> Result<String, String> {
    for (program, package) in [("Xvfb", "xvfb"), ("xvfb-run", "xvfb"), ("xauth", "xauth")] {
        if system.program(program).is_none() {
            return Err(format!(
                "`{program}` is not on PATH: install Debian's {package} (Wine's graphics driver \
                 needs an X display)"
            ));
        }
    }
    Ok("Xvfb, xvfb-run and xauth".to_string())
}

fn is_elf(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| magic == *b"\x7fELF")
}

fn vulkan_loader(system: &System) -> Result<String, String> {
    system
        .library_dirs
        .iter()
        .map(|dir| dir.join("libvulkan.so.1"))
        .find(|p| is_elf(p))
        .map(|p| p.display().to_string())
        .ok_or_else(|| {
            "the Vulkan loader libvulkan.so.1 is missing: install Debian's libvulkan1 \
             (without it vkd3d stops on `!optional_user_extension_count || \
             user_extension_supported`)"
                .to_string()
        })
}

/// The `Mesa X.Y.Z` a Mesa driver carries in its bytes.
fn mesa_version(library: &[u8]) -> Option<String> {
    let needle = b"Mesa ";
    library
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .find_map(|(i, _)| {
            let rest = &library[i + needle.len()..];
            let end = rest
                .iter()
                .position(|b| !(b.is_ascii_digit() || *b == b'.'))
                .unwrap_or(rest.len());
            let version = std::str::from_utf8(&rest[..end]).ok()?;
            (version.split('.').count() == 3 && version.split('.').all(|p| !p.is_empty()))
                .then(|| version.to_string())
        })
}

fn lavapipe(system: &System) -> Result<String, String> {
    let icd = &system.icd;
    let text = std::fs::read_to_string(icd).map_err(|e| {
        format!(
            "the Vulkan ICD file {} cannot be read ({e}): run `cargo xtask directml setup`",
            icd.display()
        )
    })?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the Vulkan ICD file {} is not JSON: {e}", icd.display()))?;
    let library = json["ICD"]["library_path"]
        .as_str()
        .map(PathBuf::from)
        .ok_or_else(|| format!("{} names no ICD.library_path", icd.display()))?;
    let bytes = std::fs::read(&library).map_err(|e| {
        format!(
            "the driver {} that {} names cannot be read ({e}): run `cargo xtask directml setup`",
            library.display(),
            icd.display()
        )
    })?;
    let version = mesa_version(&bytes)
        .ok_or_else(|| format!("{} carries no Mesa version", library.display()))?;
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 25 {
        return Err(format!(
            "{} is Mesa {version}'s lavapipe, which lacks what vkd3d needs (every DirectML dispatch \
             would write nothing): use Mesa >= 25 (`cargo xtask directml setup` unpacks it from \
             bookworm-backports)",
            library.display()
        ));
    }
    // The libraries it links against; those next to it come through LD_LIBRARY_PATH.
    let beside = library.parent().map(Path::to_path_buf).unwrap_or_default();
    let ldd = (system.run)("ldd", &[library.as_path()])
        .ok_or_else(|| format!("`ldd {}` failed", library.display()))?;
    let missing: Vec<&str> = ldd
        .lines()
        .filter(|l| l.contains("not found"))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| !beside.join(name).exists())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "Mesa {version}'s lavapipe cannot load {}: install Debian's mesa-vulkan-drivers, \
             which brings them",
            missing.join(", ")
        ));
    }
    Ok(format!("Mesa {version} ({})", library.display()))
}

fn wine(system: &System) -> Result<String, String> {
    let version = (system.run)("wine", &[Path::new("--version")])
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .ok_or("`wine --version` failed: install Debian's wine, wine64 and libwine")?;
    if !system.wine_prefix.join("system.reg").exists() {
        return Err(format!(
            "no Wine prefix at {}: run `cargo xtask directml setup`",
            system.wine_prefix.display()
        ));
    }
    Ok(version)
}

/// The file version in a PE file's version resource (VS_FIXEDFILEINFO), `a.b.c.d`.
pub fn pe_file_version(bytes: &[u8]) -> Option<String> {
    let key: Vec<u8> = "VS_VERSION_INFO"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let start = bytes.windows(key.len()).position(|w| w == key.as_slice())?;
    let signature = 0xFEEF_04BDu32.to_le_bytes();
    let window = bytes.get(start..(start + 128).min(bytes.len()))?;
    let at = start + window.windows(4).position(|w| w == signature)?;
    let word = |offset: usize| -> Option<u32> {
        let b = bytes.get(at + offset..at + offset + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (ms, ls) = (word(8)?, word(12)?);
    Some(format!(
        "{}.{}.{}.{}",
        ms >> 16,
        ms & 0xFFFF,
        ls >> 16,
        ls & 0xFFFF
    ))
}

fn directml_dll(system: &System, pin: &Pin, version_dir: &Path) -> Result<String, String> {
    let dll = version_dir.join("DirectML.dll");
    let fetch = format!("run `cargo xtask directml setup {}`", pin.version);
    let bytes = std::fs::read(&dll)
        .map_err(|e| format!("{} cannot be read ({e}): {fetch}", dll.display()))?;
    let hash = (system.run)("sha256sum", &[dll.as_path()])
        .and_then(|out| out.split_whitespace().next().map(str::to_string))
        .ok_or_else(|| format!("`sha256sum {}` failed", dll.display()))?;
    if hash != pin.dll_sha256 {
        return Err(format!(
            "{} has sha256 {hash}, but DirectML {} is pinned as {}: {fetch}",
            dll.display(),
            pin.version,
            pin.dll_sha256
        ));
    }
    let version = pe_file_version(&bytes)
        .ok_or_else(|| format!("{} has no version resource", dll.display()))?;
    if !version.starts_with(&format!("{}.", pin.version)) {
        return Err(format!(
            "{}'s version resource says {version}, but the pin says {}",
            dll.display(),
            pin.version
        ));
    }
    Ok(format!(
        "version {version}, sha256 as pinned ({})",
        dll.display()
    ))
}

fn server_files(version_dir: &Path) -> Result<String, String> {
    for file in ["dmlcts-directml-server.exe", "bcryptprimitives.dll"] {
        if !version_dir.join(file).is_file() {
            return Err(format!(
                "{} is missing: run `cargo xtask directml setup`",
                version_dir.join(file).display()
            ));
        }
    }
    Ok(format!("{}", version_dir.display()))
}

/// `cargo xtask directml doctor`: every check of every version named, one line each;
/// whether every piece was found.
pub fn doctor_main(pins: &[&Pin]) -> bool {
    let system = System::this_machine();
    let mut found = true;
    for pin in pins {
        dmlcts_cli::say!("DirectML {}:", pin.version);
        for check in checks(&system, pin, &version_dir(pin)) {
            match &check.verdict {
                Ok(what) => dmlcts_cli::say!("  ok       {}: {what}", check.piece),
                Err(problem) => {
                    dmlcts_cli::say!("  MISSING  {}: {problem}", check.piece);
                    found = false;
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
