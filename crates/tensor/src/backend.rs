//! What an implementation under test provides. The harness drives every backend through
//! this trait; out-of-process and GPU backends adapt to it.

use crate::{DataType, FeatureLevel, OperatorDesc, ValidationProfile};
use std::fmt;

/// A backend's refusal to compile a descriptor (DirectML: `E_INVALIDARG` from
/// CreateOperator). `rule` is a spec rule id when the backend knows one; the harness
/// compares accept/reject, and only reports a differing rule id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub rule: Option<String>,
    pub message: String,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.rule {
            Some(rule) => write!(f, "[{rule}] {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Why `compile` produced nothing to execute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// The descriptor was refused: the verdict the harness compares with the oracle's.
    Rejected(Rejected),
    /// The backend could not give a verdict (its process crashed or hung, its device was
    /// lost). The case fails with this message; it never counts as a rejection.
    Failed(String),
    /// The descriptor is beyond what this backend can run here (say, larger than the
    /// adapter's buffers). The case is skipped with this reason: neither passed nor failed.
    Unsupported(String),
}

impl From<Rejected> for CompileError {
    fn from(rejected: Rejected) -> CompileError {
        CompileError::Rejected(rejected)
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::Rejected(r) => write!(f, "rejected: {r}"),
            CompileError::Failed(m) => write!(f, "failed: {m}"),
            CompileError::Unsupported(m) => write!(f, "unsupported here: {m}"),
        }
    }
}

/// One output as bound for execution, like a `DML_BUFFER_BINDING`: the tensor's bytes are
/// `buffer[offset .. offset + size]`, where `size` is the descriptor's
/// TotalTensorSizeInBytes. The rest of `buffer` belongs to the harness (guard bands) and
/// must not be written.
pub struct OutputBinding<'a> {
    pub buffer: &'a mut [u8],
    pub offset: usize,
    pub size: usize,
}

impl<'a> OutputBinding<'a> {
    /// A binding of a whole buffer (no guard bands): for callers outside the harness.
    pub fn whole(buffer: &'a mut [u8]) -> OutputBinding<'a> {
        let size = buffer.len();
        OutputBinding {
            buffer,
            offset: 0,
            size,
        }
    }

    /// The bytes the backend may write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.buffer[self.offset..self.offset + self.size]
    }
}

/// A compiled operator, ready to execute any number of times.
pub trait CompiledOperator {
    /// `inputs[i]` holds exactly TotalTensorSizeInBytes bytes of the i-th input (in the
    /// order of `OperatorDesc::inputs`); outputs likewise. Returns an error message when
    /// execution itself failed (a device error, a lost child process).
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String>;
}

/// An implementation of Split, Join and Slice1 under test.
///
/// The harness asks for a verdict on each case's descriptor ([`compile`](Backend::compile)),
/// and for an accepted one executes the result once into guarded buffers, comparing every
/// addressed byte with the oracle's. A backend that can act as a device at several feature
/// levels is made once per level by the caller's factory (`dmlcts_harness::libtest_main`'s
/// argument) and must then report that level from [`feature_level`](Backend::feature_level).
/// The crate's documentation has a small example; `examples/rust-backend` in the dmlcts
/// repository is a complete one.
pub trait Backend: Send + Sync {
    /// A short name, as given to `--backend`.
    fn name(&self) -> String;

    /// The feature level it claims. Cases that need more are skipped.
    fn feature_level(&self) -> FeatureLevel;

    /// The data types it claims. Cases using others are skipped.
    fn data_types(&self) -> Vec<DataType> {
        DataType::ALL.to_vec()
    }

    /// The adapter, device or version it runs on, for reports and expectations.
    fn device(&self) -> String {
        String::new()
    }

    /// Why this backend cannot run on this machine (no adapter, wrong OS), if it cannot.
    /// Every case is then reported as skipped with this reason.
    fn unavailable_reason(&self) -> Option<String> {
        None
    }

    /// Which of DirectML's validation rules it enforces. A must-reject case it accepts where
    /// every rule broken is one it does not enforce is informational, not a failure.
    /// DirectML, the CPU backend and the oracle are `Strict`.
    fn validation_profile(&self) -> ValidationProfile {
        ValidationProfile::Strict
    }

    /// Accepts the descriptor (returning something to execute), rejects it, or fails.
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError>;
}

/// A borrowed backend is a backend: a caller that holds `&dyn Backend` (a campaign's job, a
/// test) can hand it to what takes an owned one (`Arc<dyn Backend + 'a>`).
impl<B: Backend + ?Sized> Backend for &B {
    fn name(&self) -> String {
        (**self).name()
    }
    fn feature_level(&self) -> FeatureLevel {
        (**self).feature_level()
    }
    fn data_types(&self) -> Vec<DataType> {
        (**self).data_types()
    }
    fn device(&self) -> String {
        (**self).device()
    }
    fn unavailable_reason(&self) -> Option<String> {
        (**self).unavailable_reason()
    }
    fn validation_profile(&self) -> ValidationProfile {
        (**self).validation_profile()
    }
    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        (**self).compile(op)
    }
}
