"""A :class:`~newton_usd.view.scene.Scene` drawn with viser: the nodes (:class:`SceneNodes`, shared by the
page and the live server) and the self-contained HTML page (:func:`write_page`).

Parts that share a geometry are one batched mesh node (one instance per part, each in its colour), so
a pile of 10,000 equal boxes is one node whose instance poses change each frame. A mesh that deforms (its
``points`` time-sampled: cloth, a soft volume) is a mesh node of its own whose vertices are sent anew each frame
(float32, viser's binary messages, compressed with the page), and each ``Points`` prim (grains) one point cloud of
round points of its median width, in each point's colour, whose positions are sent each frame. The page is viser's
scene serializer: the nodes, then each frame's poses after a sleep of one frame's duration; viser's
embedded player plays it (play/pause, a time slider, the time in seconds, the speed), and a small
overlay added here shows the frame number.
"""

from __future__ import annotations

import contextlib
import html
import json
import os

import numpy as np

from ..errors import UsdInputError
from .camera import CameraView, default_view
from .deforming import vertices_at
from .floor import CELL_RGB, FLOOR_RGB, SECTION_RGB, floor
from .scene import Scene

COLLIDER_OPACITY = 0.35
"""Opacity of colliders, drawn on request over the visuals."""


class SceneNodes:
    """The viser nodes of a scene: one batched mesh per shared geometry (visuals and colliders apart).

    Args:
        server: A ``viser.ViserServer``.
        scene: The scene to draw.
        colliders: Add the colliders too (translucent); they can be shown and hidden with :meth:`show`.
        show_colliders: Whether the colliders start visible.
        all_move: Update every node in :meth:`pose` (a live run: what moves is not known yet).
    """

    def __init__(
        self, server, scene: Scene, colliders: bool = False, show_colliders: bool = False, all_move: bool = False
    ):
        self.server = server
        self.scene = scene
        self.groups = []  # (handle, part indices, collider, moves, world)
        self.shapes = {}  # deforming part index -> its mesh handle
        self.clouds = []  # a point cloud handle per scene.clouds
        moving = np.ones(len(scene.parts), bool) if all_move else scene.moving()
        by_key = {}
        for i in scene.visible(colliders=colliders):
            part = scene.parts[i]
            if i in scene.deforming:
                self.shapes[i] = self._add_shape(i, show_colliders)
                continue
            by_key.setdefault((part.collider, part.world, part.geometry_key()), []).append(i)
        for n, ((collider, world, _), members) in enumerate(by_key.items()):
            first = scene.parts[members[0]]
            idx = np.array(members)
            colors = np.array([scene.parts[i].color for i in members], np.float64)
            opacity = np.array([scene.parts[i].opacity for i in members], np.float32)
            if collider:
                opacity = opacity * COLLIDER_OPACITY
            handle = server.scene.add_batched_meshes_simple(
                f"/{'colliders' if collider else 'visuals'}/g{n}",
                vertices=first.vertices,
                faces=first.faces,
                batched_wxyzs=scene.wxyz[0, idx],
                batched_positions=scene.positions[0, idx],
                batched_colors=(np.clip(colors, 0, 1) * 255).astype(np.uint8),
                batched_opacities=opacity if np.any(opacity < 1) else None,
                batched_scales=self._scales(0, idx),
                lod="off",
                cast_shadow=False,
                receive_shadow=False,
                visible=not collider or show_colliders,
            )
            self.groups.append((handle, idx, collider, bool(np.any(moving[idx])), world))
        for k, cloud in enumerate(scene.clouds):
            self.clouds.append(
                server.scene.add_point_cloud(
                    f"/points/c{k}",
                    points=cloud.positions[0],
                    colors=(np.clip(cloud.colors, 0, 1) * 255).astype(np.uint8),
                    # (viser's point of size s is 2 s across on screen: its scale is s over tan(fov / 2), not
                    # over the frustum's height 2 tan(fov / 2): a point of the median radius is its width across)
                    point_size=float(np.median(cloud.radii)),
                    point_shape="circle",
                    precision="float32",
                )
            )

    def _add_shape(self, i: int, show_colliders: bool):
        """A deforming part's own mesh node (its vertices are set at each frame by :meth:`pose`)."""
        part = self.scene.parts[i]
        opacity = part.opacity * (COLLIDER_OPACITY if part.collider else 1.0)
        return self.server.scene.add_mesh_simple(
            f"/{'colliders' if part.collider else 'visuals'}/d{i}",
            vertices=vertices_at(self.scene, i, 0),
            faces=part.faces,
            color=tuple(int(round(255 * float(np.clip(c, 0, 1)))) for c in part.color),
            opacity=opacity if opacity < 1 else None,
            side="double",  # (cloth is seen from both sides)
            cast_shadow=False,
            receive_shadow=False,
            position=self.scene.positions[0, i],
            wxyz=self.scene.wxyz[0, i],
            visible=not part.collider or show_colliders,
        )

    def _scales(self, frame: int, idx):
        """Each instance's scale at ``frame``: 0 where the part is invisible then (None: all visible)."""
        shown = self.scene.shown_at(frame, idx)
        return None if shown is None or shown.all() else shown.astype(np.float32)

    def pose(self, frame: int, previous: int | None = None) -> None:
        """Set every moving node to the poses of ``frame`` (and the visibility of its parts, where it
        changed since frame ``previous``)."""
        with self.server.atomic():
            for handle, idx, _, moves, _ in self.groups:
                if moves:
                    handle.batched_positions = self.scene.positions[frame, idx]
                    handle.batched_wxyzs = self.scene.wxyz[frame, idx]
                shown = self.scene.shown_at(frame, idx)
                if shown is not None and not (
                    previous is not None and np.array_equal(shown, self.scene.shown_at(previous, idx))
                ):
                    handle.batched_scales = shown.astype(np.float32)
            last = self.scene.frames - 1
            for i, handle in self.shapes.items():
                vertices = vertices_at(self.scene, i, frame)
                if previous is None or not np.array_equal(vertices, vertices_at(self.scene, i, previous)):
                    handle.vertices = vertices  # (a cloth at rest sends nothing)
                handle.position = self.scene.positions[min(frame, last), i]
                handle.wxyz = self.scene.wxyz[min(frame, last), i]
                shown = self.scene.shown_at(frame, [i])
                if shown is not None:  # (scaled to nothing where invisible, as the batched parts)
                    handle.scale = 1.0 if shown[0] else 0.0
            for cloud, handle in zip(self.scene.clouds, self.clouds, strict=True):
                if cloud.moves:
                    handle.points = cloud.positions[min(frame, len(cloud.positions) - 1)]

    def show(self, colliders: bool, world: int | None = None) -> None:
        """Show the colliders or not, and one world only (None: every world)."""
        for handle, _, collider, _, w in self.groups:
            handle.visible = (colliders or not collider) and (world is None or w == world)
        for i, handle in self.shapes.items():
            part = self.scene.parts[i]
            handle.visible = (colliders or not part.collider) and (world is None or part.world == world)
        for cloud, handle in zip(self.scene.clouds, self.clouds, strict=True):
            handle.visible = world is None or cloud.world == world


