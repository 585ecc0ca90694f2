//! Validation profiles in process: a backend that declares which DirectML rules it enforces
//! gets its acceptances of must-reject cases of the other rules as informational (counted
//! apart, never failing the run); a descriptor that also breaks a rule it enforces still
//! fails; rules the expectations file lists as `not_enforced` count the same way.

use clap::Parser;
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_cli::ConformanceArgs;
use dmlcts_cli::Resolved;
use dmlcts_cli::conformance_with;
use dmlcts_harness::report::{Summary, json_report, junit_report};
use dmlcts_harness::{Case, Corpus, Devices, Expectation, RunOptions, Status, run_case};
use dmlcts_oracle::validate;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
    ValidationProfile,
};
use std::sync::Arc;

/// The CPU backend at a level, accepting every descriptor under `profile`.
struct Accepting {
    cpu: CpuBackend,
    level: FeatureLevel,
    profile: ValidationProfile,
}

/// What a descriptor the CPU backend rejects compiles to: it must never be executed.
struct NotExecutable;

impl CompiledOperator for NotExecutable {
    fn execute(&self, _: &[&[u8]], _: &mut [OutputBinding<'_>]) -> Result<(), String> {
        Err("executed a descriptor it cannot run".to_string())
    }
}

impl Backend for Accepting {
    fn name(&self) -> String {
        "accepting-cpu".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.level
    }
    fn validation_profile(&self) -> ValidationProfile {
        self.profile.clone()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match validate(op, self.level) {
            Ok(()) => self.cpu.compile(op),
            Err(_) => Ok(Box::new(NotExecutable)),
        }
    }
}

fn accepting(level: FeatureLevel, profile: ValidationProfile) -> Arc<dyn Backend> {
    Arc::new(Accepting {
        cpu: CpuBackend::new(),
        level,
        profile,
    })
}

fn one_case(yaml: &str) -> Case {
    let mut corpus = Corpus::default();
    corpus.add_text("profiles.yaml", yaml);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    corpus.cases.remove(0)
}

/// Breaks slice1.window_inside_input (dimension 2: 1 + 4 > 4) and, in dimension 3,
/// slice1.window_stride_nonzero.
const TWO_RULES: &str = "
cases:
  - name: profiles.slice1.outside_and_zero_stride
    reject: slice1.window_inside_input
    slice1:
      input_window_offsets: [0, 0, 1, 1]
      input_window_sizes: [1, 1, 4, 3]
      input_window_strides: [1, 1, 2, 0]
      input: {data_type: FLOAT32, sizes: [1, 1, 4, 4]}
      output: {data_type: FLOAT32, sizes: [1, 1, 2, 2]}
";

const ONE_RULE: &str = "
cases:
  - name: profiles.slice1.outside
    reject: slice1.window_inside_input
    slice1:
      input_window_offsets: [0, 0, 1, 1]
      input_window_sizes: [1, 1, 4, 3]
      input_window_strides: [1, 1, 2, 2]
      input: {data_type: FLOAT32, sizes: [1, 1, 4, 4]}
      output: {data_type: FLOAT32, sizes: [1, 1, 2, 2]}
";

/// A sibling group's steps, or the case itself.
fn steps_or_case(case: &Case) -> Vec<&Case> {
    if case.steps.is_empty() {
        vec![case]
    } else {
        case.steps.iter().collect()
    }
}

/// The case itself when it is a must-reject case.
fn as_must_reject(case: &Case) -> Option<&Case> {
    (case.expect != Expectation::Accept).then_some(case)
}

#[test]
fn a_values_only_backend_that_accepts_everything_passes_the_corpus_with_its_acceptances_informational()
 {
    let corpus = Corpus::embedded();
    let mut devices = Devices::per_case(
        Box::new(|level| accepting(level, ValidationProfile::ValuesOnly)),
        false,
    );
    let mut results = Vec::new();
    // Each sibling group's steps one by one (a group whose steps are at two levels needs a
    // session's devices: crates/harness/tests/sibling_groups.rs runs them as groups).
    let cases: Vec<&Case> = (corpus.cases.iter()).flat_map(steps_or_case).collect();
    for &case in &cases {
        let (device, options) = devices.for_case(case);
        let result = run_case(device.as_ref(), case, &options);
        match (as_must_reject(case), result.status) {
            (_, Status::Failed) => panic!("{}", result.failure_report()),
            (Some(rejected), Status::Informational) => {
                let rule = (validate(&rejected.op, rejected.feature_level))
                    .unwrap_err()
                    .rule;
                assert_eq!(
                    result.reason,
                    format!("accepted; DirectML rejects it: rule {rule}")
                );
                assert!(
                    result.details.contains("validation profile: values-only"),
                    "{}",
                    result.details
                );
            }
            (None, Status::Informational) => {
                panic!("{}: a valid case is never informational", case.name)
            }
            _ => {}
        }
        results.push(result);
    }
    let summary = Summary::of(&results);
    let must_reject = (cases.iter())
        .filter(|c| as_must_reject(c).is_some())
        .count();
    // Every must-reject case runs at its own level here, so every one is informational.
    assert_eq!(summary.informational, must_reject);
    assert!(summary.informational > 100, "{summary:?}");
    assert_eq!(summary.failed, 0);
    assert_eq!(
        summary.line(),
        format!(
            "{} passed, 0 failed, {} skipped, {must_reject} informational",
            summary.passed, summary.skipped
        )
    );
    // The reports: JSON counts them and names the status; JUnit does not fail them.
    let json: serde_json::Value = serde_json::from_str(&json_report(
        &dmlcts_harness::report::RunInfo::default(),
        &results,
    ))
    .unwrap();
    assert_eq!(json["summary"]["informational"], must_reject);
    assert_eq!(json["summary"]["failed"], 0);
    assert!(
        json["cases"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["status"] == "informational")
    );
    let junit = junit_report(&dmlcts_harness::report::RunInfo::default(), &results);
    assert!(junit.contains(" failures=\"0\" "), "{}", &junit[..300]);
    assert!(junit.contains("<system-out>informational: accepted; DirectML rejects it: rule "));
}

#[test]
fn the_conformance_command_passes_a_values_only_backend_and_fails_a_strict_one_that_accepts_everything()
 {
    #[derive(Parser)]
    struct Words {
        #[command(flatten)]
        args: ConformanceArgs,
    }
    let json = std::env::temp_dir().join(format!("dmlcts-profiles-{}.json", std::process::id()));
    let run = |profile: ValidationProfile| {
        let words = [
            "conformance",
            "--filter",
            "reject.slice1.",
            "--json",
            json.to_str().unwrap(),
        ];
        let args = Words::parse_from(words).args;
        i32::from(dmlcts_cli::exit_status(&conformance_with(
            &args,
            "dmlcts",
            &move |_| {
                Ok(Resolved::single(accepting(
                    FeatureLevel::L6_4,
                    profile.clone(),
                )))
            },
        )))
    };
    assert_eq!(run(ValidationProfile::ValuesOnly), 0);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summary = &report["summary"];
    assert_eq!(summary["validation_profile"], "values-only");
    assert_eq!(summary["failed"], 0);
    // At 6_4 the Slice1 must-reject cases of the lower levels' tables are skipped; the
    // others are all informational.
    assert_eq!(summary["informational"], 12, "{summary}");
    let _ = std::fs::remove_file(&json);
    assert_eq!(
        run(ValidationProfile::NotEnforced(vec![
            "slice1.window_inside_input".to_string()
        ])),
        1
    );
    assert_eq!(run(ValidationProfile::Strict), 1);
}

#[test]
fn a_backend_not_enforcing_one_rule_fails_when_the_descriptor_also_breaks_another() {
    let backend = accepting(
        FeatureLevel::L6_4,
        ValidationProfile::NotEnforced(vec!["slice1.window_inside_input".to_string()]),
    );
    let options = RunOptions::default();
    let result = run_case(backend.as_ref(), &one_case(ONE_RULE), &options);
    assert_eq!(result.status, Status::Informational, "{}", result.details);
    assert_eq!(
        result.reason,
        "accepted; DirectML rejects it: rule slice1.window_inside_input"
    );

    let result = run_case(backend.as_ref(), &one_case(TWO_RULES), &options);
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.reason, "accepted an invalid descriptor");
    assert!(
        result.details.contains(
            "the oracle rejects it at 6_4: [slice1.window_stride_nonzero] InputWindowStrides[3] is 0"
        ),
        "{}",
        result.details
    );
}

