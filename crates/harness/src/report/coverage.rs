//! What a run covered: each assertion of the pages (a rule id of specs/, or an execution
//! property of specs/execution-properties.yaml) with what became of the cases that check it
//! (`corpus::assertions` derives them from each case's descriptor), and the data types,
//! ranks, operators and levels that ran. The session records every case's own result here
//! as its step finishes; the summary line, the JSON and JUnit reports and the matrix state
//! it; `--require-coverage` is checked against it (`missed`).

use crate::corpus::Case;
use crate::corpus::assertions::{exercised, rank};
use crate::run::Status;
use dmlcts_oracle::spec;
use dmlcts_tensor::{DataType, FeatureLevel, OperatorKind};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The most assertions of one kind and state the summary line names; beyond, it counts them
/// (the JSON report names every one).
const MAX_NAMED: usize = 5;

/// How far a case got, for the statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The backend ran it (whatever the verdict).
    Ran,
    /// The backend could not run it: a type it does not claim, `unsupported`, too large.
    Unsupported,
    /// Outside the levels the run offers (or the backend is unavailable): the run's choice.
    OutsideLevels,
}

/// What became of one assertion in a run, the first that applies in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// A case that checks it failed.
    Failed,
    /// A case that checks it ran and passed.
    Checked,
    /// Its cases failed as the expectations file says: checked, known to differ.
    KnownToDiffer,
    /// Its must-reject cases were accepted under the backend's validation profile.
    NotJudged,
    /// Every case that checks it was skipped by the backend (unsupported, a type not claimed).
    Unsupported,
    /// Every case that checks it lies outside the levels the run offers.
    OutsideLevels,
    /// No case of this run checks it (none selected).
    NotRun,
}

impl State {
    /// The word the reports use.
    pub fn name(self) -> &'static str {
        match self {
            State::Failed => "failed",
            State::Checked => "checked",
            State::KnownToDiffer => "known to differ",
            State::NotJudged => "not judged",
            State::Unsupported => "unsupported",
            State::OutsideLevels => "outside the levels offered",
            State::NotRun => "not in this run",
        }
    }

    /// Whether it meets a `--require-coverage` floor: checked, or checked and known to differ.
    pub fn meets_floor(self) -> bool {
        matches!(self, State::Checked | State::KnownToDiffer)
    }
}

/// The cases of one assertion, by what became of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    pub expected_failures: usize,
    pub informational: usize,
    pub unsupported: usize,
    pub outside_levels: usize,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.passed = self.passed.saturating_add(other.passed);
        self.failed = self.failed.saturating_add(other.failed);
        self.expected_failures = (self.expected_failures).saturating_add(other.expected_failures);
        self.informational = self.informational.saturating_add(other.informational);
        self.unsupported = self.unsupported.saturating_add(other.unsupported);
        self.outside_levels = self.outside_levels.saturating_add(other.outside_levels);
    }

    pub fn state(&self) -> State {
        if self.failed > 0 {
            State::Failed
        } else if self.passed > 0 {
            State::Checked
        } else if self.expected_failures > 0 {
            State::KnownToDiffer
        } else if self.informational > 0 {
            State::NotJudged
        } else if self.unsupported > 0 {
            State::Unsupported
        } else if self.outside_levels > 0 {
            State::OutsideLevels
        } else {
            State::NotRun
        }
    }
}

/// One assertion of the pages: its id, whether it is a rule, the operators it applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assertion {
    pub id: String,
    pub rule: bool,
    pub operators: Vec<OperatorKind>,
    /// For a data type's bit patterns, the type.
    pub data_type: Option<DataType>,
}

/// Every assertion: the rules of specs/ in their files' order, then the execution properties.
pub(crate) fn all_assertions() -> Vec<Assertion> {
    let rules = spec::all_constraints().into_iter().map(|c| Assertion {
        id: c.id.clone(),
        rule: true,
        operators: spec::rule_operators(&c.id),
        data_type: None,
    });
    let properties = spec::execution_properties().iter().map(|p| Assertion {
        id: p.id.clone(),
        rule: false,
        operators: (OperatorKind::ALL.into_iter())
            .filter(|&k| p.applies_to(k))
            .collect(),
        data_type: p.data_type(),
    });
    rules.chain(properties).collect()
}

