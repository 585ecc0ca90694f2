//! The CPU backend's execution of the shared copy plan.

use crate::copy::{Stores, StridedCopy, run_copy};
use dmlcts_tensor::{OperatorDesc, OutputPieces, copy_plan};
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

/// Chunks of work per thread when outputs are split across threads.
const CHUNKS_PER_THREAD: usize = 8;

/// By default, when the outputs of one operator total at least this many bytes, their long contiguous
/// runs (`copy::STREAM_MIN_RUN_BYTES`) are written with non-temporal stores: outputs this
/// large do not stay in this machine's caches anyway, so reading their lines for ownership
/// first only costs bandwidth (measured with `cargo xtask bench`: docs/guide/performance.md).
pub const STREAM_MIN_OUTPUT_BYTES: usize = 8 << 20;

/// Everything written to one output, and how it may be split across threads.
#[derive(Clone, Debug)]
pub struct OutputPlan {
    pub output: OutputPieces,
    /// The outermost dimension with size > 1, when splitting the output along it gives
    /// disjoint byte ranges (its stride exceeds everything the inner dimensions reach).
    pub split_dimension: Option<usize>,
    /// Each piece's copy of the whole piece (input index, copy), made once at compile time
    /// for the output written by one task.
    whole: Vec<(usize, StridedCopy)>,
}

/// The copy plan, with a split dimension for each output.
pub fn plan(op: &OperatorDesc) -> Vec<OutputPlan> {
    copy_plan(op)
        .into_iter()
        .map(|output| {
            let (sizes, strides) = (&output.sizes, &output.strides);
            let split_dimension = sizes.iter().position(|&s| s > 1).filter(|&p| {
                let inner_reach: i64 = (p + 1..sizes.len())
                    .map(|d| (sizes[d] as i64 - 1) * strides[d])
                    .sum();
                strides[p] > inner_reach
            });
            let whole = output
                .pieces
                .iter()
                .map(|piece| {
                    let dst_base = piece
                        .origin
                        .iter()
                        .zip(strides)
                        .map(|(&o, &s)| o as i64 * s)
                        .sum();
                    let copy = StridedCopy::new(
                        &piece.sizes,
                        piece.src_base,
                        &piece.src_strides,
                        dst_base,
                        strides,
                    );
                    (piece.input, copy)
                })
                .collect();
            OutputPlan {
                output,
                split_dimension,
                whole,
            }
        })
        .collect()
}

/// One unit of work: rows [a, b) of an output's split dimension (`None`: the whole output),
/// written into `bytes`, which start at byte `start` of that output.
struct Task<'a> {
    plan: &'a OutputPlan,
    rows: Option<(u64, u64)>,
    start: usize,
    bytes: &'a mut [u8],
}

/// How a run went, for tests: the bytes written with non-temporal stores, and the number of
/// tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    pub streamed: usize,
    pub tasks: usize,
}

