//! Fuzz target: shard reports read by `fuzz merge` (`merge_reports`: the bounded reader, the
//! merge's byte and value budget, the JSON parser, the fields' checks). Bytes of any kind, a
//! shard report's text mutated with JSON's tokens, and its values replaced by values of any
//! type, merged with a valid report of the other shard. Each merge must be a merged report
//! (whose replay commands are the merge's own, never a report's text) or an error that names
//! a file: no panic. `cargo test` runs 256 inputs per property; `DMLCTS_FUZZ_INPUT_CASES=N`
//! more (docs/guide/robustness.md).

use dmlcts_fuzz::merge::merge_reports;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn config() -> ProptestConfig {
    let cases = std::env::var("DMLCTS_FUZZ_INPUT_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn report(shard: &str) -> Value {
    json!({
        "backend": "cpu", "device": "d", "suite": {"name": "dmlcts", "version": "0.1.0"},
        "seed": 9, "shard": shard, "cases_run": 10, "descriptors_run": 10, "seconds": 1.5,
        "feature_levels": {"4_1": 10}, "skipped_descriptors": 1,
        "skip_reasons": [{"reason": "unsupported", "count": 1}],
        "unclassified_failures": 0, "replay": "dmlcts fuzz --backend cpu --seed 9",
        "buckets": [{
            "signature": "split.values.x", "status": "new", "check": "values",
            "known_as": null, "reason": null, "count": 2, "reproduced": true,
            "operator": "split", "feature_level": "4_1", "first_case_index": 3,
            "first_case_seed": 7, "shrink_seconds": 0.1, "shrinks": 1, "shrink_checks": 2,
            "saved_case": "cases/regressions/x.yaml",
            "replay": "dmlcts conformance --backend cpu --cases x.yaml --filter n --exact",
            "report": "FAIL ..."
        }]
    })
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,16}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every path to a value of `value` (object keys and list indices).
fn paths(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                at.push(k.clone());
                paths(v, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(i.to_string());
                paths(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

fn replaced() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec((any::<prop::sample::Index>(), any_json()), 1..4).prop_map(|edits| {
        let mut value = report("0/2");
        for (at, new) in edits {
            let mut all = Vec::new();
            paths(&value, &mut Vec::new(), &mut all);
            let path = &all[at.index(all.len())];
            let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
            if let Some(slot) = value.pointer_mut(&pointer) {
                *slot = new;
            }
        }
        value.to_string().into_bytes()
    })
}

const TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    "1e400",
    "-0",
    "18446744073709551616",
    "null",
    "true",
    "\u{1b}[2J",
    "\u{2060}",
    " ",
    "\n",
];

fn mutated_text() -> impl Strategy<Value = Vec<u8>> {
    let edit = (
        0usize..3,
        any::<prop::sample::Index>(),
        0usize..20,
        0..TOKENS.len(),
    );
    prop::collection::vec(edit, 1..6).prop_map(|edits| {
        let mut text = serde_json::to_string_pretty(&report("0/2")).unwrap();
        for (kind, at, span, token) in edits {
            let boundaries: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            let start = boundaries[at.index(boundaries.len())];
            let end = (boundaries.iter().copied())
                .find(|&i| i >= start + span)
                .unwrap_or(text.len());
            match kind {
                0 => text.insert_str(start, TOKENS[token]),
                1 => text.replace_range(start..end, ""),
                _ => text.replace_range(start..end, TOKENS[token]),
            }
        }
        text.into_bytes()
    })
}

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "dmlcts-fuzz-reports-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn merges_or_names_a_file(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = dir();
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::write(&a, bytes).unwrap();
    std::fs::write(&b, report("1/2").to_string()).unwrap();
    match merge_reports(&[Path::new(&a), Path::new(&b)]) {
        Ok(merged) => {
            for bucket in merged["buckets"].as_array().into_iter().flatten() {
                if let Some(replay) = bucket.get("replay").and_then(Value::as_str) {
                    prop_assert!(
                        replay.starts_with("dmlcts conformance --backend "),
                        "{}",
                        replay
                    );
                }
            }
        }
        Err(e) => {
            let named = [&a, &b]
                .iter()
                .any(|p| e.starts_with(&p.display().to_string()));
            prop_assert!(named, "{}", e);
            prop_assert!(e.len() < 4096, "{} bytes", e.len());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_merge_or_are_an_error_naming_a_file(
        bytes in prop::collection::vec(any::<u8>(), 0..2048)
    ) {
        merges_or_names_a_file(&bytes)?;
    }

    #[test]
    fn a_report_with_values_of_any_type_merges_or_is_an_error_naming_a_file(
        bytes in replaced()
    ) {
        merges_or_names_a_file(&bytes)?;
    }

    #[test]
    fn a_mutated_report_text_merges_or_is_an_error_naming_a_file(bytes in mutated_text()) {
        merges_or_names_a_file(&bytes)?;
    }
}
