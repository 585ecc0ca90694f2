//! Malformed case files give errors that name the file, line and field, never a panic, and
//! one bad file does not hide the others.

use dmlcts_harness::Corpus;
use proptest::prelude::*;

fn load(text: &str) -> Corpus {
    let mut corpus = Corpus::default();
    corpus.add_text("cases/bad.yaml", text);
    corpus
}

fn only_error(text: &str) -> String {
    let corpus = load(text);
    assert_eq!(corpus.errors.len(), 1, "{:#?}", corpus.errors);
    corpus.errors[0].to_string()
}

const GOOD: &str = "cases:
  - name: good
    split:
      axis: 0
      input: {data_type: UINT8, sizes: [3], data: [1, 2, 3]}
      outputs: [{data_type: UINT8, sizes: [3]}]
";

#[test]
fn an_unknown_field_names_the_line_and_the_field() {
    let error = only_error("cases:\n  - name: x\n    split:\n      axis: 0\n      inptu: {}\n");
    assert!(error.starts_with("cases/bad.yaml:5: "), "{error}");
    assert!(error.contains("unknown field `inptu`"), "{error}");
}

#[test]
fn a_wrong_number_of_values_names_the_field() {
    let error = only_error(&GOOD.replace("data: [1, 2, 3]", "data: [1, 2]"));
    assert_eq!(
        error,
        "cases/bad.yaml:2: case `good`: split.input.data: 2 values for sizes [3] (3 elements)"
    );
}

#[test]
fn a_value_out_of_range_names_its_position() {
    let error = only_error(&GOOD.replace("data: [1, 2, 3]", "data: [1, 256, 3]"));
    assert!(
        error.ends_with("split.input.data: values[1]: 256 is out of range for UINT8 (0 to 255)"),
        "{error}"
    );
}

#[test]
fn a_bad_bit_pattern_names_its_position() {
    let error = only_error(&GOOD.replace("data: [1, 2, 3]", "data: [1, 0x1ff, 3]"));
    assert!(
        error.ends_with("values[1]: bit pattern `0x1ff` does not fit in 8 bits (UINT8)"),
        "{error}"
    );
}

#[test]
fn an_unknown_rule_id_is_refused() {
    let error = only_error(&GOOD.replace(
        "  - name: good\n",
        "  - name: good\n    reject: split.no_such_rule\n",
    ));
    assert!(
        error.contains("unknown rule id `split.no_such_rule`"),
        "{error}"
    );
}

#[test]
fn a_size_too_large_for_uint_names_the_line() {
    let error = only_error(&GOOD.replace("sizes: [3], data", "sizes: [4294967296], data"));
    assert!(error.starts_with("cases/bad.yaml:5: "), "{error}");
}

#[test]
fn an_unknown_data_type_lists_the_known_ones() {
    let error = only_error(&GOOD.replace(
        "{data_type: UINT8, sizes: [3]}",
        "{data_type: UINT4, sizes: [3]}",
    ));
    assert!(
        error.contains("split.outputs[0].data_type: unknown data type `UINT4`"),
        "{error}"
    );
}

#[test]
fn a_stored_expectation_no_level_gives_is_refused() {
    let error = only_error(&GOOD.replace(
        "  - name: good\n",
        "  - name: good\n    reject: split.axis_in_range\n",
    ));
    assert!(
        error.contains("no feature level gives the stated expectation"),
        "{error}"
    );
}

#[test]
fn one_bad_case_does_not_hide_the_others_and_duplicates_are_reported() {
    let two = format!(
        "{GOOD}{}",
        &GOOD["cases:\n".len()..].replace("data: [1, 2, 3]", "data: [1]")
    );
    let corpus = load(&two.replacen("name: good", "name: other", 1));
    assert_eq!(corpus.cases.len(), 1);
    assert_eq!(corpus.errors.len(), 1);
    let mut twice = Corpus::default();
    twice.add_text("a.yaml", GOOD);
    twice.add_text("b.yaml", GOOD);
    let names: Vec<String> = twice.cases.iter().map(|c| c.name.clone()).collect();
    assert_eq!(names.len(), 2, "add_text alone does not dedupe");
}

