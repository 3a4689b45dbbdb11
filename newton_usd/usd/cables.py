"""Cables from the stage: a ``BasisCurves`` prim applying ``PhysicsCurvesDeformableSimAPI`` (under
``PhysicsDeformableBodyAPI`` on it or its parent) as a rod, as Newton 1.8 reads it (its
``utils/import_usd_deformable_cable.py``): each linear curve a chain of capsule segment bodies joined by rod joints
(:mod:`newton_usd.core.cables`), simulated by the vbd engine.

- points: placed by the prim's world transform, stage units turned into SI and Z up; ``physics:restShapePoints`` (one
  per point) is the rest shape (its segment lengths and bends), else the authored shape. Each curve has at least 3
  points; ``curveVertexCounts`` sum to the points' count;
- thickness: ``physics:thicknesses`` with ``physics:thicknesses:elementType`` ``constant``, ``curve``, ``segment`` or
  ``point`` (a segment's capsule takes its segment's, a joint its point's); none: 1 mm, the proposal's fallback
  (``widths`` are drawn, not simulated: said where they are authored alone);
- material (``material:binding:physics`` to a ``PhysicsCurvesDeformableMaterialAPI`` material):
  ``physics:curvesStretchStiffness``, ``curvesShearStiffness`` (force), ``curvesBendStiffness``,
  ``curvesTwistStiffness`` (force*distance^2), each else from ``physics:youngsModulus`` E and ``physics:poissonsRatio``
  nu (fallbacks 1 MPa, 0.3) and the radius r: ``E pi r^2``, ``0.9 G pi r^2``, ``E pi r^4 / 4``, ``G pi r^4 / 2``
  (``G = E / (2 (1 + nu))``); ``NewtonCurvesDeformableMaterialAPI``'s ``newton:curves*Damping`` (0 where
  unauthored). Each joint takes them over its dual length (half of each neighbouring segment). No curve material:
  Newton's default gains. Friction: the bound material's ``physics:dynamicFriction`` (0 where unauthored);
- mass: the body prim's ``physics:density``, else the material's, else 1000 kg/m^3, times each segment's cylinder;
  ``physics:masses`` with elementType ``constant`` (the total, by volume), ``curve``, ``segment`` or ``point`` (by the
  segments' shares of each point's volume) replaces it; else the body prim's ``physics:mass`` scales it to that total;
- collisions: its capsules collide where the prim applies ``PhysicsCollisionAPI`` (``physics:collisionEnabled`` not
  false);
- a ``PhysicsAttachment`` with ``physics:src0`` the cable (or its body prim), ``type0 = "point"``, ``type1 =
  "xform"``, one of ``indices0`` an end point of a one-curve cable, hard (``physics:stiffness`` unauthored or inf)
  pins that end at ``physics:coords1[0]`` (in ``physics:src1``'s frame: none, the world; a rigid body or a prim in
  one: to that body) by a ball joint, the chain's root; a hard point-to-point attachment between two cables welds
  them into one rod graph (:mod:`.cable_graphs`). Other attachments of a cable are said, not simulated.

Bad input is a one-line :class:`~newton_usd.errors.UsdInputError` naming the prim and attribute.
"""

from __future__ import annotations

import math

import numpy as np
from pxr import Usd, UsdGeom, UsdShade

from ..core.cables import Cable, CableMaterial, add_cable, add_cable_curve
from ..core.quat import quat_rotate, transform_inverse, transform_multiply
from ..errors import UsdInputError
from .cable_graphs import CurvesRecord, curve_frames, import_graphs, junction
from .granular import applied

MATERIAL_API = "PhysicsCurvesDeformableMaterialAPI"
OTHER_MATERIALS = ("PhysicsSurfaceDeformableMaterialAPI", "PhysicsVolumeDeformableMaterialAPI")
DEFAULT_THICKNESS = 1.0e-3
"""m: a cable's thickness where it authors none (the proposal's fallback, as Newton 1.8)."""
DEFAULT_DENSITY = 1000.0
DEFAULT_YOUNGS_MODULUS = 1.0e6
DEFAULT_POISSONS_RATIO = 0.3
STIFFNESS = {  # attribute -> (CableMaterial field, power of metersPerUnit of its unit times kilogramsPerUnit)
    "physics:curvesStretchStiffness": ("stretch", 1),
    "physics:curvesShearStiffness": ("shear", 1),
    "physics:curvesBendStiffness": ("bend", 3),
    "physics:curvesTwistStiffness": ("twist", 3),
}
DAMPING = (("newton:curvesStretchDamping", 1), ("newton:curvesShearDamping", 1), ("newton:curvesBendDamping", 3),
           ("newton:curvesTwistDamping", 3))  # fmt: skip