/// Writes every output (`outputs[i]` is output i's TotalTensorSizeInBytes bytes) on up to
/// `threads` threads, with non-temporal stores for long contiguous runs when they total at
/// least `streaming_threshold` bytes. Outputs that total less than `parallel_threshold`
/// bytes are written on the calling thread, each piece whole. Otherwise every output that
/// has a split dimension is cut along it into chunks (about `CHUNKS_PER_THREAD` per thread
/// over all outputs, each output's share in proportion to its size), which the threads share
/// out (see below): on a busy machine a thread that gets less CPU time simply takes fewer.
pub fn run_all(
    plans: &[OutputPlan],
    inputs: &[&[u8]],
    outputs: Vec<&mut [u8]>,
    element_size: usize,
    threads: usize,
    parallel_threshold: usize,
    streaming_threshold: usize,
) -> Result<RunStats, String> {
    let total: usize = outputs.iter().map(|o| o.len()).sum();
    let stores = if total >= streaming_threshold {
        Stores::Streaming
    } else {
        Stores::Cached
    };
    let streamed = AtomicUsize::new(0);
    let threads = if total >= parallel_threshold {
        threads
    } else {
        1
    };
    let whole = |(plan, bytes)| Task {
        plan,
        rows: None,
        start: 0,
        bytes,
    };
    let run = |task: Task<'_>| {
        task.plan
            .run_task(inputs, task, element_size, stores, &streamed)
    };
    if threads == 1 {
        plans.iter().zip(outputs).map(whole).try_for_each(run)?;
        return Ok(RunStats {
            streamed: streamed.into_inner(),
            tasks: plans.len(),
        });
    }
    let mut tasks = Vec::new();
    for (plan, dst) in plans.iter().zip(outputs) {
        match plan.split_dimension {
            None => tasks.push(whole((plan, dst))),
            Some(p) => {
                let share = (threads * CHUNKS_PER_THREAD * dst.len()).div_ceil(total.max(1));
                plan.cut(p, share as u64, dst, element_size, &mut tasks);
            }
        }
    }
    // Each thread owns a contiguous segment of the chunks (in output order) and takes them
    // from its front; a thread whose segment is empty takes from the back of another's. On a
    // quiet machine each thread so streams through one contiguous range, as the reference
    // copy over both cores does; on a busy one the threads that get the CPU do the rest.
    let count = tasks.len();
    let workers = threads.min(count);
    let per_worker = count.div_ceil(workers);
    let mut rest = tasks.into_iter();
    let segments: Vec<Mutex<VecDeque<Task<'_>>>> = (0..workers)
        .map(|_| Mutex::new(rest.by_ref().take(per_worker).collect()))
        .collect();
    let poisoned = |_| "a copy thread panicked".to_string();
    let next = |me: usize| -> Result<Option<Task<'_>>, String> {
        if let Some(task) = segments[me].lock().map_err(poisoned)?.pop_front() {
            return Ok(Some(task));
        }
        for segment in &segments {
            if let Some(task) = segment.lock().map_err(poisoned)?.pop_back() {
                return Ok(Some(task));
            }
        }
        Ok(None)
    };
    let work = |me: usize| -> Result<(), String> {
        while let Some(task) = next(me)? {
            run(task)?;
        }
        Ok(())
    };
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..workers)
            .map(|me| scope.spawn(move || work(me)))
            .collect();
        work(0)?;
        helpers.into_iter().try_for_each(|helper| {
            helper
                .join()
                .map_err(|_| "a copy thread panicked".to_string())?
        })
    })?;
    Ok(RunStats {
        streamed: streamed.into_inner(),
        tasks: count,
    })
}

