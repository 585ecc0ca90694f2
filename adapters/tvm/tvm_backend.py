#!/usr/bin/env python3
"""A dmlcts backend on Apache TVM (PyPI apache-tvm): Relax, compiled to LLVM for the CPU.

    cargo xtask conformance --backend tvm          # named in backends.yaml

Each operator is a Relax function of one op on parameters of the descriptor's input shapes
and types, compiled by `tvm.compile(mod, target="llvm")` and run on a `relax.VirtualMachine`
at `compile` (a refusal by Relax's shape inference, or by the compiler, is the backend's
rejection):

    DML_SPLIT   relax.op.split(x, indices_or_sections = the split points along the axis)
    DML_JOIN    relax.op.concat(xs, axis)
    DML_SLICE1  relax.op.strided_slice(x, axes, begin, end, strides): begin the first element
                read (the window's far end for a negative stride), end one step past the
                last element read; where that is below index 0, -(dim + 1) (numpy's "before
                index 0": -1 would be the last index)

A compilation takes about 0.3 s, so compiled modules are cached by what TVM sees of a
descriptor (dmlcts_shapes.CompileCache): a campaign's repeats, and the re-runs of shrinking,
reuse them. Strides and TotalTensorSizeInBytes never reach TVM: the shared glue
(adapters/common/dmlcts_adapter.py) gathers and scatters.
"""

import sys

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes

DTYPES = {
    "FLOAT64": "float64", "FLOAT32": "float32", "FLOAT16": "float16",
    "INT64": "int64", "INT32": "int32", "INT16": "int16", "INT8": "int8",
    "UINT64": "uint64", "UINT32": "uint32", "UINT16": "uint16", "UINT8": "uint8",
}


def op(operator, params):
    """The Relax op for a descriptor on its parameters."""
    kind, d, inputs, outputs = adapter.tensors(operator)
    if kind == "split":
        points, running = [], 0
        for size in shapes.split_sizes(d, outputs)[:-1]:
            running += size
            points.append(running)
        return relax.op.split(params[0], points if points else 1, d["axis"])
    if kind == "join":
        return relax.op.concat(params, d["axis"])
    begin, end, strides = [], [], []
    dims = d["input"]["sizes"]
    for axis, (start, step, count) in enumerate(shapes.slice_walk(d)):
        stop = start + step * (count - 1) + (1 if step > 0 else -1)
        begin.append(start)
        end.append(stop if stop >= 0 else -(dims[axis] + 1))
        strides.append(step)
    return relax.op.strided_slice(params[0], list(range(len(dims))), begin, end, strides)


def compile(operator):
    kind, _, inputs, _ = adapter.tensors(operator)
    if kind == "slice1":
        shapes.check_window_arrays(operator["slice1"])
    try:
        builder = relax.BlockBuilder()
        params = [relax.Var(f"x{i}", relax.TensorType(list(t["sizes"]), DTYPES[t["data_type"]]))
                  for i, t in enumerate(inputs)]
        with builder.function("main", params):
            with builder.dataflow():
                result = builder.emit_output(builder.emit(op(operator, params)))
            builder.emit_func_output(result)
        executable = tvm.compile(builder.get(), target="llvm")
        return relax.VirtualMachine(executable, tvm.cpu())
    except adapter.Rejected:
        raise
    except Exception as e:  # Relax's shape inference or the compiler
        raise adapter.framework_rejection("tvm", e) from None


def run(vm, arrays):
    result = vm["main"](*[tvm.runtime.tensor(a) for a in arrays])
    results = list(result) if isinstance(result, tvm_ffi.Array) else [result]
    return [r.numpy() for r in results]


def main():
    device = (f"TVM version {tvm.__version__}, Relax to LLVM on the CPU (tvm-ffi "
              f"{tvm_ffi.__version__}, numpy {np.__version__}, Python {sys.version.split()[0]})")
    adapter.serve("tvm", device, shapes.CompileCache(compile), run)


if __name__ == "__main__":
    main()
