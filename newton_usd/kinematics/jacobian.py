"""Body Jacobians and the joint-space mass matrix, every world at once, from the DOF frames of :mod:`.fk`.

Convention: columns are the model's DOFs of one world (``joint_qd`` order: a free joint's linear velocity of
the body origin and angular velocity in world axes, a ball joint's angular velocity in its child joint frame);
a Jacobian's rows 0-2 are the linear velocity of the point, rows 3-5 the angular velocity, world frame.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from .fk import frames, vec3d_of
from .tables import tables


@wp.func
def dof_velocity(angular: int, axis: wp.vec3d, anchor: wp.vec3d, point: wp.vec3d):
    """(linear velocity of ``point``, angular velocity) for a unit rate of one DOF."""
    zero = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    if angular:
        return wp.cross(axis, point - anchor), axis
    return axis, zero


@wp.kernel
def body_jacobians(
    # Model:
    dof_angular: wp.array(dtype=wp.int32),
    chain: wp.array2d(dtype=wp.int32),
    bodies: wp.array(dtype=wp.int32),
    bodies_per_world: int,
    dofs_per_world: int,
    offset: wp.vec3d,
    # Data in:
    body_x: wp.array(dtype=wp.transformd),
    dof_axis: wp.array(dtype=wp.vec3d),
    dof_anchor: wp.array(dtype=wp.vec3d),
    # Data out:
    jac: wp.array4d(dtype=wp.float32),
):
    w, k, d = wp.tid()
    body = bodies[k]
    if chain[body, d] == 0:
        for r in range(6):
            jac[w, k, r, d] = wp.float32(0.0)
        return
    point = wp.transform_point(body_x[w * bodies_per_world + body], offset)
    g = w * dofs_per_world + d
    lin, ang = dof_velocity(dof_angular[d], dof_axis[g], dof_anchor[g], point)
    for r in range(3):
        jac[w, k, r, d] = wp.float32(lin[r])
        jac[w, k, 3 + r, d] = wp.float32(ang[r])


@wp.kernel
def composite_inertias(
    # Model:
    body_leaves_first: wp.array(dtype=wp.int32),
    body_parent: wp.array(dtype=wp.int32),
    body_mass: wp.array(dtype=wp.float32),
    body_com: wp.array(dtype=wp.vec3),
    body_inertia: wp.array(dtype=wp.mat33),
    bodies_per_world: int,
    # Data in:
    body_x: wp.array(dtype=wp.transformd),
    # Data out: each body's subtree as one rigid body, world frame about the world origin:
    comp_mass: wp.array(dtype=wp.float64),
    comp_moment: wp.array(dtype=wp.vec3d),  # mass times center of mass
    comp_inertia: wp.array(dtype=wp.mat33d),  # rotational inertia about the origin
):
    w = wp.tid()
    base = w * bodies_per_world
    for b in range(bodies_per_world):
        g = base + b
        x = body_x[g]
        m = wp.float64(body_mass[g])
        com = wp.transform_point(x, vec3d_of(body_com[g]))
        rot = wp.quat_to_matrix(wp.transform_get_rotation(x))
        inertia = wp.mat33d()
        for r in range(3):
            for c in range(3):
                inertia[r, c] = wp.float64(body_inertia[g][r, c])
        shift = wp.dot(com, com) * wp.identity(n=3, dtype=wp.float64) - wp.outer(com, com)
        comp_mass[g] = m
        comp_moment[g] = com * m
        comp_inertia[g] = rot * inertia * wp.transpose(rot) + shift * m
    for k in range(bodies_per_world):
        b = body_leaves_first[k]
        p = body_parent[b]
        if p >= 0:
            comp_mass[base + p] += comp_mass[base + b]
            comp_moment[base + p] += comp_moment[base + b]
            comp_inertia[base + p] += comp_inertia[base + b]


@wp.func
def motion_at_origin(angular: int, axis: wp.vec3d, anchor: wp.vec3d):
    """A unit rate of a DOF as a spatial velocity: (velocity of the point at the world origin, angular)."""
    zero = wp.vec3d(wp.float64(0.0), wp.float64(0.0), wp.float64(0.0))
    if angular:
        return wp.cross(anchor, axis), axis
    return axis, zero


@wp.kernel
def mass_matrix_entries(
    # Model:
    dof_angular: wp.array(dtype=wp.int32),
    pair_i: wp.array(dtype=wp.int32),
    pair_j: wp.array(dtype=wp.int32),
    pair_body: wp.array(dtype=wp.int32),
    joint_armature: wp.array(dtype=wp.float32),
    bodies_per_world: int,
    dofs_per_world: int,
    # Data in:
    dof_axis: wp.array(dtype=wp.vec3d),
    dof_anchor: wp.array(dtype=wp.vec3d),
    comp_mass: wp.array(dtype=wp.float64),
    comp_moment: wp.array(dtype=wp.vec3d),
    comp_inertia: wp.array(dtype=wp.mat33d),
    # Data out:
    mass: wp.array3d(dtype=wp.float32),
):
    """``M[i, j]``: DOF i's motion dotted with the momentum of the composite body both move (the deeper DOF's
    subtree) when it moves with DOF j (composite rigid bodies, world frame), plus the armature on the diagonal."""
    w, k = wp.tid()
    i = pair_i[k]
    j = pair_j[k]
    gi = w * dofs_per_world + i
    gj = w * dofs_per_world + j
    b = w * bodies_per_world + pair_body[k]
    vi, wi = motion_at_origin(dof_angular[i], dof_axis[gi], dof_anchor[gi])
    vj, wj = motion_at_origin(dof_angular[j], dof_axis[gj], dof_anchor[gj])
    h = comp_moment[b]
    linear = vj * comp_mass[b] + wp.cross(wj, h)
    angular = wp.cross(h, vj) + comp_inertia[b] * wj
    total = wp.dot(vi, linear) + wp.dot(wi, angular)
    if i == j:
        total += wp.float64(joint_armature[gi])
    mass[w, i, j] = wp.float32(total)
    mass[w, j, i] = wp.float32(total)


def _frames(model, state, joint_q):
    return frames(model, state.joint_q if joint_q is None else joint_q, state.body_q)


def jacobian(model, state, body, offset=(0.0, 0.0, 0.0), joint_q=None) -> wp.array:
    """The Jacobian of a body point in every world: ``(worlds, 6, dofs)``, float32 on the model's device.

    Args:
        model: the Model.
        state: gives ``joint_q`` (unless ``joint_q`` is given).
        body: a body index of world 0, or a body's prim path (in any world: the same body of every world).
        offset: the point, in the body frame (default the body origin).

    Row ``r`` and column ``d`` of world ``w`` is the (linear 0-2, angular 3-5) velocity, world frame, of the
    point for a unit velocity of DOF ``d`` (the module docstring gives the DOF convention), so that
    ``J @ joint_qd`` is the point's spatial velocity.
    """
    out = jacobians(model, state, [body], offset, joint_q)
    return out.reshape((out.shape[0], 6, out.shape[3]))


def jacobians(model, state, bodies, offset=(0.0, 0.0, 0.0), joint_q=None) -> wp.array:
    """:func:`jacobian` of several bodies at once: ``(worlds, len(bodies), 6, dofs)`` (the frames computed once).
    ``bodies`` may be an int32 Warp array of world-0 body indices on the model's device (:func:`body_indices`): then
    nothing is copied from the host, as a call inside a captured graph needs."""
    t = tables(model)
    index = bodies if isinstance(bodies, wp.array) else body_indices(model, bodies)
    f = _frames(model, state, joint_q)
    n = index.shape[0]
    out = wp.zeros((t.worlds, n, 6, t.dofs), dtype=wp.float32, device=model.device)
    if t.dofs and n:
        wp.launch(
            body_jacobians, dim=(t.worlds, n, t.dofs),
            inputs=[t.dof_angular, t.chain, index, t.bodies, t.dofs,
                    wp.vec3d(*np.asarray(offset, dtype=np.float64)), f.body_x, f.dof_axis, f.dof_anchor],
            outputs=[out], device=model.device,
        )  # fmt: skip
    return out


def body_indices(model, bodies) -> wp.array:
    """``bodies`` (world-0 indices or prim paths) as the int32 Warp array of world-0 indices :func:`jacobians` takes."""
    t = tables(model)
    index = np.array([t.body_index(b) for b in bodies], dtype=np.int32)
    return wp.array(index, dtype=wp.int32, device=model.device)


def mass_matrix(model, state, joint_q=None) -> wp.array:
    """The joint-space mass matrix of every world: ``(worlds, dofs, dofs)``, float32 on the model's device.

    ``M`` such that the kinetic energy is ``qd^T M qd / 2`` in the model's DOFs (see the module docstring),
    joint armature on its diagonal (as MuJoCo's ``qM``).
    """
    t = tables(model)
    f = _frames(model, state, joint_q)
    device = model.device
    out = wp.zeros((t.worlds, t.dofs, t.dofs), dtype=wp.float32, device=device)
    if not t.pairs:
        return out
    comp_mass = wp.empty(model.body_count, dtype=wp.float64, device=device)
    comp_moment = wp.empty(model.body_count, dtype=wp.vec3d, device=device)
    comp_inertia = wp.empty(model.body_count, dtype=wp.mat33d, device=device)
    wp.launch(
        composite_inertias, dim=t.worlds,
        inputs=[t.body_leaves_first, t.body_parent, model.body_mass, model.body_com, model.body_inertia, t.bodies,
                f.body_x],
        outputs=[comp_mass, comp_moment, comp_inertia], device=device,
    )  # fmt: skip
    wp.launch(
        mass_matrix_entries, dim=(t.worlds, t.pairs),
        inputs=[t.dof_angular, t.pair_i, t.pair_j, t.pair_body, model.joint_armature, t.bodies, t.dofs, f.dof_axis,
                f.dof_anchor, comp_mass, comp_moment, comp_inertia],
        outputs=[out], device=device,
    )  # fmt: skip
    return out
