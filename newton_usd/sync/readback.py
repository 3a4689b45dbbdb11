"""Body poses and particles read back from the device without waiting for them: the stage write of frame k overlaps
the GPU's steps of frame k+1 (see :meth:`newton_usd.sim.Simulation.run`)."""

from __future__ import annotations

import numpy as np
import warp as wp


class PoseReadback:
    """The first rows of ``body_q`` and a one-int flag copied device -> host behind a frame's kernels, into one of
    two slots of host memory (pinned on CUDA: the copy runs on the device's stream, the host does not wait), each
    with an event; :meth:`finish` waits for a slot's copy only. Frame k's copy lands in one slot while frame k-1's
    is written from the other. On the CPU device the copies are plain, done when :meth:`start` returns.

    Args:
        device: the device of the arrays read.
        rows: rows of ``body_q`` read back at most.
    """

    def __init__(self, device, rows: int):
        self.device = wp.get_device(device)
        self.rows = int(rows)
        pinned = self.device.is_cuda
        self._poses = [wp.empty(max(self.rows, 1), dtype=wp.transform, device="cpu", pinned=pinned) for _ in "ab"]
        self._flags = [wp.zeros(1, dtype=wp.int32, device="cpu", pinned=pinned) for _ in "ab"]
        self._events = [None, None]
        self._counts = [0, 0]
        self._next = 0

    def start(self, body_q, flag, rows: int) -> int:
        """Queue the copies of ``body_q``'s first ``rows`` rows (0: none) and of ``flag`` after the work queued so
        far on the device; the slot's number (for :meth:`finish`)."""
        if rows > self.rows:
            raise ValueError(f"PoseReadback holds {self.rows} rows, not {rows}")
        i = self._next
        self._next ^= 1
        if rows:
            wp.copy(self._poses[i], body_q, count=rows)
        wp.copy(self._flags[i], flag)
        self._counts[i] = rows
        if self.device.is_cuda:
            self._events[i] = self.device.stream.record_event()
        return i

    def finish(self, slot: int) -> tuple:
        """(the poses copied into ``slot``, a numpy copy of its rows; the flag's value) once its copy is done."""
        event = self._events[slot]
        if event is not None:
            wp.synchronize_event(event)
            self._events[slot] = None
        poses = np.array(self._poses[slot].numpy()[: self._counts[slot]])
        return poses, int(self._flags[slot].numpy()[0])


class PointsReadback:
    """The particles' positions and velocities (``particle_q``, ``particle_qd``) copied device -> host behind a frame's
    kernels, into one of two slots (pinned on CUDA), as :class:`PoseReadback` does the bodies' poses: a pipelined
    run writes frame k's points, not the points of the frame queued after it.

    Args:
        device: the device of the arrays read.
        count: particles read back (every one of the State's).
    """

    def __init__(self, device, count: int):
        self.device = wp.get_device(device)
        self.count = int(count)
        pinned = self.device.is_cuda
        self._slots = [
            tuple(wp.empty(max(self.count, 1), dtype=wp.vec3, device="cpu", pinned=pinned) for _ in "qv") for _ in "ab"
        ]
        self._events = [None, None]
        self._next = 0

    def start(self, particle_q, particle_qd) -> int:
        """Queue the copies of ``particle_q`` and ``particle_qd`` after the work queued so far; the slot's number."""
        if particle_q.shape[0] != self.count:
            raise ValueError(f"PointsReadback holds {self.count} particles, not {particle_q.shape[0]}")
        i = self._next
        self._next ^= 1
        q, qd = self._slots[i]
        if self.count:
            wp.copy(q, particle_q, count=self.count)
            wp.copy(qd, particle_qd, count=self.count)
        if self.device.is_cuda:
            self._events[i] = self.device.stream.record_event()
        return i

    def finish(self, slot: int) -> tuple:
        """(positions, velocities): numpy copies of the particles copied into ``slot``, once its copies are done."""
        event = self._events[slot]
        if event is not None:
            wp.synchronize_event(event)
            self._events[slot] = None
        q, qd = self._slots[slot]
        return np.array(q.numpy()[: self.count]), np.array(qd.numpy()[: self.count])
