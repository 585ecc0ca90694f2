//! Bucket signatures: what check failed and the structural shape of the minimal case, so that
//! two failures of one cause share a signature. The shape is a set of features that do not
//! depend on how many dimensions the case has (after shrinking, `shrink::normalize` removes
//! every feature the failure does not need), plus the element size class.

use dmlcts_harness::{Case, CaseResult, Expectation};
use dmlcts_oracle::spec;
use dmlcts_tensor::{FeatureLevel, OperatorDesc, OperatorKind, TensorDesc};

/// What check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckKind {
    /// The backend accepted a descriptor the oracle rejects.
    Acceptance,
    /// The backend rejected a descriptor the oracle accepts.
    Rejection,
    /// Wrong output values.
    Values,
    /// A write outside an output's TotalTensorSizeInBytes.
    GuardBand,
    /// The backend changed an input buffer.
    InputModified,
    /// A panic, a dead process, a protocol violation, or an in-process backend's `Err` while
    /// compiling or executing a valid descriptor.
    Crash,
    /// An out-of-process backend's well-framed `error` reply to a valid case (it answered,
    /// and said it failed).
    Error,
    /// A process backend that did not answer in time.
    Hang,
    /// Join of split or reversing twice did not give back the input.
    Invariant,
    /// The generated case disagrees with the oracle (a fuzzer bug, never a backend's).
    Corpus,
}

impl CheckKind {
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Acceptance => "acceptance",
            CheckKind::Rejection => "rejection",
            CheckKind::Values => "values",
            CheckKind::GuardBand => "guard_band",
            CheckKind::InputModified => "input_modified",
            CheckKind::Crash => "crash",
            CheckKind::Error => "error",
            CheckKind::Hang => "hang",
            CheckKind::Invariant => "invariant",
            CheckKind::Corpus => "corpus",
        }
    }

    pub fn from_name(text: &str) -> Option<CheckKind> {
        [
            CheckKind::Acceptance,
            CheckKind::Rejection,
            CheckKind::Values,
            CheckKind::GuardBand,
            CheckKind::InputModified,
            CheckKind::Crash,
            CheckKind::Error,
            CheckKind::Hang,
            CheckKind::Invariant,
            CheckKind::Corpus,
        ]
        .into_iter()
        .find(|k| k.name() == text)
    }

    /// The kind of a failed runner result, from its check line (the most severe problem
    /// wins when several are listed).
    pub fn of(result: &CaseResult) -> CheckKind {
        // A sibling group's reason is its failing step's, after `step N of M (`NAME`): `.
        let check = match result.reason.split_once("): ") {
            Some((step, check)) if step.starts_with("step ") => check,
            _ => result.reason.as_str(),
        };
        if check.starts_with("corpus:") {
            CheckKind::Corpus
        } else if check == "accepted an invalid descriptor" {
            CheckKind::Acceptance
        } else if check == "rejected a valid descriptor" {
            CheckKind::Rejection
        } else if check.contains("panicked") {
            CheckKind::Crash
        } else if check == "the backend failed" || check == "execution failed" {
            // The process client's words for a child that did not answer in time.
            if result.details.contains("(hung?)") {
                CheckKind::Hang
            } else if said_first(&result.details).starts_with(ERROR_REPLY) {
                CheckKind::Error
            } else {
                CheckKind::Crash
            }
        } else if check.contains("wrote outside the output") {
            CheckKind::GuardBand
        } else if check.contains("input modified") {
            CheckKind::InputModified
        } else {
            CheckKind::Values
        }
    }
}

/// How the process client words a well-framed `error` reply (crates/protocol).
const ERROR_REPLY: &str = "the backend reported an error:";

/// The first line the backend said, as the runner quotes it (`    | ...`): only the client's
/// own first line decides, never a line of the backend's message or stderr.
fn said_first(details: &str) -> &str {
    (details.lines())
        .find_map(|l| l.trim_start().strip_prefix("| "))
        .unwrap_or("")
}

/// The rule the oracle says a case breaks, if any.
pub fn expected_rule(case: &Case) -> Option<&str> {
    match &case.expect {
        Expectation::Reject { rule } => Some(rule.as_str()),
        Expectation::Accept => None,
    }
}

