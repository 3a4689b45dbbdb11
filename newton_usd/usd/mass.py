"""Mass properties with the UsdPhysics precedence (PhysicsMassAPI on bodies and colliders, densities,
materials), and what a body with no mass and no collider gets.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from pxr import Gf, UsdPhysics

from ..core import inertia as mass_props
from ..core.quat import gf_to_xyzw, quat_to_matrix
from ..core.types import GeoType, JointType
from ..errors import UsdInputError

DEFAULT_DENSITY = 1000.0  # kg/m^3, the UsdPhysics specification's default

_MASS_ATTRIBUTES = frozenset(
    ("physics:mass", "physics:density", "physics:centerOfMass", "physics:diagonalInertia", "physics:principalAxes")
)

_NO_MASS = (0.0, 0.0, None, None, None)

_MASS_TYPES = {  # the Python types of the MassAPI attributes' values, and their USD types for messages
    "physics:mass": (float, int),
    "physics:density": (float, int),
    "physics:centerOfMass": (Gf.Vec3f, Gf.Vec3d, Gf.Vec3h),
    "physics:diagonalInertia": (Gf.Vec3f, Gf.Vec3d, Gf.Vec3h),
    "physics:principalAxes": (Gf.Quatf, Gf.Quatd, Gf.Quath),
}

_MASS_TYPE_NAMES = {
    "physics:mass": "a float",
    "physics:density": "a float",
    "physics:centerOfMass": "a point3f",
    "physics:diagonalInertia": "a float3",
    "physics:principalAxes": "a quatf",
}


def _mass_api(prim, file=None, authored=None, applied=None):
    """(mass, density, com or None, diagonal inertia or None, principal axes quat) authored on ``prim``
    (``authored``: the prim's authored property names, when known, to skip prims that author none;
    ``applied``: its applied schemas, when known)."""
    if authored is not None and authored.isdisjoint(_MASS_ATTRIBUTES):
        return _NO_MASS
    if not ("PhysicsMassAPI" in applied if applied is not None else prim.HasAPI(UsdPhysics.MassAPI)):
        return _NO_MASS
    if authored is None:
        authored = _MASS_ATTRIBUTES

    def get(name):  # the value, checked to be of the MassAPI schema's type (a layer can author any type)
        attr = prim.GetAttribute(name)
        value = attr.Get()
        kind = _MASS_TYPES[name]
        if value is not None and not isinstance(value, kind):
            raise UsdInputError(
                f"authored as {type(value).__name__} {value!r}, expected {_MASS_TYPE_NAMES[name]}",
                file=file,
                prim=str(prim.GetPath()),
                attribute=name,
            )
        return value

    mass = (get("physics:mass") or 0.0) if "physics:mass" in authored else 0.0
    density = (get("physics:density") or 0.0) if "physics:density" in authored else 0.0
    for name, value in (("physics:mass", mass), ("physics:density", density)):
        if value < 0 or not math.isfinite(value):
            raise UsdInputError(
                f"must be a finite number >= 0 (0: not set), got {value}",
                file=file,
                prim=str(prim.GetPath()),
                attribute=name,
            )
    com = get("physics:centerOfMass") if "physics:centerOfMass" in authored else None
    com = None if com is None or not all(math.isfinite(c) for c in com) else np.array(com, dtype=np.float64)
    diag = get("physics:diagonalInertia") if "physics:diagonalInertia" in authored else None
    if diag is not None and not all(x >= 0 and math.isfinite(x) for x in diag):  # (NaN fails both)
        raise UsdInputError(
            f"must be finite and >= 0 in every component, got {tuple(diag)}",
            file=file,
            prim=str(prim.GetPath()),
            attribute="physics:diagonalInertia",
        )
    diag = None if diag is None or all(x == 0 for x in diag) else np.array(diag, dtype=np.float64)
    axes = get("physics:principalAxes") if "physics:principalAxes" in authored else None
    axes = None if axes is None else gf_to_xyzw(axes)
    if axes is not None and np.linalg.norm(axes) < 1e-9:
        axes = None
    return float(mass), float(density), com, diag, axes


def import_mass(builder, stage, body, path, parts, materials, frame, diag, file, massless, resolver, memo=None):
    """Mass properties: body MassAPI mass > sum of collider masses (collider mass > collider density >
    body density > material density > 1000 kg/m^3); COM and inertia from the colliders unless authored.
    ``memo``: a dict for the body-frame mass properties of analytic colliders, by their exact inputs
    (identical colliders, as in replicated robots, are computed once)."""
    s, k = frame.meters_per_unit, frame.kilograms_per_unit
    density_scale = k / s**3
    prim = stage.GetPrimAtPath(path)
    view = resolver.view(prim)
    b_mass, b_density, b_com, b_inertia, b_axes = _mass_api(prim, file, view.authored, view.applied)
    collider_props = []
    keys = []  # the colliders' memo keys (None: one is not memoized)
    shape_type, shape_scale, shape_source = builder.shape_type, builder.shape_scale, builder.shape_source
    for shape, shape_prim, md, shape_path, mujoco_mass in parts:
        geo = shape_type[shape]
        if geo == GeoType.PLANE:
            continue
        shape_view = resolver.view(shape_prim, shape_path)
        c_mass, c_density, _, _, _ = _mass_api(shape_prim, file, shape_view.authored, shape_view.applied)
        if c_density > 0:
            density = c_density * density_scale
        elif b_density > 0:
            density = b_density * density_scale
        elif md is not None and md.density > 0:
            density = md.density * density_scale
        else:
            density = DEFAULT_DENSITY
        scale, source = shape_scale[shape], shape_source[shape]
        p, q = builder.shape_transform[shape]
        key = None
        mode = None  # MuJoCo's mesh inertia mode, where MuJoCo computes the mass (convex hull, shell)
        if mujoco_mass is not None:
            mode, thickness = mujoco_mass
            if mode == "shell":  # MuJoCo's density is per area: times the wall's thickness
                density *= thickness if thickness is not None else s  # (None: one stage unit, as MuJoCo's)
        if memo is not None and source is None:  # (density and c_mass are never -0.0: == is exact here)
            key = (geo, density, c_mass, scale.tobytes(), p.tobytes(), q.tobytes())
            keys.append(key)
            part = memo.get(key)
            if part is not None:
                collider_props.append((part[0], part[1].copy(), part[2].copy()))
                continue
        else:
            keys.append(None)
        mesh_key = ("mesh", id(source), mode, density, scale.tobytes()) if mode and memo is not None else None
        props = memo.get(mesh_key) if mesh_key else None  # (a MuJoCo compile each: once per replicated mesh)
        if props is None:
            props = mass_props.shape_mass_properties(geo, scale, density, source, mesh_inertia=mode)
            if mesh_key:
                memo[mesh_key] = props  # (the builder keeps source alive: its id stays its own)
        if c_mass > 0 and props[0] > 0:  # an authored collider mass scales its shape's distribution
            f = c_mass * k / props[0]
            props = (props[0] * f, props[1], props[2] * f)
        part = mass_props.transform_inertia(*props, p, q)
        if key is not None:
            memo[key] = (part[0], part[1].copy(), part[2].copy())
        collider_props.append(part)
    if not collider_props:
        mass, com, inertia = 0.0, np.zeros(3), np.zeros((3, 3))
    elif len(collider_props) > 1 and memo is not None and None not in keys:  # the same colliders: the same sum
        key = ("combined", *keys)
        combined = memo.get(key)
        if combined is None:
            combined = memo[key] = mass_props.combine(collider_props)
        mass, com, inertia = combined[0], combined[1].copy(), combined[2].copy()
    else:
        mass, com, inertia = mass_props.combine(collider_props)
    if b_mass > 0:
        if mass > 0:
            inertia = inertia * (b_mass * k / mass)
        mass = b_mass * k
    if b_com is not None:
        new_com = b_com * s
        if mass > 0:  # move the inertia to the authored COM (parallel axis theorem)
            d0 = com - new_com
            inertia = inertia + mass * (np.dot(d0, d0) * np.eye(3) - np.outer(d0, d0))
        com = new_com
    if b_inertia is not None:
        r = quat_to_matrix(b_axes) if b_axes is not None else np.eye(3)
        inertia = r @ np.diag(b_inertia * k * s * s) @ r.T
    if mass <= 0:
        builder.set_body_mass(body, 0.0, com, np.zeros((3, 3)))
        massless.append(body)  # resolved once the joints are known (see resolve_massless)
        return
    if not collider_props and b_inertia is None:
        inertia = shapeless_inertia(mass)
        diag.add(SHAPELESS_NOTE, path)
    if memo is None:
        degenerate = np.linalg.det(inertia) <= 0
    else:
        key = ("degenerate", inertia.tobytes())
        degenerate = memo.get(key)
        if degenerate is None:
            degenerate = memo[key] = np.linalg.det(inertia) <= 0
    if degenerate:
        inertia = np.eye(3) * max(1e-6, mass * 1e-4)
        diag.add("body inertia not positive definite: replaced with a small isotropic inertia", path)
    builder.set_body_mass(body, mass, com, inertia)


SHAPELESS_MASS = 1.0
"""kg: a body with no collider and no authored mass (PhysX's updateMassAndInertia gives such a body 1)."""

SHAPELESS_RADIUS = 0.1
"""m: a body with no collider and no authored inertia has the inertia of a solid sphere this big, of its mass
(as ``UsdPhysics.RigidBodyAPI.ComputeMassProperties``, the schema's reference computation, gives it)."""

SHAPELESS_NOTE = (f"body without colliders or authored inertia: given the inertia of a {SHAPELESS_RADIUS:g} m solid "
                  "sphere of its mass, as UsdPhysics computes it")  # fmt: skip


def shapeless_inertia(mass: float) -> np.ndarray:
    """The inertia (kg*m^2) of a body of ``mass`` (kg) with no collider and no authored inertia."""
    return np.eye(3) * 0.4 * mass * SHAPELESS_RADIUS**2


def resolve_massless(builder, massless, diag):
    """A body with no mass and no colliders: massless when a fixed joint welds it to another body or to
    the world (a frame, or a carrier of massive welded children, as MuJoCo allows), else 1 kg so that
    it can move. Said only for a massless body whose welded group moves and has no mass at all (the
    solver's degenerate case); a frame welded to the world or to a massive body is as MJCF authors it."""
    root = {}  # union-find over the bodies welded by fixed joints, the world (-1) included

    def find(b):
        while root.get(b, b) != b:
            b = root[b]
        return b

    welded = set()
    for j, jt in enumerate(builder.joint_type):
        if jt == JointType.FIXED:  # to another body, or to the world (a static frame)
            welded.update((builder.joint_parent[j], builder.joint_child[j]))
            a, b = find(builder.joint_parent[j]), find(builder.joint_child[j])
            if a != b:
                root[max(a, b)] = min(a, b)  # (the world, -1, stays a group's root)
    group_mass = defaultdict(float)
    for b, m in enumerate(builder.body_mass):
        group_mass[find(b)] += m
    for b in massless:
        group = find(b)
        if b not in welded:
            builder.set_body_mass(b, SHAPELESS_MASS, builder.body_com[b], shapeless_inertia(SHAPELESS_MASS))
            diag.add(f"body without colliders or authored mass: given {SHAPELESS_MASS:g} kg, as PhysX does",
                     builder.body_label[b])  # fmt: skip
            diag.add(SHAPELESS_NOTE, builder.body_label[b])
        elif group != -1 and group_mass[group] <= 0.0:
            diag.add("massless bodies welded together with no mass among them: simulated massless",
                     builder.body_label[b])  # fmt: skip
