"""What changes shape frame by frame in a recording: meshes whose ``points`` are time-sampled (cloth, soft volumes:
a ``Mesh`` or a ``TetMesh``'s surface, written back by ``usdsim``; a cable's ``BasisCurves``, drawn as a tube rebuilt
from its points: :mod:`.tubes`) and ``Points`` prims (grains).

A deforming mesh keeps its topology (its faces, colours and split by colour are those of the first frame); its
vertices are read at each frame, in SI and in the part's frame as its rigid pose is (the part's scale baked in
as at the first frame), into :attr:`Scene.deforming <newton_usd.view.scene.Scene.deforming>`. A mesh whose point
count changes between frames is refused naming the prim and ``points``.

A ``Points`` prim that is drawn (purpose default or render, visible) becomes a :class:`PointCloud`: its points
at each frame in the world (meters, Z up), a radius per point (half its ``primvars:widths`` or ``widths``, read at
the first frame; :data:`DEFAULT_WIDTH` where none is authored) and a colour per point: its
``primvars:displayColor`` (constant or one per point) where authored, else its material's: the bound material's
``UsdPreviewSurface`` ``diffuseColor`` where it has one, else a distinct colour from :data:`PALETTE` per material
(the prim's own binding, of any purpose, and its ``materialBind`` GeomSubsets: grains of two materials are seen
apart). Positions are float32: 10,000 grains over 300 frames are 36 MB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pxr import Usd, UsdGeom, UsdShade

from ..errors import UsdInputError
from .poses import code, mover_of
from .tubes import tube_frames

DEFAULT_WIDTH = 0.02
"""The width (m) a ``Points`` prim's points are drawn at where it authors none."""
DEFAULT_POINT_COLOR = (0.78, 0.66, 0.45)
"""A ``Points`` prim's colour where it authors no displayColor and binds no material (sand)."""
PALETTE = (
    (0.78, 0.66, 0.45),
    (0.25, 0.45, 0.85),
    (0.85, 0.3, 0.25),
    (0.3, 0.7, 0.35),
    (0.6, 0.4, 0.75),
    (0.9, 0.65, 0.15),
    (0.2, 0.7, 0.75),
    (0.55, 0.55, 0.55),
)
"""Colours of a ``Points`` prim's material groups (first: its own material's), where a material has no colour."""


@dataclass
class PointCloud:
    """One drawn ``Points`` prim.

    Attributes:
        path: The prim path.
        positions: (T, N, 3) float32 world position of each point at each frame, meters, Z up.
        radii: (N,) float32 radius of each point, meters.
        colors: (N, 3) float32 RGB in [0, 1].
        world: The world index (0 unless in a ``--write-worlds all`` copy).
    """

    path: str
    positions: np.ndarray
    radii: np.ndarray
    colors: np.ndarray
    world: int = 0

    @property
    def moves(self) -> bool:
        return len(self.positions) > 1 and bool(np.ptp(self.positions, axis=0).max(initial=0.0) > 1e-7)


def sampled_points(prim) -> Usd.Attribute | None:
    """A Mesh's, TetMesh's or Points prim's ``points`` attribute where it varies in time (None: it does not)."""
    attr = UsdGeom.PointBased(prim).GetPointsAttr()
    return attr if attr and attr.ValueMightBeTimeVarying() else None


def _points_at(attr, t, count: int | None, path: str) -> np.ndarray:
    value = attr.Get(code(t))
    points = np.asarray(value if value is not None else [], np.float32).reshape(-1, 3)
    if count is not None and len(points) != count:
        raise UsdInputError(
            f"has {len(points)} points at time {float(t):g} but {count} at the first frame: a recording's mesh keeps "
            "its topology (its point count) from frame to frame",
            prim=path,
            attribute="points",
        )
    return points


