//! Comparing a backend's output with the oracle's, and saying how they differ in a way a
//! backend author can act on: coordinates, values and bit patterns, and a diff of the
//! tensors printed the way the pages print them.

use dmlcts_oracle::OracleOutput;
use dmlcts_tensor::{Coordinates, DataType, TensorDesc, format_element, read_element};
use std::fmt::Write as _;

/// Bytes of guard band on each side of every output buffer.
pub(crate) const GUARD_BYTES: usize = 64;

/// The byte the harness pre-fills output buffers (guard bands included) with, by position.
/// It varies so that a backend skipping an element is unlikely to be hidden by a sentinel
/// that happens to equal the expected value.
pub(crate) fn sentinel_byte(position: usize) -> u8 {
    0xA5u8 ^ ((position % 251) as u8).wrapping_mul(0x3B)
}

/// The sentinel pattern's one period: `sentinel_byte(p)` is `sentinel_period()[p % 251]`.
pub(crate) fn sentinel_period() -> [u8; 251] {
    std::array::from_fn(sentinel_byte)
}

/// How many unaddressed bytes of an output (`inner`, which starts `offset` bytes into its
/// guarded buffer) no longer hold the sentinel: a period of the pattern at a time, so that
/// the loop over a large output vectorizes.
pub(crate) fn holes_written(inner: &[u8], addressed: &[bool], offset: usize) -> usize {
    let period = sentinel_period();
    let sentinels: [u8; 251] = std::array::from_fn(|k| period[(offset + k) % period.len()]);
    (inner
        .chunks(period.len())
        .zip(addressed.chunks(period.len())))
    .map(|(bytes, addressed)| {
        (bytes.iter().zip(addressed).zip(&sentinels))
            .map(|((&b, &addressed), &sentinel)| usize::from(!addressed & (b != sentinel)))
            .sum::<usize>()
    })
    .sum()
}

/// A buffer of `size` bytes with guard bands, all filled with the sentinel pattern.
pub(crate) fn guarded_buffer(size: usize) -> Vec<u8> {
    // One period, then the buffer so far copied after itself (a large-tier output is
    // megabytes): while its length is a whole number of periods, byte `len + k` is byte `k`.
    let period = sentinel_period();
    let len = size + 2 * GUARD_BYTES;
    let mut buffer = Vec::with_capacity(len);
    buffer.extend_from_slice(&period[..len.min(period.len())]);
    while buffer.len() < len {
        let take = (len - buffer.len()).min(buffer.len());
        buffer.extend_from_within(..take);
    }
    buffer
}

/// Tensors with at most this many elements get a printed diff.
pub(crate) const MAX_PRINTED_ELEMENTS: u128 = 256;

/// Differences listed before "... and N more".
const MAX_LISTED_DIFFERENCES: usize = 8;

/// Checks the addressed bytes of one output. Returns the diagnostic when they differ.
pub(crate) fn compare_output(
    field: &str,
    desc: &TensorDesc,
    expected: &OracleOutput,
    actual: &[u8],
) -> Option<String> {
    // Equal bytes everywhere (the usual case, one memcmp) or equal where addressed (a fold
    // without early exit, which the compiler vectorizes: a large-tier output is megabytes).
    let matches = expected.bytes == actual
        || (expected.bytes.len() == actual.len()
            && (expected.bytes.iter().zip(actual).zip(&expected.addressed))
                .fold(true, |ok, ((e, a), &addressed)| {
                    ok & (!addressed | (e == a))
                }));
    if matches {
        return None;
    }
    let data_type = desc.data_type;
    let strides = desc.effective_strides();
    let mut differing = 0usize;
    let mut listed = String::new();
    let mut expected_values = Vec::new();
    let mut actual_values = Vec::new();
    for coordinates in Coordinates::new(&desc.sizes) {
        let Some(offset) = desc.byte_offset(&coordinates, &strides) else {
            continue;
        };
        let offset = offset as usize;
        let e = read_element(&expected.bytes, offset, data_type).unwrap_or(0);
        let a = read_element(actual, offset, data_type).unwrap_or(0);
        expected_values.push(e);
        actual_values.push(a);
        if e != a {
            differing += 1;
            if differing <= MAX_LISTED_DIFFERENCES {
                let _ = writeln!(
                    listed,
                    "    {field}{coordinates:?} (byte {offset}): expected {}, got {}",
                    value_and_bits(data_type, e),
                    value_and_bits(data_type, a)
                );
            }
        }
    }
    let mut message = format!(
        "{field}: {differing} of {} elements differ\n{listed}",
        expected_values.len()
    );
    if differing > MAX_LISTED_DIFFERENCES {
        let _ = writeln!(
            message,
            "    ... and {} more",
            differing - MAX_LISTED_DIFFERENCES
        );
    }
    if desc.element_count() <= MAX_PRINTED_ELEMENTS {
        let expected_text = format_tensor(data_type, &desc.sizes, &expected_values);
        let actual_text = format_tensor(data_type, &desc.sizes, &actual_values);
        let _ = writeln!(message, "  diff (- expected, + actual):");
        message.push_str(&text_diff(&expected_text, &actual_text));
    }
    Some(message)
}

/// `6 (0x40c00000)`: the value as a number and as its bit pattern.
pub(crate) fn value_and_bits(data_type: DataType, bits: u64) -> String {
    let width = data_type.element_size() * 2;
    let text = format_element(data_type, bits);
    let hex = format!("0x{bits:0width$x}");
    if text == hex {
        text
    } else {
        format!("{text} ({hex})")
    }
}

