//! How a campaign's failures are bucketed, shared by its jobs: a failure an expectations
//! entry's predicate describes is known; an acceptance of a must-reject case is counted in the
//! bucket of its operator, rule (and table row), which shrinking cannot change; another is
//! counted in the bucket whose minimal case's shape it fits, or shrunk (within the shrink
//! time) and bucketed by the signature of its minimal case. Shrinking stops as soon as the
//! case fits a bucket already found (a cheap check at each step: going on would only find
//! that bucket again), and its time is charged to the bucket it ends in. An acceptance the
//! backend does not enforce by design is informational, bucketed as generated. A new
//! bucket's case is saved as soon as it is found.

use crate::cases::case_seed;
use crate::check::{CheckFailure, Checked, checked};
use crate::options::CampaignOptions;
use crate::outcome::{Bucket, BucketStatus};
use crate::save::{save_bucket, slug};
use crate::shrink;
use crate::signature::{CheckKind, element_class, expected_rule, features, signature};
use crate::strategies::random_inputs;
use dmlcts_harness::Case;
use dmlcts_harness::expectations::{KnownDifference, NotEnforced, predicate};
use dmlcts_harness::session::{Session, SessionOptions};
use dmlcts_tensor::{Backend, OperatorKind};
use proptest::strategy::ValueTree;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Structural simplifications a re-shrink tries before walking the value tree, each a check:
/// most failures that do not fit a bucket as generated fit one once packed or retyped.
const CHEAP_CHECKS: usize = 8;

/// How a failure is told apart from others before shrinking.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Class {
    /// A known difference described by a predicate.
    KnownByPredicate(usize),
    Unknown,
}

/// A failure's identity for shrinking: a candidate must fail the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Verdict {
    kind: CheckKind,
    rule: Option<String>,
    class: Class,
}

/// What shrinking took: failures shrunk, runs of a case, time. A bucket's shrinking, first
/// and later, adds up in it (one budget per bucket).
#[derive(Clone, Copy, Debug, Default)]
struct Effort {
    shrinks: u64,
    checks: u64,
    time: Duration,
}

impl Effort {
    fn of(bucket: &Bucket) -> Effort {
        Effort {
            shrinks: bucket.shrinks,
            checks: bucket.shrink_checks,
            time: bucket.shrink_time,
        }
    }

    fn add_to(self, bucket: &mut Bucket) {
        bucket.shrinks += self.shrinks;
        bucket.shrink_checks += self.checks;
        bucket.shrink_time += self.time;
    }
}

/// The buckets so far and the shapes that fit them, behind the campaign's lock.
pub(crate) struct State {
    pub(crate) buckets: HashMap<String, Bucket>,
    /// What each shrunk bucket's minimal case needs, to bucket later hits without shrinking.
    shapes: Vec<Shape>,
    pub(crate) unclassified: u64,
}

/// The needs of a bucket's minimal case: a failure of the same kind, operator and rule whose
/// case (as generated) has all these features, and the element size class where the
/// minimal case needed one (e4 is where normalizing leaves a case that needs none), is
/// counted in that bucket without shrinking. A different cause that happens to show the
/// same features is counted there too, until a hit without them is shrunk on its own.
struct Shape {
    id: String,
    kind: CheckKind,
    op: OperatorKind,
    rule: Option<String>,
    element_class: String,
    needs: Vec<&'static str>,
}

impl Shape {
    fn of(id: &str, verdict: &Verdict, minimal: &Case) -> Shape {
        Shape {
            id: id.to_string(),
            kind: verdict.kind,
            op: minimal.op.kind(),
            rule: verdict.rule.clone(),
            element_class: element_class(&minimal.op),
            needs: features(&minimal.op),
        }
    }

    fn fits(&self, verdict: &Verdict, case: &Case) -> bool {
        let features = features(&case.op);
        self.kind == verdict.kind
            && self.op == case.op.kind()
            && self.rule == verdict.rule
            && (self.element_class == "e4" || self.element_class == element_class(&case.op))
            && self.needs.iter().all(|n| features.contains(n))
    }
}

