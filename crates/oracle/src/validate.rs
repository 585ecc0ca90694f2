//! `validate(desc, level)`: every rule of specs/, in the order the spec files list them.
//! Each rejection names its rule id and the exact fields and values that broke it.

use crate::overlap::{self, SharedAddress};
use crate::spec;
use dmlcts_tensor::{
    FeatureLevel, JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc, TensorDesc,
};
use std::fmt;

/// The first rule a descriptor breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// A constraint id from specs/, e.g. `split.output_sizes_sum_to_input`.
    pub rule: String,
    /// What broke it, with the fields and values, e.g.
    /// "OutputTensors[1].Sizes[2] is 3 but InputTensor.Sizes[2] is 4".
    pub message: String,
}

impl Violation {
    fn new(rule: &str, message: String) -> Violation {
        Violation {
            rule: rule.to_string(),
            message,
        }
    }

    /// Whether the verdict would change at another feature level.
    pub fn depends_on_feature_level(&self) -> bool {
        spec::depends_on_feature_level(&self.rule)
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.rule, self.message)
    }
}

impl std::error::Error for Violation {}

impl From<Violation> for dmlcts_tensor::Rejected {
    fn from(violation: Violation) -> dmlcts_tensor::Rejected {
        dmlcts_tensor::Rejected {
            rule: Some(violation.rule),
            message: violation.message,
        }
    }
}

/// Checks `op` against every rule in specs/ for a device at `level`.
pub fn validate(op: &OperatorDesc, level: FeatureLevel) -> Result<(), Violation> {
    validate_enforced(op, level, |_| true).map(|_| ())
}

/// `validate`, for a backend that enforces only the rules `enforces` names: the first broken
/// rule it enforces is the error; the broken rules it does not enforce are listed, in the
/// order `validate` checks them, and checking goes on past them (a check that a broken
/// rule makes meaningless, such as sizes along an axis of tensors whose dimension counts
/// differ, is left out). With every rule enforced this is `validate`.
pub fn validate_enforced(
    op: &OperatorDesc,
    level: FeatureLevel,
    enforces: impl Fn(&str) -> bool,
) -> Result<Vec<Violation>, Violation> {
    let mut check = Checker {
        enforces: &enforces,
        not_enforced: Vec::new(),
    };
    let kind = op.kind();
    let introduced = spec::introduced(kind);
    if level < introduced {
        check.broken(Violation::new(
            "operator.introduced_at_level",
            format!(
                "{} was introduced in DML_FEATURE_LEVEL_{introduced}; the target is {level}",
                kind.dml_name()
            ),
        ))?;
    }
    match op {
        OperatorDesc::Split(desc) => validate_split(desc, level, &mut check),
        OperatorDesc::Join(desc) => validate_join(desc, level, &mut check),
        OperatorDesc::Slice1(desc) => validate_slice1(desc, level, &mut check),
    }?;
    Ok(check.not_enforced)
}

/// Every rule `op` breaks at `level`, in the order `validate` checks them: `validate_enforced`
/// for a backend that enforces none (so the same checks are left out after a broken rule).
/// A must-reject case tests its rule alone where this is that rule and nothing else.
pub fn broken_rules(op: &OperatorDesc, level: FeatureLevel) -> Vec<Violation> {
    match validate_enforced(op, level, |_| false) {
        Ok(broken) => broken,
        Err(enforced) => vec![enforced], // unreachable: nothing is enforced
    }
}

/// Where each broken rule goes: the error when it is enforced, else the list.
struct Checker<'a> {
    enforces: &'a dyn Fn(&str) -> bool,
    not_enforced: Vec<Violation>,
}

impl Checker<'_> {
    fn broken(&mut self, violation: Violation) -> Result<(), Violation> {
        if (self.enforces)(&violation.rule) {
            return Err(violation);
        }
        if !self.not_enforced.iter().any(|v| v.rule == violation.rule) {
            self.not_enforced.push(violation);
        }
        Ok(())
    }
}

fn validate_split(desc: &SplitDesc, level: FeatureLevel, c: &mut Checker) -> Result<(), Violation> {
    if desc.output_tensors.is_empty() {
        c.broken(Violation::new(
            "split.output_count_nonzero",
            "OutputCount is 0; it must be greater than 0".to_string(),
        ))?;
    }
    let input = ("InputTensor".to_string(), &desc.input_tensor);
    let outputs: Vec<(String, &TensorDesc)> = desc
        .output_tensors
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("OutputTensors[{i}]"), t))
        .collect();
    check_tensor(c, &input.0, input.1, false)?;
    for (name, tensor) in &outputs {
        check_tensor(c, name, tensor, true)?;
    }
    check_same_dimension_count_and_type(c, OperatorKind::Split, &input, &outputs)?;
    check_support(c, OperatorKind::Split, level, "InputTensor", &input)?;
    for output in &outputs {
        check_support(c, OperatorKind::Split, level, "OutputTensors", output)?;
    }
    check_axis_and_sizes(c, OperatorKind::Split, desc.axis, &input, &outputs)
}

