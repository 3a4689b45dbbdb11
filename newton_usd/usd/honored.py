"""Which engines honor each ``newton:*`` and ``mjc:*`` schema that some engine does not: the one table a run and
``usdsim check`` read to say, once per schema, which prims apply one that the chosen engine does not honor, and which
engine would take it.

A schema being defined (``schemas/``) does not make the runtime honor it. :data:`HONORED` lists the schemas that an
engine leaves unused as a whole; what an engine drops value by value (a joint's friction under XPBD, an MjcActuator
under Newton's solvers) is said where the solver builds its model (``solvers/newton/support.py``), and authored
values nothing reads are listed by ``usdsim check``. A schema missing from the table is honored by every engine.
When an engine starts honoring a schema, add it to that schema's ``engines`` here: nothing else reads a list of them.

The scan of the stage (:func:`~newton_usd.usd.scan.scan_stage`) records the prims of every schema in the table
(:data:`TRACKED`) on the import (``UsdImport.schemas``); :func:`report_unhonored` turns them into diagnostics for one
engine and :func:`schema_rows` into ``usdsim explain`` rows.
"""

from __future__ import annotations

from dataclasses import dataclass

ENGINES = ("mujoco", "xpbd", "featherstone", "semi_implicit", "kamino", "vbd")
"""The engines (``newton:usd:solver``, ``usdsim --solver``) the table speaks of."""

COUPLED_ENGINES = ("mujoco_vbd", "xpbd_vbd", "vbd_mpm")
"""The coupled engines a scene with deformables runs where it asks for mujoco or xpbd, and where it owns grains too
(vbd_mpm)
(``solvers/newton/coupled.py``): they honor the VBD scene's settings and the actuators, not the rigid engine's scene
settings (its own keywords come through ``solver_options`` ``rigid_options``); messages name the engines above only."""

EVERY = ENGINES + COUPLED_ENGINES
"""Every engine: of a schema all honor."""


@dataclass(frozen=True)
class Honored:
    """How the engines treat one schema."""

    engines: tuple[str, ...]
    """The engines that honor it today (empty: none yet)."""
    effect: str
    """What an engine that does not honor it does instead: said after the schema's name."""
    taker: str = ""
    """Where no engine honors it yet: who would take it."""
    within: str | None = None
    """A schema applied only beside this one (an actuator's control law, beside NewtonActuator): said only where the
    engine honors ``within``, whose own report covers it otherwise."""
    scene: bool = False
    """Applied to PhysicsScenes: said only for the scene a run simulates."""


_ACTUATORS = "Newton's actuator library would take it"
_NOT_HERE = "would take it, not an engine of newton_usd yet"

HONORED: dict[str, Honored] = {
    # ---- scene settings of one engine
    "NewtonXpbdSceneAPI": Honored(("xpbd",), "its XPBD settings are not used", scene=True),
    "NewtonKaminoSceneAPI": Honored(
        ("kamino",),
        "its Kamino settings (PADMM tolerances, warm start, constraint stabilization, joint correction) are not used",
        scene=True,
    ),
    "NewtonVbdSceneAPI": Honored(("vbd", *COUPLED_ENGINES), "its VBD settings are not used", scene=True),
    "NewtonMPMSceneAPI": Honored(("implicit_mpm", "vbd_mpm"), "its MPM settings are not used", scene=True),
    "MjcSceneAPI": Honored(
        ("mujoco",), "its MuJoCo options and flags are not used beyond the time step and the gravity flag", scene=True
    ),
    # ---- colliders, deformables and their materials
    "NewtonSDFCollisionAPI": Honored(
        ("xpbd", "featherstone", "semi_implicit", "kamino", "vbd"),
        "the shape collides as its ordinary mesh collider; its SDF and hydroelastic settings are not used",
    ),
    "NewtonPointsDeformableSimAPI": Honored(("implicit_mpm", "vbd_mpm"), "the points are not simulated"),
    "NewtonMPMMaterialAPI": Honored(("implicit_mpm", "vbd_mpm"), "its MPM material is not used"),
    "NewtonCurvesDeformableMaterialAPI": Honored(("vbd",), "its curve dampings are not used"),
    # ---- actuators: the prim, then its parts (said on their own only where the engine drives actuators). Every
    # engine steps PD and PID laws, clampings and delays (solvers/actuators.py), both MuJoCo backends included.
    "NewtonActuator": Honored(EVERY, "its joint is not driven by it", _ACTUATORS),
    "NewtonPDControlAPI": Honored(EVERY, "its PD law is not applied", _ACTUATORS, "NewtonActuator"),
    "NewtonPIDControlAPI": Honored(EVERY, "its PID law is not applied", _ACTUATORS, "NewtonActuator"),
    "NewtonNeuralControlAPI": Honored(EVERY, "its network's effort is not applied", _ACTUATORS, "NewtonActuator"),
    "NewtonMaxEffortClampingAPI": Honored(EVERY, "its effort clamp is not applied", _ACTUATORS, "NewtonActuator"),
    "NewtonDCMotorClampingAPI": Honored(EVERY, "its DC motor clamp is not applied", _ACTUATORS, "NewtonActuator"),
    "NewtonPositionBasedClampingAPI": Honored(
        EVERY, "its position-based clamp is not applied", _ACTUATORS, "NewtonActuator"
    ),
    "NewtonActuatorDelayAPI": Honored(EVERY, "its delay is not applied", _ACTUATORS, "NewtonActuator"),
}
"""Schema name (an applied API schema or a prim type) -> how the engines treat it; every schema not listed is honored
by every engine (those listed with every engine are kept for the record, and for a new engine)."""

