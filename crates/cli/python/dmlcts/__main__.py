"""`python -m dmlcts ARGS`: runs the installed `dmlcts` program with ARGS."""

import os
import subprocess
import sys

from dmlcts import find_dmlcts_bin

if __name__ == "__main__":
    program = find_dmlcts_bin()
    if os.name == "nt":
        sys.exit(subprocess.call([program, *sys.argv[1:]]))
    os.execv(program, [program, *sys.argv[1:]])
