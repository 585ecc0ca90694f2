//! `cargo xtask bench`: the CPU backend's throughput on 64 MiB tensors, next to memcpy (the
//! physical reference), ndarray doing the same work, and the oracle, all in one process.
//! GB/s = (bytes read + bytes written) / time, median of several runs.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_oracle::execute as oracle_execute;
use dmlcts_tensor::{
    Backend, DataType, JoinDesc, OperatorDesc, OutputBinding, Slice1Desc, SplitDesc, TensorDesc,
    fill_random_bits,
};
use ndarray::{Array2, ArrayView2, Axis, s};
use std::time::{Duration, Instant};

const TOTAL_BYTES: usize = 64 << 20;

struct Options {
    backend: String,
    adapter: Option<String>,
    runs: usize,
    oracle: bool,
    json: Option<String>,
    filter: Option<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        backend: "cpu".to_string(),
        adapter: None,
        runs: 5,
        oracle: true,
        json: None,
        filter: None,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = || iter.next().cloned().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--runs" => {
                options.runs = value()?.parse().map_err(|_| "--runs takes a number")?;
                options.runs = options.runs.max(1);
            }
            "--no-oracle" => options.oracle = false,
            "--json" => options.json = Some(value()?),
            "--filter" => options.filter = Some(value()?),
            "--backend" => {
                let name = value()?;
                if name != "cpu" && name != "wgpu" {
                    return Err(format!("bench supports --backend cpu or wgpu (got {name})"));
                }
                options.backend = name;
            }
            "--adapter" => options.adapter = Some(value()?),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(options)
}

#[derive(Clone, Copy)]
enum Workload {
    JoinLastAxis,
    JoinAxis0,
    SplitLastAxis,
    SplitAxis0,
    SliceStride1,
    SliceReverseLastAxis,
    SliceStride2,
}

impl Workload {
    const ALL: [Workload; 7] = [
        Workload::JoinLastAxis,
        Workload::JoinAxis0,
        Workload::SplitLastAxis,
        Workload::SplitAxis0,
        Workload::SliceStride1,
        Workload::SliceReverseLastAxis,
        Workload::SliceStride2,
    ];

    fn name(self) -> &'static str {
        match self {
            Workload::JoinLastAxis => "join 4, last axis",
            Workload::JoinAxis0 => "join 4, axis 0",
            Workload::SplitLastAxis => "split 4, last axis",
            Workload::SplitAxis0 => "split 4, axis 0",
            Workload::SliceStride1 => "slice1 stride 1",
            Workload::SliceReverseLastAxis => "slice1 stride -1 (last)",
            Workload::SliceStride2 => "slice1 stride 2 (last)",
        }
    }

    /// Contiguous workloads are held to >= 0.8x memcpy.
    fn contiguous(self) -> bool {
        matches!(
            self,
            Workload::JoinAxis0 | Workload::SplitAxis0 | Workload::SliceStride1
        )
    }
}

/// A 2-D tensor of TOTAL_BYTES: 4096 rows.
fn shape(data_type: DataType) -> (u32, u32) {
    let rows = 4096u32;
    let cols = (TOTAL_BYTES / data_type.element_size() / rows as usize) as u32;
    (rows, cols)
}

fn descriptor(workload: Workload, data_type: DataType) -> OperatorDesc {
    let (rows, cols) = shape(data_type);
    let t = |r: u32, c: u32| TensorDesc::packed(data_type, &[r, c]);
    match workload {
        Workload::JoinLastAxis => OperatorDesc::Join(JoinDesc {
            input_tensors: vec![t(rows, cols / 4); 4],
            output_tensor: t(rows, cols),
            axis: 1,
        }),
        Workload::JoinAxis0 => OperatorDesc::Join(JoinDesc {
            input_tensors: vec![t(rows / 4, cols); 4],
            output_tensor: t(rows, cols),
            axis: 0,
        }),
        Workload::SplitLastAxis => OperatorDesc::Split(SplitDesc {
            input_tensor: t(rows, cols),
            output_tensors: vec![t(rows, cols / 4); 4],
            axis: 1,
        }),
        Workload::SplitAxis0 => OperatorDesc::Split(SplitDesc {
            input_tensor: t(rows, cols),
            output_tensors: vec![t(rows / 4, cols); 4],
            axis: 0,
        }),
        Workload::SliceStride1 | Workload::SliceReverseLastAxis | Workload::SliceStride2 => {
            let (stride, out_cols) = match workload {
                Workload::SliceStride1 => (1, cols),
                Workload::SliceReverseLastAxis => (-1, cols),
                _ => (2, cols / 2),
            };
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: t(rows, cols),
                output_tensor: t(rows, out_cols),
                dimension_count: 2,
                input_window_offsets: vec![0, 0],
                input_window_sizes: vec![rows, cols],
                input_window_strides: vec![1, stride],
            })
        }
    }
}

