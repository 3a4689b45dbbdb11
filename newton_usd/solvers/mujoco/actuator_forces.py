"""Joint actuators (``model.actuator_*``, NewtonActuator prims) under C MuJoCo: Newton's actuator math
(:mod:`newton_usd.solvers.actuators`) at each step's state, its efforts added into ``qfrc_applied``.

The positions and velocities are gathered from the batch's ``qpos``/``qvel`` rows (a DOF's ``ref`` taken off, as
our joint coordinates are), the targets from the Control; the efforts land on the DOFs' ``qfrc_applied`` on top of
the Control's joint forces. MuJoCo-Warp does not step them yet: said once.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ...diagnostics import Diagnostics
from ..actuators import JointActuators


class ActuatorForces:
    """The actuators of ``model`` on the cpu backend of ``solver`` (a :class:`SolverMuJoCo`).

    Built with :meth:`of`, which gives None for a model without actuators.
    """

    def __init__(self, solver, model):
        per_world = model.joint_dof_count // model.num_worlds
        joints = model.actuator_joint.numpy()
        dofs = model.joint_qd_start.numpy()[joints].astype(np.int64)
        qvel = solver.map.dof_qvel[dofs % per_world]
        if (qvel < 0).any():  # (an actuator's joint is always a hinge or a slide: a programming error)
            raise RuntimeError(f"actuated DOFs without a MuJoCo DOF: {dofs[qvel < 0].tolist()}")
        mj = solver.mj_model
        self.world = dofs // per_world
        self.dof = dofs
        self.qvel = qvel
        self.qpos = mj.jnt_qposadr[mj.dof_jntid[qvel]]
        self.ref = solver.map.dof_ref[dofs % per_world]
        n = len(dofs)
        self.model = model
        self.actuators = JointActuators(model.actuator_spec, np.arange(n), np.arange(n), "cpu", world=self.world)
        self._arrays = [wp.zeros(n, dtype=wp.float32, device="cpu") for _ in range(5)]
        self._views = [a.numpy() for a in self._arrays]  # (views: Warp's CPU arrays are numpy's memory)
        self._pushed = None  # qfrc_applied as the Control's joint forces set it, without the actuators'

    @classmethod
    def of(cls, solver, model):
        if not getattr(model, "actuator_count", 0):
            return None
        if solver.backend != "cpu":
            diag = Diagnostics()
            for label in model.actuator_label:
                diag.add(
                    "NewtonActuator: joint actuators are not simulated under MuJoCo-Warp yet (the cpu backend and "
                    "Newton's solvers step them)",
                    label,
                )
            diag.emit(model.source)
            return None
        return cls(solver, model)

    def apply(self, qpos, qvel, qfrc, control, dt: float, pushed: bool) -> None:
        """Add the actuators' efforts at the state in ``qpos``/``qvel`` (``(num_worlds, nq|nv)``) into ``qfrc``
        (``(num_worlds, nv)``), with ``control``'s targets (None: the model's) and advance them by ``dt``.
        ``pushed``: ``qfrc`` holds the Control's joint forces just pushed (else those pushed last are put back)."""
        if pushed or self._pushed is None:
            self._pushed = qfrc.copy()
        else:
            qfrc[:] = self._pushed
        pos, vel, target_pos, target_vel, force = self._views
        source = control if control is not None else self.model
        pos[:] = qpos[self.world, self.qpos] - self.ref
        vel[:] = qvel[self.world, self.qvel]
        target_pos[:] = source.joint_target_pos.numpy()[self.dof]
        target_vel[:] = source.joint_target_vel.numpy()[self.dof]
        force[:] = 0.0
        self.actuators.step(*self._arrays, dt)
        np.add.at(qfrc, (self.world, self.qvel), force)

    def reset(self, worlds=None) -> None:
        self.actuators.reset(worlds)
