//! Running a `Prepared` on the device: its buffer copies and kernel dispatches in one
//! submission, then, when asked, the outputs read back. Its tests run on the adapter.

use crate::device::Gpu;
use crate::plan::Prepared;

impl Gpu {
    /// Runs the dispatches (and, `with_copies`, the buffer copies); with `read_back`, copies
    /// the outputs back into them.
    pub(crate) fn dispatch(
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

#[cfg(test)]
mod tests {
    //! On the adapter (skipped without one, unless DMLCTS_REQUIRE_WGPU_ADAPTER is set).
    use crate::device::{Gpu, open};
    use crate::kernel::{KERNEL, MODE_VEC_ALIGNED, MODE_VEC_REVERSED, MODE_VEC_STRIDE2};
    use crate::{WgpuBackend, WgpuOptions};
    use dmlcts_harness::{Corpus, RunOptions, Status, run_case};
    use dmlcts_tensor::{
        Backend, DataType, FeatureLevel, JoinDesc, OperatorDesc, Slice1Desc, TensorDesc,
        fill_random_bits,
    };

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
