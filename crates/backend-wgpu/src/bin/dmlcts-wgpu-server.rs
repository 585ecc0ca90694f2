//! The wgpu backend as an out-of-process protocol server (docs/backend-protocol.md), on
//! stdin/stdout, with a device at every feature level: how backends.yaml runs our kernels on a
//! Vulkan driver chosen by the environment (`wgpu@swiftshader` sets VK_ICD_FILENAMES), which a
//! process cannot change for itself once it runs.
//!
//!     dmlcts-wgpu-server [--adapter TEXT]
//!
//! `--adapter` (or DMLCTS_WGPU_ADAPTER) picks the adapter as `--backend wgpu --adapter` does;
//! a server that finds none exits with the reason. The device text adds the ICD file named by
//! VK_ICD_FILENAMES and the Debian package that owns it, with its version: SwiftShader reports
//! no driver version of its own to wgpu.

use dmlcts_backend_wgpu::{WgpuBackend, WgpuOptions};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc,
    ValidationProfile,
};
use std::process::Command;

/// The wgpu backend with the driver's origin added to its device text.
struct OnDriver {
    backend: WgpuBackend,
    driver: String,
}

impl Backend for OnDriver {
    fn name(&self) -> String {
        self.backend.name()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.backend.feature_level()
    }
    fn data_types(&self) -> Vec<DataType> {
        self.backend.data_types()
    }
    fn device(&self) -> String {
        format!("{}{}", self.backend.device(), self.driver)
    }
    fn unavailable_reason(&self) -> Option<String> {
        self.backend.unavailable_reason()
    }
    fn validation_profile(&self) -> ValidationProfile {
        self.backend.validation_profile()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.backend.compile(op)
    }
}

/// `, ICD PATH (PACKAGE VERSION)` for the ICD file VK_ICD_FILENAMES names, or nothing.
fn driver_origin() -> String {
    let Some(icd) = std::env::var("VK_ICD_FILENAMES")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        return String::new();
    };
    let query = |args: &[&str]| {
        Command::new(args[0])
            .args(&args[1..])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let package = query(&["dpkg", "-S", &icd])
        .and_then(|line| line.split(':').next().map(str::to_string))
        .and_then(|name| {
            let version = query(&["dpkg-query", "-W", "-f=${Version}", &name])?;
            Some(format!(" ({name} {version})"))
        })
        .unwrap_or_default();
    format!(", ICD {icd}{package}")
}

fn main() -> std::process::ExitCode {
    // The one place this binary's exit status is decided: 2 for a wrong command line, 1 for
    // a device that cannot serve or a broken connection.
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err((status, message)) => {
            eprintln!("{message}");
            std::process::ExitCode::from(status)
        }
    }
}

fn run() -> Result<(), (u8, String)> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut options = WgpuOptions::default();
    match args.as_slice() {
        [] => {}
        [flag, value] if flag == "--adapter" => options.adapter = Some(value.clone()),
        _ => return Err((2, "usage: dmlcts-wgpu-server [--adapter TEXT]".to_string())),
    }
    let driver = driver_origin();
    let at = |level| OnDriver {
        backend: WgpuBackend::new(WgpuOptions {
            feature_level: level,
            ..options.clone()
        }),
        driver: driver.clone(),
    };
    let devices: Vec<OnDriver> = FeatureLevel::ALL.into_iter().map(at).collect();
    // 4_1 for a `compile` that names no level, as the in-process backend's default.
    let Some(default) = devices
        .iter()
        .find(|d| d.feature_level() == FeatureLevel::L4_1)
    else {
        return Err((1, "dmlcts-wgpu-server: no 4_1 device".to_string()));
    };
    if let Some(reason) = default.unavailable_reason() {
        return Err((1, format!("dmlcts-wgpu-server: {reason}")));
    }
    let at_levels: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    dmlcts_protocol::serve_levels(default, at_levels, stdin, stdout)
        .map_err(|e| (1, format!("dmlcts-wgpu-server: {e}")))
}
