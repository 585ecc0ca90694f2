//! A run in which an available backend skipped every case it could have run fails, in the
//! conformance command and in libtest targets alike; an unavailable backend, cases outside
//! the running level and a run filtered to nothing do not trip it.

use clap::Parser;
use dmlcts_cli::ConformanceArgs;
use dmlcts_cli::Resolved;
use dmlcts_cli::conformance_with;
use dmlcts_harness::{Corpus, Session, SessionOptions, corpus_trials, libtest_run};
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OperatorKind,
};
use libtest_mimic::Arguments;
use std::sync::Arc;

/// The oracle, claiming no data type at all (or, with `unavailable`, not available).
struct ClaimsNothing {
    oracle: OracleBackend,
    unavailable: bool,
}

impl Backend for ClaimsNothing {
    fn name(&self) -> String {
        "claims-nothing".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn data_types(&self) -> Vec<DataType> {
        Vec::new()
    }
    fn unavailable_reason(&self) -> Option<String> {
        self.unavailable.then(|| "no adapter".to_string())
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.oracle.compile(op)
    }
}

fn claims_nothing(unavailable: bool) -> Box<dyn Backend> {
    Box::new(ClaimsNothing {
        oracle: OracleBackend::new(FeatureLevel::L4_1),
        unavailable,
    })
}

#[derive(Parser)]
struct Words {
    #[command(flatten)]
    args: ConformanceArgs,
}

fn conformance(words: &[&str], unavailable: bool) -> i32 {
    let args = Words::parse_from(std::iter::once("conformance").chain(words.iter().copied())).args;
    i32::from(dmlcts_cli::exit_status(&conformance_with(
        &args,
        "dmlcts",
        &|_| Ok(Resolved::single(Arc::from(claims_nothing(unavailable)))),
    )))
}

#[test]
fn a_conformance_run_where_the_backend_skips_everything_fails() {
    assert_eq!(conformance(&["--filter", "doc."], false), 1);
    // A filter that selects nothing is an error of its own (exit status 2), not a pass.
    assert_eq!(conformance(&["--filter", "no.such.case"], false), 2);
    assert_eq!(conformance(&["--filter", "doc."], true), 0);
}

#[test]
fn a_skipped_everything_run_is_a_failure_in_the_json_and_junit_reports_too() {
    let dir = std::env::temp_dir().join(format!("dmlcts-skipped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, junit) = (dir.join("r.json"), dir.join("r.xml"));
    let status = conformance(
        &[
            "--filter",
            "doc.",
            "--json",
            json.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
        false,
    );
    assert_eq!(status, 1);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["summary"]["failed"], 1, "{report}");
    assert_eq!(report["summary"]["skipped"], 8, "{report}");
    let run = &report["cases"][8];
    assert_eq!(run["id"], "run:skipped-everything");
    assert_eq!(run["status"], "failed");
    assert!(
        run["details"]
            .as_str()
            .unwrap()
            .contains("is available but skipped all 8 cases it could run"),
        "{run}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("tests=\"9\" failures=\"1\" skipped=\"8\""),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<testcase classname=\"dmlcts.run\" name=\"run: backend claims-nothing tested nothing\""
        ),
        "{xml}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn libtest(filter: &str, unavailable: bool) -> Result<(), String> {
    let args = Arguments::from_iter(["corpus", "--quiet", "--test-threads", "1", filter]);
    libtest_run(&args, &|_| claims_nothing(unavailable))
}

#[test]
fn a_libtest_run_where_the_backend_skips_everything_fails() {
    assert_eq!(
        libtest("doc.", false),
        Err(
            "backend claims-nothing is available but skipped all 8 cases it could run \
             (8 of them: backend claims-nothing does not claim FLOAT32); a run that tests \
             nothing fails"
                .to_string()
        )
    );
}

#[test]
fn a_libtest_run_filtered_to_nothing_or_on_an_unavailable_backend_passes() {
    assert_eq!(libtest("no.such.case", false), Ok(()));
    assert_eq!(libtest("doc.", true), Ok(()));
}

#[test]
fn a_libtest_run_that_runs_cases_passes() {
    let args = Arguments::from_iter(["corpus", "--quiet", "doc."]);
    assert_eq!(
        libtest_run(&args, &|level| Box::new(OracleBackend::new(level))),
        Ok(())
    );
}

#[test]
fn cases_outside_the_running_level_do_not_count() {
    // At 1_0 every Slice1 case is above the level: skipped, but not the backend's doing.
    let corpus = Corpus::embedded();
    let session = Session::new(
        Arc::from(claims_nothing(false)),
        None,
        SessionOptions {
            feature_level: Some(FeatureLevel::L1_0),
            ..SessionOptions::default()
        },
    );
    for case in corpus
        .cases
        .iter()
        .filter(|c| c.name.starts_with("doc.slice1"))
    {
        session.step(case);
    }
    assert_eq!(session.skipped_everything(), None);
}

/// The oracle, answering Unsupported for the operators in `kinds` (known only at compile).
struct UnsupportedFor {
    oracle: OracleBackend,
    kinds: Vec<OperatorKind>,
}

impl Backend for UnsupportedFor {
    fn name(&self) -> String {
        "unsupported-for".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        if self.kinds.contains(&op.kind()) {
            return Err(CompileError::Unsupported(format!("no {} here", op.kind())));
        }
        self.oracle.compile(op)
    }
}

fn unsupported_for(kinds: &[OperatorKind]) -> Box<dyn Backend> {
    Box::new(UnsupportedFor {
        oracle: OracleBackend::new(FeatureLevel::L4_1),
        kinds: kinds.to_vec(),
    })
}

#[test]
fn a_libtest_skip_found_at_run_time_is_ignored_never_passed_nor_failed() {
    // doc.: 2 Slice1 cases, 6 others.
    let args = Arguments::from_iter(["corpus", "--quiet", "--test-threads", "1", "doc."]);
    let conclusion = libtest_mimic::run(
        &args,
        corpus_trials(&|_| unsupported_for(&[OperatorKind::Slice1])),
    );
    assert_eq!(
        (
            conclusion.num_passed,
            conclusion.num_ignored,
            conclusion.num_failed
        ),
        (6, 2, 0)
    );
    assert_eq!(
        libtest_run(&args, &|_| unsupported_for(&[OperatorKind::Slice1])),
        Ok(())
    );
}

#[test]
fn a_libtest_run_where_every_case_is_unsupported_at_run_time_fails() {
    let args = Arguments::from_iter(["corpus", "--quiet", "--test-threads", "1", "doc.slice1"]);
    assert_eq!(
        libtest_run(&args, &|_| unsupported_for(&[OperatorKind::Slice1])),
        Err(
            "backend unsupported-for is available but skipped all 2 cases it could run \
             (2 of them: backend unsupported-for: no slice1 here); a run that tests nothing fails"
                .to_string()
        )
    );
}

#[derive(Parser)]
struct FuzzWords {
    #[command(flatten)]
    args: dmlcts_cli::FuzzArgs,
}

fn fuzz(backend: fn() -> Box<dyn Backend>, out: &std::path::Path) -> i32 {
    let host = dmlcts_cli::Host {
        program: "dmlcts",
        default_backends_file: std::path::PathBuf::from("backends.yaml"),
        default_fuzz_out: out.to_path_buf(),
        directml: |_| None,
        directml_names: Vec::new,
        directml_ready: Vec::new,
    };
    let out = out.display().to_string();
    let words = [
        "fuzz",
        "--backend",
        "planted",
        "--cases",
        "40",
        "--seed",
        "3",
        "--out",
        &out,
    ];
    let args = FuzzWords::parse_from(words).args;
    i32::from(dmlcts_cli::exit_status(&dmlcts_cli::fuzz_with(
        &args,
        &host,
        &move |_| Ok(Resolved::single(Arc::from(backend()))),
    )))
}

#[test]
fn a_fuzz_campaign_where_the_backend_can_run_no_descriptor_fails() {
    let out = std::env::temp_dir().join(format!("dmlcts-skipped-fuzz-{}", std::process::id()));
    let every_kind = || {
        unsupported_for(&[
            OperatorKind::Split,
            OperatorKind::Join,
            OperatorKind::Slice1,
        ])
    };
    assert_eq!(fuzz(every_kind, &out.join("all")), 1);
    let joins_only = || unsupported_for(&[OperatorKind::Join]);
    assert_eq!(fuzz(joins_only, &out.join("some")), 0);
    let _ = std::fs::remove_dir_all(&out);
}
