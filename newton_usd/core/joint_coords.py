"""Joint coordinates and body poses, each from the other: the authored configuration read from the body
poses (:meth:`ModelBuilder.joint_q_from_body_q`), and the poses from joint coordinates."""

from __future__ import annotations

import math

import numpy as np

from .elements import IDENTITY
from .kinematics import joint_motions
from .quat import (
    multiply4,
    quat_conjugate,
    quat_from_axis_angle,
    quat_rotate,
    rotate3,
    transform_inverse,
    transform_multiply,
)
from .types import JointType


def joint_q_from_body_q(builder):
    """The work of :meth:`ModelBuilder.joint_q_from_body_q` on ``builder``."""
    dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in builder.joint_qd])]).astype(np.int64)
    stacks = {}
    for j, child in enumerate(builder.joint_child):
        stacks.setdefault(child, []).append(j)
    for child, joints in stacks.items():
        j0 = joints[0]
        parent = builder.joint_parent[j0]
        if len(joints) == 1 and builder.joint_type[j0] in (JointType.REVOLUTE, JointType.PRISMATIC):
            # One scalar joint (the common case): its coordinate is read off the relative pose directly.
            rel_p, rel_q = _joint_relative_pose(builder, parent, child, j0)
            axis = builder.joint_axis[dof_start[j0]]
            if builder.joint_type[j0] == JointType.PRISMATIC:
                builder.joint_q[j0] = np.array([float(np.dot(np.array(rel_p), axis))])
            else:
                angle = 2.0 * math.atan2(float(np.dot(np.array(rel_q[:3]), axis)), float(rel_q[3]))
                builder.joint_q[j0] = np.array([(angle + math.pi) % (2.0 * math.pi) - math.pi])
            continue
        X_wp = (
            transform_multiply(builder.body_q[parent], builder.joint_X_p[j0]) if parent >= 0 else builder.joint_X_p[j0]
        )
        X_wc = transform_multiply(builder.body_q[child], builder.joint_X_c[j0])
        rel = transform_multiply(transform_inverse(X_wp), X_wc)
        # The stack's motion in the child body frame, about each joint's anchor.
        x_c0 = builder.joint_X_c[j0]
        motion = transform_multiply(transform_multiply(x_c0, rel), transform_inverse(x_c0))
        for j in joints:
            jt = builder.joint_type[j]
            if jt == JointType.FREE:
                p, q = builder.body_q[child]
                builder.joint_q[j] = np.concatenate([p, q])
                continue
            x_c = builder.joint_X_c[j]
            if jt == JointType.ROD:  # (a cable's: alone on its child, its coordinates the relative pose)
                builder.joint_q[j] = np.concatenate([rel[0], rel[1] if rel[1][3] >= 0 else -rel[1]])
            elif jt == JointType.BALL:
                local = transform_multiply(transform_multiply(transform_inverse(x_c), motion), x_c)
                q = local[1] if local[1][3] >= 0 else -local[1]
                builder.joint_q[j] = q
                own_body = transform_multiply(transform_multiply(x_c, (np.zeros(3), q)), transform_inverse(x_c))
                motion = transform_multiply(transform_inverse(own_body), motion)
            elif jt in (JointType.PRISMATIC, JointType.REVOLUTE, JointType.D6):
                n_lin = builder.joint_dof_dim[j][0]
                coords = []
                for k in range(len(builder.joint_qd[j])):
                    axis = builder.joint_axis[dof_start[j] + k]
                    local = transform_multiply(transform_multiply(transform_inverse(x_c), motion), x_c)
                    if k < n_lin:
                        d = float(np.dot(local[0], axis))
                        coords.append(d)
                        own = (axis * d, np.array([0.0, 0.0, 0.0, 1.0]))
                    else:
                        q = local[1]
                        angle = 2.0 * math.atan2(np.dot(q[:3], axis), q[3])
                        angle = (angle + math.pi) % (2.0 * math.pi) - math.pi
                        coords.append(angle)
                        own = (np.zeros(3), quat_from_axis_angle(axis, angle))
                    # Remove this DOF's motion (in the body frame) before reading the next one's.
                    own_body = transform_multiply(transform_multiply(x_c, own), transform_inverse(x_c))
                    motion = transform_multiply(transform_inverse(own_body), motion)
                builder.joint_q[j] = np.array(coords)


def _joint_relative_pose(builder, parent, child, j) -> tuple:
    """Joint ``j``'s child frame relative to its parent frame, from the body poses, as (position, quat)
    tuples of floats: ``transform_multiply(transform_inverse(X_wp), X_wc)`` with the arithmetic of the
    single-transform functions (the same values bit for bit), without their small-array overhead."""

    def compose(a_p, a_q, b_p, b_q):  # transform_multiply
        rx, ry, rz = rotate3(a_q, b_p)
        return (a_p[0] + rx, a_p[1] + ry, a_p[2] + rz), multiply4(a_q, b_q)

    def floats(pose):
        return [np.asarray(x, dtype=np.float64).tolist() for x in pose]

    xp_p, xp_q = floats(builder.joint_X_p[j])
    if parent >= 0:
        xp_p, xp_q = compose(*floats(builder.body_q[parent]), xp_p, xp_q)
    wc_p, wc_q = compose(*floats(builder.body_q[child]), *floats(builder.joint_X_c[j]))
    inv_q = (xp_q[0] * -1.0, xp_q[1] * -1.0, xp_q[2] * -1.0, xp_q[3])  # transform_inverse
    ix, iy, iz = rotate3(inv_q, xp_p)
    return compose((-ix, -iy, -iz), inv_q, wc_p, wc_q)