/// A run's coverage statement, filled as its cases finish.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Every assertion's tally, by id (all of them, those no case reached too).
    pub tallies: BTreeMap<String, Tally>,
    /// Per operator: how many of its cases passed (or failed as expected).
    pub operators_checked: BTreeMap<OperatorKind, usize>,
    /// The operators of the cases selected.
    pub operators_run: BTreeSet<OperatorKind>,
    /// The ranks of the valid cases that executed and passed (or failed as expected).
    pub ranks_checked: BTreeSet<usize>,
    /// The levels cases ran at.
    pub levels_run: BTreeSet<FeatureLevel>,
    /// The validation profile, for the words on what it did not judge.
    pub profile: String,
}

impl Coverage {
    pub fn new(profile: &str) -> Coverage {
        Coverage {
            tallies: (all_assertions().into_iter())
                .map(|a| (a.id, Tally::default()))
                .collect(),
            profile: profile.to_string(),
            ..Coverage::default()
        }
    }

    /// One case's own result (the expectations file's word applied), and how far it got.
    pub fn record(
        &mut self,
        case: &Case,
        status: Status,
        reach: Reach,
        run_level: Option<FeatureLevel>,
    ) {
        let kind = case.op.kind();
        self.operators_run.insert(kind);
        let checked = matches!(status, Status::Passed | Status::ExpectedFailure);
        if reach == Reach::Ran {
            self.levels_run.extend(run_level);
        }
        if checked && reach == Reach::Ran {
            *self.operators_checked.entry(kind).or_default() += 1;
            if case.expect == crate::corpus::Expectation::Accept {
                self.ranks_checked.insert(rank(case));
            }
        }
        // The assertions by reference: every id is already a key after the first case that
        // checks it, so a case allocates no id.
        let rule = match &case.expect {
            crate::corpus::Expectation::Reject { rule } => Some(rule.as_str()),
            crate::corpus::Expectation::Accept => None,
        };
        let properties = match rule {
            Some(_) => Vec::new(),
            None => exercised(&case.op),
        };
        for id in rule.into_iter().chain(properties) {
            let tally = match self.tallies.get_mut(id) {
                Some(tally) => tally,
                None => self.tallies.entry(id.to_string()).or_default(),
            };
            match (reach, status) {
                (Reach::OutsideLevels, _) => tally.outside_levels += 1,
                (_, Status::Skipped) | (Reach::Unsupported, _) => tally.unsupported += 1,
                (_, Status::Passed) => tally.passed += 1,
                (_, Status::Failed) => tally.failed += 1,
                (_, Status::ExpectedFailure) => tally.expected_failures += 1,
                (_, Status::Informational) => tally.informational += 1,
            }
        }
    }

    /// `count` failures recorded for assertion `id` that turned out known (a campaign's
    /// known differences, classified after the step): checked, known to differ.
    pub fn known_to_differ(&mut self, id: &str, count: usize) {
        if let Some(tally) = self.tallies.get_mut(id) {
            let moved = count.min(tally.failed);
            tally.failed -= moved;
            tally.expected_failures += moved;
        }
    }

    /// Adds what another run (another job, another shard) covered.
    pub fn merge(&mut self, other: &Coverage) {
        for (id, tally) in &other.tallies {
            self.tallies.entry(id.clone()).or_default().add(tally);
        }
        for (kind, n) in &other.operators_checked {
            let mine = self.operators_checked.entry(*kind).or_default();
            *mine = mine.saturating_add(*n);
        }
        self.operators_run
            .extend(other.operators_run.iter().copied());
        self.ranks_checked
            .extend(other.ranks_checked.iter().copied());
        self.levels_run.extend(other.levels_run.iter().copied());
        if self.profile.is_empty() {
            self.profile = other.profile.clone();
        }
    }

