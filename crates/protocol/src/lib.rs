//! The dmlcts backend protocol, version 1 (docs/backend-protocol.md is the specification).
//!
//! - [`frame`]: a frame is a little-endian u32 header length, a JSON header, then raw payloads
//!   whose byte lengths the header lists; the head is read first, so that a reader can check
//!   the declared lengths before it reads (or allocates) a byte of them.
//! - [`descriptor`]: operator descriptors as JSON, with the case format's field names.
//! - [`serve`]: turns any in-process `Backend` into a protocol server on a reader and writer;
//!   an `execute`'s payloads must be its operator's tensor sizes before they are read.
//! - [`ProcessBackend`]: a `Backend` that runs a server as a child process, with per-request
//!   timeouts, a fresh child after a crash, a hang or a protocol violation, and none once the
//!   run's budget of time lost to it (`LOST_TIME_BUDGET` timeouts) is spent; nothing the
//!   server starts outlives it or the harness ([`containment`], process/reaper.rs);
//!   [`ProcessBackendAtLevel`] is it as a
//!   device at one of the levels its server offers.
//! - [`bounds`]: what is kept of a backend's texts (4 KiB each, the rest counted).

pub mod bounds;
pub mod descriptor;
pub mod frame;
mod levels;
mod process;
mod server;

pub use levels::ProcessBackendAtLevel;
pub use process::{
    Containment, FAILED_STARTS_BEFORE_GIVING_UP, LOST_TIME_BUDGET, MAX_TIMEOUT, ProcessBackend,
    ProcessOptions, STDERR_LINE_BYTES, STDERR_LINES, containment,
};
pub use server::{Server, serve, serve_levels, write_reply};

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u64 = 1;
