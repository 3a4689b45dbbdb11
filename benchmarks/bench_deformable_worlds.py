"""A cloth over a box in N worlds under newton_usd's vbd engine (``worlds=N``) against Newton's own loop on N copies
of the same stage (``ModelBuilder.replicate``), side by side.

    python benchmarks/bench_deformable_worlds.py [--worlds 1,4,16] [--vertices 100] [--frames 3] [--repeat 3]
        [--fps 30] [--substeps 4] [--iterations 10] [--device cpu|cuda]

The stage is bench_deformables.py's (a square cloth of about ``--vertices`` points 0.1 m above a static 0.4 m box).
Two sides, each from its own import:

- ``ours``: ``Simulation.open(path, worlds=N)`` (every world's cloth and box replicated, each world's particles in a
  Newton world of its own), ``step_frame`` frame after frame, world 0's points written every frame;
- ``newton``: Newton 1.8's own loop on ``ModelBuilder.replicate`` of the stage's ``add_usd`` builder N times (a world
  each), ``color``, ``SolverVBD``, ``CollisionPipeline``, per step ``clear_forces``, ``collide``, ``step``.

Timed as bench_deformables.py times its rows (side_by_side.py: thread time on the CPU, ABBA rounds); the last column is
the largest difference of any world's points between the sides after the same steps.
"""

from __future__ import annotations

import argparse
import os
import tempfile

from bench_deformables import cloth_stage, newton_side
from side_by_side import OursFrames, header, row, side_by_side_arguments


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worlds", default="1,4,16")
    parser.add_argument("--vertices", type=int, default=100)
    side_by_side_arguments(parser)
    args = parser.parse_args(argv)

    import newton_usd  # noqa: F401  (its schemas registered before a stage is made)

    print(header("worlds"))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cloth.usda")
        cloth_stage(path, args.vertices)
        for worlds in (int(w) for w in args.worlds.split(",")):
            kw = (args.device, args.fps, args.substeps, args.iterations, worlds)
            sides = {
                "ours": OursFrames(path, *kw[:4], worlds=worlds),
                "newton": newton_side(path, *kw[:4], worlds=worlds),
            }
            print(row(worlds, sides, args.frames, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
