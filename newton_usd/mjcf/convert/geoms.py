"""Geoms as gprims with PhysicsCollisionAPI and MjcCollisionAPI (meshes, height fields as a Mesh of their
surface, ellipsoids), and physics materials for their friction."""

from __future__ import annotations

import mujoco
import numpy as np
from pxr import Gf, UsdGeom, UsdPhysics, UsdShade, Vt

from ...core.quat import wxyz_to_xyzw
from ..compiled import mesh_in_asset_frame
from .prims import T, materials_scope, mjcf_name, set_attr, set_xform


def write_geom(stage, m, g, body_path, names, materials, root, diag, paired=frozenset()):
    """One geom as a gprim (a collider unless contype = conaffinity = 0 and no contact pair names it in
    ``paired``); returns its path, or None."""
    gt = int(m.geom_type[g])
    size = m.geom_size[g]
    parent = body_path[int(m.geom_bodyid[g])]
    path = names.child(parent, mjcf_name(m, mujoco.mjtObj.mjOBJ_GEOM, g, "geom"))
    if gt == mujoco.mjtGeom.mjGEOM_SPHERE:
        geom = UsdGeom.Sphere.Define(stage, path)
        geom.CreateRadiusAttr(float(size[0]))
    elif gt == mujoco.mjtGeom.mjGEOM_ELLIPSOID and (m.geom_contype[g] or m.geom_conaffinity[g]):
        geom = _ellipsoid_mesh(stage, path, size)  # a collider
    elif gt == mujoco.mjtGeom.mjGEOM_ELLIPSOID:  # a visual geom: a unit sphere scaled by the radii
        geom = UsdGeom.Sphere.Define(stage, path)
        geom.CreateRadiusAttr(1.0)
    elif gt == mujoco.mjtGeom.mjGEOM_BOX:
        geom = UsdGeom.Cube.Define(stage, path)
        geom.CreateSizeAttr(2.0)
    elif gt in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
        cls = UsdGeom.Capsule if gt == mujoco.mjtGeom.mjGEOM_CAPSULE else UsdGeom.Cylinder
        geom = cls.Define(stage, path)
        geom.CreateAxisAttr(UsdGeom.Tokens.z)
        geom.CreateRadiusAttr(float(size[0]))
        geom.CreateHeightAttr(2.0 * float(size[1]))
    elif gt == mujoco.mjtGeom.mjGEOM_PLANE:
        geom = UsdGeom.Plane.Define(stage, path)
        geom.CreateAxisAttr(UsdGeom.Tokens.z)
        geom.CreateWidthAttr(2.0 * float(size[0]) or 20.0)
        geom.CreateLengthAttr(2.0 * float(size[1]) or 20.0)
    elif gt == mujoco.mjtGeom.mjGEOM_MESH:
        vertices, faces, pose = mesh_in_asset_frame(m, g)
        geom = UsdGeom.Mesh.Define(stage, path)
        geom.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(vertices.astype(np.float32)))
        geom.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), 3, dtype=np.int32)))
        geom.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(faces.astype(np.int32).ravel()))
    elif gt == mujoco.mjtGeom.mjGEOM_HFIELD:
        geom = _write_heightfield(stage, m, int(m.geom_dataid[g]), path)
    else:
        diag.add(f"{mujoco.mjtGeom(gt).name[7:].lower()} geoms are not converted yet", path)
        return
    prim = geom.GetPrim()
    set_xform(prim, pose if gt == mujoco.mjtGeom.mjGEOM_MESH else (m.geom_pos[g].copy(), wxyz_to_xyzw(m.geom_quat[g])))
    if gt == mujoco.mjtGeom.mjGEOM_BOX or (gt == mujoco.mjtGeom.mjGEOM_ELLIPSOID and prim.IsA(UsdGeom.Sphere)):
        UsdGeom.Xformable(prim).AddScaleOp().Set(Gf.Vec3f(*map(float, size)))
    rgba = m.geom_rgba[g]
    geom.CreateDisplayColorAttr([Gf.Vec3f(*map(float, rgba[:3]))])
    filtered = not (m.geom_contype[g] or m.geom_conaffinity[g])
    if filtered and g not in paired:
        prim.ApplyAPI("MjcImageableAPI")
        set_attr(prim, "mjc:group", T.Int, int(m.geom_group[g]))
        return path
    collider = UsdPhysics.CollisionAPI.Apply(prim)
    if filtered:  # collides only through its contact pairs
        collider.CreateCollisionEnabledAttr(False)
    if gt == mujoco.mjtGeom.mjGEOM_MESH:
        UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr(UsdPhysics.Tokens.convexHull)
    elif gt == mujoco.mjtGeom.mjGEOM_HFIELD:  # tools that do not read the height field see the triangle mesh
        UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr(UsdPhysics.Tokens.none)
    prim.ApplyAPI("MjcCollisionAPI")
    for name, type_name, value in (
        ("mjc:condim", T.Int, int(m.geom_condim[g])),
        ("mjc:priority", T.Int, int(m.geom_priority[g])),
        ("mjc:group", T.Int, int(m.geom_group[g])),
        ("mjc:solmix", T.Double, float(m.geom_solmix[g])),
        ("mjc:margin", T.Double, float(m.geom_margin[g])),
        ("mjc:gap", T.Double, float(m.geom_gap[g])),
        ("mjc:solref", T.DoubleArray, [float(x) for x in m.geom_solref[g]]),
        ("mjc:solimp", T.DoubleArray, [float(x) for x in m.geom_solimp[g]]),
    ):
        set_attr(prim, name, type_name, value)
    friction = tuple(float(x) for x in m.geom_friction[g])
    material = materials.get(friction)
    if material is None:
        mpath = names.child(materials_scope(stage, root), "Material")
        material = UsdShade.Material.Define(stage, mpath)
        api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
        api.CreateDynamicFrictionAttr(friction[0])
        api.CreateStaticFrictionAttr(friction[0])
        material.GetPrim().ApplyAPI("MjcMaterialAPI")
        set_attr(material.GetPrim(), "mjc:torsionalfriction", T.Double, friction[1])
        set_attr(material.GetPrim(), "mjc:rollingfriction", T.Double, friction[2])
        materials[friction] = material
    UsdShade.MaterialBindingAPI.Apply(prim).Bind(material, UsdShade.Tokens.weakerThanDescendants, "physics")
    return path


