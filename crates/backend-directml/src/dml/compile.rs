//! Compile: a descriptor becomes DirectML tensor and operator descriptions, DirectML creates
//! and compiles the operator (E_INVALIDARG is its rejection), and the operator initializer
//! runs once, leaving what execution needs.

use super::bindings::{binding, describe, release_bindings};
use super::device::HEAP_DESCRIPTORS;
use super::tensor::{DmlTensor, inexpressible};
use super::{DirectMlBackend, hresult_text};
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, Rejected,
};
use std::ffi::c_void;
use windows::Win32::AI::MachineLearning::DirectML::*;
use windows::Win32::Foundation::E_INVALIDARG;
use windows::Win32::Graphics::Direct3D12::*;
use windows::core::Interface;

pub(super) struct CompiledDml<'a> {
    pub(super) backend: &'a DirectMlBackend,
    pub(super) compiled: IDMLCompiledOperator,
    pub(super) persistent: Option<(ID3D12Resource, u64)>,
    pub(super) descriptors: u32,
    pub(super) temporary: u64,
}

// SAFETY: see Device; the compiled operator is only used under the backend's device lock.
unsafe impl Send for CompiledDml<'_> {}

impl Backend for DirectMlBackend {
    fn name(&self) -> String {
        "directml".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn data_types(&self) -> Vec<DataType> {
        self.data_types.clone()
    }

    fn device(&self) -> String {
        self.description.clone()
    }

    fn implementation(&self) -> dmlcts_tensor::Implementation {
        self.implementation.clone()
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        if let Some(reason) = inexpressible(op) {
            return Err(CompileError::Unsupported(reason));
        }
        let tensors_in: Vec<Box<DmlTensor>> =
            op.inputs().iter().map(|(_, t)| DmlTensor::new(t)).collect();
        let tensors_out: Vec<Box<DmlTensor>> = op
            .outputs()
            .iter()
            .map(|(_, t)| DmlTensor::new(t))
            .collect();
        let descs_in: Vec<DML_TENSOR_DESC> = tensors_in.iter().map(|t| t.desc()).collect();
        let descs_out: Vec<DML_TENSOR_DESC> = tensors_out.iter().map(|t| t.desc()).collect();
        let split;
        let join;
        let slice;
        let desc = match op {
            OperatorDesc::Split(d) => {
                split = DML_SPLIT_OPERATOR_DESC {
                    InputTensor: &descs_in[0],
                    OutputCount: descs_out.len() as u32,
                    OutputTensors: descs_out.as_ptr(),
                    Axis: d.axis,
                };
                DML_OPERATOR_DESC {
                    Type: DML_OPERATOR_SPLIT,
                    Desc: &split as *const _ as *const c_void,
                }
            }
            OperatorDesc::Join(d) => {
                join = DML_JOIN_OPERATOR_DESC {
                    InputCount: descs_in.len() as u32,
                    InputTensors: descs_in.as_ptr(),
                    OutputTensor: &descs_out[0],
                    Axis: d.axis,
                };
                DML_OPERATOR_DESC {
                    Type: DML_OPERATOR_JOIN,
                    Desc: &join as *const _ as *const c_void,
                }
            }
            OperatorDesc::Slice1(d) => {
                slice = DML_SLICE1_OPERATOR_DESC {
                    InputTensor: &descs_in[0],
                    OutputTensor: &descs_out[0],
                    DimensionCount: d.dimension_count,
                    InputWindowOffsets: d.input_window_offsets.as_ptr(),
                    InputWindowSizes: d.input_window_sizes.as_ptr(),
                    InputWindowStrides: d.input_window_strides.as_ptr(),
                };
                DML_OPERATOR_DESC {
                    Type: DML_OPERATOR_SLICE1,
                    Desc: &slice as *const _ as *const c_void,
                }
            }
        };
        let device = self
            .device
            .lock()
            .map_err(|_| CompileError::Failed("the device lock is poisoned".into()))?;
        let verdict = |e: windows::core::Error, what: &str| {
            if e.code() == E_INVALIDARG {
                CompileError::Rejected(Rejected {
                    rule: None,
                    message: format!("{what}: {}", hresult_text(&e)),
                })
            } else {
                CompileError::Failed(format!("{what}: {}", hresult_text(&e)))
            }
        };
        let mut operator: Option<IDMLOperator> = None;
        // SAFETY: desc and everything it points to (tensor descriptions, arrays) live until
        // the end of this function; DirectML copies what it keeps.
        unsafe { device.dml.CreateOperator(&desc, &mut operator) }
            .map_err(|e| verdict(e, "CreateOperator"))?;
        let operator = operator
            .ok_or_else(|| CompileError::Failed("CreateOperator returned nothing".into()))?;
        let mut compiled: Option<IDMLCompiledOperator> = None;
        // SAFETY: operator is a live DirectML operator of this device.
        unsafe {
            device
                .dml
                .CompileOperator(&operator, DML_EXECUTION_FLAG_NONE, &mut compiled)
        }
        .map_err(|e| verdict(e, "CompileOperator"))?;
        let compiled = compiled
            .ok_or_else(|| CompileError::Failed("CompileOperator returned nothing".into()))?;
        drop(device);
        self.initialize(compiled)
            .map_err(CompileError::Failed)
            .map(|c| Box::new(c) as Box<dyn CompiledOperator + '_>)
    }
}

impl DirectMlBackend {
    /// Runs the operator initializer once and keeps what execution needs.
    fn initialize(&self, compiled: IDMLCompiledOperator) -> Result<CompiledDml<'_>, String> {
        let mut device = self
            .device
            .lock()
            .map_err(|_| "the device lock is poisoned".to_string())?;
        // SAFETY: compiled is a live compiled operator of this device.
        let initializer: IDMLOperatorInitializer = unsafe {
            device
                .dml
                .CreateOperatorInitializer(Some(&[Some(compiled.clone())]))
        }
        .map_err(|e| format!("CreateOperatorInitializer: {}", hresult_text(&e)))?;
        // SAFETY: both are live DirectML dispatchables.
        let (init_props, exec_props) = unsafe {
            (
                initializer.GetBindingProperties(),
                compiled.GetBindingProperties(),
            )
        };
        let descriptors = init_props
            .RequiredDescriptorCount
            .max(exec_props.RequiredDescriptorCount)
            .max(1);
        if descriptors > HEAP_DESCRIPTORS {
            return Err(format!(
                "the operator needs {descriptors} descriptors; the heap has {HEAP_DESCRIPTORS}"
            ));
        }
        let uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
        let persistent = if exec_props.PersistentResourceSize > 0 {
            Some((
                device.buffer(
                    D3D12_HEAP_TYPE_DEFAULT,
                    exec_props.PersistentResourceSize,
                    uav,
                    D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                )?,
                exec_props.PersistentResourceSize,
            ))
        } else {
            None
        };
        let temporary_size = init_props.TemporaryResourceSize;
        let temporary = if temporary_size > 0 {
            Some(device.buffer(
                D3D12_HEAP_TYPE_DEFAULT,
                temporary_size,
                uav,
                D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
            )?)
        } else {
            None
        };
        let dispatchable: IDMLDispatchable = initializer.cast().map_err(|e| hresult_text(&e))?;
        let table = device.binding_table(&dispatchable, descriptors)?;
        let temporary_binding = temporary.as_ref().map(|t| binding(t, 0, temporary_size));
        let persistent_binding = persistent.as_ref().map(|(p, n)| binding(p, 0, *n));
        // SAFETY: the bindings and resources live until the submission has completed.
        let result = unsafe {
            if let Some(t) = &temporary_binding {
                table.BindTemporaryResource(Some(&describe(t)));
            }
            if let Some(p) = &persistent_binding {
                table.BindOutputs(Some(&[describe(p)]));
            }
            device.list.SetDescriptorHeaps(&[Some(device.heap.clone())]);
            device
                .recorder
                .RecordDispatch(&device.list, &dispatchable, &table);
            device.submit_and_wait()
        };
        release_bindings(
            temporary_binding
                .into_iter()
                .chain(persistent_binding)
                .collect(),
        );
        result?;
        Ok(CompiledDml {
            backend: self,
            compiled,
            persistent,
            descriptors,
            temporary: exec_props.TemporaryResourceSize,
        })
    }
}