    /// A coverage read back from its JSON (`json`), as a shard report holds it: only known
    /// assertions, operators and levels are kept, ranks up to 64, counts as given; None when
    /// it is not such an object. The profile is cut to 200 characters.
    pub fn from_json(value: &serde_json::Value) -> Option<Coverage> {
        let object = value.as_object()?;
        let profile = object.get("profile")?.as_str()?;
        let mut coverage = Coverage::new(&profile.chars().take(200).collect::<String>());
        for entry in object.get("assertions")?.as_array()? {
            let id = entry.get("id").and_then(|v| v.as_str()).unwrap_or_default();
            let Some(tally) = coverage.tallies.get_mut(id) else {
                continue;
            };
            let n = |field: &str| {
                let n = entry.get(field).and_then(serde_json::Value::as_u64);
                usize::try_from(n.unwrap_or(0)).unwrap_or(usize::MAX)
            };
            tally.passed = n("passed");
            tally.failed = n("failed");
            tally.expected_failures = n("expected_failures");
            tally.informational = n("informational");
            tally.unsupported = n("unsupported");
            tally.outside_levels = n("outside_levels");
        }
        let words = |field: &str| -> Vec<String> {
            (object
                .get(field)
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten())
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
        };
        let operators = |field: &str| -> Vec<OperatorKind> {
            (words(field).iter())
                .filter_map(|w| OperatorKind::from_name(w))
                .collect()
        };
        coverage.operators_run = operators("operators_run").into_iter().collect();
        coverage.operators_checked = (operators("operators_checked").into_iter())
            .map(|k| (k, 1))
            .collect();
        coverage.levels_run = (words("levels_run").iter())
            .filter_map(|w| FeatureLevel::parse(w))
            .collect();
        coverage.ranks_checked = (object.get("ranks_checked").and_then(|v| v.as_array()))
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_u64)
            .filter(|&r| r <= 64)
            .map(|r| r as usize)
            .collect();
        Some(coverage)
    }

    pub fn state(&self, id: &str) -> State {
        self.tallies.get(id).map_or(State::NotRun, Tally::state)
    }

    /// The one line of the human summary: what was checked, then what was not and why.
    pub fn line(&self) -> String {
        let assertions = all_assertions();
        let (rules, properties): (Vec<_>, Vec<_>) = assertions.iter().partition(|a| a.rule);
        let checked = |list: &[&Assertion]| {
            (list.iter())
                .filter(|a| matches!(self.state(&a.id), State::Checked | State::KnownToDiffer))
                .count()
        };
        let types: Vec<&Assertion> = properties
            .iter()
            .copied()
            .filter(|a| a.data_type.is_some())
            .collect();
        let mut line = format!(
            "checked: {} of {} rules, {} of {} execution properties, {} of {} data types",
            checked(&rules),
            rules.len(),
            checked(&properties),
            properties.len(),
            checked(&types),
            types.len(),
        );
        if !self.ranks_checked.is_empty() {
            let _ = write!(line, " at ranks {}", ranges(&self.ranks_checked));
        }
        if !self.levels_run.is_empty() {
            let word = if self.levels_run.len() == 1 {
                "level"
            } else {
                "levels"
            };
            let _ = write!(line, ", at {word} {}", level_ranges(&self.levels_run));
        }
        let mut not = Vec::new();
        for kind in OperatorKind::ALL {
            if !self.operators_checked.contains_key(&kind) {
                not.push(format!("nothing of {kind}"));
            }
        }
        for state in [
            State::Failed,
            State::NotJudged,
            State::Unsupported,
            State::OutsideLevels,
            State::NotRun,
        ] {
            let of = |list: &[&Assertion]| -> Vec<String> {
                (list.iter())
                    .filter(|a| self.state(&a.id) == state)
                    .map(|a| a.id.clone())
                    .collect()
            };
            let why = match state {
                State::NotJudged => format!("not judged, {} profile", self.profile),
                other => other.name().to_string(),
            };
            let rules = of(&rules);
            if !rules.is_empty() && rules.len() <= MAX_NAMED {
                not.push(format!("{} ({why})", rules.join(", ")));
            } else if !rules.is_empty() {
                not.push(format!("{} ({why})", count(rules.len(), "rule", "rules")));
            }
            let types: Vec<String> = (of(&types).iter())
                .map(|id| id.trim_start_matches("bits.").to_string())
                .collect();
            if !types.is_empty() {
                not.push(format!("{} ({why})", types.join("/")));
            }
            let others: Vec<&Assertion> = properties
                .iter()
                .copied()
                .filter(|a| a.data_type.is_none())
                .collect();
            let others = of(&others);
            if others.len() > MAX_NAMED {
                not.push(format!(
                    "{} ({why})",
                    count(others.len(), "execution property", "execution properties")
                ));
            } else if !others.is_empty() {
                not.push(format!("{} ({why})", others.join(", ")));
            }
        }
        if !not.is_empty() {
            let _ = write!(line, "; not checked: {}", not.join(", "));
        }
        // Counted as checked above: their cases ran and failed as the expectations say.
        let differ: Vec<&str> = (assertions.iter())
            .filter(|a| self.state(&a.id) == State::KnownToDiffer)
            .map(|a| a.id.as_str())
            .collect();
        if differ.len() > MAX_NAMED {
            let _ = write!(
                line,
                "; of those, {} known to differ",
                count(differ.len(), "assertion", "assertions")
            );
        } else if !differ.is_empty() {
            let _ = write!(line, "; of those, known to differ: {}", differ.join(", "));
        }
        line
    }

    /// The assertions of `wanted` (ids, `all`, or a prefix ending in `*`) this run did not
    /// check, each with its state: empty when the floor is met.
    pub fn missed(&self, wanted: &[String]) -> Vec<(String, State)> {
        select(wanted)
            .into_iter()
            .map(|id| {
                let state = self.state(&id);
                (id, state)
            })
            .filter(|(_, state)| !state.meets_floor())
            .collect()
    }

    /// The JSON report's `coverage` object.
    pub fn json(&self) -> serde_json::Value {
        let assertions: Vec<serde_json::Value> = all_assertions()
            .iter()
            .map(|a| {
                let t = self.tallies.get(&a.id).cloned().unwrap_or_default();
                serde_json::json!({
                    "id": a.id,
                    "kind": if a.rule { "rule" } else { "execution" },
                    "operators": a.operators.iter().map(|k| k.name()).collect::<Vec<_>>(),
                    "state": t.state().name(),
                    "passed": t.passed,
                    "failed": t.failed,
                    "expected_failures": t.expected_failures,
                    "informational": t.informational,
                    "unsupported": t.unsupported,
                    "outside_levels": t.outside_levels,
                })
            })
            .collect();
        let checked_types: Vec<&str> = (DataType::ALL.iter())
            .filter(|&&dt| self.state(crate::corpus::assertions::bits_id(dt)) == State::Checked)
            .map(|dt| dt.name())
            .collect();
        serde_json::json!({
            "line": self.line(),
            "profile": self.profile,
            "data_types_checked": checked_types,
            "ranks_checked": self.ranks_checked,
            "operators_run": self.operators_run.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "operators_checked": self.operators_checked.keys().map(|k| k.name()).collect::<Vec<_>>(),
            "levels_run": self.levels_run.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
            "assertions": assertions,
        })
    }

    /// The JUnit report's properties: the line, then one per assertion (`coverage.ID`: its
    /// state).
    pub fn junit_properties(&self) -> Vec<(String, String)> {
        let mut properties = vec![("coverage".to_string(), self.line())];
        for a in all_assertions() {
            let state = self.state(&a.id);
            properties.push((format!("coverage.{}", a.id), state.name().to_string()));
        }
        properties
    }
}

