"""Mass properties of solid shapes, and their combination into a body's.

Every function returns ``(mass, com, inertia)``: mass in kg, the center of mass in the shape frame and
the 3x3 inertia tensor about the center of mass in shape-frame axes. Capsules and cylinders lie
along the shape's local Z.
"""

from __future__ import annotations

import numpy as np

from .quat import quat_to_matrix
from .types import GeoType


def sphere(density: float, radius: float):
    m = density * 4.0 / 3.0 * np.pi * radius**3
    return m, np.zeros(3), np.eye(3) * (0.4 * m * radius**2)


def ellipsoid(density: float, a: float, b: float, c: float):
    m = density * 4.0 / 3.0 * np.pi * a * b * c
    return m, np.zeros(3), np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * (m / 5.0)


def box(density: float, hx: float, hy: float, hz: float):
    m = density * 8.0 * hx * hy * hz
    d = np.array([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy]) * (m / 3.0)
    return m, np.zeros(3), np.diag(d)


def cylinder(density: float, radius: float, half_height: float):
    h = 2.0 * half_height
    m = density * np.pi * radius**2 * h
    ixx = m * (3.0 * radius**2 + h * h) / 12.0
    return m, np.zeros(3), np.diag([ixx, ixx, 0.5 * m * radius**2])


def capsule(density: float, radius: float, half_height: float):
    h = 2.0 * half_height
    m_cyl = density * np.pi * radius**2 * h
    m_hemi = density * 2.0 / 3.0 * np.pi * radius**3  # one hemisphere
    izz = 0.5 * m_cyl * radius**2 + 2.0 * 0.4 * m_hemi * radius**2
    # Each hemisphere: own inertia about its COM plus the shift to the capsule center.
    c = 3.0 * radius / 8.0
    i_hemi_own = 0.4 * m_hemi * radius**2 - m_hemi * c * c
    d = half_height + c
    ixx = m_cyl * (3.0 * radius**2 + h * h) / 12.0 + 2.0 * (i_hemi_own + m_hemi * d * d)
    return m_cyl + 2.0 * m_hemi, np.zeros(3), np.diag([ixx, ixx, izz])


def mesh(density: float, vertices: np.ndarray, indices: np.ndarray):
    """Solid, closed triangle mesh (outward winding) by the divergence theorem over its tetrahedra.

    An open or inside-out mesh gives a non-positive volume; then the mesh is treated as a thin shell of
    its triangles' area instead, so that it still has a plausible mass.
    """
    v = np.asarray(vertices, dtype=np.float64)
    tri = np.asarray(indices, dtype=np.int64).reshape(-1, 3)
    a, b, c = v[tri[:, 0]], v[tri[:, 1]], v[tri[:, 2]]
    vol6 = np.einsum("ij,ij->i", a, np.cross(b, c))
    volume = vol6.sum() / 6.0
    if volume <= 1e-12:
        return _mesh_shell(density, a, b, c)
    com = ((a + b + c) * vol6[:, None]).sum(0) / (4.0 * vol6.sum())
    # Second moments of each tetrahedron (origin, a, b, c): integral of x_i x_j over the volume.
    s = a + b + c
    cov = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            cov[i, j] = np.sum(
                vol6 / 120.0 * (a[:, i] * a[:, j] + b[:, i] * b[:, j] + c[:, i] * c[:, j] + s[:, i] * s[:, j])
            )
    m = density * volume
    cov = density * cov - m * np.outer(com, com)
    inertia = np.eye(3) * np.trace(cov) - cov
    return m, com, inertia


def _mesh_shell(density, a, b, c):
    # Area-weighted point masses at triangle centroids, with density per unit area scaled by a nominal
    # 1 cm thickness: rough, but positive and centered where the surface is.
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    total = area.sum()
    if total <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    centers = (a + b + c) / 3.0
    m_tri = density * 0.01 * area
    m = m_tri.sum()
    com = (centers * m_tri[:, None]).sum(0) / m
    r = centers - com
    inertia = np.einsum("i,ij,ik->jk", m_tri, r, r)
    inertia = np.eye(3) * np.trace(inertia) - inertia
    return m, com, inertia


