"""SolverMuJoCo: steps a Model with C MuJoCo (``backend="cpu"``) or MuJoCo-Warp (``backend="warp"``).

Both backends compile the same ``mujoco.MjSpec`` (see :mod:`~.mujoco.spec`). Every step pushes the model
coordinates of ``state_in`` (skipped when the engine holds them: ``state_in`` is the state this solver
wrote last, unchanged, so the engine keeps its own double-precision state), the drive controls and joint
forces (when they changed), steps the engine once, and gives ``state_out`` the new joint coordinates and
body poses and velocities. The warp backend writes them at once; the cpu backend leaves ``state_out``
pending and writes an array when it is read (see :mod:`~.mujoco.exchange`), so that a step costs what MuJoCo's
does plus a few microseconds.
"""

from __future__ import annotations

import copy
import logging
import operator

import mujoco
import numpy as np
import warp as wp

from ...core.quat import quat_conjugate, quat_multiply, quat_rotate, wxyz_to_xyzw, xyzw_to_wxyz
from ...core.types import DriveMode, JointType
from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError, SimulationError
from ..solver import SolverBase
from .convert import CoordinateMap
from .engine import BatchEngine, DataEngine
from .exchange import StateExchange, discard_pending
from .spec import UNLIMITED_EFFORT, build_spec, compile_spec, mj_inertial
from .warp_exchange import DeviceExchange

logger = logging.getLogger("newton_usd")

BACKENDS = ("auto", "cpu", "warp")


def _log_mujoco_warning(message: str) -> None:
    """MuJoCo's warnings (``Nan, Inf or huge value in QACC ...``) through our logger, not printed raw."""
    logger.warning("MuJoCo: %s", message.strip())


def route_mujoco_warnings() -> None:
    """Send MuJoCo's warnings to ``logging.getLogger("newton_usd")`` (MuJoCo prints them to stdout and appends them
    to MUJOCO_LOG.TXT in the working directory otherwise); a handler someone else installed is left alone."""
    if mujoco.get_mju_user_warning() is None:
        mujoco.set_mju_user_warning(_log_mujoco_warning)


