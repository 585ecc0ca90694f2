//! Operator shapes that break the batching and fast paths implementations take
//! (cases/generated/shapes_*.yaml), all valid:
//!
//! - part counts that are not multiples of the usual batch widths (3, 5, 7, 9 and 17 Split
//!   outputs or Join inputs), rows whose lengths are not either (7, 13, 31, 33, 65 elements);
//! - a single-input Join, a single-output Split and a whole-window Slice1 (each "simply a
//!   copy") whose two sides are laid out differently: padded, packed, transposed, broadcast;
//! - 5 to 8 dimensions with every dimension's stride padded, so a read that assumes the outer
//!   dimensions contiguous lands on padding.

use super::accepted;
use super::buffers::element_sizes;
use crate::corpus::Case;
use dmlcts_tensor::{JoinDesc, OperatorDesc, OperatorKind, Slice1Desc, SplitDesc, TensorDesc};

pub fn shape_cases(kind: OperatorKind, file: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    match kind {
        OperatorKind::Slice1 => odd_rows(file, &mut cases),
        _ => part_counts(kind, file, &mut cases),
    }
    single_part_copies(kind, file, &mut cases);
    padded_high_dimensions(kind, file, &mut cases);
    cases
}

/// Row-major strides of `sizes`, each dimension's extent padded by `pad` elements.
fn padded_strides(sizes: &[u32], pad: u32) -> Vec<u32> {
    let mut strides = vec![0; sizes.len()];
    let mut running = 1;
    for d in (0..sizes.len()).rev() {
        strides[d] = running;
        running = running * sizes[d] + pad;
    }
    strides
}

/// Column-major strides: the first dimension innermost.
fn transposed_strides(sizes: &[u32]) -> Vec<u32> {
    let mut strides = Vec::with_capacity(sizes.len());
    let mut running = 1;
    for &size in sizes {
        strides.push(running);
        running *= size;
    }
    strides
}

fn part_counts(kind: OperatorKind, file: &str, cases: &mut Vec<Case>) {
    for (i, count) in [3u32, 5, 7, 9, 17].into_iter().enumerate() {
        let dt = element_sizes(kind)[i % 4];
        let dtn = dt.name().to_ascii_lowercase();
        // Parts of 1, 2 and 3 along axis 2, rows of 13.
        let axis_sizes: Vec<u32> = (0..count).map(|p| p % 3 + 1).collect();
        let total: u32 = axis_sizes.iter().sum();
        let whole = TensorDesc::packed(dt, &[2, 3, total, 13]);
        let parts: Vec<TensorDesc> = axis_sizes
            .iter()
            .map(|&a| TensorDesc::packed(dt, &[2, 3, a, 13]))
            .collect();
        let (op, what) = match kind {
            OperatorKind::Split => (
                OperatorDesc::Split(SplitDesc {
                    input_tensor: whole,
                    output_tensors: parts,
                    axis: 2,
                }),
                "outputs",
            ),
            _ => (
                OperatorDesc::Join(JoinDesc {
                    input_tensors: parts,
                    output_tensor: whole,
                    axis: 2,
                }),
                "inputs",
            ),
        };
        cases.push(accepted(
            format!("shapes.{kind}.{count}_{what}.{dtn}"),
            file,
            format!(
                "{count} {what} of {axis_sizes:?} along axis 2, rows of 13 {dt}: neither a \
                 multiple of 2, 4, 8 or 16"
            ),
            op,
        ));
    }
}

fn odd_rows(file: &str, cases: &mut Vec<Case>) {
    for (i, row) in [7u32, 13, 31, 33, 65].into_iter().enumerate() {
        let dt = element_sizes(OperatorKind::Slice1)[i % 4];
        let dtn = dt.name().to_ascii_lowercase();
        for (stride, how) in [(1i32, "every element"), (2, "every other element")] {
            let window = (row - 1) * stride as u32 + 1;
            let input = TensorDesc::packed(dt, &[3, 5, 9, window + 3]);
            let output = TensorDesc::packed(dt, &[3, 4, 9, row]);
            let op = OperatorDesc::Slice1(Slice1Desc {
                dimension_count: 4,
                input_window_offsets: vec![0, 1, 0, 2],
                input_window_sizes: vec![3, 4, 9, window],
                input_window_strides: vec![1, 1, -1, stride],
                input_tensor: input,
                output_tensor: output,
            });
            cases.push(accepted(
                format!("shapes.slice1.rows_of_{row}.stride_{stride}.{dtn}"),
                file,
                format!(
                    "output rows of {row} {dt} ({how} of the window), not a multiple of 2, 4, \
                     8 or 16; the rows' order reversed"
                ),
                op,
            ));
        }
    }
}

