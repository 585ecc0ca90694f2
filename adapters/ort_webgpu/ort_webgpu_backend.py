#!/usr/bin/env python3
"""A dmlcts backend on ONNX Runtime's WebGPU execution provider (npm onnxruntime-node 1.30.0:
Dawn on Vulkan), with the CPU fallback disabled.

    cargo xtask conformance --backend ort-webgpu                # Dawn on SwiftShader
    cargo xtask conformance --backend ort-webgpu@lavapipe25     # Dawn on Mesa 25's lavapipe

This server speaks the dmlcts protocol and builds each operator's one-node opset-18 ONNX model
with the ONNX Runtime adapter's own builder (adapters/onnxruntime: Split, Concat, Slice; the
same translation the `onnxruntime` backend is judged by). A Node.js worker (worker.mjs,
`npm ci --ignore-scripts` in this folder) creates an InferenceSession on `webgpu` with
`session.disable_cpu_ep_fallback = '1'` and runs it. Without that option a node the WebGPU
provider has no kernel for silently runs on the CPU provider; with it, the session fails, and
that failure is `unsupported` here (the type is one the WebGPU path cannot hold), never a pass.

`--driver` picks the Vulkan driver by its ICD file (VK_ICD_FILENAMES in the worker's
environment; Dawn sees that one driver only; the table is adapters/common/vulkan.py):

    swiftshader   SwiftShader from Debian's chromium-common (no shader-f16: FLOAT16 Concat,
                  Split and Slice are refused by the provider at the first run: `unsupported`)
    lavapipe25    Mesa 25's lavapipe, as `cargo xtask directml setup` unpacks it into
                  target/directml-stack (Dawn refuses Debian's Mesa 22 lavapipe: "Vulkan
                  shaderUniform*ArrayDynamicIndexing required", no adapter)

Strides and TotalTensorSizeInBytes never reach ONNX Runtime: the shared glue
(adapters/common/dmlcts_adapter.py) gathers and scatters.
"""

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

from adapters.common import dmlcts_adapter as adapter
from adapters.common.vulkan import DRIVERS, driver_environment, driver_version
from adapters.onnxruntime import onnx_model as onnx_models

HERE = Path(__file__).resolve().parent

# numpy dtypes as onnxruntime-node's tensor types.
ORT_TYPES = {
    "<f8": "float64", "<f4": "float32", "<f2": "float16", "<i8": "int64", "<i4": "int32",
    "<i2": "int16", "|i1": "int8", "<u8": "uint64", "<u4": "uint32", "<u2": "uint16",
    "|u1": "uint8",
}
NUMPY_TYPES = {v: k for k, v in ORT_TYPES.items()}

NO_CPU_FALLBACK = "fallback to CPU EP has been explicitly disabled"
NO_SHADER_F16 = "requires f16 but the device does not support it"


