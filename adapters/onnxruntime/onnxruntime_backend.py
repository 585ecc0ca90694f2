#!/usr/bin/env python3
"""A dmlcts backend on ONNX Runtime's CPU execution provider (PyPI onnxruntime).

    cargo xtask conformance --backend onnxruntime          # named in backends.yaml

Each operator becomes a one-node opset-18 ONNX model (onnx_model.py: Split, Concat, Slice)
loaded into an `InferenceSession` on `CPUExecutionProvider` at `compile` (a refusal there, by
ORT's model checks, ONNX shape inference or a kernel, is the backend's rejection).

Strides and TotalTensorSizeInBytes never reach ONNX Runtime: the shared glue
(adapters/common/dmlcts_adapter.py) gathers each strided input into a packed array and
scatters each packed output into its strided buffer. Every tensor keeps its own ONNX type
(FLOAT16 is float16), so ORT's own kernels move the elements.
"""

import sys

import numpy as np
import onnx
import onnxruntime as ort

from adapters.common import dmlcts_adapter as adapter
from adapters.onnxruntime.onnx_model import model


def compile(operator):
    m, names = model(operator)
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only; a refused model is reported as the reason
        session = ort.InferenceSession(m.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
    except Exception as e:  # the model's loading, shape inference or a kernel's set-up
        raise adapter.framework_rejection("onnxruntime", e) from None
    return session, names


def run(program, arrays):
    session, names = program
    return session.run(None, dict(zip(names, arrays)))


def main():
    device = (f"ONNX Runtime version {ort.__version__}, CPUExecutionProvider "
              f"(onnx {onnx.__version__}, numpy {np.__version__}, "
              f"Python {sys.version.split()[0]})")
    adapter.serve("onnxruntime", device, compile, run)


if __name__ == "__main__":
    main()
