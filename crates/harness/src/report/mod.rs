//! What a run reports: what it covered (`coverage`: the statement of every run, and the
//! suite's own coverage document), the summary counts, the JSON and JUnit XML reports, which suite and
//! corpus made them (`suite`), the results matrix (a row per case, a column per backend) and
//! its page, and the findings record (docs/findings/); `write` saves any of them (and a fuzz
//! campaign's cases) atomically, without following links, and checks before a run that they
//! can be saved.

pub mod coverage;
pub mod coverage_document;
pub mod findings;
mod json;
mod junit;
pub mod matrix;
mod suite;
mod summary;
pub mod write;

pub use json::{RunInfo, json_report, result_json};
pub use junit::junit_report;
pub use suite::Suite;
pub use summary::Summary;
