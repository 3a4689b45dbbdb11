"""Where the viewers look from at each frame (:class:`CameraView`): through a ``UsdGeom.Camera`` of the stage, or
the default view a person would choose.

- **A camera of the stage** (``--camera PATH``, or the stage's primary camera without it): USD's own camera at
  each frame (``UsdGeom.Camera.GetCamera(time)``: its world transform, and the ``Gf.Frustum`` of its focal
  length, apertures, aperture offsets, projection and clipping range), in meters and Z up whatever the stage's
  ``metersPerUnit`` and ``upAxis``.
- **The primary camera** (:func:`primary_camera`): the camera of the stage's render settings (the root layer's
  ``renderSettingsPrimPath``, a ``UsdRender.Settings`` prim, its ``camera`` relationship: OpenUSD's way to say
  which camera renders the stage), else the camera Omniverse Kit saved the stage looking through (the root
  layer's ``customLayerData["cameraSettings"]["boundCamera"]``) where that is a camera of the stage (Kit's own
  viewport cameras, ``/OmniverseKit_Persp`` and the like, are not in the file).
- **The default view** (:func:`default_view`): framed on the bodies at the first frame (what moves, or every
  drawn part when nothing does; one body with ``--follow PRIM``), from a three-quarter angle above (45 degrees
  round from the front, -Y, and 30 degrees up), then following the bodies' centre as they move (their median
  position, smoothed over a fraction of a second; one body's with ``--follow``), or still (``--fixed``).
"""

from __future__ import annotations

import logging

import numpy as np
from pxr import Gf, Sdf, UsdGeom, UsdRender

from ..core.quat import quat_rotate, quat_to_matrix
from ..errors import UsdInputError
from .deforming import cloud_bounds, vertices_at
from .poses import code, decompose
from .scene import Scene, stage_to_si

log = logging.getLogger("newton_usd")

FOVY = np.radians(45.0)
"""The default view's vertical field of view."""
ASPECT = 4.0 / 3.0
"""The default view's frame (width over height); a frame of another shape shows more, never less (see
:meth:`CameraView.window_for`)."""
AZIMUTH = np.radians(45.0)
"""The default view's direction round the up axis, from the front (-Y) toward +X."""
ELEVATION = np.radians(30.0)
"""The default view's angle above the horizontal."""
MARGIN = 1.3
"""The bodies' bounding sphere fills 1 / MARGIN of the default view's height."""
MIN_RADIUS = 0.05
"""The default view frames at least a sphere of this radius (m): a speck is not blown up to fill the frame."""
SMOOTHING = 0.25
"""Half the window (s) of the smoothing of the followed centre: contact chatter is not followed."""
_WARNED = set()  # the kinds of warning given (once each)


