"""newton_usd: simulate physics authored in USD, and write the motion back onto the prims.

Typical use::

    import newton_usd
    sim = newton_usd.Simulation.open("stage.usda")
    sim.run(120)
    sim.save("stage.sim.usda")
"""

# The newton:*, newton:usd:* and mjc:* schemas must be known to USD before the first stage opens.
from .usd.schemas import register_schemas

register_schemas()

from .errors import NewtonUsdError, SimulationError, UsdInputError  # noqa: E402

__version__ = "0.1.0"
"""The package's version (as in pyproject.toml)."""

__all__ = [
    "Contacts",
    "Control",
    "DriveMode",
    "GeoType",
    "JointType",
    "Mesh",
    "Model",
    "ModelBuilder",
    "NewtonUsdError",
    "Simulation",
    "SimulationError",
    "State",
    "UsdInputError",
    "__version__",
]


_CORE = ("Contacts", "Control", "DriveMode", "GeoType", "JointType", "Mesh", "Model", "ModelBuilder", "State")


def __getattr__(name):
    # Simulation pulls in USD and the solvers, the core Warp: import them on first use only (usdsim's
    # imports then run inside its Ctrl-C handling).
    if name == "Simulation":
        from .sim import Simulation  # noqa: PLC0415

        return Simulation
    if name in _CORE:
        from . import core  # noqa: PLC0415

        return getattr(core, name)
    raise AttributeError(name)
