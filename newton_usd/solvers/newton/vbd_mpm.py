"""Grains under implicit MPM and cloth or soft volumes under VBD in one scene, coupled through Newton's proxy coupling
(``SolverCoupledProxy``, as Newton 1.8's ``examples/multiphysics/example_vbd_mpm_coupled_solver.py``).

A PhysicsScene that owns grains (``NewtonPointsDeformableSimAPI``) and deformable bodies (cloth, soft volumes), and no
dynamic rigid body, runs the ``vbd_mpm`` engine: the model is bridged once, the grains first with their MPM material
(:func:`~.implicit_mpm.add_grains`), then the deformables as :class:`~.vbd.SolverVBD` bridges them; Newton's coupled
solver gets two entries on it: SolverVBD owning the deformables' particles and SolverImplicitMPM owning the grains
(its Config the MPM scene's settings, as under implicit_mpm). The deformables' surface triangles are a mesh collider
of the MPM step whose vertices follow their particles (``setup_collider``'s ``collider_particle_ids``), beside the
stage's static colliders; the impulses the grains put on it reach VBD as forces on those particles at the next step
("lagged"). The grains therefore push the soft body and the soft body the grains.

``solver_options``: ``coupling_iterations`` (proxy passes a step, 1), ``mass_scale`` (of the proxies, 1),
``collider_margin`` (m, the deformables' mesh collider's thickness, 0), ``collider_friction`` (its friction, 0.5),
``mpm_options`` (``SolverImplicitMPM.Config`` fields over the scene's); the rest are SolverVBD's, as under vbd.
"""

from __future__ import annotations

import newton
import numpy as np
import warp as wp

from ...errors import NewtonUsdError
from .coupled import reset_coupled, say_unfiltered
from .implicit_mpm import add_grains
from .solver_newton import SolverNewton
from .vbd import SolverVBD

COUPLING_KEYS = ("coupling_iterations", "mass_scale", "collider_margin", "collider_friction", "mpm_options")
"""``solver_options`` the coupling and the MPM entry take (the others are VBD's)."""


class SolverVBDMPM(SolverVBD):
    """Deformables under VBD, grains under implicit MPM, coupled (see the module)."""

    name = "vbd_mpm"

    def __init__(self, model, **options):
        self.coupling = {k: options.pop(k) for k in COUPLING_KEYS if k in options}
        source = model.source or "the model"
        soft = sorted((*model.cloth, *model.volumes), key=lambda d: d.first)
        labels = {d.label for d in soft}
        grains = [(label, *model.particle_groups[label]) for label in model.particle_groups if label not in labels]
        if model.num_worlds > 1:
            raise NewtonUsdError(f"{source}: grains and deformable bodies together run in one world only")
        dynamic = [b for b, k in zip(model.body_label, model.body_kinematic.numpy(), strict=True) if not k]
        if dynamic:
            raise NewtonUsdError(f"{source}: {', '.join(dynamic)}: rigid bodies beside grains and deformable bodies "
                                 "in one PhysicsScene are not simulated together yet: own them by another "
                                 "PhysicsScene")  # fmt: skip
        self.grain_count = max((end for _, _, end in grains), default=0)
        if not grains or not soft or any(first < self.grain_count for first in (d.first for d in soft)):
            raise NewtonUsdError(f"{source}: the vbd_mpm engine takes grains first, then deformables")
        self.soft_rows = list(range(self.grain_count, model.particle_count))
        options = {**model.vbd_config, **{k: v for k, v in options.items() if v is not None}}
        SolverNewton.__init__(self, model, **options)  # (not SolverVBD's: it refuses grains)
        self._asked_contact_forces, self.contact_forces = self.contact_forces, None  # (SolverVBD.want_contact_forces)
        say_unfiltered(model, self.name)

    def _bridge_particles(self, nb, world: int) -> None:
        """The grains and their MPM material first, then the deformables as under vbd (and the builder's coloring)."""
        newton.solvers.SolverImplicitMPM.register_custom_attributes(nb)
        add_grains(nb, self.model, 0, self.grain_count)
        super()._bridge_particles(nb, world)

    def reset_actuators(self, worlds=None) -> None:
        """A reset: Newton's coupled solver (VBD's and MPM's history, the lagged coupling forces) from the start."""
        super().reset_actuators(worlds)
        reset_coupled(self.newton_solver, self.newton_model, worlds)

    def _mpm_config(self):
        config = newton.solvers.SolverImplicitMPM.Config()
        for key, value in {**self.model.mpm_config, **(self.coupling.get("mpm_options") or {})}.items():
            if not hasattr(config, key):
                raise NewtonUsdError(f"vbd_mpm solver: unknown MPM option {key!r}")
            setattr(config, key, value)
        return config

    def _make_solver(self, newton_model, options):
        from newton.solvers.experimental.coupled import SolverCoupledProxy  # noqa: PLC0415

        soft, grains = self.soft_rows, list(range(self.grain_count))
        config, vbd_kw = self._mpm_config(), dict(options)
        vbd = SolverCoupledProxy.Entry(name="vbd", solver=lambda view: newton.solvers.SolverVBD(view, **vbd_kw),
                                       particles=soft)  # fmt: skip
        mpm = SolverCoupledProxy.Entry(name="mpm", solver=lambda view: newton.solvers.SolverImplicitMPM(view, config),
                                       particles=grains)  # fmt: skip
        proxy = SolverCoupledProxy.Proxy(source="vbd", destination="mpm", particles=soft, mode="lagged",
                                         mass_scale=float(self.coupling.get("mass_scale", 1.0)))  # fmt: skip
        iterations = int(self.coupling.get("coupling_iterations", 1))
        solver = SolverCoupledProxy(newton_model, [vbd, mpm], SolverCoupledProxy.Config([proxy], iterations))
        self.collider_mesh = surface_mesh(newton_model, soft)
        """The deformables' surface as the MPM step's mesh collider (its vertices: their particles)."""
        margin, friction = self.coupling.get("collider_margin", 0.0), self.coupling.get("collider_friction", 0.5)
        solver.solver("mpm").setup_collider(
            collider_meshes=[self.collider_mesh, None], collider_body_ids=[None, -1],
            collider_margins=[float(margin), None], collider_friction=[float(friction), None],
            collider_particle_ids=[soft, None], model=solver.view("mpm"),
        )  # fmt: skip
        return solver


def surface_mesh(newton_model, rows: list) -> wp.Mesh:
    """A Warp mesh of Newton's triangles among particles ``rows`` (a cloth's, a soft volume's surface), its vertices
    those particles in order."""
    local = np.full(newton_model.particle_count, -1, dtype=np.int64)
    local[rows] = np.arange(len(rows))
    tris = local[newton_model.tri_indices.numpy().reshape(-1, 3)] if newton_model.tri_count else np.empty((0, 3))
    tris = tris[(tris >= 0).all(axis=1)]
    if not len(tris):
        raise NewtonUsdError("vbd_mpm solver: the deformables have no surface triangles to collide with the grains")
    device = newton_model.device
    points = wp.array(newton_model.particle_q.numpy()[rows], dtype=wp.vec3, device=device)
    return wp.Mesh(points=points, indices=wp.array(tris.reshape(-1).astype(np.int32), dtype=wp.int32, device=device),
                   velocities=wp.zeros(len(rows), dtype=wp.vec3, device=device))  # fmt: skip
