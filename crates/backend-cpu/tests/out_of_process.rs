//! The CPU backend gives identical results in process and out of process (through the
//! protocol server binary), over the whole corpus.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_harness::{Corpus, RunOptions, run_case};
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use dmlcts_tensor::Backend;

#[test]
fn the_whole_corpus_gives_identical_results_in_and_out_of_process() {
    let corpus = Corpus::embedded();
    let options = RunOptions::default();
    let in_process = corpus
        .cases
        .iter()
        .map(|case| run_case(&CpuBackend::new(), case, &options))
        .collect::<Vec<_>>();
    let server =
        ProcessBackend::start(ProcessOptions::new(env!("CARGO_BIN_EXE_dmlcts-cpu-server")))
            .expect("the server starts");
    assert_eq!(server.feature_level(), dmlcts_tensor::FeatureLevel::L4_1);
    let out_of_process = corpus
        .cases
        .iter()
        .map(|case| run_case(&server, case, &options))
        .collect::<Vec<_>>();
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

/// Each case at its own level: in process, a CpuBackend per level; out of process, one
/// server that offers every level, each `compile` naming the case's.
#[test]
fn every_case_at_its_own_level_gives_identical_results_through_one_server() {
    use dmlcts_harness::{Devices, Status, run_case};
    use dmlcts_protocol::ProcessBackendAtLevel;
    use dmlcts_tensor::FeatureLevel;
    use std::sync::Arc;

    let corpus = Corpus::embedded();
    let server = Arc::new(
        ProcessBackend::start(ProcessOptions::new(env!("CARGO_BIN_EXE_dmlcts-cpu-server")))
            .expect("the server starts"),
    );
    assert_eq!(server.feature_levels(), FeatureLevel::ALL);
    let mut in_process = Devices::per_case(
        Box::new(|level| Arc::new(CpuBackend::at_level(level)) as Arc<dyn Backend>),
        false,
    );
    let mut out_of_process = Devices::per_case(
        Box::new(move |level| {
            Arc::new(ProcessBackendAtLevel::new(server.clone(), level).expect("offered"))
                as Arc<dyn Backend>
        }),
        false,
    );
    // A sibling group's steps one by one: each at its own level on both sides.
    let steps = (corpus.cases.iter()).flat_map(|case| {
        if case.steps.is_empty() {
            std::slice::from_ref(case)
        } else {
            &case.steps[..]
        }
    });
    for case in steps {
        let (device, options) = in_process.for_case(case);
        let a = run_case(device.as_ref(), case, &options);
        let (device, options) = out_of_process.for_case(case);
        assert_eq!(device.feature_level(), case.feature_level);
        assert!(options.strict_level);
        let b = run_case(device.as_ref(), case, &options);
        assert_eq!(a.status, Status::Passed, "{}", a.failure_report());
        assert_eq!(b.status, Status::Passed, "{}", b.failure_report());
        assert_eq!(a.notes, b.notes, "{}", a.name);
    }
}

#[test]
fn a_server_pinned_to_one_level_offers_no_choice() {
    let mut options = ProcessOptions::new(&format!(
        "{} --feature-level 2_1",
        env!("CARGO_BIN_EXE_dmlcts-cpu-server")
    ));
    options.name = "pinned".to_string();
    let server = ProcessBackend::start(options).expect("the server starts");
    assert_eq!(server.feature_level(), dmlcts_tensor::FeatureLevel::L2_1);
    assert!(server.feature_levels().is_empty());
}
