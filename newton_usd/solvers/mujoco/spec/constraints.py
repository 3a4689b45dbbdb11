"""Equality constraints (connect, weld, joint and tendon couplings) and distance constraints (as a tendon
between two sites, limited)."""

from __future__ import annotations

import mujoco
import numpy as np

from ....core.builder import EQUALITY_KINDS
from ....core.model import element_name
from ....core.quat import (
    xyzw_to_wxyz,
)
from .values import EQUALITY_VALUES, ElementNames, mj_params, set_from


def add_equalities(spec, model, body_handles, joint_handles, tendon_names, diag):
    """Equality constraints, in the model's order with the tendon equalities (``model.mujoco.
    tendon_equality``, each at its recorded ``position`` among the model's) in between: connect and weld
    between bodies (MuJoCo derives a connect's second anchor and a weld's relative pose from qpos0, the
    authored configuration, unless the model gives them; a given second anchor becomes a pair of
    sites), and joint equalities, whose polynomial MuJoCo measures from qpos0 (see
    :func:`shifted_polycoef`)."""
    tendon_eqs = {}
    for entry in getattr(model.mujoco, "tendon_equality", None) or []:
        position = min(int(entry.get("position", model.equality_count)), model.equality_count)
        tendon_eqs.setdefault(position, []).append(entry)
    kinds = model.equality_type.numpy()
    b1, b2 = model.equality_body1.numpy(), model.equality_body2.numpy()
    j1, j2 = model.equality_joint1.numpy(), model.equality_joint2.numpy()
    anchors = model.equality_anchor.numpy().astype(np.float64)
    active = model.equality_active.numpy()
    q0, q_start = model.joint_q.numpy().astype(np.float64), model.joint_q_start.numpy()
    torquescale = getattr(model.mujoco, "eq_torquescale", None)
    eq_names = ElementNames(model)
    for i in range(model.equality_count + 1):
        for entry in tendon_eqs.get(i, []):
            _add_tendon_equality(spec, entry, tendon_names, eq_names(entry["path"]), diag)
        if i == model.equality_count:
            break
        name = eq_names(model.equality_label[i])
        kind = EQUALITY_KINDS[int(kinds[i])]
        if kind == "joint":
            follower = joint_handles[j1[i]]
            leader = joint_handles[j2[i]] if j2[i] >= 0 else None
            if follower is None or (j2[i] >= 0 and leader is None):
                diag.add("joint equality on a joint that is not simulated: ignored", model.equality_label[i])
                continue
            eq = spec.add_equality(
                type=mujoco.mjtEq.mjEQ_JOINT, name1=follower.name, name2=leader.name if leader else ""
            )
            data = np.zeros(len(eq.data))
            r2 = q0[q_start[j2[i]]] if leader else None
            data[0:5] = shifted_polycoef(model.equality_polycoef[i], q0[q_start[j1[i]]], r2)
        else:
            weld = kind == "weld"
            names = [body_handles[b].name if b >= 0 else "world" for b in (b1[i], b2[i])]
            anchor2 = model.equality_anchor2[i]
            objtype = mujoco.mjtObj.mjOBJ_BODY
            if not weld and not np.isnan(anchor2).any():  # both points given: MuJoCo's site connect
                objtype = mujoco.mjtObj.mjOBJ_SITE
                for k, (b, point) in enumerate(((b1[i], anchors[i]), (b2[i], anchor2))):
                    holder = spec.worldbody if b < 0 else body_handles[b]
                    names[k] = holder.add_site(name=f"{name}_anchor{k + 1}", pos=point, size=[0.005, 0, 0]).name
            eq = spec.add_equality(
                type=mujoco.mjtEq.mjEQ_WELD if weld else mujoco.mjtEq.mjEQ_CONNECT,
                objtype=objtype,
                name1=names[0],
                name2=names[1],
            )
            data = np.array(eq.data, dtype=np.float64)
            data[0:3] = anchors[i] if objtype == mujoco.mjtObj.mjOBJ_BODY else 0.0
            data[3:10] = 0.0  # second anchor / relative pose: computed by MuJoCo at qpos0, unless given
            relpose = model.equality_relpose[i]
            if weld and not np.isnan(relpose).any():
                data[3:6] = relpose[:3]
                data[6:10] = xyzw_to_wxyz(relpose[3:])
            if weld and torquescale is not None and not np.isnan(torquescale[i]):
                data[10] = torquescale[i]
        eq.data = data
        eq.active = bool(active[i])
        eq.name = name
        set_from(eq, model, i, EQUALITY_VALUES)


