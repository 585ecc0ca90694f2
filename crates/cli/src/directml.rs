//! DirectML from the command itself, on Windows: `--backend directml` loads DirectML.dll the
//! way applications do (beside dmlcts.exe, else `--directml-dll PATH` or
//! `DMLCTS_DIRECTML_DLL`, else the system's) in a child `dmlcts.exe serve-directml`, started
//! as a process backend, so that a crash or hang inside DirectML.dll fails only its case; the
//! child runs crates/backend-directml's backend, linked into dmlcts.exe on Windows only.
//! `dmlcts adapters` lists the D3D12 adapters. On other systems both subcommands say where
//! DirectML runs instead (Linux: the Wine stack of a dmlcts checkout).

#[cfg(not(windows))]
use crate::error::CommandError;
use crate::error::CommandResult;
#[cfg(windows)]
use crate::error::{CommandError, Verdict};
use clap::Args;
use std::path::{Path, PathBuf};

#[cfg_attr(not(windows), allow(dead_code))]
/// The environment variable that names a DirectML.dll when `--directml-dll` does not.
pub const DLL_ENV: &str = "DMLCTS_DIRECTML_DLL";

#[derive(Debug, Args)]
pub struct AdaptersArgs {
    /// The DirectML.dll to load [default: $DMLCTS_DIRECTML_DLL, else the one beside dmlcts.exe,
    /// else the system's]
    #[arg(long, value_name = "PATH")]
    pub directml_dll: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ServeDirectmlArgs {
    /// The D3D12 adapter: an index from `dmlcts adapters`, `warp`, or text in its name
    #[arg(long, value_name = "INDEX|TEXT|warp")]
    pub adapter: Option<String>,
    /// The DirectML.dll to load [default: by name: beside dmlcts.exe, else the system's]
    #[arg(long, value_name = "PATH")]
    pub directml_dll: Option<PathBuf>,
}

#[cfg_attr(not(windows), allow(dead_code))]
/// The DLL a command asked for: the option, else the environment variable.
pub fn dll_choice(option: Option<&PathBuf>) -> Option<PathBuf> {
    option.cloned().or_else(|| {
        std::env::var_os(DLL_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })
}

#[cfg_attr(not(windows), allow(dead_code))]
/// The words after the program that start the child serving DirectML on `adapter` from
/// `dll`, as the run was asked (the child parses them: `AdapterChoice::parse`).
pub fn serve_words(adapter: Option<&str>, dll: Option<&Path>) -> Vec<String> {
    let mut words = vec!["serve-directml".to_string()];
    if let Some(adapter) = adapter {
        words.extend(["--adapter".to_string(), adapter.to_string()]);
    }
    if let Some(dll) = dll {
        words.extend(["--directml-dll".to_string(), dll.display().to_string()]);
    }
    words
}

#[cfg(not(windows))]
fn elsewhere(what: &str) -> CommandError {
    CommandError::Backend(format!(
        "{what} runs on Windows, where DirectML is; on Linux a dmlcts checkout reaches it \
         under Wine (`cargo xtask directml setup`, then `--backend directml`)"
    ))
}

/// `adapters`: each D3D12 adapter, one line each.
#[cfg(windows)]
pub fn adapters_main(args: &AdaptersArgs) -> CommandResult {
    let dll = dll_choice(args.directml_dll.as_ref());
    let (path, version, adapters) = dmlcts_backend_directml::list_adapters(dll.as_deref())
        .map_err(|e| CommandError::Backend(format!("adapters: {e}")))?;
    crate::say!(
        "DirectML.dll version {version} ({})",
        dmlcts_harness::text::line(&path)
    );
    for adapter in &adapters {
        crate::say!("{}", dmlcts_harness::text::line(&adapter.line()));
    }
    if adapters.is_empty() {
        crate::say!("no D3D12 adapter");
    }
    Ok(Verdict::Passed)
}

#[cfg(not(windows))]
pub fn adapters_main(_: &AdaptersArgs) -> CommandResult {
    Err(elsewhere("`dmlcts adapters`"))
}

/// `serve-directml`: DirectML as a protocol server on stdin/stdout, after the self-test (one
/// known JOIN) that refuses a broken stack.
#[cfg(windows)]
pub fn serve_directml_main(args: &ServeDirectmlArgs) -> CommandResult {
    use dmlcts_backend_directml::{AdapterChoice, DirectMlBackend, DirectMlOptions};
    let options = DirectMlOptions {
        dll: dll_choice(args.directml_dll.as_ref()),
        adapter: (args.adapter.as_deref()).map_or(AdapterChoice::Default, AdapterChoice::parse),
    };
    let backend = DirectMlBackend::with_options(&options).map_err(|e| {
        CommandError::Backend(format!("serve-directml: cannot start DirectML: {e}"))
    })?;
    backend.self_test().map_err(|e| {
        CommandError::Backend(format!(
            "serve-directml: SELF-TEST FAILED, refusing to serve: {e}"
        ))
    })?;
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let served = dmlcts_protocol::serve(&backend, stdin, stdout);
    if let Err(e) = &served {
        crate::say_err!("dmlcts serve-directml: {e}");
    }
    Ok(Verdict::failed_if(served.is_err()))
}

#[cfg(not(windows))]
pub fn serve_directml_main(_: &ServeDirectmlArgs) -> CommandResult {
    Err(elsewhere("`dmlcts serve-directml`"))
}

/// The server command of `--backend directml` on Windows: this very program's
/// `serve-directml`, its words quoted as Windows programs read them.
#[cfg(windows)]
pub fn server_command(adapter: Option<&str>, dll: Option<&Path>) -> Result<String, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program to run `serve-directml`: {e}"))?;
    let words: Vec<String> = std::iter::once(exe.display().to_string())
        .chain(serve_words(adapter, dll))
        .map(|w| dmlcts_harness::command_word(&w))
        .collect();
    Ok(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_is_told_the_adapter_and_the_dll_it_was_asked_for() {
        let dll = PathBuf::from("C:\\DirectML 1.9\\DirectML.dll");
        assert_eq!(
            serve_words(Some("warp"), Some(&dll)),
            [
                "serve-directml",
                "--adapter",
                "warp",
                "--directml-dll",
                "C:\\DirectML 1.9\\DirectML.dll"
            ]
        );
        assert_eq!(serve_words(None, None), ["serve-directml"]);
    }
}
