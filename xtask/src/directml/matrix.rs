//! `directml matrix`: the corpus with expectations on every pinned version, each in its own
//! `cargo xtask conformance` process, summed up as the versions table of the guide's DirectML chapter
//! (docs/guide/directml.md).

use super::pins::{PINS, Pin};
use super::setup::setup;
use super::shell::stack_dir;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// One version's line in the matrix, from its conformance run's JSON report.
struct MatrixRow {
    pin: &'static Pin,
    loaded: String,
    passed: u64,
    failed: u64,
    skipped: u64,
    expected_failures: u64,
    feature_level: String,
    seconds: f64,
}

/// The guide's chapter that holds the versions table, from the repository root.
const GUIDE_CHAPTER: &str = "docs/guide/directml.md";
const TABLE_BEGIN: &str =
    "<!-- directml matrix: begin (cargo xtask directml matrix --write-guide) -->";
const TABLE_END: &str = "<!-- directml matrix: end -->";

fn matrix_table(rows: &[MatrixRow]) -> String {
    let mut table = String::from(
        "| DirectML.dll loaded | from | passed | failed | skipped | expected failures | max feature level | run (s) |\n\
         | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |\n",
    );
    for row in rows {
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} |\n",
            row.loaded,
            row.pin.requirement,
            row.passed,
            row.failed,
            row.skipped,
            row.expected_failures,
            row.feature_level,
            row.seconds
        ));
    }
    table
}

/// Replaces the chapter's table between its markers.
fn replace_between_markers(chapter: &str, table: &str) -> Result<String, String> {
    let begin = chapter
        .find(TABLE_BEGIN)
        .ok_or_else(|| format!("{GUIDE_CHAPTER} has no `{TABLE_BEGIN}` line"))?;
    let end = chapter[begin..]
        .find(TABLE_END)
        .map(|e| begin + e)
        .ok_or_else(|| {
            format!("{GUIDE_CHAPTER} has no `{TABLE_END}` line after the begin marker")
        })?;
    Ok(format!(
        "{}{TABLE_BEGIN}\n{table}{}",
        &chapter[..begin],
        &chapter[end..]
    ))
}

/// Why the matrix failed.
#[derive(Debug)]
pub enum MatrixError {
    /// What stopped it (a folder, a version's setup, the guide), in a line.
    Stopped(String),
    /// A version's run failed or wrote no report (its line said so).
    RunsFailed,
}

/// `cargo xtask directml matrix`: the corpus with expectations on every pinned version, each
/// in its own `cargo xtask conformance` process; prints the table (and writes it into the
/// guide's DirectML chapter with --write-guide). Fails if any version's run failed.
pub(super) fn matrix_main(write_guide: bool) -> Result<(), MatrixError> {
    let root = crate::repository_root();
    let out = stack_dir().join("matrix");
    std::fs::create_dir_all(&out)
        .map_err(|e| MatrixError::Stopped(format!("{}: {e}", out.display())))?;
    let exe = std::env::current_exe().map_err(|e| MatrixError::Stopped(e.to_string()))?;
    // Set every version up first, so that the timings below are the runs alone.
    for pin in PINS {
        setup(pin).map_err(|e| {
            MatrixError::Stopped(format!("setting up DirectML {}: {e}", pin.version))
        })?;
    }
    let mut rows = Vec::new();
    let mut all_ran = true;
    for pin in PINS {
        let Some((row, ok)) = run_version(&exe, &root, &out, pin) else {
            all_ran = false;
            continue;
        };
        all_ran &= ok;
        rows.push(row);
    }
    let table = matrix_table(&rows);
    dmlcts_cli::say!("\n{table}");
    let table_file = out.join("table.md");
    std::fs::write(&table_file, &table)
        .map_err(|e| MatrixError::Stopped(format!("{}: {e}", table_file.display())))?;
    if write_guide {
        write_into_guide(&root, &table)?;
    }
    if all_ran {
        Ok(())
    } else {
        Err(MatrixError::RunsFailed)
    }
}

