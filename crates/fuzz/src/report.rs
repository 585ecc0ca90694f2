//! The campaign's report, read from what it produced: the `--json` report, and the command
//! that repeats the campaign. (Shard reports are merged by `merge`.)

use crate::options::CampaignOptions;
use crate::outcome::{BucketStatus, CampaignOutcome};
use crate::replay::Replay;

/// The command that repeats a campaign (see [`crate::replay::campaign_replay`]), rendered:
/// a `--time` campaign is repeated by the cases it ran.
pub fn campaign_command(
    options: &CampaignOptions,
    jobs: usize,
    outcome: Option<&CampaignOutcome>,
) -> Replay {
    crate::replay::campaign_replay(options, jobs, outcome.map(|o| o.descriptors_run))
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
                "operator": b.case.op.kind().to_string(),
                "feature_level": b.case.feature_level.to_string(),
                "first_case_index": b.first_index,
                "first_case_seed": b.first_seed,
                "shrink_seconds": b.shrink_time.as_secs_f64(),
                "shrinks": b.shrinks,
                "shrink_checks": b.shrink_checks,
                "saved_case": b.saved.as_ref().map(|p| p.display().to_string()),
                "replay": b.replay.as_ref().map(Replay::render),
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
        "skipped_descriptors": outcome.skipped,
        "skipped_everything": outcome.skipped_everything(),
        "skip_reasons": (outcome.skip_reasons.iter())
            .map(|(reason, count)| serde_json::json!({"reason": reason, "count": count}))
            .collect::<Vec<_>>(),
        "unclassified_failures": outcome.unclassified,
        "summary": outcome.summary_line(),
        "coverage": outcome.coverage.json(),
        "replay": command,
        "buckets": buckets,
    });
    serde_json::to_string_pretty(&report).unwrap_or_default()
}
