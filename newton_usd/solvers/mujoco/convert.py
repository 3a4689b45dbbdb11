"""Model coordinates <-> MuJoCo qpos/qvel/ctrl/qfrc, vectorized with numpy.

Arrays may carry leading world dimensions (``(..., n)``). Conventions converted here:

- free joints: ``joint_q`` = (position, Warp quat), ``joint_qd`` = (origin linear velocity, angular
  velocity) in world; MuJoCo's free qvel has its angular part in the body frame, and its quaternion
  is (w, x, y, z);
- ball joints: ``joint_q`` is the rotation between the joint frames, ``joint_qd`` the angular
  velocity in the child joint frame; MuJoCo's ball is relative to the child body frame, so both are
  conjugated by the child joint frame's rotation ``q_c``;
- body velocities: MuJoCo's ``cvel`` (angular, linear at the subtree COM) to ``body_qd`` (linear
  velocity of the body COM, angular), world frame.
"""

from __future__ import annotations

import numpy as np

from ...core.quat import (
    cross,
    quat_conjugate,
    quat_multiply,
    quat_rotate,
    quat_to_matrix,
    wxyz_to_xyzw,
    xyzw_to_wxyz,
)
from ...core.types import JointType


def dof_refs(model) -> np.ndarray:
    """Per DOF: MuJoCo's qpos minus the model coordinate (``model.mujoco.dof_ref``; 0 where unset)."""
    refs = getattr(model.mujoco, "dof_ref", None)
    if refs is None:
        return np.zeros(model.joint_dof_count)
    return np.nan_to_num(np.asarray(refs, dtype=np.float64), nan=0.0)


def _as_slice(index: np.ndarray):
    """``index`` as a slice when it is a run of consecutive integers (numpy then copies without
    gathering), else unchanged."""
    if len(index) and np.array_equal(index, np.arange(index[0], index[0] + len(index))):
        return slice(int(index[0]), int(index[0]) + len(index))
    return index


def _gather(values, index):
    """``values[..., index]`` for a slice or an index array (``np.take``: cheaper than fancy indexing)."""
    return values[..., index] if isinstance(index, slice) else np.take(values, index, axis=-1)


