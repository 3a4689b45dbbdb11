"""A :class:`~newton_usd.view.scene.Scene` rendered to an MP4 on the CPU: MuJoCo's offscreen renderer
(EGL on Mesa's llvmpipe, or else OSMesa) and PyAV's H.264 encoder.

The render-only MuJoCo model has one mocap body per part, holding one mesh geom (the part's triangles,
in its displayColor and displayOpacity, colliding with nothing), a light sky (a gradient skybox) and, where
the stage has no ground, the reference floor (:mod:`~newton_usd.view.floor`: a plane textured with the grid);
each frame sets the mocap poses, runs ``mj_kinematics``, sets the OpenGL camera of the
:class:`~newton_usd.view.camera.CameraView` (its pose, and its frustum fitted to the video's shape: lens shift,
clipping range and an orthographic projection included), renders, and writes the clock (the shown frame's
time and time code) in the top-left corner. It renders a recording whichever engine made it. The GL context is
made here (not through ``mujoco.Renderer``, whose platform is fixed by ``MUJOCO_GL`` when mujoco is
first imported): ``MUJOCO_GL=egl`` or ``osmesa`` chooses, else EGL when it works, else OSMesa.

What deforms is drawn as it deforms: a mesh whose ``points`` are time-sampled (cloth, a soft volume) is a mesh of
its own, one vertex per point of the USD mesh (smooth shading) on each of its two sides, whose vertices and normals
are written into the model and uploaded to the GL context (``mjr_uploadMesh``) at each frame; the points of
``Points`` prims (grains) are spheres of their radius and colour added to the scene as user geoms each frame, at
most :data:`MAX_POINTS` of them (beyond that every k-th point is drawn, said once in a warning).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re

import numpy as np

from ..errors import NewtonUsdError, UsdInputError
from .browser import EGL_PACKAGES, OSMESA_PACKAGE
from .camera import CameraView, default_view
from .floor import Floor, floor, grid_texture
from .page import COLLIDER_OPACITY, atomic_output
from .scene import Scene

MAX_POINTS = 20000
"""The most points (spheres) drawn in one frame of a video: more are subsampled (every k-th)."""
SKY_TOP = (0.86, 0.87, 0.89)
SKY_HORIZON = (0.98, 0.98, 0.98)

NO_GL = (
    f"no offscreen OpenGL for MuJoCo's renderer: install Debian's {' '.join(EGL_PACKAGES)} (EGL) or "
    f"{OSMESA_PACKAGE} (OSMesa), e.g. apt-get install -y --no-install-recommends {' '.join(EGL_PACKAGES)}"
)


class NoGLError(NewtonUsdError):
    """No offscreen GL is available (the message names the Debian packages that provide one)."""


def parse_size(text: str) -> tuple:
    """``"640x480"`` -> (640, 480); even numbers (H.264's 4:2:0), 16 to 8192."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", str(text))
    if not m:
        raise UsdInputError(f"--size must be WIDTHxHEIGHT, e.g. 640x480, got {text!r}")
    w, h = int(m.group(1)), int(m.group(2))
    if not (16 <= w <= 8192 and 16 <= h <= 8192) or w % 2 or h % 2:
        raise UsdInputError(f"--size must be even numbers from 16 to 8192, got {w}x{h}")
    return w, h


def _platforms() -> list:
    chosen = os.environ.get("MUJOCO_GL", "").lower().strip()
    if chosen in ("egl", "osmesa"):
        return [chosen]
    return ["egl", "osmesa"]


def _context(width: int, height: int):
    """A current offscreen GL context of ``width`` x ``height`` (raises :class:`NoGLError`)."""
    errors = []
    for platform in _platforms():
        try:
            if platform == "egl":
                from mujoco.egl import GLContext  # noqa: PLC0415
            else:
                from mujoco.osmesa import GLContext  # noqa: PLC0415
            ctx = GLContext(width, height)
            ctx.make_current()
            return ctx
        except Exception as e:  # noqa: BLE001  (ImportError, a GL error, an EGL/OSMesa library missing)
            errors.append(f"{platform}: {e}")
    raise NoGLError(NO_GL)


def check_gl() -> None:
    """Raise :class:`NoGLError` unless an offscreen GL context can be made here."""
    ctx = _context(16, 16)
    with contextlib.suppress(Exception):
        ctx.free()


def render_model(scene: Scene, size: tuple, colliders: bool = False, grid: Floor | None = None):
    """The render-only MjModel of ``scene``'s drawn parts (and the floor ``grid``) and its part indices (one
    mocap body each)."""
    import mujoco  # noqa: PLC0415

    spec = mujoco.MjSpec()
    spec.compiler.degree = False
    vis = spec.visual
    vis.global_.offwidth, vis.global_.offheight = size
    vis.quality.shadowsize = 0
    vis.quality.offsamples = 0
    vis.headlight.ambient = [0.45, 0.45, 0.45]
    vis.headlight.diffuse = [0.55, 0.55, 0.55]
    vis.headlight.specular = [0.05, 0.05, 0.05]
    spec.stat.extent = 1.0  # (the frustum is set each frame: the model's near and far only size the sky)
    spec.add_texture(name="sky", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX, builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
                     rgb1=list(SKY_TOP), rgb2=list(SKY_HORIZON), width=64, height=64)  # fmt: skip
    if grid is not None:
        _add_floor(spec, grid)
    if scene.clouds:  # (spheres of fewer triangles: the grains are many and small)
        vis.quality.numslices, vis.quality.numstacks = 8, 5  # (0.23 s a frame for 10,000 at 640x480; 12x8: 0.52)
    indices = scene.visible(colliders)
    meshes = {}
    for n, i in enumerate(indices):
        part = scene.parts[i]
        key = ("deforming", i) if i in scene.deforming else part.geometry_key()
        if key not in meshes:
            meshes[key] = f"m{len(meshes)}"
            mesh = spec.add_mesh(name=meshes[key])
            vertices, faces = (part.vertices, part.faces) if i not in scene.deforming else _shape(scene, i, 0)[:2]
            mesh.uservert = vertices.reshape(-1).astype(np.float64)
            mesh.userface = faces.reshape(-1)
            mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL  # a flat mesh has no volume
        body = spec.worldbody.add_body(name=f"p{n}", mocap=True)
        alpha = part.opacity * (COLLIDER_OPACITY if part.collider else 1.0)
        body.add_geom(
            type=mujoco.mjtGeom.mjGEOM_MESH,
            meshname=meshes[key],
            rgba=[*part.color, alpha],
            contype=0,
            conaffinity=0,
            mass=0.0,
        )
    try:
        model = spec.compile()
    except ValueError as e:
        raise UsdInputError(f"MuJoCo's renderer cannot draw this scene's meshes: {e}", file=scene.source) from None
    return model, np.array(indices, np.int64)


BACK_OFFSET = 1e-4
"""How far behind its front a deforming mesh's back side is drawn, as a fraction of the mesh's size (MuJoCo's mesh
compiler merges vertices that coincide)."""


def _shape(scene: Scene, i: int, frame: int) -> tuple:
    """(vertices, faces, vertex normals) of deforming part ``i`` at ``frame``: two sides (cloth is seen from both, and
    MuJoCo's renderer culls back faces): one vertex per point of its USD mesh, then the same points a little behind
    them (:data:`BACK_OFFSET`) for the faces turned the other way, their normals turned too."""
    part = scene.parts[i]
    used, first, inverse = np.unique(part.source, return_index=True, return_inverse=True)
    front = scene.deforming[i][frame][first].astype(np.float64)
    faces = inverse.reshape(-1)[part.faces].astype(np.int32)
    size = float(np.ptp(front, axis=0).max()) if len(front) else 0.0
    normals = _vertex_normals(front, faces)
    back = front - (BACK_OFFSET * max(size, 1e-6)) * normals
    both = np.concatenate([faces, faces[:, ::-1] + len(front)])
    return np.concatenate([front, back]), both, np.concatenate([normals, -normals])


class _Shapes:
    """The deforming parts' meshes in the render model, set to a frame's vertices and uploaded to the GL context."""

    def __init__(self, model, scene: Scene, indices):
        self.model, self.scene = model, scene
        self.meshes = []  # (part index, mesh id)
        for n, i in enumerate(indices):
            if i not in scene.deforming:
                continue
            geom = model.body_geomadr[n + 1]
            mesh = model.geom_dataid[geom]
            vertices, faces, _ = _shape(scene, i, 0)
            if model.mesh_vertnum[mesh] != len(vertices) or model.mesh_facenum[mesh] != len(faces):
                raise UsdInputError(
                    "MuJoCo's renderer merged or dropped some of this deforming mesh's points or faces: "
                    f"{model.mesh_vertnum[mesh]} vertices of {len(vertices)}, {model.mesh_facenum[mesh]} faces of "
                    f"{len(faces)}",
                    prim=scene.parts[i].path,
                    attribute="points",
                )
            # The compiler centred and rotated the mesh (and set the geom's offset to undo it): ours is in the
            # part's frame, as given.
            model.geom_pos[geom], model.geom_quat[geom] = 0.0, (1.0, 0.0, 0.0, 0.0)
            self.meshes.append((i, mesh))

    def set(self, frame: int, con=None) -> None:
        import mujoco  # noqa: PLC0415

        m = self.model
        for i, mesh in self.meshes:
            vertices, faces, normals = _shape(self.scene, i, min(frame, len(self.scene.deforming[i]) - 1))
            v0, f0 = m.mesh_vertadr[mesh], m.mesh_faceadr[mesh]
            n0 = m.mesh_normaladr[mesh]
            m.mesh_vert[v0 : v0 + len(vertices)] = vertices
            m.mesh_face[f0 : f0 + len(faces)] = faces
            if m.mesh_normalnum[mesh] == len(vertices):
                m.mesh_normal[n0 : n0 + len(vertices)] = normals
                m.mesh_facenormal[f0 : f0 + len(faces)] = faces
            if con is not None:
                mujoco.mjr_uploadMesh(m, con, mesh)


def _vertex_normals(vertices, faces) -> np.ndarray:
    """(V, 3) each vertex's normal: the area-weighted mean of its faces'."""
    v = vertices.astype(np.float64)
    n = np.cross(v[faces[:, 1]] - v[faces[:, 0]], v[faces[:, 2]] - v[faces[:, 0]])
    out = np.zeros_like(v)
    for k in range(3):
        np.add.at(out, faces[:, k], n)
    length = np.linalg.norm(out, axis=1, keepdims=True)
    return np.where(length > 0, out / np.where(length > 0, length, 1.0), (0.0, 0.0, 1.0)).astype(np.float32)


def _point_geoms(scene: Scene) -> list:
    """Per cloud, the indices of its points drawn (every k-th where all clouds hold more than MAX_POINTS)."""
    total = sum(len(c.radii) for c in scene.clouds)
    step = int(np.ceil(total / MAX_POINTS)) if total > MAX_POINTS else 1
    if step > 1:
        logging.getLogger("newton_usd").warning(
            "usdsim video: %d points, more than the %d spheres drawn in a frame: one point in %d is drawn (%s)",
            total, MAX_POINTS, step, ", ".join(c.path for c in scene.clouds),
        )  # fmt: skip
    return [np.arange(0, len(c.radii), step) for c in scene.clouds]


def _add_points(mjv_scene, scene: Scene, drawn: list, frame: int) -> None:
    """Add the clouds' points at ``frame`` to ``mjv_scene`` as spheres (user geoms)."""
    import mujoco  # noqa: PLC0415

    eye = np.eye(3).reshape(-1)
    sphere = mujoco.mjtGeom.mjGEOM_SPHERE
    n = mjv_scene.ngeom
    for cloud, idx in zip(scene.clouds, drawn, strict=True):
        positions = cloud.positions[min(frame, len(cloud.positions) - 1), idx].astype(np.float64)
        radii = cloud.radii[idx].astype(np.float64)
        rgba = np.concatenate([cloud.colors[idx], np.ones((len(idx), 1))], axis=1).astype(np.float32)
        for k in range(len(idx)):
            if n >= mjv_scene.maxgeom:
                break
            r = radii[k]
            mujoco.mjv_initGeom(mjv_scene.geoms[n], sphere, np.array([r, r, r]), positions[k], eye, rgba[k])
            n += 1
    mjv_scene.ngeom = n


def _add_floor(spec, grid: Floor) -> None:
    """The floor: a plane in the world body, its texture one section of the grid repeated every section."""
    import mujoco  # noqa: PLC0415

    image = grid_texture()
    texture = spec.add_texture(name="grid", type=mujoco.mjtTexture.mjTEXTURE_2D, width=image.shape[1],
                               height=image.shape[0], nchannel=3)  # fmt: skip
    texture.data = image.tobytes()
    material = spec.add_material(name="grid", texrepeat=[2.0 / grid.section] * 2, texuniform=True, reflectance=0.0)
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "grid"
    spec.worldbody.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        size=[grid.half, grid.half, grid.section],
        pos=[grid.center[0], grid.center[1], grid.height],
        material="grid",
        rgba=[1.0, 1.0, 1.0, 1.0],
        contype=0,
        conaffinity=0,
    )


