//! Campaigns against the CPU backend with bugs planted in a wrapper: each bug is one bucket
//! whatever the seed, two bugs are two buckets, and each bucket's saved minimal case fails
//! the same way when replayed as an ordinary corpus case (and passes on the real backend).

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::signature::features;
use dmlcts_fuzz::{BucketStatus, CampaignOptions, CampaignOutcome, CheckKind, run_campaign};
use dmlcts_harness::{Corpus, RunOptions, Status, run_case};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding, Rejected,
};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bug {
    /// A Slice1 with a negative window stride on a dimension whose output size is 3 or more
    /// gets its first output byte flipped.
    NegativeStrideFlip,
    /// A valid Join of 3 or more inputs is rejected.
    RejectsJoinOfThree,
    /// A Split of 11 or more outputs fills them in the string order of their index ("10"
    /// before "2"): output 2 gets what belongs to output 10 (its first byte flipped stands in).
    OutputsInStringOrder,
}

struct Planted {
    real: CpuBackend,
    bugs: Vec<Bug>,
}

struct Flipping<'a> {
    inner: Box<dyn CompiledOperator + 'a>,
    /// The output whose first byte is flipped.
    output: usize,
}

impl CompiledOperator for Flipping<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.inner.execute(inputs, outputs)?;
        outputs[self.output].bytes_mut()[0] ^= 0x01;
        Ok(())
    }
}

impl Backend for Planted {
    fn name(&self) -> String {
        "planted".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let compiled = self.real.compile(op)?;
        match op {
            OperatorDesc::Slice1(d)
                if self.bugs.contains(&Bug::NegativeStrideFlip)
                    && d.input_window_strides
                        .iter()
                        .zip(&d.output_tensor.sizes)
                        .any(|(&stride, &size)| stride < 0 && size >= 3) =>
            {
                Ok(Box::new(Flipping {
                    inner: compiled,
                    output: 0,
                }))
            }
            OperatorDesc::Split(d)
                if self.bugs.contains(&Bug::OutputsInStringOrder)
                    && d.output_tensors.len() >= 11 =>
            {
                Ok(Box::new(Flipping {
                    inner: compiled,
                    output: 2,
                }))
            }
            OperatorDesc::Join(d)
                if self.bugs.contains(&Bug::RejectsJoinOfThree) && d.input_tensors.len() >= 3 =>
            {
                Err(CompileError::Rejected(Rejected {
                    rule: None,
                    message: "planted: three or more inputs".into(),
                }))
            }
            _ => Ok(compiled),
        }
    }
}

fn out_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-planted-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn campaign(bugs: &[Bug], seed: u64, cases: u64, out: Option<PathBuf>) -> CampaignOutcome {
    let backend = Planted {
        real: CpuBackend::new(),
        bugs: bugs.to_vec(),
    };
    let mut options = CampaignOptions::new("planted", seed);
    options.cases = Some(cases);
    options.out_dir = out;
    options.shrink_time = Duration::from_secs(30);
    run_campaign(&[&backend], &options, |_| {})
}

