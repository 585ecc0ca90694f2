#!/usr/bin/env python3
"""A dmlcts backend on IREE (PyPI iree-base-compiler and iree-base-runtime): the operators as
StableHLO, compiled by IREE for its CPU backend (llvm-cpu) or for Vulkan (SPIR-V), and run by
IREE's runtime.

    cargo xtask conformance --backend iree-cpu              # llvm-cpu, the local-task device
    cargo xtask conformance --backend iree-vulkan           # SPIR-V on Mesa's lavapipe
    cargo xtask conformance --backend iree-vulkan@swiftshader   # SPIR-V on SwiftShader
    cargo xtask conformance --backend iree-vulkan@lavapipe25    # SPIR-V on Mesa 25's lavapipe

Each operator is one StableHLO function (MLIR text), compiled with `iree.compiler.compile_str`
at `compile` (a refusal by the compiler is the backend's rejection):

    DML_SPLIT   stablehlo.slice per output along the axis
    DML_JOIN    stablehlo.concatenate along the axis
    DML_SLICE1  stablehlo.reverse over the dimensions with a negative stride, then
                stablehlo.slice with |stride| (as the JAX adapter: the far end of a window,
                offset + size - 1, is index dim - offset - size once reversed)

Every tensor keeps its own element type (ui8 is ui8, f16 is f16): `--iree-input-demote-*` are
off, so FLOAT64 and the 64-bit integers reach the code generators as they are. Strides and
TotalTensorSizeInBytes never reach IREE: the shared glue (adapters/common/dmlcts_adapter.py)
gathers each strided input into a packed array and scatters each packed output.

DMLCTS_IREE_MODULE_CACHE=DIR keeps each compiled module (and each compiler refusal) in DIR,
filed by the SHA-256 of the compiler's version, its flags and the module's text, so a rerun of
the corpus compiles nothing it compiled before; the runtime still runs every case. CI sets it
(the corpus on three IREE targets compiles about 1,470 modules: 24 minutes of the shared
2-core machine cold, 45 s with every module kept).

`--driver` picks the Vulkan driver by its ICD file (the loader reads VK_ICD_FILENAMES when
IREE's Vulkan driver starts), so the device text names the driver that ran each case:

    lavapipe      Debian's mesa-vulkan-drivers (Mesa 22): every SPIR-V capability the types
                  need (Float64, Int64, Float16, Int16, Int8 and 8/16-bit storage), declared to
                  the compiler with --iree-vulkan-target-features
    lavapipe25    Mesa 25's lavapipe, unpacked by `cargo xtask directml setup` into
                  target/directml-stack: the same capabilities (the server re-executes itself
                  with its library path)
    swiftshader   SwiftShader from Debian's chromium-common: 32-bit types only in shaders
                  (no shaderFloat64, shaderInt64, shaderInt16, shaderInt8, 8/16-bit storage);
                  IREE's default target emulates the 8-, 16- and 64-bit integers and float16
                  on 32-bit words, and FLOAT64 it cannot hold: `unsupported`, with the reason
"""

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from adapters.common import dmlcts_adapter as adapter
from adapters.common import dmlcts_shapes as shapes
from adapters.common.vulkan import STACK, driver_environment, driver_version

# The Vulkan drivers `--driver` names: the ICD file, the Debian package it comes from, the
# SPIR-V target features to compile for (None: IREE's default), and the types it cannot hold.
DRIVERS = {
    "lavapipe": {
        "icd": "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        "package": "mesa-vulkan-drivers",
        "features": ("spirv:v1.3,cap:Shader,cap:Float64,cap:Float16,cap:Int64,cap:Int16,"
                     "cap:Int8,cap:StorageBuffer16BitAccess,cap:StorageBuffer8BitAccess"),
        "cannot_hold": {},
    },
    # Mesa 25's lavapipe as `cargo xtask directml setup` unpacks it (target/directml-stack):
    # the same capabilities as Mesa 22's; its library path is set by re-executing the server.
    "lavapipe25": {
        "icd": str(STACK / "lvp25_icd.json"),
        "package": None,
        "features": ("spirv:v1.3,cap:Shader,cap:Float64,cap:Float16,cap:Int64,cap:Int16,"
                     "cap:Int8,cap:StorageBuffer16BitAccess,cap:StorageBuffer8BitAccess"),
        "cannot_hold": {},
    },
    "swiftshader": {
        "icd": "/usr/lib/chromium/vk_swiftshader_icd.json",
        "package": "chromium-common",
        "features": None,
        "cannot_hold": {
            "FLOAT64": "SwiftShader 5.0.0 (chromium-common) has no shaderFloat64, and IREE's "
                       "SPIR-V code generator does not emulate f64 (it fails to convert "
                       "'memref<?xf64>'); FLOAT64 runs on lavapipe (iree-vulkan)",
        },
    },
}

