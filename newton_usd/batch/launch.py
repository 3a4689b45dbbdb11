"""A process per run, a timeout per run, and a result for every run, however it ended.

Each run gets a process of its own: a run that crashes (a signal), hangs (killed at ``timeout``) or
leaks takes nothing else with it, and its row says what happened. Two ways to make that process:

- ``fork`` (the default on Linux and macOS): forked from a server process that has imported usdsim's
  modules once (``multiprocessing``'s forkserver with a preload). A fresh ``usdsim`` spends about 1.5 s
  importing pxr, Warp, MuJoCo and newton_usd before a short run's 0.1 s of work; a forked one starts
  with them loaded, with the same isolation. The server never initializes Warp or CUDA (a CUDA context
  does not survive a fork): each run does, as ``usdsim`` does.
- ``subprocess``: a fresh interpreter per run (``python -m newton_usd.batch.worker``), for platforms
  without fork or a run that must not share the server's imports.

Warp's kernel cache (``~/.cache/warp``) is shared by every run: a kernel compiled once is loaded by the rest.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
import types

from .resume import RESULT_FILE, read_result
from .worker import LOG_FILE, PRELOAD, TASK_FILE, last_error_line, run_job

ISOLATIONS = ("fork", "subprocess")
EXIT_TIMEOUT = 124  # as timeout(1)


def task_of(job) -> dict:
    """What the run's process needs of a :class:`~newton_usd.batch.spec.Job` (JSON-able)."""
    return {"argv": job.argv(), "run_dir": job.run_dir, "output": job.output, "record": job.record,
            "env": job.env, "input_hash": job.input_hash}  # fmt: skip


class Launcher:
    """Runs jobs, each in a process of its own, from any number of threads.

    Args:
        isolation: ``"fork"`` (from a preloaded server) or ``"subprocess"``; fork falls back to
            subprocess where the platform has no forkserver.
    """

    def __init__(self, isolation: str = "fork"):
        if isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {ISOLATIONS}, got {isolation!r}")
        if isolation == "fork" and "forkserver" not in multiprocessing.get_all_start_methods():
            isolation = "subprocess"
        self.isolation = isolation
        self._lock = threading.Lock()
        self._live = set()  # processes running now, killed by cancel()
        self._cancelled = False
        if isolation == "fork":
            self._context = multiprocessing.get_context("forkserver")
            self._context.set_forkserver_preload(PRELOAD)

    def run(self, job, timeout: float | None = None) -> dict:
        """Run ``job`` to its end and return its result (see :func:`~newton_usd.batch.worker.run_job`),
        with ``wall_seconds`` (start to end as the launcher saw it) and ``status``: ``ok``, ``failed``
        (a non-zero exit), ``timeout`` (killed after ``timeout`` seconds), ``crashed`` (ended by a signal
        or before writing its result) or ``cancelled``."""
        if job.error is not None:  # the stage does not open, an override does not apply
            return {"exit_code": 2, "error": job.error, "status": "failed", "wall_seconds": 0.0,
                    "input_hash": job.input_hash}  # fmt: skip
        os.makedirs(job.run_dir, exist_ok=True)
        for stale in (RESULT_FILE, LOG_FILE):
            if os.path.exists(os.path.join(job.run_dir, stale)):
                os.remove(os.path.join(job.run_dir, stale))
        start = time.perf_counter()
        code, timed_out = self._start_and_wait(task_of(job), timeout)
        wall = time.perf_counter() - start
        result = None if timed_out else read_result(job.run_dir)
        if result is None:
            result = {"exit_code": code or 1, "error": None, "output": None, "input_hash": job.input_hash,
                      "recorded": {}}  # fmt: skip
            log = last_error_line(os.path.join(job.run_dir, LOG_FILE))
            if timed_out:
                result.update(exit_code=EXIT_TIMEOUT, error=f"timed out after {timeout:g} s (killed)")
            elif self._cancelled:
                result["error"] = "cancelled"
            elif code is not None and code < 0:
                result["error"] = f"crashed: {signal.Signals(-code).name}" + (f" ({log})" if log else "")
            else:
                result["error"] = f"ended with exit code {code} before writing its result" + (f": {log}" if log else "")
        result["wall_seconds"] = wall
        result["status"] = _status(result["exit_code"], timed_out, self._cancelled)
        return result

    def _start_and_wait(self, task: dict, timeout: float | None) -> tuple:
        """(exit code, timed out) of the task's process."""
        with self._lock:
            if self._cancelled:
                return None, False
            if self.isolation == "fork":
                process = self._context.Process(target=run_job, args=(task,), name="usdsim-batch-run")
                with _main_module_hidden():
                    process.start()
            else:
                path = os.path.join(task["run_dir"], TASK_FILE)
                with open(path, "w") as f:
                    json.dump(task, f)
                with open(os.path.join(task["run_dir"], LOG_FILE), "ab") as log:
                    command = [sys.executable, "-m", "newton_usd.batch.worker", path]
                    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            self._live.add(process)
        try:
            if self.isolation == "fork":
                process.join(timeout)
                timed_out = process.exitcode is None
                if timed_out:
                    process.kill()
                    process.join()
                return process.exitcode, timed_out
            try:
                return process.wait(timeout), False
            except subprocess.TimeoutExpired:
                process.kill()
                return process.wait(), True
        finally:
            with self._lock:
                self._live.discard(process)

    def cancel(self) -> None:
        """Kill every running run, and start no other."""
        with self._lock:
            self._cancelled = True
            for process in self._live:
                process.kill()


@contextlib.contextmanager
def _main_module_hidden():
    """Start a forkserver process without the parent's ``__main__``: multiprocessing would import the
    parent's main script again in every child (a Ray worker's imports Ray: about 1 s per run). The run
    needs nothing of it: its target is :func:`~newton_usd.batch.worker.run_job`."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _status(code, timed_out: bool, cancelled: bool) -> str:
    if timed_out:
        return "timeout"
    if cancelled and code != 0:
        return "cancelled"
    if code == 0:
        return "ok"
    return "crashed" if (code is None or code < 0) else "failed"
