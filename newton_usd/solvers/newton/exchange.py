"""State and Control exchanged with a bridged ``newton.Model`` on the device, every step.

Our State and Newton's agree on ``body_q`` (body frame in world, xyzw), ``body_qd`` (COM linear velocity,
angular velocity, world frame), ``body_f`` and ``joint_q``, and our Control's drive targets and joint forces
are Newton's ``joint_target_qd``/``joint_f``: those arrays are aliased, Newton's objects pointing at ours (no
copy). Newton's position targets (``joint_target_q``) are per coordinate, ours per DOF: they are the same array
where every joint has one coordinate per DOF, else ours are scattered into Newton's by a kernel (a ball or free
joint's coordinates keep Newton's targets: ours has none for them). Joint states differ in two cases, and then
go through Newton's own ``joint_q``/``joint_qd``, converted by a Warp kernel each way:

- free joints whose body has its center of mass away from its origin: our ``joint_qd`` is the origin's velocity
  in world, Newton's the center of mass's in the joint's parent frame;
- ball joints: our ``joint_qd`` is the angular velocity in the child joint frame (MuJoCo's), Newton's in the
  parent joint frame (the same where the joint is not rotated);
- cone-limited ball joints, bridged as D6 joints (see :mod:`.model_bridge`): ours are a quaternion (4
  coordinates) and the angular velocity in the child joint frame, Newton's the D6's three intrinsic Euler
  angles and their rates (so Newton's ``joint_q`` is shorter: every later joint's coordinates start earlier).

A ball joint's ``joint_f`` (ours: a torque in the child joint frame) is converted likewise every step, into a
torque in the parent joint frame (in the world frame for XPBD, which reads it so), or a cone joint's generalized
forces on its Euler angles (the torque's components along the angles' axes).

A solver that writes joint states (featherstone, kamino) leaves them in Newton's convention until they are read
(:class:`PendingNewtonJoints`): a step loop that reads only the bodies, as the stage write-back does, converts
nothing after its first step.
"""

from __future__ import annotations

import weakref

import newton
import numpy as np
import warp as wp
from newton.math import quat_decompose

from ...core.types import DriveMode, JointType


@wp.func
def _unit(i: int) -> wp.vec3:
    """The joint frame's axis ``i`` (cyclic: 3 is X again)."""
    v = wp.vec3(0.0)
    v[i % 3] = 1.0
    return v


@wp.func
def _euler_axes(first: int, angle0: float, angle1: float):
    """A cone D6's three angular axes at its first two angles, in the parent joint frame: the first fixed, each
    later one carried by the rotations before it (Newton's intrinsic-Euler chain)."""
    q0 = wp.quat_from_axis_angle(_unit(first), angle0)
    a1 = wp.quat_rotate(q0, _unit(first + 1))
    q1 = wp.quat_from_axis_angle(a1, angle1)
    return _unit(first), a1, wp.quat_rotate(q1 * q0, _unit(first + 2))


@wp.func
def _euler_angles(first: int, rot: wp.quat):
    """A ball joint's rotation -> the cone D6's Euler angles about the axes ``first``, ``first + 1``, ``first + 2``."""
    frame = wp.quat_from_matrix(wp.matrix_from_cols(_unit(first), _unit(first + 1), _unit(first + 2)))
    return quat_decompose(wp.quat_inverse(frame) * rot * frame)


@wp.func
def _euler_from_ball(first: int, rot: wp.quat, w: wp.vec3):
    """A ball joint's rotation and angular velocity (parent joint frame) -> the cone D6's Euler angles and
    rates (Newton's ``invert_3d_rotational_dofs`` for the axes ``first``, ``first + 1``, ``first + 2``)."""
    angles = _euler_angles(first, rot)
    a0, a1, a2 = _euler_axes(first, angles[0], angles[1])
    c0, c1, c2 = wp.cross(a1, a2), wp.cross(a0, a2), wp.cross(a0, a1)
    rates = wp.vec3(wp.dot(w, c0) / wp.dot(a0, c0), wp.dot(w, c1) / wp.dot(a1, c1), wp.dot(w, c2) / wp.dot(a2, c2))
    return angles, rates


@wp.func
def _ball_from_euler(first: int, angles: wp.vec3, rates: wp.vec3):
    """The cone D6's Euler angles and rates -> the ball joint's rotation and angular velocity (parent joint
    frame), as Newton's ``compute_3d_rotational_dofs``."""
    a0, a1, a2 = _euler_axes(first, angles[0], angles[1])
    rot = wp.quat_from_axis_angle(a2, angles[2]) * wp.quat_from_axis_angle(a1, angles[1])
    rot = rot * wp.quat_from_axis_angle(a0, angles[0])
    return rot, a0 * rates[0] + a1 * rates[1] + a2 * rates[2]


