//! What the adapter's limits allow: the largest buffer a binding reaches, and the room the
//! harness's guard bands take around an output.

use crate::device::Gpu;

/// Bytes of guard band the harness puts around an output, with room to spare.
pub(crate) const GUARD_ALLOWANCE: u64 = 1024;
/// The kernel addresses bytes with u32: buffers stay below 4 GiB.
const MAX_ADDRESSABLE: u64 = (1 << 32) - 256;

impl Gpu {
    pub(crate) fn limit_bytes(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
            .min(MAX_ADDRESSABLE)
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
