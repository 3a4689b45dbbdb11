"""The warp backend's exchange on the device: a Model's State/Control arrays <-> mujoco_warp ``Data``, as Warp kernels
(no host round trip, and capturable in a CUDA graph).

The conventions are :mod:`~newton_usd.solvers.mujoco.convert`'s (see its docstring), from the same
:class:`~newton_usd.solvers.mujoco.convert.CoordinateMap` index tables, uploaded once: scalar joints (revolute,
prismatic, each D6 axis) copied with their DOF's ref; free joints with MuJoCo's (w, x, y, z) quaternion and
body-frame angular velocity; ball joints conjugated by the child joint frame rotation (relative to the initial
rotation where MuJoCo's body is placed at it); ``body_q`` from ``xpos`` and ``xquat``; ``body_qd`` from ``cvel`` (at
the subtree COM) moved to the body COM. Controls: drive actuators ``ke * (target_pos + ref) + kd * target_vel``,
MjcActuator controls, ``joint_f`` of scalar DOFs into ``qfrc_applied``; kinematic (mocap) bodies from ``body_q``.

Model arrays are flat, world after world; MuJoCo-Warp's are ``(nworld, ...)``. MuJoCo-Warp stores its quaternions in
MuJoCo's order in ``wp.quat`` slots: ``q[0]`` is w.
"""

from __future__ import annotations

import numpy as np
import warp as wp


@wp.func
def _wxyz(q: wp.quat):
    """A Warp quaternion in MuJoCo's order (MuJoCo-Warp's storage)."""
    return wp.quat(q[3], q[0], q[1], q[2])


@wp.func
def _xyzw(m: wp.quat):
    """A quaternion stored in MuJoCo's order, as a Warp quaternion."""
    return wp.quat(m[1], m[2], m[3], m[0])


