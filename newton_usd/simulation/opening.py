"""Opening a run: the stage's PhysicsScenes, each imported into a model, its solver made, its clock resolved and its
options frozen; one :class:`~newton_usd.sim.Simulation` per scene, the first holding the others. A live edit that
changes what is simulated imports the stage again here (:func:`import_stage`)."""

from __future__ import annotations

from ..core.builder import ModelBuilder
from ..diagnostics import Diagnostics
from ..errors import NewtonUsdError
from ..solvers import COUPLED_WITH_VBD, ENGINES, SOLVERS
from ..solvers.kernel_loading import KernelLoading, tape_safe_workers
from ..solvers.stability import auto_substeps
from ..solvers.velocity_limits import report_unkept_speed_bounds
from ..usd import add_usd, scenes_to_import
from ..usd.honored import report_unhonored
from ..usd.overrides import apply_overrides
from ..usd.physx_unread import say_unread_physx
from ..usd.resolver import DIALECTS
from .clock import MAX_SUBSTEPS, frame_rate, physics_steps, scene_clocks
from .options import RunOptions


def import_stage(stage, order=None, worlds=1, env_root=None, scene=None):
    """A new builder holding ``stage``'s model (replicated into ``worlds`` worlds, or one world per
    environment under ``env_root``; ``scene``: of that PhysicsScene only), and the import record."""
    builder = ModelBuilder()
    kw = {"order": tuple(order)} if order else {}
    imported = add_usd(builder, stage, env_root=env_root, scene=scene, **kw)
    if worlds > 1:
        builder.replicate(worlds)
    return builder, imported


def chosen_engine(imported, asked: str | None = None) -> str:
    """The engine of an imported scene: ``asked``, else the scene's (``newton:usd:solver``, its engine's scene API),
    else vbd where it holds deformable bodies, else mujoco. Deformable bodies with another engine asked for the rigid
    bodies (or a scene applying ``MjcSceneAPI``): that engine coupled with vbd (``mujoco_vbd``, ``xpbd_vbd``:
    :data:`~newton_usd.solvers.COUPLED_WITH_VBD`).

    Raises:
        NewtonUsdError: an unknown engine, or deformable bodies under an engine that cannot take them (naming them).
    """
    soft = {**imported.deformables.simulated, **imported.deformables.cables}
    chosen = imported.scene.get("solver")
    scene = None if chosen is None or (soft and chosen.kind == "default") else chosen.value
    mjc_scene = imported.scene_path in (getattr(imported, "schemas", {}) or {}).get("MjcSceneAPI", ())
    if soft and scene is None and mjc_scene:
        scene = "mujoco"  # (a MuJoCo scene: its rigid bodies under MuJoCo, coupled with vbd)
    grains = list(getattr(getattr(imported, "grains", None), "groups", None) or ())
    if soft and grains:  # (together under Newton's VBD + MPM coupling, whichever of the two is asked)
        if asked in (None, "vbd", "implicit_mpm") and not imported.deformables.cables:
            return "vbd_mpm"
        raise NewtonUsdError(f"{imported.file}: {', '.join(grains + list(soft))}: grains and deformable bodies in one "
                             f"PhysicsScene run together under vbd and implicit_mpm coupled (no --solver), not "
                             f"{asked or 'with cables'}")  # fmt: skip
    solver = asked or scene or ("vbd" if soft else "mujoco")
    if solver not in SOLVERS:
        raise NewtonUsdError(f"unknown solver {solver!r}; valid: {', '.join(SOLVERS)}")
    if imported.deformables.cables and solver != "vbd":  # (Newton's rod joints: VBD's alone)
        raise NewtonUsdError(f"{imported.file}: {', '.join(imported.deformables.cables)}: cables are simulated by the "
                             f"vbd solver alone (Newton's rod joints), not by {solver}: run it with --solver vbd (or "
                             "no --solver)")  # fmt: skip
    if soft and solver != "vbd":
        if solver in COUPLED_WITH_VBD:
            return COUPLED_WITH_VBD[solver].name
        raise NewtonUsdError(f"{imported.file}: {', '.join(soft)}: deformable bodies (cloth, soft volumes) are "
                             f"simulated by the vbd solver, not by {solver} (vbd couples with mujoco or xpbd for the "
                             "rigid bodies): run it with --solver vbd, mujoco or xpbd (or no --solver)")  # fmt: skip
    return solver


def say_uncoupled_deformables(imported, model, diagnostics) -> None:
    """The dynamic rigid bodies of a scene beside deformables (cloth, soft volumes, cables) of another PhysicsScene:
    not coupled with them (said once, naming them): each scene runs its own engine, and the deformables pass through
    these bodies. Owned by one scene (``physics:simulationOwner``) that asks for mujoco or xpbd, they are."""
    elsewhere = getattr(imported.deformables, "elsewhere", {})
    if not elsewhere or not model.body_count:
        return
    scenes = ", ".join(sorted(set(elsewhere.values())))
    kind = (f"these rigid bodies are not coupled with the deformable bodies of {scenes} (another PhysicsScene): each "
            "scene runs its own engine and the deformables pass through them; owned by one scene that asks for mujoco "
            "or xpbd, they are coupled")  # fmt: skip
    for label, kinematic in zip(model.body_label, model.body_kinematic.numpy(), strict=True):
        if not kinematic:
            diagnostics.add(kind, label)


