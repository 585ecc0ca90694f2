//! kernel.wgsl as the Rust side sees it: its MODE values and override constants (one
//! `Specialization` per pipeline), and the `Piece` a dispatch's piece table holds for each
//! block copy, with how a block of merged dimensions becomes one (`kernel_piece`).

pub(crate) const KERNEL: &str = include_str!("kernel.wgsl");
pub(crate) const WORKGROUP: u32 = 256;

/// kernel.wgsl's MODE values.
pub(crate) const MODE_ALIGNED: u32 = 0;
const MODE_SHIFTED: u32 = 1;
const MODE_GATHER: u32 = 2;
const MODE_ELEMENTS: u32 = 3;
pub(crate) const MODE_VEC_ALIGNED: u32 = 4;
pub(crate) const MODE_VEC_REVERSED: u32 = 5;
pub(crate) const MODE_VEC_STRIDE2: u32 = 6;
/// kernel.wgsl's PER_LANE (passed to it): units one lane moves. On lavapipe, 32 a lane moved
/// Join and Split rows about 4x faster than 8, while every-other-element blocks (two source
/// blocks each) ran about 2x faster with 8 (both measured back to back with `cargo xtask
/// bench`); on a GPU, 8 or more lanes a row still read 128 contiguous bytes at a time.
pub(crate) const PER_LANE: u64 = 32;
const PER_LANE_STRIDE2: u64 = 8;

/// One pipeline of the kernel: its override constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Specialization {
    pub(crate) mode: u32,
    pub(crate) element_log2: u32,
    /// Some row starts or ends inside a word.
    pub(crate) edges: bool,
    /// Outer dimensions.
    pub(crate) outer: u32,
    /// Units a lane moves.
    pub(crate) per_lane: u32,
    /// False: the copy loop removed (the bench's measure of what comes before it).
    pub(crate) moving: bool,
}
/// u32 words of one `Piece` of kernel.wgsl.
pub(crate) const PIECE_WORDS: usize = 36;
/// Outer dimensions a piece can carry (DirectML tensors have at most 8 dimensions).
const MAX_OUTER: usize = 8;

/// One piece as kernel.wgsl's `Piece` sees it (before its first workgroup is known).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelPiece {
    pub(crate) mode: u32,
    pub(crate) edges: bool,
    pub(crate) groups: u64,
    tiles: u64,
    lanes_log2: u32,
    pub(crate) per_lane: u64,
    units: u64,
    rows: u64,
    row_bytes: u64,
    src_base: u64,
    dst_base: u64,
    src_step: i64,
    dst_step: i64,
    /// (size, source stride, destination stride), strides in bytes, innermost first.
    pub(crate) outer: Vec<(u64, i64, i64)>,
}

/// How the kernel covers a block of merged dimensions (in elements, outermost first) that
/// starts at byte `src_byte` of its input buffer and `dst_byte` of its output buffer.
pub(crate) fn kernel_piece(
    dims: &[(u64, i64, i64)],
    element_bytes: u64,
    src_byte: u64,
    dst_byte: u64,
) -> KernelPiece {
    let (&(n, s, d), outer) = dims
        .split_last()
        .expect("merge_dimensions never returns no dimensions");
    let es = element_bytes as i64;
    let outer: Vec<(u64, i64, i64)> = outer
        .iter()
        .rev()
        .map(|&(n, s, d)| (n, s * es, d * es))
        .collect();
    let rows: u64 = outer.iter().map(|o| o.0).product();
    let row_bytes = n * element_bytes;
    let rows_start_aligned = dst_byte.is_multiple_of(4) && outer.iter().all(|o| o.2 % 4 == 0);
    let equally_aligned = (src_byte as i64 - dst_byte as i64).rem_euclid(4) == 0
        && outer.iter().all(|o| (o.1 - o.2).rem_euclid(4) == 0);
    // `base + sum(c_k * step_k)` is a multiple of `m` on every row.
    let on_every_row = |base: i64, step: &dyn Fn(&(u64, i64, i64)) -> i64, m: i64| {
        base.rem_euclid(m) == 0 && outer.iter().all(|o| step(o).rem_euclid(m) == 0)
    };
    let (src_at, dst_at) = (src_byte as i64, dst_byte as i64);
    let rows_in_blocks = on_every_row(dst_at, &|o| o.2, 16) && row_bytes.is_multiple_of(16);
    let mode = match (s, d) {
        (1, 1) if rows_in_blocks && on_every_row(src_at - dst_at, &|o| o.1 - o.2, 16) => {
            MODE_VEC_ALIGNED
        }
        (-1, 1) if rows_in_blocks && on_every_row(src_at + dst_at + es, &|o| o.1 + o.2, 16) => {
            MODE_VEC_REVERSED
        }
        (2, 1) if rows_in_blocks && on_every_row(src_at - 2 * dst_at, &|o| o.1 - 2 * o.2, 16) => {
            MODE_VEC_STRIDE2
        }
        (1, 1) if equally_aligned => MODE_ALIGNED,
        (1, 1) => MODE_SHIFTED,
        (_, 1) => MODE_GATHER,
        _ => MODE_ELEMENTS,
    };
    let (units, edges) = if mode == MODE_ELEMENTS {
        (n, false)
    } else if mode >= MODE_VEC_ALIGNED {
        (row_bytes / 16, false)
    } else {
        // Whole words a row holds, at most; the rest are edges.
        (
            row_bytes / 4,
            !(rows_start_aligned && row_bytes.is_multiple_of(4)),
        )
    };
    let workgroup = u64::from(WORKGROUP);
    // Word modes: units 0 and 1 are the edges, when there are any, in two lanes. ELEMENTS:
    // one element a lane where the row allows, so neighbouring elements of 1 or 2 bytes are
    // written by neighbouring lanes at once (and a racy write would show).
    let lane_units = units + if edges { 2 } else { 0 };
    let per_lane = if mode == MODE_VEC_STRIDE2 {
        PER_LANE_STRIDE2
    } else {
        PER_LANE
    };
    let lanes = if mode == MODE_ELEMENTS {
        units.max(1)
    } else {
        lane_units.div_ceil(per_lane).max(if edges { 2 } else { 1 })
    }
    .next_power_of_two()
    .min(workgroup);
    // A power of two: the kernel finds a workgroup's tile and rows with shifts.
    let tiles = lane_units
        .div_ceil(lanes * per_lane)
        .max(1)
        .next_power_of_two();
    let row_groups = rows.div_ceil(workgroup / lanes);
    KernelPiece {
        mode,
        edges,
        groups: tiles * row_groups,
        tiles,
        lanes_log2: lanes.trailing_zeros(),
        per_lane,
        units,
        rows,
        row_bytes,
        src_base: src_byte,
        dst_base: dst_byte,
        src_step: s * es,
        dst_step: d * es,
        outer,
    }
}

