"""Solvers: all behind ``step(state_in, state_out, control, contacts, dt)``."""

from .mujoco import SolverMuJoCo
from .newton import (
    NEWTON_SOLVERS,
    SolverFeatherstone,
    SolverImplicitMPM,
    SolverKamino,
    SolverNewton,
    SolverSemiImplicit,
    SolverVBD,
    SolverXPBD,
)
from .solver import SolverBase

SOLVERS = {
    "mujoco": SolverMuJoCo,
    **NEWTON_SOLVERS,
    SolverImplicitMPM.name: SolverImplicitMPM,
    SolverVBD.name: SolverVBD,
}
"""Solver names accepted by ``usdsim --solver``, ``Simulation.open(solver=...)`` and ``newton:usd:solver``."""

__all__ = [
    "SOLVERS",
    "SolverBase",
    "SolverFeatherstone",
    "SolverImplicitMPM",
    "SolverKamino",
    "SolverMuJoCo",
    "SolverNewton",
    "SolverSemiImplicit",
    "SolverVBD",
    "SolverXPBD",
]
