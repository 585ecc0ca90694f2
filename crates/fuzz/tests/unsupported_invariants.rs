//! A backend that cannot run some descriptors says `unsupported`, and a case it cannot run is
//! skipped, never failed. The invariants (join of split, reversing twice) run derived
//! descriptors of their own; one the backend cannot run leaves its invariant unchecked.
//! (On main a derived descriptor answered `unsupported` was an invariant failure: a GPU
//! delegate that refuses reversing slices gave 22 such buckets in a 2,000-case campaign.)

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_fuzz::{CampaignOptions, Mix, run_campaign};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, FeatureLevel, OperatorDesc, OperatorKind,
};

/// The CPU backend at 4_1, except that a Slice1 with every window stride negative, or a Join,
/// is `unsupported` (as a library that cannot express them would say).
struct NoReverseNoJoin(CpuBackend);

impl Backend for NoReverseNoJoin {
    fn name(&self) -> String {
        "no-reverse-no-join".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        match op {
            OperatorDesc::Slice1(s) if s.input_window_strides.iter().all(|&w| w < 0) => Err(
                CompileError::Unsupported("no reversing slices here".to_string()),
            ),
            OperatorDesc::Join(_) => Err(CompileError::Unsupported("no joins here".to_string())),
            _ => self.0.compile(op),
        }
    }
}

#[test]
fn invariants_whose_derived_descriptor_is_unsupported_are_unchecked_never_failed() {
    for op in [OperatorKind::Slice1, OperatorKind::Split] {
        let backend = NoReverseNoJoin(CpuBackend::new());
        let mut options = CampaignOptions::new("no-reverse-no-join", 3);
        options.cases = Some(400);
        options.op = Some(op);
        options.mix = Mix::ValidOnly;
        let outcome = run_campaign(&[&backend], &options, |_| {});
        assert_eq!(outcome.cases_run, 400, "{op}");
        let new: Vec<String> = outcome
            .new_buckets()
            .map(|b| format!("{}\n{}", b.id, b.report))
            .collect();
        assert!(new.is_empty(), "{op}: {new:#?}");
    }
}

/// The CPU backend at 4_1 that can run nothing.
struct RunsNothing;

impl Backend for RunsNothing {
    fn name(&self) -> String {
        "runs-nothing".into()
    }
    fn feature_level(&self) -> FeatureLevel {
        FeatureLevel::L4_1
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        Err(CompileError::Unsupported(format!("no {} here", op.kind())))
    }
}

#[test]
fn descriptors_the_backend_cannot_run_are_counted_as_skipped_with_their_reasons_never_as_checked() {
    let backend = NoReverseNoJoin(CpuBackend::new());
    let mut options = CampaignOptions::new("no-reverse-no-join", 5);
    options.cases = Some(300);
    options.mix = Mix::ValidOnly;
    let outcome = run_campaign(&[&backend], &options, |_| {});
    let joins = outcome
        .skip_reasons
        .iter()
        .find(|(reason, _)| reason.contains("no joins here"))
        .map(|(_, n)| *n);
    assert!(joins.is_some_and(|n| n > 0), "{:?}", outcome.skip_reasons);
    let by_reason: u64 = outcome.skip_reasons.iter().map(|(_, n)| n).sum();
    assert_eq!(by_reason, outcome.skipped);
    assert!(outcome.skipped < outcome.descriptors_run);
    assert!(!outcome.skipped_everything());
    assert!(
        outcome.summary_line().contains(&format!(
            "skipped (not run: unsupported, or not held here): {} of 300 descriptors",
            outcome.skipped
        )),
        "{}",
        outcome.summary_line()
    );
}

#[test]
fn a_campaign_on_a_backend_that_runs_nothing_skipped_everything() {
    let mut options = CampaignOptions::new("runs-nothing", 5);
    options.cases = Some(50);
    let outcome = run_campaign(&[&RunsNothing], &options, |_| {});
    assert_eq!(outcome.descriptors_run, 50);
    assert_eq!(outcome.skipped, 50);
    assert!(outcome.skipped_everything());
    assert_eq!(outcome.new_buckets().count(), 0);
    let kinds: Vec<&str> = outcome
        .skip_reasons
        .iter()
        .map(|(r, _)| r.as_str())
        .collect();
    assert!(kinds.iter().all(|r| r.contains(" here")), "{kinds:?}");
}

