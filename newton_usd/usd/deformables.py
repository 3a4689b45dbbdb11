"""Deformable bodies from the stage: cloth and soft volumes into the builder's particles, triangles and tetrahedra.

The deformable family of the AOUSD physics proposal, as Newton 1.8 reads it (its
``utils/import_usd_deformable_cloth.py``). ``PhysicsDeformableBodyAPI`` on the simulation prim or on its parent (the
body prim) makes it a deformable body of the PhysicsScene its body prim names in ``physics:simulationOwner`` (none
authored: the stage's first PhysicsScene):

- a ``Mesh`` applying ``PhysicsSurfaceDeformableSimAPI`` is cloth: each of its ``points`` is a particle (placed by
  its world transform, stage units turned into SI and Z up), each face a fan of triangles (``leftHanded``
  orientation or a mirroring transform reverses them). Its rest shape is the authored shape;
- its thickness: ``physics:thicknesses`` with ``physics:thicknesses:elementType`` (``constant``, ``face`` or
  ``point``; none authored, or no element type, as Newton: :data:`DEFAULT_THICKNESS`, said); a particle's radius is
  half its point's thickness;
- its material, bound for physics (``material:binding:physics``), applying ``PhysicsSurfaceDeformableMaterialAPI``:
  ``physics:surfaceStretchStiffness`` and ``physics:surfaceBendStiffness`` (stage units of force/distance and
  force*distance), else derived from ``physics:youngsModulus`` and ``physics:poissonsRatio`` and the thickness
  (``E h / (1 - nu^2)``, ``E h^3 / (12 (1 - nu^2))``); ``physics:surfaceShearStiffness`` is not simulated (Newton's
  membrane is isotropic: said once). No surface material: the solver's default stiffnesses;
- its mass: the body prim's ``physics:density``, else the material's ``physics:density``, else
  :data:`DEFAULT_DENSITY`, times each triangle's (rest) area and thickness, a third to each corner;
  ``physics:masses`` (``constant``, per ``face`` or per ``point``: :mod:`.deformable_rest`) replaces it; else the
  body prim's ``physics:mass`` scales it to that total.

A ``TetMesh`` applying ``PhysicsVolumeDeformableSimAPI`` (or a bare ``TetMesh`` outside deformable and rigid bodies,
as Newton's legacy import takes it: said once) is a soft volume: each point a particle (of radius
:data:`VOLUME_RADIUS`), each of its ``tetVertexIndices`` a tetrahedron (``leftHanded`` orientation or a mirroring
transform swaps two of its points); its ``PhysicsVolumeDeformableMaterialAPI`` material's ``physics:youngsModulus``
and ``physics:poissonsRatio`` (unauthored: :data:`DEFAULT_YOUNGS_MODULUS`, :data:`DEFAULT_POISSONS_RATIO`) are its
Lame parameters (no volume material: the solver's default); its mass as a cloth's, a quarter of each tetrahedron's
to each corner.

Authored velocities are read (Newton 1.8 drops them). A rest shape other than the authored shape
(``physics:restShapePoints``) and a cloth's ``physics:restBendAnglesDefault`` are read by :mod:`.deformable_rest`
(a rest shape of another topology is not read yet: said). Cables (``BasisCurves`` with
``PhysicsCurvesDeformableSimAPI``) are found here and imported by :mod:`~newton_usd.usd.cables` once the rigid
bodies are.

Bad input is a one-line :class:`~newton_usd.errors.UsdInputError` naming the prim and attribute: indices out of
range, a face of fewer than three points, a zero-area triangle, an inverted or degenerate tetrahedron, a negative
(or zero) thickness, a negative density or modulus, a material of another deformable family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics, UsdShade

from ..core.deformables import add_cloth, add_volume
from ..core.quat import quat_rotate
from ..errors import UsdInputError
from .deformable_rest import bend_angles, bend_default, point_masses, rest_shape
from .granular import applied
from .stage import authored_value

BODY_API = "PhysicsDeformableBodyAPI"
SURFACE_SIM_API = "PhysicsSurfaceDeformableSimAPI"
VOLUME_SIM_API = "PhysicsVolumeDeformableSimAPI"
CURVES_SIM_API = "PhysicsCurvesDeformableSimAPI"
SIM_APIS = {SURFACE_SIM_API: "cloth", VOLUME_SIM_API: "volume", CURVES_SIM_API: "cable"}
MATERIAL_APIS = {
    "cloth": "PhysicsSurfaceDeformableMaterialAPI",
    "volume": "PhysicsVolumeDeformableMaterialAPI",
    "cable": "PhysicsCurvesDeformableMaterialAPI",
}
VBD_SCENE_API = "NewtonVbdSceneAPI"

DEFAULT_THICKNESS = 1.0e-3
"""m: a cloth's thickness where it authors none (the proposal's fallback, as Newton 1.8)."""
DEFAULT_DENSITY = 1000.0
"""kg/m^3: a deformable's density where neither its body prim nor its material authors one."""
DEFAULT_YOUNGS_MODULUS = 1.0e6
"""Pa: a surface material's Young's modulus where it authors none (the proposal's fallback)."""
DEFAULT_POISSONS_RATIO = 0.3
"""A surface material's Poisson's ratio where it authors none."""
VOLUME_RADIUS = 0.1
"""m: a soft volume's particles' contact radius (the proposal authors none; Newton's ``default_particle_radius``)."""
DEGENERATE = 1.0e-12
"""A triangle whose doubled area is at most this times its longest edge squared has zero area (a sliver: unit free)."""

