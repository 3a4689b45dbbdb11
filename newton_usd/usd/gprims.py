"""Geometry read from UsdGeom gprims: mesh triangles, and MuJoCo visual geoms.

A gprim with MjcImageableAPI (and no PhysicsCollisionAPI) is a MuJoCo visual geom, as both MJCF
converters write one (contype = conaffinity = 0): it becomes a shape that does not collide and adds
no mass, so that the MuJoCo model keeps the MJCF's geoms (and groups). Other gprims without
PhysicsCollisionAPI are rendering only and are not imported.
"""

from __future__ import annotations

import math

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom

from ..core.builder import Heightfield, Mesh
from ..core.quat import gf_to_xyzw, quat_from_axis_angle, quat_multiply, transform_inverse, transform_multiply
from ..core.types import GeoType
from ..errors import UsdInputError
from . import properties as props

VISUAL_API = "MjcImageableAPI"
HEIGHTFIELD_API = "NewtonUsdHeightfieldAPI"

# Rotation taking a gprim's local +Z onto its axis token.
AXIS_TO_Z = {
    "X": quat_from_axis_angle((0.0, 1.0, 0.0), 0.5 * math.pi),
    "Y": quat_from_axis_angle((1.0, 0.0, 0.0), -0.5 * math.pi),
    "Z": np.array([0.0, 0.0, 0.0, 1.0]),
}


CONE_SEGMENTS = 64
"""Sides of the convex mesh that stands for a cone (MuJoCo has no cone primitive)."""


def cone_mesh(radius: float, half_height: float, segments: int = CONE_SEGMENTS) -> Mesh:
    """A USD cone (apex at +Z ``half_height``, base disk of ``radius`` at -Z ``half_height``) as a convex mesh
    of ``segments`` sides. The base polygon has the disk's area (its corners a little outside the circle,
    by 0.08 % at 64 sides), so the volume, and with it the mass and the center of mass, are the cone's."""
    n = int(segments)
    r = radius * math.sqrt(2.0 * math.pi / (n * math.sin(2.0 * math.pi / n)))
    angles = 2.0 * math.pi * np.arange(n) / n
    ring = np.stack([r * np.cos(angles), r * np.sin(angles), np.full(n, -half_height)], axis=1)
    vertices = np.vstack([ring, [[0.0, 0.0, half_height], [0.0, 0.0, -half_height]]])
    i, j = np.arange(n), (np.arange(n) + 1) % n
    apex, center = np.full(n, n), np.full(n, n + 1)
    sides = np.stack([i, j, apex], axis=1)  # counter-clockwise seen from outside
    base = np.stack([j, i, center], axis=1)
    return Mesh(vertices, np.concatenate([sides, base]).reshape(-1))


