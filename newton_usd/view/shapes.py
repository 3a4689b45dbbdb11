"""The implicit gprims (Cube, Sphere, Capsule, Cylinder, Cone, Plane) as triangle meshes, in their own frame and
the stage's units (trimesh makes them; equal ones are made once)."""

from __future__ import annotations

import numpy as np
from pxr import Usd

from ..errors import UsdInputError

_SPHERE_SUBDIVISIONS = 3

_IMPLICIT = {
    "Cube": ("size",),
    "Sphere": ("radius",),
    "Capsule": ("radius", "height", "axis"),
    "Cylinder": ("radius", "height", "axis"),
    "Cone": ("radius", "height", "axis"),
    "Plane": ("width", "length", "axis"),
}
_implicit_cache = {}  # (type, parameters) -> (vertices, faces): a pile of equal boxes is made once


def implicit_geometry(prim, path: str) -> tuple:
    """(vertices, faces) of an implicit gprim (none for a type that is not one: Points, BasisCurves)."""
    t = prim.GetTypeName()
    params = tuple((name, _value(prim, name)) for name in _IMPLICIT.get(t, ()))
    key = (t, params)
    if key not in _implicit_cache:
        if len(_implicit_cache) > 256:
            _implicit_cache.clear()
        _implicit_cache[key] = _implicit(t, dict(params), path)
    vertices, faces = _implicit_cache[key]
    return vertices.copy(), faces


def _value(prim, name):
    a = prim.GetAttribute(name)
    v = a.Get(Usd.TimeCode.EarliestTime()) if a else None
    return v if v is None or isinstance(v, str) else float(v)


def _implicit(t, values, path):
    """(vertices, faces) of an implicit gprim of type ``t`` with attribute ``values`` (None: fallback)."""
    import trimesh.creation as tc  # noqa: PLC0415  (a dependency of viser)

    def attr(name, default):
        v = values.get(name)
        return default if v is None else v

    def axis_to(mesh, axis):  # trimesh makes its primitives along Z
        if axis == "X":
            mesh.apply_transform(trimesh_rotation(0, 1, 0))
        elif axis == "Y":
            mesh.apply_transform(trimesh_rotation(1, 0, 0, sign=-1))
        return mesh

    def check(value, name):
        if not np.isfinite(value) or value < 0:
            raise UsdInputError(f"must be a finite length >= 0, got {value}", prim=path, attribute=name)
        return float(value)

    if t == "Cube":
        s = check(attr("size", 2.0), "size")
        m = tc.box(extents=(s, s, s))
        m.unmerge_vertices()  # flat faces: no normal shared across an edge
    elif t == "Sphere":
        m = tc.icosphere(_SPHERE_SUBDIVISIONS, radius=check(attr("radius", 1.0), "radius"))
    elif t == "Capsule":
        r, h = check(attr("radius", 0.5), "radius"), check(attr("height", 1.0), "height")
        m = axis_to(tc.capsule(height=h, radius=r, count=[24, 12]), attr("axis", "Z"))
    elif t == "Cylinder":
        r, h = check(attr("radius", 1.0), "radius"), check(attr("height", 2.0), "height")
        m = axis_to(tc.cylinder(radius=r, height=h, sections=32), attr("axis", "Z"))
    elif t == "Cone":
        r, h = check(attr("radius", 1.0), "radius"), check(attr("height", 2.0), "height")
        m = tc.cone(radius=r, height=h, sections=32)
        m.apply_translation((0, 0, -h / 2))  # USD's cone is centred on its axis; trimesh's base is at 0
        m = axis_to(m, attr("axis", "Z"))
    elif t == "Plane":
        w, length = check(attr("width", 2.0), "width"), check(attr("length", 2.0), "length")
        axis = attr("axis", "Z")
        # A thin slab (two-sided to the eye, and never degenerate for a renderer that needs volume).
        thin = 1e-3 * max(w, length, 1e-6)
        dims = {"Z": (w, length, thin), "Y": (w, thin, length), "X": (thin, w, length)}[axis]
        m = tc.box(extents=dims)
        offset = {"Z": (0, 0, -thin / 2), "Y": (0, -thin / 2, 0), "X": (-thin / 2, 0, 0)}[axis]
        m.apply_translation(offset)  # its top face on the plane
        m.unmerge_vertices()
    else:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int32)  # e.g. BasisCurves, Points
    return np.asarray(m.vertices, np.float32), np.asarray(m.faces, np.int32)


def trimesh_rotation(x, y, z, sign=1):
    """A 4x4 (column-vector) rotation by 90 degrees times ``sign`` about the axis (x, y, z), taking Z to
    the axis named: about Y, Z -> X; about X with sign -1, Z -> Y."""
    import trimesh.transformations as tt  # noqa: PLC0415

    return tt.rotation_matrix(sign * np.pi / 2, (x, y, z))