fn validate_join(desc: &JoinDesc, level: FeatureLevel, c: &mut Checker) -> Result<(), Violation> {
    if desc.input_tensors.is_empty() {
        c.broken(Violation::new(
            "join.input_count_nonzero",
            "InputCount is 0; it must be greater than 0".to_string(),
        ))?;
    }
    let output = ("OutputTensor".to_string(), &desc.output_tensor);
    let inputs: Vec<(String, &TensorDesc)> = desc
        .input_tensors
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("InputTensors[{i}]"), t))
        .collect();
    for (name, tensor) in &inputs {
        check_tensor(c, name, tensor, false)?;
    }
    check_tensor(c, &output.0, output.1, true)?;
    check_same_dimension_count_and_type(c, OperatorKind::Join, &output, &inputs)?;
    for input in &inputs {
        check_support(c, OperatorKind::Join, level, "InputTensors", input)?;
    }
    check_support(c, OperatorKind::Join, level, "OutputTensor", &output)?;
    check_axis_and_sizes(c, OperatorKind::Join, desc.axis, &output, &inputs)
}

/// Split and Join share the page's pseudocode with the roles swapped: `whole` is Split's
/// InputTensor or Join's OutputTensor, `parts` are the other side.
fn check_axis_and_sizes(
    c: &mut Checker,
    kind: OperatorKind,
    axis: u32,
    whole: &(String, &TensorDesc),
    parts: &[(String, &TensorDesc)],
) -> Result<(), Violation> {
    let (whole_name, whole) = whole;
    let op = kind.name();
    let dimension_count = whole.dimension_count();
    if axis as usize >= dimension_count {
        c.broken(Violation::new(
            &format!("{op}.axis_in_range"),
            format!(
                "Axis is {axis}; it must be in [0, {}] ({whole_name}.DimensionCount is {dimension_count})",
                dimension_count as i64 - 1
            ),
        ))?;
        return Ok(());
    }
    // Sizes are compared dimension by dimension only between tensors of one dimension count
    // (a part with another count broke {op}.same_dimension_count, which was not enforced),
    // and only when there are parts (none broke the count rule, which was not enforced).
    if parts.is_empty()
        || parts
            .iter()
            .any(|(_, p)| p.dimension_count() != dimension_count)
    {
        return Ok(());
    }
    let axis = axis as usize;
    // splitSize / joinSize, summed in u64 so it cannot wrap.
    let mut axis_size_sum: u64 = 0;
    for (part_name, part) in parts {
        for dim in 0..dimension_count {
            if dim == axis {
                axis_size_sum += u64::from(part.sizes[dim]);
            } else if part.sizes[dim] != whole.sizes[dim] {
                c.broken(Violation::new(
                    &format!("{op}.non_axis_sizes_match"),
                    format!(
                        "{part_name}.Sizes[{dim}] is {} but {whole_name}.Sizes[{dim}] is {} \
                         (only the axis, {axis}, may differ)",
                        part.sizes[dim], whole.sizes[dim]
                    ),
                ))?;
            }
        }
    }
    if axis_size_sum != u64::from(whole.sizes[axis]) {
        let rule = match kind {
            OperatorKind::Join => "join.input_sizes_sum_to_output",
            _ => "split.output_sizes_sum_to_input",
        };
        let side = match kind {
            OperatorKind::Join => "InputTensors",
            _ => "OutputTensors",
        };
        let listed: Vec<String> = parts
            .iter()
            .map(|(_, t)| t.sizes[axis].to_string())
            .collect();
        c.broken(Violation::new(
            rule,
            format!(
                "{side}[*].Sizes[{axis}] sum to {axis_size_sum} ({}) but {whole_name}.Sizes[{axis}] is {}",
                listed.join(" + "),
                whole.sizes[axis]
            ),
        ))?;
    }
    Ok(())
}