def read_mesh(prim, scale, file):
    """A UsdGeom.Mesh's triangles (polygons fan-triangulated), its points scaled by ``scale``; None
    when it has no points or faces. The triangles wind counterclockwise seen from their front (right-handed
    normals), as USD means the faces: reversed for a ``leftHanded`` mesh and for a mirroring scale (an odd
    number of negative components), so that a solver that collides a triangle on its front side only (Newton's)
    and MuJoCo's slab behind a flat mesh see the side the author meant."""
    geom = UsdGeom.Mesh(prim)
    points = geom.GetPointsAttr().Get()
    counts = geom.GetFaceVertexCountsAttr().Get()
    indices = geom.GetFaceVertexIndicesAttr().Get()
    if not points or not counts or not indices:
        return None
    points, counts, indices = (np.asarray(v) for v in (points, counts, indices))
    for name, array, ndim, kind, numbers in (("points", points, 2, "point3f[]", "fiu"),
                                             ("faceVertexCounts", counts, 1, "int[]", "iu"),
                                             ("faceVertexIndices", indices, 1, "int[]", "iu")):  # fmt: skip
        if array.ndim != ndim or (ndim == 2 and array.shape[1] != 3) or array.dtype.kind not in numbers:
            raise UsdInputError(f"authored as {array.dtype.name} values of shape {array.shape}, expected {kind}",
                                file=file, prim=str(prim.GetPath()), attribute=name)  # fmt: skip
    points = points.astype(np.float64) * scale
    bad = ~np.isfinite(points).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise UsdInputError(
            f"point {i} is {tuple(map(float, points[i]))}: every point must be finite",
            file=file,
            prim=str(prim.GetPath()),
            attribute="points",
        )
    counts = counts.astype(np.int64)
    indices = indices.astype(np.int64)
    if indices.max() >= len(points) or indices.min() < 0 or counts.sum() != len(indices) or counts.min() < 0:
        raise UsdInputError(
            "faceVertexIndices/faceVertexCounts do not match the points",
            file=file,
            prim=str(prim.GetPath()),
            attribute="faceVertexIndices",
        )
    if np.all(counts == 3):
        tris = indices.reshape(-1, 3)
    else:  # fan-triangulate each polygon: (first, k, k + 1) for k = 1 .. n - 2
        n_tris = np.maximum(counts - 2, 0)
        if not n_tris.sum():
            return None
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        first = np.repeat(starts, n_tris)
        k = np.arange(n_tris.sum()) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris) + 1
        tris = np.stack([indices[first], indices[first + k], indices[first + k + 1]], axis=1)
    mirrored = int(np.count_nonzero(np.asarray(scale, dtype=np.float64) < 0)) % 2 == 1
    if mirrored != (geom.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded):
        tris = tris[:, ::-1]
    return Mesh(points, np.ascontiguousarray(tris, dtype=np.int32))


def read_heightfield(prim, result, ctx):
    """(size, Heightfield) of a Mesh with NewtonUsdHeightfieldAPI: MuJoCo's grid with its elevations scaled
    to [0, 1] (as MuJoCo scales them), its size in meters with x, y and z (and the base depth) multiplied by
    the prim's world scale along its x, y and z axes: exact unless the transform shears or mirrors the field
    (reported).

    Raises:
        UsdInputError: rows or columns below 2, elevations that are missing, not finite or not rows x
            columns many, or a size that is not 4 positive values.
    """
    path = str(prim.GetPath())
    values = result.resolver.resolve_all(prim, props.HEIGHTFIELD_PROPERTIES, ctx)
    rows, cols = values["heightfield_rows"].value, values["heightfield_columns"].value
    elevation, size = values["heightfield_elevation"].value, values["heightfield_size"].value
    problem = None
    if elevation is None:
        problem = f"not authored: a height field needs its rows x columns ({rows} x {cols}) elevations"
    elif len(elevation) != rows * cols:
        problem = f"has {len(elevation)} values, not rows x columns = {rows} x {cols} = {rows * cols}"
    elif not np.isfinite(elevation).all():
        problem = "must be finite numbers"
    if problem:
        raise UsdInputError(
            problem, file=result.file, prim=path, attribute=props.HEIGHTFIELD_ELEVATION.candidates[0].attribute
        )
    axes = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()))[:3, :3]
    gram = axes @ axes.T  # the prim's scaled axes in the world (rows): orthogonal unless sheared
    off = np.abs(gram - np.diag(np.diag(gram))).max()
    if off > 1e-6 * np.diag(gram).max() or np.linalg.det(axes) < 0:
        result.diagnostics.add("height field under a sheared or mirrored transform: sized by its axis scales", path)
    sx, sy, sz = np.sqrt(np.diag(gram))
    size = (size[0] * sx, size[1] * sy, size[2] * sz, size[3] * sz)
    lo, hi = elevation.min(), elevation.max()
    normalized = (elevation - lo) / (hi - lo) if hi > lo else np.zeros_like(elevation)
    return size, Heightfield(normalized.reshape(rows, cols), size)


