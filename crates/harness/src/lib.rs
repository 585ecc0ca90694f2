//! The dmlcts harness: the case corpus and its format, the runner every entry point shares,
//! output comparison and diffs, reports, and the libtest-mimic glue.

mod case;
pub mod compare;
pub mod data;
mod devices;
pub mod findings;
pub mod generate;
pub mod known;
mod libtest;
pub mod matrix;
pub mod report;
mod runner;
mod scan;
pub mod versions;

pub use case::{Case, Corpus, Expectation, LoadError, cases_to_yaml};
pub use devices::{DeviceFactory, Devices};
pub use libtest::{
    corpus_trials, libtest_main, libtest_main_at_each_level, libtest_run, libtest_run_at_each_level,
};
pub use runner::{
    CaseResult, RunOptions, SkipCheck, Status, replay_command, run_case, run_cases, shell_word,
    skip_reason,
};
