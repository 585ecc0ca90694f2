//! The whole corpus on the CPU backend, one libtest test per case, each case at its own
//! feature level (the backend validates as a device at that level). Two threads whatever the
//! machine, so the large tier crosses the threaded path on one core too.

use dmlcts_backend_cpu::CpuBackend;

fn main() {
    dmlcts_harness::libtest_main(|level| Box::new(CpuBackend::at_level(level).with_threads(2)));
}