VBD_SETTINGS = {
    # NewtonVbdSceneAPI attribute -> (SolverVBD keyword, unit: the power of kilogramsPerUnit, of metersPerUnit)
    "newton:vbd:rigid:contactHistory": ("rigid_contact_history", None),
    "newton:vbd:rigid:jointLinearStiffness": ("rigid_joint_linear_ke", (1, 0)),
    "newton:vbd:rigid:jointAngularStiffness": ("rigid_joint_angular_ke", (1, 2)),
    "newton:vbd:rigid:jointLinearDamping": ("rigid_joint_linear_kd", (1, 0)),
    "newton:vbd:rigid:jointAngularDamping": ("rigid_joint_angular_kd", (1, 2)),
}
"""The VBD scene's settings (:func:`vbd_scene_settings`) and the solver keyword each sets, in SI."""


@dataclass
class Deformables:
    """The deformable prims of a scene that :func:`import_deformables` read.

    Attributes:
        cloth: cloth prim path -> its run of the builder's particles ``(first, end)``.
        volumes: soft volume prim path -> its run of particles.
        not_imported: prim path -> its family for deformables not simulated yet.
        cables: cable prim path -> its body prim's path (imported by :mod:`~newton_usd.usd.cables` once the bodies are).
        elsewhere: prim path -> its scene, for deformables of another scene (not imported here).
        bodies: body prim path -> its simulation prim's path, where the body prim is the simulation prim's parent.
    """

    cloth: dict = field(default_factory=dict)
    volumes: dict = field(default_factory=dict)
    not_imported: dict = field(default_factory=dict)
    cables: dict = field(default_factory=dict)
    elsewhere: dict = field(default_factory=dict)
    bodies: dict = field(default_factory=dict)

    def prims(self) -> set:
        """Every deformable simulation prim's path (imported or not): none of them is a rigid collider."""
        return set(self.cloth) | set(self.volumes) | set(self.cables) | set(self.not_imported) | set(self.elsewhere)

    @property
    def simulated(self) -> dict:
        """Every imported deformable prim (cloth and volumes) -> its run of particles."""
        return {**self.cloth, **self.volumes}


def find_deformables(stage) -> list:
    """``(prim, family)`` of every deformable simulation prim of ``stage`` ("cloth", "volume", "cable"), in
    traversal order; a bare ``TetMesh`` (no simulation API, outside deformable and rigid bodies) is a "legacy"
    soft volume, as Newton 1.8 imports it."""
    out = []
    it = iter(Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()))
    for prim in it:
        listed = prim.GetMetadata("apiSchemas")  # (one metadata read a prim: a whole robot's stage is traversed)
        names = {str(n) for n in listed.ApplyOperations([])} if listed is not None else ()
        if "PhysicsRigidBodyAPI" in names:
            it.PruneChildren()  # (a TetMesh in a rigid body is its geometry)
            continue
        family = next((f for api, f in SIM_APIS.items() if api in names), None)
        if family is None and prim.GetTypeName() == "TetMesh" and not _in_deformable_body(prim):
            family = "legacy"
        if family is not None:
            out.append((prim, family))
    return out