fn validate_slice1(
    desc: &Slice1Desc,
    level: FeatureLevel,
    c: &mut Checker,
) -> Result<(), Violation> {
    let dimension_count = desc.dimension_count as usize;
    for (field, length) in [
        ("InputWindowOffsets", desc.input_window_offsets.len()),
        ("InputWindowSizes", desc.input_window_sizes.len()),
        ("InputWindowStrides", desc.input_window_strides.len()),
    ] {
        if length != dimension_count {
            c.broken(Violation::new(
                "slice1.window_arrays_length",
                format!("{field} has {length} entries but DimensionCount is {dimension_count}"),
            ))?;
        }
    }
    let input = ("InputTensor".to_string(), &desc.input_tensor);
    let output = ("OutputTensor".to_string(), &desc.output_tensor);
    check_tensor(c, &input.0, input.1, false)?;
    check_tensor(c, &output.0, output.1, true)?;
    check_same_dimension_count_and_type(
        c,
        OperatorKind::Slice1,
        &input,
        std::slice::from_ref(&output),
    )?;
    if desc.input_tensor.dimension_count() != dimension_count {
        c.broken(Violation::new(
            "slice1.dimension_count_matches_tensors",
            format!(
                "DimensionCount is {dimension_count} but InputTensor.DimensionCount and \
                 OutputTensor.DimensionCount are {}",
                desc.input_tensor.dimension_count()
            ),
        ))?;
    }
    check_support(c, OperatorKind::Slice1, level, "InputTensor", &input)?;
    check_support(c, OperatorKind::Slice1, level, "OutputTensor", &output)?;

    for i in 0..dimension_count {
        // Every array has an entry here unless a rule above that was not enforced is broken.
        let (Some(&offset), Some(&size), Some(&stride), Some(&input_size), Some(&output_size)) = (
            desc.input_window_offsets.get(i),
            desc.input_window_sizes.get(i),
            desc.input_window_strides.get(i),
            desc.input_tensor.sizes.get(i),
            desc.output_tensor.sizes.get(i),
        ) else {
            continue;
        };
        if size == 0 {
            c.broken(Violation::new(
                "slice1.window_nonempty",
                format!("InputWindowSizes[{i}] is 0; the input window mustn't be empty"),
            ))?;
        }
        if u64::from(offset) + u64::from(size) > u64::from(input_size) {
            c.broken(Violation::new(
                "slice1.window_inside_input",
                format!(
                    "InputWindowOffsets[{i}] + InputWindowSizes[{i}] is {offset} + {size} = {} \
                     but InputTensor.Sizes[{i}] is {input_size}",
                    u64::from(offset) + u64::from(size)
                ),
            ))?;
        }
        if stride == 0 {
            c.broken(Violation::new(
                "slice1.window_stride_nonzero",
                format!("InputWindowStrides[{i}] is 0; strides may not be 0"),
            ))?;
        }
        if size == 0 || stride == 0 {
            continue;
        }
        // MaxCopiedElements[i] = 1 + (InputWindowSize[i] - 1) / |InputWindowStrides[i]|
        let max_copied = 1 + (u64::from(size) - 1) / i64::from(stride).unsigned_abs();
        if u64::from(output_size) > max_copied {
            c.broken(Violation::new(
                "slice1.output_size_within_max_copied",
                format!(
                    "OutputTensor.Sizes[{i}] is {output_size} but MaxCopiedElements[{i}] = \
                     1 + ({size} - 1) / |{stride}| = {max_copied}"
                ),
            ))?;
        }
    }
    Ok(())
}

/// The rules every tensor obeys on its own (specs/tensor.yaml).
fn check_tensor(
    c: &mut Checker,
    name: &str,
    tensor: &TensorDesc,
    is_output: bool,
) -> Result<(), Violation> {
    let dimension_count = tensor.dimension_count();
    if let Some(strides) = &tensor.strides
        && strides.len() != dimension_count
    {
        c.broken(Violation::new(
            "tensor.strides_count",
            format!(
                "{name}.Strides has {} entries but {name}.DimensionCount is {dimension_count}",
                strides.len()
            ),
        ))?;
    }
    if let Some(dim) = tensor.sizes.iter().position(|&s| s == 0) {
        c.broken(Violation::new(
            "tensor.sizes_nonzero",
            format!("{name}.Sizes[{dim}] is 0; sizes must be non-zero"),
        ))?;
    }
    let elements = tensor.element_count();
    let limit = u128::from(u32::MAX);
    if elements > limit {
        c.broken(Violation::new(
            "tensor.element_count_limit",
            format!("{name} has {elements} elements; a buffer tensor may have at most {limit}"),
        ))?;
    }
    let minimum = tensor.minimum_size_in_bytes();
    if u128::from(tensor.total_tensor_size_in_bytes) < minimum {
        c.broken(Violation::new(
            "tensor.total_size_minimum",
            format!(
                "{name}.TotalTensorSizeInBytes is {} but its sizes and strides need at least {minimum}",
                tensor.total_tensor_size_in_bytes
            ),
        ))?;
    }
    // Past the element limit no device holds the tensor: its addresses are not judged.
    if is_output
        && elements <= limit
        && let Err(violation) = check_output_addresses_distinct(name, tensor)
    {
        c.broken(violation)?;
    }
    Ok(())
}