# Set in a server re-executed with its driver's environment.
DRIVER_SET = "DMLCTS_IREE_DRIVER"

# StableHLO's element types, and the IREE runtime's, for each DirectML type.
MLIR_TYPES = {
    "FLOAT64": "f64", "FLOAT32": "f32", "FLOAT16": "f16",
    "INT64": "i64", "INT32": "i32", "INT16": "i16", "INT8": "i8",
    "UINT64": "ui64", "UINT32": "ui32", "UINT16": "ui16", "UINT8": "ui8",
}
HAL_TYPES = {
    "FLOAT64": "FLOAT_64", "FLOAT32": "FLOAT_32", "FLOAT16": "FLOAT_16",
    "INT64": "SINT_64", "INT32": "SINT_32", "INT16": "SINT_16", "INT8": "SINT_8",
    "UINT64": "UINT_64", "UINT32": "UINT_32", "UINT16": "UINT_16", "UINT8": "UINT_8",
}

# Keep every type as the descriptor gives it.
COMMON_FLAGS = ["--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false"]


# DMLCTS_IREE_MODULE_CACHE: a folder that keeps what IREE's compiler made of each module across
# runs (CI keeps one under ~/.cache; unset, nothing is kept). A module is filed under the
# SHA-256 of the compiler's version, its flags and the module's text, so a new compiler or
# target never reads an old module; the runtime still runs every case. `*.vmfb` is a compiled
# module, `*.refused` the compiler's refusal as the harness is told it.
MODULE_CACHE_VARIABLE = "DMLCTS_IREE_MODULE_CACHE"
# A cached file larger than this is not read (a compiled module here is a few kilobytes).
MODULE_CACHE_FILE_LIMIT = 64 << 20


class ModuleCache:
    """Compiled modules and compiler refusals kept as files, written whole (a temporary file
    renamed into place), so a run that dies mid-write leaves no half module behind."""

    def __init__(self, folder, compiler_version, flags, tool=None):
        """`tool`: the iree-compile that compile_str runs when it is not the installed
        package's own (IREE_TOOL_PATH points it elsewhere); None: the package's, which its
        version names."""
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        named = [f"iree-base-compiler {compiler_version}"] + ([f"tool {tool}"] if tool else [])
        self.stamp = "\0".join([*named, *flags]) + "\0"
        self.hits = 0
        self.misses = 0

    def key(self, text):
        return hashlib.sha256((self.stamp + text).encode()).hexdigest()

    def read(self, key):
        """(`vmfb` bytes or None, refusal text or None); both None when nothing is kept."""
        for suffix in (".vmfb", ".refused"):
            path = self.folder / (key + suffix)
            try:
                size = path.stat().st_size if path.is_file() and not path.is_symlink() else 0
                if not 0 < size <= MODULE_CACHE_FILE_LIMIT:
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            self.hits += 1
            if suffix == ".vmfb":
                return data, None
            return None, data.decode("utf-8", "replace")
        self.misses += 1
        return None, None

    def write(self, key, suffix, data):
        name = None
        try:
            with tempfile.NamedTemporaryFile(dir=self.folder, prefix=".tmp-", delete=False) as f:
                name = f.name
                f.write(data)
            os.replace(name, self.folder / (key + suffix))
        except OSError:
            # A cache that cannot be written is only slower; leave no partial file behind.
            if name:
                try:
                    os.unlink(name)
                except OSError:
                    pass


def compiler_refused(error):
    """Whether iree-compile itself refused the module: a CompilerToolError whose exit code
    is a positive one (IREE raises it for any non-zero code, a signal's negative one too)."""
    if type(error).__name__ != "CompilerToolError":
        return False
    code = re.search(r"Error code: (-?\d+)", str(error))
    return bool(code) and int(code.group(1)) > 0


def tensor_type(t):
    return f"tensor<{''.join(f'{n}x' for n in t['sizes'])}{MLIR_TYPES[t['data_type']]}>"


def array(values):
    return f"array<i64{': ' if values else ''}{', '.join(str(v) for v in values)}>"


def slice_op(result, source, source_type, starts, limits, strides, result_type):
    return (f'    {result} = "stablehlo.slice"({source}) {{start_indices = {array(starts)}, '
            f'limit_indices = {array(limits)}, strides = {array(strides)}}} : '
            f'({source_type}) -> {result_type}')


def slice1_body(d):
    """The Slice1's body lines (input %x0, result %r0), and the glue's own refusal of window
    arrays it cannot give one entry per dimension."""
    reversed_dims, starts, limits, steps = shapes.reverse_then_slice(d)
    input_type = tensor_type(d["input"])
    lines, source = [], "%x0"
    if reversed_dims:
        lines.append(f'    %rev = "stablehlo.reverse"(%x0) {{dimensions = {array(reversed_dims)}}}'
                     f' : ({input_type}) -> {input_type}')
        source = "%rev"
    lines.append(slice_op("%r0", source, input_type, starts, limits, steps,
                          tensor_type(d["output"])))
    return lines


