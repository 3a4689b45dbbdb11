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
- ``wrap = "periodic"``: each curve closed, its last point joined to its first by a segment too and the loop closed by
  a rod joint (at least 2 points a curve);
- a hard ``PhysicsAttachment`` from the cable's points to an xform holds them there (:mod:`.cable_pins`: the chain's
  root where it is the only attachment and holds one end, else ball joints closing loops); a hard point-to-point
  attachment between two cables welds them into one rod graph (:mod:`~newton_usd.usd.cable_graphs`). Other
  attachments of a cable are said, not simulated.

Bad input is a one-line :class:`~newton_usd.errors.UsdInputError` naming the prim and attribute.
"""

from __future__ import annotations

import math

import numpy as np
from pxr import Usd, UsdGeom, UsdShade

from ..core.cables import Cable, CableMaterial, add_cable, add_cable_curve
from ..core.quat import quat_rotate
from ..errors import UsdInputError
from . import cable_pins
from .cable_graphs import CurvesRecord, curve_frames, import_graphs, junction
from .cable_pins import hold, is_root, not_a_hold
from .granular import applied
from .stage import authored_value

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


def import_cables(builder, stage, frame, file, cables: dict, body_index: dict, diag, used: set | None = None,
                  attachments=()) -> dict:  # fmt: skip
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
            if authored_value(material, name) is not None:
                used.add((str(material.GetPath()), name))
        if rec is not None:
            records[path] = rec
    holds, touching = _attachments(attachments, cables, records, welds, file, diag)
    out = import_graphs(builder, records, welds, diag)  # (welded graphs first, as Newton's importer builds them)
    for path, rec in records.items():
        if path not in out:
            pins = holds.get(path, [])
            pin = pins[0] if len(pins) == 1 and is_root(pins[0], rec, touching.get(path, 0)) else None
            if pin is not None:
                holds[path] = []
            out[path] = _import_cable(builder, rec, frame, file, pin, body_index, diag)
    for path, cable in out.items():  # (the other holds: ball joints closing loops through the cables' roots)
        for pin in holds.get(path, []):
            hold(builder, cable, pin, frame, file, body_index, diag)
    return {path: add_cable(builder, cable) for path, cable in out.items()}


def _number(prim, name, file, *, positive=False):
    """An authored non-negative scalar (None: not authored, or the ``-inf`` default sentinel)."""
    value = authored_value(prim, name)
    if value is None or float(value) == -math.inf:
        return None
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        need = "positive" if positive else "finite and at least 0"
        raise UsdInputError(f"must be {need}, got {value}", file=file, prim=str(prim.GetPath()), attribute=name)
    return v


def _attachments(attachments, cables, records, welds, file, diag) -> tuple:
    """(cable path -> the attachments holding its points (:mod:`.cable_pins`), cable path -> how many enabled
    attachments touch it); curve-to-curve junctions appended to ``welds`` ((attachment path, src0, src1, indices0,
    indices1): :mod:`~newton_usd.usd.cable_graphs`); other attachments of cables said."""
    body_of = {b: p for p, b in cables.items()}
    holds, touching = {}, {}
    for prim in attachments:  # (the stage's PhysicsAttachment prims, from the import's scan)
        rel = prim.GetRelationship("physics:src0")
        targets = [str(t) for t in (rel.GetForwardedTargets() if rel else [])]
        src0 = body_of.get(targets[0], targets[0]) if targets else None
        rel1 = prim.GetRelationship("physics:src1")
        targets1 = [str(t) for t in (rel1.GetForwardedTargets() if rel1 else [])]
        src1 = body_of.get(targets1[0], targets1[0]) if targets1 else None
        enabled = authored_value(prim, "physics:attachmentEnabled")
        for src in {src0, src1} & set(cables) if enabled is None or bool(enabled) else ():
            touching[src] = touching.get(src, 0) + 1
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
        why = not_a_hold(prim, file)
        if why is None:
            holds.setdefault(src0, []).append(prim)
        elif why:
            diag.add(f"{why}: the attachment of the cable is not simulated", str(prim.GetPath()))
    return holds, touching


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
    closed = curves.GetWrapAttr().Get() == UsdGeom.Tokens.periodic  # (its last point joined to its first)
    points, counts = curves.GetPointsAttr().Get(), curves.GetCurveVertexCountsAttr().Get()
    if not points or not counts:
        what = "points" if not points else "curveVertexCounts"
        raise UsdInputError("not authored: a cable is curves of points", file=file, prim=path, attribute=what)
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    counts = np.asarray(counts, dtype=np.int64)
    n = len(points)
    least = 2 if closed else 3  # (two segments)
    if counts.sum() != n or np.any(counts < least):
        i = int(np.argmax(counts < least)) if np.any(counts < least) else None
        why = (f"curve {i} has {counts[i]} points: a{' closed' if closed else 'n open'} cable's curve has at least "
               f"{least} (two segments)" if i is not None
               else f"the curves count {counts.sum()} points, points holds {n}")  # fmt: skip
        raise UsdInputError(why, file=file, prim=path, attribute="curveVertexCounts")
    if not np.all(np.isfinite(points)):
        raise UsdInputError("holds a value that is not finite", file=file, prim=path, attribute="points")
    m = np.array(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(TIME), dtype=np.float64)
    mpu, kpu = frame.meters_per_unit, frame.kilograms_per_unit

    def world(p):
        return mpu * quat_rotate(frame.rotation, p @ m[:3, :3] + m[3, :3])

    pos = world(points)
    rest = authored_value(prim, "physics:restShapePoints")
    if rest is not None and len(rest) != n:
        raise UsdInputError(f"{len(rest)} points for {n}: one per point", file=file, prim=path,
                            attribute="physics:restShapePoints")  # fmt: skip
    rest = None if rest is None else world(np.asarray(rest, dtype=np.float64).reshape(-1, 3))
    if authored_value(prim, "velocities") is not None:
        diag.add("velocities is not read: a cable starts at rest (as Newton)", path)

    def direction(v):  # (a material director: the prim's linear map, Z up)
        return quat_rotate(frame.rotation, np.asarray(v, dtype=np.float64).reshape(-1, 3) @ m[:3, :3])

    normals, rest_normals = (None if v is None else direction(v) for v in _normals(prim, curves, n, path, diag))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    seg_h, point_h = _thicknesses(prim, counts, starts, closed, frame, file, path, diag)
    widths = authored_value(prim, "widths")
    if widths is not None and np.any(np.asarray(widths, dtype=np.float64) < 0):
        raise UsdInputError("a width is at least 0", file=file, prim=path, attribute="widths")
    material_prim = _material(prim, file)
    material, friction, material_density = _cable_material(material_prim, frame, file)
    density = _number(body, "physics:density", file)
    density = density * kpu / mpu**3 if density else material_density or DEFAULT_DENSITY
    seg_radius = 0.5 * seg_h
    at_rest = pos if rest is None else rest
    first, second, _ = _segments(counts, starts, closed)
    lengths = [np.linalg.norm(at_rest[second] - at_rest[first], axis=1)]
    if any(np.any(L <= 1e-8) for L in lengths):
        raise UsdInputError("two consecutive points coincide: a cable's segments have a length", file=file,
                            prim=path, attribute="points" if rest is None else "physics:restShapePoints")  # fmt: skip
    volume = np.pi * seg_radius**2 * np.concatenate(lengths)
    seg_mass = _masses(prim, body, density * volume, volume, counts, starts, closed, frame, file, path, diag)
    return CurvesRecord(path, counts, starts, pos, rest, seg_radius, 0.5 * point_h, seg_mass, material, friction,
                        _collides(prim), normals, rest_normals, closed, np.concatenate(lengths))  # fmt: skip


def _normals(prim, curves, n, path, diag) -> tuple:
    """(normals, physics:restNormals) as authored (one per point; None: unauthored, or not per point: said), as
    Newton reads them: the ``normals`` primvar (vertex or varying), else the attribute."""
    rest_normals = authored_value(prim, "physics:restNormals")
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
    """The record ``rec``'s curves as chains of segments (the first rooted at its end held by ``pin``, if any)."""
    path, counts, pos, rest = rec.path, rec.counts, rec.pos, rec.rest
    root = None if pin is None else cable_pins.root(pin, rec, frame, file, body_index, builder, diag)
    cable = Cable(path, radius=rec.point_radius, segment_length=rec.seg_length)
    rests, point_bodies, point_offsets, s0 = [], [], [], 0
    for k, (start, count) in enumerate(zip(rec.starts.tolist(), counts.tolist(), strict=True)):
        label = path if len(counts) == 1 else f"{path}_curve{k}"
        sl, segs = slice(start, start + count), slice(s0, s0 + count - 1 + rec.closed)
        loop = [*range(start, start + count), start][: count + rec.closed]  # (a closed curve: back to its first)
        frames, rest_frames = curve_frames(pos[loop], None if rest is None else rest[loop], _part(rec.normals, sl),
                                           _part(rec.rest_normals, sl), path, diag)  # fmt: skip
        bodies, joints, rest_q, (pb, po) = add_cable_curve(
            builder, label, pos[sl], None if rest is None else rest[sl], rec.seg_radius[segs], rec.point_radius[sl],
            rec.seg_mass[segs], rec.material, friction=rec.friction, root=root, collide=rec.collide, frames=frames,
            rest_frames=rest_frames, closed=rec.closed,
        )  # fmt: skip
        s0 = segs.stop
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


