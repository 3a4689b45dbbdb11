"""One run, inside the process made for it: ``usdsim run``, then the recorded values read from its output.

:func:`run_job` is the same code in both isolations (see :mod:`newton_usd.batch.launch`): called in a
process forked from a server that has imported what a run needs, or in a fresh interpreter
(``python -m newton_usd.batch.worker TASK.json``). Its stdout and stderr (and native libraries'
output) go to ``usdsim.log`` in the run's directory; what it found goes to ``result.json`` there.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import signal
import sys
import time
import traceback

from ..cli.common import forward_only_kernels
from .resume import write_result

forward_only_kernels()  # a run never differentiates; set before PRELOAD's modules import Warp's kernels

LOG_FILE = "usdsim.log"
TASK_FILE = "task.json"
# Imported once by the fork server, so that each run starts with them loaded (about 1.5 s of imports).
PRELOAD = ["newton_usd.batch.worker", "newton_usd.cli.run", "newton_usd.sim", "newton_usd.solvers", "warp", "tqdm"]


def die_with_parent() -> None:
    """Ask Linux to kill this process when the one that started it dies (a killed sweep, a lost Ray
    worker): no orphan run goes on writing an output that a retry writes again."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_job(task: dict) -> int:
    """Run ``usdsim`` with ``task["argv"]`` in this process and write ``result.json``; returns the exit code.

    Args:
        task: ``argv`` (usdsim's), ``run_dir``, ``output``, ``record`` (prims and ``PRIM.ATTR``), ``env``,
            ``input_hash``.
    """
    die_with_parent()
    os.environ.update(task.get("env") or {})
    log_path = os.path.join(task["run_dir"], LOG_FILE)
    with open(log_path, "a") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    from .. import cli  # noqa: PLC0415

    summary, error = {}, None
    captured = io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(captured):
            code = cli.main(task["argv"])
    except BaseException as e:  # noqa: BLE001  (a bug or an interrupt: the row says which)
        traceback.print_exc()
        code, error = (130 if isinstance(e, KeyboardInterrupt) else 1), f"{type(e).__name__}: {e}"
    seconds = time.perf_counter() - start
    with contextlib.suppress(ValueError):
        summary = json.loads(captured.getvalue() or "{}")
    sys.stderr.flush()
    error = summary.get("error") or error or (last_error_line(log_path) if code else None)
    recorded = {}
    if os.path.exists(task["output"]) and task.get("record"):
        try:
            recorded = read_recorded(task["output"], task["record"])
        except Exception as e:  # noqa: BLE001
            error = error or f"reading the recorded values: {type(e).__name__}: {e}"
    result = {
        "exit_code": code,
        "error": error,
        "frames": summary.get("frames"),
        "steps": summary.get("steps"),
        "sim_seconds": summary.get("sim_seconds"),
        "steps_per_second": summary.get("steps_per_second"),
        "setup_seconds": summary.get("setup_seconds"),
        "solver_seconds": summary.get("solver_seconds"),
        "sync_seconds": summary.get("sync_seconds"),
        "run_seconds": seconds,
        "output": task["output"] if os.path.exists(task["output"]) else None,
        "input_hash": task.get("input_hash"),
        "recorded": recorded,
    }
    write_result(task["run_dir"], result)
    return code


def last_error_line(log_path: str) -> str | None:
    """The run's error as usdsim printed it (``usdsim: error: ...``), else the log's last line."""
    try:
        with open(log_path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return None
    errors = [line for line in lines if line.startswith("usdsim: error:")]
    line = errors[-1] if errors else (lines[-1] if lines else None)
    return line[len("usdsim: error: ") :] if line and line.startswith("usdsim: error:") else line


def read_recorded(output: str, record) -> dict:
    """The values at the output's last time code: a prim's world pose (``P@end.x`` .. ``P@end.qw``, stage
    units), an attribute's value (``P.attr@end``, vectors as ``P.attr@end[i]``)."""
    from pxr import Gf, Sdf, Usd, UsdGeom  # noqa: PLC0415

    stage = Usd.Stage.Open(output)
    time_code = Usd.TimeCode(stage.GetEndTimeCode())
    cache = UsdGeom.XformCache(time_code)
    values = {}
    for text in record:
        path = Sdf.Path(text)
        prim = stage.GetPrimAtPath(path.GetPrimPath())
        if path.IsPrimPath():
            transform = Gf.Transform(cache.GetLocalToWorldTransform(prim)) if prim else None
            t = transform.GetTranslation() if transform else (None,) * 3
            q = transform.GetRotation().GetQuat() if transform else None
            qxyzw = (*q.GetImaginary(), q.GetReal()) if q else (None,) * 4
            for key, v in zip(("x", "y", "z", "qx", "qy", "qz", "qw"), (*t, *qxyzw), strict=True):
                values[f"{text}@end.{key}"] = v
            continue
        attr = prim.GetAttribute(path.name) if prim else None
        value = attr.Get(time_code) if attr else None
        if value is not None and not isinstance(value, bool | int | float | str):
            try:
                for i, v in enumerate(value):
                    values[f"{text}@end[{i}]"] = v
                continue
            except TypeError:
                value = str(value)
        values[f"{text}@end"] = value
    return values


def main(argv=None) -> int:
    """``python -m newton_usd.batch.worker TASK.json``: one run in a fresh interpreter."""
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        return run_job(json.load(f))


if __name__ == "__main__":
    sys.exit(main())
