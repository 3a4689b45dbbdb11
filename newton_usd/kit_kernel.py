"""The Kit kernel from PyPI (``omniverse-kit``), headless, with the newton_usd extension enabled.

The ``omniverse-kit`` wheel (Python 3.12 only) holds a real Kit kernel: extensions, settings,
events and the update loop, but no omni.usd, omni.timeline or renderer. That is enough to run the
extension headless, which the tests and benchmarks do::

    python -m newton_usd.kit_kernel setup .venv-kit           # a Python 3.12 venv with Kit and newton_usd
    .venv-kit/bin/python -m newton_usd.kit_kernel run STAGE --updates 120

``run`` starts the kernel, opens STAGE in the extension's standalone stages, plays for the given
number of app updates (one frame each), prints where each body went, and stops (the authored
poses come back). ``setup`` finds a Python 3.12 (on PATH, or under pyenv), makes the venv and
installs ``omniverse-kit`` and this checkout of newton_usd into it.

This module is outside the ``newton_usd.kit`` package on purpose: Kit imports that package as the
extension's module, and it must not be imported before Kit has started.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

KIT_REQUIREMENT = "omniverse-kit==110.4.0.386251"
"""The kernel tested with (Kit 110.4, the newest on PyPI when the extension was written)."""
PHYSICS_CACHE_REQUIREMENT = "isaacsim-extscache-physics==6.2.0.0"
"""The PyPI wheel holding Kit 110.4's physics extensions; only omni.physics (the umbrella) is taken."""
OMNI_PHYSICS_FOLDER = "kit-exts"
"""Where ``setup`` puts omni.physics, inside the venv (give it to Kit with ``--ext-folder``)."""
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# newton_usd.kit's EXT_FOLDER and EXT_NAME, spelled out: that package may not be imported before Kit starts.
EXT_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit", "exts")
EXT_NAME = "newton_usd.kit"


