//! Real DirectML as a dmlcts protocol server on stdin/stdout (docs/backend-protocol.md).
//! Before serving, it runs one known JOIN and exits with status 3 if the result is wrong, so
//! a broken stack (say, a Vulkan driver vkd3d cannot use) is reported as such.

use std::process::ExitCode;

fn main() -> ExitCode {
    // The one place this binary's exit status is decided: 2 cannot start (or not Windows),
    // 3 the self-test failed, 1 the connection broke.
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err((status, message)) => {
            eprintln!("{message}");
            ExitCode::from(status)
        }
    }
}

#[cfg(windows)]
fn run() -> Result<(), (u8, String)> {
    use dmlcts_backend_directml::DirectMlBackend;
    let backend = DirectMlBackend::new().map_err(|e| {
        (
            2,
            format!("dmlcts-directml-server: cannot start DirectML: {e}"),
        )
    })?;
    backend.self_test().map_err(|e| {
        (
            3,
            format!("dmlcts-directml-server: SELF-TEST FAILED, refusing to serve: {e}"),
        )
    })?;
    eprintln!(
        "dmlcts-directml-server: self-test passed on {}",
        backend.description()
    );
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    dmlcts_protocol::serve(&backend, stdin, stdout)
        .map_err(|e| (1, format!("dmlcts-directml-server: {e}")))
}

#[cfg(not(windows))]
fn run() -> Result<(), (u8, String)> {
    Err((
        2,
        "dmlcts-directml-server runs on Windows. On Linux, `cargo xtask directml setup` builds it \
         for x86_64-pc-windows-gnu and runs it under Wine: `cargo xtask conformance --backend directml`."
            .to_string(),
    ))
}
