"""Joint axes with their limits and drives: one DOF from a UsdPhysics limit and drive (units converted,
a lower > upper limit locks it), a generic (D6) joint's free axes, its distance limit, and when its
three free rotations are a ball joint.
"""

from __future__ import annotations

import math

import numpy as np
from pxr import UsdPhysics

from ..core.builder import JointAxis
from ..core.types import DriveMode, JointType
from ..errors import UsdInputError
from .descriptors import DEG
from .joint_states import STATE_ATTRIBUTES


def joint_axis(axis, angular, lim, drv, frame, path, diag, report_locked=True, drive=None, file=None):
    """One DOF from a UsdPhysics limit and drive (either may be None); None when the limit locks it
    (low > high). ``drive``: the DriveAPI instance name (for messages)."""
    s, k = frame.meters_per_unit, frame.kilograms_per_unit
    unit = DEG if angular else s
    ax = JointAxis(axis=tuple(axis))
    if lim is not None and lim.enabled and (math.isfinite(lim.lower) or math.isfinite(lim.upper)):
        lo = lim.lower * unit if math.isfinite(lim.lower) else None
        hi = lim.upper * unit if math.isfinite(lim.upper) else None
        if lo is not None and hi is not None and lo > hi:
            if report_locked:
                diag.add("joint limit with lower > upper: the joint is locked at its authored position", path)
            return None
        ax.limit_lower, ax.limit_upper = lo, hi
    if drv is not None and drv.enabled:
        for name, value in (("stiffness", drv.stiffness), ("damping", drv.damping)):
            if not (value >= 0 and math.isfinite(value)):  # (NaN fails both)
                raise UsdInputError(f"must be a finite number >= 0, got {value}", file=file, prim=str(path),
                                    attribute=f"drive:{drive}:physics:{name}")  # fmt: skip
    if drv is not None and drv.enabled:  # (the targets with or without gains: a joint actuator reads them too)
        ax.target_pos = drv.targetPosition * unit
        ax.target_vel = drv.targetVelocity * unit
    if drv is not None and drv.enabled and (drv.stiffness > 0 or drv.damping > 0):
        # Force drives: gains per degree for angular drives (UsdPhysics), per stage unit for linear ones.
        # Acceleration drives: (deg/s^2)/deg and (unit/s^2)/unit are unit-free, scaled by the
        # effective inertia in the solver.
        gain_unit = 1.0 if drv.acceleration else (k * s * s / DEG) if angular else k
        ax.target_ke = drv.stiffness * gain_unit
        ax.target_kd = drv.damping * gain_unit
        ax.drive_acceleration = bool(drv.acceleration)
        if math.isfinite(drv.forceLimit) and drv.forceLimit < 1e30:
            ax.effort_limit = drv.forceLimit * (k * s * s if angular else k * s)
        ax.target_mode = DriveMode(int(drv.stiffness > 0) | (int(drv.damping > 0) << 1))
    return ax


_D6_AXES = (
    (UsdPhysics.JointDOF.TransX, False, (1.0, 0.0, 0.0)),
    (UsdPhysics.JointDOF.TransY, False, (0.0, 1.0, 0.0)),
    (UsdPhysics.JointDOF.TransZ, False, (0.0, 0.0, 1.0)),
    (UsdPhysics.JointDOF.RotX, True, (1.0, 0.0, 0.0)),
    (UsdPhysics.JointDOF.RotY, True, (0.0, 1.0, 0.0)),
    (UsdPhysics.JointDOF.RotZ, True, (0.0, 0.0, 1.0)),
)


def d6_axes(d, reverse, frame, path, diag, file=None):
    """(linear axes, angular axes) of a generic (D6) joint, as the UsdPhysics spec defines them: an axis
    with no limit is free, one whose low > high is locked, any other is limited."""
    limits = {p.first: p.second for p in d.jointLimits}
    drives = {p.first: p.second for p in d.jointDrives}
    linear, angular = [], []
    for dof, is_angular, axis in _D6_AXES:
        vec = -np.array(axis) if reverse else np.array(axis)
        # An axis without a LimitAPI is free; one without a DriveAPI is not driven.
        ax = joint_axis(vec, is_angular, limits.get(dof), drives.get(dof), frame, path, diag, report_locked=False,
                         drive=dof.name[:1].lower() + dof.name[1:], file=file)  # fmt: skip
        if ax is not None:
            (angular if is_angular else linear).append(ax)
    return linear, angular


_D6_ROT_STATES = frozenset(a for a in STATE_ATTRIBUTES[JointType.D6] if a.startswith("state:rot"))


def free_rotation(d6_axes, prim, result) -> bool:
    """Whether a generic joint's DOFs are the three rotations, each free (no limit, or limits of -180 and 180
    degrees or wider, which bound no rotation) and undriven, without authored initial angles: any rotation,
    which a ball joint gives without the gimbal lock of three hinges."""
    linear, angular = d6_axes
    half_turn = math.pi * (1.0 - 1e-6)
    return (
        not linear
        and len(angular) == 3
        and all(
            (a.limit_lower is None or a.limit_lower <= -half_turn)
            and (a.limit_upper is None or a.limit_upper >= half_turn)
            and a.target_mode is None
            for a in angular
        )
        and result.resolver.view(prim).authored.isdisjoint(_D6_ROT_STATES)
    )


def d6_distance_limit(builder, d, parent, child, xp, xc, frame, result, path):
    """A generic joint's ``PhysicsLimitAPI:distance``: the distance between the two joint frames' origins
    stays within [low, high] (a distance constraint beside the joint)."""
    lim = next((p.second for p in d.jointLimits if p.first == UsdPhysics.JointDOF.Distance), None)
    if lim is None or not lim.enabled:
        return
    s = frame.meters_per_unit
    lo = lim.lower * s if math.isfinite(lim.lower) and lim.lower > 0 else None
    hi = lim.upper * s if math.isfinite(lim.upper) and lim.upper >= 0 else None
    if lo is None and hi is None:
        return
    if lo is not None and hi is not None and lo > hi:
        result.diagnostics.add("distance limit with low > high: ignored", path)
        return
    result.distance_index[str(path)] = builder.add_distance_constraint(
        parent, child, xp[0], xc[0], min_distance=lo, max_distance=hi, label=str(path)
    )
