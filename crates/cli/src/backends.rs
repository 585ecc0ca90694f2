//! The backends `--backend NAME` can name: built in, `process:COMMAND`, or named in a
//! backends file (backends.yaml).

use crate::Host;
use clap::Args;
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_harness::DeviceFactory;
use dmlcts_harness::corpus::read::{BACKENDS_FILE, load_yaml};
use dmlcts_harness::expectations::Version;
use dmlcts_harness::shell_word;
use dmlcts_harness::text;
use dmlcts_oracle::OracleBackend;
use dmlcts_protocol::{ProcessBackend, ProcessBackendAtLevel, ProcessOptions};
use dmlcts_tensor::{Backend, FeatureLevel};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// What `--backend` and its companion options ask for.
#[derive(Clone, Debug, Default)]
pub struct BackendRequest {
    pub name: String,
    /// Run as a device at this level, for backends that can.
    pub feature_level: Option<FeatureLevel>,
    /// Per-request timeout for out-of-process backends.
    pub process_timeout: Option<Duration>,
    /// A file naming out-of-process backends (see backends.yaml).
    pub backend_config: Option<PathBuf>,
    /// For GPU backends: a substring of the adapter's name, backend or driver (DirectML on
    /// Windows: an index from `dmlcts adapters`, `warp`, or text in its name).
    pub adapter: Option<String>,
    /// DirectML on Windows: the DirectML.dll to load (else `DMLCTS_DIRECTML_DLL`, else the one
    /// beside dmlcts.exe, else the system's).
    pub directml_dll: Option<PathBuf>,
}

/// Makes a backend from a request (`resolve` with a host, or a test's own). Sync: the matrix
/// makes its columns' backends on several threads at once (`--jobs`).
pub type Resolver<'a> = &'a (dyn Fn(&BackendRequest) -> Result<Resolved, String> + Sync);

/// A resolved backend: as asked (at `--feature-level`, or its default level), and, for one
/// that can act at several levels, a device at any level.
pub struct Resolved {
    pub backend: Arc<dyn Backend>,
    /// None: it exists at one level only (a fixed DLL, a server that offers no levels).
    pub at_level: Option<DeviceFactory<'static>>,
    /// Why it started but cannot run cases (a server whose hello was unusable). `conformance`
    /// runs it anyway, so that every case fails with the reason; `matrix` shows it as a column
    /// that could not run.
    pub not_ready: Option<String>,
}

impl Resolved {
    /// A run session on this backend: its devices as `Session::new` chooses them.
    pub fn session(
        self,
        options: dmlcts_harness::SessionOptions,
    ) -> dmlcts_harness::Session<'static> {
        dmlcts_harness::Session::new(self.backend, self.at_level, options)
    }

    /// A backend that exists at one level only.
    pub fn single(backend: Arc<dyn Backend>) -> Resolved {
        Resolved {
            backend,
            at_level: None,
            not_ready: None,
        }
    }

    /// A backend that `make` can have at any level (`backend` itself at its own).
    pub fn per_level(
        backend: Arc<dyn Backend>,
        make: impl Fn(FeatureLevel) -> Arc<dyn Backend> + Send + 'static,
    ) -> Resolved {
        let first = backend.clone();
        Resolved {
            backend,
            at_level: Some(Box::new(move |level| {
                if level == first.feature_level() {
                    first.clone()
                } else {
                    make(level)
                }
            })),
            not_ready: None,
        }
    }
}

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
        "cpu-process",
        "the CPU backend out of process, through the backend protocol",
    ),
    (
        "tract",
        "tract (tract-core from crates.io) in process: Slice, StridedSlice and Concat models",
    ),
    (
        "process:COMMAND",
        "any server speaking the backend protocol (`dmlcts protocol` prints it)",
    ),
];

#[derive(Debug, Args)]
pub struct BackendsArgs {
    /// Also list the names in this backends file [default: backends.yaml]
    #[arg(long, value_name = "FILE")]
    pub backend_config: Option<PathBuf>,
}

