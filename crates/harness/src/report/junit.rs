//! The JUnit XML report of a run (`--junit FILE`): XML 1.0 whatever a backend or a case file
//! says (`text::xml`); one test case per result, each named uniquely (a name two results
//! share gets its result's id); the suite, its commit and the corpus digest as properties.

use super::{RunInfo, Summary};
use crate::run::{CaseResult, Status};
use crate::text::{xml, xml_attribute};
use std::collections::HashMap;
use std::fmt::Write as _;

pub fn junit_report(info: &RunInfo, results: &[CaseResult]) -> String {
    let summary = Summary::of(results);
    let total: f64 = results.iter().map(|r| r.duration.as_secs_f64()).sum();
    let mut names: HashMap<&str, usize> = HashMap::new();
    for r in results {
        *names.entry(r.name.as_str()).or_default() += 1;
    }
    let mut xml_out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml_out,
        "<testsuites><testsuite name=\"dmlcts.{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{total:.6}\">",
        xml_attribute(&info.backend),
        results.len(),
        summary.failed,
        summary.skipped + summary.expected_failures
    );
    xml_out.push_str("  <properties>");
    let suite = &info.suite;
    let mut properties = vec![
        ("dmlcts.version", suite.version.clone()),
        ("dmlcts.corpus_digest", suite.corpus_digest.clone()),
        ("dmlcts.corpus_files", suite.corpus_files.to_string()),
    ];
    if let Some(commit) = &suite.commit {
        properties.insert(1, ("dmlcts.commit", commit.clone()));
    }
    properties.push(("device", info.device.clone()));
    properties.push(("feature_level", info.feature_level.clone()));
    for (name, value) in properties {
        let _ = write!(
            xml_out,
            "<property name=\"{name}\" value=\"{}\"/>",
            xml_attribute(&value)
        );
    }
    xml_out.push_str("</properties>\n");
    for r in results {
        let name = if names.get(r.name.as_str()).is_some_and(|&n| n > 1) {
            format!("{} [{}]", r.name, r.id)
        } else {
            r.name.clone()
        };
        let classname = if r.file.is_empty() {
            "dmlcts.run"
        } else {
            &r.file
        };
        let _ = write!(
            xml_out,
            "  <testcase classname=\"{}\" name=\"{}\" id=\"{}\" file=\"{}\" line=\"{}\" time=\"{:.6}\"",
            xml_attribute(classname),
            xml_attribute(&name),
            xml_attribute(&r.id),
            xml_attribute(&r.file),
            r.line,
            r.duration.as_secs_f64()
        );
        let mut properties = String::new();
        for (key, value) in [
            ("descriptor", r.descriptor.clone()),
            ("replay", r.replay.as_ref().map(|replay| replay.render())),
        ] {
            if let Some(value) = value {
                let _ = write!(
                    properties,
                    "<property name=\"{key}\" value=\"{}\"/>",
                    xml_attribute(&value)
                );
            }
        }
        if !properties.is_empty() {
            properties = format!("<properties>{properties}</properties>");
        }
        match r.status {
            Status::Passed => xml_out.push_str("/>\n"),
            // Not a failure: a passed test case that says what it was.
            Status::Informational => {
                let _ = writeln!(
                    xml_out,
                    ">{properties}<system-out>informational: {}\n{}</system-out></testcase>",
                    xml(&crate::text::line(&r.reason)),
                    xml(&body(r))
                );
            }
            Status::Failed => {
                let _ = writeln!(
                    xml_out,
                    ">{properties}<failure message=\"{}\">{}</failure></testcase>",
                    xml_attribute(&crate::text::line(&r.reason)),
                    xml(&body(r))
                );
            }
            Status::Skipped | Status::ExpectedFailure => {
                let reason = if r.status == Status::Skipped {
                    r.reason.clone()
                } else {
                    r.notes.join("; ")
                };
                let _ = writeln!(
                    xml_out,
                    "><skipped message=\"{}\"/></testcase>",
                    xml_attribute(&crate::text::line(&reason))
                );
            }
        }
    }
    xml_out.push_str("</testsuite></testsuites>\n");
    xml_out
}

/// A failure's text in the report: the descriptor, the details, the replay command.
fn body(r: &CaseResult) -> String {
    let mut body = String::new();
    if let Some(descriptor) = &r.descriptor {
        let _ = writeln!(body, "  case: {}", crate::text::line(descriptor));
    }
    body.push_str(&r.details);
    if let Some(replay) = &r.replay {
        if !body.ends_with('\n') && !body.is_empty() {
            body.push('\n');
        }
        let _ = writeln!(body, "  replay: {}", crate::text::line(&replay.render()));
    }
    body
}
