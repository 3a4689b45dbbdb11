"""Newton 1.8's own stepping loop, as its examples write it, for the tests that hold our engines to it: each step
clears the forces, runs the collision pipeline and the solver, and swaps the states."""

from __future__ import annotations

import newton


def vbd_model(builder, iterations: int):
    """``builder`` colored (bending edges in the graph, as SolverVBD needs) and finalized on the CPU, and Newton's
    SolverVBD of ``iterations`` on it: ``(model, solver)``."""
    builder.color(include_bending=True)
    model = builder.finalize(device="cpu")
    return model, newton.solvers.SolverVBD(model, iterations=iterations)


def newton_loop(model, solver, steps: int, dt: float, fk: bool = False, pipeline=None):
    """``steps`` of Newton's own loop from ``model``'s initial state (``fk``: its bodies placed from its joints first,
    for solvers that step body states); returns the last state."""
    pipeline = pipeline or newton.CollisionPipeline(model)
    contacts = pipeline.contacts()
    s0, s1, control = model.state(), model.state(), model.control()
    if fk:
        newton.eval_fk(model, model.joint_q, model.joint_qd, s0)
    for _ in range(steps):
        s0.clear_forces()
        pipeline.collide(s0, contacts)
        solver.step(s0, s1, control, contacts, dt)
        s0, s1 = s1, s0
    return s0
