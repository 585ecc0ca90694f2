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

/// What a backend runs, as fields (not only as device text): the implementation, its version
/// and the adapter it runs on. An expectations entry matches on them (`implementation:`,
/// `versions:`, `adapter:`), so the same DirectML is judged by the same entries whether it was
/// reached as `directml@1.15.4`, as a `process:` server or from the command on Windows. Every
/// field is empty when the backend does not say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Implementation {
    /// The implementation's own name, lower case: `directml`, `cpu`, `tract`.
    pub name: String,
    /// Its version, dotted: `1.15.4.0` (DirectML: the version resource of the DLL that loaded).
    pub version: String,
    pub adapter: AdapterInfo,
}

/// The adapter a backend runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdapterInfo {
    /// As the system names it: `NVIDIA GeForce RTX 4090`, `Microsoft Basic Render Driver`.
    pub name: String,
    /// The vendor, lower case: `nvidia`, `amd`, `intel`, `qualcomm`, `microsoft` for the PCI
    /// vendor ids known to [`vendor_name`], else the id itself (`0x1af4`).
    pub vendor: String,
    /// The driver's version, dotted: `31.0.15.5222`.
    pub driver: String,
}

impl Implementation {
    /// Whether the backend said nothing about itself.
    pub fn is_empty(&self) -> bool {
        *self == Implementation::default()
    }
}

/// A PCI vendor id as [`AdapterInfo::vendor`] writes it: a name for the vendors of D3D12
/// adapters, else `0x` and the id in lower-case hex.
pub fn vendor_name(id: u32) -> String {
    match id {
        0x10de => "nvidia".to_string(),
        0x1002 | 0x1022 => "amd".to_string(),
        0x8086 => "intel".to_string(),
        0x5143 | 0x4d4f4351 => "qualcomm".to_string(),
        0x1414 => "microsoft".to_string(),
        other => format!("{other:#x}"),
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

    /// The implementation, version and adapter, as fields an expectations file matches;
    /// empty when the backend does not say (then entries match its name and device text).
    fn implementation(&self) -> Implementation {
        Implementation::default()
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
    fn implementation(&self) -> Implementation {
        (**self).implementation()
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
