//! The small structures a recording passes to D3D12 and DirectML: resource barriers, buffer
//! bindings and their binding descriptions, each holding a COM reference released by hand
//! (ManuallyDrop fields), and the padding of a buffer's slot.

use std::ffi::c_void;
use std::mem::ManuallyDrop;
use windows::Win32::AI::MachineLearning::DirectML::*;
use windows::Win32::Graphics::Direct3D12::*;

pub(super) fn transition(
    resource: &ID3D12Resource,
    before: D3D12_RESOURCE_STATES,
    after: D3D12_RESOURCE_STATES,
) -> D3D12_RESOURCE_BARRIER {
    D3D12_RESOURCE_BARRIER {
        Type: D3D12_RESOURCE_BARRIER_TYPE_TRANSITION,
        Flags: D3D12_RESOURCE_BARRIER_FLAG_NONE,
        Anonymous: D3D12_RESOURCE_BARRIER_0 {
            Transition: ManuallyDrop::new(D3D12_RESOURCE_TRANSITION_BARRIER {
                pResource: ManuallyDrop::new(Some(resource.clone())),
                Subresource: D3D12_RESOURCE_BARRIER_ALL_SUBRESOURCES,
                StateBefore: before,
                StateAfter: after,
            }),
        },
    }
}

pub(super) fn uav_barrier() -> D3D12_RESOURCE_BARRIER {
    D3D12_RESOURCE_BARRIER {
        Type: D3D12_RESOURCE_BARRIER_TYPE_UAV,
        Flags: D3D12_RESOURCE_BARRIER_FLAG_NONE,
        Anonymous: D3D12_RESOURCE_BARRIER_0 {
            UAV: ManuallyDrop::new(D3D12_RESOURCE_UAV_BARRIER {
                pResource: ManuallyDrop::new(None),
            }),
        },
    }
}

/// Releases the COM references a barrier list holds (ManuallyDrop fields).
pub(super) fn release_barriers(barriers: Vec<D3D12_RESOURCE_BARRIER>) {
    for mut barrier in barriers {
        if barrier.Type == D3D12_RESOURCE_BARRIER_TYPE_TRANSITION {
            // SAFETY: a transition barrier's union member is Transition, set in `transition`.
            unsafe {
                let mut t = ManuallyDrop::take(&mut barrier.Anonymous.Transition);
                ManuallyDrop::drop(&mut t.pResource);
            }
        }
    }
}

pub(super) fn binding(resource: &ID3D12Resource, offset: u64, size: u64) -> DML_BUFFER_BINDING {
    DML_BUFFER_BINDING {
        Buffer: ManuallyDrop::new(Some(resource.clone())),
        Offset: offset,
        SizeInBytes: size,
    }
}

/// The DML_BINDING_DESC of a buffer binding (valid while the binding is).
pub(super) fn describe(binding: &DML_BUFFER_BINDING) -> DML_BINDING_DESC {
    DML_BINDING_DESC {
        Type: DML_BINDING_TYPE_BUFFER,
        Desc: binding as *const _ as *const c_void,
    }
}

pub(super) fn release_bindings(bindings: Vec<DML_BUFFER_BINDING>) {
    for mut b in bindings {
        // SAFETY: each binding was made by `binding`, which cloned a reference into Buffer.
        unsafe { ManuallyDrop::drop(&mut b.Buffer) };
    }
}

pub(super) fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(16).max(1) * 16
}
