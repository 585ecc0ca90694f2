"""A dmlcts descriptor as a one-operator .tflite model, built with the flatbuffers schema
module that ai-edge-litert ships (no TensorFlow). Shared by every LiteRT backend (the CPU one
here, a GPU delegate's later): `build(operator)` gives the model's bytes.

    DML_SPLIT   SPLIT_V(input, size_splits, axis), size_splits = the outputs' sizes along the
                axis (INT32), num_splits = the output count
    DML_JOIN    CONCATENATION(inputs...), axis
    DML_SLICE1  STRIDED_SLICE(input, begin, end, strides) (INT32 each, offset = false): begin
                the first element read (the window's far end for a negative step), end one step
                past the last element read, and end_mask's bit where that is below index 0 (an
                end of -1 would mean the last index)

The framework sees packed arrays of the descriptor's types and sizes; strides and buffer
sizes stay in the shared glue (adapters/common/dmlcts_adapter.py).
"""

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes

TYPES = {name: getattr(schema.TensorType, name) for name in adapter.DTYPES}

INT32_MAX = (1 << 31) - 1


class Inexpressible(Exception):
    """A valid descriptor a .tflite model cannot hold (an index past INT32)."""


def int32s(values, what):
    values = list(values)
    if any(not -INT32_MAX - 1 <= v <= INT32_MAX for v in values):
        raise Inexpressible(f"TFLite's {what} are INT32; {values} do not fit")
    return np.array(values, dtype="<i4")


class Builder:
    """One subgraph of one operator: tensors, their buffers, the operator."""

    def __init__(self):
        self.model = schema.ModelT()
        self.model.version = 3
        self.model.description = "dmlcts"
        self.model.buffers = [schema.BufferT()]  # buffer 0: the empty sentinel
        self.tensors = []

    def tensor(self, name, data_type, sizes, data=None):
        t = schema.TensorT()
        t.name = name
        t.type = data_type
        t.shape = list(sizes)
        t.buffer = 0
        if data is not None:
            buffer = schema.BufferT()
            buffer.data = np.frombuffer(data.tobytes(), dtype=np.uint8)
            self.model.buffers.append(buffer)
            t.buffer = len(self.model.buffers) - 1
        self.tensors.append(t)
        return len(self.tensors) - 1

    def constant(self, name, values):
        return self.tensor(name, schema.TensorType.INT32, list(values.shape), values)

    def finish(self, code, inputs, outputs, graph_inputs, options_type, options):
        opcode = schema.OperatorCodeT()
        opcode.builtinCode = code
        opcode.deprecatedBuiltinCode = min(code, 127)
        opcode.version = 1
        op = schema.OperatorT()
        op.opcodeIndex = 0
        op.inputs = inputs
        op.outputs = outputs
        op.builtinOptionsType = options_type
        op.builtinOptions = options
        graph = schema.SubGraphT()
        graph.tensors = self.tensors
        graph.inputs = graph_inputs
        graph.outputs = outputs
        graph.operators = [op]
        graph.name = "main"
        self.model.operatorCodes = [opcode]
        self.model.subgraphs = [graph]
        fb = flatbuffers.Builder(1024)
        fb.Finish(self.model.Pack(fb), file_identifier=b"TFL3")
        return bytes(fb.Output())


def build(operator):
    """The .tflite bytes for a descriptor. Raises `Inexpressible` for a valid one a .tflite
    cannot hold, and `adapter.Rejected` for window arrays the glue cannot give it."""
    kind, d, inputs, outputs = adapter.tensors(operator)
    b = Builder()
    ins = [b.tensor(f"X{i}", TYPES[t["data_type"]], t["sizes"]) for i, t in enumerate(inputs)]
    outs = [b.tensor(f"Y{i}", TYPES[t["data_type"]], t["sizes"]) for i, t in enumerate(outputs)]
    if kind == "split":
        sizes = b.constant("size_splits", int32s(shapes.split_sizes(d, outputs), "split sizes"))
        axis = b.constant("axis", int32s([d["axis"]], "axes").reshape(()))
        options = schema.SplitVOptionsT()
        options.numSplits = len(outputs)
        return b.finish(schema.BuiltinOperator.SPLIT_V, [ins[0], sizes, axis], outs, ins,
                        schema.BuiltinOptions.SplitVOptions, options)
    if kind == "join":
        options = schema.ConcatenationOptionsT()
        options.axis = int(int32s([d["axis"]], "axes")[0])
        options.fusedActivationFunction = schema.ActivationFunctionType.NONE
        return b.finish(schema.BuiltinOperator.CONCATENATION, ins, outs, ins,
                        schema.BuiltinOptions.ConcatenationOptions, options)
    begin, end, strides, end_mask = [], [], [], 0
    for axis, (start, step, count) in enumerate(shapes.slice_walk(d)):
        stop = start + step * (count - 1) + (1 if step > 0 else -1)
        begin.append(start)
        strides.append(step)
        if stop < 0:
            end_mask |= 1 << axis  # through index 0 (end_mask's end for a negative stride)
            stop = 0
        end.append(stop)
    options = schema.StridedSliceOptionsT()
    options.endMask = end_mask
    arguments = [b.constant(name, int32s(values, "slice indices"))
                 for name, values in (("begin", begin), ("end", end), ("strides", strides))]
    return b.finish(schema.BuiltinOperator.STRIDED_SLICE, [ins[0]] + arguments, outs, ins,
                    schema.BuiltinOptions.StridedSliceOptions, options)
