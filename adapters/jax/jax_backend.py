#!/usr/bin/env python3
"""A dmlcts backend on XLA's CPU backend through JAX (PyPI jax, CPU only).

    cargo xtask conformance --backend jax          # named in backends.yaml

Each operator is one jitted function, lowered and compiled by XLA at `compile` for the
descriptor's input shapes and types (a refusal while tracing or compiling is the backend's
rejection):

    DML_SPLIT   lax.split(x, sizes, axis), sizes = the outputs' sizes along the axis
    DML_JOIN    lax.concatenate(xs, axis)
    DML_SLICE1  lax.rev over the dimensions with a negative stride, then
                lax.slice(x, starts, limits, |strides|)

Slice1 in the reversed dimensions: the window's far end (`offset + size - 1`), where a negative
stride starts, is index `dim - offset - size` once reversed, and the copy then steps forwards
by `|stride|`. Each limit is one past the last element read, so an output smaller than its
window reads the output's size of elements.

64-bit types need `jax_enable_x64` (without it JAX turns them into 32-bit ones); it is set
before anything else. Strides and TotalTensorSizeInBytes never reach XLA: the shared glue
(adapters/common/dmlcts_adapter.py) gathers each strided input into a packed array and
scatters each packed output into its strided buffer. Every tensor keeps its own dtype.
An XLA compilation takes tens of milliseconds, so compiled executables are cached by what XLA
sees of a descriptor (dmlcts_shapes.CompileCache; DMLCTS_ADAPTER_CACHE=0 turns it off).
"""

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jaxlib  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

from adapters.common import dmlcts_adapter as adapter  # noqa: E402
from adapters.common import dmlcts_shapes as shapes  # noqa: E402


def slice1(d):
    """The Slice1 as a function of the input, and the glue's own refusal of arrays it cannot
    give one entry per dimension."""
    reversed_dims, starts, limits, steps = shapes.reverse_then_slice(d)

    def f(x):
        return lax.slice(lax.rev(x, tuple(reversed_dims)), starts, limits, steps)

    return f


def function(operator):
    kind, d, inputs, outputs = adapter.tensors(operator)
    if kind == "split":
        axis = d["axis"]
        sizes = [t["sizes"][axis] if axis < len(t["sizes"]) else 0 for t in outputs]
        return lambda x: tuple(lax.split(x, sizes, axis))
    if kind == "join":
        return lambda *xs: (lax.concatenate(xs, d["axis"]),)
    f = slice1(d)
    return lambda x: (f(x),)


def compile(operator):
    f = function(operator)
    _, _, inputs, _ = adapter.tensors(operator)
    shapes = [jax.ShapeDtypeStruct(tuple(t["sizes"]), adapter.dtype(t)) for t in inputs]
    try:
        return jax.jit(f).lower(*shapes).compile()
    except Exception as e:  # tracing's or XLA's refusal
        raise adapter.framework_rejection("jax", e) from None


def run(program, arrays):
    return [np.asarray(y) for y in program(*arrays)]


def main():
    device = (f"JAX version {jax.__version__}, jaxlib {jaxlib.__version__}, XLA on "
              f"{jax.devices()[0].platform} (numpy {np.__version__}, "
              f"Python {sys.version.split()[0]})")
    adapter.serve("jax", device, shapes.CompileCache(compile), run)


if __name__ == "__main__":
    main()
