//! What a campaign produces: progress snapshots while it runs, and at its end the outcome,
//! its buckets (one per cause of failure, each with its minimal case) and their counts. The
//! report reads these; nothing here refers back to the campaign.

use crate::replay::Replay;
use crate::signature::CheckKind;
use dmlcts_harness::Case;
use dmlcts_tensor::FeatureLevel;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BucketStatus {
    New,
    /// Described by an expectations entry (its name and reason).
    Known {
        name: String,
        reason: String,
    },
    /// A rule the backend does not enforce by design: not a failure.
    Informational {
        reason: String,
    },
}

impl BucketStatus {
    pub fn name(&self) -> &'static str {
        match self {
            BucketStatus::New => "new",
            BucketStatus::Known { .. } => "known",
            BucketStatus::Informational { .. } => "informational",
        }
    }
}

/// Failures of one cause.
#[derive(Clone, Debug)]
pub struct Bucket {
    /// The signature of the minimal case (known-by-predicate buckets: `known.` + the name).
    pub id: String,
    pub status: BucketStatus,
    pub kind: CheckKind,
    pub count: u64,
    /// The lowest case index that hit it, and that case's seed.
    pub first_index: u64,
    pub first_seed: u64,
    /// The minimal case (informational buckets: the first case as generated).
    pub case: Case,
    /// What failed on the minimal case.
    pub report: String,
    /// False when the first hit did not fail again when re-run (it was then not shrunk);
    /// with no shrink time nothing is re-run, and it stays true.
    pub reproduced: bool,
    pub saved: Option<PathBuf>,
    /// The command that runs the saved case again (see `replay::saved_case_replay`).
    pub replay: Option<Replay>,
    /// Time spent shrinking its hits, all together (one budget per bucket).
    pub shrink_time: Duration,
    /// How many of its hits were shrunk (the rest were counted as they came).
    pub shrinks: u64,
    /// Runs of a case while shrinking them.
    pub shrink_checks: u64,
}

/// The descriptors a backend could not run (`unsupported`), counted by reason. A reason is
/// the backend's text, so at most `SkipReasons::KINDS` distinct ones are kept, each cut to
/// `SkipReasons::REASON_CHARS` characters; the rest count under `OTHER_REASONS`.
#[derive(Clone, Debug, Default)]
pub struct SkipReasons {
    pub total: u64,
    counts: Vec<(String, u64)>,
}

/// Where the reasons past `SkipReasons::KINDS` are counted.
pub const OTHER_REASONS: &str = "(other reasons)";

impl SkipReasons {
    pub const KINDS: usize = 32;
    pub const REASON_CHARS: usize = 300;

    pub fn add(&mut self, reason: &str) {
        self.add_many(reason, 1);
    }

    /// `count` descriptors skipped for `reason`.
    pub fn add_many(&mut self, reason: &str, count: u64) {
        self.total = self.total.saturating_add(count);
        let reason: String = reason.chars().take(Self::REASON_CHARS).collect();
        let reason =
            if self.counts.iter().any(|(r, _)| *r == reason) || self.counts.len() < Self::KINDS {
                reason
            } else {
                OTHER_REASONS.to_string()
            };
        match self.counts.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n = n.saturating_add(count),
            None => self.counts.push((reason, count)),
        }
    }

    /// Most frequent first (ties by reason).
    pub fn by_count(&self) -> Vec<(String, u64)> {
        let mut counts = self.counts.clone();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts
    }
}

#[derive(Clone, Debug)]
pub struct CampaignOutcome {
    /// Cases run through the runner: each data set of a descriptor is one, and a descriptor
    /// that was not run (`skipped`) counts once.
    pub cases_run: u64,
    /// Descriptors that were not run (the backend cannot run them, `unsupported`, or the
    /// runner cannot here): generated, never checked.
    pub skipped: u64,
    /// Their reasons, most frequent first (`SkipReasons`).
    pub skip_reasons: Vec<(String, u64)>,
    /// Descriptors generated (case indices run), each compiled once.
    pub descriptors_run: u64,
    /// How many descriptors were judged at each level.
    pub levels: Vec<(FeatureLevel, u64)>,
    pub elapsed: Duration,
    pub jobs: usize,
    /// New buckets first, then known, then informational; each by first index.
    pub buckets: Vec<Bucket>,
    /// Failures that fit no bucket after `max_findings` new ones (not shrunk).
    pub unclassified: u64,
    /// What the campaign reached, by assertion (near misses: the rules whose edges it hit;
    /// valid cases: the execution properties), and the data types, ranks, operators and
    /// levels it ran: every job's session's, merged.
    pub coverage: dmlcts_harness::report::coverage::Coverage,
    /// Where the time went, by stage and tier, when the options asked for it.
    pub profile: Option<crate::profile::CampaignProfile>,
}

impl CampaignOutcome {
    /// Cases per second.
    pub fn rate(&self) -> f64 {
        self.cases_run as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Descriptors per second.
    pub fn descriptor_rate(&self) -> f64 {
        self.descriptors_run as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Time spent shrinking, all buckets together.
    pub fn shrink_time(&self) -> Duration {
        self.buckets.iter().map(|b| b.shrink_time).sum()
    }

    /// A campaign in which the backend ran none of its descriptors checked nothing: a failure,
    /// as a conformance run that skipped every case is.
    pub fn skipped_everything(&self) -> bool {
        self.descriptors_run > 0 && self.skipped >= self.descriptors_run
    }

    pub fn new_buckets(&self) -> impl Iterator<Item = &Bucket> {
        self.buckets
            .iter()
            .filter(|b| b.status == BucketStatus::New)
    }

    /// The closing line: `N new findings; known: NAME x COUNT, ...`.
    pub fn summary_line(&self) -> String {
        let new = self.new_buckets().count();
        let mut line = format!("{new} new finding{}", if new == 1 { "" } else { "s" });
        let known: Vec<String> = self
            .buckets
            .iter()
            .filter_map(|b| match &b.status {
                BucketStatus::Known { name, .. } => Some(format!("{name} x {}", b.count)),
                _ => None,
            })
            .collect();
        if !known.is_empty() {
            line.push_str(&format!("; known: {}", known.join(", ")));
        }
        let info: u64 = self
            .buckets
            .iter()
            .filter(|b| matches!(b.status, BucketStatus::Informational { .. }))
            .map(|b| b.count)
            .sum();
        if info > 0 {
            line.push_str(&format!("; informational (not enforced by design): {info}"));
        }
        if self.skipped > 0 {
            line.push_str(&format!(
                "; skipped (not run: unsupported, or not held here): {} of {} descriptors",
                self.skipped, self.descriptors_run
            ));
        }
        if self.unclassified > 0 {
            line.push_str(&format!(
                "; {} more failure(s) not shrunk (--max-findings reached)",
                self.unclassified
            ));
        }
        line
    }
}

/// A snapshot for progress lines.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub cases: u64,
    pub elapsed: Duration,
    pub new: usize,
    pub known: usize,
    pub known_hits: u64,
    /// Time left for a `time` budget, or estimated from the rate for a `cases` budget.
    pub left: Option<Duration>,
    pub finished: bool,
}

impl Progress {
    pub fn rate(&self) -> f64 {
        self.cases as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}
