"""The Gymnasium vector environment against the same solver's bare frames: environment steps per second.

    python benchmarks/bench_vector_env.py [--envs 1 64 1024] [--solvers mujoco featherstone] [--device cpu]
                                          [--pairs 15] [--capture auto]

The cart-pole sample stage as ``StageVectorEnv(N, ...)``: an effort on the cart's slider from a numpy policy
(the actions change every step), the doc's reward and termination callables on the batched observations (numpy on
the CPU), episodes of at most 500 steps, the start angle randomized at every reset (about one environment in
forty resets at each step). An environment step is one frame of the stage's clock (8 physics steps of 1/480 s).

The baseline, measured in the same run on the same Simulation: the solver's bare frames, what a hand-written loop
without the environment would run (``solver.simulate_frame`` where the solver has it, else ``solver.step`` 8 times
with two States), no actions written, nothing observed, nothing reset. Blocks of steps of each, back to back, each
side first in turn (``--pairs`` pairs), timed by the process's CPU time on the CPU (every thread of it: C MuJoCo
steps its worlds on a thread pool; the machine is shared, wall time is not a measure here) and by wall time on a GPU
(synchronized). Ratio: the median of the pairs' env / bare, with its quartiles; overhead = ratio - 1. Target
(issue 42): overhead at most 10% at 1,024 environments on the CPU; on a GPU, 4,096 environments at more than
2 M environment steps/s and at least 0.9 of the bare captured frames (``--device cuda --envs 4096``).
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import time

import numpy as np
import warp as wp

REPO = pathlib.Path(__file__).resolve().parent.parent
CARTPOLE = str(REPO / "sample_stages" / "cartpole.usda")


def reward(obs, action, env):
    return 1.0 - obs[:, 1] ** 2 - 0.01 * obs[:, 0] ** 2


def fell(obs, env):
    return (np.abs(obs[:, 1]) > 0.2) | (np.abs(obs[:, 0]) > 1.5)


def make(n, solver, device, capture):
    from newton_usd.envs import StageVectorEnv  # noqa: PLC0415

    return StageVectorEnv(
        n, CARTPOLE, joints=["/CartPole/CartSlider"], action_bounds=(-20, 20), reward=reward, terminated=fell,
        max_episode_steps=500, solver=solver, device=device, capture=capture,
        randomize={"/CartPole/PoleHinge.state:angular:physics:position": (-5, 5)},
    )  # fmt: skip


class Bare:
    """The solver's frames on the environment's Simulation, nothing else (see the module)."""

    def __init__(self, env):
        self.env, self.sim = env, env.sim
        self.scratch = env.sim.model.state()

    def frame(self):
        sim, solver = self.sim, self.sim.solver
        if getattr(solver, "simulates_frames", False):
            solver.simulate_frame(sim.state, self.scratch, sim.control, sim.dt, sim.substeps)
            return
        a, b = sim.state, self.scratch
        for _ in range(sim.substeps):
            solver.step(a, b, sim.control, None, sim.dt)
            a, b = b, a
        sim.state, self.scratch = a, b


def timed(fn, steps, device) -> float:
    clock = time.perf_counter if device.is_cuda else time.process_time
    wp.synchronize_device(device)
    t0 = clock()
    for _ in range(steps):
        fn()
    wp.synchronize_device(device)
    return (clock() - t0) / steps


def measure(n, solver, device_name, pairs, capture, block_seconds=0.4):
    env = make(n, solver, device_name, capture)
    device = env.device
    bare = Bare(env)
    rng = np.random.default_rng(0)
    actions = [rng.uniform(-20, 20, (n, 1)).astype(np.float32) for _ in range(16)]
    if device.is_cuda:
        actions = [wp.array(a, device=device) for a in actions]
    counter = iter(range(1 << 62))
    env.reset(seed=0)

    def env_step():
        env.step(actions[next(counter) % len(actions)])

    for _ in range(3):  # (warm-up: kernels loaded, graphs captured)
        env_step()
        bare.frame()
    once = max(timed(env_step, 2, device), 1e-6)
    steps = max(2, min(200, int(block_seconds / once)))
    ratios, env_times, bare_times = [], [], []
    for i in range(pairs):
        if i % 2:
            t_env, t_bare = timed(env_step, steps, device), timed(bare.frame, steps, device)
        else:
            t_bare, t_env = timed(bare.frame, steps, device), timed(env_step, steps, device)
        ratios.append(t_env / t_bare)
        env_times.append(t_env)
        bare_times.append(t_bare)
    solver = env.sim.solver
    name = type(solver).__name__ + (f" ({solver.backend})" if hasattr(solver, "backend") else "")
    captured = any(c.replays for c in env.captures)
    env.close()
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {
        "envs": n, "solver": name, "steps": steps, "captured": captured,
        "env": n / statistics.median(env_times), "bare": n / statistics.median(bare_times),
        "ratio": statistics.median(ratios), "q1": q[0], "q3": q[2],
    }  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--envs", type=int, nargs="+", default=None, help="default: 1 64 1024 (cpu), 4096 (cuda)")
    p.add_argument("--solvers", nargs="+", default=["mujoco", "featherstone"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--pairs", type=int, default=15)
    p.add_argument("--capture", default="auto", choices=("auto", "all", "off"))
    args = p.parse_args(argv)
    wp.config.quiet = True
    wp.init()
    envs = args.envs or ([4096] if str(args.device).startswith("cuda") else [1, 64, 1024])
    print(
        f"cart-pole sample stage, one frame (8 steps of 1/480 s) per env step, device {args.device}, "
        f"{args.pairs} pairs of blocks, {'wall' if str(args.device).startswith('cuda') else 'process CPU'} time"
    )
    print(f"{'solver':<28} {'envs':>6} {'env steps/s':>12} {'bare frames/s':>14} {'env/bare':>9} "
          f"{'quartiles':>13} {'overhead':>9}  captured")  # fmt: skip
    for solver in args.solvers:
        for n in envs:
            r = measure(n, solver, args.device, args.pairs, args.capture)
            print(f"{r['solver']:<28} {n:>6} {r['env']:>12,.0f} {r['bare']:>14,.0f} {r['ratio']:>9.3f} "
                  f"{r['q1']:>6.3f}-{r['q3']:<6.3f} {100 * (r['ratio'] - 1):>8.1f}%  "
                  f"{'yes' if r['captured'] else 'no'}",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