/// Reading (specs/tensor.yaml): no two coordinates of an output may share an address,
/// decided exactly by `overlap::shared_address`.
fn check_output_addresses_distinct(name: &str, tensor: &TensorDesc) -> Result<(), Violation> {
    // Packed strides are nested (each is the product of the sizes after it): distinct.
    let Some(strides) = &tensor.strides else {
        return Ok(());
    };
    if strides.len() != tensor.sizes.len() {
        return Ok(()); // tensor.strides_count, which was not enforced: no layout to judge
    }
    let rule = "tensor.output_addresses_distinct";
    match overlap::shared_address(&tensor.sizes, strides) {
        None => Ok(()),
        Some(SharedAddress::ZeroStride { dimension }) => {
            let size = tensor.sizes[dimension];
            Err(Violation::new(
                rule,
                format!(
                    "{name}.Strides[{dimension}] is 0 on a dimension of size {size}: {size} output \
                     coordinates would share one address"
                ),
            ))
        }
        Some(SharedAddress::MoreElementsThanAddresses {
            elements,
            addresses,
        }) => Err(Violation::new(
            rule,
            format!(
                "{name}.Strides {strides:?} give {elements} coordinates only {addresses} \
                 element addresses: two of them share one"
            ),
        )),
        Some(SharedAddress::Coordinates {
            first,
            second,
            element,
        }) => Err(Violation::new(
            rule,
            format!(
                "{name}.Strides {strides:?} map coordinates {first:?} and {second:?} to the same element {element}"
            ),
        )),
    }
}

/// "Tensor constraints": one DimensionCount and one DataType across the operator's tensors.
/// `reference` is the tensor the page's pseudocode compares against.
fn check_same_dimension_count_and_type(
    c: &mut Checker,
    kind: OperatorKind,
    reference: &(String, &TensorDesc),
    others: &[(String, &TensorDesc)],
) -> Result<(), Violation> {
    let (reference_name, reference) = reference;
    for (name, tensor) in others {
        if tensor.dimension_count() != reference.dimension_count() {
            c.broken(Violation::new(
                &format!("{}.same_dimension_count", kind.name()),
                format!(
                    "{name}.DimensionCount is {} but {reference_name}.DimensionCount is {}",
                    tensor.dimension_count(),
                    reference.dimension_count()
                ),
            ))?;
        }
    }
    for (name, tensor) in others {
        if tensor.data_type != reference.data_type {
            c.broken(Violation::new(
                &format!("{}.same_data_type", kind.name()),
                format!(
                    "{name}.DataType is {} but {reference_name}.DataType is {}",
                    tensor.data_type, reference.data_type
                ),
            ))?;
        }
    }
    Ok(())
}

/// The page's "Tensor support" table at `level`, for the table row named `row_tensor`.
fn check_support(
    c: &mut Checker,
    kind: OperatorKind,
    level: FeatureLevel,
    row_tensor: &str,
    tensor: &(String, &TensorDesc),
) -> Result<(), Violation> {
    let (name, tensor) = tensor;
    let op = kind.name();
    let Some(row) = spec::support_row(kind, level) else {
        // Below the operator's first table row: availability already rejected it.
        c.broken(Violation::new(
            "operator.introduced_at_level",
            format!(
                "{} has no tensor support at feature level {level}",
                kind.dml_name()
            ),
        ))?;
        return Ok(());
    };
    let Some(support) = row.tensors.iter().find(|t| t.name == row_tensor) else {
        c.broken(Violation::new(
            &format!("{op}.dimension_count_supported"),
            format!(
                "the {} table at {} has no row for {row_tensor}",
                kind.dml_name(),
                row.level
            ),
        ))?;
        return Ok(());
    };
    if !support.supports_dimension_count(tensor.dimension_count()) {
        c.broken(Violation::new(
            &format!("{op}.dimension_count_supported"),
            format!(
                "{name}.DimensionCount is {}; at feature level {level} {} supports {} \
                 (row \"DML_FEATURE_LEVEL_{} and above\")",
                tensor.dimension_count(),
                kind.dml_name(),
                support.dimension_counts_text(),
                row.level
            ),
        ))?;
    }
    if !support.supports_data_type(tensor.data_type) {
        c.broken(Violation::new(
            &format!("{op}.data_type_supported"),
            format!(
                "{name}.DataType is {}; at feature level {level} {} supports {} \
                 (row \"DML_FEATURE_LEVEL_{} and above\")",
                tensor.data_type,
                kind.dml_name(),
                support.data_types.join(", "),
                row.level
            ),
        ))?;
    }
    Ok(())
}
