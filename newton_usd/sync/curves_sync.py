"""CurvesSync: writes simulated cables back onto their ``BasisCurves`` prims' ``points``, in the output layer.

A cable's points are not State rows: its segments are bodies (:mod:`newton_usd.core.cables`), and each point is read
back from the segment ends that meet at it (as :meth:`~newton_usd.core.cables.Cable.points`, from ``body_q``). Each
frame they are written as a time sample of the prim's ``points``, in the prim's own space and the stage's units and up
axis, as :class:`~newton_usd.sync.points_sync.PointsSync` writes particles (the prim's local-to-world matrix at the
start; a prim whose ancestors move is not followed). Worlds as bodies' (:func:`~newton_usd.simulation.worlds.
written_labels`): each prim's first world onto it, a replicated world's copy of a prim onto its copy of the
environment (``copies``, in the source prim's space: the copy's place moves it), an environment's own prims each.

Every written cable's points are computed at once (one gather of the segment poses, preallocated buffers: no
allocation per frame but the values handed to USD) and written one ``SetTimeSample`` per prim, in one change block.
:meth:`CurvesSync.restore` removes what was written.
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
        cables: the model's :class:`~newton_usd.core.cables.Cable` records (``model.cables``), of every world.
        frame: the :class:`~newton_usd.usd.StageFrame` of the stage (units and up axis).
        copies: the :class:`~newton_usd.sync.world_copies.WorldCopies` that show the other worlds (None: a replicated
            world's copy of a prim is not written).
    """

    def __init__(self, stage: Usd.Stage, layer: Sdf.Layer, cables, frame, copies=None):
        self.layer = layer
        self.paths, written, seen = [], [], set()
        for cable in cables:
            path = cable.label if cable.label not in seen else None
            if path is None and copies is not None:
                path = copies.label(cable.label, cable.world)
            seen.add(cable.label)
            if path is not None:
                self.paths.append(Sdf.Path(path))
                written.append(cable)
        n = [len(c.point_bodies) for c in written]
        self.bounds = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
        p = int(self.bounds[-1])
        self._bodies = np.concatenate([c.point_bodies for c in written]) if written else np.zeros((0, 2), np.int64)
        self._z = np.concatenate([c.point_offsets for c in written]) if written else np.zeros((0, 2))
        # stage-local point = simulated world point (m, Z up) @ A + t, per point: the frame's rotation back, the
        # units, the prim's inverse world matrix (its source prim's, for a copy of it)
        r = quat_rotate(quat_conjugate(frame.rotation), np.eye(3)) / frame.meters_per_unit  # (rows: the axes' images)
        self._a, self._t = np.zeros((p, 3, 3)), np.zeros((p, 3))
        for k, cable in enumerate(written):
            prim = stage.GetPrimAtPath(cable.label)
            world = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))
            inv = np.linalg.inv(world)
            sl = slice(int(self.bounds[k]), int(self.bounds[k + 1]))
            self._a[sl], self._t[sl] = r @ inv[:3, :3], inv[3, :3]
        self._q = np.zeros((p, 2, 7))  # (the buffers of a frame's computation)
        self._ends = np.zeros((p, 2, 3))
        self._points, self._moved = np.zeros((p, 3)), np.zeros((p, 3))
        self._local = np.zeros((p, 3), dtype=np.float32)
        self._specs = {}
        self.frames_written = 0

    def world_points(self, body_q) -> np.ndarray:
        """Every written cable's points (world, m; rows :attr:`bounds`) from the segment poses ``body_q`` (a view of
        this sync's buffer: copy it to keep it)."""
        body_q = np.asarray(body_q)
        if self._q.dtype != body_q.dtype:  # (the State's float32, or float64 poses)
            self._q = np.zeros(self._q.shape, dtype=body_q.dtype)
        np.take(body_q, self._bodies, axis=0, out=self._q)
        x, y, z, w = (self._q[..., i] for i in range(3, 7))
        e = self._ends  # each segment end: its body's position + offset * (its body's Z axis)
        np.multiply(x, z, out=e[..., 0])
        e[..., 0] += y * w
        np.multiply(y, z, out=e[..., 1])
        e[..., 1] -= x * w
        np.multiply(x, x, out=e[..., 2])
        e[..., 2] += y * y
        e[..., :2] *= 2.0
        e[..., 2] *= -2.0
        e[..., 2] += 1.0
        e *= self._z[..., None]
        e += self._q[..., :3]
        np.add(e[:, 0], e[:, 1], out=self._points)
        self._points *= 0.5
        return self._points

    def local(self, body_q) -> list:
        """Per written cable ``(path, points)`` in the prim's own space and stage units (float32), from the segment
        poses (SI)."""
        p = self.world_points(body_q)
        np.einsum("pi,pij->pj", p, self._a, out=self._moved)
        self._moved += self._t
        self._local[:] = self._moved
        b = self.bounds
        return [(path, self._local[b[k] : b[k + 1]]) for k, path in enumerate(self.paths)]

    def _spec(self, path):
        spec = self._specs.get(path)
        if spec is None:
            prim_spec = over_prim_spec(self.layer, path)
            spec = prim_spec.attributes.get("points") or Sdf.AttributeSpec(
                prim_spec, "points", Sdf.ValueTypeNames.Point3fArray
            )
            self._specs[path] = spec
        return spec

    def write(self, body_q, time_code) -> None:
        """Write the cables' points from ``body_q`` at ``time_code`` (None: as the attribute's default)."""
        local = self.local(body_q)
        set_sample = self.layer.SetTimeSample
        with Sdf.ChangeBlock():
            for path, points in local:
                spec = self._spec(path)
                value = Vt.Vec3fArray.FromNumpy(points)
                if time_code is None:
                    spec.default = value
                else:
                    set_sample(spec.path, float(time_code), value)
        self.frames_written += 1

    def restore(self) -> None:
        """Remove what this sync wrote: the stage shows the authored points again."""
        with Sdf.ChangeBlock():
            for path in self.paths:
                prim_spec = self.layer.GetPrimAtPath(path)
                if prim_spec is not None and "points" in prim_spec.attributes:
                    prim_spec.RemoveProperty(prim_spec.attributes["points"])
        self._specs = {}
        self.frames_written = 0
