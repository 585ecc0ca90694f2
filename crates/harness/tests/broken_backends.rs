//! Deliberately broken backends are caught by the matching check, with a message a backend
//! author can act on, and the run goes on.

use dmlcts_harness::{Case, Corpus, RunOptions, Status, run_case, run_cases};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::CompileError;
use dmlcts_tensor::{
    Backend, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding, Rejected,
};

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    WrongElement,
    WritesPastTheEnd,
    WritesBeforeTheStart,
    AcceptsEverything,
    RejectsEverything,
    PanicsInExecute,
    PanicsInCompile,
    SkipsLastElement,
}

struct Broken {
    fault: Fault,
    oracle: OracleBackend,
}

struct BrokenCompiled<'a> {
    fault: Fault,
    inner: Option<Box<dyn CompiledOperator + 'a>>,
    element_size: usize,
}

impl CompiledOperator for BrokenCompiled<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        if self.fault == Fault::PanicsInExecute {
            panic!("deliberate panic in execute");
        }
        let Some(inner) = &self.inner else {
            return Ok(()); // accepted an invalid descriptor and wrote nothing
        };
        inner.execute(inputs, outputs)?;
        let binding = &mut outputs[0];
        let (offset, size) = (binding.offset, binding.size);
        match self.fault {
            Fault::WrongElement => binding.buffer[offset] ^= 0x40,
            Fault::WritesPastTheEnd => binding.buffer[offset + size + 2] = 0,
            Fault::WritesBeforeTheStart => binding.buffer[offset - 1] = 0,
            Fault::SkipsLastElement => {
                let last = size - self.element_size;
                for i in 0..self.element_size {
                    binding.buffer[offset + last + i] = !binding.buffer[offset + last + i];
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl Backend for Broken {
    fn name(&self) -> String {
        "broken".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let element_size = op
            .outputs()
            .first()
            .map_or(1, |(_, d)| d.data_type.element_size());
        match self.fault {
            Fault::PanicsInCompile => panic!("deliberate panic in compile"),
            Fault::RejectsEverything => Err(CompileError::Rejected(Rejected {
                rule: None,
                message: "E_INVALIDARG".to_string(),
            })),
            Fault::AcceptsEverything => Ok(Box::new(BrokenCompiled {
                fault: self.fault,
                inner: self.oracle.compile(op).ok(),
                element_size,
            })),
            _ => Ok(Box::new(BrokenCompiled {
                fault: self.fault,
                inner: Some(self.oracle.compile(op)?),
                element_size,
            })),
        }
    }
}

fn broken(fault: Fault) -> Broken {
    Broken {
        fault,
        oracle: OracleBackend::new(FeatureLevel::L4_1),
    }
}

fn case(name: &str) -> Case {
    Corpus::embedded()
        .cases
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

fn run(fault: Fault, name: &str) -> dmlcts_harness::CaseResult {
    run_case(&broken(fault), &case(name), &RunOptions::default())
}

#[test]
fn one_wrong_element_is_shown_with_coordinates_values_bits_and_a_diff() {
    let result = run(Fault::WrongElement, "doc.split.example1_axis2");
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.reason, "output values");
    let report = result.failure_report();
    assert!(
        report.contains("FAIL doc.split.example1_axis2 (cases/doc/split.yaml:3)"),
        "{report}"
    );
    assert!(
        report.contains("OutputTensors[0]: 1 of 4 elements differ"),
        "{report}"
    );
    // 1.0f32 is 0x3f800000; flipping bit 6 of its lowest byte gives 0x3f800040.
    assert!(
        report.contains("OutputTensors[0][0, 0, 0, 0] (byte 0): expected 1 (0x3f800000), got 1.0000076 (0x3f800040)"),
        "{report}"
    );
    assert!(report.contains("  -[[[[1, 2],\n"), "{report}");
    assert!(report.contains("  +[[[[1.0000076, 2],\n"), "{report}");
    assert!(
        report.contains("replay: cargo xtask conformance --backend broken --cases cases/doc/split.yaml --filter doc.split.example1_axis2 --exact"),
        "{report}"
    );
}

#[test]
fn the_replay_command_names_the_backend_as_backend_named_it() {
    // `--backend directml@1.9.0` makes a backend named `directml`; its replay must say 1.9.0.
    let options = RunOptions {
        backend_name: Some("broken@1.9.0".to_string()),
        program: Some("dmlcts".to_string()),
        ..RunOptions::default()
    };
    let result = run_case(
        &broken(Fault::WrongElement),
        &case("doc.split.example1_axis2"),
        &options,
    );
    assert!(
        result.details.ends_with(
            "  replay: dmlcts conformance --backend broken@1.9.0 --cases cases/doc/split.yaml \
             --filter doc.split.example1_axis2 --exact\n"
        ),
        "{}",
        result.details
    );
}

#[test]
fn a_write_past_the_end_is_caught_by_the_guard_band() {
    let result = run(Fault::WritesPastTheEnd, "doc.join.example1_axis3");
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.reason, "wrote outside the output");
    assert!(
        result
            .details
            .contains("1 byte(s) past the end (bytes +2 to +2 after it)"),
        "{}",
        result.details
    );
}

#[test]
fn a_write_before_the_start_is_caught_by_the_guard_band() {
    let result = run(
        Fault::WritesBeforeTheStart,
        "doc.slice1.example1_positive_strides",
    );
    assert_eq!(result.status, Status::Failed);
    assert!(
        result.details.contains("1 byte(s) before the start"),
        "{}",
        result.details
    );
}

#[test]
fn accepting_an_invalid_descriptor_fails_with_the_oracle_rule() {
    let result = run(Fault::AcceptsEverything, "reject.split.axis_in_range");
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.reason, "accepted an invalid descriptor");
    assert!(
        result.details.contains("[split.axis_in_range] Axis is 4"),
        "{}",
        result.details
    );
}

#[test]
fn rejecting_a_valid_descriptor_fails() {
    let result = run(Fault::RejectsEverything, "doc.join.example2_axis1");
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.reason, "rejected a valid descriptor");
    assert!(result.details.contains("E_INVALIDARG"));
    // Rejecting what must be rejected passes, whatever the reason given.
    assert_eq!(
        run(Fault::RejectsEverything, "reject.join.axis_in_range").status,
        Status::Passed
    );
}

