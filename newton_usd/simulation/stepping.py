"""The stepping loop: one frame's physics steps (kinematic bodies moved between them, or one frame function),
and :meth:`~Stepping.run`, frame after frame."""

from __future__ import annotations

import time

import numpy as np
from pxr import Gf, Sdf, UsdGeom

from ..core.quat import gf_to_xyzw
from ..core.types import JointType
from ..errors import SimulationError
from ..solvers.kernel_loading import KernelLoading, modules_named, tape_safe_workers
from .clock import DEFAULT_FRAMES


def kinematic_bodies(stage, model) -> list:
    """``[(rows in body_q of every world, prim, coordinates)]`` of the kinematic bodies (moved by their prims'
    transforms; a disabled body switched off during the run too: it stays where its prim is). ``coordinates``:
    each row's free joint's 7 rows in ``joint_q`` (-1 where it has none)."""
    kinematic = np.nonzero(model.body_kinematic.numpy())[0]
    if not len(kinematic):
        return []
    free = {}  # body -> its free joint's first coordinate
    joint_type, child = model.joint_type.numpy(), model.joint_child.numpy()
    q_start = model.joint_q_start.numpy()
    for j in np.nonzero(joint_type == int(JointType.FREE))[0]:
        free[int(child[j])] = int(q_start[j])
    out = {}
    for b in kinematic:
        label = model.body_label[b]
        prim = stage.GetPrimAtPath(label) if Sdf.Path.IsValidPathString(label) else None
        if prim:
            out.setdefault(label, ([], prim))[0].append(int(b))
    return [
        (np.array(rows), prim, np.array([free.get(b, -1) for b in rows])[:, None] + np.arange(7))
        for rows, prim in out.values()
    ]


