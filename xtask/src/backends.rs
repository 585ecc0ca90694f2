//! The backends `--backend NAME` can name: built in, `process:COMMAND`, or named in a
//! backends file (backends.yaml at the repository root by default).

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_backend_wgpu::{WgpuBackend, WgpuOptions};
use dmlcts_harness::cli::BackendRequest;
use dmlcts_oracle::OracleBackend;
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use dmlcts_tensor::{Backend, FeatureLevel};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub const BUILT_IN: &[(&str, &str)] = &[
    ("cpu", "the fast CPU implementation (default)"),
    (
        "oracle",
        "the scalar reference itself (checks the corpus's stored expectations)",
    ),
    (
        "wgpu",
        "WGSL compute kernels on a wgpu adapter (--adapter TEXT or DMLCTS_WGPU_ADAPTER picks one)",
    ),
    (
        "directml",
        "real DirectML 1.12.1; on Linux under Wine on Mesa 25 lavapipe (set up on demand)",
    ),
    (
        "cpu-process",
        "the CPU backend out of process, through its protocol server (built on demand)",
    ),
    (
        "process:COMMAND",
        "any server speaking docs/backend-protocol.md",
    ),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BackendsFile {
    backends: BTreeMap<String, NamedBackend>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedBackend {
    command: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    timeout_seconds: Option<f64>,
    #[serde(default)]
    startup_timeout_seconds: Option<f64>,
}

fn default_config() -> PathBuf {
    crate::repository_root().join("backends.yaml")
}

fn load_config(path: &Path) -> Result<BackendsFile, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every name this build and the backends file know, with a line about each.
pub fn known(config: Option<&Path>) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = BUILT_IN
        .iter()
        .map(|(n, a)| (n.to_string(), a.to_string()))
        .collect();
    let path = config.map_or_else(default_config, Path::to_path_buf);
    if let Ok(file) = load_config(&path) {
        for (name, backend) in file.backends {
            let about = backend
                .description
                .unwrap_or_else(|| backend.command.clone());
            all.push((name, format!("{about} (from {})", path.display())));
        }
    }
    all
}

fn process(
    command: &str,
    name: &str,
    request: &BackendRequest,
    working_dir: Option<PathBuf>,
    startup_timeout: Option<Duration>,
) -> Result<Box<dyn Backend>, String> {
    let mut options = ProcessOptions::new(command);
    options.name = name.to_string();
    options.working_dir = working_dir;
    if let Some(timeout) = request.process_timeout {
        options.timeout = timeout;
    }
    if let Some(timeout) = startup_timeout {
        options.startup_timeout = timeout;
    }
    Ok(Box::new(ProcessBackend::start(options)?))
}

/// Builds the CPU protocol server if needed and returns its path.
fn cpu_server() -> Result<PathBuf, String> {
    let status =
        std::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args([
                "build",
                "--release",
                "--quiet",
                "-p",
                "dmlcts-backend-cpu",
                "--bin",
                "dmlcts-cpu-server",
            ])
            .current_dir(crate::repository_root())
            .status()
            .map_err(|e| format!("cannot run cargo to build the CPU server: {e}"))?;
    if !status.success() {
        return Err("building dmlcts-cpu-server failed".to_string());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("no folder for the xtask binary")?;
    Ok(dir.join(format!("dmlcts-cpu-server{}", std::env::consts::EXE_SUFFIX)))
}

pub fn resolve(request: &BackendRequest) -> Result<Box<dyn Backend>, String> {
    let level = request.feature_level;
    match request.name.as_str() {
        "cpu" => {
            return Ok(Box::new(CpuBackend::at_level(
                level.unwrap_or(FeatureLevel::L4_1),
            )));
        }
        "oracle" => {
            return Ok(Box::new(OracleBackend::new(
                level.unwrap_or(FeatureLevel::L4_1),
            )));
        }
        "wgpu" => {
            let mut options = WgpuOptions::default();
            if request.adapter.is_some() {
                options.adapter = request.adapter.clone();
            }
            options.feature_level = level.unwrap_or(FeatureLevel::L4_1);
            let backend = WgpuBackend::new(options);
            // CI sets this so that a missing adapter fails the run instead of skipping it.
            if let Some(reason) = backend.unavailable_reason()
                && std::env::var_os("DMLCTS_REQUIRE_WGPU_ADAPTER").is_some()
            {
                return Err(format!("DMLCTS_REQUIRE_WGPU_ADAPTER is set and {reason}"));
            }
            return Ok(Box::new(backend));
        }
        "directml" => {
            let script = crate::directml::setup()?;
            let mut request = request.clone();
            if request.process_timeout.is_none() {
                // Wine and first-seen shaders are slow; a hang is still caught.
                request.process_timeout = Some(Duration::from_secs(60));
            }
            let command = script.display().to_string();
            return process(
                &command,
                "directml",
                &request,
                None,
                Some(Duration::from_secs(300)),
            );
        }
        "cpu-process" => {
            let server = cpu_server()?;
            let level = level.unwrap_or(FeatureLevel::L4_1);
            let command = format!("{} --feature-level {level}", server.display());
            return process(&command, "cpu-process", request, None, None);
        }
        _ => {}
    }
    if let Some(command) = request.name.strip_prefix("process:") {
        return process(command, &request.name, request, None, None);
    }
    let path = request
        .backend_config
        .clone()
        .unwrap_or_else(default_config);
    let file = load_config(&path).ok();
    if let Some(named) = file.as_ref().and_then(|f| f.backends.get(&request.name)) {
        let mut request = request.clone();
        if request.process_timeout.is_none() {
            request.process_timeout = named.timeout_seconds.map(Duration::from_secs_f64);
        }
        let dir = path.parent().map(Path::to_path_buf);
        let startup = named.startup_timeout_seconds.map(Duration::from_secs_f64);
        return process(&named.command, &request.name, &request, dir, startup)
            .map_err(|e| format!("{e}\n(the command comes from {})", path.display()));
    }
    Err(format!(
        "unknown backend `{}`; known: {}",
        request.name,
        known(request.backend_config.as_deref())
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}
