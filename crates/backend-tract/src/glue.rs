//! The adapter's only data handling: a strided input buffer into a packed tract tensor
//! (`gather`), and a packed tract tensor into a strided output buffer (`scatter`). Elements
//! are moved as whole groups of bytes, in row-major order on both sides, and never
//! interpreted; a tract tensor's bytes are its elements in row-major order, little-endian
//! like the buffers. Every access is bounds-checked: a descriptor whose elements fall outside
//! its buffer is an error, never a panic.

use crate::model::{datum_type, shape};
use dmlcts_tensor::{Coordinates, TensorDesc};
use std::ops::Range;
use tract_core::prelude::Tensor;

/// Calls `row(offset, step)` for each innermost row of `desc` in row-major order: the byte
/// offset of the row's first element and the bytes from one element of the row to the next.
fn rows(
    desc: &TensorDesc,
    mut row: impl FnMut(u64, u64) -> Result<(), String>,
) -> Result<(), String> {
    let strides = desc.effective_strides();
    let element_size = desc.data_type.element_size() as u64;
    let Some((&last_stride, outer_strides)) = strides.split_last() else {
        return row(0, element_size);
    };
    let outer_sizes = &desc.sizes[..outer_strides.len()];
    let mut walk = Coordinates::new(outer_sizes);
    while let Some(coordinates) = walk.advance() {
        let start = desc
            .byte_offset(coordinates, outer_strides)
            .ok_or("an element's byte offset is beyond 2^64")?;
        row(start, last_stride * element_size)?;
    }
    Ok(())
}

/// The byte range of element `j` of a row, checked against a buffer of `len` bytes.
fn element(
    start: u64,
    step: u64,
    j: u64,
    size: usize,
    len: usize,
) -> Result<(usize, usize), String> {
    let from = step
        .checked_mul(j)
        .and_then(|o| o.checked_add(start))
        .and_then(|o| usize::try_from(o).ok())
        .filter(|&o| o.checked_add(size).is_some_and(|end| end <= len))
        .ok_or_else(|| {
            format!("an element at byte {start} + {j} * {step} lies outside the {len}-byte buffer")
        })?;
    Ok((from, from + size))
}

fn row_length(desc: &TensorDesc) -> u64 {
    desc.sizes.last().map_or(1, |&s| u64::from(s))
}

/// Pairs the elements of `desc` in a buffer of `len` bytes, in row-major order, with the
/// bytes of a packed tensor of `packed_len` bytes: `copy(buffer bytes, packed bytes)` once for
/// each contiguous row, once for each element otherwise. `overflow` is the error when the
/// packed bytes run out. Returns the packed bytes paired.
fn pair_with_packed(
    desc: &TensorDesc,
    len: usize,
    packed_len: usize,
    overflow: &str,
    mut copy: impl FnMut(Range<usize>, Range<usize>),
) -> Result<usize, String> {
    let size = desc.data_type.element_size();
    let count = row_length(desc);
    let mut next = 0usize;
    let mut pair = |from: usize, to: usize| {
        let end = next + (to - from);
        if end > packed_len {
            return Err(overflow.to_string());
        }
        copy(from..to, next..end);
        next = end;
        Ok(())
    };
    rows(desc, |start, step| {
        if count == 0 {
            return Ok(());
        }
        if step == size as u64 {
            // A contiguous row: one copy.
            let (from, _) = element(start, step, 0, size, len)?;
            let (_, to) = element(start, step, count - 1, size, len)?;
            return pair(from, to);
        }
        for j in 0..count {
            let (from, to) = element(start, step, j, size, len)?;
            pair(from, to)?;
        }
        Ok(())
    })?;
    Ok(next)
}

/// The elements of a strided buffer as a packed tract tensor of the descriptor's type.
pub fn gather(desc: &TensorDesc, bytes: &[u8]) -> Result<Tensor, String> {
    let mut tensor = Tensor::zero_dt(datum_type(desc.data_type), &shape(desc))
        .map_err(|e| format!("tract cannot make a {:?} tensor: {e:#}", desc.sizes))?;
    let packed = tensor.as_bytes_mut();
    let packed_len = packed.len();
    let next = pair_with_packed(
        desc,
        bytes.len(),
        packed_len,
        "more elements than the tensor holds",
        |from, to| packed[to].copy_from_slice(&bytes[from]),
    )?;
    if next != packed_len {
        return Err(format!(
            "gathered {next} bytes for a {packed_len}-byte tensor"
        ));
    }
    Ok(tensor)
}

