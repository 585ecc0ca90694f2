#!/usr/bin/env python3
"""A dmlcts backend on Apple's MLX (PyPI mlx, with mlx-cpu on Linux): its CPU device.

    cargo xtask conformance --backend mlx          # named in backends.yaml

MLX has no separate compilation: an operator is a function of `mx.array`s, traced at
`compile` on lazy zero arrays of the descriptor's input shapes and types (MLX infers shapes as
ops are called, so its refusals come then, and nothing is computed) and run at `execute`:

    DML_SPLIT   mx.split(x, split points along the axis, axis)
    DML_JOIN    mx.concatenate(xs, axis)
    DML_SLICE1  basic slicing, x[start:stop:step, ...] per dimension: start the first element
                read (the window's far end for a negative step), stop one step past the last
                element read, or None where that is below index 0 (-1 would be the last index)

Every array is made with its type named (`mx.array(a, dtype=...)`): MLX makes a float64
numpy array float32 otherwise. Strides and TotalTensorSizeInBytes never reach MLX: the shared
glue (adapters/common/dmlcts_adapter.py) gathers and scatters.
"""

import sys

import mlx.core as mx
import numpy as np

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes

mx.set_default_device(mx.cpu)

DTYPES = {
    "FLOAT64": mx.float64, "FLOAT32": mx.float32, "FLOAT16": mx.float16,
    "INT64": mx.int64, "INT32": mx.int32, "INT16": mx.int16, "INT8": mx.int8,
    "UINT64": mx.uint64, "UINT32": mx.uint32, "UINT16": mx.uint16, "UINT8": mx.uint8,
}


def function(operator):
    """The operator as a function of its input arrays, returning a list of arrays."""
    kind, d, _, outputs = adapter.tensors(operator)
    if kind == "split":
        points, running = [], 0
        for size in shapes.split_sizes(d, outputs)[:-1]:
            running += size
            points.append(running)
        return lambda x: list(mx.split(x, points, axis=d["axis"]))
    if kind == "join":
        return lambda *xs: [mx.concatenate(list(xs), axis=d["axis"])]
    index = []
    for start, step, count in shapes.slice_walk(d):
        stop = start + step * (count - 1) + (1 if step > 0 else -1)
        index.append(slice(start, stop if stop >= 0 else None, step))
    index = tuple(index)
    return lambda x: [x[index]]


def compile(operator):
    f = function(operator)
    _, _, inputs, _ = adapter.tensors(operator)
    try:
        # Lazy: shapes are inferred, nothing is allocated or computed.
        f(*[mx.zeros(list(t["sizes"]), dtype=DTYPES[t["data_type"]]) for t in inputs])
    except Exception as e:  # MLX's shape checks
        raise adapter.framework_rejection("mlx", e) from None
    return f, [DTYPES[t["data_type"]] for t in inputs]


def run(program, arrays):
    f, dtypes = program
    results = f(*[mx.array(a, dtype=t) for a, t in zip(arrays, dtypes)])
    mx.eval(results)
    return [np.array(r, copy=True) for r in results]


def main():
    device = (f"MLX version {mx.__version__}, {mx.default_device()} (numpy {np.__version__}, "
              f"Python {sys.version.split()[0]})")
    adapter.serve("mlx", device, compile, run)


if __name__ == "__main__":
    main()
