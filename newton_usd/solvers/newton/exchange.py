"""State and Control exchanged with a bridged ``newton.Model`` on the device, every step.

Our State and Newton's agree on ``body_q`` (body frame in world, xyzw), ``body_qd`` (COM linear velocity,
angular velocity, world frame), ``body_f`` and ``joint_q``, and our Control's drive targets and joint forces
are Newton's ``joint_target_qd``/``joint_f``: those arrays are aliased, Newton's objects pointing at ours (no
copy). Newton's position targets (``joint_target_q``) are per coordinate, ours per DOF: they are the same array
where every joint has one coordinate per DOF, else ours are scattered into Newton's by a kernel (a ball or free
joint's coordinates keep Newton's targets: ours has none for them). ``joint_qd`` agrees except for free joints
whose body has its center of mass away from its origin: ours is the origin's velocity in world, Newton's the
center of mass's in the joint's parent frame; then ``joint_qd`` goes through a Warp kernel, into Newton's
convention before a step and back when the output State's velocities are first read (:class:`PendingVelocities`:
the next step reads Newton's as they are, so a loop of steps converts nothing).
"""

from __future__ import annotations

import weakref

import newton
import numpy as np
import warp as wp

from ...core.types import DriveMode, JointType


@wp.kernel
def _joint_qd_kernel(
    # Model:
    joint_type: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    body_com: wp.array(dtype=wp.vec3),
    # Data in:
    body_q: wp.array(dtype=wp.transform),
    qd_in: wp.array(dtype=wp.float32),
    to_newton: int,
    # Data out:
    qd_out: wp.array(dtype=wp.float32),
):
    """One joint's velocities from one convention to the other: copied, a free joint's converted."""
    j = wp.tid()
    d = joint_qd_start[j]
    if joint_type[j] != 4:  # not FREE: the same
        for k in range(joint_qd_start[j + 1] - d):
            qd_out[d + k] = qd_in[d + k]
        return
    c = joint_child[j]
    r = wp.quat_rotate(wp.transform_get_rotation(body_q[c]), body_com[c])
    parent_rot = wp.transform_get_rotation(joint_X_p[j])
    v = wp.vec3(qd_in[d], qd_in[d + 1], qd_in[d + 2])
    w = wp.vec3(qd_in[d + 3], qd_in[d + 4], qd_in[d + 5])
    if to_newton == 1:  # ours (origin, world) -> Newton's (COM, parent frame)
        v = wp.quat_rotate_inv(parent_rot, v + wp.cross(w, r))
        w = wp.quat_rotate_inv(parent_rot, w)
    else:
        w = wp.quat_rotate(parent_rot, w)
        v = wp.quat_rotate(parent_rot, v) - wp.cross(w, r)
    for k in range(3):
        qd_out[d + k] = v[k]
        qd_out[d + 3 + k] = w[k]


@wp.kernel
def _coord_targets_kernel(
    # Model:
    joints: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    # Data in:
    target_dof: wp.array(dtype=wp.float32),
    # Data out:
    target_coord: wp.array(dtype=wp.float32),
):
    j = joints[wp.tid()]
    q0 = joint_q_start[j]
    d0 = joint_qd_start[j]
    for k in range(joint_qd_start[j + 1] - d0):
        target_coord[q0 + k] = target_dof[d0 + k]


class PendingJointState:
    """A State's pending joint states (``State._pending``; see :class:`~newton_usd.core.model.State`): XPBD
    moves bodies only, so ``joint_q`` and ``joint_qd`` are computed from the bodies when first read."""

    __slots__ = ("exchange",)

    def __init__(self, exchange):
        self.exchange = exchange

    def read(self, state, name):
        if name in ("joint_q", "joint_qd"):
            self.release(state)
        return state.__dict__[name]

    def release(self, state):
        if state.__dict__.get("_pending") is self:
            del state.__dict__["_pending"]
            self.exchange.joints_from_bodies(state)


