//! `cargo xtask bench`: the CPU backend's throughput on 64 MiB tensors, next to the machine's
//! reference copies of the same bytes (memcpy on one thread, memcpy over every core in large
//! disjoint parts, and the same two with non-temporal stores; the fastest in each round is
//! "the best copy"), ndarray doing the same work, and the oracle, all in one process; then a
//! size-scaling table (4 KiB to 256 MiB) for the contiguous Join and the reversed Slice1.
//! GB/s = (bytes read + bytes written) / time. The reference copies of a workload move the
//! backend's own buffers (its inputs into its outputs, byte for byte), so they touch the same
//! memory. Methods run interleaved, round by round, each after a read that settles the caches;
//! each ratio is reported as the median with [min-max] of its per-round ratios.

use dmlcts_backend_cpu::CpuBackend;
use dmlcts_backend_cpu::stream::{NONTEMPORAL_STORES, copy_nontemporal};
use dmlcts_oracle::execute as oracle_execute;
use dmlcts_tensor::{
    Backend, CompiledOperator, DataType, JoinDesc, OperatorDesc, OutputBinding, Slice1Desc,
    SplitDesc, TensorDesc, fill_random_bits,
};
use ndarray::{Array2, ArrayView2, Axis, s};
use std::cell::RefCell;
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
    descriptor_of_shape(workload, data_type, rows, cols)
}

/// The workload on a `rows` x `cols` tensor (rows divisible by 4 for Join and Split on axis
/// 0, cols divisible by 4 on the last axis).
fn descriptor_of_shape(
    workload: Workload,
    data_type: DataType,
    rows: u32,
    cols: u32,
) -> OperatorDesc {
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

/// A reference copy of the same bytes: memcpy (`copy_from_slice`) or non-temporal stores, on
/// one thread or over every core in large disjoint parts (one per thread).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reference {
    Memcpy,
    MemcpyParts,
    Stream,
    StreamParts,
}

impl Reference {
    /// The references this platform has (non-temporal ones only where `copy_nontemporal`
    /// really uses such stores).
    fn available(threads: usize) -> Vec<Reference> {
        let mut all = vec![Reference::Memcpy];
        if threads > 1 {
            all.push(Reference::MemcpyParts);
        }
        if NONTEMPORAL_STORES {
            all.push(Reference::Stream);
            if threads > 1 {
                all.push(Reference::StreamParts);
            }
        }
        all
    }

    fn name(self) -> &'static str {
        match self {
            Reference::Memcpy => "memcpy",
            Reference::MemcpyParts => "memcpy xN",
            Reference::Stream => "stream",
            Reference::StreamParts => "stream xN",
        }
    }

    /// Copies every (destination, source) pair of equal lengths, in order.
    fn run(self, pairs: Vec<(&mut [u8], &[u8])>, threads: usize) {
        let memcpy: fn(&mut [u8], &[u8]) = |d, s| d.copy_from_slice(s);
        match self {
            Reference::Memcpy => copy_pairs(pairs, memcpy),
            Reference::MemcpyParts => copy_in_parts(pairs, threads, memcpy),
            Reference::Stream => copy_pairs(pairs, copy_nontemporal),
            Reference::StreamParts => copy_in_parts(pairs, threads, copy_nontemporal),
        }
    }
}

/// A reference copy's source: random bytes like the backend's inputs (pages of one repeated
/// value may be merged or compressed by a hypervisor, which would make reads cheaper).
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len];
    fill_random_bits(DataType::Uint8, &mut bytes, seed);
    bytes
}

/// Buffers for the machine's own copy figures: a source and a target for each reference.
fn reference_buffers(references: &[Reference], len: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..references.len())
        .map(|k| (random_bytes(len, 0x5eed + k as u64), vec![0u8; len]))
        .collect()
}

/// Each reference as a call that copies its source into its target.
fn reference_copies<'a>(
    references: &[Reference],
    buffers: &'a mut [(Vec<u8>, Vec<u8>)],
    threads: usize,
) -> Vec<Box<dyn FnMut() + 'a>> {
    references
        .iter()
        .zip(buffers.iter_mut())
        .map(|(&reference, (source, target))| {
            Box::new(move || {
                reference.run(vec![(target.as_mut_slice(), source.as_slice())], threads);
                std::hint::black_box(&*target);
            }) as Box<dyn FnMut() + 'a>
        })
        .collect()
}

