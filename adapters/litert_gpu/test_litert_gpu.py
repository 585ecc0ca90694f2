"""The litert-gpu server over the protocol (the shared checks of adapters/tests, on
SwiftShader), and the proof that nothing falls back to the CPU: a model the GPU delegate
refuses (a reversing STRIDED_SLICE) must come back `unsupported` with the delegate's reason,
while the same model with the CPU in the accelerator set compiles, so this test fails if the
server ever lets the CPU in.

    env PYTHONPATH=crates/cli/python python3 -m unittest discover -s adapters/litert_gpu -t . -v
"""

import subprocess
import sys
import unittest

import numpy as np

from adapters.tests import test_adapters

test_adapters.SERVERS["litert-gpu"] = ("adapters.litert_gpu.litert_gpu_backend", "--driver",
                                       "swiftshader")
SWIFTSHADER = {"VK_ICD_FILENAMES": "/usr/lib/chromium/vk_swiftshader_icd.json",
               "XDG_RUNTIME_DIR": "/tmp"}


def reversal():
    operator = test_adapters.slice1([0], [4], [-1], [4], [4])
    operator["slice1"]["input"] = test_adapters.tensor("FLOAT32", [4])
    operator["slice1"]["output"] = test_adapters.tensor("FLOAT32", [4])
    return operator


class LiteRtGpuServer(test_adapters.ServerTests, unittest.TestCase):
    name = "litert-gpu"

    def test_hello_declares_values_only_one_level_every_type_and_the_version(self):
        super().test_hello_declares_values_only_one_level_every_type_and_the_version()
        self.assertIn("LiteRT version 2.3.0", self.hello["device"])
        self.assertIn("Vulkan driver swiftshader", self.hello["device"])
        self.assertIn("no CPU fallback", self.hello["device"])

    def test_a_reversal_through_index_0_reads_every_element(self):
        # The GPU delegate takes no reversing STRIDED_SLICE: unsupported, with its reason.
        reply = self.server.ask({"type": "compile", "id": 40, "operator": reversal()})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("STRIDED_SLICE: Reverse slices are not supported", reply["reason"])
        self.assertIn("Some ops are not accelerated", reply["reason"])

    def test_without_the_gpu_alone_the_same_model_would_run_on_the_cpu(self):
        # The control: the accelerator set with the CPU in it compiles the refused model.
        script = (
            "from adapters.litert import tflite_model;"
            "from ai_edge_litert.compiled_model import CompiledModel;"
            "from ai_edge_litert.hardware_accelerator import HardwareAccelerator as H;"
            "m = CompiledModel.from_buffer(tflite_model.build(%r), hardware_accel=H.GPU | H.CPU);"
            "print('compiled', m.is_fully_accelerated())"
        ) % (reversal(),)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120,
                              cwd=test_adapters.ROOT,
                              env=dict(test_adapters.server_environment(), **SWIFTSHADER))
        self.assertIn(b"compiled False", done.stdout, done.stderr[-2000:])

    def test_strided_layouts_are_gathered_and_scattered_leaving_holes_untouched(self):
        # The shared test's INT32 SPLIT_V is not accelerated; the same layouts in INT8.
        source = np.array([0, 1, 2, -1, 3, 4, 5, -1], dtype="i1")
        t = test_adapters.tensor
        operator = {"split": {"axis": 1, "input": t("INT8", [2, 3], [4, 1], 8),
                              "outputs": [t("INT8", [2, 1]), t("INT8", [2, 2], [3, 1], 5)]}}
        first, second = self.run_case(10, operator, [source.tobytes()],
                                      [bytes(2), b"\xee" * 5])
        self.assertEqual(np.frombuffer(first, "i1").tolist(), [0, 3])
        self.assertEqual(np.frombuffer(second, "i1").tolist(), [1, 2, -18, 4, 5])

    def test_float16_nan_payloads_and_negative_zero_come_through_bit_for_bit(self):
        # Finite values, -0.0 and subnormals do; infinities and NaNs do not on SwiftShader
        # (docs/findings/litert-gpu-float16-infinities-and-nans-become-0x7fff.yaml).
        bits = np.array([0x8000, 0x0001, 0x3E00, 0x8001], dtype="<u2")
        t = test_adapters.tensor
        operator = {"join": {"axis": 0, "inputs": [t("FLOAT16", [2]), t("FLOAT16", [2])],
                             "output": t("FLOAT16", [4])}}
        (out,) = self.run_case(41, operator, [bits[:2].tobytes(), bits[2:].tobytes()],
                               [bytes(8)])
        self.assertEqual(np.frombuffer(out, "<u2").tolist(), bits.tolist())
        specials = np.array([0x7C00, 0xFC00, 0x7E01, 0x7C01], dtype="<u2")
        (out,) = self.run_case(42, operator, [specials[:2].tobytes(), specials[2:].tobytes()],
                               [bytes(8)])
        self.assertEqual(np.frombuffer(out, "<u2").tolist(), [0x7FFF, 0xFFFF, 0x7FFF, 0x7FFF])

    def test_a_type_the_python_tensor_buffer_cannot_write_is_unsupported(self):
        t = test_adapters.tensor
        operator = {"join": {"axis": 0, "inputs": [t("INT16", [2]), t("INT16", [2])],
                             "output": t("INT16", [4])}}
        reply = self.server.ask({"type": "compile", "id": 43, "operator": operator})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("TensorBuffer does not take INT16", reply["reason"])

    def test_a_one_input_concatenation_of_outer_size_1_gives_zeros_the_finding(self):
        # docs/findings/litert-gpu-one-input-concatenation-outer-size-1-zeros.yaml: while this
        # holds, the corpus's case is an expected failure; the day it passes, this test says so.
        t = test_adapters.tensor
        operator = {"join": {"axis": 0, "inputs": [t("FLOAT32", [1, 4])],
                             "output": t("FLOAT32", [1, 4])}}
        source = np.array([1, 2, 3, 4], dtype="<f4")
        (out,) = self.run_case(44, operator, [source.tobytes()], [b"\xee" * 16])
        self.assertEqual(np.frombuffer(out, "<f4").tolist(), [0, 0, 0, 0])


if __name__ == "__main__":
    unittest.main()
