"""The warp backend with many worlds against MuJoCo-Warp called directly: steps per second, an ant and a humanoid.

    python benchmarks/bench_warp_worlds.py [--worlds N] [--steps 50] [--repeats 3] [--device cuda:0] [MODEL.xml ...]

Each model is built as ``ModelBuilder().add_mjcf(xml)``, ``builder.replicate(N)``, ``finalize(device)`` and
``SolverMuJoCo(model, backend="warp")``, and stepped ``--steps`` times with ping-pong States and a Control
(``solver.step(s0, s1, control, None, dt)``: the joint coordinates pushed, the step, the joint coordinates and
body poses and velocities written, all on the device; on CUDA, replayed from a CUDA graph). The baseline,
measured in the same run and interleaved with ours (best of ``--repeats`` each): MuJoCo-Warp on the MuJoCo model
the solver compiled (``solver.mj_model``), ``mjw.put_model``, ``mjw.put_data`` with ``nworld=N`` and the
solver's ``nconmax``/``njmax``, ``mjw.step`` in a loop (captured in a CUDA graph on CUDA, as ours). ``host``:
our step with the exchange through numpy on the host instead of the Warp kernels (what every step did before).
``frame``: our frame function (``solver.simulate_frame``: ``--substeps`` steps a call, the state pushed and pulled
once, one CUDA graph a frame on CUDA), the way ``Simulation.run`` steps the warp backend; its steps per second
count every substep.

Target (issue 5): on a GPU with 4096 worlds, ours / direct >= 0.95. Without a GPU this runs on Warp's CPU
device with a few worlds (default ``--worlds``: 4096 on CUDA, 8 on the CPU): a check that the exchange adds
little to a step, not the GPU figure.

Models: MJCF paths, optionally ``NAME=path``; without arguments an ant and a humanoid shipped in installed
packages (gymnasium-robotics' or dm_control's ant, MuJoCo-Warp's test humanoid), looked up in this python's
site-packages and the zoo venv's (``--models-dir``, default ``/work/zoo-venv/lib/python3.11/site-packages``;
see ``bench_mjcf_models.py``).
"""

from __future__ import annotations

import argparse
import os
import sysconfig
import time

import mujoco
import numpy as np
import warp as wp

DEFAULT_MODELS = {
    "ant": (
        "gymnasium_robotics/envs/mujoco/assets/ant.xml",
        "dm_control/third_party/ant/ant.xml",
    ),
    "humanoid": (
        "mujoco_warp/test_data/humanoid/humanoid.xml",
        "dm_control/suite/humanoid.xml",
    ),
}


def find_default_models(models_dir):
    roots = [sysconfig.get_paths()["purelib"], models_dir]
    found = {}
    for name, candidates in DEFAULT_MODELS.items():
        for rel in candidates:
            hits = [os.path.join(r, rel) for r in roots if r and os.path.isfile(os.path.join(r, rel))]
            if hits:
                found[name] = hits[0]
                break
    return found


def build(xml, worlds, device):
    from newton_usd import ModelBuilder  # noqa: PLC0415
    from newton_usd.solvers import SolverMuJoCo  # noqa: PLC0415

    b = ModelBuilder()
    b.add_mjcf(xml)
    b.replicate(worlds)
    model = b.finalize(device)
    return model, SolverMuJoCo(model, backend="warp")


class Ours:
    def __init__(self, model, solver, dt, host=False):
        self.solver, self.dt = solver, dt
        if host:
            solver._dev = None  # (the exchange through numpy on the host)
        self.s0, self.s1, self.control = model.state(), model.state(), model.control()

    def run(self, steps):
        for _ in range(steps):
            self.solver.step(self.s0, self.s1, self.control, None, self.dt)
            self.s0, self.s1 = self.s1, self.s0


