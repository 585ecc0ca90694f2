//! A table-first backend that offers every level (tests/table_first), with one planted bug per
//! rule id in specs/, one at a time: the corpus and a 3,000-case campaign at every offered
//! level each catch every one; the clean backend passes both.

mod table_first;

use dmlcts_fuzz::{BucketStatus, CampaignOptions, CampaignOutcome, run_campaign_at_levels};
use dmlcts_harness::{Corpus, Devices, Expectation, Status, run_case};
use dmlcts_oracle::spec;
use dmlcts_tensor::{Backend, FeatureLevel};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use table_first::{Bug, TableFirst, bugs};

fn devices(bug: Option<Bug>) -> Vec<TableFirst> {
    let largest = Arc::default();
    FeatureLevel::ALL
        .into_iter()
        .map(|level| TableFirst {
            level,
            bug,
            largest: Arc::clone(&largest),
        })
        .collect()
}

/// Runs the corpus's cases (the must-reject ones only, or all) as `conformance` does with a
/// backend that offers every level: each at its own level, on the device at that level.
fn corpus_failures(bug: Option<Bug>, reject_only: bool) -> Vec<String> {
    let corpus = Corpus::embedded();
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    let mut devices = Devices::per_case(
        Box::new(move |level| Arc::new(TableFirst::new(level, bug)) as Arc<dyn Backend>),
        false,
    );
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in &corpus.cases {
        if reject_only && case.expect == Expectation::Accept {
            continue;
        }
        let (device, options) = devices.for_case(case);
        let result = run_case(device.as_ref(), case, &options);
        ran += usize::from(result.status != Status::Skipped);
        if result.status == Status::Failed {
            failures.push(format!("{}: {}", result.name, result.reason));
        }
    }
    assert!(ran > 100, "only {ran} cases ran");
    failures
}

fn campaign(bug: Option<Bug>, stop_at_first: bool) -> (CampaignOutcome, BTreeMap<usize, u128>) {
    let devices = devices(bug);
    let job: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut options = CampaignOptions::new("table-first", 1);
    options.cases = Some(3000);
    options.shrink_time = Duration::ZERO;
    options.stop_after_findings = stop_at_first.then_some(1);
    let outcome = run_campaign_at_levels(&[job], &options, |_| {});
    let largest = devices[0].largest.lock().unwrap().clone();
    (outcome, largest)
}

#[test]
fn there_is_one_planted_bug_per_rule_id_in_specs() {
    let planted: Vec<&str> = bugs().iter().map(|b| b.rule).collect();
    let ids: Vec<&str> = spec::all_constraints()
        .into_iter()
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(planted, ids);
}

#[test]
fn the_clean_backend_passes_the_corpus_and_a_campaign_at_every_level() {
    assert_eq!(corpus_failures(None, false), Vec::<String>::new());
    let (outcome, largest) = campaign(None, false);
    assert_eq!(outcome.descriptors_run, 3000);
    // The large tier: past 2^20 elements in every element size.
    for size in [1, 2, 4, 8] {
        assert!(
            largest[&size] > 1 << 20,
            "{size}-byte elements: at most {}",
            largest[&size]
        );
    }
    let new: Vec<String> = outcome
        .new_buckets()
        .map(|b| format!("{}\n{}", b.id, b.report))
        .collect();
    assert!(new.is_empty(), "{}", new.join("\n"));
    assert_eq!(outcome.levels.len(), FeatureLevel::ALL.len());
    assert!(
        outcome.levels.iter().all(|&(_, n)| n > 50),
        "{:?}",
        outcome.levels
    );
}

#[test]
fn the_corpus_catches_every_planted_bug() {
    let mut missed = Vec::new();
    for bug in bugs() {
        let failures = corpus_failures(Some(bug), true);
        if failures.is_empty() {
            missed.push(bug.rule);
        }
    }
    assert!(
        missed.is_empty(),
        "no must-reject case catches a backend where these are checked wrong: {missed:?}"
    );
}

#[test]
fn a_3000_case_campaign_catches_every_planted_bug_at_the_offered_levels() {
    let mut missed = Vec::new();
    for bug in bugs() {
        let (outcome, _) = campaign(Some(bug), true);
        let found: Vec<_> = outcome.new_buckets().collect();
        match found.first() {
            Some(bucket) => {
                assert_eq!(bucket.status, BucketStatus::New);
                // Caught as what it is: an acceptance of a near miss of its rule.
                let op = bug.rule.split('.').next().unwrap_or_default();
                let rule_of = |id: &str| id.starts_with("acceptance.") && id.contains(bug.rule);
                assert!(
                    rule_of(&bucket.id)
                        && (op == "tensor" || op == "operator" || bucket.id.contains(op)),
                    "{}: caught as {}",
                    bug.rule,
                    bucket.id
                );
                eprintln!(
                    "{}: caught in {} cases, at {} ({})",
                    bug.rule, outcome.descriptors_run, bucket.case.feature_level, bucket.id
                );
            }
            None => missed.push(format!("{} ({})", bug.rule, bug.what)),
        }
    }
    assert!(missed.is_empty(), "not caught: {missed:#?}");
}

#[test]
fn a_bucket_of_a_level_table_bug_names_its_level_and_its_saved_case_replays_there() {
    let bug = bugs()
        .into_iter()
        .find(|b| b.rule == "split.data_type_supported");
    let dir = std::env::temp_dir().join(format!("dmlcts-levels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let devices = devices(bug);
    let job: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    let mut options = CampaignOptions::new("table-first", 1);
    options.cases = Some(3000);
    options.stop_after_findings = Some(1);
    options.out_dir = Some(dir.clone());
    let outcome = run_campaign_at_levels(&[job], &options, |_| {});
    let bucket = outcome.new_buckets().next().expect("caught");
    let level = bucket.case.feature_level;
    assert!(level < FeatureLevel::L4_1, "{level}");
    let row = dmlcts_fuzz::signature::level_row(bucket.case.op.kind(), level);
    assert_eq!(
        bucket.id,
        format!("acceptance.split.split.data_type_supported.at_{row}")
    );
    let saved = Corpus::load_path(bucket.saved.as_ref().expect("saved"));
    assert!(saved.errors.is_empty(), "{:?}", saved.errors);
    let case = &saved.cases[0];
    assert_eq!(case.feature_level, level);
    // Replayed as `conformance` runs a case: on the device at its own level.
    for (bug, status) in [(bug, Status::Failed), (None, Status::Passed)] {
        let mut devices = Devices::per_case(
            Box::new(move |level| Arc::new(TableFirst::new(level, bug)) as Arc<dyn Backend>),
            false,
        );
        let (device, options) = devices.for_case(case);
        assert_eq!(device.feature_level(), level);
        assert_eq!(run_case(device.as_ref(), case, &options).status, status);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
