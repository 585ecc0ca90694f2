//! `cargo xtask directml doctor`, also run before every DirectML server start: checks each
//! piece of the stack and names the missing one in one line, instead of letting the server
//! die in a vkd3d assertion. The checks see the machine only through `System` (programs to
//! run, folders to search), so a test can hand them fake ones.

use super::pins::Pin;
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
            icd: super::wine::icd_path(),
            wine_prefix: super::stack_dir().join("wineprefix"),
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

/// `cargo xtask directml doctor`: every check of every version named, one line each.
pub fn doctor_main(pins: &[&Pin]) -> i32 {
    let system = System::this_machine();
    let mut status = 0;
    for pin in pins {
        dmlcts_cli::say!("DirectML {}:", pin.version);
        for check in checks(&system, pin, &super::version_dir(pin)) {
            match &check.verdict {
                Ok(found) => dmlcts_cli::say!("  ok       {}: {found}", check.piece),
                Err(problem) => {
                    dmlcts_cli::say!("  MISSING  {}: {problem}", check.piece);
                    status = 1;
                }
            }
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    const PIN: Pin = Pin {
        version: "1.15.4",
        requirement: "test",
        python: "3.11",
        wheel_file: "test.whl",
        wheel_sha256: "unused",
        dll_in_wheel: "DirectML.dll",
        dll_sha256: "5ab1",
    };

    /// A version resource as the linker lays it out: the key, padding, VS_FIXEDFILEINFO.
    fn fake_dll(version: [u16; 4]) -> Vec<u8> {
        let mut bytes = b"MZ....other sections....".to_vec();
        bytes.extend("VS_VERSION_INFO".encode_utf16().flat_map(u16::to_le_bytes));
        bytes.extend([0, 0, 0, 0]);
        bytes.extend(0xFEEF_04BDu32.to_le_bytes());
        bytes.extend(0x0001_0000u32.to_le_bytes());
        let ms = (u32::from(version[0]) << 16) | u32::from(version[1]);
        let ls = (u32::from(version[2]) << 16) | u32::from(version[3]);
        bytes.extend(ms.to_le_bytes());
        bytes.extend(ls.to_le_bytes());
        bytes.extend([0u8; 40]);
        bytes
    }

    /// A machine in a temporary folder where every piece is present; tests remove one.
    struct Fake {
        root: PathBuf,
    }

    impl Fake {
        fn new(name: &str) -> Fake {
            let root =
                std::env::temp_dir().join(format!("dmlcts-doctor-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&root);
            for dir in ["bin", "lib", "mesa", "prefix", "dml"] {
                std::fs::create_dir_all(root.join(dir)).unwrap();
            }
            for program in ["Xvfb", "xvfb-run", "xauth"] {
                std::fs::write(root.join("bin").join(program), "").unwrap();
            }
            std::fs::write(root.join("lib/libvulkan.so.1"), b"\x7fELF loader").unwrap();
            std::fs::write(
                root.join("mesa/libvulkan_lvp.so"),
                b"\x7fELF ... Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6) ...",
            )
            .unwrap();
            std::fs::write(
                root.join("icd.json"),
                format!(
                    "{{\"ICD\": {{\"library_path\": \"{}\"}}}}",
                    root.join("mesa/libvulkan_lvp.so").display()
                ),
            )
            .unwrap();
            std::fs::write(root.join("prefix/system.reg"), "").unwrap();
            std::fs::write(root.join("dml/DirectML.dll"), fake_dll([1, 15, 4, 0])).unwrap();
            for file in ["dmlcts-directml-server.exe", "bcryptprimitives.dll"] {
                std::fs::write(root.join("dml").join(file), "").unwrap();
            }
            Fake { root }
        }

        /// `ldd` says what `ldd_output` says; sha256sum answers PIN's hash for the real
        /// DLL bytes of version 1.15.4 and something else otherwise.
        fn system(&self, ldd_output: &'static str, wine: Option<&'static str>) -> System {
            let root = self.root.clone();
            System {
                run: Box::new(move |program, args| match program {
                    "ldd" => Some(ldd_output.to_string()),
                    "wine" => wine.map(str::to_string),
                    "sha256sum" => {
                        let bytes = std::fs::read(args[0]).ok()?;
                        let hash = if bytes == fake_dll([1, 15, 4, 0]) {
                            "5ab1"
                        } else {
                            "0bad"
                        };
                        Some(format!("{hash}  {}\n", args[0].display()))
                    }
                    _ => None,
                }),
                path: vec![root.join("bin")],
                library_dirs: vec![root.join("nowhere"), root.join("lib")],
                icd: root.join("icd.json"),
                wine_prefix: root.join("prefix"),
            }
        }

        fn verdict(&self, system: &System) -> Result<(), String> {
            verdict(&checks(system, &PIN, &self.root.join("dml")))
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    const LDD_OK: &str =
        "\tlibLLVM-15.so.1 => /lib/libLLVM-15.so.1 (0x1)\n\tlibdrm.so.2 => not found\n";
    const WINE: Option<&str> = Some("wine-8.0 (Debian 8.0~repack-4)\n");

    #[test]
    fn a_complete_stack_passes_every_check() {
        let fake = Fake::new("complete");
        // libdrm.so.2 is "not found" by ldd but sits next to lavapipe: LD_LIBRARY_PATH has it.
        std::fs::write(fake.root.join("mesa/libdrm.so.2"), "").unwrap();
        let system = fake.system(LDD_OK, WINE);
        let all = checks(&system, &PIN, &fake.root.join("dml"));
        assert!(all.iter().all(|c| c.verdict.is_ok()), "{all:?}");
        assert_eq!(
            all[2].verdict.as_ref().unwrap().split(' ').nth(1),
            Some("25.0.7")
        );
        assert_eq!(
            all[3].verdict,
            Ok("wine-8.0 (Debian 8.0~repack-4)".to_string())
        );
        assert!(
            all[4]
                .verdict
                .as_ref()
                .unwrap()
                .starts_with("version 1.15.4.0, sha256 as pinned")
        );
        assert_eq!(fake.verdict(&system), Ok(()));
    }

    #[test]
    fn no_libvulkan1_is_named_in_one_line() {
        let fake = Fake::new("novulkan");
        std::fs::write(fake.root.join("mesa/libdrm.so.2"), "").unwrap();
        std::fs::remove_file(fake.root.join("lib/libvulkan.so.1")).unwrap();
        let error = fake.verdict(&fake.system(LDD_OK, WINE)).unwrap_err();
        assert_eq!(
            error,
            "directml doctor: Vulkan loader: the Vulkan loader libvulkan.so.1 is missing: install \
             Debian's libvulkan1 (without it vkd3d stops on `!optional_user_extension_count || \
             user_extension_supported`)"
        );
        assert!(!error.contains('\n'));
        // A file that is not a shared library (an empty stand-in) does not count either.
        std::fs::write(fake.root.join("lib/libvulkan.so.1"), "").unwrap();
        assert!(
            fake.verdict(&fake.system(LDD_OK, WINE))
                .unwrap_err()
                .contains("libvulkan1")
        );
    }

    #[test]
    fn each_missing_piece_is_the_one_named() {
        type Breakage = (&'static str, fn(&Path), &'static str);
        let cases: [Breakage; 6] = [
            (
                "xvfb",
                |r| std::fs::remove_file(r.join("bin/Xvfb")).unwrap(),
                "X server: `Xvfb` is not on PATH: install Debian's xvfb",
            ),
            (
                "xauth",
                |r| std::fs::remove_file(r.join("bin/xauth")).unwrap(),
                "X server: `xauth` is not on PATH: install Debian's xauth",
            ),
            (
                "mesa22",
                |r| {
                    std::fs::write(
                        r.join("mesa/libvulkan_lvp.so"),
                        b"Mesa 22.3.6 (LLVM 15.0.6)",
                    )
                    .unwrap()
                },
                "lavapipe: ",
            ),
            (
                "icd",
                |r| std::fs::remove_file(r.join("icd.json")).unwrap(),
                "lavapipe: the Vulkan ICD file ",
            ),
            (
                "prefix",
                |r| std::fs::remove_file(r.join("prefix/system.reg")).unwrap(),
                "Wine: no Wine prefix at ",
            ),
            (
                "shim",
                |r| std::fs::remove_file(r.join("dml/bcryptprimitives.dll")).unwrap(),
                "server: ",
            ),
        ];
        for (name, break_it, expected) in cases {
            let fake = Fake::new(name);
            std::fs::write(fake.root.join("mesa/libdrm.so.2"), "").unwrap();
            break_it(&fake.root);
            let error = fake.verdict(&fake.system(LDD_OK, WINE)).unwrap_err();
            assert!(
                error.starts_with(&format!("directml doctor: {expected}")),
                "{name}: {error}"
            );
        }
        let fake = Fake::new("mesa22-text");
        std::fs::write(
            fake.root.join("mesa/libvulkan_lvp.so"),
            b"Mesa 22.3.6 (LLVM 15.0.6)",
        )
        .unwrap();
        let error = fake.verdict(&fake.system(LDD_OK, WINE)).unwrap_err();
        assert!(
            error.contains("is Mesa 22.3.6's lavapipe, which lacks what vkd3d needs"),
            "{error}"
        );
    }

    #[test]
    fn a_library_lavapipe_cannot_load_is_named() {
        let fake = Fake::new("ldd");
        std::fs::write(fake.root.join("mesa/libdrm.so.2"), "").unwrap();
        let ldd = "\tlibLLVM-15.so.1 => not found\n\tlibdrm.so.2 => not found\n";
        let error = fake.verdict(&fake.system(ldd, WINE)).unwrap_err();
        assert_eq!(
            error,
            "directml doctor: lavapipe: Mesa 25.0.7's lavapipe cannot load libLLVM-15.so.1: \
             install Debian's mesa-vulkan-drivers, which brings them"
        );
    }

    #[test]
    fn no_wine_is_named() {
        let fake = Fake::new("nowine");
        std::fs::write(fake.root.join("mesa/libdrm.so.2"), "").unwrap();
        let error = fake.verdict(&fake.system(LDD_OK, None)).unwrap_err();
        assert_eq!(
            error,
            "directml doctor: Wine: `wine --version` failed: install Debian's wine, wine64 and libwine"
        );
    }

    #[test]
    fn a_dll_with_another_hash_or_version_is_refused() {
        let fake = Fake::new("dll");
        std::fs::write(fake.root.join("mesa/libdrm.so.2"), "").unwrap();
        std::fs::write(fake.root.join("dml/DirectML.dll"), fake_dll([1, 12, 1, 0])).unwrap();
        let error = fake.verdict(&fake.system(LDD_OK, WINE)).unwrap_err();
        assert!(
            error.starts_with("directml doctor: DirectML.dll: ")
                && error.contains("has sha256 0bad, but DirectML 1.15.4 is pinned as 5ab1"),
            "{error}"
        );
        std::fs::remove_file(fake.root.join("dml/DirectML.dll")).unwrap();
        let error = fake.verdict(&fake.system(LDD_OK, WINE)).unwrap_err();
        assert!(
            error.ends_with("run `cargo xtask directml setup 1.15.4`"),
            "{error}"
        );
    }

    #[test]
    fn pe_file_version_reads_the_fixed_file_info() {
        assert_eq!(
            pe_file_version(&fake_dll([1, 13, 1, 0])),
            Some("1.13.1.0".to_string())
        );
        assert_eq!(
            pe_file_version(&fake_dll([65535, 0, 7, 2])),
            Some("65535.0.7.2".to_string())
        );
        assert_eq!(pe_file_version(b"MZ no resource"), None);
        let mut cut = fake_dll([1, 9, 0, 0]);
        cut.truncate(cut.len() - 50);
        assert_eq!(pe_file_version(&cut), None);
    }

    #[test]
    fn mesa_version_is_found_in_the_driver_bytes() {
        assert_eq!(
            mesa_version(b"..Mesa 25.0.7-2~bpo12+1.."),
            Some("25.0.7".to_string())
        );
        assert_eq!(
            mesa_version(b"Mesa driver; Mesa 22.3.6 (LLVM)"),
            Some("22.3.6".to_string())
        );
        assert_eq!(mesa_version(b"no version here, Mesa 25"), None);
    }
}
