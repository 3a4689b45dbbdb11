"""MJCF in: MJCF files through mujoco.MjSpec into the builder."""

from .convert import convert
from .importer import MjcfImport, add_mjcf, load_mjcf
from .options import MjcfOptions

__all__ = ["MjcfImport", "MjcfOptions", "add_mjcf", "convert", "load_mjcf"]