def module_text(operator):
    """The StableHLO module for a descriptor: one function, @main."""
    kind, d, inputs, outputs = adapter.tensors(operator)
    arguments = ", ".join(f"%x{i}: {tensor_type(t)}" for i, t in enumerate(inputs))
    result_types = [tensor_type(t) for t in outputs]
    if kind == "split":
        axis, offset, lines = d["axis"], 0, []
        source = d["input"]
        for k, t in enumerate(outputs):
            if axis >= len(t["sizes"]) or len(t["sizes"]) != len(source["sizes"]):
                raise adapter.Rejected("adapter: an output's rank or the axis does not fit "
                                       "the input (StableHLO slices need one entry per "
                                       "dimension)")
            starts = [offset if i == axis else 0 for i in range(len(t["sizes"]))]
            limits = [s + n for s, n in zip(starts, t["sizes"])]
            lines.append(slice_op(f"%r{k}", "%x0", tensor_type(source), starts, limits,
                                  [1] * len(starts), result_types[k]))
            offset += t["sizes"][axis]
    elif kind == "join":
        operands = ", ".join(f"%x{i}" for i in range(len(inputs)))
        operand_types = ", ".join(tensor_type(t) for t in inputs)
        lines = [f'    %r0 = "stablehlo.concatenate"({operands}) {{dimension = {d["axis"]} : i64}}'
                 f' : ({operand_types}) -> {result_types[0]}']
    else:
        lines = slice1_body(d)
    results = ", ".join(f"%r{k}" for k in range(len(outputs)))
    return "\n".join([
        f"func.func @main({arguments}) -> ({', '.join(result_types)}) {{",
        *lines,
        f"    return {results} : {', '.join(result_types)}",
        "}",
    ]) + "\n"


