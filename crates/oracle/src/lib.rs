//! The reference oracle for DML_SPLIT_OPERATOR_DESC, DML_JOIN_OPERATOR_DESC and
//! DML_SLICE1_OPERATOR_DESC.
//!
//! - [`validate`] checks a descriptor against every rule in specs/ (the pages as data) at a
//!   feature level, and names the first broken rule with the field and values involved.
//! - [`execute`] runs a valid descriptor with plain loops that follow the pages' pseudocode,
//!   and reports which output bytes it addressed (the rest are unspecified, see specs/).
//!
//! It is deliberately scalar and boring: read it next to the pages, line by line.

// Loops index dimensions by number, as the pages' pseudocode does, so they read side by side.
#![allow(clippy::needless_range_loop)]

mod backend;
mod execute;
pub mod overlap;
pub mod spec;
mod validate;

pub use backend::OracleBackend;
pub use execute::{ExecuteError, OracleOutput, execute};
pub use validate::{Violation, broken_rules, validate, validate_enforced};
