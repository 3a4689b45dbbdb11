"""MjcKeyframe prims into builder keyframes.

An MjcKeyframe holds MuJoCo's flat state vectors (``mjc:qpos``, ``mjc:qvel``, ``mjc:act``, ``mjc:ctrl``,
``mjc:mpos``, ``mjc:mquat``) in the layout of the MuJoCo model the stage describes, the layout MJCF
gives it: bodies in depth-first (prim) order, each body's joints in prim order; a floating body's
free joint takes 7 positions (position, quaternion w x y z) and 6 velocities (linear in world,
angular in the body frame), a spherical joint 4 and 3, other joints one per degree of freedom,
positions including the joint's ``mjc:ref``. Controls and activations follow the MjcActuator prims
in prim order, mocap poses the kinematic roots (bodies moved by the stage) in prim order. The keyframe's time
is NewtonUsdKeyframeAPI's ``newton:usd:time`` (MjcKeyframe has none).
"""

from __future__ import annotations

import numpy as np

from ..core.quat import quat_conjugate, quat_multiply, quat_rotate, wxyz_to_xyzw
from ..core.types import JointType

_FIELDS = ("qpos", "qvel", "act", "ctrl", "mpos", "mquat")


def import_keyframes(builder, prims, result, frame, order) -> None:
    """Builder keyframes (and their MuJoCo extras in ``model.mujoco.keyframe``) from MjcKeyframe
    ``prims``; ``order`` maps prim paths to their traversal order. A keyframe whose vectors do not fit
    the layout is reported and skipped."""
    if not prims:
        return
    joints, mocap = _layout(builder, result, order)
    nq = sum(_sizes(builder, j)[0] for j in joints)
    nv = sum(_sizes(builder, j)[1] for j in joints)
    actuators = builder.mujoco.get("actuator", [])
    act_dims = [_act_dim(e["values"]) for e in actuators]
    extras = builder.mujoco.setdefault("keyframe", {})
    for prim in prims:
        path = str(prim.GetPath())
        v = {}
        for name in _FIELDS:
            attr = prim.GetAttribute(f"mjc:{name}")
            value = attr.Get() if attr and attr.HasAuthoredValue() else None
            v[name] = None if value is None or len(value) == 0 else np.asarray(value, dtype=np.float64)
            if value is not None:
                result.resolver.used.add((path, f"mjc:{name}"))
        expected = {"qpos": nq, "qvel": nv, "ctrl": len(actuators), "act": sum(act_dims),
                    "mpos": 3 * len(mocap), "mquat": 4 * len(mocap)}  # fmt: skip
        wrong = [f"mjc:{k} has {len(v[k])} values, the stage's MuJoCo layout {n}"
                 for k, n in expected.items() if v[k] is not None and len(v[k]) != n]  # fmt: skip
        if wrong:
            result.diagnostics.add(f"keyframe that does not fit the stage's joints: skipped ({wrong[0]})", path)
            continue
        joint_q, joint_qd = _joint_values(builder, joints, v["qpos"], v["qvel"], frame)
        time = prim.GetAttribute("newton:usd:time")  # NewtonUsdKeyframeAPI
        builder.add_keyframe(path, joint_q, joint_qd, time=float(time.Get() or 0.0) if time else 0.0)
        if time and time.HasAuthoredValue():
            result.resolver.used.add((path, "newton:usd:time"))
        extra = {"ctrl": {}, "act": {}, "mocap": {}}
        if v["ctrl"] is not None:
            extra["ctrl"] = {e["path"]: float(c) for e, c in zip(actuators, v["ctrl"], strict=True)}
        if v["act"] is not None:
            start = np.concatenate([[0], np.cumsum(act_dims)]).astype(int)
            extra["act"] = {
                e["path"]: v["act"][start[i] : start[i + 1]] for i, e in enumerate(actuators) if act_dims[i]
            }
        for k, b in enumerate(mocap):
            pos = v["mpos"][3 * k : 3 * k + 3] if v["mpos"] is not None else builder.body_q[b][0]
            quat = wxyz_to_xyzw(v["mquat"][4 * k : 4 * k + 4]) if v["mquat"] is not None else builder.body_q[b][1]
            if v["mpos"] is not None or v["mquat"] is not None:
                pos, quat = frame.world_pose_to_sim(np.asarray(pos, dtype=np.float64), quat)
            extra["mocap"][builder.body_label[b]] = (np.asarray(pos), np.asarray(quat))
        extras[path] = extra


