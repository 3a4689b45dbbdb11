"""Our frame against Newton's own loop on the same stage, timed side by side in one run (bench_granular.py,
bench_deformables.py): each side an object with ``device``, ``frames(n)`` (steps n frames) and ``positions()`` (the
particles' positions, numpy); ours also ``sim`` (closed at the end)."""

from __future__ import annotations

import statistics
import time

_COLUMNS = f"{'ours ms/frame':>14} {'newton ms/frame':>16} {'ours/newton':>12} {'quartiles':>14} {'max diff m':>11}"


def timed(side, frames: int) -> float:
    """Seconds per frame of ``frames`` frames of ``side``: thread time on the CPU (what the other processes of a
    shared machine take is left out), wall time on a GPU (the device synchronized)."""
    import warp as wp

    cpu = side.device.is_cpu
    clock = time.thread_time if cpu else time.perf_counter
    t0 = clock()
    side.frames(frames)
    if not cpu:
        wp.synchronize_device(side.device)
    return (clock() - t0) / frames


def header(size: str) -> str:
    """The table's header, ``size`` naming its first column ("grains", "vertices")."""
    return f"{size:>8} {_COLUMNS}"


def row(n: int, sides: dict, frames: int, repeat: int) -> str:
    """One row of the table: ``sides`` ({"ours": ..., "newton": ...}) warmed up by one frame, then timed ``repeat``
    rounds of ``frames`` frames, alternating which side goes first (ABBA); medians, the ratio's quartiles and the
    largest difference of the particles' positions at the end. Closes our side's Simulation."""
    import numpy as np

    for side in sides.values():
        side.frames(1)  # (warm-up: kernels loaded, grids and colorings built)
    times = {name: [] for name in sides}
    ratios = []
    for r in range(repeat):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        t = {name: timed(sides[name], frames) for name in order}
        for name, v in t.items():
            times[name].append(v)
        ratios.append(t["newton"] / t["ours"])
    diff = float(np.abs(sides["ours"].positions() - sides["newton"].positions()).max())
    q = np.percentile(ratios, [25, 75]) if len(ratios) > 1 else (ratios[0], ratios[0])
    sides["ours"].sim.close()
    return (
        f"{n:>8} {1e3 * statistics.median(times['ours']):>14.1f} {1e3 * statistics.median(times['newton']):>16.1f}"
        f" {statistics.median(ratios):>12.3f} {f'{q[0]:.3f}-{q[1]:.3f}':>14} {diff:>11.3g}"
    )


class OursFrames:
    """Our side: ``Simulation.open`` of the stage (``live=False``, the solver's iterations, ``open_kw``) stepped
    frame by frame with ``step_frame``, its points written every frame as ``usdsim run`` writes them. ``positions``:
    the particles' (``what="particles"``) or the bodies' origins (``"bodies"``)."""

    def __init__(self, path, device, fps, substeps, iterations, what="particles", **open_kw):
        from newton_usd import Simulation

        self.sim = Simulation.open(path, device=device, fps=fps, substeps=substeps, live=False,
                                   solver_options={"iterations": iterations}, **open_kw)  # fmt: skip
        self.device = self.sim.model.device
        self.what = what

    def frames(self, n):
        for _ in range(n):
            self.sim.step_frame()

    def positions(self):
        state = self.sim.physics.state
        return state.particle_q.numpy() if self.what == "particles" else state.body_q.numpy()[:, :3]


class NewtonFrames:
    """Newton's side: its own loop as its examples write it, each step clearing the forces, colliding, stepping
    ``solver`` and swapping the states, nothing written (``fk``: the bodies placed from the joints first)."""

    def __init__(self, model, solver, fps, substeps, what="particles", fk=False):
        import newton

        self.model, self.solver, self.device, self.what = model, solver, model.device, what
        self.pipeline = newton.CollisionPipeline(model)
        self.contacts = self.pipeline.contacts()
        self.s0, self.s1, self.control = model.state(), model.state(), model.control()
        if fk:
            newton.eval_fk(model, model.joint_q, model.joint_qd, self.s0)
        self.dt, self.substeps = 1.0 / (fps * substeps), substeps

    @classmethod
    def vbd(cls, builder, device, fps, substeps, iterations, what="particles"):
        """Newton's SolverVBD on ``builder`` (colored with its bending edges, finalized on ``device``)."""
        import newton

        builder.color(include_bending=True)
        model = builder.finalize(device=device)
        return cls(model, newton.solvers.SolverVBD(model, iterations=iterations), fps, substeps, what)

    def frames(self, n):
        for _ in range(n * self.substeps):
            self.s0.clear_forces()
            self.pipeline.collide(self.s0, self.contacts)
            self.solver.step(self.s0, self.s1, self.control, self.contacts, self.dt)
            self.s0, self.s1 = self.s1, self.s0

    def positions(self):
        return self.s0.particle_q.numpy() if self.what == "particles" else self.s0.body_q.numpy()[:, :3]


def side_by_side_arguments(parser, frames: int = 3, substeps: int = 4, iterations: int | None = 10):
    """The options every side-by-side benchmark takes: ``--frames`` a timed block, ``--repeat`` rounds, ``--fps``,
    ``--substeps``, the solver's ``--iterations`` (where it has them) and ``--device``."""
    parser.add_argument("--frames", type=int, default=frames)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--substeps", type=int, default=substeps)
    if iterations is not None:
        parser.add_argument("--iterations", type=int, default=iterations)
    parser.add_argument("--device", default="cpu")
    return parser
