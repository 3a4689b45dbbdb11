"""Colliders (PhysicsCollisionAPI): builder shapes, their sizes in simulation units, their materials'
friction, meshes as the shapes their ``physics:approximation`` asks for, and the SDF settings of mesh colliders that
apply NewtonSDFCollisionAPI (:func:`sdf_collision`).
"""

from __future__ import annotations

import numpy as np

from ..core.builder import Mesh
from ..core.elements import SdfCollision
from ..core.quat import gf_to_xyzw, quat_multiply, transform_multiply
from ..core.types import MESH_INERTIA_MODES, GeoType
from ..errors import UsdInputError
from . import properties as props
from .descriptors import OT, axis_token
from .gprims import AXIS_TO_Z, HEIGHTFIELD_API, cone_mesh, read_heightfield, read_mesh


def collider_material(d, materials):
    """The material descriptor of collider ``d`` (USD's descriptor): the first of its bound materials that
    ``materials`` (path -> material descriptor) holds; None: no material (the defaults)."""
    for m in d.materials:
        md = materials.get(str(m))
        if md is not None:
            return md
    return None


_SIZE_ATTRIBUTES = {  # what authors a collider's size, by its UsdPhysics object type (for messages)
    OT.CubeShape: "size",
    OT.SphereShape: "radius",
    OT.CapsuleShape: "radius, height",
    OT.CylinderShape: "radius, height",
    OT.Capsule1Shape: "radius, height",
    OT.Cylinder1Shape: "radius, height",
    OT.ConeShape: "radius, height",
}


def _check_finite_collider(path, obj_type, pos, parts, file) -> None:
    """A collider's size and place must be finite numbers (NaN or infinity in a size, a scale or a
    transform would reach MuJoCo's compiler or the inertia computation as garbage)."""
    if not np.isfinite(pos).all():
        raise UsdInputError(
            f"the collider's position is {tuple(map(float, pos))}: the transform (xformOp:*, or a parent's) must be "
            "finite",
            file=file,
            prim=str(path),
            attribute="xformOpOrder",
        )
    for _, size, _, _ in parts:
        if not np.isfinite(np.asarray(size, dtype=np.float64)).all():
            raise UsdInputError(
                f"the collider's size is {tuple(map(float, size))}: sizes and scales must be finite",
                file=file,
                prim=str(path),
                attribute=_SIZE_ATTRIBUTES.get(obj_type),
            )


