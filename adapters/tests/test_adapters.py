"""Every adapter server, driven over the protocol the way the harness drives them, on what the
corpus cannot send: malformed descriptors, unknown messages, a level not offered, an execute
for an unknown id. Each must answer and keep serving, never die. Plus the glue's own rules,
the compile cache, and the translations a corpus pass alone would not pin down (ONNX's
INT64_MIN end, XLA's reversed starts, LiteRT's end_mask, TVM's and MLX's ends before index 0).

    env PYTHONPATH=crates/cli/python python3 -m unittest discover -s adapters/tests -t . -v

(from the repository root, as every adapters test: adapters/README.md).
"""

import os
import subprocess
import sys
import unittest
from pathlib import Path

import numpy as np

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes

ADAPTERS = Path(__file__).resolve().parents[1]
ROOT = ADAPTERS.parent

# Each backend name: its server's module and arguments, as backends.yaml starts it.
SERVERS = {
    "onnxruntime": ("adapters.onnxruntime.onnxruntime_backend",),
    "onnx-reference": ("adapters.onnxruntime.onnx_reference_backend",),
    "jax": ("adapters.jax.jax_backend",),
    "openvino": ("adapters.openvino.openvino_backend",),
    "openvino-reference": ("adapters.openvino.openvino_backend", "--reference"),
    "litert": ("adapters.litert.litert_backend",),
    "litert-ref": ("adapters.litert.litert_backend", "--ref"),
    "tvm": ("adapters.tvm.tvm_backend",),
    "mlx": ("adapters.mlx.mlx_backend",),
}


def tensor(data_type, sizes, strides=None, total=None):
    size = np.dtype(adapter.DTYPES[data_type]).itemsize
    if total is None:
        total = size * int(np.prod(sizes))
    return {"data_type": data_type, "sizes": sizes, "strides": strides,
            "total_tensor_size_in_bytes": total}


def slice1(offsets, sizes, strides, input_sizes, output_sizes):
    return {"slice1": {"dimension_count": len(offsets), "input_window_offsets": offsets,
                       "input_window_sizes": sizes, "input_window_strides": strides,
                       "input": tensor("INT32", input_sizes),
                       "output": tensor("INT32", output_sizes)}}


def server_command(module, *args):
    """A server as backends.yaml starts it: `python3 -m MODULE ARGS` in the repository root
    (run with it as the working folder), the checkout's dmlcts.backend on PYTHONPATH."""
    return [sys.executable, "-m", module, *args]


def server_environment():
    """This environment with crates/cli/python first on PYTHONPATH (as backends.yaml sets it)."""
    paths = [str(ROOT / "crates" / "cli" / "python"), os.environ.get("PYTHONPATH")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))


class Server:
    def __init__(self, module, *args):
        self.process = subprocess.Popen(server_command(module, *args), cwd=ROOT,
                                        env=server_environment(), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE)

    def ask(self, header, payloads=()):
        adapter.write_frame(self.process.stdin, header, payloads)
        return adapter.read_frame(self.process.stdout)

    def close(self):
        reply = self.ask({"type": "shutdown"})
        self.process.stdin.close()
        self.process.stdout.close()
        code = self.process.wait(timeout=30)
        return reply, code


