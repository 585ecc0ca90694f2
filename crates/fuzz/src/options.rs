//! What a campaign is asked to do: its budget (cases, time), seed, operator and mix, shard,
//! limits, where cases are saved, and the expectations it classifies failures by.

use crate::check::Mix;
use dmlcts_harness::expectations::{KnownDifference, NotEnforced};
use dmlcts_tensor::{FeatureLevel, OperatorKind};
use std::path::PathBuf;
use std::time::Duration;

/// Which part of a campaign's case indices to run: `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` (0 <= I < N).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (i, n) = text.split_once('/').ok_or(format!("`{text}` is not I/N"))?;
        let index: u64 = i
            .trim()
            .parse()
            .map_err(|_| format!("`{i}` is not a number"))?;
        let count: u64 = n
            .trim()
            .parse()
            .map_err(|_| format!("`{n}` is not a number"))?;
        if count == 0 || index >= count {
            return Err(format!("`{text}`: need 0 <= I < N"));
        }
        Ok(Shard { index, count })
    }
}

/// Where shrinking stops by default: through a slow out-of-process backend (Wine,
/// DirectML: about 150 cases/s) this is a few thousand attempts, well under a minute.
pub const DEFAULT_SHRINK_TIME: Duration = Duration::from_secs(20);
pub const DEFAULT_MAX_FINDINGS: usize = 20;

#[derive(Clone, Debug)]
pub struct CampaignOptions {
    /// Case indices 0..cases (of the whole campaign, before sharding). With `time`, whichever
    /// ends first; with neither, the campaign runs until stopped.
    pub cases: Option<u64>,
    pub time: Option<Duration>,
    pub seed: u64,
    pub op: Option<OperatorKind>,
    pub mix: Mix,
    pub shard: Shard,
    /// Data sets per valid descriptor, all on one compile (at least 1: its own inputs). A
    /// backend that compiles slowly is checked on more data per compile.
    pub data_sets: usize,
    /// One case in 16 a sibling group around the generated case (`strategies::siblings`);
    /// off, every case is a plain one.
    pub siblings: bool,
    /// `--feature-level`: the one level asked for (for the replay command); the levels a
    /// campaign runs at are its devices'.
    pub pinned_level: Option<FeatureLevel>,
    /// New buckets after which failures that fit no bucket are only counted (not shrunk).
    pub max_findings: usize,
    /// Stop taking cases once this many new buckets are found (for tests and tools that
    /// only ask whether a campaign finds something).
    pub stop_after_findings: Option<usize>,
    /// The time shrinking and normalizing one failure may take.
    pub shrink_time: Duration,
    /// Where each bucket's minimal case is saved; `None` saves nothing.
    pub out_dir: Option<PathBuf>,
    /// The backend's name as given on the command line (for replay commands).
    pub backend_name: String,
    /// The backend's device text (expectations entries may key on it and on the version in
    /// it; the backend part of their key is matched against the backend's own `name()`).
    pub device: String,
    /// The backend's implementation fields (`Backend::implementation`), which entries may
    /// key on too (`implementation`, `versions`, `adapter`).
    pub implementation: dmlcts_tensor::Implementation,
    pub known_differences: Vec<KnownDifference>,
    pub not_enforced: Vec<NotEnforced>,
    /// The `DMLCTS_*` settings that shaped the run, set before every replay command.
    pub env: Vec<(String, String)>,
    /// The program that runs the campaign, which replay commands start with and saved cases'
    /// headers name (`dmlcts`, `cargo xtask`). Empty (`new`'s default): a campaign in the
    /// caller's own process, a backend author's test, whose replays are `cargo test` of the
    /// caller's package (see `replay::saved_case_replay`).
    pub program: String,
    /// The words of every option that shaped how the backend ran, for replay commands:
    /// `--backend-config FILE`, `--process-timeout SECS`, `--adapter TEXT`, `--expectations
    /// FILE` (the level, pinned or the case's own, is added where it applies).
    pub run_options: Vec<String>,
    /// Measure where each job's time goes, by stage and tier (`profile`): off by default, as
    /// it reads the clock at every stage of every case.
    pub profile: bool,
}

impl CampaignOptions {
    pub fn new(backend_name: &str, seed: u64) -> CampaignOptions {
        CampaignOptions {
            cases: Some(10_000),
            time: None,
            seed,
            op: None,
            mix: Mix::Both,
            shard: Shard::WHOLE,
            data_sets: 1,
            siblings: true,
            pinned_level: None,
            max_findings: DEFAULT_MAX_FINDINGS,
            stop_after_findings: None,
            shrink_time: DEFAULT_SHRINK_TIME,
            out_dir: None,
            backend_name: backend_name.to_string(),
            device: String::new(),
            implementation: dmlcts_tensor::Implementation::default(),
            known_differences: Vec::new(),
            not_enforced: Vec::new(),
            env: Vec::new(),
            program: String::new(),
            run_options: Vec::new(),
            profile: false,
        }
    }
}
