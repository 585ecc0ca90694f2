//! The strided copy kernel: merged dimensions, memcpy for contiguous runs, gather kernels
//! for runs read with any other step into contiguous output (one per element size for
//! reversed and every-other-element runs, which vectorize), and an incremental coordinate
//! counter for the outer dimensions. Every access is
//! bounds-checked slice indexing: a planning bug is an error, never memory corruption.

use std::sync::atomic::{AtomicUsize, Ordering};

/// A copy of a block of elements, dimensions outermost first, offsets and strides in elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StridedCopy {
    pub sizes: Vec<usize>,
    pub src_strides: Vec<isize>,
    pub dst_strides: Vec<isize>,
    pub src_base: isize,
    pub dst_base: isize,
}

impl StridedCopy {
    /// Drops size-1 dimensions and merges neighbours that are contiguous in both source and
    /// destination (`dmlcts_tensor::merge_dimensions`), so a packed-to-packed copy becomes
    /// one run.
    pub fn new(
        sizes: &[u64],
        src_base: i64,
        src_strides: &[i64],
        dst_base: i64,
        dst_strides: &[i64],
    ) -> StridedCopy {
        let dims = dmlcts_tensor::merge_dimensions(sizes, src_strides, dst_strides);
        StridedCopy {
            sizes: dims.iter().map(|d| d.0 as usize).collect(),
            src_strides: dims.iter().map(|d| d.1 as isize).collect(),
            dst_strides: dims.iter().map(|d| d.2 as isize).collect(),
            src_base: src_base as isize,
            dst_base: dst_base as isize,
        }
    }
}

/// How contiguous runs are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stores {
    /// `copy_from_slice` (memcpy) for every run.
    Cached,
    /// Non-temporal stores ([`crate::stream`]) for contiguous runs of at least
    /// `STREAM_MIN_RUN_BYTES`; memcpy for shorter ones.
    Streaming,
}

/// Contiguous runs shorter than this are copied with memcpy even when streaming: a few cache
/// lines gain nothing from going around the cache.
pub const STREAM_MIN_RUN_BYTES: usize = 4096;

/// Runs `copy` for elements of `element_size` bytes, adding the bytes that went through
/// non-temporal stores to `streamed`.
pub fn run_copy(
    copy: &StridedCopy,
    src: &[u8],
    dst: &mut [u8],
    element_size: usize,
    stores: Stores,
    streamed: &AtomicUsize,
) -> Result<(), String> {
    let mut stores = StoreState {
        stores,
        streamed: 0,
        block: None,
    };
    let result = match element_size {
        1 => run::<1>(copy, src, dst, &mut stores),
        2 => run::<2>(copy, src, dst, &mut stores),
        4 => run::<4>(copy, src, dst, &mut stores),
        8 => run::<8>(copy, src, dst, &mut stores),
        other => Err(format!("unsupported element size {other}")),
    };
    // Counted once per copy: an atomic add per 4 KiB run bounced the counter's cache line
    // between the threads.
    streamed.fetch_add(stores.streamed, Ordering::Relaxed);
    // Runs are streamed without a fence each (a fence per 4 KiB run cost the last-axis Join
    // about a third of its speed); one here makes them visible before the caller goes on.
    if stores.stores == Stores::Streaming {
        crate::stream::store_fence();
    }
    result
}

/// How one copy stores its runs: the kind of stores, the bytes streamed so far, and the
/// block gathered runs are staged in before they are streamed (made on the first such run:
/// zeroing 4 KiB on every copy tripled the backend's overhead on a 4 KiB Join).
struct StoreState {
    stores: Stores,
    streamed: usize,
    block: Option<Box<[u8; GATHER_BLOCK_BYTES]>>,
}

fn out_of_bounds(what: &str, offset: isize, len: usize, available: usize) -> String {
    format!(
        "{what} bytes {offset}..{} lie outside a buffer of {available} bytes",
        offset + len as isize
    )
}

