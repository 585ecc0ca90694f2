"""What the framework adapters (adapters/onnxruntime, adapters/jax) share: the dmlcts protocol
(docs/backend-protocol.md) and the strided gather/scatter between the harness's buffers and
the framework's packed arrays. Nothing here computes a value.

An adapter gives `serve` two functions:

    compile(operator) -> anything the adapter needs later, or raises `Rejected` (the framework
        refused the descriptor) or `Unsupported` (the framework cannot express a valid one)
    run(compiled, arrays) -> the output arrays, packed, in the operator's output order

and `serve` does the rest: it answers `hello`, checks the layout rules the glue itself needs
(`layout_problem`), gathers each input into a packed numpy array of its own dtype
(`np.ascontiguousarray` of an `as_strided` view over the payload), and scatters each returned
array into its output buffer through a writable `as_strided` view (numpy assignment: the
elements' bytes, unchanged). Bytes no element addresses are left as the harness sent them.
"""

import json
import struct
import sys

import numpy as np

PROTOCOL = 1

# The DirectML data types as numpy dtypes, little-endian as the payloads are. Each framework
# gets its own dtype (float16 stays float16), so any type-specific handling in the framework
# (NaN payloads, -0.0, subnormals) shows; the glue itself only moves element bytes.
DTYPES = {
    "FLOAT64": "<f8", "FLOAT32": "<f4", "FLOAT16": "<f2",
    "INT64": "<i8", "INT32": "<i4", "INT16": "<i2", "INT8": "i1",
    "UINT64": "<u8", "UINT32": "<u4", "UINT16": "<u2", "UINT8": "u1",
}


class Rejected(Exception):
    """The descriptor is refused: by the framework (rule None), or by the glue (a rule id)."""

    def __init__(self, reason, rule=None):
        super().__init__(reason)
        self.reason = reason
        self.rule = rule


class Unsupported(Exception):
    """A valid descriptor the framework cannot express: the case is skipped with the reason."""


# ---------------------------------------------------------------- frames

def read_exact(stream, n):
    data = bytearray()
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data.extend(chunk)
    return bytes(data)


def read_frame(stream):
    """(header, payloads), or None at the end of the stream."""
    length = read_exact(stream, 4)
    if length is None:
        return None
    (size,) = struct.unpack("<I", length)
    if size > 16 << 20:
        raise ValueError(f"a header of {size} bytes")
    text = read_exact(stream, size)
    if text is None:
        return None
    header = json.loads(text)
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    payloads = []
    for n in header.get("payloads") or []:
        payload = read_exact(stream, n)
        if payload is None:
            return None
        payloads.append(payload)
    return header, payloads


def write_frame(stream, header, payloads=()):
    header = dict(header, payloads=[len(p) for p in payloads])
    text = json.dumps(header).encode()
    stream.write(struct.pack("<I", len(text)))
    stream.write(text)
    for payload in payloads:
        stream.write(payload)
    stream.flush()


# ---------------------------------------------------------------- tensors

def dtype(t):
    return np.dtype(DTYPES[t["data_type"]])


def strides_of(t):
    """Strides in elements; packed row-major when the descriptor has none."""
    if t["strides"] is not None:
        return list(t["strides"])
    strides, running = [], 1
    for size in reversed(t["sizes"]):
        strides.insert(0, running)
        running *= size
    return strides


def tensors(operator):
    """(kind, fields, input descriptors, output descriptors), in the protocol's payload order."""
    ((kind, d),) = operator.items()
    if kind == "split":
        return kind, d, [d["input"]], list(d["outputs"])
    if kind == "join":
        return kind, d, list(d["inputs"]), [d["output"]]
    if kind == "slice1":
        return kind, d, [d["input"]], [d["output"]]
    raise Rejected(f"unknown operator {kind!r}")


def layout_problem(name, t):
    """The layout rules the glue needs to build a view: one stride per dimension, and every
    addressed byte inside TotalTensorSizeInBytes. (rule, reason), or None. The framework never
    sees strides or buffer sizes; these are the adapter's, and DirectML's, rules."""
    sizes = t["sizes"]
    if t["data_type"] not in DTYPES:
        return None, f"{name}: unknown data type {t['data_type']!r}"
    if t["strides"] is not None and len(t["strides"]) != len(sizes):
        return "tensor.strides_count", f"{name}: {len(t['strides'])} strides for {len(sizes)} sizes"
    if 0 in sizes:
        return None  # no element, no byte addressed; the framework judges empty tensors
    last = sum((n - 1) * s for n, s in zip(sizes, strides_of(t)))
    needed = (last + 1) * dtype(t).itemsize
    if needed > t["total_tensor_size_in_bytes"]:
        return ("tensor.total_size_minimum",
                f"{name}: its elements reach byte {needed}, past TotalTensorSizeInBytes "
                f"{t['total_tensor_size_in_bytes']}")
    return None


