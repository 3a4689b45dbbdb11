"""A run's step against the step its solver estimates stable (:meth:`SolverBase.stable_step`): the substeps per
frame ``--substeps auto`` takes, and the advice a blown-up run's error gives.

Where the estimate is below what any run could take (:data:`PRACTICAL_STEP`, or more than
:data:`MAX_PRACTICAL_SUBSTEPS` a frame; 0 or NaN included), no step is advised: the advice names the stiff element
(the solver's :meth:`step_limit`: a drive and its gain, a limit, a body's contacts) and the engines that take it as
it is (they integrate it implicitly, or as a constraint)."""

from __future__ import annotations

import math

from ..errors import NewtonUsdError

PRACTICAL_STEP = 1e-7
"""s: a stable step below this is no advice: 10 million steps a simulated second."""
MAX_PRACTICAL_SUBSTEPS = 100_000
"""Steps a frame beyond which a stable step is no advice (the run's own limit, ``MAX_SUBSTEPS``, is the same)."""

_ENGINES = {
    # the kind of force that sets the step -> engines that integrate it implicitly or as a constraint
    "drive": ("mujoco", "xpbd", "featherstone"),
    "spring": ("mujoco", "xpbd", "featherstone"),
    "limit": ("mujoco", "xpbd", "featherstone"),
    "contacts": ("mujoco", "xpbd"),
    "joint": ("mujoco", "xpbd", "featherstone"),
}
"""MuJoCo's implicitfast integrator takes damping implicitly (a drive's stiffness explicitly: :func:`_engines`),
XPBD's drives, limits and contacts are constraints, Featherstone's drives, passive springs and limit springs are
implicit here (:mod:`.newton.implicit_joint_forces`)."""


def practical(frame_dt: float, stable: float) -> bool:
    """Whether a run could take steps of ``stable`` s (frames of ``frame_dt`` s): at least :data:`PRACTICAL_STEP`
    and at most :data:`MAX_PRACTICAL_SUBSTEPS` a frame."""
    return stable >= PRACTICAL_STEP and frame_dt / stable <= MAX_PRACTICAL_SUBSTEPS  # (NaN: False)


def auto_substeps(solver, fps: float, substeps: int, step) -> tuple[int, float | None]:
    """``--substeps auto``: (substeps per frame, exact step or None) of a run at ``fps`` whose step would be
    ``step`` (s; None: the frame over ``substeps``): unchanged where that step is within ``solver``'s stable
    step, else the fewest substeps of the frame that are.

    Raises:
        NewtonUsdError: the stable step is not practical (see the module), naming what sets it.
    """
    frame_dt = 1.0 / fps
    stable = solver.stable_step()
    if (step or frame_dt / substeps) <= stable:
        return substeps, step
    if not practical(frame_dt, stable):
        raise NewtonUsdError(f"--substeps auto: {_impractical(solver, stable, fps)}")
    return stable_substeps(frame_dt, stable), None


def stable_substeps(frame_dt: float, stable: float) -> int:
    """The fewest steps per frame of ``frame_dt`` s that are each at most ``stable`` s (> 0)."""
    n = math.ceil(frame_dt / stable)
    return n + 1 if frame_dt / n > stable else n


def step_advice(solver, dt: float, fps: float) -> str:
    """What a run at steps of ``dt`` s that blew up is told of a stable step: '' where ``solver`` estimates none
    below ``dt``; the stiff element and the engines that take it where the estimate is not practical."""
    stable = solver.stable_step()
    if not (dt > stable or math.isnan(stable)):
        return ""
    if not practical(1.0 / fps, stable):
        return f"; {_impractical(solver, stable, fps)}"
    n = stable_substeps(1.0 / fps, stable)
    return (
        f"; the {solver.name} solver estimates steps up to {stable:.3g} s stable on this model, not {dt:.3g} s: "
        f"--substeps {n} at {fps:g} frames per second (or --substeps auto, or --dt {stable:.3g})"
    )


def _impractical(solver, stable: float, fps: float) -> str:
    """The advice where the stable step is not practical: what sets it, and the engines that take it."""
    limit = solver.step_limit()
    need = f"steps of {stable:.3g} s" if stable > 0.0 else "steps of no length"
    if math.isfinite(stable) and stable > 0.0:
        need += f" ({math.ceil(1.0 / fps / stable):,} a frame)"
    what, engines = "a stiff force of this model", ("mujoco", "xpbd")
    if limit is not None and limit.what:
        model = solver.model
        prim = model.body_label[limit.body] if limit.body >= 0 else model.joint_label[limit.joint]
        what, engines = f"the force of {prim}, {limit.what},", _engines(limit)
    others = [f"--solver {e}" for e in engines if e != solver.name]
    choice = " or ".join([", ".join(others[:-1]), others[-1]] if len(others) > 1 else others)
    return (
        f"the {solver.name} solver integrates {what} explicitly and would need {need}, more than a run can take: "
        f"simulate it with {choice}, which take it as it is"
    )


def _engines(limit) -> tuple:
    """The engines that take the force ``limit`` (a StableStep) names as it is."""
    if limit.kind == "drive" and "stiffness" in limit.what:
        return ("xpbd", "featherstone")  # (MuJoCo integrates an actuator's stiffness explicitly)
    return _ENGINES.get(limit.kind, ("mujoco", "xpbd"))