/// Random bit patterns for every input of `op`.
fn random_inputs(op: &OperatorDesc, data_type: DataType) -> Vec<Vec<u8>> {
    op.inputs()
        .iter()
        .enumerate()
        .map(|(i, (_, d))| {
            let mut bytes = vec![0u8; d.total_tensor_size_in_bytes as usize];
            fill_random_bits(data_type, &mut bytes, i as u64);
            bytes
        })
        .collect()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn gbps(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e9
}

/// The axis a Join or Split works on, and the shape of each of its 4 parts.
fn quarters(workload: Workload, rows: usize, cols: usize) -> (usize, (usize, usize)) {
    if matches!(workload, Workload::JoinAxis0 | Workload::SplitAxis0) {
        (0, (rows / 4, cols))
    } else {
        (1, (rows, cols / 4))
    }
}

/// ndarray doing the same work on element type T, as a closure that owns its arrays.
/// `allocating`: the APIs that return new arrays (concatenate, split_at + to_owned, slicing +
/// to_owned); otherwise `assign` into arrays allocated once.
fn ndarray_work<T: Copy + From<u8> + 'static>(
    workload: Workload,
    rows: usize,
    cols: usize,
    allocating: bool,
) -> Box<dyn FnMut()> {
    // Non-zero everywhere: untouched zero pages would make reads look free.
    let whole: Array2<T> = Array2::from_elem((rows, cols), T::from(1));
    match workload {
        Workload::JoinLastAxis | Workload::JoinAxis0 => {
            let (axis, part_shape) = quarters(workload, rows, cols);
            let parts: Vec<Array2<T>> = (0..4)
                .map(|_| Array2::from_elem(part_shape, T::from(1)))
                .collect();
            let mut out = whole;
            Box::new(move || {
                let views: Vec<ArrayView2<T>> = parts.iter().map(|p| p.view()).collect();
                if allocating {
                    let joined = ndarray::concatenate(Axis(axis), &views).expect("same shapes");
                    std::hint::black_box(&joined);
                } else {
                    for (i, v) in views.iter().enumerate() {
                        if axis == 0 {
                            out.slice_mut(s![i * rows / 4..(i + 1) * rows / 4, ..])
                                .assign(v);
                        } else {
                            out.slice_mut(s![.., i * cols / 4..(i + 1) * cols / 4])
                                .assign(v);
                        }
                    }
                    std::hint::black_box(&out);
                }
            })
        }
        Workload::SplitLastAxis | Workload::SplitAxis0 => {
            let (axis, part_shape) = quarters(workload, rows, cols);
            let mut outs: Vec<Array2<T>> = (0..4)
                .map(|_| Array2::from_elem(part_shape, T::from(2)))
                .collect();
            Box::new(move || {
                let mut rest = whole.view();
                for out in outs.iter_mut() {
                    let cut = if axis == 0 {
                        part_shape.0
                    } else {
                        part_shape.1
                    };
                    let at = cut.min(rest.len_of(Axis(axis)));
                    let (piece, tail) = rest.split_at(Axis(axis), at);
                    if allocating {
                        std::hint::black_box(piece.to_owned());
                    } else {
                        out.assign(&piece);
                    }
                    rest = tail;
                }
                std::hint::black_box(&outs);
            })
        }
        Workload::SliceStride1 | Workload::SliceReverseLastAxis | Workload::SliceStride2 => {
            let mut out: Array2<T> = match workload {
                Workload::SliceStride2 => Array2::from_elem((rows, cols / 2), T::from(2)),
                _ => Array2::from_elem((rows, cols), T::from(2)),
            };
            Box::new(move || {
                let view = match workload {
                    Workload::SliceStride1 => whole.slice(s![.., ..]),
                    Workload::SliceReverseLastAxis => whole.slice(s![.., ..;-1]),
                    _ => whole.slice(s![.., ..;2]),
                };
                if allocating {
                    std::hint::black_box(view.to_owned());
                } else {
                    out.assign(&view);
                    std::hint::black_box(&out);
                }
            })
        }
    }
}

