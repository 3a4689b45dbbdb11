"""PhysX tendons (PhysxSchema's multiple-apply tendon APIs) as MuJoCo tendons in ``model.mujoco.tendon``, beside
the MjcTendon prims' (:mod:`~newton_usd.usd.mjc_elements`): the solvers with tendons (MuJoCo) build them, the
others say once that they do not simulate them.

Fixed tendons: ``PhysxTendonAxisRootAPI:<name>`` on a revolute or prismatic joint (the tendon's stiffness, damping,
rest length, offset and limits, and its own axis) and ``PhysxTendonAxisAPI:<name>`` on the other joints of the
tendon, joined to the root through the articulation's links (as PhysX gathers them). The tendon's length is
``offset + sum(gearing_i q_i)`` (per degree for a revolute joint); PhysX pulls each axis by ``forceCoefficient_i``
times the tendon's force. A MuJoCo fixed tendon pulls each joint by its coefficient times the force, so its
coefficients are the gearings (per radian, in meters) and its stiffness and damping PhysX's times the ratio
``forceCoefficient_i / |coefficient_i|`` (one ratio for a tendon whose axes all have it, as PhysX's defaults do);
its spring length is ``restLength - offset``, its range ``[lowerLimit, upperLimit] - offset`` where
``limitStiffness`` is positive (the limit's stiffness then becomes MuJoCo's limit solref, see
``solvers/mujoco/spec/tendons.py``).

Spatial tendons: ``PhysxTendonAttachmentRootAPI:<name>`` on an articulation link (the tendon's stiffness, damping,
offset, limit stiffness), ``PhysxTendonAttachmentAPI`` on the links it is routed over and
``PhysxTendonAttachmentLeafAPI`` where it ends (a sub-tendon's rest length and limits; a negative rest length: the
length at the start), each attachment at ``localPos`` on its link, its parent named by ``parentLink`` and
``parentAttachment``. Each leaf is a MuJoCo spatial tendon through sites at the attachments from the root to it, a
``gearing`` other than 1 weighting its segment (a pulley branch of divisor ``1 / gearing``). MuJoCo's spatial tendon
pulls at every site along its path (a cable over pulleys); PhysX's at its root and leaf only.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque

import numpy as np
from pxr import Gf, Usd, UsdGeom

from ..core.quat import transform_inverse, transform_multiply
from ..core.types import GeoType, JointType
from . import properties as props

FIXED_ROOT, FIXED_AXIS = "PhysxTendonAxisRootAPI", "PhysxTendonAxisAPI"
SPATIAL_ROOT, SPATIAL = "PhysxTendonAttachmentRootAPI", "PhysxTendonAttachmentAPI"
SPATIAL_LEAF = "PhysxTendonAttachmentLeafAPI"
UNBOUNDED = 1.0e10
"""m: the end of a tendon's range that PhysX leaves open (MuJoCo's range has two ends)."""
SITE_SIZE = 0.005
"""m: the radius of a spatial tendon's attachment sites (for display)."""


def instances(prim, api: str) -> list[str]:
    """The instance names of the multiple-apply ``api`` applied to ``prim`` (from its type info: PhysxSchema is not
    registered, and ``GetAppliedSchemas`` leaves out what is not)."""
    prefix = api + ":"
    return [s[len(prefix) :] for s in prim.GetPrimTypeInfo().GetAppliedAPISchemas() if s.startswith(prefix)]


def label(path, instance: str) -> str:
    """The label of a tendon API instance: its property namespace (PhysxSchema's ``<path>.physxTendon:<name>``)."""
    return f"{path}.physxTendon:{instance}"


def import_physx_tendons(builder, prims, result, frame, ctx) -> None:
    """The PhysX fixed and spatial tendons on ``prims`` (the joints and bodies the scan found with a PhysX tendon API)
    as ``model.mujoco.tendon`` entries (MjcTendon's values, the wrap path of joints or sites)."""
    if not prims:
        return
    entries = _fixed_tendons(builder, prims, result, ctx) + _spatial_tendons(builder, prims, result, frame, ctx)
    if entries:
        builder.mujoco.setdefault("tendon", []).extend(entries)


def _defaults() -> dict:
    """An MjcTendon's values where nothing is authored (the schema's fallbacks)."""
    return {name.split(":", 1)[1]: p.default for name, p in props.schema_properties("MjcTendon").items()}


def _entry(path: str, kind: str, wrap: list, values: dict, limit_gains) -> dict:
    out = {"path": path, "values": {**_defaults(), "type": kind, **values}, "wrap": wrap, "sideSites": []}
    if limit_gains is not None:
        out["limit_gains"] = limit_gains  # (force-space: the spec makes them MuJoCo's limit solref)
    return out


