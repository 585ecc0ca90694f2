//! Known differences from the expectations file: a failure described by a predicate or a
//! signature counts as known and the campaign keeps searching; acceptances of near misses of
//! a rule the backend does not enforce by design are informational, never new.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::{BucketStatus, CampaignOptions, CampaignOutcome, Mix, run_campaign};
use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::expectations::{KnownDifference, NotEnforced};
use dmlcts_oracle::validate;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OperatorKind,
    OutputBinding, ValidationProfile,
};
use std::time::Duration;

/// The CPU backend with DirectML's Slice1 window-shape difference imitated (the first output
/// byte is wrong whenever the predicate holds) and no check of windows inside the input.
struct DirectMlLike(CpuBackend);

struct Flipping<'a>(Box<dyn CompiledOperator + 'a>);

impl CompiledOperator for Flipping<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        outputs[0].bytes_mut()[0] ^= 0x01;
        Ok(())
    }
}

/// Accepts and writes nothing.
struct Lenient;

impl CompiledOperator for Lenient {
    fn execute(&self, _: &[&[u8]], _: &mut [OutputBinding<'_>]) -> Result<(), String> {
        Ok(())
    }
}

impl Backend for DirectMlLike {
    fn name(&self) -> String {
        "dmllike".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn device(&self) -> String {
        "imitation, version 1.12.1".into()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        if let Err(violation) = validate(op, FeatureLevel::L4_1)
            && violation.rule == "slice1.window_inside_input"
        {
            return Ok(Box::new(Lenient));
        }
        let compiled = self.0.compile(op)?;
        let window_shape =
            dmlcts_harness::expectations::predicate("slice1.output_smaller_than_window")
                .expect("a named predicate")
                .holds;
        if window_shape(op) {
            Ok(Box::new(Flipping(compiled)))
        } else {
            Ok(compiled)
        }
    }
}

const EXPECTATIONS: &str = r#"
known_differences:
  - name: slice1 window shape
    backend: dmllike
    versions: ">=1.9.0, <=1.15.4"
    check: values
    predicate: slice1.output_smaller_than_window
    reason: imitated
not_enforced:
  - backend: dmllike
    rules: [slice1.window_inside_input]
    reason: clamps windows, by design
"#;

fn expectations() -> Expectations {
    let path = std::env::temp_dir().join(format!("dmlcts-known-{}.yaml", std::process::id()));
    std::fs::write(&path, EXPECTATIONS).unwrap();
    let loaded = Expectations::load(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    loaded
}

fn campaign(
    known: Vec<KnownDifference>,
    not_enforced: Vec<NotEnforced>,
    mix: Mix,
) -> CampaignOutcome {
    let backend = DirectMlLike(CpuBackend::new());
    let mut options = CampaignOptions::new("dmllike", 5);
    // Plain cases only: a sibling group's B is a near miss of its own (a window moved past
    // the input), which this imitation of DirectML accepts: a finding these counts leave out.
    options.siblings = false;
    options.cases = Some(3000);
    options.op = Some(OperatorKind::Slice1);
    options.mix = mix;
    options.device = backend.device();
    options.shrink_time = Duration::from_secs(30);
    options.known_differences = known;
    options.not_enforced = not_enforced;
    run_campaign(&[&backend], &options, |_| {})
}

#[test]
fn a_difference_known_by_predicate_is_counted_as_known_and_the_campaign_goes_on() {
    let known = expectations().known_differences;
    let outcome = campaign(known, Vec::new(), Mix::ValidOnly);
    assert_eq!(outcome.cases_run, 3000);
    let [bucket] = outcome.buckets.as_slice() else {
        panic!("{:?}", outcome.buckets)
    };
    assert_eq!(bucket.id, "known.slice1_window_shape");
    assert!(
        matches!(&bucket.status, BucketStatus::Known { name, .. } if name == "slice1 window shape")
    );
    assert_eq!(
        outcome.summary_line(),
        format!(
            "0 new findings; known: slice1 window shape x {}",
            bucket.count
        )
    );
    assert!(bucket.count >= 1);
    // Its statement: the cases with a window larger than their output that the predicate
    // describes failed as known (never `failed`, which would contradict the verdict); the
    // others passed.
    let tally = &outcome.coverage.tallies["slice1.window_larger_than_output"];
    assert_eq!(tally.failed, 0, "{tally:?}");
    assert!(
        tally.expected_failures >= 1 && tally.passed >= 1,
        "{tally:?}"
    );
    let state = outcome.coverage.state("slice1.window_larger_than_output");
    assert_eq!(state.name(), "checked");
}

#[test]
fn without_the_entry_the_same_difference_is_one_new_bucket_and_a_signature_entry_knows_it() {
    let outcome = campaign(Vec::new(), Vec::new(), Mix::ValidOnly);
    let ids: Vec<&str> = outcome.buckets.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["values.slice1.e4.output_smaller_inner"]);
    assert_eq!(outcome.buckets[0].status, BucketStatus::New);
    assert_eq!(
        outcome
            .coverage
            .state("slice1.window_larger_than_output")
            .name(),
        "failed"
    );

    let by_signature = KnownDifference {
        name: "window shape, by signature".into(),
        signature: Some("values.slice1.e4.output_smaller_inner".into()),
        predicate: None,
        ..expectations().known_differences[0].clone()
    };
    let outcome = campaign(vec![by_signature], Vec::new(), Mix::ValidOnly);
    assert_eq!(outcome.new_buckets().count(), 0);
    assert!(
        outcome
            .summary_line()
            .starts_with("0 new findings; known: window shape, by signature x ")
    );

    // An entry for other versions does not apply.
    let other_version = KnownDifference {
        versions: Some(
            dmlcts_harness::expectations::VersionSpec::parse(&["1.15.4".into()]).unwrap(),
        ),
        ..expectations().known_differences[0].clone()
    };
    let outcome = campaign(vec![other_version], Vec::new(), Mix::ValidOnly);
    assert_eq!(outcome.new_buckets().count(), 1);
}

#[test]
fn near_misses_of_a_rule_not_enforced_by_design_are_informational() {
    let outcome = campaign(Vec::new(), Vec::new(), Mix::InvalidOnly);
    let new: Vec<&str> = outcome.new_buckets().map(|b| b.id.as_str()).collect();
    assert!(
        new.contains(&"acceptance.slice1.slice1.window_inside_input"),
        "{new:?}"
    );

    let expectations = expectations();
    let outcome = campaign(
        expectations.known_differences,
        expectations.not_enforced,
        Mix::InvalidOnly,
    );
    assert_eq!(outcome.new_buckets().count(), 0, "{:?}", outcome.buckets);
    let info: Vec<&str> = outcome
        .buckets
        .iter()
        .filter(|b| matches!(b.status, BucketStatus::Informational { .. }))
        .map(|b| b.id.as_str())
        .collect();
    assert_eq!(info, ["acceptance.slice1.slice1.window_inside_input"]);
    assert!(
        outcome
            .summary_line()
            .contains("informational (not enforced by design): ")
    );
}

#[test]
fn an_expectations_file_naming_an_unknown_predicate_or_rule_is_refused_with_the_field() {
    let path = std::env::temp_dir().join(format!("dmlcts-known-bad-{}.yaml", std::process::id()));
    let bad = EXPECTATIONS.replace(
        "predicate: slice1.output_smaller_than_window",
        "predicate: slice1.output_smaller",
    );
    std::fs::write(&path, bad).unwrap();
    let error = Expectations::load(&path).unwrap_err();
    assert!(
        error.ends_with(
            "known_differences[0] (slice1 window shape): predicate: unknown `slice1.output_smaller`; known: \
             slice1.output_smaller_than_window, slice1.zero_window_stride, slice1.empty_output, \
             slice1.negative_stride_unsigned, slice1.negative_stride, \
             tensor.narrow_integer_not_whole_words, slice1.int32_min_window_stride, \
             tensor.64_bit_type, tensor.float16, tensor.float32, join.float_rank_7_or_8, \
             tensor.output_overlap_without_zero_stride, join.one_input_outermost_size_1, \
             slice1.no_dimensions"
        ),
        "{error}"
    );
    let bad = EXPECTATIONS.replace("[slice1.window_inside_input]", "[slice1.window_inside]");
    std::fs::write(&path, bad).unwrap();
    let error = Expectations::load(&path).unwrap_err();
    assert!(
        error.ends_with(
            "not_enforced[0]: rules: unknown rule `slice1.window_inside` (rule ids are in specs/)"
        ),
        "{error}"
    );
    let _ = std::fs::remove_file(&path);
}

/// The CPU backend under the values-only profile, accepting every descriptor.
struct ValuesOnly(CpuBackend);

impl Backend for ValuesOnly {
    fn name(&self) -> String {
        "values-only-cpu".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn validation_profile(&self) -> ValidationProfile {
        ValidationProfile::ValuesOnly
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match self.0.compile(op) {
            Err(CompileError::Rejected(_)) => Ok(Box::new(Lenient)),
            other => other,
        }
    }
}

#[test]
fn a_values_only_backend_accepting_every_near_miss_has_no_new_findings_only_informational_buckets()
{
    let backend = ValuesOnly(CpuBackend::new());
    let mut options = CampaignOptions::new("values-only-cpu", 11);
    options.cases = Some(2000);
    options.mix = Mix::Both;
    options.shrink_time = Duration::from_secs(30);
    let out = std::env::temp_dir().join(format!("dmlcts-values-only-{}", std::process::id()));
    options.out_dir = Some(out.clone());
    let outcome = run_campaign(&[&backend], &options, |_| {});
    assert_eq!(outcome.cases_run, 2000);
    // Informational buckets are not failures: nothing is saved as a regression case.
    assert!(outcome.buckets.iter().all(|b| b.saved.is_none()));
    assert!(!out.exists(), "{}", out.display());
    assert_eq!(outcome.new_buckets().count(), 0, "{:?}", outcome.buckets);
    let info: Vec<_> = outcome
        .buckets
        .iter()
        .filter(|b| matches!(b.status, BucketStatus::Informational { .. }))
        .collect();
    assert_eq!(info.len(), outcome.buckets.len());
    // Near misses of many rules, each its own bucket, each naming its rule.
    assert!(
        info.len() >= 10,
        "{:?}",
        info.iter().map(|b| &b.id).collect::<Vec<_>>()
    );
    for bucket in &info {
        let BucketStatus::Informational { reason } = &bucket.status else {
            unreachable!()
        };
        assert!(
            reason.starts_with("accepted; DirectML rejects it: rule ")
                && reason.ends_with(" (validation profile values-only)"),
            "{reason}"
        );
    }
    let total: u64 = info.iter().map(|b| b.count).sum();
    assert_eq!(
        outcome.summary_line(),
        format!("0 new findings; informational (not enforced by design): {total}")
    );
}
