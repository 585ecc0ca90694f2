//! DML_SPLIT, DML_JOIN and DML_SLICE1 on wgpu, as one WGSL compute kernel (kernel.wgsl).
//!
//! Each operator is the shared copy plan (`dmlcts_tensor::copy_plan`): pieces, each a
//! strided block copy from one input into one output. Each piece is one dispatch binding
//! exactly two storage buffers (its input and its output) and a uniform, so a Split with
//! many outputs or a Join with many inputs works under any storage-buffer limit. Outputs go
//! to the GPU inside the harness's guarded buffer and come back whole, so a write outside an
//! output lands in the guard bands, where the harness looks.

use dmlcts_tensor::{
    Backend, CompileError, CompiledOperator, DataType, FeatureLevel, OperatorDesc, OutputBinding,
    Rejected, copy_plan, merge_dimensions,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wgpu::util::DeviceExt;

const KERNEL: &str = include_str!("kernel.wgsl");
const WORKGROUP: u32 = 256;
/// Bytes of guard band the harness puts around an output, with room to spare.
const GUARD_ALLOWANCE: u64 = 1024;
/// The kernel addresses bytes with u32: buffers stay below 4 GiB.
const MAX_ADDRESSABLE: u64 = (1 << 32) - 256;

/// Which adapter to use and how to validate.
#[derive(Clone, Debug)]
pub struct WgpuOptions {
    /// A case-insensitive substring of the adapter's name, backend or driver; the default
    /// adapter when None. `DMLCTS_WGPU_ADAPTER` is read when this is None.
    pub adapter: Option<String>,
    pub feature_level: FeatureLevel,
}

impl Default for WgpuOptions {
    fn default() -> WgpuOptions {
        WgpuOptions {
            adapter: std::env::var("DMLCTS_WGPU_ADAPTER")
                .ok()
                .filter(|s| !s.is_empty()),
            feature_level: FeatureLevel::L4_1,
        }
    }
}

struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    module: wgpu::ShaderModule,
    layout: wgpu::PipelineLayout,
    bind_group_layout: wgpu::BindGroupLayout,
    /// The kernel's specializations made so far.
    pipelines: Mutex<HashMap<Specialization, wgpu::ComputePipeline>>,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    /// Tensors whose bytes sum to at most this share one buffer (the binding limit; lower in
    /// a test that needs the one-buffer-each path).
    shared_limit: u64,
    /// Errors outside any error scope (there should be none); kept, never a panic.
    uncaptured: Arc<Mutex<Vec<String>>>,
}

pub struct WgpuBackend {
    level: FeatureLevel,
    gpu: Result<Gpu, String>,
}

fn describe(info: &wgpu::AdapterInfo) -> String {
    format!(
        "{} ({:?}, {:?}, driver {} {})",
        info.name, info.backend, info.device_type, info.driver, info.driver_info
    )
}

fn choose_adapter(filter: Option<&str>) -> Result<wgpu::Adapter, String> {
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all());
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(backends));
    if adapters.is_empty() {
        return Err(format!(
            "no wgpu adapter for backends {backends:?} (on Debian, `apt-get install mesa-vulkan-drivers` gives lavapipe)"
        ));
    }
    let rank = |a: &wgpu::Adapter| match a.get_info().device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    };
    let names: Vec<String> = adapters.iter().map(|a| describe(&a.get_info())).collect();
    let mut matching: Vec<wgpu::Adapter> = match filter {
        None => adapters,
        Some(text) => {
            let text = text.to_lowercase();
            adapters
                .into_iter()
                .filter(|a| describe(&a.get_info()).to_lowercase().contains(&text))
                .collect()
        }
    };
    matching.sort_by_key(|a| rank(a));
    matching.into_iter().next().ok_or_else(|| {
        format!(
            "no adapter matches `{}`; found: {}",
            filter.unwrap_or_default(),
            names.join("; ")
        )
    })
}

fn open(filter: Option<&str>, kernel: &str) -> Result<Gpu, String> {
    let adapter = choose_adapter(filter)?;
    let info = adapter.get_info();
    // Everything the adapter offers: big storage bindings matter for big tensors.
    let limits = adapter.limits();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("dmlcts"),
        required_features: wgpu::Features::empty(),
        required_limits: limits.clone(),
        experimental_features: wgpu::ExperimentalFeatures::disabled(),
        memory_hints: wgpu::MemoryHints::Performance,
        trace: wgpu::Trace::Off,
    }))
    .map_err(|e| format!("{}: request_device failed: {e}", describe(&info)))?;
    let uncaptured = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&uncaptured);
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        if let Ok(mut errors) = sink.lock() {
            errors.push(e.to_string());
        }
    }));
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("dmlcts copy kernel"),
        source: wgpu::ShaderSource::Wgsl(kernel.into()),
    });
    let storage = |binding: u32, read_only: bool| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    };
    let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("dmlcts copy kernel"),
        entries: &[
            storage(0, true),
            storage(1, false),
            storage(2, true),
            storage(3, true),
            storage(4, false),
        ],
    });
    let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("dmlcts copy kernel"),
        bind_group_layouts: &[Some(&bind_group_layout)],
        immediate_size: 0,
    });
    if let Some(error) = pollster::block_on(scope.pop()) {
        return Err(format!(
            "the copy kernel does not compile on {}: {error}",
            describe(&info)
        ));
    }
    let mut gpu = Gpu {
        device,
        queue,
        module,
        layout,
        bind_group_layout,
        pipelines: Mutex::new(HashMap::new()),
        info,
        limits,
        shared_limit: 0,
        uncaptured,
    };
    gpu.shared_limit = gpu.limit_bytes();
    // The most common specialization, made now so a kernel that does not build on this
    // adapter makes the backend unavailable rather than failing cases.
    gpu.pipeline(Specialization {
        mode: MODE_ALIGNED,
        element_log2: 2,
        edges: false,
        outer: 1,
        per_lane: PER_LANE as u32,
        moving: true,
    })
    .map_err(|e| {
        format!(
            "the copy kernel does not build on {}: {e}",
            describe(&gpu.info)
        )
    })?;
    Ok(gpu)
}

