"""MJCF to a USD asset: UsdPhysics bodies, joints and colliders, plus the mjc:* schemas for what only
MuJoCo has, so that the asset simulates as the MJCF does (here and in tools that read the same
schemas).

The compiled model at qpos0 is written out: one Xform per body, nested as in the MJCF tree, with a
PhysicsRigidBodyAPI and its compiled inertial (PhysicsMassAPI); one gprim per geom with
PhysicsCollisionAPI and MjcCollisionAPI (a height field: a Mesh of its surface with
NewtonUsdHeightfieldAPI holding MuJoCo's grid); physics materials for the friction triples; one UsdPhysics
joint per MJCF joint (several per body stay several, in order; a body without joints gets a fixed
joint; free joints need none), with MjcJointAPI values; MjcActuator prims; connect and weld
equalities as joints excluded from articulations; a PhysicsScene with MjcSceneAPI and every option
and flag, the time step exact; contact pairs, keyframes, cameras and lights. The bodies are placed at
qpos0, so a joint's USD coordinate is MuJoCo's qpos minus the joint's ref (``mjc:ref``, kept with
``mjc:springref`` as MuJoCo's values; the physics limits beside it are MuJoCo's range, in qpos, as
mujoco-usd-converter writes them).
"""

from __future__ import annotations

import math
import os

import mujoco
import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdLux, UsdPhysics, UsdShade, Vt

from ..core.quat import transform_inverse, transform_multiply, wxyz_to_xyzw
from ..diagnostics import Diagnostics
from ..errors import UsdInputError
from .compiled import excluded_body_pairs, mesh_in_asset_frame
from .importer import (
    _OPTION_ENUMS,
    _OPTION_VALUES,
    _OPTION_VECTORS,
    _enum_token,
    actuator_values,
    contact_pair_values,
    load_mjcf,
    tendon_path,
    tendon_values,
)
from .options import MjcfOptions

T = Sdf.ValueTypeNames
DEG = 180.0 / math.pi


def _gf_quat(q_xyzw, gf=Gf.Quatf):
    return gf(float(q_xyzw[3]), float(q_xyzw[0]), float(q_xyzw[1]), float(q_xyzw[2]))


def _quat_from_to(source, axis) -> np.ndarray:
    """A Warp-order quaternion rotating unit vector ``source`` onto the direction ``axis``."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    x = np.asarray(source, dtype=np.float64)
    c = float(np.dot(x, a))
    if c < -1.0 + 1e-12:  # opposite: half a turn about any perpendicular axis
        perp = np.cross(x, [1.0, 0.0, 0.0] if abs(x[0]) < 0.9 else [0.0, 1.0, 0.0])
        return np.append(perp / np.linalg.norm(perp), 0.0)
    v = np.cross(x, a)
    q = np.array([v[0], v[1], v[2], 1.0 + c])
    return q / np.linalg.norm(q)


def _quat_x_to(axis) -> np.ndarray:
    """A Warp-order quaternion rotating +X onto unit ``axis``."""
    return _quat_from_to((1.0, 0.0, 0.0), axis)


class _MjcfName(str):
    """An MJCF element's own name (not one made up here for an unnamed element)."""


def _name(m, obj, i, fallback):
    n = mujoco.mj_id2name(m, obj, i)
    return _MjcfName(n) if n else f"{fallback}_{i}"


class _Names:
    """Unique, valid prim names; where a prim's name is not its MJCF element's name (made a valid
    identifier, or made unique with a ``_<n>`` suffix), the MJCF name is kept as its displayName."""

    def __init__(self):
        self.used = set()
        self.display = {}

    def child(self, parent: Sdf.Path, name: str) -> Sdf.Path:
        base = Tf.MakeValidIdentifier(name) or "prim"
        candidate, n = base, 1
        while parent.AppendChild(candidate) in self.used:
            n += 1
            candidate = f"{base}_{n}"
        path = parent.AppendChild(candidate)
        self.used.add(path)
        if isinstance(name, _MjcfName) and candidate != name:
            self.display[path] = str(name)
        return path

    def set_display_names(self, stage) -> None:
        for path, name in self.display.items():
            prim = stage.GetPrimAtPath(path)
            if prim:
                prim.SetDisplayName(name)


def _set(prim, name, type_name, value):
    prim.CreateAttribute(name, type_name, custom=False).Set(value)


def _set_xform(prim, pose):
    xf = UsdGeom.Xformable(prim)
    xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*map(float, pose[0])))
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(_gf_quat(pose[1], Gf.Quatd))


