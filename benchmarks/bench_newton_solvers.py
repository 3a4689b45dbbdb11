"""Newton's solvers under newton_usd: what the bridge costs.

    python benchmarks/bench_newton_solvers.py [--stage PATH] [--steps 200] [--repeat 3] [--device cpu|cuda]
        [--worlds N] [--solvers xpbd,featherstone,semi_implicit,kamino] [--newton-python PY] [--import-stage PATH]

Table 1, per solver: steps per second of our ``solver.step`` (State/Control exchange and Newton's collision
pipeline included) against the same Newton solver stepped directly on the bridged ``newton.Model`` with
Newton's own States (``collide`` + ``step``, contact forces requested where our step requests them: xpbd,
kamino), in one process, in pairs of blocks of 20 steps back to back (each
side going first in turn; ``--repeat`` x ``--steps`` / 20 pairs), each pair over the same stretch of the
simulation (both sides step identical states). The ratio, which should be at least 0.95, is the median of the
pairs' ratios (their quartiles beside it: the spread a shared machine leaves), the steps per second the median
block of each side. (The fastest block of each side, which this benchmark kept before, swung by 20 % between
runs on a busy 2-core machine: each side's minimum depends on whether a quiet moment fell in one of its blocks.)
On Warp's CPU device the kernels run in the calling thread, so blocks are timed with ``time.thread_time``
(the CPU time this thread spent: what other processes on a shared machine take is not counted against either
side); on a GPU with synchronized wall time. The last column is the largest difference of the bodies' poses
after as many steps (the exchange is exact: 0), or that both diverged. The stage defaults to
``sample_stages/boxes_on_ground.usda`` (Newton's ``ant.usda`` diverges under featherstone and semi_implicit at
this step). ``--worlds N`` replicates the stage into N independent worlds (``ModelBuilder.replicate``) first:
on a GPU, where one small world leaves the chip idle between kernel launches, the figure that counts.

Table 2 (with ``--newton-python``, a venv holding ``newton==1.8.0 "usd-core>=25.5,<26.9" newton-usd-schemas``,
see ``bench_import.py``): on Newton's ``ant_multi.usda`` (64 ants), our ``add_usd`` + ``finalize`` + the bridge
to a ``newton.Model`` against Newton's ``ModelBuilder.add_usd`` + ``finalize``: two rounds, each a fresh
process per side (the side going first alternating), each process timing a first run and ``--repeat`` warm
runs; the median warm wall time of each side (the process's CPU time beside it; a median, not the best: the
best of a 0.6 s run would find a quiet moment on a shared machine more often than that of a 7 s one), and the
largest difference of the bodies' positions over the first 100 XPBD steps of each model (bodies matched by
label, i.e. prim path).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
RESULT = "BENCH_NEWTON_RESULT "
SOLVER_NAMES = ("xpbd", "featherstone", "semi_implicit", "kamino")


def _newton_asset(name: str) -> str:
    import importlib.util

    spec = importlib.util.find_spec("newton")
    return os.path.join(os.path.dirname(spec.origin), "tests", "assets", name)


# ---------------------------------------------------------------- table 1: step speed, in this process
def step_rates(stage: str, solvers, steps: int, repeat: int, device: str, worlds: int = 1) -> list:
    return [_step_rate(name, stage, steps, repeat, device, worlds) for name in solvers]


def _step_rate(name: str, stage: str, steps: int, repeat: int, device: str, worlds: int = 1) -> dict:
    """One solver's row: our step against the same Newton solver stepped directly on the bridged model."""
    import numpy as np
    import warp as wp

    wp.config.quiet = True
    from newton_usd.core import ModelBuilder
    from newton_usd.solvers import SOLVERS
    from newton_usd.usd import add_usd

    builder = ModelBuilder()
    add_usd(builder, stage)
    if worlds > 1:
        builder.replicate(worlds)
    model = builder.finalize(device)
    try:
        solver = SOLVERS[name](model)
    except Exception as e:  # noqa: BLE001  (a solver refusing the model is a result)
        return {"solver": name, "error": str(e).splitlines()[0]}
    dt = 1.0 / 480.0
    ours = [model.state(), model.state()]
    control = model.control()
    nm, ns = solver.newton_model, solver.newton_solver
    theirs = [nm.state(), nm.state()]
    ncontrol = nm.control()
    contacts = solver.collision_pipeline.contacts()
    # (our step asks the solvers that report contact forces for them: so does the direct one)
    forces = solver.contact_forces
    observables = None if forces is None else ns.observables(forces.kinds, contacts=contacts)

    def run_ours(n):
        for _ in range(n):
            solver.step(ours[0], ours[1], control, None, dt)
            ours.reverse()
        wp.synchronize_device(model.device)

    def run_direct(n):
        for _ in range(n):
            solver.collision_pipeline.collide(theirs[0], contacts)
            ns.step(theirs[0], theirs[1], ncontrol, contacts, dt, observables=observables)
            theirs.reverse()
        wp.synchronize_device(model.device)

    # On Warp's CPU device the kernels run in this thread: its CPU time (time.thread_time) is what each side
    # spent, not what other processes on a shared machine took from it. On a GPU: wall time, synchronized.
    clock = time.thread_time if wp.get_device(model.device).is_cpu else time.perf_counter
    try:
        run_ours(10)  # kernels compiled or loaded, caches warm
        run_direct(10)
        # Pairs of blocks of 20 steps, ours and direct back to back (each going first in turn) over the same
        # stretch of the simulation (both step identical states): the ratio is the median of the pairs' ratios.
        block = min(20, steps)
        pair = (("ours", run_ours), ("direct", run_direct))
        seconds = {"ours": [], "direct": []}
        for i in range(repeat * max(1, steps // block)):
            for key, fn in pair if i % 2 else pair[::-1]:
                t0 = clock()
                fn(block)
                seconds[key].append(clock() - t0)
    except Exception as e:  # noqa: BLE001
        return {"solver": name, "error": str(e).splitlines()[0]}
    ratios = np.asarray(seconds["direct"]) / np.asarray(seconds["ours"])
    rate = {key: block / float(np.median(t)) for key, t in seconds.items()}
    same = float(np.abs(ours[0].body_q.numpy() - theirs[0].body_q.numpy()).max())  # after as many steps
    diverged = not np.isfinite(ours[0].body_q.numpy()).all() or not np.isfinite(theirs[0].body_q.numpy()).all()
    return {
        "solver": name, "ours": rate["ours"], "direct": rate["direct"], "ratio": float(np.median(ratios)),
        "quartiles": (float(np.percentile(ratios, 25)), float(np.percentile(ratios, 75))),
        "pairs": len(ratios), "difference": same, "diverged": diverged,
        "clock": "thread CPU time" if clock is time.thread_time else "wall time",
    }  # fmt: skip


# ---------------------------------------------------------------- table 2: import, in fresh processes
def _positions(body_q, labels) -> dict:
    return {label: [float(x) for x in body_q[b, :3]] for b, label in enumerate(labels)}


def worker(which: str, stage: str, repeat: int, steps: int) -> dict:
    import gc

    import warp as wp

    wp.config.quiet = True
    import newton

    times, cpu = [], []
    for _ in range(1 + repeat):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        if which == "ours":
            from newton_usd.core import ModelBuilder
            from newton_usd.diagnostics import Diagnostics
            from newton_usd.solvers.newton import bridge_model
            from newton_usd.usd import add_usd

            builder = ModelBuilder()
            add_usd(builder, stage)
            model = builder.finalize("cpu")
            nm = bridge_model(model, Diagnostics(), "xpbd").newton_model
        else:
            builder = newton.ModelBuilder()
            builder.add_usd(stage)
            nm = builder.finalize("cpu")
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    if not steps:
        return {"impl": which, "times": times, "cpu": cpu, "bodies": nm.body_count, "trajectory": []}
    solver = newton.solvers.SolverXPBD(nm)
    pipeline = newton.CollisionPipeline(nm)
    contacts = pipeline.contacts()
    states, control = [nm.state(), nm.state()], nm.control()
    newton.eval_fk(nm, nm.joint_q, nm.joint_qd, states[0])
    trajectory = []
    for _ in range(steps):
        pipeline.collide(states[0], contacts)
        solver.step(states[0], states[1], control, contacts, 1.0 / 480.0)
        states.reverse()
        trajectory.append(_positions(states[0].body_q.numpy(), nm.body_label))
    return {"impl": which, "times": times, "cpu": cpu, "bodies": nm.body_count, "trajectory": trajectory}


def run_worker(python: str, which: str, stage: str, repeat: int, steps: int) -> dict:
    env = dict(os.environ)
    if which == "newton":
        env.pop("PYTHONPATH", None)
        env.pop("PXR_PLUGINPATH_NAME", None)
    args = [python, HERE, "--worker", which, "--import-stage", stage, "--repeat", str(repeat), "--steps", str(steps)]
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
    return {"impl": which, "error": f"exit status {proc.returncode}\n{tail}"}


def compare_imports(stage: str, newton_python: str, repeat: int, rounds: int = 2) -> None:
    """``rounds`` rounds, each a fresh process per side (the side going first alternating), each process timing
    a first run and ``repeat`` warm runs; the first round also steps both models 100 times."""
    import numpy as np

    results = {"ours": [], "newton": []}
    for r in range(rounds):
        for which in ("ours", "newton") if r % 2 == 0 else ("newton", "ours"):
            python = sys.executable if which == "ours" else newton_python
            result = run_worker(python, which, stage, repeat, 100 if r == 0 else 0)
            if "error" in result:
                print(f"{which}: {result['error']}")
                return
            results[which].append(result)
    ours, theirs = results["ours"][0], results["newton"][0]
    warm = {k: float(np.median([t for x in v for t in (x["times"][1:] or x["times"])])) for k, v in results.items()}
    cpu = {k: float(np.median([t for x in v for t in (x["cpu"][1:] or x["cpu"])])) for k, v in results.items()}
    first = {k: min(x["times"][0] for x in v) for k, v in results.items()}
    name = os.path.basename(stage)
    print(
        f"\nimport + finalize (+ bridge for ours) of {name}, {ours['bodies']} bodies, median of {rounds * repeat} "
        f"warm runs in {rounds} interleaved processes per side (wall time; CPU time of the process in brackets):"
    )
    print(
        f"  newton_usd (add_usd + finalize + bridge): {warm['ours']:.3f} s ({cpu['ours']:.3f} s CPU; "
        f"first run {first['ours']:.3f} s)"
    )
    print(
        f"  newton ModelBuilder.add_usd + finalize:   {warm['newton']:.3f} s ({cpu['newton']:.3f} s CPU; "
        f"first run {first['newton']:.3f} s)"
    )
    print(f"  speedup: {warm['newton'] / warm['ours']:.1f}x wall ({cpu['newton'] / cpu['ours']:.1f}x CPU; target 10x)")
    worst, label_at = 0.0, None
    common = set(ours["trajectory"][0]) & set(theirs["trajectory"][0])
    for a, b in zip(ours["trajectory"], theirs["trajectory"], strict=True):
        for label in common:
            d = max(abs(x - y) for x, y in zip(a[label], b[label], strict=True))
            if d > worst:
                worst, label_at = d, label
    print(f"  first 100 XPBD steps: {len(common)} bodies matched by label; largest position difference "
          f"{worst:.2e} m ({label_at})")  # fmt: skip


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stage", help="stage for table 1 (default: sample_stages/boxes_on_ground.usda)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument("--worlds", type=int, default=1, help="table 1: the stage replicated into this many worlds")
    p.add_argument("--solvers", default=",".join(SOLVER_NAMES))
    p.add_argument("--newton-python", default=os.environ.get("NEWTON_PYTHON"), type=os.path.abspath)
    p.add_argument("--import-stage", help="stage for table 2 (default: Newton's ant_multi.usda)")
    p.add_argument("--worker", choices=("ours", "newton"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(RESULT + json.dumps(worker(args.worker, args.import_stage, args.repeat, args.steps)))
        return
    stage = args.stage or os.path.join(os.path.dirname(os.path.dirname(HERE)), "sample_stages", "boxes_on_ground.usda")
    rows = step_rates(stage, args.solvers.split(","), args.steps, args.repeat, args.device, args.worlds)
    clock = next((r["clock"] for r in rows if "clock" in r), "")
    pairs = next((r["pairs"] for r in rows if "pairs" in r), 0)
    where = f"{args.device}" + (f", {args.worlds} worlds" if args.worlds > 1 else "")
    print(f"{os.path.basename(stage)} on {where}, steps of 1/480 s, {pairs} pairs of blocks of 20 steps "
          f"({clock}); steps/s: the median block of each side; ratio: the median of the pairs' ours/direct "
          "(quartiles beside it):")  # fmt: skip
    print(f"{'solver':<14} {'ours (steps/s)':>15} {'newton direct':>14} {'ratio':>7} {'quartiles':>13}  "
          "body_q ours vs direct")  # fmt: skip
    for r in rows:
        if "error" in r:
            print(f"{r['solver']:<14} failed: {r['error']}")
        else:
            same = "both diverged (NaN): timings not meaningful" if r["diverged"] else f"{r['difference']:.1e} m"
            quartiles = "{:.3f}-{:.3f}".format(*r["quartiles"])
            rates = f"{r['ours']:>15,.0f} {r['direct']:>14,.0f}"
            print(f"{r['solver']:<14} {rates} {r['ratio']:>7.3f} {quartiles:>13}  {same}")
    if args.newton_python:
        compare_imports(args.import_stage or _newton_asset("ant_multi.usda"), args.newton_python, args.repeat)
    else:
        print("\n(no --newton-python: the import comparison on ant_multi.usda is skipped)")


if __name__ == "__main__":
    main()