fn range(
    offset: isize,
    len: usize,
    available: usize,
    what: &str,
) -> Result<std::ops::Range<usize>, String> {
    if offset < 0 || offset as usize + len > available {
        return Err(out_of_bounds(what, offset, len, available));
    }
    Ok(offset as usize..offset as usize + len)
}

fn run<const N: usize>(
    copy: &StridedCopy,
    src: &[u8],
    dst: &mut [u8],
    stores: &mut StoreState,
) -> Result<(), String> {
    let n = N as isize;
    let depth = copy.sizes.len();
    let len = copy.sizes[depth - 1];
    let src_step = copy.src_strides[depth - 1] * n;
    let dst_step = copy.dst_strides[depth - 1] * n;
    let outer = depth - 1;
    let mut counter = vec![0usize; outer];
    let mut src_offset = copy.src_base * n;
    let mut dst_offset = copy.dst_base * n;
    loop {
        copy_run::<N>(
            src, dst, src_offset, dst_offset, len, src_step, dst_step, stores,
        )?;
        // Advance the coordinate counter over the outer dimensions, innermost first.
        let mut dim = outer;
        loop {
            if dim == 0 {
                return Ok(());
            }
            dim -= 1;
            counter[dim] += 1;
            src_offset += copy.src_strides[dim] * n;
            dst_offset += copy.dst_strides[dim] * n;
            if counter[dim] < copy.sizes[dim] {
                break;
            }
            let wrapped = copy.sizes[dim] as isize;
            src_offset -= copy.src_strides[dim] * n * wrapped;
            dst_offset -= copy.dst_strides[dim] * n * wrapped;
            counter[dim] = 0;
        }
    }
}

/// One innermost run of `len` elements (adding the bytes stored non-temporally to
/// `stores.streamed`).
#[allow(clippy::too_many_arguments)]
fn copy_run<const N: usize>(
    src: &[u8],
    dst: &mut [u8],
    src_offset: isize,
    dst_offset: isize,
    len: usize,
    src_step: isize,
    dst_step: isize,
    stores: &mut StoreState,
) -> Result<(), String> {
    let n = N as isize;
    if dst_step == n && src_step == n {
        let from = range(src_offset, len * N, src.len(), "source")?;
        let to = range(dst_offset, len * N, dst.len(), "destination")?;
        if stores.stores == Stores::Streaming && to.len() >= STREAM_MIN_RUN_BYTES {
            stores.streamed += to.len();
            crate::stream::copy_nontemporal_unfenced(&mut dst[to], &src[from]);
            return Ok(());
        }
        dst[to].copy_from_slice(&src[from]);
        return Ok(());
    }
    // Any other strides: check both ends of the run once.
    let last_src = src_offset + (len as isize - 1) * src_step;
    let last_dst = dst_offset + (len as isize - 1) * dst_step;
    for offset in [src_offset, last_src] {
        range(offset, N, src.len(), "source")?;
    }
    for offset in [dst_offset, last_dst] {
        range(offset, N, dst.len(), "destination")?;
    }
    if dst_step == n && src_step != 0 {
        // A gather into a contiguous run, from the source bytes between its lowest and
        // highest elements.
        let lowest = src_offset.min(last_src);
        let extent = (len - 1) * src_step.unsigned_abs() + N;
        let from = range(lowest, extent, src.len(), "source")?;
        let to = range(dst_offset, len * N, dst.len(), "destination")?;
        let gather = Gather::<N>::new(&src[from], src_step / n, len);
        if stores.stores == Stores::Streaming && to.len() >= STREAM_MIN_RUN_BYTES {
            stores.streamed += to.len();
            let block = stores
                .block
                .get_or_insert_with(|| Box::new([0; GATHER_BLOCK_BYTES]));
            gather.stream_into(&mut dst[to], block);
        } else {
            gather.write_into(&mut dst[to], 0);
        }
        return Ok(());
    }
    // Strided destination (holes) or a 0 source step (broadcast): element by element.
    let mut s = src_offset as usize;
    let mut d = dst_offset as usize;
    for _ in 0..len {
        let element: [u8; N] = src[s..s + N].try_into().expect("N bytes");
        dst[d..d + N].copy_from_slice(&element);
        s = s.wrapping_add_signed(src_step);
        d = d.wrapping_add_signed(dst_step);
    }
    Ok(())
}

