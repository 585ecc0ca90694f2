//! The results matrix: one row per case, one column per backend (implementation and version),
//! each cell a case's status on that backend; written as JSON (`to_json`) and as one static,
//! self-contained HTML page (`to_html`, in matrix/html.rs).

mod html;

use crate::corpus::Case;
use crate::expectations::device_version;
use crate::run::{CaseResult, Status};
use std::collections::HashMap;
use std::time::Duration;

/// A column: one backend as `--backend` named it, and what its run said about itself.
#[derive(Clone, Debug, Default)]
pub struct MatrixColumn {
    /// The name given to `--backend` (`directml@1.15.4`).
    pub backend: String,
    /// The backend's own name (`directml`).
    pub implementation: String,
    /// Its device text (adapter, library version, ...).
    pub device: String,
    /// The validation profile it declares (`strict`, `values-only`, ...).
    pub profile: String,
    /// The level the cases ran at (`each case's own`, or one level).
    pub feature_level: String,
    /// The expectations file its run used, if any.
    pub expectations: Option<String>,
    /// Why it could not run on this machine; its cells are then skipped with this reason.
    pub unavailable: Option<String>,
    /// What failed the column besides its cells (an available backend that skipped every
    /// case; an expectations entry naming no case that ran is listed, not failed).
    pub problems: Vec<String>,
    /// Notes on the run that fail nothing (stale expectations entries).
    pub notes: Vec<String>,
    pub startup: Duration,
    pub cases_time: Duration,
}

impl MatrixColumn {
    /// The `version X.Y.Z` in the device text, where there is one.
    pub fn version(&self) -> Option<String> {
        device_version(&self.device).map(|v| v.to_string())
    }
}

/// One case's outcome on one column.
#[derive(Clone, Debug)]
pub struct Cell {
    pub status: Status,
    pub reason: String,
    pub notes: Vec<String>,
    /// For failures: the full report (ending with the replay command).
    pub details: String,
    /// For failures: the command that runs this case alone again, the same way.
    pub replay: Option<String>,
}

impl Cell {
    fn of(result: &CaseResult) -> Cell {
        let failed = result.status == Status::Failed;
        Cell {
            status: result.status,
            reason: result.reason.clone(),
            notes: result.notes.clone(),
            details: if failed {
                result.details.clone()
            } else {
                String::new()
            },
            replay: if failed {
                replay_line(&result.details)
            } else {
                None
            },
        }
    }

    fn skipped(reason: &str) -> Cell {
        Cell {
            status: Status::Skipped,
            reason: reason.to_string(),
            notes: Vec::new(),
            details: String::new(),
            replay: None,
        }
    }
}

/// The `  replay: COMMAND` line of a failure's details.
pub fn replay_line(details: &str) -> Option<String> {
    details
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("replay: "))
        .map(str::to_string)
}

/// A row: one case, with its cell in each column (in column order).
#[derive(Clone, Debug)]
pub struct MatrixRow {
    pub name: String,
    pub file: String,
    pub line: usize,
    /// The folder of its file (`cases/generated`).
    pub folder: String,
    /// `split`, `join`, `slice1`, or `file error` for a file that did not load.
    pub operator: String,
    pub feature_level: Option<String>,
    pub cells: Vec<Cell>,
}

impl MatrixRow {
    pub fn group(&self) -> String {
        format!("{} · {}", self.folder, self.operator)
    }
}

/// Counts of each status in a column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub passed: usize,
    pub failed: usize,
    pub expected_failures: usize,
    pub informational: usize,
    pub skipped: usize,
}

impl Totals {
    fn add(&mut self, status: Status) {
        match status {
            Status::Passed => self.passed += 1,
            Status::Failed => self.failed += 1,
            Status::ExpectedFailure => self.expected_failures += 1,
            Status::Informational => self.informational += 1,
            Status::Skipped => self.skipped += 1,
        }
    }

    /// `N passed, M failed, K expected failures, I informational, J skipped`.
    pub fn line(&self) -> String {
        format!(
            "{} passed, {} failed, {} expected failures, {} informational, {} skipped",
            self.passed, self.failed, self.expected_failures, self.informational, self.skipped
        )
    }
}

/// The statuses as the matrix shows them (`Status::name` is the JSON name and the CSS class),
/// with a mark and words, in the totals row's order.
pub const STATUSES: &[(Status, &str, &str)] = &[
    (Status::Passed, "✓", "passed"),
    (Status::Failed, "✗", "failed"),
    (Status::ExpectedFailure, "xf", "expected failure"),
    (Status::Informational, "i", "informational"),
    (Status::Skipped, "–", "skipped"),
];

fn folder_of(file: &str) -> String {
    match file.rsplit_once('/') {
        Some((folder, _)) => folder.to_string(),
        None => ".".to_string(),
    }
}

#[derive(Clone, Debug, Default)]
pub struct Matrix {
    /// The command that made it, as the page shows it.
    pub command: String,
    pub columns: Vec<MatrixColumn>,
    pub rows: Vec<MatrixRow>,
    index: HashMap<String, usize>,
}

