//! Sibling groups (cases/README.md, "Sibling groups"): a group's steps run back to back on
//! one backend session, each judged as a case, and the group is one result. A backend that
//! keeps plans or verdicts across requests under a key that leaves out a field meets two
//! descriptors that differ in that field alone, in both orders, with new data on repeats.
//!
//! The first step that fails fails the group (the step, the field that differs from the step
//! before, the step's own report); the first skip skips it (never a pass); an informational
//! step makes the group informational. Steps after the first that does not pass do not run.

use crate::corpus::Case;
use crate::run::replay::Replay;
use crate::run::runner::{CaseResult, Status};
use dmlcts_tensor::{OperatorDesc, TensorDesc};
use std::fmt::Write as _;
use std::time::Duration;

/// The group's one result from its steps, each run by `run_step` in order (the caller's
/// device for the step's level); `replay` is the command that runs the whole group again.
pub(crate) fn run_group(
    group: &Case,
    run_step: &mut dyn FnMut(&Case) -> CaseResult,
    replay: &dyn Fn() -> Replay,
) -> CaseResult {
    let mut lines = String::new();
    let mut duration = Duration::ZERO;
    let mut informational: Option<CaseResult> = None;
    let count = group.steps.len();
    let mut result = None;
    for (i, step) in group.steps.iter().enumerate() {
        let outcome = run_step(step);
        duration += outcome.duration;
        let level = outcome
            .run_level
            .map_or_else(|| "?".to_string(), |l| l.to_string());
        let _ = writeln!(
            lines,
            "    step {} `{}` at {level}: {}",
            i + 1,
            step_name(group, step),
            outcome.status.name()
        );
        match outcome.status {
            Status::Passed | Status::ExpectedFailure => {}
            Status::Informational => {
                informational.get_or_insert(outcome);
            }
            Status::Skipped | Status::Failed => {
                result = Some((i, outcome));
                break;
            }
        }
    }
    let mut own = group_result(group);
    own.duration = duration;
    match result {
        Some((i, step_result)) => {
            let step = &group.steps[i];
            let which = format!("step {} of {count} (`{}`)", i + 1, step_name(group, step));
            own.status = step_result.status;
            // A skip keeps the step's reason as it is (runs count skips by reason); a
            // failure names the step.
            own.reason = if step_result.status == Status::Skipped {
                step_result.reason.clone()
            } else {
                format!("{which}: {}", step_result.reason)
            };
            own.details = format!("  {which} of a sibling group\n");
            own.run_level = step_result.run_level;
            if step_result.status == Status::Failed {
                let mut details = format!(
                    "  a sibling group, its steps run back to back on one backend:\n{lines}"
                );
                if i > 0 {
                    let _ = writeln!(
                        details,
                        "  step {} differs from step {} in: {}",
                        i + 1,
                        i,
                        differences(&group.steps[i - 1], step)
                    );
                }
                details.push_str(&step_result.details);
                own.details = details;
                own.descriptor = step_result.descriptor;
                own.notes = step_result.notes;
                own.replay = Some(replay());
            }
        }
        None => {
            if let Some(step_result) = informational {
                own.status = Status::Informational;
                own.reason = step_result.reason;
                own.details = step_result.details;
                own.descriptor = step_result.descriptor;
            }
            own.run_level = None;
        }
    }
    own
}

fn group_result(group: &Case) -> CaseResult {
    let mut result = CaseResult::run_failure("", "", "", "");
    result.id = crate::run::case_id(group);
    result.name = group.name.clone();
    result.file = group.file.clone();
    result.line = group.line;
    result.status = Status::Passed;
    result.feature_level = Some(group.feature_level);
    result
}

fn step_name<'c>(group: &Case, step: &'c Case) -> &'c str {
    (step.name.strip_prefix(group.name.as_str()))
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(&step.name)
}

