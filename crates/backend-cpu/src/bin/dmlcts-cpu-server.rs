//! The CPU backend as an out-of-process protocol server (docs/backend-protocol.md), on
//! stdin/stdout. `--feature-level X_Y` makes it validate as a device at that level.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_tensor::FeatureLevel;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let level = match args.as_slice() {
        [] => FeatureLevel::L4_1,
        [flag, value] if flag == "--feature-level" => match FeatureLevel::parse(value) {
            Some(level) => level,
            None => {
                eprintln!("dmlcts-cpu-server: unknown feature level `{value}`");
                std::process::exit(2);
            }
        },
        _ => {
            eprintln!("usage: dmlcts-cpu-server [--feature-level X_Y]");
            std::process::exit(2);
        }
    };
    let backend = CpuBackend::at_level(level);
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    if let Err(e) = dmlcts_protocol::serve(&backend, stdin, stdout) {
        eprintln!("dmlcts-cpu-server: {e}");
        std::process::exit(1);
    }
}
