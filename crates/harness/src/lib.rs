//! The dmlcts harness, by job:
//!
//! - [`corpus`]: the case format, loading (files, folders, the embedded corpus), writing cases
//!   back out, and the generated parts of the corpus;
//! - [`run`]: the runner every entry point shares, comparison and diffs, devices per level,
//!   and the libtest-mimic glue;
//! - [`expectations`]: the expectations file, whole: expected failures, known differences,
//!   not-enforced rules, versions;
//! - [`report`]: summaries, JSON and JUnit reports, the results matrix and its page, the
//!   findings record;
//! - [`text`]: text from a backend or a case file made safe where it is written (terminals,
//!   XML, line-oriented files), used by all of the above;
//! - [`session`]: a run session, the one loop and the one per-case step every entry point
//!   takes, telling reporters what happens.
//!
//! The arrows point one way: `text` <- `corpus` <- `run` <- `expectations` <- `report` <-
//! `session`.

pub mod corpus;
pub mod expectations;
pub mod report;
pub mod run;
pub mod session;
pub mod text;

pub use corpus::{Case, Corpus, Expectation, LoadError, cases_to_yaml};
pub use run::{
    CaseResult, DeviceFactory, Devices, LibtestTarget, Replay, ReplayRecipe, ResultIds, RunOptions,
    Shell, Status, case_id, command_word, corpus_trials, level_skip_reason, libtest_main,
    libtest_main_at_each_level, libtest_run, libtest_run_at_each_level, load_error_result,
    load_error_results, replay_command, run_case, run_case_with_data_sets, shell_word, skip_reason,
};
pub use session::{Event, Reporter, RunReport, Session, SessionOptions};