class CameraView:
    """The camera at each frame of a scene, in meters and Z up.

    Attributes:
        eye: (T, 3) the camera's position.
        rotation: (T, 3, 3) its axes in the world as columns: right (+X), up (+Y), backward (+Z); it looks
            along -Z, as a USD camera does.
        window: (T, 4) left, right, bottom, top of what it sees: at a distance of 1 in front of it
            (perspective), or in meters (orthographic).
        clip: (T, 2) near and far clipping distances (m).
        target: (T, 3) the point it looks at (the page's camera orbits it).
        orthographic: An orthographic camera.
        what: Which view this is, in words (for the command's last line).
    """

    def __init__(self, eye, rotation, window, clip, target, what: str, orthographic: bool = False):
        self.eye = np.asarray(eye, np.float64)
        self.rotation = np.asarray(rotation, np.float64)
        self.window = np.asarray(window, np.float64)
        self.clip = np.asarray(clip, np.float64)
        self.target = np.asarray(target, np.float64)
        self.what = what
        self.orthographic = orthographic

    @property
    def frames(self) -> int:
        return len(self.eye)

    def moves(self) -> bool:
        """Whether the camera moves or zooms during the recording."""
        if self.frames < 2:
            return False
        scale = max(float(np.linalg.norm(self.eye[0] - self.target[0])), 1e-6)
        return bool(
            np.ptp(self.eye, axis=0).max() > 1e-4 * scale
            or np.ptp(self.target, axis=0).max() > 1e-4 * scale
            or np.ptp(self.rotation, axis=0).max() > 1e-6
            or np.ptp(self.window, axis=0).max() > 1e-6 * np.abs(self.window).max()
        )

    def up(self, frame: int) -> np.ndarray:
        return self.rotation[frame, :, 1]

    def forward(self, frame: int) -> np.ndarray:
        return -self.rotation[frame, :, 2]

    def fovy(self, frame: int) -> float:
        """The vertical field of view (radians) of the window's height (for a viewer without lens shift: the
        page). An orthographic window is seen in perspective from its eye at the target's distance."""
        _, _, bottom, top = self.window[frame]
        height = top - bottom
        if self.orthographic:
            height /= max(float(np.linalg.norm(self.target[frame] - self.eye[frame])), 1e-9)
        return float(2.0 * np.arctan(height / 2.0))

    def window_for(self, frame: int, aspect: float) -> tuple:
        """(left, right, bottom, top) of the window fitted to a picture of ``aspect`` (width over height):
        widened or heightened about its centre so that the whole authored window shows (what Hydra does by
        default, CameraUtil's *fit*)."""
        left, right, bottom, top = self.window[frame]
        w, h = right - left, top - bottom
        cx, cy = (left + right) / 2, (bottom + top) / 2
        if w / h < aspect:
            w = h * aspect
        else:
            h = w / aspect
        return cx - w / 2, cx + w / 2, cy - h / 2, cy + h / 2


# ---------------------------------------------------------------- choosing


def choose_view(stage, scene: Scene, camera: str | None = None, follow: str | None = None, fixed: bool = False):
    """The view ``usdsim view`` and ``usdsim video`` show: through ``camera`` (a prim path), else the default
    view following ``follow`` or kept still (``fixed``), else the stage's primary camera, else the default
    view following the bodies.

    Raises:
        UsdInputError: ``camera`` is not a camera of the stage, or ``follow`` has no drawn part.
    """
    if camera:
        return stage_camera_view(stage, scene, check_camera(stage, camera, scene.source))
    if follow is None and not fixed:
        primary = primary_camera(stage)
        if primary is not None:
            path, why = primary
            view = stage_camera_view(stage, scene, path)
            view.what = f"through {path} ({why})"
            return view
    return default_view(scene, follow=follow, fixed=fixed)


def cameras(stage) -> list:
    """The paths of the stage's cameras (``UsdGeom.Camera`` prims), in the stage's order."""
    return [str(p.GetPath()) for p in stage.Traverse() if p.IsA(UsdGeom.Camera)]


def check_camera(stage, path: str, source: str | None = None) -> Sdf.Path:
    """The ``Sdf.Path`` of the camera ``path`` names, or :class:`UsdInputError`: not a prim path, no such
    prim, or a prim that is not a ``UsdGeom.Camera`` (the message lists the stage's cameras)."""
    found = cameras(stage)
    listed = f"the stage's cameras: {', '.join(found[:8])}{' ...' if len(found) > 8 else ''}" if found else (
        "the stage has no Camera prim")  # fmt: skip
    if not Sdf.Path.IsValidPathString(str(path)) or not Sdf.Path(str(path)).IsAbsolutePath():
        raise UsdInputError(f"--camera {path}: not an absolute prim path ({listed})", file=source)
    prim = stage.GetPrimAtPath(str(path))
    if not prim:
        raise UsdInputError(f"--camera {path}: no such prim ({listed})", file=source)
    if not prim.IsA(UsdGeom.Camera):
        kind = prim.GetTypeName() or "none"
        raise UsdInputError(f"--camera {path}: not a Camera (its type: {kind}; {listed})", file=source)
    return prim.GetPath()


