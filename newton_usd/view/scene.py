"""A composed USD recording as something to draw: triangle meshes, their colours, and a pose per frame.

:func:`read_scene` opens any stage (a ``usdsim`` recording, plain time samples or value clips, or a
stage with no animation at all) and returns a :class:`Scene`: one :class:`Part` per drawn gprim (per
PointInstancer instance for prototypes), in SI units and Z up whatever the stage's ``upAxis`` and
``metersPerUnit``, and the rigid pose of every part at every frame. It reads USD only, so it shows every
engine's output alike.

What is drawn is what the user authored to be seen: gprims whose purpose is ``default`` or ``render``,
visible (on the frames where they are, for a time-sampled ``visibility``: :attr:`Scene.shown`), in their
``primvars:displayColor`` / ``displayOpacity``; a mesh's authored normals decide which of its corners share
a vertex (sharp or smooth edges). Guide and proxy gprims, and invisible
gprims with a ``PhysicsCollisionAPI`` (collision-only shapes), are kept as *colliders*, drawn only on
request. Instanceable prims are read through their instance proxies, PointInstancers instance by
instance, and the copies ``usdsim --write-worlds all`` writes (``/World_world<k>``) carry their world index.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
from pxr import Gf, Sdf, Tf, Usd, UsdGeom, UsdPhysics, Vt

from ..errors import UsdInputError
from .deforming import read_clouds, read_deforming, sampled_points, vertices_at
from .poses import code as _code
from .poses import decompose, mover_of, part_poses
from .shapes import implicit_geometry
from .tubes import curve_tube

_DEFAULT_COLOR = (0.6, 0.6, 0.6)  # a gprim with no displayColor (Hydra's fallback grey, lighter)
_WORLD_COPY = re.compile(r"_world(\d+)$")  # newton_usd.sync.world_copies names world k's copy <root>_world<k>
_USD_SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")


@dataclass
class Part:
    """One drawn piece of geometry: a gprim (or one colour of a multi-coloured mesh, or one instance of a
    PointInstancer's prototype gprim).

    Attributes:
        path: The prim path (``/Instancer[i]/...`` for an instance).
        vertices: (V, 3) float32 in the part's frame, meters (the gprim's scale baked in).
        faces: (F, 3) int32 triangles.
        color: RGB in [0, 1].
        opacity: ``displayOpacity`` in [0, 1].
        collider: True for guide/proxy gprims and invisible collision shapes (drawn on request).
        world: The world index (0 unless the prim is in a ``--write-worlds all`` copy).
        source: (V,) each vertex's index in its mesh's ``points`` (None: not a mesh): where a mesh's points are
            time-sampled, :attr:`Scene.deforming` holds its vertices per frame.
    """

    path: str
    vertices: np.ndarray
    faces: np.ndarray
    color: tuple
    opacity: float = 1.0
    collider: bool = False
    world: int = 0
    source: np.ndarray | None = None

    def geometry_key(self) -> tuple:
        """Parts with equal keys share one geometry (drawn as one batch)."""
        return (self.vertices.shape, self.faces.shape, hash(self.vertices.tobytes()), hash(self.faces.tobytes()))


@dataclass
class Scene:
    """What :func:`read_scene` found.

    Attributes:
        source: The stage's file.
        parts: The drawn parts.
        times: (T,) the time codes of the frames (one frame, the default time, for a stage without motion).
        fps: Time codes per second (the stage's timeCodesPerSecond); frame f is at ``times[f] / fps`` s.
        positions: (T, P, 3) float32 world position of each part's frame per frame, meters, Z up.
        wxyz: (T, P, 4) float32 world orientation, (w, x, y, z).
        animated: Whether any part moves (False: the authored pose).
        up_axis: The stage's up axis (the scene is converted to Z up).
        meters_per_unit: The stage's metersPerUnit (converted to meters).
    """

    source: str
    parts: list
    times: np.ndarray
    fps: float
    positions: np.ndarray
    wxyz: np.ndarray
    animated: bool
    up_axis: str = "Z"
    meters_per_unit: float = 1.0
    reader: object = None
    """A :class:`Reader` of more frames from the stage (set by :func:`read_scene`)."""
    shown: np.ndarray | None = None
    """(T, P) whether each part is visible at each frame, where a visibility varies in time (None: the
    drawn parts are visible throughout)."""
    deforming: dict = field(default_factory=dict)
    """Part index -> (T, V, 3) float32 its vertices at each frame (its frame, meters), for a mesh whose
    ``points`` are time-sampled (:mod:`~newton_usd.view.deforming`)."""
    clouds: list = field(default_factory=list)
    """The drawn ``Points`` prims (:class:`~newton_usd.view.deforming.PointCloud`)."""
    _moving: tuple = field(default=(None, None), repr=False, compare=False)  # (arrays' key, moving())

    @property
    def frames(self) -> int:
        return len(self.times)

    def shown_at(self, frame: int, indices) -> np.ndarray | None:
        """Whether the parts ``indices`` are visible at ``frame`` (None: all are, whatever the frame)."""
        if self.shown is None or frame >= len(self.shown):
            return None
        return self.shown[frame, indices]

    def seconds(self) -> np.ndarray:
        """(T,) each frame's time in seconds from the first frame."""
        return (self.times - self.times[0]) / self.fps if self.animated else np.zeros(self.frames)

    def frame_rate(self) -> float:
        """Recorded frames per second (the stage's rate over the step between recorded frames)."""
        if self.frames < 2:
            return self.fps
        return self.fps / float(np.median(np.diff(self.times)))

    @property
    def worlds(self) -> list:
        return sorted({p.world for p in self.parts})

    def visible(self, colliders: bool = False) -> list:
        """Indices of the parts drawn by default (and the colliders too if ``colliders``)."""
        return [i for i, p in enumerate(self.parts) if colliders or not p.collider]

    def moving(self) -> np.ndarray:
        """(P,) whether each part moves during the recording."""
        key = (id(self.positions), id(self.wxyz), self.positions.shape)
        if self._moving[0] != key:  # once per recording (the live view's grows)
            if self.frames < 2:
                moves = np.zeros(len(self.parts), bool)
            else:
                moves = (np.ptp(self.positions, axis=0).max(axis=1) > 1e-6) | (
                    np.ptp(self.wxyz, axis=0).max(axis=1) > 1e-6
                )
                moves[list(self.deforming)] = True
            self._moving = (key, moves)
        return self._moving[1]

    def bounds(self, indices=None) -> tuple:
        """(lower, upper) corners (meters) of the chosen parts (default: the moving ones, or all drawn ones
        when none moves) over all frames."""
        moving = self.moving()
        if indices is None:
            drawn = self.visible()
            indices = [i for i in drawn if moving[i]] or drawn
        indices = [i for i in indices if len(self.parts[i].vertices)]
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        movers = [i for i in indices if moving[i] and i not in self.deforming]
        for i in (i for i in indices if i in self.deforming):  # every frame's vertices
            for f in range(self.frames):
                world = _rotate(self.wxyz[f, i], vertices_at(self, i, f).astype(np.float64)) + self.positions[f, i]
                lo, hi = np.minimum(lo, world.min(0)), np.maximum(hi, world.max(0))
        if movers:  # a sphere around each part's frame, wherever it goes
            radius = np.array([np.linalg.norm(self.parts[i].vertices, axis=1).max() for i in movers])[:, None]
            lo = np.minimum(lo, (self.positions[:, movers].min(axis=0) - radius).min(axis=0))
            hi = np.maximum(hi, (self.positions[:, movers].max(axis=0) + radius).max(axis=0))
        for i in indices:
            if not moving[i] and i not in self.deforming:
                v = self.parts[i].vertices
                world = _rotate(self.wxyz[0, i], v.astype(np.float64)) + self.positions[0, i]
                lo, hi = np.minimum(lo, world.min(0)), np.maximum(hi, world.max(0))
        if not np.all(np.isfinite(lo)):
            return np.zeros(3), np.zeros(3)
        return lo, hi


def _rotate(wxyz, v):
    w, x, y, z = (float(c) for c in wxyz)
    q = np.array([x, y, z])
    t = 2.0 * np.cross(q, v)
    return v + w * t + np.cross(q, t)


def open_stage(path) -> Usd.Stage:
    """Open ``path`` as a USD stage, or raise :class:`UsdInputError` naming the file (missing, not USD,
    unreadable)."""
    path = str(path)
    if not os.path.exists(path):
        raise UsdInputError("no such file", file=path)
    if os.path.isdir(path):
        raise UsdInputError("is a directory, not a USD stage", file=path)
    if not path.lower().endswith(_USD_SUFFIXES):
        raise UsdInputError(f"not a USD file (expected one of {', '.join(_USD_SUFFIXES)})", file=path)
    try:
        stage = Usd.Stage.Open(path)
    except Tf.ErrorException as e:
        reason = str(e).strip().splitlines()[-1].strip() if str(e).strip() else "unreadable"
        raise UsdInputError(f"cannot be opened as a USD stage: {reason}", file=path) from None
    if stage is None:
        raise UsdInputError("cannot be opened as a USD stage", file=path)
    return stage


def read_scene(path_or_stage, frames: int | None = None) -> Scene:
    """Read a stage's drawable gprims and their pose at each time code of its recording.

    Args:
        path_or_stage: A file path, or an open ``Usd.Stage``.
        frames: Read at most this many frames (from the start).

    Raises:
        UsdInputError: The file is missing, not USD, or has a malformed gprim.
    """
    stage = path_or_stage if isinstance(path_or_stage, Usd.Stage) else open_stage(path_or_stage)
    source = stage.GetRootLayer().identifier if isinstance(path_or_stage, Usd.Stage) else str(path_or_stage)
    up = str(UsdGeom.GetStageUpAxis(stage))
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage)) or 1.0
    to_si = stage_to_si(up, mpu)
    fps = stage.GetTimeCodesPerSecond() or 24.0

    # Each part: its prim, its constant transform relative to an "anchor" prim, how to place the anchor.
    parts, anchors, points = [], [], []  # anchors[i]: (prim, offset 4x4, instancer-instance index or -1)
    it = iter(Usd.PrimRange(stage.GetPseudoRoot(), Usd.TraverseInstanceProxies(Usd.PrimDefaultPredicate)))
    cache = UsdGeom.XformCache(Usd.TimeCode.EarliestTime())
    for prim in it:
        if prim.IsA(UsdGeom.PointInstancer):
            it.PruneChildren()
            _read_instancer(stage, prim, cache, parts, anchors)
            continue
        if not prim.IsA(UsdGeom.Gprim):
            continue
        kind = _category(prim)
        if kind is None:
            continue
        if prim.IsA(UsdGeom.Points):  # (drawn as points: deforming.read_clouds)
            points += [prim] if kind == "visual" else []
            continue
        for part in _parts_of(prim, kind == "collider", _world_of(prim.GetPath())):
            parts.append(part)
            anchors.append((prim, None, -1))

    sampled = [a for a in (sampled_points(p) for p in points + [a[0] for a in anchors if a[1] is None]) if a]
    times, animated = _frame_times(stage, anchors, frames, sampled)
    positions = np.zeros((len(times), len(parts), 3), np.float32)
    wxyz = np.zeros((len(times), len(parts), 4), np.float32)
    baked = _bake_and_pose(stage, parts, anchors, times, to_si, positions, wxyz) if parts else None
    scene = Scene(source, parts, times, fps, positions, wxyz, animated, up, mpu)
    scene.deforming = read_deforming(parts, anchors, baked, times) if sampled and parts else {}
    scene.clouds = read_clouds(points, times, to_si, lambda path: _world_of(Sdf.Path(path)))
    scene.reader = Reader(stage, anchors, to_si, baked, points)
    scene.shown = _visibility(anchors, times) if animated else None
    return scene


