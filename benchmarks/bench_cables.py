"""A cable under newton_usd's vbd engine against Newton's own VBD loop, on the same stage, side by side.

    python benchmarks/bench_cables.py [--stage sample_stages/deformables/cable_hanging.usda] [--frames 3]
        [--repeat 3] [--fps 30] [--substeps 4] [--iterations 10] [--device cpu|cuda]

Two sides, each from its own import of the stage (default: the sample's cable pinned at one end, swinging onto a
box):

- ``ours``: ``Simulation.open`` (the vbd engine, ``live=False``) and ``step_frame`` frame after frame, the cable's
  points written onto the stage every frame as ``usdsim run`` writes them;
- ``newton``: Newton 1.8's own loop: ``ModelBuilder.add_usd``, ``color(include_bending=True)``, ``SolverVBD``,
  ``CollisionPipeline``, and per step ``clear_forces``, ``collide`` and ``step``, the states swapped, nothing
  written.

Timed as :mod:`side_by_side` times them (ABBA rounds, the thread's CPU time on the CPU). Printed: each side's median
frame time, ``ours/newton`` (Newton's time over ours: 1.0 is as fast as Newton's loop) and the largest difference of
the bodies' positions (the cable's segments, the box) after the same steps.
"""

from __future__ import annotations

import argparse
import os

from side_by_side import NewtonFrames, OursFrames, header, row, side_by_side_arguments

STAGE = os.path.join(os.path.dirname(__file__), "..", "sample_stages", "deformables", "cable_hanging.usda")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", default=STAGE)
    side_by_side_arguments(parser)
    args = parser.parse_args(argv)

    import newton

    import newton_usd  # noqa: F401  (its schemas registered before the stage is opened)

    kw = (args.device, args.fps, args.substeps, args.iterations)
    builder = newton.ModelBuilder()
    builder.add_usd(args.stage)
    sides = {"ours": OursFrames(args.stage, *kw, what="bodies"),
             "newton": NewtonFrames.vbd(builder, *kw, what="bodies")}  # fmt: skip
    print(header("bodies"))
    print(row(sides["ours"].sim.model.body_count, sides, args.frames, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