def set_camera(server, scene: Scene, view: CameraView | None = None) -> None:
    """Z up, plain lights, the reference floor where the stage has no ground
    (:func:`~newton_usd.view.floor.floor`), and the initial camera: ``view``'s at the first frame (default: the
    default view)."""
    server.scene.set_up_direction("+z")
    # Plain lights, no environment map: displayColor is seen as authored (the map's reflections wash it out).
    server.scene.configure_environment_map(hdri=None)
    server.scene.configure_default_lights(enabled=True, cast_shadow=False)
    server.scene.add_light_ambient("/lights/ambient", intensity=0.6)  # no face left black
    grid = floor(scene)
    if grid is not None:
        server.scene.add_grid(
            "/floor",
            width=2 * grid.half,
            height=2 * grid.half,
            plane="xy",
            cell_size=grid.cell,
            section_size=grid.section,
            cell_color=_rgb255(CELL_RGB),
            section_color=_rgb255(SECTION_RGB),
            plane_color=_rgb255(FLOOR_RGB),
            plane_opacity=1.0,
            fade_distance=min(grid.half, 40 * grid.section),
            shadow_opacity=0.0,
            position=(grid.center[0], grid.center[1], grid.height),
        )
    view = view if view is not None else default_view(scene)
    server.initial_camera.up = tuple(float(c) for c in _up(view, 0))
    server.initial_camera.look_at = tuple(float(c) for c in view.target[0])
    server.initial_camera.position = tuple(float(c) for c in view.eye[0])
    server.initial_camera.fov = view.fovy(0)
    server.initial_camera.near = float(view.clip[0, 0])
    server.initial_camera.far = float(view.clip[0, 1])


