// One strided block copy (a "piece" of the copy plan): invocation i copies element i of the
// block, counted row-major over `sizes`, from src[src_base + sum(c * src_strides)] to
// dst[dst_base + sum(c * dst_strides)]. Offsets and strides count elements.
//
// Bits move as u32 words: no float or 64-bit shader features are needed. Elements of 1 or 2
// bytes share words with their neighbours, so they are written with atomicAnd/atomicOr on
// their own bits only: invocations writing neighbouring elements never race.

struct Params {
    count: u32,          // elements in the block
    row: u32,            // invocations per row of the 2-D dispatch grid
    dims: u32,
    element_bytes: u32,  // 1, 2, 4 or 8
    src_base: i32,
    dst_base: u32,
    _pad0: u32,
    _pad1: u32,
    sizes: array<vec4<u32>, 2>,
    src_strides: array<vec4<i32>, 2>,
    dst_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<atomic<u32>>;
@group(0) @binding(2) var<uniform> p: Params;

fn read_bits(byte: u32, mask: u32) -> u32 {
    return (src[byte >> 2u] >> ((byte & 3u) * 8u)) & mask;
}

fn write_bits(byte: u32, mask: u32, value: u32) {
    let word = byte >> 2u;
    let shift = (byte & 3u) * 8u;
    atomicAnd(&dst[word], ~(mask << shift));
    atomicOr(&dst[word], value << shift);
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y * p.row + gid.x;
    if (i >= p.count) {
        return;
    }
    // Coordinates of element i, the last dimension fastest.
    var rest = i;
    var s = p.src_base;
    var d = p.dst_base;
    for (var k = 0u; k < p.dims; k++) {
        let dim = p.dims - 1u - k;
        let n = p.sizes[dim / 4u][dim % 4u];
        let c = rest % n;
        rest = rest / n;
        s += i32(c) * p.src_strides[dim / 4u][dim % 4u];
        d += c * p.dst_strides[dim / 4u][dim % 4u];
    }
    let si = u32(s);
    switch p.element_bytes {
        case 1u: {
            write_bits(d, 0xffu, read_bits(si, 0xffu));
        }
        case 2u: {
            write_bits(d * 2u, 0xffffu, read_bits(si * 2u, 0xffffu));
        }
        case 4u: {
            atomicStore(&dst[d], src[si]);
        }
        default: {
            atomicStore(&dst[2u * d], src[2u * si]);
            atomicStore(&dst[2u * d + 1u], src[2u * si + 1u]);
        }
    }
}