impl WgpuBackend {
    /// Opens the adapter now. When none can be opened the backend still exists, and says
    /// why in `unavailable_reason` (cases are then skipped with that reason).
    pub fn new(options: WgpuOptions) -> WgpuBackend {
        WgpuBackend {
            level: options.feature_level,
            gpu: open(options.adapter.as_deref(), KERNEL),
        }
    }

    pub fn adapter_info(&self) -> Option<&wgpu::AdapterInfo> {
        self.gpu.as_ref().ok().map(|g| &g.info)
    }

    /// Times the work of `op` with buffers already on the device, `runs` rounds after one
    /// warm-up. Each round times, back to back: the whole execution (buffer copies and the
    /// kernel's dispatches); the device's own copy_buffer_to_buffer of the bytes the outputs
    /// hold; the simplest kernel that moves as many bytes (kernel.wgsl's `lane_copy`, a
    /// reference point, not a bound: its lanes stride 4 KiB apart); and the kernel's dispatches with the moves
    /// removed (the same pieces and workgroups, each lane returning before it moves
    /// anything): what the adapter costs before a byte moves.
    pub fn measure(
        &self,
        op: &OperatorDesc,
        inputs: &[&[u8]],
        runs: usize,
    ) -> Result<Vec<Round>, String> {
        let gpu = self.gpu.as_ref().map_err(Clone::clone)?;
        let outputs: Vec<Vec<u8>> = op
            .outputs()
            .iter()
            .map(|(_, d)| vec![0u8; d.total_tensor_size_in_bytes as usize])
            .collect();
        let offsets = vec![0; outputs.len()];
        let prepared = gpu.prepare(op, inputs, &outputs, &offsets, true)?;
        let empty = gpu.prepare(op, inputs, &outputs, &offsets, false)?;
        let written: u64 = outputs.iter().map(|o| o.len() as u64).sum();
        let reference = |label, usage| {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: written.div_ceil(16).max(1) * 16,
                usage: usage | wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let source = reference("copy reference source", wgpu::BufferUsages::COPY_SRC);
        let target = reference("copy reference target", wgpu::BufferUsages::COPY_DST);
        let lane_copy = gpu.lane_copy(&source, &target, written.div_ceil(16))?;
        let copy = || -> Result<Duration, String> {
            let start = Instant::now();
            let mut encoder = gpu.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&source, 0, &target, 0, padded(written));
            gpu.queue.submit([encoder.finish()]);
            gpu.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| format!("poll: {e}"))?;
            Ok(start.elapsed())
        };
        let timed = |prepared: &Prepared, with_copies: bool| -> Result<Duration, String> {
            let start = Instant::now();
            gpu.dispatch(prepared, with_copies, None)?;
            Ok(start.elapsed())
        };
        timed(&prepared, true)?;
        timed(&empty, false)?;
        timed(&lane_copy, false)?;
        copy()?;
        let mut rounds = Vec::with_capacity(runs);
        for _ in 0..runs {
            rounds.push(Round {
                work: timed(&prepared, true)?,
                copy: copy()?,
                lane_copy: timed(&lane_copy, false)?,
                empty_kernel: (!empty.dispatches.is_empty())
                    .then(|| timed(&empty, false))
                    .transpose()?,
            });
        }
        Ok(rounds)
    }
}

/// One round of `WgpuBackend::measure`.
#[derive(Clone, Copy, Debug)]
pub struct Round {
    /// The operator's work: buffer copies and the kernel.
    pub work: Duration,
    /// copy_buffer_to_buffer of as many bytes as the outputs hold.
    pub copy: Duration,
    /// kernel.wgsl's `lane_copy` of as many bytes.
    pub lane_copy: Duration,
    /// The kernel's dispatches with the copy loop removed; None when the operator needs no
    /// kernel (buffer copies do all of it).
    pub empty_kernel: Option<Duration>,
}

fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(4).max(1) * 4
}

/// Where tensors live on the device: in one shared buffer when they fit under the binding
/// limit together (so one dispatch reaches all of them), else each in its own.
#[derive(Default)]
struct Placement {
    buffers: Vec<wgpu::Buffer>,
    sizes: Vec<u64>,
    /// Per tensor: its buffer and the byte where it starts there.
    places: Vec<(usize, u64)>,
}

/// Byte alignment of a tensor inside a shared buffer (a multiple of every element size).
const PLACE_ALIGN: u64 = 16;

/// Buffer sizes and per-tensor (buffer, offset) for tensors of `lengths` bytes.
fn arrange(lengths: &[u64], limit: u64) -> (Vec<u64>, Vec<(usize, u64)>) {
    let slot = |len: u64| padded(len).div_ceil(PLACE_ALIGN) * PLACE_ALIGN;
    let total: u64 = lengths.iter().map(|&l| slot(l)).sum();
    if total <= limit {
        let mut offset = 0;
        let places = lengths
            .iter()
            .map(|&l| {
                let place = (0, offset);
                offset += slot(l);
                place
            })
            .collect();
        (vec![total.max(4)], places)
    } else {
        let sizes = lengths.iter().map(|&l| slot(l)).collect();
        (sizes, (0..lengths.len()).map(|i| (i, 0)).collect())
    }
}

