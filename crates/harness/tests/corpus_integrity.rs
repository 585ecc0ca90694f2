//! The corpus is consistent with the specs and the oracle.

use dmlcts_harness::{
    Case, Corpus, Expectation, RunOptions, Session, SessionOptions, Status, cases_to_yaml, run_case,
};
use dmlcts_oracle::{OracleBackend, broken_rules, spec};
use dmlcts_tensor::{Backend, FeatureLevel};
use std::path::PathBuf;
use std::sync::Arc;

/// The embedded corpus with each sibling group replaced by its steps: every step is a case
/// held to everything a case is held to.
fn cases_and_steps() -> Vec<Case> {
    (Corpus::embedded().cases.into_iter())
        .flat_map(|case| {
            if case.is_group() {
                case.steps
            } else {
                vec![case]
            }
        })
        .collect()
}

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_corpus_loads_without_errors() {
    let corpus = Corpus::embedded();
    assert!(corpus.errors.is_empty(), "{:#?}", corpus.errors);
    assert!(corpus.cases.len() > 1100, "{} cases", corpus.cases.len());
}

#[test]
fn the_embedded_corpus_is_the_cases_folder() {
    let on_disk = Corpus::load_path(&repository().join("cases"));
    assert!(on_disk.errors.is_empty(), "{:#?}", on_disk.errors);
    let mut disk: Vec<String> = on_disk.cases.into_iter().map(|c| c.name).collect();
    let mut embedded: Vec<String> = Corpus::embedded()
        .cases
        .into_iter()
        .map(|c| c.name)
        .collect();
    disk.sort();
    embedded.sort();
    assert_eq!(disk, embedded);
}

#[test]
fn every_case_line_is_where_its_mapping_starts_and_names_it() {
    for case in Corpus::embedded().cases {
        let text = std::fs::read_to_string(repository().join(&case.file)).unwrap();
        let line = text.lines().nth(case.line - 1).unwrap_or("");
        let opens = line.trim_start().starts_with('-') || line.trim_start().starts_with('{');
        assert!(
            opens && line.contains(&format!("name: {}", case.name)),
            "{}:{} is `{line}`",
            case.file,
            case.line
        );
    }
}

#[test]
fn all_eight_doc_examples_are_in_the_corpus_with_expected_values() {
    let corpus = Corpus::embedded();
    let doc: Vec<_> = corpus
        .cases
        .iter()
        .filter(|c| c.tags.iter().any(|t| t == "doc"))
        .collect();
    assert_eq!(doc.len(), 8);
    for case in doc {
        assert!(case.expected.iter().all(Option::is_some), "{}", case.name);
    }
}

