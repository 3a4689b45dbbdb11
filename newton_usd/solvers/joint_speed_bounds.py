"""The bodies' speed bounds (:mod:`.velocity_limits`) on an engine whose state is joint coordinates: Newton's
Featherstone, which integrates ``joint_qd`` and computes the body velocities from them at the end of its step.

As under C MuJoCo (:class:`.velocity_limits.MuJoCoSpeedBounds`), and as PhysX keeps them on its articulations, a
link's velocity is its parent's plus what its own joint adds; its joint's velocities are scaled (the rotating DOFs by
one factor, the translating ones by another, each the largest in [0, 1] that keeps the link within its bounds), the
links taken from the root outward, so that the bound holds without touching the rest of the tree. A free body (a
free joint from the world) gets its center of mass's speed and its angular speed each scaled to its bound.

Newton's conventions (1.8): ``body_qd`` is (linear velocity of the center of mass, angular velocity), world frame; a
free (or distance) joint's ``joint_qd`` is its child's center-of-mass velocity relative to the parent joint frame, then
its angular velocity, both in that frame (so its rotating DOFs add nothing at the center of mass); a prismatic or D6
joint's translating DOFs come first, along ``joint_axis`` in the parent joint frame. A joint's own part of its
child's velocity is taken as the child's ``body_qd`` less the parent's carried to the child's center of mass (what
Featherstone's forward kinematics made them); its translating part from its ``joint_qd``, the rest is its rotating
part. Kinematic links are not scaled (their motion is prescribed) but carry their parent's change.

One kernel after each step, a thread per articulation that holds a bounded body, joint by joint in Newton's order
(parents before children): ``joint_qd`` scaled in place and ``body_qd`` made to match (the next step starts from
the scaled joint velocities). Kernel launches only (captured with the frame on CUDA); its two scratch arrays are made
once.
"""

from __future__ import annotations

import newton
import numpy as np
import warp as wp

from .kernel_loading import modules_named
from .velocity_limits import BodySpeedBounds, _scale_within, _within, bounded_bodies

_FREE = wp.constant(int(newton.JointType.FREE))
_DISTANCE = wp.constant(int(newton.JointType.DISTANCE))
_KINEMATIC = wp.constant(int(newton.BodyFlags.KINEMATIC))


@wp.func
def _carried(v: wp.spatial_vector, r: wp.vec3) -> wp.spatial_vector:
    """A body's velocity (center of mass linear, angular) carried to the point ``r`` from its center of mass."""
    w = wp.spatial_bottom(v)
    return wp.spatial_vector(wp.spatial_top(v) + wp.cross(w, r), w)


