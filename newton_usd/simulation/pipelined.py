"""The pipelined run: on a frame function's solver, frame k+1's steps are queued before frame k's poses are
checked and written, so that on CUDA the stage write overlaps the device's steps."""

from __future__ import annotations

import time

from ..errors import SimulationError
from ..sync.readback import PoseReadback


class PipelinedRun:
    """:meth:`~newton_usd.sim.Simulation.run` with the write-back behind the device."""

    def _pipelines(self) -> bool:
        """Whether :meth:`run` overlaps the stage write with the next frame's steps (:meth:`_run_pipelined`): the
        frames are frame functions, and nothing else reads the state between them (joint states, other scenes)."""
        return self.joint_sync is None and not self.scenes and self._as_frame(self.substeps)

    def _run_pipelined(self, n: int, progress=None) -> None:
        """:meth:`run`, the write-back behind the device: frame k+1 is queued (its steps, then, where it is written,
        its poses' copy into host memory, :class:`~newton_usd.sync.readback.PoseReadback`) before frame k's poses are
        checked and written onto the stage, so that on CUDA the stage write overlaps the GPU's steps. The stage gets
        the same time samples as frame after frame (:meth:`step_frame`); on the CPU the copies are plain, the same code
        path. A frame not written is not waited for: its blow-up check is read every :attr:`check_every` frames
        (:meth:`_poll_device_check`), and :meth:`run` waits for the last at its end."""
        pending = None
        try:
            for i in range(n):
                last = i == n - 1
                if self.watcher is not None and self.watcher.pending:
                    pending = self._finish_frame(pending)
                    self.apply_edits()
                if not self._pipelines():  # (an edit rebuilt the model into one that cannot)
                    pending = self._finish_frame(pending)
                    self.step_frame(last=last)
                else:
                    pending, previous = self._queue_frame(last), pending
                    self._finish_frame(previous)
                    if self.first_step_seconds is None:  # (the first frame: waited for, timed)
                        pending = self._finish_frame(pending)
                    elif pending[0] is None:
                        self._poll_device_check()
                if progress is not None:
                    progress(1)
        except SimulationError:
            raise  # (the frame queued after the one that blew up is not written)
        except BaseException:
            self._finish_frame(pending)  # (interrupted: the frames simulated are written)
            raise
        self._finish_frame(pending)

    def _queue_frame(self, last: bool) -> tuple:
        """Queue a frame's steps and, where it is written, its readback (no wait); (readback slot, None where the frame
        is not written; frame, time code, start)."""
        if self.kernel_load is None:
            self.load_kernels(wait=False)
        self._write_start()
        self._start_flung_check()
        t0 = time.perf_counter()
        try:
            self._simulate_frame(self.substeps)
        except SimulationError as e:
            raise SimulationError(e.reason, frame=self.frame + 1, label=e.label) from None
        self.frame += 1
        self.sim_seconds = self.steps * self.dt
        slot = None
        if self._records_frame(last):
            rows = self.sync.body_count
            if self._readback is None or self._readback.rows < rows or self._readback.device != self.model.device:
                self._readback = PoseReadback(self.model.device, rows)
            slot = self._readback.start(self._state.body_q, self._device_check.tripped, rows)
        self.wall_seconds += time.perf_counter() - t0
        return slot, self.frame, self.time_code, t0

    def _finish_frame(self, pending) -> None:
        """Wait for a queued frame's readback, check its bounds and write it (see :meth:`_run_pipelined`); the first
        frame waited for and timed, written or not."""
        if pending is None:
            return None
        slot, frame, time_code, started = pending
        if slot is None:
            if self.first_step_seconds is None:
                self.synchronize()
                self._kernels_loaded()
                self.first_step_seconds = time.perf_counter() - started
            return None
        t0 = time.perf_counter()
        body_q, tripped = self._readback.finish(slot)
        self.wall_seconds += time.perf_counter() - t0
        if self.first_step_seconds is None:
            self._kernels_loaded()
            self.first_step_seconds = time.perf_counter() - started
        if tripped:  # (a check failed at this frame or before: the message from the state kept at that frame)
            self._report_device_check(tripped)
        self._write(body_q, at=(frame, time_code))
        return None