def video_frames(scene: Scene, fps: float | None) -> np.ndarray:
    """The scene frame shown at each video frame: one per recorded frame (``fps`` None), or the recording
    resampled to ``fps`` (the last recorded frame at or before each video frame's time)."""
    if fps is None or not scene.animated:
        return np.arange(scene.frames)
    seconds = scene.seconds()
    n = int(np.floor(seconds[-1] * fps + 1e-9)) + 1
    return np.searchsorted(seconds, np.arange(n) / fps + 1e-9, side="right") - 1


def render(scene: Scene, size=(640, 480), fps: float | None = None, colliders: bool = False,
           view: CameraView | None = None):  # fmt: skip
    """Yield the RGB frames (H, W, 3) uint8 of the recording, seen through ``view`` (default: the default
    view, :func:`~newton_usd.view.camera.default_view`)."""
    import mujoco  # noqa: PLC0415

    width, height = size
    view = view if view is not None else default_view(scene)
    ctx = _context(width, height)
    try:
        model, indices = render_model(scene, size, colliders, floor(scene))
        data = mujoco.MjData(model)
        con = mujoco.MjrContext(model, _font_scale(height))
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, con)
        shapes = _Shapes(model, scene, indices)
        drawn = _point_geoms(scene)
        points = sum(len(d) for d in drawn)
        mjv_scene = mujoco.MjvScene(model, maxgeom=max(1000, 2 * len(indices) + 10 + points))
        opt = mujoco.MjvOption()
        cam = mujoco.MjvCamera()
        viewport = mujoco.MjrRect(0, 0, width, height)
        rgb = np.empty((height, width, 3), np.uint8)
        geoms = model.body_geomadr[1:]  # part indices[n] is body n + 1, its one geom
        alpha = model.geom_rgba[geoms, 3].copy()
        seconds = scene.seconds()
        for f in video_frames(scene, fps):
            data.mocap_pos[:] = scene.positions[f, indices]
            data.mocap_quat[:] = scene.wxyz[f, indices]
            shown = scene.shown_at(f, indices)
            if shown is not None:  # an invisible part: transparent (MuJoCo does not draw a geom of alpha 0)
                model.geom_rgba[geoms, 3] = np.where(shown, alpha, 0.0)
            shapes.set(f, con)
            mujoco.mj_kinematics(model, data)
            model.vis.map.zfar = 0.5 * view.clip[f, 1]  # the sky's size: inside the far plane
            mujoco.mjv_updateScene(model, data, opt, None, cam, mujoco.mjtCatBit.mjCAT_ALL, mjv_scene)
            if points:
                _add_points(mjv_scene, scene, drawn, f)
            _set_camera(mjv_scene, view, f, width / height)
            mujoco.mjr_render(viewport, mjv_scene, con)
            mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL, mujoco.mjtGridPos.mjGRID_TOPLEFT, viewport,
                               _clock(scene, f, seconds, width), "", con)  # fmt: skip
            mujoco.mjr_readPixels(rgb, None, viewport, con)
            yield rgb[::-1]
        con.free()
    finally:
        with contextlib.suppress(Exception):
            ctx.free()