TIME = Usd.TimeCode.Default()


def import_cables(builder, stage, frame, file, cables: dict, body_index: dict, diag, used: set | None = None) -> dict:
    """Add the cable prims ``cables`` (prim path -> its body prim path) to ``builder`` (see the module), pinned ends
    to the bodies of ``body_index`` (prim path -> body). ``used``: the import's record of the attributes it read
    (``Resolver.used``: ``usdsim check`` lists the others). Returns prim path -> its
    :class:`~newton_usd.core.cables.Cable`."""
    if not cables:
        return {}
    records, welds = {}, []
    for path, body_path in cables.items():
        prim = stage.GetPrimAtPath(path)
        rec = _read_cable(prim, stage.GetPrimAtPath(body_path), frame, file, diag)
        material = _material(prim, file) if rec is not None and used is not None else None
        for name, _ in DAMPING if material is not None else ():  # (the newton:* attributes it read)
            if _authored(material, name) is not None:
                used.add((str(material.GetPath()), name))
        if rec is not None:
            records[path] = rec
    pins = _pins(stage, cables, records, welds, file, diag)
    out = import_graphs(builder, records, welds, diag)  # (welded graphs first, as Newton's importer builds them)
    for path in out:
        if path in pins:
            diag.add(f"pins {path}, which is welded into a cable graph: not simulated", str(pins[path].GetPath()))
    for path, rec in records.items():
        if path not in out:
            out[path] = _import_cable(builder, rec, frame, file, pins.get(path), body_index, diag)
    return {path: add_cable(builder, cable) for path, cable in out.items()}


def _authored(prim, name):
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None


def _number(prim, name, file, *, positive=False):
    """An authored non-negative scalar (None: not authored, or the ``-inf`` default sentinel)."""
    value = _authored(prim, name)
    if value is None or float(value) == -math.inf:
        return None
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        need = "positive" if positive else "finite and at least 0"
        raise UsdInputError(f"must be {need}, got {value}", file=file, prim=str(prim.GetPath()), attribute=name)
    return v


def _pins(stage, cables, records, welds, file, diag) -> dict:
    """Cable path -> its pinning attachment prim (see the module); curve-to-curve junctions appended to ``welds``
    ((attachment path, src0, src1, indices0, indices1): :mod:`.cable_graphs`); other attachments of cables said."""
    body_of = {b: p for p, b in cables.items()}
    out = {}
    for prim in Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies()):
        if prim.GetTypeName() != "PhysicsAttachment":
            continue
        rel = prim.GetRelationship("physics:src0")
        targets = [str(t) for t in (rel.GetForwardedTargets() if rel else [])]
        src0 = body_of.get(targets[0], targets[0]) if targets else None
        rel1 = prim.GetRelationship("physics:src1")
        targets1 = [str(t) for t in (rel1.GetForwardedTargets() if rel1 else [])]
        src1 = body_of.get(targets1[0], targets1[0]) if targets1 else None
        if src1 in cables:
            why = junction(prim, src0, src1, records) if src0 in cables and src0 != src1 else (
                "an attachment to a cable (physics:src1) from other than another cable is not simulated")  # fmt: skip
            if isinstance(why, tuple):
                welds.append((str(prim.GetPath()), src0, src1, *why))
            elif why:
                diag.add(f"{why}: the junction of cables is not simulated", str(prim.GetPath()))
            continue
        if src0 not in cables:
            continue
        why = _not_a_pin(prim, file)
        if why is None and src0 in out:
            why = f"{src0} is pinned by {out[src0].GetPath()} already: one pinned end is simulated"
        if why is None:
            out[src0] = prim
        elif why:
            diag.add(f"{why}: the attachment of the cable is not simulated", str(prim.GetPath()))
    return out


