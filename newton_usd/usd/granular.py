"""Granular matter from the stage: ``Points`` prims simulated as grains of an MPM scene, into the builder's particles.

A ``Points`` prim that applies ``NewtonPointsDeformableSimAPI``, with ``PhysicsDeformableBodyAPI`` on it or on its
parent (the body prim), is granular matter of the PhysicsScene its body prim names in ``physics:simulationOwner``
(none authored: the stage's first PhysicsScene), which must apply ``NewtonMPMSceneAPI``. Each point is one grain
(a particle of the builder, labelled by the prim's path), read as Newton 1.8 reads it (its ``usd/particles.py``):

- ``points`` and ``velocities`` (optional) in the prim's own space: placed by its world transform (uniform scale
  only, so that a width stays a width), in stage units, turned into SI and Z up (:class:`~.stage.StageFrame`);
- ``widths`` (``primvars:widths`` first; constant or one per point): a grain's radius is half its width
  (none authored: :data:`DEFAULT_RADIUS`); ``ids``, where authored, one per point;
- its mass: ``physics:masses`` (per point, in stage mass units), else the density of its material (else the body
  prim's ``physics:density``, else :data:`DEFAULT_DENSITY`) times its width cubed, scaled so that they sum to the
  body prim's ``physics:mass`` where that is authored;
- its material: the ``NewtonMPMMaterialAPI`` material bound for physics (``material:binding:physics``), per point
  through ``GeomSubset`` s of the ``materialBind`` family (elementType ``point``): a subset's material sets its
  points' values; what it does not author is the solver's default (as Newton reads them). Each
  ``newton:mpm:*`` value goes into the builder's per-particle attributes (``"mpm:<name>"``, :data:`MATERIAL`), in SI.

The scene's own ``newton:mpm:*`` settings (the solver's) are read by :func:`mpm_scene_settings`.

Bad input is a one-line :class:`~newton_usd.errors.UsdInputError` naming the prim and attribute: a negative or zero
width or mass, counts that do not match the points, an unknown ``newton:mpm:*`` attribute or token, grains owned by
a scene that is not an MPM scene.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from pxr import Usd, UsdGeom, UsdPhysics, UsdShade

from ..core.quat import quat_rotate
from ..errors import UsdInputError

SIM_API = "NewtonPointsDeformableSimAPI"
BODY_API = "PhysicsDeformableBodyAPI"
MPM_SCENE_API = "NewtonMPMSceneAPI"
MPM_MATERIAL_API = "NewtonMPMMaterialAPI"

DEFAULT_RADIUS = 0.1
"""m: a grain's radius where its prim authors no widths (Newton's ``default_particle_radius``)."""

DEFAULT_DENSITY = 1000.0
"""kg/m^3: a grain's density where neither its material nor its body prim authors one (Newton's default)."""

MATERIAL = {
    # attribute -> (per-particle attribute, unit: "pressure" kg/(m s^2) and "pressure_time" kg/(m s) scale by
    # kilogramsPerUnit / metersPerUnit; "1": none)
    "newton:mpm:youngsModulus": ("mpm:young_modulus", "pressure"),
    "newton:mpm:poissonsRatio": ("mpm:poisson_ratio", "1"),
    "newton:mpm:elasticDamping": ("mpm:damping", "pressure_time"),
    "newton:mpm:internalFriction": ("mpm:friction", "1"),
    "newton:mpm:yieldPressure": ("mpm:yield_pressure", "pressure"),
    "newton:mpm:tensileYieldRatio": ("mpm:tensile_yield_ratio", "1"),
    "newton:mpm:yieldStress": ("mpm:yield_stress", "pressure"),
    "newton:mpm:viscosity": ("mpm:viscosity", "pressure_time"),
    "newton:mpm:hardening": ("mpm:hardening", "1"),
    "newton:mpm:hardeningRate": ("mpm:hardening_rate", "1"),
    "newton:mpm:softeningRate": ("mpm:softening_rate", "1"),
    "newton:mpm:dilatancy": ("mpm:dilatancy", "1"),
    "newton:mpm:initialPlasticVolumeStrain": ("mpm:particle_Jp", "1"),
}
"""A material's ``newton:mpm:*`` attributes (NewtonMPMMaterialAPI) -> the per-particle attribute each sets."""

