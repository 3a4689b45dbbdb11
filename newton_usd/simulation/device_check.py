"""The blow-up checks of a frame function, on the device: no wait for the device each frame.

:class:`~newton_usd.simulation.bounds.BlowUpCheck`'s two checks of a sane state, the bounds (a pose NaN or
infinite, a body beyond ``max_distance`` or faster than ``max_speed``) and the flung check
(:mod:`~newton_usd.simulation.runaway`: a body farther from its start than the scene allows, or than its joints
hold it), run as the last two kernels of every frame function (:meth:`DeviceCheck.launch`: inside the frame's CUDA
graph). They raise a flag in device memory, with the number of the frame where the trouble started, and keep that
frame's body poses and velocities; the host reads the flag only now and then (:meth:`DeviceCheck.poll`, every
``check_every`` frames, without waiting for the frames queued since; :meth:`DeviceCheck.read` at a sync point: the end
of a run, the state read on the host). The error is then made on the host from the kept state, with the host's own
checks: the same message, body and frame as a run checked frame after frame.

What the checks compare against is in device arrays set from the host where it changes (:meth:`DeviceCheck.prepare`):
the bounds, the flung check's start and bound, the frame count. A graph captured once serves them all.
"""

from __future__ import annotations

import itertools

import numpy as np
import warp as wp

from .runaway import MARGIN

TRIPPED, BAD, FRAME = 0, 1, 2
"""The status array's entries: the frame where a check first failed (0: none), a check failed in the frame being
checked, the frames simulated (the frame number of the last frame checked)."""

_serial = itertools.count(1)


@wp.kernel
def _check_bodies_kernel(
    # Data in:
    body_q: wp.array(dtype=wp.transform),
    body_qd: wp.array(dtype=wp.spatial_vector),
    start: wp.array(dtype=wp.vec3),
    held: wp.array(dtype=wp.float32),
    limits: wp.array(dtype=wp.float32),
    clock: wp.array(dtype=wp.float64),
    frame_seconds: wp.float64,
    # Data out:
    status: wp.array(dtype=wp.int32),
    kept_q: wp.array(dtype=wp.transform),
    kept_qd: wp.array(dtype=wp.spatial_vector),
):
    """One body: ``status[BAD]`` = 1 where its pose is not finite, it is beyond the distance or the speed
    (``limits[0]``, ``limits[1]``: squared; NaN compares false), or with the flung check on (``limits[2]``) it moved
    farther from ``start`` than ``held`` or than ``limits[3] + (limits[4] + limits[5] t) t`` after ``t`` seconds
    (``clock[0]``, the seconds before this frame, plus this frame's). Until a frame trips, the state is kept."""
    b = wp.tid()
    x = body_q[b]
    v6 = body_qd[b]
    if status[0] == 0:
        kept_q[b] = x
        kept_qd[b] = v6
    p = wp.transform_get_translation(x)
    q = wp.transform_get_rotation(x)
    s = p[0] + p[1] + p[2] + q[0] + q[1] + q[2] + q[3]
    v = wp.spatial_top(v6)
    ok = s - s == 0.0 and wp.dot(p, p) <= limits[0] and wp.dot(v, v) <= limits[1]
    if ok and limits[2] > 0.0:
        t = wp.float32(clock[0] + frame_seconds)
        moved = wp.length(p - start[b])
        ok = moved <= held[b] and moved <= limits[3] + (limits[4] + limits[5] * t) * t
    if not ok:
        status[1] = 1


@wp.kernel
def _check_frame_kernel(
    frame_seconds: wp.float64,
    # Data out:
    status: wp.array(dtype=wp.int32),
    clock: wp.array(dtype=wp.float64),
):
    """After the bodies': the frame counted, its seconds added; the first frame a body failed in is kept, with the
    seconds since the flung check's start (``clock[1]``)."""
    status[2] = status[2] + 1
    clock[0] = clock[0] + frame_seconds
    if status[1] != 0:
        if status[0] == 0:
            status[0] = status[2]
            clock[1] = clock[0]
        status[1] = 0


