//! Validation profiles over the protocol: a server declares in `hello` which DirectML rules
//! it enforces (`profile`, `not_enforced`), `serve` sends them for a backend whose profile is
//! not strict, and the harness reports acceptances of the other rules' must-reject cases as
//! informational. A profile or rule id it does not know is a bad hello: every case fails
//! with the reason.

use dmlcts_harness::report::Summary;
use dmlcts_harness::{Case, Corpus, Expectation, RunOptions, Status, run_case};
use dmlcts_protocol::{ProcessBackend, ProcessOptions};
use dmlcts_tensor::{Backend, ValidationProfile};

fn server(fault: &str) -> ProcessBackend {
    let command = format!("{} {fault}", env!("CARGO_BIN_EXE_dmlcts-broken-server"));
    ProcessBackend::start(ProcessOptions::new(&command)).expect("the server starts")
}

/// The doc examples and the Slice1 must-reject cases that run at 4_1 (the server's level;
/// a feature-level table case of another level is skipped).
fn cases() -> Vec<Case> {
    let level = dmlcts_tensor::FeatureLevel::L4_1;
    Corpus::embedded()
        .cases
        .into_iter()
        .filter(|c| c.name.starts_with("doc.") || c.name.starts_with("reject.slice1."))
        .filter(|c| c.feature_level <= level)
        .filter(|c| c.feature_level == level || !c.rejection_depends_on_level())
        .collect()
}

#[test]
fn a_values_only_server_passes_with_its_acceptances_informational() {
    let backend = server("values-only");
    assert_eq!(backend.hello_error(), None);
    assert_eq!(backend.validation_profile(), ValidationProfile::ValuesOnly);
    let cases = cases();
    let results = cases
        .iter()
        .map(|case| run_case(&backend, case, &RunOptions::default()))
        .collect::<Vec<_>>();
    let summary = Summary::of(&results);
    let must_reject: Vec<&Case> = cases
        .iter()
        .filter(|c| c.expect != Expectation::Accept)
        .collect();
    assert!(must_reject.len() >= 8, "{}", must_reject.len());
    assert_eq!(
        summary.line(),
        format!(
            "8 passed, 0 failed, 0 skipped, {} informational",
            must_reject.len()
        )
    );
    let window = results
        .iter()
        .find(|r| r.name == "reject.slice1.window_inside_input")
        .expect("the case ran");
    assert_eq!(window.status, Status::Informational);
    assert_eq!(
        window.reason,
        "accepted; DirectML rejects it: rule slice1.window_inside_input"
    );
}

#[test]
fn a_server_not_enforcing_one_rule_fails_the_must_reject_cases_of_the_others() {
    let backend = server("not-enforced");
    assert_eq!(
        backend.validation_profile(),
        ValidationProfile::NotEnforced(vec!["slice1.window_inside_input".to_string()])
    );
    let results = cases()
        .iter()
        .map(|case| run_case(&backend, case, &RunOptions::default()))
        .collect::<Vec<_>>();
    for result in &results {
        let expected = if result.name.starts_with("doc.") {
            Status::Passed
        } else if result.name.starts_with("reject.slice1.window_inside_input") {
            Status::Informational
        } else {
            Status::Failed
        };
        assert_eq!(result.status, expected, "{}", result.name);
    }
}

#[test]
fn an_unknown_profile_or_rule_id_is_a_bad_hello_and_every_case_fails_with_it() {
    for (fault, error) in [
        (
            "hello-bad-profile",
            "bad hello reply: unknown \"profile\" \"lenient\"; the profiles are \"strict\" and \"values-only\"",
        ),
        (
            "hello-unknown-rule",
            "bad hello reply: unknown rule id \"slice1.window_inside\" in \"not_enforced\"",
        ),
    ] {
        let backend = server(fault);
        let said = backend.hello_error().expect("a bad hello").to_string();
        assert!(said.contains(error), "{said}");
        let results = cases()
            .iter()
            .map(|case| run_case(&backend, case, &RunOptions::default()))
            .collect::<Vec<_>>();
        for result in &results {
            assert_eq!(result.status, Status::Failed, "{}", result.name);
            assert!(result.details.contains(error), "{}", result.details);
        }
    }
}
