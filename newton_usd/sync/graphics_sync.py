"""GraphicsSync: graphics meshes bound to a deformable (:class:`~newton_usd.core.skinning.GraphicsMesh`) written
back each frame: their points (and velocities) skinned from the deformable's particles, as a
:class:`~newton_usd.sync.points_sync.PointsSync` writes a particle prim's, in the graphics prim's own space and the
stage's units, time samples removed at a reset."""

from __future__ import annotations

import numpy as np

from .points_sync import PointsSync


class GraphicsSync:
    """Writes every graphics mesh of ``model``'s cloth and soft volumes from the State's particles.

    Args:
        stage, layer, frame: as :class:`~newton_usd.sync.points_sync.PointsSync` takes them.
        meshes: ``(first, GraphicsMesh)``: each graphics mesh and its deformable's first particle.
    """

    def __init__(self, stage, layer, meshes, frame):
        self.meshes = list(meshes)
        groups, row = {}, 0
        for _, mesh in self.meshes:
            groups[mesh.label] = (row, row + len(mesh.parents))
            row += len(mesh.parents)
        self.points = PointsSync(stage, layer, groups, frame)

    @classmethod
    def of(cls, stage, layer, model, frame):
        """The sync of ``model``'s graphics meshes; None where it has none."""
        meshes = [(d.first, g) for d in (*model.cloth, *model.volumes) for g in d.links.graphics]
        return cls(stage, layer, meshes, frame) if meshes else None

    def skinned(self, x) -> np.ndarray:
        """Every graphics mesh's points, one after the other, from the particles' rows ``x``."""
        return np.concatenate([mesh.skinned(x, first) for first, mesh in self.meshes])

    def write(self, positions, velocities, time_code) -> None:
        """Write the graphics meshes' points (and velocities) skinned from the particles' ``positions`` (and
        ``velocities``) at ``time_code``."""
        vel = None if velocities is None else self.skinned(velocities)
        self.points.write(self.skinned(positions), vel, time_code)

    def restore(self) -> None:
        """Remove what was written: the authored points shown again."""
        self.points.restore()
