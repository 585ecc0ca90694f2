//! The bench's measurement (`WgpuBackend::measure`): the operator's work timed beside the
//! adapter's own buffer copy, kernel.wgsl's `lane_copy` and the kernel with its moves removed.

use crate::WgpuBackend;
use crate::device::Gpu;
use crate::kernel::{PER_LANE, PIECE_WORDS, WORKGROUP};
use crate::plan::{Dispatch, Placement, Prepared, padded};
use dmlcts_tensor::OperatorDesc;
use std::time::{Duration, Instant};
use wgpu::util::DeviceExt;

impl WgpuBackend {
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

impl Gpu {
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
        let bind_group = self.bind_group(source, target, &unused);
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
}
