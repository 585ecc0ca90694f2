//! The whole corpus on the wgpu backend (the default adapter, or DMLCTS_WGPU_ADAPTER), each
//! case at its own feature level. Without an adapter every case is skipped (ignored) with the
//! reason, unless DMLCTS_REQUIRE_WGPU_ADAPTER is set (CI sets it): then this fails.

use dmlcts_backend_wgpu::{WgpuBackend, WgpuOptions};
use dmlcts_tensor::Backend;

fn main() {
    let probe = WgpuBackend::new(WgpuOptions::default());
    if let Some(reason) = probe.unavailable_reason() {
        if std::env::var_os("DMLCTS_REQUIRE_WGPU_ADAPTER").is_some() {
            eprintln!(
                "DMLCTS_REQUIRE_WGPU_ADAPTER is set but there is no usable adapter: {reason}"
            );
            std::process::exit(1);
        }
        eprintln!("wgpu cases are skipped: {reason}");
    } else {
        eprintln!("wgpu adapter: {}", probe.device());
    }
    drop(probe);
    dmlcts_harness::libtest_main_at_each_level(|level| {
        Box::new(WgpuBackend::new(WgpuOptions {
            feature_level: level,
            ..WgpuOptions::default()
        }))
    });
}
