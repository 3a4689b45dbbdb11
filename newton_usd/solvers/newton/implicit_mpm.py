"""Granular matter under Newton's implicit MPM (``newton.solvers.SolverImplicitMPM``) behind our solver interface.

The model is bridged once (:mod:`.model_bridge`), its particles with it: each grain's position, velocity, mass and
radius, and its MPM material as Newton's per-particle attributes (``mpm:young_modulus``, ``mpm:friction``, ...;
a grain whose material does not author one gets Newton's default). The MPM scene's settings
(``model.mpm_config``, read by :func:`~newton_usd.usd.granular.mpm_scene_settings`) fill its
``SolverImplicitMPM.Config``, over which a caller's keywords win. Colliders are the stage's static colliders
(Newton's default: every shape that collides with particles).

Each step copies our State's particles into Newton's state, steps Newton's solver into its other state and projects
the grains out of the colliders (``project_outside``, as Newton's examples do after each step), then copies them
back: Newton's two states keep what MPM carries from step to step (the grains' elastic strain, plastic volume,
velocity gradient). Rigid bodies are not coupled yet: a dynamic body of a stage with grains stays where it is
(said once, naming the bodies).
"""

from __future__ import annotations

import dataclasses

import newton
import numpy as np
import warp as wp

from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError
from ..solver import SolverBase
from .model_bridge import bridge_model


def _config_fields() -> set:
    return {f.name for f in dataclasses.fields(newton.solvers.SolverImplicitMPM.Config)}


class SolverImplicitMPM(SolverBase):
    """Newton's implicit MPM stepping the grains of a bridged copy of our Model.

    Args:
        model: the Model (with particles: the grains of an MPM scene).
        **options: ``SolverImplicitMPM.Config`` fields (``max_iterations``, ``voxel_size``, ``tolerance``, ...), over
            the scene's (``model.mpm_config``).

    ``newton_model``, ``newton_solver`` and ``newton_states`` are Newton's objects; ``config`` the Config it was made
    with.
    """

    name = "implicit_mpm"

    def __init__(self, model, **options):
        super().__init__(model)
        self.options = dict(options)
        if not model.particle_count:
            raise NewtonUsdError(
                f"{model.source or 'the model'}: the implicit_mpm solver simulates grains (Points prims applying "
                "NewtonPointsDeformableSimAPI), and the stage has none"
            )
        fields = _config_fields()
        unknown = sorted(set(options) - fields)
        if unknown:
            raise NewtonUsdError(
                f"implicit_mpm solver: unknown option {unknown[0]!r}; valid: {', '.join(sorted(fields))}"
            )
        self.config = newton.solvers.SolverImplicitMPM.Config()
        for key, value in {**model.mpm_config, **options}.items():
            setattr(self.config, key, value)
        self.diagnostics = Diagnostics()
        self._say_uncoupled(model)
        bridge = bridge_model(model, self.diagnostics, self.name, particles=self._add_particles)
        self.diagnostics.emit(model.source)
        self.newton_model = bridge.newton_model
        try:
            self.newton_solver = newton.solvers.SolverImplicitMPM(self.newton_model, self.config)
        except (ValueError, RuntimeError, NotImplementedError) as e:
            raise NewtonUsdError(
                f"{model.source or 'the model'}: Newton's implicit MPM solver refused it: {e}"
            ) from None
        self.newton_states = [self.newton_model.state(), self.newton_model.state()]

    def _say_uncoupled(self, model) -> None:
        """Dynamic rigid bodies beside the grains: not coupled to them yet (said once, naming them)."""
        dynamic = [label for label, k in zip(model.body_label, model.body_kinematic.numpy(), strict=True) if not k]
        if dynamic:
            kind = ("the implicit_mpm solver simulates the grains only: these rigid bodies are not coupled to them "
                    "(the grains collide with them where they start) and do not move")  # fmt: skip
            for label in dynamic:
                self.diagnostics.add(kind, label)

    def _add_particles(self, nb) -> None:
        """Our particles and their MPM material into Newton's builder (its defaults where a grain has no value)."""
        newton.solvers.SolverImplicitMPM.register_custom_attributes(nb)
        model = self.model
        attributes = {}
        for name, values in model.particle_attributes.items():
            if name not in nb.custom_attributes:
                raise NewtonUsdError(
                    f"implicit_mpm solver: Newton {newton.__version__} has no particle attribute {name}"
                )
            default = float(nb.custom_attributes[name].default)
            attributes[name] = np.where(np.isnan(values), default, values).tolist()
        nb.add_particles(
            pos=[wp.vec3(*p) for p in model.particle_q.numpy()],
            vel=[wp.vec3(*v) for v in model.particle_qd.numpy()],
            mass=model.particle_mass.numpy().tolist(),
            radius=model.particle_radius.numpy().tolist(),
            custom_attributes=attributes,
        )

    @property
    def voxel_size(self) -> float:
        """m: the MPM grid's cell size."""
        return float(self.newton_solver.voxel_size)

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        ns_in, ns_out = self.newton_states
        wp.copy(ns_in.particle_q, state_in.particle_q)
        wp.copy(ns_in.particle_qd, state_in.particle_qd)
        self.newton_solver.step(ns_in, ns_out, None, None, dt)
        self.newton_solver.project_outside(ns_out, ns_out, dt)
        self.newton_states = [ns_out, ns_in]
        wp.copy(state_out.particle_q, ns_out.particle_q)
        wp.copy(state_out.particle_qd, ns_out.particle_qd)
        if state_out is not state_in:  # (the bodies are not simulated: they stay)
            for name in ("body_q", "body_qd", "joint_q", "joint_qd"):
                wp.copy(getattr(state_out, name), getattr(state_in, name))