class SolverMuJoCo(SolverBase):
    """MuJoCo backend.

    Args:
        model: the Model to simulate.
        backend: ``"cpu"`` steps C MuJoCo (double precision); ``"warp"`` steps mujoco_warp on the
            model's Warp device (also on Warp's CPU device, slowly); ``"auto"`` picks ``"warp"`` on a
            CUDA device and ``"cpu"`` otherwise.
        nconmax: contacts per world for the warp backend (default: from the geom count).
        njmax: constraint rows per world for the warp backend (default: from nconmax and joints).
        memory: bytes of C MuJoCo's arena per world (contacts, constraints, solver stack; default: from the
            model, see :func:`~newton_usd.solvers.mujoco.spec.arena_bytes`); a run that fills it stops.
        **options: MuJoCo options by MuJoCo's name (``integrator="euler"``, ``iterations=50``,
            ``cone="elliptic"``, ``o_solref=(0.02, 1)``, ...; tokens or enum values). They override the
            model's ``mjc:option:*`` values, which override the defaults (implicitfast integrator,
            MuJoCo's defaults otherwise). See ``spec.OPTION_NAMES``.

    The engine objects are reachable as ``mj_model``/``mj_data`` (both backends),
    ``mjw_model``/``mjw_data`` (warp backend) and ``mj_batch`` (cpu backend with several worlds, or RK4:
    the ``mujoco.batch.Batch``; one world steps one MjData and ``mj_batch`` is None).

    On the cpu backend a step's ``state_out`` is pending: ``joint_q``, ``joint_qd``, ``body_q`` and
    ``body_qd`` are converted from MuJoCo's values when read (arrays someone holds are written at every
    step), and a pending State stepped from again goes back into MuJoCo exactly, with nothing pushed when
    MuJoCo still holds it. What a user reads is as if every step wrote the four arrays; arrays edited in
    place are pushed, as before (see :mod:`~.mujoco.exchange`). A pending State keeps its solver alive.
    """

    def __init__(
        self,
        model,
        backend: str = "auto",
        *,
        nconmax: int | None = None,
        njmax: int | None = None,
        memory: int | None = None,
        **options,
    ):
        super().__init__(model)
        route_mujoco_warnings()
        self.options = {"backend": backend, "nconmax": nconmax, "njmax": njmax, "memory": memory, **options}
        if backend not in BACKENDS:
            raise NewtonUsdError(f"unknown MuJoCo backend {backend!r}; valid: {', '.join(BACKENDS)}")
        if backend == "auto":
            backend = "warp" if model.device.is_cuda else "cpu"
        self.backend = backend
        self.num_worlds = model.num_worlds
        self.diagnostics = Diagnostics()
        # One MuJoCo model for world 0; every world is a copy of it (ModelBuilder.replicate).
        world0 = model.world_view(0)
        if memory is not None and not (isinstance(memory, int) and memory > 0):
            raise NewtonUsdError(f"memory must be a number of bytes > 0, got {memory!r}")
        spec, handles = build_spec(world0, self.diagnostics, options, memory)
        self._spec = spec
        self.mj_model, self.spec_map = compile_spec(spec, handles, world0, file=model.source)
        if self.mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS and backend == "warp":
            self.diagnostics.add("MuJoCo-Warp has no PGS solver: the warp backend uses Newton", "PhysicsScene")
            self.mj_model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
        self.diagnostics.emit(model.source)
        self.map = CoordinateMap(world0, self.mj_model, self.spec_map)
        self._mjc_ctrl = self.spec_map.mjc_actuator_ctrl
        self._mjc_built = self._mjc_ctrl >= 0
        self._ctl = None  # the Control last pushed, its arrays, views and bytes (see _push_controls)
        self._exchange = None  # the cpu backend's StateExchange
        self._dev = None  # the warp backend's DeviceExchange (the exchange in Warp kernels)
        self._dev_last = None  # (state, joint_q, joint_qd) as the device exchange wrote them last
        self._graphs = {}  # the warp backend's captured steps on CUDA: see _step_warp_device
        self._use_graphs = self.device.is_cuda  # (False once a capture failed; tests set it on Warp's CPU device)
        # Two phases (see _advance_warp) need the position and velocity stages done again on the device when a
        # state was written, a conditional graph node (wp.capture_if) in a captured step. MuJoCo-Warp allocates
        # scratch arrays in some of them (the cartpole sample's, an ant's), which CUDA does not allow in a
        # conditional node's body: once such a capture fails, the step is one phase (as RK4's), and captured so.
        self._conditional_step1 = True
        self._init_keyframes(world0)
        mocap = self.spec_map.body_mocap
        self._mocap_body = np.nonzero(mocap >= 0)[0]  # kinematic bodies, moved from State.body_q
        self._mocap_id = mocap[self._mocap_body]
        self._dt = None
        self._last_out = None  # (state, joint_q bytes, joint_qd bytes) as this solver wrote them at once
        self._views = {}  # id(Warp array) -> (array, numpy view): see _host_view
        self._contacts_truncated = False  # (update_contacts said once that a buffer was too small)
        # Worlds share one MjModel until their parameters differ (per-world values, acceleration drives).
        self.mj_models = [self.mj_model] * self.num_worlds
        self._data = mujoco.MjData(self.mj_model)  # world 0 (warp: the host copy), and scratch
        self.mj_batch = self.mjw_model = self.mjw_data = None
        self._engine = None  # the cpu backend's DataEngine or BatchEngine
        self._set_gains(model)
        self._init_acceleration_drives(world0)
        self._has_accel = bool(len(self._accel))
        self._placements = _world_placements(model, self.mj_model, self.spec_map)
        if (
            self._worlds_differ(model, self._IN_PLACE - {"gravity"})
            or (self.num_worlds > 1 and len(self._accel))
            or self._placements
        ):
            self._split_models(model)
        # Start from the model's initial state.
        qpos, qvel = self._to_mujoco(model.joint_q, model.joint_qd)
        self._data.qpos[:], self._data.qvel[:] = qpos[0], qvel[0]
        mujoco.mj_forward(self.mj_model, self._data)
        if backend == "cpu":
            self._init_cpu(qpos, qvel)
        else:
            self._init_warp(nconmax, njmax, qpos, qvel)
        self._scale_acceleration_drives()

    name = "mujoco"

    @classmethod
    def options_from_scene(cls, settings: dict) -> dict:
        return {"backend": settings.get("mujoco_backend") or "auto"}

    @property
    def mj_data(self) -> mujoco.MjData:
        """World 0's ``MjData``: on the cpu backend a copy of the engine's as of the last step (positions,
        velocities and contacts current), on the warp backend the host data it started from."""
        if self._engine is not None:
            self._engine.get_data(0, self._data)
        return self._data

    # ------------------------------------------------------------------ keyframes
    def _init_keyframes(self, world0):
        """Fill the compiled model's keyframes (``key_*``) from the model's keyframes (model coordinates)
        and their MuJoCo extras (``model.mujoco.keyframe``: MjcActuator controls and activations, mocap
        poses), so that ``mj_resetDataKeyframe`` and :meth:`reset_to_keyframe` agree."""
        m = self.mj_model
        if not m.nkey:
            return
        qpos, qvel = np.array(m.key_qpos), np.array(m.key_qvel)
        self.map.to_mujoco(world0.keyframe_joint_q, world0.keyframe_joint_qd, qpos, qvel)
        m.key_qpos[:], m.key_qvel[:] = qpos, qvel
        extras = getattr(world0.mujoco, "keyframe", None) or {}
        actuators = {e["path"]: i for i, e in enumerate(getattr(world0.mujoco, "actuator", None) or [])}
        bodies = {label: b for b, label in enumerate(world0.body_label)}
        for k, label in enumerate(world0.keyframe_label):
            extra = extras.get(label, {})
            for path, value in extra.get("ctrl", {}).items():
                a = self._mjc_ctrl[actuators[path]] if path in actuators else -1
                if a >= 0:
                    m.key_ctrl[k, a] = value
            for path, value in extra.get("act", {}).items():
                a = self._mjc_ctrl[actuators[path]] if path in actuators else -1
                if a >= 0 and m.actuator_actnum[a]:
                    adr = m.actuator_actadr[a]
                    m.key_act[k, adr : adr + m.actuator_actnum[a]] = value
            for body, (pos, quat) in extra.get("mocap", {}).items():
                mocap = self.spec_map.body_mocap[bodies[body]] if body in bodies else -1
                if mocap >= 0:
                    m.key_mpos[k, 3 * mocap : 3 * mocap + 3] = pos  # nmocap positions in a row
                    m.key_mquat[k, 4 * mocap : 4 * mocap + 4] = xyzw_to_wxyz(quat)

    def reset_to_keyframe(self, state, key, control=None) -> None:
        """Put every world into keyframe ``key`` (index or label), as ``mj_resetDataKeyframe`` does: joint
        coordinates and velocities, actuator activations and mocap (kinematic) poses, and, when
        ``control`` is given, the MjcActuator controls; ``state`` gets the keyframe's body poses."""
        k = self.keyframe_index(key)
        m = self.mj_model
        W = self.num_worlds
        # Each world's own row (worlds placed elsewhere have their own free-joint poses).
        qpos = np.broadcast_to(m.key_qpos[k], (W, m.nq)).copy()
        qvel = np.broadcast_to(m.key_qvel[k], (W, m.nv)).copy()
        rows_q = self.model.keyframe_joint_q[k].reshape(W, -1)
        rows_qd = self.model.keyframe_joint_qd[k].reshape(W, -1)
        self.map.to_mujoco(rows_q, rows_qd, qpos, qvel)
        if self.backend == "cpu":
            e = self._engine
            if self._exchange.live is not None:
                self._exchange.freeze(self._exchange.live)  # (a pending state keeps its values)
            e.qpos[:], e.qvel[:] = qpos, qvel
            if m.na:
                e.act[:] = m.key_act[k]
            if len(self._mocap_body):
                e.mocap_pos[:], e.mocap_quat[:] = m.key_mpos[k], m.key_mquat[k]
            e.forward()
            if not self._exchange.give(state):
                self._pull(qpos, qvel, self._body_out, state)
        else:
            w = self.mjw_data
            w.qpos.assign(qpos.astype(np.float32))
            w.qvel.assign(qvel.astype(np.float32))
            if m.na:
                w.act.assign(np.broadcast_to(m.key_act[k], (W, m.na)).astype(np.float32))
            if len(self._mocap_body):
                w.mocap_pos.assign(np.broadcast_to(m.key_mpos[k], (W, m.nmocap, 3)).astype(np.float32))
                w.mocap_quat.assign(np.broadcast_to(m.key_mquat[k], (W, m.nmocap, 4)).astype(np.float32))
            with wp.ScopedDevice(self.device):
                for stage in (self._mjw.kinematics, self._mjw.com_pos, self._mjw.com_vel):
                    stage(self.mjw_model, w)
            self._warp_stale = True
            self._dev_last = None
            body = tuple(getattr(w, n).numpy() for n in self._BODY_FIELDS)
            self._pull(qpos, qvel, body, state)
        if control is not None and len(self._mjc_ctrl):
            built = self._mjc_ctrl >= 0
            ctrl = self._per_world(control.mujoco.ctrl)
            ctrl[:, built] = m.key_ctrl[k, self._mjc_ctrl[built]]
            _store(control.mujoco.ctrl, ctrl.reshape(-1).astype(np.float32))

    # ------------------------------------------------------------------ worlds
    def _per_world(self, array, dtype=np.float64) -> np.ndarray:
        """A model-sized Warp array as numpy ``(num_worlds, per world, ...)``."""
        a = array.numpy()
        return a.reshape((self.num_worlds, -1) + a.shape[1:]).astype(dtype, copy=False)

    def _bundle_views(self, holder, names):
        """:meth:`_host_view` of the arrays ``names`` of a State or Control (cached per holder while it
        keeps the same arrays), or None if one is not on the CPU."""
        key = (id(holder), names)
        hit = self._views.get(key)
        arrays = tuple(getattr(holder, n) for n in names)
        if hit is not None and all(a is b for a, b in zip(hit[0], arrays, strict=True)):
            return hit[1]
        views = tuple(self._host_view(a) for a in arrays)
        if any(v is None for v in views):
            return None
        self._views[key] = (arrays, views)
        return views

    def _host_view(self, array):
        """A ``(num_worlds, per world, ...)`` numpy view sharing a CPU Warp array's memory (cached: the
        per-step exchange writes and reads through it), or None for an array on another device."""
        hit = self._views.get(id(array))
        if hit is not None and hit[0] is array:
            return hit[1]
        if not array.device.is_cpu:
            return None
        if len(self._views) > 256:  # states come and go (resets): drop the old views
            self._views.clear()
        a = array.numpy()
        view = a.reshape((self.num_worlds, -1) + a.shape[1:])
        self._views[id(array)] = (array, view)
        return view

    def _to_mujoco(self, joint_q, joint_qd):
        """MuJoCo ``(qpos, qvel)``, ``(num_worlds, nq|nv)``, from model coordinate arrays."""
        qpos = np.zeros((self.num_worlds, self.mj_model.nq))
        qvel = np.zeros((self.num_worlds, self.mj_model.nv))
        self.map.to_mujoco(self._per_world(joint_q), self._per_world(joint_qd), qpos, qvel)
        return qpos, qvel

    def _set_gains(self, model):
        self._ke = self._per_world(model.joint_target_ke)
        self._kd = self._per_world(model.joint_target_kd)
        self._ctl = None  # the controls depend on the gains: push them at the next step
        if self._dev is not None:
            self._dev.set_gains(self._ke, self._kd)  # (in place)

    def _worlds_differ(self, model, names) -> bool:
        """Whether any value named in ``names`` differs between the worlds of ``model``."""
        if self.num_worlds == 1:
            return False
        for name in names:
            if name == "gravity":
                continue
            values = self._per_world(getattr(model, name), np.float64).reshape(self.num_worlds, -1)
            if not np.array_equal(values, np.broadcast_to(values[:1], values.shape)):
                return True
        return False

    def _split_models(self, model):
        """Give every world an MjModel of its own, holding that world's values (domain randomization)."""
        if self.mj_models[-1] is not self.mj_model:
            return
        self.mj_models = [self.mj_model] + [copy.copy(self.mj_model) for _ in range(self.num_worlds - 1)]
        names = self._IN_PLACE - {"gravity"}
        if self._worlds_differ(model, names):
            for w in range(1, self.num_worlds):
                self._write_parameters(w, model.world_view(w), names)
        for (pos_field, quat_field), (ids, pos, quat) in self._placements.items():
            for w in range(1, self.num_worlds):
                m = self.mj_models[w]
                getattr(m, pos_field)[ids] = pos[w]
                getattr(m, quat_field)[ids] = quat[w]

    def _models_changed(self, stages: bool = True):
        """Hand the edited MjModel(s) to the engine; ``stages``: whether the edit can change the position and
        velocity stages (the cpu backend then recomputes them before the next step)."""
        if self._engine is not None:
            split = self.mj_models[-1] is not self.mj_model
            self._engine.set_models(self.mj_models if split else self.mj_model, stages)
        elif self.mjw_model is not None:
            with wp.ScopedDevice(self.device):
                self._put_warp_model()
            self._warp_stale = True
            self._graphs.clear()

    # ------------------------------------------------------------------ cpu backend
    def _init_cpu(self, qpos, qvel):
        """C MuJoCo (see :mod:`.engine`): one world steps one MjData; several worlds (and RK4, which needs
        ``mj_step``) a persistent ``mujoco.batch.Batch`` (``mj_batch``: one MjData per world, stepped on a C
        thread pool). Each step ends with the position and velocity stages computed at the new state, so
        body poses are those of the new coordinates (the next step starts from them at no extra cost)."""
        rk4 = self.mj_model.opt.integrator == mujoco.mjtIntegrator.mjINT_RK4
        if self.num_worlds == 1 and not rk4:
            e = DataEngine(self.mj_model)
        else:
            e = BatchEngine(self.mj_model, self.num_worlds)
        self._engine = e
        self.mj_batch = e.batch
        self._models_changed()
        self._qpos, self._qvel, self._ctrl, self._qfrc = e.qpos, e.qvel, e.ctrl, e.qfrc_applied
        self._body_out, self._xmat = e.body, e.xmat  # xmat: (num_worlds, nbody, 9)
        self._qpos[:], self._qvel[:] = qpos, qvel
        self._warning_counts, self._warnings_raw = e.warning_counts, e.warnings_raw  # (views: the engine updates them)
        self._warnings_seen = np.zeros_like(self._warning_counts)  # a bad initial state is reported at step 1
        self._warnings_seen_raw = np.zeros_like(self._warnings_raw).tobytes()
        e.forward()
        self._exchange = StateExchange(self)

    # ------------------------------------------------------------------ warp backend
    def _init_warp(self, nconmax, njmax, qpos, qvel):
        import mujoco_warp as mjw  # noqa: PLC0415  (heavy; only the warp backend needs it)

        self._mjw = mjw
        m = self.mj_model
        # step2 then step1 (see _advance_warp), except where that is not step: RK4, sleeping.
        sleep = m.opt.enableflags & int(mujoco.mjtEnableBit.mjENBL_SLEEP)
        self._two_phase = m.opt.integrator != mujoco.mjtIntegrator.mjINT_RK4 and not sleep
        self._warp_stale = True  # the state or the model was written since the last step1
        if nconmax is None:
            nconmax = max(64, 8 * m.ngeom)
        if njmax is None:
            njmax = max(128, 6 * nconmax + 2 * m.njnt + 6 * m.neq)
        self.nconmax, self.njmax = nconmax, njmax  # (per world)
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
        if self.mj_models[-1] is not self.mj_model:
            self._batch_warp_fields()

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
            self._graphs.clear()  # (a new array: captured steps read the old one)

    # ------------------------------------------------------------------ acceleration drives
    def _init_acceleration_drives(self, world0):
        """Drive actuators whose gains are accelerations, and the MuJoCo DOF each drives."""
        drives = self.map.actuator_dof
        accel = world0.joint_drive_acceleration.numpy()[drives] if len(drives) else []
        self._accel = np.nonzero(accel)[0]
        self._accel_mj_dof = np.array(
            [self.mj_model.jnt_dofadr[self.spec_map.dof_mj[dof]] for dof in drives[self._accel]], dtype=np.int64
        )

    def _scale_acceleration_drives(self, qpos=None):
        """Give each acceleration drive the gains ``m_eff * ke`` and ``m_eff * kd``, where ``m_eff`` is its
        DOF's effective inertia ``1 / (M^-1)_ii`` (the inertia a unit impulse on that DOF meets, the other
        DOFs free; armature included), so that the drive's motion does not depend on the masses.

        ``M`` is the mass matrix at the current state: the cpu backend's engine factorizes it at the end
        of every step; for the warp backend it is factorized here on the host from ``qpos`` (per world).
        """
        if not len(self._accel):
            return
        for w in range(self.num_worlds):
            self._scale_world_drives(w, None if qpos is None else qpos[w])
        if self._engine is not None:
            self._models_changed(stages=False)  # (actuator gains: used after the velocity stage)
        elif self.mjw_model is not None:
            self._batch_warp_fields(("actuator_gainprm", "actuator_biasprm"))

    def _scale_world_drives(self, w, qpos=None):
        m, d = self.mj_models[w], self._data
        n = len(self._accel)
        if qpos is not None:
            d.qpos[:] = qpos
            for stage in (mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_crb, mujoco.mj_factorM):
                stage(m, d)
        elif self._engine is not None:
            d.qLD[:], d.qLDiagInv[:] = self._engine.qLD[w], self._engine.qLDiagInv[w]
        unit = np.zeros((n, m.nv))
        unit[np.arange(n), self._accel_mj_dof] = 1.0
        response = np.zeros_like(unit)
        mujoco.mj_solveM(m, d, response, unit)
        m_eff = 1.0 / response[np.arange(n), self._accel_mj_dof]
        dofs = self.map.actuator_dof[self._accel]
        m.actuator_gainprm[self._accel, 0] = m_eff
        m.actuator_biasprm[self._accel, 1] = -m_eff * self._ke[w, dofs]
        m.actuator_biasprm[self._accel, 2] = -m_eff * self._kd[w, dofs]

    # ------------------------------------------------------------------ stepping
    def _set_timestep(self, dt: float):
        if dt == self._dt:
            return
        self._dt = dt
        for m in {id(m): m for m in self.mj_models}.values():
            m.opt.timestep = dt
        if self._engine is not None:
            self._models_changed()
        elif self.mjw_model is not None:
            self.mjw_model.opt.timestep.fill_(dt)
            self._warp_stale = True  # (constraint references depend on the timestep)
            self._graphs.clear()

    def _needs_push(self, state_in) -> bool:
        """Whether ``state_in``'s coordinates must go into MuJoCo: not when it is the state this solver
        wrote last (at once), unchanged (MuJoCo then goes on from its own double-precision state)."""
        last = self._last_out
        if last is None or last[0] is not state_in:
            return True
        return _raw(self, state_in.joint_q) != last[1] or _raw(self, state_in.joint_qd) != last[2]

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        if dt != self._dt:
            self._set_timestep(float(dt))
        e = self._engine
        if e is None:
            self._step_warp(state_in, state_out, control)
            return
        self._exchange.take(state_in)
        if control is not None:
            self._push_controls(control)
        if self._has_accel:
            if e.stale:
                e.forward()  # M at the pushed state
            self._scale_acceleration_drives()
        e.step()
        if self._warnings_raw.tobytes() != self._warnings_seen_raw:
            self._check_warnings()
        if not self._exchange.give(state_out):
            self._pull(self._qpos, self._qvel, self._body_out, state_out)

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
        with wp.ScopedDevice(self.device):
            if len(self._accel):
                self._scale_acceleration_drives(w.qpos.numpy().astype(np.float64))
            self._advance_warp()
        body = tuple(getattr(w, n).numpy() for n in self._BODY_FIELDS)
        self._pull(w.qpos.numpy(), w.qvel.numpy(), body, state_out)

    def _on_device(self, state_in, state_out, control) -> bool:
        """Whether a step can exchange with MuJoCo-Warp in Warp kernels (:mod:`.warp_exchange`): the arrays it
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
        last = self._dev_last
        compare = last is not None and last[0] is state_in
        compare = compare and last[1] is state_in.joint_q and last[2] is state_in.joint_qd
        with wp.ScopedDevice(self.device):
            if self._use_graphs and compare and not self._warp_stale:
                self._graph_step(state_in, state_out, control)
            else:
                self._device_step(state_in, state_out, control, compare)
        self._dev_last = (state_out, state_out.joint_q, state_out.joint_qd)
        self._last_out = None  # (what the numpy path compares with)

    def _device_step(self, state_in, state_out, control, compare):
        x, d = self._dev, self.mjw_data
        x.begin()
        x.push_state(state_in.joint_q, state_in.joint_qd, d, compare)
        if not compare:
            self._warp_stale = True
        if len(self._mocap_body):
            x.push_mocap(state_in.body_q, d)
        if control is not None:
            x.push_controls(control, d)
        if self._two_phase and self._conditional_step1 and not self._warp_stale:
            wp.capture_if(x.moved, on_true=self._mjw.step1, m=self.mjw_model, d=d)
        self._advance_warp()
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

    def _advance_warp(self):
        """One mujoco_warp step, after which the body fields (``xpos``, ``xquat``, ``cvel``, ``subtree_com``,
        ...) are those of the new state. As the cpu backend's DataEngine: ``step2`` then ``step1`` (the same
        computations as ``step``, the position and velocity stages done at the end of the step rather than at
        the start of the next), with a ``step1`` first when the state or the model was written since
        (``_warp_stale``). RK4 (``step2`` integrates with Euler) and sleeping (``step`` wakes and updates the
        sleeping trees first) take ``step`` and then the kinematics at the new state, and so does a step captured in
        a CUDA graph where the two phases' conditional ``step1`` cannot be (``_conditional_step1``)."""
        mjw, m, d = self._mjw, self.mjw_model, self.mjw_data
        if self._two_phase and self._conditional_step1:
            if self._warp_stale:
                mjw.step1(m, d)
            mjw.step2(m, d)
            mjw.step1(m, d)
        else:
            mjw.step(m, d)
            mjw.kinematics(m, d)
            mjw.com_pos(m, d)
            mjw.com_vel(m, d)
        self._warp_stale = False

    def _mocap_poses(self, state):
        """``(mocap_pos, mocap_quat)``, ``(num_worlds, n, 3|4)``, of the kinematic bodies in ``state``."""
        return self._mocap_poses_of(self._per_world(state.body_q))

    def _mocap_poses_of(self, body_q):
        """``(mocap_pos, mocap_quat)`` of the kinematic bodies in ``body_q`` rows ``(num_worlds, n, 7)``."""
        rows = body_q[:, self._mocap_body]
        return rows[..., :3], xyzw_to_wxyz(rows[..., 3:])

    _CONTROLS = ("joint_target_pos", "joint_target_vel", "joint_f")

    def _push_controls(self, control) -> None:
        """The cpu backend's controls into the batch's ``ctrl`` and ``qfrc_applied`` rows (as :meth:`_controls`
        computes them), when they changed: skipped while ``control`` is the Control pushed last with the
        same arrays holding the same bytes (the gains unchanged)."""
        cached = self._ctl
        if cached is not None and cached[0] is control:
            try:
                for get, array, view, raw in cached[1]:
                    if get(control) is not array or view.tobytes() != raw:
                        break
                else:
                    return
            except AttributeError:  # (an array it lacks, or None: not cached)
                pass
        mjc = getattr(getattr(control, "mujoco", None), "ctrl", None) if len(self._mjc_ctrl) else None
        arrays = tuple(getattr(control, n) for n in self._CONTROLS) + (mjc,)
        views = tuple(None if a is None else self._host_view(a) for a in arrays)
        if any(v is None for a, v in zip(arrays, views, strict=True) if a is not None):  # not on the CPU
            self._ctrl[:], self._qfrc[:] = self._controls(control)
            self._ctl = None
            return
        target_pos, target_vel, joint_f, mjc_view = views
        if len(self.map.actuator_dof):
            self._ctrl[:, : len(self.map.actuator_dof)] = self.map.ctrl(self._ke, self._kd, target_pos, target_vel)
        self.map.qfrc(joint_f, self._qfrc)
        if mjc_view is not None:
            built = self._mjc_built
            self._ctrl[:, self._mjc_ctrl[built]] = mjc_view[:, built]
        # What the next step compares: the drive targets only where there are drives.
        watched = [2] + ([0, 1] if len(self.map.actuator_dof) else []) + ([3] if len(self._mjc_ctrl) else [])
        self._ctl = (
            control,
            tuple(
                (self._CONTROL_GETTERS[i], arrays[i], views[i], None if views[i] is None else views[i].tobytes())
                for i in watched
            ),
        )

    _CONTROL_GETTERS = tuple(operator.attrgetter(n) for n in _CONTROLS + ("mujoco.ctrl",))

    def _controls(self, control):
        """MuJoCo ``(ctrl, qfrc_applied)``, ``(num_worlds, nu|nv)``, from a Control: the drive actuators
        first (``ke * target_pos + kd * target_vel``), then the MjcActuator prims' controls."""
        ctrl = np.zeros((self.num_worlds, self.mj_model.nu))
        n_drives = len(self.map.actuator_dof)
        if n_drives:
            targets = self._per_world(control.joint_target_pos), self._per_world(control.joint_target_vel)
            ctrl[:, :n_drives] = self.map.ctrl(self._ke, self._kd, *targets)
        qfrc = np.zeros((self.num_worlds, self.mj_model.nv))
        self.map.qfrc(self._per_world(control.joint_f), qfrc)
        mjc = getattr(getattr(control, "mujoco", None), "ctrl", None)
        if mjc is not None and len(self._mjc_ctrl):
            built = self._mjc_ctrl >= 0
            ctrl[:, self._mjc_ctrl[built]] = self._per_world(mjc)[:, built]
        return ctrl, qfrc

    _BODY_FIELDS = ("xpos", "xquat", "xipos", "cvel", "subtree_com")

    _BAD_STATE = (
        (mujoco.mjtWarning.mjWARN_BADQPOS, "position"),
        (mujoco.mjtWarning.mjWARN_BADQVEL, "velocity"),
        (mujoco.mjtWarning.mjWARN_BADQACC, "acceleration"),
    )

    def _check_warnings(self):
        """C MuJoCo silently resets a simulation whose state goes NaN/Inf/huge; report that as a blow-up."""
        counts = self._warning_counts  # (world, warning)
        if self._warnings_raw.tobytes() == self._warnings_seen_raw:  # nothing new: the usual case, cheaply
            return
        self._warnings_seen_raw = self._warnings_raw.tobytes()
        new = counts > self._warnings_seen
        self._warnings_seen = counts.copy()
        for index, what in self._BAD_STATE:
            hit = np.nonzero(new[:, int(index)])[0]
            if not len(hit):
                continue
            w = int(hit[0])
            dof = int(self._engine.warning_info[w, int(index)])
            label = None
            if 0 <= dof < self.mj_model.nv:
                mj_joint = int(self.mj_model.dof_jntid[dof])
                hits = np.nonzero(self.spec_map.joint_mj == mj_joint)[0]
                label = self.model.joint_label[int(hits[0])] if len(hits) else None
            where = f" in world {w}" if self.num_worlds > 1 else ""
            reason = f"the {what} became NaN, infinite or huge{where} (the simulation blew up)"
            raise SimulationError(reason, label=label)
        if (
            new[:, int(mujoco.mjtWarning.mjWARN_CNSTRFULL)].any()
            or new[:, int(mujoco.mjtWarning.mjWARN_CONTACTFULL)].any()
        ):
            raise SimulationError(
                f"MuJoCo's arena of {self.mj_model.narena / 2**20:.0f} MiB is full: contacts or constraints would be "
                "dropped (give more: usdsim --mujoco-memory MIB, Simulation.open(mujoco_memory=bytes))"
            )

    def _pull(self, qpos, qvel, body, state_out):
        """MuJoCo's state into ``state_out`` at once (the warp backend, and States the cpu backend cannot leave
        pending): straight into views of its arrays on the CPU."""
        discard_pending(state_out)
        views = self._bundle_views(state_out, ("joint_q", "joint_qd", "body_q", "body_qd"))
        if views is not None:
            jq, jqd, body_q, body_qd = views
            cpu_rows = self._engine is not None and qpos is self._qpos  # (the engine's: its xmat is current)
            xmat = self._xmat.reshape(self._xmat.shape[:-1] + (3, 3)) if cpu_rows else None
            self.map.from_mujoco(qpos, qvel, jq, jqd, xmat)
            self.map.body_state_into(*body, body_q, body_qd)
            self._last_out = (state_out, jq.tobytes(), jqd.tobytes())
            return
        W = self.num_worlds
        jq = np.zeros((W, self.map.model_nq))
        jqd = np.zeros((W, self.map.model_nv))
        self.map.from_mujoco(np.asarray(qpos, dtype=np.float64), np.asarray(qvel, dtype=np.float64), jq, jqd)
        body_q, body_qd = self.map.body_state(*(np.asarray(x, dtype=np.float64) for x in body))
        jq32, jqd32 = jq.reshape(-1).astype(np.float32), jqd.reshape(-1).astype(np.float32)
        _store(state_out.joint_q, jq32)
        _store(state_out.joint_qd, jqd32)
        _store(state_out.body_q, body_q.reshape(-1, 7))
        _store(state_out.body_qd, body_qd.reshape(-1, 6))
        self._last_out = (state_out, jq32.tobytes(), jqd32.tobytes())

    def save_mjcf(self, path) -> None:
        """Write the MuJoCo model this solver built (world 0) as MJCF, for debugging."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._spec.to_xml())

    # ------------------------------------------------------------------ live edits
    _IN_PLACE = frozenset(
        {
            "gravity", "body_mass", "body_inertia", "body_com", "body_inv_mass", "body_inv_inertia",
            "joint_limit_lower", "joint_limit_upper", "joint_limited", "joint_target_ke", "joint_target_kd",
            "joint_target_pos", "joint_target_vel", "joint_effort_limit", "joint_armature", "joint_friction",
            "shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling",
        }
    )  # fmt: skip
    """Model values :meth:`update_parameters` writes into the compiled MuJoCo model (the targets are
    controls, read each step). They may differ between worlds (domain randomization)."""

    def update_parameters(self, model, names) -> set:
        names = set(names)
        if "joint_target_mode" in names:
            # A drive switching between position, velocity and both keeps its actuator (the gains are
            # its parameters); a DOF gaining or losing its drive changes the actuators.
            driven = model.joint_target_mode.numpy() != int(DriveMode.NONE)
            if np.array_equal(driven, self.model.joint_target_mode.numpy() != int(DriveMode.NONE)):
                names.discard("joint_target_mode")
        leftover = names - self._IN_PLACE
        if leftover:
            return leftover
        if self._exchange is not None:  # pending states: their body velocities are of the model as it was
            self._exchange.fill_pending()
        if self._worlds_differ(model, names):
            self._split_models(model)
        self._set_gains(model)
        shared = self.mj_models[-1] is self.mj_model
        for w in range(1 if shared else self.num_worlds):
            self._write_parameters(w, model.world_view(w), names)
        self._models_changed()
        self.model = model
        return set()

    def _write_parameters(self, w, world, names):
        """Write the values named in ``names`` of the one-world model ``world`` into world ``w``'s MjModel."""
        m, smap = self.mj_models[w], self.spec_map
        if "gravity" in names:
            m.opt.gravity[:] = np.array(world.gravity, dtype=np.float64)
        if names & {"body_mass", "body_inertia", "body_com"}:
            mass, inertia, com = (
                getattr(world, n).numpy().astype(np.float64) for n in ("body_mass", "body_inertia", "body_com")
            )
            for b, mb in enumerate(smap.body_mj):
                m.body_mass[mb] = mass[b]
                m.body_inertia[mb], m.body_iquat[mb] = mj_inertial(mass[b], inertia[b])
                m.body_ipos[mb] = com[b]
        if names & {"joint_limit_lower", "joint_limit_upper", "joint_limited"}:
            lower, upper = world.joint_limit_lower.numpy(), world.joint_limit_upper.numpy()
            limited = world.joint_limited.numpy()
            ref = self.map.dof_ref
            for dof, mj in enumerate(smap.dof_mj):
                if mj >= 0:
                    m.jnt_limited[mj] = bool(limited[dof])
                    m.jnt_range[mj] = (lower[dof] + ref[dof], upper[dof] + ref[dof]) if limited[dof] else (0.0, 0.0)
        n_drives = len(self.map.actuator_dof)
        if names & {"joint_target_ke", "joint_target_kd"}:
            m.actuator_biasprm[:n_drives, 1] = -self._ke[w, self.map.actuator_dof]
            m.actuator_biasprm[:n_drives, 2] = -self._kd[w, self.map.actuator_dof]
        if "joint_effort_limit" in names:
            limit = world.joint_effort_limit.numpy().astype(np.float64)[self.map.actuator_dof]
            m.actuator_forcelimited[:n_drives] = limit < UNLIMITED_EFFORT
            m.actuator_forcerange[:n_drives] = np.stack([-limit, limit], axis=1)
        for name, field in (("joint_armature", m.dof_armature), ("joint_friction", m.dof_frictionloss)):
            if name in names:
                values = getattr(world, name).numpy()
                for dof, mj in enumerate(smap.dof_mj):
                    if mj >= 0:
                        field[m.jnt_dofadr[mj]] = values[dof]
        if names & {"shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling"}:
            mu = np.stack(
                [
                    getattr(world, n).numpy()
                    for n in ("shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling")
                ],
                axis=1,
            )
            built = smap.shape_mj >= 0
            m.geom_friction[smap.shape_mj[built]] = mu[built]
        if names & {"body_mass", "body_inertia", "body_com", "joint_armature"}:
            mujoco.mj_setConst(m, self._data)  # subtree masses, inverse weights (not cheap: only when needed)

    # ------------------------------------------------------------------ contacts
    def update_contacts(self, contacts) -> None:
        """Fill ``contacts`` with every world's contacts at the current state (world after world, up to its
        capacity) and their forces: the constraint forces the solve gives at that state (what the next step
        applies). cpu: each world's MjData copied, its forces computed (``mj_forwardSkip`` past the velocity
        stage) and read with ``mj_contactForce``; the engine is untouched. warp: actuation, acceleration and the
        constraint solve run again on the engine's data (the next step solves the same problem, warm started
        from it) and ``mujoco_warp.contact_force`` reads the forces."""
        if self.backend == "cpu":
            parts = self._cpu_contacts()
        else:
            parts = self._warp_contacts()
        world, geom, pos, frame, dist, force = parts
        n = min(len(world), contacts.capacity)
        if n < len(world) and not self._contacts_truncated:
            self._contacts_truncated = True
            logger.warning(
                "SolverMuJoCo.update_contacts: %d contacts, a Contacts buffer of %d: the later worlds' are left out "
                "(make it with model.contacts(capacity))", len(world), contacts.capacity,
            )  # fmt: skip
        contacts.rigid_contact_count = n
        pad = contacts.capacity - n
        # MuJoCo's geoms are world 0's shapes; world w's are as many shapes further (worlds one after another).
        gs = self.spec_map.geom_shape
        per_world = self.model.shape_count // self.num_worlds

        def shapes(side):
            s = gs[geom[:n, side]]
            return np.where(s >= 0, s + world[:n] * per_world, -1)

        def fill(array, values, fill_value=0):
            values = np.asarray(values)[:n]
            rest = np.full((pad,) + values.shape[1:], fill_value, dtype=values.dtype)
            scalar = getattr(array.dtype, "_wp_scalar_type_", array.dtype)
            array.assign(np.concatenate([values, rest]).astype(wp.dtype_to_numpy(scalar)))

        fill(contacts.rigid_contact_shape0, shapes(0), -1)
        fill(contacts.rigid_contact_shape1, shapes(1), -1)
        fill(contacts.rigid_contact_world, world)
        fill(contacts.rigid_contact_point, pos.reshape(-1, 3))
        fill(contacts.rigid_contact_normal, frame.reshape(-1, 9)[:, :3])
        fill(contacts.rigid_contact_depth, -dist)
        fill(contacts.rigid_contact_force, force.reshape(-1, 3))

    def _cpu_contacts(self):
        """Every world's contacts (world, geom pairs, points, frames, distances, world-frame forces) on the cpu
        backend."""
        e = self._engine
        if e.stale:
            e.forward()
        data = mujoco.MjData(self.mj_model)
        out = [[] for _ in range(6)]
        f6 = np.zeros(6)
        for w in range(self.num_worlds):
            e.get_data(w, data)
            m = self.mj_models[w]
            mujoco.mj_forwardSkip(m, data, int(mujoco.mjtStage.mjSTAGE_VEL), 1)
            n = data.ncon
            c = data.contact
            frames = np.array(c.frame[:n]).reshape(n, 3, 3)
            forces = np.zeros((n, 3))
            for i in range(n):
                mujoco.mj_contactForce(m, data, i, f6)
                forces[i] = f6[:3] @ frames[i]  # contact frame (normal, tangents) rows -> world
            world = (np.full(n, w), np.array(c.geom[:n]), np.array(c.pos[:n]), frames, np.array(c.dist[:n]), forces)
            for part, values in zip(out, world, strict=True):
                part.append(values)
        return tuple(np.concatenate(p) for p in out)

    def _warp_contacts(self):
        """:meth:`_cpu_contacts` on the warp backend (the forces from ``mujoco_warp.contact_force``)."""
        mjw, m, d = self._mjw, self.mjw_model, self.mjw_data
        with wp.ScopedDevice(self.device):
            if self._warp_stale:
                mjw.step1(m, d)
            mjw.fwd_actuation(m, d)
            mjw.fwd_acceleration(m, d)
            mjw.solve(m, d)
            n = int(d.nacon.numpy()[0])
            ids = wp.array(np.arange(n, dtype=np.int32), dtype=int)
            force = wp.zeros(n, dtype=wp.spatial_vector)
            if n:
                mjw.contact_force(m, d, ids, True, force)
        world = d.contact.worldid.numpy()[:n]
        order = np.argsort(world, kind="stable")
        return (
            world[order],
            d.contact.geom.numpy()[:n][order],
            d.contact.pos.numpy()[:n][order].astype(np.float64),
            d.contact.frame.numpy()[:n][order].reshape(n, 3, 3).astype(np.float64),
            d.contact.dist.numpy()[:n][order].astype(np.float64),
            force.numpy()[order][:, :3].astype(np.float64),
        )


