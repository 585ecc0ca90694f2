"""The ort-webgpu server over the protocol (the shared checks of adapters/tests), and the proof
that its CPU fallback is disabled: a node the WebGPU provider has no kernel for (a UINT8
Concat) must come back `unsupported`, while the same model with the fallback allowed runs,
so this test fails if the option ever stops reaching the session.

    env PYTHONPATH=crates/cli/python python3 -m unittest discover -s adapters/ort_webgpu -t . -v
"""

import os
import subprocess
import unittest
from pathlib import Path

import numpy as np

from adapters.onnxruntime import onnx_model
from adapters.tests import test_adapters

HERE = Path(__file__).resolve().parent

test_adapters.SERVERS["ort-webgpu"] = ("adapters.ort_webgpu.ort_webgpu_backend",)

UINT8_CONCAT = {"join": {"axis": 0, "inputs": [test_adapters.tensor("UINT8", [2]),
                                               test_adapters.tensor("UINT8", [3])],
                         "output": test_adapters.tensor("UINT8", [5])}}


class OrtWebGpuServer(test_adapters.ServerTests, unittest.TestCase):
    name = "ort-webgpu"

    def test_hello_declares_values_only_one_level_every_type_and_the_version(self):
        super().test_hello_declares_values_only_one_level_every_type_and_the_version()
        self.assertIn("Vulkan driver swiftshader", self.hello["device"])
        self.assertIn("CPU fallback disabled", self.hello["device"])

    def test_float16_nan_payloads_and_negative_zero_come_through_bit_for_bit(self):
        # SwiftShader has no shader-f16: the provider cannot hold FLOAT16 there.
        operator = {"join": {"axis": 0, "inputs": [test_adapters.tensor("FLOAT16", [2])] * 2,
                             "output": test_adapters.tensor("FLOAT16", [4])}}
        reply = self.server.ask({"type": "compile", "id": 30, "operator": operator})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("shader-f16", reply["reason"])

    def test_float16_is_refused_without_allocating_the_cases_tensors(self):
        # A 2^28-element FLOAT16 Split (512 MiB, inside the glue's 1 GiB packing bound, which
        # refuses the corpus's 8 GiB one before the provider sees it): the shader-f16 probe
        # runs a two-element model, never the case's own on zeros of its whole size.
        big = test_adapters.tensor("FLOAT16", [16, 16, 256, 4096])
        operator = {"split": {"axis": 1, "input": big,
                              "outputs": [test_adapters.tensor("FLOAT16", [16, 15, 256, 4096]),
                                          test_adapters.tensor("FLOAT16", [16, 1, 256, 4096])]}}
        reply = self.server.ask({"type": "compile", "id": 32, "operator": operator})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("shader-f16", reply["reason"])
        self.assertIn("Program Split requires f16", reply["reason"])

    def test_a_reversal_through_index_0_reads_every_element(self):
        # The provider has no INT32 Slice kernel: FLOAT32 here (a whole reversal is one of the
        # negative steps it gets right; docs/findings/ort-webgpu-slice-negative-step.yaml).
        operator = test_adapters.slice1([0], [4], [-1], [4], [4])
        operator["slice1"]["input"] = test_adapters.tensor("FLOAT32", [4])
        operator["slice1"]["output"] = test_adapters.tensor("FLOAT32", [4])
        source = np.arange(10, 14, dtype="<f4")
        (out,) = self.run_case(9, operator, [source.tobytes()], [bytes(16)])
        self.assertEqual(np.frombuffer(out, "<f4").tolist(), [13, 12, 11, 10])

    def test_a_node_without_a_webgpu_kernel_is_unsupported_not_run_on_the_cpu(self):
        reply = self.server.ask({"type": "compile", "id": 31, "operator": UINT8_CONCAT})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("CPU fallback is disabled", reply["reason"])
        self.assertIn("UINT8", reply["reason"])

    def test_without_the_option_the_same_model_would_run_on_the_cpu(self):
        # The control: what the option prevents. The worker's own session options, less the
        # one entry, accept the UINT8 Concat (it lands on the CPU provider).
        model, _ = onnx_model.model(UINT8_CONCAT)
        script = (
            "import ort from 'onnxruntime-node'; import {SESSION_OPTIONS} from './worker.mjs';"
            "const o = {...SESSION_OPTIONS, extra: {session: {}}};"
            "const chunks = []; for await (const c of process.stdin) chunks.push(c);"
            "await ort.InferenceSession.create(Buffer.concat(chunks), o);"
            "console.log('created'); process.exit(0);")
        done = subprocess.run(["node", "--input-type=module", "-e", script], cwd=HERE,
                              input=model.SerializeToString(), capture_output=True,
                              timeout=120, env=dict(os.environ,
                                                    VK_ICD_FILENAMES="/usr/lib/chromium/vk_swiftshader_icd.json",
                                                    XDG_RUNTIME_DIR="/tmp"))
        self.assertIn(b"created", done.stdout, done.stderr[-2000:])


if __name__ == "__main__":
    unittest.main()
