//! The whole corpus on the CPU backend, one libtest test per case, each case at its own
//! feature level (the backend validates as a device at that level, and must report it). Two
//! threads whatever the machine, and threads and non-temporal stores from 1 MiB (by default
//! 4 MiB and 8 MiB), so the large tier's outputs of just over 1 MiB cross the threaded and
//! non-temporal paths, on one core too.

use dmlcts_backend_cpu::CpuBackend;

fn main() {
    dmlcts_harness::libtest_main_at_each_level(|level| {
        Box::new(
            CpuBackend::at_level(level)
                .with_threads(2)
                .with_parallel_threshold(1 << 20)
                .with_streaming_threshold(1 << 20),
        )
    });
}
