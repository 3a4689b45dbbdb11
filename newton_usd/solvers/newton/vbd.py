"""Cloth, soft volumes and rigid bodies under Newton's VBD (``newton.solvers.SolverVBD``) behind our solver interface.

The model is bridged once (:mod:`.model_bridge`) with its cloth: each cloth prim's particles and triangles are
added to Newton's builder by ``add_cloth_mesh`` (which makes the membrane elements, their rest shape from the
authored points, and the bending edges), with the prim's stretch and bend stiffnesses (none: Newton's defaults),
each soft volume's by ``add_soft_mesh`` (its tetrahedra, their rest shape, and its surface triangles for
contacts) with its Lame parameters; then their particles take our masses, radii and velocities, and the builder is
colored (VBD solves one color at a
time; the bending edges are part of the graph). Rigid bodies, joints and the stage's colliders are bridged as for
every Newton solver: VBD steps the bodies too (AVBD), and the cloth collides with colliders and bodies through
Newton's collision pipeline.

Each step aliases our State's particles into Newton's states (as :mod:`~newton_usd.solvers.newton.exchange` does the
bodies'), clears Newton's particle forces and runs the pipeline and the solver. The VBD scene's settings
(``model.vbd_config``, ``NewtonVbdSceneAPI``: see :func:`~newton_usd.usd.deformables.vbd_scene_settings`) are the
solver's keywords, over which a caller's win.
"""

from __future__ import annotations

import newton
import warp as wp

from ...errors import NewtonUsdError
from .contact_pairs import SwitchedPairs
from .deformable_links import bridge_links, filter_soft_contacts, rest_points
from .rods import bridge_rods
from .solver_newton import _CONTACT_F, SolverNewton


