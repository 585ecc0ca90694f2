//! The backend as the harness sees it: its options, `WgpuBackend` (an opened device, or why
//! there is none), and `Backend::compile`, whose operator runs through `Gpu::prepare` and
//! `Gpu::dispatch`.

use crate::device::{Gpu, describe, open};
use crate::kernel::KERNEL;
use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected,
};

/// Which adapter to use and how to validate.
#[derive(Clone, Debug)]
pub struct WgpuOptions {
    /// A case-insensitive substring of the adapter's name, backend or driver; the default
    /// adapter when None. `DMLCTS_WGPU_ADAPTER` is read when this is None.
    pub adapter: Option<String>,
    pub feature_level: FeatureLevel,
}

impl Default for WgpuOptions {
    fn default() -> WgpuOptions {
        WgpuOptions {
            adapter: std::env::var("DMLCTS_WGPU_ADAPTER")
                .ok()
                .filter(|s| !s.is_empty()),
            feature_level: FeatureLevel::L4_1,
        }
    }
}

pub struct WgpuBackend {
    pub(crate) level: FeatureLevel,
    pub(crate) gpu: Result<Gpu, String>,
}

impl WgpuBackend {
    /// Opens the adapter now. When none can be opened the backend still exists, and says
    /// why in `unavailable_reason` (cases are then skipped with that reason).
    pub fn new(options: WgpuOptions) -> WgpuBackend {
        WgpuBackend {
            level: options.feature_level,
            gpu: open(options.adapter.as_deref(), KERNEL),
        }
    }

    pub fn adapter_info(&self) -> Option<&wgpu::AdapterInfo> {
        self.gpu.as_ref().ok().map(|g| &g.info)
    }
}

struct CompiledWgpu<'a> {
    gpu: &'a Gpu,
    op: OperatorDesc,
}

impl CompiledOperator for CompiledWgpu<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        // Whole guarded buffers go to the device: a stray write lands in the guard bands.
        let buffers: Vec<Vec<u8>> = outputs.iter().map(|o| o.buffer.to_vec()).collect();
        let offsets: Vec<usize> = outputs.iter().map(|o| o.offset).collect();
        let prepared = self
            .gpu
            .prepare(&self.op, inputs, &buffers, &offsets, true)?;
        let mut targets: Vec<&mut [u8]> = outputs.iter_mut().map(|o| &mut *o.buffer).collect();
        self.gpu.dispatch(&prepared, true, Some(&mut targets))
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> String {
        "wgpu".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn data_types(&self) -> Vec<DataType> {
        DataType::ALL.to_vec()
    }

    fn device(&self) -> String {
        match &self.gpu {
            Ok(gpu) => describe(&gpu.info),
            Err(_) => "no adapter".to_string(),
        }
    }

    fn unavailable_reason(&self) -> Option<String> {
        self.gpu.as_ref().err().cloned()
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let gpu = self
            .gpu
            .as_ref()
            .map_err(|e| CompileError::Failed(e.clone()))?;
        dmlcts_oracle::validate(op, self.level).map_err(Rejected::from)?;
        gpu.check_binding_limit(op)?;
        Ok(Box::new(CompiledWgpu {
            gpu,
            op: op.clone(),
        }))
    }
}
