"""What must not collide: FilteredPairsAPI pairs, joints with ``physics:collisionEnabled = false`` (their two sides,
a static collider or a disabled body on one side included), the bodies of
an articulation whose self collisions are off (``newton:selfCollisionEnabled``,
``physxArticulation:enabledSelfCollisions``) and CollisionGroups (as MuJoCo contype/conaffinity bits).
"""

from __future__ import annotations

import re

from pxr import Sdf, UsdPhysics

from . import properties as props
from .descriptors import OT, SHAPE_TYPES
from .scenes import JOINT_OBJECT_TYPES

MAX_COLLISION_GROUPS = 31
"""Collision groups become contype/conaffinity bits (bit 0: shapes in no group)."""
INERT_GROUPS = (
    "collision groups that filter nothing (no filteredGroups of theirs or naming them): by UsdPhysics their "
    "colliders collide with every collider"
)
"""The diagnostic of a PhysicsCollisionGroup that changes no collision (Newton's kamino cartpole groups its rail,
cart and pole so: its cart's box, authored around the static rail, collides with it)."""


def import_collision_filters(builder, stage, descs, result):
    """What must not collide: FilteredPairsAPI on bodies and colliders (body pairs; a body and a static
    collider: a body-shape pair), joints with collisionEnabled = false (their bodies; a side that is a static
    collider or a disabled body: the other body against its colliders), every pair of bodies of an
    articulation whose root turns its self collisions off (:func:`_articulation_pairs`), and CollisionGroups
    with their filteredGroups (as contype/conaffinity bits in ``model.mujoco.geom_contype``/``geom_conaffinity``)."""
    diag = result.diagnostics
    body_of_path = result.body_index
    shape_body = builder.shape_body
    pairs, static_pairs = set(), set()

    def body_for(path):
        p = str(path)
        if p in body_of_path:
            return body_of_path[p]
        s = result.shape_index.get(p)
        return shape_body[s] if s is not None else None

    for obj_type in (OT.RigidBody,) + SHAPE_TYPES:
        for path, d in descs.get(obj_type, []):
            if not d.filteredCollisions:
                continue
            a = body_for(path)
            if obj_type != OT.RigidBody and str(path) not in body_of_path and a is not None and a >= 0:
                diag.add("collider-level filtered pairs are applied to the colliders' bodies", path)
            for other in d.filteredCollisions:
                b = body_for(other)
                if a is None or b is None or a == b:
                    continue
                if min(a, b) < 0:  # a body and a static collider (or two static colliders: nothing to do)
                    body, static = (a, other) if b < 0 else (b, path)
                    shape = result.shape_index.get(str(static))
                    if body >= 0 and shape is not None:
                        static_pairs.add((body, shape))
                    continue
                pairs.add((min(a, b), max(a, b)))
    static_of = _static_sides(builder, descs, result)
    for joint_type in JOINT_OBJECT_TYPES:
        for path, d in descs.get(joint_type, []):
            if d.collisionEnabled or not d.jointEnabled:
                continue
            body0, body1 = d.body0, d.body1
            a, b = body_for(body0) if not body0.isEmpty else -1, body_for(body1) if not body1.isEmpty else -1
            if a is not None and b is not None and a != b and min(a, b) >= 0:
                pairs.add((min(a, b), max(a, b)))
                continue
            # A side that is a static collider (or a disabled rigid body) is one of the joint's bodies, as PhysX
            # takes it: the other side's body does not collide with its colliders.
            for body, which in ((a, 1), (b, 0)):
                if body is not None and body >= 0:
                    static = _joint_target(stage, path, d, which)
                    static_pairs.update((body, s) for s in static_of.get(static, ()))
    pairs |= _articulation_pairs(stage, descs, result, body_for)
    builder.body_collision_filter_pairs.extend(sorted(pairs))
    builder.body_shape_collision_filter_pairs.extend(sorted(static_pairs))

    _collision_groups(builder, stage, descs, result)


def _static_sides(builder, descs, result) -> dict:
    """The static colliders a joint target that is no simulated body stands for: prim path -> shape indices. A
    static collider stands for itself (its parts, for a decomposed mesh), a disabled rigid body for its colliders
    (static at its pose; USD's parser leaves their body, and the joint's target, empty)."""
    out = {}
    shape_body = builder.shape_body
    disabled = {str(p) for p, d in descs.get(OT.RigidBody, []) if not d.rigidBodyEnabled}
    for label, idx in result.shape_index.items():
        if shape_body[idx] >= 0:
            continue
        path = _PART.sub("", label)
        out.setdefault(path, []).append(idx)
        if disabled and Sdf.Path.IsValidPathString(path):
            owner = next((str(p) for p in reversed(Sdf.Path(path).GetPrefixes()) if str(p) in disabled), None)
            if owner is not None and owner != path:
                out.setdefault(owner, []).append(idx)
    return out


