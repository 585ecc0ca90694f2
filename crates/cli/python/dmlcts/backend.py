"""dmlcts.backend: write a dmlcts backend in Python.

A backend is a program that the `dmlcts` command starts and talks to over its stdin and stdout,
by the dmlcts backend protocol (docs/backend-protocol.md in the dmlcts repository). This module
is that protocol's Python side: the frames, the operator descriptors, the strided gather and
scatter between the harness's buffers and packed numpy arrays, and the server loop. With it, a
backend is its three operators and a `serve()` call::

    import numpy as np
    from dmlcts.backend import serve

    def split(desc, inputs):            # inputs: [the input], packed, in its own dtype
        axis = desc["axis"]
        cuts = np.cumsum([t["sizes"][axis] for t in desc["outputs"]])[:-1]
        return np.split(inputs[0], cuts, axis=axis)

    def join(desc, inputs):
        return [np.concatenate(inputs, axis=desc["axis"])]

    def slice1(desc, inputs): ...      # see examples/python-wheel-backend

    serve("my-backend", split=split, join=join, slice1=slice1)

and `dmlcts conformance --backend 'process:python3 my_backend.py'` runs the corpus on it.

Each operator function takes the descriptor's fields (a dict, the protocol's spelling:
`axis`, `input`, `inputs`, `outputs`, `output`, `input_window_offsets`, ...; each tensor a
dict with `data_type`, `sizes`, `strides`, `total_tensor_size_in_bytes`) and the inputs as
packed row-major numpy arrays, and returns the outputs as arrays of the outputs' shapes and
dtypes, in the operator's output order. Strides, padding and guard bytes never reach it:
`serve` gathers each strided input into a packed array (`gather`) and writes each returned
array into its output's addressed elements (`scatter`), bit for bit (numpy assignment moves
the elements' bytes: NaN payloads, -0.0 and subnormals come through).

Validation. DirectML rejects descriptors by many rules (the `reject.*` cases of the corpus).
By default `serve` declares the `values-only` profile: the backend accepts every descriptor
the glue can lay out, a must-reject case it accepts is reported as informational ("accepted;
DirectML rejects it: rule X"), never a failure, and every valid case must be computed bit for
bit. A backend that validates gives `compile` instead of the three functions (raising
`Rejected` with the rule id), and `profile="strict"` or the rule ids it does not enforce
(`not_enforced=[...]`).

What the glue itself refuses, whatever the profile (`layout_problem`): a stride count that
differs from the rank (`tensor.strides_count`) and elements past TotalTensorSizeInBytes
(`tensor.total_size_minimum`), since no view can be built for them.

The module needs numpy (`pip install 'dmlcts[backend]'` or `pip install numpy`).
"""

import json
import struct
import sys

try:
    import numpy as np
except ImportError as e:  # the `dmlcts` command needs nothing; this module needs numpy
    raise ImportError(
        "dmlcts.backend needs numpy: pip install 'dmlcts[backend]' (or numpy)") from e

__all__ = [
    "PROTOCOL", "DTYPES", "LEVEL", "LEVELS", "Rejected", "Unsupported",
    "read_exact", "read_frame", "write_frame",
    "dtype", "strides_of", "tensors", "layout_problem", "view", "gather", "scatter",
    "serve", "framework_rejection", "MAX_PACKED_BYTES",
]

#: The most bytes `serve` packs one input into (`gather`): a descriptor whose input would take
#: more (a broadcast input of 2^32 - 1 elements, which costs the harness a few bytes) is
#: answered `unsupported`, with this bound named, instead of exhausting the machine's memory.
MAX_PACKED_BYTES = 1 << 30

#: The protocol version this module speaks.
PROTOCOL = 1

#: The DirectML data types as numpy dtypes, little-endian as the payloads are. Each tensor
#: keeps its own dtype (float16 stays float16), so a library's type-specific handling (NaN
#: payloads, -0.0, subnormals) shows; the glue itself only moves element bytes.
DTYPES = {
    "FLOAT64": "<f8", "FLOAT32": "<f4", "FLOAT16": "<f2",
    "INT64": "<i8", "INT32": "<i4", "INT16": "<i2", "INT8": "i1",
    "UINT64": "<u8", "UINT32": "<u4", "UINT16": "<u2", "UINT8": "u1",
}

