"""Parameters: model values written into the compiled MuJoCo model(s) without rebuilding (live edits, domain
randomization, the time step, drive gains), and the edited models handed to the engine."""

from __future__ import annotations

import mujoco
import numpy as np
import warp as wp

from ...core.types import DriveMode
from .spec import UNLIMITED_EFFORT, mj_inertial


class Parameters:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo`'s values changed in place (:meth:`update_parameters`)."""

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
        """Take the values of ``model`` named in ``names`` into the compiled MuJoCo model(s), in every world
        (:attr:`_IN_PLACE`); a drive switching between position and velocity modes keeps its actuator. Returns
        the names it cannot take in place (the caller then rebuilds the solver)."""
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

    def _set_gains(self, model):
        self._ke = self._per_world(model.joint_target_ke)
        self._kd = self._per_world(model.joint_target_kd)
        self._ctl = None  # the controls depend on the gains: push them at the next step
        if self._dev is not None:
            self._dev.set_gains(self._ke, self._kd)  # (in place)

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
            self._drop_graphs("the model's parameters changed")

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
            self._drop_graphs("a new time step")