/// A packed tract tensor's elements into a strided buffer, which must be the descriptor's
/// type and shape.
pub fn scatter(tensor: &Tensor, desc: &TensorDesc, buffer: &mut [u8]) -> Result<(), String> {
    let want = datum_type(desc.data_type);
    if tensor.datum_type() != want || tensor.shape() != shape(desc).as_slice() {
        return Err(format!(
            "tract returned {:?} {:?}; the output is {want:?} {:?}",
            tensor.datum_type(),
            tensor.shape(),
            desc.sizes
        ));
    }
    let packed = tensor.as_bytes();
    let next = pair_with_packed(
        desc,
        buffer.len(),
        packed.len(),
        "fewer elements than the output has",
        |to, from| buffer[to].copy_from_slice(&packed[from]),
    )?;
    if next != packed.len() {
        return Err(format!(
            "scattered {next} of tract's {} bytes",
            packed.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmlcts_tensor::DataType;

    fn desc(sizes: &[u32], strides: Option<&[u32]>, total: u64) -> TensorDesc {
        TensorDesc {
            data_type: DataType::Uint16,
            sizes: sizes.to_vec(),
            strides: strides.map(<[u32]>::to_vec),
            total_tensor_size_in_bytes: total,
        }
    }

    fn u16_bytes(values: &[u16]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn gather_packs_a_padded_and_a_broadcast_layout_in_row_major_order() {
        // 2 x 3 with rows 4 elements apart: the padding (99) is skipped.
        let padded = desc(&[2, 3], Some(&[4, 1]), 16);
        let bytes = u16_bytes(&[1, 2, 3, 99, 4, 5, 6, 99]);
        let tensor = gather(&padded, &bytes).unwrap();
        assert_eq!(tensor.shape(), &[2, 3]);
        assert_eq!(tensor.as_bytes(), u16_bytes(&[1, 2, 3, 4, 5, 6]).as_slice());
        // A 0 stride reads one element again (a broadcast input); a stride 2 row is gathered
        // element by element.
        let broadcast = desc(&[2, 2], Some(&[0, 2]), 8);
        let tensor = gather(&broadcast, &u16_bytes(&[7, 0, 8, 0])).unwrap();
        assert_eq!(tensor.as_bytes(), u16_bytes(&[7, 8, 7, 8]).as_slice());
    }

    #[test]
    fn scatter_writes_only_the_addressed_elements_of_a_strided_output() {
        let tensor = gather(&desc(&[2, 2], None, 8), &u16_bytes(&[1, 2, 3, 4])).unwrap();
        let output = desc(&[2, 2], Some(&[1, 2]), 8);
        let mut buffer = u16_bytes(&[0xEEEE; 4]);
        scatter(&tensor, &output, &mut buffer).unwrap();
        // Column-major: (0, 1) lands at element 2, (1, 0) at element 1.
        assert_eq!(buffer, u16_bytes(&[1, 3, 2, 4]));
    }

    #[test]
    fn elements_outside_the_buffer_are_an_error_not_a_panic() {
        let too_small = desc(&[2, 3], Some(&[4, 1]), 8);
        assert_eq!(
            gather(&too_small, &[0; 8]).unwrap_err(),
            "an element at byte 8 + 0 * 2 lies outside the 8-byte buffer"
        );
        let tensor = gather(&desc(&[2, 3], None, 12), &[0; 12]).unwrap();
        assert_eq!(
            scatter(&tensor, &too_small, &mut [0; 8]).unwrap_err(),
            "an element at byte 8 + 0 * 2 lies outside the 8-byte buffer"
        );
        // A tensor of another shape is refused before any byte moves.
        let mut untouched = [5u8; 12];
        assert_eq!(
            scatter(&tensor, &desc(&[3, 2], None, 12), &mut untouched).unwrap_err(),
            "tract returned U16 [2, 3]; the output is U16 [3, 2]"
        );
        assert_eq!(untouched, [5u8; 12]);
    }
}
