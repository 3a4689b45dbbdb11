"""``BasisCurves`` drawn as tubes: each curve a tube of :data:`SIDES` sides through its points (its polyline, as a
linear cable is simulated), of the curve's width, closed at its ends. A cable's points written back by ``usdsim``
are time-sampled: its tube is rebuilt from them at each frame (:func:`tube_frames`), its topology kept.

The width: ``widths`` (or ``primvars:widths``: one, one per curve or one per point), else the cable's
``physics:thicknesses`` (``constant`` or per ``point``), else :data:`DEFAULT_WIDTH`; all in stage units, read at the
first frame.
"""

from __future__ import annotations

import numpy as np
from pxr import Usd, UsdGeom

from ..errors import UsdInputError

SIDES = 8
"""Sides of a tube's cross-section."""
DEFAULT_WIDTH = 0.01
"""m: a curve's width where it authors none."""


def _code(t):
    return Usd.TimeCode(float(t)) if t is not None else Usd.TimeCode.EarliestTime()


def curve_points(prim, t=None) -> np.ndarray:
    """(P, 3) float64 the curves' points at time ``t`` (None: the first), stage units."""
    value = UsdGeom.BasisCurves(prim).GetPointsAttr().Get(_code(t))
    return np.asarray(value if value is not None else [], np.float64).reshape(-1, 3)


def _counts(prim, n: int, path: str) -> np.ndarray:
    counts = np.asarray(UsdGeom.BasisCurves(prim).GetCurveVertexCountsAttr().Get(_code(None)) or [n], np.int64)
    if counts.sum() != n or np.any(counts < 1):
        raise UsdInputError(f"curveVertexCounts sum to {counts.sum()} but there are {n} points", prim=path,
                            attribute="curveVertexCounts")  # fmt: skip
    return counts


def _radii(prim, counts, n: int, path: str) -> np.ndarray:
    """(n,) each point's radius in stage units (see the module)."""
    pv = UsdGeom.PrimvarsAPI(prim).GetPrimvar("widths")
    value = pv.ComputeFlattened(_code(None)) if pv and pv.HasAuthoredValue() else None
    name = "primvars:widths"
    if value is None:
        attr, name = prim.GetAttribute("widths"), "widths"
        value = attr.Get(_code(None)) if attr and attr.HasAuthoredValue() else None
    if value is None or len(value) == 0:
        attr, name = prim.GetAttribute("physics:thicknesses"), "physics:thicknesses"
        value = attr.Get(_code(None)) if attr and attr.HasAuthoredValue() else None
        value = value if value is not None and len(value) in (1, n) else None
    if value is None or len(value) == 0:
        mpu = UsdGeom.GetStageMetersPerUnit(prim.GetStage()) or 1.0
        return np.full(n, 0.5 * DEFAULT_WIDTH / mpu)
    w = np.asarray(value, np.float64).reshape(-1)
    if not np.all(np.isfinite(w)) or np.any(w < 0) or len(w) not in (1, len(counts), n):
        raise UsdInputError(f"must be one width, one per curve or one per point ({n}), finite and >= 0; got "
                            f"{len(w)} values", prim=path, attribute=name)  # fmt: skip
    w = np.repeat(w, counts) if len(w) == len(counts) and len(w) != n else np.broadcast_to(w, n)
    return 0.5 * w


def curve_tube(prim, path: str) -> tuple:
    """(vertices (V, 3) float32, faces (F, 3) int32) of the curves' tube at the first frame, stage units."""
    points = curve_points(prim)
    if len(points) == 0:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int32)
    counts = _counts(prim, len(points), path)
    return tube(points, counts, _radii(prim, counts, len(points), path))


def tube_frames(prim, path: str, times) -> np.ndarray | None:
    """(T, V, 3) float32 the tube's vertices at each of ``times`` where the points are time-sampled (None: not)."""
    attr = UsdGeom.BasisCurves(prim).GetPointsAttr()
    if not attr or not attr.ValueMightBeTimeVarying():
        return None
    first = curve_points(prim, times[0])
    counts = _counts(prim, len(first), path)
    radii = _radii(prim, counts, len(first), path)
    frames = []
    for t in times:
        points = curve_points(prim, t)
        if len(points) != len(first):
            raise UsdInputError(f"has {len(points)} points at time {float(t):g} but {len(first)} at the first frame: "
                                "a recording's curve keeps its point count", prim=path, attribute="points")  # fmt: skip
        frames.append(tube(points, counts, radii)[0])
    return np.stack(frames)


def tube(points, counts, radii) -> tuple:
    """(vertices, faces) of a tube of :data:`SIDES` sides around each curve (``counts`` points each, ``radii`` per
    point): a ring per point across its tangent (frames carried along by parallel transport), an end cap each side."""
    angle = 2.0 * np.pi * np.arange(SIDES) / SIDES
    cos, sin = np.cos(angle)[:, None], np.sin(angle)[:, None]
    vertices, faces, start = [], [], 0
    for count in np.asarray(counts).tolist():
        p, r = points[start : start + count], radii[start : start + count]
        start += count
        base = sum(len(v) for v in vertices)
        if count < 2:
            continue
        seg = np.diff(p, axis=0)
        seg /= np.maximum(np.linalg.norm(seg, axis=1, keepdims=True), 1e-30)
        tangent = np.concatenate([seg[:1], seg[:-1] + seg[1:], seg[-1:]])
        tangent /= np.maximum(np.linalg.norm(tangent, axis=1, keepdims=True), 1e-30)
        helper = np.array([0.0, 0.0, 1.0]) if abs(tangent[0, 2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        normal = np.cross(tangent[0], helper)
        rings = []
        for i in range(count):
            normal = normal - tangent[i] * float(normal @ tangent[i])  # (carried along: no twist)
            normal /= max(float(np.linalg.norm(normal)), 1e-30)
            binormal = np.cross(tangent[i], normal)
            rings.append(p[i] + r[i] * (cos * normal + sin * binormal))
        ring = np.arange(SIDES)
        nxt = (ring + 1) % SIDES
        for i in range(count - 1):
            a, b = base + i * SIDES, base + (i + 1) * SIDES
            faces += np.stack([a + ring, a + nxt, b + nxt], 1).tolist() + np.stack([a + ring, b + nxt, b + ring],
                                                                                    1).tolist()  # fmt: skip
        caps = base + count * SIDES
        faces += np.stack([np.full(SIDES, caps), base + nxt, base + ring], 1).tolist()
        last = base + (count - 1) * SIDES
        faces += np.stack([np.full(SIDES, caps + 1), last + ring, last + nxt], 1).tolist()
        vertices.append(np.concatenate([*rings, p[:1], p[-1:]]))
    if not vertices:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int32)
    return np.concatenate(vertices).astype(np.float32), np.asarray(faces, np.int32)