class SolverVBD(SolverNewton):
    """Newton's SolverVBD: vertex block descent for cloth, augmented VBD for rigid bodies and joints."""

    name = "vbd"
    newton_class = newton.solvers.SolverVBD
    writes_joint_state = False  # (VBD steps body states: joint states are computed from them when read)
    keeps_speed_bounds = "bodies"  # (its next step predicts from the body velocities scaled: positions keep it too)
    OPTIONS = {"newton.iterations": "iterations"}

    def __init__(self, model, **options):
        soft = {d.label for d in (*model.cloth, *model.volumes)}
        others = [p for p in model.particle_groups if p not in soft]
        if others:
            raise NewtonUsdError(
                f"{model.source or 'the model'}: {', '.join(others)}: grains are simulated by the implicit_mpm "
                "solver, not by vbd"
            )
        options = {**model.vbd_config, **{k: v for k, v in options.items() if v is not None}}
        super().__init__(model, **options)
        if options.get("rigid_contact_history"):  # (a warm start from the last step's contacts: matched across steps)
            kw = (
                {}
                if options.get("rigid_contact_max") is None
                else {"rigid_contact_max": int(options["rigid_contact_max"])}
            )
            self.collision_pipeline = newton.CollisionPipeline(self.newton_model, contact_matching="latest", **kw)
            self.newton_contacts = self.collision_pipeline.contacts()
            self._pairs = SwitchedPairs.of(self.collision_pipeline, self.shape_map,
                                           model.shape_collision_enabled.numpy())  # fmt: skip
            if self.contact_forces is not None:
                self.contact_forces = self.newton_solver.observables({_CONTACT_F}, contacts=self.newton_contacts)
        filter_soft_contacts(self.collision_pipeline, model, self.shape_map)  # (filtered points: no contacts)
        self._asked_contact_forces, self.contact_forces = self.contact_forces, None  # (see want_contact_forces)

    def want_contact_forces(self) -> None:
        """Compute the contact forces in each step from now on (Newton's ``CONTACT_F`` observable), for
        :meth:`update_contacts`. VBD evaluates them inside its step (a kernel over the contact buffer, about 5% of a
        step of a small scene), so they are computed only once asked for: by a
        :class:`~newton_usd.selection.RigidContactView`, or by the first :meth:`update_contacts` (whose forces are
        then unknown, NaN, never a false zero: the next step's are known)."""
        if self.contact_forces is None:
            self.contact_forces = self._asked_contact_forces

    def update_contacts(self, contacts) -> None:
        super().update_contacts(contacts)
        self.want_contact_forces()

    def _bridge_particles(self, nb, world: int) -> None:
        """World ``world``'s cloth and soft volumes into Newton's builder, in its world context (see the module);
        after the last world's, the builder's coloring."""
        m = self.model
        if world == 0:
            bridge_rods(nb, m)  # (the cables' rod joints of every world: their rest rotations)
        q, qd = m.particle_q.numpy(), m.particle_qd.numpy()
        mass, radius = m.particle_mass.numpy(), m.particle_radius.numpy()
        runs = {first: end for _, first, end, w in m.particle_runs if w == world}
        for d in sorted((d for d in (*m.cloth, *m.volumes) if d.first in runs), key=lambda d: d.first):
            first, end = d.first, runs[d.first]
            if nb.particle_count != first:
                raise NewtonUsdError(f"{d.label}: its particles are not in order (start {first})")
            placed = {"pos": wp.vec3(0.0, 0.0, 0.0), "rot": wp.quat_identity(), "scale": 1.0,
                      "vel": wp.vec3(0.0, 0.0, 0.0), "vertices": [wp.vec3(*p) for p in rest_points(d, q[first:end])],
                      "density": 0.0, "particle_radius": float(radius[first]), "label": d.label}  # fmt: skip
            if hasattr(d, "triangles"):
                t0, n = nb.tri_count, len(d.triangles)
                nb.add_cloth_mesh(indices=d.triangles.reshape(-1).tolist(), tri_ke=d.stretch_stiffness,
                                  tri_ka=0.0, edge_ke=d.bend_stiffness, **placed)  # fmt: skip
                kept = nb.tri_count - t0
                # (tri_ka 0: no separate area mode, the stretch stiffness is the membrane's, as Newton's importer)
            else:
                t0, n = nb.tet_count, len(d.tetrahedra)
                nb.add_soft_mesh(indices=d.tetrahedra.reshape(-1).tolist(), k_mu=d.mu, k_lambda=d.lam, **placed)
                kept = nb.tet_count - t0
            if nb.particle_count != end or kept != n:
                raise NewtonUsdError(f"{d.label}: Newton's builder kept {nb.particle_count - first} of {end - first} "
                                     f"points and {kept} of {n} elements")  # fmt: skip
            nb.particle_mass[first:end] = mass[first:end].tolist()
            nb.particle_radius[first:end] = radius[first:end].tolist()
            nb.particle_qd[first:end] = [wp.vec3(*v) for v in qd[first:end]]
            bridge_links(nb, d, first, q[first:end])  # (placed where it starts; its attachments)
        if world == m.num_worlds - 1:
            nb.color(include_bending=True)

    _moved_worlds = False
    """Bodies were moved by a write of the state since the last step (None or a bool Warp array of worlds: those to
    rebaseline; False: none)."""

    def joint_states_written(self, state, worlds=None) -> None:
        """As every Newton engine's, and VBD's rigid history rebaselined at the next step from where the bodies are
        now (``SolverVBD.reset`` keeping the state): AVBD takes a body's velocity from its pose before the step, so a
        body moved by a live edit was flung at the distance over one step (288 m/s for 0.6 m at 1/480 s)."""
        super().joint_states_written(state, worlds)
        self._moved_worlds = worlds
        self.frame_capture.invalidate("bodies moved: VBD's rigid history is rebaselined at the next step")

    def _before_solver_step(self, newton_state, dt: float) -> None:
        if newton_state.particle_f is not None:
            newton_state.particle_f.zero_()
        if self._moved_worlds is not False and self.model.body_count:
            self.newton_solver.reset(newton_state, world_mask=self._moved_worlds, flags=0)
            self._moved_worlds = False

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        if not self.model.particle_count:  # (rigid bodies only)
            super().step(state_in, state_out, control, contacts, dt)
            return
        if state_in is state_out:  # (stepped into a scratch State: its particles copied back too)
            super().step(state_in, state_out, control, contacts, dt)
            wp.copy(state_out.particle_q, self._scratch.particle_q)
            wp.copy(state_out.particle_qd, self._scratch.particle_qd)
            return
        ex = self.exchange
        for ours, theirs in ((state_in, ex.state_in), (state_out, ex.state_out)):
            theirs.particle_q = ours.particle_q
            theirs.particle_qd = ours.particle_qd
        super().step(state_in, state_out, control, contacts, dt)

    def _frame(self, state_0, state_1, control, dt, substeps) -> None:
        super()._frame(state_0, state_1, control, dt, substeps)
        if substeps % 2 and self.model.particle_count:  # (the last output was state_1: its particles into state_0)
            wp.copy(state_0.particle_q, state_1.particle_q)
            wp.copy(state_0.particle_qd, state_1.particle_qd)
