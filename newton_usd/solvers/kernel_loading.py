"""The Warp modules a run's frames use, compiled (or loaded from Warp's kernel cache) in parallel, beside the first.

Warp compiles a module (every kernel of one Python module, or one generated kernel) the first time one of its kernels
is launched: making a Newton solver and its first frame, or MuJoCo-Warp's, meet a dozen to forty modules one after the
other, each compiled alone, minutes on an empty cache. A solver class names the modules it uses, as far as they are
known before it is made (``setup_kernel_modules()``: given as soon as the stage is imported) and once made
(``solver.kernel_modules()``: given at the first frame); :class:`KernelLoading` hands them to ``wp.force_load`` in a
pool of threads (one per core), so that Warp's compilers (LLVM on the CPU, NVRTC on CUDA: they release the GIL) work
on several at once while the solver is made and the first frame goes on, compiling, as it meets them, the modules
that cannot be named before it: the overloads of generic kernels (Newton's narrow phase), and the kernels MuJoCo-Warp
and Kamino generate inside their step functions. A module both want is compiled once: the other waits for it. At the
end of the first frame it says how long that took and how many modules were loaded and compiled rather than found in
the cache (``wp.config.kernel_cache_dir``: the next run loads them from there, in about a second).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import threading
import time
import weakref

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


_pools = weakref.WeakSet()  # the KernelLoadings whose pools may be loading (until wait or cancel)


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
    """Warp modules loaded on ``device`` by a pool of ``max_workers`` threads while the caller goes on (:meth:`add`
    gives them; those already loaded are skipped), and what was loaded until :meth:`wait` counted, the modules the
    caller met included. ``max_workers`` None: one per CPU core (at most one per module); 0: no pool, only the
    count (each module compiled where it is first launched). Until :meth:`wait`, a module's loads are one at a time
    (the caller's launch of one of its kernels waits for the pool's load). The threads are daemons: a process that
    ends does not wait for them (Warp renames a compiled module into its cache once it is whole)."""

    def __init__(self, device, max_workers: int | None = None):
        self.device = wp.get_device(device)
        self._workers = (os.cpu_count() or 1) if max_workers is None else max(0, int(max_workers))
        self._queue = queue.Queue()
        self._given = []  # the modules given to the pool (their loads made one at a time)
        self._threads = 0
        self._errors = []
        self._finished = False
        self._t0, self._started = time.perf_counter(), time.time()
        self._loaded_before = _loaded_modules(self.device)

    def add(self, modules) -> None:
        """Give the pool ``modules`` (Warp modules) to load, those not loaded nor given yet (none without a pool, or
        once waited for or cancelled)."""
        for module in modules if self._workers and not self._finished else ():
            if _loaded(module, self.device) or any(module is m for m in self._given):
                continue
            _one_load_at_a_time(module)
            self._given.append(module)
            self._queue.put(module)
            if self._threads < self._workers:
                threading.Thread(target=self._work, name="newton_usd-kernels", daemon=True).start()
                self._threads += 1
                _pools.add(self)

    def _work(self) -> None:
        while True:
            module = self._queue.get()
            try:
                if module is None:
                    return
                if _tape_active():  # (left to the caller's launch, on its own thread: see tape_safe_workers)
                    continue
                wp.force_load(device=self.device, modules=[module], max_workers=0)
            except BaseException as e:  # noqa: BLE001  (raised by wait, in the caller's thread)
                self._errors.append(e)
            finally:
                self._queue.task_done()

    def wait(self) -> KernelLoad:
        """Once the pool has loaded every module given: what was loaded since the start (raises the pool's first
        error, e.g. a compile that failed)."""
        self._finish()
        if self._errors:
            raise self._errors[0]
        seconds = time.perf_counter() - self._t0
        loaded = _loaded_modules(self.device) - self._loaded_before
        compiled = sum(1 for name in loaded if self._compiled(name))
        return KernelLoad(seconds, len(loaded), compiled, self._threads)

    def cancel(self, wait: bool = True) -> None:
        """Drop the modules the pool has not begun (the run that started it ended, or a differentiable one starts: see
        :func:`tape_safe_workers`), and with ``wait`` wait for the loads under way (else the threads end after them);
        their errors are dropped (a module that failed fails again where it is launched)."""
        while not self._finished:  # (once finished, the queue holds the threads' stops only)
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
            self._queue.task_done()
        self._finish(wait)

    def _finish(self, wait: bool = True) -> None:
        """The threads told to stop and each module's loads unlocked; with ``wait``, once the loads given are done."""
        if wait:
            self._queue.join()
            _pools.discard(self)
        if self._finished:
            return
        self._finished = True
        for _ in range(self._threads):
            self._queue.put(None)
        for module in self._given:
            if getattr(module.__dict__.get("load"), "_one_at_a_time", False):
                del module.load

    def _compiled(self, name: str) -> bool:
        """Whether module ``name`` was compiled since the start: its folder in Warp's kernel cache (where a compile
        renames its output into, a binary per device) changed since."""
        from warp._src.context import user_modules  # noqa: PLC0415

        module = user_modules.get(name)
        for (context, _), loaded in list(module.execs.items()) if module is not None else ():
            if context == self.device.context:
                short = f"wp_{name}" if module.options["strip_hash"] else f"wp_{name}_{loaded.module_hash.hex()[:7]}"
                try:
                    return os.path.getmtime(os.path.join(wp.config.kernel_cache_dir, short)) >= self._started - 1.0
                except OSError:
                    return False
        return False


def tape_safe_workers(max_workers: int | None, solver_options: dict) -> int | None:
    """The pool's threads for a solver made with ``solver_options``: none (0) for a differentiable one
    (``requires_grad``). Warp times a module's load in a ``ScopedTimer``, which opens and closes a scope on the
    ``wp.Tape`` active at the time, the process's one, whichever thread loads: a pool's load that began before the
    caller entered its tape ends a scope the tape never had (``RuntimeError: ended tape scope, but scope not present``,
    which Warp then replays at every load of that module), and one inside it interleaves scopes with the caller's.
    A run that means to differentiate compiles each module where it is first launched, on the caller's thread, and
    the pools of the runs before it (one that ran no frame, an environment's: nothing waited for them) are cancelled
    here, their loads under way waited for, so that none straddles its tape."""
    if not solver_options.get("requires_grad"):
        return max_workers
    for pool in list(_pools):
        pool.cancel()
    return 0


def _tape_active() -> bool:
    from warp._src import context  # noqa: PLC0415  (the active wp.Tape: no public accessor)

    return context.runtime is not None and context.runtime.tape is not None


def load_modules(modules, device, max_workers: int = 1) -> KernelLoad:
    """Load ``modules`` on ``device``, ``max_workers`` at a time (see :class:`KernelLoading`), and wait for them."""
    loading = KernelLoading(device, max(1, int(max_workers)))
    loading.add(modules)
    return loading.wait()


def modules_of_kernels(python_module: str, *kernels: str) -> list:
    """The Warp modules of the kernels named ``kernels`` of ``python_module`` (kernels made with
    ``module="unique"``, a module each), where they exist (another version may have dropped one)."""
    import importlib  # noqa: PLC0415

    try:
        holder = importlib.import_module(python_module)
    except ImportError:
        return []
    found = [getattr(holder, name, None) for name in kernels]
    return [k.module for k in found if isinstance(k, wp.Kernel)]


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