/// Buffers and bind groups for one execution.
struct Prepared {
    inputs: Placement,
    outputs: Placement,
    output_lengths: Vec<u64>,
    /// One per pair of (input buffer, output buffer) that kernel pieces connect: a single
    /// one when the tensors share buffers.
    dispatches: Vec<Dispatch>,
    copies: Vec<RunCopy>,
}

struct Dispatch {
    /// None for the bench's lane copy.
    specialization: Option<Specialization>,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    groups: (u32, u32, u32),
}

/// kernel.wgsl's MODE values.
const MODE_ALIGNED: u32 = 0;
const MODE_SHIFTED: u32 = 1;
const MODE_GATHER: u32 = 2;
const MODE_ELEMENTS: u32 = 3;
const MODE_VEC_ALIGNED: u32 = 4;
const MODE_VEC_REVERSED: u32 = 5;
const MODE_VEC_STRIDE2: u32 = 6;
/// kernel.wgsl's PER_LANE (passed to it): units one lane moves. On lavapipe, 32 a lane moved
/// Join and Split rows about 4x faster than 8, while every-other-element blocks (two source
/// blocks each) ran about 2x faster with 8 (both measured back to back with `cargo xtask
/// bench`); on a GPU, 8 or more lanes a row still read 128 contiguous bytes at a time.
const PER_LANE: u64 = 32;
const PER_LANE_STRIDE2: u64 = 8;

/// One pipeline of the kernel: its override constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Specialization {
    mode: u32,
    element_log2: u32,
    /// Some row starts or ends inside a word.
    edges: bool,
    /// Outer dimensions.
    outer: u32,
    /// Units a lane moves.
    per_lane: u32,
    /// False: the copy loop removed (the bench's measure of what comes before it).
    moving: bool,
}
/// u32 words of one `Piece` of kernel.wgsl.
const PIECE_WORDS: usize = 36;
/// Outer dimensions a piece can carry (DirectML tensors have at most 8 dimensions).
const MAX_OUTER: usize = 8;

/// One piece as kernel.wgsl's `Piece` sees it (before its first workgroup is known).
#[derive(Clone, Debug, PartialEq, Eq)]
struct KernelPiece {
    mode: u32,
    edges: bool,
    groups: u64,
    tiles: u64,
    lanes_log2: u32,
    per_lane: u64,
    units: u64,
    rows: u64,
    row_bytes: u64,
    src_base: u64,
    dst_base: u64,
    src_step: i64,
    dst_step: i64,
    /// (size, source stride, destination stride), strides in bytes, innermost first.
    outer: Vec<(u64, i64, i64)>,
}

/// How the kernel covers a block of merged dimensions (in elements, outermost first) that
/// starts at byte `src_byte` of its input buffer and `dst_byte` of its output buffer.
fn kernel_piece(
    dims: &[(u64, i64, i64)],
    element_bytes: u64,
    src_byte: u64,
    dst_byte: u64,
) -> KernelPiece {
    let (&(n, s, d), outer) = dims
        .split_last()
        .expect("merge_dimensions never returns no dimensions");
    let es = element_bytes as i64;
    let outer: Vec<(u64, i64, i64)> = outer
        .iter()
        .rev()
        .map(|&(n, s, d)| (n, s * es, d * es))
        .collect();
    let rows: u64 = outer.iter().map(|o| o.0).product();
    let row_bytes = n * element_bytes;
    let rows_start_aligned = dst_byte.is_multiple_of(4) && outer.iter().all(|o| o.2 % 4 == 0);
    let equally_aligned = (src_byte as i64 - dst_byte as i64).rem_euclid(4) == 0
        && outer.iter().all(|o| (o.1 - o.2).rem_euclid(4) == 0);
    // `base + sum(c_k * step_k)` is a multiple of `m` on every row.
    let on_every_row = |base: i64, step: &dyn Fn(&(u64, i64, i64)) -> i64, m: i64| {
        base.rem_euclid(m) == 0 && outer.iter().all(|o| step(o).rem_euclid(m) == 0)
    };
    let (src_at, dst_at) = (src_byte as i64, dst_byte as i64);
    let rows_in_blocks = on_every_row(dst_at, &|o| o.2, 16) && row_bytes.is_multiple_of(16);
    let mode = match (s, d) {
        (1, 1) if rows_in_blocks && on_every_row(src_at - dst_at, &|o| o.1 - o.2, 16) => {
            MODE_VEC_ALIGNED
        }
        (-1, 1) if rows_in_blocks && on_every_row(src_at + dst_at + es, &|o| o.1 + o.2, 16) => {
            MODE_VEC_REVERSED
        }
        (2, 1) if rows_in_blocks && on_every_row(src_at - 2 * dst_at, &|o| o.1 - 2 * o.2, 16) => {
            MODE_VEC_STRIDE2
        }
        (1, 1) if equally_aligned => MODE_ALIGNED,
        (1, 1) => MODE_SHIFTED,
        (_, 1) => MODE_GATHER,
        _ => MODE_ELEMENTS,
    };
    let (units, edges) = if mode == MODE_ELEMENTS {
        (n, false)
    } else if mode >= MODE_VEC_ALIGNED {
        (row_bytes / 16, false)
    } else {
        // Whole words a row holds, at most; the rest are edges.
        (
            row_bytes / 4,
            !(rows_start_aligned && row_bytes.is_multiple_of(4)),
        )
    };
    let workgroup = u64::from(WORKGROUP);
    // Word modes: units 0 and 1 are the edges, when there are any, in two lanes. ELEMENTS:
    // one element a lane where the row allows, so neighbouring elements of 1 or 2 bytes are
    // written by neighbouring lanes at once (and a racy write would show).
    let lane_units = units + if edges { 2 } else { 0 };
    let per_lane = if mode == MODE_VEC_STRIDE2 {
        PER_LANE_STRIDE2
    } else {
        PER_LANE
    };
    let lanes = if mode == MODE_ELEMENTS {
        units.max(1)
    } else {
        lane_units.div_ceil(per_lane).max(if edges { 2 } else { 1 })
    }
    .next_power_of_two()
    .min(workgroup);
    // A power of two: the kernel finds a workgroup's tile and rows with shifts.
    let tiles = lane_units
        .div_ceil(lanes * per_lane)
        .max(1)
        .next_power_of_two();
    let row_groups = rows.div_ceil(workgroup / lanes);
    KernelPiece {
        mode,
        edges,
        groups: tiles * row_groups,
        tiles,
        lanes_log2: lanes.trailing_zeros(),
        per_lane,
        units,
        rows,
        row_bytes,
        src_base: src_byte,
        dst_base: dst_byte,
        src_step: s * es,
        dst_step: d * es,
        outer,
    }
}

