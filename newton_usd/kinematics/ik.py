"""Inverse kinematics: damped least squares towards position/orientation targets on links, every world at once.

Each iteration computes the DOF frames (:mod:`.fk`), the stacked target errors ``e`` (position: target minus
point; orientation: the rotation vector from the link's orientation to the target's, world frame) and their
Jacobian rows ``J``, solves ``(J J^T + damping^2 I) y = e`` per world (Cholesky, in the kernel) and moves the
coordinates by ``J^T y``: scalar coordinates added and clamped to their joint limits, ball and free
rotations integrated on the unit quaternion.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import warp as wp

from ..errors import NewtonUsdError
from .fk import BALL, FREE, frames
from .jacobian import dof_velocity
from .tables import tables


@dataclass
class IKTarget:
    """A target on a link: a point (``offset`` in the link frame) at ``position`` and/or the link frame at
    ``orientation`` (quaternion x, y, z, w), world frame; one value for every world or one row per world."""

    body: int | str
    position: object = None
    orientation: object = None
    offset: tuple = (0.0, 0.0, 0.0)


@dataclass
class IKResult:
    """``joint_q``: the solution (all worlds, model coordinates, a new array); ``position_error`` (m) and
    ``angle_error`` (rad): ``(worlds, targets)`` at the solution (0 where a target has no such part);
    ``iterations`` taken."""

    joint_q: wp.array
    position_error: np.ndarray
    angle_error: np.ndarray
    iterations: int


@wp.func
def rotation_vector(q: wp.quatd):
    """The rotation vector (axis times angle, angle in [0, pi]) of a unit quaternion."""
    sign = wp.where(q[3] < wp.float64(0.0), wp.float64(-1.0), wp.float64(1.0))
    v = wp.vec3d(q[0], q[1], q[2]) * sign
    s = wp.length(v)
    if s < wp.float64(1.0e-12):
        return v * wp.float64(2.0)
    return v * (wp.float64(2.0) * wp.atan2(s, q[3] * sign) / s)


@wp.func
def quat_exp(v: wp.vec3d):
    angle = wp.length(v)
    if angle < wp.float64(1.0e-12):
        return wp.quat_identity(dtype=wp.float64)
    return wp.quat_from_axis_angle(v / angle, angle)


@wp.kernel
def ik_errors_and_step(
    # Model:
    dof_angular: wp.array(dtype=wp.int32),
    chain: wp.array2d(dtype=wp.int32),
    bodies_per_world: int,
    dofs_per_world: int,
    # Targets:
    target_body: wp.array(dtype=wp.int32),
    target_offset: wp.array(dtype=wp.vec3d),
    target_pos: wp.array2d(dtype=wp.vec3d),
    target_rot: wp.array2d(dtype=wp.quatd),
    has_pos: wp.array(dtype=wp.int32),
    has_rot: wp.array(dtype=wp.int32),
    target_row: wp.array(dtype=wp.int32),
    damping: wp.float64,
    max_step: wp.float64,
    solve: int,
    # Data in:
    body_x: wp.array(dtype=wp.transformd),
    dof_axis: wp.array(dtype=wp.vec3d),
    dof_anchor: wp.array(dtype=wp.vec3d),
    # Scratch:
    jac: wp.array3d(dtype=wp.float64),
    gram: wp.array3d(dtype=wp.float64),
    err: wp.array2d(dtype=wp.float64),
    # Data out:
    pos_error: wp.array2d(dtype=wp.float32),
    rot_error: wp.array2d(dtype=wp.float32),
    dq: wp.array2d(dtype=wp.float64),
):
    w = wp.tid()
    D = dofs_per_world
    for t in range(target_body.shape[0]):
        row = target_row[t]
        b = target_body[t]
        x = body_x[w * bodies_per_world + b]
        point = wp.transform_point(x, target_offset[t])
        pos_error[w, t] = wp.float32(0.0)
        rot_error[w, t] = wp.float32(0.0)
        rot_row = row + 3 * has_pos[t]
        if has_pos[t]:
            e = target_pos[w, t] - point
            pos_error[w, t] = wp.float32(wp.length(e))
            for r in range(3):
                err[w, row + r] = e[r]
        if has_rot[t]:
            e_rot = rotation_vector(target_rot[w, t] * wp.quat_inverse(wp.transform_get_rotation(x)))
            rot_error[w, t] = wp.float32(wp.length(e_rot))
            for r in range(3):
                err[w, rot_row + r] = e_rot[r]
        for d in range(D):
            g = w * D + d
            lin, ang = dof_velocity(dof_angular[d], dof_axis[g], dof_anchor[g], point)
            moves = wp.float64(chain[b, d])
            for r in range(3):
                if has_pos[t]:
                    jac[w, row + r, d] = lin[r] * moves
                if has_rot[t]:
                    jac[w, rot_row + r, d] = ang[r] * moves
    if solve == 0:
        return
    m = target_row[target_body.shape[0]]
    # gram = J J^T + damping^2 I, then its Cholesky factor in place (lower triangle).
    for r in range(m):
        for c in range(r + 1):
            s = wp.float64(0.0)
            for d in range(D):
                s += jac[w, r, d] * jac[w, c, d]
            if r == c:
                s += damping * damping
            gram[w, r, c] = s
    for r in range(m):
        for c in range(r + 1):
            s = gram[w, r, c]
            for k in range(c):
                s -= gram[w, r, k] * gram[w, c, k]
            if r == c:
                gram[w, r, r] = wp.sqrt(wp.max(s, wp.float64(1.0e-300)))
            else:
                gram[w, r, c] = s / gram[w, c, c]
    # Solve L L^T y = e in place in err.
    for r in range(m):
        s = err[w, r]
        for k in range(r):
            s -= gram[w, r, k] * err[w, k]
        err[w, r] = s / gram[w, r, r]
    for i in range(m):
        r = m - 1 - i
        s = err[w, r]
        for k in range(r + 1, m):
            s -= gram[w, k, r] * err[w, k]
        err[w, r] = s / gram[w, r, r]
    largest = wp.float64(0.0)
    for d in range(D):
        s = wp.float64(0.0)
        for r in range(m):
            s += jac[w, r, d] * err[w, r]
        dq[w, d] = s
        largest = wp.max(largest, wp.abs(s))
    if largest > max_step:  # a step no DOF takes further than max_step (far from the target, near singularities)
        for d in range(D):
            dq[w, d] = dq[w, d] * (max_step / largest)


@wp.kernel
def integrate_coordinates(
    # Model:
    joint_type: wp.array(dtype=wp.int32),
    joint_q_start: wp.array(dtype=wp.int32),
    joint_qd_start: wp.array(dtype=wp.int32),
    joint_limited: wp.array(dtype=wp.bool),
    joint_limit_lower: wp.array(dtype=wp.float32),
    joint_limit_upper: wp.array(dtype=wp.float32),
    joints_per_world: int,
    dofs_per_world: int,
    # Data in:
    dq: wp.array2d(dtype=wp.float64),
    # Data in/out:
    joint_q: wp.array(dtype=wp.float32),
):
    w = wp.tid()
    for k in range(joints_per_world):
        j = w * joints_per_world + k
        t = joint_type[j]
        q0 = joint_q_start[j]
        d0 = joint_qd_start[j]
        nd = joint_qd_start[j + 1] - d0
        l0 = d0 - w * dofs_per_world  # the joint's first DOF within its world
        if t == FREE:
            for a in range(3):
                joint_q[q0 + a] = joint_q[q0 + a] + wp.float32(dq[w, l0 + a])
            rot = wp.quatd(
                wp.float64(joint_q[q0 + 3]), wp.float64(joint_q[q0 + 4]),
                wp.float64(joint_q[q0 + 5]), wp.float64(joint_q[q0 + 6]),
            )  # fmt: skip
            turn = quat_exp(wp.vec3d(dq[w, l0 + 3], dq[w, l0 + 4], dq[w, l0 + 5]))
            rot = wp.normalize(turn * rot)  # world-frame angular velocity: turns on the left
            for a in range(4):
                joint_q[q0 + 3 + a] = wp.float32(rot[a])
        elif t == BALL:
            rot = wp.quatd(
                wp.float64(joint_q[q0]), wp.float64(joint_q[q0 + 1]),
                wp.float64(joint_q[q0 + 2]), wp.float64(joint_q[q0 + 3]),
            )  # fmt: skip
            turn = quat_exp(wp.vec3d(dq[w, l0], dq[w, l0 + 1], dq[w, l0 + 2]))
            rot = wp.normalize(rot * turn)  # child-frame angular velocity: turns on the right
            for a in range(4):
                joint_q[q0 + a] = wp.float32(rot[a])
        else:
            for a in range(nd):
                value = joint_q[q0 + a] + wp.float32(dq[w, l0 + a])
                if joint_limited[d0 + a]:
                    value = wp.clamp(value, joint_limit_lower[d0 + a], joint_limit_upper[d0 + a])
                joint_q[q0 + a] = value


def _per_world(values, worlds, width, what):
    a = np.asarray(values, dtype=np.float64)
    if a.shape == (width,):
        return np.broadcast_to(a, (worlds, width))
    if a.shape == (worlds, width):
        return a
    raise NewtonUsdError(f"IK target {what}: shape {a.shape}, expected ({width},) or ({worlds}, {width})")


def eval_ik(
    model,
    state,
    targets,
    *,
    iterations: int = 100,
    damping: float = 1e-3,
    max_step: float = 0.2,
    tolerance=(1e-5, 1e-4),
    joint_q=None,
) -> IKResult:
    """Joint coordinates that put links at their targets, every world at once (damped least squares).

    Args:
        model: the Model.
        state: the starting coordinates (``state.joint_q``, unless ``joint_q`` is given) and the poses of bodies
            no joint moves; not modified.
        targets: :class:`IKTarget` (or a list of them).
        iterations: at most this many steps; stops earlier once every world is within ``tolerance``
            (position in m, angle in rad).
        damping: the damping ``lambda`` (m or rad): larger is steadier near singularities, slower to converge.
        max_step: the largest change of one coordinate in one iteration (rad or m): the step is scaled down to it.

    Returns:
        :class:`IKResult`: the coordinates (joint limits respected) and the remaining errors per world.
    """
    targets = [targets] if isinstance(targets, IKTarget) else list(targets)
    if not targets:
        raise NewtonUsdError("eval_ik needs at least one IKTarget")
    t = tables(model)
    W, device = t.worlds, model.device
    nT = len(targets)
    pos = np.zeros((W, nT, 3))
    rot = np.zeros((W, nT, 4))
    rot[..., 3] = 1.0
    for k, target in enumerate(targets):
        if target.position is None and target.orientation is None:
            raise NewtonUsdError(f"IK target on {target.body}: give a position, an orientation or both")
        if target.position is not None:
            pos[:, k] = _per_world(target.position, W, 3, "position")
        if target.orientation is not None:
            q = _per_world(target.orientation, W, 4, "orientation")
            rot[:, k] = q / np.linalg.norm(q, axis=1, keepdims=True)
    row_counts = [3 * ((tg.position is not None) + (tg.orientation is not None)) for tg in targets]
    rows = sum(row_counts)
    q = wp.clone(state.joint_q if joint_q is None else joint_q)

    def arr(values, dtype):
        return wp.array(values, dtype=dtype, device=device)

    target_inputs = [
        arr(np.array([t.body_index(tg.body) for tg in targets], dtype=np.int32), wp.int32),
        arr(np.array([np.asarray(tg.offset, dtype=np.float64) for tg in targets]), wp.vec3d),
        arr(pos, wp.vec3d),
        arr(rot, wp.quatd),
        arr(np.array([tg.position is not None for tg in targets], dtype=np.int32), wp.int32),
        arr(np.array([tg.orientation is not None for tg in targets], dtype=np.int32), wp.int32),
        arr(np.concatenate([[0], np.cumsum(row_counts)]).astype(np.int32), wp.int32),
        wp.float64(damping),
        wp.float64(max_step),
    ]
    jac = wp.zeros((W, rows, max(t.dofs, 1)), dtype=wp.float64, device=device)
    gram = wp.zeros((W, rows, rows), dtype=wp.float64, device=device)
    err = wp.zeros((W, rows), dtype=wp.float64, device=device)
    pos_error = wp.zeros((W, nT), dtype=wp.float32, device=device)
    rot_error = wp.zeros((W, nT), dtype=wp.float32, device=device)
    dq = wp.zeros((W, max(t.dofs, 1)), dtype=wp.float64, device=device)
    tol_pos, tol_rot = tolerance

    def measure(solve):
        f = frames(model, q, state.body_q)
        wp.launch(
            ik_errors_and_step, dim=W,
            inputs=[t.dof_angular, t.chain, t.bodies, t.dofs, *target_inputs, int(solve), f.body_x, f.dof_axis,
                    f.dof_anchor, jac, gram, err],
            outputs=[pos_error, rot_error, dq], device=device,
        )  # fmt: skip

    done = 0
    for it in range(iterations):
        measure(True)
        if it % 8 == 0 and _within(pos_error, rot_error, tol_pos, tol_rot):
            break
        wp.launch(
            integrate_coordinates, dim=W,
            inputs=[model.joint_type, model.joint_q_start, model.joint_qd_start, model.joint_limited,
                    model.joint_limit_lower, model.joint_limit_upper, t.joints, t.dofs, dq],
            outputs=[q], device=device,
        )  # fmt: skip
        done = it + 1
    measure(False)
    return IKResult(q, pos_error.numpy(), rot_error.numpy(), done)


def _within(pos_error, rot_error, tol_pos, tol_rot) -> bool:
    return bool((pos_error.numpy() <= tol_pos).all() and (rot_error.numpy() <= tol_rot).all())