struct Row {
    workload: &'static str,
    data_type: DataType,
    bytes_moved: usize,
    cpu: f64,
    memcpy: f64,
    ndarray: f64,
    ndarray_assign: f64,
    /// Medians of the per-round ratios cpu / reference (time of the reference / time of cpu).
    over_memcpy: f64,
    over_ndarray: f64,
    over_assign: f64,
    oracle_seconds: Option<f64>,
    contiguous: bool,
}

pub fn bench_main(args: &[String]) -> i32 {
    let options = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "error: {e}\nusage: cargo xtask bench [--runs N] [--no-oracle] [--json FILE] [--filter TEXT]"
            );
            return 2;
        }
    };
    if options.backend == "wgpu" {
        return bench_wgpu(&options);
    }
    let backend = CpuBackend::new();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "dmlcts bench: 64 MiB tensors, median of {} runs, {threads} core(s), CPU backend with {threads} thread(s)",
        options.runs
    );
    println!(
        "{:<24} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10}",
        "workload",
        "type",
        "cpu GB/s",
        "memcpy",
        "ndarray",
        "nd assign",
        "oracle s",
        "cpu/memcpy",
        "cpu/nd",
        "cpu/assign"
    );
    let mut rows = Vec::new();
    for data_type in [DataType::Float32, DataType::Float16, DataType::Uint8] {
        for workload in Workload::ALL {
            let label = format!("{} {}", workload.name(), data_type);
            if options
                .filter
                .as_ref()
                .is_some_and(|f| !label.contains(f.as_str()))
            {
                continue;
            }
            let row = measure(&backend, workload, data_type, &options);
            println!(
                "{:<24} {:>7} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9} {:>10.2} {:>10.2} {:>10.2}",
                row.workload,
                row.data_type.name(),
                row.cpu,
                row.memcpy,
                row.ndarray,
                row.ndarray_assign,
                row.oracle_seconds
                    .map_or("-".to_string(), |s| format!("{s:.2}")),
                row.over_memcpy,
                row.over_ndarray,
                row.over_assign,
            );
            rows.push(row);
        }
    }
    let below: Vec<String> = rows
        .iter()
        .filter(|r| {
            (r.contiguous && r.over_memcpy < 0.8) || r.over_assign < 1.0 || r.over_ndarray < 1.0
        })
        .map(|r| format!("{} {}", r.workload, r.data_type))
        .collect();
    if below.is_empty() {
        println!("targets met: >= 0.8x memcpy on contiguous workloads, >= 1.0x ndarray on all");
    } else {
        println!("below target: {}", below.join("; "));
    }
    if let Some(path) = &options.json {
        let json: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "workload": r.workload,
                    "data_type": r.data_type.name(),
                    "bytes_moved": r.bytes_moved,
                    "cpu_gbps": r.cpu,
                    "memcpy_gbps": r.memcpy,
                    "ndarray_gbps": r.ndarray,
                    "ndarray_assign_gbps": r.ndarray_assign,
                    "oracle_seconds": r.oracle_seconds,
                    "cpu_over_memcpy": r.over_memcpy,
                    "cpu_over_ndarray": r.over_ndarray,
                    "cpu_over_ndarray_assign": r.over_assign,
                    "contiguous": r.contiguous,
                })
            })
            .collect();
        let report = serde_json::json!({ "cores": threads, "runs": options.runs, "results": json });
        if let Err(e) = std::fs::write(
            path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        ) {
            eprintln!("error: cannot write {path}: {e}");
            return 1;
        }
    }
    0
}

