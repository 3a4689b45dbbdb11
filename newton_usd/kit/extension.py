"""The Kit extension ``newton_usd.kit``: press Play in a Kit app and newton_usd moves the stage.

On startup the extension reads its settings, finds the app's stage (omni.usd, or the standalone
stages of a bare kernel) and either registers with ``omni.physics`` (Kit 110's physics umbrella,
which then drives it) or, without omni.physics, listens itself to the app's update event, the
timeline's Play/Pause/Stop and the stage's opened/closing events. Everything it does to the stage
is done by :class:`~newton_usd.kit.playback.Playback`. On shutdown (and on disable) it stops the run,
puts the authored poses back and ends every subscription it made.
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
        mode: "omni.physics" when registered with the physics umbrella, else "events".
        timeline: omni.timeline's interface, or None.
    """

    def on_startup(self, ext_id: str = "") -> None:
        global _INSTANCE
        values = host.read_settings()
        self.events = host.Events()
        self.playback = Playback(PlaybackSettings.from_mapping(values))
        self.stages = host.stage_provider(self.events)
        self.umbrella = None
        self.timeline = None
        physics_core = host.optional_module("omni.physics.core") if values.get("use_omni_physics", True) else None
        if physics_core is not None:
            from .umbrella import UmbrellaRegistration  # noqa: PLC0415

            self.umbrella = UmbrellaRegistration(physics_core, self.playback, self.stages.current)
            self.mode = "omni.physics"
        else:
            pb = self.playback
            host.observe_update(self.events, pb.update)
            self.timeline = host.observe_timeline(self.events, pb.play, pb.pause, pb.stop)
            self.stages.observe(self.events, self._on_stage_opened, pb.detach)
            self.mode = "events"
        host.observe_shutdown(self.events, self.playback.flush)
        if values.get("stage") and isinstance(self.stages, host.StandaloneStages):
            host.guarded("opening the stage setting", self.stages.open)(values["stage"])
        self._on_stage_opened()
        if self.timeline is not None and self.timeline.is_playing():
            self.playback.play()
        _INSTANCE = self
        LOG.info("newton_usd.kit: started %s (%s)", ext_id, self.mode)

    def _on_stage_opened(self) -> None:
        self.playback.attach(self.stages.current())

    def on_shutdown(self) -> None:
        global _INSTANCE
        host.guarded("stopping the simulation", self.playback.detach)()
        self.events.clear()
        if self.umbrella is not None:
            host.guarded("unregistering from omni.physics", self.umbrella.unregister)()
            self.umbrella = None
        if _INSTANCE is self:
            _INSTANCE = None
        LOG.info("newton_usd.kit: shut down")
