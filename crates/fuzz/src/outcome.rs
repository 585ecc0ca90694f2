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

#[derive(Clone, Debug)]
pub struct CampaignOutcome {
    /// Cases checked: each data set of a descriptor is one.
    pub cases_run: u64,
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
