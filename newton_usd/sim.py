"""Simulation: the stage-driven loop (open a stage, step frames, write poses back, save the output).

This module is the story: :meth:`Simulation.open` reads the stage and makes the model and solver, then the
Simulation runs, resets and closes. Each job of the run is a module of :mod:`newton_usd.simulation` whose
methods the class takes: the clock (:mod:`~newton_usd.simulation.clock`), the steps of a frame and the run
(:mod:`~newton_usd.simulation.stepping`), the blow-up check (:mod:`~newton_usd.simulation.bounds`), the
pipelined GPU run (:mod:`~newton_usd.simulation.pipelined`), the recording and saving
(:mod:`~newton_usd.simulation.recording`), live edits (:mod:`~newton_usd.simulation.edits`) and the copies of
the environment for other worlds (:mod:`~newton_usd.simulation.worlds`).
"""

from __future__ import annotations

import math

import warp as wp

from .diagnostics import Diagnostics
from .errors import NewtonUsdError
from .simulation.bounds import MAX_DISTANCE, MAX_SPEED, BlowUpCheck
from .simulation.clock import DEFAULT_FRAMES, MAX_PHYSICS_DT, MAX_SUBSTEPS, frame_rate, physics_steps, scene_clocks
from .simulation.edits import LiveEdits, import_stage
from .simulation.pipelined import PipelinedRun
from .simulation.recording import Recording, attach_output_layer, default_output
from .simulation.stepping import Stepping, kinematic_bodies
from .simulation.worlds import WorldCopying, stage_sync
from .solvers import SOLVERS
from .solvers.kernel_loading import KernelLoading, tape_safe_workers
from .solvers.stability import auto_substeps
from .sync import JointStateSync
from .sync.clips import DEFAULT_CLIP_FRAMES
from .sync.live_edits import StageWatcher
from .sync.stage_sync import XFORM_OPS
from .usd import open_stage, scenes_to_import
from .usd.overrides import apply_overrides
from .usd.resolver import DIALECTS

__all__ = [  # Simulation; the rest are kept here for the callers that import them from here
    "DEFAULT_FRAMES",
    "MAX_DISTANCE",
    "MAX_PHYSICS_DT",
    "MAX_SPEED",
    "MAX_SUBSTEPS",
    "WRITE_WORLDS",
    "Simulation",
    "default_output",
    "frame_rate",
    "physics_steps",
    "resolve_device",
    "scene_clocks",
]

WRITE_WORLDS = ("first", "all")


def resolve_device(device):
    """A ``wp.context.Device`` for ``device`` ("cpu", "cuda", "cuda:N" or None: Warp's default)."""
    if str(device).startswith("cuda") and not wp.is_cuda_available():
        raise NewtonUsdError(
            f"device {device!r} is not available: Warp finds no CUDA device or driver "
            f"(devices: {', '.join(d.alias for d in wp.get_devices())})"
        )
    try:
        return wp.get_device(device)
    except (RuntimeError, ValueError) as e:
        raise NewtonUsdError(
            f"device {device!r} is not available ({e}); Warp sees: {', '.join(d.alias for d in wp.get_devices())}"
        ) from None


