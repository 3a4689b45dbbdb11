"""Initial joint positions and velocities authored with PhysicsJointStateAPI
(``state:<axis>:physics:position`` / ``velocity``).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.types import JointType
from .descriptors import DEG

D6_AXIS_TOKENS = ("transX", "transY", "transZ", "rotX", "rotY", "rotZ")
"""The UsdPhysics axis tokens of a generic joint's DOFs (``limit:<token>:physics:*``, ``drive:<token>:...``,
``state:<token>:...``), translations then rotations, each in X, Y, Z order."""

_STATE_AXES = {
    JointType.REVOLUTE: ("angular",),
    JointType.PRISMATIC: ("linear",),
    JointType.D6: D6_AXIS_TOKENS,
}

STATE_ATTRIBUTES = {
    jt: frozenset(f"state:{axis}:physics:{kind}" for axis in axes for kind in ("position", "velocity"))
    for jt, axes in _STATE_AXES.items()
}


def import_joint_states(builder, stage, result, frame) -> bool:
    """Initial joint positions and velocities authored with (PhysX's) PhysicsJointStateAPI
    (``state:<axis>:physics:position`` / ``velocity``, degrees for angular axes) override the ones read
    from the body poses. Returns whether any position was set."""
    moved = False
    dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in builder.joint_qd])]).astype(np.int64)
    for path, j in result.joint_index.items():
        jt = builder.joint_type[j]
        axes = _STATE_AXES.get(jt)
        if not axes:
            continue
        prim = stage.GetPrimAtPath(path)
        if not prim:
            continue
        authored = result.resolver.view(prim).authored
        if authored.isdisjoint(STATE_ATTRIBUTES[jt]):
            continue
        n_lin = builder.joint_dof_dim[j][0]
        for k in range(len(builder.joint_qd[j])):
            if jt == JointType.D6:
                # D6 DOFs are the free axes in X, Y, Z order: find this DOF's axis token.
                axis = builder.joint_axis[dof_start[j] + k]
                name = ("trans" if k < n_lin else "rot") + "XYZ"[int(np.argmax(np.abs(axis)))]
                sign = float(np.sign(axis[int(np.argmax(np.abs(axis)))]))
            else:
                name, sign = axes[0], 1.0
            angular = jt == JointType.REVOLUTE or (jt == JointType.D6 and k >= n_lin)
            unit = DEG if angular else frame.meters_per_unit
            for attr_name, target in (("position", builder.joint_q[j]), ("velocity", builder.joint_qd[j])):
                attr_path = f"state:{name}:physics:{attr_name}"
                if attr_path not in authored:  # no opinion: no authored value
                    continue
                attr = prim.GetAttribute(attr_path)
                value = attr.Get() if attr and attr.HasAuthoredValue() else None
                if value is not None:
                    new = sign * float(value) * unit
                    # Only a position that differs from the one the body poses give moves the bodies
                    # (stages often author the current angles, e.g. 0 for every joint).
                    moved |= attr_name == "position" and not math.isclose(new, target[k], rel_tol=1e-6, abs_tol=1e-9)
                    target[k] = new
                    result.resolver.used.add((path, attr_path))
    return moved
