"""The interface every solver implements."""

from __future__ import annotations


class SolverBase:
    """A solver advances a State of a Model by one step.

    Args:
        model: the finalized Model it simulates.
    """

    def __init__(self, model):
        self.model = model
        self.device = model.device

    def step(self, state_in, state_out, control, contacts, dt: float) -> None:
        """Advance ``state_in`` by ``dt`` seconds under ``control`` and write the result to ``state_out``.

        ``state_in`` and ``state_out`` may be the same object. ``contacts`` may be None for solvers that
        detect their own contacts (see ``update_contacts``).
        """
        raise NotImplementedError

    def update_contacts(self, contacts) -> None:
        """Fill ``contacts`` (:class:`~newton_usd.core.Contacts`) with every world's contacts at the current
        state and their forces, where the solver detects its own."""
        raise NotImplementedError

    def update_parameters(self, model, names) -> set:
        """Take the values of ``model`` named in ``names`` (Model attribute names, ``"mujoco.<name>"``
        for MuJoCo-only values) without rebuilding; ``model`` has the same bodies, joints and shapes
        as the solver's. Returns the names it could not take (the caller then rebuilds the solver)."""
        return set(names)
