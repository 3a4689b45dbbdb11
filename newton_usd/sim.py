"""Simulation: the stage-driven loop (open a stage, step frames, write poses back, save the output).

This module is the story: :meth:`Simulation.open` opens the stage (:mod:`~newton_usd.simulation.opening`: the
import, the model, the solver, the clock, the options), then the Simulation runs, resets and closes. It holds its
parts, each an object of :mod:`newton_usd.simulation` that owns its state: the clock
(:class:`~newton_usd.simulation.clock.Clock`), what is simulated now
(:class:`~newton_usd.simulation.physics.Physics`), the stepper (:class:`~newton_usd.simulation.stepping.Stepper`),
the blow-up check (:class:`~newton_usd.simulation.bounds.BlowUpCheck`), the recorder
(:class:`~newton_usd.simulation.recording.Recorder`), the live editor
(:class:`~newton_usd.simulation.edits.LiveEditor`), the copies of the environment for other worlds
(:class:`~newton_usd.simulation.worlds.EnvironmentCopies`) and the pipelined run
(:class:`~newton_usd.simulation.pipelined.PipelinedRun`); :meth:`Simulation.step_frame` says how a frame flows
through them.
"""

from __future__ import annotations

import contextlib
import time

import warp as wp

from .errors import NewtonUsdError
from .simulation import opening
from .simulation.bounds import BlowUpCheck
from .simulation.clock import (
    DEFAULT_FRAMES,
    MAX_PHYSICS_DT,
    MAX_SUBSTEPS,
    Clock,
    frame_rate,
    physics_steps,
    scene_clocks,
)
from .simulation.edits import LiveEditor, check_scenes
from .simulation.options import MAX_DISTANCE, MAX_SPEED, WRITE_WORLDS, RunOptions, check_options
from .simulation.physics import Physics
from .simulation.pipelined import PipelinedRun
from .simulation.recording import Recorder, attach_output_layer, default_output
from .simulation.stepping import Stepper
from .simulation.worlds import EnvironmentCopies
from .sync.clips import DEFAULT_CLIP_FRAMES
from .usd import open_stage

__all__ = [  # Simulation; the rest are kept here for the callers that import them from here
    "DEFAULT_FRAMES",
    "MAX_DISTANCE",
    "MAX_PHYSICS_DT",
    "MAX_SPEED",
    "MAX_SUBSTEPS",
    "WRITE_WORLDS",
    "RunOptions",
    "Simulation",
    "default_output",
    "frame_rate",
    "physics_steps",
    "resolve_device",
    "scene_clocks",
]


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


def _delegated(part: str, name: str, doc: str, settable: bool = True) -> property:
    """A Simulation attribute that is its part's (``part``) attribute ``name``."""

    def get(self):
        return getattr(getattr(self, part), name)

    def set_(self, value):
        setattr(getattr(self, part), name, value)

    return property(get, set_ if settable else None, doc=doc)


