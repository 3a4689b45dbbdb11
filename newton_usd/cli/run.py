"""``usdsim run STAGE ...`` (or ``usdsim STAGE ...``): simulate, save, summarize; Ctrl-C at any moment saves."""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import threading
import time

from ..errors import UsdInputError
from ..run_options import DEFAULT_CLIP_FRAMES, run_parser
from ..usd.files import check_stage_file
from .common import EXIT_INTERRUPTED, EXIT_SIMULATION, WRITE_BATCH, count, fail, init_warp, listed
from .view import add_run_flags, after_run, check_run_camera, check_run_flags, live_view


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
        if value is not None and value != "auto" and value < least:
            return fail(f"{name} must be >= {least}, got {value}", args)
    for name, value in (
        ("--duration", args.duration),
        ("--dt", args.dt),
        ("--fps", args.fps),
        ("--max-distance", args.max_distance),
        ("--max-speed", args.max_speed),
        ("--mujoco-memory", args.mujoco_memory),
    ):
        if value is not None and not value > 0:
            return fail(f"{name} must be > 0, got {value}", args)
    if args.in_place and args.output:
        return fail("--in-place writes into STAGE: it takes no -o/--output", args)
    if args.in_place and args.write_worlds == "all" and args.worlds > 1:
        return fail("--write-worlds all writes copies of the environment: not into STAGE (--in-place)", args)
    if args.world_spacing is not None and not (math.isfinite(args.world_spacing) and args.world_spacing >= 0):
        return fail(f"--world-spacing must be a distance >= 0, got {args.world_spacing}", args)

    if problem := check_run_flags(args):  # --view / --video
        return fail(problem, args)
    try:  # a wrong path said at once, before the imports of USD's plugins, Warp and Newton (seconds)
        check_stage_file(args.stage)
        check_run_camera(args)  # --camera: a camera of the stage, before simulating
    except UsdInputError as e:
        return fail(str(e), args)
    return interruptible(lambda job: _simulate(args, job))


class _Job:
    """What ``usdsim run``'s worker thread shares with the main thread: ``stop``, set by Ctrl-C (the run
    stops at the next frame and saves), and ``sim``, the Simulation once it is open."""

    def __init__(self):
        self.stop = threading.Event()
        self.sim = None

    def simulated(self) -> bool:
        return self.sim is not None and self.sim.frame > 0


def interruptible(work) -> int:
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
    """The worker thread of ``usdsim run`` (see :func:`interruptible`): import, open, simulate, save,
    summarize."""
    init_warp(args.verbose)
    from ..errors import NewtonUsdError, SimulationError  # noqa: PLC0415
    from ..sim import Simulation, default_output  # noqa: PLC0415

    output = None if args.benchmark else (args.stage if args.in_place else args.output or default_output(args.stage))
    if output is not None and not args.in_place:
        directory = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
            return fail(f"{output}: cannot write the output: {directory} is not a writable directory", args)
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
        return fail(str(e), args)
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
            return fail(str(e), args)
    bar = _progress(frames, args)
    if bar is None and not args.quiet and args.format == "human":
        note = f"usdsim: simulating {count(frames, 'frame')} of {args.stage} (Ctrl-C stops and saves)"
        print(note, file=sys.stderr, flush=True)
    status, error = 0, None
    live = live_view(args, sim)  # usdsim STAGE --view: the run served as it goes

    def progress(n):
        if bar is not None:
            bar.update(n)
        if live is not None:
            live.update(sim.time_code, sim.frame, frames)
        if job.stop.is_set():  # Ctrl-C, seen by the main thread
            raise KeyboardInterrupt

    try:
        sim.run(frames, progress=progress)
    except SimulationError as e:
        status, error = EXIT_SIMULATION, f"{e}{_start_overlaps(sim)}"
        print(f"usdsim: {args.stage}: {error}", file=sys.stderr)
    except NewtonUsdError as e:  # writing a clip of a streamed recording failed
        return fail(str(e), args)
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
            return fail(str(e), args)
    if args.format == "json":
        print(json.dumps(_summary_record(sim, args, output, t_setup, status, error), indent=2))
    elif not args.quiet:
        _summary(sim, output, t_setup)
    seen = after_run(args, output, live)  # --view / --video: the page and the video of what was saved
    return status or seen


