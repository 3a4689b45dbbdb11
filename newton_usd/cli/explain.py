"""``usdsim explain`` (every resolved value and where it came from) and ``usdsim check`` (what is ignored,
approximated or unused), without simulating."""

from __future__ import annotations

import argparse
import logging

from .common import count, fail, init_warp


def _inspect_parser(command: str) -> argparse.ArgumentParser:
    if command == "explain":
        p = argparse.ArgumentParser(
            prog="usdsim explain",
            description="List every property newton_usd resolves from the stage, its value in SI units and the "
            "attribute it came from (or the fallback of an applied schema, or the default), and what UsdPhysics "
            "authors as the model simulates it (gravity; body mass, COM and inertia; joint type, axis, limits and "
            "drive; collider friction and restitution) with the attribute or rule that gave it.",
        )
        p.add_argument("stage", help="the USD stage")
        p.add_argument("prims", nargs="*", help="only these prims and their descendants")
    else:
        p = argparse.ArgumentParser(
            prog="usdsim check",
            description="Import the stage and build the solver's model without simulating; list what is ignored "
            "or approximated (applied newton/mjc schemas the solver does not honor among them), the colliders that "
            "start more than 1 cm in each other, and the authored newton/mjc/physx attributes the runtime does not "
            "use.",
        )
        p.add_argument("stage", help="the USD stage")
        p.add_argument(
            "--solver",
            help="build this solver's model (mujoco, xpbd, featherstone, semi_implicit, kamino; default: the "
            "stage's) and list what it ignores or approximates",
        )
    p.add_argument("--order", help="resolver order, comma separated (default: newton,mjc,physx,physics)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    return p


def _inspect(command: str, args) -> int:
    """``usdsim explain`` and ``usdsim check``: every PhysicsScene that simulates bodies, each imported (and,
    for check, built into a MuJoCo model) on its own, as a run would."""
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.ERROR)
    init_warp(args.verbose)
    from .. import inspect  # noqa: PLC0415
    from ..core import ModelBuilder  # noqa: PLC0415
    from ..diagnostics import Diagnostics  # noqa: PLC0415
    from ..errors import NewtonUsdError  # noqa: PLC0415
    from ..sim import frame_rate, physics_steps, scene_clocks  # noqa: PLC0415
    from ..usd import add_usd, open_stage, scenes_to_import  # noqa: PLC0415

    order = {"order": tuple(x.strip() for x in args.order.split(","))} if args.order else {}
    try:
        stage, _ = open_stage(args.stage)
        builders, imports = [], []
        for scene in scenes_to_import(stage, **order):
            builders.append(ModelBuilder())
            imports.append(add_usd(builders[-1], stage, scene=scene, **order))
        if command == "explain":
            models = [builder.finalize("cpu") for builder in builders]
            rows = inspect.explain_rows(imports, args.prims, models)
            print(inspect.table(rows, ("prim", "property", "value", "unit", "source")))
            return 0
        from ..simulation.opening import chosen_engine  # noqa: PLC0415
        from ..solvers import ENGINES  # noqa: PLC0415
        from ..usd.honored import report_unhonored  # noqa: PLC0415

        solvers, engines = [], []
        for builder, imported in zip(builders, imports, strict=True):
            settings = {k: r.value for k, r in imported.scene.items()}
            name = chosen_engine(imported, args.solver)
            asked = {"backend": "cpu"} if name == "mujoco" else {}
            solvers.append(ENGINES[name].from_scene(builder.finalize("cpu"), settings, **asked))
            engines.append(name)
    except (NewtonUsdError, ValueError) as e:
        return fail(str(e), args)
    kinds = Diagnostics()
    for diag in [i.diagnostics for i in imports] + [s.diagnostics for s in solvers]:
        for kind, paths in diag.kinds.items():
            for path in paths:
                kinds.add(kind, path)
    for imported, name in zip(imports, engines, strict=True):  # the applied schemas its engine does not honor
        report_unhonored(imported, name, kinds)
    fps = frame_rate(stage, imports[0])
    scene_clocks(imports[1:], fps, kinds)
    for imported, solver in zip(imports, solvers, strict=True):  # what the scene's own step risks
        settings = {k: r.value for k, r in imported.scene.items()}
        substeps, step = physics_steps(fps, settings.get("timestep"), settings.get("substeps"))
        solver.step_diagnostics(step or 1.0 / fps / substeps, kinds)
    if len(solvers) == 1:
        print(f"{args.stage}: {_model_counts(solvers[0])}")
    else:
        print(f"{args.stage}: {len(solvers)} PhysicsScenes simulate bodies, each its own model and solver:")
        for imported, solver in zip(imports, solvers, strict=True):
            print(f"  {imported.scene_path}: {_model_counts(solver)}")
    kinds = list(kinds.kinds.items())
    print(f"\nignored or approximated ({len(kinds)} kinds):" if kinds else "\nnothing ignored or approximated")
    for kind, paths in kinds:
        more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
        print(f"  - {kind}: {', '.join(paths[:5])}{more}")
    for solver in solvers:
        _print_start_overlaps(inspect, solver, NewtonUsdError)
    unused = inspect.unused_attributes(imports)
    print(f"\nauthored but not used ({len(unused)} attributes):" if unused else "\nevery authored value is used")
    for name, paths in unused.items():
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        print(f"  - {name} ({len(paths)} prim{'s' if len(paths) > 1 else ''}: {', '.join(paths[:3])}{more})")
    return 0


