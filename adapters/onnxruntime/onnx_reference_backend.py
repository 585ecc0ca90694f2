#!/usr/bin/env python3
"""A dmlcts backend on ONNX's own reference implementation, `onnx.reference.ReferenceEvaluator`
(PyPI onnx): numpy code written from the ONNX operator specs, a second reference for
`cargo xtask crosscheck`.

    cargo xtask conformance --backend onnx-reference       # named in backends.yaml

Each operator becomes the same one-node opset-18 model as the onnxruntime backend's
(onnx_model.py), checked by ONNX's strict shape inference at `compile` (the evaluator itself
checks nothing before it runs: a refusal there is the backend's rejection), then run by a
`ReferenceEvaluator`. Strides and TotalTensorSizeInBytes never reach it: the shared glue
(adapters/common/dmlcts_adapter.py) gathers and scatters.
"""

import sys

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator

from adapters.common import dmlcts_adapter as adapter
from adapters.onnxruntime.onnx_model import model


def compile(operator):
    m, names = model(operator)
    try:
        # ONNX's shape inference, strict: its type and shape rules for the node (the
        # evaluator itself runs whatever it is given).
        m = onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        return ReferenceEvaluator(m), names
    except Exception as e:
        raise adapter.framework_rejection("onnx-reference", e) from None


def run(program, arrays):
    evaluator, names = program
    return evaluator.run(None, dict(zip(names, arrays)))


def main():
    device = (f"ONNX version {onnx.__version__}, onnx.reference.ReferenceEvaluator "
              f"(numpy {np.__version__}, Python {sys.version.split()[0]})")
    adapter.serve("onnx-reference", device, compile, run)


if __name__ == "__main__":
    main()
