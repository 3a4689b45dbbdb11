"""Why does an asset behave differently from its MJCF? Compare the MuJoCo model native MuJoCo compiles
from the MJCF with the one newton_usd builds from the stage (``add_usd`` -> ``SolverMuJoCo.mj_model``),
element by element, then step both and set the divergence beside native MuJoCo's own sensitivity.

    usdsim compare MODEL.xml STAGE.usda [--steps N] [--rtol R] [--atol A] [--format human|json]

Elements (bodies, joints, geoms, sites, actuators, tendons, equalities) are matched by name (MuJoCo
names are the source's names: the MJCF name a converter keeps as the prim's displayName), the rest by
place: bodies by their world position at qpos0 and mass, joints in order on matched bodies, geoms and
sites within matched bodies by type, place and size, the others in order. What is equivalent does not
count: a quaternion's sign, the order and signs of the principal axes of an inertia (the tensors are
compared), the symmetries of a geom (a capsule's axis either way round, a box's axes up to sign), the
order of geoms within a body, the sizes a geom type does not use, a visual geom's contact parameters, and
how collisions are filtered (the geom pairs that may collide are compared, not the bitmasks, excludes and
pairs that say so). Fields differ when ``|ours - native| > atol + rtol * |native|``.

The dynamics: both models are stepped ``steps`` steps with zero control from qpos0 and from every hinge
and slide joint moved by ``offset``; the divergence is the largest distance between matched bodies. A
chaotic model amplifies any difference, so native MuJoCo is also stepped from the same start with every
coordinate moved by 1e-9, and with its geometry (poses, sizes, inertias) rounded to float32 as a USD file
stores them (once as is, three times moved by a random float32 round-off): its own sensitivity. A divergence
under ``dynamics_atol`` matches; one that the sensitivity
explains (the initial difference it implies, ``divergence / sensitivity * 1e-9``, is under 1e-6, or it is
at most 10 times the float32 model's) is chaos; the rest is a real difference.

Exit status of ``usdsim compare``: 0 when the models match, 1 when they differ, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

import numpy as np

from .dynamics import CHAOS_EPS, CHAOS_LIMIT, divergences, float32_twins, native_sensitivity, verdict
from .fields import FIELDS, OPTIONS, contact_pairs, field_differences
from .matching import DATA_GEOM_TYPE, KINDS, count_of, data_copies, match_elements, name_of
from .results import Comparison, Divergence, FieldDifference

__all__ = [  # compare and its parts, for the callers that use them
    "CHAOS_EPS",
    "CHAOS_LIMIT",
    "FIELDS",
    "KINDS",
    "OPTIONS",
    "Comparison",
    "Divergence",
    "FieldDifference",
    "compare",
    "compare_models",
    "contact_pairs",
    "field_differences",
    "float32_twins",
    "format_text",
    "load_native",
    "load_ours",
    "main",
    "match_elements",
    "native_sensitivity",
    "verdict",
]

EXIT_MATCH, EXIT_DIFFER, EXIT_INPUT = 0, 1, 2


# ---------------------------------------------------------------- loading
def load_native(path):
    """The MuJoCo model native MuJoCo compiles from the MJCF file ``path``."""
    import mujoco

    from ..errors import UsdInputError

    if not os.path.exists(path):
        raise UsdInputError("no such file", file=os.fspath(path))
    try:
        return mujoco.MjModel.from_xml_path(os.fspath(path))
    except ValueError as e:
        raise UsdInputError(f"native MuJoCo cannot load it: {str(e).strip().splitlines()[0]}", file=path) from None


def load_ours(path):
    """The MuJoCo model newton_usd simulates for ``path`` (a USD stage through ``add_usd``, an MJCF through
    ``add_mjcf``) and the prim behind each element: ``(mj_model, {(kind, id): prim path})``."""
    from ..core.builder import ModelBuilder
    from ..core.model import element_name
    from ..solvers import SolverMuJoCo

    builder = ModelBuilder()
    if os.fspath(path).lower().endswith(".xml"):
        builder.add_mjcf(path)
    else:
        builder.add_usd(path)
    model = builder.finalize("cpu")
    solver = SolverMuJoCo(model, backend="cpu")
    m, smap = solver.mj_model, solver.spec_map
    prims = {}
    for labels, ids, kind in (
        (model.body_label, smap.body_mj, "body"),
        (model.shape_label, smap.shape_mj, "geom"),
        (model.site_label, smap.site_mj, "site"),
        (model.joint_label, smap.joint_mj, "joint"),
    ):
        for label, i in zip(labels, ids, strict=False):
            if i >= 0:
                prims[(kind, int(i))] = label
    dof_joint = np.searchsorted(model.joint_qd_start.numpy(), np.arange(model.joint_dof_count), side="right") - 1
    for dof, i in enumerate(smap.dof_mj):
        if i >= 0:
            prims[("joint", int(i))] = model.joint_label[dof_joint[dof]]
    for a, dof in enumerate(smap.actuator_dof):
        prims[("actuator", a)] = model.joint_label[dof_joint[dof]]
    for entry, i in zip(getattr(model.mujoco, "actuator", None) or [], smap.mjc_actuator_ctrl, strict=False):
        if i >= 0:
            prims[("actuator", int(i))] = entry["path"]
    import mujoco

    for kind, labels, obj in (
        ("tendon", [e["path"] for e in getattr(model.mujoco, "tendon", None) or []], mujoco.mjtObj.mjOBJ_TENDON),
        ("equality", list(model.equality_label), mujoco.mjtObj.mjOBJ_EQUALITY),
    ):
        for label in labels:
            i = mujoco.mj_name2id(m, obj, element_name(model, label))
            if i >= 0:
                prims.setdefault((kind, i), label)
    return m, prims


# ---------------------------------------------------------------- the comparison
def compare(native_source, ours_source, *, rtol: float = 1e-5, atol: float = 1e-6, steps: int = 100,
            offset: float = 0.1, dynamics_atol: float = 1e-5) -> Comparison:  # fmt: skip
    """Compare native MuJoCo's model of the MJCF ``native_source`` with ours of ``ours_source`` (a USD stage,
    or an MJCF through ``add_mjcf``): see the module's docstring.

    Raises:
        UsdInputError: a file that does not exist or does not load.
    """
    native = load_native(native_source)
    ours, prims = load_ours(ours_source)
    c = compare_models(native, ours, prims, rtol=rtol, atol=atol, steps=steps, offset=offset,
                       dynamics_atol=dynamics_atol)  # fmt: skip
    c.native_file, c.ours_file = os.fspath(native_source), os.fspath(ours_source)
    return c


def compare_models(native, ours, prims=None, *, rtol: float = 1e-5, atol: float = 1e-6, steps: int = 100,
                   offset: float = 0.1, dynamics_atol: float = 1e-5) -> Comparison:  # fmt: skip
    """:func:`compare` of two compiled MuJoCo models; ``prims``: ``{(kind, id): prim}`` of ours' elements."""
    prims = prims or {}
    matches = match_elements(native, ours)
    c = Comparison("native", "ours")
    for kind in KINDS:
        pairs = matches[kind]
        c.counts[kind] = [count_of(native, kind), count_of(ours, kind), len(pairs)]
        matched_ours = set(pairs.values())
        unused = set()
        if kind in DATA_GEOM_TYPE:  # (a copy is compared through its geom's mesh field; an unused asset is no model)
            matched_ours |= data_copies(native, ours, matches, kind)
            used = {int(native.geom_dataid[g]) for g in range(native.ngeom)
                    if int(native.geom_type[g]) == DATA_GEOM_TYPE[kind]}  # fmt: skip
            unused = set(range(count_of(native, kind))) - used
        for i in range(count_of(native, kind)):
            if i not in pairs and i not in unused:
                c.unmatched.append([kind, "native", name_of(native, kind, i) or f"#{i}", None])
        for i in range(count_of(ours, kind)):
            if i not in matched_ours:
                c.unmatched.append([kind, "ours", name_of(ours, kind, i) or f"#{i}", prims.get((kind, i))])
    c.differences = field_differences(native, ours, matches, prims, rtol, atol)
    c.dynamics = divergences(native, ours, matches, steps, offset, dynamics_atol)
    return c


