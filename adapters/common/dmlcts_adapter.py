"""What the framework adapters (adapters/onnxruntime, adapters/jax, ...) share: the dmlcts
protocol (docs/backend-protocol.md) and the strided gather/scatter between the harness's
buffers and the framework's packed arrays. Nothing here computes a value.

The one copy of that code is the Python package's public module `dmlcts.backend`
(crates/cli/python/dmlcts/backend.py, shipped in the `dmlcts` wheel). This module imports it
by its package name, with crates/cli/python on PYTHONPATH (backends.yaml starts every server
as `env PYTHONPATH=crates/cli/python python3 -m adapters.X.Y` from the repository root), and
names what the adapters use. So the adapters and the package cannot drift apart; and an
installed `dmlcts` wheel of another version is never used instead: an import that found one
fails here, naming it.

An adapter gives `serve` two functions:

    compile(operator) -> anything the adapter needs later, or raises `Rejected` (the framework
        refused the descriptor) or `Unsupported` (the framework cannot express a valid one)
    run(compiled, arrays) -> the output arrays, packed, in the operator's output order

and `serve(name, device, compile, run)` does the rest: it answers `hello` (values-only profile,
level 4_1), checks the layout rules the glue itself needs (`layout_problem`), gathers each
input into a packed numpy array of its own dtype, and scatters each returned array into its
output buffer. Bytes no element addresses are left as the harness sent them.
"""

from pathlib import Path

# This checkout's copy: the adapters speak the protocol of the harness built beside them.
CHECKOUT_BACKEND = (Path(__file__).resolve().parents[2] / "crates" / "cli" / "python"
                    / "dmlcts" / "backend.py")
HOW = ("run the adapters from the repository root with crates/cli/python on PYTHONPATH, as "
       "backends.yaml does: env PYTHONPATH=crates/cli/python python3 -m adapters.jax.jax_backend")

try:
    from dmlcts import backend as _backend
except ImportError as e:
    raise ImportError(f"adapters: no module dmlcts.backend ({e}): {HOW}") from e
if Path(_backend.__file__).resolve() != CHECKOUT_BACKEND:
    raise ImportError(f"adapters: dmlcts.backend came from {_backend.__file__}, not this "
                      f"checkout's {CHECKOUT_BACKEND}: {HOW}")

from dmlcts.backend import (
    DTYPES,
    LEVEL,
    LEVELS,
    PROTOCOL,
    Rejected,
    Unsupported,
    dtype,
    framework_rejection,
    gather,
    layout_problem,
    read_exact,
    read_frame,
    scatter,
    serve,
    strides_of,
    tensors,
    view,
    write_frame,
)

__all__ = [
    "PROTOCOL", "DTYPES", "LEVEL", "LEVELS", "Rejected", "Unsupported",
    "read_exact", "read_frame", "write_frame",
    "dtype", "strides_of", "tensors", "layout_problem", "view", "gather", "scatter",
    "serve", "framework_rejection",
]
