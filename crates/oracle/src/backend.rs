//! The oracle as a backend named `oracle`: it validates at its claimed level and executes
//! with the scalar loops, writing only addressed bytes. Running the corpus on it checks the
//! cases' stored expectations against the oracle through the same runner as any backend.

use crate::{execute, validate};
use dmlcts_tensor::CompileError;
use dmlcts_tensor::{
    Backend, CompiledOperator, FeatureLevel, OperatorDesc, OutputBinding, Rejected,
};

pub struct OracleBackend {
    level: FeatureLevel,
}

impl OracleBackend {
    pub fn new(level: FeatureLevel) -> OracleBackend {
        OracleBackend { level }
    }
}

impl Default for OracleBackend {
    fn default() -> OracleBackend {
        OracleBackend::new(FeatureLevel::L4_1)
    }
}

struct CompiledByOracle(OperatorDesc);

impl CompiledOperator for CompiledByOracle {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        let results = execute(&self.0, inputs).map_err(|e| e.to_string())?;
        if results.len() != outputs.len() {
            return Err(format!(
                "{} output bindings for {} outputs",
                outputs.len(),
                results.len()
            ));
        }
        for (result, binding) in results.iter().zip(outputs.iter_mut()) {
            let target = binding.bytes_mut();
            if target.len() != result.bytes.len() {
                return Err(format!(
                    "output binding holds {} bytes, expected {}",
                    target.len(),
                    result.bytes.len()
                ));
            }
            result.write_addressed_into(target);
        }
        Ok(())
    }
}

impl Backend for OracleBackend {
    fn name(&self) -> String {
        "oracle".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn device(&self) -> String {
        "dmlcts scalar reference oracle".to_string()
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        validate(op, self.level).map_err(Rejected::from)?;
        Ok(Box::new(CompiledByOracle(op.clone())))
    }
}