impl KernelPiece {
    /// kernel.wgsl's `Piece` as u32 words. Byte addresses and strides wrap modulo 2^32 (a
    /// negative stride is its two's complement); everything else must fit in a u32.
    fn words(&self) -> Result<[u32; PIECE_WORDS], String> {
        let fit = |v: u64| {
            u32::try_from(v).map_err(|_| format!("{v} does not fit the kernel's 32-bit counters"))
        };
        if self.outer.len() > MAX_OUTER {
            return Err(format!(
                "{} outer dimensions, the kernel takes {MAX_OUTER}",
                self.outer.len()
            ));
        }
        let mut words = [0u32; PIECE_WORDS];
        words[..10].copy_from_slice(&[
            fit(self.groups)?,
            self.tiles.trailing_zeros(),
            self.lanes_log2,
            fit(self.units)?,
            fit(self.rows)?,
            fit(self.row_bytes)?,
            fit(self.src_base)?,
            fit(self.dst_base)?,
            self.src_step as u32,
            self.dst_step as u32,
        ]);
        for (k, &(n, s, d)) in self.outer.iter().enumerate() {
            words[12 + k] = fit(n)?;
            words[12 + MAX_OUTER + k] = s as u32;
            words[12 + 2 * MAX_OUTER + k] = d as u32;
        }
        Ok(words)
    }
}

/// A contiguous, 4-byte-aligned run: done by the device's own buffer copy.
struct RunCopy {
    src_buffer: usize,
    dst_buffer: usize,
    src_byte: u64,
    dst_byte: u64,
    bytes: u64,
}

impl Gpu {
    fn limit_bytes(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
            .min(MAX_ADDRESSABLE)
    }

