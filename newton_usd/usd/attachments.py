"""Deformables tied to the scene: ``PhysicsAttachment`` prims of the AOUSD deformable proposal, as Newton 1.8 reads
them (its ``utils/import_usd_deformable_attachments.py``, ``_import_particle_attachment``).

A ``PhysicsAttachment`` whose ``physics:src0`` is an imported cloth or soft volume, ``physics:type0 = "point"``
(``physics:indices0``: the simulation mesh's points) and ``physics:type1 = "xform"`` ties each of those points to the
anchor ``physics:coords1[i]`` in the frame of ``physics:src1`` (unauthored: its origin):

- ``src1`` a rigid body or a prim under one: the point is tied to that body (Newton's particle-body attachment,
  hard where ``physics:stiffness`` is unauthored or ``inf``, else a spring of that stiffness and
  ``physics:damping``), as Newton 1.8 imports it;
- ``src1`` the world (no target, or ``/``) or a prim in no rigid body: the point is pinned at the anchor (moved
  there, then fixed: no inverse mass, Newton's fixed particle). Newton 1.8's import drops these ties (it says "not
  supported"); its examples pin cloth so. A compliant (finite stiffness) tie to the world is not simulated: said.

``physics:attachmentEnabled = false``: a body tie is kept, switched off (as Newton); a world pin is not made.
Stiffness and damping are read in stage units (force/distance, force*time/distance) and turned into SI.

Attachments of cables (``BasisCurves``) are another module's; ``type0``/``type1`` other than point/xform, and
``src0`` not a deformable of this scene, are said once, naming the prims. Bad input (an index out of range,
``coords1`` not one per index, a negative or NaN stiffness or damping, a target that is not a prim) is a one-line
:class:`~newton_usd.errors.UsdInputError`.
"""

from __future__ import annotations

import math

import numpy as np
from pxr import Usd, UsdGeom

from ..core.deformables import Attachment
from ..core.quat import quat_rotate
from ..errors import UsdInputError
from .stage import authored_value

TIME = Usd.TimeCode.Default()


def first_target(prim, name):
    """The first target of relationship ``name`` (None: none; ``"/"``: the world)."""
    rel = prim.GetRelationship(name)
    targets = rel.GetForwardedTargets() if rel else []
    if not targets:
        return None
    return str(targets[0])


def deformable_of(builder, deformables, path):
    """The imported cloth or volume record (:class:`~newton_usd.core.deformables.Cloth`,
    :class:`~newton_usd.core.deformables.Volume`) of prim ``path``: its simulation prim or its body prim; or None."""
    path = deformables.bodies.get(path, path)
    if path not in deformables.simulated:
        return None
    return next((d for d in (*builder.cloth, *builder.volumes) if d.label == path), None)


