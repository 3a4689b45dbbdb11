"""USD in: opening stages, their units, and the UsdPhysics importer."""

from .importer import UsdImport, add_usd, read_scenes, scenes_to_import
from .scenes import Scenes, physics_scenes
from .stage import StageFrame, open_stage

__all__ = [
    "Scenes",
    "StageFrame",
    "UsdImport",
    "add_usd",
    "open_stage",
    "physics_scenes",
    "read_scenes",
    "scenes_to_import",
]