/// `backends`: every name; a backends file that does not load is an error (exit status 2)
/// after the names that do not come from it.
pub fn backends_main(args: &BackendsArgs, host: &Host) -> crate::error::CommandResult {
    let (names, error) = match known(host, args.backend_config.as_deref()) {
        Ok(names) => (names, None),
        Err(e) => (built_in_names(host), Some(e)),
    };
    // Names and descriptions from a user's backends file are data: escaped, one line each.
    for (name, about) in names {
        crate::say!("{:16} {}", text::line(&name), text::line(&about));
    }
    match error {
        Some(e) => Err(crate::error::CommandError::Input(e)),
        None => Ok(crate::error::Verdict::Passed),
    }
}

#[derive(Debug, Args)]
pub struct ServeCpuArgs {
    /// Validate as a device at this level only [default: every level, as each compile asks]
    #[arg(long, value_name = "X_Y", value_parser = crate::parse_feature_level)]
    pub feature_level: Option<FeatureLevel>,
}

/// `serve-cpu`: the CPU backend as a protocol server on stdin/stdout. A broken connection
/// fails it (exit status 1), with its reason on stderr.
pub fn serve_cpu_main(args: &ServeCpuArgs) -> crate::error::CommandResult {
    let served = dmlcts_backend_cpu::serve_stdio(args.feature_level);
    if let Err(e) = &served {
        crate::say_err!("dmlcts serve-cpu: {e}");
    }
    Ok(crate::error::Verdict::failed_if(served.is_err()))
}

/// The `expecting` text is `read::BACKENDS_FILE.expecting`: a file that is not one at all is
/// recognized by it and never quoted.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a YAML mapping with `backends:` (a backends file)"
)]
struct BackendsFile {
    backends: BTreeMap<String, NamedBackend>,
}

/// The longest name a backends file may give a backend, in bytes.
const MAX_BACKEND_NAME_BYTES: usize = 256;

/// A backends file's names are checked once it is read (the error names the file and the
/// name's line): none of the names `--backend` already gives a meaning (the built-in
/// ones; `directml` and every `directml...` name, which the matrix takes for DirectML's;
/// `process:COMMAND`), no name an option parser would take for an option (a leading `-`),
/// and at most
/// `MAX_BACKEND_NAME_BYTES` bytes. A file with such a name does not load: no name is ever
/// silently dropped from the matrix or shown as a second column of a built-in's name.
///
/// This gives why `name` cannot be a backends file's name; None where it can.
fn reserved_name(name: &str) -> Option<String> {
    let shown = || dmlcts_harness::corpus::read::quoted(name);
    if name.len() > MAX_BACKEND_NAME_BYTES {
        return Some(format!(
            "a backend name of {} bytes (at most {MAX_BACKEND_NAME_BYTES})",
            name.len()
        ));
    }
    let built_in = BUILT_IN.iter().any(|(b, _)| *b == name);
    if built_in || name == "directml" {
        return Some(format!(
            "`{}` is a built-in backend's name: the file cannot name another",
            shown()
        ));
    }
    if name.starts_with("directml") || name.starts_with("process:") {
        let prefix = if name.starts_with("directml") {
            "directml"
        } else {
            "process:"
        };
        return Some(format!(
            "`{}` starts with `{prefix}`, which --backend keeps for its own names",
            shown()
        ));
    }
    if name.is_empty() || name.starts_with('-') {
        return Some(format!(
            "`{}`: a backend name must be non-empty and not start with `-`",
            shown()
        ));
    }
    None
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NamedBackend {
    command: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    timeout_seconds: Option<Seconds>,
    #[serde(default)]
    startup_timeout_seconds: Option<Seconds>,
}

/// A timeout from a backends file: the same bounds as the timeout flags
/// (`crate::checked_seconds`: finite, from 1 ms to 7 days). Past them the file does not load
/// (its line and field named).
#[derive(Clone, Copy, Debug)]
struct Seconds(Duration);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Seconds, D::Error> {
        // Checked in the visitor, so that the parser names the field and its line.
        struct SecondsVisitor;
        impl serde::de::Visitor<'_> for SecondsVisitor {
            type Value = Seconds;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(
                    f,
                    "a number of seconds from {} to {}",
                    crate::MIN_SECONDS,
                    crate::MAX_SECONDS
                )
            }
            fn visit_f64<E: serde::de::Error>(self, seconds: f64) -> Result<Seconds, E> {
                crate::checked_seconds(seconds).map(Seconds).map_err(|e| {
                    // 1e300 as itself, not as 301 digits.
                    let shown = if seconds.abs() < 1e15 {
                        format!("{seconds}")
                    } else {
                        format!("{seconds:e}")
                    };
                    E::custom(format!("{shown} {e}"))
                })
            }
            fn visit_i64<E: serde::de::Error>(self, seconds: i64) -> Result<Seconds, E> {
                self.visit_f64(seconds as f64)
            }
            fn visit_u64<E: serde::de::Error>(self, seconds: u64) -> Result<Seconds, E> {
                self.visit_f64(seconds as f64)
            }
        }
        deserializer.deserialize_f64(SecondsVisitor)
    }
}

