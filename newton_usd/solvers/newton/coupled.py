"""Rigid bodies under one engine, cloth and soft volumes under VBD, coupled through Newton's proxy coupling
(``newton.solvers.experimental.coupled.SolverCoupledProxy``, as Newton 1.8's ``examples/multiphysics`` do).

A scene that holds deformable bodies and asks for another engine for its rigid bodies (``newton:usd:solver =
"mujoco"``, a scene applying ``MjcSceneAPI``, ``usdsim --solver mujoco``; or xpbd) runs :class:`SolverMuJoCoVBD`
(:class:`SolverXPBDVBD`):
the model is bridged once with its deformables, as :class:`~.vbd.SolverVBD` bridges it, and Newton's coupled solver
gets two entries on it:

- the rigid engine (Newton's SolverMuJoCo: C MuJoCo on the CPU, ``use_mujoco_cpu``, MuJoCo-Warp on CUDA; or
  SolverXPBD) owns every body and joint, its contacts among the bodies and with the colliders its own (MuJoCo's
  collision; XPBD takes the collision pipeline's contacts, run before each step, filtered to its bodies);
- SolverVBD owns every particle (cloth, soft volumes) and sees the bodies as proxies of their effective mass:
  a collision pipeline on its view finds the particles' contacts with the colliders and the proxies each step, and
  the impulses the proxies take from the deformables go back to the rigid engine at the next step as forces (the
  "lagged" mode of Newton's example).

So the rigid bodies feel the cloth (a box falls into it and is held) and the cloth feels the bodies. Each step
aliases our State into Newton's, as every Newton engine here (:mod:`~newton_usd.solvers.newton.exchange`); the
written-back poses, joint states and points are the single engines'. Options (``solver_options``):
``coupling_iterations`` (proxy passes a step, default 1), ``coupling_mode`` (``"lagged"`` or ``"staggered"``),
``mass_scale`` (of the proxies' mass, default 1), ``rigid_options`` (a dict of the rigid engine's own keywords); the
rest are SolverVBD's, as under vbd.
"""

from __future__ import annotations

import newton
import warp as wp

from ...diagnostics import Diagnostics
from ...errors import NewtonUsdError
from .solver_newton import xpbd_iterations
from .vbd import SolverVBD

COUPLING_KEYS = ("coupling_iterations", "coupling_mode", "mass_scale", "rigid_options")
"""``solver_options`` the coupling takes (the others are VBD's)."""


def say_unfiltered(model, engine: str) -> None:
    """Said once, naming the prims: the deformables' collision filters are not applied under ``engine`` (a coupled
    engine, whose VBD takes its contacts from a collision pipeline of Newton's coupling, not the one filtered)."""
    filtered = sorted({d.label for d in (*model.cloth, *model.volumes) if d.links.filtered})
    said = Diagnostics()
    for label in filtered:
        said.add(f"collision filters of deformables (PhysicsElementCollisionFilter, physics:filteredPairs) are not "
                 f"applied under {engine}: they are under vbd", label)  # fmt: skip
    said.emit(model.source)


class SolverCoupledVBD(SolverVBD):
    """Deformables under VBD, rigid bodies and joints under :attr:`rigid` (see the module)."""

    name = ""
    writes_joint_state = True  # (the rigid engine's joint states, reconciled into the output by Newton's coupling)
    keeps_speed_bounds = False  # (the rigid engine's own state, inside Newton's coupled solver, is not scaled)
    rigid = ""
    """The rigid engine's name (``usdsim --solver``)."""
    rigid_class = None
    """Newton's solver class of the rigid engine."""

    def __init__(self, model, **options):
        self.coupling = {k: options.pop(k) for k in COUPLING_KEYS if k in options}
        self.rigid_options = dict(self.coupling.get("rigid_options") or {})
        super().__init__(model, **options)
        if model.body_count:  # (VBD's contacts come from the pipeline Newton's coupling builds)
            say_unfiltered(model, self.name)

    def _rigid_kwargs(self, newton_model) -> dict:
        return dict(self.rigid_options)

    def reset_actuators(self, worlds=None) -> None:
        """A reset: the actuators, and Newton's coupled solver (its entries' solvers and the lagged coupling forces)
        from the model's start."""
        super().reset_actuators(worlds)
        reset_coupled(self.newton_solver, self.newton_model, worlds)

    def _make_solver(self, newton_model, options):
        if not newton_model.body_count:  # (no rigid body: VBD alone, as under vbd)
            return super()._make_solver(newton_model, options)
        from newton.solvers.experimental.coupled import SolverCoupledProxy  # noqa: PLC0415

        bodies = list(range(newton_model.body_count))
        rigid_cls, rigid_kw, vbd_kw = self.rigid_class, self._rigid_kwargs(newton_model), dict(options)
        rigid = SolverCoupledProxy.Entry(name=self.rigid, solver=lambda view: rigid_cls(view, **rigid_kw),
                                         bodies=bodies, joints=list(range(newton_model.joint_count)))  # fmt: skip
        vbd = SolverCoupledProxy.Entry(name="vbd", solver=lambda view: newton.solvers.SolverVBD(view, **vbd_kw),
                                       particles=list(range(newton_model.particle_count)))  # fmt: skip
        proxy = SolverCoupledProxy.Proxy(
            source=self.rigid, destination="vbd", bodies=bodies,
            mass_scale=float(self.coupling.get("mass_scale", 1.0)), mode=self.coupling.get("coupling_mode", "lagged"),
            collision_pipeline=newton.CollisionPipeline, collide_interval=1,
        )  # fmt: skip
        iterations = int(self.coupling.get("coupling_iterations", 1))
        return SolverCoupledProxy(newton_model, [rigid, vbd], SolverCoupledProxy.Config([proxy], iterations))


