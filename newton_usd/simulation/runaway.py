"""A body flung out of the scene: the blow-up that leaves every number finite.

A solver that blows up softly (XPBD pushing apart what it cannot hold, a constraint it drops) can throw a body
tens of meters in a second at speeds below :data:`~newton_usd.simulation.bounds.MAX_SPEED`: nothing is NaN, and
the run would end at exit 0. :class:`RunawayCheck` bounds how far each body may have moved from its start after
``t`` seconds by what the stage itself can do, and names the first body beyond it::

    bound(t) = extent + MARGIN + (v0 + v_drive) t + |g| t^2 / 2

``extent``: the diagonal of the box around the bodies' starting positions (of the widest world, where there are
several), plus :data:`BODY_SIZE` (a body can swing or roll across the scene); ``v0``: the fastest start (a body's
linear velocity, or its joints' linear velocities, and angular ones times the extent: what the stage authors, or a
view wrote); ``v_drive``: the fastest drive target velocity (linear, and angular times the extent), and the
farthest linear drive target is added to the extent; ``|g| t^2 / 2``: free fall from rest. A body in free fall
from rest stays within it by ``extent + MARGIN``; a body flung at 40 m/s leaves it within a second. Kinematic
bodies move as their prims' animation says, which this cannot bound: a model with one is not checked.

A body held to the world by a chain of joints (a fixed-base arm) is bounded tighter: its origin stays within the
chain's *reach* of the chain's anchor on the world (the lengths of its links, anchor to anchor, and the travel of
its limited linear DOFs), so it cannot move farther from its start than the reach plus its start's distance from
the anchor (twice the reach where the stage's poses agree with its joints); beyond
``REACH_FACTOR / 2 * (reach + start's distance) + REACH_MARGIN`` its joints came apart. A chain with a free joint or
an unlimited linear DOF has no reach.

:class:`~newton_usd.simulation.bounds.BlowUpCheck` runs it after every frame of a
:class:`~newton_usd.sim.Simulation`: on the device as a frame function's last kernel
(:mod:`~newton_usd.simulation.device_check`, every frame, read back now and then), on the host after a frame of single
steps (every :data:`CUDA_EVERY`-th on CUDA); from the state at the start of the run, and again from the state of the
moment after :meth:`~newton_usd.sim.Simulation.reset`, a rebuild or a view's write of positions or velocities.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.types import JointType
from ..errors import SimulationError

MARGIN = 10.0
"""m: how far beyond what the stage can do a body must be to be called flung (docs/stages_compat.md)."""

BODY_SIZE = 2.0
"""m: added to the extent of the bodies' starting positions (their own size, where they start together)."""

REACH_FACTOR = 2.5
"""A jointed body may move ``REACH_FACTOR / 2`` times its chain's reach plus its start's distance from the chain's
anchor (2 would be all it can: the rest for soft joints that stretch)."""

REACH_MARGIN = 1.0
"""m: added to the jointed body's bound (see the module)."""

CUDA_EVERY = 10
"""On CUDA, every this many frames of single steps (and the last) are checked on the host: a check reads the poses
back, which waits for the device (on the CPU they are read in place, every frame). Frame functions are checked on the
device, every frame."""


class ModelReach:
    """What of the check depends on the model's structure only (computed once per model, not at each restart of
    the check): which bodies are checked, the worlds, the linear DOFs and each body's chain reach and anchor."""

    def __init__(self, model):
        self.enabled = model.body_count > 0 and not np.asarray(model.body_kinematic.numpy(), dtype=bool).any()
        self.body_world = np.maximum(model.body_world.numpy(), 0) if model.body_count else np.zeros(0, dtype=int)
        self.linear = _linear_dofs(model)
        self.dof_world = _dof_world(model) if model.joint_dof_count else np.zeros(0, dtype=int)
        self.reach, self.anchor = chain_reach(model, self.linear)


