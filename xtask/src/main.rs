//! `cargo xtask <command>`: the project's automation, in plain Rust.

mod backends;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  conformance   run the case corpus against a backend (--help for options)
  gen-cases     regenerate the generated part of cases/ from specs/
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
        "backends" => {
            for (name, about) in backends::KNOWN {
                println!("{name:10} {about}");
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
