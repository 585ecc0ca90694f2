//! The CPU backend as a protocol server on stdin/stdout (docs/backend-protocol.md), for
//! `dmlcts-cpu-server` and the `dmlcts` command's `serve-cpu` alike.

use crate::CpuBackend;
use dmlcts_tensor::{Backend, FeatureLevel};

/// Serves until `shutdown` or the end of stdin. With `level`, one device at that level (as a
/// fixed-level backend would be); without, a device at every level (announced in `hello`),
/// 4_1 for a `compile` that names none.
pub fn serve_stdio(level: Option<FeatureLevel>) -> std::io::Result<()> {
    let stdin = std::io::stdin().lock();
    let stdout = std::io::BufWriter::new(std::io::stdout().lock());
    if let Some(level) = level {
        return dmlcts_protocol::serve(&CpuBackend::at_level(level), stdin, stdout);
    }
    let devices: Vec<CpuBackend> = FeatureLevel::ALL
        .into_iter()
        .map(CpuBackend::at_level)
        .collect();
    let default = CpuBackend::at_level(FeatureLevel::L4_1);
    let at_levels: Vec<&dyn Backend> = devices.iter().map(|d| d as &dyn Backend).collect();
    dmlcts_protocol::serve_levels(&default, at_levels, stdin, stdout)
}