def convert(
    source,
    output,
    *,
    diagnostics: Diagnostics | None = None,
    **import_options,
) -> str:
    """Convert the MJCF ``source`` (path or XML text) to the USD file ``output``; returns its path.

    The stage is built in memory and written to a temporary file next to ``output``, renamed to
    ``output`` once complete: a failure leaves no file behind (and an existing ``output`` as it was).
    ``import_options`` are :func:`newton_usd.mjcf.add_mjcf`'s (``fix_base``, ``import_scene``,
    ``self_collision``, ``collision_from_visuals``, ``merge_meshes``, ``decomposition``: the fields of
    :class:`newton_usd.mjcf.options.MjcfOptions`);
    with ``import_scene=False`` no PhysicsScene is written (usdsim then uses its defaults)."""
    output = os.fspath(output)
    _check_output(output)
    diag = diagnostics if diagnostics is not None else Diagnostics()
    options = MjcfOptions(**import_options)
    m, file = load_mjcf(source, options, diag)
    if m.nbody <= 1:  # an include fragment (<mujoco> holding a <body> outside <worldbody>) or a template
        diag.add("the MJCF has no bodies: the USD has nothing to simulate", file)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    names = _Names()
    model_name = m.names[: m.names.find(b"\0")].decode() if m.names else "model"
    root = names.child(Sdf.Path.absoluteRootPath, _MjcfName(model_name) if model_name else "model")
    stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, root).GetPrim())
    stage.GetRootLayer().customLayerData = {"newton_usd:source": os.path.basename(file)}

    if options.import_scene:
        _write_scene(stage, m)
    world = [(d.xpos[b].copy(), wxyz_to_xyzw(d.xquat[b])) for b in range(m.nbody)]
    body_path = {0: root}
    for b in range(1, m.nbody):
        parent = int(m.body_parentid[b])
        path = names.child(body_path[parent], _name(m, mujoco.mjtObj.mjOBJ_BODY, b, "body"))
        body_path[b] = path
        prim = UsdGeom.Xform.Define(stage, path).GetPrim()
        local = transform_multiply(transform_inverse(world[parent]), world[b]) if parent else world[b]
        _set_xform(prim, local)
        if parent == 0 and any(int(m.body_parentid[c]) == b for c in range(1, m.nbody)):
            UsdPhysics.ArticulationRootAPI.Apply(prim)
        body = UsdPhysics.RigidBodyAPI.Apply(prim)
        if m.body_mocapid[b] >= 0:  # a mocap body: moved by its (animated) transform
            body.CreateKinematicEnabledAttr(True)
        if m.body_gravcomp[b]:
            _set(prim, "mjc:body:gravcomp", T.Double, float(m.body_gravcomp[b]))  # as mujoco-usd-converter
        if m.body_mass[b] <= 0:  # UsdPhysics reads mass 0 as "not set": author nothing
            continue
        mass = UsdPhysics.MassAPI.Apply(prim)
        mass.CreateMassAttr(float(m.body_mass[b]))
        mass.CreateCenterOfMassAttr(Gf.Vec3f(*map(float, m.body_ipos[b])))
        if (m.body_inertia[b] <= 0).any():  # UsdPhysics takes positive inertias only; none: from the colliders
            diag.add("a zero inertia has no UsdPhysics form (positive only): not written, so from the colliders", path)
            continue
        mass.CreateDiagonalInertiaAttr(Gf.Vec3f(*map(float, m.body_inertia[b])))
        mass.CreatePrincipalAxesAttr(_gf_quat(wxyz_to_xyzw(m.body_iquat[b])))

    materials = {}
    geom_path = {}
    paired = {int(g) for g in np.concatenate([m.pair_geom1, m.pair_geom2])}
    for g in range(m.ngeom):
        path = _write_geom(stage, m, g, body_path, names, materials, root, diag, paired)
        if path is not None:
            geom_path[g] = path
    _write_collision_filters(stage, m, body_path, diag)
    joint_path = {}
    for b in range(1, m.nbody):
        _write_joints(stage, m, b, world, body_path, names, joint_path, diag)
    site_path = _write_sites(stage, m, body_path, names)
    tendon_paths = _write_tendons(stage, m, root, names, joint_path, site_path, geom_path, diag)
    _write_actuators(stage, m, root, names, joint_path, body_path, diag, tendon_paths, site_path)
    _write_equalities(stage, m, world, body_path, site_path, joint_path, tendon_paths, root, names, diag)
    _write_keyframes(stage, m, root, names, diag)
    _write_contact_pairs(stage, m, root, names, geom_path, diag)
    _write_cameras(stage, m, body_path, names, diag)
    _write_lights(stage, m, body_path, names, diag)
    if m.nsensor:
        diag.add("MJCF sensors are not converted yet", file)
    names.set_display_names(stage)
    _save(stage, output)
    diag.emit(file)
    return output


def _check_output(output: str) -> None:
    folder = os.path.dirname(os.path.abspath(output))
    ext = os.path.splitext(output)[1][1:].lower()
    if ext not in ("usd", "usda", "usdc"):
        raise UsdInputError("cannot write the output: not a .usd, .usda or .usdc file name", file=output)
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise UsdInputError(f"cannot write the output: {folder} is not a writable directory", file=output)


def _save(stage, output: str) -> None:
    """Export ``stage`` to a temporary file beside ``output``, then rename it to ``output``."""
    folder, name = os.path.split(os.path.abspath(output))
    stem, ext = os.path.splitext(name)
    tmp = os.path.join(folder, f".{stem}.{os.getpid()}.tmp{ext}")
    try:
        try:
            written = stage.GetRootLayer().Export(tmp)
        except Tf.ErrorException as e:
            raise UsdInputError(f"cannot write the output: {str(e).strip()}", file=output) from None
        if not written:
            raise UsdInputError("cannot write the output", file=output)
        os.replace(tmp, output)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    layer = Sdf.Layer.Find(output)  # a layer of that name open in this process: show it the new file
    if layer:
        layer.Reload()


