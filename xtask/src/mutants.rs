//! `cargo xtask mutants`: cargo-mutants over a package, the way the guide's figures were
//! measured; then caught / missed / timeout / unviable, the kill ratio, and the survivors
//! checked against the equivalent mutants docs/guide/developing.md lists (the one list, with reasons).

use dmlcts_cli::{CommandError, CommandResult, Verdict, say, say_err};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The cargo-mutants release the guide's figures were measured with.
pub const MEASURED_VERSION: &str = "27.1.0";

/// The share of the mutants not listed as equivalent that the tests must kill.
const REQUIRED_KILL_RATIO: f64 = 0.95;

/// A measured package: what is mutated, and which tests must kill it.
struct Target {
    package: &'static str,
    about: &'static str,
    /// The mutants' names start with this.
    prefix: &'static str,
    mutate: &'static [&'static str],
    /// Packages whose tests run besides the mutated one's (`--test-package`).
    test_packages: &'static [&'static str],
    /// `cargo test` arguments: the tests that count.
    tests: &'static [&'static str],
}

const TARGETS: &[Target] = &[
    Target {
        package: "dmlcts-backend-cpu",
        about: "the CPU backend (not its protocol server), against the corpus alone",
        prefix: "crates/backend-cpu/",
        mutate: &[
            "--package",
            "dmlcts-backend-cpu",
            "--exclude",
            "crates/backend-cpu/src/bin/**",
            "--exclude",
            "crates/backend-cpu/src/serve.rs",
        ],
        test_packages: &[],
        tests: &["--test", "corpus"],
    },
    Target {
        package: "dmlcts-oracle",
        about: "the oracle's validate.rs, against the oracle's tests and the corpus",
        prefix: "crates/oracle/src/validate.rs:",
        mutate: &["--file", "crates/oracle/src/validate.rs"],
        test_packages: &["dmlcts-oracle", "dmlcts-harness"],
        tests: &[
            "--lib",
            "--test",
            "rules",
            "--test",
            "properties",
            "--test",
            "doc_examples",
            "--test",
            "corpus_integrity",
            "--test",
            "validate_enforced",
        ],
    },
];

/// The guide's chapter with the list of equivalent mutants, from the repository root.
const EQUIVALENT_LIST: &str = "docs/guide/developing.md";
/// Its markers around the list: lines "- `NAME`: reason".
const EQUIVALENT_START: &str = "<!-- equivalent mutants: start -->";
const EQUIVALENT_END: &str = "<!-- equivalent mutants: end -->";

/// Runs the measurement; `extra` goes to cargo-mutants (e.g. `--re PATTERN` for a subset,
/// which then is not held to the required ratio).
pub fn mutants_main(package: &str, extra: &[String], root: &Path) -> CommandResult {
    let Some(target) = TARGETS.iter().find(|t| t.package == package) else {
        let known: Vec<&str> = TARGETS.iter().map(|t| t.package).collect();
        return Err(CommandError::Usage(format!(
            "--package {package}: the measured packages are {}",
            known.join(", ")
        )));
    };
    check_cargo_mutants()?;
    let out = root.join("target").join("mutants").join(target.package);
    let outcomes = out.join("mutants.out");
    let _ = std::fs::remove_dir_all(&outcomes);
    std::fs::create_dir_all(&out)
        .map_err(|e| CommandError::Output(format!("cannot create {}: {e}", out.display())))?;
    let mut command = mutants_command(target, root, &out, extra)?;
    say!("measuring {}:\n  {command:?}", target.about);
    say!(
        "  (--in-place: each mutant is written into the source tree, tested and undone; \
         leave the sources alone until it finishes)"
    );
    let started = Instant::now();
    // cargo-mutants exits non-zero when mutants survive: the outcomes say what happened.
    let status = command
        .status()
        .map_err(|e| CommandError::Backend(format!("cannot run cargo mutants: {e}")))?
        .code()
        .unwrap_or(2);
    let seconds = started.elapsed().as_secs();
    report(target, &outcomes, root, seconds, extra, status)
}

/// Whether cargo-mutants is installed (with a warning when it is not the release the
/// guide's figures were measured with); otherwise the error saying how to install it.
fn check_cargo_mutants() -> Result<(), CommandError> {
    match Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
    {
        Ok(output) if output.status.success() => {
            let version = String::from_utf8_lossy(&output.stdout);
            if !version.contains(MEASURED_VERSION) {
                say_err!(
                    "warning: {}; the guide's figures were measured with cargo-mutants {MEASURED_VERSION}",
                    version.trim()
                );
            }
        }
        _ => {
            return Err(CommandError::Usage(format!(
                "cargo-mutants is not installed. Install the version the guide's figures \
                 were measured with:\n  cargo install cargo-mutants --version {MEASURED_VERSION} --locked"
            )));
        }
    }
    Ok(())
}