def read_deforming(parts, anchors, baked, times) -> dict:
    """Part index -> (T, V, 3) float32 vertices per frame of each mesh part whose ``points`` are time-sampled
    (``baked``: each part's (3, 3) scale, meters and the up axis included, as its frame-0 vertices got it)."""
    out = {}
    per_prim = {}  # prim path -> (T, points, 3) stage units
    for j, part in enumerate(parts):
        prim, offset, _ = anchors[j]
        if offset is None and prim.IsA(UsdGeom.BasisCurves):  # (a cable: its tube rebuilt at each frame)
            if part.path not in per_prim:
                per_prim[part.path] = tube_frames(prim, part.path, times)
            if per_prim[part.path] is not None:
                out[j] = (per_prim[part.path].astype(np.float64) @ baked[j]).astype(np.float32)
            continue
        if offset is not None or part.source is None or not prim.IsA(UsdGeom.PointBased) or prim.IsA(UsdGeom.Points):
            continue  # (an instanced prototype is drawn as its first frame's)
        attr = sampled_points(prim)
        if attr is None:
            continue
        if part.path not in per_prim:
            first = _points_at(attr, times[0], None, part.path)
            frames = np.empty((len(times), len(first), 3), np.float32)
            for f, t in enumerate(times):
                frames[f] = _points_at(attr, t, len(first), part.path)
            per_prim[part.path] = frames
        points = per_prim[part.path]
        if len(part.source) and part.source.max() >= points.shape[1]:
            raise UsdInputError(
                f"has {points.shape[1]} time-sampled points, fewer than its faces index",
                prim=part.path,
                attribute="points",
            )
        out[j] = (points[:, part.source].astype(np.float64) @ baked[j]).astype(np.float32)
    return out


def read_clouds(prims, times, to_si, world_of) -> list:
    """A :class:`PointCloud` of each ``Points`` prim of ``prims`` over ``times`` (``to_si``: the stage's 4x4 to
    meters, Z up; ``world_of``: a path's world index)."""
    clouds = []
    cache = UsdGeom.XformCache(code(times[0]))
    for prim in prims:
        path = str(prim.GetPath())
        attr = UsdGeom.Points(prim).GetPointsAttr()
        first = _points_at(attr, times[0], None, path)
        if not len(first):
            continue
        moving = mover_of(prim) is not None
        sampled = attr.ValueMightBeTimeVarying()
        positions = np.empty((len(times), len(first), 3), np.float32)
        matrix = None
        for f, t in enumerate(times):
            if matrix is None or moving:
                cache.SetTime(code(t))
                matrix = np.array(cache.GetLocalToWorldTransform(prim)) @ to_si
            points = _points_at(attr, t, len(first), path) if sampled and f else first
            positions[f] = points.astype(np.float64) @ matrix[:3, :3] + matrix[3, :3]
        cache.SetTime(code(times[0]))
        m0 = np.array(cache.GetLocalToWorldTransform(prim)) @ to_si
        scale = abs(float(np.linalg.det(m0[:3, :3]))) ** (1.0 / 3.0)
        radii = 0.5 * scale * _widths(prim, len(first), path)
        clouds.append(PointCloud(path, positions, radii.astype(np.float32), _colors(prim, len(first)), world_of(path)))
    return clouds


def _widths(prim, n: int, path: str) -> np.ndarray:
    """(n,) each point's width in stage units (``primvars:widths`` over ``widths``; constant or per point)."""
    pv = UsdGeom.PrimvarsAPI(prim).GetPrimvar("widths")
    value = pv.ComputeFlattened(Usd.TimeCode.EarliestTime()) if pv and pv.HasAuthoredValue() else None
    if value is None:
        attr = UsdGeom.Points(prim).GetWidthsAttr()
        value = attr.Get(Usd.TimeCode.EarliestTime()) if attr and attr.HasAuthoredValue() else None
    if value is None or len(value) == 0:
        mpu = UsdGeom.GetStageMetersPerUnit(prim.GetStage()) or 1.0
        return np.full(n, DEFAULT_WIDTH / mpu)
    widths = np.asarray(value, np.float64)
    if len(widths) not in (1, n) or not np.all(np.isfinite(widths)) or np.any(widths < 0):
        raise UsdInputError(
            f"must be one width or one per point ({n}), finite and >= 0; got {len(widths)} values",
            prim=path,
            attribute="widths",
        )
    return np.broadcast_to(widths, n).copy() if len(widths) == 1 else widths