def primary_camera(stage) -> tuple | None:
    """``(path, why)`` of the camera the stage marks as the one to look through, or None (see the module's
    docstring for the two marks read). Each is read from the root layer, or else from the first of its
    sublayers that has it: a ``usdsim`` recording sublayers the stage it simulated."""
    for layer in stage.GetLayerStack(includeSessionLayers=False):
        settings_path = layer.pseudoRoot.GetInfo("renderSettingsPrimPath") if layer.pseudoRoot else ""
        if not settings_path or not Sdf.Path.IsValidPathString(settings_path):
            continue
        settings = UsdRender.Settings(stage.GetPrimAtPath(settings_path))
        if settings:
            for target in settings.GetCameraRel().GetForwardedTargets():
                if stage.GetPrimAtPath(target).IsA(UsdGeom.Camera):
                    return target, f"the camera of the stage's render settings {settings.GetPath()}"
    for layer in stage.GetLayerStack(includeSessionLayers=False):
        bound = (layer.customLayerData.get("cameraSettings") or {}).get("boundCamera")
        if isinstance(bound, str) and Sdf.Path.IsValidPathString(bound) and Sdf.Path(bound).IsAbsolutePath():
            prim = stage.GetPrimAtPath(bound)
            if prim and prim.IsA(UsdGeom.Camera):
                return prim.GetPath(), "the camera Kit saved the stage looking through"
    return None


# ---------------------------------------------------------------- a camera of the stage


def stage_camera_view(stage, scene: Scene, path) -> CameraView:
    """The view through the camera at ``path`` at each frame of ``scene``."""
    prim = stage.GetPrimAtPath(str(path))
    camera = UsdGeom.Camera(prim)
    to_si = stage_to_si(scene.up_axis, scene.meters_per_unit)
    mpu = scene.meters_per_unit
    n = scene.frames
    worlds = np.empty((n, 4, 4))
    window = np.empty((n, 4))
    clip = np.empty((n, 2))
    ortho = None
    for f, t in enumerate(scene.times):
        gf = camera.GetCamera(code(t))
        _check_lens(gf, str(path), scene.source)
        frustum = gf.frustum
        worlds[f] = np.array(gf.transform) @ to_si
        lo, hi = frustum.window.GetMin(), frustum.window.GetMax()
        ortho = frustum.projectionType == Gf.Frustum.Orthographic
        window[f] = (lo[0], hi[0], lo[1], hi[1])
        clip[f] = frustum.nearFar.GetMin() * mpu, frustum.nearFar.GetMax() * mpu
        if ortho:
            window[f] *= mpu
    positions, wxyz, _ = decompose(worlds[:, None])
    eye = positions[:, 0]
    xyzw = np.concatenate([wxyz[:, 0, 1:], wxyz[:, 0, :1]], axis=-1)
    rotation = quat_to_matrix(xyzw)
    distance = _target_distance(prim, scene, eye[0], -rotation[0, :, 2], mpu)
    target = eye - distance * rotation[:, :, 2]
    if ortho and "orthographic" not in _WARNED:
        _WARNED.add("orthographic")
        log.warning("%s: an orthographic camera: the video shows it as authored, the page in perspective", path)
    return CameraView(eye, rotation, window, clip, target, f"through {path}", orthographic=bool(ortho))


def _check_lens(gf, path: str, source) -> None:
    if gf.projection == Gf.Camera.Perspective and not gf.focalLength > 0:
        raise UsdInputError(f"must be > 0 for a perspective camera, got {gf.focalLength}", file=source, prim=path,
                            attribute="focalLength")  # fmt: skip
    for name in ("horizontalAperture", "verticalAperture"):
        value = getattr(gf, name)
        if not (np.isfinite(value) and value > 0):
            raise UsdInputError(f"must be > 0, got {value}", file=source, prim=path, attribute=name)
    near, far = gf.clippingRange.GetMin(), gf.clippingRange.GetMax()
    if not (np.isfinite(near) and np.isfinite(far) and far > near and (near > 0 or gf.projection != gf.Perspective)):
        raise UsdInputError(f"must be (near, far) with 0 < near < far, got ({near}, {far})", file=source, prim=path,
                            attribute="clippingRange")  # fmt: skip