def _visibility(anchors, times) -> np.ndarray | None:
    """(T, P) each gprim part's computed visibility at each frame, where some prim's ``visibility`` (its
    own or an ancestor's) varies in time; None where none does."""
    shown = None
    per_prim = {}
    for j, (prim, offset, _) in enumerate(anchors):
        if offset is not None or not _visibility_varies(prim):
            continue
        path = prim.GetPath()
        if path not in per_prim:
            img = UsdGeom.Imageable(prim)
            per_prim[path] = np.array([img.ComputeVisibility(_code(t)) != UsdGeom.Tokens.invisible for t in times])
        if shown is None:
            shown = np.ones((len(times), len(anchors)), bool)
        shown[:, j] = per_prim[path]
    return shown


def _visibility_varies(prim) -> bool:
    p = prim
    while p and p.GetPath() != Sdf.Path.absoluteRootPath:
        img = UsdGeom.Imageable(p)
        if img and img.GetVisibilityAttr().ValueMightBeTimeVarying():
            return True
        p = p.GetParent()
    return False


class Reader:
    """Reads more frames of a scene's stage (the live view of a run reads each batch as it is written)."""

    def __init__(self, stage, anchors, to_si, baked=None, points=()):
        self.stage, self.anchors, self.to_si = stage, anchors, to_si
        self.baked, self.points = baked, list(points)  # (the parts' scales baked, the drawn Points prims)

    def shapes(self, parts, times) -> tuple:
        """(:attr:`Scene.deforming`, :attr:`Scene.clouds`) of ``parts`` and the Points prims at ``times``."""
        deforming = read_deforming(parts, self.anchors, self.baked, times) if parts else {}
        return deforming, read_clouds(self.points, times, self.to_si, lambda path: _world_of(Sdf.Path(path)))

    def poses(self, parts, times) -> tuple:
        """(positions, wxyz) of ``parts`` at ``times``, their scale already baked."""
        positions = np.zeros((len(times), len(parts), 3), np.float32)
        wxyz = np.zeros((len(times), len(parts), 4), np.float32)
        if parts:
            _bake_and_pose(self.stage, parts, self.anchors, np.asarray(times, float), self.to_si, positions, wxyz,
                           bake=False)  # fmt: skip
        return positions, wxyz

    def last_written(self, now: float) -> float | None:
        """The latest time code <= ``now`` at which a moving prim has a time sample (None: none yet)."""
        for attr in (sampled_points(p) for p in self.points + [a[0] for a in self.anchors if a[1] is None]):
            bracket = attr.GetBracketingTimeSamples(now) if attr else None  # (a deforming mesh, grains)
            if bracket:
                return float(bracket[0])
        for prim, offset, _ in self.anchors:
            mover = mover_of(prim) if offset is None else None
            if mover is None:
                continue
            for op in UsdGeom.Xformable(mover).GetOrderedXformOps():
                attr = op.GetAttr()
                if attr.ValueMightBeTimeVarying():
                    bracket = attr.GetBracketingTimeSamples(now)  # (lower, upper), or empty without samples
                    return float(bracket[0]) if bracket else None
        return None


