"""SolverMuJoCo: steps a Model with C MuJoCo (``backend="cpu"``) or MuJoCo-Warp (``backend="warp"``).

Both backends compile the same ``mujoco.MjSpec`` (see :mod:`.spec`). Every step pushes the model
coordinates of ``state_in`` (skipped when ``state_in`` is the state this solver wrote last and is
unchanged, so the engine keeps its own double-precision state), the drive controls and joint forces,
steps the engine once, and pulls joint coordinates and body poses and velocities into ``state_out``.
"""

from __future__ import annotations

import logging

import mujoco
import numpy as np
import warp as wp

from ...core.types import DriveMode
from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError, SimulationError
from ..solver import SolverBase
from .convert import CoordinateMap
from .spec import UNLIMITED_EFFORT, build_spec, compile_spec, mj_inertial

logger = logging.getLogger("newton_usd")

BACKENDS = ("auto", "cpu", "warp")


class SolverMuJoCo(SolverBase):
    """MuJoCo backend.

    Args:
        model: the Model to simulate.
        backend: ``"cpu"`` steps C MuJoCo (double precision); ``"warp"`` steps mujoco_warp on the
            model's Warp device (also on Warp's CPU device, slowly); ``"auto"`` picks ``"warp"`` on a
            CUDA device and ``"cpu"`` otherwise.
        nconmax: contacts per world for the warp backend (default: from the geom count).
        njmax: constraint rows per world for the warp backend (default: from nconmax and joints).
        **options: MuJoCo options by MuJoCo's name (``integrator="euler"``, ``iterations=50``,
            ``cone="elliptic"``, ``o_solref=(0.02, 1)``, ...; tokens or enum values). They override the
            model's ``mjc:option:*`` values, which override the defaults (implicitfast integrator,
            MuJoCo's defaults otherwise). See ``spec.OPTION_NAMES``.

    The engine objects are reachable as ``mj_model``/``mj_data`` (both backends) and
    ``mjw_model``/``mjw_data`` (warp backend).
    """

    def __init__(
        self, model, backend: str = "auto", *, nconmax: int | None = None, njmax: int | None = None, **options
    ):
        super().__init__(model)
        if backend not in BACKENDS:
            raise NewtonUsdError(f"unknown MuJoCo backend {backend!r}; valid: {', '.join(BACKENDS)}")
        if backend == "auto":
            backend = "warp" if model.device.is_cuda else "cpu"
        self.backend = backend
        self.diagnostics = Diagnostics()
        spec, handles = build_spec(model, self.diagnostics, options)
        self.mj_model, self.spec_map = compile_spec(spec, handles, model, file=model.source)
        self.mj_data = mujoco.MjData(self.mj_model)
        if self.mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS and backend == "warp":
            self.diagnostics.add("MuJoCo-Warp has no PGS solver: the warp backend uses Newton", "PhysicsScene")
            self.mj_model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
        self.diagnostics.emit(model.source)
        self.map = CoordinateMap(model, self.mj_model, self.spec_map)
        self._mjc_ctrl = self.spec_map.mjc_actuator_ctrl
        self._ke = model.joint_target_ke.numpy().astype(np.float64)
        self._kd = model.joint_target_kd.numpy().astype(np.float64)
        self._dt = None
        self._last_out = None  # (state, joint_q, joint_qd) as this solver wrote them
        # Start from the model's initial state so that mj_data is valid before the first step.
        self.map.to_mujoco(
            model.joint_q.numpy().astype(np.float64),
            model.joint_qd.numpy().astype(np.float64),
            self.mj_data.qpos,
            self.mj_data.qvel,
        )
        mujoco.mj_forward(self.mj_model, self.mj_data)
        self.mjw_model = self.mjw_data = None
        self._init_acceleration_drives(model)
        if backend == "warp":
            self._init_warp(nconmax, njmax)

    # ------------------------------------------------------------------ warp backend
    def _init_warp(self, nconmax, njmax):
        import mujoco_warp as mjw  # noqa: PLC0415  (heavy; only the warp backend needs it)

        self._mjw = mjw
        m = self.mj_model
        if nconmax is None:
            nconmax = max(64, 8 * m.ngeom)
        if njmax is None:
            njmax = max(128, 6 * nconmax + 2 * m.njnt + 6 * m.neq)
        with wp.ScopedDevice(self.device):
            self.mjw_model = mjw.put_model(m)
            self.mjw_data = mjw.put_data(m, self.mj_data, nworld=1, nconmax=nconmax, njmax=njmax)

    # ------------------------------------------------------------------ acceleration drives
    def _init_acceleration_drives(self, model):
        """Drive actuators whose gains are accelerations, and the MuJoCo DOF each drives."""
        accel = model.joint_drive_acceleration.numpy()[self.map.actuator_dof] if len(self.map.actuator_dof) else []
        self._accel = np.nonzero(accel)[0]
        dofs = self.map.actuator_dof[self._accel]
        self._accel_mj_dof = np.array(
            [self.mj_model.jnt_dofadr[self.spec_map.dof_mj[dof]] for dof in dofs], dtype=np.int64
        )
        self._scale_acceleration_drives()

    def _scale_acceleration_drives(self, qpos=None):
        """Give each acceleration drive the gains ``m_eff * ke`` and ``m_eff * kd``, where ``m_eff`` is its
        DOF's effective inertia ``1 / (M^-1)_ii`` (the inertia a unit impulse on that DOF meets, the other
        DOFs free; armature included), so that the drive's motion does not depend on the masses.

        ``M`` is the mass matrix MuJoCo factorized at the start of the last step (C MuJoCo), or at
        ``qpos`` (the warp backend's state, factorized here on the host).
        """
        n = len(self._accel)
        if not n:
            return
        m, d = self.mj_model, self.mj_data
        if qpos is not None:
            d.qpos[:] = qpos
            for stage in (mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_crb, mujoco.mj_factorM):
                stage(m, d)
        unit = np.zeros((n, m.nv))
        unit[np.arange(n), self._accel_mj_dof] = 1.0
        response = np.zeros_like(unit)
        mujoco.mj_solveM(m, d, response, unit)
        m_eff = 1.0 / response[np.arange(n), self._accel_mj_dof]
        dofs = self.map.actuator_dof[self._accel]
        m.actuator_gainprm[self._accel, 0] = m_eff
        m.actuator_biasprm[self._accel, 1] = -m_eff * self._ke[dofs]
        m.actuator_biasprm[self._accel, 2] = -m_eff * self._kd[dofs]
        if self.mjw_model is not None:
            self.mjw_model.actuator_gainprm.assign(m.actuator_gainprm[None].astype(np.float32))
            self.mjw_model.actuator_biasprm.assign(m.actuator_biasprm[None].astype(np.float32))

    # ------------------------------------------------------------------ stepping
    def _set_timestep(self, dt: float):
        if dt == self._dt:
            return
        self._dt = dt
        self.mj_model.opt.timestep = dt
        if self.mjw_model is not None:
            self.mjw_model.opt.timestep.fill_(dt)

    def _needs_push(self, state_in) -> bool:
        last = self._last_out
        if last is None or last[0] is not state_in:
            return True
        return not (
            np.array_equal(state_in.joint_q.numpy(), last[1]) and np.array_equal(state_in.joint_qd.numpy(), last[2])
        )

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        self._set_timestep(float(dt))
        d = self.mj_data
        push = self._needs_push(state_in)
        if push:
            self.map.to_mujoco(
                state_in.joint_q.numpy().astype(np.float64),
                state_in.joint_qd.numpy().astype(np.float64),
                d.qpos,
                d.qvel,
            )
        if control is not None:
            if len(self.map.actuator_dof):
                d.ctrl[:] = self.map.ctrl(
                    self._ke, self._kd, control.joint_target_pos.numpy(), control.joint_target_vel.numpy()
                )
            self.map.qfrc(control.joint_f.numpy(), d.qfrc_applied)
            ctrl = getattr(getattr(control, "mujoco", None), "ctrl", None)
            if ctrl is not None and len(self._mjc_ctrl):
                built = self._mjc_ctrl >= 0
                d.ctrl[self._mjc_ctrl[built]] = ctrl.numpy()[built]
        if self.backend == "cpu":
            self._scale_acceleration_drives(d.qpos.copy() if push and len(self._accel) else None)
            mujoco.mj_step(self.mj_model, d)
            self._check_warnings()
            qpos, qvel = d.qpos, d.qvel
            body = (d.xpos, d.xquat, d.xipos, d.cvel, d.subtree_com)
        else:
            w = self.mjw_data
            if push:
                w.qpos.assign(d.qpos[None].astype(np.float32))
                w.qvel.assign(d.qvel[None].astype(np.float32))
            if control is not None:
                if self.mj_model.nu:
                    w.ctrl.assign(d.ctrl[None].astype(np.float32))
                w.qfrc_applied.assign(d.qfrc_applied[None].astype(np.float32))
            with wp.ScopedDevice(self.device):
                if len(self._accel):
                    self._scale_acceleration_drives(w.qpos.numpy()[0].astype(np.float64))
                self._mjw.step(self.mjw_model, w)
            qpos, qvel = w.qpos.numpy()[0], w.qvel.numpy()[0]
            body = tuple(a.numpy()[0] for a in (w.xpos, w.xquat, w.xipos, w.cvel, w.subtree_com))
        self._pull(qpos, qvel, body, state_out)

    _BAD_STATE = (
        (mujoco.mjtWarning.mjWARN_BADQPOS, "position"),
        (mujoco.mjtWarning.mjWARN_BADQVEL, "velocity"),
        (mujoco.mjtWarning.mjWARN_BADQACC, "acceleration"),
    )

    def _check_warnings(self):
        """C MuJoCo silently resets the state when it goes NaN/Inf/huge; report that as a blow-up instead."""
        for warning, what in self._BAD_STATE:
            info = self.mj_data.warning[warning]
            if info.number > 0:
                dof = int(info.lastinfo)
                label = None
                if 0 <= dof < self.mj_model.nv:
                    mj_joint = int(self.mj_model.dof_jntid[dof])
                    hits = np.nonzero(self.spec_map.joint_mj == mj_joint)[0]
                    label = self.model.joint_label[int(hits[0])] if len(hits) else None
                info.number = 0
                raise SimulationError(f"the {what} became NaN, infinite or huge (the simulation blew up)", label=label)

    def _pull(self, qpos, qvel, body, state_out):
        jq = np.zeros(self.map.model_nq)
        jqd = np.zeros(self.map.model_nv)
        self.map.from_mujoco(np.asarray(qpos, dtype=np.float64), np.asarray(qvel, dtype=np.float64), jq, jqd)
        body_q, body_qd = self.map.body_state(*(np.asarray(x, dtype=np.float64) for x in body))
        jq32, jqd32 = jq.astype(np.float32), jqd.astype(np.float32)
        _store(state_out.joint_q, jq32)
        _store(state_out.joint_qd, jqd32)
        _store(state_out.body_q, body_q)
        _store(state_out.body_qd, body_qd)
        self._last_out = (state_out, jq32, jqd32)

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
    controls, read each step)."""

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
        m, smap = self.mj_model, self.spec_map
        if "gravity" in names:
            m.opt.gravity[:] = np.array(model.gravity, dtype=np.float64)
        if names & {"body_mass", "body_inertia", "body_com"}:
            mass, inertia, com = (
                getattr(model, n).numpy().astype(np.float64) for n in ("body_mass", "body_inertia", "body_com")
            )
            for b, mb in enumerate(smap.body_mj):
                m.body_mass[mb] = mass[b]
                m.body_inertia[mb], m.body_iquat[mb] = mj_inertial(mass[b], inertia[b])
                m.body_ipos[mb] = com[b]
        if names & {"joint_limit_lower", "joint_limit_upper", "joint_limited"}:
            lower, upper = model.joint_limit_lower.numpy(), model.joint_limit_upper.numpy()
            limited = model.joint_limited.numpy()
            for dof, mj in enumerate(smap.dof_mj):
                if mj >= 0:
                    m.jnt_limited[mj] = bool(limited[dof])
                    m.jnt_range[mj] = (lower[dof], upper[dof]) if limited[dof] else (0.0, 0.0)
        n_drives = len(self.map.actuator_dof)
        if names & {"joint_target_ke", "joint_target_kd"}:
            self._ke = model.joint_target_ke.numpy().astype(np.float64)
            self._kd = model.joint_target_kd.numpy().astype(np.float64)
            m.actuator_biasprm[:n_drives, 1] = -self._ke[self.map.actuator_dof]
            m.actuator_biasprm[:n_drives, 2] = -self._kd[self.map.actuator_dof]
        if "joint_effort_limit" in names:
            limit = model.joint_effort_limit.numpy().astype(np.float64)[self.map.actuator_dof]
            m.actuator_forcelimited[:n_drives] = limit < UNLIMITED_EFFORT
            m.actuator_forcerange[:n_drives] = np.stack([-limit, limit], axis=1)
        for name, field in (("joint_armature", m.dof_armature), ("joint_friction", m.dof_frictionloss)):
            if name in names:
                values = getattr(model, name).numpy()
                for dof, mj in enumerate(smap.dof_mj):
                    if mj >= 0:
                        field[m.jnt_dofadr[mj]] = values[dof]
        if names & {"shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling"}:
            mu = np.stack(
                [
                    getattr(model, n).numpy()
                    for n in ("shape_material_mu", "shape_material_mu_torsional", "shape_material_mu_rolling")
                ],
                axis=1,
            )
            built = smap.shape_mj >= 0
            m.geom_friction[smap.shape_mj[built]] = mu[built]
        if names & {"body_mass", "body_inertia", "body_com", "joint_armature"}:
            mujoco.mj_setConst(m, self.mj_data)  # subtree masses, inverse weights (not cheap: only when needed)
        if self.mjw_model is not None:
            with wp.ScopedDevice(self.device):
                self.mjw_model = self._mjw.put_model(m)
        self.model = model
        return set()

    # ------------------------------------------------------------------ contacts
    def update_contacts(self, contacts) -> None:
        """Copy the engine's contacts of world 0 into ``contacts`` (up to its capacity)."""
        if self.backend == "cpu":
            c = self.mj_data.contact
            n = self.mj_data.ncon
            geom, pos, frame, dist = c.geom[:n], c.pos[:n], c.frame[:n], c.dist[:n]
        else:
            w = self.mjw_data
            n_all = int(w.nacon.numpy()[0])
            sel = np.nonzero(w.contact.worldid.numpy()[:n_all] == 0)[0]
            geom = w.contact.geom.numpy()[sel]
            pos = w.contact.pos.numpy()[sel]
            frame = w.contact.frame.numpy()[sel].reshape(-1, 9)
            dist = w.contact.dist.numpy()[sel]
            n = len(sel)
        n = min(n, contacts.capacity)
        gs = self.spec_map.geom_shape
        contacts.rigid_contact_count = n
        if n == 0:
            return
        contacts.rigid_contact_shape0.assign(
            np.concatenate([gs[geom[:n, 0]], np.full(contacts.capacity - n, -1)]).astype(np.int32)
        )
        contacts.rigid_contact_shape1.assign(
            np.concatenate([gs[geom[:n, 1]], np.full(contacts.capacity - n, -1)]).astype(np.int32)
        )
        pad3 = np.zeros((contacts.capacity - n, 3))
        contacts.rigid_contact_point.assign(np.concatenate([pos[:n], pad3]).astype(np.float32))
        contacts.rigid_contact_normal.assign(np.concatenate([np.asarray(frame)[:n, :3], pad3]).astype(np.float32))
        contacts.rigid_contact_depth.assign(
            np.concatenate([-np.asarray(dist[:n]), np.zeros(contacts.capacity - n)]).astype(np.float32)
        )


def _store(array: wp.array, values: np.ndarray) -> None:
    """Copy ``values`` into a Warp array: in place through a numpy view on the CPU, else a transfer."""
    if array.device.is_cpu:
        array.numpy().reshape(values.shape)[...] = values
    else:
        array.assign(values.astype(np.float32))