/// One operator of `kind` that copies `from` into `to` whole (the same sizes).
fn copy(kind: OperatorKind, from: TensorDesc, to: TensorDesc) -> OperatorDesc {
    let sizes = from.sizes.clone();
    match kind {
        OperatorKind::Split => OperatorDesc::Split(SplitDesc {
            input_tensor: from,
            output_tensors: vec![to],
            axis: 1,
        }),
        OperatorKind::Join => OperatorDesc::Join(JoinDesc {
            input_tensors: vec![from],
            output_tensor: to,
            axis: 1,
        }),
        OperatorKind::Slice1 => OperatorDesc::Slice1(Slice1Desc {
            dimension_count: sizes.len() as u32,
            input_window_offsets: vec![0; sizes.len()],
            input_window_sizes: sizes.clone(),
            input_window_strides: vec![1; sizes.len()],
            input_tensor: from,
            output_tensor: to,
        }),
    }
}

fn single_part_copies(kind: OperatorKind, file: &str, cases: &mut Vec<Case>) {
    let sizes = [2u32, 3, 17, 29];
    let what = match kind {
        OperatorKind::Split => "a single-output Split",
        OperatorKind::Join => "a single-input Join",
        OperatorKind::Slice1 => "a whole-window Slice1 with strides of 1",
    };
    for (i, dt) in element_sizes(kind).into_iter().enumerate() {
        let dtn = dt.name().to_ascii_lowercase();
        let strided = |strides: Vec<u32>| TensorDesc::strided(dt, &sizes, Some(&strides));
        let packed = TensorDesc::packed(dt, &sizes);
        let padded = strided(padded_strides(&sizes, 3));
        let layouts: [(&str, TensorDesc, TensorDesc); 5] = [
            ("padded_to_packed", padded.clone(), packed.clone()),
            ("packed_to_padded", packed.clone(), padded.clone()),
            (
                "transposed_to_packed",
                strided(transposed_strides(&sizes)),
                packed.clone(),
            ),
            (
                "broadcast_to_padded",
                strided(vec![0, 29, 0, 1]),
                strided(padded_strides(&sizes, 1)),
            ),
            (
                "padded_to_other_padding",
                strided(padded_strides(&sizes, 5)),
                strided(padded_strides(&sizes, 2)),
            ),
        ];
        // Each data type takes a share of the layouts (all for the first), so every layout
        // meets several element sizes without 20 cases per operator.
        for (j, (layout, from, to)) in layouts.into_iter().enumerate() {
            if i > 0 && j % 4 != i % 4 {
                continue;
            }
            cases.push(accepted(
                format!("shapes.{kind}.single_copy.{layout}.{dtn}"),
                file,
                format!("{what} of {dt} {sizes:?}, {}", layout.replace('_', " ")),
                copy(kind, from, to),
            ));
        }
    }
}

fn padded_high_dimensions(kind: OperatorKind, file: &str, cases: &mut Vec<Case>) {
    for dimensions in 5..=8usize {
        let dt = element_sizes(kind)[dimensions % 4];
        let dtn = dt.name().to_ascii_lowercase();
        // 2 and 3 alternating, the innermost 7; a padding element after every dimension.
        let mut sizes: Vec<u32> = (0..dimensions).map(|d| 2 + (d % 2) as u32).collect();
        sizes[dimensions - 1] = 7;
        let padded = |sizes: &[u32], pad: u32| {
            TensorDesc::strided(dt, sizes, Some(&padded_strides(sizes, pad)))
        };
        let axis = dimensions - 2;
        let mut first = sizes.clone();
        first[axis] = 1;
        let mut rest = sizes.clone();
        rest[axis] -= 1;
        let op = match kind {
            OperatorKind::Split => OperatorDesc::Split(SplitDesc {
                input_tensor: padded(&sizes, 1),
                output_tensors: vec![padded(&first, 2), TensorDesc::packed(dt, &rest)],
                axis: axis as u32,
            }),
            OperatorKind::Join => OperatorDesc::Join(JoinDesc {
                input_tensors: vec![padded(&first, 1), padded(&rest, 3)],
                output_tensor: padded(&sizes, 2),
                axis: axis as u32,
            }),
            OperatorKind::Slice1 => {
                // The window drops the first and last element of every dimension of 3 and
                // reverses every other dimension.
                let input_sizes: Vec<u32> = sizes.iter().map(|&s| s + 2).collect();
                let strides: Vec<i32> = (0..dimensions)
                    .map(|d| if d % 2 == 0 { -1 } else { 1 })
                    .collect();
                OperatorDesc::Slice1(Slice1Desc {
                    dimension_count: dimensions as u32,
                    input_window_offsets: vec![1; dimensions],
                    input_window_sizes: sizes.clone(),
                    input_window_strides: strides,
                    input_tensor: padded(&input_sizes, 1),
                    output_tensor: padded(&sizes, 2),
                })
            }
        };
        cases.push(accepted(
            format!("shapes.{kind}.{dimensions}d.padded_every_dimension.{dtn}"),
            file,
            format!(
                "{dimensions} dimensions of {dt} {sizes:?}, each dimension's stride padded: no \
                 two outer dimensions are contiguous"
            ),
            op,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_strides_add_the_padding_after_each_dimension() {
        assert_eq!(padded_strides(&[2, 3, 4], 1), [3 * (4 + 1) + 1, 5, 1]);
        assert_eq!(padded_strides(&[2, 3, 4], 0), [12, 4, 1]);
        assert_eq!(transposed_strides(&[2, 3, 4]), [1, 2, 6]);
    }
}