def stage_to_si(up: str, mpu: float) -> np.ndarray:
    """The row-vector 4x4 taking stage coordinates to meters, Z up (+90 degrees about X for a Y-up stage)."""
    m = np.eye(4) * mpu
    m[3, 3] = 1.0
    if up == "Y":  # (x, y, z) -> (x, -z, y)
        r = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])
        m = m @ r
    return m


def _category(prim) -> str | None:
    """``"visual"``, ``"collider"`` or None (not drawn at all) for a gprim."""
    img = UsdGeom.Imageable(prim)
    purpose = img.ComputePurpose()
    # (a visibility that varies in time is drawn, shown on the frames where it is visible: Scene.shown)
    invisible = img.ComputeVisibility(Usd.TimeCode.EarliestTime()) == UsdGeom.Tokens.invisible
    if purpose in (UsdGeom.Tokens.guide, UsdGeom.Tokens.proxy):
        return "collider"
    if invisible and not _visibility_varies(prim):
        return "collider" if prim.HasAPI(UsdPhysics.CollisionAPI) else None
    return "visual"


def _world_of(path: Sdf.Path) -> int:
    for prefix in path.GetPrefixes():
        m = _WORLD_COPY.search(prefix.name)
        if m:
            return int(m.group(1))
    return 0


def _read_instancer(stage, prim, cache, parts, anchors) -> None:
    """One part per instance per gprim of its prototype."""
    inst = UsdGeom.PointInstancer(prim)
    protos = inst.GetPrototypesRel().GetTargets()
    indices = inst.GetProtoIndicesAttr().Get(Usd.TimeCode.EarliestTime())
    if indices is None or not protos:
        return
    world = _world_of(prim.GetPath())
    for i, proto_index in enumerate(indices):
        if not 0 <= proto_index < len(protos):
            raise UsdInputError(
                f"protoIndices[{i}] is {proto_index}, but there are {len(protos)} prototypes", prim=str(prim.GetPath())
            )
        root = stage.GetPrimAtPath(protos[proto_index])
        root_world_inv = cache.GetLocalToWorldTransform(root).GetInverse() if root else None
        prototype = Usd.TraverseInstanceProxies(Usd.PrimIsActive & Usd.PrimIsLoaded)  # overs and classes too
        for sub in Usd.PrimRange(root, prototype) if root else ():
            if not sub.IsA(UsdGeom.Gprim):
                continue
            kind = _category(sub)
            if kind is None:
                continue
            # The gprim relative to its prototype's root (without the root's own transform, as Hydra does).
            offset = cache.GetLocalToWorldTransform(sub) * root_world_inv * cache.GetLocalTransformation(root)[0]
            for part in _parts_of(sub, kind == "collider", world):
                part.path = f"{prim.GetPath()}[{i}]{sub.GetPath().pathString[len(root.GetPath().pathString) :]}"
                parts.append(part)
                anchors.append((prim, np.array(offset), i))