def _colors(prim, n: int) -> np.ndarray:
    """(n, 3) float32 each point's colour: displayColor, else its material's (see the module's docstring)."""
    pv = UsdGeom.Gprim(prim).GetDisplayColorPrimvar()
    value = pv.ComputeFlattened(Usd.TimeCode.EarliestTime()) if pv and pv.HasAuthoredValue() else None
    if value is not None and len(value):
        colors = np.clip(np.asarray(value, np.float32).reshape(-1, 3), 0, 1)
        return colors if len(colors) == n else np.broadcast_to(colors[0], (n, 3)).copy()
    out = np.empty((n, 3), np.float32)
    materials = []  # material paths in the order met (each its palette colour)
    own = _bound(prim)
    out[:] = _material_color(own, materials) if own else DEFAULT_POINT_COLOR
    for subset in UsdShade.MaterialBindingAPI(prim).GetMaterialBindSubsets():
        material = _bound(subset.GetPrim())
        if not material:
            continue
        idx = np.asarray(subset.GetIndicesAttr().Get() or [], np.int64)
        out[idx[(idx >= 0) & (idx < n)]] = _material_color(material, materials)
    return out


def _bound(prim):
    """The material bound to ``prim`` for any purpose (all purposes first, then physics), or None."""
    api = UsdShade.MaterialBindingAPI(prim)
    for purpose in (UsdShade.Tokens.allPurpose, "physics", UsdShade.Tokens.full, UsdShade.Tokens.preview):
        material, _ = api.ComputeBoundMaterial(purpose)
        if material:
            return material
    return None


def _material_color(material, seen: list) -> tuple:
    shader = material.ComputeSurfaceSource()[0]
    diffuse = shader.GetInput("diffuseColor") if shader else None
    value = diffuse.Get() if diffuse else None
    if value is not None:
        return tuple(float(c) for c in value)
    path = material.GetPath()
    if path not in seen:
        seen.append(path)
    return PALETTE[seen.index(path) % len(PALETTE)]


def vertices_at(scene, index: int, frame: int) -> np.ndarray:
    """Part ``index``'s vertices (its frame, meters) at ``frame``: its deforming vertices where it has them."""
    frames = scene.deforming.get(index)
    return scene.parts[index].vertices if frames is None else frames[min(frame, len(frames) - 1)]


def cloud_bounds(scene, frames=None) -> tuple:
    """(lower, upper) corners (m) of every drawn point (its radius included) at ``frames`` (default: all);
    infinite where there is none."""
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for cloud in scene.clouds:
        p = cloud.positions if frames is None else cloud.positions[np.atleast_1d(frames)]
        r = float(cloud.radii.max(initial=0.0))
        lo = np.minimum(lo, p.min(axis=(0, 1)) - r)
        hi = np.maximum(hi, p.max(axis=(0, 1)) + r)
    return lo, hi


def simulated_meshes(stage, scene) -> list:
    """Indices of the parts whose mesh a run may deform (a ``TetMesh``, or a prim applying a deformable body or
    simulation API): the live view of a run draws them as deforming before their first frame is written."""
    out = []
    for i, part in enumerate(scene.parts):
        prim = stage.GetPrimAtPath(part.path) if part.source is not None and "[" not in part.path else None
        if prim and (prim.IsA(UsdGeom.TetMesh) or any("Deformable" in s for s in _applied(prim))):
            out.append(i)
    return out


def _applied(prim) -> set:
    """The API schemas ``prim`` lists (registered by a plugin or not), and its parent's (a deformable body)."""
    names = set()
    for p in (prim, prim.GetParent()):
        listed = p.GetMetadata("apiSchemas") if p else None
        names.update(str(n) for n in (listed.ApplyOperations([]) if listed is not None else ()))
    return names


def grow(old: dict, new: dict, frames: int, replace: bool) -> dict:
    """The deforming vertices ``old`` followed by (``replace``: replaced by) ``new``'s ``frames`` frames; a part
    without new frames keeps its last shape."""
    out = {}
    for i, v in old.items():
        more = new[i] if i in new else np.repeat(v[-1:], frames, axis=0)
        out[i] = more if replace else np.concatenate([v, more])
    return out