#: The DML_FEATURE_LEVELs a backend may claim or offer, as the protocol spells them.
LEVELS = ["1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1", "5_2",
          "6_0", "6_1", "6_2", "6_3", "6_4"]

#: The level `serve` claims by default. A library has no DirectML feature levels; 4_1's table
#: rows (1 to 8 dimensions, all 11 data types) are the widest there are. Offering no other
#: level, every valid case runs, and the lower levels' table cases (must-rejects about
#: DirectML's levels) are skipped as checks of another level's table.
LEVEL = "4_1"


class Rejected(Exception):
    """The descriptor is invalid: raise it from `compile` (or an operator function's caller,
    `serve`). `rule` is the rule id from the dmlcts specs (e.g. "split.axis_in_range"), or None
    when the refusal is the library's own."""

    def __init__(self, reason, rule=None):
        super().__init__(reason)
        self.reason = reason
        self.rule = rule


class Unsupported(Exception):
    """A valid descriptor this backend cannot express or run: the case is skipped with the
    reason (never passed). Give a reason a reader can act on."""


# ---------------------------------------------------------------- frames

def read_exact(stream, n):
    """`n` bytes from a binary stream, or None when it ends first."""
    data = bytearray()
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data.extend(chunk)
    return bytes(data)


def read_frame(stream):
    """One frame: (header dict, [payload bytes, ...]), or None at the end of the stream.
    Raises ValueError for a frame that cannot be one (a header over 16 MiB, or not a JSON
    object)."""
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
    """Writes one frame (the header's `payloads` lengths are filled in) and flushes."""
    header = dict(header, payloads=[len(p) for p in payloads])
    text = json.dumps(header).encode()
    stream.write(struct.pack("<I", len(text)))
    stream.write(text)
    for payload in payloads:
        stream.write(payload)
    stream.flush()


# ---------------------------------------------------------------- tensors

def dtype(t):
    """A tensor descriptor's numpy dtype (KeyError for an unknown data type)."""
    return np.dtype(DTYPES[t["data_type"]])


def strides_of(t):
    """A tensor's strides in elements; packed row-major when the descriptor has none."""
    if t["strides"] is not None:
        return list(t["strides"])
    strides, running = [], 1
    for size in reversed(t["sizes"]):
        strides.insert(0, running)
        running *= size
    return strides


def tensors(operator):
    """An operator object (`{"split": {...}}`, `{"join": ...}` or `{"slice1": ...}`) as
    (kind, fields, [input descriptors], [output descriptors]), in the protocol's payload
    order. Raises Rejected for an unknown operator."""
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
    addressed byte inside TotalTensorSizeInBytes. (rule, reason), or None. A library never
    sees strides or buffer sizes; these are the glue's, and DirectML's, rules."""
    sizes = t["sizes"]
    if t["data_type"] not in DTYPES:
        return None, f"{name}: unknown data type {t['data_type']!r}"
    if t["strides"] is not None and len(t["strides"]) != len(sizes):
        return "tensor.strides_count", f"{name}: {len(t['strides'])} strides for {len(sizes)} sizes"
    if 0 in sizes:
        return None  # no element, no byte addressed; the library judges empty tensors
    last = sum((n - 1) * s for n, s in zip(sizes, strides_of(t)))
    needed = (last + 1) * dtype(t).itemsize
    if needed > t["total_tensor_size_in_bytes"]:
        return ("tensor.total_size_minimum",
                f"{name}: its elements reach byte {needed}, past TotalTensorSizeInBytes "
                f"{t['total_tensor_size_in_bytes']}")
    return None


def view(t, buffer):
    """The tensor's elements as a numpy view of `buffer` by its strides (writable for a
    bytearray). Check `layout_problem` first: the view must fit the buffer."""
    dt = dtype(t)
    flat = np.frombuffer(buffer, dtype=dt, count=len(buffer) // dt.itemsize)
    return np.lib.stride_tricks.as_strided(
        flat, shape=t["sizes"], strides=[s * dt.itemsize for s in strides_of(t)],
        writeable=isinstance(buffer, bytearray))


def gather(t, payload):
    """An input payload's elements, packed row-major, in their own dtype (a copy)."""
    return np.ascontiguousarray(view(t, payload))