_SIM_DEFAULT = {"newton:mpm:youngsModulus", "newton:mpm:yieldPressure"}
"""Attributes whose ``-inf`` means the solver's default."""

YOUNG_DEFAULT = 1.0e15
"""Pa: the Young's modulus of a material that authors none (SolverImplicitMPM's default), which an authored
``newton:mpm:elasticDamping`` is divided by (the solver takes damping as a relaxation time, damping / modulus)."""


@dataclass
class Grains:
    """The granular Points prims of a scene that :func:`import_grains` added.

    Attributes:
        groups: prim path -> its run of the builder's particles ``(first, end)``.
        scene: the MPM PhysicsScene's path that simulates them (None: none).
        settings: that scene's solver settings (:func:`mpm_scene_settings`).
        elsewhere: prim path -> its scene, for grains of another scene (not imported here).
    """

    groups: dict = field(default_factory=dict)
    scene: str | None = None
    settings: dict = field(default_factory=dict)
    elsewhere: dict = field(default_factory=dict)


def applied(prim) -> set:
    """The API schemas ``prim`` applies, by name (listed in its ``apiSchemas``: read whether or not a plugin
    registers them)."""
    names = set(prim.GetAppliedSchemas())
    listed = prim.GetMetadata("apiSchemas")
    if listed is not None:
        names.update(str(n) for n in listed.ApplyOperations([]))
    return names


def find_granular(stage, exclude=()) -> list:
    """The Points prims of ``stage`` that apply :data:`SIM_API`, in traversal order (not under ``exclude``)."""
    out = []
    skip = [str(p) for p in exclude]
    for prim in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        if SIM_API not in applied(prim):
            continue
        path = str(prim.GetPath())
        if any(path == s or path.startswith(s + "/") for s in skip):
            continue
        out.append(prim)
    return out


def grain_scenes(stage, default_scene: str | None) -> set:
    """The scenes that own the stage's grains (their body prim's ``physics:simulationOwner``, else
    ``default_scene``), read without checking them (:func:`import_grains` does)."""
    out = set()
    for prim in find_granular(stage):
        body = prim if BODY_API in applied(prim) else prim.GetParent()
        rel = body.GetRelationship("physics:simulationOwner") if body else None
        targets = rel.GetForwardedTargets() if rel else []
        scene = str(targets[0]) if targets else default_scene
        if scene:
            out.add(scene)
    return out


def import_grains(
    builder,
    stage,
    frame,
    file: str,
    scene_path: str | None,
    default_scene: str | None,
    used: set | None = None,
    exclude=(),
) -> Grains:
    """Add the grains of the PhysicsScene ``scene_path`` (the imported scene; ``default_scene``: the stage's first,
    which owns grains that name no owner) to ``builder`` (see the module). Grains of another scene are listed in
    :attr:`Grains.elsewhere`. ``used``: the import's record of the attributes it read (``Resolver.used``: ``usdsim
    check`` lists the authored ``newton:*`` ones it lacks), to which the scene's settings and the grains' materials'
    ``newton:mpm:*`` values read here are added. Prims under ``exclude`` (the environments replicated from the first)
    are not read."""
    grains = Grains()
    for prim in find_granular(stage, exclude):
        path = str(prim.GetPath())
        if not prim.IsA(UsdGeom.Points):
            raise UsdInputError(f"{SIM_API} applies to Points prims only, not to a {prim.GetTypeName() or 'typeless'} "
                                "prim", file=file, prim=path)  # fmt: skip
        owner = _owner(prim, default_scene, file)
        if scene_path is not None and owner != scene_path:
            grains.elsewhere[path] = owner
            continue
        if grains.scene is None:
            grains.scene = owner
            grains.settings = mpm_scene_settings(stage.GetPrimAtPath(owner), frame, file)
            builder.mpm_config.update(grains.settings)
            _mark_read(used, stage.GetPrimAtPath(owner), SCENE_SETTINGS)
        pos, vel, mass, radius, material = _read_points(prim, frame, file)
        grains.groups[path] = builder.add_particles(path, pos, vel, mass, radius, material)
        if used is not None:
            subsets = UsdShade.MaterialBindingAPI(prim).GetMaterialBindSubsets()
            bindings = [UsdShade.MaterialBindingAPI(s.GetPrim()).GetDirectBinding("physics") for s in subsets]
            bound = [b.GetMaterial() for b in bindings]
            for material_prim in [_physics_material(prim)] + [m.GetPrim() for m in bound if m]:
                if material_prim is not None:
                    _mark_read(used, material_prim, MATERIAL)
    return grains


