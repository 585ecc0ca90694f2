//! Tensor descriptors as DirectML takes them: a DML_BUFFER_TENSOR_DESC with the storage its
//! pointers point into, and the descriptors its C API cannot express at all.

use dmlcts_tensor::{OperatorDesc, TensorDesc};
use std::ffi::c_void;
use windows::Win32::AI::MachineLearning::DirectML::*;

/// A tensor description with the storage its pointers point into.
pub(super) struct DmlTensor {
    sizes: Vec<u32>,
    strides: Option<Vec<u32>>,
    buffer: DML_BUFFER_TENSOR_DESC,
}

impl DmlTensor {
    pub(super) fn new(desc: &TensorDesc) -> Box<DmlTensor> {
        let mut t = Box::new(DmlTensor {
            sizes: desc.sizes.clone(),
            strides: desc.strides.clone(),
            buffer: DML_BUFFER_TENSOR_DESC {
                DataType: DML_TENSOR_DATA_TYPE(desc.data_type as i32),
                Flags: DML_TENSOR_FLAG_NONE,
                DimensionCount: desc.sizes.len() as u32,
                Sizes: std::ptr::null(),
                Strides: std::ptr::null(),
                TotalTensorSizeInBytes: desc.total_tensor_size_in_bytes,
                GuaranteedBaseOffsetAlignment: 0,
            },
        });
        t.buffer.Sizes = t.sizes.as_ptr();
        t.buffer.Strides = t.strides.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
        t
    }

    /// A DML_TENSOR_DESC pointing at this tensor's buffer description (valid while `self` is).
    pub(super) fn desc(&self) -> DML_TENSOR_DESC {
        DML_TENSOR_DESC {
            Type: DML_TENSOR_TYPE_BUFFER,
            Desc: &self.buffer as *const _ as *const c_void,
        }
    }
}

/// Descriptors DirectML's C API cannot express: its arrays are DimensionCount long by
/// definition, so arrays of another length cannot be passed without DirectML reading past
/// them. Such cases are reported as unsupported (skipped with this reason), never as a
/// DirectML verdict.
pub(super) fn inexpressible(op: &OperatorDesc) -> Option<String> {
    let strides_mismatch = op
        .inputs()
        .into_iter()
        .chain(op.outputs())
        .find(|(_, t)| t.strides.as_ref().is_some_and(|s| s.len() != t.sizes.len()));
    if let Some((name, _)) = strides_mismatch {
        return Some(format!(
            "{name}: a Strides array that is not DimensionCount long cannot be expressed in DML_BUFFER_TENSOR_DESC"
        ));
    }
    if let OperatorDesc::Slice1(d) = op {
        let n = d.dimension_count as usize;
        if d.input_window_offsets.len() != n
            || d.input_window_sizes.len() != n
            || d.input_window_strides.len() != n
        {
            return Some(
                "window arrays that are not DimensionCount long cannot be expressed in DML_SLICE1_OPERATOR_DESC"
                    .to_string(),
            );
        }
    }
    None
}
