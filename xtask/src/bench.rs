//! `cargo xtask bench`: the CPU backend's throughput on 64 MiB tensors, next to the machine's
//! reference copies of the same bytes (memcpy on one thread, memcpy over every core in large
//! disjoint parts, and the same two with non-temporal stores; the fastest in each round is
//! "the best copy"), ndarray doing the same work, and the oracle, all in one process; then a
//! size-scaling table (4 KiB to 256 MiB) for the contiguous Join and the reversed Slice1.
//! GB/s = (bytes read + bytes written) / time. The reference copies of a workload move the
//! backend's own buffers (its inputs into its outputs, byte for byte), so they touch the same
//! memory. Methods run interleaved, round by round, each after a read that settles the caches;
//! each ratio is reported as the median with [min-max] of its per-round ratios.
//!
//! The files: `workloads` (the descriptors, their inputs, ndarray's same work), `references`
//! (the reference copies between the backend's own buffers), `rounds` (the settling read, the
//! interleaved rounds, the figures taken from them), `cpu` (the CPU backend's bench),
//! `report` (its table and JSON report), `scaling` (the size-scaling table), `wgpu`
//! (`--backend wgpu`) and `fuzz` (`--fuzz`: a campaign's speed with a planted bug, next to the
//! clean campaign), `profile` (`--fuzz`'s campaign profile: time per case by stage and tier); `options` (the command line, and the rows it selects) and `error` (why it
//! failed).

mod cpu;
mod error;
mod fuzz;
mod options;
mod profile;
mod references;
mod report;
mod rounds;
mod scaling;
mod wgpu;
mod workloads;

pub use error::BenchError;
use options::Backend;
pub use options::BenchArgs;

/// `cargo xtask bench`: the table asked for.
pub fn bench_main(options: &BenchArgs) -> Result<(), BenchError> {
    if options.fuzz {
        return fuzz::bench_fuzz(options);
    }
    if options.backend == Backend::Wgpu {
        return wgpu::bench_wgpu(options);
    }
    cpu::bench_cpu(options)
}