/// The backend's own buffers as (destination, source) pairs: every byte of the outputs in
/// order, from as many bytes of the inputs in order. The reference copies of a workload move
/// these, so they write the same memory the backend writes and read memory the backend
/// reads: on this VM the speed of a buffer depends on where it lies (one 256 MiB Join ran
/// at 0.78x its own copy in one process and 1.17x in the next, with copies of buffers of
/// their own), and buffers of their own made every ratio a draw of placements.
fn same_buffers<'a>(
    outputs: &'a mut [Vec<u8>],
    inputs: &'a [Vec<u8>],
) -> Vec<(&'a mut [u8], &'a [u8])> {
    let mut sources = inputs.iter().map(Vec::as_slice).filter(|s| !s.is_empty());
    let mut source: &[u8] = &[];
    let mut pairs = Vec::new();
    for output in outputs.iter_mut() {
        let mut rest = output.as_mut_slice();
        while !rest.is_empty() {
            if source.is_empty() {
                source = sources
                    .next()
                    .expect("bench workloads read at least the bytes they write");
            }
            let n = rest.len().min(source.len());
            let (to, after) = std::mem::take(&mut rest).split_at_mut(n);
            let (from, remaining) = source.split_at(n);
            pairs.push((to, from));
            rest = after;
            source = remaining;
        }
    }
    pairs
}

fn copy_pairs(pairs: Vec<(&mut [u8], &[u8])>, copy: fn(&mut [u8], &[u8])) {
    for (dst, src) in pairs {
        copy(dst, src);
    }
}

/// `copy` over `parts` threads, each on one run of about equal bytes of the pairs, in order
/// (the caller's thread too).
fn copy_in_parts(pairs: Vec<(&mut [u8], &[u8])>, parts: usize, copy: fn(&mut [u8], &[u8])) {
    let total: usize = pairs.iter().map(|p| p.0.len()).sum();
    let share = total.div_ceil(parts).max(1);
    let mut groups: Vec<Vec<(&mut [u8], &[u8])>> = vec![Vec::new()];
    let mut room = share;
    for (mut dst, mut src) in pairs {
        while !dst.is_empty() {
            if room == 0 {
                groups.push(Vec::new());
                room = share;
            }
            let n = room.min(dst.len());
            let (d, d_rest) = std::mem::take(&mut dst).split_at_mut(n);
            let (s, s_rest) = src.split_at(n);
            groups.last_mut().expect("one group at least").push((d, s));
            (dst, src, room) = (d_rest, s_rest, room - n);
        }
    }
    std::thread::scope(|scope| {
        let mut groups = groups.into_iter();
        let first = groups.next();
        for group in groups {
            scope.spawn(move || copy_pairs(group, copy));
        }
        if let Some(group) = first {
            copy_pairs(group, copy);
        }
    });
}

/// Bytes read before each timed batch: more than this machine's caches can keep of the
/// previous method's writes (lscpu here: 4 MiB of L2 per core, a shared L3 that reports
/// 480 MiB but is shared with other guests), so every method starts from the same state.
const SETTLE_BYTES: usize = 512 << 20;

/// Reads a large buffer of its own, so that the dirty cache lines a method leaves behind are
/// written back before the next method's clock starts, not during it. Without it each method
/// paid for its predecessor's writes: in a rotation of a fixed list the predecessor is always
/// the same method (the backend always ran after ndarray's cached stores, the two-thread
/// non-temporal copy after the one-thread one, which leaves nothing dirty).
struct Settle {
    buffer: Vec<u64>,
}

