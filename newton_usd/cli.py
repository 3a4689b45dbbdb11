"""``usdsim``: simulate a USD stage headless and write the motion to an output stage::

    usdsim STAGE [-o OUT | --flatten | --in-place] [-n FRAMES | --duration S] [--fps F] [--dt S | --substeps N]
                 [--device cpu|cuda] [--solver mujoco|xpbd|featherstone|semi_implicit|kamino]
                 [--backend auto|cpu|warp] [--worlds N | --envs PRIM]
                 [--write-worlds first|all [--world-spacing D]] [--record-every N] [--xform-ops trs|matrix]
                 [--clip-frames K] [--set PRIM.ATTR=VALUE ...] [--benchmark] [--format human|json] [-q]
                 [--max-distance M] [--max-speed V] [--mujoco-memory MIB]
    usdsim explain STAGE [PRIM ...]     each resolved and UsdPhysics value (SI) and where it came from
    usdsim check STAGE [--solver NAME]  what is ignored or approximated, and authored values not used
    usdsim convert MODEL.xml [-o OUT]   an MJCF model to a USD asset (UsdPhysics + mjc:* schemas)
                 [--fix-base source|fixed|floating] [--no-scene] [--no-self-collision]
                 [--collision-from-visuals convexHull|convexDecomposition|boundingSphere|boundingCube]
                 [--merge-meshes]
    usdsim compare MODEL.xml STAGE      native MuJoCo's model of the MJCF against ours of the stage: the fields
                 [--format human|json]  that differ and the dynamics beside native's own sensitivity
    usdsim info STAGE [--envs PRIM]     units, time range, what the model holds (per world), how it would be simulated,
                                        the PhysicsScenes (gravity, bodies) when there are several
    usdsim batch STAGE... [--vary PRIM.ATTR=V1,V2,...] -o DIR [--jobs N] [--ray auto|ADDRESS] [run options]
    usdsim batch --sweep SWEEP.toml -o DIR   many runs: a grid and random samples of overrides, a table of results

(``usdsim run STAGE ...`` is the same as ``usdsim STAGE ...``.) Errors in the input print one line
naming the file and what is wrong, and exit with status 2; ``--verbose`` adds the traceback and
warnings' detail. A simulation that blows up (NaN, a body beyond --max-distance or --max-speed, MuJoCo's
arena full) saves what it recorded, names the frame and body, and exits with status 3; Ctrl-C, at any
moment, saves the frames so far and exits with status 130. An unexpected exception (a bug) is one line
and exit 1 (-v or NEWTON_USD_DEBUG=1: the traceback).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import threading
import time

EXIT_INTERNAL = 1  # an unexpected exception: a bug of newton_usd (NEWTON_USD_DEBUG=1 or -v: the traceback)
EXIT_INPUT = 2
DEFAULT_CLIP_FRAMES = 1000  # newton_usd.sync.clips.DEFAULT_CLIP_FRAMES (not imported: --help stays instant)
EXIT_SIMULATION = 3
EXIT_INTERRUPTED = 130
WRITE_BATCH = 32  # recorded frames written onto the stage together (Simulation.write_batch)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="usdsim",
        description="Simulate the physics authored in a USD stage and write the motion onto its prims, "
        "in an output stage that sublayers the source (the source file is never modified).",
    )
    p.add_argument("stage", help="the USD stage to simulate (.usd, .usda, .usdc, .usdz)")
    p.add_argument("-o", "--output", help="output stage (default: STAGE's name with .sim.usda, next to it)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--flatten", action="store_true", help="write one self-contained file (the whole composed stage)")
    out.add_argument(
        "--in-place",
        action="store_true",
        help="write the motion into STAGE itself (its authored poses are replaced; only when you ask for it)",
    )
    length = p.add_mutually_exclusive_group()
    length.add_argument(
        "-n", "--num-frames", type=int, help="frames to simulate (default: the stage's time range, else 120)"
    )
    length.add_argument("--duration", type=float, help="seconds to simulate (instead of --num-frames)")
    p.add_argument("--device", default="cpu", help="Warp device for the model: cpu or cuda[:N] (default: cpu)")
    p.add_argument(
        "--solver",
        help="mujoco, xpbd, featherstone, semi_implicit or kamino (Newton's Warp solvers; kamino is beta) "
        "(default: the stage's newton:usd:solver; xpbd where the scene applies NewtonXpbdSceneAPI; else mujoco)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "cpu", "warp"),
        help="MuJoCo backend: C MuJoCo (cpu) or MuJoCo-Warp (warp); auto picks warp on CUDA",
    )
    p.add_argument("--fps", type=float, help="frames per second (default: the stage's timeCodesPerSecond)")
    step = p.add_mutually_exclusive_group()
    step.add_argument(
        "--substeps",
        type=int,
        help="physics steps per frame (default: the stage's time step, else one of at most 1/480 s)",
    )
    step.add_argument("--dt", type=float, help="physics time step in seconds (default: the stage's)")
    worlds = p.add_mutually_exclusive_group()
    worlds.add_argument(
        "--worlds",
        type=int,
        default=1,
        help="simulate N independent copies of the stage's physics (world 0 is written onto the prims)",
    )
    worlds.add_argument(
        "--envs",
        metavar="PRIM",
        help="the parent of identical environment prims (e.g. /World/envs): one world per child prim, the first "
        "imported once and replicated at each one's place; every environment's prims are written",
    )
    p.add_argument(
        "--write-worlds",
        choices=("first", "all"),
        default="first",
        help="with --worlds N: write world 0 onto the prims (first), or also every other world onto a copy of "
        "the environment in the output, physics stripped, laid out on a grid (all)",
    )
    p.add_argument(
        "--world-spacing",
        type=float,
        metavar="D",
        help="with --write-worlds all: the grid spacing of the copies in stage units (default: by the "
        "environment's size; 0: all in place)",
    )
    p.add_argument(
        "--write-joint-states",
        action="store_true",
        help="also write joint positions and velocities (PhysicsJointStateAPI attributes) onto the joint prims",
    )
    p.add_argument(
        "--record-every", type=int, default=1, metavar="N", help="write every N-th frame (default: every frame)"
    )
    p.add_argument(
        "--clip-frames",
        type=int,
        metavar="K",
        help=f"a recording of more than K frames is streamed to USD value clips, K frames per clip, in OUT's "
        f"STEM.clips/ directory beside it (memory stays bounded however long the run; default: "
        f"{DEFAULT_CLIP_FRAMES}); 0: never, one file as --flatten and --in-place always write",
    )
    p.add_argument(
        "--xform-ops",
        choices=("trs", "matrix"),
        default="trs",
        help="how poses go onto the prims: translate/orient ops (trs, the default) or one transform matrix "
        "per prim (matrix: half the values to write, for big scenes)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PRIM.ATTR=VALUE",
        help="override an authored value before simulating, e.g. --set /World/Box.physics:mass=2 (repeatable); "
        "written into the output, never into STAGE",
    )
    p.add_argument(
        "--keyframe",
        metavar="KEY",
        help="start from this keyframe (an MjcKeyframe prim's name or path, or an index)",
    )
    p.add_argument(
        "--max-distance",
        type=float,
        default=1e6,
        metavar="M",
        help="a body farther than M meters from the origin stops the run, exit 3 (default: 1e6)",
    )
    p.add_argument(
        "--max-speed",
        type=float,
        default=1e4,
        metavar="V",
        help="a body faster than V m/s stops the run, exit 3 (default: 1e4)",
    )
    p.add_argument(
        "--mujoco-memory",
        type=float,
        metavar="MIB",
        help="MiB of C MuJoCo's arena per world: contacts, constraints, solver stack (default: sized from the "
        "model; a run that fills it stops, exit 3)",
    )
    p.add_argument("--benchmark", action="store_true", help="simulate only: write nothing, and report the timing")
    p.add_argument("--format", choices=("human", "json"), default="human", help="the closing summary's format")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors, and informational logs")
    return p


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
            "or approximated and the authored newton/mjc/physx attributes the runtime does not use.",
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


def _convert(argv) -> int:
    p = argparse.ArgumentParser(
        prog="usdsim convert",
        description="Convert an MJCF model to a USD asset: UsdPhysics bodies, joints and colliders, and the mjc:* "
        "schemas for what only MuJoCo has (options with the exact time step, joint and contact parameters, "
        "actuators, equalities). Simulate it with `usdsim OUT`.",
    )
    p.add_argument("model", help="the MJCF file (.xml)")
    p.add_argument("-o", "--output", help="output USD file (default: MODEL's name with .usda, next to it)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    o = p.add_argument_group("import options (as add_mjcf's; see newton_usd.mjcf.options)")
    o.add_argument(
        "--fix-base", choices=("source", "fixed", "floating"), default="source",
        help="source: as the MJCF (default); fixed: delete the free joints of articulated root bodies (welded at "
        "qpos0); floating: a free joint for each jointless root body whose subtree has joints. Keyframes follow",
    )  # fmt: skip
    o.add_argument(
        "--no-scene", action="store_true",
        help="do not import <option> (gravity, time step, integrator, flags): no PhysicsScene is written, and "
        "usdsim simulates the asset with its defaults",
    )  # fmt: skip
    o.add_argument(
        "--no-self-collision", action="store_true",
        help="no contacts between the bodies of one kinematic tree (<exclude> pairs); without it, as the MJCF",
    )  # fmt: skip
    o.add_argument(
        "--collision-from-visuals", choices=("convexHull", "convexDecomposition", "boundingSphere", "boundingCube"),
        help="bodies without colliding geoms collide with their visual geoms: as they are (convexHull), split by "
        "CoACD (convexDecomposition), or bounding spheres or boxes; masses do not change",
    )  # fmt: skip
    o.add_argument(
        "--merge-meshes", action="store_true",
        help="merge each body's visual meshes of one group and material into one mesh (fewer prims)",
    )  # fmt: skip
    args = p.parse_args(argv)
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.WARNING)
    from .errors import NewtonUsdError  # noqa: PLC0415
    from .mjcf import convert  # noqa: PLC0415
    from .mjcf.options import FIX_BASE  # noqa: PLC0415

    base = os.path.basename(args.model)
    output = args.output or os.path.join(os.path.dirname(args.model), (base.rsplit(".", 1)[0] or base) + ".usda")
    if os.path.exists(output) and os.path.realpath(output) == os.path.realpath(args.model):
        return _fail(f"{output}: refusing to overwrite the source model", args)
    try:
        convert(
            args.model, output, fix_base=FIX_BASE[args.fix_base], import_scene=not args.no_scene,
            self_collision=False if args.no_self_collision else None,
            collision_from_visuals=args.collision_from_visuals, merge_meshes=args.merge_meshes,
        )  # fmt: skip
    except NewtonUsdError as e:
        return _fail(str(e), args)
    print(f"usdsim: wrote {output}")
    return 0


def _info(argv) -> int:
    p = argparse.ArgumentParser(
        prog="usdsim info",
        description="Print a stage's units and time range, what its model holds, and how usdsim would simulate it.",
    )
    p.add_argument("stage", help="the USD stage")
    p.add_argument("--envs", metavar="PRIM", help="simulate the children of PRIM as one world each (as usdsim --envs)")
    p.add_argument("-v", "--verbose", action="store_true", help="tracebacks on errors")
    args = p.parse_args(argv)
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.ERROR)
    _init_warp(args.verbose)
    from collections import Counter  # noqa: PLC0415

    from .core.types import JointType  # noqa: PLC0415
    from .errors import NewtonUsdError  # noqa: PLC0415
    from .sim import Simulation  # noqa: PLC0415

    try:
        sim = Simulation.open(args.stage, device="cpu", env_root=args.envs, live=False)
    except NewtonUsdError as e:
        return _fail(str(e), args)
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
        shown = _listed(names, 4)
        print(f"  worlds: {sim.worlds}, one per environment under {envs.root} ({shown}); "
              f"{envs.paths[0]} imported once and replicated at each one's place")  # fmt: skip
    of_scene = f" of {sim.scene_path}" if sim.scenes else ""
    equalities = model.equality_count + len(getattr(model.mujoco, "tendon_equality", None) or [])
    print(f"  model{of_scene}{' (per world)' if sim.worlds > 1 else ''}: {_count(model.body_count, 'body')}, "
          f"{_count(model.shape_count, 'shape')}, {_count(model.joint_count, 'joint')} "
          f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items())) or 'none'}), "
          f"{_count(model.articulation_count, 'articulation')}, {_count(equalities, 'equality')}, "
          f"{_count(len(model.keyframe_label), 'keyframe')}, "
          f"{_count(len(getattr(model.mujoco, 'actuator', []) or []), 'MjcActuator')}")  # fmt: skip
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
    from .usd import physics_scenes, read_scenes  # noqa: PLC0415

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


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before the simulation started: nothing to save
        print("usdsim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`usdsim explain ... | head`): its choice, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 0
    except Exception as e:  # a bug of ours, not the input's: one line, the traceback on request
        if os.environ.get("NEWTON_USD_DEBUG") or "-v" in argv or "--verbose" in argv:
            raise
        print(f"usdsim: internal error: {type(e).__name__}: {e} (-v or NEWTON_USD_DEBUG=1 shows the traceback; "
              "please report it with the stage)", file=sys.stderr)  # fmt: skip
        return EXIT_INTERNAL


def _main(argv) -> int:
    if argv and argv[0] == "convert":
        return _convert(argv[1:])
    if argv and argv[0] == "info":
        return _info(argv[1:])
    if argv and argv[0] == "compare":
        from .compare import main as compare  # noqa: PLC0415

        if not {"-h", "--help"} & set(argv):
            _init_warp(bool({"-v", "--verbose"} & set(argv)))
        return compare(argv[1:])
    if argv and argv[0] == "batch":
        from .batch.cli import main as batch  # noqa: PLC0415

        return batch(argv[1:])
    if argv and argv[0] in ("explain", "check"):
        return _inspect(argv[0], _inspect_parser(argv[0]).parse_args(argv[1:]))
    if argv and argv[0] == "run":
        argv = argv[1:]
    return _run(_parser().parse_args(argv))


def _run(args) -> int:
    """``usdsim run``: simulate, save, summarize. Exit 0, 2 (bad input), 3 (blew up), 130 (interrupted)."""
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.INFO if args.verbose else logging.WARNING)
    for name, value, least in (
        ("--num-frames", args.num_frames, 0),
        ("--substeps", args.substeps, 1),
        ("--worlds", args.worlds, 1),
        ("--record-every", args.record_every, 1),
        ("--clip-frames", args.clip_frames, 0),
    ):
        if value is not None and value < least:
            return _fail(f"{name} must be >= {least}, got {value}", args)
    for name, value in (
        ("--duration", args.duration),
        ("--dt", args.dt),
        ("--fps", args.fps),
        ("--max-distance", args.max_distance),
        ("--max-speed", args.max_speed),
        ("--mujoco-memory", args.mujoco_memory),
    ):
        if value is not None and not value > 0:
            return _fail(f"{name} must be > 0, got {value}", args)
    if args.in_place and args.output:
        return _fail("--in-place writes into STAGE: it takes no -o/--output", args)
    if args.in_place and args.write_worlds == "all" and args.worlds > 1:
        return _fail("--write-worlds all writes copies of the environment: not into STAGE (--in-place)", args)
    if args.world_spacing is not None and not (math.isfinite(args.world_spacing) and args.world_spacing >= 0):
        return _fail(f"--world-spacing must be a distance >= 0, got {args.world_spacing}", args)

    return _interruptible(lambda job: _simulate(args, job))


class _Job:
    """What ``usdsim run``'s worker thread shares with the main thread: ``stop``, set by Ctrl-C (the run
    stops at the next frame and saves), and ``sim``, the Simulation once it is open."""

    def __init__(self):
        self.stop = threading.Event()
        self.sim = None

    def simulated(self) -> bool:
        return self.sim is not None and self.sim.frame > 0


def _interruptible(work) -> int:
    """``work(job)`` in a worker thread while the main thread waits for it, so that Ctrl-C is seen at once
    at any moment: Python runs signal handlers in the main thread only, between bytecodes, and the setup's
    long calls (opening the stage, MuJoCo's compiler, Warp's kernel compiler) are C calls that release the
    GIL but would hold off a handler of their own thread until they return.

    Ctrl-C sets ``job.stop``: a running simulation stops at the end of its frame and saves what it
    simulated (exit 130). Before the first frame is simulated there is nothing to save: during the setup,
    or when the first frame has not ended within a second (Warp compiling its kernels), usdsim exits at
    once with 130. A second Ctrl-C exits at once, unsaved."""
    job, outcome, done = _Job(), [], threading.Event()

    def target():
        try:
            outcome.append(work(job))
        except BaseException as e:  # noqa: BLE001  (handed to the main thread, raised there)
            outcome.append(e)
        finally:
            done.set()

    try:
        threading.Thread(target=target, name="usdsim-run", daemon=True).start()
        _wait(done)
    except KeyboardInterrupt:
        job.stop.set()
        try:
            if job.sim is None or (not _wait(done, 1.0) and not job.simulated()):
                _exit_now("usdsim: interrupted before the first frame: nothing simulated, nothing saved")
            _wait(done)  # to the end of the frame, then saving
        except KeyboardInterrupt:
            _exit_now("usdsim: interrupted again: exiting without saving")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


def _wait(done: threading.Event, seconds=None) -> bool:
    """Wait for ``done`` (at most ``seconds``) in short waits, each interruptible by Ctrl-C (not
    ``Thread.join``: interrupted, it can leave a running thread marked as stopped, before Python 3.13)."""
    end = None if seconds is None else time.monotonic() + seconds
    while not done.wait(0.05):
        if end is not None and time.monotonic() >= end:
            return False
    return True


def _exit_now(message: str) -> None:
    """Exit with 130 now, whatever the worker thread is doing (inside a C call it cannot be stopped)."""
    print(message, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def _simulate(args, job: _Job) -> int:
    """The worker thread of ``usdsim run`` (see :func:`_interruptible`): import, open, simulate, save,
    summarize."""
    _init_warp(args.verbose)
    from .errors import NewtonUsdError, SimulationError  # noqa: PLC0415
    from .sim import Simulation, default_output  # noqa: PLC0415

    output = None if args.benchmark else (args.stage if args.in_place else args.output or default_output(args.stage))
    if output is not None and not args.in_place:
        directory = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
            return _fail(f"{output}: cannot write the output: {directory} is not a writable directory", args)
    t_open = time.perf_counter()
    try:
        sim = Simulation.open(
            args.stage,
            solver=args.solver,
            device=args.device,
            backend=args.backend,
            fps=args.fps,
            substeps=args.substeps,
            dt=args.dt,
            joint_states=args.write_joint_states,
            worlds=args.worlds,
            env_root=args.envs,
            overrides=args.set,
            live=False,
            xform_ops=args.xform_ops,
            write_worlds=args.write_worlds,
            world_spacing=args.world_spacing,
            keyframe=int(args.keyframe) if args.keyframe and args.keyframe.isdigit() else args.keyframe,
            max_distance=args.max_distance,
            max_speed=args.max_speed,
            mujoco_memory=None if args.mujoco_memory is None else int(args.mujoco_memory * 2**20),
        )
    except NewtonUsdError as e:
        return _fail(str(e), args)
    job.sim = sim
    t_setup = time.perf_counter() - t_open
    if job.stop.is_set():
        print("usdsim: interrupted before the first frame: nothing simulated, nothing saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    sim.record_every = args.record_every
    sim.write_batch = WRITE_BATCH  # no one looks at the stage while usdsim runs: write the frames in batches
    sim.write = not args.benchmark
    if args.duration is not None:
        frames = max(1, round(args.duration * sim.fps))
    else:
        frames = sim.default_frames() if args.num_frames is None else args.num_frames
    clip_frames = DEFAULT_CLIP_FRAMES if args.clip_frames is None else args.clip_frames
    recorded = -(-frames // sim.record_every)  # frames written after frame 0
    if output is not None and not (args.in_place or args.flatten) and 0 < clip_frames < recorded:
        try:
            sim.stream_recording(output, clip_frames)
        except NewtonUsdError as e:
            return _fail(str(e), args)
    bar = _progress(frames, args)
    if bar is None and not args.quiet and args.format == "human":
        note = f"usdsim: simulating {_count(frames, 'frame')} of {args.stage} (Ctrl-C stops and saves)"
        print(note, file=sys.stderr, flush=True)
    status, error = 0, None

    def progress(n):
        if bar is not None:
            bar.update(n)
        if job.stop.is_set():  # Ctrl-C, seen by the main thread
            raise KeyboardInterrupt

    try:
        sim.run(frames, progress=progress)
    except SimulationError as e:
        status, error = EXIT_SIMULATION, str(e)
        print(f"usdsim: {args.stage}: {e}", file=sys.stderr)
    except NewtonUsdError as e:  # writing a clip of a streamed recording failed
        return _fail(str(e), args)
    except KeyboardInterrupt:
        status, error = EXIT_INTERRUPTED, f"interrupted at frame {sim.frame}"
        print(f"usdsim: {args.stage}: interrupted at frame {sim.frame}; saving the frames so far", file=sys.stderr)
    finally:
        if bar:
            bar.close()
    if output is not None:
        try:
            if status != EXIT_SIMULATION:
                sim.flush()
            output = sim.save_in_place() if args.in_place else sim.save(output, flatten=args.flatten)
        except NewtonUsdError as e:
            return _fail(str(e), args)
    if args.format == "json":
        print(json.dumps(_summary_record(sim, args, output, t_setup, status, error), indent=2))
    elif not args.quiet:
        _summary(sim, output, t_setup)
    return status


def _inspect(command: str, args) -> int:
    """``usdsim explain`` and ``usdsim check``: every PhysicsScene that simulates bodies, each imported (and,
    for check, built into a MuJoCo model) on its own, as a run would."""
    logging.basicConfig(format="usdsim: warning: %(message)s", level=logging.ERROR)
    _init_warp(args.verbose)
    from . import inspect  # noqa: PLC0415
    from .core import ModelBuilder  # noqa: PLC0415
    from .diagnostics import Diagnostics  # noqa: PLC0415
    from .errors import NewtonUsdError  # noqa: PLC0415
    from .sim import frame_rate, physics_steps, scene_clocks  # noqa: PLC0415
    from .usd import add_usd, open_stage, scenes_to_import  # noqa: PLC0415

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
        from .solvers import SOLVERS  # noqa: PLC0415

        solvers = []
        for builder, imported in zip(builders, imports, strict=True):
            settings = {k: r.value for k, r in imported.scene.items()}
            name = args.solver or settings.get("solver") or "mujoco"
            if name not in SOLVERS:
                raise NewtonUsdError(f"unknown solver {name!r}; valid: {', '.join(SOLVERS)}")
            asked = {"backend": "cpu"} if name == "mujoco" else {}
            solvers.append(SOLVERS[name].from_scene(builder.finalize("cpu"), settings, **asked))
    except (NewtonUsdError, ValueError) as e:
        return _fail(str(e), args)
    kinds = Diagnostics()
    for diag in [i.diagnostics for i in imports] + [s.diagnostics for s in solvers]:
        for kind, paths in diag.kinds.items():
            for path in paths:
                kinds.add(kind, path)
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
    unused = inspect.unused_attributes(imports)
    print(f"\nauthored but not used ({len(unused)} attributes):" if unused else "\nevery authored value is used")
    for name, paths in unused.items():
        more = f" and {len(paths) - 3} more" if len(paths) > 3 else ""
        print(f"  - {name} ({len(paths)} prim{'s' if len(paths) > 1 else ''}: {', '.join(paths[:3])}{more})")
    return 0


def _model_counts(solver) -> str:
    """What ``usdsim check`` says of one scene's model and its MuJoCo or Newton model."""
    model = solver.model
    if not hasattr(solver, "mj_model"):
        nm = solver.newton_model
        return (
            f"{_count(model.body_count, 'body')}, {_count(model.shape_count, 'shape')}, "
            f"{_count(model.joint_count, 'joint')}; {solver.name} solver ({type(solver.newton_solver).__name__}); "
            f"Newton model: {nm.body_count} bodies, {nm.joint_count} joints, {nm.shape_count} shapes"
        )
    mj = solver.mj_model
    return (
        f"{_count(model.body_count, 'body')}, {_count(model.shape_count, 'shape')}, "
        f"{_count(model.joint_count, 'joint')}; "
        f"MuJoCo model: nbody {mj.nbody}, njnt {mj.njnt}, ngeom {mj.ngeom}, nu {mj.nu}"
    )


