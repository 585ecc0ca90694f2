//! A descriptor as a tract model: sources typed with each input's data type and sizes, the
//! operator, and the outputs. What tract refuses while the model is wired (its shape
//! inference) is a rejection; an output whose type or shape tract infers differently from
//! the descriptor is a rejection too (data movement converts nothing and reshapes nothing).

use dmlcts_tensor::{CompileError, DataType, OperatorDesc, Rejected, Slice1Desc, TensorDesc};
use std::sync::Arc;
use tract_core::internal::*;
use tract_core::ops::array::{Slice, StridedSlice, TypedConcat};

/// The data type as tract's own: tract has all eleven, so no stand-in type is ever needed.
pub fn datum_type(data_type: DataType) -> DatumType {
    match data_type {
        DataType::Float64 => DatumType::F64,
        DataType::Float32 => DatumType::F32,
        DataType::Float16 => DatumType::F16,
        DataType::Int64 => DatumType::I64,
        DataType::Int32 => DatumType::I32,
        DataType::Int16 => DatumType::I16,
        DataType::Int8 => DatumType::I8,
        DataType::Uint64 => DatumType::U64,
        DataType::Uint32 => DatumType::U32,
        DataType::Uint16 => DatumType::U16,
        DataType::Uint8 => DatumType::U8,
    }
}

pub fn shape(desc: &TensorDesc) -> Vec<usize> {
    desc.sizes.iter().map(|&s| s as usize).collect()
}

fn unsupported(reason: String) -> CompileError {
    CompileError::Unsupported(reason)
}

fn rejected(message: String) -> CompileError {
    CompileError::Rejected(Rejected {
        rule: None,
        message,
    })
}

/// Builds, checks and optimizes the model for `op`.
pub fn build(op: &OperatorDesc) -> Result<Arc<TypedRunnableModel>, CompileError> {
    check_axes(op)?;
    let mut model = TypedModel::default();
    let mut sources = TVec::new();
    for (i, (_, desc)) in op.inputs().iter().enumerate() {
        let fact = TypedFact::dt_shape(datum_type(desc.data_type), shape(desc));
        let source = model
            .add_source(format!("input{i}"), fact)
            .map_err(|e| rejected(format!("tract refuses input {i}: {e:#}")))?;
        sources.push(source);
    }
    let outlets = match op {
        OperatorDesc::Split(d) => {
            wire_split(&mut model, sources[0], d.axis as usize, &d.output_tensors)
        }
        OperatorDesc::Join(d) => {
            model.wire_node("join", TypedConcat::new(d.axis as usize), &sources)
        }
        OperatorDesc::Slice1(d) => wire_slice1(&mut model, sources[0], d),
    }
    .map_err(|e| rejected(format!("tract refuses the model: {e:#}")))?;
    for (i, ((name, desc), outlet)) in op.outputs().iter().zip(&outlets).enumerate() {
        let fact = model
            .outlet_fact(*outlet)
            .map_err(|e| rejected(format!("tract has no type for output {i}: {e:#}")))?;
        let want = datum_type(desc.data_type);
        let concrete = fact.shape.as_concrete();
        if fact.datum_type != want || concrete != Some(shape(desc).as_slice()) {
            return Err(rejected(format!(
                "tract's output {i} is {:?} {:?}; {name} is {want:?} {:?}",
                fact.datum_type, fact.shape, desc.sizes
            )));
        }
    }
    model
        .select_output_outlets(&outlets)
        .and_then(|()| model.into_optimized())
        .and_then(|m| m.into_runnable())
        .map_err(|e| {
            CompileError::Failed(format!(
                "tract could not optimize a model it accepted: {e:#}"
            ))
        })
}