class Simulation(Stepping, PipelinedRun, BlowUpCheck, Recording, LiveEdits, WorldCopying):
    """A stage being simulated: model, solver, state, and the sync writing poses onto its prims.

    Create one with :meth:`open`. Output goes to an in-memory layer under the stage's session layer
    (the source file is never modified); :meth:`save` writes it as a file that sublayers the source.
    A long recording can be streamed to value clips on disk as it runs (:meth:`stream_recording`).

    Several PhysicsScenes: each scene that simulates rigid bodies (``physics:simulationOwner``; the first
    scene also simulates the unowned ones) is a model and solver of its own, with its own gravity, time
    step and settings. This Simulation is the first such scene's; it holds the others' in :attr:`scenes`
    (Simulations of the same stage and output layer, without a watcher of their own) and steps them from
    :meth:`step_frame` after its own frame, each taking the steps that keep it at this one's simulated
    time (its own ``dt``; the same frame rate, the first scene's: another scene's own
    ``newton:usd:framesPerSecond`` is not used, with a warning; :meth:`open`'s solver, backend, substeps, dt,
    worlds and env_root apply to every scene, a keyframe to the first). Edits, :meth:`reset`, :meth:`flush`,
    :meth:`save` and :meth:`close` cover them; an edit re-imports every scene, each applying its own
    differences (a gravity edit of one scene changes that scene only). A stage with one scene has no :attr:`scenes`.

    The methods of each job are documented with their base class: the frames and the run
    (:class:`~newton_usd.simulation.stepping.Stepping`: ``step_frame``, ``run``, ``time_code``), the recording
    (:class:`~newton_usd.simulation.recording.Recording`: ``flush``, ``write_batch``, ``stream_recording``,
    ``save``, ``save_in_place``), live edits (:class:`~newton_usd.simulation.edits.LiveEdits`: ``apply_edits``),
    the pipelined run, the blow-up check and the copies of the environment.

    Attributes:
        stage, model, solver, state, control, sync: the pieces, reachable for inspection.
        worlds: the model's worlds; env_root: the parent of the environment prims simulated as worlds
            (None: none).
        fps: frames per second (the stage's timeCodesPerSecond unless given).
        substeps: physics steps per frame; dt: the physics step in seconds.
        frame: frames simulated since the start; start_time: the time code of frame 0.
        steps: physics steps taken.
        scene_path: the PhysicsScene this Simulation simulates (None: the stage has none).
        scenes: the Simulations of the stage's other PhysicsScenes (empty with one scene).
        clips: the :class:`~newton_usd.sync.clips.ClipStream` of a recording streamed to value clips
            (None: not streamed).
    """

    def __init__(
        self,
        stage,
        source_file,
        imported,
        model,
        solver,
        *,
        fps,
        substeps,
        dt=None,
        record=True,
        joint_states=False,
        live=True,
        order=None,
        output_layer=None,
        overrides=(),
        xform_ops="trs",
        env_root=None,
        write_worlds="first",
        world_spacing=None,
        scene=None,
    ):
        self.stage = stage
        self.source_file = source_file
        self.imported = imported
        self.model = model
        self.solver = solver
        self.fps = float(fps)
        self.substeps = int(substeps)
        self.dt = float(dt) if dt else 1.0 / self.fps / self.substeps
        self.record = record
        self.start_time = stage.GetStartTimeCode() if stage.HasAuthoredTimeCodeRange() else 0.0
        self.output_layer = output_layer or attach_output_layer(stage)
        self.overrides = list(overrides)  # [(property path, value)] authored into the output layer
        self.worlds = model.num_worlds
        self.env_root = env_root
        self._replicas = 1 if env_root is not None else self.worlds  # worlds of replicate(), on a re-import
        # Every prim is written from the first world that has it: world 0 for replicated copies (and the
        # other worlds onto copies of the environment, when asked), each environment's own world for
        # environments.
        self.copies = None
        self._copies_layer = None
        self._display_offset = None
        self.scenes = []  # the Simulations of the other PhysicsScenes (see the class docstring)
        self._first_scene = None  # another scene's: the first scene's Simulation (None: this is the first)
        if write_worlds == "all" and env_root is None and self.worlds > 1:
            self._copy_environment(world_spacing)
        self.sync = stage_sync(stage, self.output_layer, model, self.copies, imported.frame, xform_ops)
        self._kinematic = kinematic_bodies(stage, model)
        self.joint_sync = (
            JointStateSync(self.output_layer, model, imported.frame.meters_per_unit) if joint_states else None
        )
        self.state = model.state()
        self._next = model.state()
        self.control = model.control()
        self._order = order
        self.watcher = StageWatcher(stage) if live else None
        self.edits_applied = 0  # edits applied to the running model (values, or a rebuild)
        self.rebuilds = 0  # of which rebuilt the model (prims added or removed)
        self._retired_joint_syncs = []
        self.frame = 0
        self.steps = 0
        self.sim_seconds = 0.0
        self.wall_seconds = 0.0  # in the solver (stepping, state exchange included)
        self.sync_seconds = 0.0  # writing poses onto the stage
        self.first_step_seconds = None  # the first physics step (MuJoCo-Warp: kernels compiled or loaded)
        self.record_every = 1  # write every n-th frame (the first and the last are always written)
        self.write = True  # False: simulate only (benchmarking), nothing goes onto the stage
        self.clips = None  # the ClipStream of a recording streamed to value clips (stream_recording)
        self.max_distance = MAX_DISTANCE  # m from the origin: beyond, the run stops (see _check_bounds)
        self.max_speed = MAX_SPEED  # m/s of a body's center of mass: beyond, the run stops
        self._scene = scene  # the import's scene argument (None: the stage's only scene)
        self._device_check = None  # the blow-up checks of frame functions, on the device (see _simulate_frame)
        self._readback = None  # run()'s poses read back behind the device (see _run_pipelined)

    @property
    def scene_path(self) -> str | None:
        return self.imported.scene_path

    @classmethod
    def open(
        cls,
        source,
        *,
        solver: str | None = None,
        solver_options: dict | None = None,
        device=None,
        backend: str | None = None,
        fps: float | None = None,
        substeps: int | None = None,
        record: bool = True,
        joint_states: bool = False,
        live: bool = True,
        order=None,
        worlds: int = 1,
        env_root: str | None = None,
        dt: float | None = None,
        overrides=(),
        keyframe=None,
        xform_ops: str = "trs",
        write_worlds: str = "first",
        world_spacing: float | None = None,
        stream_to=None,
        clip_frames: int = DEFAULT_CLIP_FRAMES,
        max_distance: float = MAX_DISTANCE,
        max_speed: float = MAX_SPEED,
        mujoco_memory: int | None = None,
    ) -> "Simulation":
        """Open ``source`` (a path or ``Usd.Stage``), import it and make the solver.

        Each setting comes from its argument, else from the stage's PhysicsScene (NewtonUsdSceneAPI,
        and the physics time step from ``mjc:option:timestep``, ``newton:timeStepsPerSecond`` or
        ``physxScene:timeStepsPerSecond``), else from the default.

        Args:
            solver: a name from ``newton_usd.solvers.SOLVERS``: "mujoco", "xpbd", "featherstone",
                "semi_implicit" or "kamino" (default: the scene's ``newton:usd:solver``; a scene applying
                NewtonXpbdSceneAPI runs "xpbd"; else "mujoco").
            solver_options: keyword arguments of the solver's class, over the scene's settings (e.g.
                ``{"requires_grad": True}`` for a Newton solver under ``wp.Tape``, ``{"iterations": 8}``).
            device: Warp device for the model ("cpu", "cuda", ...; None: Warp's default).
            backend: solver backend (for "mujoco": "auto", "cpu" or "warp").
            fps: frames per second (default: the stage's timeCodesPerSecond).
            substeps: physics steps per frame (default: the stage's time step, else enough for a step
                of at most 1/480 s); "auto": more where the solver estimates a shorter step stable.
            record: write one time sample per frame (else overwrite the default pose).
            joint_states: also write joint positions and velocities onto the joint prims
                (PhysicsJointStateAPI attributes ``state:<axis>:physics:position``/``velocity``).
            live: apply the edits made on the stage while it runs, at the next frame (see
                :meth:`apply_edits`).
            order: the resolver's dialect order (default newton > mjc > physx > physics).
            worlds: simulate this many independent copies of the stage's physics
                (:meth:`ModelBuilder.replicate`); world 0 is written onto the prims.
            env_root: the parent of identical environment prims (e.g. ``"/World/envs"``): one world per
                environment, the first imported and replicated at each one's place (see
                :func:`newton_usd.usd.add_usd`); every environment's prims are written.
            dt: the physics time step in seconds (default: the stage's); each frame takes
                ``round(1 / (fps * dt))`` steps (``substeps`` wins when both are given).
            overrides: ``"/Prim.attribute=VALUE"`` strings, authored into the output layer before
                importing (so they are simulated and saved with the motion; the source is untouched).
            keyframe: start from this keyframe (MjcKeyframe; see :meth:`start_from_keyframe`).
            xform_ops: how poses go onto the prims (see :class:`~newton_usd.sync.StageSync`): "trs"
                (translate and orient ops) or "matrix" (one transform op per prim: about twice as fast to
                write, for big scenes).
            write_worlds: "first" (world 0 moves the prims) or "all": with ``worlds`` > 1, every other
                world is written onto a copy of the environment made in the output (physics stripped,
                so nothing simulates the copies again; see :class:`~newton_usd.sync.WorldCopies`); with
                several PhysicsScenes, a world's copy shows that world's bodies of every scene.
            world_spacing: how far apart the copies are laid out on a grid across the ground plane, in
                stage units (None: by the environment's size; 0: all in place).
            stream_to: the output path the recording will be saved as: stream it to value clips beside
                that path as it runs, ``clip_frames`` recorded frames per clip, so that memory stays
                bounded however long the run (see :meth:`stream_recording`).
            mujoco_memory: bytes of C MuJoCo's arena (contacts, constraints, solver stack) per world (default:
                sized from the model; see :func:`newton_usd.solvers.mujoco.spec.arena_bytes`).
            max_distance, max_speed: bounds of a sane state (m from the origin, m/s): a body beyond either
                stops the run with a :class:`SimulationError` naming it and the frame (also NaN or infinity).
        """
        dev = resolve_device(device)
        if int(worlds) < 1:
            raise NewtonUsdError(f"worlds must be at least 1, got {worlds}")
        if env_root is not None and int(worlds) != 1:
            raise NewtonUsdError("worlds and env_root both make worlds: give one of them (env_root: one per env)")
        if dt is not None and not dt > 0:
            raise NewtonUsdError(f"the physics time step must be positive, got {dt}")
        if xform_ops not in XFORM_OPS:
            raise NewtonUsdError(f"unknown xform_ops {xform_ops!r}; valid: {', '.join(XFORM_OPS)}")
        if write_worlds not in WRITE_WORLDS:
            raise NewtonUsdError(f"unknown write_worlds {write_worlds!r}; valid: {', '.join(WRITE_WORLDS)}")
        if world_spacing is not None and not (math.isfinite(world_spacing) and world_spacing >= 0):
            raise NewtonUsdError(f"world_spacing must be a finite distance >= 0, got {world_spacing}")
        for name, bound in (("max_distance", max_distance), ("max_speed", max_speed)):
            if not bound > 0:
                raise NewtonUsdError(f"{name} must be > 0, got {bound}")
        stage, file = open_stage(source)
        output_layer = attach_output_layer(stage)
        try:
            sim = cls._open(
                stage, file, output_layer, solver=solver, solver_options=solver_options, device=dev, backend=backend,
                fps=fps, substeps=substeps,
                record=record, joint_states=joint_states, live=live, order=order, worlds=int(worlds), dt=dt,
                overrides=overrides, xform_ops=xform_ops, env_root=env_root, write_worlds=write_worlds,
                world_spacing=world_spacing, mujoco_memory=mujoco_memory,
            )  # fmt: skip
            for one in (sim, *sim.scenes):
                one.max_distance, one.max_speed = float(max_distance), float(max_speed)
            if keyframe is not None:
                sim.start_from_keyframe(keyframe)
            if stream_to is not None:
                sim.stream_recording(stream_to, clip_frames)
            return sim
        except BaseException:
            stage.GetSessionLayer().subLayerPaths.remove(output_layer.identifier)
            raise

    @classmethod
    def _open(
        cls, stage, file, output_layer, *, solver, device, backend, fps, substeps, record, joint_states, live, order,
        worlds, dt, overrides, env_root, xform_ops="trs", write_worlds="first", world_spacing=None, scene=None,
        solver_options=None, mujoco_memory=None,
    ):  # fmt: skip
        applied = apply_overrides(stage, overrides, output_layer, file) if overrides else []
        asked = {"solver": solver, "solver_options": solver_options, "backend": backend, "substeps": substeps}
        asked["dt"], asked["mujoco_memory"] = dt, mujoco_memory
        others = []
        if scene is None:
            scene, *others = scenes_to_import(stage, tuple(order) if order else DIALECTS)
        builder, imported = import_stage(stage, order, worlds, env_root, scene)
        settings = {k: r.value for k, r in imported.scene.items()}
        solver = solver or settings.get("solver") or "mujoco"
        if solver not in SOLVERS:
            raise NewtonUsdError(f"unknown solver {solver!r}; valid: {', '.join(SOLVERS)}")
        model = builder.finalize(device)
        options = dict(solver_options or {})
        # (the solver's Warp modules, compiled as it is made; none beside a differentiable run: see tape_safe_workers)
        kernels = KernelLoading(model.device, tape_safe_workers(cls.kernel_workers, options))
        kernels.add(SOLVERS[solver].setup_kernel_modules(model.device, {**options, "backend": backend}))
        if mujoco_memory is not None:
            if solver != "mujoco":
                raise NewtonUsdError(f"mujoco_memory is C MuJoCo's arena: the {solver} solver has none")
            options["memory"] = int(mujoco_memory)
        solver_obj = SOLVERS[solver].from_scene(model, settings, backend=backend, **options)
        given_fps = fps
        fps = frame_rate(stage, imported, fps)
        if fps <= 0:
            raise NewtonUsdError(f"{file}: frames per second must be positive, got {fps}")
        auto, substeps = substeps == "auto", None if substeps == "auto" else substeps
        substeps, step = physics_steps(fps, dt or settings.get("timestep"), substeps or settings.get("substeps"))
        substeps, step = auto_substeps(solver_obj, fps, substeps, step) if auto else (substeps, step)
        if substeps > MAX_SUBSTEPS:  # e.g. a time step of 1e-30 s: one frame would never end
            source = imported.scene.get("timestep")
            where = f"{source.prim}.{source.attribute}: " if source is not None and source.attribute and not dt else ""
            raise NewtonUsdError(f"{file}: {where}{substeps:.3g} physics steps per frame (more than {MAX_SUBSTEPS:,}): "
                                 "the time step is too small for the frame rate")  # fmt: skip
        sim = cls(
            stage, file, imported, model, solver_obj, fps=fps, substeps=substeps, dt=step, record=record,
            joint_states=joint_states, live=live, order=order, output_layer=output_layer, overrides=applied,
            xform_ops=xform_ops, env_root=env_root, write_worlds="first" if others else write_worlds,
            world_spacing=world_spacing, scene=scene,
        )  # fmt: skip
        sim._kernel_loading = kernels
        for other in others:  # same stage, output layer, frame rate and worlds; the scene's own step and settings
            sim.scenes.append(cls._open(
                stage, file, output_layer, device=device, fps=fps, record=record, joint_states=joint_states,
                live=False, order=order, worlds=worlds, overrides=(), env_root=env_root, xform_ops=xform_ops,
                scene=other, **asked,
            ))  # fmt: skip
            sim.scenes[-1]._first_scene = sim
        if others and write_worlds == "all" and env_root is None and worlds > 1:
            sim._copy_environment(world_spacing)  # one copy per world, of every scene's bodies
            for s in (sim, *sim.scenes):
                s._resync()
        if others and given_fps is None:
            diag = Diagnostics()
            scene_clocks([s.imported for s in sim.scenes], fps, diag)
            diag.emit(file)
        return sim

    def reset(self, keyframe=None) -> None:
        """Back to the authored state: initial model state, frame 0, authored poses on the stage; with
        ``keyframe``, then into that keyframe (see :meth:`start_from_keyframe`). Frames queued on the device and not
        yet checked are dropped unchecked."""
        self._forget_device_check()
        self.state = self.model.state()
        self._next = self.model.state()
        self.control = self.model.control()
        capture = getattr(self.solver, "frame_capture", None)
        if capture is not None:  # (new arrays: a graph of the old ones is not replayed, whatever their addresses)
            capture.invalidate("reset")
        self.frame = self.steps = 0
        self.sim_seconds = self.wall_seconds = self.sync_seconds = 0.0
        self.restart_flung_check()
        with self._own_writes():
            if self.joint_sync is not None:
                self.joint_sync.restore()
            for old in self._retired_joint_syncs:
                old.restore()
            self._retired_joint_syncs = []
            self.sync.restore()  # also prunes the prim specs left empty
        if self.clips is not None:
            self.clips.restart()  # the recording starts over: a new run of clips
        if self.rebuilds:  # the model holds the state of the last rebuild: import the authored one again
            imported = import_stage(self.stage, self._order, self._replicas, self.env_root, self._scene)
            self._rebuild(*imported, keep_state=False)
            self.rebuilds = 0
        with self._own_writes():
            for other in self.scenes:
                other.reset()
        if keyframe is not None:
            self.start_from_keyframe(keyframe)

    def start_from_keyframe(self, keyframe) -> None:
        """Put every world into ``keyframe`` (an index, a label such as the MjcKeyframe prim path, or its
        last name) before the first frame: joint positions and velocities, activations, kinematic
        (mocap) poses and the keyframe's controls. The recording still starts at the stage's start time
        (a keyframe's own time is not added)."""
        if self.frame:
            raise NewtonUsdError("a keyframe can only start a simulation: call reset() first")
        reset = getattr(self.solver, "reset_to_keyframe", None)
        if reset is None:
            raise NewtonUsdError(f"{type(self.solver).__name__} cannot reset to a keyframe")
        reset(self.state, keyframe, self.control)

    def close(self) -> None:
        """Detach the output layer from the stage (the stage shows the authored poses again); a streamed
        recording's clips that no saved output refers to are removed."""
        self._flush_syncs()
        if self.clips is not None:
            self.clips.close()
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None
        for other in self.scenes:
            other.close()
        if self._kernel_loading is not None:  # (a run that ran no frame, an environment's: its pool stops)
            self._kernel_loading.cancel(wait=False)
            self._kernel_loading = None
        subs = self.stage.GetSessionLayer().subLayerPaths
        for layer in (self.output_layer, self._copies_layer):
            if layer is not None and layer.identifier in subs:
                subs.remove(layer.identifier)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
