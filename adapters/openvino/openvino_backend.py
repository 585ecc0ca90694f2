#!/usr/bin/env python3
"""A dmlcts backend on OpenVINO (PyPI openvino): its CPU plugin, or its reference evaluation.

    cargo xtask conformance --backend openvino             # the CPU plugin
    cargo xtask conformance --backend openvino-reference   # Model.evaluate(), a second reference

Each operator becomes an `ov.Model` of one opset-13 node on `Parameter`s of the descriptor's
input shapes and element types, built at `compile` (a refusal by the node's shape inference,
or by the CPU plugin's `compile_model`, is the backend's rejection):

    DML_SPLIT   VariadicSplit(X, axis, split_lengths = the outputs' sizes along the axis)
    DML_JOIN    Concat(X0, X1, ...) along the axis
    DML_SLICE1  Slice-8(X, start, stop, step, axes): ONNX Slice's semantics, so the same
                arguments as the onnxruntime adapter (each stop one step past the last element
                read; INT64_MIN where that is below index 0)

With `--reference` the model is not compiled for a device: `Model.evaluate()` runs it with
OpenVINO's reference implementations of the ops (the code its plugins are tested against),
which keep every element type as it is. The CPU plugin computes with the precisions its docs
list (f32, bf16, f16, i32, i8, u8): see docs/findings/openvino-*.yaml.

Strides and TotalTensorSizeInBytes never reach OpenVINO: the shared glue
(adapters/common/dmlcts_adapter.py) gathers and scatters. Compiled models are cached by what
OpenVINO sees of a descriptor (dmlcts_shapes.CompileCache).
"""

import sys

import numpy as np
import openvino as ov
import openvino.opset13 as ops

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes

TYPES = {
    "FLOAT64": ov.Type.f64, "FLOAT32": ov.Type.f32, "FLOAT16": ov.Type.f16,
    "INT64": ov.Type.i64, "INT32": ov.Type.i32, "INT16": ov.Type.i16, "INT8": ov.Type.i8,
    "UINT64": ov.Type.u64, "UINT32": ov.Type.u32, "UINT16": ov.Type.u16, "UINT8": ov.Type.u8,
}


def const(values):
    return ops.constant(np.array(values, dtype=np.int64))


def model(operator):
    """The one-node `ov.Model` for a descriptor (OpenVINO's shape inference runs as it is
    built, so a refusal raises here)."""
    kind, d, inputs, outputs = adapter.tensors(operator)
    if kind == "slice1":
        shapes.check_window_arrays(d)
    params = [ops.parameter(list(t["sizes"]), TYPES[t["data_type"]], name=f"X{i}")
              for i, t in enumerate(inputs)]
    if kind == "split":
        node = ops.variadic_split(params[0], const(d["axis"]),
                                  const(shapes.split_sizes(d, outputs)))
        results = [node.output(i) for i in range(len(outputs))]
    elif kind == "join":
        results = [ops.concat(params, d["axis"]).output(0)]
    else:
        starts, ends, axes, steps = shapes.onnx_slice_arguments(d)
        results = [ops.slice(params[0], const(starts), const(ends), const(steps),
                             const(axes)).output(0)]
    return ov.Model(results, params, kind)


# The CPU plugin allocates every tensor of a model when it compiles it, and more besides: a
# Split of 2^32 UINT8 elements (a must-reject case of the element limit) took 24 GB and was
# killed by the kernel's OOM killer. Models whose tensors hold more than this many bytes
# together are `unsupported` (skipped with this reason), never compiled; the corpus's valid
# cases stay under 256 MiB.
COMPILE_BYTES_LIMIT = 1 << 30


def tensor_bytes(operator):
    """The bytes of every input and output, as OpenVINO would hold them (packed)."""
    _, _, inputs, outputs = adapter.tensors(operator)
    total = 0
    for t in inputs + outputs:
        elements = 1
        for size in t["sizes"]:
            elements *= size
        total += elements * np.dtype(adapter.DTYPES[t["data_type"]]).itemsize
    return total


class Cpu:
    def __init__(self):
        self.core = ov.Core()

    def compile(self, operator):
        try:
            m = model(operator)
        except adapter.Rejected:
            raise
        except Exception as e:  # shape inference's refusal
            raise adapter.framework_rejection("openvino", e) from None
        needed = tensor_bytes(operator)
        if needed > COMPILE_BYTES_LIMIT:
            raise adapter.Unsupported(
                f"its tensors hold {needed} bytes; the CPU plugin allocates them all at "
                f"compile, so this adapter compiles at most {COMPILE_BYTES_LIMIT} bytes")
        try:
            return self.core.compile_model(m, "CPU")
        except Exception as e:  # the plugin's refusal
            raise adapter.framework_rejection("openvino", e) from None

    def run(self, compiled, arrays):
        request = compiled.create_infer_request()
        request.infer([ov.Tensor(a) for a in arrays])
        return [np.array(request.get_output_tensor(i).data, copy=True)
                for i in range(len(compiled.outputs))]


class Reference:
    def compile(self, operator):
        try:
            return model(operator)
        except adapter.Rejected:
            raise
        except Exception as e:
            raise adapter.framework_rejection("openvino", e) from None

    def run(self, m, arrays):
        outputs = [ov.Tensor(r.get_element_type(), r.get_shape()) for r in m.outputs]
        if not m.evaluate(outputs, [ov.Tensor(a) for a in arrays]):
            raise RuntimeError("openvino: Model.evaluate() returned false")
        return [np.array(t.data, copy=True) for t in outputs]


def main():
    reference = "--reference" in sys.argv[1:]
    runner = Reference() if reference else Cpu()
    what = "Model.evaluate() (reference implementations)" if reference else "CPU plugin"
    device = (f"OpenVINO version {ov.__version__.split('-')[0]} ({ov.__version__}), {what} "
              f"(numpy {np.__version__}, Python {sys.version.split()[0]})")
    adapter.serve("openvino-reference" if reference else "openvino", device,
                  shapes.CompileCache(runner.compile), runner.run)


if __name__ == "__main__":
    main()
