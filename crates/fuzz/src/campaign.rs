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
//!
//! Levels: each job has a device per level the campaign runs at (a backend that offers
//! several levels; one device, at its own level, otherwise). Case `i`'s level comes from the
//! seed and `i` (`cases::recipe`); it is generated within or just outside that level's
//! tables, judged on the device at that level (held strictly to it), and saved at it.
//!
//! This module runs the jobs and keeps the budgets and the progress; `cases` makes case `i`,
//! `bucketing` classifies the failures, `save` writes each bucket's case; what a campaign
//! produces is in `outcome`, which the report reads.

use crate::bucketing::Bucketing;
use crate::cases::{Plan, Recipe, case_strategy_at, data_seeds};
use crate::check::{Checked, checked};
use crate::outcome::SkipReasons;
use crate::profile::{CampaignProfile, Tier};
use crate::save::save_bucket;
use crate::strategies::siblings;
use dmlcts_harness::Case;
use dmlcts_harness::corpus::assertions::assertions;
use dmlcts_harness::report::coverage::Coverage;
use dmlcts_harness::run::profile::{self, Stage};
use dmlcts_harness::session::{Session, SessionOptions};
use dmlcts_tensor::{Backend, FeatureLevel};
use proptest::strategy::BoxedStrategy;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// What a campaign takes and what it produces, which cases it runs (and the names of saved
// cases), moved to modules of their own; also at their former paths here.
pub use crate::cases::{case_indices, case_seed, case_tree};
pub use crate::options::{CampaignOptions, DEFAULT_MAX_FINDINGS, DEFAULT_SHRINK_TIME, Shard};
pub use crate::outcome::{Bucket, BucketStatus, CampaignOutcome, Progress};
pub use crate::save::slug;

/// A running campaign: the next case index, the cases and descriptors run so far (and at
/// which levels), its clock and its buckets.
struct Campaign<'a> {
    options: &'a CampaignOptions,
    levels: Vec<FeatureLevel>,
    bucketing: Bucketing<'a>,
    next: AtomicU64,
    cases_run: AtomicU64,
    descriptors_run: AtomicU64,
    /// Descriptors run at each of `levels`.
    per_level: Vec<AtomicU64>,
    /// Descriptors the backend could not run, by reason.
    skipped: Mutex<SkipReasons>,
    /// What the jobs' sessions covered, merged as each job ends.
    coverage: Mutex<Coverage>,
    /// Where the jobs' time went (with `options.profile`), merged as each job ends.
    profile: Mutex<CampaignProfile>,
    started: Instant,
}

impl Campaign<'_> {
    /// One job: the next index until the budget is spent, each case on the device at its
    /// level; a failure is bucketed, an informational acceptance recorded.
    fn run_job(&self, devices: &[&dyn Backend]) {
        let options = self.options;
        let plan = Plan::new(options, &self.levels);
        // Each case through the session's step, on the device at its level (or the first).
        let Some(session) = Session::on_devices(
            devices,
            SessionOptions {
                not_enforced: self.bucketing.not_enforced_rules.clone(),
                ..SessionOptions::default()
            },
        ) else {
            return;
        };
        let mut strategies: HashMap<Recipe, BoxedStrategy<Case>> = HashMap::new();
        // Per assertion, the failures a known difference described.
        let mut known_failures: BTreeMap<String, usize> = BTreeMap::new();
        let mut job_profile = CampaignProfile::default();
        if options.profile {
            profile::start();
        }
        while let Some(index) = self.next_index() {
            let generation = profile::stage(Stage::Generation);
            let recipe = plan.recipe(index);
            let strategy = strategies
                .entry(recipe)
                .or_insert_with(|| case_strategy_at(options.op, options.mix, recipe));
            let mut tree = crate::cases::case_tree(strategy, options.seed, index);
            if options.siblings
                && siblings::is_sibling_index(index)
                && recipe.large_element_size.is_none()
            {
                // A sibling group around this case, as one case from here on.
                let pick = siblings::pick(options.seed, index);
                if siblings::sibling_group(&tree.current(), pick).is_some() {
                    tree = Box::new(siblings::GroupTree { inner: tree, pick });
                }
            }
            let case = tree.current();
            let seeds = data_seeds(&case, options.data_sets.max(1));
            drop(generation);
            let tier = if recipe.large_element_size.is_some() {
                Tier::Large
            } else if case.expect == dmlcts_harness::Expectation::Accept {
                Tier::Small
            } else {
                Tier::NearMiss
            };
            let (result, checked_cases) = checked(&session, &case, &seeds);
            self.cases_run.fetch_add(checked_cases, Ordering::Relaxed);
            self.descriptors_run.fetch_add(1, Ordering::Relaxed);
            if let Some(at) = self.levels.iter().position(|&l| l == case.feature_level) {
                self.per_level[at].fetch_add(1, Ordering::Relaxed);
            }
            match result {
                Err(failure) => {
                    // Shrunk on the device the session ran it on.
                    let (device, _) = session.device_for(&case);
                    let failed = assertions(&failure.case);
                    if (self.bucketing).handle(device.as_ref(), tree.as_mut(), index, failure) {
                        for id in failed {
                            *known_failures.entry(id).or_default() += 1;
                        }
                    }
                }
                Ok(info @ Checked::Informational { .. }) => {
                    let (device, _) = session.device_for(&case);
                    (self.bucketing).informational(device.as_ref(), index, case, info)
                }
                Ok(Checked::Skipped { reason }) => self
                    .skipped
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .add(&reason),
                Ok(Checked::Passed) => {}
            }
            if let Some(times) = profile::finish_case() {
                job_profile.add_case(tier, &times);
            }
        }
        if options.profile {
            profile::stop();
            (self.profile.lock().unwrap_or_else(|e| e.into_inner())).merge(&job_profile);
        }
        // A failure a known difference describes is checked, known to differ (the session
        // recorded it failed before the campaign classified it).
        let mut coverage = session.coverage();
        for (id, count) in &known_failures {
            coverage.known_to_differ(id, *count);
        }
        (self.coverage.lock().unwrap_or_else(|e| e.into_inner())).merge(&coverage);
    }

    fn next_index(&self) -> Option<u64> {
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        let index = self.options.shard.index + k * self.options.shard.count;
        if self.options.cases.is_some_and(|c| index >= c) {
            return None;
        }
        if (self.options.stop_after_findings)
            .is_some_and(|n| self.bucketing.new_buckets.load(Ordering::Relaxed) >= n)
        {
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

    fn progress(&self, finished: bool) -> Progress {
        let state = self.bucketing.lock();
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

/// Counts a job out of `running` when dropped: at its end, or while a panic unwinds it.
struct JobDone<'a>(&'a AtomicUsize);

impl Drop for JobDone<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Release);
    }
}

