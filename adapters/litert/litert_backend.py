#!/usr/bin/env python3
"""A dmlcts backend on LiteRT (PyPI ai-edge-litert; TensorFlow Lite's runtime) on the CPU.

    cargo xtask conformance --backend litert       # the default: XNNPACK delegate
    cargo xtask conformance --backend litert-ref   # the builtin reference kernels

Each operator becomes a one-operator .tflite model (tflite_model.build: SPLIT_V,
CONCATENATION or STRIDED_SLICE), loaded into an `Interpreter` whose tensors are allocated at
`compile` (a refusal there, by the model's checks, a kernel's or the delegate's `Prepare`, is
the backend's rejection). `--ref` picks `OpResolverType.BUILTIN_REF`, the reference kernels
(a second reference for `cargo xtask crosscheck`); the default, `AUTO`, is what a user gets:
the builtin kernels with the XNNPACK delegate applied.

Types a kernel does not take are `unsupported` before anything is built: the kernels' own
type checks (`is_supported_type` in tflite/kernels/concatenation.cc and split_v.cc, LiteRT
2.3.0, the same under both resolvers) refuse FLOAT64, UINT16 and UINT64 for CONCATENATION,
and FLOAT16, FLOAT64, UINT16, UINT32 and UINT64 for SPLIT_V; STRIDED_SLICE takes all eleven.
A slice index past INT32 (TFLite's index type), and a stride of INT32_MIN (which
STRIDED_SLICE's Prepare refuses by name), are `unsupported` too.

Strides and TotalTensorSizeInBytes never reach LiteRT: the shared glue
(adapters/common/dmlcts_adapter.py) gathers and scatters. Loaded interpreters are cached by
what LiteRT sees of a descriptor (dmlcts_shapes.CompileCache).
"""

import sys

import ai_edge_litert
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes
from adapters.litert import tflite_model

# The types each builtin kernel refuses in its Prepare (LiteRT 2.3.0; probed under AUTO and
# BUILTIN_REF alike): a valid descriptor of one of these cannot run on LiteRT at all.
KERNEL_REFUSES = {
    "join": ("CONCATENATION", {"FLOAT64", "UINT16", "UINT64"}),
    "split": ("SPLIT_V", {"FLOAT16", "FLOAT64", "UINT16", "UINT32", "UINT64"}),
    "slice1": ("STRIDED_SLICE", set()),
}


INT32_MIN = -(1 << 31)


def unsupported(operator):
    """Why LiteRT cannot run a descriptor at all (its kernels' own refusals), or None."""
    kind, d, inputs, outputs = adapter.tensors(operator)
    code, refused = KERNEL_REFUSES[kind]
    if kind == "slice1" and INT32_MIN in d["input_window_strides"]:
        return ("LiteRT's STRIDED_SLICE kernel does not take a stride of INT32_MIN "
                "(tflite/kernels/strided_slice.cc: \"stride value INT32_MIN is not supported\")")
    types = {t["data_type"] for t in inputs + outputs}
    if len(types) == 1 and types <= refused:
        return (f"LiteRT's {code} kernel does not take {types.pop()} (its Prepare's "
                f"is_supported_type check)")
    return None


def make_compile(resolver):
    def compile(operator):
        reason = unsupported(operator)
        if reason:
            raise adapter.Unsupported(reason)
        try:
            content = tflite_model.build(operator)
        except tflite_model.Inexpressible as e:
            raise adapter.Unsupported(str(e)) from None
        try:
            interpreter = Interpreter(model_content=content,
                                      experimental_op_resolver_type=resolver)
            interpreter.allocate_tensors()
        except Exception as e:  # the model's checks, a kernel's or the delegate's Prepare
            raise adapter.framework_rejection("litert", e) from None
        return interpreter
    return compile


def run(interpreter, arrays):
    for detail, array in zip(interpreter.get_input_details(), arrays):
        interpreter.set_tensor(detail["index"], array)
    interpreter.invoke()
    return [np.array(interpreter.get_tensor(d["index"]), copy=True)
            for d in interpreter.get_output_details()]


def main():
    reference = "--ref" in sys.argv[1:]
    resolver = OpResolverType.BUILTIN_REF if reference else OpResolverType.AUTO
    what = ("builtin reference kernels (BUILTIN_REF)" if reference
            else "builtin kernels with the XNNPACK delegate (AUTO)")
    version = getattr(ai_edge_litert, "__version__", "unknown")
    device = (f"LiteRT version {version}, CPU, {what} (numpy {np.__version__}, "
              f"Python {sys.version.split()[0]})")
    adapter.serve("litert-ref" if reference else "litert", device,
                  shapes.CompileCache(make_compile(resolver)), run)


if __name__ == "__main__":
    main()