/// The fields in which `b` differs from `a`, in the case format's names, with both values:
/// `join.axis (0 -> 1)`; "nothing but the input data" for a repeat.
pub(crate) fn differences(a: &Case, b: &Case) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut differ = |field: String, x: String, y: String| {
        if x != y {
            out.push(format!("{field} ({x} -> {y})"));
        }
    };
    differ(
        "feature_level".to_string(),
        a.feature_level.to_string(),
        b.feature_level.to_string(),
    );
    differ(
        "operator".to_string(),
        a.op.kind().to_string(),
        b.op.kind().to_string(),
    );
    let (ta, tb) = (named_tensors(&a.op), named_tensors(&b.op));
    if ta.len() != tb.len() {
        let key = match &a.op {
            OperatorDesc::Split(_) => "split.outputs",
            OperatorDesc::Join(_) => "join.inputs",
            OperatorDesc::Slice1(_) => "slice1",
        };
        out.push(format!(
            "the tensor count ({} {key} -> {})",
            ta.len() - 1,
            tb.len() - 1
        ));
    }
    let mut differ = |field: String, x: String, y: String| {
        if x != y {
            out.push(format!("{field} ({x} -> {y})"));
        }
    };
    for ((name, x), (other, y)) in ta.iter().zip(&tb) {
        if name != other {
            continue;
        }
        differ(
            format!("{name}.data_type"),
            x.data_type.name().to_string(),
            y.data_type.name().to_string(),
        );
        differ(format!("{name}.sizes"), list(&x.sizes), list(&y.sizes));
        differ(
            format!("{name}.strides"),
            x.strides.as_deref().map_or("none".to_string(), list),
            y.strides.as_deref().map_or("none".to_string(), list),
        );
        differ(
            format!("{name}.total_tensor_size_in_bytes"),
            x.total_tensor_size_in_bytes.to_string(),
            y.total_tensor_size_in_bytes.to_string(),
        );
    }
    match (&a.op, &b.op) {
        (OperatorDesc::Split(x), OperatorDesc::Split(y)) => {
            differ("split.axis".into(), x.axis.to_string(), y.axis.to_string());
        }
        (OperatorDesc::Join(x), OperatorDesc::Join(y)) => {
            differ("join.axis".into(), x.axis.to_string(), y.axis.to_string());
        }
        (OperatorDesc::Slice1(x), OperatorDesc::Slice1(y)) => {
            differ(
                "slice1.dimension_count".into(),
                x.dimension_count.to_string(),
                y.dimension_count.to_string(),
            );
            differ(
                "slice1.input_window_offsets".into(),
                list(&x.input_window_offsets),
                list(&y.input_window_offsets),
            );
            differ(
                "slice1.input_window_sizes".into(),
                list(&x.input_window_sizes),
                list(&y.input_window_sizes),
            );
            differ(
                "slice1.input_window_strides".into(),
                list(&x.input_window_strides),
                list(&y.input_window_strides),
            );
        }
        _ => {}
    }
    if out.is_empty() {
        "nothing but the input data".to_string()
    } else {
        out.join(", ")
    }
}

/// Each tensor with its name in the case format, the input(s) first.
fn named_tensors(op: &OperatorDesc) -> Vec<(String, &TensorDesc)> {
    match op {
        OperatorDesc::Split(d) => std::iter::once(("split.input".to_string(), &d.input_tensor))
            .chain(
                (d.output_tensors.iter().enumerate())
                    .map(|(i, t)| (format!("split.outputs[{i}]"), t)),
            )
            .collect(),
        OperatorDesc::Join(d) => std::iter::once(("join.output".to_string(), &d.output_tensor))
            .chain(
                (d.input_tensors.iter().enumerate()).map(|(i, t)| (format!("join.inputs[{i}]"), t)),
            )
            .collect(),
        OperatorDesc::Slice1(d) => vec![
            ("slice1.input".to_string(), &d.input_tensor),
            ("slice1.output".to_string(), &d.output_tensor),
        ],
    }
}

fn list<T: std::fmt::Display>(values: &[T]) -> String {
    let items: Vec<String> = values.iter().map(T::to_string).collect();
    format!("[{}]", items.join(", "))
}