def _rgb255(rgb) -> tuple:
    return tuple(int(round(255 * c)) for c in rgb)


def _up(view: CameraView, frame: int) -> np.ndarray:
    """The page camera's up: the world's (+Z), unless the camera is rolled (its right leaves the horizontal)."""
    if abs(view.rotation[frame, 2, 0]) > 1e-3:
        return view.up(frame)
    return np.array([0.0, 0.0, 1.0])


def move_camera(server, view: CameraView, frame: int, previous: int | None = None) -> None:
    """Move the page's camera to ``view``'s at ``frame`` (recorded by the page's serializer, so that the player
    moves it at that frame's time), where it differs from ``previous``'s."""
    from viser import _messages  # noqa: PLC0415

    def changed(a, b) -> bool:
        return previous is None or not np.allclose(a, b, rtol=1e-7, atol=1e-9)

    send = server._websock_server.queue_message  # (viser's own broadcast: what its initial_camera uses)
    p = previous
    if changed(_up(view, frame), _up(view, p) if p is not None else None):
        send(_messages.SetCameraUpDirectionMessage(tuple(float(c) for c in _up(view, frame))))
    if changed(view.fovy(frame), view.fovy(p) if p is not None else None):
        send(_messages.SetCameraFovMessage(view.fovy(frame)))
    if changed(view.eye[frame], view.eye[p] if p is not None else None) or changed(
        view.target[frame], view.target[p] if p is not None else None
    ):
        send(_messages.SetCameraPositionMessage(tuple(float(c) for c in view.eye[frame])))
        send(_messages.SetCameraLookAtMessage(tuple(float(c) for c in view.target[frame])))


def start_server(host: str = "127.0.0.1", port: int = 0):
    """A quiet viser server (port 0: any free port)."""
    import viser  # noqa: PLC0415  (0.3-0.5 s to import: only when a page is drawn)

    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        return viser.ViserServer(host=host, port=port, verbose=False)


def stop_server(server) -> None:
    """Stop a viser server quietly (it prints "Server stopped" from its own thread while stopping)."""
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        server.stop()


def check_writable(path) -> None:
    """Raise :class:`UsdInputError` unless ``path`` can be written (its directory exists and is writable,
    and it is not a directory)."""
    path = os.path.abspath(str(path))
    directory = os.path.dirname(path)
    if os.path.isdir(path):
        raise UsdInputError("cannot write the page: it is a directory", file=path)
    if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        raise UsdInputError(f"cannot write: {directory} is not a writable directory", file=path)


def page_html(scene: Scene, colliders: bool = False, view: CameraView | None = None) -> str:
    """The self-contained HTML page playing ``scene``, seen through ``view`` (default: the default view):
    its camera at the first frame is the page's initial camera, and where it moves, the player moves the
    page's camera with it at each frame."""
    view = view if view is not None else default_view(scene)
    server = start_server()
    try:
        set_camera(server, scene, view)
        nodes = SceneNodes(server, scene, colliders=colliders, show_colliders=colliders)
        serializer = server.get_scene_serializer()
        moves = view.moves()
        if moves:  # (also when the player loops back to the first frame)
            move_camera(server, view, 0)
        seconds = scene.seconds()
        for f in range(1, scene.frames):
            serializer.insert_sleep(float(seconds[f] - seconds[f - 1]))
            with server.atomic():
                nodes.pose(f, previous=f - 1)
                if moves:
                    move_camera(server, view, f, previous=f - 1)
        if scene.frames > 1:
            serializer.insert_sleep(1.0 / scene.frame_rate())  # the last frame is shown for a frame's duration
        with _zstd_level(ZSTD_LEVEL):
            text = serializer.as_html()
    finally:
        stop_server(server)
    return _with_overlay(text, scene)


