//! `execute(desc, inputs)`: the pages' pseudocode as plain loops over coordinates.

use crate::{Violation, validate};
use dmlcts_tensor::{DataType, FeatureLevel, OperatorDesc, Slice1Desc, TensorDesc};
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

impl OracleOutput {
    /// Writes the addressed bytes into `target` and leaves its other bytes as they were, as a
    /// backend that writes only the output's elements does (the oracle as a backend, and test
    /// backends built on it). A target of another length gets the bytes both have.
    pub fn write_addressed_into(&self, target: &mut [u8]) {
        for (byte, (&value, &addressed)) in
            (target.iter_mut()).zip(self.bytes.iter().zip(&self.addressed))
        {
            if addressed {
                *byte = value;
            }
        }
    }
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
    let mut input_layouts = Vec::new();
    for ((name, desc), bytes) in input_descs.iter().zip(inputs) {
        input_layouts.push(Layout::new(name, desc, bytes.len())?);
    }
    let mut outputs = Vec::new();
    for (name, desc) in op.outputs() {
        outputs.push(Output::allocate(&name, desc)?);
    }
    // One walk per element size, so that each element is a copy of a fixed length.
    let element_size = (input_descs.first()).map_or(1, |(_, desc)| desc.data_type.element_size());
    match element_size {
        1 => run::<1>(op, &input_layouts, inputs, &mut outputs),
        2 => run::<2>(op, &input_layouts, inputs, &mut outputs),
        4 => run::<4>(op, &input_layouts, inputs, &mut outputs),
        _ => run::<8>(op, &input_layouts, inputs, &mut outputs),
    }
    Ok(outputs
        .into_iter()
        .map(|o| OracleOutput {
            bytes: o.bytes,
            addressed: o.addressed,
        })
        .collect())
}

/// The operator's copy, for elements of `SIZE` bytes (validation makes every tensor of one
/// data type).
fn run<const SIZE: usize>(
    op: &OperatorDesc,
    input_layouts: &[Layout],
    inputs: &[&[u8]],
    outputs: &mut [Output],
) {
    match op {
        OperatorDesc::Split(desc) => {
            split::<SIZE>(&input_layouts[0], desc.axis as usize, inputs[0], outputs)
        }
        OperatorDesc::Join(desc) => {
            join::<SIZE>(input_layouts, desc.axis as usize, inputs, &mut outputs[0])
        }
        OperatorDesc::Slice1(desc) => {
            slice1::<SIZE>(desc, &input_layouts[0], inputs[0], &mut outputs[0])
        }
    }
}

/// The most dimensions a tensor of these operators has: every table row allows at most 8,
/// and validation refuses more, so coordinates, sizes and strides fit fixed arrays.
const MAX_DIMENSIONS: usize = 8;

/// Coordinates (or sizes, or strides) of up to `MAX_DIMENSIONS` dimensions, in a fixed
/// array: dimensions past a tensor's DimensionCount hold coordinate 0, size 1, stride 0, so
/// they change neither the walk nor any byte offset.
type Dims<T> = [T; MAX_DIMENSIONS];

/// A tensor as the element walk reads it: its sizes and effective strides in fixed arrays.
/// Made once per tensor, after validation, which guarantees every element's bytes lie inside
/// TotalTensorSizeInBytes; `new` checks the largest offset once more, so that the offsets
/// of every element are known to fit in u64 and inside the buffer.
struct Layout {
    data_type: DataType,
    sizes: Dims<u32>,
    strides: Dims<u64>,
}

impl Layout {
    fn new(name: &str, desc: &TensorDesc, buffer_len: usize) -> Result<Layout, ExecuteError> {
        let dimension_count = desc.dimension_count();
        if dimension_count > MAX_DIMENSIONS {
            return Err(ExecuteError::BadInputs(format!(
                "{name}.DimensionCount is {dimension_count}; the oracle executes at most \
                 {MAX_DIMENSIONS}"
            )));
        }
        let effective_strides = desc.effective_strides();
        if effective_strides.len() != dimension_count {
            return Err(ExecuteError::BadInputs(format!(
                "{name}.Strides has {} entries for {dimension_count} dimensions",
                effective_strides.len()
            )));
        }
        let mut sizes = [1u32; MAX_DIMENSIONS];
        let mut strides = [0u64; MAX_DIMENSIONS];
        sizes[..dimension_count].copy_from_slice(&desc.sizes);
        strides[..dimension_count].copy_from_slice(&effective_strides);
        // The last byte of the element with the largest offset, in u128 (no overflow).
        let element_size = desc.data_type.element_size() as u128;
        let largest_index: u128 = (sizes.iter().zip(&strides))
            .map(|(&size, &stride)| u128::from(size.saturating_sub(1)) * u128::from(stride))
            .sum();
        let end = (largest_index + 1) * element_size;
        if !sizes.contains(&0) && end > buffer_len as u128 {
            return Err(ExecuteError::BadInputs(format!(
                "{name}: an element lies past its {buffer_len} bytes"
            )));
        }
        Ok(Layout {
            data_type: desc.data_type,
            sizes,
            strides,
        })
    }

    /// Byte offset of the element at `coordinates`: sum(coordinates[i] * strides[i]) elements.
    /// `new` checked that the largest one fits in the buffer, so none overflows.
    #[inline]
    fn byte_offset(&self, coordinates: &Dims<u32>) -> usize {
        let mut element_index: u64 = 0;
        for i in 0..MAX_DIMENSIONS {
            element_index += u64::from(coordinates[i]) * self.strides[i];
        }
        element_index as usize * self.data_type.element_size()
    }
}

