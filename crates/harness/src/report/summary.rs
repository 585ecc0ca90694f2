//! The counts of a run, overall and per level.

use crate::run::{CaseResult, Status};
use dmlcts_tensor::FeatureLevel;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub expected_failures: usize,
    /// Must-reject cases accepted under the backend's validation profile.
    pub informational: usize,
}

impl Summary {
    pub fn of(results: &[CaseResult]) -> Summary {
        let mut summary = Summary::default();
        for result in results {
            match result.status {
                Status::Passed => summary.passed += 1,
                Status::Failed => summary.failed += 1,
                Status::Skipped => summary.skipped += 1,
                Status::ExpectedFailure => summary.expected_failures += 1,
                Status::Informational => summary.informational += 1,
            }
        }
        summary
    }

    /// One summary per case feature level (cases that loaded; a load error has no level).
    pub fn by_level(results: &[CaseResult]) -> BTreeMap<FeatureLevel, Summary> {
        let mut levels: BTreeMap<FeatureLevel, Vec<CaseResult>> = BTreeMap::new();
        for result in results {
            if let Some(level) = result.feature_level {
                levels.entry(level).or_default().push(result.clone());
            }
        }
        levels
            .into_iter()
            .map(|(level, results)| (level, Summary::of(&results)))
            .collect()
    }

    /// The closing line: `N passed, M failed, K skipped`, and `, I informational` when some
    /// must-reject cases were accepted under the backend's validation profile.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.skipped
        );
        if self.informational > 0 {
            let _ = write!(line, ", {} informational", self.informational);
        }
        line
    }
}