def _joint_target(stage, path, d, which) -> str | None:
    """The prim path a joint's ``physics:body0``/``body1`` names (USD's parser empties a target that is a disabled
    rigid body); None when it names none."""
    target = d.body0 if which == 0 else d.body1
    if not target.isEmpty:
        return str(target)
    targets = stage.GetPrimAtPath(path).GetRelationship(f"physics:body{which}").GetForwardedTargets()
    return str(targets[0]) if targets else None


_PART = re.compile(r":part\d+$")  # a convex part of a decomposed mesh collider (see colliders.import_shape)


def _articulation_pairs(stage, descs, result, body_for) -> set:
    """The body pairs of each articulation whose root prim (ArticulationRootAPI) authors its self collisions off,
    as Newton's and PhysX's importers filter them (UsdPhysics has no such attribute; MuJoCo, which collides no
    parent with its child anyway, gets them as excludes)."""
    pairs = set()
    for path, d in descs.get(OT.Articulation, []):
        if result.resolver.resolve(stage.GetPrimAtPath(path), props.ARTICULATION_SELF_COLLISION, path=path).value:
            continue
        bodies = sorted({b for b in (body_for(p) for p in d.articulatedBodies) if b is not None and b >= 0})
        pairs.update((a, b) for i, a in enumerate(bodies) for b in bodies[i + 1 :])
    return pairs


def _collision_groups(builder, stage, descs, result) -> None:
    """CollisionGroups with their filteredGroups, as contype/conaffinity bits."""
    diag = result.diagnostics
    groups = descs.get(OT.CollisionGroup, [])
    if not groups:
        return
    # Merged groups share one bit.
    key_of = {}
    for path, d in groups:
        key_of[str(path)] = d.mergeGroupName or str(path)
    keys = sorted(set(key_of.values()))
    if len(keys) > MAX_COLLISION_GROUPS:
        for path, _ in groups:
            diag.add(f"more than {MAX_COLLISION_GROUPS} collision groups: collision groups are ignored", path)
        return
    bit = {k: 1 << (i + 1) for i, k in enumerate(keys)}
    all_bits = (1 << (len(keys) + 1)) - 1
    # Filtering is symmetric: A filtering B keeps B's colliders off A's too. An inverted group collides with the
    # groups it lists only: "all colliders except for those in the selected filter groups" are filtered, those in
    # no group (bit 0) among them.
    filtered_with = {k: set() for k in keys}
    named, inverted = set(), set()
    for path, d in groups:
        k = key_of[str(path)]
        listed = {key_of[str(g)] for g in d.filteredGroups if str(g) in key_of}
        named |= listed
        # Read from the prim: USD 26.11's parser reports invertFilteredGroups as true when unauthored.
        if UsdPhysics.CollisionGroup(stage.GetPrimAtPath(path)).GetInvertFilteredGroupsAttr().Get():
            inverted.add(k)
        for other in (set(keys) - listed) if k in inverted else listed:
            filtered_with[k].add(other)
            filtered_with[other].add(k)
    for path, _ in groups:  # by UsdPhysics, such a group's colliders collide with every collider, as if in none
        k = key_of[str(path)]
        if not filtered_with[k] and k not in named and k not in inverted:
            diag.add(INERT_GROUPS, path)
    affinity = {k: all_bits & ~sum(bit[o] for o in filtered_with[k]) & ~(1 if k in inverted else 0) for k in keys}
    for obj_type in SHAPE_TYPES:
        for path, d in descs.get(obj_type, []):
            idx = result.shape_index.get(str(path))
            if idx is None or not d.collisionGroups:
                continue
            member = [key_of[str(g)] for g in d.collisionGroups if str(g) in key_of]
            if not member:
                continue
            if len(member) > 1:
                diag.add("colliders in several collision groups: filtered only where all their groups agree", path)
            contype, conaffinity = 0, all_bits
            for k in member:
                contype |= bit[k]
                conaffinity &= affinity.get(k, all_bits)
            builder.set_mujoco("shape", "geom_contype", idx, contype)
            builder.set_mujoco("shape", "geom_conaffinity", idx, conaffinity)
