//! dmlcts fuzz campaigns: the proptest strategies (public, for backend authors' own tests),
//! what is checked on each generated case (the harness's runner plus two invariants), the
//! campaign loop (budgets, jobs, shards), time-bounded shrinking, buckets and their
//! signatures, known differences from the expectations file, and the campaign report.
//!
//! Data flows one way: `campaign` runs the jobs (with `cases`, `check`, `bucketing`,
//! `shrink`, `signature` and `save`) from its `options` and produces an `outcome`, which
//! `report` reads; nothing the report has flows back into the campaign.

mod bucketing;
pub mod campaign;
pub mod cases;
pub mod check;
pub mod options;
pub mod outcome;
pub mod replay;
pub mod report;
pub mod save;
pub mod shrink;
pub mod signature;
pub mod strategies;

pub use campaign::{run_campaign, run_campaign_at_levels};
pub use check::{CheckFailure, Checked, Mix, case_strategy, check_case, check_case_data_sets};
pub use options::{CampaignOptions, Shard};
pub use outcome::{Bucket, BucketStatus, CampaignOutcome, Progress};
pub use signature::{CheckKind, signature};