class DeviceCheck:
    """The device side of a :class:`~newton_usd.sim.Simulation`'s blow-up checks (see the module).

    Args:
        device: the model's Warp device.
        body_count: the model's bodies (every world's).

    Attributes:
        key: what a frame's graph bakes in of this check (its arrays): unique to this object.
        tripped: ``status[0:1]``, the frame where a check first failed (0: none), for a pose readback to copy.
        runaway: the :class:`~newton_usd.simulation.runaway.RunawayCheck` the flung check was started with (None:
            off).
    """

    def __init__(self, device, body_count: int):
        self.device = wp.get_device(device)
        self.body_count = int(body_count)
        self.key = next(_serial)
        n = max(self.body_count, 1)
        self.status = wp.zeros(3, dtype=wp.int32, device=self.device)
        self.tripped = self.status[0:1]
        self.clock = wp.zeros(2, dtype=wp.float64, device=self.device)
        self.limits = wp.zeros(6, dtype=wp.float32, device=self.device)
        self.start = wp.zeros(n, dtype=wp.vec3, device=self.device)
        self.held = wp.zeros(n, dtype=wp.float32, device=self.device)
        self.kept_q = wp.zeros(n, dtype=wp.transform, device=self.device)
        self.kept_qd = wp.zeros(n, dtype=wp.spatial_vector, device=self.device)
        self.runaway = None
        self._frames = None  # the frame count the device holds after the frames queued (None: to be set)
        self._set = None  # what limits and the flung check's start were set from
        pinned = self.device.is_cuda
        self._polled = [wp.zeros(3, dtype=wp.int32, device="cpu", pinned=pinned) for _ in "ab"]
        self._events = [None, None]
        self._next = 0

    def prepare(self, frame: int, seconds: float, max_distance: float, max_speed: float, runaway) -> None:
        """Before a frame function is queued (``frame``: the frames simulated before it, ``seconds`` of simulated
        time): the frame count, the bounds and the flung check's start (``runaway``: a
        :class:`~newton_usd.simulation.runaway.RunawayCheck`, None: off) set on the device where they changed: host
        work that does not grow with the bodies, but at a (re)start of the flung check."""
        if self._frames != frame:  # (frames the device did not count: another path's, or none yet)
            wp.copy(self.status, wp.array([frame], dtype=wp.int32, device=self.device), dest_offset=FRAME, count=1)
        self._frames = frame + 1
        wanted = (max_distance, max_speed, runaway)
        if self._set is None or any(a is not b and a != b for a, b in zip(self._set, wanted, strict=True)):
            self._set = wanted
            self._limits(max_distance, max_speed, runaway, seconds)

    def _limits(self, max_distance, max_speed, runaway, seconds) -> None:
        limits = np.zeros(6, dtype=np.float32)
        limits[:2] = float(max_distance) ** 2, float(max_speed) ** 2
        on = runaway is not None and runaway.enabled
        if on and runaway is not self.runaway:  # (another start, or the check on again: the seconds since its start)
            self.start.assign(runaway.start.astype(np.float32))
            self.held.assign(np.minimum(runaway.held, np.finfo(np.float32).max).astype(np.float32))
            self.clock.assign(np.array([seconds - runaway.start_seconds, 0.0]))
        if on:
            limits[2:] = 1.0, runaway.extent + MARGIN, runaway.speed, 0.5 * runaway.gravity
        self.runaway = runaway if on else None
        self.limits.assign(limits)

    def launch(self, state, frame_seconds: float) -> None:
        """The frame function's last kernels: every body of ``state`` checked (see the module)."""
        arrays = state.__dict__  # (the arrays themselves: an attribute read may convert pending joint states)
        n = arrays["body_q"].shape[0]
        if n:
            wp.launch(
                _check_bodies_kernel, dim=n, device=self.device,
                inputs=[arrays["body_q"], arrays["body_qd"], self.start, self.held, self.limits, self.clock,
                        float(frame_seconds)],
                outputs=[self.status, self.kept_q, self.kept_qd],
            )  # fmt: skip
        wp.launch(_check_frame_kernel, dim=1, inputs=[float(frame_seconds)], outputs=[self.status, self.clock],
                  device=self.device)  # fmt: skip

    def poll(self) -> int:
        """The frame where a check failed (0: none), without waiting for the frames queued: on CUDA the flag is
        copied into pinned memory behind them and the copy queued at the previous poll is read (it waits only where
        the device is more than a poll behind); on the CPU, where the frames are done, the flag now."""
        i = self._next
        self._next ^= 1
        wp.copy(self._polled[i], self.status)
        if not self.device.is_cuda:
            return int(self._polled[i].numpy()[0])
        self._events[i] = self.device.stream.record_event()
        event, self._events[i ^ 1] = self._events[i ^ 1], None
        if event is None:
            return 0
        wp.synchronize_event(event)
        return int(self._polled[i ^ 1].numpy()[0])

    def read(self) -> int:
        """The frame where a check failed (0: none), once every frame queued is done (waits for the device)."""
        self._events = [None, None]
        return int(self.status.numpy()[0])

    def kept(self) -> tuple:
        """(seconds since the flung check's start, body poses, body velocities) of the frame where a check failed."""
        seconds = float(self.clock.numpy()[1])
        return seconds, self.kept_q.numpy()[: self.body_count], self.kept_qd.numpy()[: self.body_count]

    def clear(self) -> None:
        """Forget a failed check (reported, or the frames dropped): the next frames are checked afresh."""
        self.status.zero_()
        self._frames = None
        self._events = [None, None]