    /// kernel.wgsl's `lane_copy` of `blocks` 16-byte blocks from `source` to `target`, as a Prepared
    /// with no buffer copies.
    fn lane_copy(
        &self,
        source: &wgpu::Buffer,
        target: &wgpu::Buffer,
        blocks: u64,
    ) -> Result<Prepared, String> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("dmlcts lane copy"),
                layout: Some(&self.layout),
                module: &self.module,
                entry_point: Some("lane_copy"),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &[("PER_LANE", PER_LANE as f64)],
                    ..Default::default()
                },
                cache: None,
            });
        // The kernel's piece table binding wants one piece's worth of bytes.
        let unused = self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: &[0u8; PIECE_WORDS * 4],
                usage: wgpu::BufferUsages::STORAGE,
            });
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &self.bind_group_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: source.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: target.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: unused.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: source.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 4,
                    resource: target.as_entire_binding(),
                },
            ],
        });
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(format!("the lane copy does not build: {error}"));
        }
        let max_groups = u64::from(self.limits.max_compute_workgroups_per_dimension.max(1));
        let groups = blocks.div_ceil(u64::from(WORKGROUP) * PER_LANE).max(1);
        let x = groups.min(max_groups);
        Ok(Prepared {
            inputs: Placement::default(),
            outputs: Placement::default(),
            output_lengths: Vec::new(),
            dispatches: vec![Dispatch {
                specialization: None,
                pipeline,
                bind_group,
                groups: (x as u32, groups.div_ceil(x) as u32, 1),
            }],
            copies: Vec::new(),
        })
    }

    /// The kernel's pipeline for `specialization`, made on first use.
    fn pipeline(&self, specialization: Specialization) -> Result<wgpu::ComputePipeline, String> {
        let mut pipelines = self
            .pipelines
            .lock()
            .map_err(|_| "the pipeline cache was poisoned by a panic".to_string())?;
        if let Some(pipeline) = pipelines.get(&specialization) {
            return Ok(pipeline.clone());
        }
        let constants = [
            ("MODE", f64::from(specialization.mode)),
            ("ELEMENT_LOG2", f64::from(specialization.element_log2)),
            ("EDGES", f64::from(u8::from(specialization.edges))),
            ("OUTER", f64::from(specialization.outer)),
            ("PER_LANE", f64::from(specialization.per_lane)),
            ("MOVE", f64::from(u8::from(specialization.moving))),
        ];
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("dmlcts copy kernel"),
                layout: Some(&self.layout),
                module: &self.module,
                entry_point: Some("main"),
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &constants,
                    ..Default::default()
                },
                cache: None,
            });
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(format!(
                "the copy kernel {specialization:?} does not build: {error}"
            ));
        }
        pipelines.insert(specialization, pipeline.clone());
        Ok(pipeline)
    }

    fn place(&self, tensors: &[&[u8]], usage: wgpu::BufferUsages) -> Placement {
        let lengths: Vec<u64> = tensors.iter().map(|t| t.len() as u64).collect();
        let (sizes, places) = arrange(&lengths, self.shared_limit);
        let mut contents: Vec<Vec<u8>> = sizes.iter().map(|&s| vec![0u8; s as usize]).collect();
        for (tensor, &(buffer, offset)) in tensors.iter().zip(&places) {
            contents[buffer][offset as usize..][..tensor.len()].copy_from_slice(tensor);
        }
        let buffers = contents
            .iter()
            .map(|bytes| {
                self.device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: None,
                        contents: bytes,
                        usage,
                    })
            })
            .collect();
        Placement {
            buffers,
            sizes,
            places,
        }
    }

    /// Uploads inputs and outputs (`output_offsets[k]`: where output k's tensor starts in
    /// its buffer), and plans buffer copies and kernel dispatches (with `pipeline`).
    fn prepare(
        &self,
        op: &OperatorDesc,
        inputs: &[&[u8]],
        outputs: &[Vec<u8>],
        output_offsets: &[usize],
        moving: bool,
    ) -> Result<Prepared, String> {
        let element_bytes = op.outputs()[0].1.data_type.element_size() as u64;
        let input_placement = self.place(
            inputs,
            wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        );
        let output_refs: Vec<&[u8]> = outputs.iter().map(Vec::as_slice).collect();
        let output_placement = self.place(
            &output_refs,
            wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        );
        let mut copies = Vec::new();
        // Pieces that can share a dispatch: same buffers, same specialization.
        let mut kernel_pieces: BTreeMap<(usize, usize, Specialization), Vec<KernelPiece>> =
            BTreeMap::new();
        let es = element_bytes as i64;
        for (k, output) in copy_plan(op).iter().enumerate() {
            let offset = output_offsets[k] as u64;
            if !offset.is_multiple_of(element_bytes) {
                return Err(format!(
                    "output {k} is bound at byte {offset}, not a multiple of {element_bytes}"
                ));
            }
            let (dst_buffer, dst_place) = output_placement.places[k];
            for piece in &output.pieces {
                let dims = merge_dimensions(&piece.sizes, &piece.src_strides, &output.strides);
                let (src_buffer, src_place) = input_placement.places[piece.input];
                let src_byte = src_place + (piece.src_base * es) as u64;
                let dst_byte = dst_place + offset + (output.dst_base(piece) * es) as u64;
                if let [(n, 1, 1)] = dims.as_slice() {
                    let bytes = n * element_bytes;
                    if src_byte.is_multiple_of(4)
                        && dst_byte.is_multiple_of(4)
                        && bytes.is_multiple_of(4)
                    {
                        copies.push(RunCopy {
                            src_buffer,
                            dst_buffer,
                            src_byte,
                            dst_byte,
                            bytes,
                        });
                        continue;
                    }
                }
                let piece = kernel_piece(&dims, element_bytes, src_byte, dst_byte);
                let specialization = Specialization {
                    mode: piece.mode,
                    element_log2: element_bytes.trailing_zeros(),
                    edges: piece.edges,
                    outer: piece.outer.len() as u32,
                    per_lane: piece.per_lane as u32,
                    moving,
                };
                kernel_pieces
                    .entry((src_buffer, dst_buffer, specialization))
                    .or_default()
                    .push(piece);
            }
        }
        let max_groups = u64::from(self.limits.max_compute_workgroups_per_dimension.max(1));
        let mut dispatches = Vec::new();
        // z: the piece; x and y: its workgroups, folded under the per-dimension limit.
        let groups: Vec<(usize, usize, Specialization, &[KernelPiece])> = kernel_pieces
            .iter()
            .flat_map(|(&(src, dst, specialization), pieces)| {
                pieces
                    .chunks(max_groups as usize)
                    .map(move |chunk| (src, dst, specialization, chunk))
            })
            .collect();
        for (src_buffer, dst_buffer, specialization, pieces) in groups {
            let mut table = Vec::with_capacity(pieces.len() * PIECE_WORDS);
            for piece in pieces {
                table.extend(piece.words()?);
            }
            let most = pieces.iter().map(|p| p.groups).max().unwrap_or(1);
            let x = most.clamp(1, max_groups);
            let y = most.div_ceil(x).max(1);
            if y > max_groups {
                return Err(format!(
                    "{most} workgroups are more than the adapter's {max_groups} x {max_groups}"
                ));
            }
            let table_bytes: Vec<u8> = table.iter().flat_map(|w| w.to_le_bytes()).collect();
            let table = self
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("dmlcts pieces"),
                    contents: &table_bytes,
                    usage: wgpu::BufferUsages::STORAGE,
                });
            let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &self.bind_group_layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: input_placement.buffers[src_buffer].as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: output_placement.buffers[dst_buffer].as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: table.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 3,
                        resource: input_placement.buffers[src_buffer].as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 4,
                        resource: output_placement.buffers[dst_buffer].as_entire_binding(),
                    },
                ],
            });
            dispatches.push(Dispatch {
                specialization: Some(specialization),
                pipeline: self.pipeline(specialization)?,
                bind_group,
                groups: (x as u32, y as u32, pieces.len() as u32),
            });
        }
        Ok(Prepared {
            inputs: input_placement,
            outputs: output_placement,
            output_lengths: outputs.iter().map(|o| o.len() as u64).collect(),
            dispatches,
            copies,
        })
    }

    /// Runs the dispatches (and, `with_copies`, the buffer copies); with `read_back`, copies
    /// the outputs back into them.
    fn dispatch(
        &self,
        prepared: &Prepared,
        with_copies: bool,
        read_back: Option<&mut [&mut [u8]]>,
    ) -> Result<(), String> {
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        // Copies and dispatches write disjoint words, so their order does not matter.
        for copy in prepared.copies.iter().filter(|_| with_copies) {
            encoder.copy_buffer_to_buffer(
                &prepared.inputs.buffers[copy.src_buffer],
                copy.src_byte,
                &prepared.outputs.buffers[copy.dst_buffer],
                copy.dst_byte,
                copy.bytes,
            );
        }
        if !prepared.dispatches.is_empty() {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            for dispatch in &prepared.dispatches {
                pass.set_pipeline(&dispatch.pipeline);
                pass.set_bind_group(0, &dispatch.bind_group, &[]);
                let (x, y, z) = dispatch.groups;
                pass.dispatch_workgroups(x, y, z);
            }
        }
        let staging: Vec<wgpu::Buffer> = if read_back.is_some() {
            prepared
                .outputs
                .buffers
                .iter()
                .zip(&prepared.outputs.sizes)
                .map(|(buffer, &size)| {
                    let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("readback"),
                        size,
                        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    });
                    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size);
                    staging
                })
                .collect()
        } else {
            Vec::new()
        };
        self.queue.submit([encoder.finish()]);
        for buffer in &staging {
            buffer.map_async(wgpu::MapMode::Read, .., |_| {});
        }
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| format!("waiting for the device failed: {e}"))?;
        let memory_error = pollster::block_on(memory.pop());
        let validation_error = pollster::block_on(validation.pop());
        if let Some(error) = validation_error.or(memory_error) {
            let kernels: Vec<String> = prepared
                .dispatches
                .iter()
                .map(|d| format!("{:?}", d.specialization))
                .collect();
            return Err(format!(
                "wgpu reported: {error} (kernels: {})",
                kernels.join(", ")
            ));
        }
        if let Some(targets) = read_back {
            let mapped = staging
                .iter()
                .map(|b| b.get_mapped_range(..))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("mapping the readback buffer failed: {e}"))?;
            for ((target, &(buffer, offset)), &len) in targets
                .iter_mut()
                .zip(&prepared.outputs.places)
                .zip(&prepared.output_lengths)
            {
                target.copy_from_slice(&mapped[buffer][offset as usize..][..len as usize]);
            }
            drop(mapped);
            for buffer in &staging {
                buffer.unmap();
            }
        }
        if let Ok(mut errors) = self.uncaptured.lock()
            && !errors.is_empty()
        {
            return Err(format!(
                "wgpu reported: {}",
                errors.drain(..).collect::<Vec<_>>().join("; ")
            ));
        }
        Ok(())
    }
}

