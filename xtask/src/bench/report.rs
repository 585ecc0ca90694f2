//! The CPU bench's printed table and JSON report: one row per workload and type, the targets
//! line, and the report that holds them with the machine's copy figures and the scaling table.

use super::error::BenchError;
use dmlcts_backend_cpu::stream::NONTEMPORAL_STORES;
use dmlcts_tensor::DataType;

pub(super) fn with_range(v: (f64, f64, f64)) -> String {
    format!("{:.2} [{:.2}-{:.2}]", v.0, v.1, v.2)
}

pub(super) fn range_json(v: (f64, f64, f64)) -> serde_json::Value {
    serde_json::json!({ "median": v.0, "min": v.1, "max": v.2 })
}

pub(super) struct Row {
    pub(super) workload: &'static str,
    pub(super) data_type: DataType,
    pub(super) bytes_moved: usize,
    /// GB/s, median [min-max] over rounds.
    pub(super) cpu: (f64, f64, f64),
    /// Each reference's GB/s, median [min-max].
    pub(super) references: Vec<(&'static str, (f64, f64, f64))>,
    /// The best copy of each round, GB/s, and the reference that was usually it.
    pub(super) best: (f64, f64, f64),
    pub(super) best_name: &'static str,
    /// The bytes the workload must move (every input byte it reads, every output byte).
    pub(super) bytes_fair: usize,
    /// The fair reference of each round (the best copy of the bytes the workload must move),
    /// GB/s of `bytes_fair`, and the reference that was usually it; each of them.
    pub(super) fair: (f64, f64, f64),
    pub(super) fair_name: &'static str,
    pub(super) fair_references: Vec<(&'static str, (f64, f64, f64))>,
    pub(super) ndarray: (f64, f64, f64),
    pub(super) ndarray_assign: (f64, f64, f64),
    /// Per-round ratios cpu / reference (time of the reference / time of cpu), median
    /// [min-max].
    pub(super) over_best: (f64, f64, f64),
    pub(super) over_fair: (f64, f64, f64),
    pub(super) over_memcpy: (f64, f64, f64),
    pub(super) over_ndarray: (f64, f64, f64),
    pub(super) over_assign: (f64, f64, f64),
    pub(super) oracle_seconds: Option<f64>,
    pub(super) contiguous: bool,
}

/// Contiguous workloads are held to this fraction of the best copy.
const CONTIGUOUS_TARGET: f64 = 0.9;

/// Gathers (every other workload) are held to this fraction of their fair reference.
const GATHER_TARGET: f64 = 0.8;

/// The lines above the table: the rounds, the cores, and the reference copies.
pub(super) fn print_preamble(runs: usize, threads: usize) {
    println!(
        "dmlcts bench: 64 MiB tensors, {} rounds (median [min-max]), {threads} core(s), CPU backend with {threads} thread(s)",
        runs
    );
    println!(
        "reference copies (xN: {threads} threads on disjoint parts; stream: non-temporal stores{}); best = the fastest in each round",
        if NONTEMPORAL_STORES {
            ""
        } else {
            ", not on this platform"
        }
    );
    println!(
        "fair = the best copy of the bytes the workload must move: the best copy, or where the copies leave input unread (stride 2) the best of the same copies that also read it (+read)"
    );
}

/// The machine's copy figures on 64 MiB, then the table's header.
pub(super) fn print_machine_and_header(machine: &[(&'static str, (f64, f64, f64))]) {
    let machine_line: Vec<String> = machine
        .iter()
        .map(|(name, v)| format!("{name} {}", with_range(*v)))
        .collect();
    println!("64 MiB copies, GB/s: {}", machine_line.join("; "));
    println!(
        "{:<24} {:>7} {:>20} {:>7} {:>7} {:>10} {:>7} {:>14} {:>7} {:>7} {:>8} {:>17} {:>17} {:>17} {:>18} {:>17}",
        "workload",
        "type",
        "cpu GB/s",
        "memcpy",
        "best",
        "best is",
        "fair",
        "fair is",
        "ndarray",
        "assign",
        "oracle s",
        "cpu/fair",
        "cpu/best",
        "cpu/memcpy",
        "cpu/nd",
        "cpu/assign"
    );
}

/// One workload's line of the table.
pub(super) fn print_row(row: &Row) {
    println!(
        "{:<24} {:>7} {:>20} {:>7.2} {:>7.2} {:>10} {:>7.2} {:>14} {:>7.2} {:>7.2} {:>8} {:>17} {:>17} {:>17} {:>18} {:>17}",
        row.workload,
        row.data_type.name(),
        with_range(row.cpu),
        row.references[0].1.0,
        row.best.0,
        row.best_name,
        row.fair.0,
        row.fair_name,
        row.ndarray.0,
        row.ndarray_assign.0,
        row.oracle_seconds
            .map_or("-".to_string(), |s| format!("{s:.2}")),
        with_range(row.over_fair),
        with_range(row.over_best),
        with_range(row.over_memcpy),
        with_range(row.over_ndarray),
        with_range(row.over_assign),
    );
}

/// The rows below their targets, or that every row met them (nothing when no row ran).
pub(super) fn print_targets(rows: &[Row]) {
    let below: Vec<String> = rows
        .iter()
        .filter(|r| {
            (r.contiguous && r.over_best.0 < CONTIGUOUS_TARGET)
                || (!r.contiguous && r.over_fair.0 < GATHER_TARGET)
                || r.over_assign.0 < 1.0
                || r.over_ndarray.0 < 1.0
        })
        .map(|r| format!("{} {}", r.workload, r.data_type))
        .collect();
    if !rows.is_empty() {
        if below.is_empty() {
            println!(
                "targets met (medians): >= {CONTIGUOUS_TARGET}x the best copy on contiguous workloads, >= {GATHER_TARGET}x the fair reference on the others, >= 1.0x ndarray (both APIs) on all"
            );
        } else {
            println!("below target: {}", below.join("; "));
        }
    }
}

/// The CPU bench's JSON report: the machine's copies, every row, and the scaling table.
pub(super) fn cpu_report(
    threads: usize,
    runs: usize,
    machine: &[(&'static str, (f64, f64, f64))],
    rows: &[Row],
    scaling: serde_json::Value,
) -> serde_json::Value {
    let json: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            let refs: serde_json::Map<String, serde_json::Value> = r
                .references
                .iter()
                .map(|(name, v)| (name.to_string(), range_json(*v)))
                .collect();
            let fair_refs: serde_json::Map<String, serde_json::Value> = r
                .fair_references
                .iter()
                .map(|(name, v)| (name.to_string(), range_json(*v)))
                .collect();
            serde_json::json!({
                "workload": r.workload,
                "data_type": r.data_type.name(),
                "bytes_moved": r.bytes_moved,
                "cpu_gbps": range_json(r.cpu),
                "reference_gbps": refs,
                "best_copy_gbps": range_json(r.best),
                "best_copy_usually": r.best_name,
                "bytes_read_and_written": r.bytes_fair,
                "fair_reference_gbps": range_json(r.fair),
                "fair_reference_usually": r.fair_name,
                "fair_references_gbps": fair_refs,
                "cpu_over_fair_reference": range_json(r.over_fair),
                "ndarray_gbps": range_json(r.ndarray),
                "ndarray_assign_gbps": range_json(r.ndarray_assign),
                "oracle_seconds": r.oracle_seconds,
                "cpu_over_best_copy": range_json(r.over_best),
                "cpu_over_memcpy": range_json(r.over_memcpy),
                "cpu_over_ndarray": range_json(r.over_ndarray),
                "cpu_over_ndarray_assign": range_json(r.over_assign),
                "contiguous": r.contiguous,
            })
        })
        .collect();
    let machine_json: serde_json::Map<String, serde_json::Value> = machine
        .iter()
        .map(|(name, v)| (name.to_string(), range_json(*v)))
        .collect();
    serde_json::json!({
        "cores": threads,
        "runs": runs,
        "nontemporal_stores": NONTEMPORAL_STORES,
        "copies_64mib_gbps": machine_json,
        "results": json,
        "scaling": scaling,
    })
}

/// Writes a JSON report to `path`.
pub(super) fn write_json(path: &str, report: &serde_json::Value) -> Result<(), BenchError> {
    std::fs::write(
        path,
        serde_json::to_string_pretty(report).unwrap_or_default(),
    )
    .map_err(|error| BenchError::WriteJson {
        path: path.to_string(),
        error,
    })
}
