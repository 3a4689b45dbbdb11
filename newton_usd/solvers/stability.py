"""A run's step against the step its solver estimates stable (:meth:`SolverBase.stable_step`): the substeps per
frame ``--substeps auto`` takes, and the advice a blown-up run's error gives."""

from __future__ import annotations

import math


def auto_substeps(solver, fps: float, substeps: int, step) -> tuple[int, float | None]:
    """``--substeps auto``: (substeps per frame, exact step or None) of a run at ``fps`` whose step would be
    ``step`` (s; None: the frame over ``substeps``): unchanged where that step is within ``solver``'s stable
    step, else the fewest substeps of the frame that are."""
    frame_dt = 1.0 / fps
    stable = solver.stable_step()
    if (step or frame_dt / substeps) <= stable:
        return substeps, step
    return stable_substeps(frame_dt, stable), None


def stable_substeps(frame_dt: float, stable: float) -> int:
    """The fewest steps per frame of ``frame_dt`` s that are each at most ``stable`` s."""
    n = math.ceil(frame_dt / stable)
    return n + 1 if frame_dt / n > stable else n


def step_advice(solver, dt: float, fps: float) -> str:
    """What a run at steps of ``dt`` s that blew up is told of a stable step: '' where ``solver`` estimates none
    below ``dt``."""
    stable = solver.stable_step()
    if not dt > stable:
        return ""
    n = stable_substeps(1.0 / fps, stable)
    return (
        f"; the {solver.name} solver estimates steps up to {stable:.3g} s stable on this model, not {dt:.3g} s: "
        f"--substeps {n} at {fps:g} frames per second (or --substeps auto, or --dt {stable:.3g})"
    )
