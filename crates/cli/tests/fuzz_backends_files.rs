//! Fuzz target: backends files (`--backend-config`: the bounded reader, the scan, the parser
//! within its budgets, the timeouts, the names). Bytes of any kind, and the repository's
//! backends.yaml mutated with YAML's tokens. Resolving a name the file cannot hold must end
//! in `unknown backend` (the file loaded) or an error that starts with the file's name (and
//! its line where it has one): no panic, no process started. `cargo test` runs 256 inputs
//! per property; `DMLCTS_FUZZ_INPUT_CASES=N` more (docs/guide/robustness.md).

use dmlcts_cli::{BackendRequest, Host, resolve};
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
    "\\",
    "1e400",
    "-1",
    "0",
    "1e-9",
    "604801",
    ".nan",
    "18446744073709551616",
    "~",
    "cpu",
    "oracle",
    "directml@1",
    "process:x",
    "-x",
    "command: ",
    "description: ",
    "timeout_seconds: ",
    "startup_timeout_seconds: ",
    "backends:",
];

const VALID: &str = include_str!("../../../backends.yaml");
const NAME: &str = "fuzz-name-in-no-file";

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

fn host() -> Host {
    Host {
        program: "dmlcts",
        default_backends_file: PathBuf::from("/nonexistent/backends.yaml"),
        default_fuzz_out: std::env::temp_dir(),
        directml: |_| None,
        directml_names: Vec::new,
        directml_ready: Vec::new,
    }
}

fn resolves_or_names_the_file(text: &[u8]) -> Result<(), TestCaseError> {
    let path = std::env::temp_dir().join(format!(
        "dmlcts-fuzz-backends-{}-{:?}.yaml",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, text).unwrap();
    let shown = path.display().to_string();
    let request = BackendRequest {
        name: NAME.to_string(),
        backend_config: Some(path),
        ..BackendRequest::default()
    };
    let Err(e) = resolve(&host(), &request) else {
        prop_assert!(false, "{} resolved", NAME);
        unreachable!()
    };
    prop_assert!(
        e.starts_with(&shown) || e.starts_with(&format!("unknown backend `{NAME}`")),
        "{}",
        e
    );
    prop_assert!(e.len() < 8192, "{} bytes", e.len());
    if let Some(rest) = e.strip_prefix(&shown).and_then(|r| r.strip_prefix(':'))
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
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_resolve_as_unknown_or_an_error_naming_the_file(
        bytes in prop::collection::vec(any::<u8>(), 0..2048)
    ) {
        resolves_or_names_the_file(&bytes)?;
    }

    #[test]
    fn a_mutated_backends_file_resolves_as_unknown_or_an_error_naming_the_file(
        text in mutated()
    ) {
        resolves_or_names_the_file(text.as_bytes())?;
    }
}
