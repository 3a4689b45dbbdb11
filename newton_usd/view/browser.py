"""The browser the page tests drive, and the offscreen GL ``usdsim video`` needs, from Debian's packages.

    python -m newton_usd.view.browser setup [--optional]   install what is missing (apt-get, as root)
    python -m newton_usd.view.browser check                say what is there

The tests drive Debian's ``chromium-headless-shell`` through playwright's ``executable_path`` (never a
browser download: ``playwright install`` cannot work on a machine without the network), with WebGL on
SwiftShader (the CPU). ``usdsim video`` renders with MuJoCo's offscreen renderer on EGL (Debian's
``libegl1`` and ``libegl-mesa0``: Mesa's llvmpipe) or else OSMesa (``libosmesa6``).

``setup`` installs what is missing with ``apt-get`` where it can (root, apt-get present) and otherwise says
what to install, in one line; with ``--optional`` that is not an error (exit 0), so that a test command can
run it on any machine: the browser tests then skip, saying why (:func:`browser_missing`).
"""

from __future__ import annotations

import argparse
import ctypes.util
import os
import shutil
import subprocess
import sys

BROWSER_PACKAGE = "chromium-headless-shell"
BROWSER_PATHS = ("/usr/bin/chromium-headless-shell", "/usr/lib/chromium/headless_shell")
EGL_PACKAGES = ("libegl1", "libegl-mesa0")
OSMESA_PACKAGE = "libosmesa6"

BROWSER_ARGS = (
    "--no-sandbox",
    "--enable-unsafe-swiftshader",
    "--use-angle=swiftshader",
    "--disable-gpu-sandbox",
    "--disable-dev-shm-usage",
)
"""Chromium's flags for WebGL on the CPU (SwiftShader) in a container (no sandbox)."""


def browser_path() -> str | None:
    """The headless Chromium to drive: ``$USDSIM_CHROMIUM`` or Debian's ``chromium-headless-shell``."""
    for path in (os.environ.get("USDSIM_CHROMIUM"), *BROWSER_PATHS, shutil.which(BROWSER_PACKAGE)):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (None: they can)."""
    try:
        import playwright  # noqa: F401, PLC0415
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if browser_path() is None:
        return (
            f"no headless Chromium: apt-get install -y --no-install-recommends {BROWSER_PACKAGE} "
            "(or python -m newton_usd.view.browser setup as root)"
        )
    return None


def launch(playwright, **kw):
    """A headless Chromium of playwright's sync API, on Debian's binary, with WebGL on the CPU."""
    path = browser_path()
    if path is None:
        raise RuntimeError(browser_missing())
    return playwright.chromium.launch(executable_path=path, args=list(BROWSER_ARGS), headless=True, **kw)


def gl_available() -> str | None:
    """The offscreen GL MuJoCo can use here: ``"egl"``, ``"osmesa"``, or None."""
    if ctypes.util.find_library("EGL") and _mesa_egl():
        return "egl"
    if ctypes.util.find_library("OSMesa"):
        return "osmesa"
    return None


def _mesa_egl() -> bool:
    """Whether an EGL vendor library (Mesa's) is installed for libglvnd's libEGL to load."""
    for directory in ("/usr/share/glvnd/egl_vendor.d", "/etc/glvnd/egl_vendor.d"):
        if os.path.isdir(directory) and os.listdir(directory):
            return True
    return bool(ctypes.util.find_library("EGL_mesa"))


def _missing_packages() -> list:
    missing = []
    if browser_path() is None:
        missing.append(BROWSER_PACKAGE)
    if gl_available() is None:
        missing.extend(EGL_PACKAGES)
    return missing


def setup(optional: bool) -> int:
    missing = _missing_packages()
    if not missing:
        print(f"browser: {browser_path()}; offscreen GL: {gl_available()}")
        return 0
    command = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    can = hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get")
    if not can:
        message = f"not installed: {' '.join(missing)} (as root: {' '.join(command)})"
        print(f"newton_usd.view.browser: {message}; the browser tests will skip", file=sys.stderr)
        return 0 if optional else 2
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    print(f"newton_usd.view.browser: installing {' '.join(missing)} with apt-get", file=sys.stderr)
    result = subprocess.run(["apt-get", "update"], env=env, stdout=subprocess.DEVNULL, check=False)
    if result.returncode == 0:
        result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=False)
    if result.returncode != 0 or _missing_packages():
        still = " ".join(_missing_packages())
        print(f"newton_usd.view.browser: apt-get failed; still missing: {still}", file=sys.stderr)
        return 0 if optional else 2
    print(f"browser: {browser_path()}; offscreen GL: {gl_available()}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m newton_usd.view.browser", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup", help="install the test browser and offscreen GL with apt-get where allowed")
    s.add_argument("--optional", action="store_true", help="exit 0 when they cannot be installed here")
    sub.add_parser("check", help="say what is installed")
    args = p.parse_args(argv)
    if args.command == "setup":
        return setup(args.optional)
    missing = browser_missing()
    print(f"browser: {browser_path() or 'missing'}; offscreen GL: {gl_available() or 'missing'}")
    if missing:
        print(f"browser tests: skip ({missing})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