impl Settle {
    fn new() -> Settle {
        let mut buffer = vec![0u64; SETTLE_BYTES / 8];
        // Distinct values: pages of one repeated value may be merged by a hypervisor.
        for (i, word) in buffer.iter_mut().enumerate() {
            *word = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        Settle { buffer }
    }

    fn run(&self) {
        let sum = self.buffer.iter().fold(0u64, |a, &w| a.wrapping_add(w));
        std::hint::black_box(sum);
    }
}

/// How a method's calls are timed in a round.
#[derive(Clone, Copy)]
enum Batch {
    /// This many calls in a row, timed together after one settling read (small sizes: the
    /// caches are meant to be warm after the first call).
    Calls(usize),
    /// For each method, enough calls to last about this long in all (timed on a warm-up
    /// call; at most `MAX_CALLS`), each after its own settling read, and interleaved with the
    /// other methods' calls: pass p of a round runs call p of every method that makes that
    /// many. One 4 ms call on a shared VM is at the mercy of a descheduled thread or a
    /// neighbour's burst; interleaving spreads such moments over every method alike.
    Interleaved(Duration),
}

const MAX_CALLS: usize = 8;

/// Every method once (warm-up: first touch of every page), then `runs` rounds of every
/// method's calls (`batch`), each after `settle`. Round r starts with method r (mod the
/// count), so no method is always first in a round. Seconds per call, per method, per round.
fn rounds(
    methods: &mut [&mut dyn FnMut()],
    runs: usize,
    batch: Batch,
    settle: &Settle,
) -> Vec<Vec<f64>> {
    for method in methods.iter_mut() {
        method();
    }
    let count = methods.len();
    let mut times = vec![Vec::with_capacity(runs); count];
    let time = |method: &mut dyn FnMut(), calls: usize| {
        let start = Instant::now();
        for _ in 0..calls {
            method();
        }
        start.elapsed().as_secs_f64()
    };
    match batch {
        Batch::Calls(calls) => {
            for round in 0..runs {
                for j in 0..count {
                    let k = (round + j) % count;
                    settle.run();
                    times[k].push(time(&mut *methods[k], calls) / calls as f64);
                }
            }
        }
        Batch::Interleaved(wanted) => {
            let calls: Vec<usize> = methods
                .iter_mut()
                .map(|method| {
                    let once = time(&mut **method, 1).max(1e-9);
                    ((wanted.as_secs_f64() / once).ceil() as usize).clamp(1, MAX_CALLS)
                })
                .collect();
            let passes = calls.iter().copied().max().unwrap_or(1);
            for round in 0..runs {
                let mut spent = vec![0.0; count];
                for pass in 0..passes {
                    for j in 0..count {
                        let k = (round + j) % count;
                        if pass < calls[k] {
                            settle.run();
                            spent[k] += time(&mut *methods[k], 1);
                        }
                    }
                }
                for k in 0..count {
                    times[k].push(spent[k] / calls[k] as f64);
                }
            }
        }
    }
    times
}

/// The calls of the 64 MiB workloads: about 12 ms of each method a round (three of the
/// backend's), interleaved.
const LARGE_BATCH: Batch = Batch::Interleaved(Duration::from_millis(12));

/// Per round, the fastest of the reference methods' times.
fn best_per_round(times: &[Vec<f64>]) -> Vec<f64> {
    (0..times[0].len())
        .map(|r| times.iter().map(|t| t[r]).fold(f64::INFINITY, f64::min))
        .collect()
}

/// The reference that was fastest in the most rounds.
fn usual_best(references: &[Reference], times: &[Vec<f64>]) -> &'static str {
    let mut wins = vec![0usize; references.len()];
    let fastest_in = |r: usize| {
        (0..references.len())
            .min_by(|&a, &b| times[a][r].total_cmp(&times[b][r]))
            .unwrap_or(0)
    };
    for fastest in (0..times[0].len()).map(fastest_in) {
        wins[fastest] += 1;
    }
    let most = (0..references.len()).max_by_key(|&k| wins[k]).unwrap_or(0);
    references[most].name()
}

/// Median [min-max] of the per-round ratios `reference / ours` (times), i.e. our speed over
/// the reference's.
fn ratios(reference: &[f64], ours: &[f64]) -> (f64, f64, f64) {
    spread(reference.iter().zip(ours).map(|(r, o)| r / o).collect())
}

fn rate(bytes: usize, seconds: &[f64]) -> (f64, f64, f64) {
    let (median, fastest, slowest) = spread(seconds.to_vec());
    (
        bytes as f64 / median / 1e9,
        bytes as f64 / slowest / 1e9,
        bytes as f64 / fastest / 1e9,
    )
}

fn with_range(v: (f64, f64, f64)) -> String {
    format!("{:.2} [{:.2}-{:.2}]", v.0, v.1, v.2)
}

fn range_json(v: (f64, f64, f64)) -> serde_json::Value {
    serde_json::json!({ "median": v.0, "min": v.1, "max": v.2 })
}

