//! dmlcts fuzz campaigns: the proptest strategies (public, for backend authors' own tests),
//! what is checked on each generated case (the harness's runner plus two invariants), the
//! campaign loop (budgets, jobs, shards), time-bounded shrinking, buckets and their
//! signatures, known differences from the expectations file, and the campaign report.
//!
//! Data flows one way: `campaign` runs the jobs (with `cases`, `check`, `bucketing`,
//! `shrink`, `signature` and `save`) from its `options` and produces an `outcome`, which
//! `report` reads; nothing the report has flows back into the campaign.
//!
//! # An in-process campaign
//!
//! A backend author runs a campaign from a test of their own crate: [`run_campaign`] with
//! [`CampaignOptions`] (budget, seed, operator, valid and near-miss mix, where minimal cases
//! are saved) on one backend instance per job. Case `i` depends on the seed and `i` alone, so
//! a failure is reproducible anywhere; each failure is shrunk (up to `shrink_time`) and
//! bucketed by its signature, and the [`CampaignOutcome`] lists the buckets, new ones first.
//! Here with the oracle standing in for your backend:
//!
//! ```
//! use dmlcts_fuzz::{CampaignOptions, run_campaign};
//! use dmlcts_tensor::{Backend, FeatureLevel};
//!
//! let backend = dmlcts_oracle::OracleBackend::new(FeatureLevel::L4_1); // your backend
//! let mut options = CampaignOptions::new("my-backend", 2026);
//! options.cases = Some(200);
//! options.device = backend.device();
//! let outcome = run_campaign(&[&backend], &options, |_progress| {});
//! assert_eq!(outcome.cases_run, 200);
//! assert_eq!(outcome.new_buckets().count(), 0, "{}", outcome.summary_line());
//! ```
//!
//! The proptest strategies behind it are public in [`strategies`], for property tests of your
//! own. `examples/rust-backend` in the dmlcts repository runs this on a real backend, and
//! shows the same campaign find a planted bug.

mod bucketing;
pub mod campaign;
pub mod cases;
pub mod check;
pub mod merge;
pub mod options;
pub mod outcome;
pub mod profile;
pub mod replay;
pub mod report;
pub mod save;
pub mod shrink;
pub mod signature;
pub mod strategies;

pub use campaign::{run_campaign, run_campaign_announcing, run_campaign_at_levels};
pub use cases::case_strategy;
pub use check::{CheckFailure, Checked, Mix, check_case, check_case_data_sets};
pub use options::{CampaignOptions, Shard};
pub use outcome::{Bucket, BucketStatus, CampaignOutcome, Progress};
pub use signature::{CheckKind, signature};
