"""Joint motions: the transform a joint's coordinates make between its two joint frames."""

from __future__ import annotations

import numpy as np

from .quat import quat_from_axis_angle
from .types import JointType

IDENTITY_QUAT = np.array([0.0, 0.0, 0.0, 1.0])


def joint_motions(joint_type, q, axes, n_linear: int) -> list:
    """The joint-frame motions (position, Warp quat) of one joint at coordinates ``q``, in DOF order.

    Revolute, prismatic and D6 joints give one motion per DOF (``axes`` per DOF, the first
    ``n_linear`` translations), a ball joint its rotation, a rod joint its relative pose, free and fixed joints
    none. Applying them in
    order, each about the child joint frame, gives the child joint frame relative to the parent's.
    """
    if joint_type == JointType.BALL:
        q = np.asarray(q, dtype=np.float64)
        return [(np.zeros(3), q / np.linalg.norm(q))]
    if joint_type == JointType.ROD:  # (its coordinates: the relative pose)
        q = np.asarray(q, dtype=np.float64)
        return [(q[:3], q[3:] / np.linalg.norm(q[3:]))]
    if joint_type not in (JointType.REVOLUTE, JointType.PRISMATIC, JointType.D6):
        return []
    motions = []
    for k, value in enumerate(q):
        axis = np.asarray(axes[k], dtype=np.float64)
        if k < n_linear:
            motions.append((axis * float(value), IDENTITY_QUAT))
        else:
            motions.append((np.zeros(3), quat_from_axis_angle(axis, float(value))))
    return motions
