"""A run's clock: its frames per second, and the physics steps that make one frame."""

from __future__ import annotations

import math

MAX_PHYSICS_DT = 1.0 / 480.0
"""Default upper bound of the physics step: substeps per frame = ceil(frame_dt / MAX_PHYSICS_DT)."""
DEFAULT_FRAMES = 120
MAX_SUBSTEPS = 100_000
"""Physics steps per frame beyond which the time step is taken for a mistake (NewtonUsdError)."""


def frame_rate(stage, imported, fps=None) -> float:
    """The frames per second of a run: ``fps`` when given, else the ``newton:usd:framesPerSecond`` of the
    imported PhysicsScene (``imported``: the first scene's :class:`UsdImport`), else the stage's
    timeCodesPerSecond (24 without one)."""
    authored = imported.scene.get("frames_per_second")
    return float(fps or (authored.value if authored else 0.0) or stage.GetTimeCodesPerSecond() or 24.0)


def physics_steps(fps: float, timestep=None, substeps=None) -> tuple:
    """(physics steps per frame, the step in s or None) of a run at ``fps`` frames per second: the stage's own
    ``timestep`` exactly when it gives one and not ``substeps`` (frames advance by whole steps; time codes
    follow the simulated time, so a step that does not divide the frame time is still recorded truly), else
    ``substeps`` (or as many as keep the step at most :data:`MAX_PHYSICS_DT`) of the frame time (None)."""
    if substeps:
        return int(substeps), None
    if timestep:
        return max(1, round(1.0 / fps / timestep)), timestep
    return max(1, math.ceil(1.0 / fps / MAX_PHYSICS_DT - 1e-9)), None


def scene_clocks(imports, fps, diag) -> None:
    """Add to ``diag`` each PhysicsScene of ``imports`` (the scenes after the first) that authors a frame rate
    other than ``fps``, the first scene's: every scene steps on the first scene's clock, so it is not used."""
    for imported in imports:
        r = imported.scene.get("frames_per_second")
        if r is not None and r.kind == "authored" and r.value and not math.isclose(r.value, fps):
            diag.add(
                f"{r.attribute} = {r.value:g} of a PhysicsScene other than the first is not used: every scene "
                f"steps on the first scene's clock, {fps:g} frames per second",
                imported.scene_path,
            )


class Clock:
    """A run's time: frames and physics steps taken, the simulated seconds, and where the wall time went.

    Attributes:
        fps: frames per second; substeps: physics steps per frame; dt: the physics step in seconds.
        start_time: the time code of frame 0.
        frame: frames simulated since the start; steps: physics steps taken; sim_seconds: ``steps * dt``.
        wall_seconds: in the solver (stepping and the state exchange); sync_seconds: writing onto the stage.
        first_step_seconds: the first frame's steps (its kernels compiled or loaded; None before it).
    """

    def __init__(self, options, start_time: float = 0.0):
        self.fps, self.substeps, self.dt = options.fps, options.substeps, options.dt
        self.start_time = float(start_time)
        self.restart()

    def restart(self) -> None:
        """Back to frame 0 (:meth:`~newton_usd.sim.Simulation.reset`)."""
        self.frame = self.steps = 0
        self.sim_seconds = self.wall_seconds = self.sync_seconds = 0.0
        self.first_step_seconds = None

    @property
    def time_code(self) -> float:
        """The time code of the current frame: the simulated time in frames since the start."""
        return self.start_time + round(self.sim_seconds * self.fps, 6)

    def steps_to(self, until: float | None) -> int:
        """The physics steps of the next frame: ``substeps``, or those that end closest to ``until`` (seconds)."""
        return self.substeps if until is None else max(0, round((until - self.sim_seconds) / self.dt))

    def time_code_after(self, steps: int) -> float:
        """The time code ``steps`` physics steps from now (a kinematic body's pose is read there)."""
        return self.start_time + (self.steps + steps) * self.dt * self.fps

    def end_frame(self) -> None:
        """A frame was simulated (its steps counted as they were taken)."""
        self.frame += 1
        self.sim_seconds = self.steps * self.dt

    def advance(self, steps: int, frames: int = 1) -> None:
        """``frames`` frames of ``steps`` physics steps in all were simulated outside :meth:`Stepper.step` (a
        vector environment's captured step)."""
        self.steps += int(steps)
        self.frame += int(frames)
        self.sim_seconds = self.steps * self.dt