/// tract-core's Slice and Concat index their input's axes unchecked (its ONNX and TensorFlow
/// front ends check the axis first; tract-core panics on an axis beyond the rank), and the
/// Slice1 mapping needs one window and one output size per dimension: a descriptor without
/// them cannot be given to tract at all.
fn check_axes(op: &OperatorDesc) -> Result<(), CompileError> {
    match op {
        OperatorDesc::Split(d) => {
            let ranks: Vec<usize> = std::iter::once(&d.input_tensor)
                .chain(&d.output_tensors)
                .map(|t| t.sizes.len())
                .collect();
            if ranks.iter().any(|&rank| d.axis as usize >= rank) {
                return Err(unsupported(format!(
                    "axis {} with tensors of {ranks:?} dimensions: tract-core's Slice takes an \
                     axis the input has, and the adapter takes each output's extent on it",
                    d.axis
                )));
            }
        }
        OperatorDesc::Join(d) => {
            // Inputs of different ranks: tract's Concat refuses them itself.
            let ranks: Vec<usize> = d.input_tensors.iter().map(|t| t.sizes.len()).collect();
            if ranks.iter().all(|&rank| rank == ranks[0])
                && ranks.iter().any(|&rank| d.axis as usize >= rank)
            {
                return Err(unsupported(format!(
                    "axis {} with inputs of {} dimensions: tract-core's Concat takes an axis \
                     the inputs have",
                    d.axis, ranks[0]
                )));
            }
        }
        OperatorDesc::Slice1(d) => {
            let n = d.dimension_count as usize;
            let arrays = [
                d.input_window_offsets.len(),
                d.input_window_sizes.len(),
                d.input_window_strides.len(),
            ];
            if arrays.iter().any(|&len| len != n) || d.output_tensor.sizes.len() < n || n > 63 {
                return Err(unsupported(format!(
                    "DimensionCount {n} with {} offsets, {} sizes, {} strides and an output of {} \
                     dimensions: the adapter needs one window and one output size per dimension \
                     (at most 63: tract's end mask is an i64) to give tract a begin, an end and \
                     a step per axis",
                    arrays[0],
                    arrays[1],
                    arrays[2],
                    d.output_tensor.sizes.len()
                )));
            }
        }
    }
    Ok(())
}

/// Split: output i is the input's slice [start, start + size) on the axis, where start is the
/// sum of the previous outputs' sizes on the axis.
fn wire_split(
    model: &mut TypedModel,
    input: OutletId,
    axis: usize,
    outputs: &[TensorDesc],
) -> TractResult<TVec<OutletId>> {
    let mut start = 0usize;
    let mut outlets = TVec::new();
    for (i, desc) in outputs.iter().enumerate() {
        let end = start + desc.sizes[axis] as usize;
        outlets
            .push(model.wire_node(format!("split{i}"), Slice::new(axis, start, end), &[input])?[0]);
        start = end;
    }
    Ok(outlets)
}

/// Slice1 as a strided slice (ONNX Slice's begin, end and step per axis). Output coordinate
/// o of dimension i reads the input at CopyStart + o * stride, where CopyStart is the window's
/// offset, or its last element when the stride is negative. The end is where the output's
/// size stops the walk, but never past the window, so tract's own shape inference gives the
/// output's size (the output may be smaller than the window: a window of 5 with stride 2 and
/// an output of 2 reads elements 0 and 2, and ends at 3).
fn wire_slice1(
    model: &mut TypedModel,
    input: OutletId,
    d: &Slice1Desc,
) -> TractResult<TVec<OutletId>> {
    let n = d.dimension_count as usize;
    let (mut begins, mut ends, mut steps) = (Vec::new(), Vec::new(), Vec::new());
    let mut end_mask = 0i64;
    for i in 0..n {
        let offset = i64::from(d.input_window_offsets[i]);
        let size = i64::from(d.input_window_sizes[i]);
        let stride = i64::from(d.input_window_strides[i]);
        let count = i64::from(d.output_tensor.sizes[i]);
        if stride >= 0 {
            begins.push(offset);
            ends.push((offset + (count - 1) * stride + 1).min(offset + size));
        } else {
            let begin = offset + size - 1;
            let end = (begin + (count - 1) * stride - 1).max(offset - 1);
            begins.push(begin);
            ends.push(end);
            if end < 0 {
                // Past element 0 going backwards: a negative end would count from the back.
                end_mask |= 1 << i;
            }
        }
        steps.push(d.input_window_strides[i]);
    }
    let begin = model.add_const("begin", tensor1(&begins))?;
    let end = model.add_const("end", tensor1(&ends))?;
    let step = model.add_const("step", tensor1(&steps))?;
    let op = StridedSlice {
        optional_axes_input: None,
        optional_steps_input: Some(3),
        begin_mask: 0,
        end_mask,
        shrink_axis_mask: 0,
    };
    model.wire_node("slice1", op, &[input, begin, end, step])
}