def heightfield_surface(elevation, size):
    """The surface of a height field as MuJoCo collides with it: (points (rows * columns, 3), triangles
    (N, 3)). ``elevation`` (rows, columns) in [0, 1], rows from -Y to +Y, columns from -X to +X, over
    ``[-size[0], size[0]] x [-size[1], size[1]]``, heights ``elevation * size[2]``; each cell is split along
    its diagonal from (-X, -Y) to (+X, +Y), as MuJoCo splits it."""
    elevation = np.asarray(elevation, dtype=np.float64)
    rows, cols = elevation.shape
    x, y = np.meshgrid(np.linspace(-size[0], size[0], cols), np.linspace(-size[1], size[1], rows))
    points = np.stack([x.ravel(), y.ravel(), elevation.ravel() * size[2]], axis=1)
    corner = (np.arange(rows - 1)[:, None] * cols + np.arange(cols - 1)[None, :]).ravel()
    a, b, c, d = corner, corner + 1, corner + cols + 1, corner + cols  # counter-clockwise seen from +Z
    triangles = np.concatenate([np.stack([a, b, c], axis=1), np.stack([a, c, d], axis=1)])
    return points, triangles


def _write_heightfield(stage, m, h, path):
    """A Mesh with NewtonUsdHeightfieldAPI for MuJoCo hfield ``h``: MuJoCo's compiled grid (rows from -Y,
    elevations in [0, 1]) and size, and the surface as the mesh, for tools that do not read the schema."""
    nrow, ncol, adr = int(m.hfield_nrow[h]), int(m.hfield_ncol[h]), int(m.hfield_adr[h])
    elevation = np.asarray(m.hfield_data[adr : adr + nrow * ncol], dtype=np.float32)
    size = [float(x) for x in m.hfield_size[h]]
    points, triangles = heightfield_surface(elevation.reshape(nrow, ncol), size)
    geom = UsdGeom.Mesh.Define(stage, path)
    geom.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(points.astype(np.float32)))
    geom.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(triangles), 3, dtype=np.int32)))
    geom.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(triangles.astype(np.int32).ravel()))
    prim = geom.GetPrim()
    prim.ApplyAPI("NewtonUsdHeightfieldAPI")
    set_attr(prim, "newton:usd:heightfield:rows", T.Int, nrow)
    set_attr(prim, "newton:usd:heightfield:columns", T.Int, ncol)
    set_attr(prim, "newton:usd:heightfield:elevation", T.FloatArray, Vt.FloatArray.FromNumpy(elevation))
    set_attr(prim, "newton:usd:heightfield:size", T.DoubleArray, size)
    return geom


def _ellipsoid_mesh(stage, path, radii, segments=16, rings=8):
    """An ellipsoid collider: UsdPhysics has no ellipsoid and takes no non-uniformly scaled Sphere, so a
    Mesh of the ellipsoid (a convex hull for tools that read UsdPhysics only) with NewtonUsdEllipsoidAPI
    and the radii (the exact ellipsoid for newton_usd)."""
    theta = np.linspace(0.0, np.pi, rings + 1)[1:-1]  # from the +Z pole, the poles apart
    phi = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1).reshape(-1, 3)
    points = np.vstack([[0.0, 0.0, 1.0], ring, [0.0, 0.0, -1.0]]) * np.asarray(radii, dtype=np.float64)
    bottom = len(points) - 1
    faces = []
    for j in range(segments):
        k = (j + 1) % segments
        faces.append((0, 1 + j, 1 + k))
        for r in range(rings - 2):
            a, b = 1 + r * segments, 1 + (r + 1) * segments
            faces += [(a + j, b + j, b + k), (a + j, b + k, a + k)]
        last = 1 + (rings - 2) * segments
        faces.append((last + j, bottom, last + k))
    mesh = UsdGeom.Mesh.Define(stage, path)
    mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(points.astype(np.float32)))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), 3, dtype=np.int32)))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(np.array(faces, dtype=np.int32).ravel()))
    mesh.CreateExtentAttr(UsdGeom.Mesh.ComputeExtent(mesh.GetPointsAttr().Get()))
    prim = mesh.GetPrim()
    UsdPhysics.MeshCollisionAPI.Apply(prim).CreateApproximationAttr(UsdPhysics.Tokens.convexHull)
    prim.ApplyAPI("NewtonUsdEllipsoidAPI")
    set_attr(prim, "newton:usd:ellipsoid:radii", T.Double3, Gf.Vec3d(*map(float, radii)))
    return mesh
