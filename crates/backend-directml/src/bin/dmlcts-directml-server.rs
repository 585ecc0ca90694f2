//! Real DirectML as a dmlcts protocol server on stdin/stdout (docs/backend-protocol.md).
//! Before serving, it runs one known JOIN and exits with status 3 if the result is wrong, so
//! a broken stack (say, a Vulkan driver vkd3d cannot use) is reported as such.

#[cfg(windows)]
fn main() {
    use dmlcts_backend_directml::DirectMlBackend;
    let backend = match DirectMlBackend::new() {
        Ok(backend) => backend,
        Err(e) => {
            eprintln!("dmlcts-directml-server: cannot start DirectML: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = backend.self_test() {
        eprintln!("dmlcts-directml-server: SELF-TEST FAILED, refusing to serve: {e}");
        std::process::exit(3);
    }
    eprintln!(
        "dmlcts-directml-server: self-test passed on {}",
        backend.description()
    );
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    if let Err(e) = dmlcts_protocol::serve(&backend, stdin, stdout) {
        eprintln!("dmlcts-directml-server: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(windows))]
fn main() {
    eprintln!(
        "dmlcts-directml-server runs on Windows. On Linux, `cargo xtask directml setup` builds it \
         for x86_64-pc-windows-gnu and runs it under Wine: `cargo xtask conformance --backend directml`."
    );
    std::process::exit(2);
}
