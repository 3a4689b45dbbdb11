"""The pipelined run: on a frame function's solver, frame k+1's steps are queued before frame k's poses are
checked and written, so that on CUDA the stage write overlaps the device's steps."""

from __future__ import annotations

import time

from ..errors import SimulationError
from ..sync.readback import PointsReadback, PoseReadback


class PipelinedRun:
    """A Simulation's part that runs frames with the write-back behind the device: frame k+1 is queued (its steps,
    then, where it is written, its simulated prims' rows copied into host memory,
    :class:`~newton_usd.sync.readback.PoseReadback`) before frame k's are checked and written onto the stage, so that
    on CUDA the stage write overlaps the GPU's steps. The stage gets the same time samples as frame after frame
    (:meth:`~newton_usd.sim.Simulation.step_frame`); on the CPU the copies are plain, the same code path. A frame not
    written is not waited for: its blow-up check is read every ``check_every`` frames, and the run waits for the last
    at its end. Particle prims' points and velocities are read back with the poses
    (:class:`~newton_usd.sync.readback.PointsReadback`), checked and written from that copy.

    Args:
        physics, clock, stepper, check, recorder: the run's parts it queues, checks and writes the frames through.
    """

    def __init__(self, physics, clock, stepper, check, recorder):
        self._physics, self._clock, self._stepper = physics, clock, stepper
        self._check, self._recorder = check, recorder
        self.readback = None  # the PoseReadback (made at the first frame written)
        self.points_readback = None  # the particles' PointsReadback (where the model has particles)

    def run(self, sim, n: int, progress=None) -> None:
        """``n`` frames of ``sim`` (whose parts these are), pipelined while :meth:`Simulation.pipelines` holds (an
        edit may rebuild the model into one that cannot: then frame after frame)."""
        pending = None
        try:
            for i in range(n):
                last = i == n - 1
                if sim.edits_pending():
                    pending = self.finish(pending)
                    sim.apply_edits()
                if not sim.pipelines():
                    pending = self.finish(pending)
                    sim.step_frame(last=last)
                else:
                    pending, previous = self.queue(last), pending
                    self.finish(previous)
                    if self._clock.first_step_seconds is None:  # (the first frame: waited for, timed)
                        pending = self.finish(pending)
                    elif pending[0] is None:
                        self._check.poll()
                if progress is not None:
                    progress(1)
        except SimulationError:
            raise  # (the frame queued after the one that blew up is not written)
        except BaseException:
            self.finish(pending)  # (interrupted: the frames simulated are written)
            raise
        self.finish(pending)

    def queue(self, last: bool) -> tuple:
        """Queue a frame's steps and, where it is written, its readback (no wait); (readback slot, None where the frame
        is not written; frame, time code, start)."""
        self._recorder.write_start()
        self._check.start_flung_check()
        started = time.perf_counter()
        self._stepper.step(self._clock.substeps)
        slot = None
        if self._recorder.records_frame(last):
            t0 = time.perf_counter()
            rows, device = self._recorder.rows, self._physics.device
            if self.readback is None or self.readback.rows < rows.count or self.readback.device != device:
                self.readback = PoseReadback(device, rows.count)
            positions = getattr(self._physics.state, rows.array)
            points = self._start_points()  # (before the poses' copy: the flag read with them covers both)
            slot = (self.readback.start(positions, self._check.device_flag(), rows.count), points)
            self._clock.wall_seconds += time.perf_counter() - t0
        return slot, self._clock.frame, self._clock.time_code, started

    def _start_points(self):
        """The particles' readback queued (their slot), where the recorder writes particle prims; else None."""
        if self._recorder.points_sync is None:
            return None
        state, device = self._physics.state, self._physics.device
        count = state.particle_q.shape[0]
        if self.points_readback is None or self.points_readback.count != count or self.points_readback.device != device:
            self.points_readback = PointsReadback(device, count)
        return self.points_readback.start(state.particle_q, state.particle_qd)

    def finish(self, pending) -> None:
        """Wait for a queued frame's readback, check its bounds and write it; the first frame waited for and timed,
        written or not."""
        if pending is None:
            return None
        slot, frame, time_code, started = pending
        clock = self._clock
        if slot is None:
            if clock.first_step_seconds is None:
                self._check.synchronize()
                self._stepper.kernels_loaded()
                clock.first_step_seconds = time.perf_counter() - started
            return None
        t0 = time.perf_counter()
        slot, points_slot = slot
        positions, tripped = self.readback.finish(slot)
        particles = self.points_readback.finish(points_slot) if points_slot is not None else None
        clock.wall_seconds += time.perf_counter() - t0
        if clock.first_step_seconds is None:
            self._stepper.kernels_loaded()
            clock.first_step_seconds = time.perf_counter() - started
        if tripped:  # (a check failed at this frame or before: the message from the state kept at that frame)
            self._check.report_device_check(tripped)
        if particles is not None:  # (the particle prims' points as read back: NaN, too far or too fast, named)
            self._check.check_bounds(
                particles[0], frame=frame, velocities=particles[1], rows=self._recorder.particle_rows
            )
        self._recorder.write_frame(positions, at=(frame, time_code), particles=particles)
        return None