struct CompiledWgpu<'a> {
    gpu: &'a Gpu,
    op: OperatorDesc,
}

impl CompiledOperator for CompiledWgpu<'_> {
    fn execute(&self, inputs: &[&[u8]], outputs: &mut [OutputBinding<'_>]) -> Result<(), String> {
        // Whole guarded buffers go to the device: a stray write lands in the guard bands.
        let buffers: Vec<Vec<u8>> = outputs.iter().map(|o| o.buffer.to_vec()).collect();
        let offsets: Vec<usize> = outputs.iter().map(|o| o.offset).collect();
        let prepared = self
            .gpu
            .prepare(&self.op, inputs, &buffers, &offsets, true)?;
        let mut targets: Vec<&mut [u8]> = outputs.iter_mut().map(|o| &mut *o.buffer).collect();
        self.gpu.dispatch(&prepared, true, Some(&mut targets))
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> String {
        "wgpu".to_string()
    }

    fn feature_level(&self) -> FeatureLevel {
        self.level
    }

    fn data_types(&self) -> Vec<DataType> {
        DataType::ALL.to_vec()
    }

    fn device(&self) -> String {
        match &self.gpu {
            Ok(gpu) => describe(&gpu.info),
            Err(_) => "no adapter".to_string(),
        }
    }

    fn unavailable_reason(&self) -> Option<String> {
        self.gpu.as_ref().err().cloned()
    }

    fn compile(&self, op: &OperatorDesc) -> Result<Box<dyn CompiledOperator + '_>, CompileError> {
        let gpu = self
            .gpu
            .as_ref()
            .map_err(|e| CompileError::Failed(e.clone()))?;
        dmlcts_oracle::validate(op, self.level).map_err(Rejected::from)?;
        let limit = gpu.limit_bytes();
        let largest = op
            .inputs()
            .iter()
            .map(|(_, d)| d.total_tensor_size_in_bytes)
            .chain(
                op.outputs()
                    .iter()
                    .map(|(_, d)| d.total_tensor_size_in_bytes + GUARD_ALLOWANCE),
            )
            .max()
            .unwrap_or(0);
        if padded(largest) > limit {
            return Err(CompileError::Unsupported(format!(
                "a {largest}-byte buffer is over the adapter's storage binding limit of {limit} bytes"
            )));
        }
        Ok(Box::new(CompiledWgpu {
            gpu,
            op: op.clone(),
        }))
    }
}

#[cfg(test)]
mod plan {
    use super::*;

