// The copy kernel: every piece of the copy plan that is not a plain buffer copy, in as few
// dispatches as the limits allow (one, when the tensors fit in one buffer on each side and the
// pieces share a specialization). Addresses count bytes (u32, wrapping, so a negative source
// stride works); bits move as u32 words, so no float or 64-bit shader features are needed.
//
// A piece is rows (its outer dimensions, flattened) of an inner run. The dispatch's z is the
// piece; a workgroup of 256 lanes takes 256 >> lanes_log2 rows side by side, 1 << lanes_log2
// lanes per row, and each lane moves PER_LANE units of its row, `lanes` apart (neighbouring
// lanes touch neighbouring words). The two innermost dimensions come from the invocation id
// without a division; only a third or further outer dimension costs one, once per lane.
// Branches on the layout are override constants, not per-unit tests: on a CPU driver, where
// lanes run in SIMD, a branch or an invocation costs more than the move itself.
//
// The pipeline is specialized (override constants) by MODE, element size, EDGES and OUTER:
// - ALIGNED (inner run contiguous on both sides, source and destination rows equally aligned):
//   unit = a destination word, a copy of one source word.
// - SHIFTED (contiguous, differently aligned): a destination word from two source words.
// - GATHER (destination run contiguous, source strided or reversed): a destination word
//   assembled from the elements (or half elements) that fall into it.
// - ELEMENTS (destination strided): unit = one element.
// - VEC_ALIGNED, VEC_REVERSED, VEC_STRIDE2 (every row starts and ends on 16 bytes, and the
//   source of each destination block lies on 16 bytes too): unit = a 16-byte block, moved
//   with vec4 loads and stores; copied, reversed by elements, or every other element.
// In the word modes a lane stores whole words of its row; a row's first and last words, when
// the row covers them only in part (EDGES), are shared with other rows, other pieces or bytes
// no piece addresses, so lanes 0 and 1 of the row write only their own bits, with atomics. In
// ELEMENTS mode (one element a lane where the row allows), elements of 1 or 2 bytes are
// written the same way. Neighbours never race and unaddressed bytes stay as they were.

struct Piece {
    groups: u32,       // workgroups: tiles * row groups
    tiles_log2: u32,   // workgroups along one row: a power of two, so no division finds them
    lanes_log2: u32,
    units: u32,        // units per row (word modes: whole words, at most)
    rows: u32,
    row_bytes: u32,
    src_base: u32,
    dst_base: u32,
    src_step: u32,     // inner strides in bytes (source: two's complement)
    dst_step: u32,
    _pad0: u32,
    _pad1: u32,
    sizes: array<u32, 8>,        // outer dimensions, innermost first
    src_strides: array<u32, 8>,  // in bytes
    dst_strides: array<u32, 8>,
}

const WORKGROUP: u32 = 256u;
const ALIGNED: u32 = 0u;
const SHIFTED: u32 = 1u;
const GATHER: u32 = 2u;
const ELEMENTS: u32 = 3u;
const VEC_ALIGNED: u32 = 4u;
const VEC_REVERSED: u32 = 5u;
const VEC_STRIDE2: u32 = 6u;

override MODE: u32 = ALIGNED;
override ELEMENT_LOG2: u32 = 2u;
// Some row starts or ends inside a word.
override EDGES: bool = true;
// Outer dimensions (0 to 7).
override OUTER: u32 = 1u;
// False only in the bench's measurement of the kernel without its moves.
override MOVE: bool = true;
// Units per lane (set by the host, which plans with the same number). Many: on a CPU
// driver a lane's set-up costs more than moving several blocks.
override PER_LANE: u32 = 32u;

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> pieces: array<Piece>;
// The same buffers as src and dst, seen as 16-byte blocks (the VEC modes only).
@group(0) @binding(3) var<storage, read> src4: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> dst4: array<vec4<u32>>;

fn swap_halves(v: vec4<u32>) -> vec4<u32> {
    return (v >> vec4(16u)) | (v << vec4(16u));
}

fn swap_bytes(v: vec4<u32>) -> vec4<u32> {
    return ((v & vec4(0xffu)) << vec4(24u)) | ((v & vec4(0xff00u)) << vec4(8u))
        | ((v >> vec4(8u)) & vec4(0xff00u)) | (v >> vec4(24u));
}