/// Writes `bytes` to a fresh file named `name` and loads it as a path.
fn load_file(name: &str, bytes: &[u8]) -> (Corpus, String) {
    let dir = std::env::temp_dir().join(format!("dmlcts-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let corpus = Corpus::load_path(&path);
    let _ = std::fs::remove_file(&path);
    (corpus, path.display().to_string())
}

#[test]
fn a_duplicate_name_is_reported_at_its_own_line_and_the_first_ones_and_neither_runs() {
    let text = "cases:
  - name: dup
    split: {axis: 0, input: {data_type: UINT8, sizes: [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}

  - name: other
    split: {axis: 0, input: {data_type: UINT8, sizes: [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}
  - name: dup
    split: {axis: 0, input: {data_type: UINT8, sizes: [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}
";
    let (corpus, path) = load_file("duplicates.yaml", text.as_bytes());
    let names: Vec<&str> = corpus.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["other"]);
    assert_eq!(
        corpus.errors[0].to_string(),
        format!(
            "{path}:7: case `dup`: duplicate case name (first defined at {path}:2); no case of \
             this name runs"
        )
    );
}

#[test]
fn flow_style_and_json_cases_carry_the_line_where_their_mapping_starts() {
    let flow = "cases: [
  {name: a, split: {axis: 0, input: {data_type: UINT8, sizes: [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}},
  {name: b,
   split: {axis: 0, input: {data_type: UINT8, sizes: [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}},
  {name: c, split: {axis: 0, input: {data_type: UINT9, sizes: [1]}, outputs: [{data_type: UINT8, sizes: [1]}]}}]
";
    let corpus = load(flow);
    let lines: Vec<usize> = corpus.cases.iter().map(|c| c.line).collect();
    assert_eq!(lines, vec![2, 3]);
    assert_eq!(corpus.errors.len(), 1);
    assert!(
        corpus.errors[0].to_string().starts_with(
            "cases/bad.yaml:5: case `c`: split.input.data_type: unknown data type `UINT9`"
        ),
        "{}",
        corpus.errors[0]
    );
    let json = r#"{
  "cases": [
    {
      "name": "a",
      "split": {"axis": 0, "input": {"data_type": "UINT8", "sizes": [1]},
                "outputs": [{"data_type": "UINT8", "sizes": [1]}]}
    },
    {"name": "b", "split": {"axis": 0, "input": {"data_type": "UINT8", "sizes": [1]},
                            "outputs": [{"data_type": "UINT8", "sizes": [1]}]}}
  ]
}
"#;
    let corpus = load(json);
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    let lines: Vec<usize> = corpus.cases.iter().map(|c| c.line).collect();
    assert_eq!(lines, vec![3, 8]);
}

#[test]
fn a_file_that_is_not_utf8_names_the_line_of_the_first_bad_byte() {
    let (corpus, path) = load_file("latin1.yaml", b"cases:\n  - name: caf\xe9\n");
    assert_eq!(
        corpus.errors[0].to_string(),
        format!("{path}:2: not UTF-8 text: byte 0xE9 at column 14 starts no UTF-8 character")
    );
}

#[test]
fn an_alias_bomb_names_the_line_of_its_first_alias() {
    let mut text = String::from(
        "cases:\n  - name: bomb\n    split:\n      axis: 0\n      outputs: []\n      input:\n        data_type: UINT8\n        sizes: [1]\n        data:\n          - &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n",
    );
    for level in 1..10 {
        let previous = format!("*a{}", level - 1);
        let items = [previous.as_str(); 10].join(", ");
        text.push_str(&format!("          - &a{level} [{items}]\n"));
    }
    let error = only_error(&text);
    assert_eq!(
        error,
        "cases/bad.yaml:11: repetition limit exceeded: its aliases expand to too much (the first is on this line)"
    );
}

#[test]
fn nesting_100000_deep_is_refused_at_once_with_its_line() {
    let text = format!(
        "cases:\n  - name: deep\n    tags: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let started = std::time::Instant::now();
    let error = only_error(&text);
    // The parser itself takes about 23 s on this; the scan before it, milliseconds. The bound
    // is loose for a shared machine and a debug build.
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(
        error,
        "cases/bad.yaml:3: nested more than 64 levels deep (open brackets plus indentation); case files need about 20"
    );
}

#[test]
fn a_file_without_cases_is_an_error() {
    for text in [
        "cases:\n",
        "cases: []\n",
        "# nothing yet\ncases:  # to come\n",
    ] {
        let error = only_error(text);
        assert!(
            error.starts_with("cases/bad.yaml:")
                && error.ends_with(": cases: no cases in cases/bad.yaml"),
            "{error}"
        );
    }
}

#[test]
fn an_unknown_tag_is_an_error_naming_its_field() {
    let error = only_error(&GOOD.replace("split:", "split: !weird"));
    assert_eq!(
        error,
        "cases/bad.yaml:3: split: unknown YAML tag `!weird` (case files use no tags)"
    );
    // Tags of the core schema change nothing and are accepted.
    let corpus = load(&GOOD.replace("name: good", "name: !!str good"));
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
}

#[test]
fn a_one_gib_case_is_skipped_before_anything_is_allocated() {
    let corpus = load(
        "cases:
  - name: split.one_gibibyte
    split:
      axis: 0
      input: {data_type: FLOAT32, sizes: [16384, 16384]}
      outputs:
        - {data_type: FLOAT32, sizes: [8192, 16384]}
        - {data_type: FLOAT32, sizes: [8192, 16384]}
",
    );
    assert!(corpus.errors.is_empty(), "{:?}", corpus.errors);
    let started = std::time::Instant::now();
    let backend = dmlcts_oracle::OracleBackend::default();
    let result = dmlcts_harness::run_case(&backend, &corpus.cases[0], &Default::default());
    assert_eq!(result.status, dmlcts_harness::Status::Skipped);
    assert_eq!(
        result.reason,
        "InputTensor: 1073741824 bytes is more than this runner materializes (134217728 bytes, 128 MiB)"
    );
    // Materializing it took 15 s and 3 GB; refusing it takes no time at all.
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
}

#[test]
fn a_missing_path_is_an_error_not_a_panic() {
    let corpus = Corpus::load_path(std::path::Path::new("/no/such/dmlcts/cases.yaml"));
    assert!(corpus.cases.is_empty());
    assert!(corpus.errors[0].message.starts_with("cannot read"));
}

proptest! {
    #[test]
    fn loading_arbitrary_text_never_panics(text in ".{0,400}") {
        let _ = load(&text);
    }

    #[test]
    fn loading_a_mangled_case_file_never_panics(
        cut in 0usize..GOOD.len(),
        insert in prop::sample::select(vec!["", "-", "[", "]", "{", ":", "0x", "nan", "\n", "  ", "99999999999999999999", "- name: x\n"]),
    ) {
        let mut text = GOOD.to_string();
        text.insert_str(cut, insert);
        let corpus = load(&text);
        prop_assert!(corpus.cases.len() + corpus.errors.len() >= 1);
    }
}