# --------------------------------------------------------------------------- outside Kit: the venv
def find_python312() -> str | None:
    """A working Python 3.12 interpreter: ``python3.12`` on PATH, else pyenv's; None if there is none."""
    candidates = [shutil.which("python3.12")]
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.12*", "bin", "python3.12")), reverse=True)
    for exe in filter(None, candidates):
        try:  # pyenv's shim exists even when 3.12 is not the selected version; it then fails
            out = subprocess.run([exe, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == "(3, 12)":
            return exe
    return None


def venv_python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def setup_venv(venv: str, python: str | None = None, quiet: bool = True) -> str:
    """Make ``venv`` (Python 3.12) with the Kit kernel and this checkout of newton_usd; returns its python.

    Raises:
        RuntimeError: not a source checkout, no Python 3.12, or pip failed.
    """
    if not os.path.exists(os.path.join(PROJECT_ROOT, "pyproject.toml")):
        raise RuntimeError(f"setup installs a source checkout of newton_usd; {PROJECT_ROOT} is not one")
    python = python or find_python312()
    if python is None:
        raise RuntimeError("no Python 3.12 interpreter found (on PATH or under pyenv); the Kit kernel needs 3.12")
    exe = venv_python(venv)
    if not os.path.exists(exe):
        subprocess.run([python, "-m", "venv", venv], check=True)
    pip = [exe, "-m", "pip", "install", "--disable-pip-version-check"] + (["-q"] if quiet else [])
    result = subprocess.run(pip + [KIT_REQUIREMENT, "-e", PROJECT_ROOT])
    if result.returncode != 0:
        raise RuntimeError(f"pip could not install {KIT_REQUIREMENT} and newton_usd into {venv}")
    return exe


def omni_physics_folder(venv: str) -> str | None:
    """The extension folder holding omni.physics in ``venv`` (made by :func:`fetch_omni_physics`), or None."""
    folder = os.path.join(venv, OMNI_PHYSICS_FOLDER)
    return folder if glob.glob(os.path.join(folder, "omni.physics-*", "config", "extension.toml")) else None


def fetch_omni_physics(venv: str) -> str:
    """Put Kit 110.4's omni.physics (the physics umbrella: no dependencies) into ``venv``; returns its folder.

    It comes from the ``isaacsim-extscache-physics`` wheel on PyPI (about 260 MB; only the omni.physics
    folder, under 2 MB, is kept). The extensions beside it there need omni.usd, which the bare kernel lacks.
    """
    import zipfile  # noqa: PLC0415

    if omni_physics_folder(venv):
        return omni_physics_folder(venv)
    with tempfile.TemporaryDirectory(prefix="newton_usd_physics_") as tmp:
        subprocess.run(
            [
                venv_python(venv), "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
                "--only-binary=:all:", "-d", tmp, PHYSICS_CACHE_REQUIREMENT,
            ],
            check=True,
        )  # fmt: skip
        (wheel,) = glob.glob(os.path.join(tmp, "*.whl"))
        dest = os.path.join(venv, OMNI_PHYSICS_FOLDER)
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                parts = name.split("/")
                if len(parts) > 3 and parts[:2] == ["isaacsim", "extscache"] and parts[2].startswith("omni.physics-"):
                    target = os.path.join(dest, *parts[2:])
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with z.open(name) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out)
                    mode = (z.getinfo(name).external_attr >> 16) & 0o777
                    if mode:
                        os.chmod(target, mode)
    folder = omni_physics_folder(venv)
    if folder is None:
        raise RuntimeError(f"{PHYSICS_CACHE_REQUIREMENT} holds no omni.physics extension")
    return folder


# --------------------------------------------------------------------------- inside Kit: the app
def start_kit(extra_args=(), portable_root: str | None = None, enable: bool = True):
    """Start the kernel headless with the newton_usd extension folder; returns the ``KitApp``.

    Call from the Kit venv's Python before any other ``omni`` import. ``portable_root`` keeps Kit's
    logs and caches out of the home folder (default: a new temporary folder).
    """
    os.environ.setdefault("OMNI_KIT_ACCEPT_EULA", "yes")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        os.environ.setdefault("OMNI_KIT_ALLOW_ROOT", "1")
    from omni.kit_app import KitApp  # noqa: PLC0415 (bootstraps carb: first omni import)

    args = [
        "--no-window",
        "--portable-root", portable_root or tempfile.mkdtemp(prefix="newton_usd_kit_"),
        "--ext-folder", EXT_FOLDER,
        "--/app/extensions/registryEnabled=0",
    ]  # fmt: skip
    if enable:
        args += ["--enable", EXT_NAME]
    app = KitApp()
    app.startup(args + list(extra_args))
    return app


def _run(args) -> int:
    app = start_kit([f"--/exts/newton_usd.kit/{kv}" for kv in args.set])
    from pxr import UsdGeom  # noqa: PLC0415

    from .kit.extension import get_extension  # noqa: PLC0415

    ext = get_extension()
    if ext is None:
        print("newton_usd.kit did not start (see the log above)", file=sys.stderr)
        return 1
    stage = ext.stages.open(args.stage)
    ext.playback.play()
    for _ in range(args.updates):
        app.update()
    pb = ext.playback
    if pb.sim is None:
        print(pb.left_alone or pb.last_error or "nothing was simulated", file=sys.stderr)
        return 1
    print(f"{pb.sim.frame} frames on {args.stage} ({type(pb.sim.solver).__name__}, {pb.sim.substeps} substeps/frame)")
    cache = UsdGeom.XformCache()
    for path in pb.sim.model.body_label:
        pos = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(path)).ExtractTranslation()
        print(f"  {path}: ({pos[0]:.4f}, {pos[1]:.4f}, {pos[2]:.4f})")
    pb.stop()
    app.shutdown()
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m newton_usd.kit_kernel", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("setup", help="make a Python 3.12 venv with the Kit kernel and newton_usd")
    s.add_argument("venv")
    s.add_argument("--python", help="the Python 3.12 to use (default: found on PATH or under pyenv)")
    s.add_argument("--optional", action="store_true", help="without a Python 3.12, say so and succeed")
    s.add_argument(
        "--no-omni-physics", action="store_true", help="skip omni.physics (a 260 MB download; for the umbrella tests)"
    )
    r = sub.add_parser("run", help="(in the Kit venv) play STAGE in a headless Kit app")
    r.add_argument("stage")
    r.add_argument("--updates", type=int, default=120, help="app updates to play (one frame each)")
    r.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="an extension setting")
    args = p.parse_args(argv)
    if args.command == "setup":
        if args.optional and not args.python and find_python312() is None:
            print("newton_usd.kit_kernel: no Python 3.12 here; the Kit kernel tests will be skipped")
            return 0
        try:
            print(setup_venv(args.venv, args.python, quiet=False))
        except RuntimeError as e:
            print(f"newton_usd.kit_kernel: {e}", file=sys.stderr)
            return 2
        if not args.no_omni_physics:
            try:
                print(fetch_omni_physics(args.venv))
            except (RuntimeError, subprocess.CalledProcessError, ValueError) as e:
                print(f"newton_usd.kit_kernel: omni.physics not fetched ({e}); its tests will be skipped")
        return 0
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())
