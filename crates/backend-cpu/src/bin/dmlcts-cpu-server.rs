//! The CPU backend as an out-of-process protocol server (docs/backend-protocol.md), on
//! stdin/stdout: a device at every feature level (each `compile` names one), or with
//! `--feature-level X_Y` a device at that level only.

use dmlcts_tensor::FeatureLevel;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let level = match args.as_slice() {
        [] => None,
        [flag, value] if flag == "--feature-level" => match FeatureLevel::parse(value) {
            Some(level) => Some(level),
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
    if let Err(e) = dmlcts_backend_cpu::serve_stdio(level) {
        eprintln!("dmlcts-cpu-server: {e}");
        std::process::exit(1);
    }
}
