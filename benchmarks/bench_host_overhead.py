"""The host's work per frame of a Simulation, the frame itself replaced by nothing: what a GPU would wait on Python for.

    python benchmarks/bench_host_overhead.py [--stage PATH] [--worlds 1,1024] [--frames 2000] [--repeat 5]
        [--engines xpbd,featherstone,semi_implicit,kamino,mujoco] [--profile ENGINE]

On Warp's CPU device, each engine (the four Newton solvers, and ``mujoco``: SolverMuJoCo's warp backend, MuJoCo-Warp)
opens the stage (default ``sample_stages/boxes_on_ground.usda``) replicated into each ``--worlds`` count, with its
frames captured (``frame_capture.cpu_graphs``: Warp records and replays a frame's launches on its CPU device as a CUDA
graph on a GPU), and nothing written onto the stage (``sim.write = False``). After the eager warm-up frames and the
capture, ``wp.capture_launch`` is made a no-op: the frame's kernels no longer run, and what is timed is the host's
work around them, the work a GPU would wait on between two graphs. Two loops are timed: ``step_frame`` called frame
after frame, and ``run(frames)``. Each is timed ``--repeat`` times by the thread's CPU time (``time.thread_time``:
what other processes take from a shared machine is not counted), and the median is given in microseconds per frame,
with the spread (min-max) beside. The baseline, measured in the same run: one ``wp.launch`` of an empty kernel on the
same device (the unit of host work a frame's graph saves: Newton's steps are hundreds of them), and the ratios to it.

Target (issue 40): at most 30 us per ``step_frame`` at 1,024 worlds, every engine: host work that does not grow with
the bodies and worlds. ``--profile ENGINE`` prints cProfile's top functions of that engine's ``step_frame`` loop at the
largest world count.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from unittest import mock

import warp as wp

HERE = os.path.dirname(os.path.abspath(__file__))
ENGINES = ("xpbd", "featherstone", "semi_implicit", "kamino", "mujoco")


@wp.kernel
def _empty(x: wp.array(dtype=wp.float32)):
    pass


def launch_us(device, calls: int, repeat: int) -> float:
    """Microseconds of host time per ``wp.launch`` of an empty kernel (median of ``repeat`` loops)."""
    x = wp.zeros(1, dtype=wp.float32, device=device)
    wp.launch(_empty, dim=1, inputs=[x], device=device)
    times = []
    for _ in range(repeat):
        t0 = time.thread_time()
        for _ in range(calls):
            wp.launch(_empty, dim=1, inputs=[x], device=device)
        times.append((time.thread_time() - t0) / calls * 1e6)
    return statistics.median(times)


def _open(engine: str, stage: str, worlds: int):
    from newton_usd import Simulation  # noqa: PLC0415

    kw = {"solver": "mujoco", "backend": "warp"} if engine == "mujoco" else {"solver": engine}
    sim = Simulation.open(stage, device="cpu", worlds=worlds, live=False, record=False, **kw)
    sim.write = False
    sim.solver.frame_capture.cpu_graphs = True
    return sim


def measure(engine: str, stage: str, worlds: int, frames: int, repeat: int, profile: bool = False) -> dict:
    """``engine``'s host microseconds per frame (step_frame, run) at ``worlds``, the frames' kernels not run."""
    try:
        sim = _open(engine, stage, worlds)
        for _ in range(4):  # (eager: kernels loaded, buffers allocated; then captured, and the graph launched)
            sim.step_frame()
            if sim.solver.frame_capture.captures:
                break
    except Exception as e:  # noqa: BLE001  (a solver refusing the stage is a result)
        return {"engine": engine, "worlds": worlds, "error": str(e).splitlines()[0]}
    capture = sim.solver.frame_capture
    out = {"engine": engine, "worlds": worlds, "bodies": sim.model.body_count, "captured": capture.captures > 0}
    if capture.eager_reason:
        out["eager_reason"] = capture.eager_reason
    with mock.patch.object(wp, "capture_launch", lambda graph, stream=None: None):
        replays = capture.replays
        loops = {"step_frame": lambda: [sim.step_frame() for _ in range(frames)], "run": lambda: sim.run(frames)}
        for name, loop in loops.items():
            times = []
            for _ in range(repeat):
                t0 = time.thread_time()
                loop()
                times.append((time.thread_time() - t0) / frames * 1e6)
            out[name] = (statistics.median(times), min(times), max(times))
        out["replayed"] = capture.replays - replays == 2 * repeat * frames
        if profile:
            import cProfile  # noqa: PLC0415
            import pstats  # noqa: PLC0415

            prof = cProfile.Profile()
            prof.runcall(loops["step_frame"])
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    sim.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stage", default=os.path.join(os.path.dirname(HERE), "sample_stages", "boxes_on_ground.usda"))
    p.add_argument("--worlds", default="1,1024")
    p.add_argument("--frames", type=int, default=2000, help="frames per timed loop")
    p.add_argument("--repeat", type=int, default=5, help="timed loops per engine, world count and loop")
    p.add_argument("--engines", default=",".join(ENGINES))
    p.add_argument("--profile", help="an engine: cProfile of its step_frame loop at the largest world count")
    args = p.parse_args()
    wp.config.quiet = True
    wp.config.enable_backward = False  # (as usdsim: forward-only kernels, the cache's copy)
    wp.init()
    device = wp.get_device("cpu")
    worlds = [int(w) for w in args.worlds.split(",")]
    base = launch_us(device, 2000, args.repeat)
    load = os.getloadavg()[0]
    print(f"\nHost work per frame, the frame's graph launch made a no-op: {os.path.basename(args.stage)} on "
          f"{device.alias} ({os.cpu_count()} cores, load average {load:.1f} at the start), nothing written onto the "
          f"stage; median of {args.repeat} loops of {args.frames} frames (min-max), thread CPU time. Baseline: one "
          f"wp.launch of an empty kernel, {base:.1f} us.")  # fmt: skip
    print(f"{'engine':<14} {'worlds':>6} {'bodies':>7} {'step_frame us':>22} {'run us':>22} {'step_frame/launch':>18}")
    for engine in args.engines.split(","):
        for n in worlds:
            profile = engine == args.profile and n == worlds[-1]
            r = measure(engine, args.stage, n, args.frames, args.repeat, profile=profile)
            if "error" in r:
                print(f"{engine:<14} {n:>6} failed: {r['error']}", flush=True)
                continue
            cells = [f"{r[k][0]:8.1f} ({r[k][1]:.1f}-{r[k][2]:.1f})" for k in ("step_frame", "run")]
            note = "" if r["captured"] and r["replayed"] else f"  (not captured: {r.get('eager_reason')})"
            print(f"{engine:<14} {n:>6} {r['bodies']:>7} {cells[0]:>22} {cells[1]:>22} "
                  f"{r['step_frame'][0] / base:>17.1f}x{note}", flush=True)  # fmt: skip
    print(f"(load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