def import_shape(
    builder, stage, obj_type, path, d, frame, materials, body_pose, result, shape_parts, ctx, body=None, label=None,
    frictions=None,
):  # fmt: skip
    """One collider. ``body`` and ``label`` are given for the colliders of PointInstancer instances
    (the descriptor is the prototype's). ``frictions``: a dict the colliders of one import share, to read
    each material once (filled here)."""
    diag = result.diagnostics
    rigid_body = d.rigidBody
    body_path = str(rigid_body) if rigid_body else ""  # (an empty Sdf.Path is false)
    if body is None:
        body = result.body_index.get(body_path, -1)
    s = frame.meters_per_unit
    local_pos = np.array(d.localPos, dtype=np.float64) * s
    local_rot = gf_to_xyzw(d.localRot)
    if body < 0:
        if body_path in body_pose:  # collider of a disabled body: static, at the body's pose
            bp, bq = body_pose[body_path]
            local_pos, local_rot = transform_multiply((bp, bq), (local_pos, local_rot))
        else:  # a static collider: its pose is a world pose
            local_pos, local_rot = frame.world_pose_to_sim(np.array(d.localPos, dtype=np.float64), local_rot)

    prim = stage.GetPrimAtPath(path)
    mesh = sdf = None
    if obj_type == OT.CubeShape:
        geo, scale = GeoType.BOX, np.array(d.halfExtents, dtype=np.float64) * s
    elif obj_type == OT.SphereShape:
        # The parser folds scale into the radius (its largest component); a non-uniform scale is an ellipsoid.
        local_scale = np.abs(np.array(d.localScale, dtype=np.float64))
        if np.ptp(local_scale) > 1e-6 * local_scale.max():
            geo, scale = GeoType.ELLIPSOID, tuple(d.radius / local_scale.max() * local_scale * s)
        else:
            geo, scale = GeoType.SPHERE, (d.radius * s, 0.0, 0.0)
    elif obj_type in (OT.CapsuleShape, OT.CylinderShape, OT.Capsule1Shape, OT.Cylinder1Shape):
        geo = GeoType.CAPSULE if obj_type in (OT.CapsuleShape, OT.Capsule1Shape) else GeoType.CYLINDER
        if obj_type in (OT.Capsule1Shape, OT.Cylinder1Shape):
            radius = max(d.topRadius, d.bottomRadius) if hasattr(d, "topRadius") else d.radius
            diag.add("tapered capsule/cylinder approximated with its larger radius", path)
        else:
            radius = d.radius
        scale = (radius * s, d.halfHeight * s, 0.0)
        local_rot = quat_multiply(local_rot, AXIS_TO_Z[axis_token(d.axis)])
    elif obj_type == OT.ConeShape:  # MuJoCo has no cone: a convex mesh of the cone's volume
        geo, scale, mesh = GeoType.MESH, (1.0, 1.0, 1.0), cone_mesh(d.radius * s, d.halfHeight * s)
        local_rot = quat_multiply(local_rot, AXIS_TO_Z[axis_token(d.axis)])
    elif obj_type == OT.PlaneShape:
        geo, scale = GeoType.PLANE, (0.0, 0.0, 0.0)
        local_rot = quat_multiply(local_rot, AXIS_TO_Z[axis_token(d.axis)])
    elif obj_type == OT.MeshShape and prim.HasAPI(HEIGHTFIELD_API):  # a height field, not the mesh's hull
        size, field = read_heightfield(prim, result, ctx)
        parts = [(GeoType.HFIELD, size[:3], None, field)]
    elif obj_type == OT.MeshShape and prim.HasAPI("NewtonUsdEllipsoidAPI"):
        radii = prim.GetAttribute(_ELLIPSOID_RADII).Get()
        if radii is None or min(radii) <= 0:
            raise UsdInputError(f"must be > 0 in every component, got {radii}", file=result.file, prim=str(path),
                                attribute=_ELLIPSOID_RADII)  # fmt: skip
        result.resolver.used.add((str(path), _ELLIPSOID_RADII))
        scale = tuple(float(r) * abs(float(k)) * s for r, k in zip(radii, d.meshScale, strict=True))
        parts = [(GeoType.ELLIPSOID, scale, None, None)]
    elif obj_type == OT.MeshShape:
        mesh = read_mesh(prim, np.array(d.meshScale, dtype=np.float64) * s, result.file)
        if mesh is None:
            diag.add("mesh collider without points or faces ignored", path)
            return
        approx = str(d.approximation) if d.approximation else "none"
        if prim.HasAPI(SDF_API):  # its field is built from the mesh itself, whatever the approximation
            sdf = sdf_collision(prim, result.resolver, ctx, path)
            if approx not in ("none", ""):
                diag.add(f"physics:approximation is not used on a {SDF_API} collider: it collides as its mesh", path)
            parts = [(GeoType.MESH, (1.0, 1.0, 1.0), None, mesh)]
        else:
            parts = _mesh_parts(prim, mesh, approx, path, diag)
        geo, scale, offset, mesh = parts[0]
    else:
        diag.add(f"{obj_type.name} colliders are not supported yet and were ignored", path)
        return

    if obj_type != OT.MeshShape:
        parts = [(geo, scale, None, mesh)]
    if sdf is None and prim.HasAPI(SDF_API):
        diag.add(f"{SDF_API} is honored on mesh colliders only: this collider collides as its shape", path)
    _check_finite_collider(path, obj_type, local_pos, parts, result.file)
    resolver = result.resolver
    md = collider_material(d, materials)
    mu, restitution, mu_torsional, mu_rolling = material_values(stage, md, resolver, ctx, frictions)
    if restitution > 0.0:
        diag.add("restitution is not simulated by the MuJoCo solver", path)
    resolved = resolver.resolve_all(prim, props.SHAPE_PROPERTIES, ctx, path)
    label = label or str(path)
    for k, (geo, scale, offset, mesh) in enumerate(parts):  # a decomposed mesh: one shape per convex part
        pose = (local_pos, local_rot) if offset is None else transform_multiply((local_pos, local_rot), offset)
        idx = builder.add_shape(
            body,
            geo,
            pose,
            scale,
            mesh=mesh,
            mu=mu,
            restitution=restitution,
            mu_torsional=mu_torsional,
            mu_rolling=mu_rolling,
            margin=resolved["margin"].value,
            gap=resolved["gap"].value,
            collision_enabled=bool(d.collisionEnabled),
            label=label if k == 0 else f"{label}:part{k}",
            sdf=sdf,
        )
        for name in _mujoco_shape_values(resolved, frictions):
            builder.set_mujoco("shape", f"geom_{name}", idx, resolved[name].value)
        mass_model = resolved["mass_model"].value
        if resolved["mass_model"].kind == "authored" and geo == GeoType.MESH:  # (unauthored: MuJoCo's default)
            builder.set_mujoco("shape", "mesh_inertia", idx, MESH_INERTIA_MODES.index(mass_model))
        elif mass_model == "shell" and geo != GeoType.MESH:
            diag.add("shell mass models are applied to mesh colliders only: this one is solid", path)
        result.shape_index[label if k == 0 else f"{label}:part{k}"] = idx
        if body >= 0:
            by_mujoco = mass_model in ("convex", "shell") and geo == GeoType.MESH  # else our solid volume
            mujoco_mass = (mass_model, resolved["shell_thickness"].value) if by_mujoco else None
            shape_parts[body].append((idx, prim, md, path, mujoco_mass))


