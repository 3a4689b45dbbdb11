"""Scale: N free spheres and N free boxes over a ground plane (tests/stages.py ``pile``): setup seconds by
phase, steps per second and peak RSS of newton_usd, against native MuJoCo parsing (``MjSpec.from_string``),
compiling and stepping the same model (the MJCF our MjSpec writes, with the same ``<size memory>``) in the
same run; and a long run of
100 bodies through usdsim (value clips streamed) whose RSS is sampled at the start and the end.

    python benchmarks/bench_scale.py [--n 1000 3000 10000] [--steps 200] [--long-frames 100000]

Each case runs in a fresh process (this script with --worker), so peak RSS is the case's own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
RESULT = "BENCH_SCALE_RESULT "


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(path: str, steps: int, native: bool) -> dict:
    """One case: ours (phases), or native MuJoCo from the MJCF our spec writes."""
    import mujoco
    import numpy as np

    out = {}
    if native:
        xml = open(path + ".xml").read()
        t = time.perf_counter()
        spec = mujoco.MjSpec.from_string(xml)  # MuJoCo's own parse into an MjSpec (our build_spec's like)
        out["parse"] = time.perf_counter() - t
        t = time.perf_counter()
        m = spec.compile()
        out["compile"] = time.perf_counter() - t
        d = mujoco.MjData(m)
        mujoco.mj_step(m, d)
        t = time.perf_counter()
        for _ in range(steps):
            mujoco.mj_step(m, d)
        out["steps_per_s"] = steps / (time.perf_counter() - t)
        out["narena_mib"] = m.narena / 2**20
        out["peak_rss_mib"] = _rss_mib()
        return out

    t0 = time.perf_counter()
    from newton_usd.core import ModelBuilder
    from newton_usd.solvers.mujoco import spec as spec_module
    from newton_usd.solvers.mujoco.solver_mujoco import SolverMuJoCo
    from newton_usd.usd import add_usd, open_stage

    out["imports"] = time.perf_counter() - t0
    t = time.perf_counter()
    stage, _ = open_stage(path)
    out["open_stage"] = time.perf_counter() - t
    t = time.perf_counter()
    builder = ModelBuilder()
    add_usd(builder, stage)
    out["import"] = time.perf_counter() - t
    t = time.perf_counter()
    model = builder.finalize("cpu")
    out["finalize"] = time.perf_counter() - t
    timings = {"build_spec": 0.0, "compile": 0.0}
    build, compile_ = spec_module.build_spec, spec_module.compile_spec

    def timed(name, fn):
        def run(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timings[name] += time.perf_counter() - t

        return run

    import newton_usd.solvers.mujoco.solver_mujoco as sm

    sm.build_spec, sm.compile_spec = timed("build_spec", build), timed("compile", compile_)
    t = time.perf_counter()
    solver = SolverMuJoCo(model, backend="cpu")
    out["solver_total"] = time.perf_counter() - t
    out.update(timings)
    out["solver_other"] = out["solver_total"] - timings["build_spec"] - timings["compile"]
    with open(path + ".xml", "w") as f:
        f.write(solver._spec.to_xml())
    state, nxt, control = model.state(), model.state(), model.control()
    dt = 1.0 / 480.0
    solver.step(state, nxt, control, None, dt)
    state, nxt = nxt, state
    t = time.perf_counter()
    for _ in range(steps):
        solver.step(state, nxt, control, None, dt)
        state, nxt = nxt, state
    state.body_q.numpy()
    out["steps_per_s"] = steps / (time.perf_counter() - t)
    out["narena_mib"] = solver.mj_model.narena / 2**20
    out["finite"] = bool(np.isfinite(state.body_q.numpy()).all())
    out["peak_rss_mib"] = _rss_mib()
    return out


def _run_worker(path, steps, native):
    args = [sys.executable, os.path.abspath(__file__), "--worker", path, "--steps", str(steps)]
    r = subprocess.run(args + (["--native"] if native else []), capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith(RESULT):
            return json.loads(line[len(RESULT) :])
    raise RuntimeError(f"worker failed ({r.returncode}):\n{r.stderr[-3000:]}")


def long_run(directory, frames) -> None:
    """usdsim on 100 spheres for ``frames`` frames (one step each), recording streamed to value clips: RSS
    (VmRSS, from /proc) sampled every second; the first sample after setup and the last are reported."""
    from stages import pile

    path = os.path.join(directory, "long.usda")
    pile(path, 100).Save()
    usdsim = os.path.join(os.path.dirname(sys.executable), "usdsim")
    cmd = [usdsim, path, "-n", str(frames), "--substeps", "1", "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples, clips = [], os.path.join(directory, "long.sim.clips")
    t0 = time.perf_counter()
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))
            n = len(os.listdir(clips)) if os.path.isdir(clips) else 0
            samples.append((time.perf_counter() - t0, rss / 1024.0, n))
        except (OSError, StopIteration):
            pass
        time.sleep(1.0)
    _, err = proc.communicate()
    started = [s for s in samples if s[2] > 0]  # once the first clip is written: the steady state
    print(f"\nlong run: 100 spheres, {frames} frames, exit {proc.returncode}, {time.perf_counter() - t0:.0f} s")
    if started:
        print(f"  RSS at the first clip: {started[0][1]:.0f} MiB (t={started[0][0]:.0f} s); "
              f"at the end: {samples[-1][1]:.0f} MiB (t={samples[-1][0]:.0f} s, {samples[-1][2]} clip files); "
              f"max {max(s[1] for s in started):.0f} MiB")  # fmt: skip
    if proc.returncode:
        print(err[-2000:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="*", default=[1000, 3000, 10000], help="body counts (none: skip)")
    p.add_argument("--shapes", nargs="+", default=["sphere", "box"])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--long-frames", type=int, default=0, help="also the long RSS run (e.g. 100000)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--native", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(RESULT + json.dumps(worker(args.worker, args.steps, args.native)))
        return 0
    from stages import pile

    with tempfile.TemporaryDirectory() as directory:
        header = ("N", "shape", "imports", "open", "import", "finalize", "build_spec", "compile", "other",
                  "steps/s", "arena MiB", "peak RSS MiB", "| native parse", "compile", "steps/s",
                  "peak RSS MiB")  # fmt: skip
        print(" ".join(f"{h:>10}" for h in header), flush=True)
        for n in args.n:
            for shape in args.shapes:
                path = os.path.join(directory, f"{shape}{n}.usda")
                pile(path, n, shape=shape).Save()
                ours = _run_worker(path, args.steps, native=False)
                native = _run_worker(path, args.steps, native=True)
                row = (n, shape, ours["imports"], ours["open_stage"], ours["import"], ours["finalize"],
                       ours["build_spec"], ours["compile"], ours["solver_other"], ours["steps_per_s"],
                       ours["narena_mib"], ours["peak_rss_mib"], native["parse"], native["compile"],
                       native["steps_per_s"], native["peak_rss_mib"])  # fmt: skip
                print(" ".join(f"{v:>10.2f}" if isinstance(v, float) else f"{v:>10}" for v in row), flush=True)
        if args.long_frames:
            long_run(directory, args.long_frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