// Bytes 0 and 2 of x, then bytes 0 and 2 of y.
fn even_bytes(x: u32, y: u32) -> u32 {
    return (x & 0xffu) | ((x >> 8u) & 0xff00u) | ((y & 0xffu) << 16u) | ((y << 8u) & 0xff000000u);
}

// `part` (1, 2 or 4) bytes of src at byte `byte`, a multiple of `part`, in the low bits.
fn read_part(byte: u32, part: u32) -> u32 {
    let value = src[byte >> 2u] >> ((byte & 3u) * 8u);
    return select(value & ((1u << ((part * 8u) & 31u)) - 1u), value, part >= 4u);
}

// The source byte that goes to destination byte `b` of a row that starts at `d` (source `s`).
fn source_of(b: u32, d: u32, s: u32, src_step: u32) -> u32 {
    let o = b - d;
    return s + (o >> ELEMENT_LOG2) * src_step + (o & ((1u << ELEMENT_LOG2) - 1u));
}

// The bits `mask` of word `word`, which other lanes or pieces share: atomics on those bits
// only, so a neighbour's bits in the same word are never overwritten with stale ones.
fn write_bits(word: u32, mask: u32, value: u32) {
    atomicAnd(&dst[word], ~mask);
    atomicOr(&dst[word], value & mask);
}

// Bytes [lo, hi) of the word at byte `at` (fewer than 4).
fn write_edge(at: u32, lo: u32, hi: u32, d: u32, s: u32, src_step: u32) {
    let part = min(1u << ELEMENT_LOG2, 4u);
    var value = 0u;
    for (var b = lo; b < hi; b += part) {
        value |= read_part(source_of(b, d, s, src_step), part) << ((b - at) * 8u);
    }
    write_bits(at >> 2u, ((1u << ((hi - lo) * 8u)) - 1u) << ((lo - at) * 8u), value);
}