class Simulation:
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

    The run is made of parts, each owning its state (see the module): :attr:`clock`, :attr:`physics`,
    :attr:`stepper`, :attr:`blow_up_check`, :attr:`recorder`, :attr:`editor`, :attr:`environment_copies` and
    :attr:`pipeline`. The attributes below are theirs, reachable here.

    Args:
        stage: the stage; source_file: its file (for messages and the saved output's sublayer).
        imported: the import record; model, solver: the model and its solver.
        options: the run's :class:`~newton_usd.simulation.options.RunOptions`.
        output_layer: the layer the run writes (None: a new one, strongest in the stage).
        overrides: ``[(property path, value)]`` authored into the output layer before the import.
        kernel_loading: the pool loading the solver's Warp modules (None: started at the first frame).

    Attributes:
        stage: the stage simulated; options: the run's :class:`~newton_usd.simulation.options.RunOptions`.
        scenes: the Simulations of the stage's other PhysicsScenes (empty with one scene).
        clock, physics, stepper, blow_up_check, recorder, editor, environment_copies, pipeline: the parts.

    The pieces (``model``, ``solver``, ``state``, ``control``, ``sync``), the clock's values (``fps``, ``substeps``,
    ``dt``, ``frame``, ``steps``, ``start_time``, ``time_code``), the recording's (``clips``, ``record_every``,
    ``write``) and the other parts' settings are properties of their own, documented below.
    """

    kernel_workers = None
    """Threads that compile the Warp modules of the solver's setup and first frame beside them (None: one per CPU
    core; 0: none, each module compiled where it is first launched). Set on the class, it holds for the Simulations
    opened after (the setup's load starts in :meth:`open`)."""

    def __init__(self, stage, source_file, imported, model, solver, options: RunOptions, *, output_layer=None,
                 overrides=(), kernel_loading=None):  # fmt: skip
        self.stage, self.source_file, self.options = stage, source_file, options
        self.output_layer = output_layer or attach_output_layer(stage)
        self.overrides = list(overrides)  # [(property path, value)] authored into the output layer
        self.scenes = []  # the Simulations of the other PhysicsScenes (see the class docstring)
        self._first_scene = None  # another scene's: the first scene's Simulation (None: this is the first)
        start = stage.GetStartTimeCode() if stage.HasAuthoredTimeCodeRange() else 0.0
        self.clock = Clock(options, start)
        self.physics = Physics(imported, model, solver)
        self.editor = LiveEditor(self, options.live)
        self.environment_copies = EnvironmentCopies(stage, self.output_layer, self._own_writes)
        if options.write_worlds == "all" and options.env_root is None and self.worlds > 1:
            self.environment_copies.make([(self.environment_copies, model)], self.worlds, imported.frame,
                                         options.world_spacing)  # fmt: skip
        self.blow_up_check = BlowUpCheck(self.physics, self.clock, options)
        self.stepper = Stepper(stage, self.physics, self.clock, self.blow_up_check, self.kernel_workers, kernel_loading)
        self.recorder = Recorder(stage, self.output_layer, self.physics, self.clock, options,
                                 self.environment_copies, self._own_writes)  # fmt: skip
        self.pipeline = PipelinedRun(self.physics, self.clock, self.stepper, self.blow_up_check, self.recorder)

    # --- the pieces, and the parts' attributes, as the API names them ---------------------------------------------

    imported = _delegated("physics", "imported", "The import record of the model.", settable=False)
    model = _delegated("physics", "model", "The model simulated.", settable=False)
    solver = _delegated("physics", "solver", "The model's solver (a view may make a new one of the same model).")
    control = _delegated("physics", "control", "The Control the steps read.", settable=False)
    fps = _delegated("clock", "fps", "Frames per second (the stage's timeCodesPerSecond unless given).")
    substeps = _delegated("clock", "substeps", "Physics steps per frame.")
    dt = _delegated("clock", "dt", "The physics step in seconds (a captured frame is captured anew when it changes).")
    start_time = _delegated("clock", "start_time", "The time code of frame 0.", settable=False)
    frame = _delegated("clock", "frame", "Frames simulated since the start.", settable=False)
    steps = _delegated("clock", "steps", "Physics steps taken.", settable=False)
    sim_seconds = _delegated("clock", "sim_seconds", "Simulated seconds.", settable=False)
    time_code = _delegated("clock", "time_code", "The time code of the current frame.", settable=False)
    wall_seconds = _delegated("clock", "wall_seconds", "Seconds in the solver (the state exchange included).")
    sync_seconds = _delegated("clock", "sync_seconds", "Seconds writing onto the stage.")
    first_step_seconds = _delegated(
        "clock", "first_step_seconds", "The first frame's steps (MuJoCo-Warp, Newton: kernels compiled or loaded).",
        settable=False,
    )  # fmt: skip
    sync = _delegated("recorder", "sync", "The :class:`~newton_usd.sync.StageSync` writing the poses.", settable=False)
    joint_sync = _delegated("recorder", "joint_sync", "The joint states' sync (None: not written).", settable=False)
    clips = _delegated("recorder", "clips", "The ClipStream of a recording streamed to value clips (None: not).",
                       settable=False)  # fmt: skip
    record_every = _delegated("recorder", "record_every", "Write every n-th frame (the first and last always).")
    write = _delegated("recorder", "write", "False: simulate only (benchmarking), nothing goes onto the stage.")
    record = _delegated("recorder", "record", "Write one time sample per frame (else overwrite the default pose).")
    check_flung = _delegated("blow_up_check", "check_flung", BlowUpCheck.check_flung.__doc__ or "")
    check_every = _delegated("blow_up_check", "check_every", "Frames between reads of the device's check flag.")
    max_distance = _delegated("blow_up_check", "max_distance", "m from the origin: beyond, the run stops.")
    max_speed = _delegated("blow_up_check", "max_speed", "m/s of a body's center of mass: beyond, the run stops.")
    kernel_load = _delegated("stepper", "kernel_load", "What load_kernels did (None before the first frame).",
                             settable=False)  # fmt: skip
    watcher = _delegated("editor", "watcher", "The StageWatcher of live edits (None: not live).", settable=False)
    edits_applied = _delegated("editor", "edits_applied", "Edits applied to the running model.", settable=False)
    rebuilds = _delegated("editor", "rebuilds", "Edits that rebuilt the model.", settable=False)
    edit_worlds = _delegated("editor", "edit_worlds", "Which worlds an edit of a shared prim reaches.")
    copies = _delegated("environment_copies", "copies", "The copies of the environment (None: none).",
                        settable=False)  # fmt: skip
    world_spacing = _delegated("environment_copies", "spacing", "Stage units between the copies.", settable=False)

    @property
    def worlds(self) -> int:
        """The model's worlds."""
        return self.physics.model.num_worlds

    @property
    def env_root(self) -> str | None:
        """The parent of the environment prims simulated as worlds (None: none)."""
        return self.options.env_root

    @property
    def scene_path(self) -> str | None:
        """The PhysicsScene this Simulation simulates (None: the stage has none)."""
        return self.physics.imported.scene_path

    @property
    def state(self):
        """The current State. Reading it is a sync point: frames queued on the device and not yet checked are waited
        for and checked first (a blow-up among them raises :class:`~newton_usd.errors.SimulationError`)."""
        if self.blow_up_check.unchecked:
            self.synchronize()
        return self.physics.state

    @state.setter
    def state(self, value) -> None:
        self.physics.state = value

    @property
    def device_state(self):
        """The current State, without waiting for or checking the frames queued on the device (:attr:`state` does):
        for work that stays on the device (views, one's own kernels), which the device runs after those frames."""
        return self.physics.state

    # --- opening -----------------------------------------------------------------------------------------------------

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
        check_options(
            worlds=worlds, env_root=env_root, dt=dt, xform_ops=xform_ops, write_worlds=write_worlds,
            world_spacing=world_spacing, max_distance=max_distance, max_speed=max_speed,
        )  # fmt: skip
        stage, file = open_stage(source)
        output_layer = attach_output_layer(stage)
        asked = {
            "solver": solver, "solver_options": solver_options, "device": dev, "backend": backend, "fps": fps,
            "substeps": substeps, "dt": dt, "mujoco_memory": mujoco_memory,
        }  # fmt: skip
        run = {
            "record": record, "joint_states": joint_states, "live": live, "order": order, "replicas": int(worlds),
            "env_root": env_root, "xform_ops": xform_ops, "write_worlds": write_worlds, "world_spacing": world_spacing,
            "max_distance": float(max_distance), "max_speed": float(max_speed),
        }  # fmt: skip
        try:
            sim = opening.open_scenes(cls, stage, file, output_layer, asked, run, overrides)
            if keyframe is not None:
                sim.start_from_keyframe(keyframe)
            if stream_to is not None:
                sim.stream_recording(stream_to, clip_frames)
            return sim
        except BaseException:
            stage.GetSessionLayer().subLayerPaths.remove(output_layer.identifier)
            raise

    def add_scene(self, other: "Simulation") -> None:
        """Hold ``other``, the Simulation of another PhysicsScene of the stage (:func:`~.opening.open_scenes`)."""
        self.scenes.append(other)
        other._first_scene = self

    def copy_environment(self, spacing=None) -> None:
        """Copies of the environment for worlds 1 .. n-1, of every scene's bodies (see
        :class:`~newton_usd.simulation.worlds.EnvironmentCopies`), each scene then writing its own onto them."""
        sims = (self, *self.scenes)
        frame = self.physics.imported.frame
        if self.environment_copies.make([(s.environment_copies, s.model) for s in sims], self.worlds, frame, spacing):
            for s in sims:
                s.recorder.resync()

    def recopy_environment(self) -> None:
        """After a rebuild of this scene: the environment copied again where worlds are shown in copies (the first
        scene's Simulation copies it, for every scene; the other scenes' syncs onto the new copies)."""
        if self.copies is None:
            return
        first = self._first_scene or self
        first.environment_copies.remove()
        sims = (first, *first.scenes)
        first.environment_copies.make([(s.environment_copies, s.model) for s in sims], first.worlds,
                                      first.physics.imported.frame, first.world_spacing)  # fmt: skip
        for s in sims:
            if s is not self:
                s.recorder.resync()

    def _own_writes(self):
        """A context in which the run's writes onto the stage are not taken for edits."""
        editor = getattr(self, "editor", None)
        return editor.muted() if editor is not None else contextlib.nullcontext()

    # --- a frame, and the run --------------------------------------------------------------------------------------

    def step_frame(self, last: bool = True, until: float | None = None) -> None:
        """Simulate one frame (``substeps`` physics steps) and write the poses onto the prims; then the
        other scenes' frames (:attr:`scenes`).

        Edits made on the stage since the last frame are applied first (see :meth:`apply_edits`).
        With :attr:`record_every` > 1 only every n-th frame is written, and the frame with ``last``.
        ``until`` (seconds of simulated time): take the steps that end closest to it instead of
        ``substeps`` (another scene's frame: it keeps to the first scene's clock).

        A frame function's frame (a Newton solver, MuJoCo-Warp) is queued on the device and not waited for unless it
        is written onto the stage: its blow-up check is read every :attr:`check_every` frames and at the sync points
        (see :class:`~newton_usd.simulation.bounds.BlowUpCheck`).
        """
        if self.editor.pending:
            self.apply_edits()
        self.recorder.write_start()
        self.blow_up_check.start_flung_check()
        t0 = time.perf_counter()
        as_frame = self.stepper.step(self.clock.steps_to(until))
        write = self.recorder.records_frame(last)
        positions = None
        if as_frame:
            if self.clock.first_step_seconds is None:  # (the first frame, kernels loaded: waited for, timed)
                self.blow_up_check.synchronize()
                self.stepper.kernels_loaded()
                self.clock.first_step_seconds = time.perf_counter() - t0
            if write:
                self.blow_up_check.synchronize()  # (its poses are read: checked first)
            else:
                self.blow_up_check.poll()
        else:
            self.stepper.kernels_loaded()
            rows = self.recorder.rows  # (the simulated prims' rows of the state)
            positions = rows.positions(self.physics.state)
            self.blow_up_check.check_frame(positions, last, rows)
        particles, read = self.recorder.particle_rows, None
        if particles is not None and (write or not as_frame):  # (NaN, too far or too fast, named by their prim; a
            # frame function's device check covers bodies: its particles are checked where read, when written)
            read = particles.positions(self.physics.state), particles.velocities(self.physics.state)
            self.blow_up_check.check_bounds(read[0], velocities=read[1], rows=particles)
        if write:
            self.recorder.write_frame(positions, particles=read)  # (the particles as read for the check: once)
        with self._own_writes():
            for other in self.scenes:
                other.record_every, other.write = self.record_every, self.write
                other.step_frame(last, until=self.sim_seconds)

    def run(self, frames: int | None = None, progress=None) -> None:
        """Simulate ``frames`` frames (default: :meth:`default_frames`); ``progress(n)`` after each. Returns once the
        device has simulated them all and their blow-up checks were read."""
        n = self.default_frames() if frames is None else int(frames)
        if self.pipelines():
            self.pipeline.run(self, n, progress)
        else:
            for i in range(n):
                self.step_frame(last=i == n - 1)
                if progress is not None:
                    progress(1)
        self.synchronize()  # (the frames queued, waited for and checked)

    def pipelines(self) -> bool:
        """Whether :meth:`run` overlaps the stage write with the next frame's steps (see
        :class:`~newton_usd.simulation.pipelined.PipelinedRun`): the frames are frame functions, and nothing else
        reads the state between them (joint states, other scenes)."""
        return self.joint_sync is None and not self.scenes and self.stepper.as_frame(self.substeps)

    def default_frames(self) -> int:
        """The stage's authored frame range, or 120 frames when it has none."""
        if self.stage.HasAuthoredTimeCodeRange():
            n = int(round(self.stage.GetEndTimeCode() - self.stage.GetStartTimeCode()))
            if n > 0:
                return n
        return DEFAULT_FRAMES

    def load_kernels(self, max_workers: int | None = None, wait: bool = True):
        """Compile, or load from Warp's kernel cache, the Warp modules the frames will use (see
        :meth:`~newton_usd.simulation.stepping.Stepper.load_kernels`)."""
        return self.stepper.load_kernels(max_workers, wait)

    def synchronize(self) -> None:
        """Wait for the frames queued on the device (this scene's and the other scenes') and check them: raises
        :class:`~newton_usd.errors.SimulationError` naming the frame where a body blew up or was flung, and the body.
        Nothing to wait for after frames of single steps (checked as they ran)."""
        for sim in (self, *self.scenes):
            sim.blow_up_check.synchronize()

    def restart_flung_check(self, model_changed: bool = False) -> None:
        """Measure how far bodies are flung from the state of the next frame's start (see
        :meth:`~newton_usd.simulation.bounds.BlowUpCheck.restart_flung_check`)."""
        self.blow_up_check.restart_flung_check(model_changed)

    # --- live edits --------------------------------------------------------------------------------------------------

    def edits_pending(self) -> bool:
        """Whether edits made on the stage wait for the next frame."""
        return self.editor.pending

    def apply_edits(self) -> str | None:
        """Apply the edits made on the stage since the last frame to the running simulation.

        In place, with no import, where every edit sets values or moves bodies (see
        :mod:`~newton_usd.simulation.in_place`): each edited property's new value is read as the import reads it
        (units, degrees, schema precedence, mass rules) and written into the rows of the model it sets, in every
        world the prim feeds; the solver takes them (:meth:`~newton_usd.solvers.solver.SolverBase.update_parameters`,
        or, for values its engine compiles, a new solver of the edited model); an edited body transform or velocity
        teleports the body (:mod:`~newton_usd.simulation.teleport`). Otherwise (a prim added or removed, a body or
        joint disabled or retyped, a kinematic body, a collider's shape) the stage is imported again and compared
        with the running model:

        - same bodies, joints and shapes: the values that differ go into the running solver without
          rebuilding it, and the run goes on from its state;
        - otherwise: the model and solver are rebuilt, and every body that remains keeps its
          simulated pose and velocity.

        An edit the import refuses (a negative mass, a NaN position, a transform of zero scale) is said once
        (logged, naming the file, prim and attribute) and not applied; the run goes on.
        With several PhysicsScenes every scene applies the edits to its own model. Returns "values",
        "rebuilt", or None when nothing was applied (the strongest of the scenes').
        """
        edits = self.editor.take()
        if not edits:
            return None
        applied = self.editor.apply(edits)
        for other in self.scenes:
            result = other.editor.apply(edits)
            if result == "rebuilt" or (result == "values" and applied is None):
                applied = result
        if self.scenes and edits.resynced:
            check_scenes(self.stage, self.options.order, [s.scene_path for s in (self, *self.scenes)],
                         self.source_file)  # fmt: skip
        return applied

    # --- the recording -----------------------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the current frame if it was not written (e.g. with ``record_every`` > 1, when a run
        stops early), and the frames kept by :attr:`write_batch`: the stage shows the whole run."""
        if self.write and not self.recorder.written():
            self.synchronize()
            self.recorder.write_frame()
        with self._own_writes():
            for other in self.scenes:
                other.flush()
        self._flush_syncs()

    def _flush_syncs(self) -> None:
        """Write the frames the syncs of every scene keep."""
        for sim in (self, *self.scenes):
            sim.recorder.flush()

    @property
    def write_batch(self) -> int:
        """Recorded frames written onto the stage together (default 1: every frame at once). More is
        about twice as fast to write (see :attr:`~newton_usd.sync.StageSync.batch_frames`), but the stage
        shows a frame only once its batch is written (:meth:`flush`, :meth:`save` and the value clips
        write what is kept): for runs no one watches, as ``usdsim run``'s 32."""
        return self.recorder.batch_frames

    @write_batch.setter
    def write_batch(self, frames: int) -> None:
        if int(frames) < 1:
            raise NewtonUsdError(f"write_batch must be at least 1 frame, got {frames}")
        for sim in (self, *self.scenes):
            sim.recorder.batch_frames = int(frames)

    def stream_recording(self, path, frames_per_clip: int = DEFAULT_CLIP_FRAMES) -> str:
        """Stream the recording to USD value clips as it runs, for a run of any length in bounded memory
        (see :meth:`~newton_usd.simulation.recording.Recorder.stream`). Returns the clip directory."""
        return self.recorder.stream(path, frames_per_clip)

    def save(self, path, flatten: bool = False) -> str:
        """Write the output layer to ``path`` as a stage that sublayers the source file (``flatten``:
        one self-contained file holding the whole composed stage).

        Opening ``path`` shows the source with the simulated motion on top; the source is not touched.
        A recording streamed to ``path`` (:meth:`stream_recording`) is saved as value clips beside it;
        saved to another path, or flattened, its clips are baked into time samples.
        """
        self._flush_syncs()
        return self.recorder.save(path, flatten, end_time=self._end_time())

    def save_in_place(self) -> str:
        """Write the simulated motion (and the ``overrides``) into the source file itself: every
        attribute of the output layer replaces the source's (a streamed recording's clips are baked
        into time samples). Only when the user asks for it."""
        self._flush_syncs()
        return self.recorder.save_in_place(end_time=self._end_time())

    def _end_time(self) -> float:
        return max(s.time_code for s in (self, *self.scenes))

    # --- reset and close ---------------------------------------------------------------------------------------------

    def reset(self, keyframe=None) -> None:
        """Back to the authored state: initial model state, frame 0, authored poses on the stage; with
        ``keyframe``, then into that keyframe (see :meth:`start_from_keyframe`). Frames queued on the device and not
        yet checked are dropped unchecked."""
        self.blow_up_check.forget()
        self.physics.fresh_states()
        self.solver.reset_actuators()  # (a PID's integral, a delay's history)
        capture = getattr(self.solver, "frame_capture", None)
        if capture is not None:  # (new arrays: a graph of the old ones is not replayed, whatever their addresses)
            capture.invalidate("reset")
        first_step_seconds = self.clock.first_step_seconds
        self.clock.restart()
        self.clock.first_step_seconds = first_step_seconds  # (kernels loaded once: the first frame is not again)
        self.blow_up_check.restart_flung_check()
        self.recorder.restore()
        if self.editor.rebuilds:  # the model holds the state of the last rebuild: import the authored one again
            self.editor.rebuild(*opening.reimport(self.stage, self.options), keep_state=False)
            self.editor.rebuilds = 0
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
        reset(self.physics.state, keyframe, self.physics.control)

    def close(self) -> None:
        """Detach the output layer from the stage (the stage shows the authored poses again); a streamed
        recording's clips that no saved output refers to are removed."""
        self._flush_syncs()
        self.recorder.close()
        self.editor.close()
        for other in self.scenes:
            other.close()
        self.stepper.stop_loading()  # (a run that ran no frame, an environment's: its pool stops)
        subs = self.stage.GetSessionLayer().subLayerPaths
        if self.output_layer.identifier in subs:
            subs.remove(self.output_layer.identifier)
        self.environment_copies.detach()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
