"""What MuJoCo derives from the masses and the armature (``mj_setConst``), for the kinematic trees an edit touched.

``mj_setConst`` recomputes every body's and DOF's inverse weights at ``qpos0`` with a dense Jacobian and a solve per
body: its cost grows with bodies times DOFs (0.4 s at 1,000 free boxes, ten frames' worth). A live edit of one
body's mass changes only its own kinematic tree's values (the mass matrix is block diagonal by tree), so
:func:`set_const_trees` computes MuJoCo's definitions for those trees only, with MuJoCo's own functions at
``qpos0`` (``mj_kinematics``, ``mj_comPos``, ``mj_makeM``, ``mj_factorM``, ``mj_jacBodyCom``, ``mj_solveM``,
``mj_transmission``): ``body_subtreemass``, ``dof_M0`` (the diagonal of the mass matrix, which ``mj_makeM`` copies
for simple bodies), ``body_invweight0``, ``dof_invweight0`` and ``actuator_acc0``, the values ``mj_setConst`` gives
(tests/test_live_edits.py compares them). A model with tendons or flexes (whose constants span trees) takes
``mj_setConst`` whole. :func:`frames_hold` says whether a body's
new inertial frame keeps the frame classes the compiler gave it and its geoms (``body_sameframe``,
``geom_sameframe``: the engine's shortcuts); where it does not, only a new compile is right.
"""

from __future__ import annotations

import mujoco
import numpy as np

_SAME_EPS = 1e-6  # MuJoCo's tolerance for frame comparisons (the compiler's kFrameEps)
_MINVAL = mujoco.mjMINVAL


def _null_vec(v) -> bool:
    return bool(np.all(np.abs(v) < _SAME_EPS))


def _null_quat(q) -> bool:
    return bool(np.all(np.abs(q - (1, 0, 0, 0)) < _SAME_EPS) or np.all(np.abs(q + (1, 0, 0, 0)) < _SAME_EPS))


def _same_quat(a, b) -> bool:
    return bool(np.all(np.abs(a - b) < _SAME_EPS) or np.all(np.abs(a + b) < _SAME_EPS))


def _body_frame_class(ipos, iquat) -> int:
    """mjtSameFrame of a body's inertial frame (1: the body frame, 2: its rotation, 0: neither)."""
    if _null_vec(ipos) and _null_quat(iquat):
        return int(mujoco.mjtSameFrame.mjSAMEFRAME_BODY)
    return int(mujoco.mjtSameFrame.mjSAMEFRAME_BODYROT) if _null_quat(iquat) else 0


def _geom_frame_class(pos, quat, ipos, iquat) -> int:
    frames = mujoco.mjtSameFrame
    if _null_vec(pos) and _null_quat(quat):
        return int(frames.mjSAMEFRAME_BODY)
    if _null_quat(quat):
        return int(frames.mjSAMEFRAME_BODYROT)
    if _null_vec(pos - ipos) and _same_quat(quat, iquat):
        return int(frames.mjSAMEFRAME_INERTIA)
    if _same_quat(quat, iquat):
        return int(frames.mjSAMEFRAME_INERTIAROT)
    return int(frames.mjSAMEFRAME_NONE)


def frames_hold(m: mujoco.MjModel, body: int, ipos, iquat) -> bool:
    """Whether body ``body`` of ``m`` with the inertial frame ``ipos``, ``iquat`` (wxyz) keeps the frame classes the
    compiler gave it and its geoms (so the engine's shortcuts stay right)."""
    ipos, iquat = np.asarray(ipos, dtype=np.float64), np.asarray(iquat, dtype=np.float64)
    if _body_frame_class(ipos, iquat) != int(m.body_sameframe[body]):
        return False
    for g in range(m.body_geomadr[body], m.body_geomadr[body] + m.body_geomnum[body]):
        if _geom_frame_class(m.geom_pos[g], m.geom_quat[g], ipos, iquat) != int(m.geom_sameframe[g]):
            return False
    return True


