//! Operators as strided copies in the coordinates of the output they write.

use crate::copy::{StridedCopy, run_copy};
use std::sync::Mutex;

/// Chunks of work per thread when an output is split across threads.
const CHUNKS_PER_THREAD: u64 = 8;
use dmlcts_tensor::{OperatorDesc, TensorDesc};

/// One copy from an input into an output: the block of `sizes` elements whose first
/// element sits at output coordinate `origin`, read from `input` starting at element
/// `src_base` with `src_strides` (signed: Slice1 may walk backwards).
#[derive(Clone, Debug)]
pub struct Piece {
    pub input: usize,
    pub sizes: Vec<u64>,
    pub origin: Vec<u64>,
    pub src_base: i64,
    pub src_strides: Vec<i64>,
}

/// Everything written to one output.
#[derive(Clone, Debug)]
pub struct OutputPlan {
    pub sizes: Vec<u64>,
    pub strides: Vec<i64>,
    pub pieces: Vec<Piece>,
    /// The outermost dimension with size > 1, when splitting the output along it gives
    /// disjoint byte ranges (its stride exceeds everything the inner dimensions reach).
    pub split_dimension: Option<usize>,
}

fn strides_of(desc: &TensorDesc) -> Vec<i64> {
    desc.effective_strides().iter().map(|&s| s as i64).collect()
}

fn sizes_of(desc: &TensorDesc) -> Vec<u64> {
    desc.sizes.iter().map(|&s| u64::from(s)).collect()
}

fn output_plan(desc: &TensorDesc, pieces: Vec<Piece>) -> OutputPlan {
    let sizes = sizes_of(desc);
    let strides = strides_of(desc);
    let split_dimension = sizes.iter().position(|&s| s > 1).filter(|&p| {
        let inner_reach: i64 = (p + 1..sizes.len())
            .map(|d| (sizes[d] as i64 - 1) * strides[d])
            .sum();
        strides[p] > inner_reach
    });
    OutputPlan {
        sizes,
        strides,
        pieces,
        split_dimension,
    }
}

/// The copies a validated descriptor performs, grouped by output.
pub fn plan(op: &OperatorDesc) -> Vec<OutputPlan> {
    match op {
        OperatorDesc::Split(d) => {
            let axis = d.axis as usize;
            let src_strides = strides_of(&d.input_tensor);
            let mut start = 0i64;
            d.output_tensors
                .iter()
                .map(|out| {
                    let piece = Piece {
                        input: 0,
                        sizes: sizes_of(out),
                        origin: vec![0; out.sizes.len()],
                        src_base: start * src_strides[axis],
                        src_strides: src_strides.clone(),
                    };
                    start += i64::from(out.sizes[axis]);
                    output_plan(out, vec![piece])
                })
                .collect()
        }
        OperatorDesc::Join(d) => {
            let axis = d.axis as usize;
            let mut start = 0u64;
            let pieces = d
                .input_tensors
                .iter()
                .enumerate()
                .map(|(i, input)| {
                    let mut origin = vec![0; input.sizes.len()];
                    origin[axis] = start;
                    start += u64::from(input.sizes[axis]);
                    Piece {
                        input: i,
                        sizes: sizes_of(input),
                        origin,
                        src_base: 0,
                        src_strides: strides_of(input),
                    }
                })
                .collect();
            vec![output_plan(&d.output_tensor, pieces)]
        }
        OperatorDesc::Slice1(d) => {
            let input_strides = strides_of(&d.input_tensor);
            let mut src_base = 0i64;
            let mut src_strides = Vec::with_capacity(input_strides.len());
            for (i, &stride) in input_strides.iter().enumerate() {
                let window_stride = i64::from(d.input_window_strides[i]);
                let mut start = i64::from(d.input_window_offsets[i]);
                if window_stride < 0 {
                    start += i64::from(d.input_window_sizes[i]) - 1;
                }
                src_base += start * stride;
                src_strides.push(window_stride * stride);
            }
            let piece = Piece {
                input: 0,
                sizes: sizes_of(&d.output_tensor),
                origin: vec![0; d.output_tensor.sizes.len()],
                src_base,
                src_strides,
            };
            vec![output_plan(&d.output_tensor, vec![piece])]
        }
    }
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
        let rows = self.sizes[p];
        let chunks = (threads as u64 * CHUNKS_PER_THREAD).min(rows);
        let row_bytes = self.strides[p] as usize * element_size;
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
        for piece in &self.pieces {
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
                .zip(&self.strides)
                .map(|(&o, &s)| o as i64 * s)
                .sum::<i64>()
                - (dst_start / element_size) as i64;
            let copy = StridedCopy::new(
                &sizes,
                src_base,
                &piece.src_strides,
                dst_base,
                &self.strides,
            );
            let src = inputs
                .get(piece.input)
                .ok_or_else(|| format!("input {} not bound", piece.input))?;
            run_copy(&copy, src, dst, element_size)?;
        }
        Ok(())
    }
}