def reimport(stage, options):
    """:func:`import_stage` of the scene a run's ``options`` simulate (a rebuild, or a reset after one)."""
    return import_stage(stage, options.order, options.replicas, options.env_root, options.scene)


def open_scenes(cls, stage, file, output_layer, asked: dict, run: dict, overrides=()):
    """The :class:`~newton_usd.sim.Simulation` (``cls``) of ``stage``'s first simulated PhysicsScene, holding those
    of the others in its ``scenes``: each imported, its solver made and its clock resolved.

    Args:
        asked: what the caller asked of every scene's engine and clock: ``solver``, ``solver_options``, ``backend``,
            ``device``, ``fps``, ``substeps``, ``dt``, ``mujoco_memory`` (None: the scene's, else the default).
        run: the :class:`~newton_usd.simulation.options.RunOptions` fields given (``record``, ``joint_states``,
            ``live``, ``order``, ``replicas``, ``env_root``, ``xform_ops``, ``write_worlds``, ``world_spacing``,
            ``max_distance``, ``max_speed``).
        overrides: ``"/Prim.attribute=VALUE"`` strings authored into ``output_layer`` before importing.
    """
    applied = apply_overrides(stage, overrides, output_layer, file) if overrides else []
    order = run.get("order")
    first, *others = scenes_to_import(stage, tuple(order) if order else DIALECTS)
    several = {"write_worlds": "first"} if others else {}  # (copies of every scene's bodies: made below, once)
    sim = open_scene(cls, stage, file, output_layer, first, asked, {**run, **several}, overrides=applied)
    fps = sim.fps  # (every scene on the first one's clock)
    for other in others:  # same stage, output layer, frame rate and worlds; the scene's own step and settings
        one = {**run, **several, "live": False}
        sim.add_scene(open_scene(cls, stage, file, output_layer, other, {**asked, "fps": fps}, one))
    if others and run.get("write_worlds") == "all" and sim.worlds > 1 and run.get("env_root") is None:
        sim.copy_environment(run.get("world_spacing"))  # one copy per world, of every scene's bodies
    if others and asked.get("fps") is None:
        diag = Diagnostics()
        scene_clocks([s.imported for s in sim.scenes], fps, diag)
        diag.emit(file)
    return sim


def open_scene(cls, stage, file, output_layer, scene, asked: dict, run: dict, overrides=()):
    """The Simulation of one PhysicsScene (``scene``: its path, None where the stage has none): see
    :func:`open_scenes`."""
    builder, imported = import_stage(stage, run.get("order"), run.get("replicas", 1), run.get("env_root"), scene)
    settings = {k: r.value for k, r in imported.scene.items()}
    solver = settings["solver"] = chosen_engine(imported, asked.get("solver"))
    soft = imported.deformables.simulated
    model = builder.finalize(asked.get("device"))
    if len(model.particle_groups) > len(soft) and solver not in ("implicit_mpm", "vbd_mpm"):  # (grains: implicit MPM)
        raise NewtonUsdError(
            f"{file}: {', '.join(model.particle_groups)}: grains (NewtonPointsDeformableSimAPI) are simulated by the "
            f"implicit_mpm solver, not by {solver}: run it with --solver implicit_mpm (or no --solver)"
        )
    backend = asked.get("backend")
    options = dict(asked.get("solver_options") or {})
    # (the solver's Warp modules, compiled as it is made; none beside a differentiable run: see tape_safe_workers)
    kernels = KernelLoading(model.device, tape_safe_workers(cls.kernel_workers, options))
    kernels.add(ENGINES[solver].setup_kernel_modules(model.device, {**options, "backend": backend}))
    memory = asked.get("mujoco_memory")
    if memory is not None:
        if solver != "mujoco":
            raise NewtonUsdError(f"mujoco_memory is C MuJoCo's arena: the {solver} solver has none")
        options["memory"] = int(memory)
    solver_obj = ENGINES[solver].from_scene(model, settings, backend=backend, **options)
    unhonored = Diagnostics()  # (the schemas the stage applies that this engine does not honor: said once per run)
    report_unhonored(imported, solver, unhonored)
    report_unkept_speed_bounds(model, solver_obj, unhonored)
    say_uncoupled_deformables(imported, model, unhonored)
    unhonored.emit(file)
    say_unread_physx(imported, solver, file)
    fps = frame_rate(stage, imported, asked.get("fps"))
    if fps <= 0:
        raise NewtonUsdError(f"{file}: frames per second must be positive, got {fps}")
    substeps, dt = asked.get("substeps"), asked.get("dt")
    auto, substeps = substeps == "auto", None if substeps == "auto" else substeps
    substeps, step = physics_steps(fps, dt or settings.get("timestep"), substeps or settings.get("substeps"))
    substeps, step = auto_substeps(solver_obj, fps, substeps, step) if auto else (substeps, step)
    if substeps > MAX_SUBSTEPS:  # e.g. a time step of 1e-30 s: one frame would never end
        source = imported.scene.get("timestep")
        where = f"{source.prim}.{source.attribute}: " if source is not None and source.attribute and not dt else ""
        raise NewtonUsdError(f"{file}: {where}{substeps:.3g} physics steps per frame (more than {MAX_SUBSTEPS:,}): "
                             "the time step is too small for the frame rate")  # fmt: skip
    options = RunOptions(fps=fps, substeps=substeps, dt=step or 0.0, scene=scene, **run)
    return cls(
        stage, file, imported, model, solver_obj, options,
        output_layer=output_layer, overrides=overrides, kernel_loading=kernels,
    )  # fmt: skip