@wp.kernel
def _changed(a: wp.array(dtype=float), b: wp.array(dtype=float), n: int, world: wp.array(dtype=wp.int32)):
    i = wp.tid()
    if a[i] != b[i]:
        world[i // n] = 1


@wp.kernel
def _any(world: wp.array(dtype=wp.int32), flag: wp.array(dtype=wp.int32)):
    w = wp.tid()
    if world[w] != 0:
        flag[0] = 1


@wp.kernel
def _push_scalars(
    mask: wp.array(dtype=wp.int32),
    joint_q: wp.array(dtype=float),
    joint_qd: wp.array(dtype=float),
    nq: int,
    nv: int,
    q_idx: wp.array(dtype=wp.int32),
    qpos_idx: wp.array(dtype=wp.int32),
    qd_idx: wp.array(dtype=wp.int32),
    qvel_idx: wp.array(dtype=wp.int32),
    ref: wp.array(dtype=float),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
):
    w, i = wp.tid()
    if mask[w] == 0:
        return
    qpos[w, qpos_idx[i]] = joint_q[w * nq + q_idx[i]] + ref[i]
    qvel[w, qvel_idx[i]] = joint_qd[w * nv + qd_idx[i]]


@wp.kernel
def _push_free(
    mask: wp.array(dtype=wp.int32),
    joint_q: wp.array(dtype=float),
    joint_qd: wp.array(dtype=float),
    nq: int,
    nv: int,
    q_idx: wp.array(dtype=wp.int32),
    qpos_idx: wp.array(dtype=wp.int32),
    qd_idx: wp.array(dtype=wp.int32),
    qvel_idx: wp.array(dtype=wp.int32),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
):
    w, i = wp.tid()
    if mask[w] == 0:
        return
    q0 = w * nq + q_idx[i]
    a = qpos_idx[i]
    d0 = w * nv + qd_idx[i]
    b = qvel_idx[i]
    rot = wp.quat(joint_q[q0 + 3], joint_q[q0 + 4], joint_q[q0 + 5], joint_q[q0 + 6])
    ang = wp.quat_rotate_inv(rot, wp.vec3(joint_qd[d0 + 3], joint_qd[d0 + 4], joint_qd[d0 + 5]))  # to the body
    for k in range(3):
        qpos[w, a + k] = joint_q[q0 + k]
        qvel[w, b + k] = joint_qd[d0 + k]
        qvel[w, b + 3 + k] = ang[k]
    qpos[w, a + 3] = rot[3]
    for k in range(3):
        qpos[w, a + 4 + k] = rot[k]


@wp.kernel
def _push_ball(
    mask: wp.array(dtype=wp.int32),
    joint_q: wp.array(dtype=float),
    joint_qd: wp.array(dtype=float),
    nq: int,
    nv: int,
    q_idx: wp.array(dtype=wp.int32),
    qpos_idx: wp.array(dtype=wp.int32),
    qd_idx: wp.array(dtype=wp.int32),
    qvel_idx: wp.array(dtype=wp.int32),
    qc: wp.array(dtype=wp.quat),
    r0_inv: wp.array(dtype=wp.quat),
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
):
    w, i = wp.tid()
    if mask[w] == 0:
        return
    q0 = w * nq + q_idx[i]
    a = qpos_idx[i]
    d0 = w * nv + qd_idx[i]
    b = qvel_idx[i]
    rel = r0_inv[i] * wp.quat(joint_q[q0], joint_q[q0 + 1], joint_q[q0 + 2], joint_q[q0 + 3])
    m = _wxyz(qc[i] * rel * wp.quat_inverse(qc[i]))
    v = wp.quat_rotate(qc[i], wp.vec3(joint_qd[d0], joint_qd[d0 + 1], joint_qd[d0 + 2]))
    for k in range(4):
        qpos[w, a + k] = m[k]
    for k in range(3):
        qvel[w, b + k] = v[k]


@wp.kernel
def _pull_scalars(
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    nq: int,
    nv: int,
    q_idx: wp.array(dtype=wp.int32),
    qpos_idx: wp.array(dtype=wp.int32),
    qd_idx: wp.array(dtype=wp.int32),
    qvel_idx: wp.array(dtype=wp.int32),
    ref: wp.array(dtype=float),
    joint_q: wp.array(dtype=float),
    joint_qd: wp.array(dtype=float),
):
    w, i = wp.tid()
    joint_q[w * nq + q_idx[i]] = qpos[w, qpos_idx[i]] - ref[i]
    joint_qd[w * nv + qd_idx[i]] = qvel[w, qvel_idx[i]]


@wp.kernel
def _pull_free(
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    nq: int,
    nv: int,
    q_idx: wp.array(dtype=wp.int32),
    qpos_idx: wp.array(dtype=wp.int32),
    qd_idx: wp.array(dtype=wp.int32),
    qvel_idx: wp.array(dtype=wp.int32),
    joint_q: wp.array(dtype=float),
    joint_qd: wp.array(dtype=float),
):
    w, i = wp.tid()
    q0 = w * nq + q_idx[i]
    a = qpos_idx[i]
    d0 = w * nv + qd_idx[i]
    b = qvel_idx[i]
    rot = wp.quat(qpos[w, a + 4], qpos[w, a + 5], qpos[w, a + 6], qpos[w, a + 3])
    ang = wp.quat_rotate(rot, wp.vec3(qvel[w, b + 3], qvel[w, b + 4], qvel[w, b + 5]))  # to the world
    for k in range(3):
        joint_q[q0 + k] = qpos[w, a + k]
        joint_qd[d0 + k] = qvel[w, b + k]
        joint_qd[d0 + 3 + k] = ang[k]
    for k in range(4):
        joint_q[q0 + 3 + k] = rot[k]


@wp.kernel
def _pull_ball(
    qpos: wp.array2d(dtype=float),
    qvel: wp.array2d(dtype=float),
    nq: int,
    nv: int,
    q_idx: wp.array(dtype=wp.int32),
    qpos_idx: wp.array(dtype=wp.int32),
    qd_idx: wp.array(dtype=wp.int32),
    qvel_idx: wp.array(dtype=wp.int32),
    qc: wp.array(dtype=wp.quat),
    r0_inv: wp.array(dtype=wp.quat),
    joint_q: wp.array(dtype=float),
    joint_qd: wp.array(dtype=float),
):
    w, i = wp.tid()
    q0 = w * nq + q_idx[i]
    a = qpos_idx[i]
    d0 = w * nv + qd_idx[i]
    b = qvel_idx[i]
    m = wp.quat(qpos[w, a + 1], qpos[w, a + 2], qpos[w, a + 3], qpos[w, a])
    c_inv = wp.quat_inverse(qc[i])
    rot = wp.quat_inverse(r0_inv[i]) * c_inv * m * qc[i]
    v = wp.quat_rotate(c_inv, wp.vec3(qvel[w, b], qvel[w, b + 1], qvel[w, b + 2]))
    for k in range(4):
        joint_q[q0 + k] = rot[k]
    for k in range(3):
        joint_qd[d0 + k] = v[k]


@wp.kernel
def _pull_bodies(
    xpos: wp.array2d(dtype=wp.vec3),
    xquat: wp.array2d(dtype=wp.quat),
    xipos: wp.array2d(dtype=wp.vec3),
    cvel: wp.array2d(dtype=wp.spatial_vector),
    subtree_com: wp.array2d(dtype=wp.vec3),
    nb: int,
    body_mj: wp.array(dtype=wp.int32),
    body_root: wp.array(dtype=wp.int32),
    body_q: wp.array(dtype=wp.transform),
    body_qd: wp.array(dtype=wp.spatial_vector),
):
    w, i = wp.tid()
    b = body_mj[i]
    body_q[w * nb + i] = wp.transform(xpos[w, b], _xyzw(xquat[w, b]))
    c = cvel[w, b]
    ang = wp.vec3(c[0], c[1], c[2])
    lin = wp.vec3(c[3], c[4], c[5]) + wp.cross(ang, xipos[w, b] - subtree_com[w, body_root[i]])
    body_qd[w * nb + i] = wp.spatial_vector(lin[0], lin[1], lin[2], ang[0], ang[1], ang[2])


@wp.kernel
def _drive_ctrl(
    target_pos: wp.array(dtype=float),
    target_vel: wp.array(dtype=float),
    nv: int,
    dofs: wp.array(dtype=wp.int32),
    ref: wp.array(dtype=float),
    ke: wp.array2d(dtype=float),
    kd: wp.array2d(dtype=float),
    ctrl: wp.array2d(dtype=float),
):
    w, a = wp.tid()
    d = w * nv + dofs[a]
    ctrl[w, a] = ke[w, a] * (target_pos[d] + ref[a]) + kd[w, a] * target_vel[d]


@wp.kernel
def _scatter_rows(
    values: wp.array(dtype=float),
    n: int,
    src: wp.array(dtype=wp.int32),
    dst: wp.array(dtype=wp.int32),
    out: wp.array2d(dtype=float),
):
    """``out[w, dst[i]] = values[w * n + src[i]]``: MjcActuator controls, joint forces."""
    w, i = wp.tid()
    out[w, dst[i]] = values[w * n + src[i]]


@wp.kernel
def _push_mocap(
    body_q: wp.array(dtype=wp.transform),
    nb: int,
    bodies: wp.array(dtype=wp.int32),
    ids: wp.array(dtype=wp.int32),
    mocap_pos: wp.array2d(dtype=wp.vec3),
    mocap_quat: wp.array2d(dtype=wp.quat),
    moved: wp.array(dtype=wp.int32),
):
    w, i = wp.tid()
    x = body_q[w * nb + bodies[i]]
    p = wp.transform_get_translation(x)
    q = _wxyz(wp.transform_get_rotation(x))
    k = ids[i]
    old_p = mocap_pos[w, k]
    old_q = mocap_quat[w, k]
    if p[0] != old_p[0] or p[1] != old_p[1] or p[2] != old_p[2]:
        moved[0] = 1
    if q[0] != old_q[0] or q[1] != old_q[1] or q[2] != old_q[2] or q[3] != old_q[3]:
        moved[0] = 1
    mocap_pos[w, k] = p
    mocap_quat[w, k] = q


def _indices(index) -> np.ndarray:
    """An index table of :class:`~newton_usd.solvers.mujoco.convert.CoordinateMap` (a slice where consecutive) as an
    int array."""
    if isinstance(index, slice):
        return np.arange(index.start, index.stop)
    return np.asarray(index)


class DeviceExchange:
    """The index tables of a :class:`~newton_usd.solvers.mujoco.convert.CoordinateMap` on ``device`` and the kernels
    that use them.

    ``moved`` (one int32) is set to 1 by :meth:`push_state` (``compare=True``) and :meth:`push_mocap` when they
    changed MuJoCo's state; the caller zeroes it (:meth:`begin`) and may branch on it on the device
    (``wp.capture_if``): the position and velocity stages then need computing again."""

    def __init__(self, cmap, mocap_body, mocap_id, mjc_ctrl, num_worlds: int, device):
        self.device = device
        self.W = num_worlds
        self.nq, self.nv = cmap.model_nq, cmap.model_nv
        self.nb = len(cmap.body_mj)

        def ints(x):
            return wp.array(np.asarray(x, dtype=np.int32).reshape(-1), dtype=wp.int32, device=device)

        def floats(x, dtype=float):
            return wp.array(np.asarray(x, dtype=np.float32), dtype=dtype, device=device)

        sq, sqp, sqd, sqv = (_indices(x) for x in cmap.scalar)
        self.scalar = (ints(sq), ints(sqp), ints(sqd), ints(sqv))
        self.scalar_ref = floats(cmap.scalar_ref.reshape(-1))
        self.n_scalar = len(sq)
        self.free = tuple(ints(x) for x in (cmap.free_q, cmap.free_qpos, cmap.free_qd, cmap.free_qvel))
        self.n_free = len(cmap.free_q)
        self.ball = tuple(ints(x) for x in (cmap.ball_q, cmap.ball_qpos, cmap.ball_qd, cmap.ball_qvel))
        self.ball_qc = floats(cmap.ball_qc.reshape(-1, 4), wp.quat)
        self.ball_r0_inv = floats(cmap.ball_r0_inv.reshape(-1, 4), wp.quat)
        self.n_ball = len(cmap.ball_q)
        self.body_mj, self.body_root = ints(cmap.body_mj), ints(cmap.body_root)
        drives = cmap.actuator_dof
        self.drive_dof, self.drive_ref = ints(drives), floats(cmap.dof_ref[drives])
        self.n_drive = len(drives)
        self.ke = self.kd = None
        built = np.nonzero(np.asarray(mjc_ctrl) >= 0)[0]
        self.n_mjc, self.n_mjc_built = len(mjc_ctrl), len(built)
        self.mjc_src, self.mjc_dst = ints(built), ints(np.asarray(mjc_ctrl)[built])
        self.mocap_body, self.mocap_id = ints(mocap_body), ints(mocap_id)
        self.n_mocap = len(mocap_body)
        self.world_changed = wp.zeros(num_worlds, dtype=wp.int32, device=device)
        self.every_world = wp.ones(num_worlds, dtype=wp.int32, device=device)
        self.moved = wp.zeros(1, dtype=wp.int32, device=device)
        # Copies of the joint_q and joint_qd last pulled, to find the worlds whose coordinates were edited since.
        self.last_q = wp.zeros(num_worlds * self.nq, dtype=float, device=device)
        self.last_qd = wp.zeros(num_worlds * self.nv, dtype=float, device=device)

    def set_gains(self, ke: np.ndarray, kd: np.ndarray) -> None:
        """The drive gains, ``(num_worlds, DOFs per world)``, of the driven DOFs."""
        dofs = self.drive_dof.numpy()
        for name, gains in (("ke", ke), ("kd", kd)):
            values = np.ascontiguousarray(gains[:, dofs], dtype=np.float32).reshape(self.W, len(dofs))
            current = getattr(self, name)
            if current is None:
                setattr(self, name, wp.array(values, dtype=float, device=self.device))
            else:
                current.assign(values)  # (in place: a captured graph keeps reading it)

    def _launch(self, kernel, n, inputs):
        if n:
            wp.launch(kernel, dim=(self.W, n), inputs=inputs, device=self.device)

    def begin(self) -> None:
        self.moved.zero_()

    def push_state(self, joint_q, joint_qd, d, compare: bool) -> None:
        """Model coordinates into ``d.qpos``/``d.qvel``: every world, or (``compare``) only the worlds whose
        ``joint_q``/``joint_qd`` differ from what :meth:`pull` wrote last (then ``moved`` is set)."""
        mask = self.every_world
        if compare:
            mask = self.world_changed
            mask.zero_()
            for new, last, n in ((joint_q, self.last_q, self.nq), (joint_qd, self.last_qd, self.nv)):
                if n:
                    wp.launch(_changed, dim=new.shape[0], inputs=[new, last, n, mask], device=self.device)
            wp.launch(_any, dim=self.W, inputs=[mask, self.moved], device=self.device)
        common = [mask, joint_q, joint_qd, self.nq, self.nv]
        self._launch(_push_scalars, self.n_scalar, common + [*self.scalar, self.scalar_ref, d.qpos, d.qvel])
        self._launch(_push_free, self.n_free, common + [*self.free, d.qpos, d.qvel])
        self._launch(_push_ball, self.n_ball, common + [*self.ball, self.ball_qc, self.ball_r0_inv, d.qpos, d.qvel])

    def push_mocap(self, body_q, d) -> None:
        """The kinematic bodies' poses in ``body_q`` into ``d.mocap_pos``/``d.mocap_quat`` (``moved`` set where
        one changed)."""
        inputs = [body_q, self.nb, self.mocap_body, self.mocap_id, d.mocap_pos, d.mocap_quat, self.moved]
        self._launch(_push_mocap, self.n_mocap, inputs)

    def push_controls(self, control, d) -> None:
        """Drive controls, MjcActuator controls and joint forces into ``d.ctrl`` and ``d.qfrc_applied``."""
        d.ctrl.zero_()
        inputs = [control.joint_target_pos, control.joint_target_vel, self.nv, self.drive_dof, self.drive_ref]
        self._launch(_drive_ctrl, self.n_drive, inputs + [self.ke, self.kd, d.ctrl])
        mjc = getattr(getattr(control, "mujoco", None), "ctrl", None)
        if mjc is not None:
            self._launch(_scatter_rows, self.n_mjc_built, [mjc, self.n_mjc, self.mjc_src, self.mjc_dst, d.ctrl])
        d.qfrc_applied.zero_()
        sq, sqp, sqd, sqv = self.scalar
        self._launch(_scatter_rows, self.n_scalar, [control.joint_f, self.nv, sqd, sqv, d.qfrc_applied])

    def pull(self, d, state_out) -> None:
        """``d``'s state into ``state_out``'s ``joint_q``, ``joint_qd``, ``body_q`` and ``body_qd``."""
        jq, jqd = state_out.joint_q, state_out.joint_qd
        common = [d.qpos, d.qvel, self.nq, self.nv]
        self._launch(_pull_scalars, self.n_scalar, common + [*self.scalar, self.scalar_ref, jq, jqd])
        self._launch(_pull_free, self.n_free, common + [*self.free, jq, jqd])
        self._launch(_pull_ball, self.n_ball, common + [*self.ball, self.ball_qc, self.ball_r0_inv, jq, jqd])
        body = [d.xpos, d.xquat, d.xipos, d.cvel, d.subtree_com, self.nb, self.body_mj, self.body_root]
        self._launch(_pull_bodies, self.nb, body + [state_out.body_q, state_out.body_qd])
        wp.copy(self.last_q, jq)
        wp.copy(self.last_qd, jqd)