class RunawayCheck:
    """The bound of each body's displacement from its start of a model's run (see the module).

    Args:
        model: the finalized Model (its drives, gravity, kinematic bodies).
        body_q, body_qd: the bodies' starting poses and velocities (numpy, ``(n, 7)`` and ``(n, 6)``).
        joint_qd: the joints' starting velocities (numpy; None: not counted).
        start_seconds: the simulated time of the start.
        structure: the model's :class:`ModelReach` (None: computed).
    """

    def __init__(self, model, body_q, body_qd, joint_qd=None, start_seconds: float = 0.0, structure=None):
        structure = ModelReach(model) if structure is None else structure
        start = np.asarray(body_q, dtype=np.float64)[:, :3]
        self.labels = model.body_label
        self.start = start
        self.start_seconds = float(start_seconds)
        self.enabled = structure.enabled
        world = structure.body_world
        low = np.full((int(world.max(initial=0)) + 1, 3), np.inf)
        high = np.full_like(low, -np.inf)
        np.minimum.at(low, world, start)
        np.maximum.at(high, world, start)
        span = np.linalg.norm(np.where(np.isfinite(high - low), high - low, 0.0), axis=1)
        extent = float(np.max(span, initial=0.0)) + BODY_SIZE  # (the widest world's: copies side by side do not add)
        qd = np.asarray(body_qd, dtype=np.float64)
        v0 = float(np.max(np.linalg.norm(qd[:, :3], axis=1) + np.linalg.norm(qd[:, 3:], axis=1) * extent, initial=0))
        linear = structure.linear
        if joint_qd is not None and len(linear):  # (a world's joints all moving one body: the fastest it can go)
            jqd = np.abs(np.nan_to_num(np.asarray(joint_qd, dtype=np.float64), posinf=0.0, neginf=0.0))
            speed = np.where(linear, jqd, jqd * extent)
            v0 = max(v0, float(np.max(np.bincount(structure.dof_world, weights=speed, minlength=1))))
        reach, v_drive = _drive_reach(model, linear, extent)
        self.extent = extent + reach
        self.speed = v0 + v_drive
        self.gravity = float(np.linalg.norm([float(g) for g in model.gravity]))
        self.reach = structure.reach
        self.held = 0.5 * REACH_FACTOR * (self.reach + np.linalg.norm(start - structure.anchor, axis=1)) + REACH_MARGIN

    @classmethod
    def of(cls, model, state, sim_seconds: float, structure=None) -> RunawayCheck:
        """The check of a run of ``model`` from ``state`` at ``sim_seconds`` (``structure``: the model's
        :class:`ModelReach`, where known)."""
        joint_qd = state.joint_qd.numpy() if getattr(state, "joint_qd", None) is not None else None
        return cls(model, state.body_q.numpy(), state.body_qd.numpy(), joint_qd, sim_seconds, structure)

    def due(self, device, frame: int, last: bool) -> bool:
        """Whether the frame is checked: every frame on the CPU (the poses are read in place), every
        :data:`CUDA_EVERY`-th and the ``last`` on CUDA (a check reads the poses back: it waits for the device)."""
        return self.enabled and (device.is_cpu or frame % CUDA_EVERY == 0 or last)

    def bound(self, seconds: float) -> float:
        """m: the farthest a body may be from its start after ``seconds`` of simulated time."""
        return self.extent + MARGIN + self.speed * seconds + 0.5 * self.gravity * seconds * seconds

    def check(self, body_q, sim_seconds: float, frame: int, advice=None) -> None:
        """Raise :class:`~newton_usd.errors.SimulationError` naming the body farthest beyond :meth:`bound` at
        ``sim_seconds`` of simulated time, at ``frame`` (``advice()``: appended, e.g. a stable step; asked only
        when raising); nothing where every body is within it (or the model is not checked)."""
        if not self.enabled:
            return
        seconds = sim_seconds - self.start_seconds
        moved = np.linalg.norm(np.asarray(body_q, dtype=np.float64)[:, :3] - self.start, axis=1)
        held = moved > self.held  # (False where the reach is inf)
        if held.any():
            b = int(np.argmax(np.where(held, moved - self.held, -np.inf)))
            raise SimulationError(
                f"body moved {moved[b]:.3g} m from its start in {seconds:.3g} s, but its joints hold it within "
                f"{self.reach[b]:.3g} m of their anchor on the world: the joints came apart (the simulation blew "
                f"up){advice() if advice is not None else ''}",
                frame=frame,
                label=self.labels[b],
            )
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