/// The assertion ids `wanted` names: each id, `all`, or a prefix ending in `*` (`bits.*`).
pub fn select(wanted: &[String]) -> Vec<String> {
    let all = all_assertions();
    let mut ids = Vec::new();
    for w in wanted {
        for a in &all {
            let hit = match w.strip_suffix('*') {
                _ if w == "all" => true,
                Some(prefix) => a.id.starts_with(prefix),
                None => a.id == *w,
            };
            if hit && !ids.contains(&a.id) {
                ids.push(a.id.clone());
            }
        }
    }
    ids
}

/// The words of `wanted` that name no assertion (`all`, an id, or a prefix with `*`).
pub fn unknown(wanted: &[String]) -> Vec<String> {
    (wanted.iter())
        .filter(|w| select(std::slice::from_ref(w)).is_empty())
        .cloned()
        .collect()
}

/// Levels, consecutive ones (in `FeatureLevel::ALL`) as `1_0 to 3_0`.
fn level_ranges(levels: &BTreeSet<FeatureLevel>) -> String {
    let index = |l: &FeatureLevel| FeatureLevel::ALL.iter().position(|a| a == l);
    let positions: BTreeSet<usize> = levels.iter().filter_map(index).collect();
    let mut out = Vec::new();
    let mut iter = positions.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end = iter.next().unwrap_or(end);
        }
        let (a, b) = (FeatureLevel::ALL[start], FeatureLevel::ALL[end]);
        out.push(match end - start {
            0 => a.to_string(),
            1 => format!("{a}, {b}"),
            _ => format!("{a} to {b}"),
        });
    }
    out.join(", ")
}