def import_visual_geoms(builder, prims, result, frame, ctx) -> None:
    """Non-colliding shapes for the MjcImageableAPI gprims ``prims`` on their nearest rigid-body
    ancestor (or the world), at their authored pose; ``mjc:group`` kept."""
    if not prims:
        return
    cache = UsdGeom.XformCache()
    for prim in prims:
        path = str(prim.GetPath())
        body, ancestor = -1, prim.GetParent()
        while ancestor and ancestor.GetPath() != Sdf.Path.absoluteRootPath:
            body = result.body_index.get(str(ancestor.GetPath()), -1)
            if body >= 0:
                break
            ancestor = ancestor.GetParent()
        world = Gf.Transform(cache.GetLocalToWorldTransform(prim))
        pose = frame.world_pose_to_sim(
            np.array(world.GetTranslation(), dtype=np.float64), gf_to_xyzw(world.GetRotation().GetQuat())
        )
        if body >= 0:
            pose = transform_multiply(transform_inverse(builder.body_q[body]), pose)
        if prim.HasAPI(HEIGHTFIELD_API):
            size, field = read_heightfield(prim, result, ctx)
            shape = GeoType.HFIELD, size[:3], field, AXIS_TO_Z["Z"]
        else:
            shape = _geometry(
                prim, np.abs(np.array(world.GetScale(), dtype=np.float64)) * frame.meters_per_unit, result
            )
        if shape is None:
            result.diagnostics.add(f"visual {prim.GetTypeName()} gprims are not imported", path)
            continue
        geo, size, mesh, rot = shape
        idx = builder.add_shape(
            body, geo, (pose[0], quat_multiply(pose[1], rot)), size, mesh=mesh, collision_enabled=False, label=path
        )
        result.shape_index[path] = idx
        group = result.resolver.resolve(prim, props.SHAPE_GROUP, ctx)
        if group.kind != "default":
            builder.set_mujoco("shape", "geom_group", idx, group.value)


def _geometry(prim, scale, result):
    """(GeoType, size, Mesh or None, rotation onto the shape's +Z) of a gprim, sized by ``scale``."""
    kind = prim.GetTypeName()
    identity = AXIS_TO_Z["Z"]
    if kind == "Sphere":
        r = float(UsdGeom.Sphere(prim).GetRadiusAttr().Get())
        if np.ptp(scale) > 1e-6 * scale.max():
            return GeoType.ELLIPSOID, tuple(r * scale), None, identity
        return GeoType.SPHERE, (r * scale.max(), 0.0, 0.0), None, identity
    if kind == "Cube":
        half = 0.5 * float(UsdGeom.Cube(prim).GetSizeAttr().Get())
        return GeoType.BOX, tuple(half * scale), None, identity
    if kind in ("Capsule", "Cylinder"):
        g = UsdGeom.Capsule(prim) if kind == "Capsule" else UsdGeom.Cylinder(prim)
        axis = str(g.GetAxisAttr().Get() or "Z")
        radial = [scale[i] for i in range(3) if "XYZ"[i] != axis]
        r, h = float(g.GetRadiusAttr().Get()) * max(radial), float(g.GetHeightAttr().Get()) * scale["XYZ".index(axis)]
        geo = GeoType.CAPSULE if kind == "Capsule" else GeoType.CYLINDER
        return geo, (r, 0.5 * h, 0.0), None, AXIS_TO_Z[axis]
    if kind == "Cone":
        g = UsdGeom.Cone(prim)
        axis = str(g.GetAxisAttr().Get() or "Z")
        radial = [scale[i] for i in range(3) if "XYZ"[i] != axis]
        r, h = float(g.GetRadiusAttr().Get()) * max(radial), float(g.GetHeightAttr().Get()) * scale["XYZ".index(axis)]
        return GeoType.MESH, (1.0, 1.0, 1.0), cone_mesh(r, 0.5 * h), AXIS_TO_Z[axis]
    if kind == "Mesh":
        mesh = read_mesh(prim, scale, result.file)
        return (GeoType.MESH, (1.0, 1.0, 1.0), mesh, identity) if mesh is not None else None
    return None