def _frame_times(stage, anchors, frames, sampled_points=()) -> tuple:
    """The time codes to read, and whether anything moves (or deforms: ``sampled_points``, time-sampled
    ``points`` attributes)."""
    moving = False
    seen = set()
    sampled = None  # the time-varying ops of the first moving prim found
    for prim, _, _ in anchors:
        p = prim
        while p and p.GetPath() != Sdf.Path.absoluteRootPath and p.GetPath() not in seen:
            seen.add(p.GetPath())
            xf = UsdGeom.Xformable(p)
            if xf and xf.TransformMightBeTimeVarying():
                moving = True
                sampled = [op.GetAttr() for op in xf.GetOrderedXformOps() if op.GetAttr().ValueMightBeTimeVarying()]
                break
            if p.IsA(UsdGeom.PointInstancer) and _instancer_varies(p):
                moving = True
                break
            p = p.GetParent()
        if moving:
            break
    if not moving and sampled_points:
        moving, sampled = True, list(sampled_points[:1])
    start, end = stage.GetStartTimeCode(), stage.GetEndTimeCode()
    if moving and sampled and not stage.HasAuthoredTimeCodeRange():  # no range: the samples' own span
        written = sampled[0].GetTimeSamples()
        if len(written) >= 2:
            start, end = float(written[0]), float(written[-1])
            return _frame_times_in(sampled, np.arange(start, end + 0.5), frames), True
    if not moving or not stage.HasAuthoredTimeCodeRange() or end < start:
        return np.array([Usd.TimeCode.EarliestTime().GetValue() if moving else np.nan]), False
    return _frame_times_in(sampled, np.arange(start, end + 0.5), frames), True