@wp.kernel
def _bound_articulations(
    articulations: wp.array[wp.int32],
    articulation_start: wp.array[wp.int32],
    articulation_end: wp.array[wp.int32],
    joint_type: wp.array[wp.int32],
    joint_parent: wp.array[wp.int32],
    joint_child: wp.array[wp.int32],
    joint_qd_start: wp.array[wp.int32],
    joint_dof_dim: wp.array2d[wp.int32],
    joint_X_p: wp.array[wp.transform],
    joint_axis: wp.array[wp.vec3],
    body_com: wp.array[wp.vec3],
    body_flags: wp.array[wp.int32],
    bounds: wp.array[wp.vec2],
    body_q: wp.array[wp.transform],
    joint_qd: wp.array[float],
    body_qd: wp.array[wp.spatial_vector],
    before: wp.array[wp.spatial_vector],
    moved: wp.array[wp.int32],
):
    a = articulations[wp.tid()]
    for j in range(articulation_start[a], articulation_end[a]):
        c = joint_child[j]
        p = joint_parent[j]
        v = body_qd[c]
        before[c] = v  # (as the step left it: what its children's own parts are taken against)
        x = wp.transform_point(body_q[c], body_com[c])
        old = wp.spatial_vector()  # the parent's velocity at the child's center of mass, as the step left it
        new = wp.spatial_vector()  # and as scaled
        parent_moved = int(0)
        X_wpj = joint_X_p[j]
        if p >= 0:
            r = x - wp.transform_point(body_q[p], body_com[p])
            old = _carried(before[p], r)
            new = _carried(body_qd[p], r)
            parent_moved = moved[p]
            X_wpj = body_q[p] * X_wpj
        start = joint_qd_start[j]
        n_lin = joint_dof_dim[j, 0]
        n_ang = joint_dof_dim[j, 1]
        lin = wp.vec3()
        if joint_type[j] == _FREE or joint_type[j] == _DISTANCE:
            lin = wp.vec3(joint_qd[start], joint_qd[start + 1], joint_qd[start + 2])
        else:
            for k in range(n_lin):
                lin = lin + joint_axis[start + k] * joint_qd[start + k]
        trans = wp.spatial_vector(wp.transform_vector(X_wpj, lin), wp.vec3())
        rot = v - old - trans
        s_rot = float(1.0)
        s_trans = float(1.0)
        bound = bounds[c]
        if (body_flags[c] & _KINEMATIC) == 0 and n_lin + n_ang > 0:
            if n_ang > 0:
                s_rot = _scale_within(wp.spatial_bottom(new), wp.spatial_bottom(rot), bound[1])
            if n_lin > 0:
                s_trans = _scale_within(wp.spatial_top(new + rot * s_rot), wp.spatial_top(trans), bound[0])
            else:
                s_rot = wp.min(s_rot, _scale_within(wp.spatial_top(new), wp.spatial_top(rot), bound[0]))
            if s_rot < 1.0 or s_trans < 1.0:
                for k in range(n_lin + n_ang):
                    if k < n_lin:
                        joint_qd[start + k] = joint_qd[start + k] * s_trans
                    else:
                        joint_qd[start + k] = joint_qd[start + k] * s_rot
        if parent_moved != 0 or s_rot < 1.0 or s_trans < 1.0:
            if n_ang == 0:
                s_rot = 1.0  # (what is left of a joint without rotating DOFs is round-off: kept)
            body_qd[c] = new + rot * s_rot + trans * s_trans
            moved[c] = 1
        else:
            moved[c] = 0


class JointSpeedBounds:
    """The bodies' speed bounds on Newton's Featherstone (see the module's docstring): one kernel on a step's output
    ``joint_qd`` (Newton's) and ``body_qd``.

    Args:
        model: our Model (``body_max_velocity``; its bodies are Newton's, in the same order).
        newton_model: the bridged ``newton.Model`` (its articulations, joints and bodies).
        bodies: the bounded bodies (:func:`.velocity_limits.bounded_bodies`).
    """

    def __init__(self, model, newton_model, bodies: np.ndarray):
        nm = newton_model
        start, end = nm.articulation_start.numpy(), nm.articulation_end.numpy()
        child = nm.joint_child.numpy()
        bounded = np.zeros(nm.body_count, dtype=bool)
        bounded[bodies] = True
        held = [a for a in range(nm.articulation_count) if bounded[child[start[a] : end[a]]].any()]
        device = nm.device
        self.articulations = wp.array(np.asarray(held, dtype=np.int32), dtype=wp.int32, device=device)
        self.model, self.newton_model, self.bounds = model, nm, model.body_max_velocity
        self.before = wp.zeros(nm.body_count, dtype=wp.spatial_vector, device=device)
        self.moved = wp.zeros(nm.body_count, dtype=wp.int32, device=device)

    @classmethod
    def of(cls, model, newton_model) -> JointSpeedBounds | None:
        bodies = bounded_bodies(model)
        if not len(bodies) or not newton_model.articulation_count:
            return None
        made = cls(model, newton_model, bodies)
        return made if len(made.articulations) else None

    def kernel_modules(self) -> list:
        """The Warp module of its kernel (loaded before the first frame, with the solver's)."""
        return modules_named([__name__])

    def apply_to(self, state) -> None:
        """Scale Newton's ``state.joint_qd`` so every bounded body is within its bounds, ``state.body_qd`` made to
        match (``state``: a step's output, its bodies as Featherstone's forward kinematics left them)."""
        nm = self.newton_model
        wp.launch(
            _bound_articulations, len(self.articulations), device=nm.device,
            inputs=(self.articulations, nm.articulation_start, nm.articulation_end, nm.joint_type, nm.joint_parent,
                    nm.joint_child, nm.joint_qd_start, nm.joint_dof_dim, nm.joint_X_p, nm.joint_axis, nm.body_com,
                    nm.body_flags, self.bounds, state.body_q, state.joint_qd, state.body_qd, self.before, self.moved),
        )  # fmt: skip


