"""Equality constraints authored on joints and tendons, imported after the joints and tendons exist.

- Joint equalities: NewtonMimicAPI (``follower = coef0 + coef1 * leader``) and MjcEqualityJointAPI
  (MuJoCo's quartic: ``coef2`` to ``coef4``, ``mjc:solref``/``mjc:solimp``) on the follower joint;
  MjcEqualityJointAPI without a leader holds the joint at ``coef0``. Coordinates are the joints' USD
  coordinates (zero at the authored pose, less any ``mjc:ref``).
- Tendon equalities: NewtonUsdTendonEqualityAPI instances on the follower MjcTendon, into
  ``model.mujoco.tendon_equality``.

Connect and weld equalities are joints excluded from articulations: see the importer's loop closures.
"""

from __future__ import annotations

import numpy as np

from ..core.types import JointType
from . import properties as props

_MIMIC_APIS = ("NewtonMimicAPI", "MjcEqualityJointAPI")
TENDON_EQUALITY_API = "NewtonUsdTendonEqualityAPI"
_TENDON_EQUALITY_PREFIX = "newton:usd:tendonEquality:"


def import_joint_equalities(builder, stage, result, ctx) -> None:
    """A joint equality for every imported single-DOF joint with NewtonMimicAPI or MjcEqualityJointAPI."""
    diag = result.diagnostics
    for path, j in list(result.joint_index.items()):
        prim = stage.GetPrimAtPath(path)
        applied = prim.GetAppliedSchemas() if prim else []
        if not any(api in applied for api in _MIMIC_APIS):
            continue
        jt = builder.joint_type[j]
        if jt not in (JointType.REVOLUTE, JointType.PRISMATIC):
            diag.add("joint equalities on joints other than revolute and prismatic are not simulated", path)
            continue
        leader = _leader(prim, result)
        if leader is None:
            diag.add("joint equality whose leader is not a simulated joint: ignored", path)
            continue
        if leader >= 0 and builder.joint_type[leader] not in (JointType.REVOLUTE, JointType.PRISMATIC):
            diag.add("joint equality whose leader is not a revolute or prismatic joint: ignored", path)
            continue
        joint_ctx = ctx.of_kind(jt == JointType.REVOLUTE)
        r = result.resolver.resolve_all(prim, props.MIMIC_COEFFICIENTS + (props.MIMIC_ENABLED,), joint_ctx)
        coef = [r[f"coef{k}"].value for k in range(5)]
        i = builder.add_equality_joint(j, leader, coef, active=bool(r["enabled"].value), label=path)
        solver = result.resolver.resolve_all(prim, (props.SHAPE_SOLREF, props.SHAPE_SOLIMP), ctx)
        for name, key in (("solref", "eq_solref"), ("solimp", "eq_solimp")):
            if solver[name].kind != "default":
                builder.set_mujoco("equality", key, i, solver[name].value)


def _leader(prim, result):
    """The leader joint's builder index, -1 for none (MjcEqualityJointAPI alone), None when the target is
    not an imported joint."""
    for rel_name in ("newton:mimicJoint", "mjc:target"):
        rel = prim.GetRelationship(rel_name)
        targets = rel.GetTargets() if rel else []
        if targets:
            result.resolver.used.add((str(prim.GetPath()), rel_name))
            return result.joint_index.get(str(targets[0]))
    return -1 if "MjcEqualityJointAPI" in prim.GetAppliedSchemas() else None


def import_tendon_equalities(builder, tendons, result) -> None:
    """``model.mujoco.tendon_equality`` entries (see the solver's spec) from the NewtonUsdTendonEqualityAPI
    instances of the MjcTendon prims ``tendons``."""
    entries = []
    tendon_paths = {str(p.GetPath()) for p in tendons}
    for prim in tendons:
        path = str(prim.GetPath())
        for api in prim.GetAppliedSchemas():
            if not api.startswith(TENDON_EQUALITY_API + ":"):
                continue
            instance = api.split(":", 1)[1]
            prefix = f"{_TENDON_EQUALITY_PREFIX}{instance}:"
            values = {}
            for name in ("polycoef", "enabled", "solref", "solimp"):
                attr = prim.GetAttribute(prefix + name)
                values[name] = attr.Get() if attr else None
                if attr and attr.HasAuthoredValue():
                    result.resolver.used.add((path, prefix + name))
            rel = prim.GetRelationship(prefix + "leader")
            leader = [str(t) for t in rel.GetTargets()] if rel else []
            if leader and leader[0] not in tendon_paths:
                result.diagnostics.add("tendon equality whose leader is not an MjcTendon: ignored", path)
                continue
            coef = np.zeros(5)
            given = [float(x) for x in (values["polycoef"] if values["polycoef"] is not None else (0.0, 1.0))][:5]
            coef[: len(given)] = given
            entries.append(
                {
                    "path": f"{path}/{instance}",
                    "tendon1": path,
                    "tendon2": leader[0] if leader else None,
                    "polycoef": tuple(coef),
                    "active": bool(values["enabled"]) if values["enabled"] is not None else True,
                    "solref": tuple(values["solref"]) if values["solref"] is not None else None,
                    "solimp": tuple(values["solimp"]) if values["solimp"] is not None else None,
                }
            )
    if entries:
        builder.mujoco.setdefault("tendon_equality", []).extend(entries)