/// e1, e2, e4 or e8: the element size of the case's first output (or input).
pub fn element_class(op: &OperatorDesc) -> String {
    let tensor = op
        .outputs()
        .first()
        .or(op.inputs().first())
        .map(|(_, t)| t.data_type.element_size())
        .unwrap_or(0);
    format!("e{tensor}")
}

fn is_packed(tensor: &TensorDesc) -> bool {
    match &tensor.strides {
        None => true,
        Some(strides) => {
            let packed = TensorDesc::packed(tensor.data_type, &tensor.sizes);
            strides.iter().map(|&s| u64::from(s)).collect::<Vec<_>>() == packed.effective_strides()
        }
    }
}

fn broadcasts(tensor: &TensorDesc) -> bool {
    tensor.strides.as_ref().is_some_and(|strides| {
        strides
            .iter()
            .zip(&tensor.sizes)
            .any(|(&stride, &size)| stride == 0 && size > 1)
    })
}

fn has_extra_bytes(tensor: &TensorDesc) -> bool {
    let minimum = TensorDesc::strided(tensor.data_type, &tensor.sizes, tensor.strides.as_deref())
        .total_tensor_size_in_bytes;
    tensor.total_tensor_size_in_bytes > minimum
}

/// Slice1's MaxCopiedElements for one dimension (0 for a zero stride).
pub fn max_copied(window_size: u32, stride: i32) -> u32 {
    if stride == 0 || window_size == 0 {
        return 0;
    }
    1 + (window_size - 1) / stride.unsigned_abs()
}

/// The structural features of a descriptor, independent of its dimension count, sorted.
pub fn features(op: &OperatorDesc) -> Vec<&'static str> {
    let mut features = Vec::new();
    let inputs = op.inputs();
    let outputs = op.outputs();
    if inputs.iter().any(|(_, t)| broadcasts(t)) {
        features.push("input_broadcast");
    }
    if inputs.iter().any(|(_, t)| !broadcasts(t) && !is_packed(t)) {
        features.push("input_strided");
    }
    if outputs.iter().any(|(_, t)| !is_packed(t)) {
        features.push("output_strided");
    }
    if inputs
        .iter()
        .chain(&outputs)
        .any(|(_, t)| has_extra_bytes(t))
    {
        features.push("extra_bytes");
    }
    match op {
        OperatorDesc::Split(d) => {
            split_join_features(d.axis, d.output_tensors.len(), &mut features)
        }
        OperatorDesc::Join(d) => split_join_features(d.axis, d.input_tensors.len(), &mut features),
        OperatorDesc::Slice1(d) => {
            let dims = d.input_window_strides.len();
            let window = |i: usize| d.input_window_sizes.get(i).copied().unwrap_or(0);
            let stride = |i: usize| d.input_window_strides[i];
            if (0..dims).any(|i| stride(i) < 0) {
                features.push("negative_stride");
            }
            if (0..dims).any(|i| stride(i).unsigned_abs() > 1) {
                features.push("large_stride");
            }
            if d.input_window_offsets.iter().any(|&o| o > 0) {
                features.push("window_offset");
            }
            if (0..dims).any(|i| {
                let input = d.input_tensor.sizes.get(i).copied().unwrap_or(0);
                let offset = d.input_window_offsets.get(i).copied().unwrap_or(0);
                u64::from(offset) + u64::from(window(i)) < u64::from(input)
            }) {
                features.push("window_inside_input");
            }
            let smaller = |i: usize| {
                d.output_tensor.sizes.get(i).copied().unwrap_or(0)
                    < max_copied(window(i), stride(i))
            };
            if dims > 0 && smaller(0) {
                features.push("output_smaller_outer");
            }
            if (1..dims).any(smaller) {
                features.push("output_smaller_inner");
            }
        }
    }
    features.sort_unstable();
    features
}

fn split_join_features(axis: u32, parts: usize, features: &mut Vec<&'static str>) {
    if axis > 0 {
        features.push("axis_inner");
    }
    if parts > 1 {
        features.push("several_parts");
    }
}

/// The table row of `kind`'s page that holds at `level` (`1_0`, `2_1`, `3_0`, `4_1`), or
/// `before_X` below the level X it was introduced at.
pub fn level_row(kind: OperatorKind, level: FeatureLevel) -> String {
    let introduced = spec::introduced(kind);
    match spec::support_row(kind, level) {
        Some(row) if level >= introduced => row.level.clone(),
        _ => format!("before_{introduced}"),
    }
}