/// The backends file, read and checked (`read::BACKENDS_FILE`: at most 1 MiB, YAML within
/// its node budget); errors are `FILE:LINE: FIELD: MESSAGE`. A file not named by the user
/// (the host's default) that does not exist is an empty one.
fn load_config(path: &Path, named: bool) -> Result<BackendsFile, String> {
    if !named && std::fs::symlink_metadata(path).is_err() {
        return Ok(BackendsFile {
            backends: BTreeMap::new(),
        });
    }
    let file: BackendsFile = load_yaml(path, &BACKENDS_FILE)?;
    for name in file.backends.keys() {
        if let Some(why) = reserved_name(name) {
            let shown = text::line(&path.display().to_string()).into_owned();
            return Err(match name_line(path, name) {
                Some(line) => format!("{shown}:{line}: backends: {why}"),
                None => format!("{shown}: backends: {why}"),
            });
        }
    }
    Ok(file)
}

/// The line where the backends file writes `name` as a key (plain or quoted, in block
/// style), if it can be found.
fn name_line(path: &Path, name: &str) -> Option<usize> {
    let text = dmlcts_harness::corpus::read::read_text(
        path,
        &BACKENDS_FILE,
        dmlcts_harness::corpus::read::Links::Follow,
    )
    .ok()?;
    let forms = [
        format!("{name}:"),
        format!("'{}':", name.replace('\'', "''")),
        format!("{}:", serde_json::to_string(name).ok()?),
    ];
    (text.lines().position(|l| {
        let l = l.trim_start();
        forms.iter().any(|f| l.starts_with(f.as_str()))
    }))
    .map(|i| i + 1)
}

/// The names this build knows without a backends file, with a line about each.
fn built_in_names(host: &Host) -> Vec<(String, String)> {
    let mut all: Vec<(String, String)> = Vec::new();
    for (name, about) in BUILT_IN {
        let about = match missing_feature(name) {
            Some(feature) => format!("{about} (not in this build: --features {feature})"),
            None => about.to_string(),
        };
        all.push((name.to_string(), about));
        // The DirectML names, in the place `directml` always had.
        if *name == "wgpu" {
            all.extend((host.directml_names)());
        }
    }
    all
}

/// Every name this build and the backends file know, with a line about each; a backends file
/// that does not load is an error, never a shorter list.
pub fn known(host: &Host, config: Option<&Path>) -> Result<Vec<(String, String)>, String> {
    let mut all = built_in_names(host);
    let path = config.unwrap_or(&host.default_backends_file);
    let file = load_config(path, config.is_some())?;
    for (name, backend) in file.backends {
        let about = backend
            .description
            .unwrap_or_else(|| backend.command.clone());
        all.push((name, format!("{about} (from {})", path.display())));
    }
    Ok(all)
}