ZSTD_LEVEL = 3
"""The page's compression level: viser uses 12, which takes 7 s for 1,000 bodies x 600 frames on 2 cores
against 0.5 s at 3, for a page about 10% larger (see docs/viewing.md)."""


@contextlib.contextmanager
def _zstd_level(level: int):
    """viser's serializer with zstd at ``level`` (viser fixes 12): its module's ``zstandard`` swapped for
    one whose compressor takes our level, for the duration of one ``as_html``."""
    from viser.infra import _infra  # noqa: PLC0415

    real = _infra.zstandard

    class _Zstd:
        def __getattr__(self, name):
            return getattr(real, name)

        @staticmethod
        def ZstdCompressor(level_=None, **kw):  # noqa: N802  (zstandard's name)
            kw.pop("level", None)
            return real.ZstdCompressor(level=level, **kw)

    _infra.zstandard = _Zstd()
    try:
        yield
    finally:
        _infra.zstandard = real


def write_page(scene: Scene, path, colliders: bool = False, view: CameraView | None = None) -> int:
    """Write the page of ``scene`` seen through ``view`` to ``path`` (atomically: a failure leaves nothing
    there). Returns its size in bytes."""
    check_writable(path)
    text = page_html(scene, colliders=colliders, view=view)
    with atomic_output(path, ".html") as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    return os.path.getsize(path)


@contextlib.contextmanager
def atomic_output(path, suffix: str):
    """A temporary file beside ``path`` to write, moved to ``path`` when the block ends without an
    exception, and removed when it raises (nothing half-written is left)."""
    folder, name = os.path.split(os.path.abspath(str(path)))
    # (a name of this process's beside it, as the project's other atomic writes: the writer creates the file, so
    # it gets the umask's mode, not mkstemp's 0600, and can be copied and served like any file)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp{suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_OVERLAY = """<script>
(function () {
  var info = %s;
  var box = null, shown = null;
  function update() {
    if (!box) {
      box = document.createElement("div");
      box.id = "usdsim-frame";
      box.style.cssText = "position:fixed;top:8px;left:8px;z-index:1000;padding:2px 8px;border-radius:4px;" +
        "background:rgba(255,255,255,0.85);font:13px monospace;color:#222;pointer-events:none";
      document.body.appendChild(box);
    }
    // The player's clock (seconds from the first recorded frame: the time slider's value); it shows a
    // frame from that frame's time until the next one's.
    var t = 0;
    var slider = document.querySelector("[role=slider]");
    if (slider) t = parseFloat(slider.getAttribute("aria-valuenow")) || 0;
    var frame = 0;  // the last recorded frame at or before t
    while (frame + 1 < info.frames && info.seconds[frame + 1] <= t + 1e-6) frame++;
    if (frame !== shown) {
      shown = frame;
      box.textContent = info.title + "  frame " + info.codes[frame] + (info.frames > 1 ? " / " + info.end : "") +
        "  " + info.seconds[frame].toFixed(2) + " s" +
        (info.frames > 1 ? "" : "  (no time samples: the authored pose)");
      box.dataset.frame = String(frame);
      box.dataset.seconds = String(info.seconds[frame]);
    }
    window.requestAnimationFrame(update);  // every painted frame: never behind the picture
  }
  if (document.readyState === "loading") window.addEventListener("DOMContentLoaded", update);
  else update();
})();
</script>"""


def _with_overlay(text: str, scene: Scene) -> str:
    start = float(scene.times[0]) if scene.animated else 0.0
    info = {
        "title": html.escape(os.path.basename(scene.source)),
        "frames": scene.frames,
        "end": float(scene.times[-1]) if scene.animated else start,
        "seconds": [round(float(x), 6) for x in scene.seconds()],
        "codes": [round(float(x), 6) for x in scene.times] if scene.animated else [0.0],
    }
    title = f"<title>{html.escape(os.path.basename(scene.source))} - usdsim view</title>"
    script = _OVERLAY % json.dumps(info)
    end = text.rindex("</body>")
    text = text[:end] + script + text[end:]
    if "<title>" in text:
        s, e = text.index("<title>"), text.index("</title>") + len("</title>")
        text = text[:s] + title + text[e:]
    return text
