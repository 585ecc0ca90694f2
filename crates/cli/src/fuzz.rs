//! `fuzz`: options and printing around `dmlcts_harness::fuzz`. Kept thin: the fuzzer
//! itself, its options and its report live beside the strategies.

use crate::Host;
use crate::backends::{BackendRequest, resolve};
use clap::{ArgGroup, Args};
use dmlcts_harness::fuzz::{FuzzOptions, Mix, fuzz};
use dmlcts_tensor::OperatorKind;
use std::io::Write;
use std::path::PathBuf;

#[derive(Clone, Debug, Args)]
#[command(group = ArgGroup::new("mix").args(["valid_only", "invalid_only"]))]
pub struct FuzzArgs {
    /// Backend to fuzz (the `backends` command lists them)
    #[arg(long, value_name = "NAME", default_value = "cpu")]
    pub backend: String,
    /// GPU backends: the adapter whose name, backend or driver contains TEXT
    #[arg(long, value_name = "TEXT")]
    pub adapter: Option<String>,
    /// Cases to generate
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub cases: u32,
    /// The run's seed [default: from the clock; printed, so any run can be repeated]
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Only this operator
    #[arg(long, value_name = "OP", value_parser = parse_operator)]
    pub op: Option<OperatorKind>,
    /// Only valid descriptors
    #[arg(long)]
    pub valid_only: bool,
    /// Only near misses (valid descriptors with one rule broken)
    #[arg(long)]
    pub invalid_only: bool,
    /// Where the minimal failing case is saved [default: cases/regressions]
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

fn parse_operator(text: &str) -> Result<OperatorKind, String> {
    OperatorKind::from_name(text)
        .ok_or_else(|| format!("unknown operator `{text}` (split, join, slice1)"))
}

pub fn fuzz_main(args: &FuzzArgs, host: &Host) -> i32 {
    let backend_name = args.backend.clone();
    let mut options = FuzzOptions {
        cases: args.cases,
        seed: args.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        }),
        op: args.op,
        mix: if args.valid_only {
            Mix::ValidOnly
        } else if args.invalid_only {
            Mix::InvalidOnly
        } else {
            Mix::Both
        },
        out_dir: args
            .out
            .clone()
            .unwrap_or_else(|| host.default_fuzz_out.clone()),
        backend_name: String::new(),
    };
    let request = BackendRequest {
        name: backend_name.clone(),
        adapter: args.adapter.clone(),
        ..Default::default()
    };
    let backend = match resolve(host, &request) {
        Ok(resolved) => resolved.backend,
        Err(e) => {
            eprintln!("error: --backend {backend_name}: {e}");
            return 2;
        }
    };
    if let Some(reason) = backend.unavailable_reason() {
        eprintln!("fuzz: backend {backend_name} is unavailable here: {reason}");
        return 2;
    }
    options.backend_name = backend_name.clone();
    let mut command = format!(
        "{} fuzz --backend {backend_name} --cases {} --seed {}",
        host.program, options.cases, options.seed
    );
    if let Some(op) = options.op {
        command.push_str(&format!(" --op {op}"));
    }
    match options.mix {
        Mix::ValidOnly => command.push_str(" --valid-only"),
        Mix::InvalidOnly => command.push_str(" --invalid-only"),
        Mix::Both => {}
    }
    println!(
        "fuzz: {} cases on backend {backend_name} ({}), seed {}",
        options.cases,
        backend.device(),
        options.seed
    );
    println!("fuzz: repeat this run with: {command}");
    let outcome = fuzz(backend.as_ref(), &options, |done, elapsed| {
        let rate = done as f64 / elapsed.as_secs_f64().max(1e-9);
        let _ = writeln!(std::io::stderr(), "fuzz: {done} cases, {rate:.0} cases/s");
    });
    if let Some(reason) = &outcome.aborted {
        println!("fuzz: aborted after {} cases: {reason}", outcome.cases_run);
        return 1;
    }
    match &outcome.failure {
        None => {
            println!(
                "fuzz: {} cases in {:.2} s ({:.0} cases/s), no failure",
                outcome.cases_run,
                outcome.elapsed.as_secs_f64(),
                outcome.cases_per_second()
            );
            0
        }
        Some(failure) => {
            println!(
                "fuzz: failure after {} cases; the minimal case found by shrinking:\n",
                outcome.cases_run
            );
            println!("{}", failure.report);
            println!("saved: {}", failure.path.display());
            println!("replay: {}", failure.replay);
            1
        }
    }
}