def _thicknesses(prim, counts, starts, closed, frame, file, path, diag):
    """(per segment, per point) thickness in m."""
    name = "physics:thicknesses"
    first, second, curve_of_seg = _segments(counts, starts, closed)
    n_seg, n = len(first), int(np.sum(counts))
    values = authored_value(prim, name)
    kind = authored_value(prim, name + ":elementType")
    if values is None or len(values) == 0 or kind is None:
        if values is not None and len(values) and kind is None:
            diag.add(f"{name} without {name}:elementType (constant, curve, segment or point) is not read (as "
                     f"Newton): the thickness is {DEFAULT_THICKNESS * 1e3:g} mm", path)  # fmt: skip
        elif authored_value(prim, "widths") is not None:
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
    if kind == "constant":
        return np.full(n_seg, v[0]), np.full(n, v[0])
    if kind == "curve":
        return v[curve_of_seg], np.repeat(v, counts)
    if kind == "point":  # (a segment: the mean of its two points')
        return 0.5 * (v[first] + v[second]), v
    point = np.zeros(n)  # (a segment's: a point between two takes their mean, an end its one)
    hits = np.zeros(n)
    for a in (first, second):
        np.add.at(point, a, v)
        np.add.at(hits, a, 1.0)
    return v, point / hits


def _segments(counts, starts, closed) -> tuple:
    """Per segment of the curves (``counts`` points from ``starts``; ``closed``: each with its closing segment from
    its last point to its first), its (first point, second point, curve)."""
    per = counts - (0 if closed else 1)
    curve = np.repeat(np.arange(len(counts)), per)
    k = np.arange(int(per.sum())) - np.repeat(np.cumsum(per) - per, per)  # (the segment's index in its curve)
    first = np.repeat(starts, per) + k
    second = np.repeat(starts, per) + (k + 1) % np.repeat(counts, per)
    return first, second, curve


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
    nu = authored_value(mat, "physics:poissonsRatio")
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


