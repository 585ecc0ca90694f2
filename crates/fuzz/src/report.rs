//! The campaign's report, read from what it produced: the `--json` report, and the command
//! that repeats the campaign.

use crate::check::Mix;
use crate::options::CampaignOptions;
use crate::outcome::{BucketStatus, CampaignOutcome};
use crate::replay::shell_word;
use std::path::Path;

// Made for replay commands; here too, at its former path.
pub use crate::replay::env_prefix;

/// The command that repeats a campaign (the same cases; `jobs` does not change them).
pub fn campaign_command(
    options: &CampaignOptions,
    jobs: usize,
    expectations: Option<&Path>,
) -> String {
    let mut command = format!(
        "{}{} fuzz --backend {} --seed {}",
        options.env_prefix,
        options.program,
        shell_word(&options.backend_name),
        options.seed
    );
    if let Some(cases) = options.cases {
        command.push_str(&format!(" --cases {cases}"));
    }
    if let Some(time) = options.time {
        command.push_str(&format!(" --time {}", time.as_secs_f64()));
    }
    if let Some(op) = options.op {
        command.push_str(&format!(" --op {op}"));
    }
    if let Some(level) = options.pinned_level {
        command.push_str(&format!(" --feature-level {level}"));
    }
    if options.data_sets > 1 {
        command.push_str(&format!(" --data-sets {}", options.data_sets));
    }
    match options.mix {
        Mix::ValidOnly => command.push_str(" --valid-only"),
        Mix::InvalidOnly => command.push_str(" --invalid-only"),
        Mix::Both => {}
    }
    if options.shard.count > 1 {
        command.push_str(&format!(
            " --shard {}/{}",
            options.shard.index, options.shard.count
        ));
    }
    if jobs > 1 {
        command.push_str(&format!(" --jobs {jobs}"));
    }
    if let Some(path) = expectations {
        command.push_str(&format!(
            " --expectations {}",
            shell_word(&path.display().to_string())
        ));
    }
    command
}

/// The `--json` report.
pub fn json_report(options: &CampaignOptions, outcome: &CampaignOutcome, command: &str) -> String {
    let buckets: Vec<serde_json::Value> = outcome
        .buckets
        .iter()
        .map(|b| {
            let (name, reason) = match &b.status {
                BucketStatus::New => (None, None),
                BucketStatus::Known { name, reason } => (Some(name.clone()), Some(reason.clone())),
                BucketStatus::Informational { reason } => (None, Some(reason.clone())),
            };
            serde_json::json!({
                "signature": b.id,
                "status": b.status.name(),
                "check": b.kind.name(),
                "known_as": name,
                "reason": reason,
                "count": b.count,
                "reproduced": b.reproduced,
                "feature_level": b.case.feature_level.to_string(),
                "first_case_index": b.first_index,
                "first_case_seed": b.first_seed,
                "shrink_seconds": b.shrink_time.as_secs_f64(),
                "shrinks": b.shrinks,
                "shrink_checks": b.shrink_checks,
                "saved_case": b.saved.as_ref().map(|p| p.display().to_string()),
                "replay": b.replay,
                "report": b.report,
            })
        })
        .collect();
    // Descriptors judged at each level.
    let levels: serde_json::Map<String, serde_json::Value> = (outcome.levels.iter())
        .map(|(level, n)| (level.to_string(), serde_json::json!(n)))
        .collect();
    let report = serde_json::json!({
        "backend": options.backend_name,
        "device": options.device,
        "seed": options.seed,
        "shard": format!("{}/{}", options.shard.index, options.shard.count),
        "jobs": outcome.jobs,
        "feature_levels": levels,
        "data_sets_per_descriptor": options.data_sets.max(1),
        "cases_run": outcome.cases_run,
        "descriptors_run": outcome.descriptors_run,
        "seconds": outcome.elapsed.as_secs_f64(),
        "cases_per_second": outcome.rate(),
        "descriptors_per_second": outcome.descriptor_rate(),
        "shrink_seconds": outcome.shrink_time().as_secs_f64(),
        "new_findings": outcome.new_buckets().count(),
        "unclassified_failures": outcome.unclassified,
        "summary": outcome.summary_line(),
        "replay": command,
        "buckets": buckets,
    });
    serde_json::to_string_pretty(&report).unwrap_or_default()
}