impl Matrix {
    /// An empty matrix with a row for each case, in order.
    pub fn new(command: &str, cases: &[Case]) -> Matrix {
        let mut matrix = Matrix {
            command: command.to_string(),
            ..Matrix::default()
        };
        for case in cases {
            matrix.add_row(MatrixRow {
                name: case.name.clone(),
                file: case.file.clone(),
                line: case.line,
                folder: folder_of(&case.file),
                operator: case.op.kind().name().to_string(),
                feature_level: Some(case.feature_level.to_string()),
                cells: Vec::new(),
            });
        }
        matrix
    }

    fn add_row(&mut self, mut row: MatrixRow) -> usize {
        // A row that appears after some columns (a file error): those columns did not run it.
        while row.cells.len() < self.columns.len() {
            row.cells
                .push(Cell::skipped("not run on this column (no such case)"));
        }
        let at = self.rows.len();
        self.index.insert(row.name.clone(), at);
        self.rows.push(row);
        at
    }

    /// Adds a column from a run's results (matched to rows by case name; a result for no row,
    /// such as a file that did not load, adds its own row). A row with no result is skipped.
    pub fn add_column(&mut self, column: MatrixColumn, results: &[CaseResult]) {
        let mut cells: Vec<Option<Cell>> = vec![None; self.rows.len()];
        for result in results {
            let at = match self.index.get(&result.name) {
                Some(&at) => at,
                None => {
                    let at = self.add_row(MatrixRow {
                        name: result.name.clone(),
                        file: result.file.clone(),
                        line: result.line,
                        folder: folder_of(&result.file),
                        operator: match result.feature_level {
                            Some(_) => "other".to_string(),
                            None => "file error".to_string(),
                        },
                        feature_level: result.feature_level.map(|l| l.to_string()),
                        cells: Vec::new(),
                    });
                    cells.push(None);
                    at
                }
            };
            cells[at] = Some(Cell::of(result));
        }
        for (row, cell) in self.rows.iter_mut().zip(cells) {
            row.cells
                .push(cell.unwrap_or_else(|| Cell::skipped("did not run on this backend")));
        }
        self.columns.push(column);
    }

    /// Adds a column for a backend that could not run: every cell skipped with why.
    pub fn add_unavailable(&mut self, mut column: MatrixColumn, reason: &str) {
        column.unavailable = Some(reason.to_string());
        let cell = format!("backend {} unavailable: {reason}", column.backend);
        for row in &mut self.rows {
            row.cells.push(Cell::skipped(&cell));
        }
        self.columns.push(column);
    }

    pub fn totals(&self, column: usize) -> Totals {
        let mut totals = Totals::default();
        for row in &self.rows {
            totals.add(row.cells[column].status);
        }
        totals
    }

    /// Whether anything failed: a cell, or a column's own check.
    pub fn failed(&self) -> bool {
        self.columns.iter().any(|c| !c.problems.is_empty())
            || self
                .rows
                .iter()
                .any(|r| r.cells.iter().any(|c| c.status == Status::Failed))
    }

    /// The row indices grouped by folder and operator: groups in order of folder, then
    /// operator; rows in corpus order within a group.
    pub fn groups(&self) -> Vec<(String, Vec<usize>)> {
        let mut keys: Vec<(String, String)> = Vec::new();
        let mut members: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for (i, row) in self.rows.iter().enumerate() {
            let key = (row.folder.clone(), row.operator.clone());
            let entry = members.entry(key.clone()).or_default();
            if entry.is_empty() {
                keys.push(key);
            }
            entry.push(i);
        }
        keys.sort();
        keys.into_iter()
            .map(|key| {
                let rows = members.remove(&key).unwrap_or_default();
                (format!("{} · {}", key.0, key.1), rows)
            })
            .collect()
    }

    pub fn to_json(&self) -> String {
        let columns: Vec<serde_json::Value> = (self.columns.iter().enumerate())
            .map(|(i, c)| {
                let t = self.totals(i);
                serde_json::json!({
                    "backend": c.backend,
                    "implementation": c.implementation,
                    "version": c.version(),
                    "device": c.device,
                    "profile": c.profile,
                    "feature_level": c.feature_level,
                    "expectations": c.expectations,
                    "available": c.unavailable.is_none(),
                    "unavailable_reason": c.unavailable,
                    "problems": c.problems,
                    "notes": c.notes,
                    "startup_s": c.startup.as_secs_f64(),
                    "cases_s": c.cases_time.as_secs_f64(),
                    "totals": totals_json(&t),
                })
            })
            .collect();
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|r| {
                let cells: Vec<serde_json::Value> = (r.cells.iter())
                    .map(|c| {
                        let mut cell = serde_json::json!({
                            "status": c.status.name(),
                            "reason": c.reason,
                        });
                        if !c.notes.is_empty() {
                            cell["notes"] = serde_json::json!(c.notes);
                        }
                        if let Some(replay) = &c.replay {
                            cell["replay"] = serde_json::json!(replay);
                        }
                        if !c.details.is_empty() {
                            cell["details"] = serde_json::json!(c.details);
                        }
                        cell
                    })
                    .collect();
                serde_json::json!({
                    "name": r.name,
                    "file": r.file,
                    "line": r.line,
                    "folder": r.folder,
                    "operator": r.operator,
                    "feature_level": r.feature_level,
                    "cells": cells,
                })
            })
            .collect();
        let report = serde_json::json!({
            "command": self.command,
            "cases": self.rows.len(),
            "columns": columns,
            "rows": rows,
        });
        serde_json::to_string_pretty(&report).unwrap_or_default()
    }

    pub fn to_html(&self) -> String {
        html::page(self)
    }
}

