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
//! This module runs the jobs and keeps the budgets and the progress; `cases` makes case `i`,
//! `bucketing` classifies the failures, `save` writes each bucket's case; what a campaign
//! produces is in `outcome`, which the report reads.

use crate::bucketing::Bucketing;
use crate::check::{Checked, case_strategy, checked};
use crate::save::save_bucket;
use dmlcts_tensor::Backend;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// What a campaign takes and what it produces, which cases it runs (and the names of saved
// cases), moved to modules of their own; also at their former paths here.
pub use crate::cases::{case_indices, case_seed, case_tree};
pub use crate::options::{CampaignOptions, DEFAULT_MAX_FINDINGS, DEFAULT_SHRINK_TIME, Shard};
pub use crate::outcome::{Bucket, BucketStatus, CampaignOutcome, Progress};
pub use crate::save::slug;

/// A running campaign: the next case index, the cases run so far, its clock and its buckets.
struct Campaign<'a> {
    options: &'a CampaignOptions,
    bucketing: Bucketing<'a>,
    next: AtomicU64,
    cases_run: AtomicU64,
    started: Instant,
}

impl Campaign<'_> {
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
    let campaign = Campaign {
        options,
        bucketing: Bucketing::new(options, &name),
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
                    let result = checked(backend, &case, &campaign.bucketing.not_enforced_rules);
                    campaign.cases_run.fetch_add(1, Ordering::Relaxed);
                    match result {
                        Err(failure) => {
                            campaign
                                .bucketing
                                .handle(backend, tree.as_mut(), index, failure)
                        }
                        Ok(info @ Checked::Informational { .. }) => {
                            campaign.bucketing.informational(backend, index, case, info)
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
    CampaignOutcome {
        cases_run: campaign.cases_run.load(Ordering::Relaxed),
        elapsed,
        jobs: backends.len(),
        buckets,
        unclassified: state.unclassified,
    }
}