TRACKED = frozenset(name for name, entry in HONORED.items() if set(ENGINES) - set(entry.engines))
"""The schemas some engine does not honor: the scan records their prims."""


def honors(schema: str, engine: str) -> bool:
    """Whether ``engine`` honors ``schema`` (a schema not in :data:`HONORED`: yes)."""
    entry = HONORED.get(schema)
    return entry is None or engine in entry.engines


def message(schema: str, engine: str) -> str:
    """The warning's text (its kind) for prims applying ``schema`` under ``engine``, which does not honor it."""
    entry = HONORED[schema]
    text = f"{schema} is not honored by the {engine} solver: {entry.effect}"
    engines = [e for e in entry.engines if e not in COUPLED_ENGINES]
    if engines:
        return f"{text} (honored by the {', '.join(engines)} solver{'s' if len(engines) > 1 else ''})"
    return f"{text} (no engine honors it yet; {entry.taker})"


def unhonored(schemas: dict, engine: str, scene_path: str | None = None, scenes=None) -> list[tuple[str, list[str]]]:
    """``(message, prim paths)`` for each schema of ``schemas`` (schema name -> prim paths, as
    ``UsdImport.schemas``) that ``engine`` does not honor, in the table's order. ``scene_path``: the PhysicsScene
    simulated; ``scenes``: the stage's :class:`~newton_usd.usd.scenes.Scenes` where it has several (prims of the
    other scenes' bodies, and the other scenes' settings, are not said)."""
    out = []
    for schema, entry in HONORED.items():
        paths = schemas.get(schema)
        if not paths or engine in entry.engines:
            continue
        if entry.within is not None and not honors(entry.within, engine):
            continue  # (said as part of the prim it is applied to)
        paths = [p for p in paths if _in_scene(p, entry, scene_path, scenes)]
        if paths:
            out.append((message(schema, engine), paths))
    return out


def _in_scene(path: str, entry: Honored, scene_path: str | None, scenes) -> bool:
    """Whether the prim at ``path`` belongs to the scene simulated: a scene setting on that scene; another prim on
    a body of that scene, or on none where it is the default scene."""
    if scene_path is None:
        return True
    if entry.scene:
        return path == scene_path
    return scenes is None or (scenes.scene_of(path) or scenes.default) == scene_path


def report_unhonored(imported, engine: str, diagnostics) -> None:
    """Add to ``diagnostics`` (a :class:`~newton_usd.diagnostics.Diagnostics`) one kind per schema that ``imported``
    (a :class:`~newton_usd.usd.importer.UsdImport`) applies and ``engine`` does not honor, with its prims."""
    for kind, paths in unhonored(getattr(imported, "schemas", {}) or {}, engine, imported.scene_path, imported.scenes):
        for path in paths:
            diagnostics.add(kind, path)


def schema_rows(imported) -> list[tuple[str, str, str, str, str]]:
    """``usdsim explain`` rows ``(prim, "schema", name, "", which engines honor it)`` for the prims of ``imported``
    that apply (or are) a schema of :data:`HONORED`."""
    rows = []
    for schema, paths in (getattr(imported, "schemas", {}) or {}).items():
        entry = HONORED.get(schema)
        if entry is None or schema not in TRACKED:
            continue
        if entry.engines:
            others = [e for e in ENGINES if e not in entry.engines]
            named = ", ".join(e for e in entry.engines if e not in COUPLED_ENGINES)
            source = f"honored by {named}; not by {', '.join(others)}: {entry.effect}"
        else:
            source = f"defined, not honored by any engine yet: {entry.effect}; {entry.taker}"
        for path in paths:
            if _in_scene(path, entry, imported.scene_path, imported.scenes):
                rows.append((path, "schema", schema, "", source))
    return rows