def _in_deformable_body(prim) -> bool:
    """Whether ``prim`` or an ancestor applies PhysicsDeformableBodyAPI (its TetMesh is graphics or collision
    geometry, unless it is the body's simulation prim)."""
    while prim and not prim.IsPseudoRoot():
        if BODY_API in applied(prim):
            return True
        prim = prim.GetParent()
    return False


def deformable_scenes(stage, default_scene: str | None) -> set:
    """The scenes that own the stage's deformable bodies (their body prim's ``physics:simulationOwner``, else
    ``default_scene``), read without checking them (:func:`import_deformables` does)."""
    out = set()
    for prim, family in find_deformables(stage):
        own = family == "legacy" or BODY_API in applied(prim) or not prim.GetParent()
        body = prim if own else prim.GetParent()
        rel = body.GetRelationship("physics:simulationOwner")
        targets = rel.GetForwardedTargets() if rel else []
        scene = str(targets[0]) if targets else default_scene
        if scene:
            out.add(scene)
    return out


def has_deformables(stage) -> bool:
    """Whether ``stage`` holds a deformable simulation prim (cloth, volume or cable)."""
    return bool(find_deformables(stage))


def import_deformables(builder, stage, frame, file: str, scene_path, default_scene, diag, exclude=()) -> Deformables:
    """Add the cloth of the PhysicsScene ``scene_path`` (None: the stage's only scene, or none) to ``builder`` (see
    the module); ``default_scene`` owns the deformables that name no owner. What is not imported is said in
    ``diag``. Prims under ``exclude`` (the environments replicated from the first) are not read."""
    out = Deformables()
    for prim, family in find_deformables(stage):
        path = str(prim.GetPath())
        if any(path == e or path.startswith(f"{e}/") for e in exclude):
            continue
        if family == "legacy":
            diag.add(f"a TetMesh without {VOLUME_SIM_API} is simulated as a soft volume (as Newton's legacy import "
                     f"does): apply {BODY_API} and {VOLUME_SIM_API} to say so", path)  # fmt: skip
            family, body = "volume", prim
        else:
            body = _body_prim(prim, file)
        if body != prim:
            out.bodies[str(body.GetPath())] = path
        owner = _owner(body, default_scene, file)
        if scene_path is not None and owner is not None and owner != scene_path:
            out.elsewhere[path] = owner
            continue
        if family == "cable":  # (imported after the rigid bodies, its ends pinned to them: usd/cables.py)
            out.cables[path] = str(body.GetPath())
            continue
        first = builder.particle_count
        if family == "volume":
            if not prim.IsA(UsdGeom.TetMesh):
                raise UsdInputError(f"{VOLUME_SIM_API} applies to TetMesh prims, not to a "
                                    f"{prim.GetTypeName() or 'typeless'} prim", file=file, prim=path)  # fmt: skip
            _import_volume(builder, prim, body, frame, file, diag)
            out.volumes[path] = (first, builder.particle_count)
            continue
        if not prim.IsA(UsdGeom.Mesh):
            raise UsdInputError(f"{SURFACE_SIM_API} applies to Mesh prims, not to a {prim.GetTypeName() or 'typeless'} "
                                "prim", file=file, prim=path)  # fmt: skip
        _import_cloth(builder, prim, body, frame, file, diag)
        out.cloth[path] = (first, builder.particle_count)
    scene = stage.GetPrimAtPath(scene_path) if scene_path is not None else None
    if scene and (out.simulated or VBD_SCENE_API in applied(scene)):  # (a VBD scene's rigid bodies take them too)
        builder.vbd_config.update(vbd_scene_settings(scene, frame, file))
    return out


def _body_prim(prim, file):
    """The prim's deformable body prim (``PhysicsDeformableBodyAPI`` on it or on its parent)."""
    if BODY_API in applied(prim):
        return prim
    parent = prim.GetParent()
    if parent and BODY_API in applied(parent):
        return parent
    api = next(a for a in SIM_APIS if a in applied(prim))
    raise UsdInputError(f"{api} needs {BODY_API} on the prim or its parent", file=file, prim=str(prim.GetPath()))