def _mark_read(used: set | None, prim, names) -> None:
    """Record in ``used`` the attributes of ``names`` that ``prim`` authors (read by this module)."""
    if used is None:
        return
    path = str(prim.GetPath())
    for name in names:
        attr = prim.GetAttribute(name)
        if attr and attr.HasAuthoredValue():
            used.add((path, name))


def say_uncoupled_bodies(grains: Grains, bodies, diagnostics) -> None:
    """The dynamic rigid bodies of a scene beside grains of another (MPM) scene: not coupled with them (said once,
    naming them): the grains do not collide with them, and they do not feel the grains. ``bodies``: USD's
    ``(path, RigidBodyDesc)`` of the scene."""
    scenes = sorted(set(grains.elsewhere.values()))
    if not scenes:
        return
    kind = (f"these rigid bodies are not coupled with the grains of {', '.join(scenes)} (another PhysicsScene): the "
            "grains do not collide with them; owned by that MPM scene they are (xpbd or featherstone)")  # fmt: skip
    for path, desc in bodies:
        if desc.rigidBodyEnabled and not desc.kinematicBody:
            diagnostics.add(kind, str(path))


def _owner(prim, default_scene, file) -> str:
    """The MPM scene's path that simulates the grains of ``prim`` (its body prim's ``physics:simulationOwner``)."""
    path = str(prim.GetPath())
    body = prim if BODY_API in applied(prim) else None
    parent = prim.GetParent()
    if body is None and parent and BODY_API in applied(parent):
        body = parent
    if body is None:
        raise UsdInputError(f"{SIM_API} needs {BODY_API} on the Points prim or its parent", file=file, prim=path)
    rel = body.GetRelationship("physics:simulationOwner")
    targets = rel.GetForwardedTargets() if rel else []
    if len(targets) > 1:
        raise UsdInputError(f"names {len(targets)} scenes; one PhysicsScene owns a deformable body", file=file,
                            prim=str(body.GetPath()), attribute="physics:simulationOwner")  # fmt: skip
    scene = str(targets[0]) if targets else default_scene
    scene_prim = body.GetStage().GetPrimAtPath(scene) if scene else None
    if not scene_prim or not scene_prim.IsA(UsdPhysics.Scene):
        what = f"names {scene}, not a PhysicsScene" if scene else "is not authored and the stage has no PhysicsScene"
        raise UsdInputError(f"{what}: grains are simulated by a PhysicsScene applying {MPM_SCENE_API}", file=file,
                            prim=str(body.GetPath()), attribute="physics:simulationOwner")  # fmt: skip
    if MPM_SCENE_API not in applied(scene_prim):
        how = "names" if targets else "is not authored: the stage's default scene is"
        raise UsdInputError(
            f"{how} {scene}, which is not an MPM scene: the grains of {path} are simulated by a PhysicsScene "
            f"applying {MPM_SCENE_API}",
            file=file, prim=str(body.GetPath()), attribute="physics:simulationOwner",
        )  # fmt: skip
    return scene


def world_matrix(prim) -> np.ndarray:
    """The prim's local-to-world matrix (row vectors, stage units), at the default time."""
    return np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default()), dtype=np.float64)


def uniform_scale(matrix: np.ndarray, file, path) -> float:
    """The uniform scale of ``matrix``'s linear part (a non-uniform or sheared one: an error)."""
    s = np.linalg.svd(matrix[:3, :3], compute_uv=False)
    scale = float(np.mean(s))
    if not math.isfinite(scale) or scale <= 0 or not np.allclose(s, scale, rtol=1e-5):
        raise UsdInputError(f"grains need a uniform, unsheared world transform (their widths are lengths); its "
                            f"scales are {', '.join(f'{v:.4g}' for v in s)}", file=file, prim=path)  # fmt: skip
    return scale


def _array(prim, name, file, path, width: int, count: int | None):
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr and attr.HasAuthoredValue() else None
    if value is None or len(value) == 0:
        return None
    a = np.asarray(value, dtype=np.float64).reshape(len(value), -1) if width > 1 else np.asarray(value, np.float64)
    if count is not None and len(a) != count:
        raise UsdInputError(f"{len(a)} values for {count} points: one per point", file=file, prim=path, attribute=name)
    if not np.all(np.isfinite(a)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute=name)
    return a