def format_text(c: Comparison, most: int = 50) -> str:
    """The comparison as a human reads it."""
    lines = [f"native: {c.native_file} (MuJoCo)", f"ours:   {c.ours_file} (newton_usd -> SolverMuJoCo.mj_model)"]
    lines.append("elements (native / ours / matched): " + ", ".join(
        f"{kind} {n}/{o}/{m}" for kind, (n, o, m) in c.counts.items() if n or o))  # fmt: skip
    for kind, side, name, prim in c.unmatched[:most]:
        lines.append(f"  unmatched {kind} of {side}: {name}" + (f" ({prim})" if prim else ""))
    if c.differences:
        lines.append(f"fields that differ ({len(c.differences)}):")
        for d in c.differences[:most]:
            lines.append(f"  {d.kind} {d.name}: {d.field}: native {_text(d.native)}, ours {_text(d.ours)}"
                         + (f"  [{d.prim}]" if d.prim else ""))  # fmt: skip
        if len(c.differences) > most:
            lines.append(f"  ... and {len(c.differences) - most} more (--format json lists them all)")
    else:
        lines.append("fields: all match")
    lines.append("dynamics (largest distance between matched bodies, m):")
    lines.append(f"  {'start':<14} {'steps':>5}  {'ours - native':>13}  {'native sensitivity: 1e-9':>24}"
                 f"  {'float32':>9}  verdict")  # fmt: skip
    for d in c.dynamics:
        lines.append(f"  {d.start:<14} {d.steps:>5}  {d.divergence:>13.3g}  {d.sensitivity:>24.3g}"
                     f"  {d.float32_sensitivity:>9.3g}  {d.verdict}")  # fmt: skip
    lines.append("verdict: " + ("the models differ" if c.differ else "the models match"))
    return "\n".join(lines)