def _print_start_overlaps(inspect, solver, errors) -> None:
    """``usdsim check``'s colliders that start in each other (:func:`~newton_usd.inspect.start_overlaps`) in one
    scene's model, or why they could not be looked for (C MuJoCo cannot build the model)."""
    try:
        overlaps = inspect.start_overlaps(solver.model, solver)
    except (errors, ValueError) as e:
        print(f"\ncolliders in each other at the start: not looked for (C MuJoCo cannot build the model: {e})")
        return
    if overlaps:
        print(
            f"\ncolliders that start more than {inspect.START_OVERLAP * 100:g} cm in each other "
            f"({count(len(overlaps), 'pair')}, deepest first; contacts push them apart at once):"
        )
    for a, b, depth in overlaps[:5]:
        print(f"  - {a} and {b}: {depth:.3g} m")
    if len(overlaps) > 5:
        print(f"  - and {len(overlaps) - 5} more")


def _model_counts(solver) -> str:
    """What ``usdsim check`` says of one scene's model and its MuJoCo or Newton model."""
    model = solver.model
    if not hasattr(solver, "mj_model"):
        nm = solver.newton_model
        particles = ""
        if model.particle_count:  # (grains, cloth, soft volumes)
            elements = f"{model.tri_count} triangles, {model.tet_count} tetrahedra"
            particles = f", {count(model.particle_count, 'particle')} of {count(len(model.particle_groups), 'prim')}"
            particles += f" ({elements})"
        return (
            f"{count(model.body_count, 'body')}, {count(model.shape_count, 'shape')}, "
            f"{count(model.joint_count, 'joint')}{particles}; {solver.name} solver "
            f"({type(solver.newton_solver).__name__}); "
            f"Newton model: {nm.body_count} bodies, {nm.joint_count} joints, {nm.shape_count} shapes"
        )
    mj = solver.mj_model
    return (
        f"{count(model.body_count, 'body')}, {count(model.shape_count, 'shape')}, "
        f"{count(model.joint_count, 'joint')}; "
        f"MuJoCo model: nbody {mj.nbody}, njnt {mj.njnt}, ngeom {mj.ngeom}, nu {mj.nu}"
    )


def explain(argv) -> int:
    """``usdsim explain STAGE [PRIM ...]``."""
    return _inspect("explain", _inspect_parser("explain").parse_args(argv))


def check(argv) -> int:
    """``usdsim check STAGE [--solver NAME]``."""
    return _inspect("check", _inspect_parser("check").parse_args(argv))