class SolverMuJoCoVBD(SolverCoupledVBD):
    """Rigid bodies under Newton's SolverMuJoCo (C MuJoCo on the CPU, MuJoCo-Warp on CUDA), deformables under VBD."""

    name = "mujoco_vbd"
    rigid = "mujoco"
    rigid_class = newton.solvers.SolverMuJoCo

    def _rigid_kwargs(self, newton_model) -> dict:
        cpu = not wp.get_device(newton_model.device).is_cuda
        if cpu and self.model.num_worlds > 1 and not self.rigid_options.get("separate_worlds"):
            raise NewtonUsdError(f"{self.model.source or 'the model'}: {self.model.num_worlds} worlds: the mujoco_vbd "
                                 "engine on the CPU steps its bodies with C MuJoCo, one world only: run it on a CUDA "
                                 "device (MuJoCo-Warp) or with --solver xpbd")  # fmt: skip
        kw = {"use_mujoco_cpu": cpu, "use_mujoco_contacts": True}  # (C MuJoCo takes only its own contacts)
        return {**kw, **self.rigid_options}


class SolverXPBDVBD(SolverCoupledVBD):
    """Rigid bodies under Newton's SolverXPBD (its contacts: the collision pipeline's, filtered to them), deformables
    under VBD."""

    name = "xpbd_vbd"
    rigid = "xpbd"
    rigid_class = newton.solvers.SolverXPBD
    writes_joint_state = False  # (XPBD steps body states: joint states are computed from them when read)
    ball_torque_in_world = True  # (as under xpbd: a ball joint's joint_f in the world frame)

    def _rigid_kwargs(self, newton_model) -> dict:
        """As under xpbd: 16 iterations where the model limits a joint (:func:`.solver_newton.xpbd_iterations`),
        else Newton's default (the scene's ``newton:maxSolverIterations`` is VBD's here); ``rigid_options`` win."""
        chosen = xpbd_iterations(self.model)
        return {**({} if chosen is None else {"iterations": chosen}), **self.rigid_options}


def reset_coupled(newton_solver, newton_model, worlds=None) -> None:
    """Newton's coupled solver ``newton_solver`` back to the start of ``newton_model`` (``worlds``: a bool Warp array,
    one per world; None: every world): each entry's solver reset, the lagged coupling forces cleared (VBD alone, where
    the model has no rigid body: its own reset)."""
    mask = None
    if worlds is not None:  # (Newton's mask has one more entry, for the global entities: kept)
        mask = wp.array([*worlds.numpy().astype(bool), False], dtype=wp.bool, device=newton_model.device)
    newton_solver.reset(newton_model.state(), world_mask=mask)


COUPLED_WITH_VBD = {cls.rigid: cls for cls in (SolverMuJoCoVBD, SolverXPBDVBD)}
"""The rigid engine a scene with deformables asks for -> the coupled engine that runs it. Not featherstone: the same
coupling with Newton's SolverFeatherstone (penalty contacts) blew up at frame 10 on tests/test_coupled.py's stage, 4
steps a frame at 30 frames/s, where MuJoCo and XPBD hold the box in the cloth; a stage asking for it (or any other
engine) with deformables is refused, naming its deformables."""
