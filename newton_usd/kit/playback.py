"""Playback: what Play, Pause and Stop do to a stage, independent of the app that hosts it.

The Kit extension (:mod:`newton_usd.kit.extension`) forwards the app's events here: a stage opened
or closed, the timeline played, paused or stopped, and one call of :meth:`Playback.update` per app
update. Nothing here imports Kit, so the behaviour is tested in plain Python.

- The :class:`~newton_usd.sim.Simulation` is built lazily, on the first update after Play, from the
  stage as it is then (edits made while stopped are picked up by the next Play).
- Poses go into the simulation's output layer under the stage's session layer: the user's layers
  are never written by the simulation. Stop returns the stage to its authored poses and saves the
  recording, if one was asked for (``record_path``).
- What the user edits while it plays (a body dragged, a mass, a gain, a drive target) reaches the
  running simulation at the next update (:meth:`~newton_usd.sim.Simulation.apply_edits`: in place, no
  import); Stop puts the authored values back: the layer that was the edit target when the run
  started gets back the opinions it had then at every path edited (``restore_edits``).
- Deformables (cloth, soft volumes) and grains are written as every run writes them: their prims' ``points`` and
  ``velocities`` each frame (:class:`~newton_usd.sync.points_sync.PointsSync`), the authored ones back on Stop.
- A stage with nothing to simulate, or whose scene names another solver, is left alone with one log
  line. A failure inside a step stops the simulation and logs the error with its prim; no exception
  ever reaches the app.
"""

from __future__ import annotations

import dataclasses
import logging
import math

from pxr import Sdf, Usd, UsdPhysics

from ..errors import NewtonUsdError, SimulationError
from ..sim import Simulation, default_output
from ..solvers import SOLVERS
from ..sync.live_edits import put_back

LOG = logging.getLogger("newton_usd.kit")

SETTINGS_ROOT = "/exts/newton_usd.kit"
"""Where the settings live in carb.settings (the ``[settings]`` of the extension's extension.toml)."""
SOLVER_ATTRIBUTE = "newton:usd:solver"
"""The PhysicsScene attribute that names the solver of a stage (NewtonUsdSceneAPI)."""


@dataclasses.dataclass
class PlaybackSettings:
    """The extension's settings (``/exts/newton_usd.kit/<name>`` in carb.settings).

    Attributes:
        solver: "auto" (the stage's ``newton:usd:solver``, else mujoco) or a solver name.
        device: Warp device ("" for Warp's default).
        backend: MuJoCo backend ("auto", "cpu", "warp"; "" for the stage's).
        substeps: physics steps per frame (0: the stage's time step, else automatic).
        stepping: "fixed": one frame of simulated time per app update while playing (Kit's fixed
            time stepping); "realtime": the update's elapsed seconds, in whole frames.
        max_frames_per_update: with "realtime", frames stepped in one update at most (the rest is
            dropped so that a slow step cannot snowball).
        write_back: "live": each frame overwrites the poses in the output layer (what the viewer
            shows); "record": one time sample per frame, saved on Stop and at app shutdown.
        record_path: where "record" saves (default: the stage's name with ``.sim.usda``, next to
            it; a stage with no file saves nothing).
        joint_states: also write joint positions and velocities onto the joint prims.
        restore_edits: Stop puts back the edits made while the run went on (in the layer that was the
            edit target when it started: its opinions at every path edited, as they were), as the
            PhysX runtime resets a stage on Stop; False keeps them.
    """

    solver: str = "auto"
    device: str = ""
    backend: str = ""
    substeps: int = 0
    stepping: str = "fixed"
    max_frames_per_update: int = 4
    write_back: str = "live"
    record_path: str = ""
    joint_states: bool = False
    restore_edits: bool = True

    @classmethod
    def from_mapping(cls, values) -> "PlaybackSettings":
        """Settings from a mapping (carb.settings' dictionary); unknown keys ignored, types coerced."""
        out = cls()
        for field in dataclasses.fields(cls):
            if values is not None and values.get(field.name) is not None:
                default = getattr(out, field.name)
                setattr(out, field.name, type(default)(values[field.name]))
        for name, allowed in (("stepping", ("fixed", "realtime")), ("write_back", ("live", "record"))):
            if getattr(out, name) not in allowed:
                LOG.warning(
                    "newton_usd.kit: setting %s/%s = %r is not one of %s; using %r",
                    SETTINGS_ROOT, name, getattr(out, name), ", ".join(allowed), allowed[0],
                )  # fmt: skip
                setattr(out, name, allowed[0])
        return out

    def recording_path(self, stage: Usd.Stage) -> str | None:
        """Where a "record" run of ``stage`` is saved, or None (live write-back, or no file to go by)."""
        if self.write_back != "record":
            return None
        if self.record_path:
            return self.record_path
        real = stage.GetRootLayer().realPath
        return default_output(real) if real else None


