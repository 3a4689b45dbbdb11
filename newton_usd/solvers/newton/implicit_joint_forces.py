"""Featherstone's joint forces integrated implicitly, as PhysX integrates drives and MuJoCo damping: a DOF's drive,
passive spring and damper, and its limit spring while it is beyond the limit, bound no step.

Newton's Featherstone takes a step of symplectic Euler on the generalized coordinates, H qdd = tau, with a DOF's
drive, passive and limit forces in tau, explicitly: a drive of damping 1e8 (PhysX's ``links_chain_sample.usda``) on
a link of joint-space inertia 1 needs steps below 1e-8 s, Newton's default limit spring (1e4 N*m/rad) on an ant's
foot below 5e-4 s. Backward Euler takes the forces at the end of the step instead: with the DOF's stiffness K and
damping C (at the step's start: the drive's and the passive spring's, or beyond a limit the limit's, where Newton
turns the drive off, and the passive spring's), v' = v + dt a and q' = q + dt v',

    H a = f + K (q* - q - dt v') + C (v* - v')  =>  (H + dt C + dt^2 K) a = f + K (q* - q) + C (v* - v) - dt K v

linearized at the step's start: the same step of Featherstone with ``dt C + dt^2 K`` added to the DOF's armature
(the diagonal of H) and ``dt K`` to its passive damping. :class:`ImplicitJointForces` writes them, one kernel before
each of Newton's steps (the regime of each DOF follows its coordinate); stable at any step and exact for linear
springs: a drive far too stiff for the step holds its DOF as PhysX's does instead of blowing up.
"""

from __future__ import annotations

import newton
import numpy as np
import warp as wp

_FIXED, _DRIVEN, _BALL, _KINEMATIC = 0, 1, 2, 3
"""A DOF's kind: no joint force (a free or distance joint's), drive, passive and limit forces (revolute, prismatic,
D6), passive damping only (a ball joint's), and a kinematic body's (its armature Newton's own: left alone)."""


@wp.kernel
def _implicit_terms(
    # Model:
    dof_kind: wp.array(dtype=wp.int32),
    dof_coord: wp.array(dtype=wp.int32),
    base_armature: wp.array(dtype=wp.float32),
    base_damping: wp.array(dtype=wp.float32),
    stiffness: wp.array(dtype=wp.float32),
    target_ke: wp.array(dtype=wp.float32),
    target_kd: wp.array(dtype=wp.float32),
    limit_lower: wp.array(dtype=wp.float32),
    limit_upper: wp.array(dtype=wp.float32),
    limit_ke: wp.array(dtype=wp.float32),
    limit_kd: wp.array(dtype=wp.float32),
    dt: float,
    # Data in:
    joint_q: wp.array(dtype=wp.float32),
    # Data out:
    armature: wp.array(dtype=wp.float32),
    damping: wp.array(dtype=wp.float32),
):
    d = wp.tid()
    kind = dof_kind[d]
    if kind == _KINEMATIC:
        return
    passive = base_damping[d]
    k = float(0.0)
    c = float(0.0)
    if kind == _DRIVEN:
        q = joint_q[dof_coord[d]]
        if q < limit_lower[d] or q > limit_upper[d]:  # (Newton's test: the limit's spring, the drive off)
            k = limit_ke[d] + stiffness[d]
            c = limit_kd[d] + passive
        else:
            k = target_ke[d] + stiffness[d]
            c = target_kd[d] + passive
    elif kind == _BALL:
        c = passive
    armature[d] = base_armature[d] + dt * c + dt * dt * k
    damping[d] = passive + dt * k


class ImplicitJointForces:
    """Featherstone's joint forces taken implicitly (see the module): before each step, :meth:`launch` writes the
    terms of the step into the armature Newton's solver factors H with and into the Newton model's passive damping.
    The model's own armature and damping (as bridged, or as :meth:`model_changed` takes them after an edit) are kept
    apart."""

    def __init__(self, newton_model, newton_solver):
        self.newton_model, self.newton_solver = newton_model, newton_solver
        nm = newton_model
        self._base_armature = wp.clone(nm.joint_armature)
        self._base_damping = wp.clone(nm.joint_damping)
        qd_start, q_start = nm.joint_qd_start.numpy(), nm.joint_q_start.numpy()
        per_joint = np.diff(qd_start)
        dof_joint = np.repeat(np.arange(nm.joint_count), per_joint)
        offset = np.arange(nm.joint_dof_count) - qd_start[dof_joint]
        self._dof_joint = dof_joint
        self._dof_coord = wp.array((q_start[dof_joint] + offset).astype(np.int32), device=nm.device)
        self._dof_kind = wp.zeros(nm.joint_dof_count, dtype=wp.int32, device=nm.device)
        self.model_changed({"body_flags"})

    def model_changed(self, names) -> bool:
        """The model's values ``names`` (Model attribute names) were written in place: take its own armature and
        damping again, and which bodies are kinematic. True where the armature the solver factors H with is another
        array now (Newton makes a new one where kinematic joints pin theirs): a captured launch writes the old."""
        nm = self.newton_model
        if "joint_armature" in names:
            wp.copy(self._base_armature, nm.joint_armature)
        if "joint_damping" in names:
            wp.copy(self._base_damping, nm.joint_damping)
        if "body_flags" in names or "joint_armature" in names:
            types = nm.joint_type.numpy()[self._dof_joint]
            kind = np.full(len(types), _FIXED, dtype=np.int32)
            kind[np.isin(types, [int(newton.JointType.REVOLUTE), int(newton.JointType.PRISMATIC),
                                 int(newton.JointType.D6)])] = _DRIVEN  # fmt: skip
            kind[types == int(newton.JointType.BALL)] = _BALL
            kinematic = (nm.body_flags.numpy() & int(newton.BodyFlags.KINEMATIC)) != 0
            kind[kinematic[nm.joint_child.numpy()[self._dof_joint]]] = _KINEMATIC
            self._dof_kind.assign(kind)
        armature = self._solver_armature()
        moved = armature is not getattr(self, "_armature", armature)
        self._armature = armature
        return moved

    def _solver_armature(self):
        """The armature Newton's solver factors H with: the model's, or a copy where kinematic joints pin theirs."""
        armature = getattr(self.newton_solver, "joint_armature_effective", None)
        return self.newton_model.joint_armature if armature is None else armature

    def launch(self, newton_state, dt: float) -> None:
        """The terms of a step of ``dt`` s from ``newton_state`` (its joint coordinates say which DOFs are beyond their
        limits), into the solver's armature and the model's damping. Capturable: no host read."""
        nm = self.newton_model
        if not nm.joint_dof_count:
            return
        armature = self._armature = self._solver_armature()
        wp.launch(
            _implicit_terms,
            dim=nm.joint_dof_count,
            inputs=[
                self._dof_kind, self._dof_coord, self._base_armature, self._base_damping, nm.joint_stiffness,
                nm.joint_target_ke, nm.joint_target_kd, nm.joint_limit_lower, nm.joint_limit_upper, nm.joint_limit_ke,
                nm.joint_limit_kd, float(dt), newton_state.joint_q,
            ],
            outputs=[armature, nm.joint_damping],
            device=nm.device,
        )  # fmt: skip
