//! The doctor's checks against a fake machine in a temporary folder, one piece broken at a time.

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
