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
velocity gradient).

Dynamic rigid bodies of the MPM scene are coupled two ways with its grains: a Newton rigid engine of our own
(``rigid_solver``: ``"xpbd"``, the default, ``"featherstone"``, or ``"mujoco"``: C MuJoCo, the grains' forces
as its ``xfrc_applied``) steps them on the same model, and a
:class:`~.grain_coupling.GrainCoupling` passes the grains' impulses onto the bodies and the bodies' poses and
velocities into the MPM step, each physics step. With ``rigid_solver="none"`` they are not coupled: they stay where
they are (said once, naming them).
"""

from __future__ import annotations

import dataclasses

import newton
import numpy as np
import warp as wp

from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError
from ..solver import SolverBase
from .grain_coupling import GrainCoupling
from .model_bridge import bridge_model
from .mpm_grid import off_grid

RIGID_SOLVERS = ("xpbd", "featherstone", "mujoco")
"""The engines that step the MPM scene's rigid bodies, coupled with its grains (``rigid_solver``)."""


def _config_fields() -> set:
    return {f.name for f in dataclasses.fields(newton.solvers.SolverImplicitMPM.Config)}


def add_grains(nb, model, lo: int, hi: int) -> None:
    """Our particles ``lo:hi`` (grains) and their MPM material into Newton's builder ``nb`` (its MPM attributes
    registered), Newton's default where a grain has no value."""
    attributes = {}
    for name, values in model.particle_attributes.items():
        if name not in nb.custom_attributes:
            raise NewtonUsdError(f"implicit_mpm solver: Newton {newton.__version__} has no particle attribute {name}")
        default = float(nb.custom_attributes[name].default)
        attributes[name] = np.where(np.isnan(values[lo:hi]), default, values[lo:hi]).tolist()
    nb.add_particles(
        pos=[wp.vec3(*p) for p in model.particle_q.numpy()[lo:hi]],
        vel=[wp.vec3(*v) for v in model.particle_qd.numpy()[lo:hi]],
        mass=model.particle_mass.numpy()[lo:hi].tolist(),
        radius=model.particle_radius.numpy()[lo:hi].tolist(),
        custom_attributes=attributes,
    )