def _start_overlaps(sim) -> str:
    """What a blow-up's message adds where colliders start in each other (their contacts push them apart at once):
    the deepest pair of :func:`~newton_usd.inspect.start_overlaps`, found by a C MuJoCo solver of its own on each
    model of the run, at the model's initial state (the run's solver holds the blown-up one); '' where none does, or
    C MuJoCo cannot build a model."""
    from .. import inspect  # noqa: PLC0415

    pairs = []
    for model in {id(s.model): s.model for s in (sim, *sim.scenes)}.values():
        try:
            pairs += inspect.start_overlaps(model)
        except Exception as e:  # noqa: BLE001 (a hint, on any device: it must not hide the blow-up it adds to)
            logging.getLogger(__name__).debug("start overlaps not looked for: %s", e)
    if not pairs:
        return ""
    a, b, depth = max(pairs, key=lambda row: row[2])
    more = f" (and {count(len(pairs) - 1, 'more pair')}: usdsim check lists them)" if len(pairs) > 1 else ""
    return f"; at the start, colliders {a} and {b} are {depth:.3g} m in each other{more}, which contacts push apart"


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
        **_kernels_record(sims),
        "solver_seconds": wall,
        "sync_seconds": sum(s.sync_seconds for s in sims),
        "steps_per_second": sim.steps / wall if wall > 0 else None,
        "realtime_factor": sim.sim_seconds / wall if wall > 0 else None,
        "scenes": [
            {"path": s.scene_path, "bodies": s.model.body_count // s.worlds, "steps": s.steps, "dt": s.dt} for s in sims
        ],
    }


def _kernels_record(sims) -> dict:
    """The Warp modules loaded for the first frame, every scene's (:meth:`Simulation.load_kernels`)."""
    loads = [s.kernel_load for s in sims if s.kernel_load is not None]
    return {
        "kernel_seconds": sum(k.seconds for k in loads),
        "kernel_modules": sum(k.modules for k in loads),
        "kernels_compiled": sum(k.compiled for k in loads),
        "kernel_workers": max((k.workers for k in loads), default=0),
    }


def _kernels_said(sims) -> str:
    """The summary's line on the Warp modules loaded for the first frame ('' where none were)."""
    k = _kernels_record(sims)
    modules, seconds = count(k["kernel_modules"], "Warp module"), k["kernel_seconds"]
    if not k["kernel_modules"]:
        return ""
    if not k["kernels_compiled"]:
        return f"usdsim: {modules} loaded from the kernel cache for the setup and the first frame in {seconds:.2f} s\n"
    import warp as wp  # noqa: PLC0415

    parallel = ", in parallel" if k["kernel_workers"] else ""
    return (
        f"usdsim: {seconds:.1f} s loading Warp kernels for the setup and the first frame ({k['kernels_compiled']} of "
        f"{modules} compiled{parallel}): cached in {wp.config.kernel_cache_dir}, the next run loads them from there\n"
    )


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
        f"usdsim: {count(sim.frame, 'frame')}, {stepping}, {count(bodies, 'body')}, {count(joints, 'joint')}"
        f"{f' x {sim.worlds} worlds' if sim.worlds > 1 else ''}, {solver} on {sim.model.device.alias}\n"
        f"usdsim: {wall:.2f} s in the solver ({rate:,.0f} steps/s, {realtime:.1f}x real time{first}), "
        f"{sum(s.sync_seconds for s in sims):.2f} s writing the stage, {t_setup:.2f} s setup\n"
        + _kernels_said(sims)
        + (f"usdsim: wrote {output}" if output else "usdsim: wrote nothing (--benchmark)")
        + (f" (worlds 1-{sim.worlds - 1} on copies: {listed(_world_copies(sim))})" if sim.copies else "")
        + (f" and {clips} value clips in {clip_dir}{os.sep}" if clips else "")
    )


def _world_copies(sim) -> list:
    """The prims that show worlds 1 .. n-1 (``--write-worlds all``), world after world."""
    if sim.copies is None:
        return []
    return [str(sim.copies.copy_path(r, k)) for k in range(1, sim.worlds) for r in sim.copies.roots]


def main(argv) -> int:
    """``usdsim run``'s entry: parse the run options, then :func:`_run`."""
    parser = run_parser()
    add_run_flags(parser)
    return _run(parser.parse_args(argv))