class Framed:
    """``solver.simulate_frame``: ``substeps`` steps a call (a frame), as ``Simulation.run`` takes them."""

    def __init__(self, model, solver, dt, substeps):
        self.solver, self.dt, self.substeps = solver, dt, substeps
        if solver.device.is_cpu:
            solver.frame_capture.cpu_graphs = False  # (eager on the CPU, as a run there)
        self.s0, self.s1, self.control = model.state(), model.state(), model.control()

    def run(self, steps):
        for _ in range(max(1, steps // self.substeps)):
            self.solver.simulate_frame(self.s0, self.s1, self.control, self.dt, self.substeps)


class Direct:
    """MuJoCo-Warp called directly on the solver's compiled model, with the solver's capacities."""

    def __init__(self, solver, worlds, device):
        import mujoco_warp as mjw  # noqa: PLC0415

        self.mjw = mjw
        m = solver.mj_model
        data = mujoco.MjData(m)
        mujoco.mj_forward(m, data)
        with wp.ScopedDevice(device):
            self.m = mjw.put_model(m)
            self.d = mjw.put_data(m, data, nworld=worlds, nconmax=solver.nconmax, njmax=solver.njmax)
        self.device = wp.get_device(device)
        self.graph = None
        if self.device.is_cuda:
            with wp.ScopedDevice(device):
                mjw.step(self.m, self.d)  # (modules loaded before the capture)
                with wp.ScopedCapture() as capture:
                    mjw.step(self.m, self.d)
            self.graph = capture.graph

    def run(self, steps):
        with wp.ScopedDevice(self.device):
            for _ in range(steps):
                if self.graph is not None:
                    wp.capture_launch(self.graph)
                else:
                    self.mjw.step(self.m, self.d)


def timed(runner, steps, device):
    wp.synchronize_device(device)
    t = time.perf_counter()
    runner.run(steps)
    wp.synchronize_device(device)
    return time.perf_counter() - t


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("models", nargs="*", help="MJCF files (NAME=path); default: an ant and a humanoid")
    p.add_argument("--device", default=None, help="Warp device (default: Warp's default device)")
    p.add_argument("--worlds", type=int, default=None, help="worlds (default: 4096 on CUDA, 8 on the CPU)")
    p.add_argument("--steps", type=int, default=50, help="steps per timed run")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per variant (best taken, interleaved)")
    p.add_argument("--dt", type=float, default=None, help="time step (default: the model's)")
    p.add_argument("--no-host", action="store_true", help="skip the host-exchange variant")
    p.add_argument("--substeps", type=int, default=8, help="steps a frame of the frame variant (default 8)")
    p.add_argument("--models-dir", default="/work/zoo-venv/lib/python3.11/site-packages")
    args = p.parse_args()
    wp.config.quiet = True
    wp.init()
    device = wp.get_device(args.device)
    worlds = args.worlds or (4096 if device.is_cuda else 8)
    models = {}
    for arg in args.models:
        name, _, path = arg.rpartition("=")
        models[name or os.path.splitext(os.path.basename(path))[0]] = path
    if not args.models:
        models = find_default_models(args.models_dir)
        for name in DEFAULT_MODELS:
            if name not in models:
                print(f"note: no {name} MJCF found (looked in site-packages and {args.models_dir})")
    where = "CUDA" if device.is_cuda else "Warp's CPU device"
    name = f"{device} ({device.name})" if device.is_cuda else f"{device} ({where})"
    print(f"device: {name}, worlds: {worlds}, steps per run: {args.steps}, best of {args.repeats}")
    rows = []
    for name, xml in models.items():
        model, solver = build(xml, worlds, device)
        dt = args.dt or float(solver.mj_model.opt.timestep)
        variants = {"ours": Ours(model, solver, dt)}
        if not args.no_host:
            host_model, host_solver = build(xml, worlds, device)
            variants["host"] = Ours(host_model, host_solver, dt, host=True)
        frame_model, frame_solver = build(xml, worlds, device)
        variants["frame"] = Framed(frame_model, frame_solver, dt, args.substeps)
        variants["direct"] = Direct(solver, worlds, device)
        for runner in variants.values():  # warm-up: kernels compiled and loaded, graphs captured
            runner.run(3)
        best = dict.fromkeys(variants, float("inf"))
        for _ in range(args.repeats):
            for key, runner in variants.items():
                best[key] = min(best[key], timed(runner, args.steps, device))
        steps = {k: (args.steps // args.substeps) * args.substeps if k == "frame" else args.steps for k in best}
        rate = {k: steps[k] / t for k, t in best.items()}
        rows.append((name, solver.mj_model.nv, rate))
    print()
    head = f"{'model':<10} {'nv':>4} {'variant':<7} {'steps/s':>9} {'world-steps/s':>14} {'/ direct':>9}"
    print(head)
    print("-" * len(head))
    for name, nv, rate in rows:
        for key in ("direct", "ours", "frame", "host"):
            if key in rate:
                ratio = rate[key] / rate["direct"]
                print(f"{name:<10} {nv:>4} {key:<7} {rate[key]:>9.1f} {rate[key] * worlds:>14.0f} {ratio:>9.3f}")
    print(
        f"\ntarget: ours (frame: {args.substeps} steps a call) / direct >= 0.95 on a GPU with 4096 worlds"
        + ("" if device.is_cuda else f"; this run: Warp's CPU device, {worlds} worlds (not the GPU figure)")
    )
    return 0 if rows and np.isfinite([r["ours"] for _, _, r in rows]).all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
