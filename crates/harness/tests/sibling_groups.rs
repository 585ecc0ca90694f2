//! Sibling groups (cases/README.md): the YAML form read with bounds and clear errors, a group
//! run as one unit (one result, one id, one replay), its failure naming the step and the
//! field that differs, its skip never a pass, an expectations entry naming its id.

use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::session::{Session, SessionOptions};
use dmlcts_harness::{Corpus, Status, cases_to_yaml};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, ValidationProfile,
};
use std::sync::{Arc, Mutex};

const STEP: &str = "      - name: a
        split:
          axis: 3
          input: {data_type: INT32, sizes: [1, 1, 2, 2]}
          outputs: [{data_type: INT32, sizes: [1, 1, 2, 1]}, {data_type: INT32, sizes: [1, 1, 2, 1]}]
";

/// `A, B, A`: B's axis past the rank (rejected).
const GROUP: &str = "cases:
  - name: group.axis
    description: the axis alone differs
    steps:
      - name: a
        split:
          axis: 3
          input: {data_type: INT32, sizes: [1, 1, 2, 2]}
          outputs: [{data_type: INT32, sizes: [1, 1, 2, 1]}, {data_type: INT32, sizes: [1, 1, 2, 1]}]
      - name: b
        reject: split.axis_in_range
        split:
          axis: 4
          input: {data_type: INT32, sizes: [1, 1, 2, 2]}
          outputs: [{data_type: INT32, sizes: [1, 1, 2, 1]}, {data_type: INT32, sizes: [1, 1, 2, 1]}]
      - name: a_again
        split:
          axis: 3
          input: {data_type: INT32, sizes: [1, 1, 2, 2]}
          outputs: [{data_type: INT32, sizes: [1, 1, 2, 1]}, {data_type: INT32, sizes: [1, 1, 2, 1]}]
";

fn load(text: &str) -> Corpus {
    let mut corpus = Corpus::default();
    corpus.add_text("cases/groups.yaml", text);
    corpus
}

fn only_error(text: &str) -> String {
    let corpus = load(text);
    assert_eq!(corpus.errors.len(), 1, "{:#?}", corpus.errors);
    corpus.errors[0].to_string()
}

fn group_of(steps: usize) -> String {
    if steps == 0 {
        return "cases:\n  - name: g\n    steps: []\n".to_string();
    }
    let mut text = "cases:\n  - name: g\n    steps:\n".to_string();
    for i in 0..steps {
        text.push_str(&STEP.replace("name: a", &format!("name: s{i}")));
    }
    text
}

#[test]
fn a_group_loads_as_one_case_whose_steps_are_named_group_slash_step() {
    let corpus = load(GROUP);
    assert_eq!(corpus.errors, []);
    assert_eq!(corpus.cases.len(), 1);
    let group = &corpus.cases[0];
    let names: Vec<&str> = group.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["group.axis/a", "group.axis/b", "group.axis/a_again"]
    );
    assert_eq!((group.file.as_str(), group.line), ("cases/groups.yaml", 2));
    assert_eq!(group.op, group.steps[0].op);
    // Each step's seeded data from its whole name: the repeat has new data.
    assert_ne!(group.steps[0].inputs, group.steps[2].inputs);
    // Written and read back, the same group.
    let again = load(&cases_to_yaml(&corpus.cases));
    assert_eq!(again.errors, []);
    let mut back = again.cases[0].clone();
    back.line = group.line;
    for step in &mut back.steps {
        step.line = group.line;
    }
    assert_eq!(&back, group);
}

#[test]
fn a_group_of_fewer_than_two_or_more_than_sixteen_steps_is_refused_at_its_line() {
    for (steps, count) in [(0, "0 step(s)"), (1, "1 step(s)"), (17, "17 step(s)")] {
        let error = only_error(&group_of(steps));
        assert_eq!(
            error,
            format!("cases/groups.yaml:2: case `g`: steps: {count}; a group has 2 to 16"),
        );
    }
    assert_eq!(load(&group_of(16)).errors, []);
}

#[test]
fn a_group_of_ten_thousand_steps_is_refused_without_running_anything() {
    let corpus = load(&group_of(10_000));
    assert_eq!(corpus.cases, []);
    assert_eq!(corpus.errors.len(), 1);
    let error = corpus.errors[0].to_string();
    assert!(error.starts_with("cases/groups.yaml:"), "{error}");
}

