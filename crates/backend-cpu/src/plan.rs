//! The CPU backend's execution of the shared copy plan.

use crate::copy::{StridedCopy, run_copy};
use dmlcts_tensor::{OperatorDesc, OutputPieces, copy_plan};
use std::sync::Mutex;

/// Chunks of work per thread when an output is split across threads.
const CHUNKS_PER_THREAD: u64 = 8;

/// Everything written to one output, and how it may be split across threads.
#[derive(Clone, Debug)]
pub struct OutputPlan {
    pub output: OutputPieces,
    /// The outermost dimension with size > 1, when splitting the output along it gives
    /// disjoint byte ranges (its stride exceeds everything the inner dimensions reach).
    pub split_dimension: Option<usize>,
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
            OutputPlan {
                output,
                split_dimension,
            }
        })
        .collect()
}

impl OutputPlan {
    /// Writes every piece into `dst` (the output's TotalTensorSizeInBytes bytes).
    pub fn run(
        &self,
        inputs: &[&[u8]],
        dst: &mut [u8],
        element_size: usize,
        threads: usize,
    ) -> Result<(), String> {
        let split = self.split_dimension.filter(|_| threads > 1);
        let Some(p) = split else {
            return self.run_rows(inputs, dst, element_size, 0, u64::MAX, 0);
        };
        // Rows [a, b) of dimension p own bytes [a * stride_p, b * stride_p) of the output.
        // Several chunks per thread, pulled from a shared queue: on a busy machine a thread
        // that gets less CPU time simply takes fewer chunks.
        let rows = self.output.sizes[p];
        let chunks = (threads as u64 * CHUNKS_PER_THREAD).min(rows);
        let row_bytes = self.output.strides[p] as usize * element_size;
        let mut tasks = Vec::with_capacity(chunks as usize);
        let mut rest = dst;
        let mut consumed = 0usize;
        for k in 0..chunks {
            let (a, b) = (rows * k / chunks, rows * (k + 1) / chunks);
            let end = if k + 1 == chunks {
                consumed + rest.len()
            } else {
                b as usize * row_bytes
            };
            let (mine, tail) = rest.split_at_mut(end - consumed);
            tasks.push((a, b, consumed, mine));
            consumed = end;
            rest = tail;
        }
        let queue = Mutex::new(tasks.into_iter());
        let work = || -> Result<(), String> {
            loop {
                let task = queue.lock().map_err(|_| "a copy thread panicked")?.next();
                let Some((a, b, start, bytes)) = task else {
                    return Ok(());
                };
                self.run_rows(inputs, bytes, element_size, a, b, start)?;
            }
        };
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            let mine = work();
            helpers
                .into_iter()
                .try_for_each(|h| h.join().map_err(|_| "a copy thread panicked".to_string())?)?;
            mine
        })
    }

    /// Writes the part of every piece that falls in rows [a, b) of the split dimension (all
    /// of it when not splitting) into `dst`, which starts at byte `dst_start` of the output.
    fn run_rows(
        &self,
        inputs: &[&[u8]],
        dst: &mut [u8],
        element_size: usize,
        a: u64,
        b: u64,
        dst_start: usize,
    ) -> Result<(), String> {
        for piece in &self.output.pieces {
            let mut sizes = piece.sizes.clone();
            let mut origin = piece.origin.clone();
            let mut src_base = piece.src_base;
            if let Some(p) = self.split_dimension.filter(|_| b != u64::MAX) {
                let lo = origin[p].max(a);
                let hi = (origin[p] + sizes[p]).min(b);
                if lo >= hi {
                    continue;
                }
                src_base += (lo - origin[p]) as i64 * piece.src_strides[p];
                sizes[p] = hi - lo;
                origin[p] = lo;
            }
            let dst_base: i64 = origin
                .iter()
                .zip(&self.output.strides)
                .map(|(&o, &s)| o as i64 * s)
                .sum::<i64>()
                - (dst_start / element_size) as i64;
            let copy = StridedCopy::new(
                &sizes,
                src_base,
                &piece.src_strides,
                dst_base,
                &self.output.strides,
            );
            let src = inputs
                .get(piece.input)
                .ok_or_else(|| format!("input {} not bound", piece.input))?;
            run_copy(&copy, src, dst, element_size)?;
        }
        Ok(())
    }
}
