"""What the framework adapters (adapters/onnxruntime, adapters/jax) share: the dmlcts protocol
(docs/backend-protocol.md) and the strided gather/scatter between the harness's buffers and
the framework's packed arrays. Nothing here computes a value.

The one copy of that code is the Python package's public module `dmlcts.backend`
(crates/cli/python/dmlcts/backend.py, shipped in the `dmlcts` wheel); this file loads that
module from this checkout by its path and re-exports its names, so the adapters and the
package cannot drift apart, and an installed `dmlcts` wheel of another version is never
picked up instead.

An adapter gives `serve` two functions:

    compile(operator) -> anything the adapter needs later, or raises `Rejected` (the framework
        refused the descriptor) or `Unsupported` (the framework cannot express a valid one)
    run(compiled, arrays) -> the output arrays, packed, in the operator's output order

and `serve(name, device, compile, run)` does the rest: it answers `hello` (values-only profile,
level 4_1), checks the layout rules the glue itself needs (`layout_problem`), gathers each
input into a packed numpy array of its own dtype, and scatters each returned array into its
output buffer. Bytes no element addresses are left as the harness sent them.
"""

import importlib.util
import sys
from pathlib import Path

_SOURCE = Path(__file__).resolve().parents[2] / "crates" / "cli" / "python" / "dmlcts" / "backend.py"
_NAME = "dmlcts_adapter._backend"

if _NAME in sys.modules:
    _backend = sys.modules[_NAME]
else:
    _spec = importlib.util.spec_from_file_location(_NAME, _SOURCE)
    _backend = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _backend
    _spec.loader.exec_module(_backend)

# Every public name, and the module's own imports the adapters reach through it (`adapter.np`).
globals().update({k: v for k, v in vars(_backend).items() if not k.startswith("_")})
__all__ = list(_backend.__all__)
