"""A cloth's or soft volume's rest data, as Newton 1.8 reads it (its ``import_usd_deformable_cloth.py``,
``_volume.py`` and ``_utils.py``): its rest shape and its authored masses.

- ``physics:restShapePoints`` (the prim's own space, stage units; one per point) is the shape its elements rest in:
  a cloth's triangles' rest shape and bending edges' rest lengths, a volume's tetrahedra's rest shape, and the areas
  and volumes its masses are spread by (the authored ``points`` are where it starts). With
  ``physics:restTriVertexIndices`` / ``physics:restTetVertexIndices`` equal to the simulation mesh's elements it
  is the same. A cloth's rest shape of its own topology (panels sewn together: ``physics:restTriVertexIndices``, a row
  of ``restShapePoints`` indices per simulation triangle) gives each triangle its rest shape and each bending edge
  its rest length (and angle) from its triangles' own copies, as Newton's import; a volume's is not read yet: said.
- a cloth's ``physics:restBendAnglesDefault``: ``flat`` (the proposal's fallback, as Newton: its bending edges rest
  flat, whatever the shape) or ``restShape`` (they rest at the rest shape's angles). Unauthored on a cloth that is
  not flat: said, as Newton does. ``physics:restAdjTriPairs`` (pairs of faces) and ``physics:restBendAngles``
  (degrees) set the rest angle of the bending edges between those two faces, over the default.
- ``physics:masses`` with ``physics:masses:elementType``: ``constant`` (the total, spread by element volume), per
  element (a cloth's ``face``, a volume's ``tetrahedron``: spread over its triangles by volume), or ``point`` (each
  element takes the volume-weighted mean of its points' masses per volume, then a third (a quarter) goes to each
  corner: the proposal's conversion); without an element type, each point's own mass (the proposal's earlier
  revision, as Newton reads it: said). Authored masses win over the body's ``physics:mass``.

Bad input is a one-line :class:`~newton_usd.errors.UsdInputError`: rest points not one per point or not finite, a
rest element without area or volume (or inverted), an unknown token, masses of the wrong count or not positive.
"""

from __future__ import annotations

import numpy as np

from ..core.quat import quat_rotate
from ..errors import UsdInputError
from .stage import authored_value

BEND_DEFAULTS = ("flat", "restShape")


def rest_shape(prim, n, m, frame, cells, index_name, file, path, diag, panels=False):
    """``(rest, rest_cells)``: the rest shape (SI, world axes, no translation: only differences matter) of the prim's
    ``n`` points, or None (the authored shape), and, for a rest shape of its own topology (``panels``: a cloth's),
    its elements' rest points (``index_name``, one row per element of ``cells``, the elements as authored), else
    None. ``m``: the prim's local-to-world matrix."""
    value = authored_value(prim, "physics:restShapePoints")
    indices = authored_value(prim, index_name)
    rest_cells = None
    if indices is not None and len(indices):
        rest_cells = np.asarray(indices, dtype=np.int64)
        if rest_cells.size == cells.size and np.array_equal(rest_cells.reshape(cells.shape), cells):
            rest_cells = None  # (the simulation mesh's own topology)
    if value is None or len(value) == 0:
        if rest_cells is not None:
            diag.add(f"{index_name} without physics:restShapePoints is not read: the rest shape is the authored "
                     "shape", path)  # fmt: skip
        return None, None
    if rest_cells is not None and not panels:
        diag.add(f"a rest shape of its own topology ({index_name}) is not read yet: the rest shape is the authored "
                 "shape", path)  # fmt: skip
        return None, None
    rest = np.asarray(value, dtype=np.float64).reshape(-1, 3)
    if rest_cells is None and len(rest) != n:
        raise UsdInputError(f"{len(rest)} rest points for the prim's {n} points: one each (or {index_name})",
                            file=file, prim=path, attribute="physics:restShapePoints")  # fmt: skip
    if rest_cells is not None:
        if rest_cells.size != cells.size:
            raise UsdInputError(f"{rest_cells.size} indices for {len(cells)} elements of {cells.shape[1]} points",
                                file=file, prim=path, attribute=index_name)  # fmt: skip
        rest_cells = rest_cells.reshape(cells.shape)
        if rest_cells.min() < 0 or rest_cells.max() >= len(rest):
            raise UsdInputError(f"an index out of range: {len(rest)} rest points", file=file, prim=path,
                                attribute=index_name)  # fmt: skip
    if not np.all(np.isfinite(rest)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path,
                            attribute="physics:restShapePoints")  # fmt: skip
    return frame.meters_per_unit * quat_rotate(frame.rotation, rest @ m[:3, :3]), rest_cells


