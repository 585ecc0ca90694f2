//! Which suite made a report: its version, its commit where known, and a digest of the corpus
//! it ran, so that a pinned gate can prove what it checked.

use crate::corpus::digest::CorpusDigest;

/// The suite and corpus behind a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suite {
    /// The suite's version (the workspace's, e.g. `0.1.0`).
    pub version: String,
    /// The commit it was built from, where the build knew it.
    pub commit: Option<String>,
    /// `sha256:...` over the case files' bytes that were loaded (`CorpusDigest::text`).
    pub corpus_digest: String,
    /// How many case files were loaded.
    pub corpus_files: usize,
}

impl Default for Suite {
    fn default() -> Suite {
        Suite::new(None, &CorpusDigest::default())
    }
}

impl Suite {
    pub fn new(commit: Option<&str>, corpus: &CorpusDigest) -> Suite {
        Suite {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: commit.map(str::to_string),
            corpus_digest: corpus.text(),
            corpus_files: corpus.files(),
        }
    }

    /// `dmlcts 0.1.0 (commit 0123456789ab)`, without the commit where it is not known.
    pub fn name(&self) -> String {
        match &self.commit {
            Some(commit) => format!(
                "dmlcts {} (commit {})",
                self.version,
                &commit[..commit.len().min(12)]
            ),
            None => format!("dmlcts {}", self.version),
        }
    }

    /// `corpus sha256:... (17 files)`.
    pub fn corpus(&self) -> String {
        format!(
            "corpus {} ({} file{})",
            self.corpus_digest,
            self.corpus_files,
            if self.corpus_files == 1 { "" } else { "s" }
        )
    }

    /// The `suite` object of the JSON reports.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "name": "dmlcts",
            "version": self.version,
            "commit": self.commit,
            "corpus": {
                "digest": self.corpus_digest,
                "files": self.corpus_files,
            },
        })
    }
}