def _frame_times_in(sampled, times, frames) -> np.ndarray:
    if sampled:  # a recording of every n-th frame (usdsim --record-every n): its frames, not the ones between
        written = np.array(sampled[0].GetTimeSamplesInInterval(Gf.Interval(times[0], times[-1])), float)
        # (from the first to the last frame, as usdsim records: not a prim sampled over part of the range)
        if 2 <= len(written) < len(times) and written[0] == times[0] and written[-1] == times[-1]:
            times = written
    return times if frames is None else times[: max(1, frames)]


def _instancer_varies(prim) -> bool:
    inst = UsdGeom.PointInstancer(prim)
    attrs = (inst.GetPositionsAttr(), inst.GetOrientationsAttr(), inst.GetOrientationsfAttr(), inst.GetScalesAttr())
    return any(a and a.ValueMightBeTimeVarying() for a in attrs)


def _bake_and_pose(stage, parts, anchors, times, to_si, positions, wxyz, bake: bool = True) -> None:
    """Fill positions/wxyz, and bake each part's scale (its frame-0 world matrix less the rigid part) into
    its vertices. Returns the (P, 3, 3) scales baked."""
    baked = np.empty((len(parts), 3, 3))
    gprims = [j for j, (_, offset, _) in enumerate(anchors) if offset is None]
    if gprims:
        poses = part_poses([anchors[j][0] for j in gprims], times, to_si)
        positions[:, gprims], wxyz[:, gprims], baked[gprims] = poses.positions, poses.wxyz, poses.baked
    instanced = [j for j, (_, offset, _) in enumerate(anchors) if offset is not None]
    if instanced:
        worlds = _instance_worlds(anchors, instanced, times) @ to_si
        positions[:, instanced], wxyz[:, instanced], baked[instanced] = decompose(worlds)
    if bake:
        for j, part in enumerate(parts):
            part.vertices = (part.vertices.astype(np.float64) @ baked[j]).astype(np.float32)
    return baked


