//! Non-temporal ("streaming") copies: stores that go around the caches, so the destination's
//! cache lines are neither read for ownership nor left evicting the source. The backend uses
//! them for the long contiguous runs of large outputs (`plan::STREAM_MIN_OUTPUT_BYTES`,
//! `copy::STREAM_MIN_RUN_BYTES`); `cargo xtask bench` uses them in its reference copies.
//!
//! This is the crate's only `unsafe` code: SSE2 loads and `_mm_stream_si128` stores (SSE2 is
//! part of every x86-64 CPU, so nothing is detected at run time). Elsewhere the copy is a
//! plain `copy_from_slice`. The unsafe block works on exact 64-byte chunks that safe code cut
//! from the two slices, with the destination chunk aligned to 64 bytes by a safe head copy.
//! For kernels that make each line's bytes themselves (the reversed and every-other gathers
//! of `crate::copy`), `lines_mut` cuts a destination into 64-byte-aligned `Line`s (one
//! `align_to_mut`) and `store_line` streams a value into one (four stores).

/// Copies `src` into `dst` with non-temporal stores for every whole 64-byte line of `dst`
/// (ordinary copies for the unaligned head and the tail), then fences, so the bytes are
/// visible to every thread as after an ordinary copy.
///
/// # Panics
/// When the lengths differ, as `copy_from_slice` does.
pub fn copy_nontemporal(dst: &mut [u8], src: &[u8]) {
    copy_nontemporal_unfenced(dst, src);
    store_fence();
}

/// `copy_nontemporal` without the closing fence, for a caller that writes many runs and
/// fences once after the last ([`store_fence`]) before anything reads them: a fence per
/// 4 KiB run waits for every write-combining buffer each time (the last-axis Join, which
/// streams 4 KiB runs, was at 0.64x-0.68x of the best copy with one per run).
///
/// # Panics
/// When the lengths differ.
pub(crate) fn copy_nontemporal_unfenced(dst: &mut [u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "a non-temporal copy needs equal lengths"
    );
    #[cfg(target_arch = "x86_64")]
    imp::copy(dst, src);
    // Elsewhere an ordinary copy: the same bytes.
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Orders every non-temporal store made so far on this thread before any later store, so the
/// bytes are visible as after ordinary copies (nothing to do where stores are ordinary).
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    imp::fence();
}

/// A 64-byte line of a destination, on a 64-byte boundary ([`lines_mut`] cuts them from a
/// slice): [`store_line`] writes one with non-temporal stores. Its alignment is what makes
/// those stores sound, so a line can be written from any safe code.
#[repr(C, align(64))]
pub(crate) struct Line([u8; 64]);

/// `dst` as the bytes before its first 64-byte boundary, its whole lines from there, and the
/// bytes after the last of them (the lines may be fewer than fit, never wrong: the bytes
/// left out are in the head or the tail).
#[allow(unsafe_code)]
pub(crate) fn lines_mut(dst: &mut [u8]) -> (&mut [u8], &mut [Line], &mut [u8]) {
    // SAFETY: a `Line` is a `[u8; 64]` (repr(C)), so any 64 initialized bytes are a valid
    // one, and `align_to_mut` returns as lines only bytes on 64-byte boundaries, each once.
    unsafe { dst.align_to_mut::<Line>() }
}

/// Writes `bytes` into `line` with non-temporal stores, unfenced: the caller fences
/// ([`store_fence`]) before anything reads the line (ordinary stores where there are no
/// such stores).
#[inline(always)]
pub(crate) fn store_line(line: &mut Line, bytes: [u8; 64]) {
    #[cfg(target_arch = "x86_64")]
    imp::store_line(line, bytes);
    #[cfg(not(target_arch = "x86_64"))]
    {
        line.0 = bytes;
    }
}

