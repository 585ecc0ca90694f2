//! The fuzzer finds a planted bug, shrinks it to a small case, saves it, and the saved file
//! fails the same way when replayed as an ordinary corpus case.

use dmlcts_harness::fuzz::{FuzzOptions, Mix, fuzz};
use dmlcts_harness::{Corpus, RunOptions, Status, run_case};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::CompileError;
use dmlcts_tensor::{Backend, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding};

/// Correct, except that a Slice1 with a negative window stride on a dimension whose output
/// size is 3 or more gets its first output byte flipped.
struct NegativeStrideBug(OracleBackend);

struct Buggy<'a> {
    inner: Box<dyn CompiledOperator + 'a>,
    triggers: bool,
}

impl CompiledOperator for Buggy<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.inner.execute(inputs, outputs)?;
        if self.triggers {
            outputs[0].bytes_mut()[0] ^= 0x01;
        }
        Ok(())
    }
}

impl Backend for NegativeStrideBug {
    fn name(&self) -> String {
        "negbug".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let triggers = match op {
            OperatorDesc::Slice1(d) => d
                .input_window_strides
                .iter()
                .zip(&d.output_tensor.sizes)
                .any(|(&stride, &size)| stride < 0 && size >= 3),
            _ => false,
        };
        Ok(Box::new(Buggy {
            inner: self.0.compile(op)?,
            triggers,
        }))
    }
}

#[test]
fn the_fuzzer_finds_shrinks_saves_and_replays_a_planted_bug() {
    let out_dir = std::env::temp_dir().join(format!("dmlcts-fuzz-loop-{}", std::process::id()));
    let backend = NegativeStrideBug(OracleBackend::default());
    let options = FuzzOptions {
        cases: 20_000,
        seed: 11,
        op: None,
        mix: Mix::Both,
        out_dir: out_dir.clone(),
        backend_name: "negbug".into(),
    };
    let outcome = fuzz(&backend, &options, |_, _| {});
    let failure = outcome.failure.expect("the planted bug is found");
    assert!(
        outcome.cases_run < 20_000,
        "found after {} cases",
        outcome.cases_run
    );

    // Shrunk: a Slice1 of at most 3 dimensions and a few dozen elements.
    let OperatorDesc::Slice1(slice) = &failure.case.op else {
        panic!("expected a Slice1, got {:?}", failure.case.op.kind())
    };
    assert!(
        slice.input_tensor.sizes.len() <= 3,
        "{:?}",
        slice.input_tensor.sizes
    );
    assert!(
        slice.input_tensor.element_count() <= 48,
        "{:?}",
        slice.input_tensor.sizes
    );
    // Found directly (the oracle diff) or by an invariant (reversing twice); either way the
    // saved case is the descriptor the backend gets wrong.
    assert!(
        failure.report.contains("check: output values")
            || failure.report.contains("check: invariant"),
        "{}",
        failure.report
    );

    // The saved file is an ordinary case that fails the same way.
    let corpus = Corpus::load_path(&failure.path);
    assert!(corpus.errors.is_empty(), "{:#?}", corpus.errors);
    assert_eq!(corpus.cases.len(), 1);
    let replayed = run_case(&backend, &corpus.cases[0], &RunOptions::default());
    assert_eq!(replayed.status, Status::Failed);
    assert_eq!(replayed.reason, "output values");
    // ...and passes on a correct backend.
    let correct = run_case(
        &OracleBackend::default(),
        &corpus.cases[0],
        &RunOptions::default(),
    );
    assert_eq!(
        correct.status,
        Status::Passed,
        "{}",
        correct.failure_report()
    );
    assert!(
        failure
            .replay
            .starts_with("cargo xtask conformance --backend negbug --cases ")
    );
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let options = |seed| FuzzOptions {
        cases: 300,
        seed,
        op: None,
        mix: Mix::Both,
        out_dir: std::env::temp_dir(),
        backend_name: "oracle".into(),
    };
    // Record the generated cases through a backend that notes every descriptor it compiles.
    struct Recorder(OracleBackend, std::sync::Mutex<Vec<String>>);
    impl Backend for Recorder {
        fn name(&self) -> String {
            "recorder".into()
        }
        fn feature_level(&self) -> FeatureLevel {
            FeatureLevel::L4_1
        }
        fn compile(
            &self,
            op: &OperatorDesc,
        ) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
            self.1.lock().unwrap().push(format!("{op:?}"));
            self.0.compile(op)
        }
    }
    let runs: Vec<Vec<String>> = [5, 5, 6]
        .into_iter()
        .map(|seed| {
            let recorder = Recorder(OracleBackend::default(), Default::default());
            let outcome = fuzz(&recorder, &options(seed), |_, _| {});
            assert!(outcome.failure.is_none());
            recorder.1.into_inner().unwrap()
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
    assert_ne!(runs[0], runs[2]);
}