def set_const_trees(m: mujoco.MjModel, d: mujoco.MjData, bodies) -> None:
    """``mj_setConst``'s mass-dependent constants of ``m`` for the kinematic trees of the MuJoCo bodies ``bodies``
    (see the module); ``d``: scratch data of ``m`` (its state is overwritten). The whole ``mj_setConst`` where the
    model has tendons or flexes."""
    if m.ntendon or m.nflex or not m.nv:
        mujoco.mj_setConst(m, d)
        return
    trees = {int(m.body_treeid[b]) for b in bodies} - {-1}
    subtree = np.array(m.body_mass, dtype=np.float64)
    parent = m.body_parentid
    for i in range(m.nbody - 1, 0, -1):
        subtree[parent[i]] += subtree[i]
    m.body_subtreemass[:] = subtree
    d.qpos[:] = m.qpos0
    mujoco.mj_kinematics(m, d)
    mujoco.mj_comPos(m, d)
    simple = m.dof_simplenum.copy()
    m.dof_simplenum[:] = 0  # (the whole diagonal computed: it is what dof_M0 holds)
    try:
        mujoco.mj_makeM(m, d)
    finally:
        m.dof_simplenum[:] = simple
    diagonal = d.M[m.M_rowadr + m.M_rownnz - 1]
    in_trees = np.isin(m.dof_treeid, list(trees))
    m.dof_M0[in_trees] = diagonal[in_trees]
    mujoco.mj_factorM(m, d)
    nv = m.nv
    for b in np.nonzero(np.isin(m.body_treeid, list(trees)))[0]:
        if m.body_weldid[b] == 0:
            m.body_invweight0[b] = 0.0
        elif m.body_simple[b] == 2:
            m.body_invweight0[b] = (1.0 / max(_MINVAL, m.body_mass[b]), 0.0)
        else:
            jac = np.zeros((6, nv))
            mujoco.mj_jacBodyCom(m, d, jac[:3], jac[3:], int(b))
            a = jac @ _solve(m, d, jac).T
            m.body_invweight0[b] = (np.trace(a[:3, :3]) / 3.0, np.trace(a[3:, 3:]) / 3.0)
    sizes = {int(mujoco.mjtJoint.mjJNT_FREE): 6, int(mujoco.mjtJoint.mjJNT_BALL): 3}
    for j in np.nonzero(np.isin(m.body_treeid[m.jnt_bodyid], list(trees)))[0]:
        b = m.jnt_bodyid[j]
        adr = m.jnt_dofadr[j]
        if m.body_simple[b] == 2:
            m.dof_invweight0[adr] = 1.0 / max(_MINVAL, m.body_mass[b])
            continue
        n = sizes.get(int(m.jnt_type[j]), 1)
        unit = np.zeros((n, nv))
        unit[np.arange(n), adr + np.arange(n)] = 1.0
        a = unit @ _solve(m, d, unit).T
        if n == 6:
            m.dof_invweight0[adr : adr + 3] = np.trace(a[:3, :3]) / 3.0
            m.dof_invweight0[adr + 3 : adr + 6] = np.trace(a[3:, 3:]) / 3.0
        else:
            m.dof_invweight0[adr : adr + n] = np.trace(a) / n
    if m.nu:
        mujoco.mj_transmission(m, d)
        on_joint = np.isin(m.actuator_trntype, (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)))
        joint_dof = m.jnt_dofadr[np.where(on_joint, m.actuator_trnid[:, 0], 0)]
        for i in np.nonzero(~on_joint | in_trees[joint_dof])[0]:  # (a joint's actuator: its tree's, else any)
            row = np.zeros(nv)
            lo = d.moment_rowadr[i]
            cols = d.moment_colind[lo : lo + d.moment_rownnz[i]]
            if not in_trees[cols].any():
                continue
            row[cols] = d.actuator_moment[lo : lo + d.moment_rownnz[i]]
            m.actuator_acc0[i] = np.linalg.norm(_solve(m, d, row[None])[0])


def _solve(m, d, rows: np.ndarray) -> np.ndarray:
    """``inverse(M) @ rows[k]`` for each row (the factor ``mj_factorM`` left in ``d``)."""
    out = np.zeros_like(rows)
    mujoco.mj_solveM(m, d, out, np.ascontiguousarray(rows))
    return out