def _read_points(prim, frame, file):
    """One Points prim's grains: (positions, velocities, masses, radii, per-particle material), SI."""
    path = str(prim.GetPath())
    points = _array(prim, "points", file, path, 3, None)
    if points is None:
        raise UsdInputError("no points authored: each point is a grain", file=file, prim=path, attribute="points")
    n = len(points)
    velocities = _array(prim, "velocities", file, path, 3, n)
    ids = prim.GetAttribute("ids")
    if ids and ids.HasAuthoredValue() and ids.Get() is not None and len(ids.Get()) != n:
        raise UsdInputError(f"{len(ids.Get())} ids for {n} points: one per point", file=file, prim=path,
                            attribute="ids")  # fmt: skip
    m = world_matrix(prim)
    scale = uniform_scale(m, file, path)
    mpu, r = frame.meters_per_unit, frame.rotation
    pos = mpu * quat_rotate(r, points @ m[:3, :3] + m[3, :3])
    vel = np.zeros((n, 3)) if velocities is None else mpu * quat_rotate(r, velocities @ m[:3, :3])
    widths, width_attr = _widths(prim, n, file, path)
    if widths is None:
        radius = np.full(n, DEFAULT_RADIUS)
    else:
        if np.any(widths <= 0):
            i = int(np.argmax(widths <= 0))
            raise UsdInputError(f"point {i}'s width is {widths[i]:g}: a grain's width is positive", file=file,
                                prim=path, attribute=width_attr)  # fmt: skip
        radius = 0.5 * widths * scale * mpu
    material, density = _materials(prim, n, frame, file, path)
    mass = _masses(prim, n, radius, density, frame, file, path)
    return pos, vel, mass, radius, material


def _widths(prim, n, file, path):
    """Per point widths (stage units, in the prim's space) and the attribute that gave them; None: not authored."""
    primvar = UsdGeom.PrimvarsAPI(prim).GetPrimvar("widths")
    if primvar and primvar.HasAuthoredValue():
        value, interpolation, name = primvar.ComputeFlattened(), primvar.GetInterpolation(), "primvars:widths"
    else:
        attr = UsdGeom.Points(prim).GetWidthsAttr()
        if not attr or not attr.HasAuthoredValue():
            return None, None
        value, interpolation, name = attr.Get(), UsdGeom.Points(prim).GetWidthsInterpolation(), "widths"
    if value is None or len(value) == 0:
        return None, None
    w = np.asarray(value, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(w)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute=name)
    if interpolation == UsdGeom.Tokens.constant or (len(w) == 1 and n != 1):
        if len(w) != 1:
            raise UsdInputError(f"constant widths hold one value, not {len(w)}", file=file, prim=path, attribute=name)
        return np.full(n, w[0]), name
    if len(w) != n:
        raise UsdInputError(f"{len(w)} widths for {n} points: one per point (or one, constant)", file=file, prim=path,
                            attribute=name)  # fmt: skip
    return w, name


def _physics_material(prim):
    """The material bound to ``prim`` for physics (``material:binding:physics``, direct or inherited), or None."""
    material, rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    if not material or not rel:
        return None
    name = str(rel.GetName())
    if name != "material:binding:physics" and not name.startswith("material:binding:collection:physics:"):
        return None  # (an all-purpose binding is a render material's)
    return material.GetPrim()


