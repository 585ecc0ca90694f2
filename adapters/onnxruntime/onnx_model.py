"""A dmlcts descriptor as a one-node opset-18 ONNX model, built with the `onnx` package's
helpers: what the onnxruntime backend loads into ONNX Runtime and the onnx-reference backend
hands to `onnx.reference.ReferenceEvaluator`.

    DML_SPLIT   Split(X, split) with `split` the outputs' sizes along the axis
    DML_JOIN    Concat(X0, X1, ...) along the axis
    DML_SLICE1  Slice(X, starts, ends, axes, steps), steps = the window strides

Slice1's output may be smaller than its window, and ONNX infers the output shape from starts
and ends, so `ends` comes from the output's size: one step past the last element read. A
negative step reads from the window's far end (`offset + size - 1`) downwards; when the last
element read is index 0, `ends` is INT64_MIN, the ONNX spec's way to say "through index 0"
(-1 would mean the last index).
"""

import numpy as np
from onnx import helper, numpy_helper

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes

OPSET = 18
# The IR version ORT 1.32 and onnx 1.23 both read (onnx's helper would write its newest).
IR_VERSION = 8
INT64_MIN = np.iinfo(np.int64).min


def constant(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def slice_arguments(d):
    """ONNX Slice's starts, ends, axes and steps for a DML_SLICE1 (one entry per dimension)."""
    starts, ends = [], []
    for offset, size, step, count in zip(d["input_window_offsets"], d["input_window_sizes"],
                                         d["input_window_strides"], d["output"]["sizes"]):
        start = offset if step > 0 else offset + size - 1
        last = start + step * (count - 1)
        end = last + (1 if step > 0 else -1)
        starts.append(start)
        ends.append(end if end >= 0 else INT64_MIN)
    rank = len(starts)
    return starts, ends, list(range(rank)), list(d["input_window_strides"])


def model(operator):
    """The one-node ONNX model for a descriptor, and the names of its inputs."""
    kind, d, inputs, outputs = adapter.tensors(operator)
    if kind == "slice1":
        # Slice would need axes chosen for the entries; the descriptor does not say which.
        shapes.check_window_arrays(d)
    element = helper.np_dtype_to_tensor_dtype(adapter.dtype((inputs + outputs)[0]))
    names = [f"X{i}" for i in range(len(inputs))]
    graph_inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
        adapter.dtype(t)), list(t["sizes"])) for n, t in zip(names, inputs)]
    results = [f"Y{i}" for i in range(len(outputs))]
    initializers = []
    if kind == "split":
        initializers = [constant("split", [t["sizes"][d["axis"]] if d["axis"] < len(t["sizes"])
                                           else 0 for t in outputs])]
        node = helper.make_node("Split", names + ["split"], results, axis=d["axis"])
    elif kind == "join":
        node = helper.make_node("Concat", names, results, axis=d["axis"])
    else:
        starts, ends, axes, steps = slice_arguments(d)
        initializers = [constant("starts", starts), constant("ends", ends),
                        constant("axes", axes), constant("steps", steps)]
        node = helper.make_node("Slice", names + ["starts", "ends", "axes", "steps"], results)
    # Output types and shapes are left to ONNX's inference; the glue checks them at execute.
    graph = helper.make_graph([node], kind, graph_inputs,
                              [helper.make_tensor_value_info(r, element, None) for r in results],
                              initializer=initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = IR_VERSION
    return m, names
