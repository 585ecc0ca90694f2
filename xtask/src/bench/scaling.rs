//! The size-scaling table: the contiguous Join and the reversed Slice1 from 4 KiB to 256 MiB
//! next to the best copy of the same bytes, and the per-call overhead at 4 KiB.

use super::options::BenchArgs;
use super::references::{Reference, cpu_and_references};
use super::report::{range_json, with_range};
use super::rounds::{Batch, Settle, best_per_round, rate, ratios, rounds, spread, usual_best};
use super::workloads::{Workload, descriptor_of_shape, random_inputs};
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_tensor::{Backend, DataType};
use std::cell::RefCell;

/// The scaling table's element type.
const DATA_TYPE: DataType = DataType::Float32;

/// Output sizes of the scaling table: 4 KiB to 256 MiB, by factors of 4.
const SCALING_SIZES: [usize; 9] = [
    4 << 10,
    16 << 10,
    64 << 10,
    256 << 10,
    1 << 20,
    4 << 20,
    16 << 20,
    64 << 20,
    256 << 20,
];

fn size_name(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", bytes >> 10)
    }
}

/// The contiguous Join (axis 0) and the reversed Slice1 (last axis), FLOAT32, at every size of
/// SCALING_SIZES next to the best copy of the same bytes; rows of at most 16 KiB, at least 4. Each timed
/// call is repeated until a round moves about 16 MiB, so small sizes measure the per-call
/// cost with warm caches. Prints the table and the 4 KiB overhead; returns them as JSON.
pub(super) fn scaling(
    backend: &CpuBackend,
    options: &BenchArgs,
    references: &[Reference],
    threads: usize,
    settle: &Settle,
) -> serde_json::Value {
    let data_type = DATA_TYPE;
    let mut printed_header = false;
    let mut results = Vec::new();
    let mut overheads = Vec::new();
    for workload in [Workload::JoinAxis0, Workload::SliceReverseLastAxis] {
        for size in SCALING_SIZES {
            let label = format!(
                "scaling {} {} {}",
                workload.name(),
                data_type,
                size_name(size)
            );
            if options.filtered_out(&label) {
                continue;
            }
            if !printed_header {
                print_header();
                printed_header = true;
            }
            let (result, cpu_ns, best_ns) = scaling_row(
                backend,
                workload,
                size,
                options.runs,
                references,
                threads,
                settle,
            );
            if size == SCALING_SIZES[0] {
                overheads.push((workload.name(), cpu_ns, best_ns));
            }
            results.push(result);
        }
    }
    for (name, cpu_ns, best_ns) in &overheads {
        println!(
            "overhead on a 4 KiB {name}: {:.0} ns a call (cpu {cpu_ns:.0} ns - best copy {best_ns:.0} ns, medians)",
            cpu_ns - best_ns
        );
    }
    serde_json::json!({
        "results": results,
        "overhead_4kib_ns": overheads
            .iter()
            .map(|(name, cpu_ns, best_ns)| serde_json::json!({
                "workload": name, "cpu_ns": cpu_ns, "best_copy_ns": best_ns,
                "overhead_ns": cpu_ns - best_ns,
            }))
            .collect::<Vec<_>>(),
    })
}

/// The table's title and header.
fn print_header() {
    let data_type = DATA_TYPE;
    println!(
        "scaling ({}): output size vs the best copy of the same bytes",
        data_type.name()
    );
    println!(
        "{:<24} {:>8} {:>20} {:>8} {:>10} {:>17} {:>12} {:>12}",
        "workload", "size", "cpu GB/s", "best", "best is", "cpu/best", "cpu ns", "best ns"
    );
}

/// One size of one workload: measured, printed as a row of the table, and returned as JSON
/// with the median time of a call, in ns, of the backend and of the best copy.
fn scaling_row(
    backend: &CpuBackend,
    workload: Workload,
    size: usize,
    runs: usize,
    references: &[Reference],
    threads: usize,
    settle: &Settle,
) -> (serde_json::Value, f64, f64) {
    let data_type = DATA_TYPE;
    let element = data_type.element_size();
    let cols = (size / element / 4).min(4096);
    let rows = size / element / cols;
    let op = descriptor_of_shape(workload, data_type, rows as u32, cols as u32);
    let inputs = random_inputs(&op, data_type);
    let compiled = backend.compile(&op).expect("bench descriptors are valid");
    let output = RefCell::new(vec![vec![0u8; size]]);
    let mut copies = cpu_and_references(&*compiled, &inputs, &output, references, threads);
    let mut methods: Vec<&mut dyn FnMut()> = copies
        .iter_mut()
        .map(|c| &mut **c as &mut dyn FnMut())
        .collect();
    let reps = ((16usize << 20) / size).max(1);
    let times = rounds(&mut methods, runs, Batch::Calls(reps), settle);
    let reference_times = &times[1..];
    let best = best_per_round(reference_times);
    let moved = 2 * size;
    let cpu_rate = rate(moved, &times[0]);
    let best_rate = rate(moved, &best);
    let over_best = ratios(&best, &times[0]);
    let cpu_ns = spread(times[0].clone()).0 * 1e9;
    let best_ns = spread(best.clone()).0 * 1e9;
    let best_name = usual_best(references, reference_times);
    println!(
        "{:<24} {:>8} {:>20} {:>8.2} {:>10} {:>17} {:>12.0} {:>12.0}",
        workload.name(),
        size_name(size),
        with_range(cpu_rate),
        best_rate.0,
        best_name,
        with_range(over_best),
        cpu_ns,
        best_ns
    );
    let result = serde_json::json!({
        "workload": workload.name(),
        "data_type": data_type.name(),
        "output_bytes": size,
        "calls_per_round": reps,
        "cpu_gbps": range_json(cpu_rate),
        "best_copy_gbps": range_json(best_rate),
        "best_copy_usually": best_name,
        "cpu_over_best_copy": range_json(over_best),
        "cpu_ns": cpu_ns,
        "best_copy_ns": best_ns,
    });
    (result, cpu_ns, best_ns)
}
