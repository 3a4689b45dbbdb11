"""A robot arm, a box and a cloth under newton_usd's mujoco_vbd engine against Newton's own coupled loop on the same
stage, side by side.

    python benchmarks/bench_coupled.py [--cloth 19x7,38x13] [--rigid mujoco|xpbd] [--frames 2] [--repeat 3]
        [--fps 30] [--substeps 4] [--iterations 10] [--device cpu|cuda]

Per cloth size (points across x along), tests/test_coupled.py's stage (``arm_and_cloth``: a two-link arm, a 2 kg
box and a 1.8 x 0.6 m cloth across two tables; the scene asks for ``--rigid``), written to a temporary stage. Two
sides, each from its own import of that stage:

- ``ours``: ``Simulation.open`` (the mujoco_vbd or xpbd_vbd engine, ``live=False``) and ``step_frame`` frame after
  frame, the poses and points written onto the stage every frame as ``usdsim run`` writes them;
- ``newton``: Newton 1.8's own coupled loop (tests/test_coupled.py's ``newton_coupled_run``: ``add_usd``,
  ``SolverCoupledProxy`` of SolverMuJoCo, C MuJoCo on the CPU, or SolverXPBD, and SolverVBD, as its
  ``example_mujoco_vbd_coupled_solver``), per step ``clear_forces``, ``collide`` and ``step``, nothing written.

Timed as ``side_by_side.row``: thread time on the CPU (C MuJoCo and Warp's CPU kernels run in the calling thread),
rounds alternating which side goes first; ``ours/newton`` is Newton's time over ours (1.0: as fast). The last column
is the largest difference of the particles between the sides after the same steps.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from side_by_side import NewtonFrames, OursFrames, header, row, side_by_side_arguments

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


class Newton(NewtonFrames):
    def __init__(self, path, device, fps, substeps, iterations, rigid="mujoco"):
        import newton
        from newton.solvers.experimental.coupled import SolverCoupledProxy

        builder = newton.ModelBuilder()
        builder.add_usd(path)
        builder.color(include_bending=True)
        model = builder.finalize(device=device)
        bodies = list(range(model.body_count))
        cpu = not model.device.is_cuda
        if rigid == "mujoco":
            make = lambda v: newton.solvers.SolverMuJoCo(model=v, use_mujoco_cpu=cpu)  # noqa: E731
        else:
            make = lambda v: newton.solvers.SolverXPBD(model=v)  # noqa: E731
        rigid = SolverCoupledProxy.Entry(name="mjc", solver=make, bodies=bodies, joints=list(range(model.joint_count)))
        vbd = SolverCoupledProxy.Entry(
            name="vbd", solver=lambda v: newton.solvers.SolverVBD(model=v, iterations=iterations),
            particles=list(range(model.particle_count)),
        )  # fmt: skip
        proxy = SolverCoupledProxy.Proxy(source="mjc", destination="vbd", bodies=bodies,
                                         collision_pipeline=newton.CollisionPipeline, collide_interval=1)  # fmt: skip
        solver = SolverCoupledProxy(model, [rigid, vbd], SolverCoupledProxy.Config([proxy], 1))
        super().__init__(model, solver, fps, substeps, fk=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cloth", default="19x7,38x13")
    parser.add_argument("--rigid", default="mujoco", choices=("mujoco", "xpbd"))
    side_by_side_arguments(parser, frames=2)
    args = parser.parse_args(argv)

    from test_coupled import arm_and_cloth

    import newton_usd  # noqa: F401  (its schemas registered before a stage is made)

    print(header("points"))
    for size in args.cloth.split(","):
        across, along = (int(v) for v in size.split("x"))
        with tempfile.TemporaryDirectory() as tmp:
            path = arm_and_cloth(os.path.join(tmp, "arm_and_cloth.usda"), across=across, along=along, solver=args.rigid)
            kw = (args.device, args.fps, args.substeps, args.iterations)
            sides = {"ours": OursFrames(path, *kw), "newton": Newton(path, *kw, rigid=args.rigid)}
            print(row(across * along, sides, args.frames, args.repeat), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