@compute @workgroup_size(256)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) grid: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let piece = &pieces[wid.z];
    let g = wid.x + wid.y * grid.x;
    if (g >= (*piece).groups) {
        return;
    }
    let lanes_log2 = (*piece).lanes_log2;
    let tiles_log2 = (*piece).tiles_log2;
    let tile = g & ((1u << tiles_log2) - 1u);
    let lane = local & ((1u << lanes_log2) - 1u);
    // The lane's first unit; the others follow `lanes` apart.
    let first = (tile << lanes_log2) * PER_LANE + lane;
    let row = ((g >> tiles_log2) << (8u - lanes_log2)) + (local >> lanes_log2);
    if (row >= (*piece).rows) {
        return;
    }
    // The row's outer coordinates, innermost first; the outermost needs no division.
    var rest = row;
    var s = (*piece).src_base;
    var d = (*piece).dst_base;
    if (OUTER > 1u) {
        for (var k = 0u; k < OUTER - 1u; k++) {
            let n = (*piece).sizes[k];
            let c = rest % n;
            rest = rest / n;
            s += c * (*piece).src_strides[k];
            d += c * (*piece).dst_strides[k];
        }
    }
    if (OUTER > 0u) {
        s += rest * (*piece).src_strides[(OUTER + 7u) % 8u];
        d += rest * (*piece).dst_strides[(OUTER + 7u) % 8u];
    }
    if (!MOVE) {
        return;
    }
    let src_step = (*piece).src_step;
    let element = 1u << ELEMENT_LOG2;
    if (MODE >= VEC_ALIGNED) {
        let blocks = (*piece).units;
        for (var k = 0u; k < PER_LANE; k++) {
            let u = first + (k << lanes_log2);
            if (u >= blocks) {
                break;
            }
            let o = u << 4u;
            var v: vec4<u32>;
            if (MODE == VEC_ALIGNED) {
                v = src4[(s + o) >> 4u];
            } else if (MODE == VEC_REVERSED) {
                // The block's elements come from the 16 bytes below the source of its first.
                let r = src4[(s - o - 16u + element) >> 4u];
                if (element == 8u) {
                    v = r.zwxy;
                } else if (element == 4u) {
                    v = r.wzyx;
                } else if (element == 2u) {
                    v = swap_halves(r.wzyx);
                } else {
                    v = swap_bytes(r.wzyx);
                }
            } else {
                let a = src4[(s + 2u * o) >> 4u];
                let b = src4[((s + 2u * o) >> 4u) + 1u];
                if (element == 8u) {
                    v = vec4(a.xy, b.xy);
                } else if (element == 4u) {
                    v = vec4(a.x, a.z, b.x, b.z);
                } else if (element == 2u) {
                    let low = vec4(0xffffu);
                    v = (vec4(a.xz, b.xz) & low) | (vec4(a.yw, b.yw) << vec4(16u));
                } else {
                    v = vec4(even_bytes(a.x, a.y), even_bytes(a.z, a.w), even_bytes(b.x, b.y), even_bytes(b.z, b.w));
                }
            }
            dst4[(d + o) >> 4u] = v;
        }
        return;
    }
    if (MODE == ELEMENTS) {
        let units = (*piece).units;
        let dst_step = (*piece).dst_step;
        for (var k = 0u; k < PER_LANE; k++) {
            let u = first + (k << lanes_log2);
            if (u >= units) {
                break;
            }
            let src_byte = s + u * src_step;
            let dst_byte = d + u * dst_step;
            if (element >= 4u) {
                atomicStore(&dst[dst_byte >> 2u], src[src_byte >> 2u]);
            }
            if (element == 8u) {
                atomicStore(&dst[(dst_byte >> 2u) + 1u], src[(src_byte >> 2u) + 1u]);
            }
            if (element < 4u) {
                let shift = (dst_byte & 3u) * 8u;
                let mask = ((1u << ((element * 8u) & 31u)) - 1u) << shift;
                write_bits(dst_byte >> 2u, mask, read_part(src_byte, element) << shift);
            }
        }
        return;
    }
    let row_end = d + (*piece).row_bytes;
    let first_word = (d + 3u) >> 2u;
    let end_word = row_end >> 2u;
    // With EDGES, units 0 and 1 of a row are its first and last word where the row covers
    // them in part, taken by two lanes at once: one row's last word is often the next row's
    // first, and the lanes that write it run side by side.
    let skip = select(0u, 2u, EDGES);
    if (EDGES && first < 2u) {
        let tail = first == 1u;
        let at = select(d & ~3u, end_word << 2u, tail);
        let lo = select(d, at, tail);
        let hi = select(min(first_word << 2u, row_end), row_end, tail);
        let partial = select((d & 3u) != 0u, (row_end & 3u) != 0u && end_word >= first_word, tail);
        if (partial) {
            write_edge(at, lo, hi, d, s, src_step);
        }
    }
    for (var k = 0u; k < PER_LANE; k++) {
        let u = first + (k << lanes_log2);
        if (u < skip) {
            continue;
        }
        let w = first_word + u - skip;
        if (w >= end_word) {
            break;
        }
        let at = w << 2u;
        let from_byte = s + at - d;
        var value: u32;
        if (MODE == ALIGNED) {
            value = src[from_byte >> 2u];
        } else if (MODE == SHIFTED) {
            let shift = (from_byte & 3u) * 8u;
            let high = src[(from_byte >> 2u) + 1u] << ((32u - shift) & 31u);
            value = (src[from_byte >> 2u] >> shift) | select(0u, high, shift != 0u);
        } else if (element >= 4u) {
            value = src[source_of(at, d, s, src_step) >> 2u];
        } else if (element == 2u) {
            value = read_part(source_of(at, d, s, src_step), 2u)
                | (read_part(source_of(at + 2u, d, s, src_step), 2u) << 16u);
        } else {
            value = read_part(s + (at - d) * src_step, 1u)
                | (read_part(s + (at + 1u - d) * src_step, 1u) << 8u)
                | (read_part(s + (at + 2u - d) * src_step, 1u) << 16u)
                | (read_part(s + (at + 3u - d) * src_step, 1u) << 24u);
        }
        atomicStore(&dst[w], value);
    }
}

// The bench's reference point, the simplest kernel that moves as many bytes: each lane copies
// PER_LANE 16-byte blocks, `WORKGROUP` apart, from src to dst, as many as both hold.
@compute @workgroup_size(256)
fn lane_copy(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) grid: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let count = min(arrayLength(&src4), arrayLength(&dst4));
    let base = (wid.x + wid.y * grid.x) * WORKGROUP * PER_LANE + local;
    for (var k = 0u; k < PER_LANE; k++) {
        let i = base + k * WORKGROUP;
        if (i >= count) {
            break;
        }
        dst4[i] = src4[i];
    }
}
