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
    let coverage = (info.coverage.iter()).flat_map(|c| c.junit_properties());
    let properties = (properties.into_iter())
        .map(|(name, value)| (name.to_string(), value))
        .chain(coverage);
    for (name, value) in properties {
        let _ = write!(
            xml_out,
            "<property name=\"{}\" value=\"{}\"/>",
            xml_attribute(&name),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Replay;
    use std::time::Duration;

    fn result(id: &str, name: &str, status: Status) -> CaseResult {
        CaseResult {
            id: id.to_string(),
            name: name.to_string(),
            file: "cases/x.yaml".to_string(),
            line: 3,
            status,
            reason: "the backend failed\u{fffe}".to_string(),
            details: "  while compiling, the backend said:\n    | E\u{ffff}\u{1b}[2K\n".to_string(),
            replay: Some(Replay::new(["dmlcts", "conformance", "--filter", name])),
            descriptor: Some("{split: {axis: 0}}".to_string()),
            notes: Vec::new(),
            duration: Duration::ZERO,
            feature_level: None,
            run_level: None,
        }
    }

    #[test]
    fn non_characters_in_a_device_a_message_and_a_name_leave_only_xml_1_0_characters() {
        let info = RunInfo {
            backend: "b\u{fffe}".to_string(),
            device: "device \u{fffe}\u{1b}]0;x\u{7}".to_string(),
            ..RunInfo::default()
        };
        let xml = junit_report(
            &info,
            &[result("cases/x.yaml:3", "n\u{fffe}", Status::Failed)],
        );
        assert!(
            xml.chars().all(|c| matches!(
                c as u32,
                0x9 | 0xa | 0xd | 0x20..=0xd7ff | 0xe000..=0xfffd | 0x10000..
            )),
            "{xml:?}"
        );
        assert!(xml.contains("name=\"n\\u{fffe}\""), "{xml}");
        assert!(
            xml.contains("<property name=\"device\" value=\"device \\u{fffe}\\u{1b}]0;x\\u{7}\"/>"),
            "{xml}"
        );
        assert!(xml.contains("    | E\\u{ffff}\\u{1b}[2K\n"), "{xml}");
        assert!(
            xml.contains("<property name=\"replay\" value=\"dmlcts conformance --filter &apos;n\\u{fffe}&apos;\"/>"),
            "{xml}"
        );
    }

    #[test]
    fn two_results_sharing_a_name_are_two_test_cases_named_apart_by_their_ids() {
        let xml = junit_report(
            &RunInfo::default(),
            &[
                result("cases/a.yaml:3", "dup", Status::Passed),
                result("load-error:cases/b.yaml:3", "dup", Status::Failed),
                result("cases/c.yaml:3", "other", Status::Passed),
            ],
        );
        assert!(
            xml.contains("name=\"dup [cases/a.yaml:3]\" id=\"cases/a.yaml:3\""),
            "{xml}"
        );
        assert!(
            xml.contains(
                "name=\"dup [load-error:cases/b.yaml:3]\" id=\"load-error:cases/b.yaml:3\""
            ),
            "{xml}"
        );
        assert!(
            xml.contains("name=\"other\" id=\"cases/c.yaml:3\""),
            "{xml}"
        );
        assert!(xml.contains("tests=\"3\" failures=\"1\""), "{xml}");
    }
}
