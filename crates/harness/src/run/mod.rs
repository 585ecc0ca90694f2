//! Judging one case: `runner` (the corpus check, skips, the verdict of validation and the
//! bytes: `run_case`, which the session's step calls), comparison and diffs (`compare`), a
//! device per level (`devices`: the session's level choice), a load error as a result
//! (`load_error`), replay commands as words (`replay`), and the libtest-mimic glue (`libtest`:
//! a trial per case, each the session's step).

pub mod compare;
mod devices;
pub(crate) mod group;
mod libtest;
mod load_error;
pub mod profile;
pub mod replay;
mod runner;

pub use devices::{DeviceFactory, Devices};
pub use libtest::{
    corpus_trials, libtest_main, libtest_main_at_each_level, libtest_run, libtest_run_at_each_level,
};
pub use load_error::{LOAD_ERROR_ID_PREFIX, load_error_result, load_error_results};
pub use replay::{
    LibtestTarget, Replay, ReplayRecipe, Shell, command_word, libtest_filter_words, option_words,
    shell_word,
};
pub(crate) use runner::SkipCheck;
pub use runner::{
    CaseResult, MAX_BACKEND_TEXT_BYTES, ResultIds, RunOptions, Status, case_id, level_skip_reason,
    replay_command, run_case, run_case_with_data_sets, skip_reason,
};
