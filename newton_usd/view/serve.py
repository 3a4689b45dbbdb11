"""``usdsim view --serve``: the scene served live by viser on 127.0.0.1, with a frame slider, play/pause,
show/hide colliders, and a world picker when the recording holds several worlds (``--write-worlds all``).
"""

from __future__ import annotations

import contextlib
import errno
import socket
import sys
import threading
import time

import numpy as np

from ..errors import UsdInputError
from .camera import CameraView, choose_view, default_view, primary_camera, stage_camera_view
from .deforming import grow, simulated_meshes
from .page import SceneNodes, set_camera, start_server, stop_server
from .poses import mover_of
from .scene import Scene, read_scene

HOST = "127.0.0.1"
DEFAULT_PORT = 8080


def check_port(port: int) -> None:
    """Raise :class:`UsdInputError` unless ``port`` can be listened on at 127.0.0.1 (viser would silently
    move to the next free port; the user asked for this one)."""
    if not 1 <= port <= 65535:
        raise UsdInputError(f"--port must be 1 to 65535, got {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((HOST, port))
        except OSError as e:
            why = "is in use" if e.errno == errno.EADDRINUSE else f"cannot be used ({e.strerror})"
            raise UsdInputError(f"port {port} {why} on {HOST}: choose another with --port") from None


class LiveScene:
    """A scene on a running viser server, with its controls.

    Args:
        server: A ``viser.ViserServer``.
        scene: The scene.
        live: A run being simulated (the frames grow; the default view is the first frame's, still, unless the
            caller sets :attr:`view` anew as they come: :class:`LiveRun` does).
        view: Where the camera is at each frame (default: the default view); where it moves, each
            browser's camera moves with it as the frame changes.
    """

    def __init__(self, server, scene: Scene, live: bool = False, view: CameraView | None = None):
        self.server = server
        self.scene = scene
        self.view = view if view is not None else default_view(scene, fixed=live)
        set_camera(server, scene, self.view)
        self.nodes = SceneNodes(server, scene, colliders=True, show_colliders=False, all_move=live)
        gui = server.gui
        self.status = gui.add_markdown("") if live else None
        self.frame = gui.add_slider("frame", min=0, max=max(scene.frames - 1, 1), step=1, initial_value=0)
        self.time = gui.add_text("time (s)", initial_value=self._time_text(0), disabled=True)
        self.playing = gui.add_checkbox("play", initial_value=scene.frames > 1 and not live)
        self.colliders = gui.add_checkbox("show colliders", initial_value=False)
        worlds = scene.worlds
        self.world = (
            gui.add_dropdown("world", options=["all"] + [str(w) for w in worlds], initial_value="all")
            if len(worlds) > 1
            else None
        )
        self.frame.on_update(lambda _: self._goto(int(self.frame.value)))
        # (a browser that connects later sees the frame shown from where the view is then, not the first frame's)
        server.on_client_connect(lambda client: self._aim(client, min(int(self.frame.value), self.scene.frames - 1)))
        self.colliders.on_update(lambda _: self._show())
        if self.world is not None:
            self.world.on_update(lambda _: self._show())

    def _time_text(self, frame: int) -> str:
        """The frame's time from the first frame (as the page shows it) and its time code."""
        t = float(self.scene.times[frame])
        t = 0.0 if np.isnan(t) else t
        return f"{float(self.scene.seconds()[frame]):.3f} (frame {t:g})"

    def _goto(self, frame: int) -> None:
        frame = min(frame, self.scene.frames - 1)
        self.nodes.pose(frame)
        self.time.value = self._time_text(frame)
        for client in self.server.get_clients().values():
            self._aim(client, frame)

    def _aim(self, client, frame: int) -> None:
        """``client``'s camera where the view is at ``frame``, where the view moves."""
        if frame < self.view.frames and self.view.moves():
            with contextlib.suppress(AssertionError, ValueError):  # a browser whose camera is not yet known
                camera = client.camera
                camera.position = tuple(self.view.eye[frame])
                camera.look_at = tuple(self.view.target[frame])

    def _show(self) -> None:
        world = None if self.world is None or self.world.value == "all" else int(self.world.value)
        self.nodes.show(self.colliders.value, world)

    def play(self, stop: threading.Event) -> None:
        """Advance the frame at the recording's rate while ``play`` is ticked, until ``stop``."""
        while not stop.wait(1.0 / self.scene.fps):
            if self.playing.value and self.scene.frames > 1:
                self.frame.value = (int(self.frame.value) + 1) % self.scene.frames


def serve(scene: Scene, port: int, view: CameraView | None = None) -> int:
    """Serve ``scene`` seen through ``view`` on 127.0.0.1:``port`` until Ctrl-C. Returns 0."""
    check_port(port)
    server = start_server(HOST, port)
    live = LiveScene(server, scene, view=view)
    print(f"usdsim view: serving {scene.source} at http://{HOST}:{server.get_port()} (Ctrl-C stops)", flush=True)
    stop = threading.Event()
    try:
        live.play(stop)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        stop_server(server)
    print("usdsim view: stopped", file=sys.stderr)
    return 0


class LiveRun:
    """``usdsim STAGE --view``: the run served while it simulates, each batch of frames shown once it is
    written onto the stage (``usdsim`` writes 32 frames at a time), with the run's progress.

    Args:
        stage: The simulation's stage (its output layer receives the frames).
        port: The port (None: 8080, or any free one when 8080 is taken).
        camera: Look through this Camera prim (None: the stage's primary camera, if it marks one).
        follow: Without a camera, the default view framed on this prim (None: on the bodies).

    Without a camera the default view follows the bodies (or the ``follow`` prim) as their frames arrive, framed
    at the first frame (the camera's pose recomputed with each batch); a camera's view is its pose at each frame
    shown: an animated camera, or one under a body the run moves, moves with it.
    """

    POLL_SECONDS = 0.5

    def __init__(self, stage, port: int | None = None, camera: str | None = None, follow: str | None = None):
        self.scene = read_scene(stage, frames=1)
        self.scene.shown = None  # (a visibility that varies in time is not followed live)
        self.scene.animated = True
        self.scene.times = self.scene.times[:1]
        for i in simulated_meshes(stage, self.scene):  # (cloth, soft volumes: drawn as they deform)
            self.scene.deforming.setdefault(i, self.scene.parts[i].vertices[None])
        if camera is None and follow is None and (primary := primary_camera(stage)) is not None:
            camera = str(primary[0])
        view = choose_view(stage, self.scene, camera=camera, follow=follow, fixed=True)
        self._follows = None if camera else (follow or "")  # (the default view: recomputed as the frames arrive)
        self._stage, self._camera = stage, camera
        if port is None:
            try:
                check_port(DEFAULT_PORT)
                port = DEFAULT_PORT
            except UsdInputError:
                port = 0
        self.server = start_server(HOST, port)
        self.view = LiveScene(self.server, self.scene, live=True, view=view)
        self._polled = 0.0
        self._shown = None  # the last time code shown
        self._start = stage.GetStartTimeCode() if stage.HasAuthoredTimeCodeRange() else 0.0
        url = f"http://{HOST}:{self.server.get_port()}"
        print(f"usdsim: watching the run at {url} (the page is written at the end)", file=sys.stderr, flush=True)

    def update(self, now: float, frame: int, frames: int, force: bool = False) -> None:
        """Show the frames written up to time code ``now`` (at most every :attr:`POLL_SECONDS`)."""
        if not force and time.monotonic() - self._polled < self.POLL_SECONDS:
            return
        self._polled = time.monotonic()
        if self.view.status is not None:
            self.view.status.content = f"simulating: frame {frame} of {frames}" if frame < frames else "done"
        last = self.scene.reader.last_written(now)
        if last is None or (self._shown is not None and last <= self._shown):
            return
        first = self._start if self._shown is None else self._shown + 1
        times = np.arange(first, last + 0.5)
        positions, wxyz = self.scene.reader.poses(self.scene.parts, times)
        deforming, clouds = self.scene.reader.shapes(self.scene.parts, times)
        s = self.scene
        if self._shown is None:  # the first frames replace the authored pose
            s.times, s.positions, s.wxyz = times, positions, wxyz
            s.deforming, s.clouds = grow(s.deforming, deforming, len(times), replace=True), clouds
        else:
            s.times = np.concatenate([s.times, times])
            s.positions = np.concatenate([s.positions, positions])
            s.wxyz = np.concatenate([s.wxyz, wxyz])
            s.deforming = grow(s.deforming, deforming, len(times), replace=False)
            for cloud, more in zip(s.clouds, clouds, strict=True):
                cloud.positions = np.concatenate([cloud.positions, more.positions])
        self._shown = float(last)
        if self._follows is not None:  # the default view following the frames shown so far
            self.view.view = default_view(s, follow=self._follows or None)
        elif mover_of(self._stage.GetPrimAtPath(self._camera)) is not None:  # a camera that moves: its poses so far
            self.view.view = stage_camera_view(self._stage, s, self._camera)
        self.view.frame.max = max(s.frames - 1, 1)
        if not self.view.playing.value:  # following the run: show its newest frame
            self.view.frame.value = s.frames - 1

    def close(self) -> None:
        stop_server(self.server)