def _material_values(material, frame, file) -> tuple[dict, float | None]:
    """A material prim's ``newton:mpm:*`` values (per-particle attribute -> SI value) and its ``physics:density``
    (kg/m^3; None: not authored)."""
    if material is None:
        return {}, None
    path = str(material.GetPath())
    if MPM_MATERIAL_API not in applied(material) and "PhysicsMaterialAPI" not in applied(material):
        raise UsdInputError(f"a material bound to grains for physics applies {MPM_MATERIAL_API} (or "
                            "PhysicsMaterialAPI)", file=file, prim=path)  # fmt: skip
    kpu, mpu = frame.kilograms_per_unit, frame.meters_per_unit
    values = {}
    for prop in material.GetAuthoredProperties():
        name = prop.GetName()
        if not name.startswith("newton:mpm:"):
            continue
        if name not in MATERIAL:
            raise UsdInputError(f"unknown attribute of {MPM_MATERIAL_API}; known: {', '.join(MATERIAL)}", file=file,
                                prim=path, attribute=name)  # fmt: skip
        value = prop.Get() if isinstance(prop, Usd.Attribute) else None
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise UsdInputError(f"must be a number, got {value!r}", file=file, prim=path, attribute=name) from None
        if value == -math.inf and name in _SIM_DEFAULT:
            continue  # (the solver's default)
        if not math.isfinite(value):
            raise UsdInputError(f"must be finite, got {value}", file=file, prim=path, attribute=name)
        key, unit = MATERIAL[name]
        if key == "mpm:poisson_ratio":
            if not -1.0 < value <= 0.5:
                raise UsdInputError(f"must be in (-1, 0.5], got {value}", file=file, prim=path, attribute=name)
        elif value < 0:
            raise UsdInputError(f"must not be negative, got {value}", file=file, prim=path, attribute=name)
        if key in ("mpm:tensile_yield_ratio", "mpm:dilatancy") and value > 1:
            raise UsdInputError(f"must not exceed 1, got {value}", file=file, prim=path, attribute=name)
        values[key] = value * kpu / mpu if unit != "1" else value
    if "mpm:damping" in values:  # (a relaxation time: damping / modulus)
        values["mpm:damping"] /= values.get("mpm:young_modulus", YOUNG_DEFAULT)
    density = None
    attr = material.GetAttribute("physics:density")
    if attr and attr.HasAuthoredValue():
        d = float(attr.Get())
        if not math.isfinite(d) or d < 0:
            raise UsdInputError(f"must be finite and not negative, got {d}", file=file, prim=path,
                                attribute="physics:density")  # fmt: skip
        density = d * kpu / mpu**3 if d > 0 else None
    return values, density


def _materials(prim, n, frame, file, path):
    """Per-particle material values (attribute -> array, NaN: the solver's default) and densities (array, NaN:
    not authored), of the prim's material and its point subsets'."""
    values, density = _material_values(_physics_material(prim), frame, file)
    material = {k: np.full(n, v) for k, v in values.items()}
    dens = np.full(n, np.nan if density is None else density)
    subsets = []
    for subset in UsdShade.MaterialBindingAPI(prim).GetMaterialBindSubsets():
        bound = UsdShade.MaterialBindingAPI(subset.GetPrim()).GetDirectBinding("physics").GetMaterial()
        if not bound:
            continue
        spath = str(subset.GetPath())
        if subset.GetElementTypeAttr().Get() != UsdGeom.Tokens.point:
            raise UsdInputError(f"a physics material subset of grains has elementType 'point', not "
                                f"{subset.GetElementTypeAttr().Get()!r}", file=file, prim=spath,
                                attribute="elementType")  # fmt: skip
        indices = np.asarray(subset.GetIndicesAttr().Get() or [], dtype=np.int64)
        if len(indices) and (indices.min() < 0 or indices.max() >= n):
            raise UsdInputError(f"index {int(indices.max() if indices.max() >= n else indices.min())} is not one of "
                                f"the {n} points", file=file, prim=spath, attribute="indices")  # fmt: skip
        subsets.append((spath, indices, bound.GetPrim()))
    taken = np.zeros(n, dtype=bool)
    for spath, indices, bound in subsets:
        if taken[indices].any():
            raise UsdInputError("shares points with another material subset: a point has one material", file=file,
                                prim=spath, attribute="indices")  # fmt: skip
        taken[indices] = True
        sub, sub_density = _material_values(bound, frame, file)
        for key in set(material) | set(sub):  # (what the subset's material does not author: the solver's default)
            material.setdefault(key, np.full(n, np.nan))[indices] = sub.get(key, np.nan)
        dens[indices] = np.nan if sub_density is None else sub_density
    return material, dens