class CoordinateMap:
    """Index tables between one world of a Model and a compiled ``mujoco.MjModel``."""

    def __init__(self, model, mj_model, spec_map):
        jt = model.joint_type.numpy()
        q_start = model.joint_q_start.numpy()
        qd_start = model.joint_qd_start.numpy()
        x_c = model.joint_X_c.numpy().astype(np.float64)
        joint_q0 = model.joint_q.numpy().astype(np.float64)
        self.nq, self.nv = mj_model.nq, mj_model.nv
        self.model_nq, self.model_nv = int(q_start[-1]), int(qd_start[-1])
        scalar_q, scalar_qpos, scalar_qd, scalar_qvel = [], [], [], []
        ball, free = [], []
        for j, t in enumerate(jt):
            mj_j = spec_map.joint_mj[j]
            if mj_j < 0:
                continue
            adr, dadr = mj_model.jnt_qposadr[mj_j], mj_model.jnt_dofadr[mj_j]
            if t in (JointType.REVOLUTE, JointType.PRISMATIC, JointType.D6):
                # One scalar MuJoCo joint per DOF; coordinate k of the joint is DOF k.
                for k, dof in enumerate(range(qd_start[j], qd_start[j + 1])):
                    mj_dof_joint = spec_map.dof_mj[dof]
                    scalar_q.append(q_start[j] + k)
                    scalar_qpos.append(mj_model.jnt_qposadr[mj_dof_joint])
                    scalar_qd.append(dof)
                    scalar_qvel.append(mj_model.jnt_dofadr[mj_dof_joint])
            elif t == JointType.BALL:
                coned = model.joint_cone(j) is not None  # placed at zero rotation (see spec)
                r0 = np.array([0.0, 0.0, 0.0, 1.0]) if coned else joint_q0[q_start[j] : q_start[j] + 4]
                ball.append((q_start[j], adr, qd_start[j], dadr, x_c[j, 3:], r0))
            elif t == JointType.FREE:
                free.append((q_start[j], adr, qd_start[j], dadr, mj_model.jnt_bodyid[mj_j]))
        scalar = [np.asarray(x, dtype=np.int64) for x in (scalar_q, scalar_qpos, scalar_qd, scalar_qvel)]
        self.scalar = [_as_slice(x) for x in scalar]  # (slices where consecutive: cheaper to copy)
        # MuJoCo qpos = model coordinate + the DOF's ref (mjc:ref, MJCF joint ref): see spec
        self.dof_ref = dof_refs(model)
        self.scalar_ref = self.dof_ref[scalar[2]]
        self.has_ref = bool(self.scalar_ref.any())
        self.ball_q = np.array([b[0] for b in ball], dtype=np.int64)
        self.ball_qpos = np.array([b[1] for b in ball], dtype=np.int64)
        self.ball_qd = np.array([b[2] for b in ball], dtype=np.int64)
        self.ball_qvel = np.array([b[3] for b in ball], dtype=np.int64)
        self.ball_qc = np.array([b[4] for b in ball], dtype=np.float64).reshape(-1, 4)
        # MuJoCo's ball bodies are placed at the initial rotation r0, so its qpos is relative to r0.
        self.ball_r0_inv = quat_conjugate(np.array([b[5] for b in ball], dtype=np.float64).reshape(-1, 4))
        self.free_q = np.array([f[0] for f in free], dtype=np.int64)
        self.free_qpos = np.array([f[1] for f in free], dtype=np.int64)
        self.free_qd = np.array([f[2] for f in free], dtype=np.int64)
        self.free_qvel = np.array([f[3] for f in free], dtype=np.int64)
        seg = self._seg
        self.free_seg = (
            seg(self.free_q, 7),
            seg(self.free_qpos, 3),
            seg(self.free_qpos + 3, 4),
            seg(self.free_qd, 6),
            seg(self.free_qvel, 3),
            seg(self.free_qvel + 3, 3),
            seg(self.free_q, 3),
            seg(self.free_q + 3, 4),
            seg(self.free_qd, 3),
            seg(self.free_qd + 3, 3),
        )
        self.ball_seg = (seg(self.ball_q, 4), seg(self.ball_qpos, 4), seg(self.ball_qd, 3), seg(self.ball_qvel, 3))
        self.free_body = np.array([f[4] for f in free], dtype=np.int64)  # MuJoCo body of each free joint
        # MuJoCo -> model coordinates that are copies (scalars, minus their ref; free positions, free
        # quaternions reordered; free linear velocities) as one gather each: (source, destination or None
        # where it is every coordinate in order).
        quat_wxyz_to_xyzw = np.array([1, 2, 3, 0])
        free_src = np.concatenate([np.arange(3), 3 + quat_wxyz_to_xyzw])  # each free joint's 7, in joint_q order
        q_src = [scalar[1], self.free_qpos[:, None] + free_src]
        q_dst = [scalar[0], self.free_q[:, None] + np.arange(7)]

        def flat(parts):
            return _as_slice(np.concatenate([np.asarray(x, dtype=np.int64).reshape(-1) for x in parts]))

        self.q_src, self.q_dst = flat(q_src), flat(q_dst)
        self.q_ref = np.concatenate([self.scalar_ref, np.zeros(7 * len(free))])
        qd_src = [scalar[3], self.free_qvel[:, None] + np.arange(3)]
        qd_dst = [scalar[2], self.free_qd[:, None] + np.arange(3)]
        self.qd_src, self.qd_dst = flat(qd_src), flat(qd_dst)
        # A ball's joint_q is conj(r0_inv) * conj(q_c) * m * q_c for MuJoCo's qpos m (w, x, y, z): linear in
        # m, so one 4x4 matrix per ball joint (the order change included); joint_qd is conj(q_c) rotating qvel.
        basis = np.eye(4)[[3, 0, 1, 2]]  # MuJoCo's unit quaternions e_w, e_x, e_y, e_z in Warp order
        left = quat_multiply(quat_conjugate(self.ball_r0_inv), quat_conjugate(self.ball_qc))
        self.ball_from_mj = np.stack(
            [quat_multiply(quat_multiply(left, np.broadcast_to(e, left.shape)), self.ball_qc) for e in basis], axis=-1
        ).reshape(-1, 4, 4)
        self.ball_qd_from_mj = quat_to_matrix(quat_conjugate(self.ball_qc)).reshape(-1, 3, 3)
        self.body_mj = np.asarray(spec_map.body_mj, dtype=np.int64)
        self.body_index = _as_slice(self.body_mj)  # a slice where the bodies are in MuJoCo's order
        self.body_root = mj_model.body_rootid[self.body_mj] if len(self.body_mj) else np.zeros(0, np.int64)
        self.actuator_dof = np.asarray(spec_map.actuator_dof, dtype=np.int64)
        self.dof_qvel = np.full(self.model_nv, -1, dtype=np.int64)  # scalar DOFs only, for joint_f
        self.dof_qvel[scalar[2]] = scalar[3]

    @staticmethod
    def _seg(idx, n):
        return (idx[:, None] + np.arange(n)[None, :]) if len(idx) else np.zeros((0, n), np.int64)

    def to_mujoco(self, joint_q, joint_qd, qpos_out, qvel_out):
        """Write model coordinates into MuJoCo ``qpos``/``qvel`` arrays (in place)."""
        sq, sqp, sqd, sqv = self.scalar
        qpos_out[..., sqp] = joint_q[..., sq] + self.scalar_ref
        qvel_out[..., sqv] = joint_qd[..., sqd]
        if len(self.free_q):
            q7, pos3, quat4, qd6, lin3, ang3 = self.free_seg[:6]
            fq = joint_q[..., q7]
            qpos_out[..., pos3] = fq[..., :3]
            qpos_out[..., quat4] = xyzw_to_wxyz(fq[..., 3:])
            fqd = joint_qd[..., qd6]
            qvel_out[..., lin3] = fqd[..., :3]
            qvel_out[..., ang3] = quat_rotate(quat_conjugate(fq[..., 3:]), fqd[..., 3:])
        if len(self.ball_q):
            q4, qpos4, qd3, qvel3 = self.ball_seg
            rel = quat_multiply(self.ball_r0_inv, joint_q[..., q4])
            m = quat_multiply(quat_multiply(self.ball_qc, rel), quat_conjugate(self.ball_qc))
            qpos_out[..., qpos4] = xyzw_to_wxyz(m)
            qvel_out[..., qvel3] = quat_rotate(self.ball_qc, joint_qd[..., qd3])

    def from_mujoco(self, qpos, qvel, joint_q_out, joint_qd_out, xmat=None):
        """Write MuJoCo ``qpos``/``qvel`` into model coordinates (in place); either output may be None (not
        written). ``xmat``: MuJoCo's body rotation matrices (..., nbody, 3, 3) at this state, when at hand
        (cheaper than rotating by the free joints' quaternions)."""
        if joint_q_out is not None:
            copied = _gather(qpos, self.q_src)
            joint_q_out[..., self.q_dst] = copied - self.q_ref if self.has_ref else copied
            if len(self.ball_q):
                q4, qpos4 = self.ball_seg[:2]
                joint_q_out[..., q4] = np.matmul(self.ball_from_mj, qpos[..., qpos4, None])[..., 0]
        if joint_qd_out is not None:
            joint_qd_out[..., self.qd_dst] = _gather(qvel, self.qd_src)
            if len(self.free_q):
                ang3, qd_ang3 = self.free_seg[5], self.free_seg[9]
                if xmat is None:
                    q = wxyz_to_xyzw(qpos[..., self.free_seg[2]])
                    joint_qd_out[..., qd_ang3] = quat_rotate(q, qvel[..., ang3])
                else:  # the body's rotation is the free joint's
                    rot = xmat[..., self.free_body, :, :]
                    joint_qd_out[..., qd_ang3] = np.matmul(rot, qvel[..., ang3, None])[..., 0]
            if len(self.ball_q):
                qd3, qvel3 = self.ball_seg[2:]
                joint_qd_out[..., qd3] = np.matmul(self.ball_qd_from_mj, qvel[..., qvel3, None])[..., 0]

    def body_state(self, xpos, xquat, xipos, cvel, subtree_com):
        """``body_q`` (..., n, 7) and ``body_qd`` (..., n, 6) from MuJoCo body arrays (wxyz quats)."""
        b = self.body_mj
        body_q = np.concatenate([xpos[..., b, :], wxyz_to_xyzw(xquat[..., b, :])], axis=-1)
        ang = cvel[..., b, 0:3]
        lin = cvel[..., b, 3:6] + cross(ang, xipos[..., b, :] - subtree_com[..., self.body_root, :])
        return body_q, np.concatenate([lin, ang], axis=-1)

    def body_state_into(self, xpos, xquat, xipos, cvel, subtree_com, body_q_out, body_qd_out):
        """:meth:`body_state`, written into ``body_q_out`` (..., n, 7) and ``body_qd_out`` (..., n, 6); either
        may be None (not written)."""
        b = self.body_index
        if body_q_out is not None:
            body_q_out[..., 0:3] = xpos[..., b, :]
            body_q_out[..., 3:6] = xquat[..., b, 1:4]
            body_q_out[..., 6] = xquat[..., b, 0]
        if body_qd_out is not None:
            ang = cvel[..., b, 0:3]
            body_qd_out[..., 3:6] = ang
            offset = xipos[..., b, :] - subtree_com[..., self.body_root, :]
            body_qd_out[..., 0:3] = cvel[..., b, 3:6] + cross(ang, offset)

    def ctrl(self, ke, kd, target_pos, target_vel):
        """Actuator controls ``ke * target_pos + kd * target_vel`` for the driven DOFs (positions as MuJoCo's
        qpos, which is offset by the DOF's ref)."""
        d = self.actuator_dof
        return ke[..., d] * (target_pos[..., d] + self.dof_ref[d]) + kd[..., d] * target_vel[..., d]

    def qfrc(self, joint_f, qfrc_out):
        """Generalized forces of scalar DOFs into MuJoCo ``qfrc_applied`` (in place)."""
        sq, sqp, sqd, sqv = self.scalar
        qfrc_out[..., sqv] = joint_f[..., sqd]
