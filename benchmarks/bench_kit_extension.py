"""What the Kit extension adds to a frame, over ``Simulation.step_frame()`` alone (target: under 5 %).

    python benchmarks/bench_kit_extension.py [--bodies 10 100 1000] [--frames 120]

Runs in the Kit kernel's venv (``python -m newton_usd.kit_kernel setup .venv-kit``); from another
Python it re-runs itself there. In one Kit process, for each stage of N falling boxes, interleaved
and best of three:

- step_frame: a ``Simulation`` on the stage, ``step_frame()`` in a loop (poses written to the
  output layer): the baseline.
- kit update, playing: ``app.update()`` with the extension playing the same stage (one frame per
  update): the app's update event, the extension's handler, Playback, and the same step_frame.
- kit update, idle: ``app.update()`` with the extension enabled and the timeline stopped: what the
  kernel's own tick costs (not the extension's).

"extension" is (playing - idle - step_frame) / step_frame: what the extension itself adds;
"total" is playing / step_frame - 1, the kernel's own tick included.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def in_kit_venv() -> bool:
    import importlib.util

    try:  # find, not import: importing omni.kit_app starts Kit's EULA check
        return importlib.util.find_spec("omni.kit_app") is not None
    except ImportError:
        return False


def best_per_frame(fn, frames: int, repeat: int = 3) -> float:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(frames):
            fn()
        out.append((time.perf_counter() - t0) / frames)
    return min(out)


def bench(app, n: int, frames: int, tmp: str) -> dict:
    from bench_walking_skeleton import boxes_stage

    from newton_usd.kit.extension import get_extension
    from newton_usd.sim import Simulation

    path = os.path.join(tmp, f"boxes_{n}.usda")
    boxes_stage(n).Export(path)
    ext = get_extension()
    pb = ext.playback
    rows = {"step_frame": [], "playing": [], "idle": []}
    for _ in range(3):
        sim = Simulation.open(path, record=False)
        for _ in range(3):
            sim.step_frame()  # warm
        rows["step_frame"].append(best_per_frame(sim.step_frame, frames, repeat=1))
        sim.close()

        ext.stages.open(path)
        pb.play()
        for _ in range(3):
            app.update()  # builds the simulation, warms
        before = pb.sim.frame
        rows["playing"].append(best_per_frame(app.update, frames, repeat=1))
        assert pb.sim.frame == before + frames, "the extension did not step one frame per update"
        pb.stop()
        rows["idle"].append(best_per_frame(app.update, frames, repeat=1))
        ext.stages.close()
    return {k: min(v) for k, v in rows.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bodies", type=int, nargs="+", default=[10, 100, 1000])
    p.add_argument("--frames", type=int, default=120)
    args = p.parse_args()
    if not in_kit_venv():
        kit_python = os.environ.get("NEWTON_USD_KIT_PYTHON") or os.path.join(ROOT, ".venv-kit", "bin", "python")
        if not os.path.exists(kit_python):
            sys.exit(f"no Kit venv at {kit_python}: run `python -m newton_usd.kit_kernel setup .venv-kit` first")
        sys.exit(subprocess.call([kit_python, os.path.abspath(__file__), *sys.argv[1:]]))

    import tempfile

    sys.path.insert(0, HERE)
    from newton_usd.kit_kernel import start_kit

    tmp = tempfile.mkdtemp(prefix="bench_kit_")
    app = start_kit(["--/exts/newton_usd.kit/stepping=fixed"], portable_root=os.path.join(tmp, "kit"))
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    results = [(n, bench(app, n, args.frames, tmp)) for n in args.bodies]
    print()
    print("Kit extension frame cost vs Simulation.step_frame() alone (same process, best of 3, ms per frame)")
    print(f"{'bodies':>7} {'step_frame':>11} {'kit playing':>12} {'kit idle':>9} {'extension':>10} {'total':>8}")
    for n, r in results:
        ext = (r["playing"] - r["idle"] - r["step_frame"]) / r["step_frame"]
        total = r["playing"] / r["step_frame"] - 1.0
        print(
            f"{n:>7} {r['step_frame'] * 1e3:>11.3f} {r['playing'] * 1e3:>12.3f} {r['idle'] * 1e3:>9.3f}"
            f" {ext * 100:>9.1f}% {total * 100:>7.1f}%"
        )
    sys.stdout.flush()
    app.shutdown()


if __name__ == "__main__":
    main()