def _instance_worlds(anchors, instanced, times) -> np.ndarray:
    """(T, len(instanced), 4, 4) world matrices of the instanced parts (each its instance's transform,
    its offset in the prototype), per frame."""
    cache = UsdGeom.XformCache(_code(times[0]))
    per_instancer = {}  # instancer path -> (T, instances, 4, 4)
    worlds = np.empty((len(times), len(instanced), 4, 4))
    for k, j in enumerate(instanced):
        prim, offset, i = anchors[j]
        path = prim.GetPath()
        if path not in per_instancer:
            inst = UsdGeom.PointInstancer(prim)
            frames = []
            for t in times:
                code = _code(t)
                cache.SetTime(code)
                xforms = inst.ComputeInstanceTransformsAtTime(code, code, UsdGeom.PointInstancer.ExcludeProtoXform)
                world = np.array(cache.GetLocalToWorldTransform(prim))
                frames.append(np.array(Vt.Matrix4dArray(list(xforms))).reshape(-1, 4, 4) @ world)
            per_instancer[path] = np.stack(frames)
        worlds[:, k] = offset @ per_instancer[path][:, i]
    return worlds


# ---------------------------------------------------------------- geometry of one gprim


def _parts_of(prim, collider: bool, world: int) -> list:
    """The part(s) of a gprim: one, or one per colour of a mesh coloured per face or by subsets."""
    gprim = UsdGeom.Gprim(prim)
    path = str(prim.GetPath())
    vertices, faces, face_colors, source = _geometry(prim, path)
    opacity = _primvar(gprim.GetDisplayOpacityPrimvar())
    opacity = float(np.clip(opacity[0], 0.0, 1.0)) if opacity is not None and len(opacity) else 1.0
    colors = _primvar(gprim.GetDisplayColorPrimvar())
    interp = gprim.GetDisplayColorPrimvar().GetInterpolation() if colors is not None else None
    per_face = None
    if colors is not None and len(colors) and face_colors is not None:
        per_face = face_colors(np.asarray(colors, np.float64), interp)
    if per_face is None:
        color = tuple(float(c) for c in colors[0]) if colors is not None and len(colors) else _DEFAULT_COLOR
        per_face_subsets = _subset_colors(prim, len(faces), face_colors)
        if per_face_subsets is None:
            return [Part(path, vertices, faces, color, opacity, collider, world, source)] if len(faces) else []
        per_face = np.where(np.isnan(per_face_subsets), np.array(color), per_face_subsets)
    out = []
    keys = np.round(per_face * 255).astype(np.int64)
    groups = np.unique(keys, axis=0)
    for g in groups:
        sel = np.all(keys == g, axis=1)
        used = np.unique(faces[sel])
        remap = np.full(len(vertices), -1, np.int64)
        remap[used] = np.arange(len(used))
        src = None if source is None else source[used]
        faces_g = remap[faces[sel]].astype(np.int32)
        out.append(Part(path, vertices[used], faces_g, tuple(g / 255.0), opacity, collider, world, src))
    return out


def _primvar(pv):
    if not pv or not pv.HasValue():
        return None
    value = pv.ComputeFlattened(Usd.TimeCode.EarliestTime())
    return None if value is None else np.asarray(value)


