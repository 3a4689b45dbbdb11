"""Joint actuators (``model.actuator_*``, NewtonActuator prims) under Newton's solvers: their efforts, at each step's
input state, added to the Control's joint forces before Newton's step, in Warp kernels on the model's device
(captured with the frame on CUDA; :mod:`newton_usd.solvers.actuators`)."""

from __future__ import annotations

import numpy as np
import warp as wp

from ..actuators import JointActuators

ACTUATED_RELAXATION = 1.0
"""XPBD's joint relaxation (linear and angular) where the model has joint actuators and the scene sets none. At Newton's
defaults (0.7 linear, 0.4 angular) a joint torque (``joint_f``, where the actuators' efforts go) on a link hinged off
its center of mass does not meet gravity as the generalized forces say, whatever the iterations: ``joint_f = -m g l``
on a horizontal 1 kg arm, 0.5 m out, raises it 28 deg in 0.4 s, and a PD actuator holds it 1.2 deg off the angle its
gains give; at 1.0 both are exact (0.02 deg), as in MuJoCo and featherstone (``tests/test_newton_actuators.py``)."""


class ActuatedControl:
    """What the exchange reads of a Control, the actuators' efforts added into its joint forces."""

    __slots__ = ("joint_target_pos", "joint_target_vel", "joint_f")

    def __init__(self, joint_target_pos, joint_target_vel, joint_f):
        self.joint_target_pos, self.joint_target_vel, self.joint_f = joint_target_pos, joint_target_vel, joint_f


class Actuation:
    """The model's joint actuators, indexed into our ``joint_q`` (by coordinate) and ``joint_qd`` (by DOF); made with
    :meth:`of` (None for a model without)."""

    def __init__(self, model):
        joints = model.actuator_joint.numpy()
        self.model = model
        self.actuators = JointActuators(
            model.actuator_spec,
            model.joint_q_start.numpy()[joints],
            model.joint_qd_start.numpy()[joints],
            model.device,
            world=np.maximum(model.joint_world.numpy()[joints], 0),
            labels=model.actuator_label,
        )
        self._joint_f = wp.zeros(model.joint_dof_count, dtype=wp.float32, device=model.device)
        # the model's targets, for a step given no Control (made now: nothing is allocated while a frame is captured)
        self._own_control = model.control()
        self._actuated = ActuatedControl(None, None, self._joint_f)  # (what control() hands on, filled each step)

    @classmethod
    def of(cls, model):
        return cls(model) if getattr(model, "actuator_count", 0) else None

    def control(self, state_in, control, dt: float) -> ActuatedControl:
        """``control``'s targets (None: the model's) and its joint forces plus the actuators' efforts at ``state_in``
        (kernels only); the stateful actuators advanced by ``dt``."""
        if control is None:
            control = self._own_control
        f = self._joint_f
        wp.copy(f, control.joint_f)
        self.actuators.step(state_in.joint_q, state_in.joint_qd, control.joint_target_pos, control.joint_target_vel,
                            f, dt)  # fmt: skip
        out = self._actuated
        out.joint_target_pos, out.joint_target_vel = control.joint_target_pos, control.joint_target_vel
        return out

    def gains(self, newton_dofs: int, dof_order=None) -> tuple:
        """(kp, kd) per DOF of the bridged Newton model (``dof_order``: our DOF of each of Newton's; None: the same
        order), the actuators' sums, for the explicit stable-step estimate."""
        kp, kd = np.zeros(self.model.joint_dof_count), np.zeros(self.model.joint_dof_count)
        dofs = self.model.joint_qd_start.numpy()[self.model.actuator_joint.numpy()]
        np.add.at(kp, dofs, [s.kp for s in self.model.actuator_spec])
        np.add.at(kd, dofs, [s.kd for s in self.model.actuator_spec])
        if dof_order is None:
            return kp[:newton_dofs], kd[:newton_dofs]
        order = np.asarray(dof_order)
        return kp[order], kd[order]

    def reset(self, worlds=None) -> None:
        self.actuators.reset(worlds)