def _not_a_pin(prim, file) -> str | None:
    """Why the attachment ``prim`` does not pin a cable's end ("" where it is disabled), None where it does."""
    enabled = _authored(prim, "physics:attachmentEnabled")
    if enabled is not None and not bool(enabled):
        return ""
    types = str(_authored(prim, "physics:type0") or ""), str(_authored(prim, "physics:type1") or "")
    if types != ("point", "xform"):
        return f"type0 {types[0] or '(none)'} to type1 {types[1] or '(none)'} (a cable's end point to an xform is)"
    if len(_authored(prim, "physics:indices0") or []) != 1 or _authored(prim, "physics:indices1"):
        return "physics:indices0 names more than one point (one end point is pinned)"
    stiffness = _authored(prim, "physics:stiffness")
    if stiffness is not None and float(stiffness) != math.inf:
        if math.isnan(float(stiffness)) or float(stiffness) < 0:
            raise UsdInputError(f"must be at least 0 (inf: hard), got {stiffness}", file=file,
                                prim=str(prim.GetPath()), attribute="physics:stiffness")  # fmt: skip
        return "a compliant attachment (finite physics:stiffness)"
    return None


def _read_cable(prim, body, frame, file, diag) -> CurvesRecord | None:
    """A cable prim's curves as read (SI, world), or None where it is not simulated (said)."""
    path = str(prim.GetPath())
    if not prim.IsA(UsdGeom.BasisCurves):
        raise UsdInputError(f"PhysicsCurvesDeformableSimAPI applies to BasisCurves prims, not to a "
                            f"{prim.GetTypeName() or 'typeless'} prim", file=file, prim=path)  # fmt: skip
    curves = UsdGeom.BasisCurves(prim)
    if curves.GetTypeAttr().Get() != UsdGeom.Tokens.linear:
        diag.add("only linear BasisCurves are simulated as cables (as Newton): the prim stays as authored", path)
        return None
    if curves.GetWrapAttr().Get() == UsdGeom.Tokens.periodic:
        diag.add("closed (periodic) cables are not simulated yet: the prim stays as authored", path)
        return None
    points, counts = curves.GetPointsAttr().Get(), curves.GetCurveVertexCountsAttr().Get()
    if not points or not counts:
        what = "points" if not points else "curveVertexCounts"
        raise UsdInputError("not authored: a cable is curves of points", file=file, prim=path, attribute=what)
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    counts = np.asarray(counts, dtype=np.int64)
    n = len(points)
    if counts.sum() != n or np.any(counts < 3):
        i = int(np.argmax(counts < 3)) if np.any(counts < 3) else None
        why = (f"curve {i} has {counts[i]} points: a cable's curve has at least 3 (two segments)" if i is not None
               else f"the curves count {counts.sum()} points, points holds {n}")  # fmt: skip
        raise UsdInputError(why, file=file, prim=path, attribute="curveVertexCounts")
    if not np.all(np.isfinite(points)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute="points")
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(TIME), dtype=np.float64)
    mpu, kpu = frame.meters_per_unit, frame.kilograms_per_unit

    def world(p):
        return mpu * quat_rotate(frame.rotation, p @ m[:3, :3] + m[3, :3])

    pos = world(points)
    rest = _authored(prim, "physics:restShapePoints")
    if rest is not None and len(rest) != n:
        raise UsdInputError(f"{len(rest)} points for {n}: one per point", file=file, prim=path,
                            attribute="physics:restShapePoints")  # fmt: skip
    rest = None if rest is None else world(np.asarray(rest, dtype=np.float64).reshape(-1, 3))
    if _authored(prim, "velocities") is not None:
        diag.add("velocities is not read: a cable starts at rest (as Newton)", path)

    def direction(v):  # (a material director: the prim's linear map, Z up)
        return quat_rotate(frame.rotation, np.asarray(v, dtype=np.float64).reshape(-1, 3) @ m[:3, :3])

    normals, rest_normals = (None if v is None else direction(v) for v in _normals(prim, curves, n, path, diag))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    seg_h, point_h = _thicknesses(prim, counts, starts, frame, file, path, diag)
    widths = _authored(prim, "widths")
    if widths is not None and np.any(np.asarray(widths, dtype=np.float64) < 0):
        raise UsdInputError("a width is at least 0", file=file, prim=path, attribute="widths")
    material_prim = _material(prim, file)
    material, friction, material_density = _cable_material(material_prim, frame, file)
    density = _number(body, "physics:density", file)
    density = density * kpu / mpu**3 if density else material_density or DEFAULT_DENSITY
    seg_radius = 0.5 * seg_h
    lengths = [np.linalg.norm(np.diff((pos if rest is None else rest)[s : s + c], axis=0), axis=1)
               for s, c in zip(starts, counts, strict=True)]  # fmt: skip
    if any(np.any(L <= 1e-8) for L in lengths):
        raise UsdInputError("two consecutive points coincide: a cable's segments have a length", file=file,
                            prim=path, attribute="points" if rest is None else "physics:restShapePoints")  # fmt: skip
    volume = np.pi * seg_radius**2 * np.concatenate(lengths)
    seg_mass = _masses(prim, body, density * volume, volume, counts, starts, frame, file, path, diag)
    return CurvesRecord(path, counts, starts, pos, rest, seg_radius, 0.5 * point_h, seg_mass, material, friction,
                        _collides(prim), normals, rest_normals)  # fmt: skip


