"""Worlds: :meth:`ModelBuilder.replicate` copies everything a builder holds into N independent worlds,
each optionally placed at its own transform and labelled with its own labels."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np

from .elements import EQUALITY_KINDS, IDENTITY, to_pose
from .quat import (
    quat_rotate,
    transform_inverse,
    transform_multiply,
)
from .types import JointType

_SCALARS = (int, float, bool, str, type(None), np.generic)


def _fresh(value):
    """A copy of one element's value for another world: arrays copied, scalars shared (much cheaper than
    ``copy.deepcopy`` for the common types)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, tuple):
        return tuple(_fresh(v) for v in value)
    return copy.deepcopy(value)


def _kind_of(tables, name):
    return next(kind for kind, names in tables.items() if name in names)


# Every per-element list, by the element kind that indexes it. replicate() copies each of them, so
# a list added to ModelBuilder.__init__ must be listed here (replicate checks).
ELEMENT_LISTS = {
    "body": (
        "body_q", "body_qd", "body_label", "body_mass", "body_com", "body_inertia", "_body_mass_explicit",
        "body_kinematic", "body_max_velocity",
    ),
    "shape": (
        "shape_body", "shape_type", "shape_transform", "shape_scale", "shape_source", "shape_label",
        "shape_collision_enabled", "shape_material_mu", "shape_material_restitution",
        "shape_material_mu_torsional", "shape_material_mu_rolling", "shape_margin", "shape_gap", "shape_sdf",
    ),
    "joint": (
        "joint_type", "joint_parent", "joint_child", "joint_label", "joint_X_p", "joint_X_c", "joint_q",
        "joint_qd", "joint_dof_dim", "joint_articulation",
    ),
    "dof": (
        "joint_axis", "joint_limit_lower", "joint_limit_upper", "joint_limited", "joint_target_ke",
        "joint_target_kd", "joint_target_mode", "joint_target_pos", "joint_target_vel", "joint_effort_limit",
        "joint_armature", "joint_friction", "joint_drive_acceleration", "joint_limit_ke", "joint_limit_kd",
    ),
    "articulation": ("articulation_label",),
    "pair": ("body_collision_filter_pairs",),
    "body_shape_pair": ("body_shape_collision_filter_pairs",),
    "site": ("site_body", "site_transform", "site_type", "site_size", "site_label"),
    "equality": (
        "equality_type", "equality_body1", "equality_body2", "equality_anchor", "equality_active",
        "equality_label", "equality_relpose", "equality_anchor2", "equality_joint1", "equality_joint2",
        "equality_polycoef",
    ),
    "distance": (
        "distance_body0", "distance_body1", "distance_anchor0", "distance_anchor1", "distance_min",
        "distance_max", "distance_label",
    ),
    "actuator": ("actuator_joint", "actuator_spec", "actuator_label"),
}  # fmt: skip

BODY_REFS = (
    "shape_body", "joint_parent", "joint_child", "site_body", "equality_body1", "equality_body2",
    "distance_body0", "distance_body1",
)  # fmt: skip

JOINT_REFS = ("equality_joint1", "equality_joint2", "actuator_joint")

PARTICLE_LISTS = ("particle_q", "particle_qd", "particle_mass", "particle_radius")
"""The per-particle lists, copied world after world with each prim's run (:func:`_replicate_particles`)."""


def replicate(builder, num_worlds: int, *, placements=None, local=None, relabel=None) -> None:
    """The work of :meth:`ModelBuilder.replicate` on ``builder``."""
    n = int(num_worlds)
    if n < 1:
        raise ValueError(f"num_worlds must be >= 1, got {num_worlds}")
    if builder.num_worlds != 1:
        raise ValueError("replicate() was already called on this builder")
    if placements is not None and len(placements) != n:
        raise ValueError(f"placements: {len(placements)} transforms for {n} worlds")
    listed = {name for names in ELEMENT_LISTS.values() for name in names}
    listed |= set(PARTICLE_LISTS) | {"cloth", "volumes"}  # (copied by _replicate_particles)
    listed.add("cables")  # (a cable's segments are bodies and joints: its record copied by _replicate_cables)
    unlisted = [k for k, v in vars(builder).items() if isinstance(v, list) and k not in listed]
    if unlisted:  # a programming error: a new per-element list not taught to replicate()
        raise RuntimeError(f"ModelBuilder.replicate does not know how to copy {unlisted}")
    counts = {kind: len(getattr(builder, names[0])) for kind, names in ELEMENT_LISTS.items()}
    counts["dof"] = len(builder.joint_axis)
    nb, na, nj = counts["body"], counts["articulation"], counts["joint"]
    labels = {kind: f"{kind}_label" for kind in ("body", "shape", "joint", "site", "equality", "distance", "actuator")}
    labels["articulation"] = "articulation_label"
    plan = []  # (list name, its world-0 values, how to copy them)
    for kind, names in ELEMENT_LISTS.items():
        for name in names:
            base = getattr(builder, name)[: counts[kind]]
            if name in BODY_REFS or name in JOINT_REFS or name == "joint_articulation":
                how = "index"
            elif relabel is not None and name in labels.values():
                how = "label"
            elif name in ("shape_source", "shape_sdf", "actuator_spec") or all(isinstance(v, _SCALARS) for v in base):
                how = "share"  # immutable values (meshes, height fields and actuator specs are never edited either)
            else:
                how = "copy"
            plan.append((name, base, how))
    offset = {name: nb if name in BODY_REFS else nj if name in JOINT_REFS else na
              for name in (*BODY_REFS, *JOINT_REFS, "joint_articulation")}  # fmt: skip
    for w in range(1, n):
        for name, base, how in plan:
            values = getattr(builder, name)
            if how == "index":
                k = w * offset[name]
                values.extend(i + k if i >= 0 else i for i in base)
            elif name == "body_collision_filter_pairs":
                values.extend((b1 + w * nb, b2 + w * nb) for b1, b2 in base)
            elif name == "body_shape_collision_filter_pairs":
                values.extend((b + w * nb, s + w * counts["shape"]) for b, s in base)
            elif how == "share":
                values.extend(base)
            elif how == "label":
                values.extend(relabel(label, w) for label in base)
            else:
                values.extend(map(_fresh, base))
    for (kind, _), values in builder.mujoco_elements.items():
        for i, v in list(values.items()):
            for w in range(1, n):
                values[i + w * counts[kind]] = _fresh(v)
    _replicate_particles(builder, n, placements, local, relabel, counts)
    _replicate_cables(builder, n, relabel, counts)
    builder.num_worlds = n
    if placements is not None:
        _place_worlds(builder, placements, local, counts)