/// Line diff with `-`/`+` markers, via `similar`.
pub(crate) fn text_diff(expected: &str, actual: &str) -> String {
    let diff = similar::TextDiff::from_lines(expected, actual);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
            similar::ChangeTag::Equal => ' ',
        };
        let _ = write!(out, "  {sign}{}", change.value());
        if !change.value().ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// A tensor printed as the pages print them:
///
/// ```text
/// [[[[1, 2],
///    [3, 4]]]]
/// ```
pub(crate) fn format_tensor(data_type: DataType, sizes: &[u32], values: &[u64]) -> String {
    if sizes.is_empty() {
        return values
            .first()
            .map(|&v| format_element(data_type, v))
            .unwrap_or_default();
    }
    let mut out = String::new();
    let mut next = 0usize;
    format_level(data_type, sizes, values, 0, &mut next, &mut out);
    out.push('\n');
    out
}

fn format_level(
    data_type: DataType,
    sizes: &[u32],
    values: &[u64],
    depth: usize,
    next: &mut usize,
    out: &mut String,
) {
    out.push('[');
    let last = depth + 1 == sizes.len();
    for i in 0..sizes[depth] {
        if i > 0 {
            if last {
                out.push_str(", ");
            } else {
                out.push_str(",\n");
                out.push_str(&" ".repeat(depth + 1));
            }
        }
        if last {
            let value = values.get(*next).copied().unwrap_or(0);
            out.push_str(&format_element(data_type, value));
            *next += 1;
        } else {
            format_level(data_type, sizes, values, depth + 1, next, out);
        }
    }
    out.push(']');
}

/// Describes bytes outside `[offset, offset + size)` that no longer hold the sentinel.
pub(crate) fn check_guard_bands(
    field: &str,
    buffer: &[u8],
    offset: usize,
    size: usize,
) -> Option<String> {
    let changed = |range: std::ops::Range<usize>| -> Vec<usize> {
        range.filter(|&i| buffer[i] != sentinel_byte(i)).collect()
    };
    let before = changed(0..offset);
    let after = changed(offset + size..buffer.len());
    if before.is_empty() && after.is_empty() {
        return None;
    }
    let mut message =
        format!("{field}: the backend wrote outside TotalTensorSizeInBytes ({size} bytes)");
    if let (Some(first), Some(last)) = (before.first(), before.last()) {
        let _ = write!(
            message,
            "; {} byte(s) before the start (bytes {} to {} before it)",
            before.len(),
            offset - last,
            offset - first
        );
    }
    if let (Some(first), Some(last)) = (after.first(), after.last()) {
        let _ = write!(
            message,
            "; {} byte(s) past the end (bytes +{} to +{} after it)",
            after.len(),
            first - offset - size,
            last - offset - size
        );
    }
    Some(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holes_written_counts_the_unaddressed_bytes_that_lost_the_sentinel() {
        let size = 1000;
        let mut buffer = guarded_buffer(size);
        let addressed: Vec<bool> = (0..size).map(|i| i % 3 != 0).collect();
        for i in [0, 3, 250, 251, 600, 999, 1, 2] {
            buffer[GUARD_BYTES + i] ^= 0xff;
        }
        let inner = &buffer[GUARD_BYTES..GUARD_BYTES + size];
        let by_byte = (0..size)
            .filter(|&i| !addressed[i] && inner[i] != sentinel_byte(GUARD_BYTES + i))
            .count();
        assert_eq!(by_byte, 4);
        assert_eq!(holes_written(inner, &addressed, GUARD_BYTES), by_byte);
    }

    #[test]
    fn a_guarded_buffer_holds_the_sentinel_at_every_position() {
        for size in [0, 1, 250, 251, 1000, 100_000] {
            let buffer = guarded_buffer(size);
            assert_eq!(buffer.len(), size + 2 * GUARD_BYTES);
            assert!(
                buffer
                    .iter()
                    .enumerate()
                    .all(|(i, &b)| b == sentinel_byte(i))
            );
        }
    }

    #[test]
    fn tensors_print_like_the_pages() {
        let values: Vec<u64> = (1..=4u32)
            .map(|v| u64::from((v as f32).to_bits()))
            .collect();
        assert_eq!(
            format_tensor(DataType::Float32, &[1, 1, 2, 2], &values),
            "[[[[1, 2],\n   [3, 4]]]]\n"
        );
        assert_eq!(
            format_tensor(DataType::Int8, &[3], &[1, 0xff, 2]),
            "[1, -1, 2]\n"
        );
    }

    #[test]
    fn values_show_number_and_bits() {
        assert_eq!(
            value_and_bits(DataType::Float32, 0x40c0_0000),
            "6 (0x40c00000)"
        );
        assert_eq!(value_and_bits(DataType::Float16, 0x7e01), "0x7e01");
        assert_eq!(value_and_bits(DataType::Int8, 0xff), "-1 (0xff)");
    }

    #[test]
    fn guard_band_writes_are_located() {
        let mut buffer = guarded_buffer(8);
        buffer[GUARD_BYTES + 8] ^= 1;
        buffer[GUARD_BYTES + 9] ^= 1;
        let message = check_guard_bands("OutputTensor", &buffer, GUARD_BYTES, 8).unwrap();
        assert!(
            message.contains("2 byte(s) past the end (bytes +0 to +1 after it)"),
            "{message}"
        );
        assert!(check_guard_bands("OutputTensor", &guarded_buffer(8), GUARD_BYTES, 8).is_none());
    }
}
