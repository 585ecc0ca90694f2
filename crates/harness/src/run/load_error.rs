//! A file or case that could not be loaded, as a result: it fails the run and shows in every
//! report like any other case.

use crate::corpus::LoadError;
use crate::run::{CaseResult, Status};
use std::time::Duration;

/// A load error reported as a failed result, so it counts and shows in every report.
pub fn load_error_result(error: &LoadError) -> CaseResult {
    CaseResult {
        name: match &error.case {
            Some(case) => case.clone(),
            None => format!("load:{}", error.file),
        },
        file: error.file.clone(),
        line: error.line.unwrap_or(0),
        status: Status::Failed,
        reason: "case file error".to_string(),
        details: format!("  {error}\n"),
        notes: Vec::new(),
        duration: Duration::ZERO,
        feature_level: None,
        run_level: None,
    }
}
