"""USD in: opening stages, their units, and the UsdPhysics importer."""

from .importer import UsdImport, add_usd
from .stage import StageFrame, open_stage

__all__ = ["StageFrame", "UsdImport", "add_usd", "open_stage"]