def _set_camera(mjv_scene, view: CameraView, frame: int, aspect: float) -> None:
    """Both eyes' OpenGL cameras of ``mjv_scene``: the view's pose at ``frame``, its window fitted to the
    picture's ``aspect`` and placed on the near plane (MuJoCo sets left and right from the aspect and the
    horizontal centre)."""
    near, far = view.clip[frame]
    left, right, bottom, top = view.window_for(frame, aspect)
    scale = 1.0 if view.orthographic else near
    for gl in mjv_scene.camera:
        gl.pos[:] = view.eye[frame]
        gl.forward[:] = view.forward(frame)
        gl.up[:] = view.up(frame)
        gl.frustum_center = (left + right) / 2 * scale
        gl.frustum_width = (right - left) / 2 * scale
        gl.frustum_bottom = bottom * scale
        gl.frustum_top = top * scale
        gl.frustum_near = near
        gl.frustum_far = far
        gl.orthographic = int(view.orthographic)


def _font_scale(height: int):
    import mujoco  # noqa: PLC0415

    scales = mujoco.mjtFontScale
    if height < 360:
        return scales.mjFONTSCALE_50
    return scales.mjFONTSCALE_100 if height < 900 else scales.mjFONTSCALE_150


def _clock(scene: Scene, frame: int, seconds, width: int) -> str:
    """The clock in the corner: the shown frame's time from the first frame and its time code (the time
    only in a picture too narrow for both)."""
    text = f"{seconds[frame]:.2f} s"
    if width < 260:
        return text
    if not scene.animated:
        return text + "   the authored pose"
    return text + f"   frame {float(scene.times[frame]):g} / {float(scene.times[-1]):g}"


def write_video(scene: Scene, path, size=(640, 480), fps: float | None = None, colliders: bool = False,
                view: CameraView | None = None) -> int:  # fmt: skip
    """Render ``scene`` through ``view`` (default: the default view) to the MP4 ``path`` (H.264; written to a
    temporary file and moved there, so that a failure leaves nothing). Returns the number of frames."""
    import av  # noqa: PLC0415

    rate = fps or scene.frame_rate()
    n = 0
    with atomic_output(path, ".mp4") as tmp, av.open(tmp, mode="w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=_rate(rate))
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        # veryfast: about 4 ms of CPU a frame at 640x480 here, the RGB to YUV conversion included; superfast
        # and ultrafast save 1 and 3 ms for files two and three times larger (see docs/viewing.md).
        stream.options = {"preset": "veryfast", "crf": "20"}
        for rgb in render(scene, size, fps, colliders, view):
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
            n += 1
        for packet in stream.encode():
            container.mux(packet)
    return n


def _rate(fps: float):
    from fractions import Fraction  # noqa: PLC0415

    return Fraction(fps).limit_denominator(1001)