def _spring_and_limits(root, offset: float, rest: float, lower: float, upper: float, tendon: str, diag):
    """MjcTendon's spring length and range of a PhysX tendon's ``rest`` length and limits (m, with its ``offset``);
    the limit's gains (stiffness, damping) where it has one. Limits without a limit stiffness (its fallback 0) exert
    no force in PhysX (its limit is a spring of that stiffness): said once, and left open."""
    values = {"springlength": (rest - offset,) * 2 if math.isfinite(rest) else (-1.0, -1.0)}
    bounded = math.isfinite(lower) or math.isfinite(upper)
    limited = root["limitStiffness"] > 0.0 and bounded
    values["limited"] = "true" if limited else "false"
    if bounded and not limited:
        diag.add("PhysX tendon limits without a limit stiffness (physxTendon:<name>:limitStiffness, fallback 0): "
                 "they exert no force, as in PhysX (its limit is a spring of that stiffness)", tendon)  # fmt: skip
    if not limited:
        return values, None
    values["range:min"] = lower - offset if math.isfinite(lower) else -UNBOUNDED
    values["range:max"] = upper - offset if math.isfinite(upper) else UNBOUNDED
    return values, (root["limitStiffness"], root["damping"])


def _resolved(result, prim, kind, instance, ctx) -> dict:
    """A tendon API instance's values by attribute name (the resolver's: explain and check know them)."""
    table = props.physx_tendon_properties(kind, instance)
    got = result.resolver.resolve_all(prim, table, ctx)
    return {p.name.rsplit(":", 1)[1]: got[p.name].value for p in table}


# ---------------------------------------------------------------- fixed tendons
def _fixed_tendons(builder, prims, result, ctx) -> list:
    diag = result.diagnostics
    roots, axes = [], defaultdict(list)  # (prim, instance); instance -> [(prim, joint index)]
    for prim in prims:
        path = str(prim.GetPath())
        j = result.joint_index.get(path)
        for instance in set(instances(prim, FIXED_AXIS)) | set(instances(prim, FIXED_ROOT)):
            if j is None or builder.joint_type[j] not in (JointType.REVOLUTE, JointType.PRISMATIC):
                diag.add("PhysX fixed tendon axes on a joint that is not a simulated revolute or prismatic joint: "
                         "their tendons leave them out (as PhysX does)", label(path, instance))  # fmt: skip
                continue
            axes[instance].append((prim, j))
        roots += [(prim, instance) for instance in instances(prim, FIXED_ROOT)]
    entries = []
    for prim, instance in roots:
        path = str(prim.GetPath())
        tendon = label(path, instance)
        root = _resolved(result, prim, "fixed_root", instance, ctx)
        if not root["tendonEnabled"]:
            diag.add("PhysX tendons disabled (physxTendon:<name>:tendonEnabled = false): not simulated", tendon)
            continue
        members = _connected(builder, prim, axes[instance], tendon, diag)
        if members is None:
            continue
        wrap, coef, ratios = [], [], []
        for axis_prim, j in members:
            angular = builder.joint_type[j] == JointType.REVOLUTE
            values = _resolved(result, axis_prim, "axis", instance, ctx.of_kind(angular))
            wrap.append(str(axis_prim.GetPath()))
            coef.append(values["gearing"])
            if values["gearing"] != 0.0:
                ratios.append(values["forceCoefficient"] / abs(values["gearing"]))
        scale = float(np.mean(ratios)) if ratios else 0.0
        if scale <= 0.0:
            diag.add("PhysX fixed tendons whose force coefficients push away from their rest length (or whose "
                     "gearings are all zero): not built", tendon)  # fmt: skip
            continue
        values, gains = _spring_and_limits(root, root["offset"], root["restLength"], root["lowerLimit"],
                                           root["upperLimit"], tendon, diag)  # fmt: skip
        forceless = root["stiffness"] == 0.0 and root["damping"] == 0.0 and gains is None
        if max(ratios) - min(ratios) > 1e-6 * scale and not forceless:  # (a tendon without force pulls no joint)
            diag.add("PhysX fixed tendons whose forceCoefficient is not one multiple of |gearing| on every axis: "
                     "MuJoCo pulls each joint by its gearing times the tendon's force (simulated with their mean "
                     "ratio)", tendon)  # fmt: skip
        values.update({"stiffness": root["stiffness"] * scale, "damping": root["damping"] * scale,
                       "path:coef": coef})  # fmt: skip
        if gains is not None:
            gains = (gains[0] * scale, gains[1] * scale)
        builder.element_names[tendon] = instance
        entries.append(_entry(tendon, "fixed", wrap, values, gains))
    return entries