def _owner(body, default_scene, file):
    """The PhysicsScene that simulates ``body`` (its ``physics:simulationOwner``, else ``default_scene``)."""
    rel = body.GetRelationship("physics:simulationOwner")
    targets = rel.GetForwardedTargets() if rel else []
    if not targets:
        return default_scene
    scene = body.GetStage().GetPrimAtPath(targets[0])
    if len(targets) > 1 or not scene or not scene.IsA(UsdPhysics.Scene):
        raise UsdInputError(f"names {', '.join(map(str, targets))}: a deformable body is simulated by one "
                            "PhysicsScene", file=file, prim=str(body.GetPath()),
                            attribute="physics:simulationOwner")  # fmt: skip
    return str(targets[0])


def _number(prim, name, file, *, minimum=0.0, positive=False):
    """An authored scalar (None: not authored, or the ``-inf`` simulator-default sentinel)."""
    value = authored_value(prim, name)
    if value is None:
        return None
    v = float(value)
    if v == -math.inf and name != "physics:density":
        return None
    if not math.isfinite(v) or v < minimum or (positive and v == 0):
        need = "positive" if positive else f"finite and at least {minimum:g}"
        raise UsdInputError(f"must be {need}, got {value}", file=file, prim=str(prim.GetPath()), attribute=name)
    return v


def _import_cloth(builder, prim, body, frame, file, diag) -> None:
    path = str(prim.GetPath())
    mesh = UsdGeom.Mesh(prim)
    points = mesh.GetPointsAttr().Get()
    counts = mesh.GetFaceVertexCountsAttr().Get()
    indices = mesh.GetFaceVertexIndicesAttr().Get()
    if not points or not counts or not indices:
        what = "points" if not points else "faceVertexCounts" if not counts else "faceVertexIndices"
        raise UsdInputError("not authored: cloth is a mesh of points and faces", file=file, prim=path, attribute=what)
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    counts = np.asarray(counts, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = len(points)
    if np.any(counts < 3):
        i = int(np.argmax(counts < 3))
        raise UsdInputError(f"face {i} has {counts[i]} points: a face has at least 3", file=file, prim=path,
                            attribute="faceVertexCounts")  # fmt: skip
    if counts.sum() != len(indices):
        raise UsdInputError(f"the faces count {counts.sum()} indices, faceVertexIndices holds {len(indices)}",
                            file=file, prim=path, attribute="faceVertexCounts")  # fmt: skip
    bad = (indices < 0) | (indices >= n)
    if bad.any():
        i = int(np.argmax(bad))
        raise UsdInputError(f"index {i} is {indices[i]}, out of range: the mesh has {n} points", file=file,
                            prim=path, attribute="faceVertexIndices")  # fmt: skip
    if not np.all(np.isfinite(points)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute="points")
    # fan triangles of each face: (v0, v_k, v_k+1)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    face = np.repeat(np.arange(len(counts)), counts - 2)
    k = np.arange(len(face)) - np.repeat(np.cumsum(counts - 2) - (counts - 2), counts - 2)
    tris = np.stack([indices[starts[face]], indices[starts[face] + k + 1], indices[starts[face] + k + 2]], axis=1)
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()), dtype=np.float64)
    rest, panels = rest_shape(prim, n, m, frame, tris, "physics:restTriVertexIndices", file, path, diag, panels=True)
    if (mesh.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded) != (np.linalg.det(m[:3, :3]) < 0):
        tris = tris[:, ::-1]
        panels = None if panels is None else panels[:, ::-1]
    mpu, kpu = frame.meters_per_unit, frame.kilograms_per_unit
    pos = mpu * quat_rotate(frame.rotation, points @ m[:3, :3] + m[3, :3])
    vel = _velocities(prim, n, m, frame, file, path)
    for shape, cells, name in ((pos, tris, "points"), (rest, tris if panels is None else panels,
                                                       "physics:restShapePoints")):  # fmt: skip
        if shape is None:
            continue
        e1, e2 = shape[cells[:, 1]] - shape[cells[:, 0]], shape[cells[:, 2]] - shape[cells[:, 0]]
        doubled = np.linalg.norm(np.cross(e1, e2), axis=1)
        longest = np.max(np.stack([np.sum(e1 * e1, 1), np.sum(e2 * e2, 1), np.sum((e2 - e1) ** 2, 1)]), axis=0)
        flat = ~(doubled > DEGENERATE * longest)
        if flat.any():
            t = int(np.argmax(flat))
            raise UsdInputError(f"face {face[t]}'s triangle {tuple(int(v) for v in tris[t])} has zero area: cloth "
                                "triangles have an area", file=file, prim=path, attribute=name)  # fmt: skip
    area = 0.5 * doubled  # (the rest shape's, where authored: the last shape checked)
    bending = bend_default(prim, pos if rest is None else rest, file, path, diag)  # (panels: laid flat, as a rule)
    face_h, point_h = _thicknesses(prim, len(counts), n, face, tris, frame, file, path, diag)
    face_h, point_h = face_h * mpu, point_h * mpu
    material = _material(prim, "cloth", file, diag)
    stretch, bend, material_density = _surface_stiffness(material, float(np.mean(face_h)), frame, file, diag, path)
    if material is not None and not np.allclose(face_h, face_h[0]):
        diag.add("cloth of varying thickness: its stiffnesses are those of its mean thickness", path)
    density = _number(body, "physics:density", file)
    density = density * kpu / mpu**3 if density else material_density or DEFAULT_DENSITY
    mass = point_masses(prim, tris, area * face_h, face, len(counts), n, "face", frame, file, path, diag)
    if mass is None:
        mass = np.bincount(tris.reshape(-1), weights=np.repeat(density * area * face_h / 3.0, 3), minlength=n)
        total = _number(body, "physics:mass", file)
        if total and mass.sum() > 0:  # (the body's mass, where no masses are authored)
            mass *= total * kpu / mass.sum()
    cloth = add_cloth(builder, path, pos, vel, mass, 0.5 * point_h, tris, stretch, bend, rest=rest,
                      flat=bending == "flat", rest_triangles=panels)  # fmt: skip
    cloth.bend_angles = bend_angles(prim, tris, face, len(counts), file, path)
    cloth.faces = face if cloth.bend_angles else None


