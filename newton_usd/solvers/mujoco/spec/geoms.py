"""Shapes as MuJoCo geoms (meshes and height fields as assets; flat meshes given a slab), and explicit contact
pairs between them."""

from __future__ import annotations

import mujoco
import numpy as np

from ....core.quat import (
    xyzw_to_wxyz,
)
from ....core.types import MESH_INERTIA_MODES, GeoType
from .values import GEOM_VALUES, ElementNames, mj_params, set_from

GEOM_TYPES = {
    GeoType.PLANE: mujoco.mjtGeom.mjGEOM_PLANE,
    GeoType.SPHERE: mujoco.mjtGeom.mjGEOM_SPHERE,
    GeoType.ELLIPSOID: mujoco.mjtGeom.mjGEOM_ELLIPSOID,
    GeoType.CAPSULE: mujoco.mjtGeom.mjGEOM_CAPSULE,
    GeoType.BOX: mujoco.mjtGeom.mjGEOM_BOX,
    GeoType.MESH: mujoco.mjtGeom.mjGEOM_MESH,
    GeoType.CYLINDER: mujoco.mjtGeom.mjGEOM_CYLINDER,
    GeoType.HFIELD: mujoco.mjtGeom.mjGEOM_HFIELD,
}


def add_geoms(spec, model, a, order, shapes_of, body_handles, joints_of_child, names, diag):
    """A geom per shape on its body (``order``: the bodies, parents first), meshes and height fields as spec
    assets. A static collider that a body is filtered against gets a static body of its own (named as the
    collider), so that a MuJoCo exclude of that body pair keeps the two apart and nothing else. Returns
    ``(geom handles by shape, None where not built; static holder bodies by shape)``. ``names``: the body, geom
    and mesh :class:`ElementNames`."""
    body_names, geom_names, mesh_names = names
    geom_handles = [None] * model.shape_count
    mesh_inertia = getattr(model.mujoco, "mesh_inertia", None)
    filtered_static = {s for _, s in getattr(model, "body_shape_collision_filter_pairs", ())}
    static_holders = {}
    for b in [-1] + order:
        for s in shapes_of[b]:
            holder = spec.worldbody if b < 0 else body_handles[b]
            if s in filtered_static:
                holder = static_holders[s] = spec.worldbody.add_body(name=body_names(model.shape_label[s]))
            gt = GeoType(int(a.shape_type[s]))
            if gt == GeoType.PLANE and b >= 0 and joints_of_child.get(b):
                diag.add("planes on moving bodies are not supported by MuJoCo: ignored", model.shape_label[s])
                continue
            t = a.shape_transform[s]
            g = holder.add_geom(
                name=geom_names(model.shape_label[s]), type=GEOM_TYPES[gt], pos=t[:3], quat=xyzw_to_wxyz(t[3:])
            )
            sc = a.shape_scale[s]
            if gt == GeoType.PLANE:
                g.size = [sc[0], sc[1], 1.0]
            elif gt == GeoType.SPHERE:
                g.size = [sc[0], 0.0, 0.0]
            elif gt in (GeoType.CAPSULE, GeoType.CYLINDER):
                g.size = [sc[0], sc[1], 0.0]
            elif gt in (GeoType.BOX, GeoType.ELLIPSOID):
                g.size = sc
            elif gt == GeoType.MESH:
                src = model.shape_source[s]
                mesh = spec.add_mesh(name=mesh_names(model.shape_label[s]))
                vertices, faces = src.vertices * sc, src.indices.reshape(-1, 3)
                if mesh_inertia is not None and not np.isnan(mesh_inertia[s]):  # mjc:inertia, newton:massModel
                    mode = MESH_INERTIA_MODES[int(mesh_inertia[s])]
                    mesh.inertia = getattr(mujoco.mjtMeshInertia, f"mjMESH_INERTIA_{mode.upper()}")
                if _flat(vertices, faces):  # (the bodies' inertias are given: the mesh's only lets it compile)
                    mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
                    if a.shape_collision_enabled[s]:
                        vertices, faces = _slab(vertices, faces)
                        diag.add(f"flat mesh colliders are given a thickness behind their faces ({SLAB:.0%} of "
                                 "their size): MuJoCo collides convex hulls", model.shape_label[s])  # fmt: skip
                mesh.uservert = vertices.astype(np.float32).ravel()
                mesh.userface = faces.astype(np.int32).ravel()
                g.meshname = mesh.name
            elif gt == GeoType.HFIELD:
                src = model.shape_source[s]
                nrow, ncol = src.elevation.shape
                hfield = spec.add_hfield(name=mesh_names(model.shape_label[s]), nrow=nrow, ncol=ncol, size=src.size)
                hfield.userdata = src.elevation.astype(np.float32).ravel()
                g.hfieldname = hfield.name
            g.friction = [
                float(a.shape_material_mu[s]),
                float(a.shape_material_mu_torsional[s]),
                float(a.shape_material_mu_rolling[s]),
            ]
            g.margin = float(a.shape_margin[s])
            g.gap = float(a.shape_gap[s])
            set_from(g, model, s, GEOM_VALUES)
            if not a.shape_collision_enabled[s]:
                g.contype = 0
                g.conaffinity = 0
            geom_handles[s] = g
    return geom_handles, static_holders


