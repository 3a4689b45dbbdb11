"""The Warp modules a run's frames use, compiled (or loaded from Warp's kernel cache) in parallel, beside the first.

Warp compiles a module (every kernel of one Python module, or one generated kernel) the first time one of its kernels
is launched: the first frame of a Newton solver or of MuJoCo-Warp meets a dozen to forty modules one after the other,
each compiled alone, minutes on an empty cache. A solver names the modules its steps use
(``solver.kernel_modules()``); :class:`KernelLoading` hands them to ``wp.force_load`` with a thread pool (a thread
per core but one), in a thread of its own, so that Warp's compilers (LLVM on the CPU, NVRTC on CUDA: they release the
GIL) work on several at once while the first frame goes on and compiles, as it meets them, the modules that cannot be
named before it: the
overloads of generic kernels (Newton's narrow phase), and the kernels MuJoCo-Warp and Kamino generate inside their
step functions. A module both want is compiled once: the other waits for it. Where the load is done it says how long
it took and how many modules were compiled rather than found in the cache (``wp.config.kernel_cache_dir``: the next
run loads them from there, in about a second).
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
    """What a :class:`KernelLoading` did."""

    seconds: float = 0.0
    """Wall time from its start to the last module loaded (compiles included)."""
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


class KernelLoading:
    """``modules`` (Warp modules) loaded on ``device`` by a thread pool in a thread of its own, ``max_workers`` at a
    time (None: one per CPU core but one, at most one per module; 0: one after the other), while the caller goes on;
    modules already loaded there are skipped. While it runs, a module's loads are one at a time (the caller's launch
    of one of its kernels waits for the pool's load). :meth:`wait` joins it."""

    def __init__(self, modules, device, max_workers: int | None = None):
        self.device = wp.get_device(device)
        todo, seen = [], set()
        for module in modules:
            if id(module) not in seen and not any(key[0] == self.device.context for key in module.execs):
                seen.add(id(module))
                todo.append(module)
        self._todo = todo
        cores = os.cpu_count() or 1  # (one left to the caller, which compiles what it meets meanwhile)
        self._workers = min(max(1, cores - 1), len(todo)) if max_workers is None else int(max_workers)
        self._error = None
        self._thread = None
        self._t0 = self._t1 = time.perf_counter()
        if not todo:
            return
        self._cache = wp.config.kernel_cache_dir
        self._before = _cache_files(self._cache)
        for module in todo:
            _one_load_at_a_time(module)
        self._thread = threading.Thread(target=self._run, name="newton_usd-kernels", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            wp.force_load(device=self.device, modules=self._todo, max_workers=self._workers)
        except BaseException as e:  # noqa: BLE001  (raised by wait, in the caller's thread)
            self._error = e
        finally:
            self._t1 = time.perf_counter()

    def wait(self) -> KernelLoad:
        """Once every module is loaded: what was done (raises the load's error, e.g. a compile that failed)."""
        if self._thread is None:
            return KernelLoad()
        self._thread.join()
        for module in self._todo:
            if getattr(module.__dict__.get("load"), "_one_at_a_time", False):
                del module.load
        if self._error is not None:
            raise self._error
        names = {f"wp_{m.name}" for m in self._todo}
        written = {folder for folder, _ in _cache_files(self._cache) - self._before}  # (a binary added to its folder)
        compiled = sum(1 for folder in written if folder.rsplit("_", 1)[0] in names)
        return KernelLoad(self._t1 - self._t0, len(self._todo), compiled, max(1, self._workers))


def load_modules(modules, device, max_workers: int | None = None) -> KernelLoad:
    """Load ``modules`` on ``device`` in parallel (see :class:`KernelLoading`), and wait for them."""
    return KernelLoading(modules, device, max_workers).wait()


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
