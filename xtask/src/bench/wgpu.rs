//! `--backend wgpu`: the wgpu backend's work next to the adapter's own copies of the same
//! bytes (copy_buffer_to_buffer and the simplest kernel moving as many bytes).

use super::error::BenchError;
use super::options::BenchArgs;
use super::report::write_json;
use super::rounds::{gbps, spread};
use super::workloads::{Workload, descriptor, random_inputs};
use dmlcts_backend_wgpu::WgpuBackend;
use dmlcts_tensor::{Backend, DataType};

/// The wgpu backend's work, with buffers already on the device, next to the adapter's own
/// copy_buffer_to_buffer of the bytes written (the device's memcpy), in interleaved rounds.
/// wgpu does not report a device's memory bandwidth, so that is the only reference.
pub(super) fn bench_wgpu(options: &BenchArgs) -> Result<(), BenchError> {
    let mut wgpu_options = dmlcts_backend_wgpu::WgpuOptions::default();
    if options.adapter.is_some() {
        wgpu_options.adapter = options.adapter.clone();
    }
    let backend = WgpuBackend::new(wgpu_options);
    if let Some(reason) = backend.unavailable_reason() {
        return Err(BenchError::WgpuUnavailable(reason));
    }
    print_header(options.runs, &backend);
    let rows: Vec<_> = (options.selected_rows().into_iter())
        .filter_map(|(workload, data_type)| wgpu_row(&backend, workload, data_type, options.runs))
        .collect();
    if let Some(path) = &options.json {
        let report =
            serde_json::json!({"adapter": backend.device(), "runs": options.runs, "results": rows});
        return write_json(path, &report);
    }
    Ok(())
}

/// The lines above the table: the rounds, the adapter, the references, and the header.
fn print_header(runs: usize, backend: &WgpuBackend) {
    println!(
        "dmlcts bench (wgpu): 64 MiB tensors, {} rounds (median [min-max]), adapter {}",
        runs,
        backend.device()
    );
    println!(
        "memory bandwidth: not reported (wgpu exposes none), so the reference is the adapter's copy_buffer_to_buffer"
    );
    println!(
        "lane copy: the simplest kernel moving as many bytes (32 16-byte blocks a lane); no-move: this kernel's dispatches with the moves removed"
    );
    println!(
        "{:<24} {:>7} {:>20} {:>10} {:>18} {:>10} {:>10} {:>11}",
        "workload",
        "type",
        "wgpu GB/s",
        "copy GB/s",
        "wgpu/copy",
        "lane GB/s",
        "wgpu/lane",
        "no-move ms"
    );
}

/// One workload and type: measured, printed as a row of the table, and returned as JSON;
/// `None` after a line naming the error when the backend could not measure it.
fn wgpu_row(
    backend: &WgpuBackend,
    workload: Workload,
    data_type: DataType,
    runs: usize,
) -> Option<serde_json::Value> {
    let op = descriptor(workload, data_type);
    let inputs = random_inputs(&op, data_type);
    let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let written: u64 = op
        .outputs()
        .iter()
        .map(|(_, d)| d.total_tensor_size_in_bytes)
        .sum();
    let moved = 2 * written as usize;
    let rounds = match backend.measure(&op, &refs, runs) {
        Ok(rounds) => rounds,
        Err(e) => {
            println!("{:<24} {:>7} error: {e}", workload.name(), data_type.name());
            return None;
        }
    };
    let ours = spread(rounds.iter().map(|r| gbps(moved, r.work)).collect());
    let copy = spread(rounds.iter().map(|r| gbps(moved, r.copy)).collect());
    let ratio = spread(
        rounds
            .iter()
            .map(|r| r.copy.as_secs_f64() / r.work.as_secs_f64())
            .collect(),
    );
    let lane = spread(rounds.iter().map(|r| gbps(moved, r.lane_copy)).collect());
    let over_lane = spread(
        rounds
            .iter()
            .map(|r| r.lane_copy.as_secs_f64() / r.work.as_secs_f64())
            .collect(),
    );
    let empty: Option<(f64, f64, f64)> = rounds
        .iter()
        .map(|r| r.empty_kernel.map(|t| t.as_secs_f64() * 1e3))
        .collect::<Option<Vec<f64>>>()
        .map(spread);
    println!(
        "{:<24} {:>7} {:>6.2} [{:.2}-{:.2}] {:>10.2} {:>5.2} [{:.2}-{:.2}] {:>10.2} {:>10.2} {:>11}",
        workload.name(),
        data_type.name(),
        ours.0,
        ours.1,
        ours.2,
        copy.0,
        ratio.0,
        ratio.1,
        ratio.2,
        lane.0,
        over_lane.0,
        empty.map_or("-".to_string(), |e| format!("{:.1}", e.0)),
    );
    Some(serde_json::json!({
        "workload": workload.name(), "data_type": data_type.name(),
        "bytes_moved": moved,
        "wgpu_gbps": ours.0, "wgpu_gbps_min": ours.1, "wgpu_gbps_max": ours.2,
        "copy_buffer_to_buffer_gbps": copy.0,
        "copy_buffer_to_buffer_gbps_min": copy.1, "copy_buffer_to_buffer_gbps_max": copy.2,
        "wgpu_over_copy": ratio.0, "wgpu_over_copy_min": ratio.1, "wgpu_over_copy_max": ratio.2,
        "lane_copy_gbps": lane.0, "wgpu_over_lane_copy": over_lane.0,
        "wgpu_over_lane_copy_min": over_lane.1, "wgpu_over_lane_copy_max": over_lane.2,
        "no_move_kernel_ms": empty.map(|e| e.0),
        "memory_bandwidth_gbps": null,
        "contiguous": workload.contiguous(),
    }))
}
