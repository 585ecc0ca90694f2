#!/usr/bin/env python3
"""A dmlcts backend on LiteRT's GPU accelerator (PyPI ai-edge-litert 2.3.0: its WebGPU
accelerator, Dawn on Vulkan), with no CPU fallback.

    cargo xtask conformance --backend litert-gpu                # Dawn on SwiftShader
    cargo xtask conformance --backend litert-gpu@lavapipe25     # Dawn on Mesa 25's lavapipe

Each operator becomes the same one-operator .tflite model the `litert` backend runs
(adapters/litert/tflite_model.py: SPLIT_V, CONCATENATION, STRIDED_SLICE), compiled with
`CompiledModel.from_buffer(..., hardware_accel=HardwareAccelerator.GPU)`: the GPU alone, so an
operator the GPU delegate does not take fails to compile ("Some ops are not accelerated",
or "Failed to modify graph with delegate") instead of running on the CPU; that is
`unsupported` here, with the delegate's own reason from its log, never a pass. Every compiled
model is also checked `is_fully_accelerated()`.

`--driver` picks the Vulkan driver by its ICD file: the server re-executes itself with
VK_ICD_FILENAMES (and, for Mesa 25, LD_LIBRARY_PATH) set, so Dawn sees that one driver only;
the device text names it and its version (ort-webgpu's table too: adapters/common/vulkan.py).

LiteRT prints some of its log to the process's stdout; the protocol's frames go to a copy of
the original stdout and file descriptor 1 is pointed at stderr, so a log line can never land
inside a frame.

Strides and TotalTensorSizeInBytes never reach LiteRT: the shared glue
(adapters/common/dmlcts_adapter.py) gathers and scatters.
"""

import argparse
import os
import sys
import tempfile

from adapters.common.vulkan import DRIVERS, driver_environment, driver_version

DRIVER_SET = "DMLCTS_LITERT_GPU_DRIVER"


def exec_with_driver(driver):
    """Re-executes this server with the driver's environment (the Vulkan loader reads
    VK_ICD_FILENAMES once, when the accelerator starts; setting it in-process is too late
    for LD_LIBRARY_PATH)."""
    environment = driver_environment(driver)
    environment[DRIVER_SET] = driver
    # As this server was started: a module of the adapters package (python3 -m).
    os.execve(sys.executable, [sys.executable, "-m", __spec__.name, "--driver", driver],
              environment)


# Compiled models kept for reuse (the shared cache's default is 256). Each holds its GPU
# buffers: on Mesa 25's lavapipe, with 256 kept, reading back the corpus's two largest Split
# outputs failed after about two minutes with "Failed to lock custom tensor buffer"; with 8
# kept the whole corpus runs. DMLCTS_ADAPTER_CACHE can only lower it.
GPU_MODELS_KEPT = 8

NOT_ACCELERATED = ("Some ops are not accelerated", "Failed to modify graph with delegate")


class StderrCapture:
    """What the library writes to file descriptor 2 while inside the block (the GPU
    delegate names the operations it refuses, and why, only in its log), also passed on."""

    def __enter__(self):
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *_):
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.seek(0)
        self.text = self.file.read(1 << 20).decode("utf-8", "replace")
        self.file.close()
        os.write(2, self.text.encode())

    def refusal(self):
        """The delegate's lines naming what it does not take, joined, or ''."""
        lines = self.text.splitlines()
        for i, line in enumerate(lines):
            if "not supported by GPU delegate" in line:
                named = []
                for follow in lines[i + 1:]:
                    if "operations will run" in follow or not follow.strip():
                        break
                    named.append(follow.strip())
                return " ".join(named)[:300]
        return ""


def serve(driver, frames):
    import ai_edge_litert
    import numpy as np
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator
    from ai_edge_litert.tensor_buffer import TensorBuffer

    from adapters.common import dmlcts_adapter as adapter
    from adapters.common import dmlcts_shapes as shapes
    from adapters.litert import tflite_model

    def buffer_type_refusal(tensors):
        # The Python TensorBuffer writes and reads only some dtypes (ai_edge_litert
        # tensor_buffer.py's table): a type outside it cannot reach the GPU from Python.
        for t in tensors:
            try:
                TensorBuffer._normalize_dtype(adapter.dtype(t))
            except ValueError as e:
                return (f"LiteRT's Python TensorBuffer does not take {t['data_type']} ({e}), "
                        f"so no {t['data_type']} tensor can be handed to the GPU accelerator")
        return None

    def compile(operator):
        _, _, inputs, outputs = adapter.tensors(operator)
        reason = buffer_type_refusal(inputs + outputs)
        if reason:
            raise adapter.Unsupported(reason)
        try:
            content = tflite_model.build(operator)
        except tflite_model.Inexpressible as e:
            raise adapter.Unsupported(str(e)) from None
        capture = StderrCapture()
        try:
            with capture:
                model = CompiledModel.from_buffer(
                    content, hardware_accel=HardwareAccelerator.GPU)
        except Exception as e:
            message = " ".join(str(e).split())[:300]
            if any(m in message for m in NOT_ACCELERATED):
                named = capture.refusal()
                raise adapter.Unsupported(
                    f"LiteRT's GPU accelerator does not take this model and the CPU is not "
                    f"in the accelerator set: {named + '; ' if named else ''}{message}") from None
            raise adapter.framework_rejection("litert-gpu", e) from None
        if not model.is_fully_accelerated():
            raise adapter.Unsupported("LiteRT's GPU accelerator compiled the model but "
                                      "reports it not fully accelerated")
        return model, inputs, outputs

    def run(compiled, arrays):
        model, _, outputs = compiled
        ins = model.create_input_buffers(0)
        outs = model.create_output_buffers(0)
        for buffer, array in zip(ins, arrays):
            buffer.write(np.ascontiguousarray(array))
        model.run_by_index(0, ins, outs)
        return [np.array(buffer.read(int(np.prod(t["sizes"], dtype=np.int64)),
                                     adapter.dtype(t)), copy=True).reshape(t["sizes"])
                for buffer, t in zip(outs, outputs)]

    version = getattr(ai_edge_litert, "__version__", "unknown")
    package = DRIVERS[driver]["package"] or ""
    device = (f"LiteRT version {version}, GPU accelerator (WebGPU, Dawn) alone on Vulkan "
              f"driver {driver}: {' '.join(p for p in (package, driver_version(driver)) if p)}, ICD "
              f"{DRIVERS[driver]['icd']}; no CPU fallback (numpy {np.__version__}, Python "
              f"{sys.version.split()[0]})")
    # One name for every driver: expectations entries tell drivers apart by the device text.
    cache = shapes.CompileCache(compile, capacity=min(shapes.cache_capacity(), GPU_MODELS_KEPT))
    adapter.serve("litert-gpu", device, cache, run, stdout=frames)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", choices=["swiftshader", "lavapipe25"],
                        default="swiftshader")
    args = parser.parse_args()
    if os.environ.get(DRIVER_SET) != args.driver:
        exec_with_driver(args.driver)
    # The frames' own stdout, then fd 1 to stderr for the library's log.
    frames = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(args.driver, frames)


if __name__ == "__main__":
    main()
