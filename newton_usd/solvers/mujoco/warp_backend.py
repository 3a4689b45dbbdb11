"""The warp backend: MuJoCo-Warp on the model's Warp device; a step exchanges through Warp kernels
(:mod:`~.mujoco.warp_exchange`) and is captured in a CUDA graph where it can, or through numpy on the host."""

from __future__ import annotations

import logging

import mujoco
import numpy as np
import warp as wp

from ..frame import FrameCapture
from ..kernel_loading import modules_named
from ..velocity_limits import MuJoCoWarpSpeedBounds
from .exchange import discard_pending
from .warp_exchange import DeviceExchange
from .warp_pairs import WarpPairs

logger = logging.getLogger("newton_usd")

_MJW_MODULES = ("constraint", "derivative", "forward", "passive", "smooth", "solver", "support")
"""The modules of ``mujoco_warp._src`` whose kernels ``mujoco_warp.step`` launches on a rigid-body model (4.0)."""


def _warp_modules() -> list:
    names = [f"mujoco_warp._src.{name}" for name in _MJW_MODULES]
    return modules_named([*names, "newton_usd.solvers.mujoco.warp_exchange"])


class WarpBackend:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo` on MuJoCo-Warp (``backend="warp"``)."""

    def _init_warp(self, nconmax, njmax, qpos, qvel):
        import mujoco_warp as mjw  # noqa: PLC0415  (heavy; only the warp backend needs it)

        self._mjw = mjw
        m = self.mj_model
        # step2 then step1 (see _advance_warp), except where that is not step: RK4, sleeping.
        sleep = m.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_SLEEP)
        self._two_phase = m.opt.integrator != mujoco.mjtIntegrator.mjINT_RK4 and not sleep
        self._dev_bounds = None  # the bodies' speed bounds on the device (velocity_limits.MuJoCoWarpSpeedBounds)
        if self._speed_bounds is not None:  # (one phase: the next step starts from the scaled velocities)
            self._two_phase = False
            self._dev_bounds = MuJoCoWarpSpeedBounds(self._speed_bounds, m, self.num_worlds, self.device)
        self._warp_stale = True  # the state or the model was written since the last step1
        if nconmax is None:
            nconmax = max(64, 8 * m.ngeom)
        if njmax is None:
            njmax = max(128, 6 * nconmax + 2 * m.njnt + 6 * m.neq)
        self.nconmax, self.njmax = nconmax, njmax  # (per world)
        self.frame_capture = FrameCapture(self.device, "SolverMuJoCo's warp backend")
        with wp.ScopedDevice(self.device):
            self._put_warp_model()
            self.mjw_data = mjw.put_data(m, self._data, nworld=self.num_worlds, nconmax=nconmax, njmax=njmax)
            self.mjw_data.qpos.assign(qpos.astype(np.float32))
            self.mjw_data.qvel.assign(qvel.astype(np.float32))
            self._dev = DeviceExchange(
                self.map, self._mocap_body, self._mocap_id, self._mjc_ctrl, self.num_worlds, self.device
            )
            self._dev.set_gains(self._ke, self._kd)

    def _put_warp_model(self):
        """The MuJoCo-Warp model of world 0, with a per-world batch for every field that differs."""
        self.mjw_model = self._mjw.put_model(self.mj_model)
        self._warp_pairs = WarpPairs.of(self.mjw_model, self.mj_model)
        if self.mj_models[-1] is not self.mj_model:
            self._batch_warp_fields()

    def _switch_warp_pairs(self) -> bool:
        """Colliders switched on or off (the MjModel's contact bits written): MuJoCo-Warp's collision pair lists
        filtered again in place (:mod:`.warp_pairs`), and its bits; False where they cannot be (the model is then put
        anew): a geom given a bit it lacked when the model was put, or worlds whose bits differ."""
        m, pairs = self.mj_model, getattr(self, "_warp_pairs", None)
        bits = ("geom_contype", "geom_conaffinity", "body_contype", "body_conaffinity")
        if pairs is None or any(
            not np.array_equal(getattr(other, name), getattr(m, name)) for other in self.mj_models for name in bits
        ):
            return False
        all_pairs = self.mjw_model.opt.broadphase == self._mjw.BroadphaseType.NXN
        done = pairs.switch(m.geom_contype, m.geom_conaffinity, all_pairs)
        if done is None:
            return False
        for name in bits:
            target = getattr(self.mjw_model, name, None)
            if target is not None:
                target.assign(np.asarray(getattr(m, name), dtype=np.int32))
        if done == "resized":
            self._drop_graphs("the collision pair list's length changed")
        return True

    def _batch_warp_fields(self, names=None):
        hints = type(self.mjw_model).__annotations__
        for name in names or hints:
            shape = getattr(hints.get(name), "shape", None)
            if not shape or shape[0] != "*" or not hasattr(self.mj_model, name):
                continue
            values = np.stack([np.asarray(getattr(m, name)) for m in self.mj_models])
            if np.array_equal(values, np.broadcast_to(values[:1], values.shape)) and names is None:
                continue
            if values.dtype == np.float64:
                values = values.astype(np.float32)
            dtype = getattr(self.mjw_model, name).dtype
            setattr(self.mjw_model, name, wp.array(values, dtype=dtype, device=self.device))
            self._drop_graphs(f"the MuJoCo-Warp model's {name} replaced")  # (captured steps read the old one)

    def _drop_graphs(self, reason: str) -> None:
        """Forget the captured steps and frames: the MuJoCo-Warp model's arrays (or a value baked in) changed."""
        self._graphs.clear()
        capture = getattr(self, "frame_capture", None)
        if capture is not None:
            capture.invalidate(reason)

    @classmethod
    def setup_kernel_modules(cls, device, options: dict) -> list:
        """:meth:`kernel_modules`'s, where the solver will be the warp backend (``backend`` "warp", or "auto" on
        CUDA)."""
        backend = options.get("backend") or "auto"
        if backend == "cpu" or (backend == "auto" and not wp.get_device(device).is_cuda):
            return []
        import mujoco_warp  # noqa: F401, PLC0415  (its modules exist once imported: the warp backend imports it anyway)

        return _warp_modules()

    def kernel_modules(self) -> list:
        """MuJoCo-Warp's modules its step launches kernels of (the kernels it generates inside its step functions, a
        module each, are loaded as the first step meets them) and our exchange's, none for the cpu backend; and the
        joint actuators' (:mod:`.actuator_forces`) and the speed bounds' (:mod:`~..velocity_limits`)."""
        modules = _warp_modules() if getattr(self, "_mjw", None) is not None else []
        if getattr(self, "_dev_bounds", None) is not None:
            modules += self._dev_bounds.kernel_modules()
        return modules + (self.actuators.kernel_modules() if self.actuators is not None else [])

    @property
    def simulates_frames(self) -> bool:
        """Whether a frame's steps run as one function (:meth:`simulate_frame`): the warp backend exchanging on the
        device (no acceleration drive: their gains are scaled on the host)."""
        return self._engine is None and self._dev is not None and not self._has_accel

    def simulate_frame(self, state_0, state_1, control, dt: float, substeps: int, after=None, after_key=()) -> None:
        """``substeps`` steps of ``dt`` from ``state_0``, the result left in ``state_0`` (``state_1`` is not used),
        then ``after(state_0)`` (kernels only, e.g. a bounds check; ``after_key``: what it bakes in).

        The frame pushes the state and controls once, takes ``substeps`` MuJoCo-Warp steps (the kinematics of the
        new state once, at the end, where the steps are one phase) and pulls the state once: ``substeps`` single
        :meth:`step` calls compute the same. On CUDA it is one graph, captured once per (state, control, dt,
        substeps) and replayed (:attr:`frame_capture`); a model put anew drops it. A frame after the state was
        written by another path (a keyframe, the host exchange) or the model changed runs eagerly."""
        if substeps < 1:
            return
        if dt != self._dt:
            self._set_timestep(float(dt))
        if not self._on_device(state_0, state_0, control) or getattr(state_0, "_pending", None) is not None:
            a, b = state_0, state_1  # (the host exchange: single steps)
            for _ in range(substeps):
                self.step(a, b, control, None, dt)
                a, b = b, a
            if a is not state_0:
                for name in ("joint_q", "joint_qd", "body_q", "body_qd"):
                    wp.copy(getattr(state_0, name), getattr(a, name))
            if after is not None:
                after(state_0)
            return
        steady = self._pulled_last(state_0) and not self._warp_stale

        def frame():
            self._exchange_and_advance(state_0, state_0, control, steady, substeps)
            if after is not None:
                after(state_0)

        with wp.ScopedDevice(self.device):
            if steady:
                arrays = [state_0.joint_q, state_0.joint_qd, state_0.body_q, state_0.body_qd]
                if control is not None:
                    arrays += [getattr(control, n) for n in self._CONTROLS]
                    arrays.append(getattr(getattr(control, "mujoco", None), "ctrl", None))
                # (the arrays' addresses, what the graph bakes in: an id can be another array's once one is freed)
                key = (tuple(None if a is None else a.ptr for a in arrays), float(dt), int(substeps), after_key)
                self.frame_capture.run(key, frame, retry=self._one_phase_instead)
            else:
                frame()  # (pushes every world and computes the position stage again: never captured)
                self.frame_capture.eager_frames += 1
        self._dev_last = (state_0, state_0.joint_q, state_0.joint_qd)
        self._last_out = None

    def _step_warp(self, state_in, state_out, control):
        discard_pending(state_out)
        if self._on_device(state_in, state_out, control):
            self._step_warp_device(state_in, state_out, control)
            return
        # The exchange through numpy on the host: arrays on another device than the solver's, and models with
        # acceleration drives (their gains are scaled from the mass matrix at the pushed state, on the host).
        self._dev_last = None
        push = self._needs_push(state_in)
        qpos = qvel = ctrl = qfrc = None
        if push:
            qpos, qvel = self._to_mujoco(state_in.joint_q, state_in.joint_qd)
        if control is not None:
            ctrl, qfrc = self._controls(control)
        w = self.mjw_data
        if len(self._mocap_body):
            for name, values in zip(("mocap_pos", "mocap_quat"), self._mocap_poses(state_in), strict=True):
                full = getattr(w, name).numpy()
                values = values.astype(np.float32)
                if not np.array_equal(full[:, self._mocap_id], values):
                    full[:, self._mocap_id] = values
                    getattr(w, name).assign(full)
                    self._warp_stale = True  # (the position stage depends on the mocap poses)
        if push:
            w.qpos.assign(qpos.astype(np.float32))
            w.qvel.assign(qvel.astype(np.float32))
            self._warp_stale = True
        if ctrl is not None:
            if self.mj_model.nu:
                w.ctrl.assign(ctrl.astype(np.float32))
            w.qfrc_applied.assign(qfrc.astype(np.float32))
            if self.actuators is not None:
                self.actuators.pushed(w)
        with wp.ScopedDevice(self.device):
            if len(self._accel):
                self._scale_acceleration_drives(w.qpos.numpy().astype(np.float64))
            if self.actuators is not None:
                self.actuators.apply_device(w, control, self._dt)
            self._advance_warp()
        body = tuple(getattr(w, n).numpy() for n in self._BODY_FIELDS)
        self._pull(w.qpos.numpy(), w.qvel.numpy(), body, state_out)

    def _on_device(self, state_in, state_out, control) -> bool:
        """Whether a step can exchange with MuJoCo-Warp in Warp kernels (:mod:`~.mujoco.warp_exchange`): the arrays it
        reads and writes are on the solver's device, and no drive is an acceleration drive."""
        if self._dev is None or self._has_accel:
            return False
        arrays = [state_in.joint_q, state_in.joint_qd, state_out.joint_q, state_out.joint_qd]
        arrays += [state_out.body_q, state_out.body_qd]
        if len(self._mocap_body):
            arrays.append(state_in.body_q)
        if control is not None:
            arrays += [getattr(control, n) for n in self._CONTROLS]
            mjc = getattr(getattr(control, "mujoco", None), "ctrl", None)
            if mjc is not None and len(self._mjc_ctrl):
                arrays.append(mjc)
        return all(a is not None and a.device == self.device for a in arrays)

    def _step_warp_device(self, state_in, state_out, control):
        """A step with the exchange in Warp kernels. ``state_in`` the state written last (same arrays): only the
        worlds whose coordinates were edited since are pushed, and the position and velocity stages are computed
        again only if something was pushed (``wp.capture_if``), else every world is pushed. On CUDA, such a step
        (nothing stale on the host) is captured in a CUDA graph per (state_in, state_out, control) and replayed
        while they keep their arrays and the model its arrays (``_graphs``, cleared on model changes)."""
        compare = self._pulled_last(state_in)
        with wp.ScopedDevice(self.device):
            if self._use_graphs and compare and not self._warp_stale:
                self._graph_step(state_in, state_out, control)
            else:
                self._device_step(state_in, state_out, control, compare)
        self._dev_last = (state_out, state_out.joint_q, state_out.joint_qd)
        self._last_out = None  # (what the numpy path compares with)

    def _one_phase_instead(self, error) -> bool:
        """A capture failed (``error``): where it had the two phases' conditional ``step1``, capture one phase
        instead (True: try again), as :meth:`_graph_step` does."""
        if not (self._two_phase and self._conditional_step1):
            return False
        self._conditional_step1 = False
        logger.info(
            "SolverMuJoCo: the warp backend's frames are captured in one phase (MuJoCo-Warp's step, then the "
            "kinematics of the new state): its conditional step1 could not be (%s)", error,
        )  # fmt: skip
        return True

    def _pulled_last(self, state) -> bool:
        """Whether ``state`` is the one the device exchange pulled into last, with the same arrays: only its worlds
        edited since need pushing."""
        last = self._dev_last
        return last is not None and last[0] is state and last[1] is state.joint_q and last[2] is state.joint_qd

    def _device_step(self, state_in, state_out, control, compare):
        self._exchange_and_advance(state_in, state_out, control, compare, 1)

    def _exchange_and_advance(self, state_in, state_out, control, compare: bool, steps: int) -> None:
        """Push ``state_in`` (every world, or with ``compare`` the worlds edited since the last pull) and the
        controls, take ``steps`` steps, pull into ``state_out``: kernel launches only, capturable."""
        x, d = self._dev, self.mjw_data
        x.begin()
        x.push_state(state_in.joint_q, state_in.joint_qd, d, compare)
        if not compare:
            self._warp_stale = True
        if len(self._mocap_body):
            x.push_mocap(state_in.body_q, d)
        if control is not None:
            x.push_controls(control, d)
            if self.actuators is not None:
                self.actuators.pushed(d)
        if self._two_phase and self._conditional_step1 and not self._warp_stale:
            wp.capture_if(x.moved, on_true=self._mjw.step1, m=self.mjw_model, d=d)
        for i in range(steps):
            if self.actuators is not None:  # (each step's efforts at its state: NewtonActuators)
                self.actuators.apply_device(d, control, self._dt)
            self._advance_warp(kinematics=i == steps - 1)
        x.pull(d, state_out)

    def _graph_step(self, state_in, state_out, control):
        """:meth:`_device_step`, captured the second time for the same arrays and replayed after (on CUDA; Warp
        captures on its CPU device too, which the tests use)."""
        arrays = (state_in, state_in.joint_q, state_in.joint_qd, state_in.body_q, state_out, state_out.joint_q)
        arrays += (state_out.joint_qd, state_out.body_q, state_out.body_qd, control)
        if control is not None:
            arrays += tuple(getattr(control, n) for n in self._CONTROLS)
            arrays += (getattr(getattr(control, "mujoco", None), "ctrl", None),)
        key = tuple(id(a) for a in arrays)
        hit = self._graphs.get(key)
        if hit is not None and hit[0] is not None and all(a is b for a, b in zip(hit[1], arrays, strict=True)):
            wp.capture_launch(hit[0])
            return
        if hit is None or len(self._graphs) > 16:  # the first time: eagerly (modules load), then capture
            if len(self._graphs) > 16:
                self._graphs.clear()
            self._graphs[key] = (None, arrays)
            self._device_step(state_in, state_out, control, True)
            return
        graph, error = self._capture(state_in, state_out, control)
        if graph is None and self._conditional_step1 and self._two_phase:
            self._conditional_step1 = False  # (one phase: no conditional node)
            first = error
            graph, error = self._capture(state_in, state_out, control)
            if graph is not None:
                logger.info(
                    "SolverMuJoCo: the warp backend's step is captured in one phase (MuJoCo-Warp's step, then the "
                    "kinematics of the new state): its conditional step1 could not be (%s)",
                    first,
                )
        if graph is None:
            logger.warning("SolverMuJoCo: no CUDA graph for the warp backend's step (%s); stepping without", error)
            self._graphs[key] = (None, arrays)
            self._use_graphs = False
            self.frame_capture.never_capture(f"the step could not be captured ({error})")
            self._device_step(state_in, state_out, control, True)
            return
        self._graphs[key] = (graph, arrays)
        wp.capture_launch(graph)

    def _capture(self, state_in, state_out, control):
        """(:meth:`_device_step` captured in a CUDA graph, nothing run; None) or (None, why the capture failed)."""
        try:
            with wp.ScopedCapture(device=self.device) as capture:
                self._device_step(state_in, state_out, control, True)
        except Exception as e:  # noqa: BLE001  (no conditional graph nodes: CUDA older than 12.4, ...)
            return None, e
        return capture.graph, None

    def _advance_warp(self, kinematics: bool = True):
        """One mujoco_warp step, after which the body fields (``xpos``, ``xquat``, ``cvel``, ``subtree_com``,
        ...) are those of the new state. As the cpu backend's DataEngine: ``step2`` then ``step1`` (the same
        computations as ``step``, the position and velocity stages done at the end of the step rather than at
        the start of the next), with a ``step1`` first when the state or the model was written since
        (``_warp_stale``). RK4 (``step2`` integrates with Euler) and sleeping (``step`` wakes and updates the
        sleeping trees first) take ``step`` and then the kinematics at the new state, and so does a step captured in
        a CUDA graph where the two phases' conditional ``step1`` cannot be (``_conditional_step1``); without
        ``kinematics`` (a step followed by another) they leave them to the next ``step``, which computes them first."""
        mjw, m, d = self._mjw, self.mjw_model, self.mjw_data
        if self._two_phase and self._conditional_step1:
            if self._warp_stale:
                mjw.step1(m, d)
            mjw.step2(m, d)
            mjw.step1(m, d)
        else:
            mjw.step(m, d)
            if kinematics or self._dev_bounds is not None:
                mjw.kinematics(m, d)
                mjw.com_pos(m, d)
                mjw.com_vel(m, d)
            if self._dev_bounds is not None:  # (qvel scaled, cvel with it: the next step computes the rest anew)
                self._dev_bounds.apply(d)
        self._warp_stale = False