def _init_warp(verbose: bool) -> None:
    """Initialize Warp without its banner; without --verbose, also without the native CUDA driver
    warning that every run on a machine without a GPU would otherwise print."""
    import warp as wp  # noqa: PLC0415  (slow imports after argument checks, so --help is instant)

    if verbose:
        wp.init()
        return
    wp.config.log_level = wp.LOG_WARNING
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            wp.init()
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _progress(frames, args):
    if args.quiet or frames < 2 or not sys.stderr.isatty():
        return None
    from tqdm import tqdm  # noqa: PLC0415

    return tqdm(total=frames, unit="frame", desc="usdsim", file=sys.stderr, delay=1.0, leave=False)


def _summary_record(sim, args, output, t_setup, status, error) -> dict:
    """The closing summary as one JSON-able dict (the keys are documented in the README)."""
    sims = (sim, *sim.scenes)
    wall = sum(s.wall_seconds for s in sims)
    model = sim.model
    clip_dir, clips = _clips_written(sim, output)
    return {
        "stage": os.fspath(args.stage),
        "output": output,
        "clip_dir": clip_dir,
        "clips": clips,
        "exit_code": status,
        "error": error,
        "device": str(model.device.alias),
        "solver": type(sim.solver).__name__,
        "backend": getattr(sim.solver, "backend", None),
        "bodies": sum(s.model.body_count // s.worlds for s in sims),
        "joints": sum(s.model.joint_count // s.worlds for s in sims),
        "worlds": sim.worlds,
        "world_copies": _world_copies(sim),
        "frames": sim.frame,
        "fps": sim.fps,
        "substeps": sim.substeps,
        "dt": sim.dt,
        "steps": sim.steps,
        "sim_seconds": sim.sim_seconds,
        "setup_seconds": t_setup,
        "first_step_seconds": sim.first_step_seconds,
        "solver_seconds": wall,
        "sync_seconds": sum(s.sync_seconds for s in sims),
        "steps_per_second": sim.steps / wall if wall > 0 else None,
        "realtime_factor": sim.sim_seconds / wall if wall > 0 else None,
        "scenes": [
            {"path": s.scene_path, "bodies": s.model.body_count // s.worlds, "steps": s.steps, "dt": s.dt} for s in sims
        ],
    }


def _count(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless ``n`` is 1: "1 body", "3 bodies", "0 equalities"."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1] + 'ies' if noun.endswith('y') and noun[-2:-1] not in 'aeiou' else noun + 's'}"


def _clips_written(sim, output):
    """(the clip directory, the number of clips) of an output saved as value clips, else (None, 0)."""
    clips = sim.clips
    if output is None or clips is None or not clips.count or os.path.abspath(output) != clips.output_path:
        return None, 0
    return clips.directory, clips.count


def _summary(sim, output, t_setup):
    sims = (sim, *sim.scenes)
    wall = sum(s.wall_seconds for s in sims)
    steps = sum(s.steps for s in sims)
    rate = steps / wall if wall > 0 else float("inf")
    realtime = sim.sim_seconds / wall if wall > 0 else float("inf")
    backend = getattr(sim.solver, "backend", None)
    solver = f"{type(sim.solver).__name__}({backend})" if backend else f"{type(sim.solver).__name__} (Newton)"
    first = f", first step {sim.first_step_seconds:.2f} s" if sim.first_step_seconds is not None else ""
    if sim.scenes:  # several PhysicsScenes: each its own steps
        stepping = (
            f"{len(sims)} scenes ("
            + ", ".join(f"{s.scene_path}: {s.steps} steps of {s.dt * 1000:.3f} ms" for s in sims)
            + f") at {sim.fps:g} fps"
        )
    else:
        stepping = f"{sim.steps} steps of {sim.dt * 1000:.3f} ms ({sim.substeps}/frame at {sim.fps:g} fps)"
    bodies = sum(s.model.body_count // s.worlds for s in sims)
    joints = sum(s.model.joint_count // s.worlds for s in sims)
    clip_dir, clips = _clips_written(sim, output)
    print(
        f"usdsim: {_count(sim.frame, 'frame')}, {stepping}, {_count(bodies, 'body')}, {_count(joints, 'joint')}"
        f"{f' x {sim.worlds} worlds' if sim.worlds > 1 else ''}, {solver} on {sim.model.device.alias}\n"
        f"usdsim: {wall:.2f} s in the solver ({rate:,.0f} steps/s, {realtime:.1f}x real time{first}), "
        f"{sum(s.sync_seconds for s in sims):.2f} s writing the stage, {t_setup:.2f} s setup\n"
        + (f"usdsim: wrote {output}" if output else "usdsim: wrote nothing (--benchmark)")
        + (f" (worlds 1-{sim.worlds - 1} on copies: {_listed(_world_copies(sim))})" if sim.copies else "")
        + (f" and {clips} value clips in {clip_dir}{os.sep}" if clips else "")
    )


def _listed(items, most: int = 3) -> str:
    """``items`` joined by commas, the first ``most`` and the last when there are more."""
    items = list(items)
    return ", ".join(items if len(items) <= most else [*items[: most - 1], "...", items[-1]])


def _world_copies(sim) -> list:
    """The prims that show worlds 1 .. n-1 (``--write-worlds all``), world after world."""
    if sim.copies is None:
        return []
    return [str(sim.copies.copy_path(r, k)) for k in range(1, sim.worlds) for r in sim.copies.roots]


def _fail(message: str, args) -> int:
    if args.verbose:
        import traceback  # noqa: PLC0415

        traceback.print_exc()
    print(f"usdsim: error: {message}", file=sys.stderr)
    return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
