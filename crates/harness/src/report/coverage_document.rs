//! The suite's own coverage document (docs/guide/coverage.md, `cargo xtask coverage`): every
//! assertion of the pages against the cases that check it, per operator, feature level, data
//! type and rank; breadth and depth in figures; and the places where an assertion cannot be
//! checked, each with its reason (worked out from the level tables of specs/, or given in
//! specs/execution-properties.yaml's `uncheckable`). `holes` names every assertion that no
//! case checks at an operator and level where it can be checked.

use super::coverage::{Assertion, all_assertions};
use crate::corpus::Case;
use crate::corpus::assertions::{assertions, rank};
use crate::run::{RunOptions, level_skip_reason};
use dmlcts_oracle::{OracleBackend, spec};
use dmlcts_tensor::{DataType, FeatureLevel, OperatorKind};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The levels the document has a column for: where an operator or a table row begins. A case
/// that runs at one of them runs alike at every later level up to the next (the tables and
/// the operators are the same there).
pub fn levels() -> Vec<FeatureLevel> {
    let mut levels: BTreeSet<FeatureLevel> = BTreeSet::new();
    for kind in OperatorKind::ALL {
        levels.insert(spec::introduced(kind));
        for row in &spec::operator(kind).tensor_support {
            levels.insert(spec::row_level(row));
        }
    }
    levels.into_iter().collect()
}

/// Whether `case` runs at `level` (on a device at that level, as the runner decides).
pub fn runs_at(case: &Case, level: FeatureLevel) -> bool {
    let options = RunOptions {
        feature_level: Some(level),
        ..RunOptions::default()
    };
    level_skip_reason(&OracleBackend::new(level), case, &options).is_none()
}

/// Why `assertion` cannot be checked on `kind` at `level`, or None where it can.
pub fn uncheckable(
    assertion: &Assertion,
    kind: OperatorKind,
    level: FeatureLevel,
) -> Option<String> {
    let introduced = spec::introduced(kind);
    let id = assertion.id.as_str();
    if id == "operator.introduced_at_level" {
        return (level >= introduced).then(|| format!("{kind} exists from {introduced}"));
    }
    if level < introduced {
        return Some(format!("{kind} does not exist before {introduced}"));
    }
    let row = spec::support_row(kind, level)?;
    let listed: BTreeSet<DataType> = (row.tensors.iter())
        .flat_map(|t| t.supported_data_types())
        .collect();
    if id.ends_with(".data_type_supported") && listed.len() == DataType::ALL.len() {
        return Some(format!("the {} table lists every data type", row.level));
    }
    if id.ends_with(".same_dimension_count")
        && row
            .tensors
            .iter()
            .all(|t| t.dimension_counts[0] == t.dimension_counts[1])
    {
        return Some(format!(
            "the {} table allows one dimension count, so tensors of different counts break \
             {kind}.dimension_count_supported too",
            row.level
        ));
    }
    if let Some(dt) = assertion.data_type
        && !listed.contains(&dt)
    {
        return Some(format!("{dt} is not in the {} table", row.level));
    }
    let given = spec::specs().execution.uncheckable.iter().find(|u| {
        u.assertion == id
            && u.operator == kind.name()
            && u.levels.iter().any(|l| l == &level.to_string())
    });
    given.map(|u| u.reason.clone())
}

/// The cases that check one assertion on one operator at one level.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub cases: usize,
    pub data_types: BTreeSet<DataType>,
    pub ranks: BTreeSet<usize>,
}

/// The document: for each assertion and operator, the cases per level, and the files.
#[derive(Debug, Default)]
pub struct Document {
    /// (assertion id, operator, level) -> the cases that check it there.
    pub cells: BTreeMap<(String, OperatorKind, FeatureLevel), Cell>,
    /// (assertion id, operator) -> its cases (at any level), and the files they are in.
    pub cases: BTreeMap<(String, OperatorKind), (usize, BTreeMap<String, usize>)>,
    pub total_cases: usize,
}

