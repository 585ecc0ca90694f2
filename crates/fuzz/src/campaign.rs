//! A fuzz campaign: generated cases through the harness's runner (`check::check_case`) for a
//! whole budget of cases or time, on one backend instance per job. Every failure is
//! classified: known (an expectations entry describes it), or bucketed by the signature of its
//! shrunk, normalized minimal case. Acceptances of must-reject cases that break only rules
//! the backend does not enforce (its validation profile, or the expectations file's
//! `not_enforced`) are informational buckets, never failures. A campaign never stops at a
//! failure.
//!
//! Case `i` of a campaign is generated from its own RNG, seeded from the campaign seed and
//! `i` alone, so the same seed gives the same cases whatever the number of jobs; shard `I/N`
//! runs the indices `i` with `i % N == I`, so shards are disjoint and together are the
//! unsharded campaign.

use crate::check::{CheckFailure, Checked, case_strategy, check_case};
use crate::save::save_bucket;
use crate::shrink;
use crate::signature::{CheckKind, element_class, expected_rule, features, signature};
use dmlcts_harness::Case;
use dmlcts_harness::known::{KnownDifference, NotEnforced, predicate};
use dmlcts_tensor::{Backend, OperatorKind};
use proptest::strategy::{BoxedStrategy, Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// What a campaign takes and what it produces (and the names of saved cases), moved to modules
// of their own; also at their former paths here.
pub use crate::options::{CampaignOptions, DEFAULT_MAX_FINDINGS, DEFAULT_SHRINK_TIME, Shard};
pub use crate::outcome::{Bucket, BucketStatus, CampaignOutcome, Progress};
pub use crate::save::slug;

/// The seed of case `index` of a campaign (splitmix64 of both).
pub fn case_seed(seed: u64, index: u64) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    mix(seed ^ mix(index))
}

/// The value tree of case `index`: the same for a seed and index wherever it runs.
pub fn case_tree(
    strategy: &BoxedStrategy<Case>,
    seed: u64,
    index: u64,
) -> Box<dyn ValueTree<Value = Case>> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&case_seed(seed, index).to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    match strategy.new_tree(&mut runner) {
        Ok(tree) => Box::new(tree),
        // The strategies filter nothing, so this cannot happen; a case that says so fails.
        Err(reason) => Box::new(proptest::strategy::Just(crate::strategies::case_for(
            &format!("fuzz.unbuildable: {reason}"),
            dmlcts_tensor::OperatorDesc::Join(dmlcts_tensor::JoinDesc {
                input_tensors: Vec::new(),
                output_tensor: dmlcts_tensor::TensorDesc::packed(
                    dmlcts_tensor::DataType::Uint8,
                    &[1],
                ),
                axis: 0,
            }),
            0,
        ))),
    }
}

/// The case indices a campaign (or shard) runs, in order: for tests and tools.
pub fn case_indices(options: &CampaignOptions) -> impl Iterator<Item = u64> + '_ {
    (0u64..)
        .map(|k| options.shard.index + k * options.shard.count)
        .take_while(|&i| options.cases.is_none_or(|c| i < c))
}

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

struct State {
    buckets: HashMap<String, Bucket>,
    /// What each shrunk bucket's minimal case needs, to bucket later hits without shrinking.
    shapes: Vec<Shape>,
    unclassified: u64,
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

struct Campaign<'a> {
    options: &'a CampaignOptions,
    known: Vec<&'a KnownDifference>,
    not_enforced: Vec<&'a NotEnforced>,
    /// Their rules, for the runner.
    not_enforced_rules: Vec<String>,
    state: Mutex<State>,
    next: AtomicU64,
    cases_run: AtomicU64,
    started: Instant,
}

impl Campaign<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn next_index(&self) -> Option<u64> {
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        let index = self.options.shard.index + k * self.options.shard.count;
        if self.options.cases.is_some_and(|c| index >= c) {
            return None;
        }
        if self
            .options
            .time
            .is_some_and(|t| self.started.elapsed() >= t)
        {
            return None;
        }
        Some(index)
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

