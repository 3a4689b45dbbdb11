"""What a run of a sweep costs beyond its simulation: serial usdsim processes, the local executor, Ray.

    python benchmarks/bench_batch.py [--runs 64] [--stage sample_stages/pendulum.usda] [--skip-ray]

N one-second runs (``--duration 1``) of a sample stage, each with its own mass (``--set``/``--vary``),
in one process of this benchmark:

- serial usdsim: ``usdsim STAGE --set ... --format json`` as a shell loop runs it, one process after another;
- local fork: ``run_sweep(jobs=cores)``, each run forked from a server that has imported usdsim once;
- local subprocess: the same with ``isolation="subprocess"``, a fresh interpreter per run;
- ray: ``run_sweep(ray="auto")`` on a local Ray instance of all cores (its start timed apart).

Columns: wall time, runs per second, and the per-run overhead: the wall time times the runs at once,
per run, less the mean time usdsim itself reports for the run (setup, solver, writing the stage):
interpreter start, imports, process creation and scheduling.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MASS = "/World/Pendulum/Bob.physics:mass"


def _masses(n: int) -> list:
    return [round(0.5 + 1.5 * i / max(1, n - 1), 6) for i in range(n)]


def serial_usdsim(stage: str, n: int, out: str) -> tuple:
    """(wall seconds, mean usdsim-reported seconds) of n usdsim processes one after another."""
    usdsim = os.path.join(os.path.dirname(sys.executable), "usdsim")
    inside = []
    start = time.perf_counter()
    for i, mass in enumerate(_masses(n)):
        argv = [usdsim, stage, "-o", os.path.join(out, f"run{i}.sim.usda"), "--duration", "1", "--format", "json",
                "--set", f"{MASS}={mass}"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        s = json.loads(done.stdout)
        inside.append(s["setup_seconds"] + s["solver_seconds"] + s["sync_seconds"])
    return time.perf_counter() - start, sum(inside) / n


def sweep(stage: str, n: int, out: str, **how) -> tuple:
    """(wall seconds, mean usdsim-reported seconds, rows) of one run_sweep."""
    from newton_usd.batch import run_sweep  # noqa: PLC0415
    from newton_usd.batch.resume import read_result  # noqa: PLC0415

    spec = {"stages": [stage], "grid": {MASS: _masses(n)}, "duration": 1.0}
    start = time.perf_counter()
    result = run_sweep(spec, out, **how)
    wall = time.perf_counter() - start
    assert len(result.rows) == n and not result.failed, result.failed[:1]
    inside = []
    for row in result.rows:
        r = read_result(os.path.dirname(row["output"]))
        inside.append(r["setup_seconds"] + r["solver_seconds"] + r["sync_seconds"])
    return wall, sum(inside) / n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=64)
    p.add_argument("--stage", default=os.path.join(ROOT, "sample_stages", "pendulum.usda"))
    p.add_argument("--skip-ray", action="store_true")
    args = p.parse_args()
    cores = os.cpu_count() or 1
    n, stage = args.runs, os.path.abspath(args.stage)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        wall, inside = serial_usdsim(stage, n, tmp)
        rows.append(("serial usdsim", 1, wall, inside))
        wall, inside = sweep(stage, n, os.path.join(tmp, "fork"), jobs=cores)
        rows.append(("local fork", cores, wall, inside))
        wall, inside = sweep(stage, n, os.path.join(tmp, "subprocess"), jobs=cores, isolation="subprocess")
        rows.append(("local subprocess", cores, wall, inside))
        ray_start = None
        if not args.skip_ray:
            import ray  # noqa: PLC0415

            t = time.perf_counter()
            ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
            ray_start = time.perf_counter() - t
            wall, inside = sweep(stage, n, os.path.join(tmp, "ray"), ray="auto")
            rows.append(("ray (local)", cores, wall, inside))
            ray.shutdown()
    print(f"{n} runs of {os.path.relpath(stage, ROOT)} (--duration 1), {cores} cores")
    print(f"{'executor':<18} {'at once':>7} {'wall s':>8} {'runs/s':>7} {'per run s':>10} {'usdsim s':>9} "
          f"{'overhead s':>10} {'vs serial':>9}")  # fmt: skip
    base = rows[0][2]
    for name, slots, wall, inside in rows:
        per_run = wall * slots / n
        print(f"{name:<18} {slots:>7} {wall:>8.2f} {n / wall:>7.2f} {per_run:>10.3f} {inside:>9.3f} "
              f"{per_run - inside:>10.3f} {base / wall:>8.1f}x")  # fmt: skip
    if ray_start is not None:
        print(f"(ray.init of the local instance: {ray_start:.1f} s, not in the ray row)")


if __name__ == "__main__":
    main()