/// Row-major walk over every coordinate of `sizes`: the last dimension moves fastest. A
/// zero size yields nothing; all sizes 1 (a scalar) yield one coordinate.
struct Walk {
    sizes: Dims<u32>,
    current: Dims<u32>,
    started: bool,
    done: bool,
}

impl Walk {
    fn new(sizes: &Dims<u32>) -> Walk {
        Walk {
            sizes: *sizes,
            current: [0; MAX_DIMENSIONS],
            started: false,
            done: sizes.contains(&0),
        }
    }

    /// The next coordinate, or None when every one has been visited.
    #[inline]
    fn advance(&mut self) -> Option<Dims<u32>> {
        if self.done {
            return None;
        }
        if !self.started {
            self.started = true;
            return Some(self.current);
        }
        let mut dim = MAX_DIMENSIONS;
        loop {
            if dim == 0 {
                // Every dimension wrapped around: the walk is over.
                self.done = true;
                return None;
            }
            dim -= 1;
            self.current[dim] += 1;
            if self.current[dim] < self.sizes[dim] {
                return Some(self.current);
            }
            self.current[dim] = 0;
        }
    }
}

struct Output {
    layout: Layout,
    bytes: Vec<u8>,
    addressed: Vec<bool>,
}

impl Output {
    fn allocate(name: &str, desc: &TensorDesc) -> Result<Output, ExecuteError> {
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
            layout: Layout::new(name, desc, size)?,
            bytes,
            addressed,
        })
    }
}

/// OutputTensor[output_coordinates] = InputTensor[input_coordinates], bit for bit: the
/// element's `SIZE` bytes copied. Validation guarantees both addresses lie inside their
/// TotalTensorSizeInBytes (and `Layout::new` checked it).
#[inline(always)]
fn copy_element<const SIZE: usize>(
    input_layout: &Layout,
    input: &[u8],
    input_coordinates: &Dims<u32>,
    output: &mut Output,
    output_coordinates: &Dims<u32>,
) {
    let from = input_layout.byte_offset(input_coordinates);
    let to = output.layout.byte_offset(output_coordinates);
    if let (Some(element), Some(destination)) = (
        input.get(from..from + SIZE),
        output.bytes.get_mut(to..to + SIZE),
    ) {
        destination.copy_from_slice(element);
        output.addressed[to..to + SIZE].copy_from_slice(&[true; SIZE]);
    }
}

/// Split: output i holds the input's elements whose axis coordinate lies in
/// [sum of the previous outputs' axis sizes, that + its own axis size).
fn split<const SIZE: usize>(
    input_layout: &Layout,
    axis: usize,
    input: &[u8],
    outputs: &mut [Output],
) {
    let mut axis_start: u32 = 0;
    for output in outputs.iter_mut() {
        let mut walk = Walk::new(&output.layout.sizes);
        while let Some(output_coordinates) = walk.advance() {
            let mut input_coordinates = output_coordinates;
            input_coordinates[axis] += axis_start;
            copy_element::<SIZE>(
                input_layout,
                input,
                &input_coordinates,
                output,
                &output_coordinates,
            );
        }
        axis_start += output.layout.sizes[axis];
    }
}

/// Join: input i lands at [sum of the previous inputs' axis sizes, ...) on the axis.
fn join<const SIZE: usize>(
    input_layouts: &[Layout],
    axis: usize,
    inputs: &[&[u8]],
    output: &mut Output,
) {
    let mut axis_start: u32 = 0;
    for (input_layout, input) in input_layouts.iter().zip(inputs) {
        let mut walk = Walk::new(&input_layout.sizes);
        while let Some(input_coordinates) = walk.advance() {
            let mut output_coordinates = input_coordinates;
            output_coordinates[axis] += axis_start;
            copy_element::<SIZE>(
                input_layout,
                input,
                &input_coordinates,
                output,
                &output_coordinates,
            );
        }
        axis_start += input_layout.sizes[axis];
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
fn slice1<const SIZE: usize>(
    desc: &Slice1Desc,
    input_layout: &Layout,
    input: &[u8],
    output: &mut Output,
) {
    let dimension_count = desc.dimension_count as usize;
    let mut copy_start: Dims<i64> = [0; MAX_DIMENSIONS];
    let mut window_strides: Dims<i64> = [0; MAX_DIMENSIONS];
    for i in 0..dimension_count {
        copy_start[i] = i64::from(desc.input_window_offsets[i]);
        window_strides[i] = i64::from(desc.input_window_strides[i]);
        if desc.input_window_strides[i] < 0 {
            copy_start[i] += i64::from(desc.input_window_sizes[i]) - 1;
        }
    }
    let mut walk = Walk::new(&output.layout.sizes);
    while let Some(output_coordinates) = walk.advance() {
        let mut input_coordinates: Dims<u32> = [0; MAX_DIMENSIONS];
        for i in 0..dimension_count {
            let coordinate = copy_start[i] + window_strides[i] * i64::from(output_coordinates[i]);
            // Validation keeps every coordinate inside the window, so this never fails.
            let Ok(coordinate) = u32::try_from(coordinate) else {
                return;
            };
            input_coordinates[i] = coordinate;
        }
        copy_element::<SIZE>(
            input_layout,
            input,
            &input_coordinates,
            output,
            &output_coordinates,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_addressed_bytes_are_written_into_a_target() {
        let output = OracleOutput {
            bytes: vec![1, 2, 3, 4],
            addressed: vec![true, false, true, false],
        };
        let mut target = [9u8; 4];
        output.write_addressed_into(&mut target);
        assert_eq!(target, [1, 9, 3, 9]);
        let mut shorter = [9u8; 3];
        output.write_addressed_into(&mut shorter);
        assert_eq!(shorter, [1, 9, 3]);
    }
}