#[test]
fn an_expectations_files_not_enforced_rules_add_to_a_strict_backends_profile() {
    let backend = accepting(FeatureLevel::L6_4, ValidationProfile::Strict);
    let case = one_case(ONE_RULE);
    let result = run_case(backend.as_ref(), &case, &RunOptions::default());
    assert_eq!(result.status, Status::Failed);
    let options = RunOptions {
        not_enforced: vec!["slice1.window_inside_input".to_string()],
        ..RunOptions::default()
    };
    let result = run_case(backend.as_ref(), &case, &options);
    assert_eq!(result.status, Status::Informational);
    assert!(
        result
            .details
            .contains("the backend's validation profile: not-enforced: slice1.window_inside_input"),
        "{}",
        result.details
    );
    // Rejecting a must-reject case passes whatever the profile; rejecting a valid one fails.
    let cpu = CpuBackend::new();
    assert_eq!(run_case(&cpu, &case, &options).status, Status::Passed);
}

#[test]
fn a_values_only_backend_that_rejects_a_valid_case_still_fails() {
    struct RejectsAll;
    impl Backend for RejectsAll {
        fn name(&self) -> String {
            "rejects-all".to_string()
        }
        fn feature_level(&self) -> FeatureLevel {
            FeatureLevel::L6_4
        }
        fn validation_profile(&self) -> ValidationProfile {
            ValidationProfile::ValuesOnly
        }
        fn compile(
            &self,
            _: &OperatorDesc,
        ) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
            Err(CompileError::Rejected(dmlcts_tensor::Rejected {
                rule: None,
                message: "no".to_string(),
            }))
        }
    }
    let case = Corpus::embedded()
        .cases
        .into_iter()
        .find(|c| c.name.starts_with("doc.slice1"))
        .unwrap();
    let result = run_case(&RejectsAll, &case, &RunOptions::default());
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.reason, "rejected a valid descriptor");
}
