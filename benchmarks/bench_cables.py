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

from side_by_side import header, row

STAGE = os.path.join(os.path.dirname(__file__), "..", "sample_stages", "deformables", "cable_hanging.usda")


class Ours:
    def __init__(self, path, device, fps, substeps, iterations):
        from newton_usd import Simulation

        self.sim = Simulation.open(path, device=device, fps=fps, substeps=substeps, live=False,
                                   solver_options={"iterations": iterations})  # fmt: skip
        self.device = self.sim.model.device

    def frames(self, n):
        for _ in range(n):
            self.sim.step_frame()

    def positions(self):
        return self.sim.physics.state.body_q.numpy()[:, :3]


class Newton:
    def __init__(self, path, device, fps, substeps, iterations):
        import newton

        builder = newton.ModelBuilder()
        builder.add_usd(path)
        builder.color(include_bending=True)
        self.model = builder.finalize(device=device)
        self.device = self.model.device
        self.solver = newton.solvers.SolverVBD(self.model, iterations=iterations)
        self.pipeline = newton.CollisionPipeline(self.model)
        self.contacts = self.pipeline.contacts()
        self.s0, self.s1, self.control = self.model.state(), self.model.state(), self.model.control()
        self.dt, self.substeps = 1.0 / (fps * substeps), substeps

    def frames(self, n):
        for _ in range(n * self.substeps):
            self.s0.clear_forces()
            self.pipeline.collide(self.s0, self.contacts)
            self.solver.step(self.s0, self.s1, self.control, self.contacts, self.dt)
            self.s0, self.s1 = self.s1, self.s0

    def positions(self):
        return self.s0.body_q.numpy()[:, :3]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", default=STAGE)
    parser.add_argument("--frames", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--substeps", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    import newton_usd  # noqa: F401  (its schemas registered before the stage is opened)

    kw = (args.device, args.fps, args.substeps, args.iterations)
    sides = {"ours": Ours(args.stage, *kw), "newton": Newton(args.stage, *kw)}
    print(header("bodies"))
    print(row(sides["ours"].sim.model.body_count, sides, args.frames, args.repeat))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
