//! The dmlcts backend protocol, version 1 (docs/backend-protocol.md is the specification).
//!
//! - [`frame`]: a frame is a little-endian u32 header length, a JSON header, then raw payloads
//!   whose byte lengths the header lists.
//! - [`descriptor`]: operator descriptors as JSON, with the case format's field names.
//! - [`serve`]: turns any in-process `Backend` into a protocol server on a reader and writer.
//! - [`ProcessBackend`]: a `Backend` that runs a server as a child process, with per-request
//!   timeouts, and a fresh child after a crash, a hang or a protocol violation.

pub mod descriptor;
pub mod frame;
mod process;
mod server;

pub use process::{ProcessBackend, ProcessOptions};
pub use server::{Server, serve, write_reply};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u64 = 1;
