#!/usr/bin/env python3
"""A dmlcts backend in Python: DML_SPLIT, DML_JOIN and DML_SLICE1 with numpy views.

It speaks the dmlcts backend protocol (docs/backend-protocol.md) on stdin/stdout:

    cargo xtask conformance --backend numpy      # named in backends.yaml
    cargo xtask conformance --backend 'process:python3 examples/python-backend/numpy_backend.py'
    dmlcts conformance --backend 'process:python3 /path/to/numpy_backend.py'   # installed

It acts as a device at any feature level: `hello` offers them all (`feature_levels`), and each
`compile` names the level to judge the descriptor at. The per-level tables come from the
repository's specs/ files (PyYAML reads them), the one copy of the pages' tables.

Each tensor is a numpy view made with as_strided over the buffer the harness sent, so strides
(padding, permutations, broadcast, holes) cost nothing; each operator is one slicing
assignment per output or input.
"""

import json
import struct
import sys
from pathlib import Path

import numpy as np
import yaml

PROTOCOL = 1

# Every DML_FEATURE_LEVEL; a compile may ask for any of them.
LEVELS = ["1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1",
          "5_0", "5_1", "5_2", "6_0", "6_1", "6_2", "6_3", "6_4"]
DEFAULT_LEVEL = "4_1"
SPECS = Path(__file__).resolve().parents[2] / "specs"

# Little-endian, as the protocol's payloads are.
DTYPES = {
    "FLOAT64": "<f8", "FLOAT32": "<f4", "FLOAT16": "<f2",
    "INT64": "<i8", "INT32": "<i4", "INT16": "<i2", "INT8": "i1",
    "UINT64": "<u8", "UINT32": "<u4", "UINT16": "<u2", "UINT8": "u1",
}

MAX_ELEMENTS = 2**32 - 1


# ---------------------------------------------------------------- frames

def read_exact(stream, n):
    data = bytearray()
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data.extend(chunk)
    return data


def read_frame(stream):
    """(header, payloads), or None at the end of the stream."""
    length = read_exact(stream, 4)
    if length is None:
        return None
    (size,) = struct.unpack("<I", length)
    header = json.loads(read_exact(stream, size))
    payloads = [read_exact(stream, n) for n in header.get("payloads") or []]
    return header, payloads


def write_frame(stream, header, payloads=()):
    header = dict(header, payloads=[len(p) for p in payloads])
    text = json.dumps(header).encode()
    stream.write(struct.pack("<I", len(text)))
    stream.write(text)
    for payload in payloads:
        stream.write(payload)
    stream.flush()


# ---------------------------------------------------------------- validation

def level_key(level):
    major, minor = level.split("_")
    return int(major), int(minor)


def load_spec(op):
    """The operator's introduction level and its "Tensor support" rows, highest level first."""
    spec = yaml.safe_load((SPECS / f"{op}.yaml").read_text())
    rows = sorted(spec["tensor_support"], key=lambda row: level_key(row["level"]), reverse=True)
    return spec["introduced"], rows


SPEC = {op: load_spec(op) for op in ("split", "join", "slice1")}


class Rejected(Exception):
    def __init__(self, rule, reason):
        super().__init__(reason)
        self.rule = rule
        self.reason = reason


def packed_strides(sizes):
    strides, running = [], 1
    for size in reversed(sizes):
        strides.insert(0, running)
        running *= size
    return strides


def strides_of(t):
    return t["strides"] if t["strides"] is not None else packed_strides(t["sizes"])


def minimum_bytes(t):
    """DMLCalcBufferTensorSize: rounded up to 4 bytes."""
    size = np.dtype(DTYPES[t["data_type"]]).itemsize
    if t["strides"] is None:
        elements = 1
        for s in t["sizes"]:
            elements *= s
    else:
        elements = sum((n - 1) * s for n, s in zip(t["sizes"], t["strides"])) + 1
    return (elements * size + 3) // 4 * 4


def check_tensor(name, t, is_output):
    sizes = t["sizes"]
    if t["data_type"] not in DTYPES:
        raise Rejected("split.data_type_supported", f"{name}: unknown data type {t['data_type']}")
    if t["strides"] is not None and len(t["strides"]) != len(sizes):
        raise Rejected("tensor.strides_count", f"{name}: {len(t['strides'])} strides for {len(sizes)} sizes")
    if 0 in sizes:
        raise Rejected("tensor.sizes_nonzero", f"{name}: a size is 0")
    elements = 1
    for s in sizes:
        elements *= s
    if elements > MAX_ELEMENTS:
        raise Rejected("tensor.element_count_limit", f"{name}: {elements} elements")
    if t["total_tensor_size_in_bytes"] < minimum_bytes(t):
        raise Rejected("tensor.total_size_minimum", f"{name}: TotalTensorSizeInBytes below {minimum_bytes(t)}")
    if is_output and not addresses_distinct(sizes, strides_of(t), elements):
        raise Rejected("tensor.output_addresses_distinct", f"{name}: two coordinates share an address")