def _write_scene(stage, m):
    scene = UsdPhysics.Scene.Define(stage, "/PhysicsScene")
    g = np.array(m.opt.gravity, dtype=np.float64)
    n = float(np.linalg.norm(g))
    scene.CreateGravityDirectionAttr(Gf.Vec3f(*map(float, g / n)) if n > 0 else Gf.Vec3f(0, 0, -1))
    scene.CreateGravityMagnitudeAttr(n)
    prim = scene.GetPrim()
    prim.ApplyAPI("MjcSceneAPI")
    _set(prim, "mjc:compiler:angle", T.Token, "radian")  # every angle written here is in radians
    for name, (prefix, enum) in _OPTION_ENUMS.items():
        _set(prim, f"mjc:option:{name}", T.Token, _enum_token(getattr(m.opt, name), enum, prefix))
    for name in _OPTION_VALUES:
        value = getattr(m.opt, name)
        is_int = isinstance(value, (int, np.integer))
        _set(prim, f"mjc:option:{name}", T.Int if is_int else T.Double, int(value) if is_int else float(value))
    for name in _OPTION_VECTORS:
        value = [float(x) for x in getattr(m.opt, name)]
        if name in ("wind", "magnetic"):
            _set(prim, f"mjc:option:{name}", T.Double3, Gf.Vec3d(*value))
        else:
            _set(prim, f"mjc:option:{name}", T.DoubleArray, value)
    schema = Usd.SchemaRegistry().FindAppliedAPIPrimDefinition("MjcSceneAPI")
    flag_names = [p.split(":")[-1] for p in schema.GetPropertyNames() if p.startswith("mjc:flag:")] if schema else []
    for flag in flag_names:
        disable = getattr(mujoco.mjtDisableBit, f"mjDSBL_{flag.upper()}", None)
        enable = getattr(mujoco.mjtEnableBit, f"mjENBL_{flag.upper()}", None)
        if disable is not None:
            _set(prim, f"mjc:flag:{flag}", T.Bool, not (m.opt.disableflags & int(disable)))
        elif enable is not None:
            _set(prim, f"mjc:flag:{flag}", T.Bool, bool(m.opt.enableflags & int(enable)))


def _write_geom(stage, m, g, body_path, names, materials, root, diag, paired=frozenset()):
    """One geom as a gprim (a collider unless contype = conaffinity = 0 and no contact pair names it in
    ``paired``); returns its path, or None."""
    gt = int(m.geom_type[g])
    size = m.geom_size[g]
    parent = body_path[int(m.geom_bodyid[g])]
    path = names.child(parent, _name(m, mujoco.mjtObj.mjOBJ_GEOM, g, "geom"))
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
    _set_xform(prim, pose if gt == mujoco.mjtGeom.mjGEOM_MESH else (m.geom_pos[g].copy(), wxyz_to_xyzw(m.geom_quat[g])))
    if gt == mujoco.mjtGeom.mjGEOM_BOX or (gt == mujoco.mjtGeom.mjGEOM_ELLIPSOID and prim.IsA(UsdGeom.Sphere)):
        UsdGeom.Xformable(prim).AddScaleOp().Set(Gf.Vec3f(*map(float, size)))
    rgba = m.geom_rgba[g]
    geom.CreateDisplayColorAttr([Gf.Vec3f(*map(float, rgba[:3]))])
    filtered = not (m.geom_contype[g] or m.geom_conaffinity[g])
    if filtered and g not in paired:
        prim.ApplyAPI("MjcImageableAPI")
        _set(prim, "mjc:group", T.Int, int(m.geom_group[g]))
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
        _set(prim, name, type_name, value)
    friction = tuple(float(x) for x in m.geom_friction[g])
    material = materials.get(friction)
    if material is None:
        mpath = names.child(_materials_scope(stage, root), "Material")
        material = UsdShade.Material.Define(stage, mpath)
        api = UsdPhysics.MaterialAPI.Apply(material.GetPrim())
        api.CreateDynamicFrictionAttr(friction[0])
        api.CreateStaticFrictionAttr(friction[0])
        material.GetPrim().ApplyAPI("MjcMaterialAPI")
        _set(material.GetPrim(), "mjc:torsionalfriction", T.Double, friction[1])
        _set(material.GetPrim(), "mjc:rollingfriction", T.Double, friction[2])
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
    _set(prim, "newton:usd:heightfield:rows", T.Int, nrow)
    _set(prim, "newton:usd:heightfield:columns", T.Int, ncol)
    _set(prim, "newton:usd:heightfield:elevation", T.FloatArray, Vt.FloatArray.FromNumpy(elevation))
    _set(prim, "newton:usd:heightfield:size", T.DoubleArray, size)
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
    _set(prim, "newton:usd:ellipsoid:radii", T.Double3, Gf.Vec3d(*map(float, radii)))
    return mesh


def _filterparent(m) -> bool:
    return not m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT


def _mujoco_filters(m, b1, b2) -> bool:
    """MuJoCo's own body-pair filter: the same weld body, or (with filterparent) a weld body and its
    weld parent, neither of them the world."""
    w1, w2 = int(m.body_weldid[b1]), int(m.body_weldid[b2])
    if w1 == w2:
        return True
    p1, p2 = int(m.body_weldid[m.body_parentid[w1]]), int(m.body_weldid[m.body_parentid[w2]])
    return _filterparent(m) and w1 != 0 and w2 != 0 and (w1 == p2 or w2 == p1)


def _joint_filters(m, b1, b2) -> bool:
    """Whether the USD joint the converter writes between parent and child keeps them apart (a weld;
    a joint with ``collisionEnabled`` left false: see :func:`_write_joints`)."""
    for parent, child in ((b1, b2), (b2, b1)):
        if int(m.body_parentid[child]) == parent:
            return m.body_jntnum[child] == 0 or (_filterparent(m) and m.body_weldid[parent] != 0)
    return False