/// Runs a campaign with one job per backend instance (at least one), each at its own level.
/// `progress` is called from the calling thread about every 100 ms, and once at the end with
/// `finished` set.
pub fn run_campaign(
    backends: &[&dyn Backend],
    options: &CampaignOptions,
    progress: impl FnMut(&Progress),
) -> CampaignOutcome {
    let jobs: Vec<Vec<&dyn Backend>> = backends.iter().map(|&b| vec![b]).collect();
    run_campaign_at_levels(&jobs, options, progress)
}

/// Runs a campaign with one job per entry of `jobs`: a job's devices, one per level the
/// campaign runs at (each reports its level; the first job's levels are the campaign's).
/// Each case is judged on its job's device at the case's level.
pub fn run_campaign_at_levels(
    jobs: &[Vec<&dyn Backend>],
    options: &CampaignOptions,
    progress: impl FnMut(&Progress),
) -> CampaignOutcome {
    run_campaign_announcing(jobs, options, progress, |_| {})
}

/// `run_campaign_at_levels`, calling `found` (from the calling thread, with the progress) for
/// each new bucket once, soon after it is found and its case saved, in the order found: so a
/// long campaign shows its findings as they come, not only at its end.
pub fn run_campaign_announcing(
    jobs: &[Vec<&dyn Backend>],
    options: &CampaignOptions,
    mut progress: impl FnMut(&Progress),
    mut found: impl FnMut(&Bucket),
) -> CampaignOutcome {
    // Expectations are keyed by the backend's own name, as in the conformance command
    // (`directml@1.15.4` is `directml`, with its version in the device text).
    let first = jobs.first().and_then(|devices| devices.first());
    let name = first.map(|b| b.name()).unwrap_or_default();
    let mut levels: Vec<FeatureLevel> = (jobs.first().into_iter().flatten())
        .map(|b| b.feature_level())
        .collect();
    levels.sort();
    levels.dedup();
    let campaign = Campaign {
        options,
        bucketing: Bucketing::new(options, &name),
        next: AtomicU64::new(0),
        cases_run: AtomicU64::new(0),
        descriptors_run: AtomicU64::new(0),
        per_level: levels.iter().map(|_| AtomicU64::new(0)).collect(),
        levels,
        skipped: Mutex::new(SkipReasons::default()),
        coverage: Mutex::new(Coverage::default()),
        profile: Mutex::new(CampaignProfile::default()),
        started: Instant::now(),
    };
    let running = AtomicUsize::new(jobs.len());
    let mut announced: HashSet<String> = HashSet::new();
    let mut announce = |campaign: &Campaign<'_>| {
        let mut fresh: Vec<Bucket> = (campaign.bucketing.lock().buckets.values())
            .filter(|b| b.status == BucketStatus::New && !announced.contains(&b.id))
            .cloned()
            .collect();
        fresh.sort_by_key(|b| b.first_index);
        for bucket in &fresh {
            announced.insert(bucket.id.clone());
            found(bucket);
        }
    };
    std::thread::scope(|scope| {
        for devices in jobs {
            let campaign = &campaign;
            let running = &running;
            scope.spawn(move || {
                // Counted down even if the job panics, so the loop below ends and the scope
                // passes the panic on instead of waiting for it forever.
                let _done = JobDone(running);
                campaign.run_job(devices);
            });
        }
        while running.load(Ordering::Acquire) > 0 {
            std::thread::sleep(Duration::from_millis(100));
            announce(&campaign);
            progress(&campaign.progress(false));
        }
    });
    announce(&campaign);
    progress(&campaign.progress(true));
    let elapsed = campaign.started.elapsed();
    let state = campaign
        .bucketing
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
    let per_level: Vec<(FeatureLevel, u64)> = (campaign.levels.iter().copied())
        .zip(campaign.per_level.iter().map(|n| n.load(Ordering::Relaxed)))
        .collect();
    let skipped = (campaign.skipped.into_inner()).unwrap_or_else(|e| e.into_inner());
    let coverage = (campaign.coverage.into_inner()).unwrap_or_else(|e| e.into_inner());
    let profile = (options.profile)
        .then(|| (campaign.profile.into_inner()).unwrap_or_else(|e| e.into_inner()));
    CampaignOutcome {
        coverage,
        profile,
        skipped: skipped.total,
        skip_reasons: skipped.by_count(),
        cases_run: campaign.cases_run.load(Ordering::Relaxed),
        descriptors_run: campaign.descriptors_run.load(Ordering::Relaxed),
        levels: per_level,
        elapsed,
        jobs: jobs.len(),
        buckets,
        unclassified: state.unclassified,
    }
}