/// One version's conformance run, its log and JSON report in `out`: its row and whether the
/// run succeeded, after a line saying so; `None` after a line naming the log when it wrote no
/// report.
fn run_version(
    exe: &Path,
    root: &Path,
    out: &Path,
    pin: &'static Pin,
) -> Option<(MatrixRow, bool)> {
    let json = out.join(format!("{}.json", pin.version));
    let log = out.join(format!("{}.log", pin.version));
    let _ = std::fs::remove_file(&json);
    let started = Instant::now();
    let ran = std::fs::File::create(&log)
        .and_then(|file| Ok((file.try_clone()?, file)))
        .and_then(|(stdout, stderr)| {
            Command::new(exe)
                .arg("conformance")
                .arg("--backend")
                .arg(format!("directml@{}", pin.version))
                .arg("--expectations")
                .arg(root.join("expectations/directml.yaml"))
                .arg("--json")
                .arg(&json)
                .stdout(stdout)
                .stderr(stderr)
                .status()
        });
    let seconds = started.elapsed().as_secs_f64();
    let report: Option<serde_json::Value> = std::fs::read_to_string(&json)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok());
    let ok = ran.as_ref().is_ok_and(|s| s.success());
    let Some(report) = report else {
        let tail = std::fs::read_to_string(&log).unwrap_or_default();
        let last = tail.lines().last().unwrap_or("no output");
        dmlcts_cli::say!(
            "DirectML {}: no report ({last}); log: {}",
            pin.version,
            log.display()
        );
        return None;
    };
    let summary = &report["summary"];
    let count = |key: &str| summary[key].as_u64().unwrap_or(0);
    let row = MatrixRow {
        pin,
        loaded: summary["version"].as_str().unwrap_or("(none)").to_string(),
        passed: count("passed"),
        failed: count("failed"),
        skipped: count("skipped"),
        expected_failures: count("expected_failures"),
        feature_level: summary["feature_level"].as_str().unwrap_or("?").to_string(),
        seconds,
    };
    dmlcts_cli::say!(
        "DirectML {} (loaded {}): {} passed, {} failed, {} skipped, {} expected failures, \
         feature level {}, {seconds:.1} s; log: {}",
        pin.version,
        row.loaded,
        row.passed,
        row.failed,
        row.skipped,
        row.expected_failures,
        row.feature_level,
        log.display()
    );
    Some((row, ok))
}

/// Writes the table into the guide's chapter between its markers.
fn write_into_guide(root: &Path, table: &str) -> Result<(), MatrixError> {
    let chapter = root.join(GUIDE_CHAPTER);
    std::fs::read_to_string(&chapter)
        .map_err(|e| e.to_string())
        .and_then(|text| replace_between_markers(&text, table))
        .and_then(|text| std::fs::write(&chapter, text).map_err(|e| e.to_string()))
        .map_err(|e| MatrixError::Stopped(format!("{}: {e}", chapter.display())))?;
    dmlcts_cli::say!(
        "directml matrix: wrote the table into {}",
        chapter.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guide_table_is_replaced_between_its_markers() {
        let chapter = format!("intro\n{TABLE_BEGIN}\nold table\n{TABLE_END}\nrest\n");
        assert_eq!(
            replace_between_markers(&chapter, "| new |\n").unwrap(),
            format!("intro\n{TABLE_BEGIN}\n| new |\n{TABLE_END}\nrest\n")
        );
        assert!(
            replace_between_markers("no markers", "x")
                .unwrap_err()
                .contains("has no")
        );
    }

    #[test]
    fn the_guide_chapter_has_the_table_markers() {
        let chapter =
            std::fs::read_to_string(crate::repository_root().join(GUIDE_CHAPTER)).unwrap();
        let table = replace_between_markers(&chapter, "| new |\n").unwrap();
        assert!(table.contains(&format!("{TABLE_BEGIN}\n| new |\n{TABLE_END}")));
    }
}