class Stepping:
    """:class:`~newton_usd.sim.Simulation`'s frames: the time, the steps of one frame and the run."""

    kernel_load = None
    """What :meth:`load_kernels` did (a :class:`~newton_usd.solvers.kernel_loading.KernelLoad`: seconds, modules,
    compiled); None before the first frame."""

    kernel_workers = None
    """Threads that compile the Warp modules of the solver's setup and first frame beside them (None: one per CPU
    core; 0: none, each module compiled where it is first launched). Set on the class, it holds for the Simulations
    opened after (the setup's load starts in :meth:`open`)."""

    _kernel_loading = None  # the KernelLoading under way (from the solver's setup, or the first frame)

    def load_kernels(self, max_workers: int | None = None, wait: bool = True):
        """Compile, or load from Warp's kernel cache, the Warp modules the frames will use (the solver's
        ``kernel_modules()`` and the device checks'), in the pool started when the solver was made, or ``max_workers``
        threads (None: :attr:`kernel_workers`), and return what was loaded (kept in :attr:`kernel_load`). The first
        frame does it, where it was not done, ``wait=False``: the modules load beside the frame, which compiles those
        that exist only once it runs, and waits for the rest at its end; :attr:`kernel_load` counts every module loaded
        from the solver's setup until then (see :mod:`~newton_usd.solvers.kernel_loading`)."""
        modules = self.solver.kernel_modules()
        if getattr(self.solver, "simulates_frames", False):
            modules += modules_named(["newton_usd.simulation.device_check"])
        if self._kernel_loading is None:
            workers = self.kernel_workers if max_workers is None else max_workers
            workers = tape_safe_workers(workers, getattr(self.solver, "options", None) or {})
            self._kernel_loading = KernelLoading(self.model.device, workers)
        self._kernel_loading.add(modules)
        return self._kernels_loaded() if wait else None

    def _kernels_loaded(self):
        """After the first frame: the modules loading beside it waited for (:attr:`kernel_load`)."""
        if self._kernel_loading is not None:
            loading, self._kernel_loading = self._kernel_loading, None
            self.kernel_load = loading.wait()
        return self.kernel_load

    @property
    def time_code(self) -> float:
        """The time code of the current frame: the simulated time in frames since the start."""
        return self.start_time + round(self.sim_seconds * self.fps, 6)

    def default_frames(self) -> int:
        """The stage's authored frame range, or 120 frames when it has none."""
        if self.stage.HasAuthoredTimeCodeRange():
            n = int(round(self.stage.GetEndTimeCode() - self.stage.GetStartTimeCode()))
            if n > 0:
                return n
        return DEFAULT_FRAMES

    def step_frame(self, last: bool = True, until: float | None = None) -> None:
        """Simulate one frame (``substeps`` physics steps) and write the poses onto the prims; then the
        other scenes' frames (:attr:`scenes`).

        Edits made on the stage since the last frame are applied first (see :meth:`apply_edits`).
        With :attr:`record_every` > 1 only every n-th frame is written, and the frame with ``last``.
        ``until`` (seconds of simulated time): take the steps that end closest to it instead of
        ``substeps`` (another scene's frame: it keeps to the first scene's clock).

        A frame function's frame (a Newton solver, MuJoCo-Warp) is queued on the device and not waited for unless it
        is written onto the stage: its blow-up check is read every :attr:`check_every` frames and at the sync points
        (see :class:`~newton_usd.simulation.bounds.BlowUpCheck`).
        """
        if self.watcher is not None and self.watcher.pending:
            self.apply_edits()
        if self.kernel_load is None:
            self.load_kernels(wait=False)
        self._write_start()
        self._start_flung_check()
        n = self.substeps if until is None else max(0, round((until - self.sim_seconds) / self.dt))
        t0 = time.perf_counter()
        as_frame = self._as_frame(n)
        try:
            if as_frame:  # one frame function (a CUDA graph where the device allows), the checks in it
                self._simulate_frame(n)
            for _ in range(0 if as_frame else n):
                if self._kinematic:
                    self._move_kinematic(self.start_time + (self.steps + 1) * self.dt * self.fps)
                self.solver.step(self._state, self._next, self.control, None, self.dt)
                self._state, self._next = self._next, self._state
                self.steps += 1
                if self.first_step_seconds is None:
                    self.first_step_seconds = time.perf_counter() - t0
        except SimulationError as e:
            raise SimulationError(e.reason, frame=self.frame + 1, label=e.label) from None
        self.frame += 1
        self.sim_seconds = self.steps * self.dt
        write = self._records_frame(last)
        if as_frame:
            self.wall_seconds += time.perf_counter() - t0
            if self.first_step_seconds is None:  # (the first frame, kernels loaded: waited for, timed)
                self.synchronize()
                self._kernels_loaded()
                self.first_step_seconds = time.perf_counter() - t0
            if write:
                self.synchronize()  # (its poses are read: checked first)
            else:
                self._poll_device_check()
            body_q = None
        else:
            body_q = self._state.body_q.numpy()
            self.wall_seconds += time.perf_counter() - t0
            self._kernels_loaded()
            self._check_bounds(body_q)
            self._check_flung(last)
        if write:
            self._write(body_q)
        if self.scenes:
            with self._own_writes():
                for other in self.scenes:
                    other.record_every, other.write = self.record_every, self.write
                    other.step_frame(last, until=self.sim_seconds)

    def _as_frame(self, n: int) -> bool:
        """Whether ``n`` steps run as one frame function (``solver.simulate_frame``): a Newton solver or MuJoCo-Warp
        exchanging on the device (``solver.simulates_frames``), no kinematic body (their poses are read from the
        stage between the steps)."""
        return n >= 1 and not self._kinematic and getattr(self.solver, "simulates_frames", False)

    def _simulate_frame(self, n: int) -> None:
        """``n`` steps as the solver's frame function (see :meth:`_as_frame`), the blow-up checks on the device last
        (:mod:`~newton_usd.simulation.device_check`)."""
        self._prepare_device_check()
        check, seconds = self._device_check, n * self.dt
        self.solver.simulate_frame(
            self._state, self._next, self.control, self.dt, n,
            after=lambda state: check.launch(state, seconds), after_key=(check.key, seconds),
        )  # fmt: skip
        self.steps += n

    def _move_kinematic(self, time_code: float) -> None:
        """Kinematic bodies to their prims' (animated) world transforms at ``time_code``: their poses, and their free
        joints' coordinates where the solver steps joint coordinates (``kinematic_joint_q``: Featherstone). Poses the
        solver was given last into this state are not written again (every solver carries a kinematic body's pose
        through a step; MuJoCo moves a mocap body, and then computes its position stage anew, only when written)."""
        cache = UsdGeom.XformCache(time_code)
        frame = self.imported.frame
        poses = []
        for _, prim, _ in self._kinematic:
            xf = Gf.Transform(cache.GetLocalToWorldTransform(prim))
            pos, rot = frame.world_pose_to_sim(
                np.array(xf.GetTranslation(), dtype=np.float64), gf_to_xyzw(xf.GetRotation().GetQuat())
            )
            poses.append(np.concatenate([pos, rot]))
        poses = np.array(poses, dtype=np.float32)
        key = (id(self.solver), id(self._kinematic))
        written = self.__dict__.get("_kinematic_written")
        if written is None or written[0] != key:
            written = self._kinematic_written = (key, {})
        last = written[1].get(id(self._state))
        if last is not None and last[0] is self._state and np.array_equal(last[1], poses):
            return
        written[1][id(self._state)] = (self._state, poses)
        body_q = self._state.body_q.numpy()
        joint_q = self._state.joint_q.numpy() if self.solver.kinematic_joint_q else None
        for (rows, _, coordinates), pose in zip(self._kinematic, poses, strict=True):
            body_q[rows] = pose
            if joint_q is not None:
                free = coordinates[coordinates[:, 0] >= 0]
                joint_q[free] = pose
        if not self.model.device.is_cpu:  # numpy() was a copy
            self._state.body_q.assign(body_q)
            if joint_q is not None:
                self._state.joint_q.assign(joint_q)

    def run(self, frames: int | None = None, progress=None) -> None:
        """Simulate ``frames`` frames (default: :meth:`default_frames`); ``progress(n)`` after each. Returns once the
        device has simulated them all and their blow-up checks were read."""
        n = self.default_frames() if frames is None else int(frames)
        if self._pipelines():
            self._run_pipelined(n, progress)
        else:
            for i in range(n):
                self.step_frame(last=i == n - 1)
                if progress is not None:
                    progress(1)
        self.synchronize()  # (the frames queued, waited for and checked)
