"""Enumerations shared by the builder, the importers and the solvers."""

from __future__ import annotations

from enum import IntEnum


class JointType(IntEnum):
    """Joint kinds, with Newton's numbering.

    A D6 joint has any number of linear then angular DOFs along axes of its joint frame
    (``joint_dof_dim`` = (linear, angular)); one coordinate per DOF. Its axes compose in that order:
    translations first, then rotations, each about the axis as rotated by the ones before.

    Coordinates (``joint_q`` / ``joint_qd`` sizes): FREE 7/6, BALL 4/3, PRISMATIC and REVOLUTE 1/1,
    FIXED 0/0. A free joint's ``joint_q`` is the child body frame's world position and Warp-order
    quaternion; its ``joint_qd`` is the linear velocity of the body origin and the angular velocity,
    both in world coordinates. A ball joint's ``joint_q`` is the rotation of the child joint frame
    relative to the parent joint frame, and ``joint_qd`` the angular velocity in the child joint frame.
    A rod joint (a cable's segments, :mod:`~newton_usd.core.cables`; Newton's ``JointType.ROD``, simulated by VBD
    only) has 7/6: the
    child joint frame's position and rotation relative to the parent joint frame, its DOFs the X, Y, Z translations
    (shear, shear, stretch) and rotations (bend, bend, twist) with a stiffness and damping each (``joint_target_ke``,
    ``joint_target_kd``, no drive mode).
    """

    PRISMATIC = 0
    REVOLUTE = 1
    BALL = 2
    FIXED = 3
    FREE = 4
    D6 = 6
    ROD = 7


JOINT_COORD_COUNT = {
    JointType.D6: (None, None),  # per joint: one coordinate per DOF
    JointType.PRISMATIC: (1, 1),
    JointType.REVOLUTE: (1, 1),
    JointType.BALL: (4, 3),
    JointType.FIXED: (0, 0),
    JointType.FREE: (7, 6),
    JointType.ROD: (7, 6),
}
"""(joint_q size, joint_qd size) per joint type."""


class GeoType(IntEnum):
    """Shape kinds.

    ``shape_scale`` holds the size parameters: PLANE (half width, half length, 0; zeros: infinite),
    SPHERE (radius, 0, 0), ELLIPSOID (the three radii), CAPSULE and CYLINDER (radius, half height, 0)
    along the shape's local Z, BOX (half extents), MESH (scale applied to ``shape_source``'s vertices),
    HFIELD (half width, half length, height of the top: ``shape_source`` is the :class:`Heightfield`).
    """

    PLANE = 0
    HFIELD = 1
    SPHERE = 2
    CAPSULE = 3
    ELLIPSOID = 4
    BOX = 6
    MESH = 7
    CYLINDER = 10


class DriveMode(IntEnum):
    """What a joint drive acts on (``joint_target_mode`` per DOF)."""

    NONE = 0
    POSITION = 1
    VELOCITY = 2
    POSITION_VELOCITY = 3


MESH_INERTIA_MODES = ("legacy", "exact", "convex", "shell")
"""How a mesh collider's geometry gives its mass: MuJoCo's mesh ``inertia`` modes (``mjc:inertia``;
``newton:massModel`` "solid" is "exact", "shell" is "shell"). ``model.mujoco.mesh_inertia`` holds the
index of a mesh shape's mode in this tuple (NaN: MuJoCo's default, "legacy")."""