def import_attachments(builder, stage, prims, frame, file, result) -> None:
    """Read the ``PhysicsAttachment`` prims ``prims`` (see the module) onto the imported deformables' records
    (``links.attachments``), pinning world-tied points in ``builder``."""
    deformables, diag = result.deformables, result.diagnostics
    for prim in prims:
        path = str(prim.GetPath())
        src0 = first_target(prim, "physics:src0")
        record = deformable_of(builder, deformables, src0)
        if record is None:
            sim = deformables.bodies.get(src0, src0)
            if sim in deformables.not_imported or sim in getattr(deformables, "cables", ()):
                continue  # (a cable's attachments are read with the cables: not this module's)
            if sim not in deformables.elsewhere:
                diag.add(f"physics:src0 {src0 or '(none)'} is not a cloth or soft volume of this scene: the "
                         "attachment is not simulated", path)  # fmt: skip
            continue
        type0 = str(authored_value(prim, "physics:type0") or "")
        type1 = str(authored_value(prim, "physics:type1") or "")
        if type0 != "point" or type1 != "xform":
            diag.add(f"attachments of type0 {type0 or '(none)'} to type1 {type1 or '(none)'} are not simulated "
                     "(a cloth's or volume's points to an xform are)", path)  # fmt: skip
            continue
        first, end = builder.particle_groups[record.label]
        indices = np.asarray(authored_value(prim, "physics:indices0") or [], dtype=np.int64).reshape(-1)
        bad = (indices < 0) | (indices >= end - first)
        if bad.any():
            i = int(np.argmax(bad))
            raise UsdInputError(f"index {i} is {indices[i]}, out of range: {record.label} has {end - first} points",
                                file=file, prim=path, attribute="physics:indices0")  # fmt: skip
        if len(indices) == 0:
            diag.add("no physics:indices0: the attachment ties nothing", path)
            continue
        if authored_value(prim, "physics:indices1"):
            raise UsdInputError("an xform target takes no indices", file=file, prim=path, attribute="physics:indices1")
        coords = authored_value(prim, "physics:coords1")
        coords = np.zeros((len(indices), 3)) if not coords else np.asarray(coords, dtype=np.float64).reshape(-1, 3)
        if len(coords) != len(indices):
            raise UsdInputError(f"{len(coords)} anchors for {len(indices)} points: one per physics:indices0 entry",
                                file=file, prim=path, attribute="physics:coords1")  # fmt: skip
        if not np.all(np.isfinite(coords)):
            raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute="physics:coords1")
        stiffness, damping = _gains(prim, frame, file, path)
        enabled = authored_value(prim, "physics:attachmentEnabled")
        enabled = True if enabled is None else bool(enabled)
        src1 = first_target(prim, "physics:src1")
        world = _anchors_in_world(stage, src1, coords, file, path)  # (stage units and axes)
        body_path = _body_of(stage, src1, result.body_index) if src1 not in (None, "/") else None
        if body_path is not None:  # (the anchors in the body's frame: its origin and axes, not its scale)
            m = np.array(UsdGeom.Xformable(stage.GetPrimAtPath(body_path)).ComputeLocalToWorldTransform(TIME))
            axes = m[:3, :3] / np.linalg.norm(m[:3, :3], axis=1, keepdims=True)
            local = frame.meters_per_unit * ((world - m[3, :3]) @ axes.T)
            body = result.body_index[body_path]
            record.links.attachments.append(Attachment(path, indices, body, local, stiffness, damping, enabled))
            continue
        if not enabled:
            continue
        if math.isfinite(stiffness):
            diag.add("a compliant attachment (finite physics:stiffness) to the world or a static prim is not "
                     "simulated (a hard one pins its points)", path)  # fmt: skip
            continue
        world = frame.meters_per_unit * quat_rotate(frame.rotation, world)
        particles = indices + first
        radius = np.asarray(builder.particle_radius)[particles]
        moved = np.linalg.norm(np.asarray(builder.particle_q)[particles] - world, axis=1)
        if np.any(moved > np.maximum(radius, 1e-6)):
            diag.add(f"pins points up to {moved.max():.3g} m from where they are authored: they are moved onto "
                     "their anchors (physics:coords1)", path)  # fmt: skip
        for i, p in zip(particles.tolist(), world.tolist(), strict=True):
            builder.particle_q[i] = p
            builder.particle_qd[i] = [0.0, 0.0, 0.0]
            builder.particle_mass[i] = 0.0
        record.links.attachments.append(Attachment(path, indices, -1, world, stiffness, damping, True))


def _gains(prim, frame, file, path):
    """(stiffness N/m, inf: hard; damping N*s/m) of an attachment, from stage units."""
    out = []
    for name, fallback in (("physics:stiffness", math.inf), ("physics:damping", 0.0)):
        value = authored_value(prim, name)
        v = fallback if value is None else float(value)
        if math.isnan(v) or v < 0 or (name == "physics:damping" and not math.isfinite(v)):
            need = "at least 0 (inf: hard)" if name == "physics:stiffness" else "finite and at least 0"
            raise UsdInputError(f"must be {need}, got {value}", file=file, prim=path, attribute=name)
        out.append(v * frame.kilograms_per_unit)
    return out[0], out[1]


def _anchors_in_world(stage, src1, coords, file, path):
    """The anchors ``coords`` (in ``src1``'s frame; None or ``/``: the world's) as world points, stage units."""
    if src1 in (None, "/"):
        return coords
    target = stage.GetPrimAtPath(src1)
    if not target:
        raise UsdInputError(f"names {src1}, which is not a prim", file=file, prim=path, attribute="physics:src1")
    m = np.array(UsdGeom.XformCache(TIME).GetLocalToWorldTransform(target))
    return coords @ m[:3, :3] + m[3, :3]


def _body_of(stage, path, body_index):
    """The rigid body (its path in ``body_index``) that ``path`` is or is under, or None."""
    prim = stage.GetPrimAtPath(path)
    while prim and not prim.IsPseudoRoot():
        p = str(prim.GetPath())
        if p in body_index:
            return p
        prim = prim.GetParent()
    return None
