"""dmlcts: the conformance suite for DirectML's Split, Join and Slice1, as a Python package.

`pip install dmlcts` puts the `dmlcts` command on PATH (the Rust program, prebuilt, with the
corpus compiled in: no Rust toolchain needed); `python -m dmlcts` runs the same. The module
`dmlcts.backend` is for writing a backend in Python: the protocol's frames, the descriptors,
the strided gather and scatter, and the server loop (it needs numpy: `pip install
'dmlcts[backend]'`).
"""

import os
import sys
import sysconfig


def find_dmlcts_bin():
    """The path of the `dmlcts` program this package installed."""
    name = "dmlcts" + (sysconfig.get_config_var("EXE") or "")
    candidates = [os.path.join(sysconfig.get_path("scripts"), name)]
    user = sysconfig.get_path("scripts", f"{os.name}_user")
    if user:
        candidates.append(os.path.join(user, name))
    candidates.append(os.path.join(os.path.dirname(sys.executable), name))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"the dmlcts program is not installed here (looked in: "
                            f"{', '.join(candidates)})")
