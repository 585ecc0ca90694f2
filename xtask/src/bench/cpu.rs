//! The CPU backend's bench: the machine's own copy figures, then every workload and type
//! measured against the reference copies, ndarray and the oracle, then the scaling table.

use super::error::BenchError;
use super::options::BenchArgs;
use super::references::{Reference, cpu_and_references, reference_buffers, reference_copies};
use super::report::{self, Row};
use super::rounds::{LARGE_BATCH, Settle, best_per_round, rate, ratios, rounds, usual_best};
use super::scaling::scaling;
use super::workloads::{TOTAL_BYTES, Workload, descriptor, ndarray_work, random_inputs, shape};
use dmlcts_backend_cpu::CpuBackend;
use dmlcts_oracle::execute as oracle_execute;
use dmlcts_tensor::{Backend, DataType};
use std::cell::RefCell;
use std::time::Instant;

/// The CPU bench: prints its table (and the scaling table) and writes the JSON report asked
/// for.
pub(super) fn bench_cpu(options: &BenchArgs) -> Result<(), BenchError> {
    let threads = options
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let backend = CpuBackend::new().with_threads(threads);
    let references = Reference::available(threads);
    let settle = Settle::new();
    report::print_preamble(options.runs, threads);
    let machine = machine_copies(&references, options.runs, threads, &settle);
    report::print_machine_and_header(&machine);
    let rows = measure_all(&backend, options, &references, threads, &settle);
    report::print_targets(&rows);
    let scaling = scaling(&backend, options, &references, threads, &settle);
    if let Some(path) = &options.json {
        let report = report::cpu_report(threads, options.runs, &machine, &rows, scaling);
        return report::write_json(path, &report);
    }
    Ok(())
}

/// The machine's copy figures on 64 MiB, the references alone: each one's GB/s.
fn machine_copies(
    references: &[Reference],
    runs: usize,
    threads: usize,
    settle: &Settle,
) -> Vec<(&'static str, (f64, f64, f64))> {
    let mut buffers = reference_buffers(references, TOTAL_BYTES);
    let mut copies = reference_copies(references, &mut buffers, threads);
    let mut methods: Vec<&mut dyn FnMut()> = copies
        .iter_mut()
        .map(|c| &mut **c as &mut dyn FnMut())
        .collect();
    let times = rounds(&mut methods, runs, LARGE_BATCH, settle);
    references
        .iter()
        .zip(&times)
        .map(|(r, t)| (r.name(), rate(2 * TOTAL_BYTES, t)))
        .collect()
}

/// Every workload and type the filter lets through, each printed as soon as it is measured.
fn measure_all(
    backend: &CpuBackend,
    options: &BenchArgs,
    references: &[Reference],
    threads: usize,
    settle: &Settle,
) -> Vec<Row> {
    let mut rows = Vec::new();
    for (workload, data_type) in options.selected_rows() {
        let row = measure(
            backend, workload, data_type, options, references, threads, settle,
        );
        report::print_row(&row);
        rows.push(row);
    }
    rows
}

fn measure(
    backend: &CpuBackend,
    workload: Workload,
    data_type: DataType,
    options: &BenchArgs,
    references: &[Reference],
    threads: usize,
    settle: &Settle,
) -> Row {
    let op = descriptor(workload, data_type);
    let inputs = random_inputs(&op, data_type);
    let input_refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let outputs: Vec<Vec<u8>> = op
        .outputs()
        .iter()
        .map(|(_, d)| vec![0u8; d.total_tensor_size_in_bytes as usize])
        .collect();
    let written: usize = outputs.iter().map(Vec::len).sum();
    let bytes_moved = 2 * written;
    // The bytes the workload must move: every input byte it reads (a stride-2 slice reads
    // every cache line of its input) and every output byte.
    let read: usize = inputs.iter().map(Vec::len).sum();
    let bytes_fair = read.max(written) + written;
    let compiled = backend.compile(&op).expect("bench descriptors are valid");
    let outputs = RefCell::new(outputs);
    let (rows, cols) = shape(data_type);
    let (rows, cols) = (rows as usize, cols as usize);
    let nd = |allocating| match data_type.element_size() {
        1 => ndarray_work::<u8>(workload, rows, cols, allocating),
        2 => ndarray_work::<u16>(workload, rows, cols, allocating),
        _ => ndarray_work::<u32>(workload, rows, cols, allocating),
    };
    let mut copies = cpu_and_references(&*compiled, &inputs, &outputs, references, threads);
    let mut ndarray_alloc = nd(true);
    let mut ndarray_assign = nd(false);
    // Rounds interleave all methods, so a slow moment on this shared machine slows all of
    // them; ratios are taken within a round, then summarized over rounds.
    let mut methods: Vec<&mut dyn FnMut()> = copies
        .iter_mut()
        .map(|c| &mut **c as &mut dyn FnMut())
        .collect();
    methods.push(&mut *ndarray_alloc);
    methods.push(&mut *ndarray_assign);
    let times = rounds(&mut methods, options.runs, LARGE_BATCH, settle);
    let n = references.len();
    let cpu_times = &times[0];
    let reference_times = &times[1..=n];
    let best = best_per_round(reference_times);
    // The reading references, when the copies leave input unread; otherwise the fair
    // reference is the best copy itself.
    let reading_times = &times[n + 1..times.len() - 2];
    let (fair, fair_name, fair_times) = if reading_times.is_empty() {
        (
            best.clone(),
            usual_best(references, reference_times),
            reference_times,
        )
    } else {
        let name = usual_best(references, reading_times);
        let name = references
            .iter()
            .find(|r| r.name() == name)
            .map_or(name, |r| r.reading_name());
        (best_per_round(reading_times), name, reading_times)
    };
    let (nd_times, assign_times) = (&times[times.len() - 2], &times[times.len() - 1]);
    let oracle_seconds = options.oracle.then(|| {
        let start = Instant::now();
        let out = oracle_execute(&op, &input_refs).expect("valid");
        std::hint::black_box(out);
        start.elapsed().as_secs_f64()
    });
    Row {
        workload: workload.name(),
        data_type,
        bytes_moved,
        cpu: rate(bytes_moved, cpu_times),
        references: references
            .iter()
            .zip(reference_times)
            .map(|(r, t)| (r.name(), rate(bytes_moved, t)))
            .collect(),
        best: rate(bytes_moved, &best),
        best_name: usual_best(references, reference_times),
        bytes_fair,
        fair: rate(bytes_fair, &fair),
        fair_name,
        fair_references: references
            .iter()
            .zip(fair_times)
            .map(|(r, t)| {
                let name = if reading_times.is_empty() {
                    r.name()
                } else {
                    r.reading_name()
                };
                (name, rate(bytes_fair, t))
            })
            .collect(),
        over_fair: ratios(&fair, cpu_times),
        ndarray: rate(bytes_moved, nd_times),
        ndarray_assign: rate(bytes_moved, assign_times),
        over_best: ratios(&best, cpu_times),
        over_memcpy: ratios(&reference_times[0], cpu_times),
        over_ndarray: ratios(nd_times, cpu_times),
        over_assign: ratios(assign_times, cpu_times),
        oracle_seconds,
        contiguous: workload.contiguous(),
    }
}