class Iree:
    """IREE's compiler and runtime for one target: llvm-cpu, or vulkan-spirv on one driver."""

    def __init__(self, target, driver):
        import iree.compiler
        import iree.runtime
        self.compiler, self.rt = iree.compiler, iree.runtime
        self.target, self.driver = target, driver
        if target == "llvm-cpu":
            # A generic x86-64 target: the same code on every machine the record runs on.
            self.flags = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
                          "--iree-llvmcpu-target-cpu=generic", *COMMON_FLAGS]
            self.config = self.rt.Config("local-task")
        else:
            features = DRIVERS[driver]["features"]
            self.flags = ["--iree-hal-target-device=vulkan", *COMMON_FLAGS]
            if features:
                self.flags.append(f"--iree-vulkan-target-features={features}")
            self.config = self.rt.Config("vulkan")
        self.device = self.config.device
        folder = os.environ.get(MODULE_CACHE_VARIABLE, "")
        if folder:
            from importlib.metadata import version
            from iree.compiler.tools.binaries import find_tool
            tool = find_tool("iree-compile") if os.environ.get("IREE_TOOL_PATH") else None
            self.modules = ModuleCache(folder, version("iree-base-compiler"), self.flags,
                                       tool=tool)
        else:
            self.modules = None

    def compile_module(self, text, use_cache=True):
        """The compiled module's bytes, from the cache where it holds them."""
        key = self.modules.key(text) if self.modules else None
        if key and use_cache:
            vmfb, refusal = self.modules.read(key)
            if refusal is not None:
                raise adapter.Rejected(refusal)
            if vmfb is not None:
                return vmfb
        try:
            vmfb = self.compiler.compile_str(text, extra_args=self.flags)
        except Exception as e:  # the compiler's refusal (its diagnostics are the reason)
            rejection = adapter.framework_rejection("iree", e)
            # Only the compiler's own diagnostics are kept (it exited with an error code): a
            # tool killed by a signal (a negative code) may do better next time.
            if key and compiler_refused(e):
                self.modules.write(key, ".refused", rejection.reason.encode())
            raise rejection from None
        if key:
            self.modules.write(key, ".vmfb", vmfb)
        return vmfb

    def compile(self, operator):
        _, _, inputs, outputs = adapter.tensors(operator)
        cannot_hold = DRIVERS[self.driver]["cannot_hold"] if self.driver else {}
        for t in inputs + outputs:
            if t["data_type"] in cannot_hold:
                raise adapter.Unsupported(cannot_hold[t["data_type"]])
        text = module_text(operator)
        try:
            return self.load(self.compile_module(text)), inputs, outputs
        except adapter.Rejected:
            raise
        except Exception:
            if not self.modules:
                raise
            # A kept module the runtime cannot load (a damaged file): compile it again.
            return self.load(self.compile_module(text, use_cache=False)), inputs, outputs

    def load(self, vmfb):
        context = self.rt.SystemContext(config=self.config)
        context.add_vm_module(self.rt.VmModule.copy_buffer(context.instance, vmfb))
        return context.modules.module.main

    def upload(self, t, array):
        return self.device.allocator.allocate_buffer_copy(
            memory_type=self.rt.MemoryType.DEVICE_LOCAL, allowed_usage=self.rt.BufferUsage.DEFAULT,
            device=self.device, buffer=np.ascontiguousarray(array),
            element_type=getattr(self.rt.HalElementType, HAL_TYPES[t["data_type"]]))

    def download(self, t, result):
        """The result's elements through a staging buffer of our own. DeviceArray.to_host
        imports a numpy allocation into Vulkan, which lavapipe refuses unless it is 4096-byte
        aligned (IREE 3.13.0's Python runtime does not align it)."""
        rt = self.rt
        view = result._buffer_view if hasattr(result, "_buffer_view") else result
        source = view.get_buffer()
        size = source.byte_length()
        shape, dtype = tuple(t["sizes"]), adapter.dtype(t)
        if size == 0:
            return np.zeros(shape, dtype)
        staging = self.device.allocator.allocate_buffer(
            memory_type=rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE,
            allowed_usage=rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING,
            allocation_size=size)
        semaphore = self.device.create_semaphore(0)
        self.device.queue_copy(source, staging,
                               wait_semaphores=rt.HalFence.create_at(semaphore, 0),
                               signal_semaphores=rt.HalFence.create_at(semaphore, 1))
        rt.HalFence.create_at(semaphore, 1).wait()
        return np.array(staging.map().asarray(shape, dtype))

    def run(self, program, arrays):
        main, inputs, outputs = program
        results = main(*[self.upload(t, a) for t, a in zip(inputs, arrays)])
        if len(outputs) == 1 or not isinstance(results, (tuple, list)):
            results = [results]
        return [self.download(t, r) for t, r in zip(outputs, results)]

    def describe(self):
        from importlib.metadata import version
        versions = (f"IREE version {version('iree-base-runtime')} (iree-base-compiler "
                    f"{version('iree-base-compiler')}, iree-base-runtime "
                    f"{version('iree-base-runtime')})")
        if self.target == "llvm-cpu":
            where = "llvm-cpu (generic x86-64) on the local-task device"
        else:
            found = self.rt.get_driver("vulkan").query_available_devices()
            names = "; ".join(str(d.get("name", d)) for d in found) or "no device"
            package = DRIVERS[self.driver]["package"]
            if package:
                installed = f"{package} {debian_version(package)}"
            else:
                installed = driver_version(self.driver)
            where = (f"vulkan-spirv on {names} (driver {self.driver}: "
                     f"{installed}, ICD {DRIVERS[self.driver]['icd']})")
        return f"{versions}, {where} (numpy {np.__version__}, Python {sys.version.split()[0]})"


def debian_version(package):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True,
                              text=True, timeout=10).stdout.strip() or "not installed"
    except (OSError, subprocess.SubprocessError):
        return "unknown version"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", choices=["llvm-cpu", "vulkan"], default="llvm-cpu")
    parser.add_argument("--driver", choices=sorted(DRIVERS), default=None,
                        help="the Vulkan driver (ICD) to run on (--target vulkan)")
    args = parser.parse_args()
    if args.target == "vulkan":
        driver = args.driver or "lavapipe"
        icd = DRIVERS[driver]["icd"]
        if not Path(icd).is_file():
            where = (f"Debian package {DRIVERS[driver]['package']}" if DRIVERS[driver]["package"]
                     else "`cargo xtask directml setup` unpacks Mesa 25 there")
            sys.exit(f"iree: no ICD file {icd} ({where})")
        if driver == "lavapipe25" and os.environ.get(DRIVER_SET) != driver:
            # The loader reads LD_LIBRARY_PATH at process start: re-execute with Mesa 25's.
            environment = driver_environment(driver)
            environment[DRIVER_SET] = driver
            # As this server was started: a module of the adapters package (python3 -m).
            os.execve(sys.executable, [sys.executable, "-m", __spec__.name, *sys.argv[1:]],
                      environment)
        # Before IREE's Vulkan driver starts: the loader sees this one driver only.
        os.environ["VK_ICD_FILENAMES"] = icd
        args.driver = driver
    iree = Iree(args.target, args.driver)
    # One name for every target and driver: expectations entries are `backend: iree`, told
    # apart by the device text (llvm-cpu or vulkan-spirv, and the driver) where they differ.
    adapter.serve("iree", iree.describe(), iree.compile, iree.run)


if __name__ == "__main__":
    main()