@wp.kernel
def _joint_state_kernel(
    # Model:
    joint_type: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    newton_q_start: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    body_com: wp.array(dtype=wp.vec3),
    cone_first_axis: wp.array(dtype=wp.int32),
    convert_q: int,
    convert_free: int,
    # Data in:
    body_q: wp.array(dtype=wp.transform),
    q_in: wp.array(dtype=wp.float32),
    qd_in: wp.array(dtype=wp.float32),
    to_newton: int,
    # Data out:
    q_out: wp.array(dtype=wp.float32),
    qd_out: wp.array(dtype=wp.float32),
):
    """One joint's coordinates (``convert_q``: else left alone, aliased) and velocities from one convention to
    the other: a cone joint's converted, a free joint's velocities too where ``convert_free``, the others
    copied."""
    j = wp.tid()
    d = joint_qd_start[j]
    src = joint_q_start[j]
    dst = newton_q_start[j]
    if to_newton == 0:
        src = newton_q_start[j]
        dst = joint_q_start[j]
    first = cone_first_axis[j]
    if first >= 0:  # a ball joint (ours) bridged as a D6 (Newton's)
        if to_newton == 1:
            rot = wp.quat(q_in[src], q_in[src + 1], q_in[src + 2], q_in[src + 3])
            w = wp.quat_rotate(rot, wp.vec3(qd_in[d], qd_in[d + 1], qd_in[d + 2]))  # (child -> parent frame)
            angles, rates = _euler_from_ball(first, rot, w)
            for k in range(3):
                q_out[dst + k] = angles[k]
                qd_out[d + k] = rates[k]
        else:
            angles = wp.vec3(q_in[src], q_in[src + 1], q_in[src + 2])
            rot, w = _ball_from_euler(first, angles, wp.vec3(qd_in[d], qd_in[d + 1], qd_in[d + 2]))
            w = wp.quat_rotate_inv(rot, w)  # (parent -> child frame)
            for k in range(4):
                q_out[dst + k] = rot[k]
            for k in range(3):
                qd_out[d + k] = w[k]
        return
    if convert_q == 1:
        for k in range(joint_q_start[j + 1] - joint_q_start[j]):
            q_out[dst + k] = q_in[src + k]
    if joint_type[j] == 2:  # BALL: the angular velocity in the child joint frame (ours) or the parent's (Newton's)
        rot = wp.quat(q_in[src], q_in[src + 1], q_in[src + 2], q_in[src + 3])  # (the same in both)
        w = wp.vec3(qd_in[d], qd_in[d + 1], qd_in[d + 2])
        if to_newton == 1:
            w = wp.quat_rotate(rot, w)
        else:
            w = wp.quat_rotate_inv(rot, w)
        for k in range(3):
            qd_out[d + k] = w[k]
        return
    if joint_type[j] != 4 or convert_free == 0:  # not FREE (or no COM offset): the same
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


@wp.kernel
def _joint_force_kernel(
    # Model:
    joint_type: wp.array(dtype=wp.int32),
    joint_parent: wp.array(dtype=wp.int32),
    joint_child: wp.array(dtype=wp.int32),
    joint_X_p: wp.array(dtype=wp.transform),
    joint_X_c: wp.array(dtype=wp.transform),
    joint_qd_start: wp.array(dtype=wp.int32),
    cone_first_axis: wp.array(dtype=wp.int32),
    in_world: int,
    # Data in:
    body_q: wp.array(dtype=wp.transform),
    f_in: wp.array(dtype=wp.float32),
    # Data out:
    f_out: wp.array(dtype=wp.float32),
):
    """One joint's ``joint_f``, ours -> Newton's: a ball joint's torque from the child joint frame into the parent
    joint frame (the world's where ``in_world``; a cone joint's: the torque's components along its Euler angles'
    axes), at the joint's rotation now; the other joints' copied."""
    j = wp.tid()
    d = joint_qd_start[j]
    if joint_type[j] != 2:  # not BALL
        for k in range(joint_qd_start[j + 1] - d):
            f_out[d + k] = f_in[d + k]
        return
    parent_rot = wp.transform_get_rotation(joint_X_p[j])
    p = joint_parent[j]
    if p >= 0:
        parent_rot = wp.transform_get_rotation(body_q[p]) * parent_rot
    child_rot = wp.transform_get_rotation(body_q[joint_child[j]]) * wp.transform_get_rotation(joint_X_c[j])
    rot = wp.quat_inverse(parent_rot) * child_rot
    tau = wp.quat_rotate(rot, wp.vec3(f_in[d], f_in[d + 1], f_in[d + 2]))
    first = cone_first_axis[j]
    if first >= 0:
        angles = _euler_angles(first, rot)
        a0, a1, a2 = _euler_axes(first, angles[0], angles[1])
        tau = wp.vec3(wp.dot(a0, tau), wp.dot(a1, tau), wp.dot(a2, tau))
    elif in_world == 1:
        tau = wp.quat_rotate(parent_rot, tau)
    for k in range(3):
        f_out[d + k] = tau[k]