class SolverImplicitMPM(SolverBase):
    """Newton's implicit MPM stepping the grains of a bridged copy of our Model.

    Args:
        model: the Model (with particles: the grains of an MPM scene).
        rigid_solver: the engine of the scene's dynamic rigid bodies, coupled with the grains (one of
            :data:`RIGID_SOLVERS`; None or ``"none"``: not coupled, they stay).
        **options: ``SolverImplicitMPM.Config`` fields (``max_iterations``, ``voxel_size``, ``tolerance``, ...), over
            the scene's (``model.mpm_config``).

    ``newton_model``, ``newton_solver`` and ``newton_states`` are Newton's objects; ``config`` the Config it was made
    with; ``rigid`` our solver of the bodies and ``coupling`` the :class:`~.grain_coupling.GrainCoupling` (None where
    the scene has no dynamic body or they are not coupled).
    """

    name = "implicit_mpm"

    def __init__(self, model, rigid_solver="xpbd", **options):
        super().__init__(model)
        rigid_solver = None if rigid_solver == "none" else rigid_solver
        self.options = {**options, "rigid_solver": rigid_solver}
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
        # (several worlds: a grid of each world's own, as Newton isolates them; a caller may ask for the shared one)
        for key, value in {"separate_worlds": model.num_worlds > 1, **model.mpm_config, **options}.items():
            setattr(self.config, key, value)
        self._check_worlds(model)
        if rigid_solver is not None and rigid_solver not in RIGID_SOLVERS:
            raise NewtonUsdError(
                f"implicit_mpm solver: rigid_solver {rigid_solver!r} cannot be coupled with the grains; valid: "
                f"{', '.join(RIGID_SOLVERS)} (or none: the bodies are not simulated)"
            )
        self.diagnostics = Diagnostics()
        dynamic = self._dynamic_bodies(model)
        if rigid_solver is None:
            self._say_uncoupled(dynamic)
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
        self.rigid = self.coupling = None
        if dynamic and rigid_solver is not None:
            from .. import SOLVERS  # noqa: PLC0415  (the registry imports this module)

            if rigid_solver == "mujoco":  # (C MuJoCo: the grains' forces as its xfrc_applied)
                self.rigid = SOLVERS[rigid_solver](model, backend="cpu")
                self.rigid.applies_body_f = True
            else:
                self.rigid = SOLVERS[rigid_solver](model)
            self.coupling = GrainCoupling(self.newton_solver, self.newton_model)

    def _check_worlds(self, model) -> None:
        """Grains in several worlds, each on a grid of its own (``separate_worlds``): Newton builds the sparse grids
        of separate worlds on CUDA only (a dense or fixed grid runs on the CPU too)."""
        c = self.config
        if model.num_worlds > 1 and c.separate_worlds and c.grid_type == "sparse" and not model.device.is_cuda:
            raise NewtonUsdError(
                f"{model.source or 'the model'}: {', '.join(model.particle_groups)}: grains in {model.num_worlds} "
                "worlds on the CPU need a dense or fixed MPM grid (newton:mpm:gridType, or solver_options "
                "grid_type): Newton 1.8 builds the sparse grids of separate worlds on CUDA only"
            )

    @staticmethod
    def _dynamic_bodies(model) -> list:
        return [label for label, k in zip(model.body_label, model.body_kinematic.numpy(), strict=True) if not k]

    def _say_uncoupled(self, dynamic) -> None:
        """Dynamic rigid bodies beside the grains, not coupled to them (said once, naming them)."""
        if dynamic:
            kind = ("the implicit_mpm solver simulates the grains only (rigid_solver none): these rigid bodies are not "
                    "coupled to them (the grains collide with them where they start) and do not move")  # fmt: skip
            for label in dynamic:
                self.diagnostics.add(kind, label)

    def _add_particles(self, nb, world: int) -> None:
        """World ``world``'s grains and their MPM material into Newton's builder, in its world context (its defaults
        where a grain has no value)."""
        if world == 0:
            newton.solvers.SolverImplicitMPM.register_custom_attributes(nb)
        model = self.model
        lo, hi = model.world_ranges(world)["particle"] if model.num_worlds > 1 else (0, model.particle_count)
        add_grains(nb, model, lo, hi)

    @property
    def kinematic_joint_q(self) -> bool:
        """Whether a kinematic body's free joint coordinates are written too (its rigid engine's: featherstone)."""
        return bool(self.rigid is not None and self.rigid.kinematic_joint_q)

    def joint_states_written(self, state, worlds=None) -> None:
        """Joint states written (a view, a reset): the rigid engine's bodies follow them."""
        if self.rigid is not None:
            self.rigid.joint_states_written(state, worlds)

    def reset_actuators(self, worlds=None) -> None:
        """A reset: the grains' MPM history (strains, warm starts: Newton's ``reset``), the rigid engine's actuators,
        and no grain impulse carried over to the bodies' first step."""
        super().reset_actuators(worlds)
        if worlds is None:
            self.newton_states = [self.newton_model.state(), self.newton_model.state()]
            self.newton_solver.reset(self.newton_states[0])
        if self.rigid is not None:
            self.rigid.reset_actuators(worlds)
            self.coupling.reset()

    def kernel_modules(self) -> list:
        return self.rigid.kernel_modules() if self.rigid is not None else []

    def stable_step(self) -> float:
        return self.rigid.stable_step() if self.rigid is not None else super().stable_step()

    @property
    def voxel_size(self) -> float:
        """m: the MPM grid's cell size."""
        return float(self.newton_solver.voxel_size)

    def particles_off_grid(self, positions):
        """``(row, message)`` of a grain of ``positions`` (numpy, m) that Newton's grid cannot hold (outside a fixed
        grid; row None: a sparse grid past its capacity), None where every grain is on it (see :mod:`.mpm_grid`)."""
        return off_grid(self.newton_solver, positions, self.config)

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        ns_in, ns_out = self.newton_states
        coupling = self.coupling
        if coupling is not None:  # (the grains' forces onto the bodies, the bodies stepped, then into the MPM step)
            coupling.forces_onto(state_in, dt)
            self.rigid.step(state_in, state_out, control, None, dt)
            coupling.bodies_into(state_out, ns_in, dt)
        wp.copy(ns_in.particle_q, state_in.particle_q)
        wp.copy(ns_in.particle_qd, state_in.particle_qd)
        self.newton_solver.step(ns_in, ns_out, None, None, dt)
        if coupling is not None:  # (the grains are projected out of the bodies where they are now)
            wp.copy(ns_out.body_q, ns_in.body_q)
            wp.copy(ns_out.body_qd, ns_in.body_qd)
        self.newton_solver.project_outside(ns_out, ns_out, dt)
        self.newton_states = [ns_out, ns_in]
        wp.copy(state_out.particle_q, ns_out.particle_q)
        wp.copy(state_out.particle_qd, ns_out.particle_qd)
        if coupling is not None:
            coupling.collect(ns_out)
        elif state_out is not state_in:  # (the bodies are not simulated: they stay)
            for name in ("body_q", "body_qd", "joint_q", "joint_qd"):
                wp.copy(getattr(state_out, name), getattr(state_in, name))
