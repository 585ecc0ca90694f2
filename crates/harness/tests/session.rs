//! The run session: the events a reporter hears, in order; the per-case step's expectations,
//! ids and skipped-everything tally; the step shared by threads.

use dmlcts_harness::expectations::Expectations;
use dmlcts_harness::report::coverage::State;
use dmlcts_harness::session::{Counted, Event, Reporter, Session, SessionOptions};
use dmlcts_harness::{Case, Corpus, LoadError, Status};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
};
use std::sync::Arc;

fn doc_cases() -> Vec<Case> {
    Corpus::embedded()
        .cases
        .into_iter()
        .filter(|c| c.name.starts_with("doc."))
        .collect()
}

/// What a reporter heard, one line per event.
#[derive(Default)]
struct Heard(Vec<String>);

impl Reporter for Heard {
    fn event(&mut self, event: &Event<'_>) {
        self.0.push(match event {
            Event::RunStarted { info, cases, .. } => format!("started {} {cases}", info.backend),
            Event::LoadError(result) => format!("load error {}", result.id),
            Event::CaseFinished { result, judged } => {
                format!("{} {} {}", result.name, result.status.name(), judged.name())
            }
            Event::RunFinished(report) => format!("finished {}", report.summary.line()),
        });
    }
}

fn oracle_session(options: SessionOptions) -> Session<'static> {
    Session::new(
        Arc::new(OracleBackend::new(FeatureLevel::L4_1)),
        None,
        options,
    )
}

#[test]
fn a_reporter_hears_the_start_each_load_error_and_case_in_order_then_the_end() {
    let cases = doc_cases();
    let load_error = LoadError {
        file: "mine.yaml".to_string(),
        line: Some(3),
        case: None,
        message: "broken".to_string(),
    };
    let mut heard = Heard::default();
    let report = oracle_session(SessionOptions::default()).run(
        &cases[..2],
        std::slice::from_ref(&load_error),
        &mut heard,
    );
    assert_eq!(
        heard.0,
        [
            "started oracle 2".to_string(),
            "load error load-error:mine.yaml:3".to_string(),
            format!("{} passed passed", cases[0].name),
            format!("{} passed passed", cases[1].name),
            "finished 2 passed, 1 failed, 0 skipped".to_string(),
        ]
    );
    assert_eq!(report.results.len(), 3);
    assert_eq!(report.cases, 2);
}

#[test]
fn the_step_applies_the_expectations_file_as_each_case_finishes_and_names_stale_entries() {
    let cases = doc_cases();
    let expectations: Expectations = serde_yaml::from_str(&format!(
        "expected_failures:\n  - backend: oracle\n    case: {}\n    reason: listed\n  \
         - backend: oracle\n    case: no.such.case\n    reason: stale\n",
        cases[0].name
    ))
    .unwrap();
    let mut heard = Heard::default();
    let report = oracle_session(SessionOptions {
        expectations: Some(expectations),
        ..SessionOptions::default()
    })
    .run(&cases[..2], &[], &mut heard);
    // The listed case passes: an unexpected pass, judged a pass.
    assert_eq!(heard.0[1], format!("{} failed passed", cases[0].name));
    assert_eq!(report.results[0].reason, "unexpected pass");
    assert_eq!(report.stale, ["no.such.case"]);
    assert_eq!(report.summary.failed, 1);
}

#[test]
fn ids_are_unique_in_a_session_whichever_step_runs_a_case() {
    let cases = doc_cases();
    let session = oracle_session(SessionOptions::default());
    let first = session.step(&cases[0]);
    let again = session.step(&cases[0]);
    assert_eq!(first.id, format!("{}:{}", cases[0].file, cases[0].line));
    assert_eq!(again.id, format!("{}#2", first.id));
}

/// The oracle claiming no data type: every case is skipped by the backend.
struct ClaimsNothing(OracleBackend);

impl Backend for ClaimsNothing {
    fn name(&self) -> String {
        "claims-nothing".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.0.feature_level()
    }
    fn data_types(&self) -> Vec<DataType> {
        Vec::new()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.0.compile(op)
    }
}

#[test]
fn a_run_whose_backend_skipped_every_case_fails_with_a_result_of_its_own() {
    let session = Session::new(
        Arc::new(ClaimsNothing(OracleBackend::new(FeatureLevel::L4_1))),
        None,
        SessionOptions::default(),
    );
    let step = session.step_with_data_sets(&doc_cases()[0], &[]);
    assert!(matches!(step.counted, Counted::SkippedByBackend(_)));
    let report = session.run(&doc_cases(), &[], &mut ());
    let last = report.results.last().unwrap();
    assert_eq!(last.id, "run:skipped-everything");
    assert_eq!(last.status, Status::Failed);
    assert!(report.skipped_everything.is_some());
    assert_eq!((report.summary.skipped, report.summary.failed), (8, 1));
}

#[test]
fn threads_share_one_session_and_its_tally() {
    let cases = doc_cases();
    let session = oracle_session(SessionOptions::default());
    std::thread::scope(|scope| {
        for chunk in cases.chunks(2) {
            let session = &session;
            scope.spawn(move || {
                for case in chunk {
                    assert_eq!(session.step(case).status, Status::Passed);
                }
            });
        }
    });
    assert_eq!(session.skipped_everything(), None);
}

/// The oracle, but every execution after the first writes a wrong first byte.
struct WrongAfterFirst(OracleBackend, Arc<std::sync::atomic::AtomicUsize>);

struct WrongAfterFirstCompiled<'a>(
    Box<dyn CompiledOperator + 'a>,
    Arc<std::sync::atomic::AtomicUsize>,
);

impl CompiledOperator for WrongAfterFirstCompiled<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        if self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            let out = &mut outputs[0];
            out.buffer[out.offset] ^= 0xff;
        }
        Ok(())
    }
}

impl Backend for WrongAfterFirst {
    fn name(&self) -> String {
        "wrong-after-first".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.0.feature_level()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        Ok(Box::new(WrongAfterFirstCompiled(
            self.0.compile(op)?,
            self.1.clone(),
        )))
    }
}

#[test]
fn a_failure_on_a_later_data_set_is_a_failure_of_what_the_case_checks() {
    let session = Session::new(
        Arc::new(WrongAfterFirst(
            OracleBackend::new(FeatureLevel::L4_1),
            Arc::default(),
        )),
        None,
        SessionOptions::default(),
    );
    let case = (doc_cases().into_iter())
        .find(|c| c.name.starts_with("doc.join."))
        .expect("a doc join case");
    let step = session.step_with_data_sets(&case, std::slice::from_ref(&case.inputs));
    let statuses: Vec<Status> = step.results.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [Status::Passed, Status::Failed]);
    assert_eq!(session.coverage().state("join.copy"), State::Failed);
}
