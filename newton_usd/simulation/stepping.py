"""The stepper: one frame's physics steps (kinematic bodies moved between them, or one frame function), and the
Warp modules they need, loaded beside the first frame."""

from __future__ import annotations

import time

import numpy as np
from pxr import Gf, Sdf, UsdGeom

from ..core.quat import gf_to_xyzw
from ..core.types import JointType
from ..errors import SimulationError
from ..solvers.kernel_loading import KernelLoading, modules_named, tape_safe_workers


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


class Stepper:
    """A Simulation's part that takes a frame's physics steps: one frame function (a CUDA graph where the device
    allows, the blow-up checks its last kernels) where the solver has one and no body is kinematic, else step after
    step with the kinematic bodies moved by their prims between them.

    Args:
        stage: the stage whose prims move the kinematic bodies.
        physics: the run's :class:`~newton_usd.simulation.physics.Physics` (stepped, its states swapped).
        clock: the run's :class:`~newton_usd.simulation.clock.Clock` (its steps counted).
        check: the run's :class:`~newton_usd.simulation.bounds.BlowUpCheck` (a frame function's device check).
        kernel_workers: threads that load the Warp modules beside the first frame (None: one per core; 0: none).
        kernel_loading: the :class:`~newton_usd.solvers.kernel_loading.KernelLoading` the solver's setup started.
    """

    def __init__(self, stage, physics, clock, check, kernel_workers=None, kernel_loading=None):
        self._stage, self._physics, self._clock, self._check = stage, physics, clock, check
        self.kernel_workers = kernel_workers
        self.kernel_loading = kernel_loading  # the KernelLoading under way (the solver's setup's, or the first frame's)
        self.kernel_load = None  # what load_kernels did (None before the first frame)
        self.refresh_kinematic()

    def refresh_kinematic(self) -> None:
        """The kinematic bodies anew (the model was rebuilt, or a body was switched)."""
        self.kinematic = kinematic_bodies(self._stage, self._physics.model)
        self._kinematic_written = {}  # id(state) -> (state, the kinematic poses written into it last)

    def load_kernels(self, max_workers: int | None = None, wait: bool = True):
        """Compile, or load from Warp's kernel cache, the Warp modules the frames will use (the solver's
        ``kernel_modules()`` and the device checks'), in the pool started when the solver was made, or ``max_workers``
        threads (None: :attr:`kernel_workers`), and return what was loaded (kept in :attr:`kernel_load`). The first
        frame does it, where it was not done, ``wait=False``: the modules load beside the frame, which compiles those
        that exist only once it runs, and waits for the rest at its end; :attr:`kernel_load` counts every module loaded
        from the solver's setup until then (see :mod:`~newton_usd.solvers.kernel_loading`)."""
        solver = self._physics.solver
        modules = solver.kernel_modules()
        if getattr(solver, "simulates_frames", False):
            modules += modules_named(["newton_usd.simulation.device_check"])
        if self.kernel_loading is None:
            workers = self.kernel_workers if max_workers is None else max_workers
            workers = tape_safe_workers(workers, getattr(solver, "options", None) or {})
            self.kernel_loading = KernelLoading(self._physics.device, workers)
        self.kernel_loading.add(modules)
        return self.kernels_loaded() if wait else None

    def kernels_loaded(self):
        """After the first frame: the modules loading beside it waited for (:attr:`kernel_load`)."""
        if self.kernel_loading is not None:
            loading, self.kernel_loading = self.kernel_loading, None
            self.kernel_load = loading.wait()
        return self.kernel_load

    def stop_loading(self) -> None:
        """The pool stops (a run that ran no frame, an environment's: its loads are not waited for)."""
        if self.kernel_loading is not None:
            self.kernel_loading.cancel(wait=False)
            self.kernel_loading = None

    def as_frame(self, n: int) -> bool:
        """Whether ``n`` steps run as one frame function (``solver.simulate_frame``): a Newton solver or MuJoCo-Warp
        exchanging on the device (``solver.simulates_frames``), no kinematic body (their poses are read from the
        stage between the steps)."""
        return n >= 1 and not self.kinematic and getattr(self._physics.solver, "simulates_frames", False)

    def step(self, n: int) -> bool:
        """Take ``n`` physics steps (the frame's, counted on the clock, which then ends the frame); whether they ran
        as one frame function (queued on the device, not waited for: checked by the device check)."""
        if self.kernel_load is None:
            self.load_kernels(wait=False)
        physics, clock = self._physics, self._clock
        as_frame = self.as_frame(n)
        t0 = time.perf_counter()
        try:
            if as_frame:  # one frame function (a CUDA graph where the device allows), the checks in it
                self._simulate_frame(n)
            for _ in range(0 if as_frame else n):
                if self.kinematic:
                    self.move_kinematic(clock.time_code_after(1))
                physics.solver.step(physics.state, physics.next, physics.control, None, clock.dt)
                physics.swap()
                clock.steps += 1
                if clock.first_step_seconds is None:
                    clock.first_step_seconds = time.perf_counter() - t0
        except SimulationError as e:
            raise SimulationError(e.reason, frame=clock.frame + 1, label=e.label) from None
        clock.end_frame()
        clock.wall_seconds += time.perf_counter() - t0
        return as_frame

    def _simulate_frame(self, n: int) -> None:
        """``n`` steps as the solver's frame function (see :meth:`as_frame`), the blow-up checks on the device last
        (:mod:`~newton_usd.simulation.device_check`)."""
        check = self._check.prepare_device_check()
        physics, seconds = self._physics, n * self._clock.dt
        physics.solver.simulate_frame(
            physics.state, physics.next, physics.control, self._clock.dt, n,
            after=lambda state: check.launch(state, seconds), after_key=(check.key, seconds),
        )  # fmt: skip
        self._clock.steps += n

    def move_kinematic(self, time_code: float) -> None:
        """Kinematic bodies to their prims' (animated) world transforms at ``time_code``: their poses, and their free
        joints' coordinates where the solver steps joint coordinates (``kinematic_joint_q``: Featherstone). Poses the
        solver was given last into this state are not written again (every solver carries a kinematic body's pose
        through a step; MuJoCo moves a mocap body, and then computes its position stage anew, only when written)."""
        physics = self._physics
        cache = UsdGeom.XformCache(time_code)
        frame = physics.imported.frame
        poses = []
        for _, prim, _ in self.kinematic:
            xf = Gf.Transform(cache.GetLocalToWorldTransform(prim))
            pos, rot = frame.world_pose_to_sim(
                np.array(xf.GetTranslation(), dtype=np.float64), gf_to_xyzw(xf.GetRotation().GetQuat())
            )
            poses.append(np.concatenate([pos, rot]))
        poses = np.array(poses, dtype=np.float32)
        state, written = physics.state, self._kinematic_written
        key = (id(physics.solver), id(state))
        last = written.get(key)
        if last is not None and last[0] is state and np.array_equal(last[1], poses):
            return
        written[key] = (state, poses)
        body_q = state.body_q.numpy()
        joint_q = state.joint_q.numpy() if physics.solver.kinematic_joint_q else None
        for (rows, _, coordinates), pose in zip(self.kinematic, poses, strict=True):
            body_q[rows] = pose
            if joint_q is not None:
                free = coordinates[coordinates[:, 0] >= 0]
                joint_q[free] = pose
        if not physics.device.is_cpu:  # numpy() was a copy
            state.body_q.assign(body_q)
            if joint_q is not None:
                state.joint_q.assign(joint_q)
