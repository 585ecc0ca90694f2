//! `execute(desc, inputs)`: the pages' pseudocode as plain loops over coordinates.

use crate::{Violation, validate};
use dmlcts_tensor::{
    Coordinates, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc,
    read_element, write_element,
};
use std::fmt;

/// One output as the oracle computed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OracleOutput {
    /// TotalTensorSizeInBytes bytes. Bytes no element addresses are left 0.
    pub bytes: Vec<u8>,
    /// `addressed[b]` is true when some output element covers byte `b`. The other bytes are
    /// unspecified: DirectML may write anywhere inside TotalTensorSizeInBytes.
    pub addressed: Vec<bool>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecuteError {
    /// The descriptor breaks a rule; nothing was executed.
    Invalid(Violation),
    /// The input buffers do not match the descriptor (count or byte length), or an output
    /// buffer could not be allocated.
    BadInputs(String),
}

impl fmt::Display for ExecuteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecuteError::Invalid(v) => write!(f, "invalid descriptor: {v}"),
            ExecuteError::BadInputs(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ExecuteError {}

/// Executes a valid descriptor. `inputs[i]` must hold exactly the i-th input's
/// TotalTensorSizeInBytes bytes (inputs in the order of `OperatorDesc::inputs`).
///
/// Execution does not depend on the feature level, so the descriptor is validated at the
/// latest level: only the level-independent rules can refuse it here.
pub fn execute(op: &OperatorDesc, inputs: &[&[u8]]) -> Result<Vec<OracleOutput>, ExecuteError> {
    validate(op, FeatureLevel::LATEST).map_err(ExecuteError::Invalid)?;
    let input_descs = op.inputs();
    if inputs.len() != input_descs.len() {
        return Err(ExecuteError::BadInputs(format!(
            "{} input buffers given for {} input tensors",
            inputs.len(),
            input_descs.len()
        )));
    }
    for ((name, desc), bytes) in input_descs.iter().zip(inputs) {
        if bytes.len() as u64 != desc.total_tensor_size_in_bytes {
            return Err(ExecuteError::BadInputs(format!(
                "{name} buffer holds {} bytes but its TotalTensorSizeInBytes is {}",
                bytes.len(),
                desc.total_tensor_size_in_bytes
            )));
        }
    }
    let mut outputs = Vec::new();
    for (name, desc) in op.outputs() {
        outputs.push(Output::allocate(&name, desc)?);
    }
    match op {
        OperatorDesc::Split(desc) => split(desc, inputs[0], &mut outputs),
        OperatorDesc::Join(desc) => join(desc, inputs, &mut outputs[0]),
        OperatorDesc::Slice1(desc) => slice1(desc, inputs[0], &mut outputs[0]),
    }
    Ok(outputs
        .into_iter()
        .map(|o| OracleOutput {
            bytes: o.bytes,
            addressed: o.addressed,
        })
        .collect())
}

struct Output<'a> {
    desc: &'a TensorDesc,
    strides: Vec<u64>,
    bytes: Vec<u8>,
    addressed: Vec<bool>,
}

