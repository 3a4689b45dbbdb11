"""The records the builder takes and keeps: meshes, height fields, joint axes, keyframes; transforms as
``(position, Warp quaternion)`` pairs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .types import DriveMode

IDENTITY = (np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))
EQUALITY_KINDS = ("connect", "weld", "joint")
"""Equality constraint kinds; ``equality_type`` holds the index."""


@dataclass
class Keyframe:
    """A named state to reset to: coordinates of some joints (the others keep their initial values)."""

    time: float = 0.0
    joint_q: dict = None  # joint index -> its coordinates (model coordinates, as joint_q)
    joint_qd: dict = None  # joint index -> its velocities (as joint_qd)
    # Values of one world's joint (index over all worlds) that differ from world 0's: the free joints of
    # worlds placed elsewhere (see ModelBuilder.replicate's placements).
    world_joint_q: dict = None
    world_joint_qd: dict = None


@dataclass
class Mesh:
    """A triangle mesh in its shape frame: ``vertices`` (N, 3) and ``indices`` (3 per triangle)."""

    vertices: np.ndarray
    indices: np.ndarray

    def __post_init__(self):
        self.vertices = np.asarray(self.vertices, dtype=np.float64).reshape(-1, 3)
        self.indices = np.asarray(self.indices, dtype=np.int32).reshape(-1)


@dataclass(frozen=True)
class SdfCollision:
    """How a mesh shape collides through a signed distance field (NewtonSDFCollisionAPI), SI units: Newton builds
    the field from the mesh when the model is made (on a CUDA device) and collides it with SDF contacts, or
    hydroelastic ones where both shapes of a pair enable them. Engines without SDF contacts collide the mesh."""

    max_resolution: int | None = 64
    """Cells along the longest side of the sparse grid (a multiple of 8); None where ``target_voxel_size`` sets it."""
    target_voxel_size: float | None = None
    """m: the grid's cell size; takes precedence over ``max_resolution``."""
    narrow_band: tuple = (-0.1, 0.1)
    """m: (inner < 0, outer > 0), how far inside and outside the surface the field is computed."""
    texture_format: str = "uint16"
    """How the grid's cells are stored: "uint8", "uint16" or "float32"."""
    padding: float | None = None
    """m: how far the field's box reaches beyond the mesh's bounds; None: the engine's (the contact gap)."""
    hydroelastic: bool = False
    """Hydroelastic contact for this shape (a pair uses it when both of its shapes enable it)."""
    hydroelastic_stiffness: float = 1.0e10
    """N/m^3: force = k * area * depth, the two shapes' stiffnesses in series."""


@dataclass
class Heightfield:
    """A height field in its shape frame (MuJoCo's hfield): ``elevation`` (rows along Y, columns along X,
    normalized to [0, 1]) spans ``[-size[0], size[0]] x [-size[1], size[1]]``; heights run from 0 to
    ``size[2]``, and the solid extends ``size[3]`` below 0."""

    elevation: np.ndarray
    size: tuple

    def __post_init__(self):
        self.elevation = np.asarray(self.elevation, dtype=np.float64)
        if self.elevation.ndim != 2 or min(self.elevation.shape) < 2:
            raise ValueError(f"a height field needs at least 2 x 2 samples, got shape {self.elevation.shape}")
        self.size = tuple(float(x) for x in self.size)


@dataclass
class JointAxis:
    """One DOF of a joint: its axis (in the joint frame), limits (None: off), drive and effort limit."""

    axis: tuple = (1.0, 0.0, 0.0)
    limit_lower: float | None = None
    limit_upper: float | None = None
    target_ke: float = 0.0
    target_kd: float = 0.0
    target_pos: float = 0.0
    target_vel: float = 0.0
    target_mode: DriveMode | None = None
    effort_limit: float = math.inf
    drive_acceleration: bool = False
    """True: ``target_ke``/``target_kd`` are accelerations per error (1/s^2, 1/s), which the solver scales by
    the DOF's effective inertia every step (UsdPhysics acceleration drives); False: forces per error."""
    limit_ke: float = math.nan
    limit_kd: float = math.nan
    """A soft limit: the stiffness and damping (N*m/rad, N*m*s/rad or N/m, N*s/m) with which the limit pushes back
    past its bound; NaN: the engine's own (MuJoCo's hard constraint, Newton's penalty or hard limit)."""


def to_pose(x):
    """(pos, Warp quat) from None, a (pos, quat) pair or a ``wp.transform``."""
    if x is None:
        return IDENTITY[0].copy(), IDENTITY[1].copy()
    if len(x) == 7:  # a wp.transform or a flat (px, py, pz, qx, qy, qz, qw)
        x = np.asarray(x, dtype=np.float64)
        return x[:3].copy(), x[3:] / np.linalg.norm(x[3:])
    p, q = x
    q = np.asarray(q, dtype=np.float64)
    return np.array(p, dtype=np.float64), q / math.sqrt(float(q @ q))