    /// Shrinks a failure within the shrink time, keeping its verdict.
    fn shrink(
        &self,
        backend: &dyn Backend,
        tree: &mut dyn ValueTree<Value = Case>,
        failure: CheckFailure,
        verdict: &Verdict,
    ) -> (CheckFailure, bool) {
        let start = Instant::now();
        let budget = self.options.shrink_time;
        let still_fails = |case: &Case| match checked(backend, case, &self.not_enforced_rules) {
            Err(f) if self.verdict(&f) == *verdict => Some(f),
            _ => None,
        };
        // A failure that does not come back (a hang of a shared machine, a flaky backend)
        // cannot be shrunk: it is kept as found, and says so. No shrink time: no re-run.
        if budget.is_zero() {
            return (failure, true);
        }
        if still_fails(&tree.current()).is_none() {
            return (failure, false);
        }
        let (minimal, failure) = shrink::shrink(tree, failure, start + budget * 3 / 5, still_fails);
        let (_, failure) = shrink::normalize(minimal, failure, start + budget, still_fails);
        (failure, true)
    }

    fn handle(
        &self,
        backend: &dyn Backend,
        tree: &mut dyn ValueTree<Value = Case>,
        index: u64,
        failure: CheckFailure,
    ) {
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
                let fitting = (state.shapes.iter())
                    .filter(|shape| shape.fits(&verdict, &failure.case))
                    .max_by_key(|shape| shape.needs.len())
                    .map(|shape| shape.id.clone());
                if let Some(id) = fitting {
                    count_hit(&mut state, &id, index);
                    return;
                }
                let new = state
                    .buckets
                    .values()
                    .filter(|b| b.status == BucketStatus::New)
                    .count();
                if new >= self.options.max_findings {
                    state.unclassified += 1;
                    return;
                }
                drop(state);
                let (minimal, reproduced) = self.shrink(backend, tree, failure, &verdict);
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
                let shape = Shape::of(&id, &verdict, &minimal.case);
                self.record(index, &id, status, minimal, reproduced, Some(shape));
                return;
            }
        };
        // Known by predicate: shrink the first hit only, for its saved case.
        {
            let mut state = self.lock();
            if state.buckets.contains_key(&id) {
                count_hit(&mut state, &id, index);
                return;
            }
        }
        let (minimal, reproduced) = self.shrink(backend, tree, failure, &verdict);
        self.record(index, &id, status, minimal, reproduced, None);
    }

    /// An acceptance the backend's profile (or the expectations file) says is by design:
    /// bucketed by the signature of the case as generated, never shrunk. The reason is the
    /// expectations entry's for the rule, if one names it, else the runner's.
    fn informational(&self, backend: &dyn Backend, index: u64, case: Case, checked: Checked) {
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
        };
        self.record(
            index,
            &id,
            BucketStatus::Informational { reason },
            failure,
            true,
            None,
        );
    }

    /// Adds a hit with its minimal case; the bucket keeps the case of its lowest index. The
    /// shape goes in under the same lock, so no hit can fit a shape whose bucket is missing.
    fn record(
        &self,
        index: u64,
        id: &str,
        status: BucketStatus,
        failure: CheckFailure,
        reproduced: bool,
        shape: Option<Shape>,
    ) {
        let bucket = Bucket {
            id: id.to_string(),
            status,
            kind: failure.kind,
            count: 1,
            first_index: index,
            first_seed: case_seed(self.options.seed, index),
            case: *failure.case,
            report: without_replay_lines(&failure.report),
            reproduced,
            saved: None,
            replay: None,
        };
        let mut state = self.lock();
        state.shapes.extend(shape);
        match state.buckets.get_mut(id) {
            Some(existing) => {
                existing.count += 1;
                if index < existing.first_index {
                    let count = existing.count;
                    *existing = Bucket { count, ..bucket };
                }
            }
            None => {
                let mut bucket = bucket;
                save_bucket(self.options, &mut bucket);
                state.buckets.insert(id.to_string(), bucket);
            }
        }
    }

    fn progress(&self, finished: bool) -> Progress {
        let state = self.lock();
        let cases = self.cases_run.load(Ordering::Relaxed);
        let elapsed = self.started.elapsed();
        let left = match (self.options.time, self.options.cases) {
            (Some(t), _) => Some(t.saturating_sub(elapsed)),
            (None, Some(total)) if cases > 0 => {
                let mine = total.div_ceil(self.options.shard.count);
                let rate = cases as f64 / elapsed.as_secs_f64().max(1e-9);
                Some(Duration::from_secs_f64(
                    mine.saturating_sub(cases) as f64 / rate.max(1e-9),
                ))
            }
            _ => None,
        };
        Progress {
            cases,
            elapsed,
            new: state
                .buckets
                .values()
                .filter(|b| b.status == BucketStatus::New)
                .count(),
            known: state
                .buckets
                .values()
                .filter(|b| matches!(b.status, BucketStatus::Known { .. }))
                .count(),
            known_hits: state
                .buckets
                .values()
                .filter(|b| matches!(b.status, BucketStatus::Known { .. }))
                .map(|b| b.count)
                .sum(),
            left,
            finished,
        }
    }
}