def shifted_polycoef(polycoef, ref1: float, ref2: float | None) -> np.ndarray:
    """MuJoCo's joint-equality coefficients for ``q1 = p(q2)`` in model coordinates: MuJoCo measures both
    joints from qpos0 (``ref1``, ``ref2``: the initial coordinates, which the spec makes qpos0), so
    ``q1 - ref1 = p(u + ref2) - ref1`` with ``u = q2 - ref2``. ``ref2`` None: no second joint
    (``q1 = c0``)."""
    coef = np.asarray(polycoef, dtype=np.float64)
    if ref2 is None:
        out = np.zeros(5)
        out[0] = coef[0] - ref1
        return out
    shifted = np.polynomial.Polynomial(coef)(np.polynomial.Polynomial([ref2, 1.0])).coef
    out = np.zeros(5)
    out[: min(5, len(shifted))] = shifted[:5]
    out[0] -= ref1
    return out


def _add_tendon_equality(spec, entry, tendon_names, name, diag):
    """A tendon equality (an entry of ``model.mujoco.tendon_equality``): ``L1 - L1_0 = p(L2 - L2_0)``, the
    lengths measured from those at qpos0 (as in MuJoCo); no second tendon: ``L1 - L1_0 = c0``."""
    t1 = tendon_names.get(entry["tendon1"])
    t2 = tendon_names.get(entry["tendon2"]) if entry.get("tendon2") else ""
    if t1 is None or t2 is None:
        diag.add("tendon equality on a tendon that is not simulated: ignored", entry["path"])
        return
    eq = spec.add_equality(type=mujoco.mjtEq.mjEQ_TENDON, name1=t1, name2=t2)
    data = np.zeros(len(eq.data))
    data[0:5] = mj_params(entry["polycoef"], 5)
    eq.data = data
    eq.active = bool(entry.get("active", True))
    eq.name = name
    for key in ("solref", "solimp"):
        if entry.get(key) is not None:
            setattr(eq, key, [float(x) for x in entry[key]])


DISTANCE_UNBOUNDED = 1e10
"""m: the upper end of a distance constraint's tendon range when it has no maximum."""


def add_distance_constraints(spec, model, body_handles) -> None:
    """Distance constraints (UsdPhysics distance joints) as MuJoCo spatial tendons between two sites,
    their length limited to ``[min, max]``."""
    if not getattr(model, "distance_count", 0):
        return
    bodies = (model.distance_body0.numpy(), model.distance_body1.numpy())
    anchors = (model.distance_anchor0.numpy().astype(np.float64), model.distance_anchor1.numpy().astype(np.float64))
    lo, hi = model.distance_min.numpy().astype(np.float64), model.distance_max.numpy().astype(np.float64)
    for i, label in enumerate(model.distance_label):
        name = f"{element_name(model, label)}_{i}"
        tendon = spec.add_tendon(name=f"{name}_distance")
        for end in (0, 1):
            b = bodies[end][i]
            holder = spec.worldbody if b < 0 else body_handles[b]
            site = holder.add_site(name=f"{name}_anchor{end}", pos=anchors[end][i], size=[0.005, 0, 0])
            tendon.wrap_site(site.name)
        tendon.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        tendon.range = [max(lo[i], 0.0), hi[i] if hi[i] >= 0 else DISTANCE_UNBOUNDED]
