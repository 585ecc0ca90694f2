//! The CPU backend gives identical results in process and out of process (through the
//! protocol server binary), over the whole corpus.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_harness::{Corpus, RunOptions, run_cases};
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use dmlcts_tensor::Backend;

#[test]
fn the_whole_corpus_gives_identical_results_in_and_out_of_process() {
    let corpus = Corpus::embedded();
    let options = RunOptions::default();
    let in_process = run_cases(&CpuBackend::new(), &corpus.cases, &options, |_, _, _| {});
    let server =
        ProcessBackend::start(ProcessOptions::new(env!("CARGO_BIN_EXE_dmlcts-cpu-server")))
            .expect("the server starts");
    assert_eq!(server.feature_level(), dmlcts_tensor::FeatureLevel::L4_1);
    let out_of_process = run_cases(&server, &corpus.cases, &options, |_, _, _| {});
    assert_eq!(in_process.len(), out_of_process.len());
    let mut passed = 0;
    for (a, b) in in_process.iter().zip(&out_of_process) {
        assert_eq!(a.name, b.name);
        assert_eq!(
            (a.status, &a.reason),
            (b.status, &b.reason),
            "{}",
            b.failure_report()
        );
        assert_eq!(a.notes, b.notes, "{}", a.name);
        passed += usize::from(a.status == dmlcts_harness::Status::Passed);
    }
    assert!(passed > 300, "{passed} passed");
}