def bend_default(prim, shape, file, path, diag) -> str:
    """The cloth's ``physics:restBendAnglesDefault`` (``flat`` where unauthored: said where ``shape``, its rest
    points, is not flat)."""
    name = "physics:restBendAnglesDefault"
    value = authored_value(prim, name)
    if value is None and authored_value(prim, "physics:restAdjTriPairs"):
        return "flat"  # (its edges' angles authored, the others flat: nothing to say)
    if value is None:
        centred = shape - shape.mean(axis=0)
        thin = np.linalg.svd(centred, compute_uv=False)
        if len(thin) == 3 and thin[2] > 1e-9 * max(thin[0], 1e-300):
            diag.add(f"{name} unauthored: its bending edges rest flat (the proposal's fallback, as Newton), not at "
                     "the shape's angles (author restShape to keep them)", path)  # fmt: skip
        return "flat"
    if str(value) not in BEND_DEFAULTS:
        raise UsdInputError(f"unknown token {value!r} (valid: flat, restShape)", file=file, prim=path, attribute=name)
    return str(value)


def bend_angles(prim, tris, face, n_faces, file, path) -> dict:
    """``physics:restAdjTriPairs`` (pairs of the cloth's faces) and ``physics:restBendAngles`` (degrees) as
    ``{(face, face): radians}``: the rest angle of every bending edge between the two faces (``tris``: its
    triangles, ``face``: each one's face). A pair of faces that share no edge is bad input."""
    pairs, angles = authored_value(prim, "physics:restAdjTriPairs"), authored_value(prim, "physics:restBendAngles")
    if not pairs and not angles:
        return {}
    pairs = np.asarray(pairs if pairs else [], dtype=np.int64).reshape(-1, 2)
    angles = np.asarray(angles if angles else [], dtype=np.float64).reshape(-1)
    if len(pairs) != len(angles):
        raise UsdInputError(f"{len(angles)} angles for {len(pairs)} physics:restAdjTriPairs: one each", file=file,
                            prim=path, attribute="physics:restBendAngles")  # fmt: skip
    if not np.all(np.isfinite(angles)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path,
                            attribute="physics:restBendAngles")  # fmt: skip
    sides = {}  # (an edge's two points) -> the faces of its triangles
    for t, tri in enumerate(tris.tolist()):
        for a, b in ((tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])):
            sides.setdefault((min(a, b), max(a, b)), set()).add(int(face[t]))
    adjacent = {tuple(sorted(f)) for f in sides.values() if len(f) == 2}
    out = {}
    for k, (pair, angle) in enumerate(zip(pairs.tolist(), angles.tolist(), strict=True)):
        key = (min(pair), max(pair))
        if key not in adjacent:
            raise UsdInputError(f"pair {k} {tuple(pair)} names faces that share no edge ({n_faces} faces)", file=file,
                                prim=path, attribute="physics:restAdjTriPairs")  # fmt: skip
        out[key] = float(np.radians(angle))
    return out


def point_masses(prim, cells, volumes, sources, n_sources, n, element, frame, file, path, diag):
    """Each of the ``n`` points' mass (kg) from ``physics:masses`` (see the module), or None where unauthored.

    ``cells``: the (k-point) elements the masses are spread over, ``volumes`` theirs (SI); ``sources``: each
    element's authored element (a cloth's face of each triangle; None: the elements themselves), of ``n_sources``
    named ``element``."""
    name = "physics:masses"
    values = authored_value(prim, name)
    if values is None or len(values) == 0:
        return None
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    kind = authored_value(prim, name + ":elementType")
    legacy = kind is None
    kind = "point" if legacy else str(kind)
    counts = {"constant": 1, element: n_sources, "point": n}
    if kind not in counts:
        raise UsdInputError(f"unknown element type {kind!r} (valid: constant, {element}, point)", file=file,
                            prim=path, attribute=name + ":elementType")  # fmt: skip
    if len(v) != counts[kind]:
        raise UsdInputError(f"{len(v)} values for elementType {kind}: {counts[kind]} expected", file=file, prim=path,
                            attribute=name)  # fmt: skip
    if not np.all(np.isfinite(v)) or np.any(v < 0) or (not legacy and np.any(v == 0)):
        raise UsdInputError("a mass is finite and positive", file=file, prim=path, attribute=name)
    v = v * frame.kilograms_per_unit
    width = cells.shape[1]
    if legacy:
        diag.add(f"{name} without {name}:elementType: read as each point's mass (an earlier revision of the "
                 "proposal, as Newton reads it)", path)  # fmt: skip
        return v
    if kind == "constant":
        element_mass = v[0] * volumes / volumes.sum()
    elif kind == element:
        src = np.arange(len(cells)) if sources is None else sources
        per_source = np.bincount(src, weights=volumes, minlength=n_sources)
        element_mass = v[src] * volumes / per_source[src]
    else:
        point_volume = np.bincount(cells.reshape(-1), weights=np.repeat(volumes / width, width), minlength=n)
        used = np.bincount(cells.reshape(-1), minlength=n) > 0
        if not used.all():
            diag.add(f"{name}: {int((~used).sum())} points are in no element: their masses are not read", path)
        per_volume = np.where(used, v / np.where(used, point_volume, 1.0), 0.0)
        element_mass = volumes / width * per_volume[cells].sum(axis=1)
    return np.bincount(cells.reshape(-1), weights=np.repeat(element_mass / width, width), minlength=n)
