#!/usr/bin/env python3
"""A dmlcts backend in Python: DML_SPLIT, DML_JOIN and DML_SLICE1 with numpy, written with the
`dmlcts` package (`pip install 'dmlcts[backend]'`). `dmlcts.backend` does the protocol, the
descriptors' strides and the guard bytes; each function below gets its inputs as packed numpy
arrays and returns its outputs as packed arrays.

    dmlcts conformance --backend "process:python3 numpy_ops.py"

It validates nothing itself (the default `values-only` profile): every valid case must come out
bit for bit, and a must-reject case it accepts is reported as informational.
"""

import sys

import numpy as np

from dmlcts.backend import serve


def split(desc, inputs):
    axis = desc["axis"]
    cuts = np.cumsum([t["sizes"][axis] for t in desc["outputs"]])[:-1]
    return np.split(inputs[0], cuts, axis=axis)


def join(desc, inputs):
    return [np.concatenate(inputs, axis=desc["axis"])]


def slice1(desc, inputs):
    """Output[c] = Input[CopyStart + stride * c]: a negative stride starts at the window's far
    end, and the output may be smaller than the window (it takes the walk's first elements)."""
    index = []
    for offset, size, stride, count in zip(desc["input_window_offsets"],
                                           desc["input_window_sizes"],
                                           desc["input_window_strides"],
                                           desc["output"]["sizes"]):
        start = offset if stride > 0 else offset + size - 1
        stop = start + stride * count
        index.append(slice(start, stop if stop >= 0 else None, stride))
    return [inputs[0][tuple(index)]]


if __name__ == "__main__":
    device = f"numpy {np.__version__} on Python {sys.version.split()[0]}"
    serve("numpy-ops", device, split=split, join=join, slice1=slice1)
