"""Two-way coupling of rigid bodies with grains: the part stepped between a rigid engine and Newton's implicit MPM
each physics step, in the scheme of Newton 1.8's ``example_mpm_twoway_coupling`` (one MPM step per rigid step here,
of the same ``dt``):

1. :meth:`GrainCoupling.forces_onto` — the impulses the grains put on each body's collider at the last MPM step
   (``SolverImplicitMPM``'s collider impulses, summed per body, divided by ``dt``) become the body's force and
   torque about its centre of mass, written into the State's ``body_f``, which the rigid engine applies through the
   step (the bodies feel the grains).
2. The rigid engine steps the bodies.
3. :meth:`GrainCoupling.bodies_into` — the bodies' new poses, and their velocities less what that force added in
   the step, go into the MPM state: the grains collide with the bodies where they are and as they move (the grains
   feel the bodies), and the MPM contact solve finds the whole impulse again, not the part the force already gave.
4. The MPM step, then :meth:`GrainCoupling.collect` keeps its collider impulses for the next step.

Everything is allocated once, here (the per-body force buffer); a step launches kernels only. What would stop a
CUDA capture of the step: the MPM grid's size (and so the impulses' count) is read on the host where the grid is
rebuilt each step (Newton's ``grid_type`` "sparse" or "dense" over the grains' bounds; its example uses "fixed" to
capture), and the rigid engine's own frame capture does not include the MPM step.
"""

from __future__ import annotations

import warp as wp


@wp.kernel
def _grain_forces(
    dt: float,
    scale: float,
    collider_ids: wp.array[int],
    impulses: wp.array[wp.vec3],
    positions: wp.array[wp.vec3],
    collider_body: wp.array[int],
    body_q: wp.array[wp.transform],
    body_com: wp.array[wp.vec3],
    body_f: wp.array[wp.spatial_vector],
):
    """Each MPM collider node's impulse (``scale`` times the field's value) as a force and torque on its body."""
    i = wp.tid()
    c = collider_ids[i]
    if c < 0 or c >= collider_body.shape[0]:
        return
    b = collider_body[c]
    if b < 0:
        return
    f = impulses[i] * (scale / dt)
    r = positions[i] - wp.transform_point(body_q[b], body_com[b])
    wp.atomic_add(body_f, b, wp.spatial_vector(f, wp.cross(r, f)))


@wp.kernel
def _bodies_for_grains(
    dt: float,
    body_q: wp.array[wp.transform],
    body_qd: wp.array[wp.spatial_vector],
    body_f: wp.array[wp.spatial_vector],
    inv_mass: wp.array[float],
    inv_inertia: wp.array[wp.mat33],
    grain_body_q: wp.array[wp.transform],
    grain_body_qd: wp.array[wp.spatial_vector],
):
    """A body's pose, and its velocity less the grains' force's share of the step, for the MPM step."""
    b = wp.tid()
    f = body_f[b]
    rot = wp.transform_get_rotation(body_q[b])
    dv = dt * inv_mass[b] * wp.spatial_top(f)
    dw = dt * wp.quat_rotate(rot, inv_inertia[b] * wp.quat_rotate_inv(rot, wp.spatial_bottom(f)))
    grain_body_q[b] = body_q[b]
    grain_body_qd[b] = body_qd[b] - wp.spatial_vector(dv, dw)


class GrainCoupling:
    """The grains' forces onto the bodies, and the bodies into the grains' MPM step (see the module).

    Args:
        mpm: Newton's ``SolverImplicitMPM`` (its colliders: the bodies' shapes, by body index).
        newton_model: the Newton model it runs (its bodies have our indices: ``body_com``, ``body_inv_mass``,
            ``body_inv_inertia``).
    """

    def __init__(self, mpm, newton_model):
        self.mpm, self.newton_model = mpm, newton_model
        self.body_count = int(newton_model.body_count)
        self.grain_forces = wp.zeros(self.body_count, dtype=wp.spatial_vector, device=newton_model.device)
        self._impulses = None  # (ids, impulses, positions): the last MPM step's, None before the first

    def forces_onto(self, state, dt: float) -> None:
        """``state.body_f``: the grains' forces of the last MPM step (zero before the first); kept to be taken off
        the bodies' velocities in :meth:`bodies_into`."""
        self.grain_forces.zero_()
        if self._impulses is not None:
            ids, impulses, positions = self._impulses
            wp.launch(
                _grain_forces,
                dim=ids.shape[0],
                inputs=[dt, -(float(self.mpm.voxel_size) ** 3), ids, impulses, positions,
                        self.mpm.collider_body_index, state.body_q, self.newton_model.body_com],
                outputs=[self.grain_forces],
                device=self.newton_model.device,
            )  # fmt: skip
        wp.copy(state.body_f, self.grain_forces)

    def bodies_into(self, state, grain_state, dt: float) -> None:
        """The rigid engine's output ``state``'s bodies into Newton's MPM ``grain_state`` (see the module, step 3)."""
        nm = self.newton_model
        wp.launch(
            _bodies_for_grains,
            dim=self.body_count,
            inputs=[dt, state.body_q, state.body_qd, self.grain_forces, nm.body_inv_mass, nm.body_inv_inertia],
            outputs=[grain_state.body_q, grain_state.body_qd],
            device=nm.device,
        )

    def collect(self, grain_state) -> None:
        """The collider impulses of the MPM step that wrote ``grain_state`` (the arrays Newton's
        ``collect_collider_impulses`` reads, unscaled: it would allocate their scaled copy each step)."""
        holder = grain_state if hasattr(grain_state, "impulse_field") else self.mpm._scratchpad
        self._impulses = (
            holder.collider_ids,
            holder.impulse_field.dof_values,
            holder.collider_position_field.dof_values,
        )

    def reset(self) -> None:
        """No impulse carried over (a reset, a new solver)."""
        self._impulses = None
