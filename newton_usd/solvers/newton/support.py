"""What each of Newton's solvers cannot simulate of a model the bridge gives it, named before the run.

Read off Newton 1.8's solvers (each solver class's "Joint limitations" and the kernels that read the model's
arrays): which of the values our model carries the solver drops. :func:`report_unsupported` adds one
diagnostic per kind, with the prims it touches and the attributes that authored it, to the solver's
:class:`~newton_usd.diagnostics.Diagnostics`, which ``usdsim check --solver NAME`` lists without simulating and
a run logs once."""

from __future__ import annotations

import numpy as np

from ...core.types import JointType

UNLIMITED = 1.0e10
"""Our limits and effort limits at or beyond this are off (the builder's open range)."""

_PENALTY_SOLVERS = ("featherstone", "semi_implicit")
_MAXIMAL_SOLVERS = ("xpbd", "featherstone", "semi_implicit")  # (Kamino simulates effort limits and friction)

_PER_DOF = (
    # (what it is, the attributes that author it, the solvers that drop it, which DOFs carry it)
    (
        "drive force limits",
        "physics:maxForce",
        _MAXIMAL_SOLVERS,
        "the drive pulls unbounded",
        lambda a, mj: np.isfinite(a["joint_effort_limit"]) & (a["joint_effort_limit"] < UNLIMITED) & _driven(a),
    ),
    (
        "joint friction",
        "newton:friction, mjc:frictionloss",
        _MAXIMAL_SOLVERS,
        "the joint turns freely",
        lambda a, mj: a["joint_friction"] > 0.0,
    ),
    (
        "joint armature",
        "newton:armature, mjc:armature, physxJoint:armature",
        ("xpbd", "semi_implicit"),
        "the joint has only its bodies' inertia",
        lambda a, mj: a["joint_armature"] > 0.0,
    ),
    (
        "passive joint damping",
        "newton:damping, mjc:damping",
        ("xpbd", "kamino"),
        "the bridge does not carry it into Newton's model",
        lambda a, mj: _mujoco_positive(mj, "dof_damping", len(a["joint_armature"])),
    ),
    (
        "joint springs",
        "mjc:stiffness, mjc:springref",
        ("xpbd", "kamino"),
        "the bridge does not carry them into Newton's model",
        lambda a, mj: _mujoco_positive(mj, "dof_stiffness", len(a["joint_armature"])),
    ),
    (
        "soft joint limits",
        "newton:limitStiffness, physxLimit:*:stiffness",
        ("xpbd", "kamino"),
        "its limits are hard",
        lambda a, mj: np.isfinite(a["joint_limit_ke"]),
    ),
    (
        "joint springs on spherical joints",
        "mjc:stiffness",
        ("featherstone", "semi_implicit"),
        "Newton's springs pull on a joint's coordinates, a ball joint's are a quaternion",
        lambda a, mj: (
            _mujoco_positive(mj, "dof_stiffness", len(a["joint_armature"]))
            & (np.repeat(a["joint_type"], np.diff(a["joint_qd_start"])) == int(JointType.BALL))
        ),
    ),
)
"""Per-DOF values a Newton solver drops."""


def _driven(a) -> np.ndarray:
    return (a["joint_target_ke"] != 0.0) | (a["joint_target_kd"] != 0.0)


def _mujoco_positive(mj, name, n) -> np.ndarray:
    """Per DOF: where the MuJoCo-only value ``model.mujoco.<name>`` is set and positive."""
    values = getattr(mj, name, None)
    if values is None:
        return np.zeros(n, dtype=bool)
    values = np.asarray(values, dtype=np.float64)
    return np.nan_to_num(values, nan=0.0) > 0.0


def report_unsupported(model, a, diagnostics, solver_name: str, cones) -> None:
    """Add what the Newton solver named ``solver_name`` does not simulate of ``model`` to ``diagnostics``, once
    per kind with the prims. ``a``: the model's arrays on the host (the bridge's); ``cones``: the ball joints the
    bridge makes D6 joints (whose drives and limits every solver simulates)."""
    mj = model.mujoco
    for label in _labels(mj, "actuator"):
        diagnostics.add(f"MuJoCo actuators (MjcActuator) are not simulated by the {solver_name} solver", label)
    for label in _labels(mj, "tendon"):
        diagnostics.add(f"tendons are not simulated by the {solver_name} solver", label)
    for label in _labels(mj, "tendon_equality"):
        diagnostics.add(f"tendon equalities are not simulated by the {solver_name} solver", label)
    kinds = {0: "connect", 1: "weld", 2: "joint"}
    types = model.equality_type.numpy() if model.equality_count else ()
    for i, t in enumerate(types):
        kind = kinds.get(int(t), str(int(t)))
        diagnostics.add(
            f"{kind} equality constraints (and mimic joints, and joints closing a loop) are not simulated by the "
            f"{solver_name} solver",
            model.equality_label[i],
        )
    for label in model.distance_label:
        diagnostics.add(f"distance joints are not simulated by the {solver_name} solver", label)
    if solver_name not in ("xpbd", "kamino"):
        for s in np.nonzero(a["shape_material_restitution"] > 0.0)[0]:
            diagnostics.add(f"restitution is not simulated by the {solver_name} solver (xpbd and kamino do)",
                            model.shape_label[s])  # fmt: skip
    dof_joint = np.repeat(np.arange(model.joint_count), np.diff(a["joint_qd_start"]))
    for what, attributes, solvers, effect, where in _PER_DOF:
        if solver_name not in solvers:
            continue
        for j in sorted(set(dof_joint[np.nonzero(where(a, mj))[0]].tolist())):
            diagnostics.add(f"{what} ({attributes}): not simulated by the {solver_name} solver, {effect}",
                            model.joint_label[j])  # fmt: skip
    if solver_name == "featherstone":
        _bodies_out_of_joint_order(model, a, diagnostics)
    if solver_name in _PENALTY_SOLVERS:
        driven = _driven(a)
        for j in np.nonzero(a["joint_type"] == int(JointType.BALL))[0]:
            start, end = int(a["joint_qd_start"][j]), int(a["joint_qd_start"][j + 1])
            if int(j) not in cones and driven[start:end].any():
                diagnostics.add(
                    f"drives on spherical joints (drive:rotX/rotY/rotZ:physics:stiffness, damping) are not simulated "
                    f"by the {solver_name} solver: the joint swings freely",
                    model.joint_label[j],
                )


def _bodies_out_of_joint_order(model, a, diagnostics) -> None:
    """Newton's Featherstone assembles an articulation's mass matrix from the inertia of body j for its joint j
    (Newton's importers order bodies so): where a joint's child is another body (a tree whose bodies come before
    their parents, or several joints stacked on one body), its links' inertias are mixed up. Said per joint."""
    child = a["joint_child"]
    for j in np.nonzero(child != np.arange(len(child)))[0]:
        diagnostics.add(
            "joints whose child body is not the body of the same index (bodies authored before their parents, or "
            "joints stacked on one body) are simulated wrong by the featherstone solver: Newton's Featherstone "
            "takes joint j's link inertia from body j (xpbd or mujoco simulate them)",
            model.joint_label[j],
        )


def _labels(ns, name) -> list:
    """The prim paths of a MuJoCo-only element list of the model (``model.mujoco.<name>``)."""
    return [entry.get("path", f"{name} {i}") for i, entry in enumerate(getattr(ns, name, None) or [])]
