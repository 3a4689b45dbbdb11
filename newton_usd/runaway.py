"""A body flung out of the scene: the blow-up that leaves every number finite.

A solver that blows up softly (XPBD pushing apart what it cannot hold, a constraint it drops) can throw a body
tens of meters in a second at speeds below :data:`~newton_usd.sim.MAX_SPEED`: nothing is NaN, and the run would
end at exit 0. :class:`RunawayCheck` bounds how far each body may have moved from its start after ``t`` seconds
by what the stage itself can do, and names the first body beyond it::

    bound(t) = extent + MARGIN + (v0 + v_drive) t + |g| t^2 / 2

``extent``: the diagonal of the box around the bodies' starting positions, plus :data:`BODY_SIZE` (a body can
swing or roll across the scene); ``v0``: the fastest authored start (linear velocity, and angular velocity times
the extent); ``v_drive``: the fastest drive target velocity (linear, and angular times the extent), and the
farthest linear drive target is added to the extent; ``|g| t^2 / 2``: free fall from rest. A body in free fall
from rest stays within it by ``extent + MARGIN``; a body flung at 40 m/s leaves it within a second. Kinematic
bodies move as their prims' animation says, which this cannot bound: a model with one is not checked.
"""

from __future__ import annotations

import math

import numpy as np

from .core.types import JointType
from .errors import SimulationError
from .solvers.stability import step_advice

MARGIN = 10.0
"""m: how far beyond what the stage can do a body must be to be called flung (docs/stages_compat.md)."""

BODY_SIZE = 2.0
"""m: added to the extent of the bodies' starting positions (their own size, where they start together)."""

CUDA_EVERY = 10
"""On CUDA, every this many frames (and the last) are checked: a check reads the poses back, which waits for the
device (on the CPU they are read in place, every frame)."""


class RunawayCheck:
    """The bound of each body's displacement from its start of a model's run (see the module).

    Args:
        model: the finalized Model (its drives, gravity, kinematic bodies).
        body_q, body_qd: the bodies' starting poses and velocities (numpy, ``(n, 7)`` and ``(n, 6)``).
    """

    def __init__(self, model, body_q, body_qd):
        start = np.asarray(body_q, dtype=np.float64)[:, :3]
        self.labels = model.body_label
        self.start = start
        self.enabled = model.body_count > 0 and not np.asarray(model.body_kinematic.numpy(), dtype=bool).any()
        extent = float(np.linalg.norm(start.max(axis=0) - start.min(axis=0))) if len(start) else 0.0
        extent += BODY_SIZE
        qd = np.asarray(body_qd, dtype=np.float64)
        v0 = float(np.max(np.linalg.norm(qd[:, :3], axis=1) + np.linalg.norm(qd[:, 3:], axis=1) * extent, initial=0))
        reach, v_drive = _drive_reach(model, extent)
        self.extent = extent + reach
        self.speed = v0 + v_drive
        self.gravity = float(np.linalg.norm([float(g) for g in model.gravity]))

    @classmethod
    def of(cls, sim) -> "RunawayCheck":
        """The check of a :class:`~newton_usd.sim.Simulation`'s run from its state now."""
        return cls(sim.model, sim.state.body_q.numpy(), sim.state.body_qd.numpy())

    def check_run(self, sim, last_frame: int) -> None:
        """:meth:`check` ``sim``'s state after its frame (every frame on the CPU, every :data:`CUDA_EVERY`-th and
        ``last_frame`` on CUDA)."""
        if self.enabled and (sim.model.device.is_cpu or sim.frame % CUDA_EVERY == 0 or sim.frame >= last_frame):
            self.check(
                sim.state.body_q.numpy(), sim.sim_seconds, sim.frame, lambda: step_advice(sim.solver, sim.dt, sim.fps)
            )

    def bound(self, seconds: float) -> float:
        """m: the farthest a body may be from its start after ``seconds`` of simulated time."""
        return self.extent + MARGIN + self.speed * seconds + 0.5 * self.gravity * seconds * seconds

    def check(self, body_q, seconds: float, frame: int, advice=None) -> None:
        """Raise :class:`~newton_usd.errors.SimulationError` naming the body farthest beyond :meth:`bound` after
        ``seconds``, at ``frame`` (``advice()``: appended, e.g. a stable step; asked only when raising); nothing
        where every body is within it (or the model is not checked)."""
        if not self.enabled:
            return
        moved = np.linalg.norm(np.asarray(body_q, dtype=np.float64)[:, :3] - self.start, axis=1)
        bound = self.bound(seconds)
        if not (moved > bound).any():
            return
        b = int(np.argmax(moved))
        fall = 0.5 * self.gravity * seconds * seconds
        advice = advice() if advice is not None else ""
        raise SimulationError(
            f"body was flung {moved[b]:.3g} m from its start in {seconds:.3g} s, beyond the {bound:.3g} m that free "
            f"fall from rest ({fall:.3g} m), the scene's extent ({self.extent:.3g} m), its authored velocities and "
            f"drives ({self.speed:.3g} m/s) and {MARGIN:g} m allow (the simulation blew up){advice}",
            frame=frame,
            label=self.labels[b],
        )


def _drive_reach(model, extent: float) -> tuple[float, float]:
    """(m, m/s): the farthest linear drive target, and the fastest drive target velocity (angular ones times
    ``extent``), of ``model``'s joints."""
    if not model.joint_dof_count:
        return 0.0, 0.0
    types = model.joint_type.numpy()
    qd_start = model.joint_qd_start.numpy()
    dim = model.joint_dof_dim.numpy().reshape(-1, 2)
    linear = np.zeros(model.joint_dof_count, dtype=bool)
    for j, t in enumerate(types):
        d0 = int(qd_start[j])
        if int(t) == int(JointType.PRISMATIC):
            linear[d0] = True
        elif int(t) in (int(JointType.D6), int(JointType.FREE)):
            linear[d0 : d0 + int(dim[j][0])] = True
    driven = (model.joint_target_ke.numpy() != 0.0) | (model.joint_target_kd.numpy() != 0.0)
    pos = np.abs(np.nan_to_num(model.joint_target_pos.numpy().astype(np.float64), posinf=0.0, neginf=0.0))
    vel = np.abs(np.nan_to_num(model.joint_target_vel.numpy().astype(np.float64), posinf=0.0, neginf=0.0))
    reach = float(np.max(pos[driven & linear], initial=0.0))
    speed = float(np.max(np.where(linear, vel, vel * extent)[driven], initial=0.0))
    return reach, speed if math.isfinite(speed) else 0.0