SLAB = 0.01
"""A flat mesh collider's thickness behind its faces, relative to its largest extent."""


def _slab(vertices, faces):
    """A flat mesh thickened by :data:`SLAB` behind its faces (against their right-handed normal), so that
    its convex hull has a volume: the faces stay the surface that touches."""
    v = np.asarray(vertices, dtype=np.float64)
    tri = v[faces]
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]).sum(axis=0)
    length = np.linalg.norm(normal)
    if length == 0.0:  # no area: left to MuJoCo's error
        return v, faces
    behind = v - normal / length * SLAB * float(np.ptp(v, axis=0).max())
    return np.concatenate([v, behind]), np.concatenate([faces, faces[:, ::-1] + len(v)])


def _flat(vertices, indices) -> bool:
    """Whether a mesh encloses no volume (a flat or degenerate surface, as visual decals and MJCF's
    ``inertia="shell"`` meshes are): MuJoCo's default (volume) mesh inertia refuses to compile it."""
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    if not len(v):
        return False
    tri = v[np.asarray(indices, dtype=np.int64).reshape(-1, 3)] - v.mean(axis=0)
    volume = np.abs(np.einsum("ij,ij->i", tri[:, 0], np.cross(tri[:, 1], tri[:, 2]))).sum() / 6.0
    extent = float(np.ptp(v, axis=0).max())
    return volume <= 1e-9 * extent**3


def built_geom_names(model, geom_handles) -> dict:
    """Shape label -> MuJoCo geom name, for the shapes the spec built."""
    return {label: g.name for label, g in zip(model.shape_label, geom_handles, strict=True) if g is not None}


def add_contact_pairs(spec, model, geom_of, diag):
    """MuJoCo explicit contact pairs (``model.mujoco.contact_pair``: "path", "values" as NewtonUsdContactPair's
    attributes, and the shape labels "geom0" and "geom1")."""
    names = ElementNames(model)
    for entry in getattr(model.mujoco, "contact_pair", None) or []:
        geoms = [entry.get(k) or [] for k in ("geom0", "geom1")]
        if any(len(g) != 1 or g[0] not in geom_of for g in geoms):
            diag.add("contact pair whose two geoms are not each one simulated collider: ignored", entry["path"])
            continue
        v = entry["values"]
        spec.add_pair(
            name=names(entry["path"]),
            geomname1=geom_of[geoms[0][0]],
            geomname2=geom_of[geoms[1][0]],
            condim=int(v["condim"]),
            friction=mj_params(v["friction"], 5),
            solref=mj_params(v["solref"], 2),
            solreffriction=mj_params(v["solreffriction"], 2),
            solimp=mj_params(v["solimp"], 5),
            margin=float(v["margin"]),
            gap=float(v["gap"]),
        )