def _masses(prim, body, element_mass, volume, counts, starts, closed, frame, file, path, diag):
    """Per segment masses (kg): ``physics:masses`` where authored (see the module), else ``element_mass`` scaled to
    the body prim's ``physics:mass`` where authored."""
    name = "physics:masses"
    values = authored_value(prim, name)
    kpu = frame.kilograms_per_unit
    if values is None or len(values) == 0:
        total = _number(body, "physics:mass", file)
        if total and element_mass.sum() > 0:
            return element_mass * total * kpu / element_mass.sum()
        return element_mass
    v = np.asarray(values, dtype=np.float64).reshape(-1) * kpu
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise UsdInputError("a mass is finite and positive", file=file, prim=path, attribute=name)
    kind = authored_value(prim, name + ":elementType")
    legacy = kind is None  # (an earlier revision's per-point masses, lumped as Newton 1.8 still lumps them: said)
    kind = "point" if legacy else str(kind)
    first, second, curve_of_seg = _segments(counts, starts, closed)
    n_seg, n = len(first), int(np.sum(counts))
    expected = {"constant": 1, "curve": len(counts), "segment": n_seg, "point": n}
    if kind not in expected or len(v) != expected[kind]:
        raise UsdInputError(f"{len(v)} values for elementType {kind}: {expected.get(kind, 'a valid type')} expected "
                            "(constant, curve, segment, point)", file=file, prim=path, attribute=name)  # fmt: skip
    if kind == "constant":
        return v[0] * volume / volume.sum()
    if kind == "curve":
        return v[curve_of_seg] * volume / np.bincount(curve_of_seg, weights=volume)[curve_of_seg]
    if kind == "segment":
        return v
    if legacy:  # (half of each end point's mass to its segment, the curve's own end points whole)
        diag.add(f"{name} without {name}:elementType is an earlier proposal's per-point masses: lumped onto the "
                 f"segments as Newton does (author {name}:elementType = point for the proposal's)", path)  # fmt: skip
        end = np.zeros(n, dtype=bool)
        if not closed:
            end[starts], end[starts + counts - 1] = True, True
        return np.where(end[first], 1.0, 0.5) * v[first] + np.where(end[second], 1.0, 0.5) * v[second]
    share = np.zeros(n)  # (a point's volume: half of each segment at it; a segment: its shares of its points' masses)
    np.add.at(share, first, 0.5 * volume)
    np.add.at(share, second, 0.5 * volume)
    return 0.5 * volume * (v[first] / share[first] + v[second] / share[second])


def _collides(prim) -> bool:
    """Whether the cable's capsules collide (an enabled PhysicsCollisionAPI on the prim)."""
    if "PhysicsCollisionAPI" not in applied(prim):
        return False
    enabled = authored_value(prim, "physics:collisionEnabled")
    return True if enabled is None else bool(enabled)
