"""JointStateSync: joint positions and velocities onto the joint prims, as PhysicsJointStateAPI
attributes (``state:<axis>:physics:position`` / ``velocity``), in the output layer.

Angular coordinates are written in degrees (and degrees per second), linear ones in stage units, as
the PhysX/UsdPhysics joint state schema defines them. Revolute joints use the ``angular`` axis,
prismatic joints ``linear``, generic (D6) joints one axis token per DOF (``transX`` ... ``rotZ``).
"""

from __future__ import annotations

import math

import numpy as np
from pxr import Sdf

from ..core.types import JointType
from .specs import over_prim_spec

_DEG = 180.0 / math.pi


class JointStateSync:
    """Writes ``joint_q``/``joint_qd`` of revolute, prismatic and D6 joints onto their prims.

    Args:
        layer: the output layer (as for :class:`StageSync`).
        model: the Model; joint labels are the joint prims' paths (a label met again, in a later world of
            a replicated model, is written from its first world only).
        meters_per_unit: the stage's units, for linear coordinates.
    """

    def __init__(self, layer: Sdf.Layer, model, meters_per_unit: float = 1.0):
        self.layer = layer
        types = model.joint_type.numpy()
        q_start = model.joint_q_start.numpy()
        dim = model.joint_dof_dim.numpy()
        axes = model.joint_axis.numpy()
        qd_start = model.joint_qd_start.numpy()
        # (coordinate index, DOF index, scale, position attribute path, velocity attribute path)
        self.entries = []
        seen = set()
        for j, label in enumerate(model.joint_label):
            jt = int(types[j])
            if label in seen:
                continue
            seen.add(label)
            if jt not in (JointType.REVOLUTE, JointType.PRISMATIC, JointType.D6) or not Sdf.Path.IsValidPathString(
                label
            ):
                continue
            n = int(qd_start[j + 1] - qd_start[j])
            for k in range(n):
                angular = jt == JointType.REVOLUTE or (jt == JointType.D6 and k >= dim[j][0])
                if jt == JointType.D6:
                    axis = axes[qd_start[j] + k]
                    i = int(np.argmax(np.abs(axis)))
                    name = ("rot" if angular else "trans") + "XYZ"[i]
                    sign = float(np.sign(axis[i]))
                else:
                    name, sign = ("angular" if angular else "linear"), 1.0
                scale = sign * (_DEG if angular else 1.0 / meters_per_unit)
                prim = Sdf.Path(label)
                self.entries.append(
                    (
                        int(q_start[j] + k),
                        int(qd_start[j] + k),
                        scale,
                        prim.AppendProperty(f"state:{name}:physics:position"),
                        prim.AppendProperty(f"state:{name}:physics:velocity"),
                    )
                )
        self._prepared = False

    def _prepare(self):
        self._specs = []  # (position spec, velocity spec) per entry
        for _, _, _, pos_path, vel_path in self.entries:
            prim_spec = over_prim_spec(self.layer, pos_path.GetPrimPath())
            self._specs.append(
                tuple(
                    prim_spec.attributes.get(p.name) or Sdf.AttributeSpec(prim_spec, p.name, Sdf.ValueTypeNames.Float)
                    for p in (pos_path, vel_path)
                )
            )
        self._prepared = True
        self._needs_default = True

    def write(self, joint_q: np.ndarray, joint_qd: np.ndarray, time: float | None = None) -> None:
        """Write the coordinates at time code ``time`` (None: the default value)."""
        if not self.entries:
            return
        if not self._prepared:
            self._prepare()
        set_default = time is None or self._needs_default  # the first state written is also the default
        self._needs_default = False
        with Sdf.ChangeBlock():
            for (qi, di, scale, pos_path, vel_path), specs in zip(self.entries, self._specs, strict=True):
                values = (float(joint_q[qi]) * scale, float(joint_qd[di]) * scale)
                for path, spec, value in zip((pos_path, vel_path), specs, values, strict=True):
                    if set_default:
                        spec.default = value
                    if time is not None:
                        self.layer.SetTimeSample(path, float(time), value)

    def restore(self) -> None:
        """Remove the joint state attributes this sync wrote."""
        with Sdf.ChangeBlock():
            for _, _, _, pos_path, vel_path in self.entries:
                for path in (pos_path, vel_path):
                    spec = self.layer.GetAttributeAtPath(path)
                    if spec is not None:
                        spec.owner.RemoveProperty(spec)
        self._prepared = False