def _target_distance(prim, scene: Scene, eye, forward, mpu: float) -> float:
    """How far in front of the camera the page's orbit point is: Kit's ``omni:kit:centerOfInterest`` (a point
    in the camera's frame) where authored, else the first frame's bodies' centre seen along the camera's axis,
    else its ``focusDistance``, else 1 m."""
    coi = prim.GetAttribute("omni:kit:centerOfInterest")
    value = coi.Get() if coi and coi.HasAuthoredValue() else None
    if value is not None and -value[2] > 0:
        return float(-value[2]) * mpu
    lo, hi = bounds_at(scene, framed_parts(scene), 0)
    along = float(np.dot((lo + hi) / 2 - eye, forward))
    if np.all(np.isfinite(lo)) and along > 0:
        return along
    focus = UsdGeom.Camera(prim).GetFocusDistanceAttr().Get()
    return float(focus) * mpu if focus and focus > 0 else 1.0


# ---------------------------------------------------------------- the default view


def framed_parts(scene: Scene, follow: str | None = None) -> list:
    """The parts the default view frames: those at or under the prim ``follow``, else the drawn parts that
    move, else none where there are points to frame (``Points`` prims), else every drawn part."""
    drawn = scene.visible()
    if follow is not None:
        prefix = str(follow).rstrip("/")
        found = [
            i for i, p in enumerate(scene.parts)
            if p.path == prefix or p.path.startswith(prefix + "/") or p.path.startswith(prefix + "[")
        ]  # fmt: skip
        shown = [i for i in found if i in set(drawn)] or found
        if not shown:
            raise UsdInputError(f"--follow {follow}: no drawn gprim at or under this prim", file=scene.source)
        return shown
    moving = scene.moving()
    return [i for i in drawn if moving[i]] or ([] if scene.clouds else drawn)  # (clouds: the points are framed)


def part_bounds(scene: Scene, indices, frame: int) -> tuple:
    """(lower, upper), each (n, 3): the corners (m) of each of the parts ``indices`` at ``frame`` (infinite for
    a part without vertices)."""
    indices = np.asarray(indices, np.int64)
    lo, hi = np.full((len(indices), 3), np.inf), np.full((len(indices), 3), -np.inf)
    counts = np.array([len(vertices_at(scene, i, frame)) for i in indices], np.int64)
    has = np.flatnonzero(counts)
    if not len(has):
        return lo, hi
    vertices = np.concatenate([vertices_at(scene, indices[k], frame) for k in has]).astype(np.float64)
    owner = np.repeat(indices[has], counts[has])  # each vertex's part
    w, x, y, z = np.moveaxis(scene.wxyz[frame, owner].astype(np.float64), -1, 0)
    world = quat_rotate(np.stack([x, y, z, w], axis=-1), vertices) + scene.positions[frame, owner]
    starts = np.concatenate([[0], np.cumsum(counts[has])[:-1]])
    lo[has], hi[has] = np.minimum.reduceat(world, starts), np.maximum.reduceat(world, starts)
    return lo, hi


def bounds_at(scene: Scene, indices, frame: int) -> tuple:
    """(lower, upper) corners (m) of the parts ``indices`` together at ``frame`` (infinite when there are none)."""
    lo, hi = part_bounds(scene, list(indices), frame)
    return lo.min(axis=0, initial=np.inf), hi.max(axis=0, initial=-np.inf)