impl<'a> Output<'a> {
    fn allocate(name: &str, desc: &'a TensorDesc) -> Result<Output<'a>, ExecuteError> {
        let too_large = || {
            ExecuteError::BadInputs(format!(
                "{name}.TotalTensorSizeInBytes ({}) is too large to allocate here",
                desc.total_tensor_size_in_bytes
            ))
        };
        let size = usize::try_from(desc.total_tensor_size_in_bytes).map_err(|_| too_large())?;
        let mut bytes = Vec::new();
        let mut addressed = Vec::new();
        bytes.try_reserve_exact(size).map_err(|_| too_large())?;
        addressed.try_reserve_exact(size).map_err(|_| too_large())?;
        bytes.resize(size, 0);
        addressed.resize(size, false);
        Ok(Output {
            desc,
            strides: desc.effective_strides(),
            bytes,
            addressed,
        })
    }
}

/// OutputTensor[output_coordinates] = InputTensor[input_coordinates], bit for bit.
/// Validation guarantees both addresses lie inside their TotalTensorSizeInBytes.
fn copy_element(
    input_desc: &TensorDesc,
    input_strides: &[u64],
    input: &[u8],
    input_coordinates: &[u32],
    output: &mut Output<'_>,
    output_coordinates: &[u32],
) {
    let data_type = input_desc.data_type;
    let size = data_type.element_size();
    let from = input_desc.byte_offset(input_coordinates, input_strides);
    let to = output.desc.byte_offset(output_coordinates, &output.strides);
    let (Some(from), Some(to)) = (from, to) else {
        return;
    };
    let (from, to) = (from as usize, to as usize);
    if let Some(bits) = read_element(input, from, data_type)
        && write_element(&mut output.bytes, to, data_type, bits)
    {
        output.addressed[to..to + size].fill(true);
    }
}

/// Split: output i holds the input's elements whose axis coordinate lies in
/// [sum of the previous outputs' axis sizes, that + its own axis size).
fn split(desc: &SplitDesc, input: &[u8], outputs: &mut [Output<'_>]) {
    let axis = desc.axis as usize;
    let input_strides = desc.input_tensor.effective_strides();
    let mut axis_start: u32 = 0;
    let mut input_coordinates = vec![0u32; desc.input_tensor.dimension_count()];
    for output in outputs.iter_mut() {
        let mut walk = Coordinates::new(&output.desc.sizes);
        while let Some(output_coordinates) = walk.advance() {
            input_coordinates.copy_from_slice(output_coordinates);
            input_coordinates[axis] += axis_start;
            copy_element(
                &desc.input_tensor,
                &input_strides,
                input,
                &input_coordinates,
                output,
                output_coordinates,
            );
        }
        axis_start += output.desc.sizes[axis];
    }
}

/// Join: input i lands at [sum of the previous inputs' axis sizes, ...) on the axis.
fn join(desc: &JoinDesc, inputs: &[&[u8]], output: &mut Output<'_>) {
    let axis = desc.axis as usize;
    let mut axis_start: u32 = 0;
    let mut output_coordinates = vec![0u32; desc.output_tensor.dimension_count()];
    for (input_desc, input) in desc.input_tensors.iter().zip(inputs) {
        let input_strides = input_desc.effective_strides();
        let mut walk = Coordinates::new(&input_desc.sizes);
        while let Some(input_coordinates) = walk.advance() {
            output_coordinates.copy_from_slice(input_coordinates);
            output_coordinates[axis] += axis_start;
            copy_element(
                input_desc,
                &input_strides,
                input,
                input_coordinates,
                output,
                &output_coordinates,
            );
        }
        axis_start += input_desc.sizes[axis];
    }
}

/// Slice1, as the page's pseudocode:
///
/// ```text
/// CopyStart = InputWindowOffsets
/// for dimension i in [0, DimensionCount - 1]:
///     if InputWindowStrides[i] < 0:
///         CopyStart[i] += InputWindowSizes[i] - 1
/// OutputTensor[OutputCoordinates] = InputTensor[CopyStart + InputWindowStrides * OutputCoordinates]
/// ```
fn slice1(desc: &Slice1Desc, input: &[u8], output: &mut Output<'_>) {
    let dimension_count = desc.dimension_count as usize;
    let mut copy_start: Vec<i64> = desc
        .input_window_offsets
        .iter()
        .map(|&o| i64::from(o))
        .collect();
    for i in 0..dimension_count {
        if desc.input_window_strides[i] < 0 {
            copy_start[i] += i64::from(desc.input_window_sizes[i]) - 1;
        }
    }
    let input_strides = desc.input_tensor.effective_strides();
    let mut input_coordinates = vec![0u32; dimension_count];
    let mut walk = Coordinates::new(&output.desc.sizes);
    while let Some(output_coordinates) = walk.advance() {
        for i in 0..dimension_count {
            let coordinate = copy_start[i]
                + i64::from(desc.input_window_strides[i]) * i64::from(output_coordinates[i]);
            // Validation keeps every coordinate inside the window, so this never fails.
            let Ok(coordinate) = u32::try_from(coordinate) else {
                return;
            };
            input_coordinates[i] = coordinate;
        }
        copy_element(
            &desc.input_tensor,
            &input_strides,
            input,
            &input_coordinates,
            output,
            output_coordinates,
        );
    }
}
