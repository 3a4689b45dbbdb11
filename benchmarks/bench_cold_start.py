"""The first frame of a run, per engine, on an empty Warp kernel cache and on a warm one: what a user waits for.

    python benchmarks/bench_cold_start.py [--stage PATH] [--device cpu|cuda] [--engines xpbd,...,mujoco]
        [--modes parallel,lazy] [--workers N]

Each engine (the four Newton solvers, and ``mujoco``: SolverMuJoCo's warp backend, MuJoCo-Warp) runs in fresh
processes, one after the other, on the stage (default ``sample_stages/boxes_on_ground.usda``), with Warp's kernel
cache pointed at an empty temporary directory (``WARP_CACHE_PATH``) and forward-only kernels (as ``usdsim``): a
*cold* process (every module compiled), then a *warm* one on the cache it left. Two modes, each with a cache of its
own: ``parallel``, the Simulation as it is (its solver's Warp modules loaded by a pool of ``--workers`` threads while
the solver is made and beside the first frame; default: the library's, one per core: :meth:`Simulation.load_kernels`),
and ``lazy``, no pool (each module compiled when it is first launched, one after the other: as before). Each process
times ``Simulation.open`` (the import, the model, the solver: some modules compile there already) and the first frame
(``step_frame``, waited for, its modules loaded); the columns give them in seconds, the total, and for ``parallel``
the time from the pool's start (the solver's setup) to the end of the first frame, with the modules compiled and
loaded meanwhile. The baseline is the ``lazy`` mode in the same run: the
ratio ``lazy/parallel`` of the cold totals is the parallel load's gain on this machine. ``--merge-cache DIR`` copies
each engine's compiled modules into DIR (``gpu_checks.sh``: what runs after starts warm).

Target (issue 40): on a 16-core GPU machine, at most 30 s cold and 2 s warm per engine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
ENGINES = ("xpbd", "featherstone", "semi_implicit", "kamino", "mujoco")
RESULT = "COLD_START_RESULT "


def worker(engine: str, stage: str, device: str, mode: str, workers) -> dict:
    t0 = time.perf_counter()
    import warp as wp  # noqa: PLC0415

    wp.config.enable_backward = False  # (as usdsim: newton_usd.cli.common.forward_only_kernels)
    wp.config.quiet = True
    from newton_usd import Simulation  # noqa: PLC0415

    Simulation.kernel_workers = 0 if mode == "lazy" else workers  # (lazy: no pool, each module compiled as met)
    kw = {"solver": "mujoco", "backend": "warp"} if engine == "mujoco" else {"solver": engine}
    sim = Simulation.open(stage, device=device, live=False, record=False, **kw)
    sim.write = False
    t1 = time.perf_counter()
    sim.step_frame()
    sim.synchronize()
    t2 = time.perf_counter()
    load = sim.kernel_load
    return {"open": t1 - t0, "first_frame": t2 - t1, "preload": load.seconds, "modules": load.modules,
            "compiled": load.compiled, "workers": load.workers}  # fmt: skip


def run_worker(engine, stage, device, mode, workers, cache) -> dict:
    env = {**os.environ, "WARP_CACHE_PATH": cache}
    args = [sys.executable, HERE, "--worker", engine, "--stage", stage, "--device", device, "--modes", mode]
    if workers is not None:
        args += ["--workers", str(workers)]
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return {**json.loads(line[len(RESULT) :]), "process": wall}
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-5:])
    return {"error": f"exit status {proc.returncode}: {tail}"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stage", default=os.path.join(os.path.dirname(os.path.dirname(HERE)), "sample_stages",
                                                   "boxes_on_ground.usda"))  # fmt: skip
    p.add_argument("--device", default="cpu")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--modes", default="parallel,lazy")
    p.add_argument("--workers", type=int, default=None, help="threads of the preload (default: one per core)")
    p.add_argument("--merge-cache", help="a kernel cache to copy each engine's compiled modules into (the runs after "
                   "this one start warm: gpu_checks.sh)")  # fmt: skip
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(RESULT + json.dumps(worker(args.worker, args.stage, args.device, args.modes, args.workers)), flush=True)
        return
    modes = args.modes.split(",")
    print(f"\nFirst frame of {os.path.basename(args.stage)} on {args.device} ({os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f} at the start); fresh processes, seconds: open (import, model, solver), first "
          "frame (waited for, its kernels loaded), total; cold: an empty kernel cache, warm: the cache the cold "
          "process left. parallel: the solver's modules loaded by a pool while it is made and beside the first frame "
          "(from the pool's start to the frame's end beside); lazy: as met, one after the other.")  # fmt: skip
    print(f"{'engine':<14} {'mode':<9} {'cold open':>9} {'frame':>8} {'total':>8} {'preload (compiled/modules)':>28}"
          f" {'warm open':>10} {'frame':>7} {'total':>7}")  # fmt: skip
    for engine in args.engines.split(","):
        totals = {}
        for mode in modes:
            with tempfile.TemporaryDirectory(prefix="newton_usd_cold_cache_") as cache:
                cold = run_worker(engine, args.stage, args.device, mode, args.workers, cache)
                warm = run_worker(engine, args.stage, args.device, mode, args.workers, cache)
                if args.merge_cache:
                    shutil.copytree(cache, args.merge_cache, dirs_exist_ok=True)
            if "error" in cold or "error" in warm:
                print(f"{engine:<14} {mode:<9} failed: {cold.get('error') or warm.get('error')}", flush=True)
                continue
            totals[mode] = cold["open"] + cold["first_frame"]
            pre = (f"{cold['preload']:.1f} s ({cold['compiled']}/{cold['modules']}, {cold['workers']} thr)"
                   if mode == "parallel" else "")  # fmt: skip
            print(f"{engine:<14} {mode:<9} {cold['open']:>9.1f} {cold['first_frame']:>8.1f} {totals[mode]:>8.1f} "
                  f"{pre:>28} {warm['open']:>10.2f} {warm['first_frame']:>7.2f} "
                  f"{warm['open'] + warm['first_frame']:>7.2f}", flush=True)  # fmt: skip
        if len(totals) == 2:
            print(f"{engine:<14} lazy/parallel, cold total: {totals['lazy'] / totals['parallel']:.2f}", flush=True)
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
