"""What a view reads and writes: a Simulation's current model, state, control and solver, or given pieces."""

from __future__ import annotations

import logging

from ..core.model import _WORLD_ARRAYS
from ..errors import NewtonUsdError

logger = logging.getLogger("newton_usd")


class ViewSource:
    """The objects a view works on, looked up at each access (a Simulation swaps its states every step and
    replaces its model and solver on a rebuild).

    Args:
        target: a :class:`~newton_usd.sim.Simulation` or a :class:`~newton_usd.core.Model`.
        state, control, solver: with a Model, the State, Control and solver to use (each optional: an
            accessor needing a missing one says so).
    """

    def __init__(self, target, state=None, control=None, solver=None):
        if hasattr(target, "solver") and hasattr(target, "state") and hasattr(target, "model"):
            self.sim = target
            self._pieces = None
        elif hasattr(target, "body_count") and hasattr(target, "num_worlds"):
            self.sim = None
            self._pieces = {"model": target, "state": state, "control": control, "solver": solver}
        else:
            raise NewtonUsdError(f"a view needs a Simulation or a Model, got {type(target).__name__}")

    def _get(self, name):
        if self.sim is not None and name == "state":  # (kept on the device: no wait for the frames queued)
            name = "device_state" if hasattr(self.sim, "device_state") else name
        value = getattr(self.sim, name) if self.sim is not None else self._pieces[name]
        if value is None:
            raise NewtonUsdError(f"this view was made from a Model without a {name.capitalize()}: pass {name}=")
        return value

    @property
    def model(self):
        return self._get("model")

    @property
    def state(self):
        return self._get("state")

    @property
    def control(self):
        return self._get("control")

    @property
    def solver(self):
        return self.sim.solver if self.sim is not None else self._pieces["solver"]

    def synchronize(self) -> None:
        """Before a read on the host: a Simulation's frames queued on the device waited for and their blow-up checks
        read (:meth:`~newton_usd.sim.Simulation.synchronize`)."""
        if self.sim is not None and hasattr(self.sim, "synchronize"):
            self.sim.synchronize()

    def state_moved(self) -> None:
        """A view wrote positions or velocities into the State: a Simulation measures how far bodies are flung
        from there (:meth:`~newton_usd.sim.Simulation.restart_flung_check`)."""
        if self.sim is not None and hasattr(self.sim, "restart_flung_check"):
            self.sim.restart_flung_check()

    def push_parameters(self, names) -> None:
        """Hand the model values ``names`` (edited in place) to the solver: :meth:`SolverBase.update_parameters`,
        and where the solver cannot take some without a rebuild, a new solver of the same kind (a Simulation's;
        with a bare Model, an error naming the values). Arrays a user attached to the model are not pushed."""
        solver = self.solver
        names = {n for n in names if n in _CORE_MODEL_VALUES or n.startswith("mujoco.")}
        if solver is None or not names:  # (a user's own arrays: a solver that uses them reads them from the model)
            return
        model = self.model
        leftover = solver.update_parameters(model, names)
        if not leftover:
            return
        if self.sim is None:
            raise NewtonUsdError(
                f"{type(solver).__name__} cannot take {', '.join(sorted(leftover))} without a rebuild: make a new "
                "solver from the model"
            )
        kwargs = {"backend": solver.backend} if hasattr(solver, "backend") else {}
        logger.info("%s rebuilt to take %s", type(solver).__name__, ", ".join(sorted(leftover)))
        self.sim.solver = type(solver)(model, **kwargs)


_CORE_MODEL_VALUES = frozenset({name for names in _WORLD_ARRAYS.values() for name in names} | {"gravity"})
"""The Model values a solver compiles (user-attached arrays are read from the model by the solvers that use them)."""