@wp.kernel
def _articulations_of_worlds(
    worlds: wp.array(dtype=wp.bool), articulation_world: wp.array(dtype=wp.int32), out: wp.array(dtype=wp.bool)
):
    """``out[a]``: articulation ``a`` is in one of ``worlds`` (one flag per world; a global one, world -1, is not)."""
    a = wp.tid()
    w = articulation_world[a]
    out[a] = w >= 0 and worlds[w]


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


class PendingNewtonJoints:
    """A State whose joint states are still Newton's (see the module's docstring), held in ``slot``, one of the
    exchange's two: the output of a solver that writes joint states, converted into ours when first read
    instead of after every step (the next step reads Newton's from the slot directly). Reading an array that
    the conversion writes or reads converts it: ``joint_qd``, ``joint_q`` where a cone joint's differ, the body
    arrays where free joints' velocities depend on their pose (a caller might change it next)."""

    __slots__ = ("exchange", "slot")

    def __init__(self, exchange, slot: int):
        self.exchange, self.slot = exchange, slot

    def read(self, state, name):
        if name in self.exchange._read_converts:
            self.release(state)
        return state.__dict__[name]

    def release(self, state):
        if state.__dict__.get("_pending") is self:
            del state.__dict__["_pending"]
            self.exchange._from_slot(state, self.slot)


_PENDING = (PendingJointState, PendingNewtonJoints)
"""What an exchange leaves in a State's ``_pending``."""