def view(t, buffer):
    """The tensor's elements as a numpy view of `buffer` (writable for a bytearray)."""
    dt = dtype(t)
    flat = np.frombuffer(buffer, dtype=dt, count=len(buffer) // dt.itemsize)
    return np.lib.stride_tricks.as_strided(
        flat, shape=t["sizes"], strides=[s * dt.itemsize for s in strides_of(t)],
        writeable=isinstance(buffer, bytearray))


def gather(t, payload):
    """The input's elements, packed row-major, in their own dtype."""
    return np.ascontiguousarray(view(t, payload))


def scatter(t, buffer, array):
    """Writes the framework's output into the output's addressed elements."""
    target = view(t, buffer)
    if array.shape != target.shape or array.dtype != target.dtype:
        raise RuntimeError(f"the framework returned {array.dtype}{list(array.shape)}; "
                           f"the descriptor says {target.dtype}{list(target.shape)}")
    target[...] = array


# ---------------------------------------------------------------- the server loop

# A framework has no DirectML feature levels. The adapters claim 4_1, whose table rows (1 to 8
# dimensions, all 11 data types) are the widest there are, and offer no `feature_levels`: every
# valid case runs, and the lower levels' table cases (must-rejects about DirectML's levels,
# 524 of them) are skipped as checks of another level's table. Offering every level instead
# runs those too, and each is only an acceptance of a table rule the framework never had.
LEVEL = "4_1"


def serve(name, device, compile, run):
    """Serves the protocol on stdin/stdout until `shutdown` or the end of stdin.

    The profile is values-only: the framework validates by its own rules (ONNX clamps slice
    windows; empty tensors are fine; neither sees strides, buffer sizes or the level tables),
    so a must-reject case it accepts is informational, and a valid case must still be
    accepted and computed bit for bit."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    compiled = {}
    while True:
        try:
            frame = read_frame(stdin)
        except (ValueError, UnicodeDecodeError) as e:
            write_frame(stdout, {"type": "error", "message": f"malformed frame: {e}"})
            return
        if frame is None:
            return
        header, payloads = frame
        kind, rid = header.get("type"), header.get("id")
        if kind == "hello":
            write_frame(stdout, {
                "type": "hello", "protocol": PROTOCOL, "name": name, "feature_level": LEVEL,
                "data_types": list(DTYPES),
                "device": device, "profile": "values-only",
            })
        elif kind == "compile":
            level = header.get("feature_level", LEVEL)
            if level != LEVEL:
                write_frame(stdout, {"type": "error", "id": rid,
                                     "message": f"feature level {level!r} not offered"})
                continue
            reply = {"type": "accepted", "id": rid}
            try:
                _, _, inputs, outputs = tensors(header["operator"])
                for role, group in (("input", inputs), ("output", outputs)):
                    for i, t in enumerate(group):
                        problem = layout_problem(f"{role} {i}", t)
                        if problem:
                            raise Rejected(f"adapter: {problem[1]}", problem[0])
                compiled[rid] = (header["operator"], compile(header["operator"]))
            except Rejected as r:
                reply = {"type": "rejected", "id": rid, "reason": r.reason, "rule": r.rule}
            except Unsupported as u:
                reply = {"type": "unsupported", "id": rid, "reason": str(u)}
            except Exception as e:  # a descriptor the glue cannot read: never die on one
                reply = {"type": "rejected", "id": rid, "reason": f"malformed: {e!r}", "rule": None}
            write_frame(stdout, reply)
        elif kind == "execute":
            try:
                operator, program = compiled[rid]
                _, _, inputs, outputs = tensors(operator)
                count = header.get("inputs", 0)
                if count != len(inputs) or len(payloads) != len(inputs) + len(outputs):
                    raise ValueError(f"{count} inputs and {len(payloads)} payloads for "
                                     f"{len(inputs)} inputs and {len(outputs)} outputs")
                arrays = [gather(t, p) for t, p in zip(inputs, payloads)]
                results = list(run(program, arrays))
                if len(results) != len(outputs):
                    raise RuntimeError(f"the framework returned {len(results)} outputs, "
                                       f"not {len(outputs)}")
                buffers = [bytearray(p) for p in payloads[len(inputs):]]
                for t, buffer, result in zip(outputs, buffers, results):
                    scatter(t, buffer, np.asarray(result))
                write_frame(stdout, {"type": "executed", "id": rid}, buffers)
            except Exception as e:  # report, never die: the harness fails just this case
                write_frame(stdout, {"type": "error", "id": rid, "message": repr(e)})
        elif kind == "release":
            compiled.pop(rid, None)
        elif kind == "shutdown":
            write_frame(stdout, {"type": "bye"})
            return
        else:
            write_frame(stdout, {"type": "error", "id": rid,
                                 "message": f"unknown message type {kind!r}"})


def framework_rejection(framework, error):
    """A framework's refusal, as the `rejected` reason: its exception type and first lines."""
    text = " ".join(str(error).split())
    if len(text) > 400:
        text = text[:400] + " ..."
    return Rejected(f"{framework}: {type(error).__name__}: {text}")