def _import_volume(builder, prim, body, frame, file, diag) -> None:
    path = str(prim.GetPath())
    tet = UsdGeom.TetMesh(prim)
    points, indices = tet.GetPointsAttr().Get(), tet.GetTetVertexIndicesAttr().Get()
    if not points or not indices:
        what = "points" if not points else "tetVertexIndices"
        raise UsdInputError("not authored: a soft volume is a mesh of points and tetrahedra", file=file, prim=path,
                            attribute=what)  # fmt: skip
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    tets = np.asarray(indices, dtype=np.int64).reshape(-1, 4)
    n = len(points)
    bad = (tets < 0) | (tets >= n)
    if bad.any():
        t = int(np.argmax(bad.any(axis=1)))
        raise UsdInputError(f"tetrahedron {t} {tuple(int(v) for v in tets[t])} indexes a point out of range: the "
                            f"mesh has {n} points", file=file, prim=path, attribute="tetVertexIndices")  # fmt: skip
    if not np.all(np.isfinite(points)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute="points")
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()), dtype=np.float64)
    rest, _ = rest_shape(prim, n, m, frame, tets, "physics:restTetVertexIndices", file, path, diag)
    if (tet.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded) != (np.linalg.det(m[:3, :3]) < 0):
        tets = tets[:, [0, 2, 1, 3]]
    mpu, kpu = frame.meters_per_unit, frame.kilograms_per_unit
    pos = mpu * quat_rotate(frame.rotation, points @ m[:3, :3] + m[3, :3])
    vel = _velocities(prim, n, m, frame, file, path)
    for shape, name in ((pos, "tetVertexIndices"), (rest, "physics:restShapePoints")):
        if shape is None:
            continue
        a, b, c = (shape[tets[:, k]] - shape[tets[:, 0]] for k in (1, 2, 3))
        volume = np.einsum("ij,ij->i", np.cross(a, b), c) / 6.0
        longest = np.max(np.stack([np.sum(e * e, 1) for e in (a, b, c, b - a, c - a, c - b)]), axis=0)
        flat = ~(volume > DEGENERATE * longest**1.5)
        if flat.any():
            t = int(np.argmax(flat))
            what = "is inverted" if volume[t] < 0 else "has no volume"
            raise UsdInputError(f"tetrahedron {t} {tuple(int(v) for v in tets[t])} {what}: a soft volume's "
                                "tetrahedra have a positive volume", file=file, prim=path, attribute=name)  # fmt: skip
    material = _material(prim, "volume", file, diag)
    mu = lam = material_density = None
    if material is not None:
        material_density = _number(material, "physics:density", file)
        material_density = material_density * kpu / mpu**3 if material_density else None
        if MATERIAL_APIS["volume"] in applied(material):
            young = _number(material, "physics:youngsModulus", file)
            young = DEFAULT_YOUNGS_MODULUS if young is None else young * kpu / mpu
            nu = _poisson(material, file)
            mu, lam = young / (2.0 * (1.0 + nu)), young * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    density = _number(body, "physics:density", file)
    density = density * kpu / mpu**3 if density else material_density or DEFAULT_DENSITY
    mass = point_masses(prim, tets, volume, None, len(tets), n, "tetrahedron", frame, file, path, diag)
    if mass is None:
        mass = np.bincount(tets.reshape(-1), weights=np.repeat(density * volume / 4.0, 4), minlength=n)
        total = _number(body, "physics:mass", file)
        if total and mass.sum() > 0:  # (the body's mass, where no masses are authored)
            mass *= total * kpu / mass.sum()
    add_volume(builder, path, pos, vel, mass, np.full(n, VOLUME_RADIUS), tets, mu, lam, rest=rest)


