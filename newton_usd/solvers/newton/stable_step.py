"""The longest step at which Newton's Featherstone solver integrates a model's joint springs stably.

Featherstone integrates joint-space forces explicitly (symplectic Euler on the generalized coordinates): a drive
(``drive:*:physics:stiffness`` / ``damping``), a joint's passive spring and damping and a limit's penalty spring
(Newton's ``limit_ke`` / ``limit_kd``) pull a DOF back with a stiffness K and a damping C per DOF, against the
articulation's joint-space inertia H (the composite rigid-body mass matrix, armature included, at the start).
Linearized there, the fastest mode has w^2 the largest eigenvalue of H^-1/2 K H^-1/2 and c that of C likewise;
symplectic Euler keeps x'' = -w^2 x - c x' stable while w^2 dt^2 + 2 c dt < 4, so
dt < (sqrt(c^2 + 4 w^2) - c) / w^2, of which :data:`MARGIN` is given. A stiff drive on a light link (a hand, a
foot) sets it: Newton's ``humanoid.usda`` authors angular drive damping 5 N*m*s/deg (286 per rad) on joints whose
joint-space inertia is 1e-2 kg*m^2.

The bound leaves out penalty contacts (and the poses the run reaches): measured against runs (see
:data:`MARGIN`), the true limit was 0.81-0.88 of it on Newton's ``ant.usda`` and 0.44-0.65 on its ``humanoid.usda``
(which starts with its feet in the ground)."""

from __future__ import annotations

import math

import newton
import numpy as np

MARGIN = 0.4
"""The share of the stability bound :func:`featherstone_stable_dt` gives. Measured under featherstone (Warp's CPU):
Newton's ``ant.usda`` (bound 1.28e-3 s) held 2.5 s at 1.04e-3 s and blew up at 1.13e-3 s (frame 20) and 1.39e-3 s
(frame 1); its ``humanoid.usda`` (bound 6.87e-5 s) held 84 ms at 3e-5 s and blew up within 2 ms at 4.5e-5 and 6e-5 s."""

_OPEN = 0.5 * float(newton.MAXVAL)
"""Newton's limits at or beyond this are open (no limit spring)."""


def featherstone_stable_dt(newton_model, state) -> tuple[float, int]:
    """The longest step (s) at which Featherstone keeps ``newton_model``'s joint springs and dampers stable from
    ``state`` (a ``newton.State``: its body poses give the mass matrix), and the joint of the DOF that moves most in
    the fastest mode: (inf, -1) where nothing pulls on a joint."""
    nm = newton_model
    if nm.articulation_count == 0 or nm.joint_dof_count == 0:
        return math.inf, -1
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
        return math.inf, -1
    mass_matrix = newton.eval_mass_matrix(nm, state).numpy().astype(np.float64)
    art_start = nm.articulation_start.numpy()
    art_world = nm.articulation_world.numpy()
    best, which = math.inf, -1
    for a in range(nm.articulation_count):
        if art_world[a] > 0:  # (the worlds are copies of world 0: its articulations say it)
            continue
        d0, d1 = int(qd_start[art_start[a]]), int(qd_start[art_start[a + 1]])
        k, c = ke[d0:d1], kd[d0:d1]
        if not (k > 0.0).any() and not (c > 0.0).any():
            continue
        h = mass_matrix[a, : d1 - d0, : d1 - d0]
        evals, evecs = np.linalg.eigh(0.5 * (h + h.T))
        root = evecs @ np.diag(1.0 / np.sqrt(np.maximum(evals, 1e-12))) @ evecs.T  # H^-1/2
        w2 = float(np.linalg.eigvalsh(root @ np.diag(k) @ root)[-1])
        damp = float(np.linalg.eigvalsh(root @ np.diag(c) @ root)[-1])
        dt = (math.sqrt(damp * damp + 4.0 * w2) - damp) / w2 if w2 > 0.0 else (2.0 / damp if damp > 0 else math.inf)
        if dt < best:  # (named: the DOF whose spring is stiffest against its own inertia)
            diag = np.maximum(np.diag(h), 1e-12)
            best, which = dt, int(dof_joint[d0 + int(np.argmax(k / diag + c / np.sqrt(diag)))])
    return MARGIN * best, which
