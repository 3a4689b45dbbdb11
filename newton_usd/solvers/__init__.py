"""Solvers: all behind ``step(state_in, state_out, control, contacts, dt)``."""

from .mujoco import SolverMuJoCo
from .solver import SolverBase

SOLVERS = {"mujoco": SolverMuJoCo}
"""Solver names accepted by ``usdsim --solver`` and ``Simulation.open(solver=...)``."""

__all__ = ["SOLVERS", "SolverBase", "SolverMuJoCo"]
