//! Fuzz target: expectations files (`Expectations::load`: the bounded reader, the scan, the
//! parser within its budgets, the entries' checks). Bytes of any kind, and the repository's
//! own expectations files mutated with YAML's tokens. Each input must load or be an error
//! that names the file (and its line where it has one): no panic. `cargo test` runs 256
//! inputs per property; `DMLCTS_FUZZ_INPUT_CASES=N` more (docs/guide/robustness.md).

use dmlcts_harness::expectations::Expectations;
use proptest::prelude::*;
use std::path::PathBuf;

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

const TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ",",
    ": ",
    "- ",
    "&a ",
    "*a",
    "<<: *a",
    "!!str ",
    "!x ",
    "%TAG ! x:\n",
    "---\n",
    "\"",
    "'",
    "|\n",
    "#",
    "\n",
    "\t",
    "  ",
    "\u{2060}",
    "\u{e0041}",
    "\\",
    "1e400",
    "18446744073709551616",
    "~",
    "null",
    "backend: ",
    "case: ",
    "reason: ",
    "versions: ",
    "\">=1, <0\"",
    "\"*\"",
    "check: ",
    "predicate: ",
    "rule: ",
    "expected_failures:",
    "known_differences:",
    "not_enforced:",
    "device: ",
    "name: ",
];

const VALID: &[&str] = &[
    include_str!("../../../expectations/tract.yaml"),
    include_str!("../../../expectations/directml.yaml"),
    include_str!("../../../expectations/litert.yaml"),
];

fn mutated() -> impl Strategy<Value = String> {
    let edit = (
        0usize..3,
        any::<prop::sample::Index>(),
        0usize..40,
        0..TOKENS.len(),
    );
    (0..VALID.len(), prop::collection::vec(edit, 1..8)).prop_map(|(base, edits)| {
        let mut text = VALID[base].to_string();
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
        text
    })
}

fn file() -> PathBuf {
    std::env::temp_dir().join(format!(
        "dmlcts-fuzz-expectations-{}-{:?}.yaml",
        std::process::id(),
        std::thread::current().id()
    ))
}

fn loads_or_names_the_file(text: &[u8]) -> Result<(), TestCaseError> {
    let path = file();
    std::fs::write(&path, text).unwrap();
    let shown = path.display().to_string();
    if let Err(e) = Expectations::load(&path) {
        prop_assert!(e.starts_with(&shown), "{}", e);
        prop_assert!(e.len() < 4096, "{} bytes", e.len());
        if let Some(rest) = e[shown.len()..].strip_prefix(':')
            && let Some(line) = rest.split(':').next().and_then(|l| l.parse::<usize>().ok())
        {
            let lines = text.split(|&b| b == b'\n').count() + 1;
            prop_assert!(
                (1..=lines).contains(&line),
                "line {} of {}: {}",
                line,
                lines,
                e
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_load_or_are_an_error_naming_the_file(
        bytes in prop::collection::vec(any::<u8>(), 0..2048)
    ) {
        loads_or_names_the_file(&bytes)?;
    }

    #[test]
    fn a_mutated_expectations_file_loads_or_is_an_error_naming_the_file(text in mutated()) {
        loads_or_names_the_file(text.as_bytes())?;
    }
}
