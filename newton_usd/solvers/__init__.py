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
from .newton.coupled import COUPLED_WITH_VBD
from .newton.vbd_mpm import SolverVBDMPM
from .solver import SolverBase

SOLVERS = {
    "mujoco": SolverMuJoCo,
    **NEWTON_SOLVERS,
    SolverImplicitMPM.name: SolverImplicitMPM,
    SolverVBD.name: SolverVBD,
}
"""Solver names accepted by ``usdsim --solver``, ``Simulation.open(solver=...)`` and ``newton:usd:solver``."""

ENGINES = {**SOLVERS, **{cls.name: cls for cls in (*COUPLED_WITH_VBD.values(), SolverVBDMPM)}}
"""Every engine a run makes: :data:`SOLVERS`, and the coupled engines a scene with deformables runs where it asks for
mujoco or xpbd for its rigid bodies (``mujoco_vbd``, ``xpbd_vbd``: chosen from the rigid engine asked, not named
themselves; see :mod:`.newton.coupled`); ``vbd_mpm``, a scene's grains and deformables together
(:mod:`.newton.vbd_mpm`)."""

__all__ = [
    "COUPLED_WITH_VBD",
    "ENGINES",
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