/// The signature of a failure of `kind` on `case` (its minimal form, for a bucket).
/// Acceptance failures are told apart by the rule the backend did not enforce (and, for a
/// rule of the level tables, the table row at the case's level: `.at_2_1`); everything else
/// by the operator, the element size class and the features.
pub fn signature(kind: CheckKind, case: &Case) -> String {
    let op = case.op.kind().name();
    if let Some(field) = crate::strategies::siblings::field_kind(case) {
        // A sibling group's bucket: the field its siblings differ in, the check, the operator.
        return format!("siblings.{field}.{}.{op}", kind.name());
    }
    if kind == CheckKind::Acceptance {
        let rule = expected_rule(case).unwrap_or("unknown_rule");
        if spec::depends_on_feature_level(rule) {
            let row = level_row(case.op.kind(), case.feature_level);
            return format!("acceptance.{op}.{rule}.at_{row}");
        }
        return format!("acceptance.{op}.{rule}");
    }
    let features = features(&case.op);
    let shape = if features.is_empty() {
        "plain".to_string()
    } else {
        features.join("+")
    };
    format!("{}.{op}.{}.{shape}", kind.name(), element_class(&case.op))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_harness::Case;
    use dmlcts_tensor::{DataType, Slice1Desc};

    fn slice(dims: usize, inner_output: u32) -> Case {
        let mut sizes = vec![1u32; dims];
        sizes[dims - 2] = 2;
        sizes[dims - 1] = 4;
        let mut output = sizes.clone();
        output[dims - 1] = inner_output;
        crate::strategies::case_for(
            "t",
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: TensorDesc::packed(DataType::Float32, &sizes),
                output_tensor: TensorDesc::packed(DataType::Float32, &output),
                dimension_count: dims as u32,
                input_window_offsets: vec![0; dims],
                input_window_sizes: sizes.clone(),
                input_window_strides: vec![1; dims],
            }),
            0,
        )
    }

    #[test]
    fn a_slice1_output_smaller_than_its_window_inside_has_one_signature_at_any_dimension_count() {
        let two = signature(CheckKind::Values, &slice(2, 2));
        assert_eq!(two, "values.slice1.e4.output_smaller_inner");
        for dims in 3..=8 {
            assert_eq!(signature(CheckKind::Values, &slice(dims, 2)), two);
        }
        assert_eq!(
            signature(CheckKind::Values, &slice(2, 4)),
            "values.slice1.e4.plain"
        );
    }

    #[test]
    fn check_kind_names_round_trip() {
        for name in [
            "acceptance",
            "rejection",
            "values",
            "guard_band",
            "crash",
            "hang",
        ] {
            assert_eq!(CheckKind::from_name(name).map(CheckKind::name), Some(name));
        }
        assert_eq!(CheckKind::from_name("value"), None);
    }

    // On main, a well-framed `error` reply was bucketed as a crash.
    #[test]
    fn an_error_reply_is_its_own_kind_and_only_the_clients_first_line_decides() {
        let failed = |reason: &str, said: &[&str]| {
            let details = format!(
                "  while compiling, the backend said:\n{}",
                said.iter()
                    .map(|l| format!("    | {l}\n"))
                    .collect::<String>()
            );
            dmlcts_harness::CaseResult::run_failure("x", "x", reason, &details)
        };
        let error = failed(
            "the backend failed",
            &["the backend reported an error: out of memory"],
        );
        assert_eq!(CheckKind::of(&error), CheckKind::Error);
        let on_execute = failed(
            "execution failed",
            &["the backend reported an error: no kernel"],
        );
        assert_eq!(CheckKind::of(&on_execute), CheckKind::Error);
        // A dead server whose stderr says the words is still a crash.
        let crash = failed(
            "execution failed",
            &[
                "the backend process exited with status 3",
                "the backend reported an error: (its stderr)",
            ],
        );
        assert_eq!(CheckKind::of(&crash), CheckKind::Crash);
        let in_process = failed("the backend failed", &["my own error"]);
        assert_eq!(CheckKind::of(&in_process), CheckKind::Crash);
        assert_eq!(CheckKind::from_name("error"), Some(CheckKind::Error));
    }
}