def _replicate_particles(builder, n, placements, local, relabel, counts) -> None:
    """World 0's particles (grains, cloth, soft volumes) copied into worlds 1 .. n-1, world after world: their
    values and per-particle attributes, each prim's run (a new label's in ``particle_groups``: an environment's own
    prim; a label kept names world 0's run only, as a body's), its cloth's or volume's record (triangles and
    tetrahedra shared: they are never edited; its links to world w's bodies and colliders), and where they start:
    moved by ``placements[w]`` where ``local``."""
    count = builder.particle_count
    if not count or n == 1:
        return
    is_local = local or (lambda label: True)
    runs = list(builder.particle_groups.items())
    moves = np.zeros(count, dtype=bool)
    for label, (first, end) in runs:
        moves[first:end] = is_local(label)
    q0, qd0 = np.asarray(builder.particle_q, dtype=np.float64), np.asarray(builder.particle_qd, dtype=np.float64)
    records = [*builder.cloth, *builder.volumes]
    for w in range(1, n):
        q, qd = q0, qd0
        if placements is not None and moves.any():
            pos, rot = to_pose(placements[w])
            q, qd = q0.copy(), qd0.copy()
            q[moves] = quat_rotate(rot, q0[moves]) + pos
            qd[moves] = quat_rotate(rot, qd0[moves])
        builder.particle_q.extend(q.tolist())
        builder.particle_qd.extend(qd.tolist())
        for name in ("particle_mass", "particle_radius"):
            getattr(builder, name).extend(getattr(builder, name)[:count])
        for values in builder.particle_attributes.values():
            values.extend(values[:count])
        offset = w * count
        for label, (first, end) in runs:
            builder.particle_groups.setdefault(_name(relabel, label, w), (first + offset, end + offset))
        for record in records:
            moved = placements is not None and is_local(record.label)
            links = _links(record.links, w, counts, to_pose(placements[w]) if moved else None)
            copy_ = dataclasses.replace(record, label=_name(relabel, record.label, w), first=record.first + offset,
                                        links=links)  # fmt: skip
            (builder.cloth if hasattr(record, "triangles") else builder.volumes).append(copy_)


def _replicate_cables(builder, n, relabel, counts) -> None:
    """World 0's cable records (:class:`~newton_usd.core.cables.Cable`) for worlds 1 .. n-1: their segment bodies and
    rod joints are world w's copies (placed with the bodies), their rest rotations shared (never edited)."""
    base = list(builder.cables)
    nb, nj = counts["body"], counts["joint"]
    for w in range(1, n):
        for c in base:
            builder.cables.append(dataclasses.replace(
                c, label=_name(relabel, c.label, w), world=w, bodies=[b + w * nb for b in c.bodies],
                joints=[j + w * nj for j in c.joints], point_bodies=c.point_bodies + w * nb,
            ))  # fmt: skip


def _links(links, w, counts, placement):
    """A deformable's links (:class:`~newton_usd.core.deformables.DeformableLinks`) in world ``w``: its attachments to
    world w's bodies (to the world: their anchors moved by ``placement``, None: kept), its filtered pairs with world
    w's colliders; no graphics meshes (world 0's are written, as its points)."""
    attachments = []
    for a in links.attachments:
        anchors = a.anchors
        if a.body < 0 and placement is not None:
            anchors = quat_rotate(placement[1], np.asarray(a.anchors, dtype=np.float64)) + placement[0]
        body = a.body + w * counts["body"] if a.body >= 0 else a.body
        attachments.append(dataclasses.replace(a, body=body, anchors=anchors))
    filtered = [(points, np.asarray(shapes) + w * counts["shape"]) for points, shapes in links.filtered]
    return dataclasses.replace(links, attachments=attachments, filtered=filtered, graphics=[])