#[test]
fn a_group_with_an_operator_of_its_own_a_nested_group_or_a_bad_step_names_the_field() {
    let own = GROUP.replace(
        "    description: the axis alone differs\n",
        "    reject: split.axis_in_range\n",
    );
    assert_eq!(
        only_error(&own),
        "cases/groups.yaml:2: case `group.axis`: reject: a group (`steps`) has no `reject` of \
         its own; each step has its own"
    );
    let nested = GROUP.replace(
        "      - name: a_again\n",
        "      - name: inner\n        steps: []\n      - name: a_again\n",
    );
    assert_eq!(
        only_error(&nested),
        "cases/groups.yaml:2: case `group.axis`: steps[2]: steps: a step cannot be a group itself"
    );
    let bad_step = GROUP.replace("axis: 4", "axis: 4\n          nonsense: 1");
    let error = only_error(&bad_step);
    assert!(error.contains("nonsense"), "{error}");
    let twice = GROUP.replace("name: a_again", "name: a");
    assert_eq!(
        only_error(&twice),
        "cases/groups.yaml:2: case `group.axis`: steps[2].name: `a` names steps[0] too; a \
         group's steps have distinct names"
    );
}

/// The oracle with a one-entry plan cache whose key leaves out Split's axis; or that calls
/// a descriptor with a given axis unsupported.
struct Cached {
    oracle: OracleBackend,
    last: Mutex<Option<(OperatorDesc, bool)>>,
    unsupported_axis: Option<u32>,
}

impl Cached {
    fn new(unsupported_axis: Option<u32>) -> Cached {
        Cached {
            oracle: OracleBackend::new(FeatureLevel::LATEST),
            last: Mutex::new(None),
            unsupported_axis,
        }
    }
}

fn without_axis(op: &OperatorDesc) -> OperatorDesc {
    let mut op = op.clone();
    if let OperatorDesc::Split(d) = &mut op {
        d.axis = 0;
    }
    op
}

impl Backend for Cached {
    fn name(&self) -> String {
        "cached".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::LATEST
    }
    fn validation_profile(&self) -> ValidationProfile {
        self.oracle.validation_profile()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        if let OperatorDesc::Split(d) = op
            && Some(d.axis) == self.unsupported_axis
        {
            return Err(CompileError::Unsupported("not this axis".to_string()));
        }
        let mut last = self.last.lock().unwrap();
        let plan = match last.as_ref() {
            Some((plan, true)) if without_axis(plan) == without_axis(op) => plan.clone(),
            _ => op.clone(),
        };
        let compiled = self.oracle.compile(&plan);
        *last = Some((plan, compiled.is_ok()));
        compiled
    }
}

#[test]
fn a_cache_keyed_without_the_axis_fails_the_group_at_step_two_naming_the_axis() {
    let corpus = load(GROUP);
    let session = Session::new(Arc::new(Cached::new(None)), None, SessionOptions::default());
    let result = session.step(&corpus.cases[0]);
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.id, "cases/groups.yaml:2");
    assert_eq!(result.name, "group.axis");
    assert_eq!(
        result.reason,
        "step 2 of 3 (`b`): accepted an invalid descriptor"
    );
    assert!(
        result
            .details
            .contains("  step 2 differs from step 1 in: split.axis (3 -> 4)\n"),
        "{}",
        result.details
    );
    let first = format!("    step 1 `a` at {}: passed\n", FeatureLevel::LATEST);
    assert!(result.details.contains(&first), "{}", result.details);
    let replay = result.replay.expect("a failure's replay").render();
    assert!(replay.ends_with("--filter group.axis --exact"), "{replay}");
    // The correct backend passes it.
    let oracle = Session::new(
        Arc::new(OracleBackend::new(FeatureLevel::LATEST)),
        None,
        SessionOptions::default(),
    );
    assert_eq!(oracle.step(&corpus.cases[0]).status, Status::Passed);
}

#[test]
fn a_step_the_backend_calls_unsupported_skips_the_whole_group() {
    let corpus = load(GROUP);
    let session = Session::new(
        Arc::new(Cached::new(Some(4))),
        None,
        SessionOptions::default(),
    );
    let result = session.step(&corpus.cases[0]);
    assert_eq!(result.status, Status::Skipped);
    assert_eq!(result.reason, "backend cached: not this axis");
    assert_eq!(result.details, "  step 2 of 3 (`b`) of a sibling group\n");
}

#[test]
fn an_expectations_entry_names_a_group_by_its_id() {
    let corpus = load(GROUP);
    let text = "expected_failures:\n  - case: group.axis\n    backend: cached\n    reason: its cache keys plans without the axis\n";
    let path = std::env::temp_dir().join(format!("dmlcts-groups-{}.yaml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let expectations = Expectations::load(&path).expect("an expectations file");
    std::fs::remove_file(&path).unwrap();
    let options = SessionOptions {
        expectations: Some(expectations),
        ..SessionOptions::default()
    };
    let session = Session::new(Arc::new(Cached::new(None)), None, options);
    let report = session.run(&corpus.cases, &[], &mut ());
    assert_eq!(report.results.len(), 1);
    assert_eq!(report.results[0].status, Status::ExpectedFailure);
    assert_eq!(report.stale, Vec::<String>::new());
}