/// Bytes of a gathered run staged in a buffer on the stack before non-temporal stores write
/// them out: small enough to stay in L1, large enough that a call's overhead is noise.
const GATHER_BLOCK_BYTES: usize = 4096;

/// A gather of elements of N bytes from `src`, `step` elements apart (not 0): output element
/// i is the source element at i * step from the first one, which is at the start of `src`
/// for a positive step and at its end for a negative one. `src` holds exactly the bytes from
/// the lowest element to the end of the highest.
struct Gather<'a, const N: usize> {
    src: &'a [u8],
    step: isize,
    /// The elements gathered, given by the caller (dividing `src`'s length by the stride
    /// on every run cost a small reversed Slice1 about a tenth of its time).
    count: usize,
}

impl<'a, const N: usize> Gather<'a, N> {
    fn new(src: &'a [u8], step: isize, count: usize) -> Gather<'a, N> {
        debug_assert!(step != 0 && src.len() == (count - 1) * step.unsigned_abs() * N + N);
        Gather { src, step, count }
    }

    /// Writes output elements [first, first + out.len() / N) into `out`.
    fn write_into(&self, out: &mut [u8], first: usize) {
        let count = out.len() / N;
        let stride = self.step.unsigned_abs() * N;
        // The lowest source element of the ones asked for, by position in `src`.
        let lowest = if self.step > 0 {
            first
        } else {
            self.count - first - count
        };
        let src = &self.src[lowest * stride..(lowest + count - 1) * stride + N];
        match self.step {
            -1 => reverse::<N>(out, src),
            2 => every_other::<N>(out, src),
            step if step > 0 => every_nth::<N>(out, src, stride),
            _ => every_nth_backwards::<N>(out, src, stride),
        }
    }

    /// Gathers `out` block by block into a buffer that stays in L1, and writes each block
    /// with non-temporal stores: the gathered bytes reach memory without the destination's
    /// lines being read first, as in the best copy (with cached stores the reversed Slice1
    /// was at 0.84x-0.95x of it while its output stayed in the caches, 0.67x-0.72x once it
    /// did not: docs/guide/performance.md). Reversed runs and runs of every other element go
    /// line by line instead (`stream_reversed`, `stream_every_other`) where their lines start
    /// on element boundaries. The caller fences.
    fn stream_into(&self, out: &mut [u8], block: &mut [u8; GATHER_BLOCK_BYTES]) {
        if self.step == -1 && stream_reversed::<N>(out, self.src) {
            return;
        }
        if self.step == 2 && stream_every_other::<N>(out, self.src) {
            return;
        }
        let per_block = GATHER_BLOCK_BYTES / N;
        let mut stage = |(k, target): (usize, &mut [u8])| {
            let staged = &mut block[..target.len()];
            self.write_into(staged, k * per_block);
            crate::stream::copy_nontemporal_unfenced(target, staged);
        };
        // Blocks in the order that reads the source forward, which the prefetchers follow
        // best: for a negative step, from the last block of the output to the first.
        let blocks = out.chunks_mut(per_block * N).enumerate();
        if self.step > 0 {
            blocks.for_each(&mut stage);
        } else {
            blocks.rev().for_each(&mut stage);
        }
    }
}

/// `out` = the elements of `src` in reverse order (both the same length), its whole 64-byte
/// lines written with non-temporal stores, each reversed in registers from the 64 source
/// bytes it mirrors (`reversed_line`); the bytes before the first line and after the last
/// with ordinary stores. Staging 4 KiB blocks in L1 first (`Gather::stream_into`) left the
/// reversed Slice1 at 0.73x of the best copy at 64 MiB and more: the core reversed a block,
/// then streamed it, never both at once. UINT8's lines are reversed by one byte shuffle per 16
/// bytes (`stream::store_lines_reversed_bytes`): made in safe Rust, as swapped pairs, they
/// left the UINT8 row at 0.76x-0.82x. The caller fences. The lines must start on element
/// boundaries, as they do in any buffer at an address that is a multiple of N (a typed
/// buffer's); otherwise nothing is written and the answer is false.
fn stream_reversed<const N: usize>(out: &mut [u8], src: &[u8]) -> bool {
    let len = out.len();
    let (head, lines, tail) = crate::stream::lines_mut(out);
    if !head.len().is_multiple_of(N) {
        return false;
    }
    let (head_len, tail_len) = (head.len(), tail.len());
    // The head mirrors the last bytes of `src`, the tail its first ones, and the lines the
    // bytes between: the last line the first 64 of them, the line before it the next 64...
    // Read in that order, the source is read forward.
    reverse::<N>(tail, &src[..tail_len]);
    let (chunks, _) = src[tail_len..len - head_len].as_chunks::<64>();
    if N == 1 {
        crate::stream::store_lines_reversed_bytes(lines, chunks);
    } else {
        for (line, chunk) in lines.iter_mut().rev().zip(chunks) {
            crate::stream::store_line(line, reversed_line::<N>(chunk));
        }
    }
    reverse::<N>(head, &src[len - head_len..]);
    true
}

/// `out` = elements 0, 2, 4, ... of `src` (as `every_other`: `src` ends with the last one
/// taken), its whole 64-byte lines written with non-temporal stores, each made in registers
/// from the 128 source bytes it takes from (`every_other_line`); the bytes before the first
/// line and after the last with ordinary stores, and a last line whose source ends inside
/// its 128 bytes made on the stack. Staged in 4 KiB blocks (`Gather::stream_into`), the
/// stride-2 Slice1 was at 0.75x-0.79x of its fair reference at 64 MiB (FLOAT32, FLOAT16).
/// The caller fences. The lines must start on element boundaries; otherwise nothing is
/// written and the answer is false.
fn stream_every_other<const N: usize>(out: &mut [u8], src: &[u8]) -> bool {
    let len = out.len();
    let (head, lines, tail) = crate::stream::lines_mut(out);
    if !head.len().is_multiple_of(N) || !64usize.is_multiple_of(N) {
        return false;
    }
    let (head_len, tail_len) = (head.len(), tail.len());
    // Output bytes [a, b) take source bytes [2a, 2b - N).
    every_other::<N>(head, &src[..(2 * head_len).saturating_sub(N)]);
    // The lines' source (none without lines: a run shorter than a line may be all head).
    let body = if lines.is_empty() {
        &[][..]
    } else {
        &src[2 * head_len..]
    };
    let (chunks, _) = body.as_chunks::<128>();
    let whole = chunks.len().min(lines.len());
    let (streamed, last) = lines.split_at_mut(whole);
    for (line, chunk) in streamed.iter_mut().zip(chunks) {
        crate::stream::store_line(line, every_other_line::<N>(chunk));
    }
    // Only the last line can lack its 128 source bytes: when no tail follows it, the source
    // ends with its last element.
    for (k, line) in last.iter_mut().enumerate() {
        let from = 128 * (whole + k);
        let mut bytes = [0u8; 64];
        every_other::<N>(&mut bytes, &body[from..from + 128 - N]);
        crate::stream::store_line(line, bytes);
    }
    if tail_len > 0 {
        every_other::<N>(tail, &src[2 * (len - tail_len)..]);
    }
    true
}

/// The 64 bytes that elements 0, 2, 4, ... of 128 source bytes make, as a value that stays
/// in registers (the same lanes as `every_other`: each pair truncated to its first half).
#[inline(always)]
fn every_other_line<const N: usize>(chunk: &[u8; 128]) -> [u8; 64] {
    let mut out = [0u8; 64];
    match N {
        1 => first_of_pairs::<1, 2>(&mut out, chunk, |p| {
            (u16::from_le_bytes(p) as u8).to_le_bytes()
        }),
        2 => first_of_pairs::<2, 4>(&mut out, chunk, |p| {
            (u32::from_le_bytes(p) as u16).to_le_bytes()
        }),
        4 => first_of_pairs::<4, 8>(&mut out, chunk, |p| {
            (u64::from_le_bytes(p) as u32).to_le_bytes()
        }),
        8 => first_of_pairs::<8, 16>(&mut out, chunk, |p| {
            (u128::from_le_bytes(p) as u64).to_le_bytes()
        }),
        _ => every_nth::<N>(&mut out, chunk, 2 * N),
    }
    out
}

/// 64 bytes with their elements of N bytes in reverse order, as a value that stays in
/// registers (the same lanes as `reverse`: whole elements, bytes as swapped pairs).
#[inline(always)]
fn reversed_line<const N: usize>(line: &[u8; 64]) -> [u8; 64] {
    let mut out = [0u8; 64];
    match N {
        1 => reverse_bytes(&mut out, line),
        2 => reverse_as::<2, u16>(&mut out, line, u16::from_ne_bytes, u16::to_ne_bytes),
        4 => reverse_as::<4, u32>(&mut out, line, u32::from_ne_bytes, u32::to_ne_bytes),
        8 => reverse_as::<8, u64>(&mut out, line, u64::from_ne_bytes, u64::to_ne_bytes),
        _ => reverse::<N>(&mut out, line),
    }
    out
}

/// `out` = the elements of `src` in reverse order (both the same length).
fn reverse<const N: usize>(out: &mut [u8], src: &[u8]) {
    // Whole elements as integers, so that each becomes one lane of a vector shuffle.
    match N {
        1 => reverse_bytes(out, src),
        2 => reverse_as::<2, u16>(out, src, u16::from_ne_bytes, u16::to_ne_bytes),
        4 => reverse_as::<4, u32>(out, src, u32::from_ne_bytes, u32::to_ne_bytes),
        8 => reverse_as::<8, u64>(out, src, u64::from_ne_bytes, u64::to_ne_bytes),
        _ => {
            for (o, e) in out.chunks_exact_mut(N).zip(src.chunks_exact(N).rev()) {
                o.copy_from_slice(e);
            }
        }
    }
}

fn reverse_as<const N: usize, T: Copy>(
    out: &mut [u8],
    src: &[u8],
    load: fn([u8; N]) -> T,
    store: fn(T) -> [u8; N],
) {
    let (out, _) = out.as_chunks_mut::<N>();
    let (src, _) = src.as_chunks::<N>();
    // Reading forward (the source is what comes from memory) and writing backward.
    for (o, e) in out.iter_mut().rev().zip(src) {
        *o = store(load(*e));
    }
}

/// Bytes reversed as pairs: the pairs in reverse order, each with its two bytes swapped
/// (byte-by-byte reversal does not vectorize on baseline x86-64, pairs do: about 2x in L1).
fn reverse_bytes(out: &mut [u8], src: &[u8]) {
    let (pairs, odd_out) = out.as_chunks_mut::<2>();
    let (odd_src, src_pairs) = src.as_rchunks::<2>();
    for (o, e) in pairs.iter_mut().rev().zip(src_pairs) {
        *o = u16::from_le_bytes(*e).swap_bytes().to_le_bytes();
    }
    // An odd length: the last output byte is the first source byte.
    odd_out.copy_from_slice(odd_src);
}

/// `out` = elements 0, 2, 4, ... of `src` (which ends with the last one taken: its length is
/// 2 * out.len() - N).
fn every_other<const N: usize>(out: &mut [u8], src: &[u8]) {
    // Each pair of elements read as one integer twice as wide, truncated to its low (first,
    // little-endian) half: a truncation vectorizes as a pack (bytes: about 10x the loop in L1).
    match N {
        1 => every_other_as::<1, 2>(out, src, |p| (u16::from_le_bytes(p) as u8).to_le_bytes()),
        2 => every_other_as::<2, 4>(out, src, |p| (u32::from_le_bytes(p) as u16).to_le_bytes()),
        4 => every_other_as::<4, 8>(out, src, |p| (u64::from_le_bytes(p) as u32).to_le_bytes()),
        8 => every_other_as::<8, 16>(out, src, |p| (u128::from_le_bytes(p) as u64).to_le_bytes()),
        _ => every_nth::<N>(out, src, 2 * N),
    }
}

fn every_other_as<const N: usize, const PAIR: usize>(
    out: &mut [u8],
    src: &[u8],
    first_of: fn([u8; PAIR]) -> [u8; N],
) {
    let Some((body, last)) = out.split_last_chunk_mut::<N>() else {
        return;
    };
    first_of_pairs(body, src, first_of);
    last.copy_from_slice(&src[src.len() - N..]);
}

/// Each whole element of `out` = `first_of` the pair of elements at the same place in `src`.
#[inline(always)]
fn first_of_pairs<const N: usize, const PAIR: usize>(
    out: &mut [u8],
    src: &[u8],
    first_of: fn([u8; PAIR]) -> [u8; N],
) {
    let (outs, _) = out.as_chunks_mut::<N>();
    let (pairs, _) = src.as_chunks::<PAIR>();
    for (o, pair) in outs.iter_mut().zip(pairs) {
        *o = first_of(*pair);
    }
}

/// `out` = the elements of `src` `stride` bytes apart, the first at its start.
fn every_nth<const N: usize>(out: &mut [u8], src: &[u8], stride: usize) {
    for (o, chunk) in out.chunks_exact_mut(N).zip(src.chunks(stride)) {
        o.copy_from_slice(&chunk[..N]);
    }
}

/// `out` = the elements of `src` `stride` bytes apart, the first at its end.
fn every_nth_backwards<const N: usize>(out: &mut [u8], src: &[u8], stride: usize) {
    // Chunks of one stride from the end hold an element at their end; the first element of
    // `src` is in the shorter chunk left at its start.
    let mut chunks = src.rchunks(stride);
    for (o, chunk) in out.chunks_exact_mut(N).zip(&mut chunks) {
        o.copy_from_slice(&chunk[chunk.len() - N..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_copies_merge_into_one_run() {
        let copy = StridedCopy::new(&[2, 3, 4], 0, &[12, 4, 1], 0, &[12, 4, 1]);
        assert_eq!(copy.sizes, vec![24]);
        // A join on the last axis: rows of 4 from a source of rows of 4 into rows of 7.
        let copy = StridedCopy::new(&[1, 2, 4], 0, &[8, 4, 1], 3, &[14, 7, 1]);
        assert_eq!(copy.sizes, vec![2, 4]);
        assert_eq!(copy.dst_strides, vec![7, 1]);
    }

    /// Output element i of a gather, element by element: the source element at i * step from
    /// the first (at the start of `src` for a positive step, at its end for a negative one).
    fn gathered_one_by_one(src: &[u8], step: isize, n: usize, count: usize) -> Vec<u8> {
        let first = if step > 0 { 0 } else { src.len() - n };
        (0..count)
            .flat_map(|i| {
                let at = first as isize + i as isize * step * n as isize;
                src[at as usize..at as usize + n].to_vec()
            })
            .collect()
    }

    /// Every gather kernel (reversed, every other element, any other step either way) at
    /// every element size, for every count up to a few vectors' worth with odd tails, whole
    /// and from every starting element: the same bytes as one element at a time.
    fn gather_kernels_match_one_by_one<const N: usize>() {
        let source: Vec<u8> = (0..4000u32).map(|i| (i * 131 + i / 251) as u8).collect();
        for step in [-3isize, -2, -1, 2, 3, 5] {
            for count in 1..80usize {
                let extent = (count - 1) * step.unsigned_abs() * N + N;
                let src = &source[7..7 + extent];
                let expected = gathered_one_by_one(src, step, N, count);
                let gather = Gather::<N>::new(src, step, count);
                for first in 0..count {
                    let mut out = vec![0xa5u8; (count - first) * N];
                    gather.write_into(&mut out, first);
                    assert_eq!(
                        out,
                        expected[first * N..],
                        "N {N}, step {step}, count {count}, first {first}"
                    );
                }
            }
        }
    }

    #[test]
    fn gather_kernels_match_one_by_one_for_every_element_size() {
        gather_kernels_match_one_by_one::<1>();
        gather_kernels_match_one_by_one::<2>();
        gather_kernels_match_one_by_one::<4>();
        gather_kernels_match_one_by_one::<8>();
    }

    /// Streamed gathers, staged block by block (reversed ones and every-other ones line by
    /// line where the lines start on element boundaries): runs shorter than a block, of
    /// exactly one, and of several with a partial last block, at every element size and
    /// several alignments.
    fn streamed_gathers_match_one_by_one<const N: usize>() {
        let source: Vec<u8> = (0..80_000u32).map(|i| (i * 7 + i / 4093) as u8).collect();
        let per_block = GATHER_BLOCK_BYTES / N;
        for step in [-2isize, -1, 2, 3] {
            for count in [
                1,
                per_block - 1,
                per_block,
                per_block + 1,
                2 * per_block + 17,
            ] {
                let extent = (count - 1) * step.unsigned_abs() * N + N;
                if extent > source.len() - 3 {
                    continue;
                }
                let src = &source[3..3 + extent];
                let expected = gathered_one_by_one(src, step, N, count);
                // Starts on and off element boundaries (the reversed runs' lines, or their
                // staged blocks when the lines would split elements).
                for pad in [0, 5, 8, 16] {
                    let mut buffer = vec![0u8; count * N + 64 + pad];
                    let at = buffer.as_ptr().align_offset(64) + pad;
                    let out = &mut buffer[at..at + count * N];
                    let mut block = [0; GATHER_BLOCK_BYTES];
                    Gather::<N>::new(src, step, count).stream_into(out, &mut block);
                    crate::stream::store_fence();
                    let what = format!("N {N}, step {step}, count {count}, pad {pad}");
                    assert_eq!(buffer[at..at + count * N], expected, "{what}");
                    assert!(buffer[..at].iter().all(|&b| b == 0), "{what}");
                    assert!(buffer[at + count * N..].iter().all(|&b| b == 0), "{what}");
                }
            }
        }
    }

    #[test]
    fn streamed_gathers_match_one_by_one_for_every_element_size() {
        streamed_gathers_match_one_by_one::<1>();
        streamed_gathers_match_one_by_one::<2>();
        streamed_gathers_match_one_by_one::<4>();
        streamed_gathers_match_one_by_one::<8>();
    }

    /// A reversed line: the 64 bytes' elements of N bytes in reverse order, each element's
    /// bytes in their own order.
    fn reversed_line_reverses_whole_elements<const N: usize>() {
        let line: [u8; 64] = std::array::from_fn(|i| (i * 7 + 1) as u8);
        let expected: Vec<u8> = line.chunks(N).rev().flatten().copied().collect();
        assert_eq!(reversed_line::<N>(&line)[..], expected[..], "N {N}");
    }

    #[test]
    fn reversed_lines_reverse_whole_elements_at_every_element_size() {
        reversed_line_reverses_whole_elements::<1>();
        reversed_line_reverses_whole_elements::<2>();
        reversed_line_reverses_whole_elements::<4>();
        reversed_line_reverses_whole_elements::<8>();
    }

    /// A kernel that streams a gather of `step` line by line (`stream_reversed`,
    /// `stream_every_other`), at every length up to five lines and every start within a
    /// line: the same bytes as one element at a time, the bytes around the run untouched;
    /// refused (nothing written) only for runs that start off an element boundary.
    fn streamed_lines_match_one_by_one<const N: usize>(
        kernel: fn(&mut [u8], &[u8]) -> bool,
        step: isize,
    ) {
        let source: Vec<u8> = (0..800u32).map(|i| (i * 13 + i / 7) as u8).collect();
        let mut buffer = vec![0x5au8; 600];
        let aligned = buffer.as_ptr().align_offset(64);
        for count in 0..=(320 / N) {
            let len = count * N;
            let extent = count.saturating_sub(1) * step.unsigned_abs() * N + count.min(1) * N;
            let src = &source[9..9 + extent];
            let expected = if count == 0 {
                Vec::new()
            } else {
                gathered_one_by_one(src, step, N, count)
            };
            for start in 0..64 {
                buffer.fill(0x5a);
                let at = aligned + start;
                let written = kernel(&mut buffer[at..at + len], src);
                crate::stream::store_fence();
                // Lines start on element boundaries whenever the run does.
                let what = format!("N {N}, step {step}, len {len}, start {start}");
                assert!(written || start % N != 0, "{what}");
                if written {
                    assert_eq!(buffer[at..at + len], expected, "{what}");
                } else {
                    assert!(buffer[at..at + len].iter().all(|&b| b == 0x5a));
                }
                assert!(buffer[..at].iter().all(|&b| b == 0x5a));
                assert!(buffer[at + len..].iter().all(|&b| b == 0x5a));
            }
        }
    }

    #[test]
    fn streamed_reversals_match_one_by_one_for_every_element_size() {
        streamed_lines_match_one_by_one::<1>(stream_reversed::<1>, -1);
        streamed_lines_match_one_by_one::<2>(stream_reversed::<2>, -1);
        streamed_lines_match_one_by_one::<4>(stream_reversed::<4>, -1);
        streamed_lines_match_one_by_one::<8>(stream_reversed::<8>, -1);
    }

    #[test]
    fn streamed_every_other_matches_one_by_one_for_every_element_size() {
        streamed_lines_match_one_by_one::<1>(stream_every_other::<1>, 2);
        streamed_lines_match_one_by_one::<2>(stream_every_other::<2>, 2);
        streamed_lines_match_one_by_one::<4>(stream_every_other::<4>, 2);
        streamed_lines_match_one_by_one::<8>(stream_every_other::<8>, 2);
    }

    #[test]
    fn reversed_and_strided_runs_copy_the_right_elements() {
        let cached = |copy: &StridedCopy, src: &[u8], dst: &mut [u8], element_size: usize| {
            let streamed = AtomicUsize::new(0);
            run_copy(copy, src, dst, element_size, Stores::Cached, &streamed)
        };
        let src: Vec<u8> = (0..8).collect();
        let mut dst = vec![0u8; 4];
        let reverse = StridedCopy::new(&[4], 7, &[-1], 0, &[1]);
        cached(&reverse, &src, &mut dst, 1).unwrap();
        assert_eq!(dst, vec![7, 6, 5, 4]);
        let every_other = StridedCopy::new(&[4], 1, &[2], 0, &[1]);
        cached(&every_other, &src, &mut dst, 1).unwrap();
        assert_eq!(dst, vec![1, 3, 5, 7]);
        let backwards_by_three = StridedCopy::new(&[3], 7, &[-3], 0, &[1]);
        cached(&backwards_by_three, &src, &mut dst[..3], 1).unwrap();
        assert_eq!(&dst[..3], &[7, 4, 1]);
        let wide = StridedCopy::new(&[2], 1, &[-1], 0, &[1]);
        let mut pair = vec![0u8; 4];
        cached(&wide, &src, &mut pair, 2).unwrap();
        assert_eq!(pair, vec![2, 3, 0, 1]);
        let too_far = StridedCopy::new(&[4], 2, &[2], 0, &[1]);
        assert!(cached(&too_far, &src, &mut dst, 1).is_err());
    }
}
