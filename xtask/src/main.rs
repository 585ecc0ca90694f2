//! `cargo xtask <command>`: the project's automation, in plain Rust.

mod backends;
mod bench;
mod directml;
mod fuzz;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  conformance   run the case corpus against a backend (--help for options)
  gen-cases     regenerate the generated part of cases/ from specs/
  bench         CPU backend throughput against memcpy, ndarray and the oracle
  fuzz          random valid and near-miss cases; the first failure is shrunk and saved
  directml      `directml setup`: prepare real DirectML under Wine (Linux)
  backends      list the backends this build knows
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(command) = args.first() else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    let status = match command.as_str() {
        "conformance" => {
            if rest.iter().any(|a| a == "--help" || a == "-h") {
                print!("{}", dmlcts_harness::cli::CONFORMANCE_USAGE);
                0
            } else {
                dmlcts_harness::cli::conformance_main(rest, &backends::resolve)
            }
        }
        "gen-cases" => gen_cases(),
        "bench" => bench::bench_main(rest),
        "fuzz" => fuzz::fuzz_main(rest, &repository_root()),
        "directml" => directml::directml_main(rest),
        "backends" => {
            for (name, about) in backends::known(None) {
                println!("{name:16} {about}");
            }
            0
        }
        "--help" | "-h" | "help" => {
            print!("{USAGE}");
            0
        }
        other => {
            eprintln!("unknown command `{other}`\n\n{USAGE}");
            2
        }
    };
    ExitCode::from(status as u8)
}

/// Writes the generated corpus files; says which changed.
fn gen_cases() -> i32 {
    let root = repository_root();
    for (path, text) in dmlcts_harness::generate::generated_files() {
        let full = root.join(&path);
        let unchanged = std::fs::read_to_string(&full).is_ok_and(|old| old == text);
        if unchanged {
            println!("unchanged  {path}");
            continue;
        }
        if let Some(parent) = full.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            eprintln!("error: cannot create {}: {e}", parent.display());
            return 1;
        }
        if let Err(e) = std::fs::write(&full, text) {
            eprintln!("error: cannot write {}: {e}", full.display());
            return 1;
        }
        println!("wrote      {path}");
    }
    0
}

/// The workspace root: xtask lives one folder below it.
pub fn repository_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}
