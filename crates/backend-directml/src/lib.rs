//! Real DirectML as a dmlcts backend (Windows only; on Linux it runs under Wine, see
//! `cargo xtask directml setup`). The backend maps each descriptor to DML_BUFFER_TENSOR_DESCs
//! and a DML_SPLIT / DML_JOIN / DML_SLICE1 operator description, lets DirectML accept or
//! reject it (E_INVALIDARG is a rejection), and executes it on a D3D12 device with outputs
//! bound inside the harness's guarded buffers.

#[cfg(windows)]
mod dml;

#[cfg(windows)]
pub use dml::DirectMlBackend;
