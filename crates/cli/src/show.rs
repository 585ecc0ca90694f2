//! `show CASE...`: a case as the corpus format writes it, from the embedded corpus or
//! `--cases`: its descriptor, its inputs as values and the outputs the oracle computes (the
//! expected values a backend must produce), so that a backend's author needs no checkout.

use crate::conformance::load_corpus;
use crate::error::{CommandError, CommandResult, Verdict};
use crate::out::count;
use clap::Args;
use dmlcts_harness::corpus::data::{TensorData, logical_elements};
use dmlcts_harness::text::{Line, yaml_comment};
use dmlcts_harness::{Case, Expectation, cases_to_yaml};
use dmlcts_oracle::{execute, validate};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Above this many elements a tensor's values are left as its generator (inputs) or out
/// (expected outputs), said in a comment.
const MAX_SHOWN_ELEMENTS: u128 = 4096;

#[derive(Clone, Debug, Args)]
pub struct ShowArgs {
    /// The case's name, exactly as a failure names it; repeatable
    #[arg(value_name = "CASE", required = true)]
    pub names: Vec<String>,
    /// Case file or folder; repeatable [default: the corpus, embedded]
    #[arg(long = "cases", value_name = "PATH")]
    pub cases: Vec<PathBuf>,
}

/// Runs `show`; an error when a name is no case's (with the names that contain it).
pub fn show_main(args: &ShowArgs) -> CommandResult {
    let (corpus, from) = load_corpus(&args.cases);
    let mut unknown: Vec<String> = Vec::new();
    for name in &args.names {
        match corpus.cases.iter().find(|c| c.name == *name) {
            Some(case) => crate::say!("{}", show_case(case, &from)),
            None => {
                let similar: Vec<&str> = corpus
                    .cases
                    .iter()
                    .filter(|c| c.name.contains(name.as_str()))
                    .map(|c| c.name.as_str())
                    .take(10)
                    .collect();
                let hint = if similar.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; names that contain it: {}",
                        similar
                            .iter()
                            .map(|n| Line(n).to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                unknown.push(format!(
                    "no case named `{}` among the {} of {from}{hint}",
                    Line(name),
                    count(corpus.cases.len(), "case", "cases")
                ));
            }
        }
    }
    if unknown.is_empty() {
        Ok(Verdict::Passed)
    } else {
        Err(CommandError::Input(unknown.join("\nerror: ")))
    }
}

/// The case in the corpus format, with a comment saying where it comes from: inputs as values
/// and the oracle's outputs as `expected` (tensors of up to 4096 elements).
pub fn show_case(case: &Case, from: &str) -> String {
    let mut shown = case.clone();
    let mut comments = vec![format!(
        "{} ({}:{}, {from})",
        case.name, case.file, case.line
    )];
    let mut input_bytes = Vec::new();
    for ((field, desc), data) in case.op.inputs().iter().zip(shown.inputs.iter_mut()) {
        match data.materialize(desc) {
            Ok(bytes) => {
                if desc.element_count() <= MAX_SHOWN_ELEMENTS {
                    *data = TensorData::Bytes(bytes.clone());
                } else {
                    comments.push(format!(
                        "{field}: {} elements; its generator is shown",
                        desc.element_count()
                    ));
                }
                input_bytes.push(bytes);
            }
            Err(e) => comments.push(format!("{field}: no values: {e}")),
        }
    }
    match &case.expect {
        Expectation::Reject { .. } => {
            if let Err(violation) = validate(&case.op, case.feature_level) {
                comments.push(format!(
                    "a backend at {} must reject it: {violation}",
                    case.feature_level
                ));
            }
        }
        Expectation::Accept if input_bytes.len() == case.inputs.len() => {
            let refs: Vec<&[u8]> = input_bytes.iter().map(Vec::as_slice).collect();
            match execute(&case.op, &refs) {
                Ok(outputs) => {
                    comments.push(
                        "inputs as values; expected: the outputs the oracle computes".to_string(),
                    );
                    shown.expected = case
                        .op
                        .outputs()
                        .iter()
                        .zip(&outputs)
                        .map(|((field, desc), output)| {
                            if desc.element_count() <= MAX_SHOWN_ELEMENTS {
                                Some(logical_elements(desc, &output.bytes))
                            } else {
                                comments.push(format!(
                                    "{field}: {} elements; expected values not shown",
                                    desc.element_count()
                                ));
                                None
                            }
                        })
                        .collect();
                }
                Err(e) => comments.push(format!("the oracle cannot execute it: {e}")),
            }
        }
        Expectation::Accept => {}
    }
    let mut text = String::new();
    for comment in comments {
        let _ = writeln!(text, "# {}", yaml_comment(&comment));
    }
    text.push_str(&cases_to_yaml(&[shown]));
    text.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_harness::Corpus;

    #[test]
    fn a_shown_case_loads_back_as_the_same_case_with_the_oracle_s_values() {
        let corpus = Corpus::embedded();
        for name in [
            "doc.split.example1_axis2",
            "doc.slice1.example1_positive_strides",
            "reject.split.axis_in_range",
        ] {
            let case = corpus.cases.iter().find(|c| c.name == name).unwrap();
            let text = show_case(case, "the embedded corpus");
            assert!(
                text.starts_with(&format!(
                    "# {name} ({}:{}, the embedded corpus)\n",
                    case.file, case.line
                )),
                "{text}"
            );
            let mut loaded = Corpus::default();
            loaded.add_text("shown.yaml", &text);
            assert_eq!(loaded.errors, [], "{text}");
            let back = &loaded.cases[0];
            assert_eq!(
                (&back.name, &back.op, &back.expect),
                (&case.name, &case.op, &case.expect)
            );
            if case.expect == Expectation::Accept {
                assert!(back.expected.iter().all(Option::is_some), "{text}");
                assert!(text.contains("expected: ["), "{text}");
            } else {
                assert!(
                    text.contains("must reject it: [split.axis_in_range]"),
                    "{text}"
                );
            }
        }
    }
}
