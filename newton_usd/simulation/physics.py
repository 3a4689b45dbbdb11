"""What a run simulates now: the import, the model, the solver and the states it steps, held together because a
rebuild (a live edit that changes what is simulated, :meth:`~newton_usd.sim.Simulation.reset` after one) replaces
them together. Every part of a :class:`~newton_usd.sim.Simulation` is handed this one object and reads the current
pieces from it; only :meth:`Physics.replace` and the stepper's :meth:`Physics.swap` change them."""

from __future__ import annotations

import numpy as np

BODY_STATE = ("joint_q", "joint_qd", "body_q", "body_qd")
"""The State arrays a new solver of the same model goes on from (and the particles', where it has any)."""

PARTICLE_STATE = ("particle_q", "particle_qd")


class Physics:
    """The import record, model, solver, current and next State, and Control of a run.

    Attributes:
        imported: the :class:`~newton_usd.usd.UsdImport` of the model.
        model, solver: the model and its solver.
        state: the current State; next: the State the next step writes; control: the Control the steps read.
    """

    def __init__(self, imported, model, solver):
        self.imported, self.model, self.solver = imported, model, solver
        self.fresh_states()

    def fresh_states(self) -> None:
        """New State, next State and Control of the model (its initial ones)."""
        self.state, self.next, self.control = self.model.state(), self.model.state(), self.model.control()

    def swap(self) -> None:
        """After a step: the state it wrote is the current one."""
        self.state, self.next = self.next, self.state

    def replace(self, imported, model, solver) -> None:
        """A rebuilt model and its solver, from their initial states."""
        self.imported, self.model, self.solver = imported, model, solver
        self.fresh_states()

    def new_solver(self) -> None:
        """A new solver of the (edited) model, going on from the current state (no import)."""
        names = BODY_STATE + (PARTICLE_STATE if self.model.particle_count else ())
        arrays = {name: getattr(self.state, name).numpy().copy() for name in names}
        self.solver = self.solver.rebuilt(self.model)
        self.state, self.next = self.model.state(), self.model.state()
        for name, values in arrays.items():
            getattr(self.state, name).assign(values)

    @property
    def device(self):
        return self.model.device

    def body_poses(self) -> np.ndarray:
        """``body_q`` of the current state on the host (on CUDA: a copy, waited for)."""
        return self.state.body_q.numpy()
