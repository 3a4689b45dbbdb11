"""PointsSync: writes simulated particles back onto their prims' ``points`` (and ``velocities``), in the output layer.

Any prim whose points are simulated as particles (a granular ``Points`` prim; a deformable's mesh reuses it) has a
run of the State's particle rows (:func:`~newton_usd.sync.state_rows.particle_rows`). Each frame its run is
written as a time sample of its ``points`` attribute (``velocities`` too, where asked), in the prim's own space and
the stage's units and up axis: the inverse of the import's ``p_sim = mpu * R (p @ M)`` with ``M`` the prim's
local-to-world matrix at the start, or where the prim was moved by hand since (:meth:`PointsSync.place`; a prim
whose ancestors move is not followed). The default value of each is left
as authored (the output layer holds time samples only), and :meth:`PointsSync.restore` removes what was written.
"""

from __future__ import annotations

import numpy as np
from pxr import Sdf, Usd, UsdGeom, Vt

from ..core.quat import quat_conjugate, quat_rotate
from .specs import over_prim_spec


class PointsSync:
    """Writes each particle prim's run of a State's particles onto its ``points`` (and ``velocities``).

    Args:
        stage: the stage the model was imported from.
        layer: the output ``Sdf.Layer`` (part of the stage's layer stack, stronger than the authored opinions).
        groups: prim path -> its run ``(first, end)`` of the particle rows (``model.particle_groups``), or
            ``(first, end, like)``: written in the space of the prim ``like`` (a copy of the environment: its source).
        frame: the :class:`~newton_usd.usd.StageFrame` of the stage (units and up axis).
        velocities: also write ``velocities``.
    """

    def __init__(self, stage: Usd.Stage, layer: Sdf.Layer, groups: dict, frame, velocities: bool = True):
        self.layer = layer
        self.velocities = velocities
        self.frames_written = 0
        self.groups = []  # (path, first, end, inverse world matrix (4x4, row vectors))
        for path, (first, end, *like) in groups.items():
            prim = stage.GetPrimAtPath(like[0] if like else path)
            world = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
            self.groups.append((Sdf.Path(path), int(first), int(end), np.linalg.inv(world)))
        self._scale = 1.0 / frame.meters_per_unit
        self._r_inv = quat_conjugate(frame.rotation)
        self._specs = {}  # path -> (points spec, velocities spec or None)

    def _spec(self, path):
        specs = self._specs.get(path)
        if specs is None:
            prim_spec = over_prim_spec(self.layer, path)
            points = prim_spec.attributes.get("points") or Sdf.AttributeSpec(
                prim_spec, "points", Sdf.ValueTypeNames.Point3fArray
            )
            velocities = None
            if self.velocities:
                velocities = prim_spec.attributes.get("velocities") or Sdf.AttributeSpec(
                    prim_spec, "velocities", Sdf.ValueTypeNames.Vector3fArray
                )
            specs = self._specs[path] = (points, velocities)
        return specs

    def local(self, positions: np.ndarray, velocities: np.ndarray | None = None):
        """Per group ``(path, points, velocities)`` in the prim's own space and stage units, from world rows (SI)."""
        p = quat_rotate(self._r_inv, np.asarray(positions, dtype=np.float64)) * self._scale
        v = None
        if velocities is not None:
            v = quat_rotate(self._r_inv, np.asarray(velocities, dtype=np.float64)) * self._scale
        out = []
        for path, first, end, inv in self.groups:
            local = p[first:end] @ inv[:3, :3] + inv[3, :3]
            local_v = v[first:end] @ inv[:3, :3] if v is not None else None
            out.append((path, local, local_v))
        return out

    def write(self, positions, velocities, time_code) -> None:
        """Write the rows ``positions`` (and ``velocities``: None, not written) at ``time_code`` (None: as the
        attributes' default)."""
        with Sdf.ChangeBlock():
            for path, points, vel in self.local(positions, velocities if self.velocities else None):
                points_spec, velocities_spec = self._spec(path)
                value = Vt.Vec3fArray.FromNumpy(points.astype(np.float32))
                if time_code is None:
                    points_spec.default = value
                else:
                    self.layer.SetTimeSample(points_spec.path, float(time_code), value)
                if velocities_spec is not None and vel is not None:
                    value = Vt.Vec3fArray.FromNumpy(vel.astype(np.float32))
                    if time_code is None:
                        velocities_spec.default = value
                    else:
                        self.layer.SetTimeSample(velocities_spec.path, float(time_code), value)
        self.frames_written += 1

    def place(self, path: str, world: np.ndarray):
        """The prim ``path`` is now at ``world`` (its local-to-world matrix, stage units, row vectors): its points are
        written in that space from now on (a prim moved by hand, its points teleported with it). Returns the matrix
        they were written against (None: no such prim is written)."""
        old = None
        for i, (group_path, first, end, inv) in enumerate(self.groups):
            if str(group_path) == path:
                old = np.linalg.inv(inv)
                self.groups[i] = (group_path, first, end, np.linalg.inv(world))
        return old

    def restore(self) -> None:
        """Remove what this sync wrote: the stage shows the authored points again."""
        with Sdf.ChangeBlock():
            for path, _, _, _ in self.groups:
                prim_spec = self.layer.GetPrimAtPath(path)
                if prim_spec is None:
                    continue
                for name in ("points", "velocities"):
                    if name in prim_spec.attributes:
                        prim_spec.RemoveProperty(prim_spec.attributes[name])
        self._specs = {}
        self.frames_written = 0
