"""Deformables that do not collide with given colliders: ``PhysicsElementCollisionFilter`` prims and
``physics:filteredPairs`` (UsdPhysics' FilteredPairsAPI) between a cloth or soft volume and colliders or rigid bodies.

Newton 1.8 reads these filters between cables and colliders (its ``_deformable_import_element_collision_filters``:
groups of elements paired by ``physics:groupElemCounts0/1``, a count of 0 or no counts meaning every element of
that side, a rigid body meaning all its colliders, a collider prim that one shape) and says it cannot filter a
cloth or volume source ("no per-element rigid shapes"). Here a cloth's or volume's side is taken as Newton's
contacts see it, by particles: its group's elements (a cloth's faces, a volume's tetrahedra, as
``physics:groupElemIndices`` number them) give their points, and those points' contacts with the other side's
shapes are dropped (:class:`~newton_usd.core.deformables.DeformableLinks` ``filtered``; under vbd, the collision
pipeline's particle-shape pairs, :mod:`~newton_usd.solvers.newton.deformable_links`).

``physics:filteredPairs`` on a deformable's simulation prim or body prim naming colliders or bodies (or on those
naming the deformable) filters every point of it. ``physics:filterEnabled = false`` filters nothing. A filter
between two deformables (particle contacts between them) is not simulated: said. Groups that do not pair up, counts
that do not add up to the indices, or an element index out of range are a one-line
:class:`~newton_usd.errors.UsdInputError`.
"""

from __future__ import annotations

import numpy as np
from pxr import UsdGeom

from ..errors import UsdInputError
from .attachments import deformable_of, first_target
from .descriptors import OT, SHAPE_TYPES
from .stage import authored_value


def import_deformable_filters(builder, stage, filter_prims, descs, result) -> None:
    """Read the element collision filters ``filter_prims`` and the filtered pairs naming deformables (see the
    module) onto the deformables' records (``links.filtered``)."""
    file, diag = result.file, result.diagnostics
    for prim in filter_prims:
        path = str(prim.GetPath())
        enabled = authored_value(prim, "physics:filterEnabled")
        if enabled is not None and not bool(enabled):
            continue
        src = [first_target(prim, f"physics:src{k}") for k in (0, 1)]
        records = [deformable_of(builder, result.deformables, s) for s in src]
        if records[0] is None and records[1] is None:
            continue  # (colliders or cables only: not a cloth's or volume's filter)
        if records[0] is not None and records[1] is not None:
            diag.add("filters between two cloth or soft volumes are not simulated (their particles' contacts are "
                     "Newton's VBD's own)", path)  # fmt: skip
            continue
        groups = [_groups(prim, k, file, path) for k in (0, 1)]
        if groups[0][1] and not groups[1][1]:
            pairs = [(groups[0][0][0], g) for g in groups[1][0]]
        elif groups[1][1] and not groups[0][1]:
            pairs = [(g, groups[1][0][0]) for g in groups[0][0]]
        elif len(groups[0][0]) == len(groups[1][0]):
            pairs = list(zip(groups[0][0], groups[1][0], strict=True))
        else:
            raise UsdInputError(f"{len(groups[0][0])} groups of physics:src0 and {len(groups[1][0])} of physics:src1: "
                                "groups pair one to one (or a side authors no counts)", file=file, prim=path,
                                attribute="physics:groupElemCounts0")  # fmt: skip
        k = 0 if records[0] is not None else 1
        shapes = _shapes(builder, result, src[1 - k])
        if shapes is None:
            diag.add(f"physics:src{1 - k} {src[1 - k] or '(none)'} is not a collider or rigid body of this scene: "
                     "the filter filters nothing", path)  # fmt: skip
            continue
        for pair in pairs:
            points = _points(builder, stage, records[k], pair[k], file, path, k)
            if len(points) and shapes:
                records[k].links.filtered.append((points, list(shapes)))
    _filtered_pairs(builder, stage, descs, result)


def _groups(prim, k, file, path):
    """(groups of element indices, broadcast): ``groupElemIndices{k}`` cut by ``groupElemCounts{k}``; an empty group
    is every element; no counts: one such group, paired with every group of the other side (``broadcast``)."""
    counts = [int(c) for c in authored_value(prim, f"physics:groupElemCounts{k}") or []]
    indices = [int(i) for i in authored_value(prim, f"physics:groupElemIndices{k}") or []]
    if not counts:
        return [[]], True
    if any(c < 0 for c in counts) or sum(counts) != len(indices):
        raise UsdInputError(f"counts {counts} do not cut the {len(indices)} physics:groupElemIndices{k} into groups",
                            file=file, prim=path, attribute=f"physics:groupElemCounts{k}")  # fmt: skip
    starts = np.cumsum([0] + counts)
    return [indices[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)], False


def _points(builder, stage, record, elements, file, path, k) -> np.ndarray:
    """The points (indices into the deformable's own) of its ``elements`` (a cloth's faces, a volume's tetrahedra;
    none: every point)."""
    first, end = builder.particle_groups[record.label]
    n = end - first
    if hasattr(record, "tetrahedra"):
        cells, what = [list(t) for t in record.tetrahedra], "tetrahedra"
    else:
        mesh = UsdGeom.Mesh(stage.GetPrimAtPath(record.label))
        counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get(), dtype=np.int64)
        flat = np.asarray(mesh.GetFaceVertexIndicesAttr().Get(), dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)])
        cells, what = [flat[a:b] for a, b in zip(starts[:-1], starts[1:], strict=True)], "faces"
    if not elements:
        return np.arange(n, dtype=np.int64)
    bad = [e for e in elements if not 0 <= e < len(cells)]
    if bad:
        raise UsdInputError(f"element {bad[0]} is out of range: {record.label} has {len(cells)} {what}", file=file,
                            prim=path, attribute=f"physics:groupElemIndices{k}")  # fmt: skip
    return np.unique(np.concatenate([np.asarray(cells[e], dtype=np.int64) for e in elements]))


def _shapes(builder, result, path):
    """Our shapes of ``path``: a rigid body's colliders, or the one collider; None: neither."""
    if path in result.body_index:
        b = result.body_index[path]
        return [s for s, body in enumerate(builder.shape_body) if body == b]
    if path in result.shape_index:
        return [result.shape_index[path]]
    return None


def _filtered_pairs(builder, stage, descs, result) -> None:
    """``physics:filteredPairs`` between a deformable (its simulation or body prim) and colliders or bodies."""
    deformables = result.deformables
    named = set(deformables.simulated) | set(deformables.bodies)
    pairs = []  # (deformable prim path, collider or body path)
    for path in named:
        rel = stage.GetPrimAtPath(path).GetRelationship("physics:filteredPairs")
        pairs += [(path, str(t)) for t in (rel.GetForwardedTargets() if rel else [])]
    for obj_type in (OT.RigidBody,) + SHAPE_TYPES:
        for path, d in descs.get(obj_type, []):
            pairs += [(str(t), str(path)) for t in d.filteredCollisions if str(t) in named]
    for deformable, other in pairs:
        record = deformable_of(builder, deformables, deformable)
        shapes = _shapes(builder, result, other)
        if record is None or not shapes:
            continue
        points = np.arange(builder.particle_groups[record.label][1] - record.first, dtype=np.int64)
        record.links.filtered.append((points, shapes))