    #[test]
    fn a_last_axis_join_piece_moves_16_byte_blocks_32_a_lane_32_rows_a_workgroup() {
        // One 4096 x 1024 FLOAT32 input of a 4096 x 4096 output: rows of 256 blocks.
        let piece = kernel_piece(&[(4096, 1024, 4096), (1024, 1, 1)], 4, 0, 4096);
        assert_eq!(piece.mode, MODE_VEC_ALIGNED);
        assert!(!piece.edges);
        assert_eq!((piece.units, piece.lanes_log2, piece.tiles), (256, 3, 1));
        assert_eq!((piece.rows, piece.groups), (4096, 128));
        // Rows 4 bytes off the 16-byte grid: whole words instead.
        let words = kernel_piece(&[(4096, 1024, 4096), (1024, 1, 1)], 4, 4, 4100);
        assert_eq!((words.mode, words.units), (MODE_ALIGNED, 1024));
        assert_eq!(piece.outer, vec![(4096, 4096, 16384)]);
    }

    #[test]
    fn modes_follow_the_inner_strides_and_alignment() {
        // Contiguous, but source and destination rows differ by one byte: shifted words.
        let shifted = kernel_piece(&[(3, 7, 8), (7, 1, 1)], 1, 1, 0);
        assert_eq!(shifted.mode, MODE_SHIFTED);
        // Rows of 7 bytes end inside a word: edges; one whole word per row at most.
        assert!(shifted.edges);
        assert_eq!(shifted.units, 1);
        // Reversed FLOAT16 rows of 16 bytes: reversed blocks.
        let reversed = kernel_piece(&[(2, 8, 8), (8, -1, 1)], 2, 14, 0);
        assert_eq!(reversed.mode, MODE_VEC_REVERSED);
        // Rows of 12 bytes: gathered words, a negative step, no partial words.
        let reversed = kernel_piece(&[(2, 6, 6), (6, -1, 1)], 2, 10, 0);
        assert_eq!(reversed.mode, MODE_GATHER);
        assert_eq!(reversed.src_step, -2);
        assert!(!reversed.edges);
        // Every other UINT8 of rows of 32 into rows of 16: blocks from two source blocks.
        let halved = kernel_piece(&[(3, 32, 16), (16, 2, 1)], 1, 0, 0);
        assert_eq!(halved.mode, MODE_VEC_STRIDE2);
        // A strided destination: element by element.
        let strided = kernel_piece(&[(5, 1, 3)], 1, 0, 0);
        assert_eq!(
            (strided.mode, strided.units, strided.rows),
            (MODE_ELEMENTS, 5, 1)
        );
    }

    #[test]
    fn piece_words_wrap_negative_strides_and_refuse_what_does_not_fit() {
        let reversed = kernel_piece(&[(2, -8, 8), (8, -1, 1)], 2, 30, 0);
        let words = reversed.words().unwrap();
        assert_eq!(words[8], (-2i32) as u32); // src_step
        assert_eq!(words[12 + MAX_OUTER], (-16i32) as u32); // outer source stride
        let mut huge = reversed.clone();
        huge.rows = 1 << 32;
        assert_eq!(
            huge.words().unwrap_err(),
            "4294967296 does not fit the kernel's 32-bit counters"
        );
    }

    #[test]
    fn tensors_share_a_buffer_when_they_fit_together_else_each_has_its_own() {
        assert_eq!(
            arrange(&[5, 16, 1], 64),
            (vec![48], vec![(0, 0), (0, 16), (0, 32)])
        );
        assert_eq!(
            arrange(&[5, 16, 1], 47),
            (vec![16, 16, 16], vec![(0, 0), (1, 0), (2, 0)])
        );
    }
}

#[cfg(test)]
mod device {
    //! On the adapter (skipped without one, unless DMLCTS_REQUIRE_WGPU_ADAPTER is set).
    use super::*;
    use dmlcts_harness::{Corpus, RunOptions, Status, run_case};
    use dmlcts_tensor::{JoinDesc, Slice1Desc, TensorDesc, fill_random_bits};

    fn backend_with(kernel: &str) -> Option<WgpuBackend> {
        let backend = WgpuBackend {
            level: FeatureLevel::L4_1,
            gpu: open(WgpuOptions::default().adapter.as_deref(), kernel),
        };
        if let Some(reason) = backend.unavailable_reason() {
            assert!(
                std::env::var_os("DMLCTS_REQUIRE_WGPU_ADAPTER").is_none(),
                "{reason}"
            );
            return None;
        }
        Some(backend)
    }

    /// A join of four UINT8 inputs 5, 3, 6 and 2 wide along the last axis: rows start and
    /// end inside words, and neighbouring pieces share words.
    fn uneven_join() -> (OperatorDesc, Vec<Vec<u8>>) {
        let widths = [5u32, 3, 6, 2];
        let op = OperatorDesc::Join(JoinDesc {
            input_tensors: widths
                .iter()
                .map(|&w| TensorDesc::packed(DataType::Uint8, &[7, w]))
                .collect(),
            output_tensor: TensorDesc::packed(DataType::Uint8, &[7, 16]),
            axis: 1,
        });
        let inputs = op
            .inputs()
            .iter()
            .enumerate()
            .map(|(i, (_, d))| {
                let mut bytes = vec![0u8; d.total_tensor_size_in_bytes as usize];
                fill_random_bits(DataType::Uint8, &mut bytes, i as u64);
                bytes
            })
            .collect();
        (op, inputs)
    }

    fn random_inputs(op: &OperatorDesc) -> Vec<Vec<u8>> {
        op.inputs()
            .iter()
            .enumerate()
            .map(|(i, (_, d))| {
                let mut bytes = vec![0u8; d.total_tensor_size_in_bytes as usize];
                fill_random_bits(d.data_type, &mut bytes, i as u64 + 7);
                bytes
            })
            .collect()
    }

