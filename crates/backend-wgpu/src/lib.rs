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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wgpu::util::DeviceExt;

const KERNEL: &str = include_str!("kernel.wgsl");
const WORKGROUP: u32 = 256;
/// Bytes of guard band the harness puts around an output, with room to spare.
const GUARD_ALLOWANCE: u64 = 1024;

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
    pipeline: wgpu::ComputePipeline,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
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

fn open(filter: Option<&str>) -> Result<Gpu, String> {
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
        source: wgpu::ShaderSource::Wgsl(KERNEL.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("dmlcts copy kernel"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    if let Some(error) = pollster::block_on(scope.pop()) {
        return Err(format!(
            "the copy kernel does not compile on {}: {error}",
            describe(&info)
        ));
    }
    Ok(Gpu {
        device,
        queue,
        pipeline,
        info,
        limits,
        uncaptured,
    })
}

impl WgpuBackend {
    /// Opens the adapter now. When none can be opened the backend still exists, and says
    /// why in `unavailable_reason` (cases are then skipped with that reason).
    pub fn new(options: WgpuOptions) -> WgpuBackend {
        WgpuBackend {
            level: options.feature_level,
            gpu: open(options.adapter.as_deref()),
        }
    }

    pub fn adapter_info(&self) -> Option<&wgpu::AdapterInfo> {
        self.gpu.as_ref().ok().map(|g| &g.info)
    }

    /// Times the kernels of `op` with buffers already on the device (median of `runs`),
    /// and the device's own copy_buffer_to_buffer of the bytes the outputs hold.
    pub fn measure(
        &self,
        op: &OperatorDesc,
        inputs: &[&[u8]],
        runs: usize,
    ) -> Result<(Duration, Duration), String> {
        let gpu = self.gpu.as_ref().map_err(Clone::clone)?;
        let outputs: Vec<Vec<u8>> = op
            .outputs()
            .iter()
            .map(|(_, d)| vec![0u8; d.total_tensor_size_in_bytes as usize])
            .collect();
        let offsets = vec![0; outputs.len()];
        let prepared = gpu.prepare(op, inputs, &outputs, &offsets)?;
        let written: u64 = outputs.iter().map(|o| o.len() as u64).sum();
        let median = |mut times: Vec<Duration>| {
            times.sort();
            times[times.len() / 2]
        };
        let mut kernel = Vec::new();
        for run in 0..=runs {
            let start = Instant::now();
            gpu.dispatch(&prepared, None)?;
            if run > 0 {
                kernel.push(start.elapsed()); // run 0 warms up
            }
        }
        let source = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("copy reference source"),
            size: padded(written),
            usage: wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let target = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("copy reference target"),
            size: padded(written),
            usage: wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut copy = Vec::new();
        for run in 0..=runs {
            let start = Instant::now();
            let mut encoder = gpu.device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&source, 0, &target, 0, padded(written));
            gpu.queue.submit([encoder.finish()]);
            gpu.device
                .poll(wgpu::PollType::wait_indefinitely())
                .map_err(|e| format!("poll: {e}"))?;
            if run > 0 {
                copy.push(start.elapsed());
            }
        }
        Ok((median(kernel), median(copy)))
    }
}

fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(4).max(1) * 4
}

/// Buffers and bind groups for one execution.
struct Prepared {
    inputs: Vec<wgpu::Buffer>,
    outputs: Vec<wgpu::Buffer>,
    output_lengths: Vec<u64>,
    dispatches: Vec<(wgpu::BindGroup, (u32, u32))>,
    copies: Vec<RunCopy>,
}