impl OutputPlan {
    /// Cuts `dst` along dimension `p` into `chunks` tasks (at most one per row): rows [a, b)
    /// of dimension p own bytes [a * stride_p, b * stride_p) of the output, the last chunk
    /// also everything after.
    fn cut<'a>(
        &'a self,
        p: usize,
        chunks: u64,
        dst: &'a mut [u8],
        element_size: usize,
        tasks: &mut Vec<Task<'a>>,
    ) {
        let rows = self.output.sizes[p];
        let chunks = chunks.clamp(1, rows);
        let row_bytes = self.output.strides[p] as usize * element_size;
        let mut rest = dst;
        let mut consumed = 0usize;
        for k in 0..chunks {
            let (a, b) = (rows * k / chunks, rows * (k + 1) / chunks);
            let end = if k + 1 == chunks {
                consumed + rest.len()
            } else {
                b as usize * row_bytes
            };
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(end - consumed);
            tasks.push(Task {
                plan: self,
                rows: Some((a, b)),
                start: consumed,
                bytes: mine,
            });
            consumed = end;
            rest = tail;
        }
    }

    /// Writes the part of every piece that falls in the task's rows of the split dimension
    /// (every piece whole for a task without rows) into the task's bytes, adding the bytes
    /// written with non-temporal stores to `streamed`.
    fn run_task(
        &self,
        inputs: &[&[u8]],
        task: Task<'_>,
        element_size: usize,
        stores: Stores,
        streamed: &AtomicUsize,
    ) -> Result<(), String> {
        let input = |i: usize| {
            inputs
                .get(i)
                .copied()
                .ok_or_else(|| format!("input {i} not bound"))
        };
        let Some((a, b)) = task.rows else {
            for (i, copy) in &self.whole {
                run_copy(copy, input(*i)?, task.bytes, element_size, stores, streamed)?;
            }
            return Ok(());
        };
        let p = self
            .split_dimension
            .ok_or("rows of an output with no split dimension")?;
        for piece in &self.output.pieces {
            let lo = piece.origin[p].max(a);
            let hi = (piece.origin[p] + piece.sizes[p]).min(b);
            if lo >= hi {
                continue;
            }
            let mut sizes = piece.sizes.clone();
            let mut origin = piece.origin.clone();
            let src_base = piece.src_base + (lo - origin[p]) as i64 * piece.src_strides[p];
            sizes[p] = hi - lo;
            origin[p] = lo;
            let dst_base: i64 = origin
                .iter()
                .zip(&self.output.strides)
                .map(|(&o, &s)| o as i64 * s)
                .sum::<i64>()
                - (task.start / element_size) as i64;
            let copy = StridedCopy::new(
                &sizes,
                src_base,
                &piece.src_strides,
                dst_base,
                &self.output.strides,
            );
            let src = input(piece.input)?;
            run_copy(&copy, src, task.bytes, element_size, stores, streamed)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::copy::STREAM_MIN_RUN_BYTES;
    use dmlcts_tensor::{DataType, JoinDesc, Slice1Desc, SplitDesc, TensorDesc};

    fn float32(sizes: &[u32]) -> TensorDesc {
        TensorDesc::packed(DataType::Float32, sizes)
    }

    /// Distinct bytes for input `i`: every byte says where it came from.
    fn input(i: usize, len: usize) -> Vec<u8> {
        (0..len)
            .map(|k| (k * 7 + i * 61 + k / 4093) as u8)
            .collect()
    }

    /// A Join on axis 0 of four [rows/4, cols] FLOAT32 inputs, its inputs, and its output.
    fn join_axis_0(rows: u32, cols: u32) -> (OperatorDesc, Vec<Vec<u8>>, Vec<u8>) {
        let op = OperatorDesc::Join(JoinDesc {
            input_tensors: vec![float32(&[rows / 4, cols]); 4],
            output_tensor: float32(&[rows, cols]),
            axis: 0,
        });
        let part = (rows / 4 * cols * 4) as usize;
        let inputs: Vec<Vec<u8>> = (0..4).map(|i| input(i, part)).collect();
        (op, inputs, vec![0u8; 4 * part])
    }

    /// Runs `op`'s FLOAT32 plan on two threads with the default streaming threshold.
    fn run_float32(
        op: &OperatorDesc,
        inputs: &[&[u8]],
        outputs: Vec<&mut [u8]>,
        parallel_threshold: usize,
    ) -> RunStats {
        let plans = plan(op);
        run_all(
            &plans,
            inputs,
            outputs,
            4,
            2,
            parallel_threshold,
            STREAM_MIN_OUTPUT_BYTES,
        )
        .unwrap()
    }

    #[test]
    fn large_contiguous_runs_take_the_nontemporal_path_in_chunks_over_threads() {
        // 16 MiB: four 4 MiB contiguous runs.
        let (op, inputs, mut output) = join_axis_0(1024, 4096);
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let stats = run_float32(&op, &refs, vec![&mut output], 1 << 20);
        assert_eq!(
            stats.streamed,
            16 << 20,
            "every byte through non-temporal stores"
        );
        assert_eq!(stats.tasks, 2 * CHUNKS_PER_THREAD);
        assert_eq!(output, inputs.concat());
    }

    #[test]
    fn a_split_cuts_every_output_into_its_share_of_the_chunks_and_streams_them() {
        let op = OperatorDesc::Split(SplitDesc {
            input_tensor: float32(&[1024, 4096]),
            output_tensors: vec![float32(&[256, 4096]); 4],
            axis: 0,
        });
        let source = input(0, 16 << 20);
        let mut outputs = vec![vec![0u8; 4 << 20]; 4];
        let bindings: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
        let stats = run_float32(&op, &[&source], bindings, 1 << 20);
        assert_eq!(stats.streamed, 16 << 20);
        assert_eq!(stats.tasks, 2 * CHUNKS_PER_THREAD);
        assert_eq!(outputs.concat(), source);
    }

    #[test]
    fn outputs_below_the_streaming_size_use_cached_stores_on_one_thread() {
        // Just under STREAM_MIN_OUTPUT_BYTES, and under the parallel threshold given.
        let (op, inputs, mut output) = join_axis_0(1024, 2047);
        assert!(output.len() < STREAM_MIN_OUTPUT_BYTES);
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let stats = run_float32(&op, &refs, vec![&mut output], 16 << 20);
        assert_eq!(
            stats,
            RunStats {
                streamed: 0,
                tasks: 1
            }
        );
        assert_eq!(output, inputs.concat());
        // A 4 KiB case: one task, no streaming.
        let (op, inputs, mut output) = join_axis_0(4, 256);
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let stats = run_float32(&op, &refs, vec![&mut output], 1 << 20);
        assert_eq!(
            stats,
            RunStats {
                streamed: 0,
                tasks: 1
            }
        );
        assert_eq!(output, inputs.concat());
    }

    #[test]
    fn short_runs_of_a_large_output_use_cached_stores_and_long_gathers_stream() {
        // A Join on the last axis: 16 MiB written in runs of 1 KiB, under STREAM_MIN_RUN_BYTES.
        let op = OperatorDesc::Join(JoinDesc {
            input_tensors: vec![float32(&[4096, 256]); 4],
            output_tensor: float32(&[4096, 1024]),
            axis: 1,
        });
        const { assert!(256 * 4 < STREAM_MIN_RUN_BYTES) };
        let inputs: Vec<Vec<u8>> = (0..4).map(|i| input(i, 4 << 20)).collect();
        let refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let mut output = vec![0u8; 16 << 20];
        let stats = run_float32(&op, &refs, vec![&mut output], 1 << 20);
        assert_eq!(stats.streamed, 0);
        for row in 0..4096 {
            for (i, part) in inputs.iter().enumerate() {
                let got = &output[row * 4096 + i * 1024..][..1024];
                assert_eq!(got, &part[row * 1024..][..1024], "row {row}, input {i}");
            }
        }
        // A reversed Slice1 of 16 MiB with rows of 16 KiB: gathered in blocks that stay in
        // the cache, every byte then streamed.
        let reversed = |rows: u32, cols: u32| {
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: float32(&[rows, cols]),
                output_tensor: float32(&[rows, cols]),
                dimension_count: 2,
                input_window_offsets: vec![0, 0],
                input_window_sizes: vec![rows, cols],
                input_window_strides: vec![1, -1],
            })
        };
        let source = input(0, 16 << 20);
        let stats = run_float32(
            &reversed(1024, 4096),
            &[&source],
            vec![&mut output],
            1 << 20,
        );
        assert_eq!(stats.streamed, 16 << 20);
        assert_eq!(&output[..4], &source[4 * 4095..4 * 4096]);
        // The same with rows of 1 KiB: gathered runs under STREAM_MIN_RUN_BYTES, cached.
        let stats = run_float32(
            &reversed(16384, 256),
            &[&source],
            vec![&mut output],
            1 << 20,
        );
        assert_eq!(stats.streamed, 0);
        assert_eq!(&output[..4], &source[4 * 255..4 * 256]);
    }
}