def _velocities(prim, n, m, frame, file, path):
    """The prim's authored ``velocities`` in SI world axes (none: zeros)."""
    velocities = authored_value(prim, "velocities")
    if velocities is None or len(velocities) == 0:
        return np.zeros((n, 3))
    if len(velocities) != n:
        raise UsdInputError(f"{len(velocities)} velocities for {n} points: one per point", file=file, prim=path,
                            attribute="velocities")  # fmt: skip
    v = np.asarray(velocities, dtype=np.float64).reshape(-1, 3)
    return frame.meters_per_unit * quat_rotate(frame.rotation, v @ m[:3, :3])


def _poisson(material, file) -> float:
    nu = authored_value(material, "physics:poissonsRatio")
    nu = DEFAULT_POISSONS_RATIO if nu is None else float(nu)
    if not -1.0 < nu < 0.5:
        raise UsdInputError(f"must be in (-1, 0.5), got {nu}", file=file, prim=str(material.GetPath()),
                            attribute="physics:poissonsRatio")  # fmt: skip
    return nu


def _thicknesses(prim, n_faces, n_points, face, tris, frame, file, path, diag, unread=False):
    """Per triangle and per point thickness in stage units."""
    name = "physics:thicknesses"
    values = None if unread else authored_value(prim, name)
    if values is None or len(values) == 0:
        h = DEFAULT_THICKNESS / frame.meters_per_unit
        return np.full(len(tris), h), np.full(n_points, h)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        i = int(np.argmax(~(np.isfinite(v) & (v > 0))))
        raise UsdInputError(f"value {i} is {v[i]:g}: a thickness is positive", file=file, prim=path, attribute=name)
    kind = authored_value(prim, name + ":elementType")
    if kind is None:  # (as Newton 1.8: the array is read with its element type only)
        diag.add(f"{name} without {name}:elementType (constant, face or point) is not read: the thickness is "
                 f"{DEFAULT_THICKNESS * 1e3:g} mm", path)  # fmt: skip
        return _thicknesses(prim, n_faces, n_points, face, tris, frame, file, path, diag, unread=True)
    kind = str(kind)
    expected = {"constant": 1, "face": n_faces, "point": n_points}
    if kind not in expected:
        raise UsdInputError(f"unknown element type {kind!r} (valid: constant, face, point)", file=file, prim=path,
                            attribute=name + ":elementType")  # fmt: skip
    if len(v) != expected[kind]:
        raise UsdInputError(f"{len(v)} values for elementType {kind}: {expected[kind]} expected", file=file,
                            prim=path, attribute=name)  # fmt: skip
    if kind == "constant":
        return np.full(len(tris), v[0]), np.full(n_points, v[0])
    if kind == "point":
        return v[tris].mean(axis=1), v
    per_tri = v[face]
    sums = np.bincount(tris.reshape(-1), weights=np.repeat(per_tri, 3), minlength=n_points)
    hits = np.bincount(tris.reshape(-1), minlength=n_points)
    return per_tri, np.where(hits > 0, sums / np.maximum(hits, 1), v.mean())


