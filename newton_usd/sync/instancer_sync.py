"""Poses of bodies that are PointInstancer instances, written as the instancer's arrays.

A body imported from instance ``i`` of a PointInstancer (label ``"/Path/To/Instancer[i]"``) moves by
rewriting ``positions[i]`` and ``orientationsf[i]`` of its instancer, in the output layer, one time
sample per frame (a quaternion array in float precision: ``orientationsf`` wins over an authored
``orientations`` in USD). Instances that are not bodies keep their authored values. The instance
transform is the body's simulated world pose with the prototype's own transform (and the body's place
in the prototype) taken off and brought into the instancer's space; authored ``scales`` stay.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, Vt

from ..core.quat import matrix_to_quat
from .specs import over_prim_spec

INSTANCE_LABEL = re.compile(r"^(?P<instancer>/.*)\[(?P<index>\d+)\]$")
"""Body labels of PointInstancer instances: the instancer's path and the instance index."""

POSITIONS = "positions"
ORIENTATIONS = "orientationsf"


def instance_of(label: str):
    """``(instancer path, instance index)`` for an instance body's label, else None."""
    m = INSTANCE_LABEL.match(str(label))
    return (m.group("instancer"), int(m.group("index"))) if m else None


@dataclass
class _Instancer:
    path: Sdf.Path
    rows: np.ndarray  # body rows (into body_q) of the instances that are bodies
    ids: np.ndarray  # their instance indices
    pre_inv: np.ndarray  # (n, 4, 4) inverse of the body's transform relative to the instance frame
    world_inv: np.ndarray  # (4, 4) inverse of the instancer's world matrix
    positions: np.ndarray  # (N, 3) authored positions of every instance (float32)
    orientations: np.ndarray  # (N, 4) authored orientations, Warp order (float32)
    specs: tuple | None = None  # (positions spec, orientations spec) in the output layer


def _rigid(m: np.ndarray) -> np.ndarray:
    """A row-vector 4x4 matrix without its scale (rotation rows normalized)."""
    m = np.array(m, dtype=np.float64)
    m[:3, :3] /= np.linalg.norm(m[:3, :3], axis=1, keepdims=True)
    return m


class InstancerSync:
    """Writes the poses of instance bodies onto their PointInstancers.

    Args:
        stage, layer: as for :class:`~newton_usd.sync.StageSync`.
        entries: ``(body row, instancer path, instance index)`` of every instance body.
        to_stage: a function from ``body_q`` rows to row-vector world matrices in stage units and axes.
    """

    def __init__(self, stage: Usd.Stage, layer: Sdf.Layer, entries, to_stage):
        self.layer = layer
        self._to_stage = to_stage
        cache = UsdGeom.XformCache(Usd.TimeCode.Default())
        groups = {}
        for row, path, index in entries:
            groups.setdefault(path, []).append((row, index))
        self.instancers = []
        time = Usd.TimeCode.Default()
        for path, members in groups.items():
            prim = stage.GetPrimAtPath(path)
            pi = UsdGeom.PointInstancer(prim)
            n = len(pi.GetProtoIndicesAttr().Get() or [])
            positions = np.zeros((n, 3), dtype=np.float32)
            authored = pi.GetPositionsAttr().Get()
            if authored is not None:
                positions[: len(authored)] = np.asarray(authored, dtype=np.float32)[:n]
            orientations = np.tile(np.array([0, 0, 0, 1], dtype=np.float32), (n, 1))
            quats = pi.GetOrientationsfAttr().Get() or pi.GetOrientationsAttr().Get()
            if quats:
                orientations[: len(quats)] = [[*q.GetImaginary(), q.GetReal()] for q in quats][:n]
            # Instance frame of each body: ComputeInstanceTransforms without the instance's own
            # position and orientation (the prototype root's transform, and where the body sits in it).
            full = pi.ComputeInstanceTransformsAtTime(
                time, time, UsdGeom.PointInstancer.IncludeProtoXform, UsdGeom.PointInstancer.IgnoreMask
            )
            rows, ids, pre = [], [], []
            for row, index in members:
                q = orientations[index]
                rotation = Gf.Rotation(Gf.Quatd(float(q[3]), *map(float, q[:3])))
                inst = Gf.Matrix4d(rotation, Gf.Vec3d(*map(float, positions[index])))
                proto_part = full[index] * inst.GetInverse()  # the prototype root's transform (and scale)
                rows.append(row)
                ids.append(index)
                pre.append(_rigid(np.array(proto_part)))
            world = _rigid(np.array(cache.GetLocalToWorldTransform(prim)))
            self.instancers.append(
                _Instancer(
                    Sdf.Path(path), np.array(rows), np.array(ids), np.linalg.inv(np.array(pre)),
                    np.linalg.inv(world), positions, orientations,
                )
            )  # fmt: skip

    def write(self, body_q: np.ndarray, time: float | None) -> None:
        """Write every instancer's arrays for the poses ``body_q`` (all bodies, simulation frame)."""
        for g in self.instancers:
            world = self._to_stage(body_q[g.rows])
            local = g.pre_inv @ world @ g.world_inv  # the instance transform: body = pre @ local @ W
            g.positions[g.ids] = local[:, 3, :3]
            rot = local[:, :3, :3] / np.linalg.norm(local[:, :3, :3], axis=2, keepdims=True)
            g.orientations[g.ids] = matrix_to_quat(np.swapaxes(rot, -1, -2))
            if g.specs is None:
                g.specs = self._prepare(g)
            values = (Vt.Vec3fArray.FromNumpy(g.positions), Vt.QuatfArray.FromNumpy(g.orientations))
            for spec, value in zip(g.specs, values, strict=True):
                if time is None or not spec.HasDefaultValue():
                    spec.default = value
                if time is not None:
                    self.layer.SetTimeSample(spec.path, time, value)

    def _prepare(self, g: _Instancer):
        prim_spec = over_prim_spec(self.layer, g.path)
        specs = []
        types = ((POSITIONS, Sdf.ValueTypeNames.Point3fArray), (ORIENTATIONS, Sdf.ValueTypeNames.QuatfArray))
        for name, type_name in types:
            specs.append(prim_spec.attributes.get(name) or Sdf.AttributeSpec(prim_spec, name, type_name))
        return tuple(specs)

    def restore(self) -> None:
        """Remove the arrays this sync wrote."""
        for g in self.instancers:
            prim_spec = self.layer.GetPrimAtPath(g.path)
            if prim_spec is not None:
                for name in (POSITIONS, ORIENTATIONS):
                    if name in prim_spec.attributes:
                        prim_spec.RemoveProperty(prim_spec.attributes[name])
            g.specs = None