def _write_collision_filters(stage, m, body_path, diag):
    """contype/conaffinity as UsdPhysics filtered pairs between bodies: a pair of bodies none of whose
    colliders may touch (by MuJoCo's rule (ct1 & ca2) || (ct2 & ca1)) gets a PhysicsFilteredPairsAPI.
    Body pairs MuJoCo filters by their welds (:func:`_mujoco_filters`) get one unless the joint written
    between them already keeps them apart. Mixed pairs and the world's colliders cannot be expressed
    this way and are reported."""
    colliders = {}
    for g in range(m.ngeom):
        if m.geom_contype[g] or m.geom_conaffinity[g]:
            colliders.setdefault(int(m.geom_bodyid[g]), []).append(g)

    def touch(g1, g2):
        return bool((m.geom_contype[g1] & m.geom_conaffinity[g2]) or (m.geom_contype[g2] & m.geom_conaffinity[g1]))

    bodies = sorted(colliders)
    for g in colliders.get(0, []):
        for b in bodies:
            if b and any(not touch(g, o) for o in colliders[b]):
                diag.add("contype/conaffinity between world geoms and bodies are not converted", body_path[0])
                break
    filtered = {}
    for b1, b2 in excluded_body_pairs(m):  # MJCF <exclude>
        if b1 and b2:
            filtered.setdefault(min(b1, b2), []).append(body_path[max(b1, b2)])
    for i, b1 in enumerate(bodies):
        for b2 in bodies[i + 1 :]:
            if not b1:
                continue
            if _mujoco_filters(m, b1, b2):  # MuJoCo never collides them: nor must USD
                if not _joint_filters(m, b1, b2) and body_path[b2] not in filtered.get(b1, []):
                    filtered.setdefault(b1, []).append(body_path[b2])
                continue
            pairs = [touch(g1, g2) for g1 in colliders[b1] for g2 in colliders[b2]]
            if not any(pairs) and body_path[b2] not in filtered.get(b1, []):
                filtered.setdefault(b1, []).append(body_path[b2])
            elif not all(pairs):
                diag.add(
                    "contype/conaffinity that filter only some colliders of a body pair are not converted",
                    body_path[b1],
                )
    for b1, targets in filtered.items():
        UsdPhysics.FilteredPairsAPI.Apply(stage.GetPrimAtPath(body_path[b1])).CreateFilteredPairsRel().SetTargets(
            targets
        )


def _materials_scope(stage, root):
    path = root.AppendChild("PhysicsMaterials")
    if not stage.GetPrimAtPath(path):
        UsdGeom.Scope.Define(stage, path)
    return path


def _write_joints(stage, m, b, world, body_path, names, joint_path, diag):
    parent = int(m.body_parentid[b])
    first, count = int(m.body_jntadr[b]), int(m.body_jntnum[b])
    rel = transform_multiply(transform_inverse(world[parent]), world[b]) if parent else world[b]
    if count == 0:  # welded to its parent
        joint = UsdPhysics.FixedJoint.Define(stage, names.child(body_path[b], "weld"))
        if parent:
            joint.CreateBody0Rel().SetTargets([body_path[parent]])
        joint.CreateBody1Rel().SetTargets([body_path[b]])
        joint.CreateLocalPos0Attr(Gf.Vec3f(*map(float, rel[0])))
        joint.CreateLocalRot0Attr(_gf_quat(rel[1]))
        return
    for jid in range(first, first + count):
        jt = int(m.jnt_type[jid])
        if jt == mujoco.mjtJoint.mjJNT_FREE:
            dof = int(m.jnt_dofadr[jid])
            if m.dof_damping[dof : dof + 6].any() or m.dof_armature[dof : dof + 6].any():
                diag.add("free-joint damping and armature have no USD joint to live on: not converted", body_path[b])
            continue
        path = names.child(body_path[b], _name(m, mujoco.mjtObj.mjOBJ_JOINT, jid, "joint"))
        anchor = m.jnt_pos[jid].copy()
        align = _quat_x_to(m.jnt_axis[jid]) if jt != mujoco.mjtJoint.mjJNT_BALL else np.array([0.0, 0.0, 0.0, 1.0])
        frame0 = transform_multiply(rel, (anchor, align))
        if jt == mujoco.mjtJoint.mjJNT_BALL:
            joint = UsdPhysics.SphericalJoint.Define(stage, path)
            joint.CreateAxisAttr(UsdPhysics.Tokens.x)
            if m.jnt_limited[jid]:
                joint.CreateConeAngle0LimitAttr(float(m.jnt_range[jid][1]) * DEG)
                joint.CreateConeAngle1LimitAttr(float(m.jnt_range[jid][1]) * DEG)
        else:
            hinge = jt == mujoco.mjtJoint.mjJNT_HINGE
            joint = (UsdPhysics.RevoluteJoint if hinge else UsdPhysics.PrismaticJoint).Define(stage, path)
            joint.CreateAxisAttr(UsdPhysics.Tokens.x)
            if m.jnt_limited[jid]:  # MuJoCo's range, in qpos: with mjc:ref (below), as mujoco-usd-converter and Newton
                unit = DEG if hinge else 1.0
                joint.CreateLowerLimitAttr(float(m.jnt_range[jid][0] * unit))
                joint.CreateUpperLimitAttr(float(m.jnt_range[jid][1] * unit))
        if parent:
            joint.CreateBody0Rel().SetTargets([body_path[parent]])
            # UsdPhysics keeps jointed bodies from colliding; MuJoCo filters a parent-child pair only when
            # the parent is not welded to the world (and filterparent is on): say so where it collides.
            if not (_filterparent(m) and m.body_weldid[parent] != 0):
                joint.CreateCollisionEnabledAttr(True)
        joint.CreateBody1Rel().SetTargets([body_path[b]])
        joint.CreateLocalPos0Attr(Gf.Vec3f(*map(float, frame0[0])))
        joint.CreateLocalRot0Attr(_gf_quat(frame0[1]))
        joint.CreateLocalPos1Attr(Gf.Vec3f(*map(float, anchor)))
        joint.CreateLocalRot1Attr(_gf_quat(align))
        prim = joint.GetPrim()
        prim.ApplyAPI("MjcJointAPI")
        dof = int(m.jnt_dofadr[jid])
        values = [
            ("mjc:armature", T.Double, float(m.dof_armature[dof])),
            ("mjc:damping", T.Double, float(m.dof_damping[dof])),
            ("mjc:frictionloss", T.Double, float(m.dof_frictionloss[dof])),
            ("mjc:margin", T.Double, float(m.jnt_margin[jid])),
            ("mjc:solreflimit", T.DoubleArray, [float(x) for x in m.jnt_solref[jid]]),
            ("mjc:solimplimit", T.DoubleArray, [float(x) for x in m.jnt_solimp[jid]]),
            ("mjc:solreffriction", T.DoubleArray, [float(x) for x in m.dof_solref[dof]]),
            ("mjc:solimpfriction", T.DoubleArray, [float(x) for x in m.dof_solimp[dof]]),
        ]
        values.append(("mjc:stiffness", T.Double, float(m.jnt_stiffness[jid])))
        if m.jnt_actfrclimited[jid]:
            values.append(("mjc:actuatorfrclimited", T.Token, "true"))
            values.append(("mjc:actuatorfrcrange:min", T.Double, float(m.jnt_actfrcrange[jid][0])))
            values.append(("mjc:actuatorfrcrange:max", T.Double, float(m.jnt_actfrcrange[jid][1])))
        if m.jnt_actgravcomp[jid]:
            values.append(("mjc:actuatorgravcomp", T.Bool, True))
        if jt != mujoco.mjtJoint.mjJNT_BALL:  # MuJoCo's values: the USD coordinate is qpos - ref
            adr = m.jnt_qposadr[jid]
            values.append(("mjc:ref", T.Double, float(m.qpos0[adr])))
            values.append(("mjc:springref", T.Double, float(m.qpos_spring[adr])))
            # The coordinate at qpos0 is exactly 0: said outright (PhysX's PhysicsJointStateAPI attributes, the
            # API itself not applied: usd-core has no schema for it, as JointStateSync writes them), not left to
            # the float poses, which give +-1e-8 (a knee that starts at its limit would start past it).
            axis = "angular" if jt == mujoco.mjtJoint.mjJNT_HINGE else "linear"
            values.append((f"state:{axis}:physics:position", T.Float, 0.0))
            values.append((f"state:{axis}:physics:velocity", T.Float, 0.0))
        for name, type_name, value in values:
            _set(prim, name, type_name, value)
        joint_path[jid] = path


