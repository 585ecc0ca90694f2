//! What a campaign leaves behind: one minimal case per bucket, saved in the corpus format and
//! named by its signature, and the `--json` report.

use crate::campaign::slug;
use crate::check::{Mix, materialize_all};
use crate::options::CampaignOptions;
use crate::outcome::{Bucket, BucketStatus, CampaignOutcome};
use dmlcts_harness::data::logical_elements;
use dmlcts_harness::{Expectation, cases_to_yaml};
use dmlcts_oracle::execute as oracle_execute;
use std::path::Path;

/// The `DMLCTS_*` settings of this process, as `NAME=value ` words for a command line: they
/// shape a run (adapter choice, Vulkan driver, extra cases), so a replay needs them.
pub fn env_prefix() -> String {
    let mut settings: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| name.starts_with("DMLCTS_"))
        .collect();
    settings.sort();
    settings
        .iter()
        .map(|(name, value)| format!("{name}={} ", shell_word(value)))
        .collect()
}

fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

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

/// Writes the bucket's minimal case to `out_dir/<signature>.yaml` (again, with the final
/// count, at the end of the campaign) and sets `saved` and `replay`. Informational buckets
/// are not failures and are not saved (a values-only backend would otherwise leave one
/// must-reject case per rule in cases/regressions/, the corpus's own folder).
pub fn save_bucket(options: &CampaignOptions, bucket: &mut Bucket) {
    let Some(out_dir) = &options.out_dir else {
        return;
    };
    if matches!(bucket.status, BucketStatus::Informational { .. }) {
        return;
    }
    let mut case = bucket.case.clone();
    case.name = format!("regression.{}.{}", slug(&options.backend_name), bucket.id);
    case.file = String::new();
    case.description = Some(format!(
        "found by {} fuzz --backend {} --seed {} (case {})",
        options.program, options.backend_name, options.seed, bucket.first_index
    ));
    case.tags = vec!["regression".to_string()];
    // Stored expected values make the file readable; the oracle recomputes them anyway.
    if case.expect == Expectation::Accept
        && let Ok(inputs) = materialize_all(&case)
    {
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        if let Ok(outputs) = oracle_execute(&case.op, &refs) {
            case.expected = case
                .op
                .outputs()
                .iter()
                .zip(&outputs)
                .map(|((_, d), o)| Some(logical_elements(d, &o.bytes)))
                .collect();
        }
    }
    let path = out_dir.join(format!("{}.yaml", bucket.id));
    let status = match &bucket.status {
        BucketStatus::New if !bucket.reproduced => {
            "NEW, but it did not fail again when re-run (flaky?), so it was not shrunk".to_string()
        }
        BucketStatus::New => "NEW".to_string(),
        BucketStatus::Known { name, reason } => format!("known ({name}: {reason})"),
        BucketStatus::Informational { reason } => format!("informational ({reason})"),
    };
    let header = format!(
        "# Saved by `cargo xtask fuzz`: the minimal case of bucket {}\n\
         # status: {status}\n\
         # hits: {} (first: case {} of seed {}, case seed {})\n\
         # What failed:\n{}\n",
        bucket.id,
        bucket.count,
        bucket.first_index,
        options.seed,
        bucket.first_seed,
        bucket
            .report
            .lines()
            .map(|l| format!("#   {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let body = header + &cases_to_yaml(std::slice::from_ref(&case));
    let replay = format!(
        "{}{} conformance --backend {} --cases {}",
        options.env_prefix,
        options.program,
        shell_word(&options.backend_name),
        shell_word(&path.display().to_string())
    );
    match std::fs::create_dir_all(out_dir).and_then(|()| std::fs::write(&path, body)) {
        Ok(()) => {
            bucket.saved = Some(path);
            bucket.replay = Some(replay);
        }
        Err(e) => {
            bucket
                .report
                .push_str(&format!("\n(could not write {}: {e})", path.display()));
        }
    }
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
                "first_case_index": b.first_index,
                "first_case_seed": b.first_seed,
                "saved_case": b.saved.as_ref().map(|p| p.display().to_string()),
                "replay": b.replay,
                "report": b.report,
            })
        })
        .collect();
    let report = serde_json::json!({
        "backend": options.backend_name,
        "device": options.device,
        "seed": options.seed,
        "shard": format!("{}/{}", options.shard.index, options.shard.count),
        "jobs": outcome.jobs,
        "cases_run": outcome.cases_run,
        "seconds": outcome.elapsed.as_secs_f64(),
        "cases_per_second": outcome.rate(),
        "new_findings": outcome.new_buckets().count(),
        "unclassified_failures": outcome.unclassified,
        "summary": outcome.summary_line(),
        "replay": command,
        "buckets": buckets,
    });
    serde_json::to_string_pretty(&report).unwrap_or_default()
}