def _normals(prim, curves, n, path, diag) -> tuple:
    """(normals, physics:restNormals) as authored (one per point; None: unauthored, or not per point: said), as
    Newton reads them: the ``normals`` primvar (vertex or varying), else the attribute."""
    rest_normals = _authored(prim, "physics:restNormals")
    primvar = UsdGeom.PrimvarsAPI(prim).GetPrimvar("normals")
    if primvar and primvar.HasValue():
        normals, interpolation = primvar.ComputeFlattened(), primvar.GetInterpolation()
    else:
        normals, interpolation = curves.GetNormalsAttr().Get(), curves.GetNormalsInterpolation()
    if normals is not None and interpolation not in (UsdGeom.Tokens.vertex, UsdGeom.Tokens.varying):
        diag.add(f"normals of {interpolation} interpolation are not read (a cable's are per point)", path)
        normals = None
    out = []
    for name, values in (("normals", normals), ("physics:restNormals", rest_normals)):
        if values is not None and len(values) != n:
            diag.add(f"{name}: {len(values)} values for {n} points are not read (one per point)", path)
            values = None
        out.append(None if values is None or len(values) == 0 else values)
    return tuple(out)


def _import_cable(builder, rec, frame, file, pin, body_index, diag) -> Cable:
    """The record ``rec``'s curves as chains of segments (the first from its end pinned by ``pin``, if any)."""
    path, counts, pos, rest = rec.path, rec.counts, rec.pos, rec.rest
    root = _root(pin, counts, pos, frame, file, body_index, builder, diag) if pin is not None else None
    cable = Cable(path, radius=rec.point_radius)
    rests, point_bodies, point_offsets, s0 = [], [], [], 0
    for k, (start, count) in enumerate(zip(rec.starts.tolist(), counts.tolist(), strict=True)):
        label = path if len(counts) == 1 else f"{path}_curve{k}"
        sl, segs = slice(start, start + count), slice(s0, s0 + count - 1)
        frames, rest_frames = curve_frames(pos[sl], None if rest is None else rest[sl], _part(rec.normals, sl),
                                           _part(rec.rest_normals, sl), path, diag)  # fmt: skip
        bodies, joints, rest_q, (pb, po) = add_cable_curve(
            builder, label, pos[sl], None if rest is None else rest[sl], rec.seg_radius[segs], rec.point_radius[sl],
            rec.seg_mass[segs], rec.material, friction=rec.friction, root=root, collide=rec.collide, frames=frames,
            rest_frames=rest_frames,
        )  # fmt: skip
        s0 += count - 1
        cable.bodies += bodies
        cable.joints += joints
        rests.append(rest_q)
        point_bodies.append(pb)
        point_offsets.append(po)
    cable.rest_rotations = np.concatenate(rests)
    cable.point_bodies, cable.point_offsets = np.concatenate(point_bodies), np.concatenate(point_offsets)
    return cable


def _part(values, sl):
    return None if values is None else values[sl]