fn process(
    command: &str,
    name: &str,
    request: &BackendRequest,
    working_dir: Option<PathBuf>,
    startup_timeout: Option<Duration>,
) -> Result<Resolved, String> {
    let mut options = ProcessOptions::new(command);
    options.name = name.to_string();
    options.working_dir = working_dir;
    if let Some(timeout) = request.process_timeout {
        options.timeout = timeout;
    }
    if let Some(timeout) = startup_timeout {
        options.startup_timeout = timeout;
    }
    let process = Arc::new(ProcessBackend::start(options)?);
    let not_ready = process
        .hello_error()
        .map(|e| format!("its server gave no usable hello: {e}"));
    if process.feature_levels().is_empty() {
        let mut resolved = Resolved::single(process);
        resolved.not_ready = not_ready;
        return Ok(resolved);
    }
    // The server offers levels: one process, a device at each level it offers.
    let at = {
        let process = process.clone();
        move |level| -> Arc<dyn Backend> {
            match ProcessBackendAtLevel::new(process.clone(), level) {
                Some(device) => Arc::new(device),
                None => process.clone(),
            }
        }
    };
    let backend = match request.feature_level {
        Some(level) => at(level),
        None => process,
    };
    let mut resolved = Resolved::per_level(backend, at);
    resolved.not_ready = not_ready;
    Ok(resolved)
}

/// The command that serves the CPU backend: this very program's hidden `serve-cpu`.
/// Pinned to `level`, it serves that level only; otherwise every level.
fn cpu_server_command(level: Option<FeatureLevel>) -> Result<String, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program to run `serve-cpu`: {e}"))?;
    let mut command = format!(
        "{} serve-cpu",
        dmlcts_harness::command_word(&exe.display().to_string())
    );
    if let Some(level) = level {
        command.push_str(&format!(" --feature-level {level}"));
    }
    Ok(command)
}