def _material(prim, family, file, diag):
    """The material bound to ``prim`` for physics (``material:binding:physics``), or None; one of another
    deformable family is an error."""
    material, rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    if not material or not rel or not str(rel.GetName()).startswith("material:binding"):
        return None
    if str(rel.GetName()) == "material:binding":
        return None  # (an all-purpose binding is a render material's)
    mat = material.GetPrim()
    names = applied(mat)
    if MATERIAL_APIS[family] in names:
        return mat
    others = [api for f, api in MATERIAL_APIS.items() if f != family and api in names]
    if others:
        raise UsdInputError(f"is bound to {mat.GetPath()}, a {others[0]} material: a {family} takes a "
                            f"{MATERIAL_APIS[family]} material", file=file, prim=str(prim.GetPath()),
                            attribute="material:binding:physics")  # fmt: skip
    return mat  # (a plain PhysicsMaterialAPI: its density only)


def _surface_stiffness(material, thickness, frame, file, diag, path):
    """(stretch N/m, bend N*m, density kg/m^3) of a cloth's material (None: the solver's default / not authored)."""
    if material is None:
        return None, None, None
    mpu, kpu = frame.meters_per_unit, frame.kilograms_per_unit
    density = _number(material, "physics:density", file)
    density = density * kpu / mpu**3 if density else None
    if MATERIAL_APIS["cloth"] not in applied(material):
        return None, None, density
    young = _number(material, "physics:youngsModulus", file)
    young = DEFAULT_YOUNGS_MODULUS if young is None else young * kpu / mpu
    nu = _poisson(material, file)
    plane = 1.0 - nu * nu
    stretch = _number(material, "physics:surfaceStretchStiffness", file)
    stretch = young * thickness / plane if stretch is None else stretch * kpu
    bend = _number(material, "physics:surfaceBendStiffness", file)
    bend = young * thickness**3 / (12.0 * plane) if bend is None else bend * kpu * mpu * mpu
    if _number(material, "physics:surfaceShearStiffness", file) is not None:
        diag.add("physics:surfaceShearStiffness is not simulated: Newton's cloth membrane is isotropic (its stretch "
                 "stiffness sets shear too)", str(material.GetPath()))  # fmt: skip
    return stretch, bend, density


def vbd_scene_settings(scene, frame, file) -> dict:
    """The VBD scene prim's authored ``newton:vbd:*`` settings (``NewtonVbdSceneAPI``) as SolverVBD keywords (SI),
    and its ``newton:maxSolverIterations`` as ``iterations`` (-1: the solver's default)."""
    out = {}
    if not scene:
        return out
    path = str(scene.GetPath())
    for prop in scene.GetAuthoredProperties():
        name = prop.GetName()
        if name.startswith("newton:vbd:") and name not in VBD_SETTINGS:
            raise UsdInputError(f"unknown attribute of {VBD_SCENE_API}; known: {', '.join(VBD_SETTINGS)}", file=file,
                                prim=path, attribute=name)  # fmt: skip
    for name, (key, unit) in VBD_SETTINGS.items():
        value = authored_value(scene, name)
        if value is None:
            continue
        if unit is None:
            out[key] = bool(value)
            continue
        v = _number(scene, name, file)
        if v is not None:
            out[key] = v * frame.kilograms_per_unit ** unit[0] * frame.meters_per_unit ** unit[1]
    iterations = authored_value(scene, "newton:maxSolverIterations")
    if iterations is not None and int(iterations) != -1:
        if int(iterations) < 1:
            raise UsdInputError(f"must be positive (or -1: the solver's default), got {iterations}", file=file,
                                prim=path, attribute="newton:maxSolverIterations")  # fmt: skip
        out["iterations"] = int(iterations)
    return out
