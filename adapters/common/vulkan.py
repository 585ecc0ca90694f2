"""The Vulkan drivers the GPU adapters run on (ort-webgpu, litert-gpu, and iree's Vulkan
target): each driver's ICD file, where its library comes from, the environment that makes the
Vulkan loader see that one driver only, and the driver's version for the device text.

    swiftshader   SwiftShader from Debian's chromium-common
    lavapipe25    Mesa 25's lavapipe, as `cargo xtask directml setup` unpacks it into
                  target/directml-stack (not installed: its version is the unpacked package's)

(IREE also runs on Debian's own Mesa 22 lavapipe; its table, adapters/iree/iree_backend.py
`DRIVERS`, adds the SPIR-V features each driver is compiled for.)
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "target" / "directml-stack"
DRIVERS = {
    "swiftshader": {
        "icd": Path("/usr/lib/chromium/vk_swiftshader_icd.json"),
        "library_path": None,
        "package": "chromium-common",
    },
    "lavapipe25": {
        "icd": STACK / "lvp25_icd.json",
        "library_path": STACK / "mesa25" / "usr" / "lib" / "x86_64-linux-gnu",
        "package": None,  # unpacked, not installed: the version is the ICD library's
    },
}


def driver_environment(driver):
    """os.environ with the loader pointed at the driver's ICD file (and, for an unpacked
    driver, its library folder first on LD_LIBRARY_PATH); exits naming the missing file."""
    settings = DRIVERS[driver]
    if not settings["icd"].is_file():
        hint = ("Debian package chromium-common" if driver == "swiftshader" else
                "`cargo xtask directml setup` unpacks Mesa 25 there")
        sys.exit(f"ort-webgpu: no ICD file {settings['icd']} ({hint})")
    environment = dict(os.environ, VK_ICD_FILENAMES=str(settings["icd"]))
    if settings["library_path"]:
        environment["LD_LIBRARY_PATH"] = ":".join(
            p for p in [str(settings["library_path"]), os.environ.get("LD_LIBRARY_PATH")] if p)
    # Dawn asks for it on Linux; any writable folder will do.
    environment.setdefault("XDG_RUNTIME_DIR", "/tmp")
    return environment


def driver_version(driver):
    """The installed package's version, or the unpacked Mesa 25 package's name and version."""
    settings = DRIVERS[driver]
    if settings["package"]:
        try:
            return subprocess.run(["dpkg-query", "-W", "-f=${Version}", settings["package"]],
                                  capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return "unknown"
    # The package the stack unpacked (apt/debs/mesa-vulkan-drivers_VERSION_amd64.deb).
    debs = sorted((STACK / "apt" / "debs").glob("mesa-vulkan-drivers_*.deb"))
    return (f"mesa-vulkan-drivers {debs[0].name.split('_')[1]} (unpacked)" if debs
            else "Mesa 25 (version unknown)")