def scatter(t, buffer, array):
    """Writes `array` into the output's addressed elements of `buffer` (a bytearray); bytes
    no element addresses stay as they were. Raises RuntimeError when the array's shape or
    dtype is not the descriptor's."""
    target = view(t, buffer)
    if array.shape != target.shape or array.dtype != target.dtype:
        raise RuntimeError(f"the backend returned {array.dtype}{list(array.shape)}; "
                           f"the descriptor says {target.dtype}{list(target.shape)}")
    target[...] = array


def framework_rejection(framework, error):
    """A library's refusal as a Rejected whose reason is its exception type and first 400
    characters: raise it from `compile`."""
    text = " ".join(str(error).split())
    if len(text) > 400:
        text = text[:400] + " ..."
    return Rejected(f"{framework}: {type(error).__name__}: {text}")


# ---------------------------------------------------------------- the server loop

def _operator_functions(split, join, slice1):
    """compile and run for a backend given as its three operator functions."""
    functions = {"split": split, "join": join, "slice1": slice1}

    def compile(operator):
        kind, d, _, _ = tensors(operator)
        if functions[kind] is None:
            raise Unsupported(f"this backend has no {kind} operator")
        return kind, d

    def run(program, arrays):
        kind, d = program
        return functions[kind](d, arrays)

    return compile, run


def serve(name, device="", compile=None, run=None, *, split=None, join=None, slice1=None,
          profile="values-only", not_enforced=None, feature_level=LEVEL, data_types=None,
          stdin=None, stdout=None):
    """Serves the protocol on stdin/stdout until `shutdown` or the end of stdin.

    The backend is either its three operator functions, `split`, `join` and `slice1`, each
    `f(fields, inputs) -> outputs` (packed arrays in, packed arrays out; one may be None,
    and its cases are skipped as unsupported), or a pair:

        compile(operator) -> anything `run` needs later; raises Rejected (an invalid
            descriptor) or Unsupported (a valid one it cannot run)
        run(compiled, arrays) -> the output arrays, packed, in the operator's output order

    `name` and `device` (free text: library versions; a `version X.Y.Z` in it is what
    expectations files match) go into `hello`. `profile` is "values-only" (the default: no
    rule enforced, a must-reject case accepted is informational) or "strict";
    `not_enforced` lists the rule ids a strict-but-not-quite backend does not enforce.
    `feature_level` is the level claimed (every case runs at it); `data_types` the ones
    claimed (default: all eleven). Nothing a request holds makes `serve` die: a descriptor
    it cannot read is rejected, an operator that raises fails its case with the message.
    """
    if split or join or slice1:
        if compile is not None or run is not None:
            raise TypeError("serve: give the three operator functions or compile and run, not both")
        compile, run = _operator_functions(split, join, slice1)
    elif compile is None or run is None:
        raise TypeError("serve: give split, join and slice1, or compile and run")
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    hello = {
        "type": "hello", "protocol": PROTOCOL, "name": name, "feature_level": feature_level,
        "data_types": list(data_types or DTYPES), "device": device, "profile": profile,
    }
    if not_enforced:
        hello["not_enforced"] = list(not_enforced)
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
            write_frame(stdout, hello)
        elif kind == "compile":
            level = header.get("feature_level", feature_level)
            if level != feature_level:
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
                for i, t in enumerate(inputs):
                    packed = dtype(t).itemsize * int(np.prod(t["sizes"], dtype=object))
                    if packed > MAX_PACKED_BYTES:
                        raise Unsupported(
                            f"adapter: input {i} would be packed into {packed} bytes, past "
                            f"the glue's bound of {MAX_PACKED_BYTES} (dmlcts.backend."
                            f"MAX_PACKED_BYTES)")
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
                    raise RuntimeError(f"the backend returned {len(results)} outputs, "
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