SDF_API = "NewtonSDFCollisionAPI"


def sdf_collision(prim, resolver, ctx, path) -> SdfCollision:
    """The SDF settings of a mesh collider that applies NewtonSDFCollisionAPI, in SI (its lengths in stage units,
    its stiffness in stage force per stage distance cubed, converted). As Newton's importer reads them: an authored
    ``newton:sdfTargetVoxelSize`` sets the grid (``newton:sdfMaxResolution`` is then unused)."""
    r = resolver.resolve_all(prim, props.SDF_PROPERTIES, ctx, path)
    voxel = r["sdf_target_voxel_size"].value
    return SdfCollision(
        max_resolution=None if voxel is not None else r["sdf_max_resolution"].value,
        target_voxel_size=voxel,
        narrow_band=(r["sdf_narrow_band_inner"].value, r["sdf_narrow_band_outer"].value),
        texture_format=r["sdf_texture_format"].value,
        padding=r["sdf_padding"].value,
        hydroelastic=bool(r["hydroelastic"].value),
        hydroelastic_stiffness=r["hydroelastic_stiffness"].value,
    )


_MATERIAL_PROPERTIES = (props.MATERIAL_TORSIONAL, props.MATERIAL_ROLLING)


def material_values(stage, md, resolver, ctx, frictions=None) -> tuple:
    """``(mu, restitution, torsional friction, rolling friction)`` of a collider whose material is ``md`` (USD's
    material descriptor; None: the defaults). ``frictions``: a dict the colliders of one import share, to read
    each material once (filled here)."""
    if md is None:
        return 0.5, 0.0, props.MATERIAL_TORSIONAL.default, props.MATERIAL_ROLLING.default
    known = frictions.get(("material", id(md))) if frictions is not None else None
    if known is None:
        rolling = resolver.resolve_all(stage.GetPrimAtPath(md.primPath), _MATERIAL_PROPERTIES, ctx)
        known = (float(md.dynamicFriction), float(md.restitution), rolling["torsional_friction"].value,
                 rolling["rolling_friction"].value, md)  # fmt: skip
        if frictions is not None:
            frictions[("material", id(md))] = known  # (keeps md: its id is not reused meanwhile)
    return known[:4]