def off_their_joints(builder, children, tolerance: float) -> set:
    """The bodies of ``children`` not where their joints put them on their parents' current poses: their joint frames
    apart, turned off the joint's free axes, or at other coordinates than ``builder.joint_q``'s, by more than
    ``tolerance`` (m or rad). A lone revolute or prismatic joint is checked on the relative pose alone (the common
    case, cheaply); any other joint stack counts as off (forward kinematics places it exactly)."""
    off = set()
    dof_start = None
    stacks = {}
    for j, child in enumerate(builder.joint_child):
        if child in children:
            stacks.setdefault(child, []).append(j)
    for child, joints in stacks.items():
        j = joints[0]
        jt = builder.joint_type[j]
        if len(joints) != 1 or jt not in (JointType.REVOLUTE, JointType.PRISMATIC):
            off.add(child)
            continue
        if dof_start is None:
            dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in builder.joint_qd])]).astype(np.int64)
        rel_p, rel_q = _joint_relative_pose(builder, builder.joint_parent[j], child, j)
        a = [float(x) for x in builder.joint_axis[dof_start[j]]]
        q = float(builder.joint_q[j][0])
        if jt == JointType.REVOLUTE:
            along = rel_q[0] * a[0] + rel_q[1] * a[1] + rel_q[2] * a[2]
            across = [rel_q[k] - along * a[k] for k in range(3)]
            turn = 2.0 * math.atan2(along, rel_q[3]) - q
            errors = (math.hypot(*rel_p), 2.0 * math.hypot(*across), abs((turn + math.pi) % (2.0 * math.pi) - math.pi))
        else:
            along = rel_p[0] * a[0] + rel_p[1] * a[1] + rel_p[2] * a[2]
            across = [rel_p[k] - along * a[k] for k in range(3)]
            errors = (math.hypot(*across), 2.0 * math.hypot(*rel_q[:3]), abs(along - q))
        if max(errors) > tolerance:
            off.add(child)
    return off


def joint_qd_from_body_qd(builder):
    """The work of :meth:`ModelBuilder.joint_qd_from_body_qd` on ``builder``."""
    dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in builder.joint_qd])]).astype(np.int64)
    for j, jt in enumerate(builder.joint_type):
        if jt in (JointType.FREE, JointType.FIXED):
            continue
        parent, child = builder.joint_parent[j], builder.joint_child[j]
        vc = np.asarray(builder.body_qd[child], dtype=np.float64)
        vp = np.asarray(builder.body_qd[parent], dtype=np.float64) if parent >= 0 else np.zeros(6)
        X_wc = transform_multiply(builder.body_q[child], builder.joint_X_c[j])
        # Velocity of the child joint frame's origin, relative to the parent's motion at that point.
        r_c = X_wc[0] - builder.body_q[child][0]
        v_point_c = vc[:3] + np.cross(vc[3:], r_c)
        v_point_p = vp[:3] + (np.cross(vp[3:], X_wc[0] - builder.body_q[parent][0]) if parent >= 0 else 0.0)
        lin = quat_rotate(quat_conjugate(X_wc[1]), v_point_c - v_point_p)  # in the child joint frame
        ang = quat_rotate(quat_conjugate(X_wc[1]), vc[3:] - vp[3:])
        if jt == JointType.BALL:
            builder.joint_qd[j] = ang
            continue
        n_lin = builder.joint_dof_dim[j][0]
        for k in range(len(builder.joint_qd[j])):
            axis = builder.joint_axis[dof_start[j] + k]
            builder.joint_qd[j][k] = float(np.dot(lin if k < n_lin else ang, axis))


def body_q_from_joint_q(builder, children=None):
    """The work of :meth:`ModelBuilder.body_q_from_joint_q` on ``builder``; ``children``: only these bodies (a set
    of body indices) are placed, each on its parent's pose as it is then (a parent among them placed first)."""
    dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in builder.joint_qd])]).astype(np.int64)
    stacks = {}
    for j, child in enumerate(builder.joint_child):
        stacks.setdefault(child, []).append(j)
    done = set()

    def place(child):
        if child in done or child not in stacks or (children is not None and child not in children):
            return
        joints = stacks[child]
        parent = builder.joint_parent[joints[0]]
        if parent >= 0:
            place(parent)
        done.add(child)
        if builder.joint_type[joints[0]] == JointType.FREE:
            q = builder.joint_q[joints[0]]
            builder.body_q[child] = (q[:3].copy(), q[3:] / np.linalg.norm(q[3:]))
            return
        base = builder.body_q[parent] if parent >= 0 else IDENTITY
        pose = transform_multiply(base, builder.joint_X_p[joints[0]])
        pose = transform_multiply(pose, transform_inverse(builder.joint_X_c[joints[0]]))
        for j in joints:
            x_c = builder.joint_X_c[j]
            axes = builder.joint_axis[dof_start[j] : dof_start[j] + len(builder.joint_qd[j])]
            for motion in joint_motions(builder.joint_type[j], builder.joint_q[j], axes, builder.joint_dof_dim[j][0]):
                in_body = transform_multiply(transform_multiply(x_c, motion), transform_inverse(x_c))
                pose = transform_multiply(pose, in_body)
        builder.body_q[child] = pose

    for child in list(stacks) if children is None else sorted(children):
        place(child)
