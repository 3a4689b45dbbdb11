"""Opening stages and reading their metrics (units and up axis), with errors that name the file."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from pxr import Tf, Usd, UsdGeom, UsdPhysics

from ..core.quat import multiply4, quat_multiply, quat_rotate, rotate3
from ..errors import UsdInputError
from .files import check_stage_file


def open_stage(source) -> tuple[Usd.Stage, str]:
    """Open ``source`` (a path or a ``Usd.Stage``); returns the stage and a name for messages.

    Raises:
        UsdInputError: the file is missing or is not a USD file pxr can read.
    """
    if isinstance(source, Usd.Stage):
        layer = source.GetRootLayer()
        return source, layer.realPath or layer.identifier
    path = check_stage_file(source)
    try:
        stage = Usd.Stage.Open(path, Usd.Stage.LoadAll)
    except Tf.ErrorException as e:
        raise UsdInputError(f"not a USD file pxr can read ({_tf_reason(e)})", file=path) from None
    if stage is None:
        raise UsdInputError("not a USD file pxr can read", file=path)
    return stage, path


def _tf_reason(error: Exception) -> str:
    """The first message of a ``Tf.ErrorException``, without the C++ function and source location."""
    for line in str(error).splitlines():
        match = re.search(r" : '(.*)'\s*$", line)
        if match:
            return match.group(1)[:300]
    return str(error).strip()[:300] or "unreadable"


@dataclass
class StageFrame:
    """How the stage's coordinates map to the simulation's (SI, Z up).

    ``p_sim = meters_per_unit * R @ p_stage`` for world positions, where R turns the stage's up axis
    into +Z (identity for a Z-up stage, +90 degrees about X for Y-up); masses scale by
    ``kilograms_per_unit``.
    """

    meters_per_unit: float = 1.0
    kilograms_per_unit: float = 1.0
    up_axis: str = "Z"

    @classmethod
    def of(cls, stage: Usd.Stage) -> "StageFrame":
        return cls(
            meters_per_unit=float(UsdGeom.GetStageMetersPerUnit(stage)) or 1.0,
            kilograms_per_unit=float(UsdPhysics.GetStageKilogramsPerUnit(stage)) or 1.0,
            up_axis=str(UsdGeom.GetStageUpAxis(stage)),
        )

    @property
    def rotation(self) -> np.ndarray:
        """Warp-order quaternion R taking stage axes to simulation axes."""
        return _UP_ROTATION[self.up_axis == "Y"].copy()

    def world_pose_to_sim(self, pos, quat):
        """A world pose in stage units and axes to SI and Z up."""
        r = _UP_ROTATION[self.up_axis == "Y"]
        return self.meters_per_unit * quat_rotate(r, pos), quat_multiply(r, quat)

    def world_vector_to_sim(self, v, length: bool = True):
        """A world-frame vector (a length if ``length``, else a direction or angular quantity)."""
        v = quat_rotate(_UP_ROTATION[self.up_axis == "Y"], v)
        return v * self.meters_per_unit if length else v

    def world_pose_floats(self, pos, quat) -> tuple:
        """:meth:`world_pose_to_sim` of one pose given as plain floats (``pos`` 3, ``quat`` 4), as
        (position tuple, quat tuple): the same arithmetic, without the small-array overhead."""
        r = _UP_FLOATS[self.up_axis == "Y"]
        s = self.meters_per_unit
        x, y, z = rotate3(r, pos)
        return (s * x, s * y, s * z), multiply4(r, quat)

    def world_vector_floats(self, v, length: bool = True) -> tuple:
        """:meth:`world_vector_to_sim` of one vector given as plain floats, as a tuple (same arithmetic)."""
        x, y, z = rotate3(_UP_FLOATS[self.up_axis == "Y"], v)
        if not length:
            return x, y, z
        s = self.meters_per_unit
        return x * s, y * s, z * s


# StageFrame.rotation for Z up (False) and Y up (True); read-only, shared.
_UP_ROTATION = {False: np.array([0.0, 0.0, 0.0, 1.0]), True: np.array([np.sqrt(0.5), 0.0, 0.0, np.sqrt(0.5)])}
for _r in _UP_ROTATION.values():
    _r.flags.writeable = False
_UP_FLOATS = {k: tuple(r.tolist()) for k, r in _UP_ROTATION.items()}


def authored_value(prim, name: str):
    """The value of ``prim``'s attribute ``name`` where it is authored (None where it is not, or there is none: a
    schema's fallback is not a value the stage gives)."""
    attr = prim.GetAttribute(name)
    return attr.Get() if attr and attr.HasAuthoredValue() else None
