"""The longest step at which Newton's Featherstone and semi-implicit solvers integrate a model's stiff forces
stably, and what sets it (:class:`StableStep`: the joint or body, and the gain).

Newton's Featherstone integrates joint-space forces explicitly (symplectic Euler on the generalized coordinates);
here its drives (``drive:*:physics:stiffness`` / ``damping``), a joint's passive spring and damping and a limit's
penalty spring (Newton's ``limit_ke`` / ``limit_kd``) are taken implicitly (:mod:`.implicit_joint_forces`), so
they bound no step, except under gradients (``implicit_joints=False``): each pulls a DOF back with a stiffness K and
a damping C per DOF against the articulation's joint-space inertia H (the composite rigid-body mass matrix,
armature included, at the start). Linearized there, the fastest mode has w^2 the largest eigenvalue of
H^-1/2 K H^-1/2 and c that of C likewise; symplectic Euler keeps x'' = -w^2 x - c x' stable while
w^2 dt^2 + 2 c dt < 4, so dt < (sqrt(c^2 + 4 w^2) - c) / w^2 (:func:`explicit_stable_dt`), of which :data:`MARGIN`
is given. A stiff drive on a light link (a hand, a foot) sets it: Newton's ``humanoid.usda`` authors angular drive
damping 5 N*m*s/deg (286 per rad) on joints whose joint-space inertia is 1e-2 kg*m^2.

Penalty contacts are springs too (Newton's ``shape_material_ke`` and ``kd`` along the normal, averaged over the two
shapes; the viscous friction ``kf`` across it is capped by Coulomb's mu times the normal force, so it cannot run
away and is left out), on a point of a body: their mode is the spring against the
articulation's inertia seen at that point, 1/lambda, where lambda is the largest eigenvalue of the point's
mobility P J H^-1 J^T P^T (J the body's rows of the articulation's Jacobian, P the point's lever). A body whose own
inertia is far below its mass times its size squared (a 2 kg rod of 1e-4 kg*m^2, as PhysX test stages author)
spins fast under a touch at its end. Each pair of shapes that may collide (Newton's ``shape_contact_pairs``) is
taken at its worst points, the corners of each shape's bounding box (the mobility is convex in the point), one
contact at a time (a resting face has several: it is covered by :data:`MARGIN`).

Semi-implicit Euler's joints are penalty springs on the bodies' maximal coordinates
(:func:`penalty_joint_stable_dt`).

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
    """An estimate of the longest stable step: ``dt`` (s; inf where nothing pulls), and what sets it: a joint
    (``joint`` >= 0) or a body's penalty contacts (``body`` >= 0); ``kind`` says which force ("drive", "spring",
    "limit", "joint" (a penalty joint), "contacts") and ``what`` names it with its gain, as a message says it (e.g.
    "its drive's damping 5.73e+09 N*m*s/rad")."""

    dt: float = math.inf
    joint: int = -1
    body: int = -1
    kind: str = ""
    what: str = ""


def explicit_stable_dt(w2: float, damp: float) -> float:
    """The longest step of symplectic Euler on x'' = -w2 x - damp x' that is stable: (sqrt(damp^2 + 4 w2) - damp) / w2,
    written 4 / (sqrt(damp^2 + 4 w2) + damp) so that a damping far above the stiffness's frequency does not cancel
    to 0 (a drive of damping 1e8 on a light link: 2 / damp, never 0 for finite gains); 0 for infinite or NaN gains,
    inf where nothing pulls."""
    if not (w2 > 0.0 or damp > 0.0):
        return math.inf if w2 == 0.0 and damp == 0.0 else 0.0  # (NaN: no step is stable)
    dt = 4.0 / (math.sqrt(damp * damp + 4.0 * max(w2, 0.0)) + max(damp, 0.0))
    return dt if math.isfinite(dt) else 0.0


def featherstone_stable_dt(newton_model, state, implicit_joints: bool = True, actuator_gains=None) -> StableStep:
    """The longest step (s) at which Featherstone keeps ``newton_model``'s penalty contacts (and, with
    ``implicit_joints`` False, its joints' drives, passive springs and limit springs; with ``actuator_gains``, a pair
    of per-DOF arrays in Newton's DOF order, the joint actuators' kp and kd, taken explicitly) stable from ``state`` (a
    ``newton.State``: its body poses give the mass matrix and the Jacobian), with what sets it: the joint of the DOF
    that moves most in the fastest mode, or the body whose contact does."""
    nm = newton_model
    if nm.articulation_count == 0 or nm.joint_dof_count == 0:
        return StableStep()
    mass_matrix = newton.eval_mass_matrix(nm, state).numpy().astype(np.float64)
    joints = StableStep()
    if not implicit_joints or actuator_gains is not None:
        joints = _joint_springs(nm, mass_matrix, joint_gains=not implicit_joints, actuator_gains=actuator_gains)
    contacts = _contacts(nm, state, mass_matrix)
    return contacts if contacts.dt < joints.dt else joints


def _world_zero(nm):
    """The articulations that say the model (the worlds are copies of world 0): their indices."""
    return [a for a in range(nm.articulation_count) if nm.articulation_world.numpy()[a] <= 0]


_GAINS = (  # (what a message calls it, is it a stiffness)
    ("its drive's stiffness", True),
    ("its drive's damping", False),
    ("its passive spring", True),
    ("its passive damping", False),
    ("its limit's stiffness", True),
    ("its limit's damping", False),
    ("its actuator's kp", True),
    ("its actuator's kd", False),
)


def _joint_springs(nm, mass_matrix, joint_gains: bool = True, actuator_gains=None) -> StableStep:
    types = nm.joint_type.numpy()
    qd_start = nm.joint_qd_start.numpy()
    dof_joint = np.repeat(np.arange(nm.joint_count), np.diff(qd_start))
    ball = types[dof_joint] == int(newton.JointType.BALL)  # (Featherstone drives no ball joint)
    limited = (np.abs(nm.joint_limit_lower.numpy()) < _OPEN) | (np.abs(nm.joint_limit_upper.numpy()) < _OPEN)
    gains = [
        np.where(ball, 0.0, nm.joint_target_ke.numpy()),
        np.where(ball, 0.0, nm.joint_target_kd.numpy()),
        np.where(ball, 0.0, nm.joint_stiffness.numpy()),
        nm.joint_damping.numpy(),
        np.where(limited, nm.joint_limit_ke.numpy(), 0.0),
        np.where(limited, nm.joint_limit_kd.numpy(), 0.0),
    ]
    if not joint_gains:  # (taken implicitly: only the actuators')
        gains = [np.zeros_like(g) for g in gains]
    zero = np.zeros(nm.joint_dof_count)
    gains += list(actuator_gains) if actuator_gains is not None else [zero, zero]
    gains = np.stack([np.asarray(g, dtype=np.float64) for g in gains])
    stiff = np.array([s for _, s in _GAINS])
    ke, kd = gains[stiff].sum(axis=0), gains[~stiff].sum(axis=0)
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
        dt = MARGIN * explicit_stable_dt(w2, damp)
        if dt < best.dt:  # (named: the DOF and gain that are fastest against the DOF's own inertia)
            diag = np.maximum(np.diag(h), 1e-12)
            rates = np.where(stiff[:, None], np.sqrt(gains[:, d0:d1] / diag), gains[:, d0:d1] / diag)
            term, dof = np.unravel_index(int(np.argmax(rates)), rates.shape)
            best = _named(nm, dt, d0 + int(dof), int(term), float(gains[term, d0 + dof]), dof_joint)
    return best


def _named(nm, dt: float, dof: int, term: int, gain: float, dof_joint) -> StableStep:
    """A joint's :class:`StableStep` naming the gain ``term`` (an index of :data:`_GAINS`) of its DOF ``dof``."""
    joint = int(dof_joint[dof])
    name, stiffness = _GAINS[term]
    lin = int(nm.joint_dof_dim.numpy()[joint][0])
    angular = dof - int(nm.joint_qd_start.numpy()[joint]) >= lin
    unit = ("N*m" if angular else "N") + ("" if stiffness else "*s") + ("/rad" if angular else "/m")
    kind = ("drive", "drive", "spring", "spring", "limit", "limit", "actuator", "actuator")[term]
    return StableStep(dt, joint=joint, kind=kind, what=f"{name} {gain:.3g} {unit}")


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
    dts = [explicit_stable_dt(float(x), float(y)) for x, y in zip(w2, damp, strict=True)]
    k = int(np.argmin(dts))
    body = int(b0[k]) if lam[s0[k]] >= lam[s1[k]] else int(b1[k])
    ke_k = 0.5 * (ke[s0[k]] + ke[s1[k]])
    what = f"its penalty contacts (ke {ke_k:.3g} N/m, kd {0.5 * (kd[s0[k]] + kd[s1[k]]):.3g} N*s/m)"
    return StableStep(MARGIN * dts[k], body=body, kind="contacts", what=what)


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
    corners = box_corners(nm, s)  # in the body frame
    body_q = state.body_q.numpy()[b].astype(np.float64)
    com = nm.body_com.numpy()[b].astype(np.float64)
    r = quat_rotate(body_q[3:], corners - com)  # lever from the COM, world frame
    cross = np.zeros((len(r), 3, 3))
    cross[:, 0, 1], cross[:, 0, 2], cross[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
    cross -= cross.transpose(0, 2, 1)
    lever = np.concatenate([np.broadcast_to(np.eye(3), cross.shape), -cross], axis=2)  # v_point = v + w x r
    point = lever @ m @ lever.transpose(0, 2, 1)
    return float(np.linalg.eigvalsh(point)[:, -1].max())


def box_corners(nm, s: int) -> np.ndarray:
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


STABLE_DT_MARGIN = 0.9
"""The share of the stability bound that :func:`penalty_joint_stable_dt` gives (its modes are each body's
alone; the two bodies of a joint move together)."""


def penalty_joint_stable_dt(
    newton_model, ke: float, kd: float, angular_kd_scale: float = 0.01, actuator_gains=None
) -> StableStep:
    """The longest step at which semi-implicit Euler keeps the penalty springs of a bridged ``newton_model``'s
    joints (stiffness ``ke``, damping ``kd``; Newton's semi-implicit solver scales the angular damping by
    ``angular_kd_scale``) and their drives stable, and the joint that sets it (its ``kind`` "joint" where the penalty
    springs do, "drive" where its drive alone would: named with its largest gain); inf without such joints.
    ``actuator_gains``: the joint actuators' kp and kd per DOF in Newton's order (:meth:`.actuation.Actuation.gains`),
    added to the drives' (their efforts are applied explicitly, as a drive's are).

    A joint's springs pull its anchor on each of its bodies (the world's and kinematic bodies' aside) back onto
    the other's (across its free linear axes: none of a revolute joint's) and turn the body's frame back into
    line (about all but its free angular axes: a ball joint's none). Linearized about the start, per body: a
    stiffness K and damping C (6 x 6, the COM's translation and the rotation about it) against the body's mass
    and inertia M; the fastest mode has w^2 the largest eigenvalue of M^-1/2 K M^-1/2, c that of C likewise (the
    two bodies' added). Semi-implicit Euler integrates x'' = -w^2 x - c x' stably while w^2 dt^2 + 2 c dt < 4, so
    dt < (sqrt(c^2 + 4 w^2) - c) / w^2 (the drives' gains add to K and C along their axes: a torque turns a
    body about its center of mass, so a stiff drive on a body of small inertia needs small steps too), of which
    :data:`STABLE_DT_MARGIN` is given: an estimate, not a guarantee."""
    nm = newton_model
    types = nm.joint_type.numpy()
    joints = np.nonzero(types != int(newton.JointType.FREE))[0]
    if not len(joints):
        return StableStep()
    mass, inertia = nm.body_mass.numpy().astype(np.float64), nm.body_inertia.numpy().astype(np.float64)
    com = nm.body_com.numpy().astype(np.float64)
    kinematic = (nm.body_flags.numpy() & int(newton.BodyFlags.KINEMATIC)) != 0
    x_p, x_c = nm.joint_X_p.numpy().astype(np.float64), nm.joint_X_c.numpy().astype(np.float64)
    parent, child = nm.joint_parent.numpy(), nm.joint_child.numpy()
    axes, dim = nm.joint_axis.numpy().astype(np.float64), nm.joint_dof_dim.numpy()
    qd_start = nm.joint_qd_start.numpy()
    dof_joint = np.repeat(np.arange(nm.joint_count), np.diff(qd_start))
    gain_ke = nm.joint_target_ke.numpy().astype(np.float64)
    gain_kd = (nm.joint_target_kd.numpy() + nm.joint_damping.numpy()).astype(np.float64)
    if actuator_gains is not None:
        gain_ke = gain_ke + np.asarray(actuator_gains[0], dtype=np.float64)
        gain_kd = gain_kd + np.asarray(actuator_gains[1], dtype=np.float64)
    best = StableStep()
    for j in joints:
        d0, (n_lin, n_ang) = int(qd_start[j]), (int(x) for x in dim[j])
        free_lin, free_ang = axes[d0 : d0 + n_lin], axes[d0 + n_lin : d0 + n_lin + n_ang]
        if int(types[j]) == int(newton.JointType.BALL):
            free_ang = np.eye(3)
        w2 = c = drive_w2 = drive_c = 0.0
        for b, x in ((int(child[j]), x_c[j]), (int(parent[j]), x_p[j])):
            if b < 0 or kinematic[b] or mass[b] <= 0.0:
                continue
            rot = x[3:]
            lin_axes = quat_rotate(rot, free_lin) if len(free_lin) else free_lin.reshape(0, 3)
            ang_axes = quat_rotate(rot, free_ang) if len(free_ang) else free_ang.reshape(0, 3)
            r = x[:3] - com[b]
            cross = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
            lever = np.hstack([np.eye(3), -cross])  # (the anchor's displacement: t + theta x r)
            lin = lever.T @ _spring_projector(lin_axes) @ lever  # (per unit of the springs' gains)
            ang = np.zeros((6, 6))
            ang[3:, 3:] = _spring_projector(ang_axes)
            drive_stiff, drive_damp = np.zeros((6, 6)), np.zeros((6, 6))
            for k, a in enumerate(lin_axes):  # the drives (forces at the center of mass, torques about it)
                drive_stiff[:3, :3] += gain_ke[d0 + k] * np.outer(a, a)
                drive_damp[:3, :3] += gain_kd[d0 + k] * np.outer(a, a)
            for k, a in enumerate(ang_axes[:n_ang]):
                drive_stiff[3:, 3:] += gain_ke[d0 + n_lin + k] * np.outer(a, a)
                drive_damp[3:, 3:] += gain_kd[d0 + n_lin + k] * np.outer(a, a)
            stiff, damp = ke * (lin + ang) + drive_stiff, kd * (lin + angular_kd_scale * ang) + drive_damp
            evals, evecs = np.linalg.eigh(inertia[b])
            root = np.zeros((6, 6))  # M^-1/2
            root[:3, :3] = np.eye(3) / math.sqrt(mass[b])
            root[3:, 3:] = evecs @ np.diag(1.0 / np.sqrt(np.maximum(evals, 1e-12))) @ evecs.T
            w2 += float(np.linalg.eigvalsh(root @ stiff @ root)[-1])
            c += float(np.linalg.eigvalsh(root @ damp @ root)[-1])
            drive_w2 += float(np.linalg.eigvalsh(root @ drive_stiff @ root)[-1])
            drive_c += float(np.linalg.eigvalsh(root @ drive_damp @ root)[-1])
        dt = STABLE_DT_MARGIN * explicit_stable_dt(w2, c)
        if dt < best.dt:
            if explicit_stable_dt(drive_w2, drive_c) < 2.0 * dt / STABLE_DT_MARGIN:  # (the drive alone needs it)
                n = n_lin + n_ang
                dof = d0 + int(np.argmax(np.maximum(gain_ke[d0 : d0 + n], gain_kd[d0 : d0 + n])))
                term = 0 if gain_ke[dof] >= gain_kd[dof] else 1
                best = _named(nm, dt, dof, term, float((gain_ke, gain_kd)[term][dof]), dof_joint)
            else:
                best = StableStep(dt, joint=int(j), kind="joint", what=f"its penalty joint springs (ke {ke:g})")
    return best


def _spring_projector(free_axes) -> np.ndarray:
    """3 x 3: the directions a joint's spring acts in, all but its ``free_axes`` (rows, unit)."""
    out = np.eye(3)
    for a in free_axes:
        a = a / max(float(np.linalg.norm(a)), 1e-12)
        out -= np.outer(a, a)
    return out
