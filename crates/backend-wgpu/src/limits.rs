//! What the adapter's limits allow: the largest buffer a binding reaches, and `compile`'s
//! check that every tensor (an output with room for its guard bands) fits under it.

use crate::device::Gpu;
use crate::plan::padded;
use dmlcts_tensor::{CompileError, OperatorDesc};

/// Bytes of guard band the harness puts around an output, with room to spare.
const GUARD_ALLOWANCE: u64 = 1024;
/// The kernel addresses bytes with u32: buffers stay below 4 GiB.
const MAX_ADDRESSABLE: u64 = (1 << 32) - 256;

impl Gpu {
    pub(crate) fn limit_bytes(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
            .min(MAX_ADDRESSABLE)
    }

    /// Unsupported when a tensor of `op` (an output with room for its guard bands) needs a
    /// buffer larger than a binding can reach.
    pub(crate) fn check_binding_limit(&self, op: &OperatorDesc) -> Result<(), CompileError> {
        let limit = self.limit_bytes();
        let largest = op
            .inputs()
            .iter()
            .map(|(_, d)| d.total_tensor_size_in_bytes)
            .chain(
                op.outputs()
                    .iter()
                    .map(|(_, d)| d.total_tensor_size_in_bytes + GUARD_ALLOWANCE),
            )
            .max()
            .unwrap_or(0);
        if padded(largest) > limit {
            return Err(CompileError::Unsupported(format!(
                "a {largest}-byte buffer is over the adapter's storage binding limit of {limit} bytes"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{WgpuBackend, WgpuOptions};
    use dmlcts_tensor::{Backend, CompileError, DataType, JoinDesc, OperatorDesc, TensorDesc};

    #[test]
    fn a_case_larger_than_the_adapter_allows_is_unsupported_not_failed() {
        let backend = WgpuBackend::new(WgpuOptions::default());
        if let Some(reason) = backend.unavailable_reason() {
            // Without an adapter there are no limits to test; CI has one (lavapipe).
            assert!(
                std::env::var_os("DMLCTS_REQUIRE_WGPU_ADAPTER").is_none(),
                "{reason}"
            );
            return;
        }
        // Valid: 2^30 FLOAT32 elements declare a 4 GiB output, past any storage binding.
        let part = TensorDesc::packed(DataType::Float32, &[1 << 29]);
        let op = OperatorDesc::Join(JoinDesc {
            input_tensors: vec![part.clone(), part],
            output_tensor: TensorDesc::packed(DataType::Float32, &[1 << 30]),
            axis: 0,
        });
        match backend.compile(&op) {
            Err(CompileError::Unsupported(reason)) => {
                assert!(reason.contains("storage binding limit"), "{reason}")
            }
            Err(other) => panic!("expected unsupported, got {other}"),
            Ok(_) => panic!("expected unsupported, got accepted"),
        }
    }
}
