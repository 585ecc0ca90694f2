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