#[test]
fn every_spec_rule_has_a_must_reject_case() {
    let corpus = Corpus::embedded();
    let missing: Vec<&str> = spec::all_constraints()
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| {
            !corpus.cases.iter().any(|c| {
                c.expect
                    == Expectation::Reject {
                        rule: id.to_string(),
                    }
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a reject case: {missing:?}"
    );
}

#[test]
fn every_case_passes_on_the_oracle_at_its_own_level() {
    for case in &cases_and_steps() {
        let backend = OracleBackend::new(case.feature_level);
        let options = RunOptions {
            strict_level: true,
            ..RunOptions::default()
        };
        let result = run_case(&backend, case, &options);
        assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
    }
}

#[test]
fn every_sibling_group_passes_on_the_oracle_each_step_at_its_own_level() {
    let groups: Vec<Case> = (Corpus::embedded().cases.into_iter())
        .filter(Case::is_group)
        .collect();
    assert_eq!(groups.len(), 40, "the generated sibling groups");
    let at_level = Box::new(|level| Arc::new(OracleBackend::new(level)) as Arc<dyn Backend>);
    let options = SessionOptions {
        strict_level: true,
        ..SessionOptions::default()
    };
    let first = Arc::new(OracleBackend::new(FeatureLevel::LATEST));
    let session = Session::new(first, Some(at_level), options);
    for group in &groups {
        let result = session.step(group);
        assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
        assert_eq!(result.id, format!("{}:{}", group.file, group.line));
    }
}

/// Each sibling group's steps differ in exactly one field, the first and the last are the
/// same descriptor at the same level, and the two siblings' verdicts or outputs differ.
#[test]
fn each_sibling_group_is_a_b_a_of_descriptors_that_differ_in_one_field() {
    for group in Corpus::embedded().cases.iter().filter(|c| c.is_group()) {
        let [a, b, again] = &group.steps[..] else {
            panic!("{}: {} steps", group.name, group.steps.len());
        };
        assert_eq!((&a.op, a.feature_level), (&again.op, again.feature_level));
        assert_ne!(
            a.inputs, again.inputs,
            "{}: the repeat has new data",
            group.name
        );
        assert_eq!(a.op.kind(), b.op.kind(), "{}", group.name);
        assert!(
            (a.feature_level != b.feature_level) != (a.op != b.op),
            "{}: either the level or the descriptor differs, not both",
            group.name
        );
        if a.expect == b.expect {
            assert_eq!(a.expect, Expectation::Accept, "{}", group.name);
        }
    }
}

/// The levels a must-reject case runs at: a table's rejection where the same table row
/// applies, any other from its own level up (`--feature-level`, or a multi-level backend
/// offered it there).
fn levels_it_runs_at(case: &Case) -> Vec<FeatureLevel> {
    let row = |level| spec::support_row(case.op.kind(), level).map(|r| r.level.as_str());
    FeatureLevel::ALL
        .into_iter()
        .filter(|&level| {
            if case.rejection_depends_on_level() {
                row(level) == row(case.feature_level)
            } else {
                level >= case.feature_level
            }
        })
        .collect()
}

#[test]
fn every_reject_case_breaks_exactly_its_rule_at_every_level_it_runs_at() {
    let mut masked = Vec::new();
    for case in cases_and_steps() {
        let Expectation::Reject { rule } = &case.expect else {
            continue;
        };
        for level in levels_it_runs_at(&case) {
            let broken: Vec<String> = broken_rules(&case.op, level)
                .into_iter()
                .map(|v| v.rule)
                .collect();
            if broken != [rule.clone()] {
                masked.push(format!(
                    "{} ({}:{}) at {level}: names {rule}, breaks {broken:?}",
                    case.name, case.file, case.line
                ));
            }
        }
    }
    assert!(
        masked.is_empty(),
        "must-reject cases that break more than their rule where they run:\n{}",
        masked.join("\n")
    );
}

#[test]
fn a_reject_case_runs_exactly_where_it_breaks_its_rule_alone_and_is_skipped_elsewhere() {
    let mut skipped_as_not_alone = Vec::new();
    for case in cases_and_steps() {
        let Expectation::Reject { rule } = &case.expect else {
            continue;
        };
        let runs_at = levels_it_runs_at(&case);
        for level in FeatureLevel::ALL {
            let options = RunOptions {
                feature_level: Some(level),
                strict_level: true,
                ..RunOptions::default()
            };
            let result = run_case(&OracleBackend::new(level), &case, &options);
            if runs_at.contains(&level) {
                assert_eq!(result.status, Status::Passed, "{}", result.failure_report());
            } else {
                assert_eq!(result.status, Status::Skipped, "{} at {level}", case.name);
                let others: Vec<String> = broken_rules(&case.op, level)
                    .into_iter()
                    .map(|v| v.rule)
                    .filter(|r| r != rule && spec::depends_on_feature_level(r))
                    .collect();
                let expected = if case.rejection_depends_on_level() {
                    format!("checks another level's feature-level table; running at {level}")
                } else if !others.is_empty() {
                    skipped_as_not_alone.push(format!("{} at {level}", case.name));
                    format!(
                        "breaks {} as well as {rule} at {level}; runs only where {rule} is \
                         broken alone",
                        others.join(", ")
                    )
                } else {
                    format!(
                        "needs feature level {}; running at {level}",
                        case.feature_level
                    )
                };
                assert_eq!(result.reason, expected, "{} at {level}", case.name);
            }
        }
    }
    // Split's and Join's tables take only 4 dimensions before 3_0: their same_dimension_count
    // cases cannot break that rule alone there.
    for expected in [
        "reject.split.same_dimension_count at 2_1",
        "reject.join.same_dimension_count at 1_0",
    ] {
        assert!(
            skipped_as_not_alone.iter().any(|s| s == expected),
            "{expected}: {skipped_as_not_alone:?}"
        );
    }
}

#[test]
fn generated_files_match_a_fresh_generation() {
    for (path, text) in dmlcts_harness::corpus::generate::generated_files() {
        let on_disk = std::fs::read_to_string(repository().join(&path))
            .unwrap_or_else(|e| panic!("{path}: {e}; run `cargo xtask gen-cases`"));
        assert!(
            on_disk == text,
            "{path} is stale: run `cargo xtask gen-cases`"
        );
    }
}

#[test]
fn written_cases_load_back_identically() {
    let corpus = Corpus::embedded();
    let text = cases_to_yaml(&corpus.cases);
    let mut again = Corpus::default();
    again.add_text("written.yaml", &text);
    assert!(again.errors.is_empty(), "{:#?}", again.errors);
    assert_eq!(again.cases.len(), corpus.cases.len());
    for (a, b) in corpus.cases.iter().zip(&again.cases) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.op, b.op, "{}", a.name);
        assert_eq!(a.feature_level, b.feature_level, "{}", a.name);
        assert_eq!(a.expect, b.expect, "{}", a.name);
        assert_eq!(a.expected, b.expected, "{}", a.name);
        for ((_, desc), (x, y)) in a.op.inputs().iter().zip(a.inputs.iter().zip(&b.inputs)) {
            assert_eq!(x.materialize(desc), y.materialize(desc), "{}", a.name);
        }
    }
}

