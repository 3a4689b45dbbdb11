"""The Warp modules Newton's solvers launch kernels of (Newton 1.8), named for the parallel load of the first frame's
kernels (:mod:`~newton_usd.solvers.kernel_loading`); ``tests/test_kernel_loading.py`` checks that the first frame
loads no other that could be named before it."""

from __future__ import annotations

from ..kernel_loading import modules_named, modules_of_kernels

PIPELINE = (
    "newton._src.geometry.bvh",
    "newton_usd.solvers.newton.exchange",
    "newton._src.sim.collide",
    "newton._src.geometry.broad_phase_nxn",
    "newton._src.geometry.narrow_phase",
)
"""The Python modules every Newton solver's step launches kernels of (the collision pipeline, our exchange), those
that making the solver launches first (a pool loads them in this order)."""

FINALIZE_KERNELS = (
    "newton._src.geometry.inertia",
    "validate_and_correct_inertia_kernel",
    "compute_body_inverses_kernel",
)
"""The kernels Newton's ``ModelBuilder.finalize`` launches (the bridge's): their module, their names."""

KAMINO = tuple(
    f"newton._src.solvers.kamino._src.{name}"
    for name in (
        "core.bodies", "core.conversions", "core.time", "dynamics.delassus", "dynamics.dual", "dynamics.wrenches",
        "geometry.contacts", "geometry.keying", "integrators.euler", "kinematics.constraints", "kinematics.jacobians",
        "solvers.common", "solvers.padmm.kernels", "solvers.warmstart",
    )
)  # fmt: skip

SOLVERS = {
    "xpbd": ("newton._src.solvers.solver", "newton._src.solvers.xpbd.kernels"),
    "featherstone": (
        "newton._src.sim.articulation",
        "newton._src.solvers.featherstone.kernels",
        "newton._src.solvers.semi_implicit.kernels_contact",
        "newton_usd.solvers.newton.implicit_joint_forces",
    ),
    "semi_implicit": (
        "newton._src.solvers.solver",
        "newton._src.solvers.semi_implicit.kernels_body",
        "newton._src.solvers.semi_implicit.kernels_contact",
    ),
    "kamino": KAMINO,  # (and the kernels Kamino generates inside its solver, a module each: met by the first step)
}
"""Each solver's own Python modules whose kernels its step launches."""


def step_modules(solver: str) -> list:
    """The Warp modules solver ``solver``'s steps launch kernels of (the collision pipeline's, the solver's, ours)."""
    return modules_named(PIPELINE + SOLVERS.get(solver, ()))


def setup_modules(solver: str) -> list:
    """:func:`step_modules`, after those of Newton's model finalize (the first that making the solver launches)."""
    return modules_of_kernels(*FINALIZE_KERNELS) + step_modules(solver)