#[test]
fn merged_shards_sum_their_skipped_descriptors_by_reason() {
    let dir = std::env::temp_dir().join(format!("dmlcts-skip-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let backend = NoReverseNoJoin(CpuBackend::new());
    let mut paths = Vec::new();
    let mut skipped = 0;
    for index in 0..2 {
        let mut options = CampaignOptions::new("no-reverse-no-join", 5);
        options.cases = Some(200);
        options.mix = Mix::ValidOnly;
        options.shard = dmlcts_fuzz::Shard { index, count: 2 };
        let outcome = run_campaign(&[&backend], &options, |_| {});
        skipped += outcome.skipped;
        let path = dir.join(format!("shard-{index}.json"));
        let report = dmlcts_fuzz::report::json_report(&options, &outcome, "fuzz");
        std::fs::write(&path, report).unwrap();
        paths.push(path);
    }
    let paths: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();
    let merged = dmlcts_fuzz::merge::merge_reports(&paths).unwrap();
    assert!(skipped > 0);
    assert_eq!(merged["skipped_descriptors"], skipped);
    assert_eq!(merged["skipped_everything"], false);
    let by_reason: u64 = (merged["skip_reasons"].as_array().unwrap().iter())
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    assert_eq!(by_reason, skipped);
    assert!(
        merged["summary"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{skipped} of 200 descriptors")),
        "{}",
        merged["summary"]
    );
    // Counts in report files are the files' word: huge ones saturate, never overflow.
    for path in &paths {
        let mut report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for field in ["cases_run", "descriptors_run", "skipped_descriptors"] {
            report[field] = serde_json::json!(u64::MAX);
        }
        report["skip_reasons"] = serde_json::json!([{"reason": "huge", "count": u64::MAX}]);
        std::fs::write(path, report.to_string()).unwrap();
    }
    let merged = dmlcts_fuzz::merge::merge_reports(&paths).unwrap();
    assert_eq!(merged["cases_run"], u64::MAX);
    assert_eq!(merged["skipped_descriptors"], u64::MAX);
    assert_eq!(merged["skip_reasons"][0]["count"], u64::MAX);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A campaign's report states what it reached (here: no Join ran, so nothing of Join was
/// checked; Split and Slice1 were), and `fuzz merge` sums the shards' statements.
#[test]
fn a_campaign_states_what_it_reached_and_merge_sums_the_shards_statements() {
    let dir = std::env::temp_dir().join(format!("dmlcts-coverage-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let backend = NoReverseNoJoin(CpuBackend::new());
    let mut paths = Vec::new();
    let mut split_copies = 0;
    for index in 0..2 {
        let mut options = CampaignOptions::new("no-reverse-no-join", 5);
        options.cases = Some(200);
        options.mix = Mix::ValidOnly;
        options.shard = dmlcts_fuzz::Shard { index, count: 2 };
        let outcome = run_campaign(&[&backend], &options, |_| {});
        let coverage = &outcome.coverage;
        assert_eq!(coverage.state("join.copy").name(), "unsupported");
        assert_eq!(coverage.state("split.copy").name(), "checked");
        assert_eq!(coverage.state("slice1.copy").name(), "checked");
        // Valid cases only: no rule's edge was hit.
        assert_eq!(
            coverage.state("split.axis_in_range").name(),
            "not in this run"
        );
        assert!(
            coverage.line().contains("; not checked: nothing of join, "),
            "{}",
            coverage.line()
        );
        split_copies += coverage.tallies["split.copy"].passed;
        let path = dir.join(format!("shard-{index}.json"));
        let report = dmlcts_fuzz::report::json_report(&options, &outcome, "fuzz");
        let report_json: serde_json::Value = serde_json::from_str(&report).unwrap();
        assert_eq!(report_json["coverage"]["line"], coverage.line());
        std::fs::write(&path, report).unwrap();
        paths.push(path);
    }
    let paths: Vec<&std::path::Path> = paths.iter().map(|p| p.as_path()).collect();
    let merged = dmlcts_fuzz::merge::merge_reports(&paths).unwrap();
    let split_copy = (merged["coverage"]["assertions"].as_array().unwrap().iter())
        .find(|a| a["id"] == "split.copy")
        .unwrap();
    assert!(split_copies > 0);
    assert_eq!(split_copy["passed"], split_copies);
    assert_eq!(split_copy["state"], "checked");
    let _ = std::fs::remove_dir_all(&dir);
}
