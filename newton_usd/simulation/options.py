"""A run's options: what :meth:`~newton_usd.sim.Simulation.open` was asked, checked once and frozen.

The clock's values (``fps``, ``substeps``, ``dt``) are the resolved ones: the argument, else the stage's, else the
default (:mod:`~newton_usd.simulation.clock`). Every part of a Simulation reads the options it needs from here; what
a user may change during a run (``record_every``, ``write``, ``check_flung``, ...) is a part's own state instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import NewtonUsdError
from ..sync.stage_sync import XFORM_OPS

MAX_DISTANCE = 1e6
"""m: a body farther than this from the origin stops the run (SimulationError; usdsim exits 3)."""
MAX_SPEED = 1e4
"""m/s: a body whose center of mass moves faster than this stops the run (SimulationError; usdsim exits 3)."""
WRITE_WORLDS = ("first", "all")


@dataclass(frozen=True)
class RunOptions:
    """The options of one run (one PhysicsScene's Simulation), made once by
    :func:`~newton_usd.simulation.opening.open_scene`.

    Attributes:
        fps: frames per second.
        substeps: physics steps per frame.
        dt: the physics step in seconds (0: a frame's time over ``substeps``).
        record: write one time sample per frame (else overwrite the default pose).
        joint_states: also write the joints' positions and velocities onto their prims.
        live: apply the edits made on the stage while it runs.
        order: the resolver's dialect order (None: the default).
        xform_ops: how poses go onto the prims ("trs" or "matrix").
        env_root: the parent of the environment prims simulated as worlds (None: none).
        replicas: the worlds the import is replicated into (1 with ``env_root``: one per environment).
        write_worlds: "first" or "all" (every world onto a copy of the environment).
        world_spacing: stage units between the copies of the environment (None: by its size).
        scene: the PhysicsScene imported (None: the stage's only one).
        max_distance, max_speed: the bounds of a sane state (m from the origin, m/s) at the start.
    """

    fps: float = 60.0
    substeps: int = 1
    dt: float = 0.0
    record: bool = True
    joint_states: bool = False
    live: bool = True
    order: tuple | None = None
    xform_ops: str = "trs"
    env_root: str | None = None
    replicas: int = 1
    write_worlds: str = "first"
    world_spacing: float | None = None
    scene: str | None = None
    max_distance: float = MAX_DISTANCE
    max_speed: float = MAX_SPEED

    def __post_init__(self):
        set_ = object.__setattr__  # (frozen: normalised once, here)
        set_(self, "fps", float(self.fps))
        set_(self, "substeps", int(self.substeps))
        set_(self, "dt", float(self.dt) if self.dt else 1.0 / self.fps / self.substeps)
        set_(self, "order", tuple(self.order) if self.order else None)
        check_options(
            xform_ops=self.xform_ops, write_worlds=self.write_worlds, world_spacing=self.world_spacing,
            max_distance=self.max_distance, max_speed=self.max_speed,
        )  # fmt: skip


def check_options(*, worlds=1, env_root=None, dt=None, xform_ops="trs", write_worlds="first", world_spacing=None,
                  max_distance=MAX_DISTANCE, max_speed=MAX_SPEED) -> None:  # fmt: skip
    """Raise :class:`~newton_usd.errors.NewtonUsdError` naming the first option out of its range."""
    if int(worlds) < 1:
        raise NewtonUsdError(f"worlds must be at least 1, got {worlds}")
    if env_root is not None and int(worlds) != 1:
        raise NewtonUsdError("worlds and env_root both make worlds: give one of them (env_root: one per env)")
    if dt is not None and not dt > 0:
        raise NewtonUsdError(f"the physics time step must be positive, got {dt}")
    if xform_ops not in XFORM_OPS:
        raise NewtonUsdError(f"unknown xform_ops {xform_ops!r}; valid: {', '.join(XFORM_OPS)}")
    if write_worlds not in WRITE_WORLDS:
        raise NewtonUsdError(f"unknown write_worlds {write_worlds!r}; valid: {', '.join(WRITE_WORLDS)}")
    if world_spacing is not None and not (math.isfinite(world_spacing) and world_spacing >= 0):
        raise NewtonUsdError(f"world_spacing must be a finite distance >= 0, got {world_spacing}")
    for name, bound in (("max_distance", max_distance), ("max_speed", max_speed)):
        if not bound > 0:
            raise NewtonUsdError(f"{name} must be > 0, got {bound}")
