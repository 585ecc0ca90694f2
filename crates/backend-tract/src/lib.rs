//! DML_SPLIT, DML_JOIN and DML_SLICE1 run by [tract](https://github.com/sonos/tract)
//! (`tract-core`, pinned in the workspace's Cargo.toml), in process: an implementation that
//! dmlcts did not write, judged by the same corpus and fuzzer as every other backend.
//!
//! # Why tract
//!
//! Of the three Rust frameworks the issue names, tract's data-movement operators are the
//! richest, and they are the ones the ONNX and TensorFlow front ends lower to:
//!
//! - strided slicing: `StridedSlice` takes a begin, an end and a signed step per axis (ONNX
//!   Slice and TensorFlow's strided_slice, with begin/end masks and clamping), and declutters
//!   into `Slice` (one axis, a start and an end) and `Downsample` (a step, negative steps
//!   walking backwards). candle has `narrow` (no step) and `flip` (a gather by
//!   `index_select`); burn's `slice` takes steps, but its CPU backend (burn-ndarray 0.22) is
//!   deprecated and stores no 16-bit floats;
//! - concatenation: `TypedConcat` (ONNX Concat), any number of inputs;
//! - split: tract-core has no split operator of its own; a split is one `Slice` per output
//!   from the same input, which is what this adapter wires;
//! - data types: tract's `DatumType` has all eleven that the three operators list (U8 to U64,
//!   I8 to I64, F16, F32, F64), so every case runs in its own type: no stand-in unsigned type
//!   is needed (candle 0.11 lacks UINT16, INT8 and UINT64);
//! - build cost: `tract-core` with default features off (nothing for a GPU or BLAS) takes,
//!   with its dependencies from scratch on one core of the 2-core machine, 1 min 20 s of CPU
//!   for a dev build and 4 min 56 s for a release build (docs/guide/backends.md, tract).
//!
//! # What the adapter does
//!
//! `compile` builds a tract `TypedModel` from the descriptor (sources typed with each input's
//! data type and sizes, the operator, the outputs), lets tract infer every output's type and
//! shape, compares them with the descriptor's outputs, and optimizes the model (tract's
//! declutter and codegen passes: what a tract user runs). `execute` gathers each strided
//! input into a packed tract tensor, runs the model, and scatters each packed output into its
//! strided output buffer ([`glue`]). Only bytes move in the glue: tract's tensors hold the
//! elements in their own types.
//!
//! Validation is tract's: what it refuses while the model is wired is a rejection; DirectML's
//! rules (strides, TotalTensorSizeInBytes, sizes summing up, windows inside the input) are
//! not enforced here, so this backend declares the `values-only` profile. What the adapter
//! cannot express to tract at all is `Unsupported` with the reason.

mod glue;
mod model;

use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    TensorDesc, ValidationProfile,
};
use std::sync::Arc;
use tract_core::prelude::{TVec, TypedRunnableModel};

/// The tract-core version this adapter is built with (pinned in the workspace's Cargo.toml;
/// a test checks Cargo.lock agrees).
pub const TRACT_VERSION: &str = "0.23.9";

/// tract as a backend. It has no feature levels of its own: it claims 4_1, the tables'
/// highest row (every data type, 1 to 8 dimensions).
pub struct TractBackend {
    level: FeatureLevel,
}

impl TractBackend {
    pub fn new() -> TractBackend {
        TractBackend {
            level: FeatureLevel::L4_1,
        }
    }
}

impl Default for TractBackend {
    fn default() -> TractBackend {
        TractBackend::new()
    }
}

struct CompiledTract {
    plan: Arc<TypedRunnableModel>,
    inputs: Vec<TensorDesc>,
    outputs: Vec<TensorDesc>,
}

impl CompiledOperator for CompiledTract {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        if inputs.len() != self.inputs.len() || outputs.len() != self.outputs.len() {
            return Err(format!(
                "{} input and {} output bindings for {} inputs and {} outputs",
                inputs.len(),
                outputs.len(),
                self.inputs.len(),
                self.outputs.len()
            ));
        }
        let mut values = TVec::new();
        for (i, (desc, bytes)) in self.inputs.iter().zip(inputs).enumerate() {
            let tensor = glue::gather(desc, bytes).map_err(|e| format!("input {i}: {e}"))?;
            values.push(tensor.into());
        }
        let results = self
            .plan
            .run(values)
            .map_err(|e| format!("tract failed to run the model: {e:#}"))?;
        if results.len() != outputs.len() {
            return Err(format!(
                "tract returned {} outputs for {}",
                results.len(),
                outputs.len()
            ));
        }
        for (i, ((desc, binding), value)) in self
            .outputs
            .iter()
            .zip(outputs.iter_mut())
            .zip(&results)
            .enumerate()
        {
            glue::scatter(value, desc, binding.bytes_mut())
                .map_err(|e| format!("output {i}: {e}"))?;
        }
        Ok(())
    }
}

impl Backend for TractBackend {
    fn name(&self) -> String {
        "tract".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn data_types(&self) -> Vec<DataType> {
        DataType::ALL.to_vec()
    }

    fn device(&self) -> String {
        format!("tract-core version {TRACT_VERSION} on the CPU, in process (an optimized model)")
    }

    /// tract checks shapes by its own rules (Concat's inputs agree off the axis, a slice's
    /// output shape is what its begin, end and step give); DirectML's rules on strides,
    /// TotalTensorSizeInBytes, output counts and window bounds are not tract's to enforce.
    fn validation_profile(&self) -> ValidationProfile {
        ValidationProfile::ValuesOnly
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        // tract takes every input as a dense tensor of its logical shape: a broadcast input
        // of billions of elements (the corpus's size edges) would be gathered into gigabytes.
        for (name, desc) in op.inputs() {
            let bytes = desc.element_count() * desc.data_type.element_size() as u128;
            if bytes > MAX_DENSE_INPUT_BYTES {
                return Err(CompileError::Unsupported(format!(
                    "{name} is given to tract dense: {bytes} bytes, more than this backend \
                     gathers ({MAX_DENSE_INPUT_BYTES} bytes)"
                )));
            }
        }
        let plan = model::build(op)?;
        Ok(Box::new(CompiledTract {
            plan,
            inputs: op.inputs().into_iter().map(|(_, d)| d.clone()).collect(),
            outputs: op.outputs().into_iter().map(|(_, d)| d.clone()).collect(),
        }))
    }
}

/// The largest dense input this backend gathers for tract: 1 GiB.
const MAX_DENSE_INPUT_BYTES: u128 = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_tract_version_is_the_one_in_cargo_lock() {
        let lock = include_str!("../../../Cargo.lock");
        let entry = format!("name = \"tract-core\"\nversion = \"{TRACT_VERSION}\"");
        assert!(lock.contains(&entry), "Cargo.lock has no {entry:?}");
    }
}