def _masses(prim, n, radius, density, frame, file, path):
    """Per grain mass in kg (see the module)."""
    masses = _array(prim, "physics:masses", file, path, 1, n)
    if masses is not None:
        if np.any(masses <= 0):
            i = int(np.argmax(masses <= 0))
            raise UsdInputError(f"point {i}'s mass is {masses[i]:g}: a grain's mass is positive", file=file,
                                prim=path, attribute="physics:masses")  # fmt: skip
        return masses * frame.kilograms_per_unit
    body = prim if BODY_API in applied(prim) else prim.GetParent()
    total = None
    for name, power in (("physics:density", 3), ("physics:mass", 0)):
        attr = body.GetAttribute(name)
        if not attr or not attr.HasAuthoredValue():
            continue
        v = float(attr.Get())
        if not math.isfinite(v) or v < 0:
            raise UsdInputError(f"must be finite and not negative, got {v}", file=file, prim=str(body.GetPath()),
                                attribute=name)  # fmt: skip
        if v == 0:
            continue
        v *= frame.kilograms_per_unit / frame.meters_per_unit**power
        if power:
            density = np.full(n, v)  # (the body's density wins over its materials')
        else:
            total = v
    density = np.where(np.isnan(density), DEFAULT_DENSITY, density)
    mass = density * (2.0 * radius) ** 3
    if total is not None:
        mass *= total / mass.sum()
    return mass


# ---------------------------------------------------------------------------------------- the MPM scene's settings

_TOKENS = {
    "newton:mpm:gridType": ("grid_type", ("sparse", "dense", "fixed")),
    "newton:mpm:transferScheme": ("transfer_scheme", ("apic", "pic")),
    "newton:mpm:integrationScheme": ("integration_scheme", ("pic", "gimp")),
}
_RHEOLOGY = {
    "auto": "auto", "gauss-seidel": "gauss-seidel", "gauss-seidel-soa": "gauss-seidel-soa",
    "gauss-seidel-batched": "gauss-seidel-batched", "jacobi": "jacobi", "conjugate-gradient": "cg",
    "conjugate-residual": "cr", "generalized-minimal-residual": "gmres",
    # (the solver's own short names, which the schema's allowedTokens leave out and newton-usd-schemas' sand.usda
    # uses: accepted, though Newton 1.8's importer refuses them)
    "gs": "gauss-seidel", "gs-soa": "gauss-seidel-soa", "gs-batched": "gauss-seidel-batched", "cg": "cg",
    "cr": "cr", "gmres": "gmres",
}  # fmt: skip
_BASES = {
    "collider": ("collider_basis", ("linear", "trilinear", "bspline", "serendipity", "particle"), (2, False)),
    "strain": ("strain_basis", ("linear", "trilinear", "particle"), (0, False)),
}
_BASIS_LETTER = {"linear": "P", "trilinear": "Q", "bspline": "B", "serendipity": "S"}
SCENE_SETTINGS = (
    "newton:maxSolverIterations", "newton:mpm:tolerance", "newton:mpm:rheologySolvers", "newton:mpm:voxelSize",
    "newton:mpm:gridPadding", "newton:mpm:maxActiveCellCount", "newton:mpm:criticalFraction", "newton:mpm:airDrag",
    *_TOKENS,
    *(f"newton:mpm:{b}{part}" for b in _BASES for part in ("BasisType", "BasisOrder", "DiscontinuousBasis")),
    "newton:mpm:velocityBasisType", "newton:mpm:velocityBasisOrder",
)  # fmt: skip
"""The scene attributes :func:`mpm_scene_settings` reads (NewtonMPMSceneAPI's, and the iteration count)."""


