//! The adapter's only data handling: a strided input buffer into a packed tract tensor
//! (`gather`), and a packed tract tensor into a strided output buffer (`scatter`). Elements
//! are moved as whole groups of bytes, in row-major order on both sides, and never
//! interpreted; a tract tensor's bytes are its elements in row-major order, little-endian
//! like the buffers. Every access is bounds-checked: a descriptor whose elements fall outside
//! its buffer is an error, never a panic.

use crate::model::{datum_type, shape};
use dmlcts_tensor::{Coordinates, TensorDesc};
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

/// The elements of a strided buffer as a packed tract tensor of the descriptor's type.
pub fn gather(desc: &TensorDesc, bytes: &[u8]) -> Result<Tensor, String> {
    let mut tensor = Tensor::zero_dt(datum_type(desc.data_type), &shape(desc))
        .map_err(|e| format!("tract cannot make a {:?} tensor: {e:#}", desc.sizes))?;
    let packed = tensor.as_bytes_mut();
    let size = desc.data_type.element_size();
    let count = row_length(desc);
    let mut next = 0usize;
    rows(desc, |start, step| {
        if count == 0 {
            return Ok(());
        }
        if step == size as u64 {
            // A contiguous row: one copy.
            let (from, _) = element(start, step, 0, size, bytes.len())?;
            let (_, to) = element(start, step, count.saturating_sub(1), size, bytes.len())?;
            let run = count as usize * size;
            let target = packed
                .get_mut(next..next + run)
                .ok_or("more elements than the tensor holds")?;
            target.copy_from_slice(&bytes[from..to]);
            next += run;
            return Ok(());
        }
        for j in 0..count {
            let (from, to) = element(start, step, j, size, bytes.len())?;
            let target = packed
                .get_mut(next..next + size)
                .ok_or("more elements than the tensor holds")?;
            target.copy_from_slice(&bytes[from..to]);
            next += size;
        }
        Ok(())
    })?;
    if next != packed.len() {
        return Err(format!(
            "gathered {next} bytes for a {}-byte tensor",
            packed.len()
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
    let size = desc.data_type.element_size();
    let count = row_length(desc);
    let len = buffer.len();
    let mut next = 0usize;
    rows(desc, |start, step| {
        if count == 0 {
            return Ok(());
        }
        if step == size as u64 {
            let (from, _) = element(start, step, 0, size, len)?;
            let (_, to) = element(start, step, count.saturating_sub(1), size, len)?;
            let run = count as usize * size;
            let source = packed
                .get(next..next + run)
                .ok_or("fewer elements than the output has")?;
            buffer[from..to].copy_from_slice(source);
            next += run;
            return Ok(());
        }
        for j in 0..count {
            let (from, to) = element(start, step, j, size, len)?;
            let source = packed
                .get(next..next + size)
                .ok_or("fewer elements than the output has")?;
            buffer[from..to].copy_from_slice(source);
            next += size;
        }
        Ok(())
    })?;
    if next != packed.len() {
        return Err(format!(
            "scattered {next} of tract's {} bytes",
            packed.len()
        ));
    }
    Ok(())
}