def _subset_colors(prim, n_faces: int, face_colors):
    """Per-triangle colours from GeomSubsets (familyName any) that author their own displayColor, NaN
    where none does; None when no subset does."""
    if face_colors is None:
        return None
    subsets = UsdGeom.Subset.GetAllGeomSubsets(UsdGeom.Imageable(prim))
    per_poly = None
    for subset in subsets:
        attr = subset.GetPrim().GetAttribute("primvars:displayColor")
        value = attr.Get() if attr else None
        if not value:
            continue
        if per_poly is None:
            per_poly = np.full((face_colors.polygons, 3), np.nan)
        idx = np.asarray(subset.GetIndicesAttr().Get() or [], np.int64)
        idx = idx[(idx >= 0) & (idx < face_colors.polygons)]
        per_poly[idx] = np.asarray(value[0], np.float64)
    if per_poly is None:
        return None
    return per_poly[face_colors.triangle_polygon]


class _MeshColors:
    """Maps a mesh's displayColor (any interpolation) to its triangles."""

    def __init__(self, counts, indices, tri_polygon, tri_corners, n_points):
        self.counts = counts
        self.indices = indices
        self.polygons = len(counts)
        self.triangle_polygon = tri_polygon
        self.tri_corners = tri_corners  # (F, 3) face-vertex (corner) index of each triangle vertex
        self.n_points = n_points

    def __call__(self, colors, interp):
        if len(colors) == 1 or interp == UsdGeom.Tokens.constant:
            return None
        if interp == UsdGeom.Tokens.uniform and len(colors) >= self.polygons:
            return colors[self.triangle_polygon]
        if interp in (UsdGeom.Tokens.vertex, UsdGeom.Tokens.varying) and len(colors) >= self.n_points:
            return colors[self.indices[self.tri_corners]].mean(axis=1)
        if interp == UsdGeom.Tokens.faceVarying and len(colors) >= len(self.indices):
            return colors[self.tri_corners].mean(axis=1)
        return None


def _geometry(prim, path):
    """(vertices, faces, per-face colour mapper or None, each vertex's index in a mesh's ``points`` or None) of a
    gprim in its own frame (stage units)."""
    t = prim.GetTypeName()
    if t == "Mesh":
        return _mesh(prim, path)
    if t == "TetMesh":
        return _tet_surface(prim, path)
    if t == "BasisCurves":  # (a tube, each vertex its own: rebuilt from the points at each frame, view/tubes.py)
        vertices, faces = curve_tube(prim, path)
        return vertices, faces, None, np.arange(len(vertices))
    vertices, faces = implicit_geometry(prim, path)
    return vertices, faces, None, None


def _mesh(prim, path):
    mesh = UsdGeom.Mesh(prim)
    t = Usd.TimeCode.EarliestTime()
    points = mesh.GetPointsAttr().Get(t)
    counts = mesh.GetFaceVertexCountsAttr().Get(t)
    indices = mesh.GetFaceVertexIndicesAttr().Get(t)
    if points is None or counts is None or indices is None or len(points) == 0:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int32), None, None
    points = np.asarray(points, np.float32)
    counts = np.asarray(counts, np.int64)
    indices = np.asarray(indices, np.int64)
    if counts.sum() != len(indices):
        raise UsdInputError(
            f"faceVertexCounts sum to {counts.sum()} but there are {len(indices)} faceVertexIndices",
            prim=path,
            attribute="faceVertexIndices",
        )
    if len(indices) and (indices.min() < 0 or indices.max() >= len(points)):
        raise UsdInputError(
            f"faceVertexIndices must be in [0, {len(points)}), got {indices.min()}..{indices.max()}",
            prim=path,
            attribute="faceVertexIndices",
        )
    # Fan-triangulate every polygon of 3 or more corners.
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    tri_poly, tri_corners = [], []
    for k in range(3, int(counts.max(initial=0)) + 1):
        polys = np.flatnonzero(counts == k)
        if not len(polys):
            continue
        s = starts[polys]
        for j in range(1, k - 1):
            tri_corners.append(np.stack([s, s + j, s + j + 1], axis=1))
            tri_poly.append(polys)
    if not tri_corners:
        return points, np.zeros((0, 3), np.int32), None, None
    tri_corners = np.concatenate(tri_corners)
    tri_poly = np.concatenate(tri_poly)
    order = np.argsort(tri_poly, kind="stable")
    tri_corners, tri_poly = tri_corners[order], tri_poly[order]
    faces = indices[tri_corners]
    if mesh.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded:
        faces = faces[:, ::-1]
        tri_corners = tri_corners[:, ::-1]
    colors = _MeshColors(counts, indices, tri_poly, tri_corners, len(points))
    normals = _corner_normals(mesh, tri_corners, tri_poly, indices, len(counts), len(points))
    if normals is not None:
        # The viewers compute their normals from the faces around each vertex (viser even for glTF meshes,
        # MuJoCo's renderer too): the authored normals decide which corners share a vertex, one per point
        # and normal, so that an edge whose faces' normals differ there is sharp and one they share smooth.
        key = np.concatenate([faces.reshape(-1, 1), np.round(normals.reshape(-1, 3) * 1e4)], axis=1)
        corners, shared = np.unique(key, axis=0, return_inverse=True)
        source = corners[:, 0].astype(np.int64)
        return points[source], shared.reshape(-1, 3).astype(np.int32), colors, source
    if mesh.GetSubdivisionSchemeAttr().Get() == UsdGeom.Tokens.none:
        # A polygonal mesh without normals is faceted: each triangle its own corners (normals per face).
        corners = faces.reshape(-1)
        return points[corners], np.arange(faces.size, dtype=np.int32).reshape(-1, 3), colors, corners
    # a subdivision surface (USD's default): smooth
    return points, faces.astype(np.int32), colors, np.arange(len(points), dtype=np.int64)