def _thicknesses(prim, counts, starts, frame, file, path, diag):
    """(per segment, per point) thickness in m."""
    name = "physics:thicknesses"
    n_seg, n = int(np.sum(counts - 1)), int(np.sum(counts))
    values = _authored(prim, name)
    kind = _authored(prim, name + ":elementType")
    if values is None or len(values) == 0 or kind is None:
        if values is not None and len(values) and kind is None:
            diag.add(f"{name} without {name}:elementType (constant, curve, segment or point) is not read (as "
                     f"Newton): the thickness is {DEFAULT_THICKNESS * 1e3:g} mm", path)  # fmt: skip
        elif _authored(prim, "widths") is not None:
            diag.add(f"widths are drawn, not simulated: without {name} the cable is {DEFAULT_THICKNESS * 1e3:g} mm "
                     "thick", path)  # fmt: skip
        return np.full(n_seg, DEFAULT_THICKNESS), np.full(n, DEFAULT_THICKNESS)
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        i = int(np.argmax(~(np.isfinite(v) & (v > 0))))
        raise UsdInputError(f"value {i} is {v[i]:g}: a thickness is positive", file=file, prim=path, attribute=name)
    kind = str(kind)
    expected = {"constant": 1, "curve": len(counts), "segment": n_seg, "point": n}
    if kind not in expected:
        raise UsdInputError(f"unknown element type {kind!r} (valid: {', '.join(expected)})", file=file, prim=path,
                            attribute=name + ":elementType")  # fmt: skip
    if len(v) != expected[kind]:
        raise UsdInputError(f"{len(v)} values for elementType {kind}: {expected[kind]} expected", file=file,
                            prim=path, attribute=name)  # fmt: skip
    v = v * frame.meters_per_unit
    curve_of_seg = np.repeat(np.arange(len(counts)), counts - 1)
    if kind == "constant":
        return np.full(n_seg, v[0]), np.full(n, v[0])
    if kind == "curve":
        return v[curve_of_seg], np.repeat(v, counts)
    first = (
        np.repeat(starts, counts - 1) + np.arange(n_seg) - np.repeat(np.cumsum(counts - 1) - (counts - 1), counts - 1)
    )
    if kind == "point":  # (a segment: the mean of its two points')
        return 0.5 * (v[first] + v[first + 1]), v
    point = np.zeros(n)  # (a segment's: a point between two takes their mean, an end its one)
    hits = np.zeros(n)
    for a in (first, first + 1):
        np.add.at(point, a, v)
        np.add.at(hits, a, 1.0)
    return v, point / hits


def _material(prim, file):
    """The material bound to ``prim`` for physics (``material:binding:physics``), or None; a deformable material of
    another family is an error."""
    material, rel = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial("physics")
    if not material or not rel or str(rel.GetName()) == "material:binding":
        return None
    mat = material.GetPrim()
    other = [api for api in OTHER_MATERIALS if api in applied(mat)]
    if other and MATERIAL_API not in applied(mat):
        raise UsdInputError(f"is bound to {mat.GetPath()}, a {other[0]} material: a cable takes a {MATERIAL_API} "
                            "material", file=file, prim=str(prim.GetPath()),
                            attribute="material:binding:physics")  # fmt: skip
    return mat


def _cable_material(mat, frame, file):
    """(:class:`CableMaterial` or None, friction or None, density kg/m^3 or None) of a bound material (SI)."""
    if mat is None:
        return None, None, None
    mpu, kpu = frame.meters_per_unit, frame.kilograms_per_unit
    density = _number(mat, "physics:density", file)
    density = density * kpu / mpu**3 if density else None
    friction = _number(mat, "physics:dynamicFriction", file) or 0.0
    if MATERIAL_API not in applied(mat):
        return None, friction, density
    young = _number(mat, "physics:youngsModulus", file)
    young = DEFAULT_YOUNGS_MODULUS if young is None else young * kpu / mpu
    nu = _authored(mat, "physics:poissonsRatio")
    nu = DEFAULT_POISSONS_RATIO if nu is None else float(nu)
    if not -1.0 < nu < 0.5:
        raise UsdInputError(f"must be in (-1, 0.5), got {nu}", file=file, prim=str(mat.GetPath()),
                            attribute="physics:poissonsRatio")  # fmt: skip
    out = CableMaterial(young, nu)
    for name, (key, power) in STIFFNESS.items():
        value = _number(mat, name, file)
        if value is not None:
            setattr(out, key, value * kpu * mpu**power)
    out.damping = tuple((_number(mat, name, file) or 0.0) * kpu * mpu**power for name, power in DAMPING)
    return out, friction, density