    #[test]
    fn block_modes_give_the_oracles_bytes_for_every_element_size() {
        let Some(backend) = backend_with(KERNEL) else {
            return;
        };
        let gpu = backend.gpu.as_ref().unwrap();
        for data_type in [
            DataType::Uint8,
            DataType::Float16,
            DataType::Float32,
            DataType::Float64,
        ] {
            // Rows of 64 bytes.
            let cols = 64 / data_type.element_size() as u32;
            let t = |r: u32, c: u32| TensorDesc::packed(data_type, &[r, c]);
            let slice = |stride: i32, out_cols: u32| {
                OperatorDesc::Slice1(Slice1Desc {
                    input_tensor: t(5, cols),
                    output_tensor: t(5, out_cols),
                    dimension_count: 2,
                    input_window_offsets: vec![0, 0],
                    input_window_sizes: vec![5, cols],
                    input_window_strides: vec![1, stride],
                })
            };
            let cases = [
                (slice(-1, cols), MODE_VEC_REVERSED),
                (slice(2, cols / 2), MODE_VEC_STRIDE2),
                (
                    OperatorDesc::Join(JoinDesc {
                        input_tensors: vec![t(5, cols / 4); 4],
                        output_tensor: t(5, cols),
                        axis: 1,
                    }),
                    MODE_VEC_ALIGNED,
                ),
            ];
            for (op, mode) in cases {
                let inputs = random_inputs(&op);
                let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
                let expected = dmlcts_oracle::execute(&op, &refs).unwrap().remove(0).bytes;
                let output = vec![0u8; expected.len()];
                let prepared = gpu
                    .prepare(&op, &refs, std::slice::from_ref(&output), &[0], true)
                    .unwrap();
                let modes: Vec<u32> = prepared
                    .dispatches
                    .iter()
                    .map(|d| d.specialization.unwrap().mode)
                    .collect();
                assert_eq!(modes, vec![mode], "{op:?}");
                assert_eq!(run(gpu, &op, &inputs).0, expected, "{op:?}");
            }
        }
    }

    fn run(gpu: &Gpu, op: &OperatorDesc, inputs: &[Vec<u8>]) -> (Vec<u8>, usize) {
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let mut output = vec![0xA5u8; op.outputs()[0].1.total_tensor_size_in_bytes as usize];
        let prepared = gpu
            .prepare(op, &refs, std::slice::from_ref(&output), &[0], true)
            .unwrap();
        let dispatches = prepared.dispatches.len();
        gpu.dispatch(&prepared, true, Some(&mut [output.as_mut_slice()]))
            .unwrap();
        (output, dispatches)
    }

    #[test]
    fn one_dispatch_covers_every_piece_of_a_join_and_each_buffer_apart_gives_the_same_bytes() {
        let Some(backend) = backend_with(KERNEL) else {
            return;
        };
        let gpu = backend.gpu.as_ref().unwrap();
        let (op, inputs) = uneven_join();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let expected = dmlcts_oracle::execute(&op, &refs).unwrap().remove(0).bytes;
        assert_eq!(run(gpu, &op, &inputs), (expected.clone(), 1));
        // Under a binding limit too small to share, each input has its own buffer, and
        // each its own dispatch.
        let mut apart = open(None, KERNEL).unwrap();
        apart.shared_limit = 16;
        assert_eq!(run(&apart, &op, &inputs), (expected, 4));
    }

    #[test]
    fn a_planted_racy_kernel_that_writes_shared_words_without_atomics_fails_the_corpus() {
        let atomic = "atomicAnd(&dst[word], ~mask);\n    atomicOr(&dst[word], value & mask);";
        assert!(
            KERNEL.contains(atomic),
            "write_bits changed: update this test"
        );
        let racy = KERNEL.replace(
            atomic,
            "let old = atomicLoad(&dst[word]);\n    atomicStore(&dst[word], (old & ~mask) | (value & mask));",
        );
        let (Some(sound), Some(planted)) = (backend_with(KERNEL), backend_with(&racy)) else {
            return;
        };
        let corpus = Corpus::embedded();
        let failed = |backend: &WgpuBackend| {
            corpus
                .cases
                .iter()
                .filter(|case| {
                    run_case(backend, case, &RunOptions::default()).status == Status::Failed
                })
                .count()
        };
        assert_eq!(failed(&sound), 0);
        assert!(failed(&planted) > 0, "the corpus did not catch the race");
    }
}

#[cfg(test)]
mod limits {
    use super::*;
    use dmlcts_tensor::{JoinDesc, TensorDesc};

    #[test]
    fn a_case_larger_than_the_adapter_allows_is_unsupported_not_failed() {
        let backend = WgpuBackend::new(WgpuOptions::default());
        if let Some(reason) = backend.unavailable_reason() {
            // Without an adapter there are no limits to test; CI has one (lavapipe).
            assert!(
                std::env::var_os("DMLCTS_REQUIRE_WGPU_ADAPTER").is_none(),
                "{reason}"
            );
            return;
        }
        // Valid: 2^30 FLOAT32 elements declare a 4 GiB output, past any storage binding.
        let part = TensorDesc::packed(DataType::Float32, &[1 << 29]);
        let op = OperatorDesc::Join(JoinDesc {
            input_tensors: vec![part.clone(), part],
            output_tensor: TensorDesc::packed(DataType::Float32, &[1 << 30]),
            axis: 0,
        });
        match backend.compile(&op) {
            Err(CompileError::Unsupported(reason)) => {
                assert!(reason.contains("storage binding limit"), "{reason}")
            }
            Err(other) => panic!("expected unsupported, got {other}"),
            Ok(_) => panic!("expected unsupported, got accepted"),
        }
    }
}
