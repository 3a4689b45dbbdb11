"""The Warp modules a run's frames use, compiled (or loaded from Warp's kernel cache) in parallel before the first.

Warp compiles a module (every kernel of one Python module, or one generated kernel) the first time one of its kernels
is launched: the first frame of a Newton solver or of MuJoCo-Warp meets a dozen to forty modules one after the other,
each compiled alone, minutes on an empty cache. A solver names the modules its steps use
(``solver.kernel_modules()``); :func:`load_modules` hands them to ``wp.force_load`` with a thread pool, so that
Warp's compilers (LLVM on the CPU, NVRTC on CUDA: they release the GIL) work on several at once, and says how long
that took and how many were compiled rather than found in the cache (``wp.config.kernel_cache_dir``: the next run
loads them from there, in about a second).

What cannot be named before the first step is left to it: kernels that MuJoCo-Warp and Kamino generate inside their
step functions (a module each) exist only once the step runs, and compile one after the other there.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time

import warp as wp

logger = logging.getLogger("newton_usd")


@dataclasses.dataclass
class KernelLoad:
    """What :func:`load_modules` did."""

    seconds: float = 0.0
    """Wall time of the load (compiles included)."""
    modules: int = 0
    """Modules loaded (those already loaded on the device not counted)."""
    compiled: int = 0
    """Of which compiled (not found in Warp's kernel cache)."""
    workers: int = 0
    """Threads that loaded them."""


def modules_named(names) -> list:
    """The Warp modules of the Python modules ``names`` that are imported and hold Warp code (the others are left
    out: a module another version of a package dropped or renamed, said at DEBUG level)."""
    from warp._src.context import user_modules  # noqa: PLC0415  (Warp's registry of modules; no public accessor)

    out = []
    for name in names:
        module = user_modules.get(name)
        if module is None:
            logger.debug("no Warp module %s to load before the first frame", name)
        else:
            out.append(module)
    return out


def modules_of_kernels(*holders) -> list:
    """The Warp modules of the kernels that ``holders`` keep as attributes (kernels a library generates when it is
    set up, a module each: Newton's narrow phase)."""
    out = []
    for holder in holders:
        for value in vars(holder).values() if holder is not None else ():
            if isinstance(value, wp.Kernel):
                out.append(value.module)
    return out


def load_modules(modules, device, max_workers: int | None = None) -> KernelLoad:
    """Load ``modules`` (Warp modules) on ``device``, compiling those not in Warp's kernel cache, ``max_workers`` at a
    time (None: one per CPU core, at most one per module; 0: one after the other). Modules already loaded there are
    skipped."""
    device = wp.get_device(device)
    todo, seen = [], set()
    for module in modules:
        if id(module) not in seen and not any(key[0] == device.context for key in module.execs):
            seen.add(id(module))
            todo.append(module)
    if not todo:
        return KernelLoad()
    workers = min(os.cpu_count() or 1, len(todo)) if max_workers is None else int(max_workers)
    cache = wp.config.kernel_cache_dir
    before = _cache_files(cache)
    t0 = time.perf_counter()
    wp.force_load(device=device, modules=todo, max_workers=workers)
    seconds = time.perf_counter() - t0
    names = {f"wp_{m.name}" for m in todo}
    written = {folder for folder, _ in _cache_files(cache) - before}  # (a binary added to a module's folder)
    compiled = sum(1 for folder in written if folder.rsplit("_", 1)[0] in names)
    return KernelLoad(seconds, len(todo), compiled, max(1, workers))


def _cache_files(cache) -> set:
    """(module folder, file) of Warp's kernel cache (a module's folder holds its binary for each device)."""
    out = set()
    try:
        for folder in os.listdir(cache) if cache else ():
            path = os.path.join(cache, folder)
            if os.path.isdir(path):
                out.update((folder, name) for name in os.listdir(path))
    except OSError:
        pass
    return out
