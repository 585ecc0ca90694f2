//! Every run states what it covered: the summary line, the JSON report's `coverage` and the
//! JUnit report's properties, compared here with statements written by hand (not computed by
//! the code that makes them), for a CPU server that offers 2_1 only and for a backend that
//! answers `unsupported` for FLOAT16; and `--require-coverage` fails a run that skipped what
//! it names and passes one that checked it.

use clap::Parser;
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_cli::{ConformanceArgs, Resolved, conformance_with};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc,
    ValidationProfile,
};
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dmlcts-coverage-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn json(path: &PathBuf) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The assertions of a report's coverage whose state is not `checked`, with their state.
fn not_checked(report: &serde_json::Value) -> Vec<(String, String)> {
    (report["coverage"]["assertions"].as_array().unwrap().iter())
        .filter(|a| a["state"] != "checked")
        .map(|a| {
            (
                a["id"].as_str().unwrap().to_string(),
                a["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The 2_1 tables (specs/) list 8 data types (no 64-bit one) and 4 dimensions for Split and
/// Join, 4 or 5 for Slice1; Slice1 exists from 2_1, so nothing below it can be asked; a table
/// of one dimension count cannot have tensors of different counts without breaking it too.
#[test]
fn the_2_1_only_cpu_server_states_what_it_checked_and_what_lies_outside_its_level() {
    let dir = scratch("2_1");
    let (report, junit) = (dir.join("r.json"), dir.join("r.xml"));
    let server = format!(
        "process:{} serve-cpu --feature-level 2_1",
        env!("CARGO_BIN_EXE_dmlcts")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
        .args(["conformance", "--backend", &server, "--color", "never"])
        .args(["--json", report.to_str().unwrap()])
        .args(["--junit", junit.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let line = "checked: 29 of 32 rules, 20 of 23 execution properties, 8 of 11 data types at \
                ranks 4-5, at level 2_1; not checked: operator.introduced_at_level, \
                split.same_dimension_count, join.same_dimension_count (outside the levels \
                offered), FLOAT64/INT64/UINT64 (outside the levels offered)";
    assert!(
        stdout.lines().any(|l| l == line),
        "the summary line:\n{stdout}"
    );
    let report = json(&report);
    let coverage = &report["coverage"];
    assert_eq!(coverage["line"], line);
    assert_eq!(
        coverage["data_types_checked"],
        serde_json::json!([
            "FLOAT32", "FLOAT16", "INT32", "INT16", "INT8", "UINT32", "UINT16", "UINT8"
        ])
    );
    assert_eq!(coverage["ranks_checked"], serde_json::json!([4, 5]));
    assert_eq!(coverage["levels_run"], serde_json::json!(["2_1"]));
    assert_eq!(
        coverage["operators_checked"],
        serde_json::json!(["split", "join", "slice1"])
    );
    let outside = "outside the levels offered";
    assert_eq!(
        not_checked(&report),
        pairs(&[
            ("operator.introduced_at_level", outside),
            ("split.same_dimension_count", outside),
            ("join.same_dimension_count", outside),
            ("bits.FLOAT64", outside),
            ("bits.INT64", outside),
            ("bits.UINT64", outside),
        ])
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    for property in [
        "<property name=\"coverage.bits.FLOAT64\" value=\"outside the levels offered\"/>",
        "<property name=\"coverage.slice1.negative_stride\" value=\"checked\"/>",
        "<property name=\"coverage.split.axis_in_range\" value=\"checked\"/>",
    ] {
        assert!(xml.contains(property), "{property} in\n{xml}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CPU backend at each level, answering `unsupported` for every descriptor with a
/// FLOAT16 tensor.
struct NoFloat16(CpuBackend);

impl Backend for NoFloat16 {
    fn name(&self) -> String {
        "no-float16".to_string()
    }
    fn feature_level(&self) -> FeatureLevel {
        self.0.feature_level()
    }
    fn data_types(&self) -> Vec<DataType> {
        self.0.data_types()
    }
    fn validation_profile(&self) -> ValidationProfile {
        self.0.validation_profile()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let float16 = (op.inputs().iter().chain(&op.outputs()))
            .any(|(_, t)| t.data_type == DataType::Float16);
        if float16 {
            return Err(CompileError::Unsupported("no FLOAT16 here".to_string()));
        }
        self.0.compile(op)
    }
}

fn no_float16() -> Resolved {
    Resolved::per_level(
        Arc::new(NoFloat16(CpuBackend::at_level(FeatureLevel::L4_1))),
        |level| Arc::new(NoFloat16(CpuBackend::at_level(level))),
    )
}

#[derive(Parser)]
struct Words {
    #[command(flatten)]
    args: ConformanceArgs,
}

fn conformance(words: &[&str], resolved: fn() -> Resolved) -> i32 {
    let args = Words::parse_from(std::iter::once("conformance").chain(words.iter().copied())).args;
    i32::from(dmlcts_cli::exit_status(&conformance_with(
        &args,
        "dmlcts",
        &|_| Ok(resolved()),
    )))
}

fn cpu() -> Resolved {
    Resolved::per_level(
        Arc::new(CpuBackend::at_level(FeatureLevel::L4_1)),
        |level| Arc::new(CpuBackend::at_level(level)),
    )
}

/// Every rule has a must-reject case without FLOAT16 (cases/validation uses FLOAT32 and the
/// others), so only FLOAT16's bit patterns go unchecked.
#[test]
fn a_backend_unsupported_for_float16_states_that_float16_was_not_checked() {
    let dir = scratch("float16");
    let report = dir.join("r.json");
    assert_eq!(
        conformance(&["--json", report.to_str().unwrap()], no_float16),
        0
    );
    let report = json(&report);
    assert_eq!(
        report["coverage"]["line"],
        "checked: 32 of 32 rules, 22 of 23 execution properties, 10 of 11 data types at ranks \
         1-8, at levels 1_0 to 4_1; not checked: FLOAT16 (unsupported)"
    );
    assert_eq!(
        not_checked(&report),
        pairs(&[("bits.FLOAT16", "unsupported")])
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn require_coverage_fails_a_run_that_skipped_what_it_names_and_passes_one_that_checked_it() {
    let floor = ["--require-coverage", "bits.FLOAT16,split.copy"];
    assert_eq!(conformance(&floor, no_float16), 1);
    assert_eq!(conformance(&floor, cpu), 0);
    assert_eq!(
        conformance(&["--require-coverage", "bits.*"], no_float16),
        1
    );
    assert_eq!(conformance(&["--require-coverage", "bits.*"], cpu), 0);
    assert_eq!(conformance(&["--require-coverage", "all"], cpu), 0);
    // A filter that leaves the assertion out of the run misses it too.
    assert_eq!(
        conformance(
            &["--filter", "doc.split", "--require-coverage", "slice1.copy"],
            cpu
        ),
        1
    );
    // A word that names no assertion is a usage error, before anything runs.
    assert_eq!(
        conformance(&["--require-coverage", "split.no_such_rule"], cpu),
        2
    );
}

#[derive(Parser)]
struct MatrixWords {
    #[command(flatten)]
    args: dmlcts_cli::MatrixArgs,
}

fn wanted(names: &[&str]) -> Vec<dmlcts_cli::Wanted> {
    (names.iter())
        .map(|name| dmlcts_cli::Wanted {
            name: name.to_string(),
            named: true,
            unavailable: None,
        })
        .collect()
}

fn matrix(words: &[&str], names: &[&str]) -> (dmlcts_harness::report::matrix::Matrix, i32) {
    let args = MatrixWords::try_parse_from(std::iter::once("matrix").chain(words.iter().copied()))
        .unwrap()
        .args;
    let (matrix, verdict) = dmlcts_cli::matrix_with(
        &args,
        "dmlcts matrix (test)",
        "dmlcts",
        &|request| match request.name.as_str() {
            "no-float16" => Ok(no_float16()),
            _ => Ok(cpu()),
        },
        &wanted(names),
        dmlcts_harness::Corpus::embedded(),
        None,
    )
    .unwrap();
    (matrix, i32::from(dmlcts_cli::exit_status(&Ok(verdict))))
}

#[test]
fn the_matrix_s_coverage_floor_fails_a_column_that_skipped_what_it_names() {
    let floor = ["--filter", "edge.", "--require-coverage", "bits.FLOAT32"];
    assert_eq!(matrix(&floor, &["cpu", "no-float16"]).1, 0);
    let floor = ["--filter", "edge.", "--require-coverage", "bits.FLOAT16"];
    assert_eq!(matrix(&floor, &["cpu"]).1, 0);
    assert_eq!(matrix(&floor, &["cpu", "no-float16"]).1, 1);
}

#[test]
fn the_matrix_shows_what_each_backend_checked_side_by_side() {
    let (matrix, _) = matrix(&[], &["cpu", "no-float16"]);
    let json: serde_json::Value = serde_json::from_str(&matrix.to_json()).unwrap();
    assert_eq!(
        json["columns"][0]["coverage"]["line"],
        "checked: 32 of 32 rules, 23 of 23 execution properties, 11 of 11 data types at ranks \
         1-8, at levels 1_0 to 4_1"
    );
    assert_eq!(
        json["columns"][1]["coverage"]["line"],
        "checked: 32 of 32 rules, 22 of 23 execution properties, 10 of 11 data types at ranks \
         1-8, at levels 1_0 to 4_1; not checked: FLOAT16 (unsupported)"
    );
    let html = matrix.to_html();
    for row in [
        "<tr><td><code>bits.FLOAT16</code></td><td class=\"passed\">checked</td>\
         <td class=\"skipped\">unsupported</td></tr>",
        "<tr><td><code>slice1.negative_stride</code></td><td class=\"passed\">checked</td>\
         <td class=\"passed\">checked</td></tr>",
    ] {
        assert!(html.contains(row), "{row}");
    }
}

/// A campaign on the 2_1-only CPU server cannot reach FLOAT64 (not in the 2_1 tables): a
/// floor naming it fails the campaign; one naming FLOAT32 passes.
#[test]
fn a_campaign_s_coverage_floor_fails_when_it_did_not_reach_what_it_names() {
    let dir = scratch("fuzz");
    let server = format!(
        "process:{} serve-cpu --feature-level 2_1",
        env!("CARGO_BIN_EXE_dmlcts")
    );
    let fuzz = |floor: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_dmlcts"))
            .args([
                "fuzz",
                "--backend",
                &server,
                "--cases",
                "100",
                "--seed",
                "5",
            ])
            .args(["--valid-only", "--require-coverage", floor, "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (status, stdout) = fuzz("bits.FLOAT64");
    assert_eq!(status, Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "fuzz: coverage floor not met: --require-coverage names 1 assertion this run did \
             not check: bits.FLOAT64 (not in this run)"
        ),
        "{stdout}"
    );
    let (status, stdout) = fuzz("bits.FLOAT32");
    assert_eq!(status, Some(0), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}
