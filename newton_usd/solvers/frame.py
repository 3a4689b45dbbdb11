"""A frame (every physics step of it) as one function: eager on the CPU, one CUDA graph on a GPU.

Used by the Newton solvers (:meth:`SolverNewton.simulate_frame`) and MuJoCo-Warp (the warp backend's
``simulate_frame``). On CUDA a step of a Newton solver is hundreds of kernel launches from Python, and a small scene
waits on the host. :class:`FrameCapture` runs a *frame function* (kernel launches and device copies only: no host
read, no allocation whose size changes) eagerly where it cannot be captured, and on a CUDA device with memory pools:

1. the first frame of a key eagerly (the warm-up: modules load, the solver allocates its buffers);
2. the second captured into a graph (``wp.ScopedCapture``), then launched (``wp.capture_launch``);
3. every later frame of the same key by replaying that graph.

The key names everything the graph bakes in (array pointers, the time step, the substeps); a frame with another
key, or :meth:`FrameCapture.invalidate` (another model's arrays: ``update_parameters`` of a new model), drops the
graph (values written into the same arrays do not: the graph reads them when it runs), and
the next frames warm up and capture again: a graph is never replayed stale. A capture that fails (a host read
inside, an unsupported operation) is said once and the frame runs eagerly from then on. See docs/gpu.md.
"""

from __future__ import annotations

import logging

import warp as wp

logger = logging.getLogger("newton_usd")


class FrameCapture:
    """Runs a frame function: eagerly, or on CUDA captured once per key and replayed (see the module).

    Args:
        device: the Warp device the frame's kernels run on.
        name: what the frames are of (in messages).

    Attributes:
        captures: graphs captured. replays: frames run by replaying a graph. eager_frames: frames run eagerly
            (the warm-ups among them).
        invalidations: times a warmed-up key or its graph was dropped (:meth:`invalidate`, or a frame of another
            key); counted on the CPU too, where nothing is captured.
        last_invalidation: why, the last time.
        eager_reason: why frames are never captured on this device (None: on CUDA they are, once warmed up; on
            the CPU every frame is eager anyway).
    """

    def __init__(self, device, name: str):
        self.device = wp.get_device(device)
        self.name = name
        self.captures = self.replays = self.eager_frames = self.invalidations = 0
        self.last_invalidation = None
        self.eager_reason = None
        if self.device.is_cuda and not wp.is_mempool_enabled(self.device):
            self.never_capture(f"{self.device.alias} has no memory pool enabled (wp.set_mempool_enabled)")
        self._key = None  # the key warmed up (and captured, with _graph)
        self._graph = None
        self.cpu_graphs = False
        """Capture on Warp's CPU device too (Warp records and replays the launches there): the tests' way to run
        the captured path without a GPU."""

    @property
    def captured(self) -> bool:
        """Whether the next frame of the current key replays a graph."""
        return self._graph is not None

    def never_capture(self, reason: str) -> None:
        """Run every frame eagerly from now on, because of ``reason`` (said once, at INFO level)."""
        if self.eager_reason is None and self.device.is_cuda:
            logger.info("%s: frames run eagerly, not as a CUDA graph: %s", self.name, reason)
        if self.eager_reason is None:
            self.eager_reason = reason
        self._graph = None

    def invalidate(self, reason: str) -> None:
        """Drop the graph (and the warm-up): what it baked in changed (``reason``)."""
        if self._key is not None:
            self.invalidations += 1
            self.last_invalidation = reason
        self._key = None
        self._graph = None

    def run(self, key, frame, restore=None, retry=None) -> bool:
        """Run ``frame()`` once: eagerly, or as the graph captured for ``key``. True where a graph captured earlier
        was replayed: ``frame()`` itself did not run, so what it does on the host (which arrays hold pending values)
        was not done, and the caller does it as the captured call did.

        Args:
            key: hashable; everything the graph bakes in (a different key drops the graph).
            frame: the frame function (kernel launches and device copies only).
            restore: called before the eager rerun when a capture fails (undoes what the captured call changed on
                the host side, e.g. which arrays hold pending values).
            retry: called with the exception when a capture fails; True: the frame function was changed to avoid
                it (after ``restore``), capture it again once.
        """
        if self._key is not None and key != self._key:
            self.invalidate("the frame's arrays, time step or substeps changed")
        if self._graph is not None:
            wp.capture_launch(self._graph)
            self.replays += 1
            return True
        if not (self.device.is_cuda or self.cpu_graphs) or self.eager_reason is not None or self._key is None:
            frame()
            self.eager_frames += 1
            self._key = key
            return False
        graph, error = self._capture(frame)
        if graph is None and retry is not None and retry(error):
            if restore is not None:
                restore()
            graph, error = self._capture(frame)
        if graph is None:  # (any failure: the frame still runs, eagerly)
            why = str(error).splitlines()[0] if str(error) else ""
            self.never_capture(f"the capture failed ({type(error).__name__}: {why})")
            if restore is not None:
                restore()
            frame()
            self.eager_frames += 1
            return False
        self._graph = graph
        self.captures += 1
        wp.capture_launch(self._graph)
        self.replays += 1
        return False

    def _capture(self, frame):
        """(the graph of ``frame()``, None), or (None, the exception where the capture failed)."""
        try:
            with wp.ScopedCapture(device=self.device, force_module_load=False) as capture:
                frame()
        except Exception as e:  # noqa: BLE001
            return None, e
        return capture.graph, None