fn totals_json(t: &Totals) -> serde_json::Value {
    serde_json::json!({
        "passed": t.passed,
        "failed": t.failed,
        "expected_failures": t.expected_failures,
        "informational": t.informational,
        "skipped": t.skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Corpus;

    fn result(case: &Case, status: Status, reason: &str, details: &str) -> CaseResult {
        CaseResult {
            name: case.name.clone(),
            file: case.file.clone(),
            line: case.line,
            status,
            reason: reason.to_string(),
            details: details.to_string(),
            notes: Vec::new(),
            duration: Duration::ZERO,
            feature_level: Some(case.feature_level),
            run_level: None,
        }
    }

    fn column(name: &str) -> MatrixColumn {
        MatrixColumn {
            backend: name.to_string(),
            implementation: name.to_string(),
            ..MatrixColumn::default()
        }
    }

    #[test]
    fn cells_follow_their_rows_by_name_and_missing_ones_are_skipped_with_a_reason() {
        let cases: Vec<Case> = Corpus::embedded().cases.into_iter().take(3).collect();
        let mut matrix = Matrix::new("test", &cases);
        // Results out of order, one missing, one for a file that did not load.
        let mut load_error = result(&cases[0], Status::Failed, "case file error", "  bad\n");
        load_error.name = "load:cases/broken.yaml".to_string();
        load_error.file = "cases/broken.yaml".to_string();
        load_error.feature_level = None;
        matrix.add_column(
            column("a"),
            &[
                result(
                    &cases[2],
                    Status::Failed,
                    "values differ",
                    "  at [0]\n  replay: cargo xtask conformance --backend a --cases f --filter x --exact\n",
                ),
                result(&cases[0], Status::Passed, "", ""),
                load_error,
            ],
        );
        matrix.add_unavailable(column("b"), "no adapter");
        assert_eq!(matrix.rows.len(), 4);
        assert_eq!(matrix.rows[0].cells[0].status, Status::Passed);
        assert_eq!(matrix.rows[1].cells[0].status, Status::Skipped);
        assert_eq!(
            matrix.rows[1].cells[0].reason,
            "did not run on this backend"
        );
        let failed = &matrix.rows[2].cells[0];
        assert_eq!(failed.status, Status::Failed);
        assert_eq!(
            failed.replay.as_deref(),
            Some("cargo xtask conformance --backend a --cases f --filter x --exact")
        );
        assert_eq!(matrix.rows[3].operator, "file error");
        assert_eq!(matrix.rows[3].folder, "cases");
        assert_eq!(matrix.rows[3].cells[0].status, Status::Failed);
        for row in &matrix.rows {
            assert_eq!(row.cells[1].status, Status::Skipped);
            assert_eq!(row.cells[1].reason, "backend b unavailable: no adapter");
        }
        assert_eq!(
            matrix.totals(0),
            Totals {
                passed: 1,
                failed: 2,
                expected_failures: 0,
                informational: 0,
                skipped: 1
            }
        );
        assert_eq!(matrix.totals(1).skipped, 4);
        assert!(matrix.failed());
        let json: serde_json::Value = serde_json::from_str(&matrix.to_json()).unwrap();
        assert_eq!(json["columns"][1]["available"], false);
        assert_eq!(json["columns"][1]["unavailable_reason"], "no adapter");
        assert_eq!(json["columns"][0]["totals"]["failed"], 2);
        assert_eq!(json["rows"][2]["cells"][0]["status"], "failed");
        assert_eq!(
            json["rows"][2]["cells"][0]["replay"],
            "cargo xtask conformance --backend a --cases f --filter x --exact"
        );
        assert_eq!(json["rows"][0]["cells"][0].get("replay"), None);
    }

    #[test]
    fn groups_are_folder_then_operator_and_keep_corpus_order_within() {
        let cases = Corpus::embedded().cases;
        let matrix = Matrix::new("test", &cases);
        let groups = matrix.groups();
        let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(names.contains(&"cases/doc · split"), "{names:?}");
        assert_eq!(
            groups.iter().map(|(_, rows)| rows.len()).sum::<usize>(),
            cases.len()
        );
        for (group, rows) in &groups {
            assert!(rows.windows(2).all(|w| w[0] < w[1]), "{group}");
            assert!(rows.iter().all(|&r| matrix.rows[r].group() == *group));
        }
    }
}