def other_solver(stage: Usd.Stage) -> tuple[str, str] | None:
    """``(scene path, solver)`` when a PhysicsScene of ``stage`` names a solver newton_usd lacks."""
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Scene):
            attr = prim.GetAttribute(SOLVER_ATTRIBUTE)
            if attr and attr.HasAuthoredValue():
                name = str(attr.Get())
                if name not in SOLVERS:
                    return str(prim.GetPath()), name
    return None


class Playback:
    """Simulation of the host's current stage, driven by play/pause/stop and app updates.

    Args:
        settings: a :class:`PlaybackSettings`.
        open_simulation: the factory, ``open_simulation(stage, settings)`` -> Simulation (tests
            replace it; the default opens a :class:`newton_usd.Simulation`).

    Attributes:
        stage: the attached stage, or None.
        sim: the running Simulation, or None (built on the first update after Play).
        state: "stopped", "playing" or "paused".
        left_alone: why the attached stage is not simulated (one line), or None.
        last_error: the message of the failure that stopped the last run, or None.
    """

    def __init__(self, settings: PlaybackSettings | None = None, open_simulation=None):
        self.settings = settings or PlaybackSettings()
        self._open_simulation = open_simulation or _open_simulation
        self.stage: Usd.Stage | None = None
        self.sim = None
        self.state = "stopped"
        self.left_alone: str | None = None
        self.last_error: str | None = None
        self._pending_seconds = 0.0
        self._dropped_logged = False
        self._saved = None  # (sim, frame) of the last recording saved
        self._authored = None  # (the edit target layer, a copy of it) as the run started (see restore_edits)

    # ------------------------------------------------------------------ stage
    def attach(self, stage: Usd.Stage | None) -> None:
        """A stage was opened (or is current at startup): stop what ran on the last one."""
        if stage is self.stage:
            return
        self.detach()
        self.stage = stage

    def detach(self) -> None:
        """The stage is closing: stop (authored poses back, recording saved) and forget it."""
        self.stop()
        self.stage = None
        self.left_alone = None

    # ------------------------------------------------------------------ timeline
    def play(self) -> None:
        """Start or resume; the simulation is built at the next update."""
        if self.stage is None:
            LOG.info("newton_usd.kit: Play with no stage open; nothing to simulate")
            return
        self.state = "playing"

    def pause(self) -> None:
        """Hold the simulation where it is; Play resumes it."""
        if self.state == "playing":
            self.state = "paused"

    def stop(self) -> None:
        """End the run: save the recording (if asked), put the authored poses back, drop the model."""
        self.state = "stopped"
        self._pending_seconds = 0.0
        sim, self.sim = self.sim, None
        if sim is None:
            return
        self._flush(sim)
        edited = set(sim.watcher.seen) if getattr(sim, "watcher", None) is not None else set()
        try:
            sim.reset()
            sim.close()
        except Exception:  # noqa: BLE001 (never take the app down)
            LOG.exception("newton_usd.kit: restoring the authored poses failed")
        authored, self._authored = self._authored, None
        if authored is not None and edited:
            try:
                n = put_back(*authored, edited)
                if n:
                    LOG.info("newton_usd.kit: Stop put back %d authored value(s) edited while playing", n)
            except Exception:  # noqa: BLE001 (never take the app down)
                LOG.exception("newton_usd.kit: putting back the authored values failed")

    def flush(self) -> None:
        """Save the recording so far (the app is shutting down); the run goes on."""
        if self.sim is not None:
            self._flush(self.sim)

    # ------------------------------------------------------------------ stepping
    def update(self, elapsed_seconds: float) -> int:
        """One app update: step as many frames as the settings say; returns the frames stepped."""
        if self.state != "playing":
            return 0
        return self._step(elapsed_seconds, self.settings.stepping == "realtime")

    def advance(self, seconds: float) -> int:
        """Simulate ``seconds`` (in whole frames, the remainder carried) whether or not playing.

        For hosts that ask for a step explicitly (omni.physics' ``simulate``); returns the frames stepped.
        """
        return self._step(seconds, realtime=True)

    def _step(self, elapsed_seconds: float, realtime: bool) -> int:
        if self.stage is None or (self.sim is None and not self._build()):
            return 0
        frames = self._frames_due(elapsed_seconds) if realtime else 1
        done = 0
        try:
            for _ in range(frames):
                self.sim.step_frame()
                done += 1
        except SimulationError as e:
            where = f" ({e.label})" if e.label else ""
            self._fail(f"newton_usd.kit: simulation stopped at frame {e.frame}{where}: {e.reason}")
        except Exception as e:  # noqa: BLE001 (never take the app down)
            LOG.exception("newton_usd.kit: simulation step failed")
            self._fail(f"newton_usd.kit: simulation stopped: {type(e).__name__}: {e}", logged=True)
        return done

    def _frames_due(self, elapsed_seconds: float) -> int:
        self._pending_seconds += max(0.0, float(elapsed_seconds))
        due = math.floor(self._pending_seconds * self.sim.fps + 1e-9)
        self._pending_seconds -= due / self.sim.fps
        cap = max(1, self.settings.max_frames_per_update)
        if due > cap:
            if not self._dropped_logged:
                LOG.warning(
                    "newton_usd.kit: the simulation runs slower than real time; stepping at most %d frames per"
                    " update (max_frames_per_update) and dropping the rest",
                    cap,
                )
                self._dropped_logged = True
            self._pending_seconds = 0.0
            due = cap
        return due

    def _build(self) -> bool:
        if self.left_alone is not None:
            return False
        if self.settings.solver == "auto":
            other = other_solver(self.stage)
            if other is not None:
                self._leave_alone(f"its scene {other[0]} names solver {other[1]!r} ({SOLVER_ATTRIBUTE})")
                return False
        try:
            self.sim = self._open_simulation(self.stage, self.settings)
        except NewtonUsdError as e:
            self._leave_alone(str(e))
            return False
        except Exception as e:  # noqa: BLE001 (never take the app down)
            LOG.exception("newton_usd.kit: building the simulation failed")
            self._leave_alone(f"{type(e).__name__}: {e}", log=False)
            return False
        self.last_error = None
        if self.settings.restore_edits:  # (what Stop puts back: the edit target as the run starts)
            layer = self.stage.GetEditTarget().GetLayer()
            copy = Sdf.Layer.CreateAnonymous("authored")
            copy.TransferContent(layer)
            self._authored = (layer, copy)
        model = self.sim.model
        prims = len(model.particle_groups)
        particles = f", {model.particle_count} particles of {prims} prim{'s' * (prims != 1)}" if prims else ""
        LOG.info(
            "newton_usd.kit: simulating %s: %d bodies, %d joints%s, %s, %g fps x %d substeps",
            _stage_name(self.stage), model.body_count, model.joint_count, particles,
            type(self.sim.solver).__name__, self.sim.fps, self.sim.substeps,
        )  # fmt: skip
        return True

    def _leave_alone(self, why: str, log: bool = True) -> None:
        self.left_alone = why
        self.state = "stopped"
        if log:
            LOG.warning("newton_usd.kit: leaving %s alone: %s", _stage_name(self.stage), why)

    def _fail(self, message: str, logged: bool = False) -> None:
        self.last_error = message
        if not logged:
            LOG.error(message)
        self.stop()

    def _flush(self, sim) -> None:
        path = self.settings.recording_path(sim.stage)
        if not path or sim.frame == 0 or self._saved == (sim, sim.frame):
            return
        try:
            sim.save(path)
            self._saved = (sim, sim.frame)
            LOG.info("newton_usd.kit: saved %d recorded frames to %s", sim.frame, path)
        except Exception:  # noqa: BLE001 (never take the app down)
            LOG.exception("newton_usd.kit: saving the recording to %s failed", path)


def _stage_name(stage) -> str:
    if stage is None:
        return "no stage"
    layer = stage.GetRootLayer()
    return layer.realPath or layer.identifier


def _open_simulation(stage: Usd.Stage, settings: PlaybackSettings):
    return Simulation.open(
        stage,
        solver=None if settings.solver == "auto" else settings.solver,
        device=settings.device or None,
        backend=settings.backend or None,
        substeps=settings.substeps or None,
        record=settings.write_back == "record",
        joint_states=settings.joint_states,
    )