def _tet_surface(prim, path):
    """A TetMesh's surface triangles (``surfaceFaceVertexIndices``, else computed from its tetrahedra): smooth."""
    tets = UsdGeom.TetMesh(prim)
    t = Usd.TimeCode.EarliestTime()
    points = np.asarray(tets.GetPointsAttr().Get(t) or [], np.float32).reshape(-1, 3)
    faces = tets.GetSurfaceFaceVertexIndicesAttr().Get(t)
    if not faces and tets.GetTetVertexIndicesAttr().Get(t):
        faces = UsdGeom.TetMesh.ComputeSurfaceFaces(tets, t)
    faces = np.asarray(faces or [], np.int64).reshape(-1, 3)
    if len(faces) and (faces.min() < 0 or faces.max() >= len(points)):
        raise UsdInputError(
            f"surface faces must index its {len(points)} points, got {faces.min()}..{faces.max()}",
            prim=path,
            attribute="tetVertexIndices",
        )
    if tets.GetOrientationAttr().Get() == UsdGeom.Tokens.leftHanded:
        faces = faces[:, ::-1]
    return points, faces.astype(np.int32), None, np.arange(len(points), dtype=np.int64)


def _corner_normals(mesh, tri_corners, tri_poly, indices, polygons: int, n_points: int) -> np.ndarray | None:
    """(F, 3, 3) the authored normal at each triangle corner (``primvars:normals`` over ``normals``, any
    interpolation), or None where none is authored (or too few for its interpolation)."""
    pv = UsdGeom.PrimvarsAPI(mesh).GetPrimvar("normals")
    if pv and pv.HasAuthoredValue():
        value, interp = pv.ComputeFlattened(Usd.TimeCode.EarliestTime()), pv.GetInterpolation()
    elif mesh.GetNormalsAttr().HasAuthoredValue():
        value, interp = mesh.GetNormalsAttr().Get(Usd.TimeCode.EarliestTime()), mesh.GetNormalsInterpolation()
    else:
        return None
    normals = np.asarray(value if value is not None else [], np.float64).reshape(-1, 3)
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = normals / np.where(length > 0, length, 1.0)
    if interp in (UsdGeom.Tokens.vertex, UsdGeom.Tokens.varying) and len(normals) >= n_points:
        return normals[indices[tri_corners]]
    if interp == UsdGeom.Tokens.faceVarying and len(normals) >= len(indices):
        return normals[tri_corners]
    if interp == UsdGeom.Tokens.uniform and len(normals) >= polygons:
        return np.repeat(normals[tri_poly][:, None], 3, axis=1)
    if interp == UsdGeom.Tokens.constant and len(normals):
        return np.broadcast_to(normals[0], tri_corners.shape + (3,))
    return None
