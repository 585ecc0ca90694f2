//! Which suite this is: the version, the commit it was built from (build.rs) and the corpus
//! it carries, for `--version`, the run's header and every report.

use dmlcts_harness::corpus::digest::{self, CorpusDigest};
use dmlcts_harness::report::Suite;

/// The commit this build comes from, where the build knew it.
pub const COMMIT: Option<&str> = option_env!("DMLCTS_BUILD_COMMIT");

/// The suite, with the corpus a run loaded.
pub fn suite(corpus: &CorpusDigest) -> Suite {
    Suite::new(COMMIT, corpus)
}

/// `dmlcts --version`: `0.1.0 (commit 0123456789ab, embedded corpus sha256:... in 17 files)`.
pub fn version_text() -> String {
    let (corpus, files) = digest::embedded();
    let commit = match COMMIT {
        Some(commit) => format!("commit {commit}, "),
        None => String::new(),
    };
    format!(
        "{} ({commit}embedded corpus {corpus} in {})",
        env!("CARGO_PKG_VERSION"),
        crate::out::count(files, "file", "files")
    )
}