class PendingVelocities:
    """A State whose ``joint_qd`` is still Newton's (free joints' COM velocities in their parent frame), held in
    ``buffer``, one of the exchange's two: the output of a solver that writes joint states, converted into ours
    when first read instead of after every step. Reading ``body_q``, ``body_qd`` or ``joint_qd`` converts it
    (the conversion reads the body poses a caller might change next); ``joint_q`` needs nothing."""

    __slots__ = ("buffer", "exchange")

    def __init__(self, exchange, buffer):
        self.exchange, self.buffer = exchange, buffer

    def read(self, state, name):
        if name != "joint_q":
            self.release(state)
        return state.__dict__[name]

    def release(self, state):
        if state.__dict__.get("_pending") is self:
            del state.__dict__["_pending"]
            arrays = state.__dict__
            self.exchange._convert(arrays["body_q"], self.buffer, arrays["joint_qd"], False)


class StateExchange:
    """Newton's State and Control objects of one bridged model, made to point at ours each step.

    Args:
        model: our Model.
        newton_model: its bridge (``newton.Model``).
        convert_free: whether free joints' ``joint_qd`` needs converting (see the module docstring).
    """

    def __init__(self, model, newton_model, convert_free: bool):
        self.model = model
        self.newton_model = newton_model
        self.state_in = newton_model.state()
        self.state_out = newton_model.state()
        self.control = newton_model.control()
        self._ik_state = newton_model.state()  # (pointed at a State's body arrays for eval_ik)
        self._convert_free = convert_free
        self._launches = {}  # (kernel, key) -> (recorded launch, dim, its arguments): see _launch
        if convert_free:  # Newton's own joint_qd, converted into and out of ours: two buffers, input and output
            grad = newton_model.requires_grad
            qd = wp.zeros(model.joint_dof_count, dtype=wp.float32, device=model.device, requires_grad=grad)
            self._buffers = (qd, wp.zeros_like(qd))
            self._holders = [None, None]  # the State (weak reference) whose pending velocities each buffer holds
            self._out = 1  # the buffer of the last step's output
        types = model.joint_type.numpy()
        per_dof = np.nonzero((types != int(JointType.FREE)) & (types != int(JointType.BALL)))[0].astype(np.int32)
        self._coord_targets = None  # Newton's per-coordinate position targets, where they differ from ours
        position_modes = (int(DriveMode.POSITION), int(DriveMode.POSITION_VELOCITY))
        position_driven = np.isin(model.joint_target_mode.numpy(), position_modes)
        if model.joint_coord_count != model.joint_dof_count and position_driven.any():
            self._coord_targets = wp.clone(newton_model.joint_target_q)
            self._per_dof_joints = wp.array(per_dof, dtype=wp.int32, device=model.device)

    def initial_state(self) -> None:
        """The Newton model's initial ``joint_qd`` in Newton's convention (the bridge copied ours)."""
        if self._convert_free:
            self._convert(self.model.body_q, self.model.joint_qd, self.newton_model.joint_qd, True)

    def inputs(self, state_in, state_out, control, joints_read: bool = True):
        """Newton's (state_in, state_out, control), pointing at ours (``joint_qd`` converted in unless the
        solver does not read joint states, ``joints_read`` False: XPBD)."""
        ns_in, ns_out, nc = self.state_in, self.state_out, self.control
        mine = (PendingJointState, PendingVelocities)
        pending = state_out.__dict__.get("_pending")
        if isinstance(pending, mine) and pending.exchange is self:  # its joint states are about to be stepped over
            del state_out.__dict__["_pending"]
        elif pending is not None:  # another solver's: its arrays written first
            pending.release(state_out)
        pending = state_in.__dict__.get("_pending")
        if pending is not None and not (isinstance(pending, mine) and pending.exchange is self):
            pending.release(state_in)  # (ours pending: its body arrays are current, its joint arrays unread)
            pending = None
        for ours, theirs in ((state_in, ns_in), (state_out, ns_out)):
            arrays = ours.__dict__
            theirs.body_q = arrays["body_q"]
            theirs.body_qd = arrays["body_qd"]
            theirs.body_f = arrays["body_f"]
            theirs.joint_q = arrays["joint_q"]
            theirs.joint_qd = arrays["joint_qd"]
        if self._convert_free:
            if isinstance(pending, PendingVelocities):  # Newton's velocities of state_in, still in a buffer
                i = self._buffers.index(pending.buffer)
            else:
                i = 0
                self._claim(0)
                if joints_read:
                    self._convert(ns_in.body_q, state_in.__dict__["joint_qd"], self._buffers[0], True)
            self._out = 1 - i
            self._claim(self._out, state_out)
            ns_in.joint_qd, ns_out.joint_qd = self._buffers[i], self._buffers[self._out]
        if control is not None:
            if self._coord_targets is None:  # (also where no DOF has a position drive: no target is read)
                nc.joint_target_q = control.joint_target_pos
            else:
                nc.joint_target_q = self._coord_targets
                if len(self._per_dof_joints):
                    m = self.model
                    self._launch(
                        _coord_targets_kernel,
                        len(self._per_dof_joints),
                        [self._per_dof_joints, m.joint_q_start, m.joint_qd_start, control.joint_target_pos,
                         self._coord_targets],
                    )  # fmt: skip
            nc.joint_target_qd = control.joint_target_vel
            nc.joint_f = control.joint_f
        return ns_in, ns_out, nc

    def outputs(self, state_out, joints_written: bool = True) -> None:
        """After a step: Newton's free-joint ``joint_qd`` converted into ours. ``joints_written`` False (XPBD):
        the joint states are left pending, computed from the body states when first read."""
        if not joints_written:
            state_out.__dict__["_pending"] = PendingJointState(self)
            return
        if not self._convert_free:
            return
        buffer = self._buffers[self._out]
        if self.newton_model.requires_grad:  # (converted now: a wp.Tape records kernels as they run)
            self._convert(state_out.__dict__["body_q"], buffer, state_out.__dict__["joint_qd"], False)
        else:  # converted when read (see PendingVelocities): a step loop that does not read them skips it
            state_out.__dict__["_pending"] = PendingVelocities(self, buffer)

    def scratch_velocities(self):
        """A buffer of Newton-convention ``joint_qd`` free to write (its pending State converted first)."""
        self._claim(0)
        return self._buffers[0]

    def _claim(self, i, state=None) -> None:
        """Buffer ``i`` is about to be written (for ``state``): another State whose pending velocities it holds
        gets them converted first."""
        held = self._holders[i]() if self._holders[i] is not None else None
        if held is not None and held is not state:
            pending = held.__dict__.get("_pending")
            if isinstance(pending, PendingVelocities) and pending.buffer is self._buffers[i]:
                pending.release(held)
        self._holders[i] = weakref.ref(state) if state is not None else None

    def joints_from_bodies(self, state) -> None:
        """``state``'s joint coordinates and velocities from its body poses and velocities (``newton.eval_ik``)."""
        arrays = state.__dict__
        ns = self._ik_state
        ns.body_q, ns.body_qd = arrays["body_q"], arrays["body_qd"]
        qd = self.scratch_velocities() if self._convert_free else arrays["joint_qd"]
        newton.eval_ik(self.newton_model, ns, arrays["joint_q"], qd)
        if self._convert_free:
            self._convert(arrays["body_q"], qd, arrays["joint_qd"], False)

    def _convert(self, body_q, qd_in, qd_out, to_newton: bool) -> None:
        m = self.model
        params = [m.joint_type, m.joint_child, m.joint_qd_start, m.joint_X_p, m.body_com, body_q, qd_in, int(to_newton),
                  qd_out]  # fmt: skip
        self._launch(_joint_qd_kernel, m.joint_count, params, key=bool(to_newton))

    def _launch(self, kernel, dim, params, key=None) -> None:
        """Launch ``kernel`` (inputs and outputs in ``params``): the launch is recorded once per kernel and key and
        only its changed arguments are set again (a third of the cost of ``wp.launch`` on the CPU), except on a
        model with gradients (a recorded launch does not go onto a ``wp.Tape``)."""
        if self.newton_model.requires_grad:
            wp.launch(kernel, dim=dim, inputs=params, device=self.model.device)
            return
        cached = self._launches.get((kernel.key, key))
        if cached is None or cached[1] != dim:
            launch = wp.launch(kernel, dim=dim, inputs=params, device=self.model.device, record_cmd=True)
            self._launches[(kernel.key, key)] = (launch, dim, list(params))
            launch.launch()
            return
        launch, _, last = cached
        for i, value in enumerate(params):
            if value is not last[i]:
                launch.set_param_at_index(i, value)
                last[i] = value
        launch.launch()