/// Whether `copy_nontemporal` uses non-temporal stores on this platform.
pub const NONTEMPORAL_STORES: bool = cfg!(target_arch = "x86_64");

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod imp {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};

    const LINE: usize = 64;

    pub fn copy(dst: &mut [u8], src: &[u8]) {
        // The head: bytes until `dst` reaches a 64-byte boundary (all of it if shorter).
        let head = dst.as_ptr().align_offset(LINE).min(dst.len());
        let (dst_head, dst_rest) = dst.split_at_mut(head);
        let (src_head, src_rest) = src.split_at(head);
        dst_head.copy_from_slice(src_head);
        let mut lines = dst_rest.chunks_exact_mut(LINE);
        let mut sources = src_rest.chunks_exact(LINE);
        for (to, from) in (&mut lines).zip(&mut sources) {
            debug_assert!(to.as_ptr().addr().is_multiple_of(LINE) && from.len() == LINE);
            let d = to.as_mut_ptr().cast::<__m128i>();
            let s = from.as_ptr().cast::<__m128i>();
            // SAFETY: `to` and `from` are exactly 64 bytes each (chunks_exact), so the four
            // 16-byte loads read inside `from` and the four 16-byte stores write inside `to`.
            // `_mm_loadu_si128` takes any alignment; `_mm_stream_si128` needs 16-byte
            // alignment, and `to` starts on a 64-byte boundary: the head stopped at the first
            // one in `dst` and every chunk is 64 bytes. `to` is borrowed mutably, so nothing
            // else touches it meanwhile. SSE2 is part of every x86-64 CPU.
            unsafe {
                let a = _mm_loadu_si128(s);
                let b = _mm_loadu_si128(s.add(1));
                let c = _mm_loadu_si128(s.add(2));
                let e = _mm_loadu_si128(s.add(3));
                _mm_stream_si128(d, a);
                _mm_stream_si128(d.add(1), b);
                _mm_stream_si128(d.add(2), c);
                _mm_stream_si128(d.add(3), e);
            }
        }
        lines.into_remainder().copy_from_slice(sources.remainder());
    }

    #[inline(always)]
    pub fn store_line(line: &mut super::Line, bytes: [u8; 64]) {
        let d = line.0.as_mut_ptr().cast::<__m128i>();
        let s = bytes.as_ptr().cast::<__m128i>();
        // SAFETY: `bytes` and `line` are 64 bytes each, so the four 16-byte loads read inside
        // `bytes` and the four 16-byte stores write inside `line`. `_mm_loadu_si128` takes
        // any alignment; `_mm_stream_si128` needs 16 bytes, and a `Line` is aligned to 64.
        // `line` is borrowed mutably, so nothing else touches it meanwhile. SSE2 is part of
        // every x86-64 CPU.
        unsafe {
            for k in 0..4 {
                _mm_stream_si128(d.add(k), _mm_loadu_si128(s.add(k)));
            }
        }
    }

    /// Non-temporal stores are weakly ordered: fence them before the caller (or another
    /// thread, after a join) reads the destination.
    pub fn fence() {
        // SAFETY: a fence reads and writes no memory; SSE is part of every x86-64 CPU.
        unsafe { _mm_sfence() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to 300 bytes, at every offset of source and destination within a
    /// cache line: the bytes copied equal the source, and the bytes around the destination
    /// are untouched.
    #[test]
    fn nontemporal_copy_equals_the_source_at_every_length_and_alignment() {
        let source: Vec<u8> = (0..512u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in 0..300 {
            for src_offset in [0, 1, 15, 16, 33, 63] {
                for dst_offset in 0..64 {
                    let mut buffer = vec![0xa5u8; 512];
                    let src = &source[src_offset..src_offset + len];
                    copy_nontemporal(&mut buffer[dst_offset..dst_offset + len], src);
                    assert_eq!(&buffer[dst_offset..dst_offset + len], src, "len {len}");
                    assert!(buffer[..dst_offset].iter().all(|&b| b == 0xa5));
                    assert!(buffer[dst_offset + len..].iter().all(|&b| b == 0xa5));
                }
            }
        }
    }

    #[test]
    fn nontemporal_copy_of_several_mebibytes_equals_the_source() {
        let source: Vec<u8> = (0..(5 << 20) + 37)
            .map(|i: u32| (i ^ (i >> 9)) as u8)
            .collect();
        let mut destination = vec![0u8; source.len() + 3];
        copy_nontemporal(&mut destination[3..], &source);
        assert_eq!(&destination[3..], &source[..]);
        assert_eq!(&destination[..3], &[0, 0, 0]);
    }

    #[test]
    #[should_panic(expected = "equal lengths")]
    fn nontemporal_copy_refuses_different_lengths() {
        copy_nontemporal(&mut [0u8; 4], &[1u8; 5]);
    }
}
