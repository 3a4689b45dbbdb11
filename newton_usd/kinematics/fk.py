"""Forward kinematics: body poses, and each DOF's world axis and anchor, from joint coordinates (float64 inside).

Joint motions as :class:`~newton_usd.core.types.JointType` defines them: a child body sits at
``X_parent * X_p * M(q) * inverse(X_c)``, where ``M`` is a rotation about the axis (revolute), a translation
along it (prismatic), the quaternion ``q`` (ball), translations then intrinsic rotations (D6); a free joint's
coordinates are the child body's world pose. A body with several joints (as MJCF nests them) is moved by each
further joint by ``X_c * M(q) * inverse(X_c)`` after the ones before, as SolverMuJoCo's spec stacks them.
Bodies moved by no joint keep the State's pose.
"""

from __future__ import annotations

from typing import Any

import warp as wp

from ..core.types import JointType
from .tables import tables

PRISMATIC = wp.constant(int(JointType.PRISMATIC))
REVOLUTE = wp.constant(int(JointType.REVOLUTE))
BALL = wp.constant(int(JointType.BALL))
FREE = wp.constant(int(JointType.FREE))
D6 = wp.constant(int(JointType.D6))


@wp.func
def vec3d_of(v: wp.vec3):
    return wp.vec3d(wp.float64(v[0]), wp.float64(v[1]), wp.float64(v[2]))


@wp.func
def transformd_of(t: wp.transform):
    p = wp.transform_get_translation(t)
    q = wp.transform_get_rotation(t)
    return wp.transformd(vec3d_of(p), wp.quatd(wp.float64(q[0]), wp.float64(q[1]), wp.float64(q[2]), wp.float64(q[3])))


@wp.func
def transform_of(t: wp.transformd):
    p = wp.transform_get_translation(t)
    q = wp.transform_get_rotation(t)
    return wp.transform(
        wp.vec3(wp.float32(p[0]), wp.float32(p[1]), wp.float32(p[2])),
        wp.quat(wp.float32(q[0]), wp.float32(q[1]), wp.float32(q[2]), wp.float32(q[3])),
    )


@wp.kernel
def body_poses_to_f64(body_q: wp.array(dtype=wp.transform), out: wp.array(dtype=wp.transformd)):
    b = wp.tid()
    out[b] = transformd_of(body_q[b])


@wp.kernel
def body_poses_to_f32(body_x: wp.array(dtype=wp.transformd), out: wp.array(dtype=wp.transform)):
    b = wp.tid()
    out[b] = transform_of(body_x[b])


@wp.kernel
def forward_kinematics(
    # Model:
    order: wp.array(dtype=wp.int32),
    joint_type: wp.array(dtype=wp.int32),
    joint_parent: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    joint_X_c: wp.array(dtype=wp.transform),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_linear: wp.array(dtype=wp.int32),
    joint_stacked: wp.array(dtype=wp.int32),
    joint_axis: wp.array(dtype=wp.vec3),
    joints_per_world: int,
    # Data in (float32 or float64):
    joint_q: wp.array(dtype=Any),
    # Data out (body_x holds the State's poses on entry, for bodies no joint moves):
    body_x: wp.array(dtype=wp.transformd),
    dof_axis: wp.array(dtype=wp.vec3d),
    dof_anchor: wp.array(dtype=wp.vec3d),
):
    w = wp.tid()
    for k in range(joints_per_world):
        local = order[k]
        j = w * joints_per_world + local
        t = joint_type[j]
        c = joint_child[j]
        p = joint_parent[j]
        q0 = joint_q_start[j]
        d0 = joint_qd_start[j]
        nd = joint_qd_start[j + 1] - d0
        if t == FREE:
            pos = wp.vec3d(wp.float64(joint_q[q0]), wp.float64(joint_q[q0 + 1]), wp.float64(joint_q[q0 + 2]))
            rot = wp.normalize(
                wp.quatd(
                    wp.float64(joint_q[q0 + 3]), wp.float64(joint_q[q0 + 4]),
                    wp.float64(joint_q[q0 + 5]), wp.float64(joint_q[q0 + 6]),
                )
            )  # fmt: skip
            body_x[c] = wp.transformd(pos, rot)
            for a in range(3):
                e = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
                e[a] = wp.float64(1.0)
                dof_axis[d0 + a] = e
                dof_anchor[d0 + a] = pos
                dof_axis[d0 + 3 + a] = e
                dof_anchor[d0 + 3 + a] = pos
            continue
        x_jp = wp.transform_identity(dtype=wp.float64)  # the parent-side joint frame in world
        if joint_stacked[local]:  # after the joints before it in its body: about its child frame as moved by them
            x_jp = wp.transform_multiply(body_x[c], transformd_of(joint_X_c[j]))
        else:
            if p >= 0:
                x_jp = body_x[p]
            x_jp = wp.transform_multiply(x_jp, transformd_of(joint_X_p[j]))
        origin = wp.transform_get_translation(x_jp)
        rot = wp.transform_get_rotation(x_jp)
        shift = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))  # translations, joint frame
        motion = wp.quat_identity(dtype=wp.float64)  # rotations so far, joint frame
        if t == BALL:
            r = wp.normalize(
                wp.quatd(
                    wp.float64(joint_q[q0]), wp.float64(joint_q[q0 + 1]),
                    wp.float64(joint_q[q0 + 2]), wp.float64(joint_q[q0 + 3]),
                )
            )  # fmt: skip
            motion = r
            for a in range(3):
                e = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
                e[a] = wp.float64(1.0)
                dof_axis[d0 + a] = wp.quat_rotate(rot * r, e)  # angular velocity is in the child joint frame
                dof_anchor[d0 + a] = origin
        elif t == PRISMATIC or t == REVOLUTE or t == D6:
            n_lin = joint_linear[local]
            for a in range(nd):
                axis = vec3d_of(joint_axis[d0 + a])
                value = wp.float64(joint_q[q0 + a])
                if a < n_lin:
                    dof_axis[d0 + a] = wp.quat_rotate(rot, axis)
                    dof_anchor[d0 + a] = origin
                    shift = shift + axis * value
                else:
                    dof_axis[d0 + a] = wp.quat_rotate(rot * motion, axis)
                    dof_anchor[d0 + a] = origin + wp.quat_rotate(rot, shift)
                    motion = motion * wp.quat_from_axis_angle(axis, value)
        x_child_joint = wp.transform_multiply(x_jp, wp.transformd(shift, motion))
        body_x[c] = wp.transform_multiply(x_child_joint, wp.transform_inverse(transformd_of(joint_X_c[j])))


