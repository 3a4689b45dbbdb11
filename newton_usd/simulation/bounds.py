"""Blow-up detection: a body whose pose is NaN or infinite, too far or too fast, or flung out of the scene
(:mod:`~newton_usd.simulation.runaway`) stops the run; on the device for frame functions
(:mod:`~newton_usd.simulation.device_check`), read at sync points."""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ..errors import SimulationError
from ..solvers.stability import step_advice
from .device_check import DeviceCheck
from .runaway import ModelReach, RunawayCheck

logger = logging.getLogger("newton_usd")

MAX_DISTANCE = 1e6
"""m: a body farther than this from the origin stops the run (SimulationError; usdsim exits 3)."""
MAX_SPEED = 1e4
"""m/s: a body whose center of mass moves faster than this stops the run (SimulationError; usdsim exits 3)."""


class BlowUpCheck:
    """:class:`~newton_usd.sim.Simulation`'s check of a sane state after each frame, and of a body flung out of the
    scene (:attr:`check_flung`): on the host after a frame of single steps, on the device as a frame function's last
    kernels (:mod:`~newton_usd.simulation.device_check`), read back without waiting for each frame.

    A run of frame functions (the Newton solvers, MuJoCo-Warp) queues frame after frame on the device and reads the
    checks' flag every :attr:`check_every` frames, without waiting for the frames queued since; at the end of
    :meth:`~newton_usd.sim.Simulation.run`; and at a *sync point*, where the state is read on the host: reading
    :attr:`state` (``sim.state.body_q.numpy()``), a frame written onto the stage, :meth:`synchronize`. A blow-up is
    then raised as a :class:`~newton_usd.errors.SimulationError` naming the frame where it started and the body, with
    the message a run checked frame after frame gives. :attr:`device_state` (views, kernels of one's own) reads
    nothing on the host and checks nothing."""

    check_flung = True
    """Stop a run whose body is flung out of the scene (:class:`~newton_usd.simulation.runaway.RunawayCheck`):
    farther from where it was at the start than free fall, its velocities and drives and the scene allow."""

    check_every = 10
    """Frames between reads of the device's check flag in a run of frame functions (see the class): a blow-up is
    raised at most about twice this many frames after it started (on CUDA the flag read is the one queued a read
    before), or at the next sync point."""

    _runaway = None  # the RunawayCheck of the run now (None: made from the state at the next frame's start)
    _reach = None  # (model, its ModelReach): what of the check depends on the model's structure only
    _device_check = None  # the DeviceCheck of frame functions (see _as_frame)
    _unchecked = False  # frames queued on the device whose checks were not read

    @property
    def state(self):
        """The current State. Reading it is a sync point: frames queued on the device and not yet checked are waited
        for and checked first (a blow-up among them raises :class:`~newton_usd.errors.SimulationError`)."""
        if self._unchecked:
            self.synchronize()
        return self._state

    @state.setter
    def state(self, value) -> None:
        self._state = value

    @property
    def device_state(self):
        """The current State, without waiting for or checking the frames queued on the device (:attr:`state` does):
        for work that stays on the device (views, one's own kernels), which the device runs after those frames."""
        return self._state

    def synchronize(self) -> None:
        """Wait for the frames queued on the device (this scene's and the other scenes') and check them: raises
        :class:`~newton_usd.errors.SimulationError` naming the frame where a body blew up or was flung, and the body.
        Nothing to wait for after frames of single steps (checked as they ran)."""
        for sim in (self, *self.scenes):
            if sim._unchecked:
                t0 = time.perf_counter()
                tripped = sim._device_check.read()
                sim.wall_seconds += time.perf_counter() - t0  # (the device's time, waited for here)
                sim._unchecked = False
                if tripped:
                    sim._report_device_check(tripped)

    def _poll_device_check(self) -> None:
        """Every :attr:`check_every` frames of frame functions: the device's flag, read without waiting for the
        frames queued since (see :meth:`DeviceCheck.poll`)."""
        if self.frame % max(1, int(self.check_every)) == 0:
            t0 = time.perf_counter()
            tripped = self._device_check.poll()
            self.wall_seconds += time.perf_counter() - t0
            if tripped:
                self._report_device_check(tripped)

    def _report_device_check(self, frame: int) -> None:
        """Raise the error of the device's check that failed at ``frame``: the host's own checks of the state kept
        at that frame (the same message, body and frame as a run checked frame after frame)."""
        check = self._device_check
        seconds, body_q, body_qd = check.kept()
        runaway = check.runaway
        check.clear()
        self._unchecked = False
        self._check_bounds(body_q, frame=frame, body_qd=body_qd)
        if runaway is not None:
            advice = lambda: step_advice(self.solver, self.dt, self.fps)  # noqa: E731
            runaway.check(body_q, runaway.start_seconds + seconds, frame, advice)
        # (a body at a bound in float32 on the device and within it in float64 here: not a blow-up; the run goes on)
        logger.debug("frame %d: the device's blow-up check failed, the host's passed: going on", frame)

    def _forget_device_check(self) -> None:
        """The frames queued are dropped unchecked (:meth:`reset`): a blow-up among them is not raised."""
        self._unchecked = False
        if self._device_check is not None:
            self._device_check.clear()

    def _prepare_device_check(self) -> None:
        """Before a frame function: the device check made (for the model's device and bodies) and what it compares
        against set (see :meth:`DeviceCheck.prepare`)."""
        check = self._device_check
        if check is None or check.device != self.model.device or check.body_count != self.model.body_count:
            self._device_check = check = DeviceCheck(self.model.device, self.model.body_count)
        runaway = self._runaway if self.check_flung else None
        check.prepare(self.frame, self.sim_seconds, self.max_distance, self.max_speed, runaway)
        self._unchecked = True

    def restart_flung_check(self, model_changed: bool = False) -> None:
        """Measure how far bodies are flung from the state of the next frame's start: the state was moved by hand
        (:meth:`reset`, a view's write of positions or velocities), or the model changed (``model_changed``: a
        live edit of its values or a rebuild)."""
        self._runaway = None
        if model_changed:
            self._reach = None

    def _start_flung_check(self) -> None:
        """At a frame's start: the flung check's start (the state now: a sync point), where the run has none yet."""
        if self._runaway is None and self.check_flung:
            if self._reach is None or self._reach[0] is not self.model:
                self._reach = (self.model, ModelReach(self.model))
            self._runaway = RunawayCheck.of(self, self._reach[1])

    def _check_flung(self, last: bool) -> None:
        """After a frame of single steps: stop (SimulationError naming the body and frame) where a body was flung out
        of the scene; every frame on the CPU, every 10th and the last on CUDA (frame functions check on the device)."""
        check = self._runaway
        if check is not None and self.check_flung and check.due(self.model.device, self.frame, last):
            advice = lambda: step_advice(self.solver, self.dt, self.fps)  # noqa: E731
            check.check(self._state.body_q.numpy(), self.sim_seconds, self.frame, advice)

    def _check_bounds(self, body_q, frame=None, body_qd=None) -> None:
        """Stop (SimulationError naming the body and frame) when a body's pose is NaN or infinite, it is
        farther than :attr:`max_distance` from the origin or faster than :attr:`max_speed`: a simulation that
        blew up, caught here rather than left to MuJoCo's own check (which fires near 1e10 only). ``body_qd``: the
        velocities of ``body_q``'s state (None: the state's now)."""
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
                v = (self._state.body_qd.numpy() if body_qd is None else body_qd)[:, :3]
                speed2 = np.einsum("ij,ij->i", v, v)
                rows = ~(speed2 <= self.max_speed**2)  # (NaN too)
                if rows.any():
                    speed = math.sqrt(float(speed2[int(np.argmax(rows))]))
                    problem = f"body moves at {speed:.3g} m/s, beyond max_speed {self.max_speed:g} m/s"
        if problem is not None:
            label = self.model.body_label[int(np.argmax(rows))]
            advice = step_advice(self.solver, self.dt, self.fps)  # (a step the solver estimates stable, if it has one)
            raise SimulationError(f"{problem} (the simulation blew up){advice}", frame=frame or self.frame, label=label)
