"""The local executor: runs on this machine's cores, a process per run, ``jobs`` at a time."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, as_completed

from .launch import Launcher


class LocalExecutor:
    """Runs jobs on this machine, each in a process of its own, at most ``jobs`` at once.

    When there are more runs than ``jobs``, the first runs alone: it compiles the Warp kernels the
    runs need into the shared kernel cache once, instead of every process compiling them at once.

    Args:
        jobs: Runs at once (default: the machine's cores).
        isolation: ``"fork"`` or ``"subprocess"`` (see :mod:`newton_usd.batch.launch`).
    """

    def __init__(self, jobs: int | None = None, isolation: str = "fork"):
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self.isolation = isolation

    def run(self, jobs, timeout: float | None = None):
        """Yield ``(job, result)`` as runs finish. Closing the generator (Ctrl-C) kills the runs going on."""
        jobs = list(jobs)
        if not jobs:
            return
        launcher = Launcher(self.isolation)
        pool = ThreadPoolExecutor(self.jobs, thread_name_prefix="usdsim-batch")
        try:
            if 1 < self.jobs < len(jobs):
                first = jobs.pop(0)
                yield first, launcher.run(first, timeout)
            futures = {pool.submit(launcher.run, job, timeout): job for job in jobs}
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            launcher.cancel()  # kills what still runs (nothing, when every run finished)
            pool.shutdown(wait=True, cancel_futures=True)
