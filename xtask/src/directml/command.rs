//! `directml windows-command VERSION...`: the dmlcts command itself, cross-built for Windows,
//! run under the stack's Wine as a Windows user runs it, from a folder holding `dmlcts.exe`
//! and a pinned `DirectML.dll` (target/directml-stack/command-VERSION):
//!
//! 1. `dmlcts.exe conformance --help` says where DirectML comes from on Windows (no checkout),
//!    and `dmlcts.exe conformance` on the CPU runs the whole corpus, 0 failed, 0 skipped (once);
//! 2. for each version, `dmlcts.exe adapters` lists adapter 0 with its driver and DirectML's
//!    level; `dmlcts.exe conformance --backend directml --adapter 0 --expectations
//!    expectations/directml.yaml` exits 0, and its per-case results (id, status, reason) are
//!    those of the server path (`cargo xtask conformance --backend directml@VERSION` with the
//!    same expectations), case for case;
//! 3. a failing case's printed replay command runs again through Wine's `cmd /c` and fails the
//!    same way (the same FAIL line and check).
//!
//! The command runs under the environment of the server's start script (run-server.sh, whose
//! last line is the only one that differs).

use super::cross_build::command_exe;
use super::pins::{Pin, version_dir};
use super::setup::prepare;
use super::shell::{run, server_script, stack_dir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The case whose replay is run through cmd: a known difference of every pinned version.
const REPLAY_CASE: &str = "edge.slice1.output_smaller_than_window_on_inner_axis";

/// A Windows path for a Linux one, as Wine maps `/` to drive Z:.
fn wine_path(path: &Path) -> String {
    format!("Z:{}", path.display()).replace('/', "\\")
}

/// run-command.sh: run-server.sh's environment, then `wine ARGS...` in a folder.
fn command_script() -> Result<PathBuf, String> {
    let server = std::fs::read_to_string(server_script())
        .map_err(|e| format!("{}: {e}", server_script().display()))?;
    let text = server.replace("wine dmlcts-directml-server.exe \"$@\"", "wine \"$@\"");
    if text == server {
        return Err(format!(
            "{} does not end by starting the server as expected",
            server_script().display()
        ));
    }
    let script = stack_dir().join("run-command.sh");
    std::fs::write(&script, text).map_err(|e| format!("{}: {e}", script.display()))?;
    run(Command::new("chmod").arg("+x").arg(&script), "chmod")?;
    Ok(script)
}

/// Runs `wine ARGS...` in `dir` under the stack's environment.
fn wine(script: &Path, dir: &Path, args: &[&str]) -> Result<Output, String> {
    Command::new(script)
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// One report's cases: id -> (status, reason).
fn cases(report: &Path) -> Result<BTreeMap<String, (String, String)>, String> {
    let text = std::fs::read_to_string(report).map_err(|e| format!("{}: {e}", report.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", report.display()))?;
    let field = |case: &Value, key: &str| case[key].as_str().unwrap_or_default().to_string();
    Ok((json["cases"].as_array().into_iter().flatten())
        .map(|c| (field(c, "id"), (field(c, "status"), field(c, "reason"))))
        .collect())
}

/// The cases whose results differ between two reports, at most `limit` of them, each as a
/// line; and how many differ.
pub(super) fn differences(
    server: &BTreeMap<String, (String, String)>,
    command: &BTreeMap<String, (String, String)>,
    limit: usize,
) -> (usize, Vec<String>) {
    let mut ids: Vec<&String> = server.keys().chain(command.keys()).collect();
    ids.sort();
    ids.dedup();
    let differing: Vec<String> = ids
        .into_iter()
        .filter(|id| server.get(*id) != command.get(*id))
        .map(|id| {
            format!(
                "{id}: server {:?}, command {:?}",
                server.get(id),
                command.get(id)
            )
        })
        .collect();
    (differing.len(), differing.into_iter().take(limit).collect())
}

fn check(condition: bool, failure: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(failure()) }
}

/// Every check, for these pins; the lines it says as it goes.
pub fn windows_command(pins: &[&Pin]) -> Result<(), String> {
    let root = crate::repository_root();
    let say = |line: String| dmlcts_cli::say!("directml windows-command: {line}");
    let mut servers = Vec::new();
    for pin in pins {
        servers.push(prepare(pin)?);
    }
    let started = std::time::Instant::now();
    let exe = command_exe()?;
    say(format!(
        "dmlcts.exe cross-built for x86_64-pc-windows-gnu in {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    let script = command_script()?;
    let expectations = wine_path(&root.join("expectations/directml.yaml"));
    for (i, pin) in pins.iter().enumerate() {
        let version = pin.version;
        let dir = stack_dir().join(format!("command-{version}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for file in [
            exe.clone(),
            version_dir(pin).join("DirectML.dll"),
            version_dir(pin).join("bcryptprimitives.dll"),
        ] {
            let name = file.file_name().ok_or("a file without a name")?;
            std::fs::copy(&file, dir.join(name))
                .map_err(|e| format!("copying {} into {}: {e}", file.display(), dir.display()))?;
        }
        if i == 0 {
            let out = wine(&script, &dir, &["dmlcts.exe", "conformance", "--help"])?;
            let help = text(&out);
            check(
                out.status.success()
                    && help.contains("the DirectML.dll beside dmlcts.exe")
                    && !help.contains("checkout"),
                || format!("dmlcts.exe conformance --help is not the Windows text:\n{help}"),
            )?;
            say(
                "dmlcts.exe conformance --help: directml is the DirectML.dll beside dmlcts.exe \
                 (no checkout named)"
                    .to_string(),
            );
            let report = dir.join("cpu.json");
            let started = std::time::Instant::now();
            let out = wine(
                &script,
                &dir,
                &["dmlcts.exe", "conformance", "--json", "cpu.json"],
            )?;
            check(out.status.success(), || {
                format!("dmlcts.exe conformance (CPU) failed:\n{}", text(&out))
            })?;
            let results = cases(&report)?;
            let passed = results.values().filter(|(s, _)| s == "passed").count();
            check(passed == results.len() && passed > 0, || {
                format!(
                    "dmlcts.exe conformance (CPU): {passed} of {} passed",
                    results.len()
                )
            })?;
            say(format!(
                "dmlcts.exe conformance (CPU): {passed} passed, 0 failed, 0 skipped in {:.1} s",
                started.elapsed().as_secs_f64()
            ));
        }
        let out = wine(&script, &dir, &["dmlcts.exe", "adapters"])?;
        let listing = text(&out);
        let adapter = listing.lines().find(|l| l.starts_with("0: ")).unwrap_or("");
        check(
            out.status.success()
                && adapter.contains(", driver ")
                && adapter.contains("DirectML feature level "),
            || {
                format!(
                    "dmlcts.exe adapters does not list adapter 0 with its driver and DirectML level:\n{listing}"
                )
            },
        )?;
        say(format!("{version}: dmlcts.exe adapters: {adapter}"));

        let started = std::time::Instant::now();
        let out = wine(
            &script,
            &dir,
            &[
                "dmlcts.exe",
                "conformance",
                "--backend",
                "directml",
                "--adapter",
                "0",
                "--expectations",
                &expectations,
                "--json",
                "command.json",
            ],
        )?;
        check(out.status.success(), || {
            format!(
                "{version}: dmlcts.exe conformance --backend directml failed:\n{}",
                text(&out)
            )
        })?;
        let command_seconds = started.elapsed().as_secs_f64();
        let server_report = dir.join("server.json");
        let this = std::env::current_exe().map_err(|e| e.to_string())?;
        let out = Command::new(this)
            .args(["conformance", "--backend", &format!("directml@{version}")])
            .arg("--expectations")
            .arg(root.join("expectations/directml.yaml"))
            .arg("--json")
            .arg(&server_report)
            .current_dir(&root)
            .output()
            .map_err(|e| e.to_string())?;
        check(out.status.success(), || {
            format!(
                "{version}: the server path ({}) failed:\n{}",
                servers[i],
                text(&out)
            )
        })?;
        let (server, command) = (cases(&server_report)?, cases(&dir.join("command.json"))?);
        let (count, first) = differences(&server, &command, 5);
        check(count == 0 && !server.is_empty(), || {
            format!(
                "{version}: {count} case(s) differ between the server path and the command:\n{}",
                first.join("\n")
            )
        })?;
        let passed = command.values().filter(|(s, _)| s == "passed").count();
        say(format!(
            "{version}: dmlcts.exe conformance --backend directml --adapter 0 --expectations: exit \
             0, {passed} passed, in {command_seconds:.1} s; all {} cases as on the server path",
            command.len()
        ));

        // A failure's printed replay, run again through cmd.
        let first_run = wine(
            &script,
            &dir,
            &[
                "dmlcts.exe",
                "conformance",
                "--backend",
                "directml",
                "--adapter",
                "0",
                "--filter",
                REPLAY_CASE,
                "--exact",
            ],
        )?;
        let printed = text(&first_run);
        let replay = printed
            .lines()
            .find_map(|l| l.trim().strip_prefix("replay: "))
            .ok_or_else(|| format!("{version}: no replay command printed:\n{printed}"))?
            .to_string();
        let again = wine(&script, &dir, &["cmd", "/c", &replay])?;
        let replayed = text(&again);
        let fail_line = |t: &str| {
            t.lines()
                .filter(|l| l.starts_with("FAIL ") || l.trim().starts_with("check: "))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        check(
            first_run.status.code() == Some(1)
                && again.status.code() == Some(1)
                && !fail_line(&printed).is_empty()
                && fail_line(&printed) == fail_line(&replayed),
            || {
                format!(
                    "{version}: the replay `{replay}` through cmd did not fail the same way \
                     ({:?} then {:?}):\n{printed}\n---\n{replayed}",
                    first_run.status.code(),
                    again.status.code()
                )
            },
        )?;
        say(format!(
            "{version}: the printed replay `{replay}` ran again through Wine's cmd: exit 1, {}",
            fail_line(&replayed).join(" / ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_that_differs_or_is_missing_on_either_side_is_a_difference() {
        let of = |rows: &[(&str, &str, &str)]| -> BTreeMap<String, (String, String)> {
            rows.iter()
                .map(|(id, s, r)| (id.to_string(), (s.to_string(), r.to_string())))
                .collect()
        };
        let server = of(&[
            ("a:1", "passed", ""),
            ("a:2", "skipped", "why"),
            ("a:3", "failed", "x"),
        ]);
        assert_eq!(differences(&server, &server.clone(), 5).0, 0);
        let command = of(&[
            ("a:1", "passed", ""),
            ("a:2", "skipped", "other"),
            ("a:4", "passed", ""),
        ]);
        let (count, lines) = differences(&server, &command, 2);
        assert_eq!(count, 3);
        assert_eq!(
            lines,
            [
                "a:2: server Some((\"skipped\", \"why\")), command Some((\"skipped\", \"other\"))",
                "a:3: server Some((\"failed\", \"x\")), command None",
            ]
        );
        assert_eq!(
            wine_path(Path::new("/work/x y/e.yaml")),
            "Z:\\work\\x y\\e.yaml"
        );
    }
}