_MUJOCO_SHAPE_VALUES = ("condim", "priority", "solmix", "solref", "solimp", "group")


def _mujoco_shape_values(resolved, cache=None) -> tuple:
    """The names of :data:`_MUJOCO_SHAPE_VALUES` that ``resolved`` (a collider's resolved properties) does not
    leave at their defaults. ``cache``: a dict to remember them per result (colliders that author none of
    their properties share one)."""
    hit = cache.get(("mujoco", id(resolved))) if cache is not None else None
    if hit is not None and hit[0] is resolved:
        return hit[1]
    names = tuple(name for name in _MUJOCO_SHAPE_VALUES if resolved[name].kind != "default")
    if cache is not None:
        cache[("mujoco", id(resolved))] = (resolved, names)
    return names


_IDENTITY_ROT = np.array([0.0, 0.0, 0.0, 1.0])

_ELLIPSOID_RADII = "newton:usd:ellipsoid:radii"  # NewtonUsdEllipsoidAPI: a Mesh collider that is an ellipsoid

_DECOMPOSITION = "physxConvexDecompositionCollision:"


def _mesh_parts(prim, mesh, approx, path, diag) -> list:
    """A mesh collider as the shapes its ``physics:approximation`` asks for: ``[(geo type, scale, offset
    (pos, quat) in the mesh frame or None, Mesh or None)]``.

    none, convexHull: the mesh (MuJoCo collides with its convex hull, computed by MuJoCo's qhull);
    boundingSphere: the sphere about the bounding box's center through the farthest vertex;
    boundingCube: the mesh-frame bounding box; convexDecomposition: CoACD's convex parts
    (``physxConvexDecompositionCollision:maxConvexHulls`` and ``hullVertexLimit`` are honoured);
    meshSimplification: the convex hull.
    """
    v = mesh.vertices
    if approx == "boundingSphere":
        center = 0.5 * (v.min(axis=0) + v.max(axis=0))
        radius = float(np.linalg.norm(v - center, axis=1).max())
        return [(GeoType.SPHERE, (radius, 0.0, 0.0), (center, _IDENTITY_ROT), None)]
    if approx == "boundingCube":
        lo, hi = v.min(axis=0), v.max(axis=0)
        return [(GeoType.BOX, tuple(np.maximum(0.5 * (hi - lo), 1e-9)), (0.5 * (lo + hi), _IDENTITY_ROT), None)]
    if approx == "convexDecomposition":
        return [(GeoType.MESH, (1.0, 1.0, 1.0), None, part) for part in _decompose(prim, mesh, path, diag)]
    if approx not in ("none", "convexHull", ""):
        diag.add(f"mesh collision approximation '{approx}' simulated as the mesh's convex hull", path)
    return [(GeoType.MESH, (1.0, 1.0, 1.0), None, mesh)]


def _decompose(prim, mesh, path, diag) -> list:
    """Convex parts of ``mesh`` by CoACD (collision-aware approximate convex decomposition)."""
    try:
        import coacd  # noqa: PLC0415  (loaded only for meshes that ask for a decomposition)
    except ImportError:  # pragma: no cover - a dependency; kept working without it
        diag.add("convexDecomposition needs the coacd package: simulated as the mesh's convex hull", path)
        return [mesh]
    options = {}
    for attr, key in (("maxConvexHulls", "max_convex_hull"), ("hullVertexLimit", "max_ch_vertex")):
        a = prim.GetAttribute(_DECOMPOSITION + attr)
        if a and a.HasAuthoredValue():
            options[key] = int(a.Get())
    coacd.set_log_level("error")
    parts = coacd.run_coacd(coacd.Mesh(mesh.vertices, mesh.indices.reshape(-1, 3)), **options)
    out = [Mesh(np.asarray(pv), np.asarray(pf)) for pv, pf in parts if len(pf)]
    return out or [mesh]