#[test]
fn cases_named_in_the_directml_records_exist() {
    let names: std::collections::HashSet<String> = Corpus::embedded()
        .cases
        .into_iter()
        .map(|c| c.name)
        .collect();
    let mut named = Vec::new();
    for file in ["specs/directml.yaml", "expectations/directml.yaml"] {
        let text = std::fs::read_to_string(repository().join(file)).expect(file);
        let value: serde_yaml::Value = serde_yaml::from_str(&text).expect(file);
        collect_case_names(&value, &mut named);
    }
    assert!(named.len() > 10, "{named:?}");
    let missing: Vec<&String> = named.iter().filter(|n| !names.contains(*n)).collect();
    assert!(
        missing.is_empty(),
        "named but not in the corpus: {missing:?}"
    );
}

/// Every string under a `case:` or `cases:` key.
fn collect_case_names(value: &serde_yaml::Value, out: &mut Vec<String>) {
    match value {
        serde_yaml::Value::Mapping(map) => {
            for (key, item) in map {
                match (key.as_str(), item) {
                    (Some("case"), serde_yaml::Value::String(s)) => out.push(s.clone()),
                    (Some("cases"), serde_yaml::Value::Sequence(items)) => {
                        out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_string)));
                    }
                    _ => collect_case_names(item, out),
                }
            }
        }
        serde_yaml::Value::Sequence(items) => items.iter().for_each(|i| collect_case_names(i, out)),
        _ => {}
    }
}

#[test]
fn every_assertion_has_a_case_at_every_operator_and_level_where_it_can_be_checked() {
    let document =
        dmlcts_harness::report::coverage_document::Document::of(&Corpus::embedded().cases);
    let holes = document.holes();
    assert!(
        holes.is_empty(),
        "assertions no case checks where they can be checked (add a case, or give the reason in \
         specs/execution-properties.yaml's `uncheckable`):\n  {}",
        holes.join("\n  ")
    );
}

#[test]
fn the_coverage_document_is_current() {
    let document =
        dmlcts_harness::report::coverage_document::Document::of(&Corpus::embedded().cases);
    let path = repository().join("docs/guide/coverage.md");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == document.markdown(),
        "docs/guide/coverage.md is stale: run `cargo xtask coverage`"
    );
}