#[test]
fn a_panic_fails_that_case_only_and_the_run_goes_on() {
    let corpus = Corpus::embedded();
    let cases: Vec<Case> = corpus
        .cases
        .into_iter()
        .filter(|c| c.name.starts_with("doc."))
        .collect();
    for fault in [Fault::PanicsInExecute, Fault::PanicsInCompile] {
        let results = run_cases(&broken(fault), &cases, &RunOptions::default(), |_, _, _| {});
        assert_eq!(results.len(), 8);
        for r in &results {
            assert_eq!(r.status, Status::Failed);
            assert!(r.details.contains("deliberate panic"), "{}", r.details);
        }
    }
}

#[test]
fn an_element_left_unwritten_is_caught() {
    let result = run(Fault::SkipsLastElement, "doc.join.example1_axis3");
    assert_eq!(result.status, Status::Failed);
    assert!(
        result
            .details
            .contains("OutputTensor[0, 0, 1, 6] (byte 52): expected 14 (0x41600000)"),
        "{}",
        result.details
    );
    // In the odd-byte-count case the last byte is padding: changing it is allowed.
    assert_eq!(
        run(Fault::SkipsLastElement, "edge.join.odd_byte_count_uint8").status,
        Status::Passed
    );
}

#[test]
fn writing_stride_holes_is_a_note_not_a_failure() {
    struct HoleWriter(OracleBackend);
    struct Writes<'a>(Box<dyn CompiledOperator + 'a>);
    impl CompiledOperator for Writes<'_> {
        fn execute(
            &self,
            inputs: &[&[u8]],
            outputs: &mut [OutputBinding<'_>],
        ) -> Result<(), String> {
            for o in outputs.iter_mut() {
                o.bytes_mut().fill(0x11);
            }
            self.0.execute(inputs, outputs)
        }
    }
    impl Backend for HoleWriter {
        fn name(&self) -> String {
            "holes".into()
        }
        fn feature_level(&self) -> FeatureLevel {
            FeatureLevel::L4_1
        }
        fn compile(
            &self,
            op: &OperatorDesc,
        ) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
            Ok(Box::new(Writes(self.0.compile(op)?)))
        }
    }
    let result = run_case(
        &HoleWriter(OracleBackend::default()),
        &case("edge.join.output_with_holes"),
        &RunOptions::default(),
    );
    assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("unaddressed byte(s)")),
        "{:?}",
        result.notes
    );
}

#[test]
fn cases_above_the_level_or_with_unclaimed_types_are_skipped_with_the_reason() {
    struct Limited(OracleBackend);
    impl Backend for Limited {
        fn name(&self) -> String {
            "limited".into()
        }
        fn feature_level(&self) -> FeatureLevel {
            FeatureLevel::L2_1
        }
        fn data_types(&self) -> Vec<dmlcts_tensor::DataType> {
            vec![dmlcts_tensor::DataType::Float32]
        }
        fn compile(
            &self,
            op: &OperatorDesc,
        ) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
            self.0.compile(op)
        }
    }
    let backend = Limited(OracleBackend::new(FeatureLevel::L2_1));
    let r = run_case(
        &backend,
        &case("edge.join.one_dimension"),
        &RunOptions::default(),
    );
    assert_eq!(
        (r.status, r.reason.as_str()),
        (Status::Skipped, "backend limited does not claim INT32")
    );
    let r = run_case(
        &backend,
        &case("levels.join.float32.1d"),
        &RunOptions::default(),
    );
    assert_eq!(
        (r.status, r.reason.as_str()),
        (Status::Skipped, "needs feature level 4_1; running at 2_1")
    );
    let r = run_case(
        &backend,
        &case("doc.split.example1_axis2"),
        &RunOptions::default(),
    );
    assert_eq!(r.status, Status::Passed);
}

#[test]
fn strict_level_requires_rejection_and_non_strict_checks_outputs_instead() {
    // A backend claiming 3_0 that accepts a 6-dimensional Join (the page says 4 to 5).
    static ORACLE_4_1: std::sync::OnceLock<OracleBackend> = std::sync::OnceLock::new();
    struct Generous;
    impl Backend for Generous {
        fn name(&self) -> String {
            "generous".into()
        }
        fn feature_level(&self) -> FeatureLevel {
            FeatureLevel::L3_0
        }
        fn compile(
            &self,
            op: &OperatorDesc,
        ) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
            ORACLE_4_1
                .get_or_init(|| OracleBackend::new(FeatureLevel::L4_1))
                .compile(op)
        }
    }
    let case = case("reject.join.dimension_count_supported.6d_at_3_0");
    let strict = RunOptions {
        strict_level: true,
        ..RunOptions::default()
    };
    let result = run_case(&Generous, &case, &strict);
    assert_eq!(result.status, Status::Failed);
    assert_eq!(result.reason, "accepted an invalid descriptor");
    assert!(
        result.details.contains("--strict-level"),
        "{}",
        result.details
    );
    let result = run_case(&Generous, &case, &RunOptions::default());
    assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
    assert!(
        result.notes[0].starts_with("accepted beyond the level-3_0 tables"),
        "{:?}",
        result.notes
    );
}
