"""The IREE servers over the protocol (the shared checks of adapters/tests on iree-cpu), the
StableHLO they write, and what each Vulkan driver cannot hold.

    env PYTHONPATH=crates/cli/python python3 -m unittest discover -s adapters/iree -t . -v
"""

import os
import tempfile
import unittest
from pathlib import Path

from adapters.iree import iree_backend
from adapters.tests import test_adapters

MODULE = "adapters.iree.iree_backend"


class IreeCpuServer(test_adapters.ServerTests, unittest.TestCase):
    name = "iree"

    @classmethod
    def setUpClass(cls):
        cls.server = test_adapters.Server(MODULE)
        cls.hello = cls.server.ask({"type": "hello", "protocol": 1})[0]

    def test_hello_declares_values_only_one_level_every_type_and_the_version(self):
        super().test_hello_declares_values_only_one_level_every_type_and_the_version()
        self.assertIn("IREE version 3.13.0", self.hello["device"])
        self.assertIn("llvm-cpu", self.hello["device"])

    def test_an_unsigned_reversal_is_refused_by_the_compiler(self):
        # docs/findings/iree-unsigned-reverse-does-not-compile.yaml: the adapter passes IREE's
        # refusal on as it comes; the harness then fails the case (an expected failure).
        operator = test_adapters.slice1([0], [2], [-1], [2], [2])
        operator["slice1"]["input"] = test_adapters.tensor("UINT8", [2])
        operator["slice1"]["output"] = test_adapters.tensor("UINT8", [2])
        reply = self.server.ask({"type": "compile", "id": 40, "operator": operator})[0]
        self.assertEqual(reply["type"], "rejected", reply)
        self.assertIn("failed to legalize operation 'linalg.generic'", reply["reason"])


class Translation(unittest.TestCase):
    def test_a_negative_stride_reverses_then_slices_from_the_reversed_window_end(self):
        # Window [1, 4) of 6, stride -2: reads 3, 1; reversed, index 3 is 6 - 1 - 3 = 2.
        operator = test_adapters.slice1([1], [3], [-2], [6], [2])
        text = iree_backend.module_text(operator)
        self.assertIn('"stablehlo.reverse"(%x0) {dimensions = array<i64: 0>}', text)
        self.assertIn("start_indices = array<i64: 2>, limit_indices = array<i64: 5>, "
                      "strides = array<i64: 2>", text)

    def test_a_split_slices_each_output_at_its_running_offset(self):
        operator = {"split": {"axis": 1, "input": test_adapters.tensor("INT16", [2, 5]),
                              "outputs": [test_adapters.tensor("INT16", [2, 2]),
                                          test_adapters.tensor("INT16", [2, 3])]}}
        text = iree_backend.module_text(operator)
        self.assertIn("start_indices = array<i64: 0, 2>, limit_indices = array<i64: 2, 5>", text)
        self.assertIn("-> (tensor<2x2xi16>, tensor<2x3xi16>)", text)

    def test_every_type_keeps_its_own_element_type(self):
        operator = {"join": {"axis": 0, "inputs": [test_adapters.tensor("UINT16", [1])] * 2,
                             "output": test_adapters.tensor("UINT16", [2])}}
        self.assertIn("tensor<2xui16>", iree_backend.module_text(operator))