#[test]
fn two_planted_bugs_give_two_buckets_each_with_a_minimal_case_that_replays() {
    let dir = out_dir("two");
    let outcome = campaign(
        &[Bug::NegativeStrideFlip, Bug::RejectsJoinOfThree],
        7,
        3000,
        Some(dir.clone()),
    );
    assert_eq!(outcome.cases_run, 3000, "the campaign ran its whole budget");
    let mut ids: Vec<&str> = outcome.buckets.iter().map(|b| b.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [
            "rejection.join.e4.several_parts",
            "values.slice1.e4.negative_stride"
        ]
    );
    assert_eq!(outcome.buckets.len(), 2, "buckets: {ids:?}");
    assert!(
        outcome
            .buckets
            .iter()
            .all(|b| b.status == BucketStatus::New)
    );
    assert!(
        outcome.buckets.iter().all(|b| b.count >= 2),
        "each bug is hit more than once in 3000 cases"
    );
    assert_eq!(outcome.summary_line(), "2 new findings");
    for bucket in &outcome.buckets {
        let saved = bucket.saved.as_ref().expect("every bucket is saved");
        assert_eq!(saved, &dir.join(format!("{}.yaml", bucket.id)));
        let text = std::fs::read_to_string(saved).unwrap();
        // Written once, when the bucket was found (jobs = 1: its first case is its lowest).
        assert!(text.contains(&format!(
            "# first found: case {} of seed 7 (case seed {}); the campaign's report counts its hits",
            bucket.first_index, bucket.first_seed
        )));
        let corpus = Corpus::load_path(saved);
        assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
        let [case] = corpus.cases.as_slice() else {
            panic!("one case per file")
        };
        // Minimal: at most 2 dimensions.
        assert!(
            case.op.outputs()[0].1.sizes.len() <= 2,
            "{}: {:?}",
            bucket.id,
            case.op
        );
        let planted = Planted {
            real: CpuBackend::new(),
            bugs: vec![Bug::NegativeStrideFlip, Bug::RejectsJoinOfThree],
        };
        let replayed = run_case(&planted, case, &RunOptions::default());
        assert_eq!(replayed.status, Status::Failed, "{}", bucket.id);
        assert_eq!(CheckKind::of(&replayed), bucket.kind);
        let real = run_case(&CpuBackend::new(), case, &RunOptions::default());
        assert_eq!(real.status, Status::Passed, "{}", real.failure_report());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn one_planted_bug_found_from_five_seeds_lands_in_one_bucket() {
    for seed in [1, 2, 3, 4, 5] {
        let outcome = campaign(&[Bug::NegativeStrideFlip], seed, 1500, None);
        let ids: Vec<&str> = outcome.buckets.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["values.slice1.e4.negative_stride"], "seed {seed}");
        let case = &outcome.buckets[0].case;
        assert_eq!(features(&case.op), ["negative_stride"], "seed {seed}");
    }
}

#[test]
fn a_bug_past_ten_outputs_is_found_by_a_3000_case_campaign() {
    let outcome = campaign(&[Bug::OutputsInStringOrder], 1, 3000, None);
    let [bucket] = outcome.buckets.as_slice() else {
        panic!("{:?}", outcome.buckets)
    };
    assert!(bucket.count >= 2, "met {} time(s)", bucket.count);
    let OperatorDesc::Split(d) = &bucket.case.op else {
        panic!("{:?}", bucket.case.op)
    };
    assert!(d.output_tensors.len() >= 11);
}

/// Fails its first compile only, as a hang of a shared machine would.
struct FailsOnce {
    real: CpuBackend,
    failed: std::sync::atomic::AtomicBool,
}

impl Backend for FailsOnce {
    fn name(&self) -> String {
        "fails-once".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        if !self.failed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return Err(CompileError::Failed(
                "no reply within 60.0 s (hung?)".into(),
            ));
        }
        self.real.compile(op)
    }
}

#[test]
fn a_failure_that_does_not_come_back_is_reported_as_not_reproduced_and_not_shrunk() {
    let backend = FailsOnce {
        real: CpuBackend::new(),
        failed: std::sync::atomic::AtomicBool::new(false),
    };
    let mut options = CampaignOptions::new("fails-once", 3);
    options.cases = Some(300);
    let outcome = run_campaign(&[&backend], &options, |_| {});
    assert_eq!(outcome.cases_run, 300);
    let [bucket] = outcome.buckets.as_slice() else {
        panic!("{:?}", outcome.buckets)
    };
    assert_eq!(bucket.kind, CheckKind::Hang);
    assert_eq!((bucket.count, bucket.first_index), (1, 0));
    assert!(!bucket.reproduced);
    assert_eq!(outcome.summary_line(), "1 new finding");
}
