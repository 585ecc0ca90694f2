//! The adapter and the device on it: choosing the adapter, opening the device with the
//! kernel's module and layouts, and the kernel's pipelines, one per specialization, made on
//! first use.

use crate::kernel::{MODE_ALIGNED, PER_LANE, Specialization};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) module: wgpu::ShaderModule,
    pub(crate) layout: wgpu::PipelineLayout,
    pub(crate) bind_group_layout: wgpu::BindGroupLayout,
    /// The kernel's specializations made so far.
    pipelines: Mutex<HashMap<Specialization, wgpu::ComputePipeline>>,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) limits: wgpu::Limits,
    /// Tensors whose bytes sum to at most this share one buffer (the binding limit; lower in
    /// a test that needs the one-buffer-each path).
    pub(crate) shared_limit: u64,
    /// Errors outside any error scope (there should be none); kept, never a panic.
    pub(crate) uncaptured: Arc<Mutex<Vec<String>>>,
}

pub(crate) fn describe(info: &wgpu::AdapterInfo) -> String {
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

pub(crate) fn open(filter: Option<&str>, kernel: &str) -> Result<Gpu, String> {
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

impl Gpu {
    /// The kernel's bindings: the source and target buffers as words (bindings 0 and 1) and
    /// again as 16-byte blocks (3 and 4, kernel.wgsl's `src4` and `dst4`), and the piece
    /// table (2).
    pub(crate) fn bind_group(
        &self,
        source: &wgpu::Buffer,
        target: &wgpu::Buffer,
        table: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
            wgpu::BindGroupEntry {
                binding,
                resource: buffer.as_entire_binding(),
            }
        }
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &self.bind_group_layout,
            entries: &[
                entry(0, source),
                entry(1, target),
                entry(2, table),
                entry(3, source),
                entry(4, target),
            ],
        })
    }

    /// The kernel's pipeline for `specialization`, made on first use.
    pub(crate) fn pipeline(
        &self,
        specialization: Specialization,
    ) -> Result<wgpu::ComputePipeline, String> {
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
}