def _linear_dofs(model) -> np.ndarray:
    """Which of ``model``'s DOFs are linear (m, m/s); the others are angular (rad, rad/s)."""
    linear = np.zeros(model.joint_dof_count, dtype=bool)
    if not model.joint_dof_count:
        return linear
    qd_start = model.joint_qd_start.numpy()
    dim = model.joint_dof_dim.numpy().reshape(-1, 2)
    for j, t in enumerate(model.joint_type.numpy()):
        d0 = int(qd_start[j])
        if int(t) == int(JointType.PRISMATIC):
            linear[d0] = True
        elif int(t) in (int(JointType.D6), int(JointType.FREE)):
            linear[d0 : d0 + int(dim[j][0])] = True
    return linear


def chain_reach(model, linear: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(m per body: how far its origin can be from the anchor on the world of its chain of joints (each joint's
    child-side anchor to the body origin, anchor to anchor along the chain, plus the travel of limited linear DOFs);
    inf where the chain has a free joint or an unlimited linear DOF, or no joint holds the body; and that anchor in
    world coordinates, ``(n, 3)``). A body that is the child of several joints (a loop) is measured along the
    first."""
    reach = np.full(model.body_count, np.inf)
    anchor = np.zeros((model.body_count, 3))
    if not model.joint_count or not model.body_count:
        return reach, anchor
    linear = _linear_dofs(model) if linear is None else linear
    parent, child = model.joint_parent.numpy(), model.joint_child.numpy()
    types = model.joint_type.numpy()
    x_p = np.asarray(model.joint_X_p.numpy(), dtype=np.float64)[:, :3]
    x_c = np.asarray(model.joint_X_c.numpy(), dtype=np.float64)[:, :3]
    qd_start = model.joint_qd_start.numpy()
    lower = np.asarray(model.joint_limit_lower.numpy(), dtype=np.float64)
    upper = np.asarray(model.joint_limit_upper.numpy(), dtype=np.float64)
    joint_of = {}
    for j in range(model.joint_count):
        joint_of.setdefault(int(child[j]), j)
    travel = np.zeros(model.joint_count)
    for j in range(model.joint_count):
        dofs = np.arange(qd_start[j], qd_start[j + 1])
        span = (upper[dofs] - lower[dofs])[linear[dofs]]
        if int(types[j]) == int(JointType.FREE) or not np.all(np.isfinite(span) & (span < 1e6)):
            travel[j] = np.inf
        else:
            travel[j] = float(np.sum(np.maximum(span, 0.0)))
    for b in range(model.body_count):
        j, depth = joint_of.get(b), 0
        total = 0.0 if j is None else float(np.linalg.norm(x_c[j]))  # (the body origin to its joint's anchor)
        while j is not None and depth <= model.joint_count:
            total += travel[j]
            p = int(parent[j])
            if p < 0:
                reach[b], anchor[b] = total, x_p[j]  # (a joint to the world: its parent frame is the world's)
                break
            k = joint_of.get(p)
            if k is None:
                break  # (a jointless parent: free)
            total += float(np.linalg.norm(x_p[j] - x_c[k]))
            j, depth = k, depth + 1
    return reach, anchor


def _dof_world(model) -> np.ndarray:
    """The world of each of ``model``'s DOFs (0 for the global ones, world -1)."""
    qd_start = model.joint_qd_start.numpy()
    counts = np.diff(qd_start[: model.joint_count + 1])
    return np.repeat(np.maximum(model.joint_world.numpy(), 0), counts)


def _drive_reach(model, linear: np.ndarray, extent: float) -> tuple[float, float]:
    """(m, m/s): the farthest linear drive target, and the fastest drive target velocity (angular ones times
    ``extent``), of ``model``'s joints (``linear``: :func:`_linear_dofs`)."""
    if not model.joint_dof_count:
        return 0.0, 0.0
    driven = (model.joint_target_ke.numpy() != 0.0) | (model.joint_target_kd.numpy() != 0.0)
    pos = np.abs(np.nan_to_num(model.joint_target_pos.numpy().astype(np.float64), posinf=0.0, neginf=0.0))
    vel = np.abs(np.nan_to_num(model.joint_target_vel.numpy().astype(np.float64), posinf=0.0, neginf=0.0))
    reach = float(np.max(pos[driven & linear], initial=0.0))
    speed = float(np.max(np.where(linear, vel, vel * extent)[driven], initial=0.0))
    return reach, speed if math.isfinite(speed) else 0.0
