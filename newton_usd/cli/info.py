"""``usdsim info STAGE``: units, time range, what the model holds and how it would be simulated."""

from __future__ import annotations

import argparse
import logging

from .common import count, fail, init_warp, listed


def main(argv) -> int:
    p = argparse.ArgumentParser(
        prog="usdsim info",
        description="Print a stage's units and time range, what its model holds, and how usdsim would simulate it.",
    )
    p.add_argument("stage", help="the USD stage")
    p.add_argument("--envs", metavar="PRIM", help="simulate the children of PRIM as one world each (as usdsim --envs)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    args = p.parse_args(argv)
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.ERROR)
    init_warp(args.verbose)
    from collections import Counter  # noqa: PLC0415

    from ..core.types import JointType  # noqa: PLC0415
    from ..errors import NewtonUsdError  # noqa: PLC0415
    from ..sim import Simulation  # noqa: PLC0415

    try:
        sim = Simulation.open(args.stage, device="cpu", env_root=args.envs, live=False)
    except NewtonUsdError as e:
        return fail(str(e), args)
    stage, frame = sim.stage, sim.imported.frame
    model = sim.model.world_view(0)  # (counts per world)
    kinds = Counter(JointType(int(t)).name.lower() for t in model.joint_type.numpy())
    end = stage.GetEndTimeCode() if stage.HasAuthoredTimeCodeRange() else sim.start_time + sim.default_frames()
    print(args.stage)
    print(f"  stage: {frame.meters_per_unit:g} m and {frame.kilograms_per_unit:g} kg per unit, {frame.up_axis} up; "
          f"{stage.GetTimeCodesPerSecond():g} time codes/s, frames {sim.start_time:g}-{end:g}")  # fmt: skip
    envs = sim.imported.environments
    if envs is not None:
        names = [p.rsplit("/", 1)[-1] for p in envs.paths]
        shown = listed(names, 4)
        print(f"  worlds: {sim.worlds}, one per environment under {envs.root} ({shown}); "
              f"{envs.paths[0]} imported once and replicated at each one's place")  # fmt: skip
    of_scene = f" of {sim.scene_path}" if sim.scenes else ""
    equalities = model.equality_count + len(getattr(model.mujoco, "tendon_equality", None) or [])
    print(f"  model{of_scene}{' (per world)' if sim.worlds > 1 else ''}: {count(model.body_count, 'body')}, "
          f"{count(model.shape_count, 'shape')}, {count(model.joint_count, 'joint')} "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items())) or 'none'}), "
          f"{count(model.articulation_count, 'articulation')}, {count(equalities, 'equality')}, "
          f"{count(len(model.keyframe_label), 'keyframe')}, "
          f"{count(len(getattr(model.mujoco, 'actuator', []) or []), 'MjcActuator')}")  # fmt: skip
    gravity = tuple(round(float(g), 4) for g in model.gravity)
    how = f"({sim.solver.backend})" if hasattr(sim.solver, "backend") else ""
    print(f"  simulation: {type(sim.solver).__name__}{how}, step {sim.dt * 1000:.4g} ms, "
          f"{sim.substeps} substeps/frame at {sim.fps:g} fps, gravity {gravity}")  # fmt: skip
    if not hasattr(sim.solver, "mj_model"):  # one of Newton's solvers
        _info_newton(sim.solver)
        _info_scenes(sim)
        sim.close()
        return 0
    opt = sim.solver.mj_model.opt
    names = {"integrator": ("mjINT_", opt.integrator), "solver": ("mjSOL_", opt.solver), "cone": ("mjCONE_", opt.cone)}
    import mujoco  # noqa: PLC0415

    enums = {"integrator": mujoco.mjtIntegrator, "solver": mujoco.mjtSolver, "cone": mujoco.mjtCone}
    parts = [f"{k} {enums[k](int(v)).name[len(p) :].lower()}" for k, (p, v) in names.items()]
    mj = sim.solver.mj_model
    print(f"  mujoco: {', '.join(parts)}, iterations {opt.iterations}; "
          f"nbody {mj.nbody}, njnt {mj.njnt}, ngeom {mj.ngeom}, nu {mj.nu}")  # fmt: skip
    _info_scenes(sim)
    sim.close()
    return 0


def _info_newton(solver) -> None:
    """What ``usdsim info`` says of one of Newton's solvers: its class, options and bridged model."""
    nm = solver.newton_model
    options = {k: v for k, v in solver.options.items() if v is not None and v is not False}
    shown = ", ".join(f"{k} {v}" for k, v in sorted(options.items())) or "Newton's defaults"
    print(f"  newton {_newton_version()}: {type(solver.newton_solver).__name__} ({shown}); "
          f"bridged model: {nm.body_count} bodies, {nm.joint_count} joints, {nm.shape_count} shapes, "
          f"{nm.world_count} world{'s' if nm.world_count != 1 else ''}")  # fmt: skip


def _newton_version() -> str:
    import newton  # noqa: PLC0415

    return newton.__version__


def _info_scenes(sim) -> None:
    """The stage's PhysicsScenes, when it has several: gravity, bodies, step of each."""
    from ..usd import physics_scenes, read_scenes  # noqa: PLC0415

    if len(physics_scenes(sim.stage)) < 2:
        return
    scenes = read_scenes(sim.stage)
    running = {s.scene_path: s for s in (sim, *sim.scenes)}
    print(f"  scenes: {len(scenes.paths)} PhysicsScenes, {len(running)} simulated, each its own model and solver "
          "(bodies of different scenes do not collide)")  # fmt: skip
    for path in scenes.paths:
        s = running.get(path)
        gravity = tuple(round(float(g), 4) for g in (s.model.gravity if s else scenes.gravity[path]))
        n = s.model.body_count // s.worlds if s else len(scenes.bodies(path))
        how = f"step {s.dt * 1000:.4g} ms, {s.substeps} substeps/frame" if s else "not simulated"
        default = " (default)" if path == scenes.default else ""
        print(f"    {path}{default}: gravity {gravity}, {n} bod{'y' if n == 1 else 'ies'}, {how}")
