"""The Kit extension ``newton_usd.kit``: press Play in a Kit app and newton_usd moves the stage.

On startup the extension reads its settings and finds the app's stage (omni.usd, or the standalone
stages of a bare kernel). While ``omni.physics`` (Kit 110's physics umbrella) is enabled, the
extension is registered with it and the umbrella drives it. Otherwise the extension listens itself
to the app's update event, the timeline's Play/Pause/Stop and the stage's opened/closing events.
It switches between the two when omni.physics is enabled or disabled later. Everything it does to
the stage is done by :class:`~newton_usd.kit.playback.Playback`. On shutdown (and on disable) it
stops the run, puts the authored poses back and ends every subscription and registration it made.
"""

from __future__ import annotations

import logging

import omni.ext

from . import host
from .playback import Playback, PlaybackSettings

LOG = logging.getLogger("newton_usd.kit")

_INSTANCE: "NewtonUsdExtension | None" = None


def get_extension() -> "NewtonUsdExtension | None":
    """The running extension instance, or None when the extension is not enabled."""
    return _INSTANCE


class NewtonUsdExtension(omni.ext.IExt):
    """newton_usd inside Kit.

    Attributes:
        playback: the :class:`~newton_usd.kit.playback.Playback` of the app's stage.
        stages: the stage provider (:class:`~newton_usd.kit.host.OmniUsdStages` or
            :class:`~newton_usd.kit.host.StandaloneStages`).
        mode: "omni.physics" while registered with the physics umbrella, else "events".
        umbrella: the :class:`~newton_usd.kit.umbrella.UmbrellaRegistration`, or None.
        timeline: omni.timeline's interface in "events" mode, or None.
    """

    def on_startup(self, ext_id: str = "") -> None:
        global _INSTANCE
        self.values = host.read_settings()
        self.events = host.Events()  # for the extension's lifetime
        self._mode_events = host.Events()  # for the current mode
        self.playback = Playback(PlaybackSettings.from_mapping(self.values))
        self.stages = host.stage_provider(self.events)
        self.umbrella = None
        self.timeline = None
        self.mode = None
        host.observe_shutdown(self.events, self.playback.flush)
        if self.values.get("stage") and isinstance(self.stages, host.StandaloneStages):
            host.guarded("opening the stage setting", self.stages.open)(self.values["stage"])
        if self.values.get("use_omni_physics", True):
            host.observe_extension(self.events, "omni.physics", self._use_umbrella, self._leave_umbrella)
        if self.mode is None:
            self._use_events()
        _INSTANCE = self
        LOG.info("newton_usd.kit: started %s (%s)", ext_id, self.mode)

    # ------------------------------------------------------------------ modes
    def _use_events(self) -> None:
        self._end_mode()
        pb = self.playback
        host.observe_update(self._mode_events, pb.update)
        self.timeline = host.observe_timeline(self._mode_events, pb.play, pb.pause, pb.stop)
        self.stages.observe(self._mode_events, self._on_stage_opened, pb.detach)
        self.mode = "events"
        self._on_stage_opened()
        if self.timeline is not None and self.timeline.is_playing():
            pb.play()

    def _use_umbrella(self) -> None:
        physics_core = host.optional_module("omni.physics.core")
        if physics_core is None:
            return
        from .umbrella import UmbrellaRegistration  # noqa: PLC0415

        self._end_mode()
        activation = str(self.values.get("omni_physics_activation", "auto"))
        umbrella = UmbrellaRegistration(physics_core, self.playback, self.stages.current, activation)
        if umbrella.id is None:
            self._use_events()
            return
        self.umbrella = umbrella
        self.mode = "omni.physics"
        LOG.info("newton_usd.kit: registered with omni.physics (%s)", "active" if umbrella.active else "inactive")

    def _leave_umbrella(self) -> None:
        if self.mode == "omni.physics":
            self._use_events()

    def _end_mode(self) -> None:
        self.playback.stop()
        self._mode_events.clear()
        if self.umbrella is not None:
            host.guarded("unregistering from omni.physics", self.umbrella.unregister)()
            self.umbrella = None
        self.timeline = None
        self.mode = None

    def _on_stage_opened(self) -> None:
        self.playback.attach(self.stages.current())

    def on_shutdown(self) -> None:
        global _INSTANCE
        host.guarded("stopping the simulation", self.playback.detach)()
        self.events.clear()
        self._end_mode()
        if _INSTANCE is self:
            _INSTANCE = None
        LOG.info("newton_usd.kit: shut down")