impl Document {
    pub fn of(cases: &[Case]) -> Document {
        let levels = levels();
        let mut document = Document {
            total_cases: cases.len(),
            ..Document::default()
        };
        for case in cases {
            let kind = case.op.kind();
            let ids = assertions(case);
            let at: Vec<FeatureLevel> = (levels.iter().copied())
                .filter(|&l| runs_at(case, l))
                .collect();
            let dt = case.data_types().first().copied();
            for id in ids {
                let entry = document.cases.entry((id.clone(), kind)).or_default();
                entry.0 += 1;
                *entry.1.entry(case.file.clone()).or_default() += 1;
                for &level in &at {
                    let cell = document.cells.entry((id.clone(), kind, level)).or_default();
                    cell.cases += 1;
                    cell.data_types.extend(dt);
                    cell.ranks.insert(rank(case));
                }
            }
        }
        document
    }

    /// Every assertion no case checks at an operator and level where it can be checked:
    /// `ID on OPERATOR at LEVEL`.
    pub fn holes(&self) -> Vec<String> {
        let mut holes = Vec::new();
        for a in all_assertions() {
            for &kind in &a.operators {
                for level in levels() {
                    if uncheckable(&a, kind, level).is_none()
                        && !self.cells.contains_key(&(a.id.clone(), kind, level))
                    {
                        holes.push(format!("{} on {kind} at {level}", a.id));
                    }
                }
            }
        }
        holes
    }

