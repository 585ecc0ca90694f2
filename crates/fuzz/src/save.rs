//! What a campaign leaves behind as it runs: one minimal case per bucket, saved in the corpus
//! format and named by its signature, with the command that replays it.

use crate::check::materialize_all;
use crate::options::CampaignOptions;
use crate::outcome::{Bucket, BucketStatus};
use crate::replay::shell_word;
use dmlcts_harness::corpus::data::logical_elements;
use dmlcts_harness::{Expectation, cases_to_yaml};
use dmlcts_oracle::execute as oracle_execute;

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

/// A name made of `[a-z0-9_]`.
pub fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}