/// The campaign's buckets, and the expectations entries that apply to its backend.
pub(crate) struct Bucketing<'a> {
    options: &'a CampaignOptions,
    known: Vec<&'a KnownDifference>,
    not_enforced: Vec<&'a NotEnforced>,
    /// Their rules, for the runner.
    pub(crate) not_enforced_rules: Vec<String>,
    pub(crate) state: Mutex<State>,
    /// New buckets so far (read without the lock).
    pub(crate) new_buckets: AtomicUsize,
}

impl<'a> Bucketing<'a> {
    /// No buckets yet; `name` is the backend's own name, which expectations are keyed by.
    pub(crate) fn new(options: &'a CampaignOptions, name: &str) -> Bucketing<'a> {
        let subject = dmlcts_harness::expectations::Subject {
            backend: name.to_string(),
            device: options.device.clone(),
            implementation: options.implementation.clone(),
        };
        let not_enforced: Vec<&NotEnforced> = options
            .not_enforced
            .iter()
            .filter(|n| n.applies(&subject))
            .collect();
        Bucketing {
            options,
            known: options
                .known_differences
                .iter()
                .filter(|k| k.applies(&subject))
                .collect(),
            not_enforced_rules: not_enforced
                .iter()
                .flat_map(|n| n.rules.iter().cloned())
                .collect(),
            not_enforced,
            state: Mutex::new(State {
                buckets: HashMap::new(),
                shapes: Vec::new(),
                unclassified: 0,
            }),
            new_buckets: AtomicUsize::new(0),
        }
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn class(&self, failure: &CheckFailure) -> Class {
        let position = self.known.iter().position(|k| {
            k.check.as_deref().is_none_or(|c| c == failure.kind.name())
                && k.predicate
                    .as_deref()
                    .and_then(predicate)
                    .is_some_and(|p| (p.holds)(&failure.case.op))
        });
        match position {
            Some(i) => Class::KnownByPredicate(i),
            None => Class::Unknown,
        }
    }

    fn verdict(&self, failure: &CheckFailure) -> Verdict {
        Verdict {
            kind: failure.kind,
            rule: expected_rule(&failure.case).map(str::to_string),
            class: self.class(failure),
        }
    }

    /// The bucket a failing case fits, if any (the one whose shape needs the most).
    fn fitting(&self, verdict: &Verdict, case: &Case) -> Option<String> {
        (self.lock().shapes.iter())
            .filter(|shape| shape.fits(verdict, case))
            .max_by_key(|shape| shape.needs.len())
            .map(|shape| shape.id.clone())
    }

    /// Shrinks a failure within the shrink time, keeping its verdict; `stop_at_fit`: stop as
    /// soon as the case fits a bucket already found. Whether it failed again, and the effort.
    fn shrink(
        &self,
        backend: &dyn Backend,
        tree: &mut dyn ValueTree<Value = Case>,
        failure: CheckFailure,
        verdict: &Verdict,
        stop_at_fit: bool,
    ) -> (CheckFailure, bool, Effort) {
        let start = Instant::now();
        let budget = self.options.shrink_time;
        // A failure on another data set is shrunk with that data set's seed.
        let data_seed = failure.data_seed;
        let checks = std::cell::Cell::new(0u64);
        let effort = |checks: &std::cell::Cell<u64>| Effort {
            shrinks: 1,
            checks: checks.get(),
            time: start.elapsed(),
        };
        let session = Session::new(
            std::sync::Arc::new(backend),
            None,
            SessionOptions {
                not_enforced: self.not_enforced_rules.clone(),
                ..SessionOptions::default()
            },
        );
        // A sibling group shrinks as a group: a candidate that is not one (its shrunk `A`
        // allowed no sibling) does not stand for it.
        let group = failure.case.is_group();
        let still_fails = |case: &Case| {
            if case.is_group() != group {
                return None;
            }
            checks.set(checks.get() + 1);
            let mut case = case.clone();
            if let Some(seed) = data_seed {
                case.inputs = random_inputs(&case.op, seed);
            }
            match checked(&session, &case, &[]).0 {
                Err(mut f) if self.verdict(&f) == *verdict => {
                    f.data_seed = data_seed;
                    Some(f)
                }
                _ => None,
            }
        };
        let enough =
            |case: &Case, _: &CheckFailure| stop_at_fit && self.fitting(verdict, case).is_some();
        // A failure that does not come back (a hang of a shared machine, a flaky backend)
        // cannot be shrunk: it is kept as found, and says so. No shrink time: no re-run.
        if budget.is_zero() {
            return (failure, true, Effort::default());
        }
        let Some(again) = still_fails(&tree.current()) else {
            return (failure, false, effort(&checks));
        };
        let deadline = start + budget;
        let (case, again) = match stop_at_fit {
            true => shrink::normalize(
                again.case.as_ref().clone(),
                again,
                deadline,
                CHEAP_CHECKS,
                still_fails,
                enough,
            ),
            false => (again.case.as_ref().clone(), again),
        };
        let (minimal, failure) = shrink::shrink(
            tree,
            case,
            again,
            start + budget * 3 / 5,
            still_fails,
            enough,
        );
        let (_, failure) =
            shrink::normalize(minimal, failure, deadline, usize::MAX, still_fails, enough);
        (failure, true, effort(&checks))
    }

    /// Buckets a failure; true when a known difference's predicate describes it (counted
    /// known, not shrunk).
    pub(crate) fn handle(
        &self,
        backend: &dyn Backend,
        tree: &mut dyn ValueTree<Value = Case>,
        index: u64,
        failure: CheckFailure,
    ) -> bool {
        let verdict = self.verdict(&failure);
        let (id, status) = match &verdict.class {
            Class::KnownByPredicate(i) => {
                let known = self.known[*i];
                let id = format!("known.{}", slug(&known.name));
                let status = BucketStatus::Known {
                    name: known.name.clone(),
                    reason: known.reason.clone(),
                };
                (id, status)
            }
            Class::Unknown => {
                let mut state = self.lock();
                // An acceptance's bucket is its operator, rule and row: known before shrinking.
                let fitting = if verdict.kind == CheckKind::Acceptance {
                    let id = signature(CheckKind::Acceptance, &failure.case);
                    state.buckets.contains_key(&id).then_some(id)
                } else {
                    (state.shapes.iter())
                        .filter(|shape| shape.fits(&verdict, &failure.case))
                        .max_by_key(|shape| shape.needs.len())
                        .map(|shape| shape.id.clone())
                };
                if let Some(id) = fitting {
                    let known = is_known(&state, &id);
                    count_hit(&mut state, &id, index);
                    return known;
                }
                let new = state
                    .buckets
                    .values()
                    .filter(|b| b.status == BucketStatus::New)
                    .count();
                if new >= self.options.max_findings {
                    state.unclassified += 1;
                    return false;
                }
                // Shrinking may reach a bucket only where one of the same check, operator and
                // rule exists.
                let op = failure.case.op.kind();
                let could_fit = (state.shapes.iter())
                    .any(|s| s.kind == verdict.kind && s.op == op && s.rule == verdict.rule);
                drop(state);
                let (minimal, reproduced, spent) =
                    self.shrink(backend, tree, failure, &verdict, could_fit);
                // Stopped where it fits a bucket: counted there, its time charged to it.
                if let Some(id) = self.fitting(&verdict, &minimal.case) {
                    let mut state = self.lock();
                    let known = is_known(&state, &id);
                    count_hit(&mut state, &id, index);
                    if let Some(bucket) = state.buckets.get_mut(&id) {
                        spent.add_to(bucket);
                    }
                    return known;
                }
                let id = signature(minimal.kind, &minimal.case);
                let status = match self
                    .known
                    .iter()
                    .find(|k| k.signature.as_deref() == Some(id.as_str()))
                {
                    Some(k) => BucketStatus::Known {
                        name: k.name.clone(),
                        reason: k.reason.clone(),
                    },
                    None => BucketStatus::New,
                };
                let known = matches!(status, BucketStatus::Known { .. });
                let shape = Shape::of(&id, &verdict, &minimal.case);
                self.record(index, &id, status, minimal, reproduced, Some(shape), spent);
                return known;
            }
        };
        // Known by predicate: shrink the first hit only, for its saved case.
        {
            let mut state = self.lock();
            if state.buckets.contains_key(&id) {
                count_hit(&mut state, &id, index);
                return true;
            }
        }
        let (minimal, reproduced, spent) = self.shrink(backend, tree, failure, &verdict, false);
        self.record(index, &id, status, minimal, reproduced, None, spent);
        true
    }

    /// An acceptance the backend's profile (or the expectations file) says is by design:
    /// bucketed by the signature of the case as generated, never shrunk. The reason is the
    /// expectations entry's for the rule, if one names it, else the runner's.
    pub(crate) fn informational(
        &self,
        backend: &dyn Backend,
        index: u64,
        case: Case,
        checked: Checked,
    ) {
        let Checked::Informational { rule, report } = checked else {
            return;
        };
        let reason = match self.not_enforced.iter().find(|n| n.rules.contains(&rule)) {
            Some(entry) => entry.reason.clone(),
            None => format!(
                "accepted; DirectML rejects it: rule {rule} (validation profile {})",
                backend.validation_profile()
            ),
        };
        let id = signature(CheckKind::Acceptance, &case);
        let failure = CheckFailure {
            kind: CheckKind::Acceptance,
            report,
            case: Box::new(case),
            data_seed: None,
        };
        self.record(
            index,
            &id,
            BucketStatus::Informational { reason },
            failure,
            true,
            None,
            Effort::default(),
        );
    }

    /// Adds a hit with its minimal case; the bucket keeps the case of its lowest index. The
    /// shape goes in under the same lock, so no hit can fit a shape whose bucket is missing.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        index: u64,
        id: &str,
        status: BucketStatus,
        failure: CheckFailure,
        reproduced: bool,
        shape: Option<Shape>,
        effort: Effort,
    ) {
        let bucket = Bucket {
            id: id.to_string(),
            status,
            kind: failure.kind,
            count: 1,
            first_index: index,
            first_seed: case_seed(self.options.seed, index),
            report: labelled(
                &without_replay_lines(&failure.report),
                id,
                &failure,
                index,
                self.options.seed,
            ),
            case: *failure.case,
            reproduced,
            saved: None,
            replay: None,
            shrink_time: effort.time,
            shrinks: effort.shrinks,
            shrink_checks: effort.checks,
        };
        let mut state = self.lock();
        state.shapes.extend(shape);
        match state.buckets.get_mut(id) {
            Some(existing) => {
                existing.count += 1;
                if index < existing.first_index {
                    // The new case replaces the old one; what shrinking took so far stays.
                    let (count, before) = (existing.count, Effort::of(existing));
                    *existing = Bucket { count, ..bucket };
                    before.add_to(existing);
                } else {
                    effort.add_to(existing);
                }
            }
            None => {
                let mut bucket = bucket;
                if bucket.status == BucketStatus::New {
                    self.new_buckets.fetch_add(1, Ordering::Relaxed);
                }
                save_bucket(self.options, &mut bucket);
                state.buckets.insert(id.to_string(), bucket);
            }
        }
    }
}

/// Whether the bucket `id` is a known difference's.
fn is_known(state: &State, id: &str) -> bool {
    (state.buckets.get(id)).is_some_and(|b| matches!(b.status, BucketStatus::Known { .. }))
}

fn count_hit(state: &mut State, id: &str, index: u64) {
    if let Some(bucket) = state.buckets.get_mut(id) {
        bucket.count += 1;
        bucket.first_index = bucket.first_index.min(index);
    }
}

/// The report's first line (the runner's `FAIL NAME (FILE:LINE)`, which for a generated case
/// says nothing) as what the case is: its bucket, check, operator, level, and where the
/// campaign made it.
fn labelled(report: &str, id: &str, failure: &CheckFailure, index: u64, seed: u64) -> String {
    let rest = match report.split_once('\n') {
        Some((first, rest))
            if first.starts_with("FAIL ") || first.starts_with("INFORMATIONAL ") =>
        {
            rest
        }
        _ => report,
    };
    let head = if report.starts_with("INFORMATIONAL ") {
        "INFORMATIONAL"
    } else {
        "FAIL"
    };
    format!(
        "{head} {id}: {} check, {} at feature level {} (case {index} of seed {seed})\n{rest}",
        failure.kind.name(),
        failure.case.op.kind(),
        failure.case.feature_level,
    )
}

fn without_replay_lines(report: &str) -> String {
    report
        .lines()
        .filter(|l| !l.trim_start().starts_with("replay:"))
        .collect::<Vec<_>>()
        .join("\n")
}
