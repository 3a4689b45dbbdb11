"""The Ray executor: each run a Ray task, on a local Ray instance or a cluster (``pip install newton_usd[ray]``).

A task declares what its run needs (``num_cpus``, and ``num_gpus`` when the runs use a CUDA device) and
Ray places it; inside the task the run has a process of its own as on the local executor, so a run
that crashes or hangs gives its row and the Ray worker goes on. A task whose worker dies (a killed
process, a lost node) is retried by Ray (``retries`` times). Outputs are written under the sweep's
output directory from the node that runs the task: on a cluster it must be a path every node sees
(a shared file system), as must the stages.
"""

from __future__ import annotations

import dataclasses
import os

from ..errors import NewtonUsdError

_launchers = {}  # one Launcher (and fork server) per Ray worker process and isolation


def _run_task(job, timeout, isolation):
    """The body of a run's Ray task, in a Ray worker."""
    from .launch import Launcher  # noqa: PLC0415

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")  # what Ray gave this task: the run's process needs it
    if visible is not None:
        job = dataclasses.replace(job, env={**job.env, "CUDA_VISIBLE_DEVICES": visible})
    launcher = _launchers.get(isolation) or _launchers.setdefault(isolation, Launcher(isolation))
    return launcher.run(job, timeout)


def ray_available() -> bool:
    try:
        import ray  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


class RayExecutor:
    """Runs jobs as Ray tasks.

    Args:
        address: ``"auto"``: the Ray instance this process is connected to, else the cluster that
            ``RAY_ADDRESS`` or ``ray start`` on this machine names, else a new local instance;
            otherwise a cluster's address (``HOST:6379``, ``ray://HOST:10001``).
        cpus_per_run: The CPUs each task declares.
        gpus_per_run: The GPUs each task declares (None: 1 when ``cuda`` is True, else 0).
        cuda: Whether the runs use a CUDA device.
        retries: Retries of a task whose worker died.
        isolation: How the run's process is made inside the task (see :mod:`newton_usd.batch.launch`).
    """

    def __init__(self, address: str = "auto", cpus_per_run: float = 1, gpus_per_run: float | None = None,
                 cuda: bool = False, retries: int = 3, isolation: str = "fork"):  # fmt: skip
        if not ray_available():
            raise NewtonUsdError("--ray needs Ray: pip install 'newton_usd[ray]' (or pip install ray)")
        self.address = address
        self.cpus_per_run = cpus_per_run
        self.gpus_per_run = (1 if cuda else 0) if gpus_per_run is None else gpus_per_run
        self.retries = retries
        self.isolation = isolation

    def run(self, jobs, timeout: float | None = None):
        """Yield ``(job, result)`` as tasks finish. Closing the generator (Ctrl-C) cancels the tasks left."""
        import ray  # noqa: PLC0415

        jobs = list(jobs)
        if not jobs:
            return
        started = not ray.is_initialized()
        if started:
            try:
                ray.init(address=None if self.address == "auto" else self.address, log_to_driver=False,
                         include_dashboard=False)  # fmt: skip
            except (ConnectionError, ValueError, RuntimeError) as e:
                raise NewtonUsdError(f"--ray {self.address}: cannot connect to a Ray cluster: {e}") from None
        # max_calls=0: Ray would end a GPU task's worker after each task (to free what it held on the GPU);
        # here the run's own process holds the GPU and is gone, so the worker and its fork server stay.
        task = ray.remote(max_calls=0)(_run_task)
        needs = {"num_cpus": self.cpus_per_run, "num_gpus": self.gpus_per_run, "max_retries": self.retries,
                 "retry_exceptions": False}  # fmt: skip
        refs = {task.options(**needs, name=f"usdsim:{job.name}").remote(job, timeout, self.isolation): job
                for job in jobs}  # fmt: skip
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    job = refs.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayError as e:  # the worker died more than `retries` times, ...
                        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                        result = {"exit_code": 1, "status": "crashed", "error": f"Ray: {type(e).__name__}: {first}",
                                  "input_hash": job.input_hash, "recorded": {}}  # fmt: skip
                    yield job, result
        finally:
            for ref in refs:
                ray.cancel(ref, force=True)
            if started:
                ray.shutdown()