class ModuleCache(unittest.TestCase):
    """DMLCTS_IREE_MODULE_CACHE: a rerun compiles nothing it compiled before, and what it reads
    back is what the compiler said."""

    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        saved = os.environ.get(iree_backend.MODULE_CACHE_VARIABLE)
        os.environ[iree_backend.MODULE_CACHE_VARIABLE] = self.folder.name
        self.addCleanup(lambda: os.environ.pop(iree_backend.MODULE_CACHE_VARIABLE, None)
                        if saved is None else
                        os.environ.__setitem__(iree_backend.MODULE_CACHE_VARIABLE, saved))
        self.addCleanup(self.folder.cleanup)
        self.iree = iree_backend.Iree("llvm-cpu", None)
        self.compiles = 0
        real = self.iree.compiler.compile_str

        def counted(*args, **kwargs):
            self.compiles += 1
            return real(*args, **kwargs)
        self.iree.compiler = type("Compiler", (), {"compile_str": staticmethod(counted)})

    def files(self, suffix):
        return sorted(p for p in Path(self.folder.name).iterdir() if p.suffix == suffix)

    def test_a_module_compiled_once_runs_again_from_the_cache_with_the_same_values(self):
        operator = test_adapters.slice1([1], [3], [-2], [6], [2])
        arrays = [iree_backend.np.arange(6, dtype=iree_backend.np.int32)]
        first = self.iree.run(self.iree.compile(operator), arrays)
        second = self.iree.run(self.iree.compile(operator), arrays)
        self.assertEqual(self.compiles, 1)
        self.assertEqual((self.iree.modules.hits, self.iree.modules.misses), (1, 1))
        self.assertEqual([a.tolist() for a in first], [[3, 1]])
        self.assertEqual([a.tolist() for a in second], [[3, 1]])
        self.assertEqual(len(self.files(".vmfb")), 1)

    def test_a_compiler_refusal_is_kept_with_its_reason(self):
        operator = test_adapters.slice1([0], [2], [-1], [2], [2])
        operator["slice1"]["input"] = test_adapters.tensor("UINT8", [2])
        operator["slice1"]["output"] = test_adapters.tensor("UINT8", [2])
        reasons = []
        for _ in range(2):
            with self.assertRaises(iree_backend.adapter.Rejected) as refused:
                self.iree.compile(operator)
            reasons.append(refused.exception.reason)
        self.assertEqual(self.compiles, 1)
        self.assertEqual(reasons[0], reasons[1])
        self.assertIn("failed to legalize operation 'linalg.generic'", reasons[0])
        self.assertEqual(len(self.files(".refused")), 1)

    def test_a_damaged_module_is_compiled_again(self):
        operator = test_adapters.slice1([0], [2], [1], [2], [2])
        self.iree.compile(operator)
        [kept] = self.files(".vmfb")
        kept.write_bytes(b"not a module")
        arrays = [iree_backend.np.array([7, 9], dtype=iree_backend.np.int32)]
        self.assertEqual([a.tolist() for a in self.iree.run(self.iree.compile(operator), arrays)],
                         [[7, 9]])
        self.assertEqual(self.compiles, 2)
        self.assertNotEqual(kept.read_bytes(), b"not a module")

    def test_a_compile_killed_by_a_signal_is_not_kept_as_a_refusal(self):
        class CompilerToolError(Exception):
            pass
        killed = CompilerToolError("Error invoking IREE compiler tool iree-compile\n"
                                   "Error code: -9\nDiagnostics:\n")
        refused = CompilerToolError("Error invoking IREE compiler tool iree-compile\n"
                                    "Error code: 1\nDiagnostics:\nerror: failed")
        self.assertFalse(iree_backend.compiler_refused(killed))
        self.assertTrue(iree_backend.compiler_refused(refused))
        self.assertFalse(iree_backend.compiler_refused(RuntimeError("Error code: 1")))

        def dies(*_args, **_kwargs):
            self.compiles += 1
            raise killed
        self.iree.compiler = type("Compiler", (), {"compile_str": staticmethod(dies)})
        operator = test_adapters.slice1([0], [2], [1], [2], [2])
        for _ in range(2):
            with self.assertRaises(iree_backend.adapter.Rejected):
                self.iree.compile(operator)
        self.assertEqual(self.compiles, 2)
        self.assertEqual(self.files(".refused"), [])

    def test_an_empty_or_linked_cache_file_is_not_read(self):
        text = iree_backend.module_text(test_adapters.slice1([0], [2], [1], [2], [2]))
        cache = self.iree.modules
        key = cache.key(text)
        (Path(self.folder.name) / (key + ".vmfb")).write_bytes(b"")
        self.assertEqual(cache.read(key), (None, None))
        (Path(self.folder.name) / (key + ".vmfb")).unlink()
        elsewhere = Path(self.folder.name) / "elsewhere"
        elsewhere.write_bytes(b"not a module")
        (Path(self.folder.name) / (key + ".vmfb")).symlink_to(elsewhere)
        self.assertEqual(cache.read(key), (None, None))

    def test_another_target_or_compiler_version_never_reads_a_kept_module(self):
        text = iree_backend.module_text(test_adapters.slice1([0], [2], [1], [2], [2]))
        cpu = iree_backend.ModuleCache(self.folder.name, "3.13.0", ["--a"])
        self.assertNotEqual(cpu.key(text), iree_backend.ModuleCache(self.folder.name, "3.13.0", ["--b"]).key(text))
        self.assertNotEqual(cpu.key(text), iree_backend.ModuleCache(self.folder.name, "3.14.0", ["--a"]).key(text))
        self.assertEqual(cpu.key(text), iree_backend.ModuleCache(self.folder.name, "3.13.0", ["--a"]).key(text))
        elsewhere = iree_backend.ModuleCache(self.folder.name, "3.13.0", ["--a"], tool="/opt/iree-compile")
        self.assertNotEqual(cpu.key(text), elsewhere.key(text))


@unittest.skipUnless(Path(iree_backend.DRIVERS["swiftshader"]["icd"]).is_file(),
                     "SwiftShader (Debian chromium-common) is not installed")
class SwiftShader(unittest.TestCase):
    def test_float64_is_unsupported_with_the_reason_and_float32_runs(self):
        server = test_adapters.Server(MODULE, "--target", "vulkan", "--driver", "swiftshader")
        hello = server.ask({"type": "hello", "protocol": 1})[0]
        self.assertIn("SwiftShader", hello["device"])
        self.assertIn("driver swiftshader: chromium-common", hello["device"])
        operator = {"join": {"axis": 0, "inputs": [test_adapters.tensor("FLOAT64", [1])] * 2,
                             "output": test_adapters.tensor("FLOAT64", [2])}}
        reply = server.ask({"type": "compile", "id": 1, "operator": operator})[0]
        self.assertEqual(reply["type"], "unsupported", reply)
        self.assertIn("shaderFloat64", reply["reason"])
        operator = {"join": {"axis": 0, "inputs": [test_adapters.tensor("FLOAT32", [1])] * 2,
                             "output": test_adapters.tensor("FLOAT32", [2])}}
        reply = server.ask({"type": "compile", "id": 2, "operator": operator})[0]
        self.assertEqual(reply["type"], "accepted", reply)
        header, payloads = server.ask({"type": "execute", "id": 2, "inputs": 2, "outputs": 1},
                                      [b"\x00\x00\x80\x3f", b"\x00\x00\x00\xc0", bytes(8)])
        self.assertEqual(payloads, [b"\x00\x00\x80\x3f\x00\x00\x00\xc0"], header)
        reply, code = server.close()
        self.assertEqual((reply[0]["type"], code), ("bye", 0))


if __name__ == "__main__":
    unittest.main()