pub fn resolve(host: &Host, request: &BackendRequest) -> Result<Resolved, String> {
    let level = request.feature_level;
    let first_level = level.unwrap_or(FeatureLevel::L4_1);
    match request.name.as_str() {
        "cpu" => {
            return Ok(Resolved::per_level(
                Arc::new(CpuBackend::at_level(first_level)),
                |level| Arc::new(CpuBackend::at_level(level)),
            ));
        }
        "oracle" => {
            return Ok(Resolved::per_level(
                Arc::new(OracleBackend::new(first_level)),
                |level| Arc::new(OracleBackend::new(level)),
            ));
        }
        "wgpu" => return wgpu(request, first_level),
        "cpu-process" => {
            let command = cpu_server_command(level)?;
            return process(&command, "cpu-process", request, None, None);
        }
        "tract" => return tract(),
        _ => {}
    }
    // On Windows, `directml` is the DirectML.dll this program finds, in a child of its own.
    #[cfg(windows)]
    if request.name == "directml" {
        let dll = crate::directml::dll_choice(request.directml_dll.as_ref());
        let command = crate::directml::server_command(request.adapter.as_deref(), dll.as_deref())?;
        let mut request = request.clone();
        if request.process_timeout.is_none() {
            // WARP and first-seen shaders are slow; a hang is still caught.
            request.process_timeout = Some(Duration::from_secs(60));
        }
        return process(
            &command,
            "directml",
            &request,
            None,
            Some(Duration::from_secs(300)),
        );
    }
    // `directml` (the newest pinned DirectML.dll) or `directml@VERSION`.
    if let Some(command) = (host.directml)(&request.name) {
        let command = command?;
        let mut request = request.clone();
        if request.process_timeout.is_none() {
            // Wine and first-seen shaders are slow; a hang is still caught.
            request.process_timeout = Some(Duration::from_secs(60));
        }
        return process(
            &command,
            "directml",
            &request,
            None,
            Some(Duration::from_secs(300)),
        );
    }
    if let Some(command) = request.name.strip_prefix("process:") {
        return process(command, &request.name, request, None, None);
    }
    let path = request
        .backend_config
        .clone()
        .unwrap_or_else(|| host.default_backends_file.clone());
    let file = load_config(&path, request.backend_config.is_some())?;
    if let Some(named) = file.backends.get(&request.name) {
        let mut request = request.clone();
        if request.process_timeout.is_none() {
            request.process_timeout = named.timeout_seconds.map(|s| s.0);
        }
        // `backends.yaml` (the installed command's default) has the parent "", which no
        // process can start in: that is the current folder.
        let dir = path
            .parent()
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(Path::to_path_buf);
        let startup = named.startup_timeout_seconds.map(|s| s.0);
        return process(&named.command, &request.name, &request, dir, startup)
            .map_err(|e| format!("{e}\n(the command comes from {})", path.display()));
    }
    Err(format!(
        "unknown backend `{}`; known: {}",
        request.name,
        known(host, request.backend_config.as_deref())?
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The backends behind cargo features of this package (`wgpu`, `tract`; `full` is both): their
/// dependency trees (wgpu and naga, tract-core) are most of a from-scratch build, and an
/// author's own backend needs neither. Absent from a build, each still has its name, and
/// saying it explains how to get it.
#[cfg_attr(all(feature = "wgpu", feature = "tract"), allow(dead_code))]
fn not_in_this_build(feature: &str) -> String {
    format!(
        "this dmlcts was built without the `{feature}` backend: install it with the cargo \
         feature `{feature}` (`cargo install ... dmlcts --features {feature}`, or `--features \
         full` for every backend; `cargo xtask` in a dmlcts checkout has them all)"
    )
}

/// The cargo feature a built-in backend needs, when this build lacks it.
fn missing_feature(name: &str) -> Option<&'static str> {
    match name {
        "wgpu" if cfg!(not(feature = "wgpu")) => Some("wgpu"),
        "tract" if cfg!(not(feature = "tract")) => Some("tract"),
        _ => None,
    }
}

#[cfg(feature = "wgpu")]
fn wgpu(request: &BackendRequest, first_level: FeatureLevel) -> Result<Resolved, String> {
    use dmlcts_backend_wgpu::{WgpuBackend, WgpuOptions};
    let mut options = WgpuOptions::default();
    if request.adapter.is_some() {
        options.adapter = request.adapter.clone();
    }
    options.feature_level = first_level;
    let backend = WgpuBackend::new(options.clone());
    // CI sets this so that a missing adapter fails the run instead of skipping it.
    if let Some(reason) = backend.unavailable_reason()
        && std::env::var_os("DMLCTS_REQUIRE_WGPU_ADAPTER").is_some()
    {
        return Err(format!("DMLCTS_REQUIRE_WGPU_ADAPTER is set and {reason}"));
    }
    Ok(Resolved::per_level(Arc::new(backend), move |level| {
        Arc::new(WgpuBackend::new(WgpuOptions {
            feature_level: level,
            ..options.clone()
        }))
    }))
}

#[cfg(not(feature = "wgpu"))]
fn wgpu(_: &BackendRequest, _: FeatureLevel) -> Result<Resolved, String> {
    Err(not_in_this_build("wgpu"))
}

#[cfg(feature = "tract")]
fn tract() -> Result<Resolved, String> {
    Ok(Resolved::single(Arc::new(
        dmlcts_backend_tract::TractBackend::new(),
    )))
}

#[cfg(not(feature = "tract"))]
fn tract() -> Result<Resolved, String> {
    Err(not_in_this_build("tract"))
}

/// The installed binary's DirectML stack: the one a dmlcts checkout's `cargo xtask directml
/// setup` prepared, found through `DMLCTS_DIRECTML_STACK` or `target/directml-stack` under the
/// current folder. The binary never installs anything itself.
fn directml_stack_dir() -> PathBuf {
    std::env::var_os("DMLCTS_DIRECTML_STACK")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new("target").join("directml-stack"))
}

/// The versions set up in the stack (folders holding a DirectML.dll), oldest first.
fn directml_versions(stack: &Path) -> Vec<(Version, PathBuf)> {
    let mut versions: Vec<(Version, PathBuf)> = std::fs::read_dir(stack)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("DirectML.dll").is_file())
        .filter_map(|e| {
            let version = Version::parse(e.file_name().to_str()?)?;
            Some((version, e.path()))
        })
        .collect();
    versions.sort_by(|a, b| a.0.compare(&b.0));
    versions
}

