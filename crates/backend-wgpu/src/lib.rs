//! DML_SPLIT, DML_JOIN and DML_SLICE1 on wgpu, as one WGSL compute kernel (kernel.wgsl).
//!
//! Each operator is the shared copy plan (`dmlcts_tensor::copy_plan`): pieces, each a
//! strided block copy from one input into one output. Aligned contiguous pieces become buffer
//! copies; every other piece is one entry of a piece table, and one dispatch covers all the
//! pieces that share buffers and a kernel specialization (inputs share one device buffer and
//! outputs another when they fit under the storage binding limit; otherwise each has its own).
//! Outputs go to the GPU inside the harness's guarded buffer and come back whole, so a write
//! outside an output lands in the guard bands, where the harness looks.
//!
//! The crate by job: `backend` (the options, `WgpuBackend` and its `Backend` impl), `device`
//! (the adapter, the device, the kernel's pipelines), `limits` (what a binding can reach),
//! `kernel` (kernel.wgsl's modes, specializations and pieces), `plan` (tensors placed in
//! device buffers; buffer copies and dispatches planned), `dispatch` (one execution submitted
//! and read back) and `measure` (the bench's timing).

mod backend;
mod device;
mod dispatch;
mod kernel;
mod limits;
mod measure;
mod plan;

pub use backend::{WgpuBackend, WgpuOptions};
pub use measure::Round;