class ServerTests:
    """Mixed into one TestCase per adapter below."""

    name = None

    @classmethod
    def setUpClass(cls):
        cls.server = Server(*SERVERS[cls.name])
        cls.hello = cls.server.ask({"type": "hello", "protocol": 1})[0]

    @classmethod
    def tearDownClass(cls):
        reply, code = cls.server.close()
        assert reply[0]["type"] == "bye" and code == 0, (reply, code)

    def test_hello_declares_values_only_one_level_every_type_and_the_version(self):
        self.assertEqual(self.hello["name"], self.name)
        self.assertEqual(self.hello["profile"], "values-only")
        self.assertEqual(self.hello["feature_level"], "4_1")
        self.assertNotIn("feature_levels", self.hello)
        self.assertEqual(self.hello["data_types"], list(adapter.DTYPES))
        self.assertRegex(self.hello["device"], r"version \d+\.\d+\.\d+")

    def test_an_input_too_large_to_pack_is_unsupported_with_the_bound_named(self):
        # A broadcast input of 2^32 - 1 elements: a few bytes to the harness, 16 GiB packed.
        operator = {"slice1": {"dimension_count": 4, "input_window_offsets": [0, 0, 0, 0],
                               "input_window_sizes": [1, 1, 1, 1],
                               "input_window_strides": [1, 1, 1, 1],
                               "input": tensor("FLOAT32", [1, 1, 65537, 65535], [0, 0, 1, 0],
                                               total=262148),
                               "output": tensor("FLOAT32", [1, 1, 1, 1])}}
        reply = self.server.ask({"type": "compile", "id": 30, "operator": operator})[0]
        self.assertEqual((reply["type"], reply["id"]), ("unsupported", 30), reply)
        self.assertIn("past the glue's bound of 1073741824", reply["reason"])

    def test_malformed_descriptors_are_rejected_and_the_server_keeps_serving(self):
        for i, operator in enumerate([{"split": {"axis": 0}}, {"pad": {}}, {}, {"join": None}]):
            reply = self.server.ask({"type": "compile", "id": 100 + i, "operator": operator})[0]
            self.assertEqual((reply["type"], reply["id"]), ("rejected", 100 + i), reply)
        reply = self.server.ask({"type": "frobnicate", "id": 5})[0]
        self.assertEqual(reply["type"], "error")
        self.assertIn("frobnicate", reply["message"])
        reply = self.server.ask({"type": "execute", "id": 999, "inputs": 0, "outputs": 0})[0]
        self.assertEqual((reply["type"], reply["id"]), ("error", 999))
        reply = self.server.ask({"type": "compile", "id": 6, "feature_level": "1_0",
                                 "operator": slice1([0], [2], [1], [2], [2])})[0]
        self.assertEqual(reply["type"], "error")
        self.assertIn("1_0", reply["message"])

    def test_the_glue_rejects_a_stride_count_and_a_buffer_too_small_with_their_rules(self):
        operator = slice1([0], [2], [1], [2], [2])
        operator["slice1"]["input"]["strides"] = [1, 1]
        reply = self.server.ask({"type": "compile", "id": 7, "operator": operator})[0]
        self.assertEqual((reply["type"], reply["rule"]), ("rejected", "tensor.strides_count"))
        operator = slice1([0], [2], [1], [2], [2])
        operator["slice1"]["output"] = tensor("INT32", [2], [3], 12)  # element 1 at bytes 12..16
        reply = self.server.ask({"type": "compile", "id": 8, "operator": operator})[0]
        self.assertEqual((reply["type"], reply["rule"]),
                         ("rejected", "tensor.total_size_minimum"))

    def run_case(self, rid, operator, inputs, outputs):
        reply = self.server.ask({"type": "compile", "id": rid, "operator": operator})[0]
        self.assertEqual(reply["type"], "accepted", reply)
        header, payloads = self.server.ask(
            {"type": "execute", "id": rid, "inputs": len(inputs), "outputs": len(outputs)},
            inputs + outputs)
        self.assertEqual(header["type"], "executed", header)
        adapter.write_frame(self.server.process.stdin, {"type": "release", "id": rid})
        return payloads

    def test_a_reversal_through_index_0_reads_every_element(self):
        # Window [0, 4) read backwards: the ONNX end is INT64_MIN, XLA's start is 0 reversed,
        # LiteRT's end is end_mask's, TVM's -5, MLX's None.
        source = np.arange(10, 14, dtype="<i4")
        (out,) = self.run_case(9, slice1([0], [4], [-1], [4], [4]),
                               [source.tobytes()], [bytes(16)])
        self.assertEqual(np.frombuffer(out, "<i4").tolist(), [13, 12, 11, 10])
        # Every other element from the far end, stopping before index 0: 13, 11.
        (out,) = self.run_case(12, slice1([0], [4], [-2], [4], [2]),
                               [source.tobytes()], [bytes(8)])
        self.assertEqual(np.frombuffer(out, "<i4").tolist(), [13, 11])

    def test_a_second_descriptor_with_the_same_shapes_and_another_layout_runs_on_its_own(self):
        # Same framework key (the cache may reuse the module), another input layout: the
        # glue's gather, not the cached module, decides which elements are read.
        source = np.array([0, 1, 2, 3, 4, 5], dtype="<i4")
        packed = {"join": {"axis": 0, "inputs": [tensor("INT32", [3]), tensor("INT32", [3])],
                           "output": tensor("INT32", [6])}}
        (out,) = self.run_case(13, packed, [source[:3].tobytes(), source[3:].tobytes()],
                               [bytes(24)])
        self.assertEqual(np.frombuffer(out, "<i4").tolist(), [0, 1, 2, 3, 4, 5])
        strided = {"join": {"axis": 0, "inputs": [tensor("INT32", [3], [2], 20),
                                                  tensor("INT32", [3])],
                            "output": tensor("INT32", [6])}}
        (out,) = self.run_case(14, strided, [source[:5].tobytes(), source[3:].tobytes()],
                               [bytes(24)])
        self.assertEqual(np.frombuffer(out, "<i4").tolist(), [0, 2, 4, 3, 4, 5])

    def test_strided_layouts_are_gathered_and_scattered_leaving_holes_untouched(self):
        # Split a 2x3 input (row stride 4: a hole after each row) on axis 1 into 2x1 and 2x2;
        # the second output has row stride 3, so its element slots 2 and 5 are never written.
        source = np.array([0, 1, 2, -1, 3, 4, 5, -1], dtype="<i4")
        operator = {"split": {"axis": 1, "input": tensor("INT32", [2, 3], [4, 1], 32),
                              "outputs": [tensor("INT32", [2, 1]),
                                          tensor("INT32", [2, 2], [3, 1], 20)]}}
        first, second = self.run_case(10, operator, [source.tobytes()],
                                      [bytes(8), b"\xee" * 20])
        self.assertEqual(np.frombuffer(first, "<i4").tolist(), [0, 3])
        sentinel = int(np.frombuffer(b"\xee" * 4, "<i4")[0])
        self.assertEqual(np.frombuffer(second, "<i4").tolist(), [1, 2, sentinel, 4, 5])

    def test_float16_nan_payloads_and_negative_zero_come_through_bit_for_bit(self):
        bits = np.array([0x7E01, 0x7C01, 0x8000, 0xFC02], dtype="<u2")
        operator = {"join": {"axis": 0, "inputs": [tensor("FLOAT16", [2]), tensor("FLOAT16", [2])],
                             "output": tensor("FLOAT16", [4])}}
        (out,) = self.run_case(11, operator, [bits[:2].tobytes(), bits[2:].tobytes()],
                               [bytes(8)])
        self.assertEqual(out, bits.tobytes())


