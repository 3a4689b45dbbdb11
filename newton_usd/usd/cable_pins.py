"""A cable's points held by hard ``PhysicsAttachment`` prims to the world or a body, as Newton 1.8's importer lowers
them (its ``_read_cable_articulation_root`` and ``_deformable_import_attachments``).

An attachment with ``physics:src0`` a cable (or its body prim), ``type0 = "point"``, ``type1 = "xform"``, no
``indices1``, ``coords1`` one per ``indices0`` point (none: each at the target's origin), hard (``physics:stiffness``
unauthored or inf) holds each point at its anchor in ``physics:src1``'s frame (none: the world; a rigid body or a prim
in one: that body). Where it is the only attachment touching an open one-curve cable and holds one end point, it is
the chain's root: a ball joint from which the chain hangs (:func:`root`). Any other holds each point by a ball joint
from the target to the point's incoming segment end (the segment before it; point 0 of an open curve: the first
segment's start), which closes a loop through the cable's own root (left out of the articulation, :func:`hold`).
A ``segment`` site (``type0 = "segment"``, ``coords0`` one ``(u, s, t)`` per segment) is held the same way at the
point ``(-t, s, (0.5 - u) L)`` of its segment's body (L its rest length; +Z along the segment, +Y its normal), as
Newton places it; never a root. Compliant attachments and targets other than xforms are said, not simulated (as
Newton).
"""

from __future__ import annotations

import math

import numpy as np
from pxr import Usd, UsdGeom

from ..core.quat import quat_rotate, transform_inverse, transform_multiply
from ..core.types import JointType
from ..errors import UsdInputError
from .stage import authored_value

TIME = Usd.TimeCode.Default()
_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


def not_a_hold(prim, file) -> str | None:
    """Why the attachment ``prim`` of a cable holds none of its points ("" where it is disabled), None where it
    does (see the module)."""
    enabled = authored_value(prim, "physics:attachmentEnabled")
    if enabled is not None and not bool(enabled):
        return ""
    types = str(authored_value(prim, "physics:type0") or ""), str(authored_value(prim, "physics:type1") or "")
    if types not in (("point", "xform"), ("segment", "xform")):
        return f"type0 {types[0] or '(none)'} to type1 {types[1] or '(none)'} (a cable's point or segment to an " \
               "xform is)"  # fmt: skip
    indices = authored_value(prim, "physics:indices0") or []
    if not len(indices) or authored_value(prim, "physics:indices1"):
        return "physics:indices0 names no site, or physics:indices1 is authored (a site to an xform names none)"
    coords0 = authored_value(prim, "physics:coords0") or []
    if types[0] == "segment" and len(coords0) != len(indices):
        return f"{len(coords0)} physics:coords0 for {len(indices)} segment sites (one (u, s, t) each)"
    coords = authored_value(prim, "physics:coords1")
    if coords and len(coords) != len(indices):
        return f"{len(coords)} physics:coords1 anchors for {len(indices)} points"
    stiffness = authored_value(prim, "physics:stiffness")
    if stiffness is not None and float(stiffness) != math.inf:
        if math.isnan(float(stiffness)) or float(stiffness) < 0:
            raise UsdInputError(f"must be at least 0 (inf: hard), got {stiffness}", file=file,
                                prim=str(prim.GetPath()), attribute="physics:stiffness")  # fmt: skip
        return "a compliant attachment (finite physics:stiffness)"
    return None


def is_root(prim, record, touching: int) -> bool:
    """Whether the holding attachment ``prim`` roots the chain of the cable ``record``
    (:class:`~newton_usd.usd.cable_graphs.CurvesRecord`): the only attachment ``touching`` it, one end point of its
    one open curve."""
    indices = [int(i) for i in authored_value(prim, "physics:indices0")]
    n = len(record.pos)
    point = str(authored_value(prim, "physics:type0")) == "point"
    one_curve = len(record.counts) == 1 and not record.closed
    return touching == 1 and point and one_curve and len(indices) == 1 and indices[0] in (0, n - 1)