impl KernelPiece {
    /// kernel.wgsl's `Piece` as u32 words. Byte addresses and strides wrap modulo 2^32 (a
    /// negative stride is its two's complement); everything else must fit in a u32.
    pub(crate) fn words(&self) -> Result<[u32; PIECE_WORDS], String> {
        let fit = |v: u64| {
            u32::try_from(v).map_err(|_| format!("{v} does not fit the kernel's 32-bit counters"))
        };
        if self.outer.len() > MAX_OUTER {
            return Err(format!(
                "{} outer dimensions, the kernel takes {MAX_OUTER}",
                self.outer.len()
            ));
        }
        let mut words = [0u32; PIECE_WORDS];
        words[..10].copy_from_slice(&[
            fit(self.groups)?,
            self.tiles.trailing_zeros(),
            self.lanes_log2,
            fit(self.units)?,
            fit(self.rows)?,
            fit(self.row_bytes)?,
            fit(self.src_base)?,
            fit(self.dst_base)?,
            self.src_step as u32,
            self.dst_step as u32,
        ]);
        for (k, &(n, s, d)) in self.outer.iter().enumerate() {
            words[12 + k] = fit(n)?;
            words[12 + MAX_OUTER + k] = s as u32;
            words[12 + 2 * MAX_OUTER + k] = d as u32;
        }
        Ok(words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_last_axis_join_piece_moves_16_byte_blocks_32_a_lane_32_rows_a_workgroup() {
        // One 4096 x 1024 FLOAT32 input of a 4096 x 4096 output: rows of 256 blocks.
        let piece = kernel_piece(&[(4096, 1024, 4096), (1024, 1, 1)], 4, 0, 4096);
        assert_eq!(piece.mode, MODE_VEC_ALIGNED);
        assert!(!piece.edges);
        assert_eq!((piece.units, piece.lanes_log2, piece.tiles), (256, 3, 1));
        assert_eq!((piece.rows, piece.groups), (4096, 128));
        // Rows 4 bytes off the 16-byte grid: whole words instead.
        let words = kernel_piece(&[(4096, 1024, 4096), (1024, 1, 1)], 4, 4, 4100);
        assert_eq!((words.mode, words.units), (MODE_ALIGNED, 1024));
        assert_eq!(piece.outer, vec![(4096, 4096, 16384)]);
    }

    #[test]
    fn modes_follow_the_inner_strides_and_alignment() {
        // Contiguous, but source and destination rows differ by one byte: shifted words.
        let shifted = kernel_piece(&[(3, 7, 8), (7, 1, 1)], 1, 1, 0);
        assert_eq!(shifted.mode, MODE_SHIFTED);
        // Rows of 7 bytes end inside a word: edges; one whole word per row at most.
        assert!(shifted.edges);
        assert_eq!(shifted.units, 1);
        // Reversed FLOAT16 rows of 16 bytes: reversed blocks.
        let reversed = kernel_piece(&[(2, 8, 8), (8, -1, 1)], 2, 14, 0);
        assert_eq!(reversed.mode, MODE_VEC_REVERSED);
        // Rows of 12 bytes: gathered words, a negative step, no partial words.
        let reversed = kernel_piece(&[(2, 6, 6), (6, -1, 1)], 2, 10, 0);
        assert_eq!(reversed.mode, MODE_GATHER);
        assert_eq!(reversed.src_step, -2);
        assert!(!reversed.edges);
        // Every other UINT8 of rows of 32 into rows of 16: blocks from two source blocks.
        let halved = kernel_piece(&[(3, 32, 16), (16, 2, 1)], 1, 0, 0);
        assert_eq!(halved.mode, MODE_VEC_STRIDE2);
        // A strided destination: element by element.
        let strided = kernel_piece(&[(5, 1, 3)], 1, 0, 0);
        assert_eq!(
            (strided.mode, strided.units, strided.rows),
            (MODE_ELEMENTS, 5, 1)
        );
    }

    #[test]
    fn piece_words_wrap_negative_strides_and_refuse_what_does_not_fit() {
        let reversed = kernel_piece(&[(2, -8, 8), (8, -1, 1)], 2, 30, 0);
        let words = reversed.words().unwrap();
        assert_eq!(words[8], (-2i32) as u32); // src_step
        assert_eq!(words[12 + MAX_OUTER], (-16i32) as u32); // outer source stride
        let mut huge = reversed.clone();
        huge.rows = 1 << 32;
        assert_eq!(
            huge.words().unwrap_err(),
            "4294967296 does not fit the kernel's 32-bit counters"
        );
    }
}
