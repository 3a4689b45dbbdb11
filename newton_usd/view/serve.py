"""``usdsim view --serve``: the scene served live by viser on 127.0.0.1, with a frame slider, play/pause,
show/hide colliders, and a world picker when the recording holds several worlds (``--write-worlds all``).
"""

from __future__ import annotations

import errno
import socket
import sys
import threading
import time

from ..errors import UsdInputError
from .page import SceneNodes, set_camera, start_server
from .scene import Scene

HOST = "127.0.0.1"


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
    """

    def __init__(self, server, scene: Scene):
        self.server = server
        self.scene = scene
        set_camera(server, scene)
        self.nodes = SceneNodes(server, scene, colliders=True, show_colliders=False)
        gui = server.gui
        self.frame = gui.add_slider("frame", min=0, max=max(scene.frames - 1, 1), step=1, initial_value=0,
                                    disabled=scene.frames < 2)  # fmt: skip
        self.time = gui.add_text("time (s)", initial_value=self._time_text(0), disabled=True)
        self.playing = gui.add_checkbox("play", initial_value=scene.frames > 1, disabled=scene.frames < 2)
        self.colliders = gui.add_checkbox("show colliders", initial_value=False)
        worlds = scene.worlds
        self.world = (
            gui.add_dropdown("world", options=["all"] + [str(w) for w in worlds], initial_value="all")
            if len(worlds) > 1
            else None
        )
        self.frame.on_update(lambda _: self._goto(int(self.frame.value)))
        self.colliders.on_update(lambda _: self._show())
        if self.world is not None:
            self.world.on_update(lambda _: self._show())

    def _time_text(self, frame: int) -> str:
        t = self.scene.times[frame] if self.scene.animated else 0.0
        return f"{t / self.scene.fps:.3f} (frame {t:g})"

    def _goto(self, frame: int) -> None:
        self.nodes.pose(frame)
        self.time.value = self._time_text(frame)

    def _show(self) -> None:
        world = None if self.world is None or self.world.value == "all" else int(self.world.value)
        self.nodes.show(self.colliders.value, world)

    def play(self, stop: threading.Event) -> None:
        """Advance the frame at the recording's rate while ``play`` is ticked, until ``stop``."""
        while not stop.wait(1.0 / self.scene.fps):
            if self.playing.value and self.scene.frames > 1:
                self.frame.value = (int(self.frame.value) + 1) % self.scene.frames


def serve(scene: Scene, port: int) -> int:
    """Serve ``scene`` on 127.0.0.1:``port`` until Ctrl-C. Returns 0."""
    check_port(port)
    server = start_server(HOST, port)
    live = LiveScene(server, scene)
    print(f"usdsim view: serving {scene.source} at http://{HOST}:{server.get_port()} (Ctrl-C stops)", flush=True)
    stop = threading.Event()
    try:
        live.play(stop)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.stop()
        time.sleep(0.1)
    print("usdsim view: stopped", file=sys.stderr)
    return 0
