"""Joint actuators (``model.actuator_*``, NewtonActuator prims) under MuJoCo: Newton's actuator math
(:mod:`newton_usd.solvers.actuators`) at each step's state, its efforts added into ``qfrc_applied``.

The positions and velocities are gathered from each world's ``qpos``/``qvel`` (a DOF's ``ref`` taken off, as our
joint coordinates are), the targets from the Control; the efforts land on the DOFs' ``qfrc_applied`` on top of the
Control's joint forces, every step. C MuJoCo (the cpu backend): through numpy views, the actuators' kernels on
Warp's CPU device. MuJoCo-Warp: in Warp kernels on the solver's device between its steps (a frame's substeps
included), captured with them.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..actuators import JointActuators


@wp.kernel
def _gather(
    # Data in:
    qpos: wp.array2d[float],
    qvel: wp.array2d[float],
    target_pos_in: wp.array[float],
    target_vel_in: wp.array[float],
    # Actuators:
    world: wp.array[wp.int32],
    qpos_adr: wp.array[wp.int32],
    qvel_adr: wp.array[wp.int32],
    ref: wp.array[float],
    dof: wp.array[wp.int32],
    # Out:
    pos: wp.array[float],
    vel: wp.array[float],
    target_pos: wp.array[float],
    target_vel: wp.array[float],
    force: wp.array[float],
):
    i = wp.tid()
    w = world[i]
    pos[i] = qpos[w, qpos_adr[i]] - ref[i]
    vel[i] = qvel[w, qvel_adr[i]]
    target_pos[i] = target_pos_in[dof[i]]
    target_vel[i] = target_vel_in[dof[i]]
    force[i] = 0.0


@wp.kernel
def _scatter_add(
    force: wp.array[float], world: wp.array[wp.int32], qvel_adr: wp.array[wp.int32], qfrc: wp.array2d[float]
):
    i = wp.tid()
    wp.atomic_add(qfrc, world[i], qvel_adr[i], force[i])


class ActuatorForces:
    """The actuators of ``model`` under ``solver`` (a :class:`SolverMuJoCo`), on Warp's CPU device for the cpu backend
    (:meth:`apply`), on the solver's device for the warp backend (:meth:`apply_device`).

    Built with :meth:`of`, which gives None for a model without actuators.
    """

    def __init__(self, solver, model, device):
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
        self.count = n = len(dofs)
        self.model = model
        self.device = wp.get_device(device)
        self.actuators = JointActuators(model.actuator_spec, np.arange(n), np.arange(n), self.device, world=self.world)
        self._arrays = [wp.zeros(n, dtype=wp.float32, device=self.device) for _ in range(5)]
        self._pushed = None  # qfrc_applied as the Control's joint forces set it, without the actuators'
        if self.device.is_cpu:
            self._views = [a.numpy() for a in self._arrays]  # (views: Warp's CPU arrays are numpy's memory)
        else:
            self._views = None
        d = self.device
        self._index = [
            wp.array(np.asarray(v, dtype=np.int32), dtype=wp.int32, device=d)
            for v in (self.world, self.qpos, self.qvel)
        ]
        self._ref = wp.array(self.ref.astype(np.float32), dtype=wp.float32, device=d)
        self._dof = wp.array(dofs.astype(np.int32), dtype=wp.int32, device=d)

    @classmethod
    def of(cls, solver, model):
        if not getattr(model, "actuator_count", 0):
            return None
        return cls(solver, model, "cpu" if solver.backend == "cpu" else solver.device)

    def apply(self, qpos, qvel, qfrc, control, dt: float, pushed: bool) -> None:
        """Add the actuators' efforts at the state in ``qpos``/``qvel`` (numpy, ``(num_worlds, nq|nv)``) into ``qfrc``
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

    def pushed(self, d) -> None:
        """MuJoCo-Warp's ``d.qfrc_applied`` holds the Control's joint forces just pushed: kept, for each step's
        efforts to be added to."""
        if self._pushed is None:
            self._pushed = wp.clone(d.qfrc_applied)
        else:
            wp.copy(self._pushed, d.qfrc_applied)

    def apply_device(self, d, control, dt: float) -> None:
        """Set MuJoCo-Warp's ``d.qfrc_applied`` to the Control's joint forces (as pushed last) plus the actuators'
        efforts at ``d``'s state, with ``control``'s targets (None: the model's); advance them by ``dt``. Kernels
        only."""
        if self._pushed is None:
            self._pushed = wp.zeros_like(d.qfrc_applied)
        wp.copy(d.qfrc_applied, self._pushed)
        source = control if control is not None else self.model
        targets = [source.joint_target_pos, source.joint_target_vel]
        targets = [t if t.device == self.device else t.to(self.device) for t in targets]  # (the host exchange's)
        world, qpos_adr, qvel_adr = self._index
        wp.launch(
            _gather,
            dim=self.count,
            inputs=[d.qpos, d.qvel, *targets, world, qpos_adr, qvel_adr, self._ref, self._dof],
            outputs=self._arrays,
            device=self.device,
        )  # fmt: skip
        self.actuators.step(*self._arrays, dt)
        wp.launch(_scatter_add, dim=self.count, inputs=[self._arrays[4], world, qvel_adr, d.qfrc_applied],
                  device=self.device)  # fmt: skip

    def reset(self, worlds=None) -> None:
        self.actuators.reset(worlds)
