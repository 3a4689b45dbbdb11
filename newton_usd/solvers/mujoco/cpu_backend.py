"""The cpu backend: C MuJoCo stepping one MjData or a ``mujoco.batch.Batch`` (:mod:`~.mujoco.engine`), and its warnings
(a state gone NaN, Inf or huge; a full arena) reported as a blow-up."""

from __future__ import annotations

import mujoco
import numpy as np

from ...errors import SimulationError
from .engine import BatchEngine, DataEngine
from .exchange import StateExchange


class CpuBackend:
    """:class:`~newton_usd.solvers.mujoco.SolverMuJoCo` on C MuJoCo (``backend="cpu"``)."""

    def _init_cpu(self, qpos, qvel):
        """C MuJoCo (see :mod:`~.mujoco.engine`): one world steps one MjData; several worlds (and RK4, which needs
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
            raise SimulationError(reason + shorter_step_advice(float(self.mj_model.opt.timestep)), label=label)
        if (
            new[:, int(mujoco.mjtWarning.mjWARN_CNSTRFULL)].any()
            or new[:, int(mujoco.mjtWarning.mjWARN_CONTACTFULL)].any()
        ):
            raise SimulationError(
                f"MuJoCo's arena of {self.mj_model.narena / 2**20:.0f} MiB is full: contacts or constraints would be "
                "dropped (give more: usdsim --mujoco-memory MIB, Simulation.open(mujoco_memory=bytes))"
            )


def shorter_step_advice(dt: float) -> str:
    """What a C MuJoCo run whose state went NaN or huge at steps of ``dt`` s is told. MuJoCo integrates some forces
    explicitly whatever its integrator (Coriolis and centrifugal forces; springs and actuator stiffness; under Euler
    damping too), and the step they allow depends on how fast the model moves, which the model at rest does not say:
    no stable step is estimated (Newton's explicit solvers estimate theirs from gains and masses), the run's own is
    halved."""
    return (
        f"; MuJoCo integrates velocity-dependent forces (Coriolis, centrifugal), springs and actuator stiffness "
        f"explicitly, so motion too fast for the step blows up: try a shorter step than this run's {dt:.3g} s "
        f"(--dt {dt / 2:.3g}, half of it; halve it again while it blows up)"
    )
