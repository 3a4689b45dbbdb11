"""Joints as MuJoCo joints: hinge and slide joints at the child's joint frame, ball and free joints, a D6
joint as its free axes; body inertials in MuJoCo's principal form."""

from __future__ import annotations

import mujoco
import numpy as np

from ....core.kinematics import joint_motions
from ....core.quat import (
    matrix_to_quat,
    quat_rotate,
    xyzw_to_wxyz,
)
from ....core.types import JointType
from .values import JOINT_VALUES, force_space_solref, set_from

_JOINT = {
    JointType.REVOLUTE: mujoco.mjtJoint.mjJNT_HINGE,
    JointType.PRISMATIC: mujoco.mjtJoint.mjJNT_SLIDE,
    JointType.BALL: mujoco.mjtJoint.mjJNT_BALL,
    JointType.FREE: mujoco.mjtJoint.mjJNT_FREE,
}

UNLIMITED_EFFORT = 1e9
"""A drive force limit at or above this is no limit (``joint_effort_limit`` defaults to a huge value)."""


def principal_inertia(inertia):
    """Principal moments and Warp-order rotation of a symmetric 3x3 inertia tensor.

    The principal axes are ordered and signed to lie closest to the body axes, so a diagonal tensor
    keeps its moments in place with the identity rotation (MuJoCo derives constraint weights from
    the inertial frame: a permuted one would change the simulation)."""
    inertia = 0.5 * (inertia + inertia.T)
    if np.abs(inertia - np.diag(np.diag(inertia))).max() <= 1e-12 * max(np.abs(inertia).max(), 1e-300):
        return np.maximum(np.diag(inertia), 0.0), np.array([0.0, 0.0, 0.0, 1.0])
    w, v = np.linalg.eigh(inertia)
    perm, free = [0, 0, 0], [0, 1, 2]
    for axis in np.argsort(-np.abs(v).max(axis=1)):  # most decided axis first
        j = max(free, key=lambda c: abs(v[axis, c]))
        perm[axis] = j
        free.remove(j)
    w, v = w[perm], v[:, perm]
    v *= np.where(np.diag(v) < 0, -1.0, 1.0)
    if np.linalg.det(v) < 0:
        v[:, 2] *= -1.0
    return np.maximum(w, 0.0), matrix_to_quat(v)


AXIS_SNAP = 1e-6
"""A joint axis within this of a body axis is that axis exactly: float32 round trips (a USD quatf)
leave ~1e-8 components, and MuJoCo treats a body whose slide axes are body axes as "simple"."""


def snap_axis(axis):
    axis = np.asarray(axis, dtype=np.float64)
    snapped = np.where(np.abs(axis) < AXIS_SNAP, 0.0, axis)
    return snapped / np.linalg.norm(snapped)


def mj_inertial(mass, inertia):
    """A body's MuJoCo ``inertia`` (principal moments, kept positive for a body with mass) and
    ``iquat`` (wxyz) from its mass and 3x3 inertia tensor."""
    moments, iquat = principal_inertia(inertia)
    return np.maximum(moments, 1e-9 if mass > 0 else 0.0), xyzw_to_wxyz(iquat)


def initial_motions(a, j, model):
    """The joint-frame motions of joint ``j`` at the model's initial coordinates, in DOF order. A ball
    joint with a cone limit stays at its zero rotation (MuJoCo measures the cone from qpos0)."""
    jt = int(a.joint_type[j])
    if jt == JointType.BALL and model.joint_cone(j) is not None:
        return []
    qs, qe = int(a.joint_q_start[j]), int(a.joint_q_start[j + 1])
    ds, de = int(a.joint_qd_start[j]), int(a.joint_qd_start[j + 1])
    return joint_motions(jt, a.joint_q[qs:qe], a.joint_axis[ds:de], int(a.joint_dof_dim[j][0]))