/// `directml_names` for the installed binary: `directml` and each version set up in the stack
/// (on Windows, `directml` is the DirectML.dll dmlcts.exe loads itself).
pub fn found_directml_names() -> Vec<(String, String)> {
    let mut names = directml_names_in(&directml_stack_dir());
    if cfg!(windows) {
        names[0].1 = "real DirectML: the DirectML.dll beside dmlcts.exe (or --directml-dll PATH, \
                      $DMLCTS_DIRECTML_DLL), else the system's, in a child dmlcts.exe on the \
                      adapter --adapter picks (`dmlcts adapters` lists them)"
            .to_string();
    }
    names
}

fn directml_names_in(stack: &Path) -> Vec<(String, String)> {
    let mut names = vec![(
        "directml".to_string(),
        format!(
            "real DirectML, the newest version set up in {} (a dmlcts checkout's `cargo xtask \
             directml setup`)",
            stack.display()
        ),
    )];
    for (version, dir) in directml_versions(stack) {
        names.push((
            format!("directml@{version}"),
            format!("DirectML {version} ({})", dir.display()),
        ));
    }
    names
}

/// `directml_ready` for the installed binary: each version set up in the stack, when its
/// start script is there too.
pub fn ready_directml_names() -> Vec<String> {
    ready_directml_in(&directml_stack_dir())
}

fn ready_directml_in(stack: &Path) -> Vec<String> {
    if !stack.join("run-server.sh").is_file() {
        return Vec::new();
    }
    directml_versions(stack)
        .into_iter()
        .map(|(version, _)| format!("directml@{version}"))
        .collect()
}

/// `directml` for the installed binary: finds the version's folder in the stack.
pub fn find_directml_stack(name: &str) -> Option<Result<String, String>> {
    find_directml_in(&directml_stack_dir(), name)
}

