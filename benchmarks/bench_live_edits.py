"""What a live edit costs: a frame after the user changed a value on the stage vs a frame with no edit.

    python benchmarks/bench_live_edits.py [--bodies 10 100 1000]

A value edit makes the next frame import the stage again, compare the model and write the changed
values into the running MuJoCo model (no recompile); two edits take fast paths without importing:
the scene's gravity (here on a stage of falling boxes) and a drive target (a slider dragged in a
viewer; here on articulated chains). The ratio is the edited frame's time over a plain
frame's, both measured in the same run on the same Simulation (best of 3).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import warp as wp
from pxr import UsdPhysics

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_walking_skeleton import boxes_stage, chains_stage  # noqa: E402

from newton_usd.sim import Simulation  # noqa: E402

wp.config.log_level = wp.LOG_WARNING


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bodies", type=int, nargs="+", default=[10, 100, 1000])
    args = p.parse_args()
    print("Live edit cost (CPU backend, ms per frame, best of 3)")
    print(f"{'edit':<14} {'bodies':>7} {'plain frame':>12} {'edited frame':>13} {'ratio':>7}")
    for n in args.bodies:
        for what in ("gravity", "drive target"):
            stage = boxes_stage(n) if what == "gravity" else chains_stage(n)
            if what == "gravity":
                attr = UsdPhysics.Scene(stage.GetPrimAtPath("/Scene")).CreateGravityMagnitudeAttr()
            else:
                joint = stage.GetPrimAtPath("/Chains/Chain_0/Joint_0")
                drive = UsdPhysics.DriveAPI.Apply(joint, "angular")
                drive.CreateStiffnessAttr(1.0)
                attr = drive.CreateTargetPositionAttr(0.0)
            sim = Simulation.open(stage, device="cpu", record=False)
            sim.run(2)
            plain, edited = [], []
            for k in range(3):
                plain.append(timed(sim.step_frame))
                attr.Set(9.0 + 0.1 * k if what == "gravity" else 10.0 * (k + 1))
                edited.append(timed(sim.step_frame))
                assert sim.rebuilds == 0 and sim.edits_applied == k + 1
            a, b = min(plain), min(edited)
            print(f"{what:<14} {sim.model.body_count:>7} {a * 1e3:>12.2f} {b * 1e3:>13.2f} {b / a:>6.1f}x")


if __name__ == "__main__":
    main()