def _layout(builder, result, order):
    """The joints with coordinates in MuJoCo's order, and the mocap bodies in order."""
    bodies = sorted((b for p, b in result.body_index.items() if p in order), key=lambda b: order[builder.body_label[b]])
    by_child = {}
    for j in set(result.joint_index.values()):
        child, jt = builder.joint_child[j], builder.joint_type[j]
        mocap = jt == JointType.FREE and builder.body_kinematic[child] and builder.joint_parent[j] < 0
        if jt != JointType.FIXED and not mocap:  # (a kinematic root's free joint: MuJoCo's mocap body has none)
            by_child.setdefault(child, []).append(j)
    to_world = {builder.joint_child[j] for j in result.joint_index.values() if builder.joint_parent[j] < 0}
    joints, mocap = [], []
    for b in bodies:
        joints.extend(sorted(by_child.get(b, []), key=lambda j: order.get(builder.joint_label[j], -1)))
        if builder.body_kinematic[b] and b not in by_child and b in to_world:  # a kinematic root
            mocap.append(b)
    return joints, mocap


def _sizes(builder, j):
    """MuJoCo's (qpos, qvel) sizes of joint ``j``."""
    return len(builder.joint_q[j]), len(builder.joint_qd[j])


def _act_dim(values) -> int:
    dim = int(values.get("actDim", -1))
    return dim if dim >= 0 else int(values.get("dynType", "none") != "none")


def _joint_values(builder, joints, qpos, qvel, frame):
    """Per joint, model coordinates and velocities from MuJoCo's flat vectors (None: keep initial)."""
    s = frame.meters_per_unit
    dof_start = np.concatenate([[0], np.cumsum([len(qd) for qd in builder.joint_qd])]).astype(int)
    joint_q, joint_qd = {}, {}
    a = va = 0
    for j in joints:
        nq, nv = _sizes(builder, j)
        jt = builder.joint_type[j]
        dof0 = int(dof_start[j])
        q = qpos[a : a + nq] if qpos is not None else None
        qd = qvel[va : va + nv] if qvel is not None else None
        qc = builder.joint_X_c[j][1]
        if jt == JointType.FREE:
            if q is not None:
                pos, rot = frame.world_pose_to_sim(q[:3] * s, wxyz_to_xyzw(q[3:7]))
                joint_q[j] = np.concatenate([pos, rot])
            if qd is not None:
                rot = joint_q[j][3:] if j in joint_q else builder.body_q[builder.joint_child[j]][1]
                joint_qd[j] = np.concatenate([frame.world_vector_to_sim(qd[:3]), quat_rotate(rot, qd[3:6])])
        elif jt == JointType.BALL:  # MuJoCo's ball: in the child body frame, from the initial rotation
            if q is not None:
                rel = quat_multiply(quat_conjugate(qc), quat_multiply(wxyz_to_xyzw(q), qc))
                joint_q[j] = quat_multiply(np.asarray(builder.joint_q[j], dtype=np.float64), rel)
            if qd is not None:
                joint_qd[j] = quat_rotate(quat_conjugate(qc), qd)
        else:
            linear = [jt == JointType.PRISMATIC or (jt == JointType.D6 and k < builder.joint_dof_dim[j][0])
                      for k in range(nv)]  # fmt: skip
            unit = np.array([s if lin else 1.0 for lin in linear])
            if q is not None:
                refs = [builder.get_mujoco("dof", "dof_ref", dof0 + k, 0.0) for k in range(nq)]
                joint_q[j] = q * unit - np.array(refs)
            if qd is not None:
                joint_qd[j] = qd * unit
        a += nq
        va += nv
    return joint_q, joint_qd