def mujoco_mesh(density: float, vertices: np.ndarray, indices: np.ndarray, mode: str):
    """Mass properties of a mesh as MuJoCo computes them for its mesh ``inertia`` ``mode`` ("convex": the
    convex hull's volume; "shell": the surface, ``density`` per unit area; "exact", "legacy"), by compiling
    a one-geom MuJoCo model: MuJoCo's own rules, its convex hull included."""
    import mujoco  # noqa: PLC0415  (a dependency; only this function needs it)

    spec = mujoco.MjSpec()
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_TRUE
    mesh = spec.add_mesh(name="mesh")
    mesh.uservert = np.asarray(vertices, dtype=np.float32).ravel()
    mesh.userface = np.asarray(indices, dtype=np.int32).ravel()
    mesh.inertia = getattr(mujoco.mjtMeshInertia, f"mjMESH_INERTIA_{mode.upper()}")
    body = spec.worldbody.add_body(name="body")
    body.add_freejoint()
    body.add_geom(type=mujoco.mjtGeom.mjGEOM_MESH, meshname="mesh", density=float(density))
    m = spec.compile()
    w, x, y, z = m.body_iquat[1]
    r = quat_to_matrix(np.array([x, y, z, w]))
    return float(m.body_mass[1]), m.body_ipos[1].astype(np.float64), r @ np.diag(m.body_inertia[1]) @ r.T


def shape_mass_properties(geo_type: GeoType, scale, density: float, mesh_source=None, mesh_inertia=None):
    """Mass properties of one shape of ``geo_type`` with size parameters ``scale``; a mesh's with MuJoCo's
    mesh inertia ``mesh_inertia`` ("convex", "shell", ...: :func:`mujoco_mesh`) when given, else its volume.

    Planes have none (they are always static). Returns ``(0, 0, 0)`` for them.
    """
    sx, sy, sz = (float(x) for x in scale)
    if geo_type == GeoType.SPHERE:
        return sphere(density, sx)
    if geo_type == GeoType.BOX:
        return box(density, sx, sy, sz)
    if geo_type == GeoType.ELLIPSOID:
        return ellipsoid(density, sx, sy, sz)
    if geo_type == GeoType.CAPSULE:
        return capsule(density, sx, sy)
    if geo_type == GeoType.CYLINDER:
        return cylinder(density, sx, sy)
    if geo_type == GeoType.MESH and mesh_source is not None and mesh_inertia is not None:
        return mujoco_mesh(density, mesh_source.vertices * np.array([sx, sy, sz]), mesh_source.indices, mesh_inertia)
    if geo_type == GeoType.MESH and mesh_source is not None:
        return mesh(density, mesh_source.vertices * np.array([sx, sy, sz]), mesh_source.indices)
    return 0.0, np.zeros(3), np.zeros((3, 3))


def transform_inertia(mass, com, inertia, pos, quat):
    """Express shape-frame mass properties in the body frame, given the shape pose (pos, Warp quat)."""
    r = quat_to_matrix(quat)
    return mass, r @ com + np.asarray(pos, dtype=np.float64), r @ inertia @ r.T


def combine(parts):
    """Sum ``(mass, com, inertia)`` parts that share one frame into one (parallel axis theorem)."""
    if len(parts) == 1:  # one part: nothing to move (the common case of a body with one collider)
        m, c, i = parts[0]
        if m > 0.0:
            return m, np.asarray(c, dtype=np.float64), np.asarray(i, dtype=np.float64)
    total = sum(p[0] for p in parts)
    if total <= 0.0:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    com = sum(p[0] * np.asarray(p[1]) for p in parts) / total
    inertia = np.zeros((3, 3))
    for m, c, i in parts:
        d = np.asarray(c) - com
        inertia += i + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
    return total, com, inertia