struct Row {
    workload: &'static str,
    data_type: DataType,
    bytes_moved: usize,
    /// GB/s, median [min-max] over rounds.
    cpu: (f64, f64, f64),
    /// Each reference's GB/s, median [min-max].
    references: Vec<(&'static str, (f64, f64, f64))>,
    /// The best copy of each round, GB/s, and the reference that was usually it.
    best: (f64, f64, f64),
    best_name: &'static str,
    ndarray: (f64, f64, f64),
    ndarray_assign: (f64, f64, f64),
    /// Per-round ratios cpu / reference (time of the reference / time of cpu), median
    /// [min-max].
    over_best: (f64, f64, f64),
    over_memcpy: (f64, f64, f64),
    over_ndarray: (f64, f64, f64),
    over_assign: (f64, f64, f64),
    oracle_seconds: Option<f64>,
    contiguous: bool,
}

/// Contiguous workloads are held to this fraction of the best copy.
const CONTIGUOUS_TARGET: f64 = 0.9;

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
    let references = Reference::available(threads);
    let settle = Settle::new();
    println!(
        "dmlcts bench: 64 MiB tensors, {} rounds (median [min-max]), {threads} core(s), CPU backend with {threads} thread(s)",
        options.runs
    );
    println!(
        "reference copies (xN: {threads} threads on disjoint parts; stream: non-temporal stores{}); best = the fastest in each round",
        if NONTEMPORAL_STORES {
            ""
        } else {
            ", not on this platform"
        }
    );
    // The machine's copy figures on 64 MiB, the references alone.
    let machine: Vec<(&'static str, (f64, f64, f64))> = {
        let mut buffers = reference_buffers(&references, TOTAL_BYTES);
        let mut copies = reference_copies(&references, &mut buffers, threads);
        let mut methods: Vec<&mut dyn FnMut()> = copies
            .iter_mut()
            .map(|c| &mut **c as &mut dyn FnMut())
            .collect();
        let times = rounds(&mut methods, options.runs, LARGE_BATCH, &settle);
        references
            .iter()
            .zip(&times)
            .map(|(r, t)| (r.name(), rate(2 * TOTAL_BYTES, t)))
            .collect()
    };
    let machine_line: Vec<String> = machine
        .iter()
        .map(|(name, v)| format!("{name} {}", with_range(*v)))
        .collect();
    println!("64 MiB copies, GB/s: {}", machine_line.join("; "));
    println!(
        "{:<24} {:>7} {:>20} {:>7} {:>7} {:>10} {:>7} {:>7} {:>8} {:>17} {:>17} {:>18} {:>17}",
        "workload",
        "type",
        "cpu GB/s",
        "memcpy",
        "best",
        "best is",
        "ndarray",
        "assign",
        "oracle s",
        "cpu/best",
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
            let row = measure(
                &backend,
                workload,
                data_type,
                &options,
                &references,
                threads,
                &settle,
            );
            println!(
                "{:<24} {:>7} {:>20} {:>7.2} {:>7.2} {:>10} {:>7.2} {:>7.2} {:>8} {:>17} {:>17} {:>18} {:>17}",
                row.workload,
                row.data_type.name(),
                with_range(row.cpu),
                row.references[0].1.0,
                row.best.0,
                row.best_name,
                row.ndarray.0,
                row.ndarray_assign.0,
                row.oracle_seconds
                    .map_or("-".to_string(), |s| format!("{s:.2}")),
                with_range(row.over_best),
                with_range(row.over_memcpy),
                with_range(row.over_ndarray),
                with_range(row.over_assign),
            );
            rows.push(row);
        }
    }
    let below: Vec<String> = rows
        .iter()
        .filter(|r| {
            (r.contiguous && r.over_best.0 < CONTIGUOUS_TARGET)
                || r.over_assign.0 < 1.0
                || r.over_ndarray.0 < 1.0
        })
        .map(|r| format!("{} {}", r.workload, r.data_type))
        .collect();
    if !rows.is_empty() {
        if below.is_empty() {
            println!(
                "targets met (medians): >= {CONTIGUOUS_TARGET}x the best copy on contiguous workloads, >= 1.0x ndarray (both APIs) on all"
            );
        } else {
            println!("below target: {}", below.join("; "));
        }
    }
    let scaling = scaling(&backend, &options, &references, threads, &settle);
    if let Some(path) = &options.json {
        let json: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                let refs: serde_json::Map<String, serde_json::Value> = r
                    .references
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
        let report = serde_json::json!({
            "cores": threads,
            "runs": options.runs,
            "nontemporal_stores": NONTEMPORAL_STORES,
            "copies_64mib_gbps": machine_json,
            "results": json,
            "scaling": scaling,
        });
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

/// The backend's call (first), then each reference copy of the same bytes between the same
/// buffers (`same_buffers`), as calls for `rounds`.
fn cpu_and_references<'a>(
    compiled: &'a dyn CompiledOperator,
    inputs: &'a [Vec<u8>],
    outputs: &'a RefCell<Vec<Vec<u8>>>,
    references: &[Reference],
    threads: usize,
) -> Vec<Box<dyn FnMut() + 'a>> {
    let input_refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut calls: Vec<Box<dyn FnMut() + 'a>> = vec![Box::new(move || {
        let mut outputs = outputs.borrow_mut();
        let mut bindings: Vec<OutputBinding<'_>> = outputs
            .iter_mut()
            .map(|b| OutputBinding::whole(b))
            .collect();
        compiled
            .execute(&input_refs, &mut bindings)
            .expect("executes");
    })];
    for &reference in references {
        calls.push(Box::new(move || {
            let mut outputs = outputs.borrow_mut();
            reference.run(same_buffers(&mut outputs, inputs), threads);
            std::hint::black_box(&*outputs);
        }));
    }
    calls
}

