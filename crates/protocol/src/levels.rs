//! A process backend as a device at one of the levels its server announced in `hello`
//! (`feature_levels`): each `compile` then carries that level. One process serves them all.

use crate::ProcessBackend;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, Implementation, OperatorDesc,
    ValidationProfile,
};
use std::sync::Arc;

pub struct ProcessBackendAtLevel {
    process: Arc<ProcessBackend>,
    level: FeatureLevel,
}

impl ProcessBackendAtLevel {
    /// The server as a device at `level`; None when its `hello` did not offer that level.
    pub fn new(process: Arc<ProcessBackend>, level: FeatureLevel) -> Option<ProcessBackendAtLevel> {
        process
            .feature_levels()
            .contains(&level)
            .then_some(ProcessBackendAtLevel { process, level })
    }
}

impl Backend for ProcessBackendAtLevel {
    fn name(&self) -> String {
        self.process.name()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn data_types(&self) -> Vec<DataType> {
        self.process.data_types()
    }

    fn device(&self) -> String {
        self.process.device()
    }

    fn implementation(&self) -> Implementation {
        self.process.implementation()
    }

    fn unavailable_reason(&self) -> Option<String> {
        self.process.unavailable_reason()
    }

    fn validation_profile(&self) -> ValidationProfile {
        self.process.validation_profile()
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        self.process.compile_at(op, Some(self.level))
    }
}
