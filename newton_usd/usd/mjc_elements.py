"""MuJoCo's typed elements: MjcActuator, MjcTendon and NewtonUsdContactPair prims, every value resolved into
``model.mujoco.actuator`` / ``tendon`` / ``contact_pair``.
"""

from __future__ import annotations

from . import properties as props


def import_mjc_typed(builder, typed, result, ctx):
    """MjcActuator, MjcTendon and NewtonUsdContactPair prims: every value resolved (authored, else the
    schema's fallback) into ``model.mujoco.actuator`` / ``tendon`` / ``contact_pair``, lists of dicts with
    "path", "values" and the relationship targets (prim paths): "target", "refSite", "sliderSite"
    (actuators), "wrap" (the tendon's ``mjc:path``), "sideSites" (tendons), "geom0" and "geom1" (pairs)."""
    for type_name, key, rels in (
        ("MjcActuator", "actuator", {"mjc:target": "target", "mjc:refSite": "refSite", "mjc:sliderSite": "sliderSite"}),
        ("MjcTendon", "tendon", {"mjc:path": "wrap", "mjc:sideSites": "sideSites"}),
        ("NewtonUsdContactPair", "contact_pair", {"newton:usd:geom0": "geom0", "newton:usd:geom1": "geom1"}),
    ):
        entries = []
        table = props.schema_properties(type_name)
        for prim in typed.get(type_name, []):
            resolved = result.resolver.resolve_all(prim, table.values(), ctx)
            values = {k.split(":", 1)[1]: r.value for k, r in resolved.items()}
            targets = {}
            for rel_name, entry_key in rels.items():
                rel = prim.GetRelationship(rel_name)
                targets[entry_key] = [str(t) for t in rel.GetTargets()] if rel else []
                if rel and rel.HasAuthoredTargets():
                    result.resolver.used.add((str(prim.GetPath()), rel_name))
            entries.append({"path": str(prim.GetPath()), "values": values, **targets})
        if entries:
            builder.mujoco[key] = entries
