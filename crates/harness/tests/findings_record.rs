//! The findings record (docs/findings/ and its index docs/findings.md): every file parses,
//! its case loads with the corpus loader and the oracle gives the result the file implies
//! (the case's own expectation and values; `observed` differs from them), and the index lists
//! exactly the files present, each under its implementation's heading.

use dmlcts_harness::report::findings::{FindingFile, load_dir, load_file};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn findings() -> Vec<FindingFile> {
    load_dir(&root().join("docs/findings")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn every_finding_parses_and_its_case_says_what_the_oracle_says_and_observed_does_not() {
    let findings = findings();
    assert!(
        findings
            .iter()
            .any(|f| f.finding.implementation == "directml")
    );
    for f in &findings {
        f.finding
            .check(&f.file, &root())
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn the_index_lists_exactly_the_files_present_each_under_its_implementation() {
    let index = std::fs::read_to_string(root().join("docs/findings.md")).unwrap();
    let mut heading = String::new();
    let mut listed = Vec::new();
    for line in index.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            heading = h.trim().to_string();
        }
        // A file's line is a list item whose link target is findings/<file>.yaml.
        if let Some(rest) = line.strip_prefix("- [")
            && let Some((_, after)) = rest.split_once("](findings/")
            && let Some((file, _)) = after.split_once(')')
        {
            listed.push((heading.clone(), file.to_string()));
        }
    }
    let present: BTreeSet<String> = findings().into_iter().map(|f| f.file).collect();
    let names: BTreeSet<String> = listed.iter().map(|(_, f)| f.clone()).collect();
    assert_eq!(names.len(), listed.len(), "a file listed twice: {listed:?}");
    assert_eq!(names, present, "docs/findings.md against docs/findings/");
    for f in findings() {
        let (heading, _) = listed.iter().find(|(_, file)| *file == f.file).unwrap();
        assert_eq!(
            *heading, f.finding.implementation,
            "{} is listed under `## {heading}`",
            f.file
        );
    }
    assert!(index.contains("\n## Campaigns\n"), "a Campaigns heading");
}

#[test]
fn a_finding_that_says_what_the_oracle_says_or_breaks_the_format_is_refused_with_its_field() {
    let dir = std::env::temp_dir().join(format!("dmlcts-findings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let original = std::fs::read_to_string(
        root().join("docs/findings/directml-slice1-output-smaller-than-window.yaml"),
    )
    .unwrap();
    let check = |text: &str| {
        let path = dir.join("directml-x.yaml");
        std::fs::write(&path, text).unwrap();
        let result = load_file(&path).and_then(|f| f.finding.check(&f.file, &root()));
        result.err().unwrap_or_default()
    };
    assert_eq!(check(&original), "");
    // `observed` equal to the oracle's own outputs is no disagreement.
    let same = original.replace(
        "outputs: [[[100, 101], [102, 103]]]",
        "outputs: [[[100, 101], [104, 105]]]",
    );
    assert!(
        check(&same)
            .ends_with("observed: the outputs are the oracle's own; that is no disagreement"),
        "{}",
        check(&same)
    );
    // The case's own values must be the oracle's.
    let wrong = original.replace(
        "expected: [[100, 101], [104, 105]]",
        "expected: [[100, 101], [102, 103]]",
    );
    assert!(
        check(&wrong).contains("case: corpus: the case's expected values disagree with the oracle"),
        "{}",
        check(&wrong)
    );
    let bad = original.replace("classification: implementation-bug", "classification: bug");
    assert!(check(&bad).ends_with(
        "classification: `bug` is not one of implementation-bug, semantics-difference, page-ambiguity"
    ));
    let bad = original.replace("corpus_cases: [edge.", "corpus_cases: [nosuch.");
    assert!(check(&bad).contains("corpus_cases: no corpus case `nosuch."));
    let bad = original.replace("input_window_sizes: [2, 4]", "input_window_sizes: [2, 5]");
    assert!(check(&bad).contains("no feature level gives the stated expectation; at 6_4 the oracle rejects it with [slice1.window_inside_input]"), "{}", check(&bad));
    let bad = original.replace(
        "corpus_cases: [edge.slice1.output_smaller_than_window_on_inner_axis, ",
        "corpus_cases: [edge.slice1.overlapping_input_rows, ",
    );
    assert!(
        check(&bad).ends_with(
            "corpus_cases: `edge.slice1.overlapping_input_rows` is not an expected failure of \
             directml in expectations/directml.yaml"
        ),
        "{}",
        check(&bad)
    );
    let bad = original.replace("title:", "headline:");
    assert!(
        check(&bad).contains("unknown field `headline`"),
        "{}",
        check(&bad)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
