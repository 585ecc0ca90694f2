//! Fuzz target: the case-file pre-scan and loader (`Corpus::add_text`: the scan, the YAML
//! parser within its budgets, the case format). Bytes of any kind, and valid case files
//! mutated with YAML's own tokens (brackets, anchors, aliases, tags, directives, quotes,
//! numbers past every range, invisible characters). Each input must end in cases or load
//! errors naming the file and a line inside it: no panic. `cargo test` runs 256 inputs per
//! property; `DMLCTS_FUZZ_INPUT_CASES=N` more (CI runs them longer under a memory cap, see
//! docs/guide/robustness.md).

use dmlcts_harness::Corpus;
use proptest::prelude::*;

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

/// Pieces of YAML that change how the rest is read.
const TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ",",
    ": ",
    "- ",
    "? ",
    "&a ",
    "*a",
    "<<: *a",
    "!!str ",
    "!!binary ",
    "!x ",
    "%TAG ! tag:x:\n",
    "%YAML 1.1\n",
    "---\n",
    "...\n",
    "\"",
    "'",
    "|\n",
    ">-\n",
    "#",
    "\n",
    "\t",
    "  ",
    "\r\n",
    "\u{2028}",
    "\u{2060}",
    "\u{e0041}",
    "\u{feff}",
    "\\",
    "\0",
    "1e400",
    "-0",
    "0x",
    "0xFFFFFFFFFFFFFFFFF",
    "18446744073709551616",
    "-9223372036854775809",
    ".nan",
    ".inf",
    "~",
    "null",
    "true",
    "cases:",
    "name: ",
    "data: ",
    "sizes: ",
    "strides: ",
    "total_tensor_size_in_bytes: ",
    "4294967295",
    "axis: ",
    "generate: ",
    "feature_level: ",
    "reject: ",
    "expected: ",
];

const VALID: &str = include_str!("../../../cases/doc/join.yaml");

/// A valid case file with `edits` applied: a token inserted, a span deleted, or a span
/// replaced by a token, each at a character boundary.
fn mutated() -> impl Strategy<Value = String> {
    let edit = (
        0usize..3,
        any::<prop::sample::Index>(),
        0usize..40,
        0..TOKENS.len(),
    );
    prop::collection::vec(edit, 1..8).prop_map(|edits| {
        let mut text = VALID.to_string();
        for (kind, at, span, token) in edits {
            let boundaries: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            let start = boundaries[at.index(boundaries.len())];
            let end = boundaries
                .iter()
                .copied()
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

/// The property: cases or load errors, each error naming the file and a line of it.
fn loads_or_names_file_and_line(text: &str) -> Result<(), TestCaseError> {
    let mut corpus = Corpus::default();
    corpus.add_text("fuzz.yaml", text);
    let lines = text.split('\n').count() + 1;
    for error in &corpus.errors {
        prop_assert_eq!(&error.file, "fuzz.yaml");
        prop_assert!(error.to_string().starts_with("fuzz.yaml"), "{}", error);
        if let Some(line) = error.line {
            prop_assert!(
                (1..=lines).contains(&line),
                "line {} of {}: {}",
                line,
                lines,
                error
            );
        }
        prop_assert!(
            error.to_string().len() < 4096,
            "{} bytes",
            error.to_string().len()
        );
    }
    for case in &corpus.cases {
        prop_assert_eq!(&case.file, "fuzz.yaml");
        prop_assert!((1..=lines).contains(&case.line));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_load_as_cases_or_errors_naming_file_and_line(
        bytes in prop::collection::vec(any::<u8>(), 0..2048)
    ) {
        loads_or_names_file_and_line(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn a_mutated_case_file_loads_as_cases_or_errors_naming_file_and_line(text in mutated()) {
        loads_or_names_file_and_line(&text)?;
    }
}
