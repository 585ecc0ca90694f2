//! The D3D12 + DirectML side. Everything that touches COM is `unsafe` at the FFI edge, each
//! block with the reason it is sound. One device, queue, allocator, command list, fence and
//! descriptor heap are created once and reused for every case (creating a descriptor heap
//! costs seconds under Wine); each case gets its own buffers.
//!
//! The files: `adapters` (DXGI's adapters, the chosen one, the listing), `device` (the device, queue and heap set up once; buffers, binding tables,
//! submit-and-wait), `capabilities` (the loaded DLL's version, feature level and data types),
//! `tensor` (tensor descriptors), `compile` (operator creation, compilation, initialization),
//! `execute` (binding and dispatch), `transfer` (the upload, staging and readback) and
//! `bindings` (barriers and buffer bindings, released by hand).

mod adapters;
mod bindings;
mod capabilities;
mod compile;
mod device;
mod execute;
mod tensor;
mod transfer;

use device::Device;
use dmlcts_tensor::{Backend, DataType, FeatureLevel, OperatorDesc, OutputBinding, TensorDesc};
use std::sync::Mutex;

pub struct DirectMlBackend {
    device: Mutex<Device>,
    description: String,
    implementation: dmlcts_tensor::Implementation,
    level: FeatureLevel,
    data_types: Vec<DataType>,
}

fn hresult_text(e: &windows::core::Error) -> String {
    format!(
        "HRESULT {:#010x} ({})",
        e.code().0 as u32,
        e.message().trim()
    )
}

/// Every D3D12 adapter here, with DirectML's highest feature level on each from the DLL
/// `dll` names (else the one beside the executable, else the system's); its path and version.
pub fn list_adapters(
    dll: Option<&std::path::Path>,
) -> Result<(String, String, Vec<crate::AdapterListing>), String> {
    let dll = device::DirectMlDll::load(dll)?;
    let listing = adapters::listing(&dll)?;
    Ok((dll.path.clone(), dll.version.clone(), listing))
}

impl DirectMlBackend {
    pub fn description(&self) -> String {
        self.description.clone()
    }

    /// One known JOIN ({1,2,3,4} and {10,20,30,40} on axis 1): a wrong result means the
    /// stack underneath (D3D12, Vulkan driver) is broken, not DirectML.
    pub fn self_test(&self) -> Result<(), String> {
        let part = TensorDesc::packed(DataType::Float32, &[1, 1, 2, 2]);
        let op = OperatorDesc::Join(dmlcts_tensor::JoinDesc {
            input_tensors: vec![part.clone(), part],
            output_tensor: TensorDesc::packed(DataType::Float32, &[1, 2, 2, 2]),
            axis: 1,
        });
        let a: Vec<u8> = [1f32, 2., 3., 4.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: Vec<u8> = [10f32, 20., 30., 40.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let compiled = self
            .compile(&op)
            .map_err(|e| format!("the JOIN did not compile: {e}"))?;
        let mut out = vec![0xCDu8; 32];
        let mut binding = [OutputBinding {
            buffer: &mut out,
            offset: 0,
            size: 32,
        }];
        compiled.execute(&[&a, &b], &mut binding)?;
        let expected: Vec<u8> = [1f32, 2., 3., 4., 10., 20., 30., 40.]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        if out != expected {
            let got: Vec<f32> = out
                .chunks(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            return Err(format!(
                "JOIN produced {got:?}, expected [1, 2, 3, 4, 10, 20, 30, 40]. Under Wine this is what \
                 a Vulkan driver without VK_EXT_descriptor_indexing (Debian 12's Mesa 22) does: use \
                 Mesa 25's lavapipe (cargo xtask directml setup)."
            ));
        }
        Ok(())
    }
}
