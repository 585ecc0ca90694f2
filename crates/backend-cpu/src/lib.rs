//! A fast CPU backend for DML_SPLIT, DML_JOIN and DML_SLICE1.
//!
//! Validation is the shared one (the oracle's `validate`); execution is this crate's own and
//! never calls the oracle. Every operator becomes a list of strided copies expressed in the
//! output's coordinates ([`plan`]); each copy drops size-1 dimensions and merges dimensions
//! that are contiguous in both source and destination, then copies the innermost runs with
//! slice copies (memcpy), reversed runs with a dedicated loop, and anything else with an
//! incremental coordinate counter ([`copy`]). Large outputs are split along their outermost
//! dimension across threads, each thread owning a disjoint byte range of the output, and the
//! long contiguous runs of large outputs are written with non-temporal stores ([`stream`], the
//! crate's only unsafe code).

mod copy;
mod plan;
mod serve;
pub mod stream;

pub use serve::serve_stdio;

use dmlcts_tensor::CompileError;
use dmlcts_tensor::{
    Backend, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding, Rejected,
};
use plan::OutputPlan;

/// By default, an operator whose outputs total less than this is copied on the calling thread
/// (below it, starting a thread costs more than it saves: the bench's scaling table).
pub const PARALLEL_THRESHOLD_BYTES: usize = 4 << 20;

/// By default, an operator whose outputs total at least this writes their long contiguous
/// runs with non-temporal stores.
pub const STREAMING_THRESHOLD_BYTES: usize = plan::STREAM_MIN_OUTPUT_BYTES;

pub struct CpuBackend {
    level: FeatureLevel,
    threads: usize,
    parallel_threshold: usize,
    streaming_threshold: usize,
}

impl CpuBackend {
    /// Claims feature level 4_1 (the tables' highest row: every type, 1 to 8 dimensions).
    pub fn new() -> CpuBackend {
        CpuBackend::at_level(FeatureLevel::L4_1)
    }

    /// Validates as a device at `level` would: what that level's tables do not list is
    /// rejected. Execution is the same at every level.
    pub fn at_level(level: FeatureLevel) -> CpuBackend {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        CpuBackend {
            level,
            threads,
            parallel_threshold: PARALLEL_THRESHOLD_BYTES,
            streaming_threshold: STREAMING_THRESHOLD_BYTES,
        }
    }

    /// Uses at most `threads` threads per operator (1 disables threading).
    pub fn with_threads(mut self, threads: usize) -> CpuBackend {
        self.threads = threads.max(1);
        self
    }

    /// Splits outputs of at least `bytes` across threads (tests use 0 to force it).
    pub fn with_parallel_threshold(mut self, bytes: usize) -> CpuBackend {
        self.parallel_threshold = bytes;
        self
    }

    /// Writes the long contiguous runs of outputs that total at least `bytes` with
    /// non-temporal stores (the corpus target lowers it so that its large tier takes them).
    pub fn with_streaming_threshold(mut self, bytes: usize) -> CpuBackend {
        self.streaming_threshold = bytes;
        self
    }
}

impl Default for CpuBackend {
    fn default() -> CpuBackend {
        CpuBackend::new()
    }
}

struct CompiledCpu {
    outputs: Vec<OutputPlan>,
    element_size: usize,
    threads: usize,
    parallel_threshold: usize,
    streaming_threshold: usize,
}

impl CompiledOperator for CompiledCpu {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        if outputs.len() != self.outputs.len() {
            return Err(format!(
                "{} output bindings for {} outputs",
                outputs.len(),
                self.outputs.len()
            ));
        }
        let outputs: Vec<&mut [u8]> = outputs.iter_mut().map(|b| b.bytes_mut()).collect();
        plan::run_all(
            &self.outputs,
            inputs,
            outputs,
            self.element_size,
            self.threads,
            self.parallel_threshold,
            self.streaming_threshold,
        )?;
        Ok(())
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        "cpu".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn data_types(&self) -> Vec<DataType> {
        DataType::ALL.to_vec()
    }

    fn device(&self) -> String {
        format!("dmlcts CPU backend, {} thread(s)", self.threads)
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        dmlcts_oracle::validate(op, self.level).map_err(Rejected::from)?;
        let element_size = op.outputs()[0].1.data_type.element_size();
        Ok(Box::new(CompiledCpu {
            outputs: plan::plan(op),
            element_size,
            threads: self.threads,
            parallel_threshold: self.parallel_threshold,
            streaming_threshold: self.streaming_threshold,
        }))
    }
}
