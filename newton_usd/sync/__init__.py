"""Stage sync: simulated poses back onto the prims, in an output layer of their own."""

from .stage_sync import StageSync

__all__ = ["StageSync"]