def default_view(scene: Scene, follow: str | None = None, fixed: bool = False) -> CameraView:
    """Framed on the bodies (or the body ``follow``) at the first frame, from a three-quarter angle above,
    following their centre (``fixed``: still)."""
    indices = framed_parts(scene, follow)
    lo, hi = bounds_at(scene, indices, 0)
    if follow is None and scene.clouds:  # and the points (grains)
        c_lo, c_hi = cloud_bounds(scene, 0)
        lo, hi = np.minimum(lo, c_lo), np.maximum(hi, c_hi)
    if not np.all(np.isfinite(lo)):
        lo = hi = np.zeros(3)
    center = (lo + hi) / 2
    radius = max(float(np.linalg.norm(hi - lo)) / 2, MIN_RADIUS)
    distance = MARGIN * radius / np.sin(FOVY / 2)
    back = np.array([np.sin(AZIMUTH) * np.cos(ELEVATION), -np.cos(AZIMUTH) * np.cos(ELEVATION), np.sin(ELEVATION)])
    right = np.cross((0.0, 0.0, 1.0), back)
    right /= np.linalg.norm(right)
    rotation = np.stack([right, np.cross(back, right), back], axis=1)
    track = np.zeros((scene.frames, 3)) if fixed else _track(scene, indices, follow is not None)
    target = center + track
    n = scene.frames
    top = np.tan(FOVY / 2)
    window = np.broadcast_to([-top * ASPECT, top * ASPECT, -top, top], (n, 4))
    clip = np.broadcast_to([0.05 * distance, 2000.0 * distance], (n, 2))
    if follow is not None:
        what = f"the default view, {'framed on' if fixed else 'following'} {follow}"
    else:
        whom = "the bodies" if len(indices) or not scene.clouds else "the points"
        what = "the default view" + ("" if fixed or not scene.animated else f", following {whom}")
    return CameraView(target + distance * back, np.broadcast_to(rotation, (n, 3, 3)), window, clip, target, what)


def _track(scene: Scene, indices, one_body: bool) -> np.ndarray:
    """(T, 3) how far the followed centre has moved from the first frame: the mean position of one body's
    parts (a deforming mesh's: its vertices' centre), or the median of the bodies' (one flung far away does not drag
    the view; where none moves, the median of the ``Points`` prims' points), smoothed over
    :data:`SMOOTHING` seconds either side by a quadratic Savitzky-Golay filter (exact for a body falling
    freely or moving steadily: the view neither leads nor lags it; contact chatter and kinks are smoothed),
    its window narrowing at the ends so that the first frame is exact."""
    if scene.frames < 2 or not (len(indices) or scene.clouds):
        return np.zeros((scene.frames, 3))
    if len(indices):
        p = scene.positions[:, indices].astype(np.float64)
        for k, i in enumerate(indices):  # a deforming part: the centre of its vertices (cloth falls in place)
            if i in scene.deforming and len(scene.deforming[i]) == scene.frames:
                w = scene.wxyz[:, i].astype(np.float64)
                p[:, k] += quat_rotate(np.concatenate([w[:, 1:], w[:, :1]], axis=1), scene.deforming[i].mean(axis=1))
    else:  # no body moves: the points' (grains') median
        p = np.concatenate([c.positions for c in scene.clouds], axis=1)
    centre = p.mean(axis=1) if one_body else np.median(p, axis=1).astype(np.float64)
    n = len(centre)
    half = min(int(round(SMOOTHING * scene.frame_rate())), (n - 1) // 2)
    smooth = centre.copy()
    if half > 0:
        inner = np.stack([np.convolve(centre[:, k], _savgol(half)[::-1], mode="valid") for k in range(3)], axis=1)
        smooth[half : n - half] = inner
        for f in [*range(1, half), *range(n - half, n - 1)]:
            h = min(f, n - 1 - f)
            smooth[f] = _savgol(h) @ centre[f - h : f + h + 1]
    return smooth - smooth[0]


def _savgol(h: int) -> np.ndarray:
    """The quadratic Savitzky-Golay smoothing weights of a window of 2 h + 1 samples."""
    k = np.arange(-h, h + 1, dtype=np.float64)
    return (3 * (3 * h * h + 3 * h - 1) - 15 * k * k) / ((2 * h - 1) * (2 * h + 1) * (2 * h + 3))