def _anchors(pin, frame, file, body_index, builder) -> list:
    """Per point the attachment ``pin`` holds: (point, parent body (-1: the world), anchor in the parent's frame (m),
    anchor in the world (m))."""
    path = str(pin.GetPath())
    indices = [int(i) for i in authored_value(pin, "physics:indices0")]
    coords = authored_value(pin, "physics:coords1")
    local = np.zeros((len(indices), 3)) if not coords else np.asarray(coords, dtype=np.float64).reshape(-1, 3)
    rel = pin.GetRelationship("physics:src1")
    targets = [str(t) for t in (rel.GetForwardedTargets() if rel else [])]
    target = targets[0] if targets else "/"
    parent, world = -1, local
    if target != "/":
        target_prim = pin.GetStage().GetPrimAtPath(target)
        if not target_prim:
            raise UsdInputError(f"names {target}, which is not a prim", file=file, prim=path,
                                attribute="physics:src1")  # fmt: skip
        m = np.array(UsdGeom.XformCache(TIME).GetLocalToWorldTransform(target_prim))
        world = local @ m[:3, :3] + m[3, :3]
        up = target_prim
        while up and not up.IsPseudoRoot() and str(up.GetPath()) not in body_index:
            up = up.GetParent()
        parent = body_index.get(str(up.GetPath()), -1) if up else -1
    world = frame.meters_per_unit * quat_rotate(frame.rotation, world)
    out = []
    for i, w in zip(indices, world, strict=True):
        anchor = w
        if parent >= 0:  # (the anchor in the body's frame)
            anchor = transform_multiply(transform_inverse(builder.body_q[parent]), (w, _IDENTITY))[0]
        out.append((i, parent, anchor, w))
    return out


def root(pin, record, frame, file, body_index, builder, diag) -> tuple:
    """The ``root`` of :func:`~newton_usd.core.cables.add_cable_curve` from the rooting attachment ``pin`` (see
    :func:`is_root`): (end point, parent body, anchor in the parent's frame (m), joint label)."""
    ((index, parent, anchor, world),) = _anchors(pin, frame, file, body_index, builder)
    pos = record.pos
    moved = float(np.linalg.norm(world - pos[index]))
    if moved > 1e-6 + 1e-4 * float(np.linalg.norm(pos[1] - pos[0])):
        diag.add(f"pins its point {moved:.3g} m from where the cable's end is authored: the end hangs from the "
                 "anchor (physics:coords1)", str(pin.GetPath()))  # fmt: skip
    return index, parent, anchor, f"{pin.GetPath()}_site0"


def hold(builder, cable, pin, frame, file, body_index, diag) -> list:
    """Ball joints holding the points ``pin`` names of ``cable`` (:class:`~newton_usd.core.cables.Cable`) at their
    anchors (see the module), in the builder and in no articulation; returns them."""
    joints = []
    segment = str(authored_value(pin, "physics:type0")) == "segment"
    coords0 = authored_value(pin, "physics:coords0") or []
    for site, (index, parent, anchor, _) in enumerate(_anchors(pin, frame, file, body_index, builder)):
        count = len(cable.bodies) if segment else len(cable.point_bodies)
        if not 0 <= index < count:
            diag.add(f"names {'segment' if segment else 'point'} {index}, which the cable has not: not held",
                     str(pin.GetPath()))  # fmt: skip
            continue
        if segment:  # ((u, s, t): along the segment from its end, across it along its +Y, and its -X)
            u, s_, t = (float(c) for c in coords0[site])
            body = int(cable.bodies[index])
            local = np.array([-t * frame.meters_per_unit, s_ * frame.meters_per_unit,
                              (0.5 - u) * float(cable.segment_length[index])])  # fmt: skip
        else:
            body = int(cable.point_bodies[index][0])
            local = np.array([0.0, 0.0, float(cable.point_offsets[index][0])])
        x_p, x_c = (np.asarray(anchor, dtype=np.float64), _IDENTITY), (local, _IDENTITY)
        j = builder.add_joint(JointType.BALL, int(parent), body, x_p, x_c, label=f"{pin.GetPath()}_site{site}")
        parent_q = builder.body_q[parent] if parent >= 0 else (np.zeros(3), _IDENTITY)
        rel = transform_multiply(transform_inverse(transform_multiply(parent_q, x_p)),
                                 transform_multiply(builder.body_q[body], x_c))  # fmt: skip
        builder.joint_q[j] = rel[1] / np.linalg.norm(rel[1])
        joints.append(j)
    return joints
