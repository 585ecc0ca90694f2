//! How each operator moves elements, as strided block copies in the coordinates of the
//! output they write. Shared by the fast backends; the oracle follows the pages' pseudocode
//! instead, so a mistake here shows up as a difference from the oracle.

use crate::{OperatorDesc, TensorDesc};

/// One copy from an input into an output: the block of `sizes` elements whose first
/// element sits at output coordinate `origin`, read from input `input` starting at element
/// `src_base` with `src_strides` (signed: Slice1 may walk backwards). Offsets and strides
/// count elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub input: usize,
    pub sizes: Vec<u64>,
    pub origin: Vec<u64>,
    pub src_base: i64,
    pub src_strides: Vec<i64>,
}

/// Everything written to one output: its sizes and strides, and the pieces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputPieces {
    pub sizes: Vec<u64>,
    pub strides: Vec<i64>,
    pub pieces: Vec<Piece>,
}

impl OutputPieces {
    /// The output element index where `piece` starts.
    pub fn dst_base(&self, piece: &Piece) -> i64 {
        piece
            .origin
            .iter()
            .zip(&self.strides)
            .map(|(&o, &s)| o as i64 * s)
            .sum()
    }
}

/// A block copy's dimensions as (size, source stride, destination stride), outermost first,
/// with size-1 dimensions dropped and neighbours that are contiguous in both source and
/// destination merged, so a packed-to-packed copy becomes one run. Never empty: a single
/// element is one dimension of size 1.
pub fn merge_dimensions(
    sizes: &[u64],
    src_strides: &[i64],
    dst_strides: &[i64],
) -> Vec<(u64, i64, i64)> {
    let mut dims: Vec<(u64, i64, i64)> = Vec::new();
    for ((&size, &src), &dst) in sizes.iter().zip(src_strides).zip(dst_strides) {
        if size == 1 {
            continue;
        }
        match dims.last_mut() {
            Some(outer) if outer.1 == src * size as i64 && outer.2 == dst * size as i64 => {
                *outer = (outer.0 * size, src, dst);
            }
            _ => dims.push((size, src, dst)),
        }
    }
    if dims.is_empty() {
        dims.push((1, 1, 1));
    }
    dims
}

fn strides_of(desc: &TensorDesc) -> Vec<i64> {
    desc.effective_strides().iter().map(|&s| s as i64).collect()
}

fn sizes_of(desc: &TensorDesc) -> Vec<u64> {
    desc.sizes.iter().map(|&s| u64::from(s)).collect()
}

fn output(desc: &TensorDesc, pieces: Vec<Piece>) -> OutputPieces {
    OutputPieces {
        sizes: sizes_of(desc),
        strides: strides_of(desc),
        pieces,
    }
}

/// The copies a **validated** descriptor performs, one entry per output in binding order.
pub fn copy_plan(op: &OperatorDesc) -> Vec<OutputPieces> {
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
                    output(out, vec![piece])
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
            vec![output(&d.output_tensor, pieces)]
        }
        OperatorDesc::Slice1(d) => {
            // CopyStart: the window's start, or its end where the stride is negative.
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
            vec![output(&d.output_tensor, vec![piece])]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_neighbours_merge_and_size_one_dimensions_drop() {
        assert_eq!(
            merge_dimensions(&[2, 3, 4], &[12, 4, 1], &[12, 4, 1]),
            vec![(24, 1, 1)]
        );
        // A join on the last axis: rows of 4 from rows of 4 into rows of 7.
        assert_eq!(
            merge_dimensions(&[1, 2, 4], &[8, 4, 1], &[14, 7, 1]),
            vec![(2, 4, 7), (4, 1, 1)]
        );
        assert_eq!(merge_dimensions(&[1, 1], &[5, 1], &[5, 1]), vec![(1, 1, 1)]);
        // Reversed source: no merge across the sign change.
        assert_eq!(
            merge_dimensions(&[2, 3], &[3, -1], &[3, 1]),
            vec![(2, 3, 3), (3, -1, 1)]
        );
    }
}
