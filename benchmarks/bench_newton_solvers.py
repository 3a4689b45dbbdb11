"""Newton's solvers under newton_usd: what the bridge costs.

    python benchmarks/bench_newton_solvers.py [--stage PATH|ant|humanoid ...] [--steps 200] [--repeat 3]
        [--device cpu|cuda] [--worlds 1,1024,4096] [--substeps 4] [--eager-up-to N] [--usdsim]
        [--solvers xpbd,featherstone,semi_implicit,kamino] [--newton-python PY] [--import-stage PATH]

Table 1, per stage, world count and solver, four sides on the same bridged model: ``step``, our ``solver.step``
a step at a time (State/Control exchange and Newton's collision pipeline included); ``direct``, the same Newton
solver stepped directly with Newton's own States (``collide`` + ``step``, contact forces requested where our step
requests them: xpbd, kamino); ``frame``, our ``simulate_frame`` (``--substeps`` steps a frame: one CUDA graph on a
GPU, see docs/gpu.md); ``examples``, Newton captured as its examples capture ``simulate()`` (``wp.ScopedCapture``
once, ``wp.capture_launch`` each frame; eager on the CPU). Blocks of about 20 steps of every side run back to back,
the order turning each round, ``--repeat`` x ``--steps`` / 20 rounds; rates are each side's median block, in steps/s
and world-steps/s; the ratios (``frame/examples``, which should be at least 0.95; ``step/direct``; ``frame/step``,
the speedup of the frame over a step at a time) the median of the rounds' ratios, their quartiles beside (the
spread a shared machine leaves). On Warp's CPU device the kernels run in the calling thread, so blocks are timed
with ``time.thread_time`` (what other processes take is not counted against either side); on a GPU with
synchronized wall time. The notes line says whether our frame was captured (else why not) and the largest
difference of the bodies' poses between sides after as many steps (the exchange is exact: 0), or that they
diverged. ``--usdsim`` adds two rows, a Simulation end to end against Newton captured as its examples:
``step_frame`` frame after frame with nothing written (no wait for the device but every ``check_every`` frames), and
``run`` as ``usdsim run`` runs one (world 0's poses written every frame, behind the device). The stage defaults to
``sample_stages/boxes_on_ground.usda`` (Newton's ``ant.usda`` diverges under featherstone and semi_implicit at
this step); ``ant`` and ``humanoid`` are Newton's examples' assets. ``--worlds`` replicates the stage into N
independent worlds (``ModelBuilder.replicate``) first, one table per count; ``--eager-up-to`` leaves the two
step-at-a-time sides out above that many worlds (slow on a GPU).

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
def _end_to_end(name: str, stage: str, device: str, worlds: int, substeps: int, steps: int, repeat: int) -> dict:
    """Steps/s of a Simulation (frames of ``substeps`` steps of 1/480 s), the median of ``repeat`` runs of ``steps``:
    ``step_frame``, frame after frame with nothing written (``sim.write = False``; the device's checks read every
    ``check_every`` frames), waited for at the end (``synchronize``); ``run``, as ``usdsim run`` runs one (world 0's
    poses written onto the stage every frame, 32 frames a batch, behind the device)."""
    import numpy as np

    from newton_usd import Simulation

    sim = Simulation.open(stage, solver=name, device=device, worlds=worlds, fps=480.0 / substeps, substeps=substeps,
                          live=False)  # fmt: skip
    sim.write_batch = 32
    frames = max(1, steps // substeps)
    sim.run(3)  # (the warm-up frame and the capture)
    clock = time.thread_time if sim.model.device.is_cpu else time.perf_counter  # (as the other sides)

    def step_frames():
        sim.write = False
        for _ in range(frames):
            sim.step_frame()
        sim.synchronize()
        sim.write = True

    def run():
        sim.run(frames)
        sim.flush()

    rates = {}
    for key, loop in (("step_frame", step_frames), ("run", run)):
        times = []
        for _ in range(repeat):
            t0 = clock()
            loop()
            times.append(clock() - t0)
        rates[key] = frames * substeps / float(np.median(times))
    sim.close()
    return rates


SIDES = ("ours", "direct", "frame", "examples")
"""Table 1's columns: our step, Newton's stepped directly (both a step at a time from Python), our frame
(``simulate_frame``: one CUDA graph a frame where the device allows), Newton captured as its examples."""


def _examples_frame(solver, states, control, contacts, observables, dt, substeps):
    """Newton's ``simulate()`` as its examples write it (``example_basic_shapes.py``): per substep the collision
    pipeline and the solver, the states swapped; an odd count ends with ``state_0.assign(state_1)`` (the swap
    inside a graph is frozen: Newton #4098)."""
    pipeline, ns = solver.collision_pipeline, solver.newton_solver

    def simulate():
        a, b = states
        for _ in range(substeps):
            pipeline.collide(a, contacts)
            ns.step(a, b, control, contacts, dt, observables=observables)
            a, b = b, a
        if a is not states[0]:
            states[0].assign(a)

    return simulate


def _capture(device, fn):
    """``fn`` captured as Newton's examples do (``wp.ScopedCapture`` once, then ``wp.capture_launch``) on a CUDA
    device with memory pools, after one eager call; else ``fn`` itself."""
    import warp as wp

    fn()  # (warm-up: modules loaded, buffers allocated)
    if not wp.get_device(device).is_cuda or not wp.is_mempool_enabled(device):
        return fn
    try:
        with wp.ScopedCapture(device=device) as capture:
            fn()
    except Exception as e:  # noqa: BLE001  (e.g. Kamino without conditional graph nodes: as its examples, eager)
        print(f"(Newton's frame not captured: {str(e).splitlines()[0] if str(e) else type(e).__name__})")
        return fn
    graph = capture.graph
    return lambda: wp.capture_launch(graph)


def _step_rate(name: str, stage: str, steps: int, repeat: int, device: str, worlds: int = 1, substeps: int = 4,
               eager: bool = True, end_to_end: bool = False) -> dict:  # fmt: skip
    """One solver's row: our step, Newton's direct step, our frame and Newton's captured frame, on the bridged
    model (``eager`` False: the two step-at-a-time columns are left out)."""
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
        # The frame sides get a solver (and a Newton model) of their own: a captured frame and a step at a time
        # on one solver interleaved gave featherstone's step and direct sides poses 2 cm apart (seen on Warp's CPU
        # device with its graphs, and on an H200); each path alone matches its Newton counterpart.
        fsolver = SOLVERS[name](model) if eager else solver
    except Exception as e:  # noqa: BLE001  (a solver refusing the model is a result)
        return {"solver": name, "error": str(e).splitlines()[0]}
    dt = 1.0 / 480.0
    nm, ns = solver.newton_model, solver.newton_solver
    # (our step asks the solvers that report contact forces for them: so does the direct one)
    forces = solver.contact_forces
    ours, theirs = [model.state(), model.state()], [nm.state(), nm.state()]
    fnm, fns = fsolver.newton_model, fsolver.newton_solver
    framed, examples = [model.state(), model.state()], [fnm.state(), fnm.state()]
    control, ncontrol, fcontrol = model.control(), nm.control(), fnm.control()
    contacts, fcontacts = solver.collision_pipeline.contacts(), fsolver.collision_pipeline.contacts()
    observables = None if forces is None else ns.observables(forces.kinds, contacts=contacts)
    fobservables = None if forces is None else fns.observables(forces.kinds, contacts=fcontacts)
    sync = lambda: wp.synchronize_device(model.device)  # noqa: E731

    def run_ours(n):
        for _ in range(n):
            solver.step(ours[0], ours[1], control, None, dt)
            ours.reverse()
        sync()

    def run_direct(n):
        for _ in range(n):
            solver.collision_pipeline.collide(theirs[0], contacts)
            ns.step(theirs[0], theirs[1], ncontrol, contacts, dt, observables=observables)
            theirs.reverse()
        sync()

    def run_frame(n):
        for _ in range(n // substeps):
            fsolver.simulate_frame(framed[0], framed[1], control, dt, substeps)
        sync()

    example_frame = None

    def run_examples(n):
        for _ in range(n // substeps):
            example_frame()
        sync()

    runs = {"ours": run_ours, "direct": run_direct, "frame": run_frame, "examples": run_examples}
    sides = SIDES if eager else ("frame", "examples")
    # On Warp's CPU device the kernels run in this thread: its CPU time (time.thread_time) is what each side
    # spent, not what other processes on a shared machine took from it. On a GPU: wall time, synchronized.
    clock = time.thread_time if wp.get_device(model.device).is_cpu else time.perf_counter
    block = _block(steps, substeps)
    try:
        if eager:
            run_ours(2 * substeps)  # kernels compiled or loaded, caches warm
            run_direct(2 * substeps)
        for _ in range(2):  # (a warm-up frame, then the capture, then a replay)
            fsolver.simulate_frame(framed[0], framed[1], control, dt, substeps)
        example_frame = _capture(model.device, _examples_frame(fsolver, examples, fcontrol, fcontacts, fobservables, dt,
                                                               substeps))  # fmt: skip
        run_examples(substeps)
        sync()
        # Blocks of the same number of steps of every side back to back (the order turning each round) over
        # comparable stretches of the simulation: each ratio is the median of the rounds' ratios.
        seconds = {key: [] for key in sides}
        for i in range(repeat * max(1, steps // block)):
            k = i % len(sides)
            for key in sides[k:] + sides[:k]:
                t0 = clock()
                runs[key](block)
                seconds[key].append(clock() - t0)
    except Exception as e:  # noqa: BLE001
        return {"solver": name, "error": str(e).splitlines()[0]}
    rate = {key: block / float(np.median(t)) for key, t in seconds.items()}

    def ratio(a, b):
        r = np.asarray(seconds[b]) / np.asarray(seconds[a])
        return float(np.median(r)), (float(np.percentile(r, 25)), float(np.percentile(r, 75)))

    finite = all(np.isfinite(s[0].body_q.numpy()).all() for s in (ours, theirs, framed, examples))
    out = {
        "solver": name, "rate": rate, "worlds": worlds, "pairs": len(seconds["frame"]), "diverged": not finite,
        "captured": fsolver.frame_capture.captures > 0, "eager_reason": fsolver.frame_capture.eager_reason,
        "clock": "thread CPU time" if clock is time.thread_time else "wall time",
        "frame_vs_examples": ratio("frame", "examples"),
        "frame_difference": float(np.abs(framed[0].body_q.numpy() - examples[0].body_q.numpy()).max()),
    }  # fmt: skip
    if end_to_end:
        out["simulation"] = _end_to_end(name, stage, device, worlds, substeps, steps, repeat)
    if eager:
        out["step_vs_direct"] = ratio("ours", "direct")
        out["frame_vs_step"] = ratio("frame", "ours")
        out["difference"] = float(np.abs(ours[0].body_q.numpy() - theirs[0].body_q.numpy()).max())
    return out


def print_header(stage: str, device: str, worlds: int, substeps: int, steps: int, repeat: int) -> None:
    """Table 1's header (its rows follow as each solver is measured: a run cut short keeps those done)."""
    print(f"\n{os.path.basename(stage)} on {_device_name(device)}, {worlds} world(s), steps of 1/480 s, frames of "
          f"{substeps} steps, blocks of {_block(steps, substeps)} steps ({_clock_name(device)}); rates: the median "
          "block; ratios: the median of the rounds' (quartiles in brackets). step: ours a step at a time; direct: "
          "Newton's solver stepped directly; frame: our simulate_frame (captured: one CUDA graph a frame); examples: "
          "Newton captured as its examples.")  # fmt: skip
    print(f"{'solver':<14} {'side':<9} {'steps/s':>12} {'world-steps/s':>15}   ratios", flush=True)


def print_row(r: dict) -> None:
    """One solver's lines of table 1."""
    if "error" in r:
        print(f"{r['solver']:<14} failed: {r['error']}", flush=True)
        return
    ratios = {"frame": ("frame/examples", r["frame_vs_examples"])}
    if "step_vs_direct" in r:
        ratios["ours"] = ("step/direct", r["step_vs_direct"])
        ratios["examples"] = ("frame/step", r["frame_vs_step"])
    for side, steps_per_second in r["rate"].items():
        label = {"ours": "step", "direct": "direct", "frame": "frame", "examples": "examples"}[side]
        text = ""
        if side in ratios:
            what, (value, (q1, q3)) = ratios[side]
            text = f"{what} {value:.3f} ({q1:.3f}-{q3:.3f})"
        print(f"{r['solver']:<14} {label:<9} {steps_per_second:>12,.0f} {steps_per_second * r['worlds']:>15,.0f}"
              f"   {text}")  # fmt: skip
    for side, rate in r.get("simulation", {}).items():
        what = "nothing written" if side == "step_frame" else "world 0 written every frame"
        print(f"{r['solver']:<14} {side:<10}{rate:>12,.0f} {rate * r['worlds']:>15,.0f}   {side}/examples "
              f"{rate / r['rate']['examples']:.3f} (a Simulation end to end: {what})")  # fmt: skip
    notes = ["captured" if r["captured"] else f"eager ({r['eager_reason'] or 'not a CUDA device'})"]
    notes.append(f"body_q frame vs examples {r['frame_difference']:.1e} m")
    if "difference" in r:
        notes.append(f"step vs direct {r['difference']:.1e} m")
    if r["diverged"]:
        notes.append("diverged (NaN): timings not meaningful")
    print(f"{r['solver']:<14} {'notes':<9} " + "; ".join(notes), flush=True)


def _block(steps: int, substeps: int) -> int:
    """Steps per timed block: whole frames, about 20 steps."""
    return max(substeps, min(20, steps) // substeps * substeps)


def _clock_name(device: str) -> str:
    import warp as wp

    return "thread CPU time" if wp.get_device(device).is_cpu else "wall time, synchronized"


def _device_name(device: str) -> str:
    import warp as wp

    d = wp.get_device(device)
    return f"{d.alias} ({d.name})"


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


def _default_stage() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(HERE)), "sample_stages", "boxes_on_ground.usda")


def _stage_path(stage: str) -> str:
    """A stage path, or "ant"/"humanoid": Newton's examples' assets."""
    if stage in ("ant", "humanoid"):
        import importlib.util

        spec = importlib.util.find_spec("newton")
        return os.path.join(os.path.dirname(spec.origin), "examples", "assets", f"{stage}.usda")
    return stage


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--stage",
        action="append",
        help="stage for table 1, repeatable; ant and humanoid: Newton's "
        "examples' ant.usda and humanoid.usda (default: sample_stages/boxes_on_ground.usda)",
    )
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--worlds",
        default="1",
        help="table 1: the stage replicated into this many worlds (a comma "
        "list: one table each, e.g. 1,1024,4096,16384)",
    )
    p.add_argument("--substeps", type=int, default=4, help="table 1: steps per frame of the frame columns")
    p.add_argument(
        "--eager-up-to",
        type=int,
        default=1 << 30,
        help="table 1: the step-at-a-time columns only up to this many worlds (they are slow on a GPU)",
    )
    p.add_argument("--usdsim", action="store_true", help="table 1: add a Simulation end to end: step_frame with "
                   "nothing written, and run writing world 0 every frame (as usdsim)")  # fmt: skip
    p.add_argument("--solvers", default=",".join(SOLVER_NAMES))
    p.add_argument("--newton-python", default=os.environ.get("NEWTON_PYTHON"), type=os.path.abspath)
    p.add_argument("--import-stage", help="stage for table 2 (default: Newton's ant_multi.usda)")
    p.add_argument("--worker", choices=("ours", "newton"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(RESULT + json.dumps(worker(args.worker, args.import_stage, args.repeat, args.steps)))
        return
    for stage in args.stage or [_default_stage()]:
        stage = _stage_path(stage)
        for worlds in [int(w) for w in str(args.worlds).split(",")]:
            print_header(stage, args.device, worlds, args.substeps, args.steps, args.repeat)
            for name in args.solvers.split(","):
                print_row(_step_rate(name, stage, args.steps, args.repeat, args.device, worlds, args.substeps,
                                     eager=worlds <= args.eager_up_to, end_to_end=args.usdsim))  # fmt: skip
    if args.newton_python:
        compare_imports(args.import_stage or _newton_asset("ant_multi.usda"), args.newton_python, args.repeat)
    else:
        print("\n(no --newton-python: the import comparison on ant_multi.usda is skipped)")


if __name__ == "__main__":
    main()