class StateExchange:
    """Newton's State and Control objects of one bridged model, made to point at ours each step.

    Where the joint states differ, Newton's live in two *slots* (``joint_q`` where a cone joint's differ, and
    ``joint_qd``), one the step's input, the other its output: a step's output stays in its slot, pending in
    our State (:class:`PendingNewtonJoints`), until read or until the slot is needed again; then it is
    converted into ours.

    Args:
        model: our Model.
        bridge: its :class:`~.model_bridge.Bridge` (the ``newton.Model`` and where the joint states differ).
        ball_torque_in_world: the solver reads a ball joint's ``joint_f`` in the world frame (XPBD), not in the
            parent joint frame.
    """

    def __init__(self, model, bridge, ball_torque_in_world: bool = False):
        newton_model = bridge.newton_model
        self.model = model
        self.newton_model = newton_model
        self.state_in = newton_model.state()
        self.state_out = newton_model.state()
        self.control = newton_model.control()
        self._ik_state = newton_model.state()  # (pointed at a State's body arrays for eval_ik and eval_fk)
        self._launches = {}  # (kernel, key) -> (recorded launch, dim, its arguments): see _launch
        device = model.device
        self._convert_free = bridge.free_com_offset
        self._cone_first_axis = wp.array(bridge.cone_first_axis, dtype=wp.int32, device=device)
        self._convert_q = bool((bridge.cone_first_axis >= 0).any())  # (Newton's joint_q is shorter)
        balls = bool((model.joint_type.numpy() == int(JointType.BALL)).any())
        self._convert_qd = self._convert_q or self._convert_free or balls
        self._joint_f = None  # Newton's joint_f, where ball joints' differ from ours
        self._ball_torque_in_world = int(ball_torque_in_world)
        if balls:
            grad = newton_model.requires_grad
            self._joint_f = wp.zeros(model.joint_dof_count, dtype=wp.float32, device=device, requires_grad=grad)
        self._read_converts = {"joint_qd"} | ({"joint_q"} if self._convert_q else set())
        if self._convert_free:
            self._read_converts |= {"body_q", "body_qd"}
        if self._convert_qd:  # Newton's own joint_q (where it differs) and joint_qd, in two slots
            grad = newton_model.requires_grad

            def newton_joints():
                q = None
                if self._convert_q:
                    q = wp.zeros(newton_model.joint_coord_count, dtype=wp.float32, device=device, requires_grad=grad)
                return q, wp.zeros(model.joint_dof_count, dtype=wp.float32, device=device, requires_grad=grad)

            self._slots = (newton_joints(), newton_joints())
            self._holders = [None, None]  # the State (weak reference) whose pending joint states each slot holds
        types = newton_model.joint_type.numpy()
        per_dof = np.nonzero((types != int(JointType.FREE)) & (types != int(JointType.BALL)))[0].astype(np.int32)
        self._coord_targets = None  # Newton's per-coordinate position targets, where they differ from ours
        if newton_model.joint_coord_count != newton_model.joint_dof_count:
            # (also where no DOF is position-driven: Featherstone reads every joint's target at its coordinate
            # index, times a zero gain; ours, one per DOF, is shorter: a read past its end, garbage times zero,
            # NaN where the garbage was NaN or infinite)
            self._coord_targets = wp.clone(newton_model.joint_target_q)
            position_modes = (int(DriveMode.POSITION), int(DriveMode.POSITION_VELOCITY))
            if not np.isin(model.joint_target_mode.numpy(), position_modes).any():
                per_dof = per_dof[:0]  # (no target is read but times a zero gain: no scatter each step)
            self._per_dof_joints = wp.array(per_dof, dtype=wp.int32, device=device)

    def initial_state(self) -> None:
        """The Newton model's initial ``joint_q``/``joint_qd`` in Newton's convention, where it differs (the
        bridge copied ours where it does not)."""
        if self._convert_qd:
            m, nm = self.model, self.newton_model
            self._convert(m.body_q, m.joint_q, m.joint_qd, nm.joint_q, nm.joint_qd, True)

    def inputs(self, state_in, state_out, control, joints_read: bool = True):
        """Newton's (state_in, state_out, control), pointing at ours (the joint states converted in unless the
        solver does not read them, ``joints_read`` False: XPBD, or ``state_in`` holds them in a slot)."""
        ns_in, ns_out, nc = self.state_in, self.state_out, self.control
        pending = state_out.__dict__.get("_pending")
        if isinstance(pending, _PENDING) and pending.exchange is self:  # its joint states are about to be stepped over
            del state_out.__dict__["_pending"]
        elif pending is not None:  # another solver's: its arrays written first
            pending.release(state_out)
        pending = state_in.__dict__.get("_pending")
        if pending is not None and not (isinstance(pending, _PENDING) and pending.exchange is self):
            pending.release(state_in)  # (ours pending: its body arrays are current, its joint arrays unread)
            pending = None
        for ours, theirs in ((state_in, ns_in), (state_out, ns_out)):
            arrays = ours.__dict__
            theirs.body_q = arrays["body_q"]
            theirs.body_qd = arrays["body_qd"]
            theirs.body_f = arrays["body_f"]
            theirs.joint_q = arrays["joint_q"]
            theirs.joint_qd = arrays["joint_qd"]
        if self._convert_qd:
            if isinstance(pending, PendingNewtonJoints):  # Newton's joint states of state_in, still in their slot
                i = pending.slot
            else:
                i = 0
                self._claim(0)
                if joints_read:
                    arrays = state_in.__dict__
                    q, qd = self._slots[0]
                    q = arrays["joint_q"] if q is None else q
                    self._convert(arrays["body_q"], arrays["joint_q"], arrays["joint_qd"], q, qd, True)
            out = 1 - i
            self._claim(out, state_out)
            for theirs, (q, qd) in ((ns_in, self._slots[i]), (ns_out, self._slots[out])):
                if q is not None:
                    theirs.joint_q = q
                theirs.joint_qd = qd
            self._out = out
        if control is not None:
            if self._coord_targets is None:  # (one coordinate a DOF: the same array)
                nc.joint_target_q = control.joint_target_pos
            else:
                nc.joint_target_q = self._coord_targets
                if len(self._per_dof_joints):
                    nm = self.newton_model
                    self._launch(
                        _coord_targets_kernel,
                        len(self._per_dof_joints),
                        [self._per_dof_joints, nm.joint_q_start, nm.joint_qd_start, control.joint_target_pos,
                         self._coord_targets],
                    )  # fmt: skip
            nc.joint_target_qd = control.joint_target_vel
            nc.joint_f = control.joint_f if self._joint_f is None else self._joint_forces(state_in, control)
        return ns_in, ns_out, nc

    def _joint_forces(self, state_in, control):
        """Newton's ``joint_f``: ours, the ball joints' converted (:func:`_joint_force_kernel`: one launch) at
        ``state_in``."""
        m = self.model
        params = [m.joint_type, m.joint_parent, m.joint_child, m.joint_X_p, m.joint_X_c, m.joint_qd_start,
                  self._cone_first_axis, self._ball_torque_in_world, state_in.__dict__["body_q"], control.joint_f,
                  self._joint_f]  # fmt: skip
        self._launch(_joint_force_kernel, m.joint_count, params)
        return self._joint_f

    def outputs(self, state_out, joints_written: bool = True) -> None:
        """After a step: Newton's joint states, where they differ, left in their slot to be converted into ours
        when read (with gradients: converted now, as a ``wp.Tape`` records kernels when they run).
        ``joints_written`` False (XPBD): the joint states are left pending, computed from the body states when
        first read."""
        if not joints_written:
            state_out.__dict__["_pending"] = PendingJointState(self)
            return
        if not self._convert_qd:
            return
        if self.newton_model.requires_grad:
            self._holders[self._out] = None
            self._from_slot(state_out, self._out)
        else:
            state_out.__dict__["_pending"] = PendingNewtonJoints(self, self._out)

    def joints_from_bodies(self, state) -> None:
        """``state``'s joint coordinates and velocities from its body poses and velocities (``newton.eval_ik``)."""
        arrays = state.__dict__
        ns = self._ik_state
        ns.body_q, ns.body_qd = arrays["body_q"], arrays["body_qd"]
        if not self._convert_qd:
            newton.eval_ik(self.newton_model, ns, arrays["joint_q"], arrays["joint_qd"])
            return
        q, qd = self._scratch()
        newton.eval_ik(self.newton_model, ns, arrays["joint_q"] if q is None else q, qd)
        self._from_slot(state, 0)

    def bodies_from_joints(self, state, worlds=None) -> None:
        """``state``'s body poses and velocities from its joint coordinates and velocities (``newton.eval_fk``): in
        the worlds of ``worlds`` (a bool array, one per world; None: every world), the others' bodies untouched."""
        arrays = state.__dict__
        ns = self._ik_state
        ns.body_q, ns.body_qd = arrays["body_q"], arrays["body_qd"]
        q, qd = arrays["joint_q"], arrays["joint_qd"]
        nm, mask = self.newton_model, None
        if worlds is not None and nm.articulation_count:
            mask = self.__dict__.get("_articulation_mask")
            if mask is None:
                mask = self._articulation_mask = wp.zeros(nm.articulation_count, dtype=wp.bool, device=nm.device)
            self._launch(_articulations_of_worlds, nm.articulation_count, [worlds, nm.articulation_world, mask])
        if self._convert_qd:
            q_n, qd_n = self._scratch()
            q_n = q if q_n is None else q_n
            self._convert(arrays["body_q"], q, qd, q_n, qd_n, True)
            if self._convert_free:  # (a free joint's velocity depends on its body's pose: placed first)
                newton.eval_fk(nm, q_n, qd_n, ns, mask=mask)
                self._convert(arrays["body_q"], q, qd, q_n, qd_n, True)
            q, qd = q_n, qd_n
        newton.eval_fk(nm, q, qd, ns, mask=mask)

    def _scratch(self):
        """Slot 0, free to write (a State whose pending joint states it holds converted first)."""
        self._claim(0)
        return self._slots[0]

    def _claim(self, slot: int, state=None) -> None:
        """``slot`` is about to be written (for ``state``): another State whose pending joint states it holds gets
        them converted first."""
        held = self._holders[slot]() if self._holders[slot] is not None else None
        if held is not None and held is not state:
            pending = held.__dict__.get("_pending")
            if isinstance(pending, PendingNewtonJoints) and pending.exchange is self and pending.slot == slot:
                pending.release(held)
        self._holders[slot] = weakref.ref(state) if state is not None else None

    def _from_slot(self, state, slot: int) -> None:
        """``state``'s joint states from Newton's in ``slot``."""
        arrays = state.__dict__
        q, qd = self._slots[slot]
        q = arrays["joint_q"] if q is None else q
        self._convert(arrays["body_q"], q, qd, arrays["joint_q"], arrays["joint_qd"], False)

    def _convert(self, body_q, q_in, qd_in, q_out, qd_out, to_newton: bool) -> None:
        """Joint states from ours to Newton's (``to_newton``) or back; the coordinates are left alone (they are
        the same arrays) unless a cone joint's differ."""
        m, nm = self.model, self.newton_model
        params = [m.joint_type, m.joint_child, m.joint_q_start, nm.joint_q_start, m.joint_qd_start, m.joint_X_p,
                  m.body_com, self._cone_first_axis, int(self._convert_q), int(self._convert_free), body_q, q_in,
                  qd_in, int(to_newton), q_out, qd_out]  # fmt: skip
        self._launch(_joint_state_kernel, m.joint_count, params, key=bool(to_newton))

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
