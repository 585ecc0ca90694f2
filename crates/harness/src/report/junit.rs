//! The JUnit XML report of a run (`--junit FILE`).

use super::{RunInfo, Summary};
use crate::run::{CaseResult, Status};
use std::fmt::Write as _;

pub fn junit_report(info: &RunInfo, results: &[CaseResult]) -> String {
    let summary = Summary::of(results);
    let total: f64 = results.iter().map(|r| r.duration.as_secs_f64()).sum();
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites><testsuite name=\"dmlcts.{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{total:.6}\">",
        xml_escape(&info.backend),
        results.len(),
        summary.failed,
        summary.skipped + summary.expected_failures
    );
    let _ = writeln!(
        xml,
        "  <properties><property name=\"device\" value=\"{}\"/><property name=\"feature_level\" value=\"{}\"/></properties>",
        xml_escape(&info.device),
        xml_escape(&info.feature_level)
    );
    for r in results {
        let _ = write!(
            xml,
            "  <testcase classname=\"{}\" name=\"{}\" file=\"{}\" line=\"{}\" time=\"{:.6}\"",
            xml_escape(&r.file),
            xml_escape(&r.name),
            xml_escape(&r.file),
            r.line,
            r.duration.as_secs_f64()
        );
        match r.status {
            Status::Passed => xml.push_str("/>\n"),
            // Not a failure: a passed test case that says what it was.
            Status::Informational => {
                let _ = writeln!(
                    xml,
                    "><system-out>informational: {}\n{}</system-out></testcase>",
                    xml_escape(&r.reason),
                    xml_escape(&r.details)
                );
            }
            Status::Failed => {
                let _ = writeln!(
                    xml,
                    "><failure message=\"{}\">{}</failure></testcase>",
                    xml_escape(&r.reason),
                    xml_escape(&r.details)
                );
            }
            Status::Skipped | Status::ExpectedFailure => {
                let reason = if r.status == Status::Skipped {
                    r.reason.clone()
                } else {
                    r.notes.join("; ")
                };
                let _ = writeln!(
                    xml,
                    "><skipped message=\"{}\"/></testcase>",
                    xml_escape(&reason)
                );
            }
        }
    }
    xml.push_str("</testsuite></testsuites>\n");
    xml
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no way to carry other control characters.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}