fn find_directml_in(stack: &Path, name: &str) -> Option<Result<String, String>> {
    let wanted = match name.strip_prefix("directml@") {
        Some(version) => Some(version),
        None if name == "directml" => None,
        None => return None,
    };
    let script = stack.join("run-server.sh");
    if !script.is_file() {
        return Some(Err(format!(
            "no DirectML stack at {}: the stack is prepared by a dmlcts checkout \
             (`cargo xtask directml setup`, or just `cargo xtask conformance --backend directml` \
             there); then run this from that checkout's root or set DMLCTS_DIRECTML_STACK to its \
             target/directml-stack",
            script.display()
        )));
    }
    let versions = directml_versions(stack);
    let found = match wanted {
        None => versions.last(),
        Some(wanted) => versions.iter().find(|(v, _)| v.to_string() == wanted),
    };
    Some(match found {
        Some((_, dir)) => Ok(format!(
            "{} {}",
            shell_word(&script.display().to_string()),
            shell_word(&dir.display().to_string())
        )),
        None => Err(format!(
            "no DirectML {} in {} (set up there: {}); `cargo xtask directml setup {}` in the \
             checkout adds it",
            wanted.unwrap_or("version"),
            stack.display(),
            versions
                .iter()
                .map(|(v, _)| v.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            wanted.unwrap_or("all")
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_finds_each_version_set_up_and_the_newest_for_plain_directml() {
        let stack = std::env::temp_dir().join(format!("dmlcts-stack-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&stack);
        for version in ["1.9.0", "1.15.4", "1.10.1"] {
            std::fs::create_dir_all(stack.join(version)).unwrap();
            std::fs::write(stack.join(version).join("DirectML.dll"), "").unwrap();
        }
        // A folder without a DLL, and one whose name is no version, are not versions.
        std::fs::create_dir_all(stack.join("1.12.1")).unwrap();
        std::fs::create_dir_all(stack.join("wineprefix")).unwrap();
        assert_eq!(find_directml_in(&stack, "cpu"), None);
        // Versions without the start script are not ready.
        assert!(ready_directml_in(&stack).is_empty());
        let missing = find_directml_in(&stack, "directml").unwrap().unwrap_err();
        assert!(missing.starts_with("no DirectML stack at "), "{missing}");
        std::fs::write(stack.join("run-server.sh"), "").unwrap();
        let command = |name: &str| find_directml_in(&stack, name).unwrap();
        let script = shell_word(&stack.join("run-server.sh").display().to_string());
        let at = |v: &str| shell_word(&stack.join(v).display().to_string());
        assert_eq!(
            command("directml"),
            Ok(format!("{script} {}", at("1.15.4")))
        );
        assert_eq!(
            command("directml@1.10.1"),
            Ok(format!("{script} {}", at("1.10.1")))
        );
        assert_eq!(
            command("directml@1.12.1"),
            Err(format!(
                "no DirectML 1.12.1 in {} (set up there: 1.9.0, 1.10.1, 1.15.4); `cargo xtask \
                 directml setup 1.12.1` in the checkout adds it",
                stack.display()
            ))
        );
        assert_eq!(
            ready_directml_in(&stack),
            ["directml@1.9.0", "directml@1.10.1", "directml@1.15.4"]
        );
        let names: Vec<String> = directml_names_in(&stack)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                "directml",
                "directml@1.9.0",
                "directml@1.10.1",
                "directml@1.15.4"
            ]
        );
        std::fs::remove_dir_all(&stack).unwrap();
    }

    /// wgpu and tract are cargo features: in a build without one, naming it says which
    /// feature brings it (and `backends` still lists it, saying so); with it, it resolves.
    /// `cargo test -p dmlcts` checks the slim build (CI checks it on the installed slim
    /// build, in .ci/outsider-test), `cargo test --workspace` the full one.
    #[test]
    fn a_backend_left_out_of_the_build_says_which_feature_brings_it() {
        let host = Host {
            program: "dmlcts",
            default_backends_file: PathBuf::from("/nonexistent/backends.yaml"),
            default_fuzz_out: PathBuf::from("cases/regressions"),
            directml: |_| None,
            directml_names: Vec::new,
            directml_ready: Vec::new,
        };
        let listed = known(&host, None).unwrap();
        for (name, built) in [
            ("wgpu", cfg!(feature = "wgpu")),
            ("tract", cfg!(feature = "tract")),
        ] {
            let request = BackendRequest {
                name: name.to_string(),
                ..BackendRequest::default()
            };
            let about = &listed.iter().find(|(n, _)| n == name).unwrap().1;
            let note = format!("(not in this build: --features {name})");
            match resolve(&host, &request) {
                Err(e) if !built => {
                    assert_eq!(
                        e,
                        format!(
                            "this dmlcts was built without the `{name}` backend: install it with \
                             the cargo feature `{name}` (`cargo install ... dmlcts --features \
                             {name}`, or `--features full` for every backend; `cargo xtask` in a \
                             dmlcts checkout has them all)"
                        )
                    );
                    assert!(about.ends_with(&note), "{about}");
                }
                Ok(resolved) if built => {
                    assert_eq!(resolved.backend.name(), name);
                    assert!(!about.contains(&note), "{about}");
                }
                // No adapter where CI requires one: the wgpu backend itself said so.
                Err(e) if built && e.starts_with("DMLCTS_REQUIRE_WGPU_ADAPTER") => {}
                other => panic!("{name} (built: {built}): {:?}", other.map(|_| ())),
            }
        }
    }
}