fn measure(
    backend: &CpuBackend,
    workload: Workload,
    data_type: DataType,
    options: &Options,
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
    let (nd_times, assign_times) = (&times[n + 1], &times[n + 2]);
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
fn scaling(
    backend: &CpuBackend,
    options: &Options,
    references: &[Reference],
    threads: usize,
    settle: &Settle,
) -> serde_json::Value {
    let data_type = DataType::Float32;
    let element = data_type.element_size();
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
            if options
                .filter
                .as_ref()
                .is_some_and(|f| !label.contains(f.as_str()))
            {
                continue;
            }
            if !printed_header {
                println!(
                    "scaling ({}): output size vs the best copy of the same bytes",
                    data_type.name()
                );
                println!(
                    "{:<24} {:>8} {:>20} {:>8} {:>10} {:>17} {:>12} {:>12}",
                    "workload",
                    "size",
                    "cpu GB/s",
                    "best",
                    "best is",
                    "cpu/best",
                    "cpu ns",
                    "best ns"
                );
                printed_header = true;
            }
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
            let times = rounds(&mut methods, options.runs, Batch::Calls(reps), settle);
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
            if size == SCALING_SIZES[0] {
                overheads.push((workload.name(), cpu_ns, best_ns));
            }
            results.push(serde_json::json!({
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
            }));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    }

    #[test]
    fn same_buffers_pair_every_output_byte_with_the_inputs_in_order() {
        // Outputs of 5 and 7 bytes from inputs of 4, 0 and 10 bytes (3 left over).
        let inputs = vec![bytes(4, 1), Vec::new(), bytes(10, 2)];
        let mut outputs = vec![vec![0u8; 5], vec![0u8; 7]];
        let pairs = same_buffers(&mut outputs, &inputs);
        let lengths: Vec<usize> = pairs.iter().map(|p| p.0.len()).collect();
        assert_eq!(lengths, [4, 1, 7]);
        assert!(pairs.iter().all(|(d, s)| d.len() == s.len()));
        copy_pairs(pairs, |d, s| d.copy_from_slice(s));
        let flat: Vec<u8> = inputs.concat();
        assert_eq!(outputs.concat(), flat[..12]);
    }

    #[test]
    fn copies_in_parts_write_what_one_copy_writes() {
        let inputs = vec![bytes(1000, 3), bytes(333, 4), bytes(2048, 5)];
        let expected = inputs.concat();
        for parts in 1..=5 {
            for reference in [Reference::MemcpyParts, Reference::StreamParts] {
                let mut outputs = vec![vec![0u8; 2000], vec![0u8; 1381]];
                reference.run(same_buffers(&mut outputs, &inputs), parts);
                assert_eq!(outputs.concat(), expected, "{} parts", parts);
            }
        }
    }
}