fn measure(
    backend: &CpuBackend,
    workload: Workload,
    data_type: DataType,
    options: &Options,
) -> Row {
    let op = descriptor(workload, data_type);
    let inputs = random_inputs(&op, data_type);
    let input_refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outputs: Vec<Vec<u8>> = op
        .outputs()
        .iter()
        .map(|(_, d)| vec![0u8; d.total_tensor_size_in_bytes as usize])
        .collect();
    let written: usize = outputs.iter().map(Vec::len).sum();
    let bytes_moved = 2 * written;
    let compiled = backend.compile(&op).expect("bench descriptors are valid");
    let source = vec![1u8; written];
    let mut target = vec![0u8; written];
    let (rows, cols) = shape(data_type);
    let (rows, cols) = (rows as usize, cols as usize);
    let nd = |allocating| match data_type.element_size() {
        1 => ndarray_work::<u8>(workload, rows, cols, allocating),
        2 => ndarray_work::<u16>(workload, rows, cols, allocating),
        _ => ndarray_work::<u32>(workload, rows, cols, allocating),
    };
    let mut cpu = || {
        let mut bindings: Vec<OutputBinding<'_>> = outputs
            .iter_mut()
            .map(|b| OutputBinding::whole(b))
            .collect();
        compiled
            .execute(&input_refs, &mut bindings)
            .expect("executes");
    };
    let mut memcpy = || {
        target.copy_from_slice(&source);
        std::hint::black_box(&target);
    };
    let mut ndarray_alloc = nd(true);
    let mut ndarray_assign = nd(false);
    // Rounds interleave the four, so a slow moment on this shared machine slows all of them;
    // ratios are taken within a round, then the median over rounds is reported.
    let mut methods: [&mut dyn FnMut(); 4] = [
        &mut cpu,
        &mut memcpy,
        &mut *ndarray_alloc,
        &mut *ndarray_assign,
    ];
    for method in methods.iter_mut() {
        method(); // warm-up: first touch of every page
    }
    let mut times: [Vec<Duration>; 4] = Default::default();
    for _ in 0..options.runs {
        for (k, method) in methods.iter_mut().enumerate() {
            let start = Instant::now();
            method();
            times[k].push(start.elapsed());
        }
    }
    let ratio = |k: usize| {
        let mut ratios: Vec<f64> = (0..options.runs)
            .map(|r| times[k][r].as_secs_f64() / times[0][r].as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios[ratios.len() / 2]
    };
    let (over_memcpy, over_ndarray, over_assign) = (ratio(1), ratio(2), ratio(3));
    let [cpu_time, memcpy_time, ndarray_time, assign_time] = times.map(median);
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
        cpu: gbps(bytes_moved, cpu_time),
        memcpy: gbps(bytes_moved, memcpy_time),
        ndarray: gbps(bytes_moved, ndarray_time),
        ndarray_assign: gbps(bytes_moved, assign_time),
        over_memcpy,
        over_ndarray,
        over_assign,
        oracle_seconds,
        contiguous: workload.contiguous(),
    }
}

/// Median, minimum and maximum.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    (
        values[values.len() / 2],
        values[0],
        values[values.len() - 1],
    )
}

/// The wgpu backend's work, with buffers already on the device, next to the adapter's own
/// copy_buffer_to_buffer of the bytes written (the device's memcpy), in interleaved rounds.
/// wgpu does not report a device's memory bandwidth, so that is the only reference.
fn bench_wgpu(options: &Options) -> i32 {
    let mut wgpu_options = dmlcts_backend_wgpu::WgpuOptions::default();
    if options.adapter.is_some() {
        wgpu_options.adapter = options.adapter.clone();
    }
    let backend = dmlcts_backend_wgpu::WgpuBackend::new(wgpu_options);
    if let Some(reason) = backend.unavailable_reason() {
        eprintln!("bench: the wgpu backend is unavailable: {reason}");
        return 1;
    }
    println!(
        "dmlcts bench (wgpu): 64 MiB tensors, {} rounds (median [min-max]), adapter {}",
        options.runs,
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
    let mut rows = Vec::new();
    for data_type in [DataType::Float32, DataType::Float16, DataType::Uint8] {
        for workload in Workload::ALL {
            let label = format!("{} {}", workload.name(), data_type);
            if options
                .filter
                .as_ref()
                .is_some_and(|f| !label.contains(f.as_str()))
            {
                continue;
            }
            let op = descriptor(workload, data_type);
            let inputs = random_inputs(&op, data_type);
            let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
            let written: u64 = op
                .outputs()
                .iter()
                .map(|(_, d)| d.total_tensor_size_in_bytes)
                .sum();
            let moved = 2 * written as usize;
            let rounds = match backend.measure(&op, &refs, options.runs) {
                Ok(rounds) => rounds,
                Err(e) => {
                    println!("{:<24} {:>7} error: {e}", workload.name(), data_type.name());
                    continue;
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
            rows.push(serde_json::json!({
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
            }));
        }
    }
    if let Some(path) = &options.json {
        let report =
            serde_json::json!({"adapter": backend.device(), "runs": options.runs, "results": rows});
        if let Err(e) = std::fs::write(
            path,
            serde_json::to_string_pretty(&report).unwrap_or_default(),
        ) {
            eprintln!("error: cannot write {path}: {e}");
            return 1;
        }
    }
    0
}