    /// The page, in Markdown.
    pub fn markdown(&self) -> String {
        let levels = levels();
        let all = all_assertions();
        let mut out = String::new();
        out.push_str(
            "# Coverage of the pages\n\n\
             Generated by `cargo xtask coverage` from specs/ and cases/ (do not edit: a test,\n\
             `the_coverage_document_is_current`, fails when this page is stale). How to read a\n\
             run's own coverage statement: [conformance.md](conformance.md#what-a-run-covered).\n\n\
             An **assertion** is a rule of the pages (an id of specs/split.yaml, join.yaml,\n\
             slice1.yaml or tensor.yaml, checked by the must-reject cases that name it) or an\n\
             execution property (specs/execution-properties.yaml, checked by the valid cases\n\
             whose descriptor exercises it, derived from the descriptor, never tagged by hand).\n\n",
        );
        let with_case = |a: &Assertion| {
            (a.operators.iter()).any(|&k| self.cases.contains_key(&(a.id.clone(), k)))
        };
        let rules: Vec<&Assertion> = all.iter().filter(|a| a.rule).collect();
        let properties: Vec<&Assertion> = all.iter().filter(|a| !a.rule).collect();
        let places: usize = (all.iter())
            .map(|a| {
                (a.operators.iter())
                    .map(|&k| {
                        (levels.iter())
                            .filter(|&&l| uncheckable(a, k, l).is_none())
                            .count()
                    })
                    .sum::<usize>()
            })
            .sum();
        let holes = self.holes();
        let _ = writeln!(
            out,
            "**Breadth**: {} of {} assertions have a case ({} of {} rules, {} of {} execution \
             properties), from {} cases. Of the {places} places (assertion, operator, level) \
             where an assertion can be checked, {} have a case.\n",
            all.iter().filter(|a| with_case(a)).count(),
            all.len(),
            rules.iter().filter(|a| with_case(a)).count(),
            rules.len(),
            properties.iter().filter(|a| with_case(a)).count(),
            properties.len(),
            self.total_cases,
            places - holes.len(),
        );
        let mut depths: Vec<usize> = (all.iter())
            .map(|a| {
                (a.operators.iter())
                    .filter_map(|&k| self.cases.get(&(a.id.clone(), k)))
                    .map(|c| c.0)
                    .sum()
            })
            .collect();
        depths.sort_unstable();
        if let (Some(min), Some(max)) = (depths.first(), depths.last()) {
            let _ = writeln!(
                out,
                "**Depth**: cases per assertion, fewest {min}, median {}, most {max}; per level, \
                 data type and rank in the tables below.\n",
                depths[depths.len() / 2]
            );
        }
        let level_names: Vec<String> = levels.iter().map(|l| l.to_string()).collect();
        let _ = writeln!(
            out,
            "Each row is an assertion on one operator; a level column counts the cases that \
             check it on a device at that level (the levels where an operator or a table row \
             begins: {}; a case runs alike at the levels up to the next), `-` where it cannot \
             be checked there (the reasons are listed after the tables). *data types* and \
             *ranks* are those of its cases.\n",
            level_names.join(", ")
        );
        for (title, list) in [("Rules", &rules), ("Execution properties", &properties)] {
            let _ = writeln!(out, "## {title}\n");
            let _ = writeln!(
                out,
                "| assertion | operator | cases | {} | data types | ranks |",
                level_names.join(" | ")
            );
            let _ = writeln!(
                out,
                "|---|---|---:|{}---|---|",
                "---:|".repeat(levels.len())
            );
            for a in list.iter() {
                for &kind in &a.operators {
                    let total = self.cases.get(&(a.id.clone(), kind)).map_or(0, |c| c.0);
                    let mut types = BTreeSet::new();
                    let mut ranks = BTreeSet::new();
                    let mut cells = Vec::new();
                    for &level in &levels {
                        let cell = self.cells.get(&(a.id.clone(), kind, level));
                        if let Some(cell) = cell {
                            types.extend(cell.data_types.iter().copied());
                            ranks.extend(cell.ranks.iter().copied());
                        }
                        cells.push(match (cell, uncheckable(a, kind, level)) {
                            (Some(cell), _) => cell.cases.to_string(),
                            (None, Some(_)) => "-".to_string(),
                            (None, None) => "**0**".to_string(),
                        });
                    }
                    let _ = writeln!(
                        out,
                        "| `{}` | {kind} | {total} | {} | {} | {} |",
                        a.id,
                        cells.join(" | "),
                        type_list(&types),
                        rank_list(&ranks)
                    );
                }
            }
            out.push('\n');
        }
        out.push_str("## Where an assertion cannot be checked\n\n");
        let mut reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for a in &all {
            for &kind in &a.operators {
                for &level in &levels {
                    if let Some(reason) = uncheckable(a, kind, level) {
                        reasons
                            .entry(reason)
                            .or_default()
                            .push(format!("`{}` on {kind} at {level}", a.id));
                    }
                }
            }
        }
        for (reason, places) in &reasons {
            let _ = writeln!(out, "- {reason}: {}", places.join(", "));
        }
        out.push_str("\n## Where the cases are\n\n");
        out.push_str("| assertion | operator | files (cases) |\n|---|---|---|\n");
        for a in &all {
            for &kind in &a.operators {
                if let Some((_, files)) = self.cases.get(&(a.id.clone(), kind)) {
                    let files: Vec<String> =
                        files.iter().map(|(f, n)| format!("{f} ({n})")).collect();
                    let _ = writeln!(out, "| `{}` | {kind} | {} |", a.id, files.join(", "));
                }
            }
        }
        if !holes.is_empty() {
            out.push_str("\n## Holes\n\n");
            for hole in &holes {
                let _ = writeln!(out, "- {hole}");
            }
        }
        out
    }
}

fn type_list(types: &BTreeSet<DataType>) -> String {
    if types.len() == DataType::ALL.len() {
        return "all 11".to_string();
    }
    let names: Vec<&str> = types.iter().map(|t| t.name()).collect();
    names.join(", ")
}

fn rank_list(ranks: &BTreeSet<usize>) -> String {
    let values: Vec<usize> = ranks.iter().copied().collect();
    match (values.first(), values.last()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) if b - a + 1 == values.len() => format!("{a}-{b}"),
        _ => values
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    }
}