def _masses(prim, body, element_mass, volume, counts, starts, frame, file, path, diag):
    """Per segment masses (kg): ``physics:masses`` where authored (see the module), else ``element_mass`` scaled to
    the body prim's ``physics:mass`` where authored."""
    name = "physics:masses"
    values = _authored(prim, name)
    kpu = frame.kilograms_per_unit
    if values is None or len(values) == 0:
        total = _number(body, "physics:mass", file)
        if total and element_mass.sum() > 0:
            return element_mass * total * kpu / element_mass.sum()
        return element_mass
    v = np.asarray(values, dtype=np.float64).reshape(-1) * kpu
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise UsdInputError("a mass is finite and positive", file=file, prim=path, attribute=name)
    kind = _authored(prim, name + ":elementType")
    legacy = kind is None  # (an earlier revision's per-point masses, lumped as Newton 1.8 still lumps them: said)
    kind = "point" if legacy else str(kind)
    n_seg, n = int(np.sum(counts - 1)), int(np.sum(counts))
    expected = {"constant": 1, "curve": len(counts), "segment": n_seg, "point": n}
    if kind not in expected or len(v) != expected[kind]:
        raise UsdInputError(f"{len(v)} values for elementType {kind}: {expected.get(kind, 'a valid type')} expected "
                            "(constant, curve, segment, point)", file=file, prim=path, attribute=name)  # fmt: skip
    curve_of_seg = np.repeat(np.arange(len(counts)), counts - 1)
    if kind == "constant":
        return v[0] * volume / volume.sum()
    if kind == "curve":
        return v[curve_of_seg] * volume / np.bincount(curve_of_seg, weights=volume)[curve_of_seg]
    if kind == "segment":
        return v
    first = (
        np.repeat(starts, counts - 1) + np.arange(n_seg) - np.repeat(np.cumsum(counts - 1) - (counts - 1), counts - 1)
    )
    if legacy:  # (half of each end point's mass to its segment, the curve's own end points whole)
        diag.add(f"{name} without {name}:elementType is an earlier proposal's per-point masses: lumped onto the "
                 f"segments as Newton does (author {name}:elementType = point for the proposal's)", path)  # fmt: skip
        end = np.zeros(n, dtype=bool)
        end[starts], end[starts + counts - 1] = True, True
        return np.where(end[first], 1.0, 0.5) * v[first] + np.where(end[first + 1], 1.0, 0.5) * v[first + 1]
    share = np.zeros(n)  # (a point's volume: half of each segment at it; a segment: its shares of its points' masses)
    np.add.at(share, first, 0.5 * volume)
    np.add.at(share, first + 1, 0.5 * volume)
    return 0.5 * volume * (v[first] / share[first] + v[first + 1] / share[first + 1])


def _collides(prim) -> bool:
    """Whether the cable's capsules collide (an enabled PhysicsCollisionAPI on the prim)."""
    if "PhysicsCollisionAPI" not in applied(prim):
        return False
    enabled = _authored(prim, "physics:collisionEnabled")
    return True if enabled is None else bool(enabled)


def _root(pin, counts, pos, frame, file, body_index, builder, diag):
    """The ``root`` of :func:`~newton_usd.core.cables.add_cable_curve` from the pinning attachment ``pin``: (end
    point, parent body, anchor in the parent's frame (m), joint label); None where it pins no end (said)."""
    path = str(pin.GetPath())
    index = int(_authored(pin, "physics:indices0")[0])
    n = int(counts[0])
    if len(counts) != 1 or index not in (0, n - 1):
        diag.add("pins a point that is not an end of a one-curve cable: not simulated", path)
        return None
    coords = _authored(pin, "physics:coords1")
    anchor = np.zeros(3) if not coords else np.asarray(coords[0], dtype=np.float64)
    if coords and len(coords) > 1:
        raise UsdInputError(f"{len(coords)} anchors for one point", file=file, prim=path, attribute="physics:coords1")
    rel = pin.GetRelationship("physics:src1")
    targets = [str(t) for t in (rel.GetForwardedTargets() if rel else [])]
    target = targets[0] if targets else "/"
    parent, world = -1, anchor
    if target != "/":
        target_prim = pin.GetStage().GetPrimAtPath(target)
        if not target_prim:
            raise UsdInputError(f"names {target}, which is not a prim", file=file, prim=path,
                                attribute="physics:src1")  # fmt: skip
        m = np.array(UsdGeom.XformCache(TIME).GetLocalToWorldTransform(target_prim))
        world = anchor @ m[:3, :3] + m[3, :3]
        up = target_prim
        while up and not up.IsPseudoRoot() and str(up.GetPath()) not in body_index:
            up = up.GetParent()
        parent = body_index.get(str(up.GetPath()), -1) if up else -1
    world = frame.meters_per_unit * quat_rotate(frame.rotation, world)
    moved = float(np.linalg.norm(world - pos[index]))
    if moved > 1e-6 + 1e-4 * float(np.linalg.norm(pos[1] - pos[0])):
        diag.add(f"pins its point {moved:.3g} m from where the cable's end is authored: the end hangs from the "
                 "anchor (physics:coords1)", path)  # fmt: skip
    if parent >= 0:  # (the anchor in the body's frame)
        world = transform_multiply(transform_inverse(builder.body_q[parent]), (world, np.array([0, 0, 0, 1.0])))[0]
    return index, parent, world, f"{path}_site0"
