"""Joint actuators (``model.actuator_*``, NewtonActuator prims) under MuJoCo.

A PD actuator with at most a maximum effort and no delay is a MuJoCo ``general`` actuator exactly
(:func:`~.spec.actuators.add_native_actuators`): its ``ctrl`` is written here from the targets each step. The others
are Newton's actuator math (:mod:`newton_usd.solvers.actuators`) at each step's state, their efforts added into
``qfrc_applied``: the positions and velocities gathered from each world's ``qpos``/``qvel`` (a DOF's ``ref`` taken
off, as our joint coordinates are), the targets from the Control, the efforts on top of the Control's joint forces.
C MuJoCo (the cpu backend): through numpy views, the actuators' kernels on Warp's CPU device. MuJoCo-Warp: in Warp
kernels on the solver's device between its steps (a frame's substeps included), captured with them.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..actuators import JointActuators
from ..kernel_loading import modules_named


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
def _native_ctrl(
    target_pos: wp.array[float],
    target_vel: wp.array[float],
    world: wp.array[wp.int32],
    ctrl_id: wp.array[wp.int32],
    dof: wp.array[wp.int32],
    ref: wp.array[float],
    kp: wp.array[float],
    kd: wp.array[float],
    ctrl: wp.array2d[float],
):
    i = wp.tid()
    d = dof[i]
    ctrl[world[i], ctrl_id[i]] = kp[i] * (target_pos[d] + ref[i]) + kd[i] * target_vel[d]


@wp.kernel
def _scatter_add(
    force: wp.array[float], world: wp.array[wp.int32], qvel_adr: wp.array[wp.int32], qfrc: wp.array2d[float]
):
    i = wp.tid()
    wp.atomic_add(qfrc, world[i], qvel_adr[i], force[i])


class _Rows:
    """Some actuators' rows: world, DOF (ours), qpos and qvel address (MuJoCo's), ref, as numpy and on a device."""

    def __init__(self, world, dof, qpos, qvel, ref, device):
        self.world, self.dof, self.qpos, self.qvel, self.ref = world, dof, qpos, qvel, ref
        self.count = len(dof)
        ints = [wp.array(np.asarray(v, dtype=np.int32), dtype=wp.int32, device=device) for v in (world, qpos, qvel)]
        self.index = ints  # (world, qpos address, qvel address)
        self.ref_wp = wp.array(np.asarray(ref, dtype=np.float32), dtype=wp.float32, device=device)
        self.dof_wp = wp.array(np.asarray(dof, dtype=np.int32), dtype=wp.int32, device=device)


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
        world = dofs // per_world
        qpos = mj.jnt_qposadr[mj.dof_jntid[qvel]]
        ref = solver.map.dof_ref[dofs % per_world]
        n = len(dofs)
        ctrl_id = solver.spec_map.native_actuator_ctrl[np.arange(n) % (n // model.num_worlds)]
        self.model = model
        self.device = d = wp.get_device(device)
        native, forced = np.nonzero(ctrl_id >= 0)[0], np.nonzero(ctrl_id < 0)[0]
        self.native = _Rows(world[native], dofs[native], qpos[native], qvel[native], ref[native], d)
        self.native.ctrl = ctrl_id[native]
        specs = [model.actuator_spec[i] for i in native]
        self.native.kp = np.array([s.kp for s in specs], dtype=np.float64)
        self.native.kd = np.array([s.kd for s in specs], dtype=np.float64)
        self.native.ctrl_wp = wp.array(self.native.ctrl.astype(np.int32), dtype=wp.int32, device=d)
        self.native.kp_wp = wp.array(self.native.kp.astype(np.float32), dtype=wp.float32, device=d)
        self.native.kd_wp = wp.array(self.native.kd.astype(np.float32), dtype=wp.float32, device=d)
        self.forced = f = _Rows(world[forced], dofs[forced], qpos[forced], qvel[forced], ref[forced], d)
        self.actuators = None
        """The actuators applied as forces: Newton's (:class:`~newton_usd.solvers.actuators.JointActuators`)."""
        if f.count:
            idx = np.arange(f.count)
            labels = [model.actuator_label[i] for i in forced]
            self.actuators = JointActuators(specs_of(model, forced), idx, idx, d, world=f.world, labels=labels)
        self._arrays = [wp.zeros(f.count, dtype=wp.float32, device=d) for _ in range(5)]
        self._pushed = None  # qfrc_applied as the Control's joint forces set it, without the actuators'
        self._views = [a.numpy() for a in self._arrays] if d.is_cpu else None  # (Warp's CPU arrays: numpy's memory)
        if solver.backend != "cpu":  # (made now: nothing is allocated while a step is captured)
            self._pushed = wp.zeros((model.num_worlds, mj.nv), dtype=wp.float32, device=d)

    @classmethod
    def of(cls, solver, model):
        if not getattr(model, "actuator_count", 0):
            return None
        return cls(solver, model, "cpu" if solver.backend == "cpu" else solver.device)

    def apply(self, qpos, qvel, qfrc, ctrl, control, dt: float, pushed: bool) -> None:
        """The actuators at the state in ``qpos``/``qvel`` (numpy, ``(num_worlds, nq|nv)``) with ``control``'s targets
        (None: the model's): the native ones' ``ctrl`` (``(num_worlds, nu)``), the others' efforts added into ``qfrc``
        (``(num_worlds, nv)``), advanced by ``dt``. ``pushed``: ``qfrc`` holds the Control's joint forces just pushed
        (else those pushed last are put back)."""
        source = control if control is not None else self.model
        target_pos, target_vel = source.joint_target_pos.numpy(), source.joint_target_vel.numpy()
        nat = self.native
        if nat.count:
            ctrl[nat.world, nat.ctrl] = nat.kp * (target_pos[nat.dof] + nat.ref) + nat.kd * target_vel[nat.dof]
        f = self.forced
        if not f.count:
            return
        if pushed or self._pushed is None:
            self._pushed = qfrc.copy()
        else:
            qfrc[:] = self._pushed
        pos, vel, t_pos, t_vel, force = self._views
        pos[:] = qpos[f.world, f.qpos] - f.ref
        vel[:] = qvel[f.world, f.qvel]
        t_pos[:] = target_pos[f.dof]
        t_vel[:] = target_vel[f.dof]
        force[:] = 0.0
        self.actuators.step(*self._arrays, dt)
        np.add.at(qfrc, (f.world, f.qvel), force)

    def pushed(self, d) -> None:
        """MuJoCo-Warp's ``d.qfrc_applied`` holds the Control's joint forces just pushed: kept, for each step's
        efforts to be added to."""
        if self.forced.count:
            wp.copy(self._pushed, d.qfrc_applied)

    def apply_device(self, d, control, dt: float) -> None:
        """:meth:`apply` on MuJoCo-Warp's data ``d``, in kernels: ``d.ctrl`` of the native actuators, and
        ``d.qfrc_applied`` the Control's joint forces (as pushed last) plus the others' efforts."""
        source = control if control is not None else self.model
        targets = [source.joint_target_pos, source.joint_target_vel]
        targets = [t if t.device == self.device else t.to(self.device) for t in targets]  # (the host exchange's)
        nat = self.native
        if nat.count:
            wp.launch(_native_ctrl, dim=nat.count, inputs=[*targets, nat.index[0], nat.ctrl_wp, nat.dof_wp, nat.ref_wp,
                      nat.kp_wp, nat.kd_wp, d.ctrl], device=self.device)  # fmt: skip
        f = self.forced
        if not f.count:
            return
        wp.copy(d.qfrc_applied, self._pushed)
        world, qpos_adr, qvel_adr = f.index
        wp.launch(
            _gather,
            dim=f.count,
            inputs=[d.qpos, d.qvel, *targets, world, qpos_adr, qvel_adr, f.ref_wp, f.dof_wp],
            outputs=self._arrays,
            device=self.device,
        )
        self.actuators.step(*self._arrays, dt)
        wp.launch(_scatter_add, dim=f.count, inputs=[self._arrays[4], world, qvel_adr, d.qfrc_applied],
                  device=self.device)  # fmt: skip

    def kernel_modules(self) -> list:
        """The Warp modules a step launches kernels of: Newton's actuators' (those applied as forces) and this
        module's (the warp backend's gather and scatter)."""
        own = modules_named(["newton_usd.solvers.mujoco.actuator_forces"]) if not self.device.is_cpu else []
        return own + (self.actuators.kernel_modules() if self.actuators is not None else [])

    def reset(self, worlds=None) -> None:
        if self.actuators is not None:
            self.actuators.reset(worlds)


def specs_of(model, rows):
    return [model.actuator_spec[i] for i in rows]
