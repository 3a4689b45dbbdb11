"""Penalty contacts too soft to hold a body up: said before the run (featherstone, semi_implicit).

Newton's Featherstone and semi-implicit solvers push bodies apart with penalty springs (``ke`` N/m along the normal,
the mean of the two shapes'), so a body at rest sinks until the springs carry its weight: ``m g / (n ke)`` deep on
``n`` contact points (a box's face on a plane: four, Newton's most for it; measured so: a 10 kg box rests 9.8 mm deep
at Newton's default 2.5e3 N/m, a 10 kg sphere on its one point 39 mm). Newton's default stiffness is made for bodies
of about a kilogram: a 1000 kg box sinks about 1 m into a plane, and through a ground of zero thickness (a flat
mesh) once its middle is past it. MuJoCo's contacts hold any mass (their stiffness follows the masses they push),
XPBD's are constraints.

A free body (one that only contacts hold up) whose sink on four points is more than :data:`SINK_SHARE` of its own
thickness is named, with its sink and the stiffness that holds it to 1 % of its thickness. Articulated robots are not
estimated (their weight spreads over their feet)."""

from __future__ import annotations

import newton
import numpy as np

from .stable_step import box_corners

RESTING_POINTS = 4
"""Contact points a body rests on in the estimate (a face on a plane: Newton's most for a box)."""
SINK_SHARE = 0.25
"""A body that would sink more than this share of its own thickness is named."""
HOLD_SHARE = 0.01
"""The stiffness advised holds a body to this share of its thickness."""


def soft_contacts(nm, gravity: float) -> list[tuple[int, float, float, float]]:
    """``(body, sink m, thickness m, stiffness N/m that holds it)`` for each free body of ``nm`` (a bridged
    ``newton.Model``) that may touch something and that its penalty contacts would let sink more than
    :data:`SINK_SHARE` of its thickness under ``gravity`` (m/s^2), heaviest first."""
    pairs = nm.shape_contact_pairs
    if gravity <= 0.0 or pairs is None or not len(pairs):
        return []
    shape_body = nm.shape_body.numpy()
    touching = np.unique(pairs.numpy())
    parents = set(nm.joint_parent.numpy().tolist())
    free = {
        int(b) for b, jt in zip(nm.joint_child.numpy(), nm.joint_type.numpy(), strict=True)
        if jt == int(newton.JointType.FREE) and int(b) not in parents
    }  # fmt: skip
    ke = nm.shape_material_ke.numpy().astype(np.float64)
    mass = nm.body_mass.numpy().astype(np.float64)
    shapes_of = {}
    for s in touching:
        b = int(shape_body[s])
        if b in free:
            shapes_of.setdefault(b, []).append(int(s))
    out = []
    for b, shapes in shapes_of.items():
        corners = np.concatenate([box_corners(nm, s) for s in shapes])
        thickness = float((corners.max(axis=0) - corners.min(axis=0)).min())
        weight = float(mass[b]) * gravity
        sink = weight / (RESTING_POINTS * float(ke[shapes].min()))
        if thickness > 0.0 and sink > SINK_SHARE * thickness:
            out.append((b, sink, thickness, weight / (RESTING_POINTS * HOLD_SHARE * thickness)))
    return sorted(out, key=lambda row: -float(mass[row[0]]))


def say_soft_contacts(nm, model, solver: str, diagnostics) -> None:
    """Add to ``diagnostics`` each body :func:`soft_contacts` finds in ``nm`` (``model``'s bridge), under ``solver``."""
    gravity = float(np.linalg.norm(np.asarray(model.gravity, dtype=np.float64)))
    for b, sink, thickness, needed in soft_contacts(nm, gravity):
        diagnostics.add(
            f"the {solver} solver's penalty contacts (Newton's contact stiffness, ke "
            f"{float(nm.shape_material_ke.numpy().max()):.3g} N/m) cannot hold these bodies up: each sinks about as "
            "deep as said (its weight on four contact points), more than a quarter of its thickness, and falls "
            "through a ground of no thickness (a flat mesh) once past half of it; newton:contactStiffness on the "
            "PhysicsScene as said holds it to 1 % of its thickness (--substeps auto takes the shorter step it needs), "
            "and --solver mujoco or xpbd hold it as it is",
            f"{model.body_label[b]} (sinks {sink:.3g} m of its {thickness:.3g} m; ke {needed:.3g} N/m holds it)",
        )
