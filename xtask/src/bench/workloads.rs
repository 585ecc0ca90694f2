//! The bench's workloads: the seven Join, Split and Slice1 descriptors on 64 MiB tensors (and
//! on any shape, for the scaling table), their random inputs, and ndarray doing the same work.

use dmlcts_tensor::{
    DataType, JoinDesc, OperatorDesc, Slice1Desc, SplitDesc, TensorDesc, fill_random_bits,
};
use ndarray::{Array2, ArrayView2, Axis, s};

pub(super) const TOTAL_BYTES: usize = 64 << 20;

#[derive(Clone, Copy)]
pub(super) enum Workload {
    JoinLastAxis,
    JoinAxis0,
    SplitLastAxis,
    SplitAxis0,
    SliceStride1,
    SliceReverseLastAxis,
    SliceStride2,
}

impl Workload {
    pub(super) const ALL: [Workload; 7] = [
        Workload::JoinLastAxis,
        Workload::JoinAxis0,
        Workload::SplitLastAxis,
        Workload::SplitAxis0,
        Workload::SliceStride1,
        Workload::SliceReverseLastAxis,
        Workload::SliceStride2,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Workload::JoinLastAxis => "join 4, last axis",
            Workload::JoinAxis0 => "join 4, axis 0",
            Workload::SplitLastAxis => "split 4, last axis",
            Workload::SplitAxis0 => "split 4, axis 0",
            Workload::SliceStride1 => "slice1 stride 1",
            Workload::SliceReverseLastAxis => "slice1 stride -1 (last)",
            Workload::SliceStride2 => "slice1 stride 2 (last)",
        }
    }

    /// Contiguous workloads are held to >= 0.8x memcpy.
    pub(super) fn contiguous(self) -> bool {
        matches!(
            self,
            Workload::JoinAxis0 | Workload::SplitAxis0 | Workload::SliceStride1
        )
    }
}

/// A 2-D tensor of TOTAL_BYTES: 4096 rows.
pub(super) fn shape(data_type: DataType) -> (u32, u32) {
    let rows = 4096u32;
    let cols = (TOTAL_BYTES / data_type.element_size() / rows as usize) as u32;
    (rows, cols)
}

pub(super) fn descriptor(workload: Workload, data_type: DataType) -> OperatorDesc {
    let (rows, cols) = shape(data_type);
    descriptor_of_shape(workload, data_type, rows, cols)
}

/// The workload on a `rows` x `cols` tensor (rows divisible by 4 for Join and Split on axis
/// 0, cols divisible by 4 on the last axis).
pub(super) fn descriptor_of_shape(
    workload: Workload,
    data_type: DataType,
    rows: u32,
    cols: u32,
) -> OperatorDesc {
    let t = |r: u32, c: u32| TensorDesc::packed(data_type, &[r, c]);
    match workload {
        Workload::JoinLastAxis => OperatorDesc::Join(JoinDesc {
            input_tensors: vec![t(rows, cols / 4); 4],
            output_tensor: t(rows, cols),
            axis: 1,
        }),
        Workload::JoinAxis0 => OperatorDesc::Join(JoinDesc {
            input_tensors: vec![t(rows / 4, cols); 4],
            output_tensor: t(rows, cols),
            axis: 0,
        }),
        Workload::SplitLastAxis => OperatorDesc::Split(SplitDesc {
            input_tensor: t(rows, cols),
            output_tensors: vec![t(rows, cols / 4); 4],
            axis: 1,
        }),
        Workload::SplitAxis0 => OperatorDesc::Split(SplitDesc {
            input_tensor: t(rows, cols),
            output_tensors: vec![t(rows / 4, cols); 4],
            axis: 0,
        }),
        Workload::SliceStride1 | Workload::SliceReverseLastAxis | Workload::SliceStride2 => {
            let (stride, out_cols) = match workload {
                Workload::SliceStride1 => (1, cols),
                Workload::SliceReverseLastAxis => (-1, cols),
                _ => (2, cols / 2),
            };
            OperatorDesc::Slice1(Slice1Desc {
                input_tensor: t(rows, cols),
                output_tensor: t(rows, out_cols),
                dimension_count: 2,
                input_window_offsets: vec![0, 0],
                input_window_sizes: vec![rows, cols],
                input_window_strides: vec![1, stride],
            })
        }
    }
}

