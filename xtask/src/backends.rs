//! The backends `--backend NAME` can name.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_oracle::OracleBackend;
use dmlcts_tensor::{Backend, FeatureLevel};

pub const KNOWN: &[(&str, &str)] = &[
    ("cpu", "the fast CPU implementation (default)"),
    (
        "oracle",
        "the scalar reference itself (checks the corpus's stored expectations)",
    ),
];

pub fn resolve(name: &str, level: Option<FeatureLevel>) -> Result<Box<dyn Backend>, String> {
    match name {
        "cpu" => Ok(Box::new(CpuBackend::at_level(
            level.unwrap_or(FeatureLevel::L4_1),
        ))),
        "oracle" => Ok(Box::new(OracleBackend::new(
            level.unwrap_or(FeatureLevel::L4_1),
        ))),
        other => Err(format!(
            "unknown backend `{other}`; known: {}",
            KNOWN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        )),
    }
}
