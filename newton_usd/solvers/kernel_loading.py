"""The Warp modules a run's frames use, compiled (or loaded from Warp's kernel cache) in parallel, beside the first.

Warp compiles a module (every kernel of one Python module, or one generated kernel) the first time one of its kernels
is launched: the first frame of a Newton solver or of MuJoCo-Warp meets a dozen to forty modules one after the other,
each compiled alone, minutes on an empty cache. A solver names the modules its steps use
(``solver.kernel_modules()``); :class:`KernelLoading` hands them to ``wp.force_load`` with a thread pool (a thread
per core but one, where that makes two or more), in a thread of its own, so that Warp's compilers (LLVM on the CPU,
NVRTC on CUDA: they release the GIL) work on several at once while the first frame goes on and compiles, as it meets
them, the modules that cannot be named before it: the overloads of generic kernels (Newton's narrow phase), and the
kernels MuJoCo-Warp and Kamino generate inside their step functions. A module both want is compiled once: the other
waits for it. At the end of the first frame it says how long that took and how many modules were loaded and compiled
rather than found in the cache (``wp.config.kernel_cache_dir``: the next run loads them from there, in about a
second).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time

import warp as wp

logger = logging.getLogger("newton_usd")


@dataclasses.dataclass
class KernelLoad:
    """What a :class:`KernelLoading` saw."""

    seconds: float = 0.0
    """Wall time from its start to :meth:`KernelLoading.wait` (the first frame, where it went with one)."""
    modules: int = 0
    """Warp modules loaded on the device meanwhile: by the pool or by the caller (those it met)."""
    compiled: int = 0
    """Of which compiled (not found in Warp's kernel cache)."""
    workers: int = 0
    """The pool's threads (0: none; the caller loaded them all as it met them)."""


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


class KernelLoading:
    """``modules`` (Warp modules) loaded on ``device`` by a pool of ``max_workers`` threads in a thread of its own,
    while the caller goes on (modules already loaded there are skipped), and what was loaded until :meth:`wait`
    counted, the modules the caller met included. ``max_workers`` None: one per CPU core but the one the caller
    compiles on, where that leaves two or more, else none (with no spare core the pool would slow the caller's own
    compiles down as much as it saves); 0: no pool, only the count. While the pool runs, a module's loads are one at
    a time (the caller's launch of one of its kernels waits for the pool's load)."""

    def __init__(self, modules, device, max_workers: int | None = None):
        self.device = wp.get_device(device)
        todo, seen = [], set()
        for module in modules:
            if id(module) not in seen and not _loaded(module, self.device):
                seen.add(id(module))
                todo.append(module)
        spare = (os.cpu_count() or 1) - 1
        workers = (spare if spare >= 2 else 0) if max_workers is None else int(max_workers)
        self._todo = todo if workers > 0 else []
        self._workers = min(workers, len(self._todo))
        self._error = None
        self._thread = None
        self._t0 = time.perf_counter()
        self._cache = wp.config.kernel_cache_dir
        self._before = _cache_files(self._cache)
        self._loaded_before = _loaded_modules(self.device)
        for module in self._todo:
            _one_load_at_a_time(module)
        if self._todo:
            self._thread = threading.Thread(target=self._run, name="newton_usd-kernels", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            wp.force_load(device=self.device, modules=self._todo, max_workers=self._workers)
        except BaseException as e:  # noqa: BLE001  (raised by wait, in the caller's thread)
            self._error = e

    def wait(self) -> KernelLoad:
        """Once the pool is done: what was loaded since the start (raises the pool's error, e.g. a compile that
        failed)."""
        if self._thread is not None:
            self._thread.join()
        for module in self._todo:
            if getattr(module.__dict__.get("load"), "_one_at_a_time", False):
                del module.load
        if self._error is not None:
            raise self._error
        seconds = time.perf_counter() - self._t0
        loaded = _loaded_modules(self.device) - self._loaded_before
        names = {f"wp_{name}" for name in loaded}
        written = {folder for folder, _ in _cache_files(self._cache) - self._before}  # (a binary added to its folder)
        compiled = sum(1 for folder in written if folder.rsplit("_", 1)[0] in names)
        return KernelLoad(seconds, len(loaded), compiled, self._workers)


def load_modules(modules, device, max_workers: int = 1) -> KernelLoad:
    """Load ``modules`` on ``device``, ``max_workers`` at a time (see :class:`KernelLoading`), and wait for them."""
    return KernelLoading(modules, device, max(1, int(max_workers))).wait()


def _loaded(module, device) -> bool:
    return any(key[0] == device.context for key in module.execs)


def _loaded_modules(device) -> set:
    """The names of the Warp modules loaded on ``device``."""
    from warp._src.context import user_modules  # noqa: PLC0415

    return {name for name, module in list(user_modules.items()) if _loaded(module, device)}


def _one_load_at_a_time(module) -> None:
    """``module.load`` made to hold a lock of the module's own (until :meth:`KernelLoading.wait`): the pool's thread
    and the caller's launch of one of its kernels do not both compile it; the second finds it loaded."""
    lock, load = threading.Lock(), module.load

    def locked(*args, **kwargs):
        with lock:
            return load(*args, **kwargs)

    locked._one_at_a_time = True
    module.load = locked


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
