"""What every element kind of the spec shares: MuJoCo element names made unique, and the MuJoCo-only values
the importers record in ``model.mujoco`` (``mjc:*``, MJCF's own) set on the spec's elements."""

from __future__ import annotations

import math

import mujoco
import numpy as np

from ....core.model import element_name


class ElementNames:
    """MuJoCo element names of one kind: the source's name of each element (:func:`element_name`: a
    prim's displayName, else its name; an MJCF name whole), made unique only where two collide (the
    later one gets ``_2``, ``_3``, ... in model order). ``labels`` (shared by several kinds, first name
    wins) maps a name back to its prim, for MuJoCo's compile errors."""

    def __init__(self, model, labels: dict | None = None):
        self.model = model
        self.used = set()
        self.labels = labels if labels is not None else {}

    def __call__(self, label: str, suffix: str = "") -> str:
        base = (element_name(self.model, label) or "world") + suffix
        name, n = base, 1
        while name in self.used:
            n += 1
            name = f"{base}_{n}"
        self.used.add(name)
        self.labels.setdefault(name, label)
        return name


def force_space_solref(ke: float, kd: float, invweight: float, dmax: float) -> list:
    """MuJoCo's ``solref`` of a limit that pushes back with a stiffness ``ke`` and damping ``kd`` (force-space: N/m,
    N*m/rad, ...) past its bound, for a DOF or tendon of inverse weight ``invweight`` (``dof_invweight0``,
    ``tendon_invweight0``) and an impedance ``dmax`` (``solimp[1]``), as Newton's MuJoCo solver converts its own.

    Past the impedance's width MuJoCo's limit holds a steady force ``k / (A (1 - dmax))`` per unit of violation for a
    direct stiffness ``k`` (``solref = (-k, -b)``) and inverse weight ``A``; likewise ``b``. So ``k = ke A (1 -
    dmax)``, ``b = kd A (1 - dmax)``, written as the positive ``(timeconst, dampratio) = (2 / b, b / (2 sqrt(k)))``,
    the same spring, which MuJoCo's ``refsafe`` keeps at two steps or slower; without damping, the direct
    ``(-k, 0)``. The steady force is the stage's; the way there is MuJoCo's: its impedance takes up ``dmax`` of what
    pushes past the bound at once and lets the rest settle at ``sqrt(ke A (1 - dmax))`` rad/s, slower than the
    spring's ``sqrt(ke A)``."""
    dmax = min(max(float(dmax), 1e-4), 0.9999)  # (MuJoCo's clamp)
    factor = float(invweight) * (1.0 - dmax)
    k, b = max(float(ke) * factor, 1e-15), max(float(kd), 0.0) * factor
    return [2.0 / b, b / (2.0 * math.sqrt(k))] if b > 0.0 else [-k, 0.0]


def mj_limited(token) -> int:
    return getattr(mujoco.mjtLimited, f"mjLIMITED_{str(token).upper()}")


def mj_params(values, n=10):
    out = np.zeros(n)
    values = list(values)[:n]
    out[: len(values)] = values
    return out


# model.mujoco array -> MjSpec attribute (per DOF for joints, per shape for geoms); NaN: MuJoCo's default.
JOINT_VALUES = {
    "dof_damping": ("damping", "poly"),  # MuJoCo 4: polynomial coefficients, the first is the linear one
    "dof_stiffness": ("stiffness", "poly"),
    "dof_springref": ("springref", float),
    "dof_limit_margin": ("margin", float),
    "dof_solref_limit": ("solref_limit", list),
    "dof_solimp_limit": ("solimp_limit", list),
    "dof_solref_friction": ("solref_friction", list),
    "dof_solimp_friction": ("solimp_friction", list),
    "dof_actfrcrange": ("actfrcrange", "limited"),  # set only where limited
    "dof_actgravcomp": ("actgravcomp", int),
    "dof_springdamper": ("springdamper", list),  # (both positive: MuJoCo's stiffness and damping from it)
}

EQUALITY_VALUES = {"eq_solref": ("solref", list), "eq_solimp": ("solimp", list)}

GEOM_VALUES = {
    "geom_contype": ("contype", int),
    "geom_conaffinity": ("conaffinity", int),
    "geom_condim": ("condim", int),
    "geom_priority": ("priority", int),
    "geom_solmix": ("solmix", float),
    "geom_solref": ("solref", list),
    "geom_solimp": ("solimp", list),
    "geom_group": ("group", int),
}

SITE_VALUES = {"site_group": ("group", int)}


def set_from(element, model, index, table):
    for key, (attr, kind) in table.items():
        values = getattr(model.mujoco, key, None)
        if values is None:
            continue
        v = values[index]
        if np.any(np.isnan(v)):
            continue
        if kind == "poly":
            setattr(element, attr, [float(v), 0.0, 0.0])
        elif kind == "limited":  # a range recorded only where it applies: MuJoCo's `<attr>limited` true
            setattr(element, attr.replace("range", "limited"), mujoco.mjtLimited.mjLIMITED_TRUE)
            setattr(element, attr, [float(x) for x in v])
        else:
            setattr(element, attr, kind(v) if kind is not list else [float(x) for x in v])
