"""Blow-up detection: a simulated prim whose rows of the state are NaN or infinite, too far or too fast, or a body
flung out of the scene (:mod:`~newton_usd.simulation.runaway`) stops the run; on the device for frame functions
(:mod:`~newton_usd.simulation.device_check`), read at sync points."""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ..errors import SimulationError
from ..solvers.stability import step_advice
from ..sync.state_rows import body_rows
from .device_check import DeviceCheck
from .options import MAX_DISTANCE, MAX_SPEED
from .runaway import ModelReach, RunawayCheck

logger = logging.getLogger("newton_usd")

__all__ = ["MAX_DISTANCE", "MAX_SPEED", "BlowUpCheck"]


class BlowUpCheck:
    """A Simulation's part that checks the state is sane after each frame, and that no body was flung out of the
    scene (:attr:`check_flung`): on the host after a frame of single steps, on the device as a frame function's last
    kernels (:mod:`~newton_usd.simulation.device_check`), read back without waiting for each frame.

    A run of frame functions (the Newton solvers, MuJoCo-Warp) queues frame after frame on the device and reads the
    checks' flag every :attr:`check_every` frames, without waiting for the frames queued since; at the end of
    :meth:`~newton_usd.sim.Simulation.run`; and at a *sync point*, where the state is read on the host: reading
    :attr:`~newton_usd.sim.Simulation.state`, a frame written onto the stage,
    :meth:`~newton_usd.sim.Simulation.synchronize`. A blow-up is then raised as a
    :class:`~newton_usd.errors.SimulationError` naming the frame where it started and the body, with the message a run
    checked frame after frame gives.

    Args:
        physics: the run's :class:`~newton_usd.simulation.physics.Physics` (the model, solver and state checked).
        clock: the run's :class:`~newton_usd.simulation.clock.Clock`.
        options: the :class:`~newton_usd.simulation.options.RunOptions` (the bounds at the start).
    """

    check_flung = True
    """Stop a run whose body is flung out of the scene (:class:`~newton_usd.simulation.runaway.RunawayCheck`):
    farther from where it was at the start than free fall, its velocities and drives and the scene allow."""

    check_every = 10
    """Frames between reads of the device's check flag in a run of frame functions (see the class): a blow-up is
    raised at most about twice this many frames after it started (on CUDA the flag read is the one queued a read
    before), or at the next sync point."""

    def __init__(self, physics, clock, options):
        self._physics, self._clock = physics, clock
        self.max_distance = float(options.max_distance)  # m from the origin: beyond, the run stops
        self.max_speed = float(options.max_speed)  # m/s of a body's center of mass: beyond, the run stops
        self._runaway = None  # the RunawayCheck of the run now (None: made from the state at the next frame's start)
        self._reach = None  # (model, its ModelReach): what of the check depends on the model's structure only
        self.device_check = None  # the DeviceCheck of frame functions
        self.unchecked = False  # frames queued on the device whose checks were not read

    def _advice(self) -> str:
        """A step the solver estimates stable, where it has one (appended to a blow-up's message)."""
        return step_advice(self._physics.solver, self._clock.dt, self._clock.fps)

    def synchronize(self) -> None:
        """Wait for the frames queued on the device and check them (see the class)."""
        if self.unchecked:
            t0 = time.perf_counter()
            tripped = self.device_check.read()
            self._clock.wall_seconds += time.perf_counter() - t0  # (the device's time, waited for here)
            self.unchecked = False
            if tripped:
                self.report_device_check(tripped)

    def poll(self) -> None:
        """Every :attr:`check_every` frames of frame functions: the device's flag, read without waiting for the
        frames queued since (see :meth:`DeviceCheck.poll`)."""
        if self._clock.frame % max(1, int(self.check_every)) == 0:
            t0 = time.perf_counter()
            tripped = self.device_check.poll()
            self._clock.wall_seconds += time.perf_counter() - t0
            if tripped:
                self.report_device_check(tripped)

    def report_device_check(self, frame: int) -> None:
        """Raise the error of the device's check that failed at ``frame``: the host's own checks of the state kept
        at that frame (the same message, body and frame as a run checked frame after frame)."""
        check = self.device_check
        seconds, body_q, body_qd = check.kept()
        runaway = check.runaway
        check.clear()
        self.unchecked = False
        self.check_bounds(body_q, frame=frame, velocities=body_qd)
        if runaway is not None:
            runaway.check(body_q, runaway.start_seconds + seconds, frame, self._advice)
        # (a body at a bound in float32 on the device and within it in float64 here: not a blow-up; the run goes on)
        logger.debug("frame %d: the device's blow-up check failed, the host's passed: going on", frame)

    def forget(self) -> None:
        """The frames queued are dropped unchecked (a reset): a blow-up among them is not raised."""
        self.unchecked = False
        if self.device_check is not None:
            self.device_check.clear()

    def prepare_device_check(self) -> DeviceCheck:
        """Before a frame function: the device check made (for the model's device and bodies) and what it compares
        against set (see :meth:`DeviceCheck.prepare`)."""
        model, check = self._physics.model, self.device_check
        if check is None or check.device != model.device or check.body_count != model.body_count:
            self.device_check = check = DeviceCheck(model.device, model.body_count)
        runaway = self._runaway if self.check_flung else None
        check.prepare(self._clock.frame, self._clock.sim_seconds, self.max_distance, self.max_speed, runaway)
        self.unchecked = True
        return check

    def device_flag(self):
        """The device check's flag (a Warp array: the frame where a check failed, 0 where none), read back with a
        frame's poses."""
        return self.device_check.tripped

    def restart_flung_check(self, model_changed: bool = False) -> None:
        """Measure how far bodies are flung from the state of the next frame's start: the state was moved by hand
        (a reset, a view's write of positions or velocities), or the model changed (``model_changed``: a live edit of
        its values or a rebuild)."""
        self._runaway = None
        if model_changed:
            self._reach = None

    def reach_of(self, model):
        """The model's :class:`~newton_usd.simulation.runaway.ModelReach` the flung check measures with (None: not
        measured yet)."""
        return self._reach[1] if self._reach is not None and self._reach[0] is model else None

    def start_flung_check(self) -> None:
        """At a frame's start: the flung check's start (the state now: a sync point), where the run has none yet."""
        if self._runaway is None and self.check_flung:
            model = self._physics.model
            if self.reach_of(model) is None:
                self._reach = (model, ModelReach(model))
            self._runaway = RunawayCheck.of(model, self._physics.state, self._clock.sim_seconds, self._reach[1])

    def check_frame(self, positions, last: bool, rows=None) -> None:
        """After a frame of single steps: the bounds of the simulated prims' ``rows`` (:meth:`check_bounds`) and
        whether a body was flung out of the scene: every frame on the CPU, every 10th and the last on CUDA (frame
        functions check on the device)."""
        self.check_bounds(positions, rows=rows)
        check, clock = self._runaway, self._clock
        if check is not None and self.check_flung and check.due(self._physics.device, clock.frame, last):
            check.check(self._physics.body_poses(), clock.sim_seconds, clock.frame, self._advice)

    def check_bounds(self, positions, frame=None, velocities=None, rows=None) -> None:
        """Stop (SimulationError naming the prim's row and the frame) when a simulated prim's position (``rows``, a
        :class:`~newton_usd.sync.state_rows.StateRows`; None: the bodies') is NaN or infinite, farther than
        :attr:`max_distance` from the origin or faster than :attr:`max_speed`: a simulation that blew up, caught
        here rather than left to MuJoCo's own check (which fires near 1e10 only). ``velocities``: the rows'
        velocities in ``positions``' state (None: the state's now)."""
        rows = rows or body_rows(self._physics.model, ())
        problem, bad = None, None
        element = rows.element
        nonfinite = ~np.isfinite(positions).all(axis=1)
        if nonfinite.any():
            problem, bad = f"{rows.placement} became NaN or infinite", nonfinite
        else:
            dist2 = np.einsum("ij,ij->i", positions[:, :3], positions[:, :3])
            bad = dist2 > self.max_distance**2
            if bad.any():
                d = math.sqrt(float(dist2[int(np.argmax(bad))]))
                problem = f"{element} is {d:.3g} m from the origin, beyond max_distance {self.max_distance:g} m"
            else:
                v = (rows.velocities(self._physics.state) if velocities is None else velocities)[:, :3]
                speed2 = np.einsum("ij,ij->i", v, v)
                bad = ~(speed2 <= self.max_speed**2)  # (NaN too)
                if bad.any():
                    speed = math.sqrt(float(speed2[int(np.argmax(bad))]))
                    problem = f"{element} moves at {speed:.3g} m/s, beyond max_speed {self.max_speed:g} m/s"
        if problem is not None:
            label = rows.name(int(np.argmax(bad)))
            raise SimulationError(
                f"{problem} (the simulation blew up){self._advice()}", frame=frame or self._clock.frame, label=label
            )
        if rows.kind == "particle":
            self._check_grid(positions, frame, rows)

    def _check_grid(self, positions, frame, rows) -> None:
        """Stop where the solver's grid cannot hold a particle (implicit MPM's ``particles_off_grid``: a grain outside
        a fixed grid, a sparse grid past its capacity), naming its prim (every particle prim where the grid as a
        whole failed)."""
        off = getattr(self._physics.solver, "particles_off_grid", None)
        found = off(positions) if off is not None else None
        if found is not None:
            row, problem = found
            label = rows.name(row) if row is not None else ", ".join(dict.fromkeys(n for n in rows.names if n))
            raise SimulationError(problem, frame=frame or self._clock.frame, label=label)