_PLACEMENT_TOLERANCE = 1e-9


def _world_placements(model, mj_model, smap) -> dict:
    """The MuJoCo elements attached to the world body whose place differs between the worlds of ``model``
    (environments at their own places, see ``ModelBuilder.replicate``'s placements): the root bodies
    of non-free joints to the world (fixed bases: the world side of the joint) and jointless bodies, the
    static geoms and the sites on the world. Returns ``{(pos field, quat field): (MuJoCo ids, positions
    (worlds, n, 3), quaternions wxyz (worlds, n, 4))}`` for those that differ: world w's value is world 0's
    compiled one moved by the rigid motion from the element's place in world 0 to its place in world w
    (so what the compiler derived, e.g. a mesh geom's offset to its centroid, moves with it)."""
    W = model.num_worlds
    if W == 1:
        return {}
    per = {kind: getattr(model, f"{kind}_count") // W for kind in ("body", "shape", "joint")}
    per["site"] = getattr(model, "site_count", 0) // W
    parent, child = model.joint_parent.numpy()[: per["joint"]], model.joint_child.numpy()[: per["joint"]]
    jtype = model.joint_type.numpy()[: per["joint"]]
    first_joint = {}
    for j in range(per["joint"]):
        first_joint.setdefault(int(child[j]), j)
    roots, root_rows, root_source = [], [], []
    for b in range(per["body"]):
        j = first_joint.get(b)
        if j is None:
            roots.append(b)
            root_rows.append(b)
            root_source.append("body_q")
        elif parent[j] < 0 and jtype[j] != JointType.FREE:
            roots.append(b)
            root_rows.append(j)
            root_source.append("joint_X_p")
    groups = []
    if roots:
        places = np.zeros((W, len(roots), 7))
        for source in ("body_q", "joint_X_p"):
            sel = [k for k, src in enumerate(root_source) if src == source]
            if sel:
                rows = np.array(root_rows)[sel]
                places[:, sel] = model_rows(model, source, per["body" if source == "body_q" else "joint"], rows)
        groups.append((("body_pos", "body_quat"), smap.body_mj[roots], places))
    static = [s for s in np.nonzero(model.shape_body.numpy()[: per["shape"]] < 0)[0] if smap.shape_mj[s] >= 0]
    if static:
        places = model_rows(model, "shape_transform", per["shape"], np.array(static))
        groups.append((("geom_pos", "geom_quat"), smap.shape_mj[static], places))
    if per["site"]:
        world_sites = np.nonzero(model.site_body.numpy()[: per["site"]] < 0)[0]
        if len(world_sites):
            places = model_rows(model, "site_transform", per["site"], world_sites)
            groups.append((("site_pos", "site_quat"), smap.site_mj[world_sites], places))
    _check_world_constraints(model)
    out = {}
    for fields, ids, places in groups:
        # The rigid motion from world 0's place to world w's: D = P_w * inverse(P_0).
        q0_inv = quat_conjugate(places[0, :, 3:])
        dq = quat_multiply(places[:, :, 3:], np.broadcast_to(q0_inv, places[:, :, 3:].shape))
        dp = places[:, :, :3] - quat_rotate(dq, np.broadcast_to(places[0, :, :3], places[:, :, :3].shape))
        moved = (np.abs(dp).max(axis=(0, 2)) > _PLACEMENT_TOLERANCE) | (
            np.abs(np.abs(dq[..., 3]) - 1.0).max(axis=0) > _PLACEMENT_TOLERANCE
        )
        if not moved.any():
            continue
        ids = np.asarray(ids)[moved]
        dq, dp = dq[:, moved], dp[:, moved]
        pos0 = np.asarray(getattr(mj_model, fields[0]))[ids]
        quat0 = wxyz_to_xyzw(np.asarray(getattr(mj_model, fields[1]))[ids])
        pos = dp + quat_rotate(dq, np.broadcast_to(pos0, dp.shape))
        quat = quat_multiply(dq, np.broadcast_to(quat0, dq.shape))
        out[fields] = (ids, pos, xyzw_to_wxyz(quat))
    return out


def model_rows(model, name, per_world, rows) -> np.ndarray:
    """Rows ``rows`` (world 0 indices) of a model array in every world: ``(worlds, len(rows), ...)``."""
    values = getattr(model, name).numpy().astype(np.float64)
    return values.reshape((model.num_worlds, per_world) + values.shape[1:])[:, rows]


def _check_world_constraints(model) -> None:
    """Equality and distance constraints to the world must sit at the same place in every world (their
    anchors are compiled once, into world 0's model)."""
    W = model.num_worlds
    checks = []
    ne = model.equality_count // W
    if ne:
        to_world = np.nonzero((model.equality_body1.numpy()[:ne] < 0) | (model.equality_body2.numpy()[:ne] < 0))[0]
        to_world = to_world[model.equality_type.numpy()[to_world] != 2]  # (joint equalities have no anchors)
        for name in ("equality_anchor", "equality_anchor2", "equality_relpose"):
            values = getattr(model, name)
            values = values.numpy() if hasattr(values, "numpy") else np.asarray(values)
            checks.append((values.reshape((W, ne) + values.shape[1:])[:, to_world], model.equality_label, to_world))
    nd = getattr(model, "distance_count", 0) // W
    if nd:
        to_world = np.nonzero((model.distance_body0.numpy()[:nd] < 0) | (model.distance_body1.numpy()[:nd] < 0))[0]
        for name in ("distance_anchor0", "distance_anchor1"):
            values = getattr(model, name).numpy()
            checks.append((values.reshape((W, nd) + values.shape[1:])[:, to_world], model.distance_label, to_world))
    for values, labels, rows in checks:
        if not len(rows):
            continue
        same = np.isclose(values, values[:1], atol=_PLACEMENT_TOLERANCE, equal_nan=True)
        differ = ~same.reshape(W, len(rows), -1).all(axis=(0, 2))
        if differ.any():
            raise NewtonUsdError(
                f"{labels[int(rows[np.argmax(differ)])]}: a constraint to the world at a different place in each "
                "world is not supported by SolverMuJoCo yet (its anchor is compiled once, for world 0)"
            )


def _raw(solver, array) -> bytes:
    """The bytes of a Warp array (through the solver's cached view on the CPU): a cheap equality key."""
    view = solver._host_view(array)
    return view.tobytes() if view is not None else array.numpy().astype(np.float32).tobytes()


def _store(array: wp.array, values: np.ndarray) -> None:
    """Copy ``values`` into a Warp array: in place through a numpy view on the CPU, else a transfer."""
    if array.device.is_cpu:
        array.numpy().reshape(values.shape)[...] = values
    else:
        array.assign(values.astype(np.float32))