def mpm_scene_settings(scene, frame, file) -> dict:
    """The MPM scene prim's authored solver settings, as ``SolverImplicitMPM.Config`` fields (SI; what is not
    authored, or ``-inf``, is left to the Config's default), as Newton's ``Config.create_from_usd`` reads them."""
    path = str(scene.GetPath())
    out = {}

    def authored(name):
        attr = scene.GetAttribute(name)
        return attr.Get() if attr and attr.HasAuthoredValue() else None

    def error(name, what):
        return UsdInputError(what, file=file, prim=path, attribute=name)

    def number(name, minimum=0.0, integer=False):
        value = authored(name)
        if value is None:
            return None
        try:
            v = int(value) if integer else float(value)
        except (TypeError, ValueError):
            raise error(name, f"must be a number, got {value!r}") from None
        if not integer and v == -math.inf and name in ("newton:mpm:voxelSize", "newton:mpm:airDrag"):
            return None
        if not integer and not math.isfinite(v) or v < minimum:
            raise error(name, f"must be {'an integer' if integer else 'a finite number'} >= {minimum:g}, got {value}")
        return v

    for prop in scene.GetAuthoredProperties():
        name = prop.GetName()
        if name.startswith("newton:mpm:") and name not in SCENE_SETTINGS:
            raise error(name, f"unknown attribute of {MPM_SCENE_API}; known: {', '.join(SCENE_SETTINGS[1:])}")
    iterations = number("newton:maxSolverIterations", minimum=-1, integer=True)
    if iterations == 0:
        raise error("newton:maxSolverIterations", "must be positive (or -1: the solver's default), got 0")
    if iterations is not None and iterations > 0:
        out["max_iterations"] = iterations
    tolerance = number("newton:mpm:tolerance")
    if tolerance is not None:
        if tolerance == 0:
            raise error("newton:mpm:tolerance", "must be positive, got 0")
        out["tolerance"] = tolerance
    solvers = authored("newton:mpm:rheologySolvers")
    if solvers is not None:
        names = [str(s) for s in solvers]
        unknown = [s for s in names if s not in _RHEOLOGY]
        if not names or unknown:
            raise error("newton:mpm:rheologySolvers", f"unknown token {unknown[0]!r} (valid: {', '.join(_RHEOLOGY)})"
                        if unknown else "must name at least one solver")  # fmt: skip
        out["solver"] = tuple(_RHEOLOGY[s] for s in names)
    for name, (key, allowed) in _TOKENS.items():
        value = authored(name)
        if value is not None:
            if str(value) not in allowed:
                raise error(name, f"unknown token {str(value)!r} (valid: {', '.join(allowed)})")
            out[key] = str(value)
    voxel = number("newton:mpm:voxelSize")
    if voxel is not None:
        if voxel == 0:
            raise error("newton:mpm:voxelSize", "must be positive, got 0")
        out["voxel_size"] = voxel * frame.meters_per_unit
    padding = number("newton:mpm:gridPadding", integer=True)
    if padding is not None:
        out["grid_padding"] = padding
    cells = number("newton:mpm:maxActiveCellCount", minimum=-1, integer=True)
    if cells is not None:
        out["max_active_cell_count"] = cells
    critical = number("newton:mpm:criticalFraction")
    if critical is not None:
        if critical > 1:
            raise error("newton:mpm:criticalFraction", f"must not exceed 1, got {critical}")
        out["critical_fraction"] = critical
    drag = number("newton:mpm:airDrag")
    if drag is not None:
        out["air_drag"] = drag * frame.kilograms_per_unit
    for prefix, (key, allowed, defaults) in _BASES.items():
        names = [f"newton:mpm:{prefix}{p}" for p in ("BasisType", "BasisOrder", "DiscontinuousBasis")]
        if all(authored(n) is None for n in names):
            continue
        kind = str(authored(names[0]) or scene.GetAttribute(names[0]).Get() or "")
        if kind not in allowed:
            raise error(names[0], f"unknown token {kind!r} (valid: {', '.join(allowed)})")
        order = authored(names[1])
        order = defaults[0] if order is None else int(order)
        discontinuous = authored(names[2])
        discontinuous = defaults[1] if discontinuous is None else bool(discontinuous)
        if kind == "particle":
            out[key] = "pic"
            continue
        if kind in ("bspline", "serendipity") and not 1 <= order <= 3 or order < 0:
            raise error(names[1], f"{kind} bases have orders 1 to 3, got {order}")
        out[key] = f"{_BASIS_LETTER[kind]}{order}" + ("d" if discontinuous and order > 0 else "")
    vtype, vorder = authored("newton:mpm:velocityBasisType"), authored("newton:mpm:velocityBasisOrder")
    if vtype is not None or vorder is not None:
        vtype = str(vtype) if vtype is not None else "trilinear"
        if vtype not in ("trilinear", "bspline"):
            raise error("newton:mpm:velocityBasisType", f"unknown token {vtype!r} (valid: trilinear, bspline)")
        vorder = 1 if vorder is None else int(vorder)
        if not 1 <= vorder <= 3:
            raise error("newton:mpm:velocityBasisOrder", f"must be 1 to 3, got {vorder}")
        out["velocity_basis"] = ("Q" if vtype == "trilinear" else "B") + str(vorder)
    return out
