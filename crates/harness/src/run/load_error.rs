//! A file or case that could not be loaded, as a result: it fails the run and shows in every
//! report like any other case.

use crate::corpus::LoadError;
use crate::run::{CaseResult, ResultIds, Status};
use std::time::Duration;

/// The start of every load error's result id.
pub const LOAD_ERROR_ID_PREFIX: &str = "load-error:";

/// A load error reported as a failed result, so it counts and shows in every report. Its id,
/// `load-error:FILE:LINE`, is its own: never a case's, whatever the case is named.
pub fn load_error_result(error: &LoadError) -> CaseResult {
    CaseResult {
        id: format!(
            "{LOAD_ERROR_ID_PREFIX}{}:{}",
            error.file,
            error.line.unwrap_or(0)
        ),
        name: match &error.case {
            Some(case) => case.clone(),
            None => format!("load:{}", error.file),
        },
        file: error.file.clone(),
        line: error.line.unwrap_or(0),
        status: Status::Failed,
        reason: "case file error".to_string(),
        details: format!("  {error}\n"),
        replay: None,
        descriptor: None,
        notes: Vec::new(),
        duration: Duration::ZERO,
        feature_level: None,
        run_level: None,
    }
}

/// Every load error as a failed result, each id unique (`#N` where two share a line).
pub fn load_error_results(errors: &[LoadError]) -> Vec<CaseResult> {
    let mut ids = ResultIds::default();
    errors
        .iter()
        .map(|error| {
            let mut result = load_error_result(error);
            result.id = ids.unique(result.id);
            result
        })
        .collect()
}