class OnnxRuntimeServer(ServerTests, unittest.TestCase):
    name = "onnxruntime"


class OnnxReferenceServer(ServerTests, unittest.TestCase):
    name = "onnx-reference"


class JaxServer(ServerTests, unittest.TestCase):
    name = "jax"


class OpenVinoServer(ServerTests, unittest.TestCase):
    name = "openvino"

    def test_float16_nan_payloads_and_negative_zero_come_through_bit_for_bit(self):
        # The CPU plugin's known difference (docs/findings/openvino-cpu-float16-signalling-
        # nan-quieted.yaml): the signalling NaN 0x7C01 comes back quiet, the rest unchanged.
        # When this starts to fail, the finding is stale.
        bits = np.array([0x7E01, 0x7C01, 0x8000, 0xFC02], dtype="<u2")
        operator = {"join": {"axis": 0, "inputs": [tensor("FLOAT16", [2]), tensor("FLOAT16", [2])],
                             "output": tensor("FLOAT16", [4])}}
        (out,) = self.run_case(11, operator, [bits[:2].tobytes(), bits[2:].tobytes()],
                               [bytes(8)])
        self.assertEqual(np.frombuffer(out, "<u2").tolist(), [0x7E01, 0x7E01, 0x8000, 0xFE02])


class OpenVinoReferenceServer(ServerTests, unittest.TestCase):
    name = "openvino-reference"


class LiteRtServer(ServerTests, unittest.TestCase):
    name = "litert"

    def test_a_type_the_kernel_refuses_is_unsupported_with_the_kernel_named(self):
        operator = {"split": {"axis": 0, "input": tensor("UINT16", [2]),
                              "outputs": [tensor("UINT16", [1]), tensor("UINT16", [1])]}}
        reply = self.server.ask({"type": "compile", "id": 20, "operator": operator})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("SPLIT_V", reply["reason"])
        self.assertIn("UINT16", reply["reason"])
        reply = self.server.ask({"type": "compile", "id": 21,
                                 "operator": slice1([0], [4], [-(1 << 31)], [4], [1])})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("INT32_MIN", reply["reason"])