class Frames:
    """What :func:`frames` computed: ``body_x`` (``wp.transformd`` per body), ``dof_axis`` and ``dof_anchor``
    (``wp.vec3d`` per DOF, world frame: a rotation's axis through its anchor, a translation's direction)."""

    def __init__(self, body_x, dof_axis, dof_anchor):
        self.body_x, self.dof_axis, self.dof_anchor = body_x, dof_axis, dof_anchor


def frames(model, joint_q, body_q) -> Frames:
    """Body poses and DOF axes at the coordinates ``joint_q`` (float32, or float64 for finite differences);
    ``body_q`` gives the bodies no joint moves."""
    t = tables(model)
    device = model.device
    body_x = wp.empty(model.body_count, dtype=wp.transformd, device=device)
    if model.body_count:
        wp.launch(body_poses_to_f64, dim=model.body_count, inputs=[body_q], outputs=[body_x], device=device)
    dof_axis = wp.zeros(model.joint_dof_count, dtype=wp.vec3d, device=device)
    dof_anchor = wp.zeros(model.joint_dof_count, dtype=wp.vec3d, device=device)
    if model.joint_count:
        wp.launch(
            forward_kinematics,
            dim=t.worlds,
            inputs=[
                t.order, model.joint_type, model.joint_parent, model.joint_child, model.joint_X_p, model.joint_X_c,
                model.joint_q_start, model.joint_qd_start, t.joint_linear, t.joint_stacked, model.joint_axis, t.joints,
                joint_q,
            ],
            outputs=[body_x, dof_axis, dof_anchor],
            device=device,
        )  # fmt: skip
    return Frames(body_x, dof_axis, dof_anchor)


def eval_fk(model, state, body_q=None, joint_q=None) -> wp.array:
    """Body poses from joint coordinates, every world at once.

    Args:
        model: the Model.
        state: gives ``joint_q`` (unless ``joint_q`` is given) and the poses of bodies no joint moves.
        body_q: where to write the poses (e.g. ``state.body_q`` to bring a State's poses up to its
            coordinates); default a new array.
        joint_q: coordinates to use instead of ``state.joint_q``.

    Returns:
        ``body_q``: one ``wp.transform`` per body (position, quaternion x, y, z, w), world frame.
    """
    f = frames(model, state.joint_q if joint_q is None else joint_q, state.body_q)
    out = body_q if body_q is not None else wp.empty(model.body_count, dtype=wp.transform, device=model.device)
    if model.body_count:
        wp.launch(body_poses_to_f32, dim=model.body_count, inputs=[f.body_x], outputs=[out], device=model.device)
    return out
