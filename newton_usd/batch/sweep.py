"""``run_sweep``: expand a sweep, skip what ``resume`` finds done, run the rest, write the table."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from ..errors import UsdInputError
from .local_executor import LocalExecutor
from .plan import expand
from .progress import Progress
from .ray_executor import RayExecutor
from .resume import finished
from .spec import load_sweep, sweep_from_dict
from .table import make_row, write_table


@dataclass
class SweepResult:
    """What a sweep did.

    Attributes:
        rows: One dict per run that finished (or was resumed), in sweep order (see :mod:`.table`).
        csv: The path of ``runs.csv``.
        parquet: The path of ``runs.parquet``, None without pyarrow.
        interrupted: Ctrl-C stopped the sweep: the rows of the runs that finished are kept.
        ran: Runs done by this call (the others were resumed).
    """

    rows: list
    csv: str
    parquet: str | None
    interrupted: bool
    ran: int

    @property
    def failed(self) -> list:
        """The rows of runs that did not end with exit 0."""
        return [row for row in self.rows if row["status"] != "ok"]


def run_sweep(
    sweep,
    output: str | None = None,
    *,
    jobs: int | None = None,
    ray: str | None = None,
    timeout: float | None = None,
    resume: bool = False,
    isolation: str | None = None,
    retries: int | None = None,
    cpus_per_run: float | None = None,
    gpus_per_run: float | None = None,
    progress: bool = False,
) -> SweepResult:
    """Run every run of ``sweep`` and write the table; each run's output stage under ``output/runs/``.

    Args:
        sweep: A :class:`Sweep`, a sweep file's path (TOML or JSON) or its keys as a dict.
        output: The output directory (default: the sweep file's ``output``).
        jobs: Runs at once on this machine (default: its cores).
        ray: ``"auto"`` or a Ray cluster's address: each run a Ray task (see :mod:`.ray_executor`).
        timeout: Seconds a run may take before it is killed (its row says so).
        resume: Skip the runs done by an earlier sweep into ``output`` whose inputs are unchanged.
        isolation: ``"fork"`` (default) or ``"subprocess"`` (see :mod:`.launch`).
        retries: Ray: retries of a task whose worker died (default 3).
        cpus_per_run, gpus_per_run: Ray: what each task declares (default 1 CPU; 1 GPU on a CUDA device).
        progress: Draw a progress bar on stderr (when it is a terminal).

    Raises:
        UsdInputError: a malformed sweep or override, a run option usdsim refuses, no stage, no output.
    """
    if isinstance(sweep, str | os.PathLike):
        sweep = load_sweep(os.fspath(sweep))
    elif isinstance(sweep, dict):
        sweep = sweep_from_dict(sweep)
    given = {"output": output, "jobs": jobs, "ray": ray, "timeout": timeout, "isolation": isolation,
             "retries": retries, "cpus_per_run": cpus_per_run, "gpus_per_run": gpus_per_run}  # fmt: skip
    settings = {**sweep.settings, **{k: v for k, v in given.items() if v is not None}}
    if not settings.get("output"):
        raise UsdInputError("no output directory: give -o DIR (or output in the sweep file)")
    if settings.get("timeout") is not None and not settings["timeout"] > 0:
        raise UsdInputError(f"the timeout must be a number of seconds > 0, got {settings['timeout']}")
    directory = os.path.abspath(settings["output"])
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise UsdInputError("the output is not a directory", file=directory)
    planned = expand(sweep, directory)
    rows, todo = {}, []
    for job in planned:
        done = finished(job) if resume else None
        if done is not None:
            rows[job.index] = make_row(job, {**done, "status": "ok"}, resumed=True)
        else:
            todo.append(job)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "sweep.json"), "w") as f:  # what ran, for the record
        json.dump({"sweep": asdict(sweep), "settings": settings, "runs": len(planned)}, f, indent=1, default=str)
    isolation = settings.get("isolation") or "fork"
    if settings.get("ray"):
        device = str(sweep.options.get("device") or "cpu")
        executor = RayExecutor(
            settings["ray"], cpus_per_run=settings.get("cpus_per_run", 1), gpus_per_run=settings.get("gpus_per_run"),
            cuda=device.startswith("cuda"), retries=settings.get("retries", 3), isolation=isolation,
        )  # fmt: skip
    else:
        executor = LocalExecutor(settings.get("jobs"), isolation=isolation)
    bar = Progress(len(todo), enabled=progress, skipped=len(rows))
    runs = executor.run(todo, settings.get("timeout"))
    interrupted, ran = False, 0
    try:
        for job, result in runs:
            rows[job.index] = make_row(job, result)
            bar.update(result)
            ran += 1
    except KeyboardInterrupt:
        interrupted = True
    finally:
        runs.close()
        bar.close()
        ordered = [rows[i] for i in sorted(rows)]
        csv_path, parquet_path = write_table(directory, ordered)
    return SweepResult(ordered, csv_path, parquet_path, interrupted, ran)