class LiteRtReferenceServer(ServerTests, unittest.TestCase):
    name = "litert-ref"


class TvmServer(ServerTests, unittest.TestCase):
    name = "tvm"


class MlxServer(ServerTests, unittest.TestCase):
    name = "mlx"


class CompileCacheTests(unittest.TestCase):
    def test_the_key_is_what_a_framework_sees_strides_and_buffer_sizes_are_not_in_it(self):
        a = slice1([0], [2], [1], [4], [2])
        b = slice1([0], [2], [1], [4], [2])
        b["slice1"]["input"] = tensor("INT32", [4], [3], 40)
        self.assertEqual(shapes.framework_key(a), shapes.framework_key(b))
        for change in (lambda d: d["input"].update(data_type="UINT32"),
                       lambda d: d["input"].update(sizes=[5]),
                       lambda d: d.update(input_window_offsets=[1]),
                       lambda d: d.update(input_window_strides=[-1])):
            c = slice1([0], [2], [1], [4], [2])
            change(c["slice1"])
            self.assertNotEqual(shapes.framework_key(a), shapes.framework_key(c))

    def test_a_hit_reuses_the_module_and_the_oldest_is_dropped_past_capacity(self):
        built = []
        cache = shapes.CompileCache(lambda op: built.append(op) or len(built), capacity=2)
        ops = [slice1([0], [n], [1], [4], [n]) for n in (1, 2, 3)]
        self.assertEqual([cache(ops[0]), cache(ops[1]), cache(ops[0])], [1, 2, 1])
        self.assertEqual((cache.hits, cache.misses), (1, 2))
        cache(ops[2])  # drops ops[1], the least recently used
        self.assertEqual(cache(ops[0]), 1)
        self.assertEqual(cache(ops[1]), 4)

    def test_capacity_0_compiles_every_time_and_a_refusal_is_never_kept(self):
        calls = []
        cache = shapes.CompileCache(lambda op: calls.append(op) or len(calls), capacity=0)
        op = slice1([0], [2], [1], [4], [2])
        self.assertEqual([cache(op), cache(op)], [1, 2])

        def refuse(op):
            calls.append(op)
            raise adapter.Rejected("no")
        cache = shapes.CompileCache(refuse, capacity=4)
        for _ in range(2):
            with self.assertRaises(adapter.Rejected):
                cache(op)
        self.assertEqual(len(calls), 4)
        self.assertEqual(len(cache.modules), 0)


class Glue(unittest.TestCase):
    def test_layout_problem_needs_the_bytes_the_elements_reach_not_the_rounded_minimum(self):
        # 3 INT8 elements: the glue needs 3 bytes; DMLCalcBufferTensorSize would say 4.
        self.assertIsNone(adapter.layout_problem("t", tensor("INT8", [3], None, 3)))
        rule, reason = adapter.layout_problem("t", tensor("INT8", [3], None, 2))
        self.assertEqual(rule, "tensor.total_size_minimum")
        self.assertIn("byte 3", reason)
        # No element, no byte: an empty tensor is the framework's to judge.
        self.assertIsNone(adapter.layout_problem("t", tensor("INT8", [0, 5], None, 0)))

    def test_gather_packs_a_broadcast_input(self):
        t = tensor("UINT16", [2, 3], [0, 1], 6)
        packed = adapter.gather(t, np.array([7, 8, 9], dtype="<u2").tobytes())
        self.assertTrue(packed.flags.c_contiguous)
        self.assertEqual(packed.tolist(), [[7, 8, 9], [7, 8, 9]])

    def test_scatter_refuses_an_array_of_another_shape_or_type(self):
        t = tensor("INT32", [2])
        with self.assertRaisesRegex(RuntimeError, "the descriptor says"):
            adapter.scatter(t, bytearray(8), np.zeros(3, dtype="<i4"))
        with self.assertRaisesRegex(RuntimeError, "the descriptor says"):
            adapter.scatter(t, bytearray(8), np.zeros(2, dtype="<u4"))


if __name__ == "__main__":
    unittest.main()
