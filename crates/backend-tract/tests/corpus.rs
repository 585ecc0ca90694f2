//! The whole corpus on tract, one libtest test per case. tract has no feature levels: one
//! backend at 4_1 runs every case, as `cargo xtask conformance --backend tract` does.

use dmlcts_backend_tract::TractBackend;

fn main() {
    dmlcts_harness::libtest_main(|_level| Box::new(TractBackend::new()));
}