/// The uniform block of kernel.wgsl, as bytes, for a block of merged dimensions.
fn params(
    dims: &[(u64, i64, i64)],
    element_bytes: u32,
    src_base: i64,
    dst_base: i64,
    row: u32,
) -> Vec<u8> {
    let count: u64 = dims.iter().map(|d| d.0).product();
    let mut words: Vec<u32> = vec![
        count as u32,
        row,
        dims.len() as u32,
        element_bytes,
        src_base as i32 as u32,
        dst_base as u32,
        0,
        0,
    ];
    let mut sizes = [1u32; 8];
    let mut src = [0u32; 8];
    let mut dst = [0u32; 8];
    for (d, &(n, s, t)) in dims.iter().enumerate() {
        sizes[d] = n as u32;
        src[d] = s as i32 as u32;
        dst[d] = t as u32;
    }
    words.extend(sizes);
    words.extend(src);
    words.extend(dst);
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Merged dimensions (size, source stride, destination stride), outermost first.
type Dims = Vec<(u64, i64, i64)>;

/// The same block in 4-byte words, when its innermost dimension is contiguous on both sides
/// and every base, stride and run length falls on 4-byte boundaries: then whole words move
/// with plain stores instead of element by element (and, for 1- and 2-byte elements,
/// without atomics).
fn as_words(
    dims: &[(u64, i64, i64)],
    element_bytes: i64,
    src_base: i64,
    dst_base: i64,
) -> Option<(Dims, i64, i64)> {
    let (&(run, 1, 1), outer) = dims.split_last()? else {
        return None;
    };
    let aligned = |elements: i64| (elements * element_bytes) % 4 == 0;
    let all_aligned = aligned(run as i64)
        && aligned(src_base)
        && aligned(dst_base)
        && outer.iter().all(|&(_, s, d)| aligned(s) && aligned(d));
    if !all_aligned {
        return None;
    }
    let words = |elements: i64| elements * element_bytes / 4;
    let mut converted: Vec<(u64, i64, i64)> = outer
        .iter()
        .map(|&(n, s, d)| (n, words(s), words(d)))
        .collect();
    converted.push((words(run as i64) as u64, 1, 1));
    Some((converted, words(src_base), words(dst_base)))
}

/// A contiguous, 4-byte-aligned run: done by the device's own buffer copy.
struct RunCopy {
    input: usize,
    output: usize,
    src_byte: u64,
    dst_byte: u64,
    bytes: u64,
}

impl Gpu {
    fn limit_bytes(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    /// Uploads inputs and outputs (`output_offsets[k]`: where output k's tensor starts in
    /// its buffer) and builds one dispatch per piece.
    fn prepare(
        &self,
        op: &OperatorDesc,
        inputs: &[&[u8]],
        outputs: &[Vec<u8>],
        output_offsets: &[usize],
    ) -> Result<Prepared, String> {
        let device = &self.device;
        let element_bytes = op.outputs()[0].1.data_type.element_size() as u32;
        let upload = |bytes: &[u8], usage: wgpu::BufferUsages| {
            let mut contents = bytes.to_vec();
            contents.resize(padded(bytes.len() as u64) as usize, 0);
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: &contents,
                usage,
            })
        };
        let input_buffers: Vec<wgpu::Buffer> = inputs
            .iter()
            .map(|b| {
                upload(
                    b,
                    wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                )
            })
            .collect();
        let output_buffers: Vec<wgpu::Buffer> = outputs
            .iter()
            .map(|b| {
                upload(
                    b,
                    wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                )
            })
            .collect();
        let max_groups = self.limits.max_compute_workgroups_per_dimension.max(1);
        let layout = self.pipeline.get_bind_group_layout(0);
        let mut dispatches = Vec::new();
        let mut copies = Vec::new();
        let es = i64::from(element_bytes);
        for (k, output) in copy_plan(op).iter().enumerate() {
            let offset = output_offsets[k];
            if !offset.is_multiple_of(element_bytes as usize) {
                return Err(format!(
                    "output {k} is bound at byte {offset}, not a multiple of {element_bytes}"
                ));
            }
            let dst_offset = (offset / element_bytes as usize) as i64;
            for piece in &output.pieces {
                let dims = merge_dimensions(&piece.sizes, &piece.src_strides, &output.strides);
                let src_base = piece.src_base;
                let dst_base = dst_offset + output.dst_base(piece);
                if let [(n, 1, 1)] = dims.as_slice() {
                    let (src_byte, dst_byte, bytes) =
                        (src_base * es, dst_base * es, *n as i64 * es);
                    if src_byte % 4 == 0 && dst_byte % 4 == 0 && bytes % 4 == 0 {
                        copies.push(RunCopy {
                            input: piece.input,
                            output: k,
                            src_byte: src_byte as u64,
                            dst_byte: dst_byte as u64,
                            bytes: bytes as u64,
                        });
                        continue;
                    }
                }
                let (dims, kernel_bytes, src_base, dst_base) =
                    match as_words(&dims, es, src_base, dst_base) {
                        Some((words, src, dst)) => (words, 4, src, dst),
                        None => (dims, element_bytes, src_base, dst_base),
                    };
                let count: u64 = dims.iter().map(|d| d.0).product();
                let groups = count.div_ceil(u64::from(WORKGROUP)).max(1);
                let x = groups.min(u64::from(max_groups)) as u32;
                let y = groups.div_ceil(u64::from(x));
                if y > u64::from(max_groups) {
                    return Err(format!(
                        "{count} elements need more workgroups than the adapter allows"
                    ));
                }
                let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: None,
                    contents: &params(&dims, kernel_bytes, src_base, dst_base, x * WORKGROUP),
                    usage: wgpu::BufferUsages::UNIFORM,
                });
                let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: input_buffers[piece.input].as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: output_buffers[k].as_entire_binding(),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: uniform.as_entire_binding(),
                        },
                    ],
                });
                dispatches.push((bind_group, (x, y as u32)));
            }
        }
        Ok(Prepared {
            inputs: input_buffers,
            outputs: output_buffers,
            output_lengths: outputs.iter().map(|o| o.len() as u64).collect(),
            dispatches,
            copies,
        })
    }

    /// Runs every dispatch; with `read_back`, copies the outputs back into them.
    fn dispatch(
        &self,
        prepared: &Prepared,
        read_back: Option<&mut [&mut [u8]]>,
    ) -> Result<(), String> {
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let memory = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let mut encoder = self.device.create_command_encoder(&Default::default());
        // Copies and dispatches write disjoint elements, so their order does not matter.
        for copy in &prepared.copies {
            encoder.copy_buffer_to_buffer(
                &prepared.inputs[copy.input],
                copy.src_byte,
                &prepared.outputs[copy.output],
                copy.dst_byte,
                copy.bytes,
            );
        }
        if !prepared.dispatches.is_empty() {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&self.pipeline);
            for (bind_group, (x, y)) in &prepared.dispatches {
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups(*x, *y, 1);
            }
        }
        let staging: Vec<wgpu::Buffer> = if read_back.is_some() {
            prepared
                .outputs
                .iter()
                .zip(&prepared.output_lengths)
                .map(|(buffer, &len)| {
                    let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("readback"),
                        size: padded(len),
                        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    });
                    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, padded(len));
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
            return Err(format!("wgpu reported: {error}"));
        }
        if let Some(targets) = read_back {
            for ((buffer, target), &len) in staging
                .iter()
                .zip(targets.iter_mut())
                .zip(&prepared.output_lengths)
            {
                let mapped = buffer
                    .get_mapped_range(..)
                    .map_err(|e| format!("mapping the readback buffer failed: {e}"))?;
                target.copy_from_slice(&mapped[..len as usize]);
                drop(mapped);
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
        let prepared = self.gpu.prepare(&self.op, inputs, &buffers, &offsets)?;
        let mut targets: Vec<&mut [u8]> = outputs.iter_mut().map(|o| &mut *o.buffer).collect();
        self.gpu.dispatch(&prepared, Some(&mut targets))
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
mod tests {
    use super::*;

    #[test]
    fn aligned_contiguous_runs_become_words() {
        // Rows of 8 UINT8 from rows of 16 into rows of 32: 2 words per row.
        let dims = [(4u64, 16i64, 32i64), (8, 1, 1)];
        assert_eq!(
            as_words(&dims, 1, 8, 4),
            Some((vec![(4, 4, 8), (2, 1, 1)], 2, 1))
        );
        // A run of 6 bytes is not whole words.
        assert_eq!(as_words(&[(6, 1, 1)], 1, 0, 0), None);
        // A strided innermost dimension stays element by element.
        assert_eq!(as_words(&[(4, 2, 1)], 4, 0, 0), None);
        // 8-byte elements: two words each.
        assert_eq!(
            as_words(&[(3, 1, 1)], 8, 1, 2),
            Some((vec![(6, 1, 1)], 2, 4))
        );
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
