//! The copies in and out of the GPU: the upload buffer that carries every input and whole
//! guarded output buffer, the resource each is staged in, and the readback of the outputs.

use super::bindings::padded;
use super::device::Device;
use super::hresult_text;
use dmlcts_tensor::OutputBinding;
use std::ffi::c_void;
use windows::Win32::Graphics::Direct3D12::*;

/// A staged input or whole output buffer: its resource, its offset in the upload buffer, and
/// its length in bytes.
pub(super) type Staged = (ID3D12Resource, u64, u64);

/// The upload buffer (a padded slot for each input and whole output buffer) and the readback
/// buffer (a padded slot for each output buffer).
pub(super) fn transfer_buffers(
    device: &Device,
    inputs: &[&[u8]],
    outputs: &[OutputBinding<'_>],
) -> Result<(ID3D12Resource, ID3D12Resource), String> {
    // Inputs and whole guarded output buffers, each in its own resource: nothing aliases.
    let upload_size: u64 = inputs.iter().map(|i| padded(i.len() as u64)).sum::<u64>()
        + outputs
            .iter()
            .map(|o| padded(o.buffer.len() as u64))
            .sum::<u64>();
    let upload = device.buffer(
        D3D12_HEAP_TYPE_UPLOAD,
        upload_size,
        D3D12_RESOURCE_FLAG_NONE,
        D3D12_RESOURCE_STATE_GENERIC_READ,
    )?;
    let readback_size: u64 = outputs.iter().map(|o| padded(o.buffer.len() as u64)).sum();
    let readback = device.buffer(
        D3D12_HEAP_TYPE_READBACK,
        readback_size,
        D3D12_RESOURCE_FLAG_NONE,
        D3D12_RESOURCE_STATE_COPY_DEST,
    )?;
    Ok((upload, readback))
}

/// Writes each input, then each whole output buffer, into its slot of the upload buffer, and
/// creates the resource it is copied into on the GPU: inputs first, in order.
pub(super) fn stage(
    device: &Device,
    upload: &ID3D12Resource,
    inputs: &[&[u8]],
    outputs: &[OutputBinding<'_>],
) -> Result<Vec<Staged>, String> {
    let uav = D3D12_RESOURCE_FLAG_ALLOW_UNORDERED_ACCESS;
    let mut staged: Vec<Staged> = Vec::new(); // (resource, upload offset, bytes)
    let mut cursor = 0u64;
    let mut mapped: *mut c_void = std::ptr::null_mut();
    // SAFETY: the upload buffer is CPU-visible and upload_size bytes long (transfer_buffers:
    // a padded slot for each of these inputs and outputs); each copy stays inside its padded
    // slot.
    unsafe {
        upload
            .Map(0, None, Some(&mut mapped))
            .map_err(|e| format!("Map(upload): {}", hresult_text(&e)))?;
        for bytes in inputs
            .iter()
            .copied()
            .chain(outputs.iter().map(|o| &*o.buffer))
        {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (mapped as *mut u8).add(cursor as usize),
                bytes.len(),
            );
            let resource = device.buffer(
                D3D12_HEAP_TYPE_DEFAULT,
                padded(bytes.len() as u64),
                uav,
                D3D12_RESOURCE_STATE_COPY_DEST,
            )?;
            staged.push((resource, cursor, bytes.len() as u64));
            cursor += padded(bytes.len() as u64);
        }
        upload.Unmap(0, None);
    }
    Ok(staged)
}

/// Copies each output's bytes from its slot of the readback buffer into the output's buffer.
pub(super) fn read_back(
    readback: &ID3D12Resource,
    outputs: &mut [OutputBinding<'_>],
) -> Result<(), String> {
    // SAFETY: the readback buffer holds readback_size bytes (transfer_buffers) written by the
    // copies that `dispatch` recorded, and the GPU is done with it (it waited for the fence).
    unsafe {
        let mut mapped: *mut c_void = std::ptr::null_mut();
        readback
            .Map(0, None, Some(&mut mapped))
            .map_err(|e| format!("Map(readback): {}", hresult_text(&e)))?;
        let mut read_offset = 0usize;
        for output in outputs.iter_mut() {
            let len = output.buffer.len();
            std::ptr::copy_nonoverlapping(
                (mapped as *const u8).add(read_offset),
                output.buffer.as_mut_ptr(),
                len,
            );
            read_offset += padded(len as u64) as usize;
        }
        readback.Unmap(0, None);
    }
    Ok(())
}