_TENDON_TYPES = {
    "type": T.Token, "limited": T.Token, "actuatorfrclimited": T.Token, "group": T.Int,
    "path:coef": T.DoubleArray, "path:indices": T.IntArray, "springlength": T.DoubleArray,
    "path:segments": T.IntArray, "path:divisors": T.DoubleArray, "sideSites:indices": T.IntArray,
    "solreflimit": T.DoubleArray, "solimplimit": T.DoubleArray, "solreffriction": T.DoubleArray,
    "solimpfriction": T.DoubleArray,
}  # fmt: skip


def _write_tendons(stage, m, root, names, joint_path, site_path, geom_path, diag) -> dict:
    """Tendons as MjcTendon prims under ``Tendons/``, their path encoded as mujoco-usd-converter does;
    returns MuJoCo tendon id -> prim path."""
    paths = {}
    lookup = {
        mujoco.mjtObj.mjOBJ_JOINT: joint_path,
        mujoco.mjtObj.mjOBJ_SITE: site_path,
        mujoco.mjtObj.mjOBJ_GEOM: geom_path,
    }
    for t in range(m.ntendon):
        label = _name(m, mujoco.mjtObj.mjOBJ_TENDON, t, "tendon")
        targets, side, _ = tendon_path(m, t)
        if any(i not in lookup[obj] for obj, i in targets + side):
            diag.add("tendons through elements that were not converted are not converted", label)
            continue
        scope = root.AppendChild("Tendons")
        if not stage.GetPrimAtPath(scope):
            UsdGeom.Scope.Define(stage, scope)
        prim = stage.DefinePrim(names.child(scope, label), "MjcTendon")
        prim.CreateRelationship("mjc:path", custom=False).SetTargets([lookup[o][i] for o, i in targets])
        if side:
            prim.CreateRelationship("mjc:sideSites", custom=False).SetTargets([site_path[i] for _, i in side])
        for key, value in tendon_values(m, t).items():
            type_name = _TENDON_TYPES.get(key, T.Double)
            if type_name in (T.DoubleArray, T.IntArray):
                value = list(value)
            _set(prim, f"mjc:{key}", type_name, value)
        paths[t] = prim.GetPath()
    return paths


def _write_sites(stage, m, body_path, names) -> dict:
    """Sites as guide gprims with MjcSiteAPI and NewtonSiteAPI; returns MuJoCo site id -> prim path."""
    paths = {}
    for i in range(m.nsite):
        parent = body_path[int(m.site_bodyid[i])]
        path = names.child(parent, _name(m, mujoco.mjtObj.mjOBJ_SITE, i, "site"))
        kind, size = int(m.site_type[i]), m.site_size[i]
        if kind == mujoco.mjtGeom.mjGEOM_BOX:
            gprim = UsdGeom.Cube.Define(stage, path)
            gprim.CreateSizeAttr(2.0)
        elif kind in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_CYLINDER):
            gprim = (UsdGeom.Capsule if kind == mujoco.mjtGeom.mjGEOM_CAPSULE else UsdGeom.Cylinder).Define(stage, path)
            gprim.CreateAxisAttr(UsdGeom.Tokens.z)
            gprim.CreateRadiusAttr(float(size[0]))
            gprim.CreateHeightAttr(2.0 * float(size[1]))
        else:
            gprim = UsdGeom.Sphere.Define(stage, path)
            gprim.CreateRadiusAttr(float(size[0]))
        prim = gprim.GetPrim()
        _set_xform(prim, (m.site_pos[i].copy(), wxyz_to_xyzw(m.site_quat[i])))
        if kind == mujoco.mjtGeom.mjGEOM_BOX:
            UsdGeom.Xformable(prim).AddScaleOp().Set(Gf.Vec3f(*map(float, size)))
        gprim.CreatePurposeAttr(UsdGeom.Tokens.guide)
        prim.ApplyAPI("MjcSiteAPI")
        prim.ApplyAPI("NewtonSiteAPI")
        _set(prim, "mjc:group", T.Int, int(m.site_group[i]))
        paths[i] = path
    return paths


