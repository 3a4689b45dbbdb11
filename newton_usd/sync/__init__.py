"""Stage sync: simulated poses back onto the prims, in an output layer of their own."""

from .joint_states import JointStateSync
from .stage_sync import StageSync

__all__ = ["JointStateSync", "StageSync"]