def _text(values) -> str:
    if len(values) == 1:
        v = values[0]
        return v if isinstance(v, str) else str(v) if isinstance(v, bool) else f"{v:.9g}"
    return "[" + " ".join(f"{v:.6g}" for v in values) + "]"


def main(argv=None) -> int:
    """``usdsim compare MODEL.xml STAGE``: exit 0 when the models match, 1 when they differ, 2 on bad input."""
    p = argparse.ArgumentParser(
        prog="usdsim compare",
        description="Compare native MuJoCo's model of an MJCF with the one newton_usd simulates for a stage "
        "(converted from it by any converter): elements matched by name then by place, the fields that differ, "
        "and the dynamics beside native MuJoCo's own sensitivity. Exit 0: they match; 1: they differ.",
    )
    p.add_argument("model", help="the MJCF file (.xml), compiled by native MuJoCo")
    p.add_argument("stage", help="the USD stage (or an MJCF file, through add_mjcf)")
    p.add_argument("--steps", type=int, default=100, help="steps of the dynamics comparison (default 100)")
    p.add_argument("--offset", type=float, default=0.1, help="hinge and slide offset of the second start (0.1)")
    p.add_argument("--rtol", type=float, default=1e-5, help="relative tolerance of the fields (1e-5)")
    p.add_argument("--atol", type=float, default=1e-6, help="absolute tolerance of the fields (1e-6)")
    p.add_argument("--dynamics-atol", type=float, default=1e-5, help="divergence that still matches (m, 1e-5)")
    p.add_argument("--format", choices=("human", "json"), default="human")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors, and the import warnings")
    args = p.parse_args(argv)
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.WARNING if args.verbose else logging.ERROR)
    from ..errors import NewtonUsdError

    try:
        c = compare(args.model, args.stage, rtol=args.rtol, atol=args.atol, steps=args.steps, offset=args.offset,
                    dynamics_atol=args.dynamics_atol)  # fmt: skip
    except NewtonUsdError as e:
        if args.verbose:
            raise
        print(f"usdsim compare: error: {e}", file=sys.stderr)
        return EXIT_INPUT
    print(json.dumps(c.to_dict(), indent=1) if args.format == "json" else format_text(c))
    return EXIT_DIFFER if c.differ else EXIT_MATCH
