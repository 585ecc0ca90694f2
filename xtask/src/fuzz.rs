//! `cargo xtask fuzz`: argument parsing and printing around `dmlcts_harness::fuzz`.

use crate::backends;
use dmlcts_harness::fuzz::{FuzzOptions, Mix, default_out_dir, fuzz};
use dmlcts_tensor::OperatorKind;
use std::io::Write;
use std::path::{Path, PathBuf};

const USAGE: &str = "\
usage: cargo xtask fuzz [--backend NAME] [--cases N] [--seed S] [--op split|join|slice1]
                        [--valid-only | --invalid-only] [--out DIR]

  --backend NAME   backend to fuzz (default: cpu)
  --adapter TEXT   GPU backends: the adapter to use
  --cases N        cases to generate (default: 10000)
  --seed S         the run's seed (default: from the clock; printed, so any run can be repeated)
  --op OP          only this operator
  --valid-only     only valid descriptors; --invalid-only: only near misses
  --out DIR        where the minimal failing case is saved (default: cases/regressions)
";

pub fn fuzz_main(args: &[String], root: &Path) -> i32 {
    let mut backend_name = "cpu".to_string();
    let mut adapter = None;
    let mut options = FuzzOptions {
        cases: 10_000,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
        op: None,
        mix: Mix::Both,
        out_dir: default_out_dir(root),
        backend_name: String::new(),
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = || iter.next().cloned().ok_or(format!("{arg} needs a value"));
        let parsed: Result<(), String> = (|| {
            match arg.as_str() {
                "--backend" => backend_name = value()?,
                "--adapter" => adapter = Some(value()?),
                "--cases" => {
                    options.cases = value()?
                        .parse()
                        .map_err(|_| "--cases takes a number up to 4294967295")?
                }
                "--seed" => {
                    options.seed = value()?
                        .parse()
                        .map_err(|_| "--seed takes an unsigned integer")?
                }
                "--op" => {
                    let text = value()?;
                    options.op = Some(OperatorKind::from_name(&text).ok_or(format!(
                        "--op: unknown operator `{text}` (split, join, slice1)"
                    ))?);
                }
                "--valid-only" => options.mix = Mix::ValidOnly,
                "--invalid-only" => options.mix = Mix::InvalidOnly,
                "--out" => options.out_dir = PathBuf::from(value()?),
                "--help" | "-h" => return Err(String::new()),
                other => return Err(format!("unknown option `{other}`")),
            }
            Ok(())
        })();
        if let Err(e) = parsed {
            if e.is_empty() {
                print!("{USAGE}");
                return 0;
            }
            eprintln!("error: {e}\n\n{USAGE}");
            return 2;
        }
    }
    let request = dmlcts_harness::cli::BackendRequest {
        name: backend_name.clone(),
        adapter,
        ..Default::default()
    };
    let backend = match backends::resolve(&request) {
        Ok(b) => b,
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
        "cargo xtask fuzz --backend {backend_name} --cases {} --seed {}",
        options.cases, options.seed
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
