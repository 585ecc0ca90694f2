//! Execute: the inputs and whole output buffers staged on the GPU, the compiled operator
//! bound and dispatched between the copies in and out, one submission waited for, and the
//! outputs read back into the harness's guarded buffers.

use super::bindings::{
    binding, describe, padded, release_barriers, release_bindings, transition, uav_barrier,
};
use super::compile::CompiledDml;
use super::device::Device;
use super::hresult_text;
use super::transfer::{Staged, read_back, stage, transfer_buffers};
use dmlcts_tensor::{CompiledOperator, OutputBinding};
use windows::Win32::AI::MachineLearning::DirectML::*;
use windows::Win32::Graphics::Direct3D12::*;
use windows::core::Interface;

impl CompiledOperator for CompiledDml<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let mut device = self
            .backend
            .device
            .lock()
            .map_err(|_| "the device lock is poisoned".to_string())?;
        let (upload, readback) = transfer_buffers(&device, inputs, outputs)?;
        let staged = stage(&device, &upload, inputs, outputs)?;
        self.dispatch(
            &mut device,
            &upload,
            &readback,
            &staged,
            inputs.len(),
            outputs,
        )?;
        read_back(&readback, outputs)
    }
}

impl CompiledDml<'_> {
    /// Records the copies into the staged resources, the dispatch with its bindings (the
    /// first `input_count` staged resources are the inputs, the rest the outputs), and the
    /// copies of the outputs into the readback buffer; submits and waits.
    fn dispatch(
        &self,
        device: &mut Device,
        upload: &ID3D12Resource,
        readback: &ID3D12Resource,
        staged: &[Staged],
        input_count: usize,
        outputs: &[OutputBinding<'_>],
    ) -> Result<(), String> {
        let uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
        let temporary = if self.temporary > 0 {
            Some(device.buffer(
                D3D12_HEAP_TYPE_DEFAULT,
                self.temporary,
                uav,
                D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
            )?)
        } else {
            None
        };
        let dispatchable: IDMLDispatchable = self.compiled.cast().map_err(|e| hresult_text(&e))?;
        let table = device.binding_table(&dispatchable, self.descriptors)?;
        let input_bindings: Vec<DML_BUFFER_BINDING> = staged[..input_count]
            .iter()
            .map(|(r, _, n)| binding(r, 0, *n))
            .collect();
        let output_bindings: Vec<DML_BUFFER_BINDING> = staged[input_count..]
            .iter()
            .zip(outputs.iter())
            .map(|((r, _, _), o)| binding(r, o.offset as u64, o.size as u64))
            .collect();
        let input_descs: Vec<DML_BINDING_DESC> = input_bindings.iter().map(describe).collect();
        let output_descs: Vec<DML_BINDING_DESC> = output_bindings.iter().map(describe).collect();
        let temporary_binding = temporary.as_ref().map(|t| binding(t, 0, self.temporary));
        let persistent_binding = self.persistent.as_ref().map(|(p, n)| binding(p, 0, *n));
        let mut barriers = Vec::new();
        let mut after = Vec::new();
        // SAFETY: every resource, binding and descriptor referenced below lives until the
        // submission has completed (submit_and_wait returns after the fence).
        let result = unsafe {
            for (resource, offset, bytes) in staged {
                device
                    .list
                    .CopyBufferRegion(resource, 0, upload, *offset, *bytes);
                barriers.push(transition(
                    resource,
                    D3D12_RESOURCE_STATE_COPY_DEST,
                    D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                ));
            }
            device.list.ResourceBarrier(&barriers);
            table.BindInputs(Some(&input_descs));
            table.BindOutputs(Some(&output_descs));
            if let Some(t) = &temporary_binding {
                table.BindTemporaryResource(Some(&describe(t)));
            }
            if let Some(p) = &persistent_binding {
                table.BindPersistentResource(Some(&describe(p)));
            }
            device.list.SetDescriptorHeaps(&[Some(device.heap.clone())]);
            device
                .recorder
                .RecordDispatch(&device.list, &dispatchable, &table);
            device.list.ResourceBarrier(&[uav_barrier()]);
            let mut read_offset = 0u64;
            for (resource, _, _) in &staged[input_count..] {
                after.push(transition(
                    resource,
                    D3D12_RESOURCE_STATE_UNORDERED_ACCESS,
                    D3D12_RESOURCE_STATE_COPY_SOURCE,
                ));
            }
            device.list.ResourceBarrier(&after);
            for (resource, _, bytes) in &staged[input_count..] {
                device
                    .list
                    .CopyBufferRegion(readback, read_offset, resource, 0, *bytes);
                read_offset += padded(*bytes);
            }
            device.submit_and_wait()
        };
        release_barriers(barriers);
        release_barriers(after);
        release_bindings(input_bindings);
        release_bindings(output_bindings);
        release_bindings(
            temporary_binding
                .into_iter()
                .chain(persistent_binding)
                .collect(),
        );
        result
    }
}
