//! The dmlcts harness, by job:
//!
//! - [`corpus`]: the case format, loading (files, folders, the embedded corpus), writing cases
//!   back out, and the generated parts of the corpus;
//! - [`run`]: the runner every entry point shares, comparison and diffs, devices per level,
//!   and the libtest-mimic glue;
//! - [`expectations`]: the expectations file, whole: expected failures, known differences,
//!   not-enforced rules, versions;
//! - [`report`]: summaries, JSON and JUnit reports, the results matrix and its page, the
//!   findings record.
//!
//! The arrows point one way: `corpus` <- `run` <- `expectations` <- `report`.

pub mod corpus;
pub mod expectations;
pub mod report;
pub mod run;

pub use corpus::{Case, Corpus, Expectation, LoadError, cases_to_yaml};
pub use run::{
    CaseResult, DeviceFactory, Devices, RunOptions, SkipCheck, Status, corpus_trials, libtest_main,
    libtest_main_at_each_level, libtest_run, libtest_run_at_each_level, load_error_result,
    replay_command, run_case, run_case_with_data_sets, run_cases, shell_word, skip_reason,
};