/// The cargo-mutants command for `target`, writing into `out`. A target whose tests include
/// other packages' has its tests run once without mutations first (an error when they fail).
fn mutants_command(
    target: &Target,
    root: &Path,
    out: &Path,
    extra: &[String],
) -> Result<Command, CommandError> {
    let mut command = Command::new("cargo");
    command
        .current_dir(root)
        .args(["mutants", "--in-place", "--output"])
        .arg(out)
        .args(target.mutate);
    if !target.test_packages.is_empty() {
        // cargo-mutants 27.1.0 runs its unmutated baseline on the mutated package alone,
        // where the other packages' tests do not exist; so the baseline runs here.
        let mut baseline = Command::new("cargo");
        baseline.current_dir(root).arg("test");
        for package in target.test_packages {
            command.args(["--test-package", package]);
            baseline.args(["--package", package]);
        }
        baseline.args(target.tests);
        say!("the tests without mutations:\n  {baseline:?}");
        if !baseline.status().is_ok_and(|s| s.success()) {
            return Err(CommandError::Usage(
                "the tests fail without mutations; fix that first".to_string(),
            ));
        }
        command.args(["--baseline", "skip", "--timeout", "180"]);
    }
    command.args(extra).arg("--").args(target.tests);
    Ok(command)
}

/// The measurement's outcomes: the counts, the kill ratio, the survivors against the guide's
/// list, the timeouts, and the verdict (a subset is not held to the required ratio).
fn report(
    target: &Target,
    outcomes: &Path,
    root: &Path,
    seconds: u64,
    extra: &[String],
    status: i32,
) -> CommandResult {
    let counts = match Counts::read(&outcomes.join("outcomes.json")) {
        Ok(counts) => counts,
        Err(e) if status == 0 => {
            say_err!("no outcomes ({e}); cargo mutants exited with {status}");
            return Ok(Verdict::Passed);
        }
        Err(e) => {
            return Err(CommandError::Input(format!(
                "no outcomes ({e}); cargo mutants exited with {status}"
            )));
        }
    };
    let equivalent =
        equivalent_mutants(&root.join(EQUIVALENT_LIST)).map_err(CommandError::Input)?;
    let missed = read_names(&outcomes.join("missed.txt"));
    let timeouts = read_names(&outcomes.join("timeout.txt"));
    let summary = summarize(target, &counts, &missed, &equivalent);
    say!(
        "\n{} ({}), {} min {} s:",
        target.package,
        target.about,
        seconds / 60,
        seconds % 60
    );
    for line in &summary.lines {
        say!("  {line}");
    }
    for name in &timeouts {
        say!("  timeout: {name}");
    }
    if !extra.is_empty() {
        say!(
            "  (a subset: not held to {:.0}%)",
            100.0 * REQUIRED_KILL_RATIO
        );
        return Ok(Verdict::Passed);
    }
    if summary.ratio < REQUIRED_KILL_RATIO {
        say!("  below the required {:.0}%", 100.0 * REQUIRED_KILL_RATIO);
    }
    Ok(Verdict::failed_if(summary.ratio < REQUIRED_KILL_RATIO))
}

struct Counts {
    caught: u64,
    missed: u64,
    timeout: u64,
    unviable: u64,
}

impl Counts {
    fn read(path: &Path) -> Result<Counts, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let count = |field: &str| {
            json.get(field)
                .and_then(serde_json::Value::as_u64)
                .ok_or_else(|| format!("{}: no `{field}` count", path.display()))
        };
        Ok(Counts {
            caught: count("caught")?,
            missed: count("missed")?,
            timeout: count("timeout")?,
            unviable: count("unviable")?,
        })
    }
}

fn read_names(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect()
}

/// The backticked mutant names between the list's markers.
fn equivalent_mutants(list: &Path) -> Result<BTreeSet<String>, String> {
    let text = std::fs::read_to_string(list).map_err(|e| format!("{}: {e}", list.display()))?;
    parse_equivalent_section(&text).map_err(|e| format!("{}: {e}", list.display()))
}