_ACTUATOR_TYPES = {
    "gainType": T.Token, "biasType": T.Token, "dynType": T.Token, "ctrlLimited": T.Token,
    "forceLimited": T.Token, "actLimited": T.Token, "gainPrm": T.DoubleArray, "biasPrm": T.DoubleArray,
    "dynPrm": T.DoubleArray, "gear": T.DoubleArray, "actDim": T.Int, "actEarly": T.Bool, "group": T.Int,
    "jointInParent": T.Bool,
}  # fmt: skip


def _write_actuators(stage, m, root, names, joint_path, body_path, diag, tendon_path=None, site_path=None):
    if not m.nu:
        return
    scope = root.AppendChild("Actuators")
    UsdGeom.Scope.Define(stage, scope)
    for a in range(m.nu):
        trn, target_id = int(m.actuator_trntype[a]), int(m.actuator_trnid[a][0])
        if trn in (mujoco.mjtTrn.mjTRN_JOINT, mujoco.mjtTrn.mjTRN_JOINTINPARENT) and target_id in joint_path:
            target = joint_path[target_id]
        elif trn == mujoco.mjtTrn.mjTRN_BODY:
            target = body_path[target_id]
        elif trn == mujoco.mjtTrn.mjTRN_TENDON and tendon_path and target_id in tendon_path:
            target = tendon_path[target_id]
        elif trn == mujoco.mjtTrn.mjTRN_SITE and site_path and target_id in site_path:
            target = site_path[target_id]
        else:
            diag.add("actuators on spatial tendons, slider-cranks and free joints are not converted yet", scope)
            continue
        prim = stage.DefinePrim(
            names.child(scope, _name(m, mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator")), "MjcActuator"
        )
        prim.CreateRelationship("mjc:target", custom=False).SetTargets([target])
        ref_id = int(m.actuator_trnid[a][1])
        if trn == mujoco.mjtTrn.mjTRN_SITE and ref_id >= 0 and ref_id in site_path:
            prim.CreateRelationship("mjc:refSite", custom=False).SetTargets([site_path[ref_id]])
        for key, value in actuator_values(m, a).items():
            type_name = _ACTUATOR_TYPES.get(key, T.Double)
            _set(prim, f"mjc:{key}", type_name, list(value) if type_name == T.DoubleArray else value)


def _write_equalities(stage, m, world, body_path, site_path, joint_path, tendon_path, root, names, diag):
    """Equalities: connect and weld as joints excluded from articulations (between bodies, or between
    the sites' bodies with frames at the sites), joint equalities as NewtonMimicAPI + MjcEqualityJointAPI
    on the follower joint, tendon equalities as NewtonUsdTendonEqualityAPI on the follower tendon."""
    scope = root.AppendChild("Equalities")
    mimics = set()
    for e in range(m.neq):
        kind = int(m.eq_type[e])
        name = _name(m, mujoco.mjtObj.mjOBJ_EQUALITY, e, "equality")
        id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        if kind == mujoco.mjtEq.mjEQ_JOINT:
            if id1 not in joint_path or (id2 >= 0 and id2 not in joint_path) or id1 in mimics:
                why = "a second joint equality on one joint" if id1 in mimics else "a joint that was not converted"
                diag.add(f"joint equality on {why}: not converted", name)
                continue
            mimics.add(id1)
            _write_joint_equality(stage, m, e, joint_path)
            continue
        if kind == mujoco.mjtEq.mjEQ_TENDON:
            if id1 not in tendon_path or (id2 >= 0 and id2 not in tendon_path):
                diag.add("tendon equality on a tendon that was not converted: not converted", name)
                continue
            prim = stage.GetPrimAtPath(tendon_path[id1])
            instance = Tf.MakeValidIdentifier(name)
            prim.ApplyAPI("NewtonUsdTendonEqualityAPI", instance)
            prefix = f"newton:usd:tendonEquality:{instance}:"
            if id2 >= 0:
                prim.CreateRelationship(prefix + "leader", custom=False).SetTargets([tendon_path[id2]])
            _set(prim, prefix + "polycoef", T.DoubleArray, [float(x) for x in m.eq_data[e][0:5]])
            _set(prim, prefix + "enabled", T.Bool, bool(m.eq_active0[e]))
            _set(prim, prefix + "solref", T.DoubleArray, [float(x) for x in m.eq_solref[e]])
            _set(prim, prefix + "solimp", T.DoubleArray, [float(x) for x in m.eq_solimp[e]])
            continue
        if kind not in (mujoco.mjtEq.mjEQ_CONNECT, mujoco.mjtEq.mjEQ_WELD):
            diag.add(f"{mujoco.mjtEq(kind).name[5:].lower()} equalities are not converted", name)
            continue
        if not stage.GetPrimAtPath(scope):
            UsdGeom.Scope.Define(stage, scope)
        _write_body_equality(stage, m, e, world, body_path, names.child(scope, name))


def _write_joint_equality(stage, m, e, joint_path):
    """A joint equality on its follower joint: NewtonMimicAPI (enabled, leader, offset and ratio, the offset
    in the joint's USD unit) and MjcEqualityJointAPI (the higher coefficients, solref, solimp); without a
    leader (no ``newton:mimicJoint`` target), the joint is held at ``mjc:coef0`` (MuJoCo's unit)."""
    id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    prim = stage.GetPrimAtPath(joint_path[id1])
    data = m.eq_data[e]
    prim.ApplyAPI("NewtonMimicAPI")
    _set(prim, "newton:mimicEnabled", T.Bool, bool(m.eq_active0[e]))
    if id2 >= 0:
        hinge = int(m.jnt_type[id1]) == mujoco.mjtJoint.mjJNT_HINGE
        prim.CreateRelationship("newton:mimicJoint", custom=False).SetTargets([joint_path[id2]])
        _set(prim, "newton:mimicCoef0", T.Float, float(data[0]) * (DEG if hinge else 1.0))
        _set(prim, "newton:mimicCoef1", T.Float, float(data[1]))
    else:
        _set(prim, "mjc:coef0", T.Double, float(data[0]))
    prim.ApplyAPI("MjcEqualityJointAPI")
    for k in (2, 3, 4):
        _set(prim, f"mjc:coef{k}", T.Double, float(data[k]))
    _set(prim, "mjc:solref", T.DoubleArray, [float(x) for x in m.eq_solref[e]])
    _set(prim, "mjc:solimp", T.DoubleArray, [float(x) for x in m.eq_solimp[e]])


def _write_body_equality(stage, m, e, world, body_path, path):
    """A connect (spherical joint) or weld (fixed joint) equality, excluded from articulations; between
    sites, the joint's body rels target the sites' bodies with the frames at the sites."""
    kind = int(m.eq_type[e])
    weld = kind == mujoco.mjtEq.mjEQ_WELD
    identity = np.array([0.0, 0.0, 0.0, 1.0])
    id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
    if int(m.eq_objtype[e]) == mujoco.mjtObj.mjOBJ_SITE:
        b1, b2 = int(m.site_bodyid[id1]), int(m.site_bodyid[id2])
        pos0, rot0 = m.site_pos[id1].copy(), wxyz_to_xyzw(m.site_quat[id1])
        pos1, rot1 = m.site_pos[id2].copy(), wxyz_to_xyzw(m.site_quat[id2])
        if not weld:  # a connect joins the points; the frames' rotations do not matter
            rot0 = rot1 = identity
    else:
        b1, b2 = id1, id2
        anchor1 = m.eq_data[e][0:3].copy()
        if weld:  # anchor on body2; the frames hold body2's pose relative to body1 (MuJoCo's relpose)
            rp = m.eq_data[e][3:10]
            rel = (rp[0:3].copy(), wxyz_to_xyzw(rp[3:7]))
            pos0, rot0 = transform_multiply(rel, (anchor1, identity))
            pos1, rot1 = anchor1, identity
        else:  # anchor on body1; body2's point is where it is at qpos0
            pos0, rot0 = anchor1, identity
            world_anchor = transform_multiply(world[b1], (anchor1, rot0))
            pos1, rot1 = transform_multiply(transform_inverse(world[b2]), world_anchor)
    joint = (UsdPhysics.FixedJoint if weld else UsdPhysics.SphericalJoint).Define(stage, path)
    if b1:
        joint.CreateBody0Rel().SetTargets([body_path[b1]])
    if b2:
        joint.CreateBody1Rel().SetTargets([body_path[b2]])
    joint.CreateLocalPos0Attr(Gf.Vec3f(*map(float, pos0)))
    joint.CreateLocalRot0Attr(_gf_quat(rot0))
    joint.CreateLocalPos1Attr(Gf.Vec3f(*map(float, pos1)))
    joint.CreateLocalRot1Attr(_gf_quat(rot1))
    joint.CreateExcludeFromArticulationAttr(True)
    joint.CreateCollisionEnabledAttr(True)  # an equality does not keep MuJoCo from colliding the two bodies
    joint.CreateJointEnabledAttr(bool(m.eq_active0[e]))
    prim = joint.GetPrim()
    prim.ApplyAPI("MjcEqualityWeldAPI" if weld else "MjcEqualityConnectAPI")
    _set(prim, "mjc:solref", T.DoubleArray, [float(x) for x in m.eq_solref[e]])
    _set(prim, "mjc:solimp", T.DoubleArray, [float(x) for x in m.eq_solimp[e]])
    if weld:
        _set(prim, "mjc:torqueScale", T.Float, float(m.eq_data[e][10]))


def _write_keyframes(stage, m, root, names, diag):
    """Keyframes as MjcKeyframe prims under ``Keyframes/``, in MuJoCo's layout (qpos with each joint's
    ref, as ``mjc:ref``), read back in the layout of the bodies' and joints' prim order."""
    if not m.nkey:
        return
    scope = root.AppendChild("Keyframes")
    UsdGeom.Scope.Define(stage, scope)
    for k in range(m.nkey):
        prim = stage.DefinePrim(names.child(scope, _name(m, mujoco.mjtObj.mjOBJ_KEY, k, "key")), "MjcKeyframe")
        for attr, values in (
            ("qpos", m.key_qpos[k]), ("qvel", m.key_qvel[k]), ("act", m.key_act[k]), ("ctrl", m.key_ctrl[k]),
            ("mpos", m.key_mpos[k]), ("mquat", m.key_mquat[k]),
        ):  # fmt: skip
            if len(values):
                _set(prim, f"mjc:{attr}", T.DoubleArray, Vt.DoubleArray.FromNumpy(np.asarray(values, np.float64)))
        if m.key_time[k]:  # MjcKeyframe has no time: NewtonUsdKeyframeAPI holds it
            prim.ApplyAPI("NewtonUsdKeyframeAPI")
            _set(prim, "newton:usd:time", T.Double, float(m.key_time[k]))


def _write_contact_pairs(stage, m, root, names, geom_path, diag):
    """MJCF contact pairs as NewtonUsdContactPair prims under ``ContactPairs/``."""
    if not m.npair:
        return
    scope = root.AppendChild("ContactPairs")
    UsdGeom.Scope.Define(stage, scope)
    types = {"condim": T.Int, "margin": T.Double, "gap": T.Double}
    for p in range(m.npair):
        name = _name(m, mujoco.mjtObj.mjOBJ_PAIR, p, "pair")
        if int(m.pair_geom1[p]) not in geom_path or int(m.pair_geom2[p]) not in geom_path:
            diag.add(
                f"contact pair {name!r} between geoms that were not converted: dropped", str(scope.AppendChild(name))
            )
            continue
        prim = stage.DefinePrim(names.child(scope, name), "NewtonUsdContactPair")
        for rel, g in (("newton:usd:geom0", m.pair_geom1[p]), ("newton:usd:geom1", m.pair_geom2[p])):
            prim.CreateRelationship(rel, custom=False).SetTargets([geom_path[int(g)]])
        for key, value in contact_pair_values(m, p).items():
            _set(
                prim,
                f"newton:usd:{key}",
                types.get(key, T.DoubleArray),
                value if key in types else Vt.DoubleArray(value),
            )


_VERTICAL_APERTURE = 20.955  # mm, USD's default horizontal aperture; the focal length then gives fovy


def _write_cameras(stage, m, body_path, names, diag):
    """MJCF cameras as UsdGeom.Camera prims on their bodies (both look along their -Z with +Y up): the
    vertical field of view (or the sensor size and focal length when the MJCF gives them), the aspect of
    the camera's resolution, orthographic projection, and clipping from MuJoCo's znear/zfar."""
    extent = float(m.stat.extent)
    for c in range(m.ncam):
        path = names.child(body_path[int(m.cam_bodyid[c])], _name(m, mujoco.mjtObj.mjOBJ_CAMERA, c, "camera"))
        camera = UsdGeom.Camera.Define(stage, path)
        _set_xform(camera.GetPrim(), (m.cam_pos[c].copy(), wxyz_to_xyzw(m.cam_quat[c])))
        res = m.cam_resolution[c]
        aspect = float(res[0]) / float(res[1]) if res[0] > 0 and res[1] > 0 else 1.0
        sensor, focal = m.cam_sensorsize[c], m.cam_intrinsic[c][:2]
        if int(m.cam_projection[c]) == int(mujoco.mjtProjection.mjPROJ_ORTHOGRAPHIC):
            camera.CreateProjectionAttr(UsdGeom.Tokens.orthographic)
            vertical = 10.0 * float(m.cam_fovy[c])  # tenths of a stage unit: fovy is the view's height here
        elif sensor[1] > 0 and focal[1] > 0:  # a physical camera: sensor size and focal length in meters
            vertical = 1000.0 * float(sensor[1])
            aspect = float(sensor[0] / sensor[1])
            camera.CreateFocalLengthAttr(1000.0 * float(focal[1]))
        else:
            vertical = _VERTICAL_APERTURE
            camera.CreateFocalLengthAttr(0.5 * vertical / math.tan(0.5 * math.radians(float(m.cam_fovy[c]))))
        camera.CreateVerticalApertureAttr(vertical)
        camera.CreateHorizontalApertureAttr(vertical * aspect)
        camera.CreateClippingRangeAttr(Gf.Vec2f(float(m.vis.map.znear) * extent, float(m.vis.map.zfar) * extent))
        _warn_tracking(m.cam_mode[c], "camera", path, diag)


def _write_lights(stage, m, body_path, names, diag):
    """MJCF lights as UsdLux lights on their bodies, shining along their -Z: directional lights as
    DistantLight, spot lights as SphereLight with a cone (ShapingAPI), point lights as SphereLight; the
    colour is the diffuse colour, the intensity its brightest component (or MuJoCo's ``intensity``)."""
    for i in range(m.nlight):
        path = names.child(body_path[int(m.light_bodyid[i])], _name(m, mujoco.mjtObj.mjOBJ_LIGHT, i, "light"))
        kind = int(m.light_type[i])
        if kind == int(mujoco.mjtLightType.mjLIGHT_IMAGE):
            diag.add("image-based lights are not converted", path)
            continue
        if kind == int(mujoco.mjtLightType.mjLIGHT_DIRECTIONAL):
            light = UsdLux.DistantLight.Define(stage, path)
        else:
            light = UsdLux.SphereLight.Define(stage, path)
            light.CreateRadiusAttr(float(m.light_bulbradius[i]))
            if kind == int(mujoco.mjtLightType.mjLIGHT_SPOT):
                UsdLux.ShapingAPI.Apply(light.GetPrim()).CreateShapingConeAngleAttr(float(m.light_cutoff[i]))
        direction = _quat_from_to((0.0, 0.0, -1.0), m.light_dir[i])
        _set_xform(light.GetPrim(), (m.light_pos[i].copy(), direction))
        diffuse = np.asarray(m.light_diffuse[i], dtype=np.float64)
        peak = float(diffuse.max())
        light.CreateColorAttr(Gf.Vec3f(*map(float, diffuse / peak)) if peak > 0 else Gf.Vec3f(1.0))
        light.CreateIntensityAttr(float(m.light_intensity[i]) if m.light_intensity[i] > 0 else peak)
        UsdLux.ShadowAPI.Apply(light.GetPrim()).CreateShadowEnableAttr(bool(m.light_castshadow[i]))
        if not m.light_active[i]:
            light.CreateVisibilityAttr(UsdGeom.Tokens.invisible)
        _warn_tracking(m.light_mode[i], "light", path, diag)


def _warn_tracking(mode, what, path, diag):
    mode = mujoco.mjtCamLight(int(mode)).name.split("_", 1)[1].lower()
    if mode != "fixed":
        diag.add(f"{what} mode {mode!r} is not converted: the {what} stays fixed to its body", path)
