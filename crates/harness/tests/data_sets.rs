//! `run_case_with_data_sets`: one compile, one execution per data set, each judged as a case;
//! a data-dependent bug is reported on the data set that shows it, and the list stops there.

use dmlcts_harness::corpus::data::TensorData;
use dmlcts_harness::{Case, Corpus, RunOptions, Status, run_case_with_data_sets};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding,
};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The oracle, counting compiles; its outputs come out wrong when the first input's first
/// byte is 0x5a (a bug only some data shows).
struct Counting {
    oracle: OracleBackend,
    compiles: AtomicUsize,
}

struct WrongOn5a<'a>(Box<dyn CompiledOperator + 'a>);

impl CompiledOperator for WrongOn5a<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        self.0.execute(inputs, outputs)?;
        if inputs[0].first() == Some(&0x5a) {
            outputs[0].bytes_mut()[0] ^= 0x01;
        }
        Ok(())
    }
}

impl Backend for Counting {
    fn name(&self) -> String {
        "counting".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.compiles.fetch_add(1, Ordering::Relaxed);
        Ok(Box::new(WrongOn5a(self.oracle.compile(op)?)))
    }
}

fn valid_join() -> Case {
    Corpus::embedded()
        .cases
        .into_iter()
        .find(|c| {
            matches!(c.op, OperatorDesc::Join(_)) && c.expect == dmlcts_harness::Expectation::Accept
        })
        .expect("a valid Join in the corpus")
}

fn filled(case: &Case, byte: u8) -> Vec<TensorData> {
    case.op
        .inputs()
        .iter()
        .map(|(_, d)| TensorData::Bytes(vec![byte; d.total_tensor_size_in_bytes as usize]))
        .collect()
}

#[test]
fn every_data_set_runs_on_one_compile_until_one_fails_and_that_one_is_reported() {
    let backend = Counting {
        oracle: OracleBackend::new(FeatureLevel::L4_1),
        compiles: AtomicUsize::new(0),
    };
    let case = valid_join();
    let sets = [
        filled(&case, 1),
        filled(&case, 2),
        filled(&case, 0x5a),
        filled(&case, 3),
    ];
    let results = run_case_with_data_sets(&backend, &case, &sets, &RunOptions::default());
    assert_eq!(backend.compiles.load(Ordering::Relaxed), 1);
    let statuses: Vec<Status> = results.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            Status::Passed,
            Status::Passed,
            Status::Passed,
            Status::Failed
        ],
        "the case's own inputs, then the sets until the 0x5a one"
    );
    assert_eq!(results[3].reason, "output values");
    assert_eq!(results[3].name, case.name);

    let clean = run_case_with_data_sets(&backend, &case, &sets[..2], &RunOptions::default());
    assert_eq!(clean.len(), 3);
    assert!(clean.iter().all(|r| r.status == Status::Passed));
}

#[test]
fn a_data_set_with_the_wrong_number_of_inputs_fails_as_bad_input_data() {
    let backend = Counting {
        oracle: OracleBackend::new(FeatureLevel::L4_1),
        compiles: AtomicUsize::new(0),
    };
    let case = valid_join();
    let mut short = filled(&case, 1);
    short.pop();
    let results = run_case_with_data_sets(&backend, &case, &[short], &RunOptions::default());
    assert_eq!(results.len(), 2);
    assert_eq!(results[1].status, Status::Failed);
    assert_eq!(results[1].reason, "corpus: bad input data");
}
