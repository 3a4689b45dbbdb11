"""Particle prims moved by hand while the stage runs: a cloth's, a soft volume's or a pile of grains' transform edited
(its own, or its body prim's: the deformable's parent) teleports its points by the change of the prim's world
transform, deformed as they are, and their velocities turn with it; the points are written in the prim's new space
from then on (:meth:`~newton_usd.sync.points_sync.PointsSync.place`), and so are its graphics meshes' (:func:`follow`).
"""

from __future__ import annotations

import numpy as np
from pxr import Usd, UsdGeom

from ..core.quat import quat_conjugate, quat_rotate


def placed_particles(model, path: str) -> list:
    """The particle prims whose place ``path`` sets: the prim itself, or its children (a deformable's body prim and
    its simulation mesh); empty where ``path`` is no such prim."""
    labels = dict.fromkeys(label for label, *_ in model.particle_runs)
    return [label for label in labels if label == path or label.rsplit("/", 1)[0] == path]


def world_matrix(stage, path: str) -> np.ndarray:
    """The prim's local-to-world matrix on ``stage`` now (stage units, row vectors)."""
    return np.array(UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))


def follow(stage, points_sync) -> None:
    """Every prim ``points_sync`` writes is written in its space as the stage has it now (the graphics meshes of a
    deformable whose body prim was moved: they moved with it, and their points are skinned from the particles)."""
    for path, *_ in list(points_sync.groups):
        points_sync.place(str(path), world_matrix(stage, str(path)))


def move_particles(stage, model, state, points_sync, paths, frame, first_world: bool = False) -> list:
    """Teleport the particles of the particle prims that ``paths`` place (:func:`placed_particles`; every world's
    copy of a prim, or world 0's alone with ``first_world``) in ``state`` by the change of each prim's world
    transform: from the one its points were written against (``points_sync``'s) to the stage's now; ``frame``: the
    stage's :class:`~newton_usd.usd.StageFrame`. Returns the prims moved."""
    moved = {}
    for path in paths:
        for label in placed_particles(model, path):
            world = world_matrix(stage, label)
            old = points_sync.place(label, world)
            if old is not None and not np.allclose(old, world, rtol=0.0, atol=1e-12):
                moved[label] = np.linalg.inv(old) @ world  # (row vectors: stage point @ change)
    if not moved:
        return []
    q, qd = state.particle_q.numpy().astype(np.float64), state.particle_qd.numpy().astype(np.float64)
    r, s = frame.rotation, frame.meters_per_unit
    for label, first, end, world in model.particle_runs:
        change = moved.get(label)
        if change is None or (first_world and world != 0):
            continue
        p = quat_rotate(quat_conjugate(r), q[first:end]) / s  # (stage units, the stage's up axis)
        v = quat_rotate(quat_conjugate(r), qd[first:end]) / s
        q[first:end] = quat_rotate(r, p @ change[:3, :3] + change[3, :3]) * s
        qd[first:end] = quat_rotate(r, v @ change[:3, :3]) * s
    state.particle_q.assign(q.astype(np.float32))
    state.particle_qd.assign(qd.astype(np.float32))
    return sorted(moved)
