"""Blow-up detection: a body whose pose is NaN or infinite, too far or too fast, or flung out of the scene
(:mod:`~newton_usd.simulation.runaway`) stops the run."""

from __future__ import annotations

import math

import numpy as np

from ..errors import SimulationError
from ..solvers.stability import step_advice
from .runaway import ModelReach, RunawayCheck

MAX_DISTANCE = 1e6
"""m: a body farther than this from the origin stops the run (SimulationError; usdsim exits 3)."""
MAX_SPEED = 1e4
"""m/s: a body whose center of mass moves faster than this stops the run (SimulationError; usdsim exits 3)."""


class BlowUpCheck:
    """:class:`~newton_usd.sim.Simulation`'s check of a sane state after each frame (on the host, or on the
    device as a frame function's last kernel), and of a body flung out of the scene (:attr:`check_flung`)."""

    check_flung = True
    """Stop a run whose body is flung out of the scene (:class:`~newton_usd.simulation.runaway.RunawayCheck`):
    farther from where it was at the start than free fall, its velocities and drives and the scene allow."""

    _runaway = None  # the RunawayCheck of the run now (None: made from the state at the next frame's start)
    _reach = None  # (model, its ModelReach): what of the check depends on the model's structure only

    def restart_flung_check(self, model_changed: bool = False) -> None:
        """Measure how far bodies are flung from the state of the next frame's start: the state was moved by hand
        (:meth:`reset`, a view's write of positions or velocities), or the model changed (``model_changed``: a
        live edit of its values or a rebuild)."""
        self._runaway = None
        if model_changed:
            self._reach = None

    def _start_flung_check(self) -> None:
        """At a frame's start: the flung check's start (the state now), where the run has none yet."""
        if self._runaway is None and self.check_flung:
            if self._reach is None or self._reach[0] is not self.model:
                self._reach = (self.model, ModelReach(self.model))
            self._runaway = RunawayCheck.of(self, self._reach[1])

    def _check_flung(self, last: bool) -> None:
        """After a frame: stop (SimulationError naming the body and frame) where a body was flung out of the scene;
        every frame on the CPU, every 10th and the last on CUDA."""
        check = self._runaway
        if check is not None and self.check_flung and check.due(self.model.device, self.frame, last):
            advice = lambda: step_advice(self.solver, self.dt, self.fps)  # noqa: E731
            check.check(self.state.body_q.numpy(), self.sim_seconds, self.frame, advice)

    def _check_on_device(self, state) -> None:
        """The frame function's last kernel: :meth:`_check_bounds`'s test on the device, one flag read back."""
        self._bounds.launch(state, self.max_distance, self.max_speed)

    def _check_bounds(self, body_q, frame=None) -> None:
        """Stop (SimulationError naming the body and frame) when a body's pose is NaN or infinite, it is
        farther than :attr:`max_distance` from the origin or faster than :attr:`max_speed`: a simulation that
        blew up, caught here rather than left to MuJoCo's own check (which fires near 1e10 only)."""
        problem, rows = None, None
        bad = ~np.isfinite(body_q).all(axis=1)
        if bad.any():
            problem, rows = "body pose became NaN or infinite", bad
        else:
            dist2 = np.einsum("ij,ij->i", body_q[:, :3], body_q[:, :3])
            rows = dist2 > self.max_distance**2
            if rows.any():
                d = math.sqrt(float(dist2[int(np.argmax(rows))]))
                problem = f"body is {d:.3g} m from the origin, beyond max_distance {self.max_distance:g} m"
            else:
                v = self.state.body_qd.numpy()[:, :3]
                speed2 = np.einsum("ij,ij->i", v, v)
                rows = ~(speed2 <= self.max_speed**2)  # (NaN too)
                if rows.any():
                    speed = math.sqrt(float(speed2[int(np.argmax(rows))]))
                    problem = f"body moves at {speed:.3g} m/s, beyond max_speed {self.max_speed:g} m/s"
        if problem is not None:
            label = self.model.body_label[int(np.argmax(rows))]
            advice = step_advice(self.solver, self.dt, self.fps)  # (a step the solver estimates stable, if it has one)
            raise SimulationError(f"{problem} (the simulation blew up){advice}", frame=frame or self.frame, label=label)
