"""The dynamics compared: both models stepped from qpos0 (and from each hinge and slide moved), their
divergence set beside native MuJoCo's own sensitivity (a 1e-9 perturbation, float32 round-off)."""

from __future__ import annotations

import numpy as np

from .fields import scalar_joint
from .results import Divergence

CHAOS_EPS = 1e-9
"""The perturbation of qpos0 that measures native MuJoCo's own sensitivity."""

CHAOS_LIMIT = 1e-6
"""An initial difference at most this big (float32 round-off of a stored value is ~1e-7) is chaos's."""


# ---------------------------------------------------------------- dynamics
def _start(m, offset: float, perturb: float = 0.0, joints=None):
    """qpos0 with every hinge and slide joint (of ``joints``, default all) moved by ``offset`` and every
    coordinate by +-``perturb`` (alternating signs; quaternions renormalised)."""
    import mujoco

    q = m.qpos0.copy()
    for j in range(m.njnt) if joints is None else joints:
        if scalar_joint(m, j):
            q[m.jnt_qposadr[j]] += offset
    q += perturb * np.where(np.arange(m.nq) % 2, 1.0, -1.0)
    for j in range(m.njnt):
        t, adr = int(m.jnt_type[j]), int(m.jnt_qposadr[j])
        quat = slice(adr + 3, adr + 7) if t == mujoco.mjtJoint.mjJNT_FREE else slice(adr, adr + 4)
        if t in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
            q[quat] /= np.linalg.norm(q[quat])
    return q


def _positions(m, qpos, steps: int):
    """Body world positions after ``steps`` steps from ``qpos`` at rest, zero control."""
    import mujoco

    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    for _ in range(steps):
        mujoco.mj_step(m, d)
    mujoco.mj_kinematics(m, d)
    return d.xpos.copy()


def native_sensitivity(m, steps: int, offset: float = 0.0, joints=None, start=None) -> float:
    """How far native MuJoCo's bodies move apart after ``steps`` steps when every coordinate of the start
    (qpos0, the hinges and slides of ``joints`` moved by ``offset``) moves by 1e-9. ``start``: the body
    positions after ``steps`` steps from the unmoved start, when already at hand."""
    x = _positions(m, _start(m, offset, joints=joints), steps) if start is None else start
    xp = _positions(m, _start(m, offset, CHAOS_EPS, joints=joints), steps)
    return float(np.max(np.linalg.norm(xp - x, axis=1), initial=0.0))


FLOAT32_FIELDS = (
    "body_pos", "body_quat", "body_ipos", "body_iquat", "body_inertia", "body_mass", "geom_pos", "geom_quat",
    "geom_size", "jnt_pos", "jnt_axis", "site_pos", "site_quat",
)  # fmt: skip
"""The model values a USD file stores as float32 (points, orientations, extents, masses)."""

FLOAT32_FACTOR = 10.0
"""A divergence up to this many times native's own with float32 geometry is chaos's."""

FLOAT32_TWINS = 4

FLOAT32_ROUNDOFF = 2.0**-24
"""Relative round-off of a float32 (6e-8)."""


def float32_twins(m, count: int = FLOAT32_TWINS) -> list:
    """Copies of the MuJoCo model ``m`` as a USD round trip could give them: :data:`FLOAT32_FIELDS` rounded to
    float32, then (all but the first copy) each value moved by a random float32 round-off (seeded: the same
    every time). Contacts at a knife edge (capsules crossing deep) tell such models apart."""
    import copy

    import mujoco

    rng = np.random.default_rng(0)
    twins = []
    for k in range(count):
        twin = copy.deepcopy(m)
        for name in FLOAT32_FIELDS:
            values = getattr(twin, name)
            values[:] = values.astype(np.float32)
            if k:
                values *= 1.0 + FLOAT32_ROUNDOFF * rng.uniform(-1.0, 1.0, values.shape)
        mujoco.mj_setConst(twin, mujoco.MjData(twin))
        twins.append(twin)
    return twins


def verdict(divergence: float, sensitivity: float, atol: float, float32_sensitivity: float = 0.0) -> str:
    """ "match", "chaos" (what native's own sensitivity makes of a float-sized difference: of its start moved
    by 1e-9, or of its geometry rounded to float32) or "differs"."""
    if divergence <= atol:
        return "match"
    if sensitivity > 0.0 and divergence / sensitivity * CHAOS_EPS <= CHAOS_LIMIT:
        return "chaos"
    if divergence <= FLOAT32_FACTOR * float32_sensitivity:
        return "chaos"
    return "differs"


def divergences(native, ours, matches, steps: int, offset: float, atol: float) -> list:
    """Our divergence from native MuJoCo, beside native's sensitivity, from qpos0 and from offset joints."""
    joints = matches["joint"]
    scalar = [j for j in joints if scalar_joint(native, j) and int(native.jnt_type[j]) == int(ours.jnt_type[joints[j]])]
    bodies = sorted(matches["body"].items())
    twins = float32_twins(native)
    out = []
    for label, off in (("qpos0", 0.0), ("offset joints", offset)):
        x_native = _positions(native, _start(native, off, joints=scalar), steps)
        x_ours = _positions(ours, _start(ours, off, joints=[joints[j] for j in scalar]), steps)
        diff = max((float(np.linalg.norm(x_ours[c] - x_native[b])) for b, c in bodies), default=0.0)
        sens = native_sensitivity(native, steps, off, scalar, start=x_native)
        sens32 = max(float(np.max(np.linalg.norm(_positions(t, _start(t, off, joints=scalar), steps) - x_native,
                                                 axis=1), initial=0.0)) for t in twins)  # fmt: skip
        out.append(Divergence(label, steps, diff, sens, sens32, verdict(diff, sens, atol, sens32)))
    return out
