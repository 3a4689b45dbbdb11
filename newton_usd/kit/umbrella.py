"""Registration with Kit's ``omni.physics`` umbrella (Kit 110 / Isaac Sim 6), when the app has it.

omni.physics lets several engines register a simulation; the active one is driven by the app's
stage-update node (omni.physics.stageupdate): attach on a stage, resume on Play, one ``on_update``
per app update, pause, reset on Stop, detach. Each slot of ``Simulation.stage_update_fns`` (and the
``simulation_fns`` that apply) forwards to :class:`~newton_usd.kit.playback.Playback`; every call is
guarded, so that nothing raised in newton_usd reaches the app.
"""

from __future__ import annotations

from .host import guarded, stage_from_id

SIMULATION_NAME = "newton_usd"


class UmbrellaRegistration:
    """``playback`` registered with omni.physics as the simulation ``"newton_usd"``.

    Args:
        physics_core: the ``omni.physics.core`` module.
        playback: the :class:`~newton_usd.kit.playback.Playback` to drive.
        current_stage: ``current_stage()`` -> the app's stage, when a stage id names none in the
            USD stage cache.
    """

    def __init__(self, physics_core, playback, current_stage):
        self._core = physics_core
        self._playback = playback
        self._current_stage = current_stage
        self._physics = physics_core.get_physics_interface()
        self.simulation = physics_core.Simulation()
        self._fill_slots()
        self.id = self._physics.register_simulation(self.simulation, SIMULATION_NAME)

    def _fill_slots(self) -> None:
        pb = self._playback
        slots = self.simulation.stage_update_fns
        slots.on_attach = guarded("on_attach", self._attach)
        slots.on_detach = guarded("on_detach", pb.detach)
        slots.on_update = guarded("on_update", self._update)
        slots.on_resume = guarded("on_resume", lambda _time: pb.play())
        slots.on_pause = guarded("on_pause", pb.pause)
        slots.on_reset = guarded("on_reset", pb.stop)
        slots.force_load_physics_from_usd = guarded("force_load_physics_from_usd", lambda: None)  # built lazily
        slots.release_physics_objects = guarded("release_physics_objects", pb.stop)
        slots.reset_simulation = guarded("reset_simulation", pb.stop)
        slots.start_simulation = guarded("start_simulation", lambda: None)
        fns = self.simulation.simulation_fns
        fns.initialize = guarded("initialize", lambda stage_id: self._attach(stage_id) or True)
        fns.close = guarded("close", pb.detach)
        fns.simulate = guarded("simulate", lambda elapsed, _time: self._step(elapsed))
        fns.fetch_results = guarded("fetch_results", lambda: None)  # simulate is synchronous
        fns.check_results = guarded("check_results", lambda: True)
        fns.get_simulation_step_count = guarded(
            "get_simulation_step_count", lambda: pb.sim.steps if pb.sim is not None else 0
        )

    def _attach(self, stage_id: int) -> None:
        self._playback.attach(stage_from_id(stage_id) or self._current_stage())

    def _update(self, _current_time: float, elapsed: float, enabled: bool) -> None:
        if enabled:
            self._playback.update(elapsed)

    def _step(self, elapsed: float) -> None:
        # simulate() steps whatever the timeline says (the app asked for a step explicitly).
        pb = self._playback
        if pb.state != "playing":
            pb.play()
        pb.update(elapsed)

    def unregister(self) -> None:
        """Take the simulation out of omni.physics (extension shutdown or disable)."""
        if self.id is not None and self.id != self._core.k_invalid_simulation_id:
            self._physics.unregister_simulation(self.id)
        self.id = None
