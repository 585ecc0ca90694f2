"""The adapters are one package with plain imports (adapters/README.md): no Python file under
adapters/ or examples/ edits the import path or loads a module by its file path, and every
server module the backends file names is one of the package's modules.

    env PYTHONPATH=crates/cli/python python3 -m unittest discover -s adapters/tests -t . -v
"""

import re
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("adapters", "examples")

# Each way around a plain import, as the source spells it (the patterns are written so that
# this file's own text does not match them).
PATH_LOADING = {
    "an import path edit": re.compile(r"\bsys\s*\.\s*path\b"),
    "a module loaded by file path": re.compile(r"\bspec_from_file_location\b"),
    "importlib's util module (path loading)": re.compile(
        r"\bimportlib\s*\.\s*util\b|\bfrom\s+importlib\s+import\s+[^\n]*\butil\b"),
    "a loader by file path": re.compile(r"\bSourceFileLoader\b|\bload_source\b"),
    "a file run by its path": re.compile(r"\brunpy\b|\brun_path\b"),
    "a module's names copied in": re.compile(r"\bglobals\s*\(\s*\)\s*\.\s*update\b"),
    "a file's text executed": re.compile(r"\bexec\s*\(\s*(?:open|compile)\b"),
}


def python_files():
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            if "node_modules" not in path.parts:
                yield path


def offences(text):
    """(line number, what, line) for each line of the text that goes around a plain import."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in PATH_LOADING.items():
            if pattern.search(line):
                found.append((number, what, line.strip()))
    return found


class PlainImports(unittest.TestCase):
    def test_no_file_has_a_sys_path_edit_or_path_loading(self):
        files = list(python_files())
        self.assertGreater(len(files), 20)
        found = [f"{path.relative_to(ROOT)}:{number}: {what}: {line}"
                 for path in files
                 for number, what, line in offences(path.read_text(encoding="utf-8"))]
        self.assertEqual(found, [], "plain imports only (adapters/README.md):\n" +
                         "\n".join(found))

    def test_the_check_catches_each_spelling(self):
        # Each line goes around a plain import; each must be caught, so the test above can fail.
        # (Each is two adjacent literals, split inside the spelling, so that this file's own
        # text passes the test above.)
        for line in [
            'sys.pa' 'th.insert(0, str(Path(__file__).parent / "python"))',
            "sys.pa" "th.append(HERE)",
            "sys . pa" "th[:0] = [HERE]",
            'spec = importlib.ut' 'il.spec_from_file_loc' 'ation("m", SOURCE)',
            'spec = spec_from_file_loc' 'ation("m", SOURCE)',
            "from importlib.ut" "il import module_from_spec",
            "from importlib import ut" "il",
            "from importlib.machinery import SourceFile" "Loader",
            'run' 'py.run_pa' 'th("adapters/jax/jax_backend.py")',
            'run_pa' 'th("adapters/jax/jax_backend.py")',
            "globals().up" "date(vars(backend))",
            "ex" "ec(open(path).read())",
        ]:
            self.assertTrue(offences(line), line)
        # And plain imports, importlib.metadata, os.execve pass.
        for line in [
            "from adapters.common import dmlcts_adapter as adapter",
            "from importlib.metadata import version",
            "os.execve(sys.executable, [sys.executable, '-m', __spec__.name], environment)",
            "import sys",
        ]:
            self.assertEqual(offences(line), [], line)

    def test_every_server_in_the_backends_file_is_a_module_of_the_package(self):
        commands = re.findall(r"^\s*command:\s*(.*)$", (ROOT / "backends.yaml").read_text(),
                              flags=re.M)
        modules = [m for c in commands for m in re.findall(r"python3 -m (\S+)", c)]
        self.assertGreater(len(modules), 10)
        for command in commands:
            self.assertNotRegex(command, r"python3 adapters/", command)
        for module in modules:
            self.assertTrue(module.startswith("adapters."), module)
            self.assertTrue((ROOT / (module.replace(".", "/") + ".py")).is_file(), module)


if __name__ == "__main__":
    unittest.main()