def _connected(builder, root_prim, axes, tendon, diag):
    """The axes of a fixed tendon reached from its root's joint through the links they share (PhysX's tendon follows
    the articulation from the root), root first; None when the root's own axis is not simulated."""
    by_joint = {j: prim for prim, j in axes}
    root = next((j for prim, j in axes if prim == root_prim), None)
    if root is None:
        return None  # (said where the axis was dropped)
    bodies_of = {j: {builder.joint_parent[j], builder.joint_child[j]} - {-1} for j in by_joint}
    seen, order, queue = {root}, [], deque([root])
    while queue:
        j = queue.popleft()
        order.append(j)
        for k in by_joint:
            if k not in seen and bodies_of[k] & bodies_of[j]:
                seen.add(k)
                queue.append(k)
    for j in sorted(set(by_joint) - seen):
        diag.add("PhysX fixed tendon axes not joined to their root's joint through links of the articulation: left "
                 "out (as PhysX leaves them)", label(str(by_joint[j].GetPath()), tendon.rsplit(":", 1)[1]))  # fmt: skip
    return [(by_joint[j], j) for j in order]


# ---------------------------------------------------------------- spatial tendons
def _spatial_tendons(builder, prims, result, frame, ctx) -> list:
    diag = result.diagnostics
    nodes = {}  # (prim path, instance) -> (prim, kind, attachment values)
    for prim in prims:
        path = str(prim.GetPath())
        kinds = {i: "regular" for i in instances(prim, SPATIAL)}
        kinds.update({i: "root" for i in instances(prim, SPATIAL_ROOT)})
        kinds.update({i: "leaf" for i in instances(prim, SPATIAL_LEAF)})
        for instance, kind in kinds.items():
            values = _resolved(result, prim, "attachment", instance, ctx)
            rel = prim.GetRelationship(f"physxTendon:{instance}:parentLink")
            targets = rel.GetTargets() if rel else []
            if targets:
                result.resolver.used.add((path, rel.GetName()))
            values["parent"] = (str(targets[0]), values["parentAttachment"]) if targets else None
            nodes[path, instance] = (prim, kind, values)
    entries, sites = [], {}
    for key, (prim, kind, values) in nodes.items():
        if kind != "leaf":
            continue
        tendon = label(*key)
        chain = _chain(nodes, key)
        if chain is None:
            diag.add("PhysX spatial tendon leaves not joined to a root attachment through their parents "
                     "(parentLink, parentAttachment): not built", tendon)  # fmt: skip
            continue
        root_prim, _, _ = nodes[chain[0]]
        root = _resolved(result, root_prim, "spatial_root", chain[0][1], ctx)
        if not root["tendonEnabled"]:
            diag.add("PhysX tendons disabled (physxTendon:<name>:tendonEnabled = false): not simulated", tendon)
            continue
        gearings = [nodes[k][2]["gearing"] for k in chain[1:]]
        if min(gearings) <= 0.0:
            diag.add("PhysX spatial tendon attachments with a gearing <= 0: their tendons are not built (MuJoCo "
                     "weights a segment by a pulley's positive divisor)", tendon)  # fmt: skip
            continue
        wrap = [_site(builder, nodes[k], k, sites, result, frame) for k in chain]
        leaf = _resolved(result, prim, "leaf", key[1], ctx)
        values, gains = _spring_and_limits(root, root["offset"], leaf["restLength"], leaf["lowerLimit"],
                                           leaf["upperLimit"], tendon, diag)  # fmt: skip
        values.update({"stiffness": root["stiffness"], "damping": root["damping"]})
        if any(g != 1.0 for g in gearings):  # each segment a pulley branch [parent, child] of divisor 1 / gearing
            n = len(gearings)
            values["path:indices"] = [i for s in range(n) for i in (s, s + 1)]
            values["path:segments"] = [s for s in range(n) for _ in range(2)]
            values["path:divisors"] = [1.0 / g for g in gearings]
        builder.element_names[tendon] = key[1]
        entries.append(_entry(tendon, "spatial", wrap, values, gains))
    return entries


def _chain(nodes, leaf) -> list | None:
    """The attachments from the root to ``leaf`` (keys of ``nodes``); None when a parent is missing or they loop."""
    chain, key = [leaf], leaf
    while nodes[key][1] != "root":
        parent = nodes[key][2]["parent"]
        if parent not in nodes or parent in chain:
            return None
        chain.append(parent)
        key = parent
    return chain[::-1]


def _site(builder, node, key, sites, result, frame) -> str:
    """The site of an attachment (added once): at ``localPos`` in its prim's frame, on its body (or the world)."""
    name = label(*key)
    if name in sites:
        return name
    prim, _, values = node
    xf = UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    world = np.array(xf.Transform(Gf.Vec3d(*values["localPos"])), dtype=np.float64)
    pos, rot = frame.world_pose_to_sim(world, np.array([0.0, 0.0, 0.0, 1.0]))
    body = result.body_index.get(str(prim.GetPath()), -1)
    if body >= 0:
        pos, rot = transform_multiply(transform_inverse(builder.body_q[body]), (pos, rot))
    sites[name] = builder.add_site(body, (pos, rot), geo_type=GeoType.SPHERE, size=(SITE_SIZE, 0.0, 0.0), label=name)
    return name
