"""Acceleration drives: drives whose gains are accelerations, scaled by their DOF's effective inertia at the
current state, so that the drive's motion does not depend on the masses."""

from __future__ import annotations

import mujoco
import numpy as np


class AccelerationDrives:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo`'s acceleration drives."""

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