def addresses_distinct(sizes, strides, elements):
    moving = sorted((s, n) for n, s in zip(sizes, strides) if n > 1)
    reach = 0
    for stride, size in moving:
        if stride <= reach:
            break
        reach += (size - 1) * stride
    else:
        return True
    if any(s == 0 for s, _ in moving) or elements > 1 << 20:
        return False
    index = np.zeros(1, dtype=np.int64)
    for n, s in zip(sizes, strides):
        index = (index[:, None] + np.arange(n, dtype=np.int64)[None, :] * s).ravel()
    return len(np.unique(index)) == len(index)


def check_same(op, reference_name, reference, others):
    for name, t in others:
        if len(t["sizes"]) != len(reference["sizes"]):
            raise Rejected(f"{op}.same_dimension_count", f"{name} and {reference_name} differ in rank")
    for name, t in others:
        if t["data_type"] != reference["data_type"]:
            raise Rejected(f"{op}.same_data_type", f"{name} and {reference_name} differ in type")


def check_support(op, level, tensors):
    """The page's "Tensor support" table: the row with the highest level not above `level`.
    `tensors` are (table row name, field name, tensor)."""
    row = next((r for r in SPEC[op][1] if level_key(r["level"]) <= level_key(level)), None)
    if row is None:
        raise Rejected("operator.introduced_at_level", f"{op} has no tensor support at {level}")
    for row_name, name, t in tensors:
        support = next(s for s in row["tensors"] if s["name"] == row_name)
        low, high = support["dimension_counts"]
        if not low <= len(t["sizes"]) <= high:
            raise Rejected(f"{op}.dimension_count_supported",
                           f"{name}: {len(t['sizes'])} dimensions; {low} to {high} at {level}")
        if t["data_type"] not in support["data_types"]:
            raise Rejected(f"{op}.data_type_supported", f"{name}: {t['data_type']} at {level}")


def check_axis(op, axis, whole, parts, total_rule):
    rank = len(whole["sizes"])
    if axis >= rank:
        raise Rejected(f"{op}.axis_in_range", f"Axis {axis} with {rank} dimensions")
    total = 0
    for part in parts:
        for d in range(rank):
            if d == axis:
                total += part["sizes"][d]
            elif part["sizes"][d] != whole["sizes"][d]:
                raise Rejected(f"{op}.non_axis_sizes_match", f"sizes differ in dimension {d}")
    if total != whole["sizes"][axis]:
        raise Rejected(total_rule, f"axis sizes sum to {total}, not {whole['sizes'][axis]}")


def validate(operator, level):
    (kind, d), = operator.items()
    if level_key(level) < level_key(SPEC[kind][0]):
        raise Rejected("operator.introduced_at_level", f"{kind} was introduced in {SPEC[kind][0]}")
    if kind == "split":
        if not d["outputs"]:
            raise Rejected("split.output_count_nonzero", "OutputCount is 0")
        check_tensor("InputTensor", d["input"], False)
        for i, t in enumerate(d["outputs"]):
            check_tensor(f"OutputTensors[{i}]", t, True)
        check_same("split", "InputTensor", d["input"],
                   [(f"OutputTensors[{i}]", t) for i, t in enumerate(d["outputs"])])
        check_support("split", level, [("InputTensor", "InputTensor", d["input"])] +
                      [("OutputTensors", f"OutputTensors[{i}]", t) for i, t in enumerate(d["outputs"])])
        check_axis("split", d["axis"], d["input"], d["outputs"], "split.output_sizes_sum_to_input")
    elif kind == "join":
        if not d["inputs"]:
            raise Rejected("join.input_count_nonzero", "InputCount is 0")
        for i, t in enumerate(d["inputs"]):
            check_tensor(f"InputTensors[{i}]", t, False)
        check_tensor("OutputTensor", d["output"], True)
        check_same("join", "OutputTensor", d["output"],
                   [(f"InputTensors[{i}]", t) for i, t in enumerate(d["inputs"])])
        check_support("join", level,
                      [("InputTensors", f"InputTensors[{i}]", t) for i, t in enumerate(d["inputs"])] +
                      [("OutputTensor", "OutputTensor", d["output"])])
        check_axis("join", d["axis"], d["output"], d["inputs"], "join.input_sizes_sum_to_output")
    elif kind == "slice1":
        rank = d["dimension_count"]
        for field in ("input_window_offsets", "input_window_sizes", "input_window_strides"):
            if len(d[field]) != rank:
                raise Rejected("slice1.window_arrays_length", f"{field} has {len(d[field])} entries")
        check_tensor("InputTensor", d["input"], False)
        check_tensor("OutputTensor", d["output"], True)
        check_same("slice1", "InputTensor", d["input"], [("OutputTensor", d["output"])])
        check_support("slice1", level, [("InputTensor", "InputTensor", d["input"]),
                                        ("OutputTensor", "OutputTensor", d["output"])])
        if len(d["input"]["sizes"]) != rank:
            raise Rejected("slice1.dimension_count_matches_tensors", "DimensionCount differs from the tensors")
        for i in range(rank):
            offset, size, stride = (d["input_window_offsets"][i], d["input_window_sizes"][i],
                                    d["input_window_strides"][i])
            if size == 0:
                raise Rejected("slice1.window_nonempty", f"InputWindowSizes[{i}] is 0")
            if offset + size > d["input"]["sizes"][i]:
                raise Rejected("slice1.window_inside_input", f"window {i} leaves the input")
            if stride == 0:
                raise Rejected("slice1.window_stride_nonzero", f"InputWindowStrides[{i}] is 0")
            if d["output"]["sizes"][i] > 1 + (size - 1) // abs(stride):
                raise Rejected("slice1.output_size_within_max_copied", f"OutputTensor.Sizes[{i}] too large")
    else:
        raise Rejected(None, f"unknown operator {kind}")