fn parse_equivalent_section(text: &str) -> Result<BTreeSet<String>, String> {
    let start = text
        .find(EQUIVALENT_START)
        .ok_or(format!("no `{EQUIVALENT_START}` line"))?;
    let length = text[start..]
        .find(EQUIVALENT_END)
        .ok_or(format!("no `{EQUIVALENT_END}` line"))?;
    let mut names = BTreeSet::new();
    for line in text[start..start + length].lines() {
        let Some(item) = line.trim_start().strip_prefix("- `") else {
            continue;
        };
        let (name, reason) = item
            .split_once("`: ")
            .ok_or(format!("`{line}` is not \"- `MUTANT`: reason\""))?;
        if reason.trim().is_empty() {
            return Err(format!("{name} has no reason"));
        }
        names.insert(name.to_string());
    }
    Ok(names)
}

struct Summary {
    /// Caught over the viable mutants not listed as equivalent.
    ratio: f64,
    lines: Vec<String>,
}

fn summarize(
    target: &Target,
    counts: &Counts,
    missed: &[String],
    equivalent: &BTreeSet<String>,
) -> Summary {
    let viable = counts.caught + counts.missed + counts.timeout;
    let percent = |part: u64, whole: u64| 100.0 * part as f64 / whole.max(1) as f64;
    let (listed, unlisted): (Vec<&String>, Vec<&String>) =
        missed.iter().partition(|m| equivalent.contains(*m));
    let judged = viable - listed.len() as u64;
    let mut lines = vec![
        format!(
            "caught {}, missed {}, timeout {}, unviable {} ({viable} viable)",
            counts.caught, counts.missed, counts.timeout, counts.unviable
        ),
        format!(
            "kill ratio: {} of {viable} viable = {:.1}%",
            counts.caught,
            percent(counts.caught, viable)
        ),
        format!(
            "{} of the missed are listed in {EQUIVALENT_LIST} as equivalent; without them {} of {judged} \
             = {:.1}% (required: {:.0}%)",
            listed.len(),
            counts.caught,
            percent(counts.caught, judged),
            100.0 * REQUIRED_KILL_RATIO
        ),
    ];
    lines.extend(
        unlisted
            .iter()
            .map(|name| format!("missed, not listed as equivalent: {name}")),
    );
    lines.extend(
        equivalent
            .iter()
            .filter(|name| name.starts_with(target.prefix) && !missed.contains(name))
            .map(|name| format!("listed as equivalent but not missed (a stale entry?): {name}")),
    );
    Summary {
        ratio: counts.caught as f64 / judged.max(1) as f64,
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_lists_equivalent_mutants_each_with_a_reason() {
        let list = crate::repository_root().join(EQUIVALENT_LIST);
        let names = equivalent_mutants(&list).unwrap();
        assert!(!names.is_empty());
        for name in &names {
            assert!(
                TARGETS.iter().any(|t| name.starts_with(t.prefix)),
                "{name} is in no measured package"
            );
        }
    }

    #[test]
    fn an_entry_without_a_reason_is_refused() {
        let text =
            format!("{EQUIVALENT_START}\n- `a.rs:1:1: replace + with -`\n{EQUIVALENT_END}\n");
        assert_eq!(
            parse_equivalent_section(&text).unwrap_err(),
            "`- `a.rs:1:1: replace + with -`` is not \"- `MUTANT`: reason\""
        );
    }

    #[test]
    fn listed_survivors_leave_the_ratio_and_stale_entries_are_named() {
        let target = &TARGETS[0];
        let counts = Counts {
            caught: 18,
            missed: 2,
            timeout: 0,
            unviable: 3,
        };
        let missed = vec![
            "crates/backend-cpu/src/a.rs:1:1: replace + with -".to_string(),
            "crates/backend-cpu/src/a.rs:2:1: replace * with +".to_string(),
        ];
        let equivalent: BTreeSet<String> = [
            "crates/backend-cpu/src/a.rs:1:1: replace + with -".to_string(),
            "crates/backend-cpu/src/a.rs:9:1: replace > with >=".to_string(),
        ]
        .into();
        let summary = summarize(target, &counts, &missed, &equivalent);
        assert_eq!(summary.ratio, 18.0 / 19.0);
        assert_eq!(
            summary.lines,
            [
                "caught 18, missed 2, timeout 0, unviable 3 (20 viable)",
                "kill ratio: 18 of 20 viable = 90.0%",
                "1 of the missed are listed in docs/guide/developing.md as equivalent; without them 18 of 19 = 94.7% (required: 95%)",
                "missed, not listed as equivalent: crates/backend-cpu/src/a.rs:2:1: replace * with +",
                "listed as equivalent but not missed (a stale entry?): crates/backend-cpu/src/a.rs:9:1: replace > with >=",
            ]
        );
    }
}
