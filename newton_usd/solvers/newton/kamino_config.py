"""Newton's ``SolverKamino.Config`` from our solver's flat keyword options: a scene's NewtonKaminoSceneAPI settings
(``usd/properties.py``'s ``SCENE_KAMINO``, mapped by ``SolverKamino.OPTIONS``) and what a caller passes in
``solver_options``.

Kamino's config nests a dataclass per part of the solver (``constraints``, ``dynamics``, ``padmm``, ...). A keyword
``<part>_<field>`` sets that field of that part (``padmm_primal_tolerance``, ``constraints_alpha``,
``dynamics_preconditioning``); ``max_solver_iterations`` (``newton:maxSolverIterations``) sets the iterations of each
dynamics solver, as Newton's own USD import does (PADMM's ``max_iterations``, DVI's ``max_alternating_iterations``,
LOX's ``max_iterations``); every other keyword is a field of the config itself (``rotation_correction``,
``integrator``, ``dynamics_solver``, or a whole part: ``padmm=PADMMSolverConfig(...)``, whose fields the flat keywords
then change).
"""

from __future__ import annotations

import dataclasses
import functools

import newton

ITERATIONS = "max_solver_iterations"
"""The keyword of ``newton:maxSolverIterations``."""

_ITERATION_FIELDS = {"padmm": "max_iterations", "dvi": "max_alternating_iterations", "lox": "max_iterations"}
"""The part and field each dynamics solver counts its iterations in."""


@functools.cache
def _parts() -> dict:
    """Config part name -> its dataclass (the fields of ``SolverKamino.Config`` that are configs themselves)."""
    from newton._src.solvers.kamino import config  # noqa: PLC0415  (not re-exported by newton.solvers)

    return {
        "collision_detector": config.CollisionDetectorConfig,
        "constraints": config.ConstraintStabilizationConfig,
        "dynamics": config.ConstrainedDynamicsConfig,
        "padmm": config.PADMMSolverConfig,
        "dvi": config.DVISolverConfig,
        "lox": config.LOXSolverConfig,
        "fk": config.ForwardKinematicsSolverConfig,
        "materials": config.MaterialManagerConfig,
    }


def part_of(keyword: str) -> str | None:
    """The config part a flat ``keyword`` sets a field of (``"padmm"`` for ``padmm_dual_tolerance``), None for a
    field of the config itself. ``max_solver_iterations``: ``"padmm"`` (and DVI's and LOX's)."""
    if keyword == ITERATIONS:
        return "padmm"
    for part, cls in _parts().items():
        if keyword.startswith(part + "_") and keyword[len(part) + 1 :] in {f.name for f in dataclasses.fields(cls)}:
            return part
    return None


def scene_settings_kept(settings: dict, options: dict, asked: dict) -> dict:
    """The scene's resolved ``settings`` (name -> value) less those of a part of the config that ``asked`` (the
    caller's keywords) gives whole (``padmm=PADMMSolverConfig(...)``): the caller's part wins. ``options``: scene
    setting name -> flat keyword (``SolverKamino.OPTIONS``)."""
    given = {part for part in _parts() if asked.get(part) is not None}
    if not given:
        return settings
    solvers = set(_ITERATION_FIELDS)
    dropped = {
        name
        for name, keyword in options.items()
        if (keyword == ITERATIONS and given & solvers) or (keyword != ITERATIONS and part_of(keyword) in given)
    }
    return {name: value for name, value in settings.items() if name not in dropped}


def kamino_config(options: dict):
    """``newton.solvers.SolverKamino.Config`` made from ``options`` (see the module docstring); raises Newton's
    ``ValueError`` or ``TypeError`` for a value it refuses."""
    top, fields = {}, {}
    for keyword, value in options.items():
        part = part_of(keyword)
        if keyword == ITERATIONS:
            for name, field in _ITERATION_FIELDS.items():
                fields.setdefault(name, {})[field] = int(value)
        elif part is None:
            top[keyword] = value
        else:
            fields.setdefault(part, {})[keyword[len(part) + 1 :]] = value
    if top.get("dynamics_solver") == "dvi" and "dynamics" not in top:
        fields.get("dynamics", {}).pop("preconditioning", None)  # (DVI runs unpreconditioned, as in Newton's import)
    config = newton.solvers.SolverKamino.Config(**top)
    parts = _parts()
    for part, values in fields.items():
        current = getattr(config, part)
        if current is None:
            current = parts[part]()
        setattr(config, part, dataclasses.replace(current, **values))  # (each part validates itself)
    config.validate()
    return config