def add_mj_joints(body, j, a, model, names, dof_handles):
    """The MuJoCo joint(s) of model joint ``j`` on ``body``: one for revolute, prismatic, ball and free
    joints, one slide or hinge per DOF for a D6 (linear DOFs first), none for a fixed joint.
    Fills ``dof_handles`` for the DOFs that map to a scalar MuJoCo joint; returns the first joint."""
    jt = int(a.joint_type[j])
    if jt == JointType.FIXED:
        return None
    xc = (a.joint_X_c[j][:3], a.joint_X_c[j][3:])
    start, end = int(a.joint_qd_start[j]), int(a.joint_qd_start[j + 1])
    if jt in (JointType.BALL, JointType.FREE):
        mj_joint = body.add_joint(name=names(model.joint_label[j]), type=_JOINT[jt])
        mj_joint.pos = xc[0]
        cone = model.joint_cone(j) if jt == JointType.BALL else None
        if cone is not None:
            mj_joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            mj_joint.range = [0.0, cone.limit]
        mj_joint.armature = float(a.joint_armature[start])
        mj_joint.frictionloss = float(a.joint_friction[start])
        set_from(mj_joint, model, start, JOINT_VALUES)
        return mj_joint
    n_lin = int(a.joint_dof_dim[j][0])
    first = None
    for dof in range(start, end):
        k = dof - start
        kind = mujoco.mjtJoint.mjJNT_SLIDE if k < n_lin else mujoco.mjtJoint.mjJNT_HINGE
        suffix = "" if end - start == 1 else f"_{'lin' if k < n_lin else 'ang'}{k}"
        mj_joint = body.add_joint(name=names(model.joint_label[j], suffix), type=kind)
        # Placed at the initial coordinates; MuJoCo's qpos is the model coordinate + the DOF's ref.
        ref = float(a.dof_ref[dof])
        mj_joint.ref = float(a.joint_q[int(a.joint_q_start[j]) + k]) + ref
        mj_joint.pos = xc[0]
        mj_joint.axis = snap_axis(quat_rotate(xc[1], a.joint_axis[dof]))
        if a.joint_limited[dof]:
            mj_joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            mj_joint.range = [a.joint_limit_lower[dof] + ref, a.joint_limit_upper[dof] + ref]
        mj_joint.armature = float(a.joint_armature[dof])
        mj_joint.frictionloss = float(a.joint_friction[dof])
        set_from(mj_joint, model, dof, JOINT_VALUES)
        dof_handles[dof] = mj_joint
        first = first or mj_joint
    return first


def soft_limit_solref(mj_model, model, dof_handles) -> None:
    """Soft joint limits (``model.joint_limit_ke``/``joint_limit_kd``: ``newton:limitStiffness``,
    ``physxLimit:<axis>:stiffness`` and their dampings) as the limits' ``solref`` (:func:`.values.force_space_solref`:
    the steady force past the bound is the stage's spring; MuJoCo's impedance settles there slower, a 1 kg bob 0.5 m
    out against 57 N*m/rad at 3.4 rad/s instead of 15), where no ``mjc:solreflimit`` is authored (NewtonJointAPI's
    stiffness cleared it at import)."""
    ke, kd = model.joint_limit_ke.numpy(), model.joint_limit_kd.numpy()
    authored = getattr(model.mujoco, "dof_solref_limit", None)
    for d in np.nonzero(np.isfinite(ke))[0]:
        handle = dof_handles[d]
        if handle is None or (authored is not None and not np.isnan(authored[d]).any()):
            continue
        jid = handle.id
        solref = force_space_solref(ke[d], np.nan_to_num(kd[d]), mj_model.dof_invweight0[mj_model.jnt_dofadr[jid]],
                                    mj_model.jnt_solimp[jid][1])  # fmt: skip
        mj_model.jnt_solref[jid] = solref
        handle.solref_limit = solref  # (the spec saves what is simulated)
