"""The longest step at which Newton's Featherstone solver integrates a model's joint springs and penalty contacts
stably.

Featherstone integrates joint-space forces explicitly (symplectic Euler on the generalized coordinates): a drive
(``drive:*:physics:stiffness`` / ``damping``), a joint's passive spring and damping and a limit's penalty spring
(Newton's ``limit_ke`` / ``limit_kd``) pull a DOF back with a stiffness K and a damping C per DOF, against the
articulation's joint-space inertia H (the composite rigid-body mass matrix, armature included, at the start).
Linearized there, the fastest mode has w^2 the largest eigenvalue of H^-1/2 K H^-1/2 and c that of C likewise;
symplectic Euler keeps x'' = -w^2 x - c x' stable while w^2 dt^2 + 2 c dt < 4, so
dt < (sqrt(c^2 + 4 w^2) - c) / w^2, of which :data:`MARGIN` is given. A stiff drive on a light link (a hand, a
foot) sets it: Newton's ``humanoid.usda`` authors angular drive damping 5 N*m*s/deg (286 per rad) on joints whose
joint-space inertia is 1e-2 kg*m^2.

Penalty contacts are springs too (Newton's ``shape_material_ke`` and ``kd`` along the normal, averaged over the two
shapes; the viscous friction ``kf`` across it is capped by Coulomb's mu times the normal force, so it cannot run
away and is left out), on a point of a body: their mode is the spring against the
articulation's inertia seen at that point, 1/lambda, where lambda is the largest eigenvalue of the point's
mobility P J H^-1 J^T P^T (J the body's rows of the articulation's Jacobian, P the point's lever). A body whose own
inertia is far below its mass times its size squared (a 2 kg rod of 1e-4 kg*m^2, as PhysX test stages author)
spins fast under a touch at its end. Each pair of shapes that may collide (Newton's ``shape_contact_pairs``) is
taken at its worst points, the corners of each shape's bounding box (the mobility is convex in the point), one
contact at a time (a resting face has several: it is covered by :data:`MARGIN`).

The bound leaves out the poses the run reaches: measured against runs (see :data:`MARGIN`), the true limit was
0.81-0.88 of it on Newton's ``ant.usda`` and 0.44-0.65 on its ``humanoid.usda`` (which starts with its feet in the
ground)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import newton
import numpy as np

from ...core.quat import quat_rotate

MARGIN = 0.4
"""The share of the stability bound :func:`featherstone_stable_dt` gives. Measured under featherstone (Warp's CPU):
Newton's ``ant.usda`` (bound 1.28e-3 s) held 2.5 s at 1.04e-3 s and blew up at 1.13e-3 s (frame 20) and 1.39e-3 s
(frame 1), the same after the joints were put in their bodies' order (issue 33: at 1.13e-3 s flung at frame 37); its
``humanoid.usda`` (bound 6.87e-5 s) held 84 ms at 3e-5 s and blew up within 2 ms at 4.5e-5 and 6e-5 s. A 50 g box
on the ground (contacts only: 7.3e-5 s given) rested at 1.7e-4 s and bounced off at 4.2e-4 s."""

_OPEN = 0.5 * float(newton.MAXVAL)
"""Newton's limits at or beyond this are open (no limit spring)."""


@dataclass(frozen=True)
class StableStep:
    """:func:`featherstone_stable_dt`'s estimate: ``dt`` (s; inf where nothing pulls), and what sets it: a joint
    (``joint`` >= 0: its drive, passive spring or limit spring) or a body's penalty contacts (``body`` >= 0)."""

    dt: float = math.inf
    joint: int = -1
    body: int = -1


def featherstone_stable_dt(newton_model, state) -> StableStep:
    """The longest step (s) at which Featherstone keeps ``newton_model``'s joint springs and dampers and its penalty
    contacts stable from ``state`` (a ``newton.State``: its body poses give the mass matrix and the Jacobian), with
    what sets it: the joint of the DOF that moves most in the fastest mode, or the body whose contact does."""
    nm = newton_model
    if nm.articulation_count == 0 or nm.joint_dof_count == 0:
        return StableStep()
    mass_matrix = newton.eval_mass_matrix(nm, state).numpy().astype(np.float64)
    joints = _joint_springs(nm, mass_matrix)
    contacts = _contacts(nm, state, mass_matrix)
    return contacts if contacts.dt < joints.dt else joints


def _world_zero(nm):
    """The articulations that say the model (the worlds are copies of world 0): their indices."""
    return [a for a in range(nm.articulation_count) if nm.articulation_world.numpy()[a] <= 0]


def _joint_springs(nm, mass_matrix) -> StableStep:
    ke = (nm.joint_target_ke.numpy() + nm.joint_stiffness.numpy()).astype(np.float64)
    kd = (nm.joint_target_kd.numpy() + nm.joint_damping.numpy()).astype(np.float64)
    types = nm.joint_type.numpy()
    qd_start = nm.joint_qd_start.numpy()
    dof_joint = np.repeat(np.arange(nm.joint_count), np.diff(qd_start))
    ball = types[dof_joint] == int(newton.JointType.BALL)  # (Featherstone drives no ball joint)
    ke[ball] = kd[ball] = 0.0
    limited = (np.abs(nm.joint_limit_lower.numpy()) < _OPEN) | (np.abs(nm.joint_limit_upper.numpy()) < _OPEN)
    ke += np.where(limited, nm.joint_limit_ke.numpy(), 0.0)
    kd += np.where(limited, nm.joint_limit_kd.numpy(), 0.0)
    if not (ke > 0.0).any() and not (kd > 0.0).any():
        return StableStep()
    art_start = nm.articulation_start.numpy()
    best = StableStep()
    for a in _world_zero(nm):
        d0, d1 = int(qd_start[art_start[a]]), int(qd_start[art_start[a + 1]])
        k, c = ke[d0:d1], kd[d0:d1]
        if not (k > 0.0).any() and not (c > 0.0).any():
            continue
        h = mass_matrix[a, : d1 - d0, : d1 - d0]
        root = _inverse_root(h)
        w2 = float(np.linalg.eigvalsh(root @ np.diag(k) @ root)[-1])
        damp = float(np.linalg.eigvalsh(root @ np.diag(c) @ root)[-1])
        dt = MARGIN * _bound(w2, damp)
        if dt < best.dt:  # (named: the DOF whose spring is stiffest against its own inertia)
            diag = np.maximum(np.diag(h), 1e-12)
            best = StableStep(dt, joint=int(dof_joint[d0 + int(np.argmax(k / diag + c / np.sqrt(diag)))]))
    return best


def _bound(w2: float, damp: float) -> float:
    """The longest step of symplectic Euler on x'' = -w2 x - damp x' that is stable."""
    if w2 > 0.0:
        return (math.sqrt(damp * damp + 4.0 * w2) - damp) / w2
    return 2.0 / damp if damp > 0.0 else math.inf


def _inverse_root(h) -> np.ndarray:
    """H^-1/2 of a symmetric positive (semi)definite matrix (its null space taken as very stiff)."""
    evals, evecs = np.linalg.eigh(0.5 * (h + h.T))
    return evecs @ np.diag(1.0 / np.sqrt(np.maximum(evals, 1e-12))) @ evecs.T


def _contacts(nm, state, mass_matrix) -> StableStep:
    """The fastest penalty contact of the shape pairs that may collide (see the module)."""
    pairs = nm.shape_contact_pairs
    if pairs is None or not len(pairs):
        return StableStep()
    pairs = pairs.numpy()
    mobility = _link_mobility(nm, state, mass_matrix)  # body -> (articulation, 6 x 6 J H^-1 J^T)
    if not mobility:
        return StableStep()
    shape_body = nm.shape_body.numpy()
    ours = np.array([int(b) in mobility for b in shape_body])
    pairs = pairs[ours[pairs[:, 0]] | ours[pairs[:, 1]]]
    if not len(pairs):
        return StableStep()
    shapes = np.unique(pairs)
    lam = np.zeros(nm.shape_count)
    lam[shapes] = [_shape_mobility(nm, state, int(s), mobility) for s in shapes]
    ke, kd = (getattr(nm, f"shape_material_{k}").numpy().astype(np.float64) for k in ("ke", "kd"))
    s0, s1 = pairs[:, 0], pairs[:, 1]
    b0, b1 = shape_body[s0], shape_body[s1]
    art = {b: a for b, (a, _) in mobility.items()}
    same = np.array([art.get(int(x), -1) == art.get(int(y), -2) for x, y in zip(b0, b1, strict=True)])
    # the relative velocity at the contact: the two mobilities add (bounded by their roots' sum squared where both
    # bodies are of one articulation and can move together against the contact)
    pair_lam = np.where(same, (np.sqrt(lam[s0]) + np.sqrt(lam[s1])) ** 2, lam[s0] + lam[s1])
    w2 = 0.5 * (ke[s0] + ke[s1]) * pair_lam
    damp = 0.5 * (kd[s0] + kd[s1]) * pair_lam
    dts = [_bound(float(x), float(y)) for x, y in zip(w2, damp, strict=True)]
    k = int(np.argmin(dts))
    body = int(b0[k]) if lam[s0[k]] >= lam[s1[k]] else int(b1[k])
    return StableStep(MARGIN * dts[k], body=body)


def _link_mobility(nm, state, mass_matrix) -> dict:
    """Each moving body of world 0's articulations -> (its articulation, J H^-1 J^T): the 6 x 6 map from a wrench at
    its center of mass (force, torque; world frame) to the change of its twist (COM velocity, angular velocity)."""
    jacobian = newton.eval_jacobian(nm, state).numpy().astype(np.float64)
    art_start = nm.articulation_start.numpy()
    qd_start = nm.joint_qd_start.numpy()
    child = nm.joint_child.numpy()
    kinematic = (nm.body_flags.numpy() & int(newton.BodyFlags.KINEMATIC)) != 0
    out = {}
    for a in _world_zero(nm):
        j0, j1 = int(art_start[a]), int(art_start[a + 1])
        n = int(qd_start[j1]) - int(qd_start[j0])
        if n == 0:
            continue
        h = mass_matrix[a, :n, :n]
        h_inv = np.linalg.pinv(0.5 * (h + h.T))
        for i, j in enumerate(range(j0, j1)):
            b = int(child[j])
            if b >= 0 and not kinematic[b]:
                rows = jacobian[a, 6 * i : 6 * i + 6, :n]
                out[b] = (a, rows @ h_inv @ rows.T)
    return out


def _shape_mobility(nm, state, s: int, mobility) -> float:
    """The largest mobility (m/s per N*s) of a point of shape ``s``'s bounding box, in any direction: 0 for a shape
    of the world or of a body that does not move."""
    b = int(nm.shape_body.numpy()[s])
    if b not in mobility:
        return 0.0
    m = mobility[b][1]
    corners = _box_corners(nm, s)  # in the body frame
    body_q = state.body_q.numpy()[b].astype(np.float64)
    com = nm.body_com.numpy()[b].astype(np.float64)
    r = quat_rotate(body_q[3:], corners - com)  # lever from the COM, world frame
    cross = np.zeros((len(r), 3, 3))
    cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
    cross -= cross.transpose(0, 2, 1)
    lever = np.concatenate([np.broadcast_to(np.eye(3), cross.shape), -cross], axis=2)  # v_point = v + w x r
    point = lever @ m @ lever.transpose(0, 2, 1)
    return float(np.linalg.eigvalsh(point)[:, -1].max())


def _box_corners(nm, s: int) -> np.ndarray:
    """The 8 corners of shape ``s``'s bounding box in its body's frame (a mesh's or height field's: the cube about
    its bounding sphere)."""
    kind = int(nm.shape_type.numpy()[s])
    scale = np.abs(nm.shape_scale.numpy()[s].astype(np.float64))
    geo = newton.GeoType
    if kind in (int(geo.BOX), int(geo.ELLIPSOID)):
        half = scale
    elif kind == int(geo.SPHERE):
        half = np.full(3, scale[0])
    elif kind == int(geo.CAPSULE):
        half = np.array([scale[0], scale[0], scale[0] + scale[1]])
    elif kind in (int(geo.CYLINDER), int(geo.CONE)):
        half = np.array([scale[0], scale[0], scale[1]])
    else:
        half = np.full(3, float(nm.shape_collision_radius.numpy()[s]))
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)
    x = nm.shape_transform.numpy()[s].astype(np.float64)
    return x[:3] + quat_rotate(x[3:], signs * half)
