"""Registration with Kit's ``omni.physics`` umbrella (Kit 110 / Isaac Sim 6), when the app has it.

omni.physics lets several engines register a simulation; the active one is driven by the app's
stage-update node (omni.physics.stageupdate): attach on a stage, resume on Play, one ``on_update``
per app update, pause, reset on Stop, detach. Each slot of ``Simulation.stage_update_fns`` (and the
``simulation_fns`` that apply) forwards to :class:`~newton_usd.kit.playback.Playback`; every call is
guarded, so that nothing raised in newton_usd reaches the app.
"""

from __future__ import annotations

import logging

from .host import guarded, stage_from_id, stage_id

LOG = logging.getLogger("newton_usd.kit")

SIMULATION_NAME = "newton_usd"
ACTIVATIONS = ("auto", "exclusive")


class UmbrellaRegistration:
    """``playback`` registered with omni.physics as the simulation ``"newton_usd"``.

    Args:
        physics_core: the ``omni.physics.core`` module.
        playback: the :class:`~newton_usd.kit.playback.Playback` to drive.
        current_stage: ``current_stage()`` -> the app's stage, when a stage id names none in the
            USD stage cache.
        activation: "auto": stay active unless another engine already is (then newton_usd is
            registered but inactive, and the app's physics menu activates it); "exclusive":
            deactivate the other engines. The umbrella drives every active engine, so two active
            engines would both simulate the stage.

    Attributes:
        id: the SimulationId, or None when registration failed.
        active: whether newton_usd's simulation is active after registration.
    """

    def __init__(self, physics_core, playback, current_stage, activation: str = "auto"):
        self._core = physics_core
        self._playback = playback
        self._current_stage = current_stage
        self._physics = physics_core.get_physics_interface()
        self.simulation = physics_core.Simulation()
        self._fill_slots()
        others = [i for i in self._physics.get_simulation_ids() if self._physics.is_simulation_active(i)]
        sid = self._physics.register_simulation(self.simulation, SIMULATION_NAME)
        self.id = None if sid == physics_core.k_invalid_simulation_id else sid
        self.active = False
        if self.id is None:
            LOG.error("newton_usd.kit: omni.physics refused to register the simulation %r", SIMULATION_NAME)
            return
        names = ", ".join(repr(self._physics.get_simulation_name(i)) for i in others)
        if others and activation == "exclusive":
            for other in others:
                self._physics.deactivate_simulation(other)
            LOG.info("newton_usd.kit: deactivated the other physics engines (%s)", names)
        elif others:
            self._physics.deactivate_simulation(self.id)
            LOG.warning(
                "newton_usd.kit: another physics engine is active (%s); newton_usd is registered but inactive:"
                " activate it in the app's physics menu, or set /exts/newton_usd.kit/omni_physics_activation"
                ' = "exclusive"',
                names,
            )
        self.active = self._physics.is_simulation_active(self.id)

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
        # Slots that return a value return one of their type on a failure too (see guarded).
        fns.initialize = guarded("initialize", lambda sid: self._attach(sid) or True, default=False)
        fns.close = guarded("close", pb.detach)
        fns.get_attached_stage = guarded("get_attached_stage", lambda: stage_id(pb.stage), default=0)
        fns.simulate = guarded("simulate", lambda elapsed, _time: pb.advance(elapsed))
        fns.fetch_results = guarded("fetch_results", lambda: None)  # simulate is synchronous
        fns.check_results = guarded("check_results", lambda: True, default=True)
        fns.get_simulation_step_count = guarded("get_simulation_step_count", self._steps, default=0)
        fns.get_simulation_timestamp = guarded("get_simulation_timestamp", self._steps, default=0)

    def _steps(self) -> int:
        sim = self._playback.sim
        return int(sim.steps) if sim is not None else 0

    def _attach(self, stage_id: int) -> None:
        self._playback.attach(stage_from_id(stage_id) or self._current_stage())

    def _update(self, _current_time: float, elapsed: float, enabled: bool) -> None:
        if enabled:
            self._playback.update(elapsed)

    def unregister(self) -> None:
        """Take the simulation out of omni.physics (extension shutdown or disable)."""
        if self.id is not None:
            self._physics.unregister_simulation(self.id)
        self.id = None