fn count_hit(state: &mut State, id: &str, index: u64) {
    if let Some(bucket) = state.buckets.get_mut(id) {
        bucket.count += 1;
        bucket.first_index = bucket.first_index.min(index);
    }
}

/// A panic anywhere in the checks (the invariants call the backend directly) is a crash.
fn checked(
    backend: &dyn Backend,
    case: &Case,
    not_enforced: &[String],
) -> Result<Checked, CheckFailure> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        check_case(backend, case, not_enforced)
    })) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            Err(CheckFailure {
                kind: CheckKind::Crash,
                report: format!(
                    "FAIL {}\n  check: panicked\n  panic: {message}\n",
                    case.name
                ),
                case: Box::new(case.clone()),
            })
        }
    }
}

fn without_replay_lines(report: &str) -> String {
    report
        .lines()
        .filter(|l| !l.trim_start().starts_with("replay:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs a campaign with one job per backend instance (at least one). `progress` is called
/// from the calling thread about every 100 ms, and once at the end with `finished` set.
pub fn run_campaign(
    backends: &[&dyn Backend],
    options: &CampaignOptions,
    mut progress: impl FnMut(&Progress),
) -> CampaignOutcome {
    // Expectations are keyed by the backend's own name, as in the conformance command
    // (`directml@1.15.4` is `directml`, with its version in the device text).
    let name = backends.first().map(|b| b.name()).unwrap_or_default();
    let not_enforced: Vec<&NotEnforced> = options
        .not_enforced
        .iter()
        .filter(|n| n.applies(&name, &options.device))
        .collect();
    let campaign = Campaign {
        options,
        known: options
            .known_differences
            .iter()
            .filter(|k| k.applies(&name, &options.device))
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
        next: AtomicU64::new(0),
        cases_run: AtomicU64::new(0),
        started: Instant::now(),
    };
    let running = AtomicUsize::new(backends.len());
    std::thread::scope(|scope| {
        for &backend in backends {
            let campaign = &campaign;
            let running = &running;
            scope.spawn(move || {
                let strategy = case_strategy(options.op, options.mix);
                while let Some(index) = campaign.next_index() {
                    let mut tree = case_tree(&strategy, options.seed, index);
                    let case = tree.current();
                    let result = checked(backend, &case, &campaign.not_enforced_rules);
                    campaign.cases_run.fetch_add(1, Ordering::Relaxed);
                    match result {
                        Err(failure) => campaign.handle(backend, tree.as_mut(), index, failure),
                        Ok(info @ Checked::Informational { .. }) => {
                            campaign.informational(backend, index, case, info)
                        }
                        Ok(Checked::Passed) => {}
                    }
                }
                running.fetch_sub(1, Ordering::Release);
            });
        }
        while running.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(100));
            progress(&campaign.progress(false));
        }
    });
    progress(&campaign.progress(true));
    let elapsed = campaign.started.elapsed();
    let state = campaign
        .state
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let mut buckets: Vec<Bucket> = state.buckets.into_values().collect();
    let rank = |b: &Bucket| match b.status {
        BucketStatus::New => 0,
        BucketStatus::Known { .. } => 1,
        BucketStatus::Informational { .. } => 2,
    };
    buckets.sort_by(|a, b| (rank(a), a.first_index, &a.id).cmp(&(rank(b), b.first_index, &b.id)));
    for bucket in &mut buckets {
        save_bucket(options, bucket);
    }
    CampaignOutcome {
        cases_run: campaign.cases_run.load(Ordering::Relaxed),
        elapsed,
        jobs: backends.len(),
        buckets,
        unclassified: state.unclassified,
    }
}