/// `1-5`, `4, 6-8`.
fn ranges(values: &BTreeSet<usize>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = values.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end = iter.next().unwrap_or(end);
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(", ")
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::assertions::assertions;

    #[test]
    fn a_coverage_read_back_from_its_json_is_the_same_and_merging_sums_it() {
        let case = crate::Corpus::embedded().cases.remove(0);
        let mut coverage = Coverage::new("strict");
        coverage.record(&case, Status::Passed, Reach::Ran, Some(FeatureLevel::L4_1));
        let back = Coverage::from_json(&coverage.json()).unwrap();
        assert_eq!(back, coverage);
        let mut twice = back.clone();
        twice.merge(&coverage);
        let id = &assertions(&case)[0];
        assert_eq!(twice.tallies[id].passed, 2);
        assert_eq!(twice.line(), coverage.line());
        // What a hostile file may hold: unknown ids, levels and huge ranks are dropped.
        let hostile = serde_json::json!({
            "profile": "strict",
            "assertions": [{"id": "no.such", "passed": 3}],
            "levels_run": ["9_9"],
            "ranks_checked": [1_000_000],
        });
        assert_eq!(Coverage::from_json(&hostile), Some(Coverage::new("strict")));
        assert_eq!(Coverage::from_json(&serde_json::json!([])), None);
    }

    #[test]
    fn an_assertion_known_to_differ_counts_as_checked_and_is_named_as_differing() {
        let corpus = crate::Corpus::embedded();
        let level = Some(FeatureLevel::L4_1);
        let mut all_passed = Coverage::new("strict");
        for case in &corpus.cases {
            all_passed.record(case, Status::Passed, Reach::Ran, level);
        }
        let rule = "tensor.sizes_nonzero";
        let mut differs = Coverage::new("strict");
        for case in &corpus.cases {
            let status = if assertions(case).iter().any(|a| a == rule) {
                Status::ExpectedFailure
            } else {
                Status::Passed
            };
            differs.record(case, status, Reach::Ran, level);
        }
        assert_eq!(differs.state(rule), State::KnownToDiffer);
        assert_eq!(
            differs.line(),
            format!("{}; of those, known to differ: {rule}", all_passed.line())
        );
    }

    #[test]
    fn consecutive_levels_are_one_range() {
        let levels: BTreeSet<FeatureLevel> = [
            FeatureLevel::L1_0,
            FeatureLevel::L2_0,
            FeatureLevel::L2_1,
            FeatureLevel::L3_0,
            FeatureLevel::L4_1,
            FeatureLevel::L6_3,
            FeatureLevel::L6_4,
        ]
        .into_iter()
        .collect();
        assert_eq!(level_ranges(&levels), "1_0 to 3_0, 4_1, 6_3, 6_4");
    }

    #[test]
    fn ranges_join_neighbours() {
        let set: BTreeSet<usize> = [1, 2, 3, 5, 7, 8].into_iter().collect();
        assert_eq!(ranges(&set), "1-3, 5, 7-8");
    }

    #[test]
    fn a_failure_outranks_a_pass_and_a_pass_outranks_every_skip() {
        let mut t = Tally {
            unsupported: 3,
            outside_levels: 2,
            informational: 1,
            ..Tally::default()
        };
        assert_eq!(t.state(), State::NotJudged);
        t.passed = 1;
        assert_eq!(t.state(), State::Checked);
        t.failed = 1;
        assert_eq!(t.state(), State::Failed);
    }

    #[test]
    fn selections_take_ids_prefixes_and_all_and_name_the_unknown() {
        assert_eq!(
            select(&["bits.FLOAT*".to_string(), "split.copy".to_string()]),
            ["bits.FLOAT64", "bits.FLOAT32", "bits.FLOAT16", "split.copy"]
        );
        assert_eq!(select(&["all".to_string()]).len(), all_assertions().len());
        assert_eq!(
            unknown(&["split.copy".to_string(), "split.nope".to_string()]),
            ["split.nope"]
        );
    }
}
