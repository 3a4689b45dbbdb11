"""Model-wide settings of the spec: MuJoCo's ``<option>`` values and flags, and the size of its arena."""

from __future__ import annotations

import mujoco

from ....errors import NewtonUsdError

_ENUM_OPTIONS = {
    "integrator": (mujoco.mjtIntegrator, "mjINT_"),
    "cone": (mujoco.mjtCone, "mjCONE_"),
    "solver": (mujoco.mjtSolver, "mjSOL_"),
    "jacobian": (mujoco.mjtJacobian, "mjJAC_"),
}

_VALUE_OPTIONS = (
    "impratio",
    "tolerance",
    "ls_tolerance",
    "noslip_tolerance",
    "ccd_tolerance",
    "density",
    "viscosity",
    "wind",
    "magnetic",
    "o_margin",
    "o_solref",
    "o_solimp",
    "o_friction",
    "iterations",
    "ls_iterations",
    "noslip_iterations",
    "ccd_iterations",
    "sdf_iterations",
    "sdf_initpoints",
)

OPTION_NAMES = tuple(_ENUM_OPTIONS) + _VALUE_OPTIONS + ("timestep",)
"""Every option SolverMuJoCo accepts, by MuJoCo's name (``mjc:option:<name>``)."""


def _set_option(spec, name: str, value) -> None:
    """``spec.option.<name> = value``; a value MuJoCo cannot hold (1e30 iterations: over its int range) is
    bad input naming the attribute, not a TypeError from inside MjSpec."""
    try:
        setattr(spec.option, name, value)
    except (TypeError, ValueError, OverflowError):
        kind = type(getattr(spec.option, name)).__name__
        raise NewtonUsdError(
            f"PhysicsScene.mjc:option:{name}: {value!r} is not a value MuJoCo's {name} can hold (a {kind})"
        ) from None


def apply_options(spec, options: dict, flags: dict) -> None:
    """Set MuJoCo options (tokens or enum values, MuJoCo names) and flags (``mjc:flag:*`` names)."""
    for name, value in options.items():
        if name in _ENUM_OPTIONS:
            enum, prefix = _ENUM_OPTIONS[name]
            if isinstance(value, str):
                member = getattr(enum, prefix + value.upper(), None)
                if member is None:
                    valid = ", ".join(m[len(prefix) :].lower() for m in enum.__members__ if m.startswith(prefix))
                    raise NewtonUsdError(f"unknown MuJoCo {name} {value!r}; valid: {valid}")
                value = member
            _set_option(spec, name, value)
        elif name in _VALUE_OPTIONS:
            _set_option(spec, name, value)
        elif name == "timestep":
            spec.option.timestep = float(value)
        else:
            raise NewtonUsdError(f"unknown MuJoCo option {name!r}; valid: {', '.join(OPTION_NAMES)}")
    for name, on in flags.items():
        disable = getattr(mujoco.mjtDisableBit, f"mjDSBL_{name.upper()}", None)
        enable = getattr(mujoco.mjtEnableBit, f"mjENBL_{name.upper()}", None)
        if disable is not None:  # a disable flag: the mjc:flag is "enabled", so off sets the bit
            spec.option.disableflags = (
                (spec.option.disableflags | int(disable)) if not on else (spec.option.disableflags & ~int(disable))
            )
        elif enable is not None:
            spec.option.enableflags = (
                (spec.option.enableflags | int(enable)) if on else (spec.option.enableflags & ~int(enable))
            )


ARENA_BASE = 16 << 20
"""bytes: MuJoCo's arena (MjData's memory for contacts, constraints and the solver's stack) for any model."""

ARENA_PER_ELEMENT = 8 << 10
"""bytes per body, shape and degree of freedom (measured: about 4 KB per free body with no contacts)."""

ARENA_PER_CONTACT = 4 << 10
"""bytes per expected contact with its constraint rows (measured with MuJoCo 4.0: about 1 KB in a settled pile
of boxes, pyramidal cones of condim 3; four times that for condim 6 and elliptic cones)."""

CONTACTS_PER_SHAPE = 12
"""expected contacts per shape (a settled pile of boxes has 4)."""


def arena_bytes(model) -> int:
    """The arena MuJoCo gets (``MjSpec.memory``), sized from the model: linear in its bodies, shapes, degrees of
    freedom and expected contacts. MuJoCo's own default grows with the square of the model (1.8 GB at 1,000
    free bodies, 14 GB at 3,000: a 5,000-body model cannot be allocated). Pages are touched only as used."""
    elements = model.body_count + model.shape_count + model.joint_dof_count
    contacts = CONTACTS_PER_SHAPE * model.shape_count + 64
    return ARENA_BASE + ARENA_PER_ELEMENT * elements + ARENA_PER_CONTACT * contacts