# ---------------------------------------------------------------- execution

def view(t, buffer):
    """The tensor as a numpy view of `buffer` (a bytearray for outputs: writable)."""
    dtype = np.dtype(DTYPES[t["data_type"]])
    flat = np.frombuffer(buffer, dtype=dtype, count=len(buffer) // dtype.itemsize)
    strides = [s * dtype.itemsize for s in strides_of(t)]
    return np.lib.stride_tricks.as_strided(flat, shape=t["sizes"], strides=strides,
                                           writeable=isinstance(buffer, bytearray))


def along(axis, rank, start, stop):
    index = [slice(None)] * rank
    index[axis] = slice(start, stop)
    return tuple(index)


def execute(operator, inputs, outputs):
    (kind, d), = operator.items()
    if kind == "split":
        source, start = view(d["input"], inputs[0]), 0
        rank = len(d["input"]["sizes"])
        for t, buffer in zip(d["outputs"], outputs):
            size = t["sizes"][d["axis"]]
            view(t, buffer)[...] = source[along(d["axis"], rank, start, start + size)]
            start += size
    elif kind == "join":
        target, start = view(d["output"], outputs[0]), 0
        rank = len(d["output"]["sizes"])
        for t, buffer in zip(d["inputs"], inputs):
            size = t["sizes"][d["axis"]]
            target[along(d["axis"], rank, start, start + size)] = view(t, buffer)
            start += size
    else:
        index = []
        for offset, size, stride, count in zip(d["input_window_offsets"], d["input_window_sizes"],
                                               d["input_window_strides"], d["output"]["sizes"]):
            # A negative stride starts at the window's end (the page's CopyStart).
            start = offset if stride > 0 else offset + size - 1
            stop = start + stride * (count - 1) + (1 if stride > 0 else -1)
            index.append(slice(start, stop if stop >= 0 else None, stride))
        view(d["output"], outputs[0])[...] = view(d["input"], inputs[0])[tuple(index)]


# ---------------------------------------------------------------- the server loop

def main():
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
                "type": "hello", "protocol": PROTOCOL, "name": "numpy", "feature_level": DEFAULT_LEVEL,
                "feature_levels": LEVELS, "data_types": list(DTYPES),
                "device": f"numpy {np.__version__} on Python {sys.version.split()[0]}",
            })
        elif kind == "compile":
            level = header.get("feature_level", DEFAULT_LEVEL)
            if level not in LEVELS:
                write_frame(stdout, {"type": "error", "id": rid, "message": f"feature level {level!r} not offered"})
                continue
            try:
                validate(header["operator"], level)
                compiled[rid] = header["operator"]
                write_frame(stdout, {"type": "accepted", "id": rid})
            except Rejected as r:
                write_frame(stdout, {"type": "rejected", "id": rid, "reason": r.reason, "rule": r.rule})
            except (KeyError, TypeError, ValueError) as e:
                write_frame(stdout, {"type": "rejected", "id": rid, "reason": f"malformed: {e!r}", "rule": None})
        elif kind == "execute":
            count = header.get("inputs", 0)
            inputs, outputs = payloads[:count], [bytearray(p) for p in payloads[count:]]
            try:
                execute(compiled[rid], inputs, outputs)
                write_frame(stdout, {"type": "executed", "id": rid}, outputs)
            except Exception as e:  # report, never die: the harness fails just this case
                write_frame(stdout, {"type": "error", "id": rid, "message": repr(e)})
        elif kind == "release":
            compiled.pop(rid, None)
        elif kind == "shutdown":
            write_frame(stdout, {"type": "bye"})
            return
        else:
            write_frame(stdout, {"type": "error", "id": rid, "message": f"unknown message type {kind!r}"})


if __name__ == "__main__":
    main()
