"""Conversions of authored values to SI, and the checks of converted values, that the property catalog
(:mod:`~newton_usd.usd.properties`) names in its :class:`~newton_usd.usd.resolver.Candidate` s: each conversion
takes ``(value, Context)`` (stage units, the prim's kind) and returns the SI value; each check takes the converted
value and returns an error text or None; the ``*_UNSET`` tests mark an authored sentinel as no opinion.
"""

from __future__ import annotations

import math

from .resolver import RAD_PER_DEG, Candidate

_INF_UNSET = lambda v: v is None or (isinstance(v, float) and math.isinf(v))  # noqa: E731
_NEG_UNSET = lambda v: v is None or v < 0  # noqa: E731
_NEG_INF_UNSET = lambda v: v is None or (isinstance(v, float) and v == -math.inf)  # noqa: E731


# ---------------------------------------------------------------- conversions (value, Context) -> SI
def _float(v, ctx):
    return float(v)


def _int(v, ctx):
    i = int(v)
    if not -(2**31) <= i < 2**31:  # (MuJoCo's and Warp's integers are 32-bit)
        raise ValueError(f"{v!r} is outside a 32-bit integer's range")
    return i


def _bool(v, ctx):
    return bool(v)


def _dt_from_rate(v, ctx):
    v = float(v)
    if v <= 0:
        raise ValueError("time steps per second must be positive")
    return 1.0 / v


def _length(v, ctx):
    return float(v) * ctx.meters_per_unit


def _inertia_like(v, ctx):
    """Armature: kg*m^2 for angular DOFs, kg for linear ones (stage units in)."""
    k, s = ctx.kilograms_per_unit, ctx.meters_per_unit
    return float(v) * (k * s * s if ctx.angular else k)


def _effort(v, ctx):
    """Torque (angular) or force (linear) in stage units."""
    k, s = ctx.kilograms_per_unit, ctx.meters_per_unit
    return float(v) * (k * s * s if ctx.angular else k * s)


def _newton_damping(v, ctx):
    """NewtonJointAPI damping: per degree (angular) in stage units -> per radian, SI."""
    k, s = ctx.kilograms_per_unit, ctx.meters_per_unit
    return float(v) * (k * s * s / RAD_PER_DEG if ctx.angular else k)


def _mjc_damping(v, ctx):
    """mjc:damping: per radian (angular) in stage units -> SI."""
    k, s = ctx.kilograms_per_unit, ctx.meters_per_unit
    return float(v) * (k * s * s if ctx.angular else k)


def _mjc_stiffness(v, ctx):
    """mjc:stiffness: effort per radian (angular) or per distance (linear) in stage units -> SI."""
    k, s = ctx.kilograms_per_unit, ctx.meters_per_unit
    return float(v) * (k * s * s if ctx.angular else k)


def _mjc_position(v, ctx):
    """A joint position in MJCF units: the compiler's angle unit for angular joints, distance otherwise."""
    return float(v) * (ctx.angle_unit if ctx.angular else ctx.meters_per_unit)


def _joint_margin(v, ctx):
    return float(v) * (1.0 if ctx.angular else ctx.meters_per_unit)


def _vec(n):
    def convert(v, ctx):
        values = tuple(float(x) for x in v)
        if len(values) != n:
            raise ValueError(f"expected {n} numbers, got {len(values)}")
        return values

    return convert


def _positive(v):
    return None if v > 0 else "must be positive"


def _non_negative(v):
    return None if v >= 0 else "must be >= 0"


def _solref(v):
    return None if v[0] != 0 or v[1] != 0 else "solref (0, 0) is not valid"


def _solimp(v):
    # MuJoCo clamps dmin and dmax into [0.0001, 0.9999] itself (real models author e.g. "2 1 0.01"), so
    # only a non-positive width is refused.
    return None if v[2] > 0 else "solimp width must be positive"


def C(dialect, attribute, convert=None, unset=None):
    return Candidate(dialect, attribute, convert, unset)