@wp.kernel
def _bound_bodies_marking(
    bodies: wp.array[wp.int32],
    bounds: wp.array[wp.vec2],
    body_articulation: wp.array[wp.int32],
    body_qd: wp.array[wp.spatial_vector],
    scaled: wp.array[wp.bool],
):
    """:class:`.velocity_limits.BodySpeedBounds`'s scaling, each articulation with a body it scaled marked in
    ``scaled`` (cleared before)."""
    b = bodies[wp.tid()]
    qd = body_qd[b]
    within = _within(qd, bounds[b])
    if wp.length_sq(within - qd) > 0.0:
        body_qd[b] = within
        if body_articulation[b] >= 0:
            scaled[body_articulation[b]] = True


class BodyJointSpeedBounds(BodySpeedBounds):
    """The bodies' speed bounds on a maximal-coordinate engine that reports joint velocities of its own (Kamino: its
    state is the bodies' twists; its step ends with its joints' velocities computed from them, and the next starts by
    computing them again): the body velocities scaled as :class:`.velocity_limits.BodySpeedBounds` does, then the
    joint velocities of the articulations where a body was scaled taken anew from the bodies (Newton's ``eval_ik``,
    masked: the others keep the engine's own); kernel launches only, its scratch made once."""

    def __init__(self, model, newton_model, bodies: np.ndarray):
        super().__init__(model, bodies)
        nm = self.newton_model = newton_model
        of_body = np.full(nm.body_count, -1, dtype=np.int32)
        child, articulation = nm.joint_child.numpy(), nm.joint_articulation.numpy()
        of_body[child[child >= 0]] = articulation[child >= 0]
        self.body_articulation = wp.array(of_body, dtype=wp.int32, device=nm.device)
        self.scaled = wp.zeros(max(nm.articulation_count, 1), dtype=wp.bool, device=nm.device)
        self.joint_q = wp.zeros_like(nm.joint_q)  # (eval_ik's coordinates: the engine's own are kept)
        self._ik = newton.State()

    @classmethod
    def of(cls, model, newton_model) -> BodyJointSpeedBounds | None:
        bodies = bounded_bodies(model)
        return cls(model, newton_model, bodies) if len(bodies) else None

    def apply_to(self, state) -> None:
        device = self.newton_model.device
        self.scaled.zero_()
        wp.launch(_bound_bodies_marking, len(self.bodies), device=device,
                  inputs=(self.bodies, self.bounds, self.body_articulation, state.body_qd, self.scaled))  # fmt: skip
        if self.newton_model.articulation_count:
            self._ik.body_q, self._ik.body_qd = state.body_q, state.body_qd
            newton.eval_ik(self.newton_model, self._ik, self.joint_q, state.joint_qd, mask=self.scaled)

    def kernel_modules(self) -> list:
        return modules_named([__name__, "newton._src.sim.articulation"])


def speed_bounds_of(kept, model, newton_model):
    """What keeps ``model``'s speed bounds under a Newton solver whose ``keeps_speed_bounds`` is ``kept``: "bodies"
    (:class:`.velocity_limits.BodySpeedBounds`, on the body velocities), "bodies and joints"
    (:class:`BodyJointSpeedBounds`: Kamino), "joints" (:class:`JointSpeedBounds`: Featherstone), None where it keeps
    none or the model has no bound."""
    if kept == "bodies":
        return BodySpeedBounds.of(model)
    if kept == "bodies and joints":
        return BodyJointSpeedBounds.of(model, newton_model)
    if kept == "joints":
        return JointSpeedBounds.of(model, newton_model)
    return None
