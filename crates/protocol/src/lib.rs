//! The dmlcts backend protocol, version 1 (docs/backend-protocol.md is the specification).
//!
//! - [`frame`]: a frame is a little-endian u32 header length, a JSON header, then raw payloads
//!   whose byte lengths the header lists.
//! - [`descriptor`]: operator descriptors as JSON, with the case format's field names.
//! - [`serve`]: turns any in-process `Backend` into a protocol server on a reader and writer.
//! - [`ProcessBackend`]: a `Backend` that runs a server as a child process, with per-request
//!   timeouts, and a fresh child after a crash, a hang or a protocol violation;
//!   [`ProcessBackendAtLevel`] is it as a device at one of the levels its server offers.

pub mod bounds;
pub mod descriptor;
pub mod frame;
mod levels;
mod process;
mod server;

pub use levels::ProcessBackendAtLevel;
pub use process::{
    MAX_TIMEOUT, ProcessBackend, ProcessOptions, STALLS_BEFORE_GIVING_UP, STDERR_LINE_BYTES,
    STDERR_LINES,
};
pub use server::{Server, serve, serve_levels, write_reply};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u64 = 1;
