//! The pinned DirectML versions: each DirectML.dll with the PyPI wheel that carries it and both
//! hashes, the backend names they answer to, and the download that fetches and checks a DLL.

use super::shell::{run, sha256, stack_dir, step};
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// A version's own folder: its DirectML.dll, next to a copy of the server and the shim.
pub fn version_dir(pin: &Pin) -> PathBuf {
    stack_dir().join(pin.version)
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

/// The pin's DirectML.dll in its folder, from its wheel, both checked against their hashes.
pub(super) fn directml_dll(pin: &Pin, dir: &Path) -> Result<PathBuf, String> {
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
        let versions: Vec<dmlcts_harness::expectations::Version> = PINS
            .iter()
            .map(|p| dmlcts_harness::expectations::Version::parse(p.version).unwrap())
            .collect();
        for pair in versions.windows(2) {
            assert!(
                dmlcts_harness::expectations::VersionSpec::parse(&[format!(">{}", pair[0])])
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

    /// The pinned versions a `versions` field covers.
    fn covered(spec: &serde_yaml::Value) -> Vec<&'static str> {
        let spec: dmlcts_harness::expectations::VersionSpec =
            serde_yaml::from_value(spec.clone()).expect("a versions field that parses");
        PINS.iter()
            .map(|p| p.version)
            .filter(|v| spec.matches(&dmlcts_harness::expectations::Version::parse(v).unwrap()))
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
        let findings =
            dmlcts_harness::report::findings::load_dir(&root.join("docs/findings")).unwrap();
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
