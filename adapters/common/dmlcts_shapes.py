"""What the framework adapters derive from a descriptor before they build anything: the
arguments of the frameworks' own Split, Concat and Slice spellings, the one glue rule about
Slice1's window arrays, and the cache of compiled modules keyed by what a framework sees.
Nothing here computes a value; dmlcts_adapter.py moves the bytes.
"""

import os
from collections import OrderedDict

from adapters.common import dmlcts_adapter as adapter

INT64_MIN = -(1 << 63)

WINDOW_FIELDS = ("input_window_offsets", "input_window_sizes", "input_window_strides")


def check_window_arrays(d):
    """A framework's slice takes one entry per dimension: window arrays of another length
    cannot be given to it, so the glue refuses them with the rule they break."""
    rank = len(d["input"]["sizes"])
    if any(len(d[f]) != rank for f in WINDOW_FIELDS):
        agree = all(len(d[f]) == d["dimension_count"] for f in WINDOW_FIELDS)
        raise adapter.Rejected(
            "adapter: the window arrays' lengths differ from the input's rank",
            "slice1.dimension_count_matches_tensors" if agree else "slice1.window_arrays_length")


def split_sizes(d, outputs):
    """Each output's size along Split's axis (0 where the axis is past its rank: the
    framework then judges the axis)."""
    axis = d["axis"]
    return [t["sizes"][axis] if axis < len(t["sizes"]) else 0 for t in outputs]


def slice_walk(d):
    """Per dimension, (first index read, step, count read) for a Slice1 whose window arrays
    have one entry per dimension: the first is the window's far end for a negative step, and
    the count is the output's size (it may be smaller than the window allows)."""
    check_window_arrays(d)
    walk = []
    out = d["output"]["sizes"]
    for i, (offset, size, step) in enumerate(zip(*(d[f] for f in WINDOW_FIELDS))):
        start = offset if step > 0 else offset + size - 1
        walk.append((start, step, out[i] if i < len(out) else 1))
    return walk


def reverse_then_slice(d):
    """A Slice1 as a reversal then a positive-step slice (the JAX and IREE spellings): the
    dimensions with a negative stride, to reverse, and per dimension the start, limit and
    step (|stride|) in the reversed input. Once reversed, the window's far end (offset +
    size - 1) is index dim - offset - size."""
    check_window_arrays(d)
    dims, out = d["input"]["sizes"], d["output"]["sizes"]
    reversed_dims = [i for i, s in enumerate(d["input_window_strides"]) if s < 0]
    starts, limits, steps = [], [], []
    for i, (offset, size, stride) in enumerate(zip(*(d[f] for f in WINDOW_FIELDS))):
        count = out[i] if i < len(out) else 1
        start = offset if stride > 0 else dims[i] - offset - size
        starts.append(start)
        limits.append(start + abs(stride) * (count - 1) + 1)
        steps.append(abs(stride))
    return reversed_dims, starts, limits, steps


def onnx_slice_arguments(d):
    """ONNX Slice's (and OpenVINO Slice-8's) starts, ends, axes and steps for a DML_SLICE1:
    each end one step past the last element read, INT64_MIN where that is below index 0
    (-1 would mean the last index)."""
    starts, ends = [], []
    for start, step, count in slice_walk(d):
        end = start + step * (count - 1) + (1 if step > 0 else -1)
        starts.append(start)
        ends.append(end if end >= 0 else INT64_MIN)
    rank = len(starts)
    return starts, ends, list(range(rank)), [step for _, step, _ in slice_walk(d)]


def framework_key(operator):
    """What a framework sees of a descriptor: the operator, its fields, and each tensor's
    type and sizes. Strides and TotalTensorSizeInBytes stay in the glue (which checks them
    before `compile`), so two descriptors with the same key compile to the same module."""
    kind, d, inputs, outputs = adapter.tensors(operator)
    tensors = tuple((t["data_type"], tuple(t["sizes"])) for t in inputs + outputs)
    if kind == "slice1":
        fields = (d["dimension_count"],) + tuple(tuple(d[f]) for f in WINDOW_FIELDS)
    else:
        fields = (d["axis"],)
    return (kind, fields, len(inputs), tensors)


# How many compiled modules an adapter keeps; DMLCTS_ADAPTER_CACHE=0 turns the cache off (the
# before/after measurements in docs/findings.md run the same campaign both ways).
DEFAULT_CAPACITY = 256


def cache_capacity():
    text = os.environ.get("DMLCTS_ADAPTER_CACHE", "")
    return int(text) if text.isdigit() else DEFAULT_CAPACITY


class CompileCache:
    """Compiled modules by `framework_key`, the least recently used dropped past `capacity`.
    Only successes are kept: a refusal is re-derived each time (it is cheap, and an
    exception object would keep its traceback's frames alive)."""

    def __init__(self, compile, capacity=None):
        self.compile = compile
        self.capacity = cache_capacity() if capacity is None else capacity
        self.modules = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __call__(self, operator):
        if self.capacity == 0:
            return self.compile(operator)
        key = framework_key(operator)
        if key in self.modules:
            self.modules.move_to_end(key)
            self.hits += 1
            return self.modules[key]
        self.misses += 1
        module = self.compile(operator)
        self.modules[key] = module
        if len(self.modules) > self.capacity:
            self.modules.popitem(last=False)
        return module
