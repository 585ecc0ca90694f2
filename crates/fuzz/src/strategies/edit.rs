//! Edits of one tensor that keep the rest of it as it was: what the near misses and the
//! shrinker's normalizing steps are made of.

use dmlcts_tensor::{DataType, TensorDesc};

/// The strides it is addressed with, as the descriptor's `u32`s.
pub fn strides_u32(tensor: &TensorDesc) -> Vec<u32> {
    tensor
        .effective_strides()
        .iter()
        .map(|&s| u32::try_from(s).unwrap_or(u32::MAX))
        .collect()
}

/// `tensor` with another type, sizes or strides, keeping how far its TotalTensorSizeInBytes
/// is from the minimum (so a near miss of the size stays one, and extra bytes stay extra).
pub fn remade(
    tensor: &TensorDesc,
    data_type: DataType,
    sizes: &[u32],
    strides: Option<&[u32]>,
) -> TensorDesc {
    let old_minimum = tensor.minimum_size_in_bytes() as i128;
    let delta = tensor.total_tensor_size_in_bytes as i128 - old_minimum;
    let mut new = TensorDesc::strided(data_type, sizes, strides);
    let total = (new.total_tensor_size_in_bytes as i128 + delta).max(0);
    new.total_tensor_size_in_bytes = u64::try_from(total).unwrap_or(u64::MAX);
    new
}

/// `tensor` with new sizes (as many as before), its strides kept for an input, packed for an
/// output (a grown dimension of a padded output could overlap the next row).
pub fn resized(tensor: &TensorDesc, sizes: &[u32], is_output: bool) -> TensorDesc {
    let strides = (!is_output && sizes.len() == tensor.sizes.len())
        .then_some(tensor.strides.as_deref())
        .flatten();
    remade(tensor, tensor.data_type, sizes, strides)
}

/// Raises TotalTensorSizeInBytes to the minimum if it fell below it.
pub fn cover_minimum(tensor: &mut TensorDesc) {
    let minimum = u64::try_from(tensor.minimum_size_in_bytes()).unwrap_or(u64::MAX);
    tensor.total_tensor_size_in_bytes = tensor.total_tensor_size_in_bytes.max(minimum);
}

/// DMLCalcBufferTensorSize before its rounding up to 4 bytes.
pub fn unrounded_minimum(tensor: &TensorDesc) -> u128 {
    let element_size = tensor.data_type.element_size() as u128;
    if tensor.sizes.contains(&0) {
        return 0;
    }
    let elements = match &tensor.strides {
        None => tensor.element_count(),
        Some(strides) => {
            tensor
                .sizes
                .iter()
                .zip(strides)
                .map(|(&size, &stride)| u128::from(size - 1) * u128::from(stride))
                .sum::<u128>()
                + 1
        }
    };
    elements * element_size
}

/// Removes dimension `d` (its size and stride).
pub fn without_dimension(tensor: &TensorDesc, d: usize) -> TensorDesc {
    let mut sizes = tensor.sizes.clone();
    let mut strides = tensor.strides.clone();
    if d < sizes.len() {
        sizes.remove(d);
    }
    if let Some(s) = &mut strides
        && d < s.len()
    {
        s.remove(d);
    }
    remade(tensor, tensor.data_type, &sizes, strides.as_deref())
}

/// Inserts a dimension of size 1 at `d` (stride 1 where it has strides: it moves nothing).
pub fn with_unit_dimension(tensor: &TensorDesc, d: usize) -> TensorDesc {
    let mut sizes = tensor.sizes.clone();
    let mut strides = tensor.strides.clone();
    sizes.insert(d.min(sizes.len()), 1);
    if let Some(s) = &mut strides {
        s.insert(d.min(s.len()), 1);
    }
    remade(tensor, tensor.data_type, &sizes, strides.as_deref())
}

/// `tensor` as another data type, laid out as before.
pub fn retyped(tensor: &TensorDesc, data_type: DataType) -> TensorDesc {
    remade(tensor, data_type, &tensor.sizes, tensor.strides.as_deref())
}

/// `tensor` with `sizes` where some are 0, its strides those of the same sizes with every 0
/// read as 1: a tensor with no elements, laid out like one with them (its packed strides
/// would all be 0, which reads as overlapping outputs).
pub fn emptied(tensor: &TensorDesc, sizes: &[u32]) -> TensorDesc {
    let counted: Vec<u32> = sizes.iter().map(|&s| s.max(1)).collect();
    let strides = strides_u32(&TensorDesc::packed(tensor.data_type, &counted));
    TensorDesc::strided(tensor.data_type, sizes, Some(&strides))
}

/// Whether each moving dimension (size > 1), sorted by stride, lies beyond the reach of
/// those before it: packed, padded and permuted layouts are; an interleaved one is not.
pub fn is_nested(tensor: &TensorDesc) -> bool {
    let strides = tensor.effective_strides();
    let mut moving: Vec<(u64, u64)> = (tensor.sizes.iter().zip(&strides))
        .filter(|&(&size, _)| size > 1)
        .map(|(&size, &stride)| (stride, u64::from(size)))
        .collect();
    moving.sort_unstable();
    let mut reach: u128 = 0;
    for (stride, size) in moving {
        if u128::from(stride) <= reach {
            return false;
        }
        reach += u128::from(size - 1) * u128::from(stride);
    }
    true
}