/// Random bit patterns for every input of `op`.
pub(super) fn random_inputs(op: &OperatorDesc, data_type: DataType) -> Vec<Vec<u8>> {
    op.inputs()
        .iter()
        .enumerate()
        .map(|(i, (_, d))| {
            let mut bytes = vec![0u8; d.total_tensor_size_in_bytes as usize];
            fill_random_bits(data_type, &mut bytes, i as u64);
            bytes
        })
        .collect()
}

/// The axis a Join or Split works on, and the shape of each of its 4 parts.
fn quarters(workload: Workload, rows: usize, cols: usize) -> (usize, (usize, usize)) {
    if matches!(workload, Workload::JoinAxis0 | Workload::SplitAxis0) {
        (0, (rows / 4, cols))
    } else {
        (1, (rows, cols / 4))
    }
}

/// ndarray doing the same work on element type T, as a closure that owns its arrays.
/// `allocating`: the APIs that return new arrays (concatenate, split_at + to_owned, slicing +
/// to_owned); otherwise `assign` into arrays allocated once.
pub(super) fn ndarray_work<T: Copy + From<u8> + 'static>(
    workload: Workload,
    rows: usize,
    cols: usize,
    allocating: bool,
) -> Box<dyn FnMut()> {
    // Non-zero everywhere: untouched zero pages would make reads look free.
    let whole: Array2<T> = Array2::from_elem((rows, cols), T::from(1));
    match workload {
        Workload::JoinLastAxis | Workload::JoinAxis0 => {
            let (axis, part_shape) = quarters(workload, rows, cols);
            let parts: Vec<Array2<T>> = (0..4)
                .map(|_| Array2::from_elem(part_shape, T::from(1)))
                .collect();
            let mut out = whole;
            Box::new(move || {
                let views: Vec<ArrayView2<T>> = parts.iter().map(|p| p.view()).collect();
                if allocating {
                    let joined = ndarray::concatenate(Axis(axis), &views).expect("same shapes");
                    std::hint::black_box(&joined);
                } else {
                    for (i, v) in views.iter().enumerate() {
                        if axis == 0 {
                            out.slice_mut(s![i * rows / 4..(i + 1) * rows / 4, ..])
                                .assign(v);
                        } else {
                            out.slice_mut(s![.., i * cols / 4..(i + 1) * cols / 4])
                                .assign(v);
                        }
                    }
                    std::hint::black_box(&out);
                }
            })
        }
        Workload::SplitLastAxis | Workload::SplitAxis0 => {
            let (axis, part_shape) = quarters(workload, rows, cols);
            let mut outs: Vec<Array2<T>> = (0..4)
                .map(|_| Array2::from_elem(part_shape, T::from(2)))
                .collect();
            Box::new(move || {
                let mut rest = whole.view();
                for out in outs.iter_mut() {
                    let cut = if axis == 0 {
                        part_shape.0
                    } else {
                        part_shape.1
                    };
                    let at = cut.min(rest.len_of(Axis(axis)));
                    let (piece, tail) = rest.split_at(Axis(axis), at);
                    if allocating {
                        std::hint::black_box(piece.to_owned());
                    } else {
                        out.assign(&piece);
                    }
                    rest = tail;
                }
                std::hint::black_box(&outs);
            })
        }
        Workload::SliceStride1 | Workload::SliceReverseLastAxis | Workload::SliceStride2 => {
            let mut out: Array2<T> = match workload {
                Workload::SliceStride2 => Array2::from_elem((rows, cols / 2), T::from(2)),
                _ => Array2::from_elem((rows, cols), T::from(2)),
            };
            Box::new(move || {
                let view = match workload {
                    Workload::SliceStride1 => whole.slice(s![.., ..]),
                    Workload::SliceReverseLastAxis => whole.slice(s![.., ..;-1]),
                    _ => whole.slice(s![.., ..;2]),
                };
                if allocating {
                    std::hint::black_box(view.to_owned());
                } else {
                    out.assign(&view);
                    std::hint::black_box(&out);
                }
            })
        }
    }
}