class Worker:
    """The Node.js worker, over its pipes (dmlcts frames)."""

    def __init__(self, environment):
        self.process = subprocess.Popen(
            ["node", str(HERE / "worker.mjs")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            cwd=HERE, env=environment)

    def ask(self, header, payloads=()):
        adapter.write_frame(self.process.stdin, header, payloads)
        if header["type"] == "release":
            return None, []
        reply = adapter.read_frame(self.process.stdout)
        if reply is None:
            raise RuntimeError(f"the Node.js worker exited (status {self.process.poll()})")
        return reply


# Sessions kept alive in the worker at once: the glue has no release hook, and the harness
# compiles and runs one case at a time, so older sessions are released as new ones come.
LIVE_SESSIONS = 16


class OrtWebGpu:
    def __init__(self, driver):
        self.driver = driver
        self.sessions = []
        self.next_key = 0
        self.float16_refusals = {}
        self.worker = Worker(driver_environment(driver))
        info, _ = self.worker.ask({"type": "info"})
        self.info = info

    def compile(self, operator):
        model, names = onnx_models.model(operator)
        _, _, inputs, _ = adapter.tensors(operator)
        self.next_key += 1
        key = self.next_key
        reply, _ = self.worker.ask({"type": "session", "id": key}, [model.SerializeToString()])
        if reply["type"] != "ok":
            message = " ".join(str(reply.get("message")).split())[:400]
            if NO_CPU_FALLBACK in message:
                types = sorted({t["data_type"] for t in inputs})
                raise adapter.Unsupported(
                    f"ONNX Runtime's WebGPU provider has no kernel for this node on "
                    f"{', '.join(types)} and the CPU fallback is disabled: {message}")
            raise adapter.Rejected(f"onnxruntime-webgpu: {message}")
        program = (key, names, inputs)
        self.sessions.append(program)
        while len(self.sessions) > LIVE_SESSIONS:
            self.release(self.sessions[0])
        if any(t["data_type"] == "FLOAT16" for t in inputs):
            refusal = self.float16_refusal(operator)
            if refusal is not None:
                self.release(program)
                raise adapter.Unsupported(refusal)
        return program

    def float16_refusal(self, operator):
        """Why this device cannot run the operator's kind on FLOAT16, or None. The provider
        checks shader-f16 only when it generates the shader, at the first run, so a run of a
        two-element model of the same kind tells (once per kind): running the case's own
        model on zeros would allocate its whole input (8 GiB for the corpus's largest)."""
        kind = next(iter(operator))
        if kind not in self.float16_refusals:
            self.float16_refusals[kind] = None
            half = {"data_type": "FLOAT16", "strides": None, "total_tensor_size_in_bytes": 4}
            one = dict(half, sizes=[1], total_tensor_size_in_bytes=2)
            two = dict(half, sizes=[2])
            tiny = {
                "split": {"axis": 0, "input": two, "outputs": [one, one]},
                "join": {"axis": 0, "inputs": [one, one], "output": two},
                "slice1": {"dimension_count": 1, "input_window_offsets": [0],
                           "input_window_sizes": [2], "input_window_strides": [1],
                           "input": two, "output": two},
            }[kind]
            model, names = onnx_models.model({kind: tiny})
            _, _, inputs, _ = adapter.tensors({kind: tiny})
            self.next_key += 1
            probe = (self.next_key, names, inputs)
            reply, _ = self.worker.ask({"type": "session", "id": probe[0]},
                                       [model.SerializeToString()])
            if reply["type"] != "ok":
                raise RuntimeError(f"onnxruntime-webgpu: the FLOAT16 probe's session failed: "
                                   f"{' '.join(str(reply.get('message')).split())[:300]}")
            try:
                self.run(probe, [np.zeros(t["sizes"], adapter.dtype(t)) for t in inputs])
            except RuntimeError as e:
                if NO_SHADER_F16 not in str(e):
                    raise
                self.float16_refusals[kind] = (
                    f"the Vulkan device has no shader-f16, which ONNX Runtime's WebGPU "
                    f"provider needs for FLOAT16: {str(e)[:300]}")
            finally:
                self.worker.ask({"type": "release", "id": probe[0]})
        return self.float16_refusals[kind]

    def run(self, program, arrays):
        key, names, inputs = program
        described = [{"name": n, "dtype": ORT_TYPES[a.dtype.str], "dims": list(a.shape)}
                     for n, a in zip(names, arrays)]
        reply, payloads = self.worker.ask({"type": "run", "id": key, "inputs": described},
                                          [np.ascontiguousarray(a).tobytes() for a in arrays])
        if reply["type"] != "ok":
            raise RuntimeError(f"onnxruntime-webgpu: {reply.get('message')}")
        return [np.frombuffer(p, NUMPY_TYPES[o["dtype"]]).reshape(o["dims"])
                for o, p in zip(reply["outputs"], payloads)]

    def release(self, program):
        if program in self.sessions:
            self.sessions.remove(program)
        self.worker.ask({"type": "release", "id": program[0]})

    def describe(self):
        versions = self.info.get("versions", {})
        icd = DRIVERS[self.driver]["icd"]
        return (f"ONNX Runtime version {versions.get('node')} (onnxruntime-node "
                f"{versions.get('node')}, onnxruntime-common {versions.get('common')}, Node.js "
                f"{self.info.get('node')}), WebGPU execution provider (Dawn) on Vulkan driver "
                f"{self.driver}: "
                f"{' '.join(p for p in (DRIVERS[self.driver]['package'], driver_version(self.driver)) if p)}"
                f", ICD {icd}; CPU fallback "
                f"disabled (numpy {np.__version__}, Python {sys.version.split()[0]})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", choices=sorted(DRIVERS), default="swiftshader")
    args = parser.parse_args()
    backend = OrtWebGpu(args.driver)
    # One name for every driver: expectations entries tell drivers apart by the device text.
    adapter.serve("ort-webgpu", backend.describe(), backend.compile, backend.run)


if __name__ == "__main__":
    main()