def _name(relabel, label, world):
    return relabel(label, world) if relabel is not None else label


def _place_worlds(builder, placements, local, counts) -> None:
    """Move world w's local elements (copies of world 0's) by ``placements[w]`` (see :meth:`replicate`)."""
    nb, nj = counts["body"], counts["joint"]
    is_local = local or (lambda label: True)
    moved = [is_local(label) for label in builder.body_label[:nb]]

    def moves(b):  # a body index of world 0 (-1: the world)
        return b >= 0 and moved[b]

    world_side = {  # element lists whose world-frame values move: (kind, which rows of world 0)
        "shape_transform": [s for s in range(counts["shape"]) if builder.shape_body[s] < 0
                            and is_local(builder.shape_label[s])],
        "site_transform": [s for s in range(counts["site"]) if builder.site_body[s] < 0
                           and is_local(builder.site_label[s])],
        "joint_X_p": [j for j in range(nj) if builder.joint_parent[j] < 0 and moves(builder.joint_child[j])
                      and builder.joint_type[j] != JointType.FREE],
    }  # fmt: skip
    free = [j for j in range(nj) if builder.joint_type[j] == JointType.FREE and moves(builder.joint_child[j])]
    for w in range(1, builder.num_worlds):
        x = to_pose(placements[w])
        if np.allclose(x[0], 0.0) and np.allclose(np.abs(x[1][3]), 1.0):
            continue
        rot = x[1]
        for b in range(nb):
            if moved[b]:
                i = b + w * nb
                builder.body_q[i] = transform_multiply(x, builder.body_q[i])
                v = builder.body_qd[i]
                builder.body_qd[i] = np.concatenate([quat_rotate(rot, v[:3]), quat_rotate(rot, v[3:])])
        for name, rows in world_side.items():
            values, per = getattr(builder, name), counts[_kind_of(ELEMENT_LISTS, name)]
            for r in rows:
                values[r + w * per] = transform_multiply(x, values[r + w * per])
        for j in free:
            i = j + w * nj
            q = builder.joint_q[i]
            p, r = transform_multiply(x, (q[:3], q[3:]))
            builder.joint_q[i] = np.concatenate([p, r])
            qd = builder.joint_qd[i]
            builder.joint_qd[i] = np.concatenate([quat_rotate(rot, qd[:3]), quat_rotate(rot, qd[3:])])
        _place_constraints(builder, w, x, moves, counts)
        for key in builder.keyframes.values():
            _place_keyframe(key, w, x, free, nj)


def _place_constraints(builder, w, x, moves, counts) -> None:
    """World w's equality and distance constraints to the world: their world-frame anchors and poses."""
    point = lambda p: transform_multiply(x, (p, IDENTITY[1]))[0]  # noqa: E731
    ne = counts["equality"]
    for e in range(ne):
        i = e + w * ne
        b1, b2 = builder.equality_body1[e], builder.equality_body2[e]
        kind = EQUALITY_KINDS[builder.equality_type[e]]
        if kind == "connect":
            if b1 < 0 and moves(b2):
                builder.equality_anchor[i] = point(builder.equality_anchor[i])
            if b2 < 0 and moves(b1) and builder.equality_anchor2[i] is not None:
                builder.equality_anchor2[i] = point(builder.equality_anchor2[i])
        elif kind == "weld":
            relpose = builder.equality_relpose[i]
            if b1 < 0 and moves(b2) and relpose is not None:
                builder.equality_relpose[i] = transform_multiply(x, relpose)
            if b2 < 0 and moves(b1):
                builder.equality_anchor[i] = point(builder.equality_anchor[i])
                if relpose is not None:
                    builder.equality_relpose[i] = transform_multiply(relpose, transform_inverse(x))
    nd = counts["distance"]
    for d in range(nd):
        i = d + w * nd
        b0, b1 = builder.distance_body0[d], builder.distance_body1[d]
        if b0 < 0 and moves(b1):
            builder.distance_anchor0[i] = point(builder.distance_anchor0[i])
        if b1 < 0 and moves(b0):
            builder.distance_anchor1[i] = point(builder.distance_anchor1[i])


def _place_keyframe(key, w, x, free, nj) -> None:
    """A keyframe's free-joint coordinates in world w: world 0's moved by ``x``."""
    for j in free:
        q, qd = (key.joint_q or {}).get(j), (key.joint_qd or {}).get(j)
        if q is not None:
            p, r = transform_multiply(x, (q[:3], q[3:]))
            key.world_joint_q = key.world_joint_q or {}
            key.world_joint_q[j + w * nj] = np.concatenate([p, r])
        if qd is not None:
            key.world_joint_qd = key.world_joint_qd or {}
            key.world_joint_qd[j + w * nj] = np.concatenate([quat_rotate(x[1], qd[:3]), quat_rotate(x[1], qd[3:])])
