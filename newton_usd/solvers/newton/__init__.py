"""Newton's Warp solvers (XPBD, Featherstone, semi-implicit, Kamino, VBD) on a bridged copy of our Model."""

from .implicit_mpm import SolverImplicitMPM
from .model_bridge import bridge_model
from .solver_newton import (
    NEWTON_SOLVERS,
    SolverFeatherstone,
    SolverKamino,
    SolverNewton,
    SolverSemiImplicit,
    SolverXPBD,
)
from .vbd import SolverVBD

__all__ = [
    "NEWTON_SOLVERS",
    "SolverFeatherstone",
    "SolverImplicitMPM",
    "SolverKamino",
    "SolverNewton",
    "SolverSemiImplicit",
    "SolverVBD",
    "SolverXPBD",
    "bridge_model",
]
