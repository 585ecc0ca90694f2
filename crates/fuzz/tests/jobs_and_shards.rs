//! `--jobs` and `--shard`: the same seed runs the same cases whatever the number of jobs,
//! shards run disjoint cases that together are the whole campaign, and buckets do not depend
//! on either.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::campaign::case_indices;
use dmlcts_fuzz::{CampaignOptions, CampaignOutcome, Shard, run_campaign};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
};
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

/// The CPU backend, recording every descriptor it compiles; Slice1s with a negative stride
/// on an output dimension of 3 or more come out wrong (one bug, for the buckets).
struct Recording {
    real: CpuBackend,
    seen: Mutex<Vec<String>>,
}

struct Flipping<'a>(Box<dyn CompiledOperator + 'a>);

impl CompiledOperator for Flipping<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        outputs[0].bytes_mut()[0] ^= 0x80;
        Ok(())
    }
}

impl Backend for Recording {
    fn name(&self) -> String {
        "recording".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.seen.lock().unwrap().push(format!("{op:?}"));
        let compiled = self.real.compile(op)?;
        match op {
            OperatorDesc::Slice1(d)
                if d.input_window_strides
                    .iter()
                    .zip(&d.output_tensor.sizes)
                    .any(|(&stride, &size)| stride < 0 && size >= 3) =>
            {
                Ok(Box::new(Flipping(compiled)))
            }
            _ => Ok(compiled),
        }
    }
}

fn recording() -> Recording {
    Recording {
        real: CpuBackend::new(),
        seen: Mutex::new(Vec::new()),
    }
}

/// Runs a campaign on `jobs` recording backends; returns the outcome and every descriptor
/// compiled. Shrinking compiles more, depending on which hit of a bucket came first, so
/// `run` does not shrink.
fn run(seed: u64, cases: u64, jobs: usize, shard: Shard) -> (CampaignOutcome, Vec<String>) {
    run_shrinking(seed, cases, jobs, shard, Duration::ZERO)
}

fn run_shrinking(
    seed: u64,
    cases: u64,
    jobs: usize,
    shard: Shard,
    shrink_time: Duration,
) -> (CampaignOutcome, Vec<String>) {
    let backends: Vec<Recording> = (0..jobs).map(|_| recording()).collect();
    let refs: Vec<&dyn Backend> = backends.iter().map(|b| b as &dyn Backend).collect();
    let mut options = CampaignOptions::new("recording", seed);
    options.cases = Some(cases);
    options.shard = shard;
    options.shrink_time = shrink_time;
    options.max_findings = usize::MAX;
    let outcome = run_campaign(&refs, &options, |_| {});
    let mut seen: Vec<String> = backends
        .into_iter()
        .flat_map(|b| b.seen.into_inner().unwrap())
        .collect();
    seen.sort_unstable();
    (outcome, seen)
}

fn bucket_counts(outcome: &CampaignOutcome) -> Vec<(String, u64, u64)> {
    let mut counts: Vec<_> = outcome
        .buckets
        .iter()
        .map(|b| (b.id.clone(), b.count, b.first_index))
        .collect();
    counts.sort();
    counts
}

fn hits(outcome: &CampaignOutcome) -> u64 {
    outcome.buckets.iter().map(|b| b.count).sum::<u64>() + outcome.unclassified
}

#[test]
fn the_same_seed_runs_the_same_cases_with_one_job_or_three() {
    let (one, seen_one) = run(42, 1500, 1, Shard::WHOLE);
    let (again, seen_again) = run(42, 1500, 1, Shard::WHOLE);
    let (three, seen_three) = run(42, 1500, 3, Shard::WHOLE);
    assert_eq!(one.cases_run, 1500);
    assert_eq!(three.cases_run, 1500);
    assert_eq!(three.jobs, 3);
    assert_eq!(seen_one, seen_again, "same seed, same cases");
    assert_eq!(
        seen_one, seen_three,
        "three jobs compile the same descriptors"
    );
    assert!(hits(&one) > 0, "the planted bug is hit");
    assert_eq!(hits(&one), hits(&again));
    assert_eq!(hits(&one), hits(&three));
    let (_, seen_other) = run(43, 1500, 1, Shard::WHOLE);
    assert_ne!(seen_one, seen_other, "another seed, other cases");
}

#[test]
fn the_same_seed_gives_the_same_buckets_with_one_job_or_three() {
    let shrink = Duration::from_secs(30);
    let (one, _) = run_shrinking(42, 1500, 1, Shard::WHOLE, shrink);
    let (three, _) = run_shrinking(42, 1500, 3, Shard::WHOLE, shrink);
    assert_eq!(
        bucket_counts(&one),
        [(
            "values.slice1.e4.negative_stride".to_string(),
            hits(&one),
            one.buckets[0].first_index
        )]
    );
    assert_eq!(bucket_counts(&one), bucket_counts(&three));
}

#[test]
fn shards_are_disjoint_and_merge_into_the_whole_campaign() {
    let (whole, seen_whole) = run(9, 1200, 1, Shard::WHOLE);
    let mut merged_seen = Vec::new();
    let mut merged_cases = 0;
    let mut indices: Vec<BTreeSet<u64>> = Vec::new();
    let mut merged_hits = 0;
    for index in 0..3 {
        let shard = Shard { index, count: 3 };
        let mut options = CampaignOptions::new("recording", 9);
        options.cases = Some(1200);
        options.shard = shard;
        indices.push(case_indices(&options).collect());
        let (outcome, seen) = run(9, 1200, 2, shard);
        merged_cases += outcome.cases_run;
        merged_hits += hits(&outcome);
        merged_seen.extend(seen);
    }
    assert_eq!(indices.iter().map(BTreeSet::len).sum::<usize>(), 1200);
    for a in 0..3 {
        for b in a + 1..3 {
            assert!(indices[a].is_disjoint(&indices[b]), "shards {a} and {b}");
        }
    }
    merged_seen.sort_unstable();
    assert_eq!(merged_cases, whole.cases_run);
    assert_eq!(
        merged_seen, seen_whole,
        "the shards' cases are the whole campaign's"
    );
    assert!(merged_hits > 0);
    assert_eq!(merged_hits, hits(&whole));
}

#[test]
fn a_shard_is_parsed_from_i_of_n() {
    assert_eq!(Shard::parse("1/4"), Ok(Shard { index: 1, count: 4 }));
    assert!(Shard::parse("4/4").unwrap_err().contains("need 0 <= I < N"));
    assert!(Shard::parse("0/0").is_err());
    assert!(Shard::parse("2").unwrap_err().contains("is not I/N"));
}
