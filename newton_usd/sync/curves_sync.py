"""CurvesSync: writes simulated cables back onto their ``BasisCurves`` prims' ``points``, in the output layer.

A cable's points are not State rows: its segments are bodies (:mod:`newton_usd.core.cables`), and each point is read
back from the segment ends that meet at it (:meth:`~newton_usd.core.cables.Cable.points`, from ``body_q``). Each frame
they are written as a time sample of the prim's ``points``, in the prim's own space and the stage's units and up
axis, as :class:`~newton_usd.sync.points_sync.PointsSync` writes particles (the prim's local-to-world matrix at the
start; a prim whose ancestors move is not followed). :meth:`CurvesSync.restore` removes what was written.
"""

from __future__ import annotations

import numpy as np
from pxr import Sdf, Usd, UsdGeom, Vt

from ..core.quat import quat_conjugate, quat_rotate
from .specs import over_prim_spec


class CurvesSync:
    """Writes each cable's points, from a State's ``body_q``, onto its prim's ``points``.

    Args:
        stage: the stage the model was imported from.
        layer: the output ``Sdf.Layer``.
        cables: the model's :class:`~newton_usd.core.cables.Cable` records (``model.cables``).
        frame: the :class:`~newton_usd.usd.StageFrame` of the stage (units and up axis).
    """

    def __init__(self, stage: Usd.Stage, layer: Sdf.Layer, cables, frame):
        self.layer = layer
        self.cables = []  # (path, Cable, inverse world matrix (4x4, row vectors))
        for cable in cables:
            prim = stage.GetPrimAtPath(cable.label)
            world = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
            self.cables.append((Sdf.Path(cable.label), cable, np.linalg.inv(world)))
        self._scale = 1.0 / frame.meters_per_unit
        self._r_inv = quat_conjugate(frame.rotation)
        self._specs = {}
        self.frames_written = 0

    def local(self, body_q) -> list:
        """Per cable ``(path, points)`` in the prim's own space and stage units, from the segment poses (SI)."""
        out = []
        for path, cable, inv in self.cables:
            p = quat_rotate(self._r_inv, cable.points(body_q)) * self._scale
            out.append((path, p @ inv[:3, :3] + inv[3, :3]))
        return out

    def write(self, body_q, time_code) -> None:
        """Write the cables' points from ``body_q`` at ``time_code`` (None: as the attribute's default)."""
        with Sdf.ChangeBlock():
            for path, points in self.local(body_q):
                spec = self._specs.get(path)
                if spec is None:
                    prim_spec = over_prim_spec(self.layer, path)
                    spec = self._specs[path] = prim_spec.attributes.get("points") or Sdf.AttributeSpec(
                        prim_spec, "points", Sdf.ValueTypeNames.Point3fArray
                    )
                value = Vt.Vec3fArray.FromNumpy(points.astype(np.float32))
                if time_code is None:
                    spec.default = value
                else:
                    self.layer.SetTimeSample(spec.path, float(time_code), value)
        self.frames_written += 1

    def restore(self) -> None:
        """Remove what this sync wrote: the stage shows the authored points again."""
        with Sdf.ChangeBlock():
            for path, _, _ in self.cables:
                prim_spec = self.layer.GetPrimAtPath(path)
                if prim_spec is not None and "points" in prim_spec.attributes:
                    prim_spec.RemoveProperty(prim_spec.attributes["points"])
        self._specs = {}
        self.frames_written = 0
