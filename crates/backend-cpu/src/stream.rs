//! Non-temporal ("streaming") copies: stores that go around the caches, so the destination's
//! cache lines are neither read for ownership nor left evicting the source. The backend uses
//! them for the long contiguous runs of large outputs (`plan::STREAM_MIN_OUTPUT_BYTES`,
//! `copy::STREAM_MIN_RUN_BYTES`); `cargo xtask bench` uses them in its reference copies.
//!
//! This is the crate's only `unsafe` code: SSE2 loads and `_mm_stream_si128` stores (SSE2 is
//! part of every x86-64 CPU, so nothing is detected at run time for them), and the byte
//! shuffle of the reversed UINT8 lines: SSSE3's `pshufb` where `is_x86_feature_detected!`
//! finds it, SSE2's shifts and word shuffles otherwise. Elsewhere the copy is a plain
//! `copy_from_slice`. The unsafe block works on exact 64-byte chunks that safe code cut from
//! the two slices, with the destination chunk aligned to 64 bytes by a safe head copy. For
//! kernels that make each line's bytes themselves (the reversed and every-other gathers of
//! `crate::copy`), `lines_mut` cuts a destination into 64-byte-aligned `Line`s (one
//! `align_to_mut`) and `store_line` streams a value into one (four stores);
//! `store_lines_reversed_bytes` streams a run of lines, each 64 source bytes reversed.

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

/// Writes each of `chunks` into the line of `lines` that mirrors it (the first chunk into the
/// last line, the second into the line before it...; as many as the shorter has) with its 64
/// bytes in reverse order (the line's byte k is the chunk's byte 63 - k), with non-temporal
/// stores, unfenced, as `store_line` does. The reversed UINT8 gather's kernel: safe Rust's
/// byte reversal does not vectorize on baseline x86-64 (reversed pairs do, at half the
/// width), so each 16 bytes are reversed with one SSSE3 `pshufb` where the CPU has it (checked
/// once per call), else with SSE2 shifts and shuffles.
pub(crate) fn store_lines_reversed_bytes(lines: &mut [Line], chunks: &[[u8; 64]]) {
    #[cfg(target_arch = "x86_64")]
    imp::store_lines_reversed_bytes(lines, chunks);
    #[cfg(not(target_arch = "x86_64"))]
    for (line, chunk) in lines.iter_mut().rev().zip(chunks) {
        line.0 = *chunk;
        line.0.reverse();
    }
}

/// Whether `copy_nontemporal` uses non-temporal stores on this platform.
pub const NONTEMPORAL_STORES: bool = cfg!(target_arch = "x86_64");

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod imp {
    use std::arch::x86_64::{
        __m128i, _mm_loadu_si128, _mm_or_si128, _mm_setr_epi8, _mm_sfence, _mm_shuffle_epi8,
        _mm_shuffle_epi32, _mm_shufflehi_epi16, _mm_shufflelo_epi16, _mm_slli_epi16,
        _mm_srli_epi16, _mm_stream_si128,
    };

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

    pub fn store_lines_reversed_bytes(lines: &mut [super::Line], chunks: &[[u8; 64]]) {
        if std::arch::is_x86_feature_detected!("ssse3") {
            // SAFETY: the CPU has SSSE3 (checked just above), the one feature this function
            // enables beyond the baseline.
            unsafe { lines_reversed_ssse3(lines, chunks) }
        } else {
            for (line, chunk) in lines.iter_mut().rev().zip(chunks) {
                store_line_reversed_with(line, chunk, reversed_16_sse2);
            }
        }
    }

    /// # Safety
    /// The CPU must have SSSE3.
    #[target_feature(enable = "ssse3")]
    unsafe fn lines_reversed_ssse3(lines: &mut [super::Line], chunks: &[[u8; 64]]) {
        let backwards = _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        for (line, chunk) in lines.iter_mut().rev().zip(chunks) {
            store_line_reversed_with(line, chunk, |x| _mm_shuffle_epi8(x, backwards));
        }
    }

    /// Streams `bytes` into `line` reversed, `reversed_16` reversing each 16 of them.
    #[inline(always)]
    pub fn store_line_reversed_with(
        line: &mut super::Line,
        bytes: &[u8; 64],
        reversed_16: impl Fn(__m128i) -> __m128i,
    ) {
        let d = line.0.as_mut_ptr().cast::<__m128i>();
        let s = bytes.as_ptr().cast::<__m128i>();
        for k in 0..4 {
            // SAFETY: as in `store_line`: 64 bytes each side, so the 16-byte load at `3 - k`
            // reads inside `bytes` (any alignment) and the non-temporal 16-byte store at `k`
            // writes inside the 64-byte-aligned, mutably borrowed `line`.
            unsafe { _mm_stream_si128(d.add(k), reversed_16(_mm_loadu_si128(s.add(3 - k)))) };
        }
    }

    /// The 16 bytes of `x` in reverse order, with SSE2 alone: the bytes of each 16-bit word
    /// swapped, then the words of each 64-bit half reversed, then the halves swapped.
    #[inline(always)]
    pub fn reversed_16_sse2(x: __m128i) -> __m128i {
        // SAFETY: register operations only (no memory is read or written); SSE2 is part of
        // every x86-64 CPU.
        unsafe {
            let swapped = _mm_or_si128(_mm_slli_epi16::<8>(x), _mm_srli_epi16::<8>(x));
            let words = _mm_shufflelo_epi16::<0b00_01_10_11>(swapped);
            let words = _mm_shufflehi_epi16::<0b00_01_10_11>(words);
            _mm_shuffle_epi32::<0b01_00_11_10>(words)
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

    /// Three lines of distinct bytes, each the reverse of the chunk it mirrors: through the
    /// public function (SSSE3's kernel where the CPU has it) and through SSE2's kernel.
    #[test]
    fn reversed_lines_mirror_their_chunks_byte_by_byte_with_each_kernel() {
        let chunks: Vec<[u8; 64]> = (0..3u8)
            .map(|c| std::array::from_fn(|k| c * 64 + k as u8))
            .collect();
        let expected: Vec<[u8; 64]> = (chunks.iter().rev())
            .map(|chunk| std::array::from_fn(|k| chunk[63 - k]))
            .collect();
        let written = |fill: &dyn Fn(&mut [Line])| -> Vec<[u8; 64]> {
            let mut buffer = vec![0u8; 64 * 4];
            let (_, lines, _) = lines_mut(&mut buffer);
            fill(&mut lines[..3]);
            store_fence();
            lines[..3].iter().map(|line| line.0).collect()
        };
        let public = written(&|lines| store_lines_reversed_bytes(lines, &chunks));
        assert_eq!(public, expected);
        #[cfg(target_arch = "x86_64")]
        {
            let sse2 = written(&|lines| {
                for (line, chunk) in lines.iter_mut().rev().zip(&chunks) {
                    imp::store_line_reversed_with(line, chunk, imp::reversed_16_sse2);
                }
            });
            assert_eq!(sse2, expected);
        }
    }

    #[test]
    #[should_panic(expected = "equal lengths")]
    fn nontemporal_copy_refuses_different_lengths() {
        copy_nontemporal(&mut [0u8; 4], &[1u8; 5]);
    }
}
